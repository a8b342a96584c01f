//! Roots of polynomials over GF(2^m) without a Chien search: closed forms for degree 1 and 2,
//! and the Berlekamp trace algorithm (BTA) above that.
//!
//! The BTA splits f(x) (squarefree, all roots in the field) with gcd(f, Tr(βx) mod f) for β
//! running over the polynomial basis α^0..α^(m−1): every root r satisfies Tr(βr) ∈ {0, 1},
//! so the gcd collects the roots with trace 0. The powers x^(2^i) mod f are computed once,
//! after which each Tr(βx) mod f = Σ β^(2^i)·x^(2^i) costs O(m·deg f).

use crate::gf::Field;
use alloc::vec;
use alloc::vec::Vec;

/// A polynomial over GF(2^m): coefficients, lowest degree first, no trailing zeros
/// (the zero polynomial is empty).
pub(crate) type Poly = Vec<u32>;

fn trim(p: &mut Poly) {
    while p.last() == Some(&0) {
        p.pop();
    }
}

fn deg(p: &[u32]) -> usize {
    p.len().saturating_sub(1)
}

/// Precomputed helpers for root finding in one field.
#[derive(Debug, Clone)]
pub(crate) struct RootFinder {
    /// Solutions for the quadratic y² + y = u, one per basis element (see `solve_quadratic`).
    xi: Vec<u32>,
}

impl RootFinder {
    pub(crate) fn new(gf: &Field) -> RootFinder {
        let m = gf.m();
        let size = 1usize << m;
        // y ↦ y² + y is linear with kernel {0, 1} and image the trace-0 elements.
        let mut preimage = vec![u32::MAX; size];
        for y in 0..size as u32 {
            let v = gf.square(y) ^ y;
            if preimage[v as usize] == u32::MAX {
                preimage[v as usize] = y;
            }
        }
        // A basis element of trace 1 to fix up those of trace 1 (their sum with it has trace 0).
        let k = (0..m)
            .find(|&i| gf.trace(1 << i) == 1)
            .expect("some basis element has trace 1");
        let xi = (0..m)
            .map(|i| {
                let target = if gf.trace(1 << i) == 0 {
                    1u32 << i
                } else {
                    (1u32 << i) ^ (1u32 << k)
                };
                preimage[target as usize]
            })
            .collect();
        RootFinder { xi }
    }

    /// A solution y of y² + y = u (requires Tr(u) = 0; the other solution is y + 1).
    /// Trace-1 basis elements in u come in even number, so their fix-ups cancel.
    fn solve_quadratic(&self, u: u32) -> u32 {
        let mut y = 0;
        let mut bits = u;
        while bits != 0 {
            let i = bits.trailing_zeros();
            y ^= self.xi[i as usize];
            bits &= bits - 1;
        }
        y
    }

    /// All roots of the monic polynomial `f` (degree ≥ 1), pushed to `out`. Returns false if
    /// `f` does not have deg f distinct non-zero roots in the field.
    pub(crate) fn roots(&self, gf: &Field, f: &[u32], out: &mut Vec<u32>) -> bool {
        let d = deg(f);
        debug_assert_eq!(f[d], 1);
        if f[0] == 0 {
            return false; // zero is a root: no valid error locator
        }
        match d {
            0 => true,
            1 => {
                out.push(f[0]);
                true
            }
            2 => self.quadratic(gf, f[1], f[0], out),
            _ => {
                let start = out.len();
                let powers = frobenius_powers(gf, f);
                if !self.split(gf, f.to_vec(), 0, &powers, out) {
                    return false;
                }
                // A repeated root can split into equal linear factors: insist on distinct.
                let found = &mut out[start..];
                found.sort_unstable();
                found.windows(2).all(|w| w[0] != w[1]) && found.len() == d
            }
        }
    }

    /// Roots of x² + b·x + c.
    fn quadratic(&self, gf: &Field, b: u32, c: u32, out: &mut Vec<u32>) -> bool {
        if b == 0 || c == 0 {
            return false; // a double root, or a zero root
        }
        // x = b·y: y² + y = c / b².
        let u = gf.div(c, gf.square(b));
        if gf.trace(u) != 0 {
            return false;
        }
        let y = self.solve_quadratic(u);
        out.push(gf.mul(b, y));
        out.push(gf.mul(b, y ^ 1));
        true
    }

    fn split(&self, gf: &Field, g: Poly, first: u32, powers: &[Poly], out: &mut Vec<u32>) -> bool {
        match deg(&g) {
            0 => return true,
            1 => {
                let c = gf.div(g[0], g[1]);
                if c == 0 {
                    return false;
                }
                out.push(c);
                return true;
            }
            2 => {
                let inv = gf.inv(g[2]);
                return self.quadratic(gf, gf.mul(g[1], inv), gf.mul(g[0], inv), out);
            }
            _ => {}
        }
        for k in first..gf.m() {
            let t = trace_poly(gf, 1 << k, powers);
            let h = gcd(gf, g.clone(), t);
            let dh = deg(&h);
            if h.is_empty() || dh == 0 || dh == deg(&g) {
                continue;
            }
            let (q, r) = divmod(gf, &g, &h);
            if !r.is_empty() {
                return false;
            }
            return self.split(gf, h, k + 1, powers, out) && self.split(gf, q, k + 1, powers, out);
        }
        false
    }
}

/// x^(2^i) mod f for i = 0..m.
fn frobenius_powers(gf: &Field, f: &[u32]) -> Vec<Poly> {
    let d = deg(f);
    let logf: Vec<u32> = f
        .iter()
        .map(|&c| if c == 0 { u32::MAX } else { gf.log(c) })
        .collect();
    let mut powers = Vec::with_capacity(gf.m() as usize);
    let mut x: Poly = vec![0, 1];
    let mut sq = vec![0u32; 2 * d];
    for _ in 0..gf.m() {
        powers.push(x.clone());
        // Square: coefficient i moves to 2i, squared (char 2: no cross terms).
        sq.iter_mut().for_each(|c| *c = 0);
        for (i, &c) in x.iter().enumerate() {
            sq[2 * i] = gf.square(c);
        }
        // Reduce modulo the monic f, from the top.
        for j in (d..sq.len()).rev() {
            let c = sq[j];
            if c == 0 {
                continue;
            }
            let lc = gf.log(c);
            let base = j - d;
            for (i, &l) in logf[..d].iter().enumerate() {
                if l != u32::MAX {
                    sq[base + i] ^= gf.exp2n(lc + l);
                }
            }
            sq[j] = 0;
        }
        x = sq[..d].to_vec();
        trim(&mut x);
    }
    powers
}

/// Tr(βx) mod f = Σ_i β^(2^i) · x^(2^i) mod f.
fn trace_poly(gf: &Field, beta: u32, powers: &[Poly]) -> Poly {
    let len = powers.iter().map(|p| p.len()).max().unwrap_or(0);
    let mut t = vec![0u32; len];
    let mut b = beta;
    for p in powers {
        let lb = gf.log(b);
        for (i, &c) in p.iter().enumerate() {
            if c != 0 {
                t[i] ^= gf.exp2n(lb + gf.log(c));
            }
        }
        b = gf.square(b);
    }
    trim(&mut t);
    t
}

/// (a div b, a mod b); b non-zero.
fn divmod(gf: &Field, a: &[u32], b: &[u32]) -> (Poly, Poly) {
    let db = deg(b);
    let mut r = a.to_vec();
    if r.len() <= db {
        trim(&mut r);
        return (Vec::new(), r);
    }
    let inv_lead = gf.inv(b[db]);
    let mut q = vec![0u32; r.len() - db];
    for j in (db..r.len()).rev() {
        let c = r[j];
        if c == 0 {
            continue;
        }
        let f = gf.mul(c, inv_lead);
        q[j - db] = f;
        let lf = gf.log(f);
        for (i, &bc) in b.iter().enumerate() {
            if bc != 0 {
                r[j - db + i] ^= gf.exp2n(lf + gf.log(bc));
            }
        }
    }
    r.truncate(db);
    trim(&mut r);
    trim(&mut q);
    (q, r)
}

/// Monic gcd(a, b).
fn gcd(gf: &Field, mut a: Poly, mut b: Poly) -> Poly {
    trim(&mut a);
    trim(&mut b);
    while !b.is_empty() {
        let (_, r) = divmod(gf, &a, &b);
        a = b;
        b = r;
    }
    if let Some(&lead) = a.last() {
        let inv = gf.inv(lead);
        for c in a.iter_mut() {
            *c = gf.mul(*c, inv);
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn product(gf: &Field, roots: &[u32]) -> Poly {
        let mut p: Poly = vec![1];
        for &r in roots {
            let mut next = vec![0u32; p.len() + 1];
            for (i, &c) in p.iter().enumerate() {
                next[i + 1] ^= c;
                next[i] ^= gf.mul(c, r);
            }
            p = next;
        }
        p
    }

    #[test]
    fn finds_all_roots_of_products() {
        for m in [5u32, 8, 13, 16] {
            let gf = Field::new(m, crate::gf::default_poly(m).unwrap()).unwrap();
            let rf = RootFinder::new(&gf);
            let mut x = 12345u32;
            for d in 1..=20usize {
                if d as u32 >= gf.n() {
                    break;
                }
                let mut roots = Vec::new();
                while roots.len() < d {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    let r = (x >> 8) % gf.n() + 1;
                    if !roots.contains(&r) {
                        roots.push(r);
                    }
                }
                let f = product(&gf, &roots);
                let mut found = Vec::new();
                assert!(rf.roots(&gf, &f, &mut found), "m={m} d={d}");
                found.sort();
                roots.sort();
                assert_eq!(found, roots, "m={m} d={d}");
            }
        }
    }

    #[test]
    fn rejects_polynomials_without_distinct_field_roots() {
        let gf = Field::new(8, 0x11d).unwrap();
        let rf = RootFinder::new(&gf);
        // (x + a)² has a double root.
        let f = product(&gf, &[7, 7]);
        assert!(!rf.roots(&gf, &f, &mut Vec::new()));
        let f = product(&gf, &[7, 7, 9]);
        assert!(!rf.roots(&gf, &f, &mut Vec::new()));
        // x² + x + u with Tr(u) = 1 is irreducible.
        let u = (1..256).find(|&u| gf.trace(u) == 1).unwrap();
        assert!(!rf.roots(&gf, &[u, 1, 1], &mut Vec::new()));
    }
}

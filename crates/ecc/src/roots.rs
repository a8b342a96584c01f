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
                let mut bta = Bta::new(gf, f);
                if !bta.split(self, f.to_vec(), 0, out) {
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
}

/// Zero coefficient in a log-domain polynomial.
const LOG_ZERO: u32 = u32::MAX;

/// State of one Berlekamp trace run on a polynomial f of degree d.
struct Bta<'a> {
    gf: &'a Field,
    d: usize,
    /// x^(2^i) mod f for i = 0..m, in the log domain, `d` coefficients each.
    powers: Vec<u32>,
    /// Scratch for trace polynomials and gcds.
    t: Vec<u32>,
    a: Vec<u32>,
}

impl<'a> Bta<'a> {
    fn new(gf: &'a Field, f: &[u32]) -> Bta<'a> {
        let d = deg(f);
        let m = gf.m() as usize;
        let logf: Vec<u32> = f.iter().map(|&c| to_log(gf, c)).collect();
        let mut powers = vec![LOG_ZERO; m * d];
        let mut x = vec![0u32; d];
        x[1] = 1;
        let mut sq = vec![0u32; 2 * d];
        for i in 0..m {
            for (slot, &c) in powers[i * d..(i + 1) * d].iter_mut().zip(&x) {
                *slot = to_log(gf, c);
            }
            if i + 1 == m {
                break;
            }
            // Square: coefficient j moves to 2j, squared (char 2: no cross terms).
            sq.iter_mut().for_each(|c| *c = 0);
            for (j, &c) in x.iter().enumerate() {
                sq[2 * j] = gf.square(c);
            }
            // Reduce modulo the monic f, from the top.
            for j in (d..sq.len()).rev() {
                let c = sq[j];
                if c == 0 {
                    continue;
                }
                let lc = gf.log(c);
                let base = j - d;
                for (k, &l) in logf[..d].iter().enumerate() {
                    if l != LOG_ZERO {
                        sq[base + k] ^= gf.exp2n(lc + l);
                    }
                }
            }
            x.copy_from_slice(&sq[..d]);
        }
        Bta {
            gf,
            d,
            powers,
            t: vec![0; d],
            a: Vec::with_capacity(d + 1),
        }
    }

    /// Tr(α^k·x) mod f = Σ_i α^(k·2^i) · x^(2^i) mod f, into `self.t` (trimmed).
    fn trace_poly(&mut self, k: u32) {
        let gf = self.gf;
        let d = self.d;
        self.t.clear();
        self.t.resize(d, 0);
        let mut lb = k; // log of β^(2^i)
        for row in self.powers.chunks_exact(d) {
            for (slot, &l) in self.t.iter_mut().zip(row) {
                if l != LOG_ZERO {
                    *slot ^= gf.exp2n(lb + l);
                }
            }
            lb = (2 * lb) % gf.n();
        }
        trim(&mut self.t);
    }

    fn split(&mut self, rf: &RootFinder, g: Poly, first: u32, out: &mut Vec<u32>) -> bool {
        let gf = self.gf;
        match deg(&g) {
            0 => return true,
            1 => {
                if g[0] == 0 {
                    return false;
                }
                out.push(g[0]);
                return true;
            }
            2 => return rf.quadratic(gf, g[1], g[0], out),
            _ => {}
        }
        for k in first..gf.m() {
            self.trace_poly(k);
            self.a.clear();
            self.a.extend_from_slice(&g);
            let h = gcd(gf, &mut self.a, &mut self.t);
            let dh = deg(&h);
            if h.is_empty() || dh == 0 || dh == deg(&g) {
                continue;
            }
            let mut r = g;
            let q = divmod_monic(gf, &mut r, &h);
            if !r.is_empty() {
                return false;
            }
            return self.split(rf, h, k + 1, out) && self.split(rf, q, k + 1, out);
        }
        false
    }
}

fn to_log(gf: &Field, c: u32) -> u32 {
    if c == 0 {
        LOG_ZERO
    } else {
        gf.log(c)
    }
}

/// Divides `a` by the monic `b` in place: `a` becomes the remainder (trimmed); returns the
/// quotient.
fn divmod_monic(gf: &Field, a: &mut Poly, b: &[u32]) -> Poly {
    let db = deg(b);
    trim(a);
    if a.len() <= db {
        return Vec::new();
    }
    let logb: Vec<u32> = b[..db].iter().map(|&c| to_log(gf, c)).collect();
    let mut q = vec![0u32; a.len() - db];
    for j in (db..a.len()).rev() {
        let c = a[j];
        if c == 0 {
            continue;
        }
        q[j - db] = c;
        let lc = gf.log(c);
        for (i, &l) in logb.iter().enumerate() {
            if l != LOG_ZERO {
                a[j - db + i] ^= gf.exp2n(lc + l);
            }
        }
    }
    a.truncate(db);
    trim(a);
    trim(&mut q);
    q
}

/// Makes `p` monic in place (p non-zero).
fn make_monic(gf: &Field, p: &mut [u32]) {
    let lead = *p.last().expect("non-zero polynomial");
    if lead != 1 {
        let inv = gf.log(gf.inv(lead));
        for c in p.iter_mut() {
            if *c != 0 {
                *c = gf.exp2n(gf.log(*c) + inv);
            }
        }
    }
}

/// Monic gcd(a, b); both buffers are consumed as scratch.
fn gcd(gf: &Field, a: &mut Poly, b: &mut Poly) -> Poly {
    trim(a);
    trim(b);
    while !b.is_empty() {
        make_monic(gf, b);
        let _ = divmod_monic(gf, a, b);
        core::mem::swap(a, b);
    }
    if !a.is_empty() {
        make_monic(gf, a);
    }
    a.clone()
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

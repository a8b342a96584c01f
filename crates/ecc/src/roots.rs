//! Roots of polynomials over GF(2^m) without a Chien search: closed forms up to degree 4,
//! and the Berlekamp trace algorithm (BTA) above that.
//!
//! Degree 2 reduces to y² + y = u (a precomputed basis of solutions); degrees 3 and 4 are
//! turned into an *affine* polynomial X⁴ + aX² + bX + c, whose left part is GF(2)-linear, so
//! its roots are the solutions of an m × m linear system over GF(2) (the method of Linux
//! `lib/bch.c`; the system is solved here column by column).
//!
//! The BTA splits f(x) (squarefree, all roots in the field) with gcd(f, Tr(βx) mod f) for β
//! running over the polynomial basis α^0..α^(m−1): every root r satisfies Tr(βr) ∈ {0, 1},
//! so the gcd collects the roots with trace 0. The powers x^(2^i) mod f are computed once per
//! locator by squaring through the Berlekamp Q matrix (rows x^(2j) mod f), whose products
//! are independent of each other (no reduction chain); each Tr(α^k·x) mod f = Σ α^(k·2^i) ·
//! x^(2^i) is computed once and shared by every factor split with the same k. Factors of
//! degree ≤ 4 go to the closed forms.

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
        if d <= 4 {
            return self.small(gf, f, out);
        }
        let start = out.len();
        let mut bta = Bta::new(gf, f);
        if !bta.split(self, f.to_vec(), 0, out) {
            return false;
        }
        // Every factor's roots are distinct (the closed forms insist on it), but the
        // same root could in principle come out of two factors only if f were not
        // squarefree: check.
        let found = &mut out[start..];
        found.sort_unstable();
        found.windows(2).all(|w| w[0] != w[1]) && found.len() == d
    }

    /// Roots of a monic polynomial of degree 1..=4 with non-zero constant term, by closed
    /// forms; false unless they are deg f distinct non-zero field elements.
    fn small(&self, gf: &Field, f: &[u32], out: &mut Vec<u32>) -> bool {
        match deg(f) {
            0 => true,
            1 => {
                out.push(f[0]);
                f[0] != 0
            }
            2 => self.quadratic(gf, f[1], f[0], out),
            3 => self.cubic(gf, f[2], f[1], f[0], out),
            4 => self.quartic(gf, [f[3], f[2], f[1], f[0]], out),
            _ => unreachable!("degree ≤ 4"),
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

    /// Roots of x³ + a·x² + b·x + c: (x + a) times it is the affine
    /// x⁴ + (a² + b)·x² + (ab + c)·x + ac, whose four roots are the cubic's three and a.
    /// Four distinct solutions mean the cubic's roots are distinct and differ from a (a
    /// double root makes the affine polynomial's derivative, its x coefficient, zero and
    /// every root double).
    fn cubic(&self, gf: &Field, a: u32, b: u32, c: u32, out: &mut Vec<u32>) -> bool {
        if c == 0 {
            return false;
        }
        let Some(sol) = affine4(gf, gf.square(a) ^ b, gf.mul(a, b) ^ c, gf.mul(a, c)) else {
            return false;
        };
        let before = out.len();
        out.extend(sol.iter().copied().filter(|&x| x != a));
        out.len() - before == 3
    }

    /// Roots of x⁴ + a·x³ + b·x² + c·x + d (coefficients `[a, b, c, d]`). With a = 0 it is
    /// affine already. Otherwise x = z + e with e² = c/a removes the linear term:
    /// z⁴ + a·z³ + (ae + b)·z² + (e⁴ + be² + d), and y = 1/z turns that into the affine
    /// y⁴ + (b'/d')·y² + (a/d')·y + 1/d' (d' = 0 would make z = 0 a double root).
    fn quartic(&self, gf: &Field, [a, b, c, d]: [u32; 4], out: &mut Vec<u32>) -> bool {
        if d == 0 {
            return false;
        }
        if a == 0 {
            let Some(sol) = affine4(gf, b, c, d) else {
                return false;
            };
            out.extend_from_slice(&sol);
            return true;
        }
        let e = if c == 0 { 0 } else { sqrt(gf, gf.div(c, a)) };
        let e2 = gf.square(e);
        let b1 = gf.mul(a, e) ^ b;
        let d1 = gf.square(e2) ^ gf.mul(b, e2) ^ d;
        if d1 == 0 {
            return false;
        }
        let inv = gf.inv(d1);
        let Some(sol) = affine4(gf, gf.mul(b1, inv), gf.mul(a, inv), inv) else {
            return false;
        };
        // y ≠ 0 (the constant term 1/d' is not zero); x = 1/y + e ≠ 0 since d ≠ 0.
        out.extend(sol.iter().map(|&y| gf.inv(y) ^ e));
        true
    }
}

/// The square root of x (squaring is a bijection in characteristic 2).
fn sqrt(gf: &Field, x: u32) -> u32 {
    if x == 0 {
        return 0;
    }
    let l = gf.log(x);
    // n = 2^m − 1 is odd: an odd log becomes even by adding n.
    let l = if l % 2 == 1 { l + gf.n() } else { l };
    gf.exp2n(l / 2)
}

/// The four distinct roots of the affine polynomial X⁴ + a·X² + b·X + c, or `None` if it
/// does not have exactly four. L(X) = X⁴ + aX² + bX is GF(2)-linear, so the roots are the
/// solutions of L(X) = c: a particular solution plus the kernel of L, which must be of
/// dimension 2. Elements are bit vectors in the polynomial basis; the images L(α^i) are
/// reduced against pivots (indexed by their highest bit) carrying the combination of basis
/// elements, i.e. the preimage, that produced them.
fn affine4(gf: &Field, a: u32, b: u32, c: u32) -> Option<[u32; 4]> {
    let m = gf.m() as usize;
    let n = gf.n();
    let la = (a != 0).then(|| gf.log(a));
    let lb = (b != 0).then(|| gf.log(b));
    let mut piv_img = [0u32; 32];
    let mut piv_pre = [0u32; 32];
    let mut kernel = [0u32; 2];
    let mut nk = 0;
    for i in 0..m as u32 {
        // L(α^i) = α^(4i) + a·α^(2i) + b·α^i.
        let mut img = gf.exp2n((4 * i) % n);
        if let Some(la) = la {
            img ^= gf.exp2n(la + 2 * i);
        }
        if let Some(lb) = lb {
            img ^= gf.exp2n(lb + i);
        }
        let mut pre = 1u32 << i;
        while img != 0 {
            let h = 31 - img.leading_zeros() as usize;
            if piv_img[h] == 0 {
                piv_img[h] = img;
                piv_pre[h] = pre;
                break;
            }
            img ^= piv_img[h];
            pre ^= piv_pre[h];
        }
        if img == 0 {
            if nk == 2 {
                return None; // kernel of dimension > 2: more than four roots
            }
            kernel[nk] = pre;
            nk += 1;
        }
    }
    if nk != 2 {
        return None;
    }
    let (mut v, mut x0) = (c, 0u32);
    while v != 0 {
        let h = 31 - v.leading_zeros() as usize;
        if piv_img[h] == 0 {
            return None; // c is not in the image: no root
        }
        v ^= piv_img[h];
        x0 ^= piv_pre[h];
    }
    Some([
        x0,
        x0 ^ kernel[0],
        x0 ^ kernel[1],
        x0 ^ kernel[0] ^ kernel[1],
    ])
}

/// Zero coefficient in a log-domain polynomial.
const LOG_ZERO: u32 = u32::MAX;

/// State of one Berlekamp trace run on a polynomial f of degree d.
struct Bta<'a> {
    gf: &'a Field,
    d: usize,
    /// x^(2^i) mod f for i = 0..m, in the log domain, `d` coefficients each.
    powers: Vec<u32>,
    /// Tr(α^k·x) mod f for the k computed so far (`have` bit k), `d` coefficients each.
    traces: Vec<u32>,
    have: u32,
    /// Scratch for gcds.
    t: Vec<u32>,
    a: Vec<u32>,
    logs: Vec<u32>,
}

impl<'a> Bta<'a> {
    fn new(gf: &'a Field, f: &[u32]) -> Bta<'a> {
        let d = deg(f);
        let m = gf.m() as usize;
        let n = gf.n();
        // Q rows x^(2j) mod f for 2j ≥ d (below d they are monomials), log domain: x^k mod f
        // for k = d..2d − 2, each x times the previous one, reduced by the monic f.
        let j0 = d.div_ceil(2);
        let mut q = vec![LOG_ZERO; (d - j0) * d];
        let logf: Vec<u32> = f[..d].iter().map(|&c| to_log(gf, c)).collect();
        let mut xk: Vec<u32> = f[..d].to_vec(); // x^d ≡ f − x^d
        for k in d..=2 * (d - 1) {
            if k % 2 == 0 {
                let row = &mut q[(k / 2 - j0) * d..][..d];
                for (slot, &c) in row.iter_mut().zip(&xk) {
                    *slot = to_log(gf, c);
                }
            }
            // x^(k+1) = x·x^k: shift up; the coefficient pushed to x^d is reduced by f.
            let top = xk[d - 1];
            xk.copy_within(..d - 1, 1);
            xk[0] = 0;
            if top != 0 {
                let lt = gf.log(top);
                for (c, &l) in xk.iter_mut().zip(&logf) {
                    if l != LOG_ZERO {
                        *c ^= gf.exp2n(lt + l);
                    }
                }
            }
        }
        // x^(2^(i+1)) = (x^(2^i))² = Σ_j a_j²·x^(2j) mod f: independent products.
        let mut powers = vec![LOG_ZERO; m * d];
        powers[1] = 0; // x
        let mut sq = vec![0u32; d];
        for i in 1..m {
            let (prev, next) = powers.split_at_mut(i * d);
            let prev = &prev[(i - 1) * d..];
            sq.iter_mut().for_each(|c| *c = 0);
            for (j, &l) in prev.iter().enumerate() {
                if l == LOG_ZERO {
                    continue;
                }
                let l2 = if 2 * l >= n { 2 * l - n } else { 2 * l };
                if 2 * j < d {
                    sq[2 * j] ^= gf.exp2n(l2);
                } else {
                    for (s, &lq) in sq.iter_mut().zip(&q[(j - j0) * d..][..d]) {
                        if lq != LOG_ZERO {
                            *s ^= gf.exp2n(l2 + lq);
                        }
                    }
                }
            }
            for (slot, &c) in next[..d].iter_mut().zip(&sq) {
                *slot = to_log(gf, c);
            }
        }
        Bta {
            gf,
            d,
            powers,
            traces: vec![0; m * d],
            have: 0,
            t: Vec::with_capacity(d),
            a: Vec::with_capacity(d + 1),
            logs: Vec::with_capacity(d),
        }
    }

    /// Tr(α^k·x) mod f = Σ_i α^(k·2^i) · x^(2^i) mod f (computed on first use).
    fn trace(&mut self, k: u32) -> &[u32] {
        let d = self.d;
        if self.have >> k & 1 == 0 {
            let gf = self.gf;
            let out = &mut self.traces[k as usize * d..][..d];
            let mut lb = k; // log of β^(2^i)
            for row in self.powers.chunks_exact(d) {
                for (slot, &l) in out.iter_mut().zip(row) {
                    if l != LOG_ZERO {
                        *slot ^= gf.exp2n(lb + l);
                    }
                }
                lb = (2 * lb) % gf.n();
            }
            self.have |= 1 << k;
        }
        &self.traces[k as usize * d..][..d]
    }

    fn split(&mut self, rf: &RootFinder, g: Poly, first: u32, out: &mut Vec<u32>) -> bool {
        let gf = self.gf;
        if deg(&g) <= 4 {
            return g[0] != 0 && rf.small(gf, &g, out);
        }
        for k in first..gf.m() {
            let mut t = core::mem::take(&mut self.t);
            t.clear();
            t.extend_from_slice(self.trace(k));
            self.a.clear();
            self.a.extend_from_slice(&g);
            let h = gcd(gf, &mut self.a, &mut t, &mut self.logs);
            self.t = t;
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

/// `a` mod `b` in place (`b` non-zero, any leading coefficient; `a` trimmed after), with
/// `logs` as scratch for b's logarithms.
fn rem_assign(gf: &Field, a: &mut Poly, b: &[u32], logs: &mut Vec<u32>) {
    let n = gf.n();
    let db = deg(b);
    trim(a);
    if a.len() > db {
        logs.clear();
        logs.extend(b[..db].iter().map(|&c| to_log(gf, c)));
        // Each quotient coefficient is a_j / b_db: one more logarithm per row.
        let inv_lead = n - gf.log(b[db]);
        for j in (db..a.len()).rev() {
            let c = a[j];
            if c == 0 {
                continue;
            }
            let lq = gf.log(c) + inv_lead;
            let lq = if lq >= n { lq - n } else { lq };
            for (x, &l) in a[j - db..j].iter_mut().zip(logs.iter()) {
                if l != LOG_ZERO {
                    *x ^= gf.exp2n(lq + l);
                }
            }
        }
        a.truncate(db);
    }
    trim(a);
}

/// Monic gcd(a, b); both buffers are consumed as scratch, `logs` too. Euclid's remainders
/// are taken without making each divisor monic (one division per row instead of a pass
/// over the divisor); only the result is normalised.
fn gcd(gf: &Field, a: &mut Poly, b: &mut Poly, logs: &mut Vec<u32>) -> Poly {
    trim(a);
    trim(b);
    while !b.is_empty() {
        rem_assign(gf, a, b, logs);
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
            for d in (1..=24usize).chain([31, 40, 47, 60, 64]) {
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

    /// The closed forms of degree 3 and 4 against brute force on random polynomials: they
    /// succeed exactly when the polynomial has deg distinct non-zero roots, and find them.
    #[test]
    fn closed_forms_agree_with_brute_force() {
        for m in [5u32, 6, 8, 9] {
            let gf = Field::new(m, crate::gf::default_poly(m).unwrap()).unwrap();
            let rf = RootFinder::new(&gf);
            let mut x = 0x2545_F491_4F6C_DD1Du64 ^ m as u64;
            let mut rnd = || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 11) as u32 & gf.n()
            };
            let (mut split, mut other) = (0, 0);
            for i in 0..3000 {
                let d = 3 + i % 2;
                // Half from products of random roots (often distinct), half fully random.
                let f = if i % 4 < 2 {
                    let roots: Vec<u32> = (0..d).map(|_| rnd() % gf.n() + 1).collect();
                    product(&gf, &roots)
                } else {
                    let mut f: Vec<u32> = (0..d).map(|_| rnd()).collect();
                    f.push(1);
                    f
                };
                let eval = |x: u32| f.iter().rev().fold(0, |acc, &c| gf.mul(acc, x) ^ c);
                let brute: Vec<u32> = (1..=gf.n()).filter(|&x| eval(x) == 0).collect();
                // Distinct roots: as many as the degree, and no double root (f' ≠ 0 there).
                // f'(x) = Σ over odd k of f_k·x^(k−1) in characteristic 2.
                let deriv = |x: u32| {
                    (1..f.len()).filter(|k| k % 2 == 1).fold(0, |acc, k| {
                        let mut p = 1;
                        for _ in 0..k - 1 {
                            p = gf.mul(p, x);
                        }
                        acc ^ gf.mul(f[k], p)
                    })
                };
                let expect = f[0] != 0 && brute.len() == d && brute.iter().all(|&r| deriv(r) != 0);
                let mut found = Vec::new();
                let ok = rf.roots(&gf, &f, &mut found);
                assert_eq!(
                    ok && found.len() == d,
                    expect,
                    "m={m} f={f:?} brute={brute:?}"
                );
                if expect {
                    found.sort_unstable();
                    assert_eq!(found, brute, "m={m} f={f:?}");
                    split += 1;
                } else {
                    other += 1;
                }
            }
            assert!(
                split > 100 && other > 100,
                "m={m}: {split} split, {other} not"
            );
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

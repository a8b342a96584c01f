//! A carry-less-multiply encoder for parity wider than 128 bits (t > 8 at m = 16), chosen at
//! run time on x86-64 CPUs with PCLMULQDQ; the same arithmetic runs on the scalar model of a
//! lane ([`Soft`]) anywhere, which the tests compare with the table encoder.
//!
//! With L the generator's degree and P = 128·V ≥ L (V 128-bit pairs), the register is the
//! parity left-aligned in P bits, i.e. the remainder modulo g' = g·x^(P−L) = x^P + G. Data
//! go in 16-byte blocks (big-endian 128-bit polynomials) in runs of at most [`RUN`] blocks.
//! Within a run, block b of B contributes U_b·w_(B−1−b) with the precomputed weights
//! w_j = x^(128j)·x^P mod g' (P bits): a 128 × P-bit product, three carry-less products
//! per 128-bit pair of the weight (Karatsuba), summed unreduced into P + 128 bits with no
//! dependency from block to block. The register enters a run by being added to its first V
//! blocks (r·x^(128B) is exactly their weight), so every run but the first (which starts
//! from zero and takes the odd blocks) is a whole RUN ≥ V blocks. Once per run, the part
//! above x^P is reduced by Barrett reduction (μ = ⌊x^(P+128)/g'⌋ = x^128 + M:
//! q = H ⊕ hi128(H·M), and H·x^P mod g' is the low P bits of q·G).
//!
//! Cost: 3V products per 16 bytes (15 at t = 40, m = 16), against 8·(2V) table lookups for
//! slicing by 8.

#[cfg(all(feature = "std", target_arch = "x86_64"))]
use core::arch::x86_64::__m128i;

use crate::lanes::{Lane, Soft};
use alloc::vec;
use alloc::vec::Vec;

/// Blocks (16 bytes) per run.
pub(crate) const RUN: usize = 32;
/// Widest register handled (128-bit pairs): 2048 bits of parity.
pub(crate) const MAX_PAIRS: usize = 16;

/// Constants of one code (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct WideParity {
    /// 128-bit pairs of the register, V.
    pairs: usize,
    /// G = g' − x^P, pair 0 the most significant.
    g: Vec<u128>,
    /// M = μ − x^128.
    m: u128,
    /// Pair i of w_j at `weight[i * RUN + RUN − 1 − j]`: block b of a run of B blocks reads
    /// index `RUN − B + b`, so a run's weights for one pair are contiguous.
    weight: Vec<u128>,
    /// Run on the vector instructions (the CPU has PCLMULQDQ and SSSE3), else on the
    /// scalar model.
    #[cfg_attr(not(all(feature = "std", target_arch = "x86_64")), allow(dead_code))]
    hw: bool,
}

/// Multiplies a P-bit polynomial (pairs, most significant first) by x modulo x^P + G.
fn times_x(a: &mut [u128], g: &[u128]) {
    let top = a[0] >> 127;
    for i in 0..a.len() {
        let carry = a.get(i + 1).map_or(0, |n| n >> 127);
        a[i] = a[i] << 1 | carry;
    }
    if top == 1 {
        for (x, y) in a.iter_mut().zip(g) {
            *x ^= y;
        }
    }
}

impl WideParity {
    /// The constants for the generator whose low part, left-aligned in 64-bit words, is
    /// `gen` (the table encoder's representation: x^(L−1−k) at bit k, L ≤ 64·len); `None`
    /// beyond [`MAX_PAIRS`].
    pub(crate) fn new(gen: &[u64]) -> Option<WideParity> {
        let pairs = gen.len().div_ceil(2);
        if pairs == 0 || pairs > MAX_PAIRS {
            return None;
        }
        let word = |i: usize| gen.get(i).copied().unwrap_or(0) as u128;
        let g: Vec<u128> = (0..pairs)
            .map(|i| word(2 * i) << 64 | word(2 * i + 1))
            .collect();
        // M: the quotient bits of x^(P+128) / g' below x^128, by long division on the
        // P + 128 bits under the leading term: rem = (x^(P+128) − x^128·g') = x^128·G.
        let mut rem: Vec<u128> = g.clone();
        rem.push(0); // P + 128 bits, most significant pair first
        let mut m = 0u128;
        for bit in (0..128).rev() {
            // The coefficient of x^(P + bit) (the window's top bit) is quotient bit `bit`;
            // subtracting x^bit·g' = x^(P+bit) + x^bit·G drops it and adds G just below.
            let top = rem[0] >> 127;
            let n = rem.len();
            for i in 0..n {
                let carry = if i + 1 < n { rem[i + 1] >> 127 } else { 0 };
                rem[i] = rem[i] << 1 | carry;
            }
            if top == 1 {
                m |= 1 << bit;
                for (x, y) in rem[..pairs].iter_mut().zip(&g) {
                    *x ^= y;
                }
            }
        }
        let mut weight = vec![0u128; pairs * RUN];
        let mut w = g.clone(); // w_0 = x^P mod g' = G
        for j in 0..RUN {
            for (i, &p) in w.iter().enumerate() {
                weight[i * RUN + RUN - 1 - j] = p;
            }
            for _ in 0..128 {
                times_x(&mut w, &g);
            }
        }
        Some(WideParity {
            pairs,
            g,
            m,
            weight,
            hw: false,
        })
    }

    /// The constants on the vector instructions, if the CPU has them.
    pub(crate) fn on_hardware(self) -> Option<WideParity> {
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        if std::is_x86_feature_detected!("pclmulqdq") && std::is_x86_feature_detected!("ssse3") {
            return Some(WideParity { hw: true, ..self });
        }
        let _ = self;
        None
    }

    /// The left-aligned register (64-bit words, at most 2·V; overwritten) after feeding the
    /// whole 16-byte blocks of `data` into a zero register; returns the tail. On the
    /// hardware path when [`on_hardware`](WideParity::on_hardware) made it, else on the
    /// scalar model.
    pub(crate) fn remainder<'a>(&self, data: &'a [u8], reg: &mut [u64]) -> &'a [u8] {
        #[cfg(all(feature = "std", target_arch = "x86_64"))]
        if self.hw {
            // SAFETY: `hw` is set only if the CPU reported PCLMULQDQ and SSSE3.
            return unsafe { self.remainder_hw(data, reg) };
        }
        self.remainder_lanes::<Soft>(data, reg)
    }

    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    #[target_feature(enable = "pclmulqdq,ssse3")]
    unsafe fn remainder_hw<'a>(&self, data: &'a [u8], reg: &mut [u64]) -> &'a [u8] {
        self.remainder_lanes::<__m128i>(data, reg)
    }

    /// The algorithm on lanes of type `L`. The first run takes the odd blocks (blocks mod
    /// [`RUN`]) while the register is still zero; every later run has RUN ≥ V blocks for the
    /// register to enter.
    #[inline(always)]
    fn remainder_lanes<'a, L: Lane>(&self, data: &'a [u8], reg: &mut [u64]) -> &'a [u8] {
        let v = self.pairs;
        debug_assert!(reg.len() <= 2 * v);
        let mut r = [L::from_u128(0); MAX_PAIRS];
        let blocks = data.len() / 16;
        let (first, rest) = data[..blocks * 16].split_at(blocks % RUN * 16);
        self.run(&mut r[..v], first);
        for run in rest.chunks_exact(RUN * 16) {
            self.run(&mut r[..v], run);
        }
        for (i, x) in r[..v].iter().enumerate() {
            let p = x.to_u128();
            if let Some(w) = reg.get_mut(2 * i) {
                *w = (p >> 64) as u64;
            }
            if let Some(w) = reg.get_mut(2 * i + 1) {
                *w = p as u64;
            }
        }
        &data[blocks * 16..]
    }

    /// One run of B ≤ [`RUN`] blocks (B ≥ V, or a zero register: the register is added to
    /// the first V blocks).
    #[inline(always)]
    fn run<L: Lane>(&self, r: &mut [L], blocks: &[u8]) {
        let v = self.pairs;
        let nb = blocks.len() / 16;
        if nb == 0 {
            return;
        }
        let mut u = [L::from_u128(0); RUN];
        let mut uk = [L::from_u128(0); RUN];
        for (b, (x, k)) in u[..nb].iter_mut().zip(&mut uk[..nb]).enumerate() {
            let mut val = L::load_be(&blocks[16 * b..16 * b + 16]);
            if let Some(&x) = r.get(b) {
                val = val.xor(x);
            }
            *x = val;
            // Karatsuba: the sum of the halves (low 64 bits meaningful).
            *k = val.xor(val.shr64());
        }
        let mut acc = [L::from_u128(0); MAX_PAIRS + 1];
        for i in 0..v {
            let ws = &self.weight[i * RUN + RUN - nb..][..nb];
            let (mut hh, mut ll, mut mid) = (L::from_u128(0), L::from_u128(0), L::from_u128(0));
            for ((&x, &k), &w) in u[..nb].iter().zip(&uk[..nb]).zip(ws) {
                let w = L::from_u128(w);
                hh = hh.xor(x.clmul::<0x11>(w));
                ll = ll.xor(x.clmul::<0x00>(w));
                mid = mid.xor(k.clmul::<0x00>(w.xor(w.shr64())));
            }
            let mid = mid.xor(hh).xor(ll);
            acc[i] = acc[i].xor(hh).xor(mid.shr64());
            acc[i + 1] = acc[i + 1].xor(ll).xor(mid.shl64());
        }
        r.copy_from_slice(&acc[1..=v]);
        self.reduce_top(acc[0], r);
    }

    /// r += h·x^P mod g' (Barrett: q = h ⊕ hi128(h·M); the low P bits of q·G).
    #[inline(always)]
    fn reduce_top<L: Lane>(&self, h: L, r: &mut [L]) {
        let m = L::from_u128(self.m);
        let mid = h.clmul::<0x01>(m).xor(h.clmul::<0x10>(m));
        let q = h.xor(h.clmul::<0x11>(m)).xor(mid.shr64());
        for (i, &gp) in self.g.iter().enumerate() {
            let g = L::from_u128(gp);
            let mid = q.clmul::<0x01>(g).xor(q.clmul::<0x10>(g));
            let hi = q.clmul::<0x11>(g).xor(mid.shr64());
            let lo = q.clmul::<0x00>(g).xor(mid.shl64());
            r[i] = r[i].xor(lo);
            if i > 0 {
                r[i - 1] = r[i - 1].xor(hi);
            }
        }
    }
}

//! A carry-less-multiply (PCLMULQDQ) encoder for codes whose parity fits 128 bits, chosen at
//! run time on CPUs that have the instruction.
//!
//! Bulk data goes through two independent 256-bit accumulators with lazy reduction: each
//! round multiplies an accumulator by x^512 modulo g' one 64-bit limb at a time
//! (limb · (x^(512+64i) mod g'), two 64×64 products per limb, a result of at most 192 bits)
//! and adds the next 32 data bytes — four carry-less products per 16 bytes and no
//! reduction inside the loop. The accumulators are reduced once at the end by Barrett
//! reduction (six products per 128 bits), which also steps single 16-byte blocks.
//!
//! Polynomials are `u128` with bit i the coefficient of x^i. The register is the parity
//! left-aligned in 128 bits (R = S·x^(128−L)); with g' = g·x^(128−L) = x^128 + G and
//! μ = ⌊x^256 / g'⌋ = x^128 + M, one step maps V = R ⊕ U (U: the next 16 bytes, big-endian)
//! to R' = V·x^128 mod g' = lo128(q·G) with q = ⌊V·μ / x^128⌋ = V ⊕ hi128(V·M).
//!
//! On CPUs with AVX-512 (F, BW) and VPCLMULQDQ, whole 64-byte rounds go through the wide
//! path instead ([`Wide`]): the data are cut into runs of at most [`RUN`] blocks, and each
//! block's contribution U·x^(128j) mod g' (j: its distance in blocks from the run's end) is
//! a product with a precomputed constant x^(128j) mod g', four lanes per instruction. The
//! products of a run are summed unreduced in three 512-bit accumulators (low, middle and
//! high partial products) with no dependency from block to block, and reduced once per
//! run; the register enters by being added to the run's first block.
//!
//! The algorithms are written on [`Lane`] / [`Lane4`] and compiled twice: on the vector
//! registers behind `target_feature` entry points (only called where the CPU reported the
//! instructions), and on their scalar models ([`Clmul::model`], reached through
//! `Bch::lane_models`), so the tests exercise the wide path's arithmetic — runs, weights,
//! the four-sector transpose — on CPUs without AVX-512 too.

use crate::lanes::{Lane, Lane4, Soft, Soft4};
use core::arch::x86_64::{__m128i, __m512i, _mm_clmulepi64_si128};

/// Where a [`Clmul`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Exec {
    /// On the CPU's instructions (checked at construction).
    Hardware,
    /// On the scalar model of the lanes (any CPU; slow; for tests).
    Model,
}

/// Constants of one code.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clmul {
    /// M = μ − x^128.
    m: u128,
    /// G = g' − x^128.
    g: u128,
    /// x^(256+64i) mod g', i = 0..4: folds a 256-bit accumulator past the other lane.
    k256: [u128; 4],
    /// x^(512+64i) mod g', i = 0..4: advances an accumulator by one 64-byte round.
    k512: [u128; 4],
    /// The wide (four-lane) path's constants, where it runs.
    wide: Option<Wide>,
    exec: Exec,
}

/// Blocks (16 bytes) per run of the wide path: a multiple of 4 (one 512-bit load).
const RUN: usize = 32;

/// Constants of the wide path: `weight[i]` = x^(128(RUN − i)) mod g', the weight of
/// block i of a whole run; a run of B < RUN blocks uses `weight[RUN − B..]`, so the four
/// weights of each 64-byte round are contiguous.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct Wide {
    weight: [u128; RUN],
}

impl Wide {
    /// The weights of round `q` (blocks 4q..4q + 4) of a run of `blocks` blocks, one per
    /// lane: `weight[RUN − blocks + 4q ..][..4]`.
    #[inline(always)]
    fn quad<Z: Lane4>(&self, blocks: usize, q: usize) -> Z {
        let at = RUN - blocks + 4 * q;
        Z::from_lanes(self.weight[at..at + 4].try_into().expect("four weights"))
    }
}

/// A 64-byte round as four big-endian 128-bit blocks, `reg` added to the first.
#[inline(always)]
fn load_quad<Z: Lane4>(quad: &[u8], reg: u128) -> Z {
    Z::load_be(quad).xor(Z::from_lanes([reg, 0, 0, 0]))
}

/// Adds the unreduced products of four blocks `v` and their weights `k`, lane by lane, to
/// `acc`: [low, middle, high] partial products (bits 0, 64 and 128 up).
#[inline(always)]
fn mul_acc<Z: Lane4>(acc: &mut [Z; 3], v: Z, k: Z) {
    acc[0] = acc[0].xor(v.clmul::<0x00>(k));
    acc[1] = acc[1].xor(v.clmul::<0x01>(k).xor(v.clmul::<0x10>(k)));
    acc[2] = acc[2].xor(v.clmul::<0x11>(k));
}

/// Sets bit `i` of a 384-bit number.
fn flip(x: &mut [u128; 3], i: usize) {
    x[i / 128] ^= 1u128 << (i % 128);
}

fn bit(x: &[u128; 3], i: usize) -> bool {
    x[i / 128] >> (i % 128) & 1 == 1
}

impl Clmul {
    /// The step constants for a generator whose low part, left-aligned in two words, is
    /// `gen` (the encoder's representation), on the CPU's instructions; `None` if the CPU
    /// lacks PCLMULQDQ. The wide path is kept only where the CPU has AVX-512 (F, BW) and
    /// VPCLMULQDQ.
    pub(crate) fn new(gen: [u64; 2]) -> Option<Clmul> {
        if !std::is_x86_feature_detected!("pclmulqdq") || !std::is_x86_feature_detected!("ssse3") {
            return None;
        }
        let mut c = Clmul::constants(gen, Exec::Hardware);
        if !(std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("vpclmulqdq"))
        {
            c.wide = None;
        }
        Some(c)
    }

    /// The same constants running on the scalar model of the lanes, wide path included,
    /// whatever the CPU has (for tests).
    pub(crate) fn model(gen: [u64; 2]) -> Clmul {
        Clmul::constants(gen, Exec::Model)
    }

    fn constants(gen: [u64; 2], exec: Exec) -> Clmul {
        let g = (gen[0] as u128) << 64 | gen[1] as u128;
        // μ = ⌊x^256 / (x^128 + G)⌋ by long division.
        let mut rem = [0u128; 3];
        flip(&mut rem, 256);
        let mut q = [0u128; 3];
        for i in (128..=256).rev() {
            if bit(&rem, i) {
                let s = i - 128;
                flip(&mut q, s);
                flip(&mut rem, i);
                for b in 0..128 {
                    if g >> b & 1 == 1 {
                        flip(&mut rem, b + s);
                    }
                }
            }
        }
        debug_assert!(bit(&q, 128));
        let m = q[0];
        // x^k mod g' by repeated multiplication by x (bitwise), from x^128 ≡ G.
        let times_x = |a: u128, n: u32| -> u128 {
            let mut r = a;
            for _ in 0..n {
                let top = r >> 127 == 1;
                r <<= 1;
                if top {
                    r ^= g;
                }
            }
            r
        };
        let x256 = times_x(g, 128);
        let k256: [u128; 4] = core::array::from_fn(|i| times_x(x256, 64 * i as u32));
        let x512 = times_x(x256, 256);
        let k512: [u128; 4] = core::array::from_fn(|i| times_x(x512, 64 * i as u32));
        // x^128 mod g' = G for the last block, one more factor x^128 per block before.
        let mut weight = [0u128; RUN];
        let mut c = g;
        for w in weight.iter_mut().rev() {
            *w = c;
            c = times_x(c, 128);
        }
        Clmul {
            m,
            g,
            k256,
            k512,
            wide: Some(Wide { weight }),
            exec,
        }
    }

    /// The same constants without the wide path (for cross-checking the two).
    pub(crate) fn narrow(mut self) -> Clmul {
        self.wide = None;
        self
    }

    /// Feeds whole 16-byte chunks of `data` into the register `reg` (one or two words);
    /// returns the tail.
    pub(crate) fn remainder<'a>(&self, data: &'a [u8], reg: &mut [u64]) -> &'a [u8] {
        let wide = self.wide.as_ref().filter(|_| data.len() >= 64);
        match (self.exec, wide) {
            // SAFETY: a hardware `Clmul` keeps `wide` only if the CPU reported AVX-512 F and
            // BW and VPCLMULQDQ, and exists only if it reported PCLMULQDQ and SSSE3.
            (Exec::Hardware, Some(w)) => unsafe { self.remainder_wide_hw(w, data, reg) },
            // SAFETY: as above, PCLMULQDQ and SSSE3.
            (Exec::Hardware, None) => unsafe { self.remainder_hw(data, reg) },
            (Exec::Model, Some(w)) => self.remainder_wide_lanes::<Soft4>(w, data, reg),
            (Exec::Model, None) => self.remainder_lanes::<Soft>(data, reg),
        }
    }

    /// Whether four sectors of `sector` bytes can go through
    /// [`remainder_x4`](Clmul::remainder_x4): the wide path runs and a sector is whole
    /// 64-byte rounds.
    pub(crate) fn has_x4(&self, sector: usize) -> bool {
        self.wide.is_some() && sector > 0 && sector.is_multiple_of(64)
    }

    /// The registers (left-aligned, as `u128`) after feeding each of four equal-length
    /// sectors into a zero register: the four codewords side by side, so their reductions
    /// share instructions. Only where [`has_x4`](Clmul::has_x4) holds.
    pub(crate) fn remainder_x4(&self, sectors: [&[u8]; 4]) -> [u128; 4] {
        let w = self.wide.as_ref().expect("has_x4 checked");
        let len = sectors[0].len();
        assert!(len.is_multiple_of(64) && sectors.iter().all(|s| s.len() == len));
        match self.exec {
            // SAFETY: as in `remainder`.
            Exec::Hardware => unsafe { self.remainder_x4_hw(w, sectors) },
            Exec::Model => self.remainder_x4_lanes::<Soft4>(w, sectors),
        }
    }

    #[target_feature(enable = "pclmulqdq,ssse3")]
    unsafe fn remainder_hw<'a>(&self, data: &'a [u8], reg: &mut [u64]) -> &'a [u8] {
        self.remainder_lanes::<__m128i>(data, reg)
    }

    #[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,pclmulqdq,ssse3")]
    unsafe fn remainder_wide_hw<'a>(&self, w: &Wide, data: &'a [u8], reg: &mut [u64]) -> &'a [u8] {
        self.remainder_wide_lanes::<__m512i>(w, data, reg)
    }

    #[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,pclmulqdq,ssse3")]
    unsafe fn remainder_x4_hw(&self, w: &Wide, sectors: [&[u8]; 4]) -> [u128; 4] {
        self.remainder_x4_lanes::<__m512i>(w, sectors)
    }

    /// Four sectors side by side on four-lane registers `Z`.
    #[inline(always)]
    fn remainder_x4_lanes<Z: Lane4>(&self, w: &Wide, sectors: [&[u8]; 4]) -> [u128; 4] {
        let len = sectors[0].len();
        let mut r = [0u128; 4];
        let mut start = 0;
        while start < len {
            let blocks = ((len - start) / 16).min(RUN);
            let zero = Z::from_lanes([0; 4]);
            let mut acc = [[zero; 3]; 4];
            for q in 0..blocks / 4 {
                let k = w.quad::<Z>(blocks, q);
                for (s, a) in acc.iter_mut().enumerate() {
                    // Sector s's register adds to its run's first block.
                    let reg = if q == 0 { r[s] } else { 0 };
                    let v = load_quad::<Z>(&sectors[s][start + 64 * q..start + 64 * (q + 1)], reg);
                    mul_acc(a, v, k);
                }
            }
            // Lane s of each sum: sector s's low, middle and high partial products.
            let sum = |i: usize| Z::transpose_sum([acc[0][i], acc[1][i], acc[2][i], acc[3][i]]);
            let (lo, mid, hi) = (sum(0), sum(1), sum(2));
            let t_hi = hi.xor(mid.shr64());
            let t_lo = lo.xor(mid.shl64());
            r = self.times_x128_x4(t_hi).xor(t_lo).to_lanes();
            start += blocks * 16;
        }
        r
    }

    /// [`times_x128`](Clmul::times_x128) on four lanes at once.
    #[inline(always)]
    fn times_x128_x4<Z: Lane4>(&self, v: Z) -> Z {
        let m = Z::from_lanes([self.m; 4]);
        let g = Z::from_lanes([self.g; 4]);
        let mid = v.clmul::<0x01>(m).xor(v.clmul::<0x10>(m));
        let q = v.xor(v.clmul::<0x11>(m)).xor(mid.shr64());
        let cross = q.clmul::<0x01>(g).xor(q.clmul::<0x10>(g));
        q.clmul::<0x00>(g).xor(cross.shl64())
    }

    /// The wide path: whole 64-byte rounds in runs of at most [`RUN`] blocks, then the
    /// 16-byte steps of [`remainder_lanes`](Clmul::remainder_lanes) for the rest.
    #[inline(always)]
    fn remainder_wide_lanes<'a, Z: Lane4>(
        &self,
        w: &Wide,
        data: &'a [u8],
        reg: &mut [u64],
    ) -> &'a [u8] {
        let mut r = (reg[0] as u128) << 64 | reg.get(1).copied().unwrap_or(0) as u128;
        let whole = data.len() / 64 * 64;
        for run in data[..whole].chunks(RUN * 16) {
            let blocks = run.len() / 16;
            let zero = Z::from_lanes([0; 4]);
            let mut acc = [zero; 3];
            for (q, quad) in run.chunks_exact(64).enumerate() {
                // The register adds to the run's first block (lane 0).
                let v = load_quad::<Z>(quad, if q == 0 { r } else { 0 });
                mul_acc(&mut acc, v, w.quad::<Z>(blocks, q));
            }
            // T = hi·x^128 + mid·x^64 + lo, summed over the lanes; r = T mod g'.
            let (lo, mid, hi) = (acc[0].lanes_xor(), acc[1].lanes_xor(), acc[2].lanes_xor());
            let t_hi = hi.xor(mid.shr64());
            let t_lo = lo.xor(mid.shl64());
            r = self.times_x128(t_hi).xor(t_lo).to_u128();
        }
        reg[0] = (r >> 64) as u64;
        if let Some(x) = reg.get_mut(1) {
            *x = r as u64;
        }
        self.remainder_lanes::<Z::One>(&data[whole..], reg)
    }

    /// V·x^128 mod g' (one Barrett reduction).
    #[inline(always)]
    fn times_x128<L: Lane>(&self, v: L) -> L {
        let m = L::from_u128(self.m);
        let g = L::from_u128(self.g);
        // q = V ⊕ hi128(V·M)
        let mid = v.clmul::<0x01>(m).xor(v.clmul::<0x10>(m));
        let q = v.xor(v.clmul::<0x11>(m)).xor(mid.shr64());
        // lo128(q·G)
        let cross = q.clmul::<0x01>(g).xor(q.clmul::<0x10>(g));
        q.clmul::<0x00>(g).xor(cross.shl64())
    }

    /// A·x^(256 or 512) modulo g' up to a multiple of g', for a 256-bit A = (hi, lo):
    /// Σ limb_i · k[i] over A's four 64-bit limbs, at most 192 bits, as (hi, lo).
    #[inline(always)]
    fn fold<L: Lane>(&self, (hi, lo): (L, L), k: &[L; 4]) -> (L, L) {
        // Products with the constants' low halves land at bits 0..128, with their high
        // halves at bits 64..192.
        let low = lo
            .clmul::<0x00>(k[0])
            .xor(lo.clmul::<0x01>(k[1]))
            .xor(hi.clmul::<0x00>(k[2]).xor(hi.clmul::<0x01>(k[3])));
        let high = lo
            .clmul::<0x10>(k[0])
            .xor(lo.clmul::<0x11>(k[1]))
            .xor(hi.clmul::<0x10>(k[2]).xor(hi.clmul::<0x11>(k[3])));
        (high.shr64(), low.xor(high.shl64()))
    }

    /// The 128-bit path on lanes `L`.
    #[inline(always)]
    fn remainder_lanes<'a, L: Lane>(&self, data: &'a [u8], reg: &mut [u64]) -> &'a [u8] {
        let start = (reg[0] as u128) << 64 | reg.get(1).copied().unwrap_or(0) as u128;
        let mut r = L::from_u128(start);
        let mut rest = data;
        if data.len() >= 128 {
            // Two 256-bit accumulators over alternating 32-byte chunks, each advanced by
            // x^512 per 64-byte round: after the last round the prefix is
            // P ≡ A1·x^256 + A2 (mod g'), and the register is P·x^128 mod g'.
            let k512: [L; 4] = self.k512.map(L::from_u128);
            let k256: [L; 4] = self.k256.map(L::from_u128);
            let chunk = |c: &[u8]| (L::load_be(&c[0..16]), L::load_be(&c[16..32]));
            let mut rounds = data.chunks_exact(64);
            let first = rounds.next().expect("at least 128 bytes");
            let (h, l) = chunk(&first[..32]);
            let mut a1 = (h.xor(r), l);
            let mut a2 = chunk(&first[32..]);
            for c in &mut rounds {
                let (f1, f2) = (self.fold(a1, &k512), self.fold(a2, &k512));
                let (h1, l1) = chunk(&c[..32]);
                let (h2, l2) = chunk(&c[32..]);
                a1 = (f1.0.xor(h1), f1.1.xor(l1));
                a2 = (f2.0.xor(h2), f2.1.xor(l2));
            }
            let f = self.fold(a1, &k256);
            let (hi, lo) = (f.0.xor(a2.0), f.1.xor(a2.1));
            // (hi·x^128 + lo)·x^128 mod g'.
            r = self.times_x128(self.times_x128(hi).xor(lo));
            rest = rounds.remainder();
        }
        let mut chunks = rest.chunks_exact(16);
        for c in &mut chunks {
            r = self.times_x128(r.xor(L::load_be(c)));
        }
        let out = r.to_u128();
        reg[0] = (out >> 64) as u64;
        if let Some(w) = reg.get_mut(1) {
            *w = out as u64;
        }
        chunks.remainder()
    }
}

/// Carry-less-multiply parity of fixed-length messages of whole 64-bit limbs with parity
/// of at most 64 bits (a [`FixedEncoder`](crate::FixedEncoder)'s fast path).
///
/// With g' = g·x^(64−L) = x^64 + G, the left-aligned parity of a message D of n big-endian
/// limbs a_0 … a_(n−1) is D·x^64 mod g' = Σ a_i·(x^(64(n−i)) mod g') mod g': one 64×64
/// product per limb summed unreduced into 128 bits S = s1·x^64 + s0, then
/// s1·x^64 mod g' by Barrett reduction (two products) plus s0.
#[derive(Debug, Clone)]
pub(crate) struct FixedClmul {
    /// `weight[i]` = x^(64(n−i)) mod g', the weight of limb i.
    weight: alloc::vec::Vec<u64>,
    /// G = g' − x^64.
    g: u64,
    /// M = ⌊x^128 / g'⌋ − x^64.
    m: u64,
}

impl FixedClmul {
    /// The constants for messages of `weight.len()` limbs, where `weight[i]` is the
    /// left-aligned parity of the message whose only set bit is limb i's lowest (that is
    /// x^(64(n−i)) mod g'); `None` if the CPU lacks PCLMULQDQ.
    pub(crate) fn new(weight: alloc::vec::Vec<u64>) -> Option<FixedClmul> {
        if !std::is_x86_feature_detected!("pclmulqdq") || weight.is_empty() {
            return None;
        }
        // The last limb's weight is x^64 mod g' = G.
        let g = *weight.last().expect("non-empty");
        // M = ⌊x^128 / g'⌋ − x^64 by long division (bit i of `rem` is the coefficient of
        // x^i). The quotient's x^64 term leaves x^128 − x^64·g' = G·x^64.
        let gp = 1u128 << 64 | g as u128;
        let mut rem = (g as u128) << 64;
        let mut m = 0u64;
        for i in (64..128).rev() {
            if rem >> i & 1 == 1 {
                m |= 1 << (i - 64);
                rem ^= gp << (i - 64);
            }
        }
        Some(FixedClmul { weight, g, m })
    }

    /// The left-aligned parity of `data` (exactly `8 · weight.len()` bytes).
    pub(crate) fn parity(&self, data: &[u8]) -> u64 {
        // SAFETY: a `FixedClmul` exists only if the CPU reported PCLMULQDQ (see `new`).
        unsafe { self.parity_unchecked(data) }
    }

    #[target_feature(enable = "pclmulqdq")]
    unsafe fn parity_unchecked(&self, data: &[u8]) -> u64 {
        let mul = |a: u64, b: u64| int(_mm_clmulepi64_si128(xmm(a as u128), xmm(b as u128), 0));
        let mut s = 0u128;
        for (limb, &w) in data.chunks_exact(8).zip(&self.weight) {
            s ^= mul(u64::from_be_bytes(limb.try_into().expect("8 bytes")), w);
        }
        let (s1, s0) = ((s >> 64) as u64, s as u64);
        let q = s1 ^ (mul(s1, self.m) >> 64) as u64;
        mul(q, self.g) as u64 ^ s0
    }
}

/// A 128-bit polynomial in a vector register (lane 0 = the low 64 bits).
#[inline]
fn xmm(x: u128) -> __m128i {
    __m128i::from_u128(x)
}

/// The inverse of [`xmm`].
#[inline]
fn int(x: __m128i) -> u128 {
    x.to_u128()
}

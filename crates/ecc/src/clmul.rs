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

use core::arch::x86_64::{
    __m128i, __m512i, _mm512_bslli_epi128, _mm512_bsrli_epi128, _mm512_castsi512_si128,
    _mm512_clmulepi64_epi128, _mm512_extracti32x4_epi32, _mm512_loadu_si512, _mm512_set_epi8,
    _mm512_setzero_si512, _mm512_shuffle_epi8, _mm512_shuffle_i64x2, _mm512_xor_si512,
    _mm_clmulepi64_si128, _mm_loadu_si128, _mm_set_epi8, _mm_shuffle_epi8, _mm_slli_si128,
    _mm_srli_si128, _mm_xor_si128,
};

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
    /// The AVX-512 path's constants, where the CPU has it.
    wide: Option<Wide>,
}

/// Blocks (16 bytes) per run of the wide path: a multiple of 4 (one 512-bit load).
const RUN: usize = 32;

/// Constants of the AVX-512 path: `weight[i]` = x^(128(RUN − i)) mod g', the weight of
/// block i of a whole run; a run of B < RUN blocks uses `weight[RUN − B..]`, so the four
/// weights of each 64-byte round are contiguous (one load).
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct Wide {
    weight: [u128; RUN],
}

impl Wide {
    /// The weights of round `q` (blocks 4q..4q + 4) of a run of `blocks` blocks, one per
    /// lane: `weight[RUN − blocks + 4q ..][..4]`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn quad(&self, blocks: usize, q: usize) -> __m512i {
        let at = RUN - blocks + 4 * q;
        let k = &self.weight[at..at + 4];
        // SAFETY: `k` is four u128s (64 readable bytes); the load is unaligned.
        unsafe { _mm512_loadu_si512(k.as_ptr().cast()) }
    }
}

/// A 64-byte round as four big-endian 128-bit blocks, `reg` added to the first.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn load_quad(quad: &[u8], rev: __m512i, reg: u128) -> __m512i {
    assert_eq!(quad.len(), 64);
    // SAFETY: `quad` is 64 readable bytes; the load is unaligned.
    let raw = unsafe { _mm512_loadu_si512(quad.as_ptr().cast()) };
    _mm512_xor_si512(_mm512_shuffle_epi8(raw, rev), zmm([reg, 0, 0, 0]))
}

/// Adds the unreduced products of four blocks `v` and their weights `k`, lane by lane, to
/// `acc`: [low, middle, high] partial products (bits 0, 64 and 128 up).
#[inline]
#[target_feature(enable = "avx512f,vpclmulqdq")]
fn mul_acc(acc: &mut [__m512i; 3], v: __m512i, k: __m512i) {
    acc[0] = _mm512_xor_si512(acc[0], _mm512_clmulepi64_epi128(v, k, 0x00));
    acc[1] = _mm512_xor_si512(
        acc[1],
        _mm512_xor_si512(
            _mm512_clmulepi64_epi128(v, k, 0x01),
            _mm512_clmulepi64_epi128(v, k, 0x10),
        ),
    );
    acc[2] = _mm512_xor_si512(acc[2], _mm512_clmulepi64_epi128(v, k, 0x11));
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
    /// `gen` (the encoder's representation); `None` if the CPU lacks PCLMULQDQ.
    pub(crate) fn new(gen: [u64; 2]) -> Option<Clmul> {
        if !std::is_x86_feature_detected!("pclmulqdq") || !std::is_x86_feature_detected!("ssse3") {
            return None;
        }
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
        let wide = (std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("vpclmulqdq"))
        .then(|| {
            // x^128 mod g' = G for the last block, one more factor x^128 per block before.
            let mut weight = [0u128; RUN];
            let mut c = g;
            for w in weight.iter_mut().rev() {
                *w = c;
                c = times_x(c, 128);
            }
            Wide { weight }
        });
        Some(Clmul {
            m,
            g,
            k256,
            k512,
            wide,
        })
    }

    /// The same constants without the AVX-512 path (for cross-checking the two).
    pub(crate) fn narrow(mut self) -> Clmul {
        self.wide = None;
        self
    }

    /// Feeds whole 16-byte chunks of `data` into the register `reg` (one or two words);
    /// returns the tail.
    pub(crate) fn remainder<'a>(&self, data: &'a [u8], reg: &mut [u64]) -> &'a [u8] {
        if let Some(w) = &self.wide {
            if data.len() >= 64 {
                // SAFETY: `wide` is set only if the CPU reported AVX-512 F and BW and
                // VPCLMULQDQ, and a `Clmul` only if it reported PCLMULQDQ and SSSE3.
                return unsafe { self.remainder_wide(w, data, reg) };
            }
        }
        // SAFETY: a `Clmul` exists only if the CPU reported PCLMULQDQ and SSSE3 (see `new`).
        unsafe { self.remainder_unchecked(data, reg) }
    }

    /// Whether four sectors of `sector` bytes can go through
    /// [`remainder_x4`](Clmul::remainder_x4): the CPU has the wide path and a sector is whole
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
        // SAFETY: `wide` is set only if the CPU reported AVX-512 F and BW and VPCLMULQDQ,
        // and a `Clmul` only if it reported PCLMULQDQ and SSSE3.
        unsafe { self.remainder_x4_unchecked(w, sectors) }
    }

    #[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,pclmulqdq,ssse3")]
    unsafe fn remainder_x4_unchecked(&self, w: &Wide, sectors: [&[u8]; 4]) -> [u128; 4] {
        let rev = rev_lanes();
        let len = sectors[0].len();
        let mut r = [0u128; 4];
        let mut start = 0;
        while start < len {
            let blocks = ((len - start) / 16).min(RUN);
            let zero = _mm512_setzero_si512();
            let mut acc = [[zero; 3]; 4];
            for q in 0..blocks / 4 {
                let k = w.quad(blocks, q);
                for (s, a) in acc.iter_mut().enumerate() {
                    // Sector s's register adds to its run's first block.
                    let reg = if q == 0 { r[s] } else { 0 };
                    let v = load_quad(&sectors[s][start + 64 * q..start + 64 * (q + 1)], rev, reg);
                    mul_acc(a, v, k);
                }
            }
            // Lane s of each sum: sector s's low, middle and high partial products.
            let sum = |i: usize| transpose_sum([acc[0][i], acc[1][i], acc[2][i], acc[3][i]]);
            let (lo, mid, hi) = (sum(0), sum(1), sum(2));
            let t_hi = _mm512_xor_si512(hi, _mm512_bsrli_epi128::<8>(mid));
            let t_lo = _mm512_xor_si512(lo, _mm512_bslli_epi128::<8>(mid));
            r = ints(_mm512_xor_si512(self.times_x128_x4(t_hi), t_lo));
            start += blocks * 16;
        }
        r
    }

    /// [`times_x128`](Clmul::times_x128) on four lanes at once.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,vpclmulqdq")]
    fn times_x128_x4(&self, v: __m512i) -> __m512i {
        let m = zmm([self.m; 4]);
        let g = zmm([self.g; 4]);
        let mid = _mm512_xor_si512(
            _mm512_clmulepi64_epi128(v, m, 0x01),
            _mm512_clmulepi64_epi128(v, m, 0x10),
        );
        let q = _mm512_xor_si512(
            _mm512_xor_si512(v, _mm512_clmulepi64_epi128(v, m, 0x11)),
            _mm512_bsrli_epi128::<8>(mid),
        );
        let cross = _mm512_xor_si512(
            _mm512_clmulepi64_epi128(q, g, 0x01),
            _mm512_clmulepi64_epi128(q, g, 0x10),
        );
        _mm512_xor_si512(
            _mm512_clmulepi64_epi128(q, g, 0x00),
            _mm512_bslli_epi128::<8>(cross),
        )
    }

    /// The wide path: whole 64-byte rounds in runs of at most [`RUN`] blocks, then the
    /// 16-byte steps of [`remainder_unchecked`](Clmul::remainder_unchecked) for the rest.
    #[target_feature(enable = "avx512f,avx512bw,vpclmulqdq,pclmulqdq,ssse3")]
    unsafe fn remainder_wide<'a>(&self, w: &Wide, data: &'a [u8], reg: &mut [u64]) -> &'a [u8] {
        let start = (reg[0] as u128) << 64 | reg.get(1).copied().unwrap_or(0) as u128;
        let mut r = start;
        let rev = rev_lanes();
        let whole = data.len() / 64 * 64;
        for run in data[..whole].chunks(RUN * 16) {
            let blocks = run.len() / 16;
            let mut acc = [_mm512_setzero_si512(); 3];
            for (q, quad) in run.chunks_exact(64).enumerate() {
                // The register adds to the run's first block (lane 0).
                let v = load_quad(quad, rev, if q == 0 { r } else { 0 });
                mul_acc(&mut acc, v, w.quad(blocks, q));
            }
            // T = hi·x^128 + mid·x^64 + lo, summed over the lanes; r = T mod g'.
            let [lo, mid, hi] = acc.map(|a| int(lanes_xor(a)));
            let t_hi = hi ^ (mid >> 64);
            let t_lo = lo ^ (mid << 64);
            r = int(self.times_x128(xmm(t_hi))) ^ t_lo;
        }
        reg[0] = (r >> 64) as u64;
        if let Some(x) = reg.get_mut(1) {
            *x = r as u64;
        }
        // SAFETY: the caller's CPU has PCLMULQDQ and SSSE3 (see above).
        unsafe { self.remainder_unchecked(&data[whole..], reg) }
    }

    /// V·x^128 mod g' (one Barrett reduction), in vector registers.
    #[inline]
    #[target_feature(enable = "pclmulqdq")]
    unsafe fn times_x128(&self, v: __m128i) -> __m128i {
        let m = xmm(self.m);
        let g = xmm(self.g);
        // q = V ⊕ hi128(V·M)
        let mid = _mm_xor_si128(
            _mm_clmulepi64_si128(v, m, 0x01),
            _mm_clmulepi64_si128(v, m, 0x10),
        );
        let q = _mm_xor_si128(
            _mm_xor_si128(v, _mm_clmulepi64_si128(v, m, 0x11)),
            _mm_srli_si128(mid, 8),
        );
        // lo128(q·G)
        let cross = _mm_xor_si128(
            _mm_clmulepi64_si128(q, g, 0x01),
            _mm_clmulepi64_si128(q, g, 0x10),
        );
        _mm_xor_si128(_mm_clmulepi64_si128(q, g, 0x00), _mm_slli_si128(cross, 8))
    }

    /// A·x^(256 or 512) modulo g' up to a multiple of g', for a 256-bit A = (hi, lo):
    /// Σ limb_i · k[i] over A's four 64-bit limbs, at most 192 bits, as (hi, lo).
    #[inline]
    #[target_feature(enable = "pclmulqdq")]
    unsafe fn fold(&self, (hi, lo): (__m128i, __m128i), k: &[__m128i; 4]) -> (__m128i, __m128i) {
        // Products with the constants' low halves land at bits 0..128, with their high
        // halves at bits 64..192.
        let low = _mm_xor_si128(
            _mm_xor_si128(
                _mm_clmulepi64_si128(lo, k[0], 0x00),
                _mm_clmulepi64_si128(lo, k[1], 0x01),
            ),
            _mm_xor_si128(
                _mm_clmulepi64_si128(hi, k[2], 0x00),
                _mm_clmulepi64_si128(hi, k[3], 0x01),
            ),
        );
        let high = _mm_xor_si128(
            _mm_xor_si128(
                _mm_clmulepi64_si128(lo, k[0], 0x10),
                _mm_clmulepi64_si128(lo, k[1], 0x11),
            ),
            _mm_xor_si128(
                _mm_clmulepi64_si128(hi, k[2], 0x10),
                _mm_clmulepi64_si128(hi, k[3], 0x11),
            ),
        );
        (
            _mm_srli_si128(high, 8),
            _mm_xor_si128(low, _mm_slli_si128(high, 8)),
        )
    }

    #[target_feature(enable = "pclmulqdq,ssse3")]
    unsafe fn remainder_unchecked<'a>(&self, data: &'a [u8], reg: &mut [u64]) -> &'a [u8] {
        let start = (reg[0] as u128) << 64 | reg.get(1).copied().unwrap_or(0) as u128;
        let mut r = xmm(start);
        let block = |c: &[u8]| {
            let c: &[u8; 16] = c.try_into().expect("16-byte chunk");
            // SAFETY: this function runs only where SSSE3 exists (see `new`).
            unsafe { load_be(c) }
        };
        let mut rest = data;
        if data.len() >= 128 {
            // Two 256-bit accumulators over alternating 32-byte chunks, each advanced by
            // x^512 per 64-byte round: after the last round the prefix is
            // P ≡ A1·x^256 + A2 (mod g'), and the register is P·x^128 mod g'.
            let k512: [__m128i; 4] = core::array::from_fn(|i| xmm(self.k512[i]));
            let k256: [__m128i; 4] = core::array::from_fn(|i| xmm(self.k256[i]));
            let chunk = |c: &[u8]| (block(&c[0..16]), block(&c[16..32]));
            let mut rounds = data.chunks_exact(64);
            let first = rounds.next().expect("at least 128 bytes");
            let (h, l) = chunk(&first[..32]);
            let mut a1 = (_mm_xor_si128(h, r), l);
            let mut a2 = chunk(&first[32..]);
            for c in &mut rounds {
                let (f1, f2) = (self.fold(a1, &k512), self.fold(a2, &k512));
                let (h1, l1) = chunk(&c[..32]);
                let (h2, l2) = chunk(&c[32..]);
                a1 = (_mm_xor_si128(f1.0, h1), _mm_xor_si128(f1.1, l1));
                a2 = (_mm_xor_si128(f2.0, h2), _mm_xor_si128(f2.1, l2));
            }
            let f = self.fold(a1, &k256);
            let (hi, lo) = (_mm_xor_si128(f.0, a2.0), _mm_xor_si128(f.1, a2.1));
            // (hi·x^128 + lo)·x^128 mod g'.
            r = self.times_x128(_mm_xor_si128(self.times_x128(hi), lo));
            rest = rounds.remainder();
        }
        let mut chunks = rest.chunks_exact(16);
        for c in &mut chunks {
            r = self.times_x128(_mm_xor_si128(r, block(c)));
        }
        let out = int(r);
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

/// 16 bytes read as a big-endian 128-bit polynomial (byte 0 holds x^127..x^120).
#[inline]
#[target_feature(enable = "ssse3")]
unsafe fn load_be(c: &[u8; 16]) -> __m128i {
    // SAFETY: `c` is 16 readable bytes; the load is unaligned.
    let v = unsafe { _mm_loadu_si128(c.as_ptr().cast()) };
    _mm_shuffle_epi8(
        v,
        _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
    )
}

/// A 128-bit polynomial in a vector register (lane 0 = the low 64 bits).
#[inline]
fn xmm(x: u128) -> __m128i {
    // SAFETY: both types are 16 plain bytes; x86_64 is little-endian, so lane 0 holds the
    // low half.
    unsafe { core::mem::transmute::<u128, __m128i>(x) }
}

/// Four 128-bit polynomials in a 512-bit register (lane i = `x[i]`).
#[inline]
fn zmm(x: [u128; 4]) -> __m512i {
    // SAFETY: both types are 64 plain bytes, lane i at bytes 16i..16i + 16 (little-endian).
    unsafe { core::mem::transmute::<[u128; 4], __m512i>(x) }
}

/// The shuffle control that reverses the bytes of each 128-bit lane (16 bytes read as a
/// big-endian polynomial).
#[inline]
#[target_feature(enable = "avx512f")]
fn rev_lanes() -> __m512i {
    _mm512_set_epi8(
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
        12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6,
        7, 8, 9, 10, 11, 12, 13, 14, 15,
    )
}

/// Lane s of the result: the sum (XOR) of the four lanes of `x[s]` (a 4 × 4 transpose of
/// 128-bit lanes, folded as it goes).
#[inline]
#[target_feature(enable = "avx512f")]
fn transpose_sum(x: [__m512i; 4]) -> __m512i {
    // [a0 ^ a1, a2 ^ a3, b0 ^ b1, b2 ^ b3]: lanes (0, 2 | 0, 2) plus lanes (1, 3 | 1, 3).
    let pair = |a: __m512i, b: __m512i| {
        _mm512_xor_si512(
            _mm512_shuffle_i64x2::<0x88>(a, b),
            _mm512_shuffle_i64x2::<0xDD>(a, b),
        )
    };
    pair(pair(x[0], x[1]), pair(x[2], x[3]))
}

/// The four 128-bit lanes of `v`.
#[inline]
fn ints(v: __m512i) -> [u128; 4] {
    // SAFETY: both types are 64 plain bytes (see `zmm`).
    unsafe { core::mem::transmute::<__m512i, [u128; 4]>(v) }
}

/// The sum (XOR) of the four 128-bit lanes of `v`.
#[inline]
#[target_feature(enable = "avx512f")]
fn lanes_xor(v: __m512i) -> __m128i {
    _mm_xor_si128(
        _mm_xor_si128(_mm512_castsi512_si128(v), _mm512_extracti32x4_epi32::<1>(v)),
        _mm_xor_si128(
            _mm512_extracti32x4_epi32::<2>(v),
            _mm512_extracti32x4_epi32::<3>(v),
        ),
    )
}

/// The inverse of [`xmm`].
#[inline]
fn int(x: __m128i) -> u128 {
    // SAFETY: as in `xmm`.
    unsafe { core::mem::transmute::<__m128i, u128>(x) }
}

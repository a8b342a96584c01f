//! A carry-less-multiply (PCLMULQDQ) encoder step for codes whose parity fits 128 bits:
//! 16 data bytes per step by Barrett reduction (six 64×64 carry-less products) instead of
//! sixteen table lookups, with four independent lanes folded by x^512 so the products of
//! different lanes overlap. Chosen at run time, only on CPUs that have the instruction.
//!
//! Polynomials are `u128` with bit i the coefficient of x^i. The register is the parity
//! left-aligned in 128 bits (R = S·x^(128−L)); with g' = g·x^(128−L) = x^128 + G and
//! μ = ⌊x^256 / g'⌋ = x^128 + M, one step maps V = R ⊕ U (U: the next 16 bytes, big-endian)
//! to R' = V·x^128 mod g' = lo128(q·G) with q = ⌊V·μ / x^128⌋ = V ⊕ hi128(V·M).

use core::arch::x86_64::{
    __m128i, _mm_clmulepi64_si128, _mm_slli_si128, _mm_srli_si128, _mm_xor_si128,
};

/// Constants of one code.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clmul {
    /// M = μ − x^128.
    m: u128,
    /// G = g' − x^128.
    g: u128,
    /// x^(128·k) mod g' for k = 2, 3, 4 (folding four 16-byte lanes).
    x256: u128,
    x384: u128,
    x512: u128,
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
        if !std::is_x86_feature_detected!("pclmulqdq") {
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
        // x^(128k) mod g' by repeated multiplication by x^128 mod g' (bitwise).
        let times_x128 = |a: u128| -> u128 {
            let mut r = a;
            for _ in 0..128 {
                let top = r >> 127 == 1;
                r <<= 1;
                if top {
                    r ^= g;
                }
            }
            r
        };
        let x128 = g; // x^128 ≡ G (mod g')
        let x256 = times_x128(x128);
        let x384 = times_x128(x256);
        let x512 = times_x128(x384);
        Some(Clmul {
            m,
            g,
            x256,
            x384,
            x512,
        })
    }

    /// Feeds whole 16-byte chunks of `data` into the register `reg` (one or two words);
    /// returns the tail.
    pub(crate) fn remainder<'a>(&self, data: &'a [u8], reg: &mut [u64]) -> &'a [u8] {
        // SAFETY: a `Clmul` exists only if the CPU reported PCLMULQDQ (see `new`).
        unsafe { self.remainder_unchecked(data, reg) }
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

    /// A·K mod g' for a constant K of degree < 128.
    #[inline]
    #[target_feature(enable = "pclmulqdq")]
    unsafe fn mulmod(&self, a: __m128i, k: __m128i) -> __m128i {
        let mid = _mm_xor_si128(
            _mm_clmulepi64_si128(a, k, 0x01),
            _mm_clmulepi64_si128(a, k, 0x10),
        );
        let hi = _mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x11), _mm_srli_si128(mid, 8));
        let lo = _mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x00), _mm_slli_si128(mid, 8));
        _mm_xor_si128(self.times_x128(hi), lo)
    }

    #[target_feature(enable = "pclmulqdq")]
    unsafe fn remainder_unchecked<'a>(&self, data: &'a [u8], reg: &mut [u64]) -> &'a [u8] {
        let start = (reg[0] as u128) << 64 | reg.get(1).copied().unwrap_or(0) as u128;
        let mut r = xmm(start);
        let block = |c: &[u8]| xmm(u128::from_be_bytes(c.try_into().expect("16-byte chunk")));
        let mut rest = data;
        if data.len() >= 128 {
            // Four independent lanes of 16-byte blocks, each advanced by x^512 per round:
            // lane l holds Σ_k B(4k+l)·x^(512(K−1−k)) (lane 0 also the incoming register).
            // After K rounds the state is Σ_l lane_l·x^(128(4−l)) mod g'.
            let (x256, x384, x512) = (xmm(self.x256), xmm(self.x384), xmm(self.x512));
            let mut rounds = data.chunks_exact(64);
            let first = rounds.next().expect("at least 128 bytes");
            let mut lanes = [
                _mm_xor_si128(r, block(&first[0..16])),
                block(&first[16..32]),
                block(&first[32..48]),
                block(&first[48..64]),
            ];
            for chunk in &mut rounds {
                for (l, lane) in lanes.iter_mut().enumerate() {
                    *lane =
                        _mm_xor_si128(self.mulmod(*lane, x512), block(&chunk[16 * l..16 * l + 16]));
                }
            }
            r = _mm_xor_si128(
                _mm_xor_si128(self.mulmod(lanes[0], x512), self.mulmod(lanes[1], x384)),
                _mm_xor_si128(self.mulmod(lanes[2], x256), self.times_x128(lanes[3])),
            );
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

/// A 128-bit polynomial in a vector register (lane 0 = the low 64 bits).
#[inline]
fn xmm(x: u128) -> __m128i {
    // SAFETY: both types are 16 plain bytes; x86_64 is little-endian, so lane 0 holds the
    // low half.
    unsafe { core::mem::transmute::<u128, __m128i>(x) }
}

/// The inverse of [`xmm`].
#[inline]
fn int(x: __m128i) -> u128 {
    // SAFETY: as in `xmm`.
    unsafe { core::mem::transmute::<__m128i, u128>(x) }
}

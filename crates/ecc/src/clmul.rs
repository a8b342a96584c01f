//! A carry-less-multiply (PCLMULQDQ) encoder step for codes whose parity fits 128 bits:
//! 16 data bytes per step by Barrett reduction (six 64×64 carry-less products) instead of
//! sixteen table lookups, with four independent lanes folded by x^512 so the products of
//! different lanes overlap. Chosen at run time, only on CPUs that have the instruction.
//!
//! Polynomials are `u128` with bit i the coefficient of x^i. The register is the parity
//! left-aligned in 128 bits (R = S·x^(128−L)); with g' = g·x^(128−L) = x^128 + G and
//! μ = ⌊x^256 / g'⌋ = x^128 + M, one step maps V = R ⊕ U (U: the next 16 bytes, big-endian)
//! to R' = V·x^128 mod g' = lo128(q·G) with q = ⌊V·μ / x^128⌋ = V ⊕ hi128(V·M).

use core::arch::x86_64::{__m128i, _mm_clmulepi64_si128, _mm_cvtsi64_si128};

/// Constants of one code.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clmul {
    m1: u64,
    m0: u64,
    g1: u64,
    g0: u64,
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
            m1: (m >> 64) as u64,
            m0: m as u64,
            g1: (g >> 64) as u64,
            g0: g as u64,
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

    /// V·x^128 mod g' (one Barrett reduction).
    #[inline]
    #[target_feature(enable = "pclmulqdq")]
    unsafe fn times_x128(&self, v: u128) -> u128 {
        let (v1, v0) = ((v >> 64) as u64, v as u64);
        let mid = clmul(v1, self.m0) ^ clmul(v0, self.m1);
        let q = v ^ clmul(v1, self.m1) ^ (mid >> 64);
        let (q1, q0) = ((q >> 64) as u64, q as u64);
        clmul(q0, self.g0) ^ ((clmul(q1, self.g0) ^ clmul(q0, self.g1)) << 64)
    }

    /// A·K mod g' for a constant K of degree < 128.
    #[inline]
    #[target_feature(enable = "pclmulqdq")]
    unsafe fn mulmod(&self, a: u128, k: u128) -> u128 {
        let (a1, a0) = ((a >> 64) as u64, a as u64);
        let (k1, k0) = ((k >> 64) as u64, k as u64);
        let mid = clmul(a1, k0) ^ clmul(a0, k1);
        let hi = clmul(a1, k1) ^ (mid >> 64);
        let lo = clmul(a0, k0) ^ (mid << 64);
        // hi·x^128 + lo, reduced.
        self.times_x128(hi) ^ lo
    }

    #[target_feature(enable = "pclmulqdq")]
    unsafe fn remainder_unchecked<'a>(&self, data: &'a [u8], reg: &mut [u64]) -> &'a [u8] {
        let mut r = (reg[0] as u128) << 64 | reg.get(1).copied().unwrap_or(0) as u128;
        let block = |c: &[u8]| u128::from_be_bytes(c.try_into().expect("16-byte chunk"));
        let mut rest = data;
        if data.len() >= 128 {
            // Four independent lanes of 16-byte blocks, each advanced by x^512 per round:
            // lane l holds Σ_k B(4k+l)·x^(512(K−1−k)) (lane 0 also the incoming register).
            // After K rounds the state is Σ_l lane_l·x^(128(4−l)) mod g'.
            let mut rounds = data.chunks_exact(64);
            let first = rounds.next().expect("at least 128 bytes");
            let mut lanes = [
                r ^ block(&first[0..16]),
                block(&first[16..32]),
                block(&first[32..48]),
                block(&first[48..64]),
            ];
            for chunk in &mut rounds {
                for (l, lane) in lanes.iter_mut().enumerate() {
                    *lane = self.mulmod(*lane, self.x512) ^ block(&chunk[16 * l..16 * l + 16]);
                }
            }
            r = self.mulmod(lanes[0], self.x512)
                ^ self.mulmod(lanes[1], self.x384)
                ^ self.mulmod(lanes[2], self.x256)
                ^ self.times_x128(lanes[3]);
            rest = rounds.remainder();
        }
        let mut chunks = rest.chunks_exact(16);
        for c in &mut chunks {
            r = self.times_x128(r ^ block(c));
        }
        reg[0] = (r >> 64) as u64;
        if let Some(w) = reg.get_mut(1) {
            *w = r as u64;
        }
        chunks.remainder()
    }
}

#[inline]
#[target_feature(enable = "pclmulqdq")]
unsafe fn clmul(a: u64, b: u64) -> u128 {
    let p = _mm_clmulepi64_si128(
        _mm_cvtsi64_si128(a as i64),
        _mm_cvtsi64_si128(b as i64),
        0x00,
    );
    // SAFETY: __m128i and u128 are both 16 plain bytes; lane 0 is the low half on x86_64.
    unsafe { core::mem::transmute::<__m128i, u128>(p) }
}

//! Lanes of carry-less arithmetic: the operations the carry-less-multiply encoders are
//! written in, implemented by vector registers (PCLMULQDQ on 128 bits, VPCLMULQDQ on four
//! 128-bit lanes of a 512-bit register) and by a scalar model of each (plain integers, a
//! bit-by-bit product). The encoders are generic over the lane type, so the very same
//! algorithm runs on the model on any CPU: the tests compare it with the table encoder
//! there, where a machine lacks the instructions (no AVX-512 on most CI machines).

#[cfg(all(feature = "std", target_arch = "x86_64"))]
use core::arch::x86_64::{
    __m128i, __m512i, _mm512_bslli_epi128, _mm512_bsrli_epi128, _mm512_castsi512_si128,
    _mm512_clmulepi64_epi128, _mm512_extracti32x4_epi32, _mm512_loadu_si512, _mm512_set_epi8,
    _mm512_shuffle_epi8, _mm512_shuffle_i64x2, _mm512_xor_si512, _mm_clmulepi64_si128,
    _mm_loadu_si128, _mm_set_epi8, _mm_shuffle_epi8, _mm_slli_si128, _mm_srli_si128, _mm_xor_si128,
};

/// One 128-bit lane of carry-less arithmetic: a vector register, or the scalar model.
pub(crate) trait Lane: Copy {
    /// The lane holding `x` (bit i = coefficient of x^i).
    fn from_u128(x: u128) -> Self;
    /// The inverse of [`from_u128`](Lane::from_u128).
    fn to_u128(self) -> u128;
    /// Sum (XOR).
    fn xor(self, o: Self) -> Self;
    /// The 64 × 64-bit carry-less product of one half of each operand, chosen as
    /// PCLMULQDQ's immediate does (bit 0: high half of `self`, bit 4: high half of `o`).
    fn clmul<const IMM: i32>(self, o: Self) -> Self;
    /// Times x^64, dropping the overflow.
    fn shl64(self) -> Self;
    /// Divided by x^64, dropping the remainder.
    fn shr64(self) -> Self;
    /// 16 bytes read as a big-endian polynomial (byte 0 holds x^127..x^120).
    fn load_be(bytes: &[u8]) -> Self;
}

/// The scalar model of a lane: plain integers and a bit-by-bit carry-less product.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Soft(pub(crate) u128);

/// The carry-less product of two 64-bit polynomials, bit by bit.
pub(crate) fn clmul64(a: u64, b: u64) -> u128 {
    let mut p = 0u128;
    let mut bits = b;
    while bits != 0 {
        let i = bits.trailing_zeros();
        p ^= (a as u128) << i;
        bits &= bits - 1;
    }
    p
}

impl Lane for Soft {
    #[inline(always)]
    fn from_u128(x: u128) -> Self {
        Soft(x)
    }
    #[inline(always)]
    fn to_u128(self) -> u128 {
        self.0
    }
    #[inline(always)]
    fn xor(self, o: Self) -> Self {
        Soft(self.0 ^ o.0)
    }
    #[inline(always)]
    fn clmul<const IMM: i32>(self, o: Self) -> Self {
        let a = if IMM & 0x01 != 0 {
            self.0 >> 64
        } else {
            self.0
        } as u64;
        let b = if IMM & 0x10 != 0 { o.0 >> 64 } else { o.0 } as u64;
        Soft(clmul64(a, b))
    }
    #[inline(always)]
    fn shl64(self) -> Self {
        Soft(self.0 << 64)
    }
    #[inline(always)]
    fn shr64(self) -> Self {
        Soft(self.0 >> 64)
    }
    #[inline(always)]
    fn load_be(bytes: &[u8]) -> Self {
        Soft(u128::from_be_bytes(bytes.try_into().expect("16 bytes")))
    }
}

// The vector lane. Its methods are always inlined into the `target_feature` entry points
// of `clmul` and `widepar`, where the instructions are known to exist.
#[cfg(all(feature = "std", target_arch = "x86_64"))]
impl Lane for __m128i {
    #[inline(always)]
    fn from_u128(x: u128) -> Self {
        // SAFETY: both types are 16 plain bytes; x86_64 is little-endian (lane 0 = low half).
        unsafe { core::mem::transmute::<u128, __m128i>(x) }
    }
    #[inline(always)]
    fn to_u128(self) -> u128 {
        // SAFETY: as in `from_u128`.
        unsafe { core::mem::transmute::<__m128i, u128>(self) }
    }
    #[inline(always)]
    fn xor(self, o: Self) -> Self {
        // SAFETY: SSE2 is part of x86_64.
        unsafe { _mm_xor_si128(self, o) }
    }
    #[inline(always)]
    fn clmul<const IMM: i32>(self, o: Self) -> Self {
        // SAFETY: only reached from entry points compiled with PCLMULQDQ enabled, which run
        // only where the CPU reported the instruction.
        unsafe { _mm_clmulepi64_si128::<IMM>(self, o) }
    }
    #[inline(always)]
    fn shl64(self) -> Self {
        // SAFETY: SSE2.
        unsafe { _mm_slli_si128::<8>(self) }
    }
    #[inline(always)]
    fn shr64(self) -> Self {
        // SAFETY: SSE2.
        unsafe { _mm_srli_si128::<8>(self) }
    }
    #[inline(always)]
    fn load_be(bytes: &[u8]) -> Self {
        assert!(bytes.len() >= 16);
        // SAFETY: 16 readable bytes (checked); the load is unaligned; the shuffle needs
        // SSSE3, which the entry point requires.
        unsafe {
            _mm_shuffle_epi8(
                _mm_loadu_si128(bytes.as_ptr().cast()),
                _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
            )
        }
    }
}

/// Four 128-bit lanes of carry-less arithmetic side by side: a 512-bit vector register, or
/// the scalar model [`Soft4`]. Every operation acts lane by lane except the two sums.
#[cfg_attr(not(all(feature = "std", target_arch = "x86_64")), allow(dead_code))]
pub(crate) trait Lane4: Copy {
    /// One lane's type.
    type One: Lane;
    /// The lanes `x` (lane i = `x[i]`).
    fn from_lanes(x: [u128; 4]) -> Self;
    /// The inverse of [`from_lanes`](Lane4::from_lanes).
    fn to_lanes(self) -> [u128; 4];
    /// Sum (XOR).
    fn xor(self, o: Self) -> Self;
    /// Per lane, as [`Lane::clmul`].
    fn clmul<const IMM: i32>(self, o: Self) -> Self;
    /// Per lane, times x^64.
    fn shl64(self) -> Self;
    /// Per lane, divided by x^64.
    fn shr64(self) -> Self;
    /// 64 bytes as four big-endian 128-bit polynomials.
    fn load_be(bytes: &[u8]) -> Self;
    /// Lane s of the result: the sum of the four lanes of `x[s]`.
    fn transpose_sum(x: [Self; 4]) -> Self;
    /// The sum of the four lanes.
    fn lanes_xor(self) -> Self::One;
}

/// The scalar model of four lanes.
#[cfg_attr(not(all(feature = "std", target_arch = "x86_64")), allow(dead_code))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Soft4(pub(crate) [Soft; 4]);

impl Lane4 for Soft4 {
    type One = Soft;
    #[inline(always)]
    fn from_lanes(x: [u128; 4]) -> Self {
        Soft4(x.map(Soft))
    }
    #[inline(always)]
    fn to_lanes(self) -> [u128; 4] {
        self.0.map(|l| l.0)
    }
    #[inline(always)]
    fn xor(self, o: Self) -> Self {
        Soft4(core::array::from_fn(|i| self.0[i].xor(o.0[i])))
    }
    #[inline(always)]
    fn clmul<const IMM: i32>(self, o: Self) -> Self {
        Soft4(core::array::from_fn(|i| self.0[i].clmul::<IMM>(o.0[i])))
    }
    #[inline(always)]
    fn shl64(self) -> Self {
        Soft4(self.0.map(Lane::shl64))
    }
    #[inline(always)]
    fn shr64(self) -> Self {
        Soft4(self.0.map(Lane::shr64))
    }
    #[inline(always)]
    fn load_be(bytes: &[u8]) -> Self {
        assert_eq!(bytes.len(), 64);
        Soft4(core::array::from_fn(|i| {
            Soft::load_be(&bytes[16 * i..16 * i + 16])
        }))
    }
    #[inline(always)]
    fn transpose_sum(x: [Self; 4]) -> Self {
        Soft4(x.map(|v| v.lanes_xor()))
    }
    #[inline(always)]
    fn lanes_xor(self) -> Soft {
        self.0.iter().fold(Soft(0), |a, &l| a.xor(l))
    }
}

// The 512-bit register: as for `__m128i`, always inlined into entry points compiled with
// AVX-512 F and BW and VPCLMULQDQ, which run only where the CPU reported them.
#[cfg(all(feature = "std", target_arch = "x86_64"))]
impl Lane4 for __m512i {
    type One = __m128i;
    #[inline(always)]
    fn from_lanes(x: [u128; 4]) -> Self {
        // SAFETY: both types are 64 plain bytes, lane i at bytes 16i..16i + 16.
        unsafe { core::mem::transmute::<[u128; 4], __m512i>(x) }
    }
    #[inline(always)]
    fn to_lanes(self) -> [u128; 4] {
        // SAFETY: as in `from_lanes`.
        unsafe { core::mem::transmute::<__m512i, [u128; 4]>(self) }
    }
    #[inline(always)]
    fn xor(self, o: Self) -> Self {
        // SAFETY: AVX-512 F (see above).
        unsafe { _mm512_xor_si512(self, o) }
    }
    #[inline(always)]
    fn clmul<const IMM: i32>(self, o: Self) -> Self {
        // SAFETY: VPCLMULQDQ (see above).
        unsafe { _mm512_clmulepi64_epi128::<IMM>(self, o) }
    }
    #[inline(always)]
    fn shl64(self) -> Self {
        // SAFETY: AVX-512 BW (see above).
        unsafe { _mm512_bslli_epi128::<8>(self) }
    }
    #[inline(always)]
    fn shr64(self) -> Self {
        // SAFETY: AVX-512 BW (see above).
        unsafe { _mm512_bsrli_epi128::<8>(self) }
    }
    #[inline(always)]
    fn load_be(bytes: &[u8]) -> Self {
        assert_eq!(bytes.len(), 64);
        // SAFETY: 64 readable bytes (checked), unaligned load; the per-lane byte reversal
        // needs AVX-512 BW (see above).
        unsafe {
            let rev = _mm512_set_epi8(
                0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
                10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1,
                2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
            );
            _mm512_shuffle_epi8(_mm512_loadu_si512(bytes.as_ptr().cast()), rev)
        }
    }
    #[inline(always)]
    fn transpose_sum(x: [Self; 4]) -> Self {
        // [a0 ^ a1, a2 ^ a3, b0 ^ b1, b2 ^ b3]: lanes (0, 2 | 0, 2) plus lanes (1, 3 | 1, 3).
        // SAFETY: AVX-512 F (see above).
        let pair = |a: __m512i, b: __m512i| unsafe {
            _mm512_xor_si512(
                _mm512_shuffle_i64x2::<0x88>(a, b),
                _mm512_shuffle_i64x2::<0xDD>(a, b),
            )
        };
        pair(pair(x[0], x[1]), pair(x[2], x[3]))
    }
    #[inline(always)]
    fn lanes_xor(self) -> __m128i {
        // SAFETY: AVX-512 F (see above); SSE2.
        unsafe {
            _mm_xor_si128(
                _mm_xor_si128(
                    _mm512_castsi512_si128(self),
                    _mm512_extracti32x4_epi32::<1>(self),
                ),
                _mm_xor_si128(
                    _mm512_extracti32x4_epi32::<2>(self),
                    _mm512_extracti32x4_epi32::<3>(self),
                ),
            )
        }
    }
}

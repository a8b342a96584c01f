//! Deterministic pseudo-random page contents, for tests, benchmarks and the simulator's
//! verifiable data (the same seed always gives the same bytes).
//!
//! Each 64-bit word is a cheap mix of (seed, word index): words are independent, so the fill
//! runs without a serial dependency chain.

/// Fills `buf` with bytes determined by `seed`.
pub fn fill(buf: &mut [u8], seed: u64) {
    let base = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    let whole = (buf.len() / 8) as u64;
    let mut chunks = buf.chunks_exact_mut(8);
    for (i, chunk) in (&mut chunks).enumerate() {
        chunk.copy_from_slice(&word(base, i as u64).to_le_bytes());
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        let n = rest.len();
        rest.copy_from_slice(&word(base, whole).to_le_bytes()[..n]);
    }
}

#[inline]
fn word(base: u64, i: u64) -> u64 {
    let z = (base ^ i).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z ^ (z >> 29)
}

/// A new buffer of `len` bytes from [`fill`].
pub fn bytes(len: usize, seed: u64) -> alloc::vec::Vec<u8> {
    let mut v = alloc::vec![0u8; len];
    fill(&mut v, seed);
    v
}

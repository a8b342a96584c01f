//! Deterministic pseudo-random page contents, for tests, benchmarks and the simulator's
//! verifiable data (the same seed always gives the same bytes).

/// Fills `buf` with bytes from an xorshift64 stream seeded by `seed`.
pub fn fill(buf: &mut [u8], seed: u64) {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    if x == 0 {
        x = 1;
    }
    for chunk in buf.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
}

/// A new buffer of `len` bytes from [`fill`].
pub fn bytes(len: usize, seed: u64) -> alloc::vec::Vec<u8> {
    let mut v = alloc::vec![0u8; len];
    fill(&mut v, seed);
    v
}

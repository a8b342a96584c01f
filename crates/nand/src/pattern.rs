//! Deterministic pseudo-random page contents, for tests, benchmarks and the simulator's
//! verifiable data (the same seed always gives the same bytes).
//!
//! Word i of a buffer is `mix(seed) ^ TABLE[i mod 512] ^ (i / 512)`, with a fixed table of
//! 512 SplitMix64 outputs computed at compile time: distinct seeds give unrelated-looking
//! pages, and filling is one load and one XOR per word.

const WORDS: usize = 512;

const fn splitmix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

static TABLE: [u64; WORDS] = {
    let mut t = [0u64; WORDS];
    let mut i = 0;
    while i < WORDS {
        t[i] = splitmix((i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        i += 1;
    }
    t
};

/// Fills `buf` with bytes determined by `seed`.
pub fn fill(buf: &mut [u8], seed: u64) {
    let base = splitmix(seed ^ 0xD1B5_4A32_D192_ED03);
    let mut words = buf.chunks_exact_mut(8);
    let mut i = 0usize;
    // One table period (512 words) at a time: no division per word.
    while words.len() > 0 {
        let period = (i / WORDS) as u64;
        // The table first: when it runs out, zip stops without taking another chunk.
        for (t, chunk) in TABLE.iter().zip(&mut words) {
            chunk.copy_from_slice(&(base ^ t ^ period).to_le_bytes());
            i += 1;
        }
    }
    let rest = words.into_remainder();
    if !rest.is_empty() {
        let w = base ^ TABLE[i % WORDS] ^ (i / WORDS) as u64;
        let n = rest.len();
        rest.copy_from_slice(&w.to_le_bytes()[..n]);
    }
}

/// Whether `buf` holds exactly what [`fill`] writes for `seed`: the check a reader of
/// verifiable data makes, without writing the expected bytes anywhere.
pub fn matches(buf: &[u8], seed: u64) -> bool {
    let base = splitmix(seed ^ 0xD1B5_4A32_D192_ED03);
    let mut words = buf.chunks_exact(8);
    let mut i = 0usize;
    let mut diff = 0u64;
    while words.len() > 0 {
        let period = (i / WORDS) as u64;
        for (t, chunk) in TABLE.iter().zip(&mut words) {
            let w = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
            diff |= w ^ base ^ t ^ period;
            i += 1;
        }
        if diff != 0 {
            return false;
        }
    }
    let rest = words.remainder();
    let w = base ^ TABLE[i % WORDS] ^ (i / WORDS) as u64;
    rest == &w.to_le_bytes()[..rest.len()]
}

/// A new buffer of `len` bytes from [`fill`].
pub fn bytes(len: usize, seed: u64) -> alloc::vec::Vec<u8> {
    let mut v = alloc::vec![0u8; len];
    fill(&mut v, seed);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_follow_the_documented_formula() {
        for len in [0, 5, 8, 4096, 4100, 3 * 4096 + 13, 9000] {
            let got = bytes(len, 77);
            let base = splitmix(77 ^ 0xD1B5_4A32_D192_ED03);
            let want: alloc::vec::Vec<u8> = (0..len.div_ceil(8))
                .flat_map(|i| (base ^ TABLE[i % WORDS] ^ (i / WORDS) as u64).to_le_bytes())
                .take(len)
                .collect();
            assert_eq!(got, want, "len {len}");
        }
    }

    #[test]
    fn matches_accepts_the_pattern_and_nothing_else() {
        for len in [0, 5, 8, 4096, 4100, 3 * 4096 + 13] {
            let mut b = bytes(len, 9);
            assert!(matches(&b, 9), "len {len}");
            assert_eq!(matches(&b, 10), len == 0, "len {len}");
            for pos in [0, len / 2, len.saturating_sub(1)] {
                if len > 0 {
                    b[pos] ^= 0x10;
                    assert!(!matches(&b, 9), "len {len} pos {pos}");
                    b[pos] ^= 0x10;
                }
            }
        }
    }

    #[test]
    fn seeds_and_positions_differ() {
        let a = bytes(8192, 1);
        assert_eq!(a, bytes(8192, 1));
        assert_ne!(a, bytes(8192, 2));
        assert_ne!(a[..4096], a[4096..]);
        assert_eq!(bytes(13, 5)[..], bytes(16, 5)[..13]);
    }
}

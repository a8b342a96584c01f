//! Error injection: a page's drawn bit errors split over its regions (header, record,
//! sectors), and real bits flipped in the buffers the decoder then sees.

use alloc::vec;
use alloc::vec::Vec;
use nand::rber::{sample_page_errors, ErrorModel, PageAge};
use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;

/// Draws the errors of `regions` (bit counts) of a page of age `age` under `model` with one
/// binomial draw over their total, then assigns each error to a region with probability proportional to its size:
/// the same joint distribution as independent draws per region, for one transcendental
/// evaluation instead of one per region.
pub(crate) fn split_errors<M: ErrorModel>(
    rng: &mut ChaCha8Rng,
    model: &M,
    age: &PageAge,
    regions: &[u64],
    out: &mut [u64],
) -> u64 {
    out.iter_mut().for_each(|c| *c = 0);
    let sum: u64 = regions.iter().sum();
    let total = sample_page_errors(rng, sum, model, age);
    for _ in 0..total {
        let mut x = ((rng.next_u64() as u128 * sum as u128) >> 64) as u64;
        for (i, &r) in regions.iter().enumerate() {
            if x < r {
                out[i] += 1;
                break;
            }
            x -= r;
        }
    }
    total
}

/// Flips `k` distinct random bits among the first `a_bits` bits of `a` followed by the first
/// `b_bits` bits of `b` (a codeword split between data and parity buffers).
///
/// Positions are drawn uniformly and a repeat is drawn again. The repeat test is a scan of
/// the positions so far for a few flips and a bitmap of the codeword beyond (a worn page at
/// end of life takes hundreds of flips; scanning would make that quadratic); both see the
/// same draws, so the flipped bits do not depend on which one ran.
pub(crate) fn flip(
    rng: &mut ChaCha8Rng,
    a: &mut [u8],
    a_bits: usize,
    b: &mut [u8],
    b_bits: usize,
    k: u64,
) {
    /// Up to this many flips a scan beats building a bitmap.
    const SCAN: usize = 32;
    let total = a_bits + b_bits;
    let k = (k as usize).min(total);
    let mut picked: Vec<usize> = Vec::with_capacity(k.min(SCAN));
    let mut seen: Vec<u64> = if k > SCAN {
        vec![0; total.div_ceil(64)]
    } else {
        Vec::new()
    };
    let mut flipped = 0;
    while flipped < k {
        let p = ((rng.next_u64() as u128 * total as u128) >> 64) as usize;
        if k > SCAN {
            let (w, bit) = (p / 64, 1u64 << (p % 64));
            if seen[w] & bit != 0 {
                continue;
            }
            seen[w] |= bit;
        } else {
            if picked.contains(&p) {
                continue;
            }
            picked.push(p);
        }
        flipped += 1;
        if p < a_bits {
            a[p / 8] ^= 0x80 >> (p % 8);
        } else {
            let q = p - a_bits;
            b[q / 8] ^= 0x80 >> (q % 8);
        }
    }
}

#[cfg(test)]
mod flip_tests {
    use super::*;
    use rand_core::SeedableRng;

    /// The quadratic picker it replaced: rejection by scanning every position so far.
    fn flip_reference(rng: &mut ChaCha8Rng, total: usize, k: usize) -> Vec<usize> {
        let mut picked = Vec::new();
        while picked.len() < k.min(total) {
            let p = ((rng.next_u64() as u128 * total as u128) >> 64) as usize;
            if !picked.contains(&p) {
                picked.push(p);
            }
        }
        picked.sort_unstable();
        picked
    }

    /// Same draws, same bits, for few and for many flips (the bitmap path); every flip
    /// lands on a distinct bit, split correctly between the two buffers.
    #[test]
    fn flips_are_distinct_and_equal_the_scanning_picker() {
        for (seed, k) in [(1u64, 0u64), (2, 5), (3, 32), (4, 33), (5, 700), (6, 4096)] {
            let (a_bits, b_bits) = (4096 * 8, 13 * 8 + 3);
            let mut a = vec![0u8; 4096];
            let mut b = vec![0u8; 14];
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            flip(&mut rng, &mut a, a_bits, &mut b, b_bits, k);
            let mut got = Vec::new();
            for p in 0..a_bits + b_bits {
                let (buf, q) = if p < a_bits {
                    (&a, p)
                } else {
                    (&b, p - a_bits)
                };
                if buf[q / 8] & (0x80 >> (q % 8)) != 0 {
                    got.push(p);
                }
            }
            // Nothing past the codeword's bits.
            assert_eq!(b[13] & 0x1F, 0);
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            assert_eq!(
                got,
                flip_reference(&mut rng, a_bits + b_bits, k as usize),
                "k = {k}"
            );
            assert_eq!(got.len(), k as usize);
        }
    }
}

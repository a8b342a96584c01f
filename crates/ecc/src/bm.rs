//! The error locator from the syndromes: the binary Berlekamp–Massey algorithm.

use crate::gf::Field;
use crate::EccError;
use alloc::vec;
use alloc::vec::Vec;

/// The error locator σ (lowest degree first) and its degree L from the syndromes, by the
/// binary Berlekamp–Massey algorithm: only odd steps have a non-zero discrepancy. The
/// syndromes, σ's coefficients and the correction polynomial B are kept as logarithms
/// too, so each product is one antilog lookup.
pub(crate) fn berlekamp_massey(
    gf: &Field,
    t: usize,
    syn: &[u32],
) -> Result<(Vec<u32>, usize), EccError> {
    const ZERO: u32 = u32::MAX;
    let n = gf.n();
    let log = |c: u32| if c == 0 { ZERO } else { gf.log(c) };
    let lsyn: Vec<u32> = syn.iter().map(|&c| log(c)).collect();
    // B's degree can reach 3t + 1 before it is used; nothing is truncated.
    let cap = 3 * t + 3;
    let mut sigma = vec![0u32; cap];
    let mut lsigma = vec![ZERO; cap];
    let mut lb = vec![ZERO; cap]; // B, logs
    let mut tmp = vec![0u32; cap];
    sigma[0] = 1;
    lsigma[0] = 0;
    lb[0] = 0;
    let mut l = 0usize; // register length
    let mut ds = 0usize; // degree bound of sigma
    let mut db = 0usize; // degree bound of B
    for i in 0..t {
        let r = 2 * i + 1;
        let mut delta = syn[r];
        for (&a, &b) in lsigma[1..=ds.min(r - 1)].iter().zip(lsyn[..r].iter().rev()) {
            if a != ZERO && b != ZERO {
                delta ^= gf.exp2n(a + b);
            }
        }
        if delta == 0 {
            lb.copy_within(..=db, 2);
            lb[..2].fill(ZERO);
            db += 2;
            continue;
        }
        let ld = gf.log(delta);
        // tmp = sigma + Δ·x·B
        let dt = ds.max(db + 1);
        tmp[..=dt].copy_from_slice(&sigma[..=dt]);
        for (c, &b) in tmp[1..=db + 1].iter_mut().zip(&lb[..=db]) {
            if b != ZERO {
                *c ^= gf.exp2n(ld + b);
            }
        }
        if 2 * l < r {
            // B = x·Δ⁻¹·sigma (old), L = r − L.
            let inv = n - ld;
            lb[0] = ZERO;
            for (b, &a) in lb[1..=ds + 1].iter_mut().zip(&lsigma[..=ds]) {
                *b = if a == ZERO {
                    ZERO
                } else if a + inv >= n {
                    a + inv - n
                } else {
                    a + inv
                };
            }
            lb[ds + 2..=db.max(ds + 1)].fill(ZERO);
            db = ds + 1;
            l = r - l;
            if l > t {
                return Err(EccError::Uncorrectable);
            }
        } else {
            lb.copy_within(..=db, 2);
            lb[..2].fill(ZERO);
            db += 2;
        }
        core::mem::swap(&mut sigma, &mut tmp);
        ds = dt;
        for (a, &c) in lsigma[..=ds].iter_mut().zip(&sigma[..=ds]) {
            *a = log(c);
        }
    }
    if sigma[l + 1..].iter().any(|&c| c != 0) || l == 0 || sigma[l] == 0 {
        return Err(EccError::Uncorrectable);
    }
    Ok((sigma, l))
}

//! Analytic reliability of ECC-protected pages, in log space so that tails of 10^-300 and
//! codewords of 10^5 bits are exact to double precision.
//!
//! - [`prob_more_than`]: P(X > E) for X ~ Binomial(N, R): the probability that a codeword
//!   of N bits with raw bit error rate R has more errors than the code corrects. This is AP
//!   eq. (3); note that the paper prints the binomial term as C(N,i)·(1−R)^i·R^(N−i), with R
//!   and 1−R swapped (taken literally it gives ≈ 1); the intended, standard form is
//!   C(N,i)·R^i·(1−R)^(N−i), which reproduces the paper's Table 1.
//! - [`page_failure`]: AP eq. (4), the same for an MSB page whose RBER is σ·R.
//! - [`uber`]: FLARES eq. (1), UBER = P(X > p) / N.
//! - [`min_t_for_uber`], [`max_rber_for`], [`corr_table`]: the inverse, FLARES's `corr_table`.
//! - [`max_retention`]: FLARES's `max_ret_time`: the longest retention for which an RBER
//!   model keeps UBER on target at correction capability p.

use alloc::vec::Vec;
use libm::{exp, expm1, lgamma, log, log1p};

/// Bits in an AP page as Table 1 counts them: the 8192 + 448-byte page of the Micron
/// 29F64G taken as one codeword (N = 8640 bits: the byte count used as a bit count). This
/// is the paper's assumption, not a real codeword size; with it, Table 1 is reproduced.
pub const AP_TABLE1_BITS: u64 = 8192 + 448;

/// ln C(n, k).
pub fn ln_binomial(n: u64, k: u64) -> f64 {
    debug_assert!(k <= n);
    lgamma(n as f64 + 1.0) - lgamma(k as f64 + 1.0) - lgamma((n - k) as f64 + 1.0)
}

/// ln of the binomial probability mass P(X = i), X ~ Bin(n, r), 0 < r < 1.
fn ln_pmf(n: u64, r: f64, i: u64) -> f64 {
    ln_binomial(n, i) + i as f64 * log(r) + (n - i) as f64 * log1p(-r)
}

/// P(X > e) for X ~ Binomial(n, r): the probability that more than `e` of `n` bits flip.
pub fn prob_more_than(n: u64, r: f64, e: u64) -> f64 {
    if e >= n || r <= 0.0 {
        return 0.0;
    }
    if r >= 1.0 {
        return 1.0;
    }
    let mean = n as f64 * r;
    if (e as f64) + 1.0 > mean {
        // Upper tail: terms fall geometrically past the mean; sum them from the largest,
        // scaled by the first term's logarithm.
        let l0 = ln_pmf(n, r, e + 1);
        let mut sum = 0.0;
        let mut i = e + 1;
        loop {
            let term = exp(ln_pmf(n, r, i) - l0);
            sum += term;
            i += 1;
            if i > n || term < sum * 1e-17 {
                break;
            }
        }
        (exp(l0) * sum).min(1.0)
    } else {
        // Lower tail is the small side: 1 − P(X ≤ e).
        let l0 = ln_pmf(n, r, e);
        let mut sum = 0.0;
        let mut i = e as i64;
        loop {
            let term = exp(ln_pmf(n, r, i as u64) - l0);
            sum += term;
            i -= 1;
            if i < 0 || term < sum * 1e-17 {
                break;
            }
        }
        let low = l0 + log(sum);
        // 1 − e^low, accurately when low is close to 0.
        (-expm1(low)).clamp(0.0, 1.0)
    }
}

/// AP eq. (4): probability that a page of `n` bits at LSB raw bit error rate `r`, stored in
/// a page whose RBER is `sigma`·r (σ = 1 for LSB, 0.5 for AP's MSB pages), has more than `e`
/// errors.
pub fn page_failure(n: u64, r: f64, e: u64, sigma: f64) -> f64 {
    prob_more_than(n, sigma * r, e)
}

/// FLARES eq. (1): uncorrectable bit error rate of an `n`-bit codeword correcting `p` errors
/// at raw bit error rate `r`.
pub fn uber(n: u64, r: f64, p: u64) -> f64 {
    prob_more_than(n, r, p) / n as f64
}

/// Smallest correction capability p ≤ `p_max` whose UBER at `r` is at most `target`.
pub fn min_t_for_uber(n: u64, r: f64, target: f64, p_max: u64) -> Option<u64> {
    // UBER falls monotonically with p: binary search.
    if uber(n, r, p_max) > target {
        return None;
    }
    let (mut lo, mut hi) = (0u64, p_max);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if uber(n, r, mid) <= target {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(lo)
}

/// Largest raw bit error rate at which capability `p` keeps UBER ≤ `target` (bisection in
/// log space; UBER rises monotonically with the RBER).
pub fn max_rber_for(n: u64, p: u64, target: f64) -> f64 {
    let (mut lo, mut hi) = (-40.0f64, log(0.5)); // ln RBER bounds
    if uber(n, exp(hi), p) <= target {
        return exp(hi);
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if uber(n, exp(mid), p) <= target {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-12 {
            break;
        }
    }
    exp(lo)
}

/// One row of FLARES's `corr_table`: capability `p` is the smallest sufficient one for raw
/// bit error rates in (`min_rber`, `max_rber`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CorrRow {
    /// Correction capability.
    pub p: u64,
    /// Exclusive lower bound of the RBER range (the previous row's maximum).
    pub min_rber: f64,
    /// Largest RBER this p sustains at the target UBER.
    pub max_rber: f64,
}

/// FLARES's `corr_table` for `n`-bit codewords, capabilities `p_min..=p_max` and a target
/// UBER.
pub fn corr_table(n: u64, p_min: u64, p_max: u64, target: f64) -> Vec<CorrRow> {
    let mut rows = Vec::new();
    let mut prev = if p_min == 0 {
        0.0
    } else {
        max_rber_for(n, p_min - 1, target)
    };
    for p in p_min..=p_max {
        let max = max_rber_for(n, p, target);
        rows.push(CorrRow {
            p,
            min_rber: prev,
            max_rber: max,
        });
        prev = max;
    }
    rows
}

/// FLARES's `max_ret_time`: the longest retention (in the unit of `rber_at`'s argument, e.g.
/// hours) within `[0, horizon]` for which `rber_at(retention)` keeps the UBER of capability
/// `p` at or below `target`. `rber_at` must be non-decreasing. Returns 0 if even zero
/// retention fails, `horizon` if the whole horizon is safe.
pub fn max_retention(
    n: u64,
    p: u64,
    target: f64,
    horizon: f64,
    rber_at: impl Fn(f64) -> f64,
) -> f64 {
    let limit = max_rber_for(n, p, target);
    if rber_at(0.0) > limit {
        return 0.0;
    }
    if rber_at(horizon) <= limit {
        return horizon;
    }
    let (mut lo, mut hi) = (0.0f64, horizon);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if rber_at(mid) <= limit {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= horizon * 1e-12 {
            break;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Direct summation in f64 for moderate n, as a reference.
    fn naive_tail(n: u64, r: f64, e: u64) -> f64 {
        let mut lower = 0.0;
        for i in 0..=e {
            lower += exp(ln_pmf(n, r, i));
        }
        1.0 - lower
    }

    #[test]
    fn matches_naive_sum_where_that_is_accurate() {
        for &(n, r, e) in &[
            (100u64, 0.1, 5u64),
            (1000, 0.01, 3),
            (50, 0.3, 20),
            (200, 0.05, 1),
        ] {
            let a = prob_more_than(n, r, e);
            let b = naive_tail(n, r, e);
            assert!(
                (a - b).abs() < 1e-12 * b.max(1e-300) + 1e-15,
                "{n} {r} {e}: {a} vs {b}"
            );
        }
    }

    #[test]
    fn extreme_tails_stay_finite_and_monotone() {
        let a = prob_more_than(32768, 1e-9, 40);
        assert!(a > 0.0 && a < 1e-200, "{a}");
        assert!(prob_more_than(32768, 1e-3, 40) > prob_more_than(32768, 1e-3, 41));
        assert_eq!(prob_more_than(100, 0.0, 0), 0.0);
        assert_eq!(prob_more_than(100, 0.5, 100), 0.0);
        assert!((prob_more_than(1000, 0.5, 10) - 1.0).abs() < 1e-15);
    }

    #[test]
    fn inverses_are_consistent() {
        let n = 4096 * 8;
        for p in [1u64, 8, 40] {
            let r = max_rber_for(n, p, 1e-11);
            assert!(uber(n, r, p) <= 1e-11);
            assert!(uber(n, r * 1.001, p) > 1e-11);
            assert_eq!(min_t_for_uber(n, r, 1e-11, 64), Some(p));
        }
        let table = corr_table(n, 3, 50, 1e-11);
        assert_eq!(table.len(), 48);
        for w in table.windows(2) {
            assert_eq!(w[0].max_rber, w[1].min_rber);
            assert!(w[1].max_rber > w[0].max_rber);
        }
    }

    #[test]
    fn retention_inverse() {
        let n = 4096 * 8;
        let model = |h: f64| 1e-6 + 1e-7 * h;
        let t = max_retention(n, 8, 1e-11, 1e6, model);
        let limit = max_rber_for(n, 8, 1e-11);
        assert!((model(t) - limit).abs() / limit < 1e-9);
        assert_eq!(max_retention(n, 8, 1e-11, 1e6, |_| 1.0), 0.0);
        assert_eq!(max_retention(n, 8, 1e-11, 10.0, |_| 1e-12), 10.0);
    }
}

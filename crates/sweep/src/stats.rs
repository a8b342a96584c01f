//! The statistics behind the verdicts: geometric means, Poisson tails, exact binomial and
//! Poisson-ratio intervals.

/// The geometric mean of positive values.
pub(crate) fn geo_mean(xs: &[f64]) -> f64 {
    (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp()
}

/// The exact (Clopper–Pearson) 95 % interval of a binomial proportion: `k` successes in
/// `n` trials. For `n` above 20 000 the Wilson score interval (equal to three digits).
pub fn binomial_interval(k: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_963_984_540_054;
    if n > 20_000 {
        let (nf, p) = (n as f64, k as f64 / n as f64);
        let centre = (p + z * z / (2.0 * nf)) / (1.0 + z * z / nf);
        let half = z / (1.0 + z * z / nf) * (p * (1.0 - p) / nf + z * z / (4.0 * nf * nf)).sqrt();
        return ((centre - half).max(0.0), (centre + half).min(1.0));
    }
    // P(X ≥ k; p) and P(X ≤ k; p), by bisection on p (both monotone in p).
    let cdf = |k: u64, p: f64| -> f64 {
        // P(X ≤ k) for Binomial(n, p), summed in log space.
        if p <= 0.0 {
            return 1.0;
        }
        if p >= 1.0 {
            return if k >= n { 1.0 } else { 0.0 };
        }
        let (lp, lq) = (p.ln(), (1.0 - p).ln());
        let mut log_c = 0.0f64; // ln C(n, 0)
        let mut sum = 0.0;
        for i in 0..=k.min(n) {
            if i > 0 {
                log_c += ((n - i + 1) as f64).ln() - (i as f64).ln();
            }
            sum += (log_c + i as f64 * lp + (n - i) as f64 * lq).exp();
        }
        sum.min(1.0)
    };
    let bisect = |f: &dyn Fn(f64) -> bool| -> f64 {
        // The smallest p in [0, 1] with f(p) true (f monotone: false then true).
        let (mut lo, mut hi) = (0.0f64, 1.0f64);
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            if f(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    };
    let lower = if k == 0 {
        0.0
    } else {
        // P(X ≥ k; p) = 1 − P(X ≤ k − 1; p) reaches 0.025.
        bisect(&|p| 1.0 - cdf(k - 1, p) >= 0.025)
    };
    let upper = if k == n {
        1.0
    } else {
        // P(X ≤ k; p) falls to 0.025.
        bisect(&|p| cdf(k, p) <= 0.025)
    };
    (lower, upper)
}

/// The 95 % interval of the ratio of two Poisson rates, `a` events over exposure `ea`
/// against `b` over `eb` (the exact conditional method: given `a + b`, `a` is binomial).
/// `(0, ∞)` when both are zero.
pub fn poisson_ratio_interval(a: u64, ea: f64, b: u64, eb: f64) -> (f64, f64) {
    let (lo, hi) = binomial_interval(a, a + b);
    let odds = |p: f64| {
        if p >= 1.0 {
            f64::INFINITY
        } else {
            p / (1.0 - p)
        }
    };
    (odds(lo) * eb / ea, odds(hi) * eb / ea)
}

/// Poisson tail probabilities `(P(X ≤ k), P(X ≥ k))` for mean `lambda`.
pub fn poisson_tails(k: u64, lambda: f64) -> (f64, f64) {
    if lambda <= 0.0 {
        return (1.0, if k == 0 { 1.0 } else { 0.0 });
    }
    if lambda > 200.0 {
        // Normal approximation with continuity correction.
        let sd = lambda.sqrt();
        let phi = |z: f64| 0.5 * libm_erfc(-z / std::f64::consts::SQRT_2);
        let lo = phi((k as f64 + 0.5 - lambda) / sd);
        let hi = 1.0 - phi((k as f64 - 0.5 - lambda) / sd);
        return (lo, hi);
    }
    // Exact: pmf by recurrence in log space.
    let mut cdf_below = 0.0; // P(X < k)
    let mut pk = 0.0;
    let mut log_p = -lambda;
    for i in 0..=k {
        if i > 0 {
            log_p += lambda.ln() - (i as f64).ln();
        }
        let p = log_p.exp();
        if i < k {
            cdf_below += p;
        } else {
            pk = p;
        }
    }
    let lo = (cdf_below + pk).min(1.0);
    let hi = (1.0 - cdf_below).max(0.0);
    (lo, hi)
}

/// The complementary error function (Numerical Recipes' Chebyshev fit, |error| < 1.2e-7).
fn libm_erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clopper_pearson_matches_published_values() {
        // 0 of 10: [0, 0.3085]; 5 of 10: [0.1871, 0.8129] (Clopper & Pearson 1934 tables).
        let (lo, hi) = binomial_interval(0, 10);
        assert!(lo == 0.0 && (hi - 0.3085).abs() < 1e-3, "{lo} {hi}");
        let (lo, hi) = binomial_interval(5, 10);
        assert!(
            (lo - 0.1871).abs() < 1e-3 && (hi - 0.8129).abs() < 1e-3,
            "{lo} {hi}"
        );
        // Large n: Wilson, close to the normal interval.
        let (lo, hi) = binomial_interval(50_000, 100_000);
        assert!((lo - 0.4969).abs() < 1e-3 && (hi - 0.5031).abs() < 1e-3);
    }

    #[test]
    fn few_events_are_inconclusive_many_are_not() {
        // AP's sensor workload: 38 Baseline events against 2 AP events: the ratio 19 has
        // an interval of roughly 5×–160× — decided; 1 against 0 is not.
        let (lo, hi) = poisson_ratio_interval(38, 1.0, 2, 1.0);
        assert!(lo > 4.0 && lo < 6.0 && hi > 80.0, "{lo} {hi}");
        let (lo, hi) = poisson_ratio_interval(1, 1.0, 0, 1.0);
        assert!(lo < 1.0 && hi.is_infinite());
        let (lo, hi) = poisson_ratio_interval(3, 1.0, 2, 1.0);
        assert!(lo < 1.0 && hi > 1.0);
    }

    #[test]
    fn poisson_tails_are_probabilities() {
        let (lo, hi) = poisson_tails(0, 0.1);
        assert!((lo - (-0.1f64).exp()).abs() < 1e-12 && (hi - 1.0).abs() < 1e-12);
        let (lo, hi) = poisson_tails(10, 1.0);
        assert!(hi < 1e-6 && lo > 0.999);
        // Large means use the normal approximation: the mean itself is central.
        let (lo, hi) = poisson_tails(1000, 1000.0);
        assert!(lo > 0.4 && hi > 0.4);
        let (_, hi) = poisson_tails(1200, 1000.0);
        assert!(hi < 1e-6);
    }
}

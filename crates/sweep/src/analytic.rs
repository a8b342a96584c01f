//! Closed-form references a matrix can name as `formula = "…"` in a `[[published]]` entry.
//!
//! Write amplification of greedy garbage collection under uniform random single-page
//! writes, as a function of the over-provisioning factor ρ = (T − U) / U (T physical pages,
//! U user pages):
//!
//! - `xiang-kurkoski-greedy`: Xiang & Kurkoski, "An Improved Analytic Expression for Write
//!   Amplification in NAND Flash", arXiv:1110.4245 (ICNC 2012):
//!   A = (1 + ρ) / ((1 + ρ) + W₀(−(1 + ρ) e^{−(1 + ρ)})), with W₀ the principal branch of
//!   the Lambert W function. Their abstract's check: ρ = 0.3 gives 2.36.
//! - `agarwal-greedy`: the earlier expression they improve on (Agarwal & Marrow,
//!   2010): A = (1 + ρ) / (2ρ); 2.17 at ρ = 0.3.
//!
//! nandlab's `over_provisioning` is the hidden fraction `op` of the data blocks' pages
//! (U = T (1 − op)), so ρ = op / (1 − op).

/// The principal branch W₀ of the Lambert W function on [−1/e, ∞): the w ≥ −1 with
/// w eᵂ = x. Halley's iteration from a branch-point series or log start; converges to
/// machine precision in a few steps.
pub fn lambert_w0(x: f64) -> f64 {
    let e_inv = (-1.0f64).exp();
    assert!(x >= -e_inv - 1e-15, "W0 is defined from -1/e: {x}");
    if x == 0.0 {
        return 0.0;
    }
    // Start: near the branch point, the series in p = sqrt(2 (e x + 1)); else log1p.
    let mut w = if x < -0.25 {
        let p = (2.0 * (std::f64::consts::E * x + 1.0)).max(0.0).sqrt();
        -1.0 + p - p * p / 3.0 + 11.0 / 72.0 * p * p * p
    } else if x < 3.0 {
        x.ln_1p() * 0.8
    } else {
        let l = x.ln();
        l - l.ln()
    };
    for _ in 0..64 {
        let ew = w.exp();
        let f = w * ew - x;
        let wp1 = w + 1.0;
        if wp1.abs() < 1e-12 {
            break;
        }
        let d = f / (ew * wp1 - (w + 2.0) * f / (2.0 * wp1));
        w -= d;
        if d.abs() <= 1e-15 * (1.0 + w.abs()) {
            break;
        }
    }
    w
}

/// Xiang & Kurkoski's greedy write amplification at over-provisioning factor ρ > 0.
pub fn xiang_kurkoski_greedy(rho: f64) -> f64 {
    let a = 1.0 + rho;
    a / (a + lambert_w0(-a * (-a).exp()))
}

/// Agarwal & Marrow's greedy write amplification at over-provisioning factor ρ > 0.
pub fn agarwal_greedy(rho: f64) -> f64 {
    (1.0 + rho) / (2.0 * rho)
}

/// The over-provisioning factor ρ of a hidden fraction `op`.
pub fn rho_of_op(op: f64) -> f64 {
    op / (1.0 - op)
}

/// Evaluates formula `name` for a cell's configuration.
pub fn evaluate(name: &str, config: &toml::Table) -> Result<f64, String> {
    let op = || -> Result<f64, String> {
        let v = config
            .get("ftl")
            .and_then(|f| f.get("page"))
            .and_then(|p| p.get("over_provisioning"));
        let op = match v {
            None => ftl::PageFtlConfig::default().over_provisioning,
            Some(toml::Value::Float(x)) => *x,
            Some(toml::Value::Integer(i)) => *i as f64,
            Some(other) => return Err(format!("ftl.page.over_provisioning = {other}")),
        };
        if !(op > 0.0 && op < 1.0) {
            return Err(format!("ftl.page.over_provisioning = {op} not in (0, 1)"));
        }
        Ok(op)
    };
    match name {
        "xiang-kurkoski-greedy" => Ok(xiang_kurkoski_greedy(rho_of_op(op()?))),
        "agarwal-greedy" => Ok(agarwal_greedy(rho_of_op(op()?))),
        other => Err(format!(
            "unknown formula {other:?} (known: xiang-kurkoski-greedy, agarwal-greedy)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lambert_w_inverts() {
        for &x in &[-0.3678, -0.35, -0.2, -0.01, 0.5, 1.0, 10.0, 1e6] {
            let w = lambert_w0(x);
            assert!(w >= -1.0);
            assert!((w * w.exp() - x).abs() < 1e-9 * (1.0 + x.abs()), "{x}: {w}");
        }
        assert!((lambert_w0(1.0) - 0.567_143_290_409_783_8).abs() < 1e-14);
    }

    #[test]
    fn the_papers_own_check_at_rho_0_3() {
        // arXiv:1110.4245 abstract: 2.36 (improved) against 2.17 (previous work) at 0.3.
        assert!((xiang_kurkoski_greedy(0.3) - 2.36).abs() < 0.005);
        assert!((agarwal_greedy(0.3) - 2.17).abs() < 0.005);
        // More spare space, less amplification; tends to 1.
        assert!(xiang_kurkoski_greedy(0.1) > xiang_kurkoski_greedy(0.3));
        assert!((xiang_kurkoski_greedy(10.0) - 1.0).abs() < 0.01);
    }
}

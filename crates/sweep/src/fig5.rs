//! The `flares-fig5` kind: FLARES's validation run (§5.1, Fig. 5) — Alg. 1 and Alg. 2 on
//! one page driven through operating points of growing wear, as the paper's MATLAB model
//! did, with the same [`ftl::flares::FlaresCore`] the FTL runs.
//!
//! A cell runs the operating points from the first up to its `pe` (the sequence matters:
//! FLARES adapts from where the previous point left it) and reports the last point. At
//! each point the page's RBER is the model's RBER at that P/E count after one year of
//! retention (eq. 5), the paper's dotted "required" line, plus Gaussian noise of standard
//! deviation `sigma` per operation; `ops` random operations follow, each a read (with
//! probability `read_share`; its errors a binomial-like Poisson draw at that RBER, a
//! failure when they exceed the page's p_cur) or a program (the page takes its p_next).
//! With `retention = "year-minus-hour"` (Fig. 5d) the page has been retained one year
//! minus one hour at every operation; otherwise (Fig. 5a–c) its retention is zero, as in
//! the paper's MATLAB runs, where time does not advance.

use crate::Metrics;
use ftl::flares::{FlaresConfig, FlaresCore, FlaresTables, Outcome, Pprof};
use nand::Nanos;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde::Deserialize;

/// The operating points of Fig. 5 (P/E cycles).
pub const POINTS: [u32; 5] = [10, 100, 1_000, 10_000, 100_000];

/// Metrics of a `flares-fig5` cell.
pub const METRICS: [&str; 7] = [
    "required_t",
    "chosen_t_mean",
    "chosen_t_last",
    "under_ops",
    "over_t_mean",
    "rewrite_alarms",
    "rber",
];

/// Parameters of a `flares-fig5` cell.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fig5Params {
    /// The operating point this cell reports (one of [`POINTS`]).
    pub pe: u32,
    /// WSIZE.
    pub wsize: u32,
    /// MIX.
    pub mix: f64,
    /// `"zero"` or `"year-minus-hour"`.
    #[serde(default = "zero")]
    pub retention: String,
    /// The RBER reads are drawn at: `"one-year"` (the paper's dotted "required" line,
    /// whatever the page's age) or `"at-retention"` (what the cells have at the page's
    /// actual retention: with zero retention, the P/E part alone).
    #[serde(default = "one_year")]
    pub inject: String,
    /// Operations per point.
    #[serde(default = "thousand")]
    pub ops: u32,
    /// Standard deviation of the RBER noise.
    #[serde(default = "sigma")]
    pub sigma: f64,
    /// Share of reads among the operations.
    #[serde(default = "read_share")]
    pub read_share: f64,
    /// Strongest t (the 6-bit p field allows 63).
    #[serde(default = "t_max")]
    pub t_max: u32,
    /// Seed of the noise and the operation mix.
    #[serde(default = "one")]
    pub seed: u64,
}

fn zero() -> String {
    "zero".into()
}
fn one_year() -> String {
    "one-year".into()
}
fn thousand() -> u32 {
    1000
}
fn sigma() -> f64 {
    5e-7
}
fn read_share() -> f64 {
    0.9
}
fn t_max() -> u32 {
    63
}
fn one() -> u64 {
    1
}

/// Checks a cell's parameters.
pub fn params(config: &toml::Table) -> Result<Fig5Params, String> {
    let p: Fig5Params = toml::Value::Table(config.clone())
        .try_into()
        .map_err(|e: toml::de::Error| e.message().trim().to_string())?;
    if !POINTS.contains(&p.pe) {
        return Err(format!("pe = {}: must be one of {POINTS:?}", p.pe));
    }
    if p.retention != "zero" && p.retention != "year-minus-hour" {
        return Err(format!(
            "retention = {:?}: must be \"zero\" or \"year-minus-hour\"",
            p.retention
        ));
    }
    if p.inject != "one-year" && p.inject != "at-retention" {
        return Err(format!(
            "inject = {:?}: must be \"one-year\" or \"at-retention\"",
            p.inject
        ));
    }
    if !(0.0..=1.0).contains(&p.read_share) || p.ops == 0 || p.sigma < 0.0 {
        return Err("read_share in [0, 1], ops ≥ 1, sigma ≥ 0".into());
    }
    let cfg = config_of(&p);
    cfg.validate()?;
    Ok(p)
}

fn config_of(p: &Fig5Params) -> FlaresConfig {
    FlaresConfig {
        wsize: p.wsize,
        mix: p.mix,
        t_max: p.t_max,
        ..FlaresConfig::default()
    }
}

/// Runs a cell.
pub fn run(p: &Fig5Params) -> Metrics {
    const BITS: u64 = 32768;
    let cfg = config_of(p);
    let core = FlaresCore::new(FlaresTables::new(cfg, BITS, BITS));
    let mut counts = ftl::policy::EccPolicyCounters::default();
    let mut rng = ChaCha8Rng::seed_from_u64(p.seed);
    let mut unit = move || ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let hour = 3_600_000_000_000u64;
    let year = 8760 * hour;
    let mut page = Pprof::default();
    let mut out = Metrics::new();
    for &pe in POINTS.iter().take_while(|&&x| x <= p.pe) {
        // Time: the page was programmed at 0; "now" is its retention.
        let now = Nanos(if p.retention == "zero" {
            0
        } else {
            year - hour
        });
        let target = if p.inject == "one-year" {
            cfg.model.at(pe as f64, cfg.req_ret_hours)
        } else {
            cfg.model.at(pe as f64, (now.0 / hour) as f64)
        };
        let (required, beyond) = core.tables.required_p(pe);
        let required = if beyond { cfg.t_max + 1 } else { required };
        if page.p_cur == 0 {
            core.program(&mut page, pe, Nanos::ZERO);
        }
        let (mut sum, mut under, mut over, mut alarms) = (0u64, 0u64, 0u64, 0u64);
        for _ in 0..p.ops {
            let cur = page.p_cur as u32;
            sum += cur as u64;
            if cur < required {
                under += 1;
            } else {
                over += (cur - required) as u64;
            }
            if unit() < p.read_share {
                // Box–Muller noise on the RBER, then a Poisson draw of the page's errors.
                let g = (-2.0 * unit().ln()).sqrt() * (2.0 * std::f64::consts::PI * unit()).cos();
                let rber = (target + p.sigma * g).max(0.0);
                let mean = rber * BITS as f64;
                let (mut k, mut q) = (0u32, (-mean).exp());
                let (mut cdf, u) = (q, unit());
                while u > cdf && k < 10_000 {
                    k += 1;
                    q *= mean / k as f64;
                    cdf += q;
                }
                if core.read(&mut page, k.min(cur), k > cur, now, &mut counts) == Outcome::Rewrite {
                    alarms += 1;
                    core.program(&mut page, pe, Nanos::ZERO);
                }
            } else {
                core.program(&mut page, pe, Nanos::ZERO);
            }
        }
        out = Metrics::new();
        out.insert("required_t".into(), required as f64);
        out.insert("chosen_t_mean".into(), sum as f64 / p.ops as f64);
        out.insert("chosen_t_last".into(), page.p_cur as f64);
        out.insert("under_ops".into(), under as f64);
        out.insert("over_t_mean".into(), over as f64 / p.ops as f64);
        out.insert("rewrite_alarms".into(), alarms as f64);
        out.insert("rber".into(), target);
    }
    out
}

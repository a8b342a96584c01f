//! Reading a matrix's results at a point: the mean and spread of a metric over the cells
//! that match it, the published value there, the points of the non-averaged axes, and how
//! numbers and points are written. What the report, the verdicts, the plots and the summary
//! all read through.

use crate::matrix::{matches_at, show, Matrix};
use crate::results::Results;
use toml::Value;

/// A number as tables show it: 4 significant digits, scientific when tiny or huge.
pub fn fmt_num(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if !v.is_finite() {
        // A ratio to a published zero, say.
        return if v.is_nan() {
            "n/a".into()
        } else if v > 0.0 {
            "∞".into()
        } else {
            "−∞".into()
        };
    }
    let a = v.abs();
    if !(1e-3..1e6).contains(&a) {
        let s = format!("{v:.3e}");
        let (mant, exp) = s.split_once('e').expect("scientific");
        let mant = if mant.contains('.') {
            mant.trim_end_matches('0').trim_end_matches('.')
        } else {
            mant
        };
        return format!("{mant}e{exp}");
    }
    let digits = (3 - a.log10().floor() as i32).clamp(0, 6) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The mean of `metric` over the cells that match `at` and ran: `(mean, cells with a
/// value, cells matched)`.
pub fn mean_at(r: &Results, at: &[(String, Value)], metric: &str) -> (Option<f64>, usize, usize) {
    let mut sum = 0.0;
    let (mut n, mut total) = (0, 0);
    for c in r.cells.iter().filter(|c| matches_at(&c.cell, at)) {
        total += 1;
        if let Some(v) = c.metrics().and_then(|m| m.get(metric)) {
            sum += v;
            n += 1;
        }
    }
    ((n > 0).then(|| sum / n as f64), n, total)
}

/// The smallest and largest value of `metric` over the cells that match `at` and ran
/// (`None` with fewer than two).
pub fn spread_at(r: &Results, at: &[(String, Value)], metric: &str) -> Option<(f64, f64)> {
    let vs: Vec<f64> = r
        .cells
        .iter()
        .filter(|c| matches_at(&c.cell, at))
        .filter_map(|c| c.metrics().and_then(|m| m.get(metric)).copied())
        .collect();
    (vs.len() > 1).then(|| {
        vs.iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)))
    })
}

/// The published value of `metric` at exactly the point `at` (same axis values).
pub fn published_at(m: &Matrix, at: &[(String, Value)], metric: &str) -> Option<f64> {
    m.published
        .iter()
        .find(|p| {
            p.metric == metric && p.at.len() == at.len() && p.at.iter().all(|kv| at.contains(kv))
        })
        .map(|p| p.value)
}

/// The points of the non-averaged axes, except `skip`, restricted to `at`, in cell order.
pub fn points(m: &Matrix, skip: &[&str], at: &[(String, Value)]) -> Vec<Vec<(String, Value)>> {
    let mut out: Vec<Vec<(String, Value)>> = Vec::new();
    for c in m.cells.iter().filter(|c| matches_at(c, at)) {
        let p: Vec<(String, Value)> = m
            .axes
            .iter()
            .zip(&c.axes)
            .filter(|(a, _)| !a.average && !skip.contains(&a.name.as_str()))
            .map(|(_, kv)| kv.clone())
            .collect();
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// A point as the reports name it (`axis=value …`, or `all`).
pub(crate) fn label(at: &[(String, Value)]) -> String {
    if at.is_empty() {
        return "all".into();
    }
    at.iter()
        .map(|(k, v)| format!("{k}={}", show(v)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `at` with axis `k` set to `v`.
pub(crate) fn with(at: &[(String, Value)], k: &str, v: &Value) -> Vec<(String, Value)> {
    let mut a = at.to_vec();
    a.push((k.to_string(), v.clone()));
    a
}

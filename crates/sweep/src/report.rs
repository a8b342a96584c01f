//! `report.md`: our numbers beside the paper's, a verdict per claimed trend, every cell's
//! metrics, failed and missing cells, and the plots.
//!
//! Values are means over replicate axes (`average = true`, e.g. seeds) of the cells that
//! ran; a point with no result is shown as "missing", never dropped.

use crate::matrix::{matches_at, show, Matrix};
use crate::results::Results;
use crate::verdict::verdicts;
use std::fmt::Write as _;
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

pub(crate) fn label(at: &[(String, Value)]) -> String {
    if at.is_empty() {
        return "all".into();
    }
    at.iter()
        .map(|(k, v)| format!("{k}={}", show(v)))
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) fn with(at: &[(String, Value)], k: &str, v: &Value) -> Vec<(String, Value)> {
    let mut a = at.to_vec();
    a.push((k.to_string(), v.clone()));
    a
}

/// The comparison with published values: one row per entry.
pub fn comparison_table(r: &Results) -> String {
    let m = &r.matrix;
    let mut s = String::new();
    if m.published.is_empty() {
        return s;
    }
    s.push_str("| point | metric | ours | paper | ours / paper | source |\n");
    s.push_str("|---|---|---:|---:|---:|---|\n");
    for p in &m.published {
        let (ours, n, total) = mean_at(r, &p.at, &p.metric);
        let ours_s = match ours {
            Some(v) if n == total => fmt_num(v),
            Some(v) => format!("{} ({n}/{total} cells)", fmt_num(v)),
            None => "missing".into(),
        };
        let ratio = ours
            .map(|v| fmt_num(v / p.value))
            .unwrap_or_else(|| "—".into());
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            label(&p.at),
            p.metric,
            ours_s,
            fmt_num(p.value),
            ratio,
            p.source
        );
    }
    s
}

/// Every point's metrics (the matrix's `metrics`, means over replicate axes).
pub fn cells_table(r: &Results) -> String {
    let m = &r.matrix;
    let metrics: Vec<String> = if m.metrics.is_empty() {
        r.metric_names().into_iter().take(8).collect()
    } else {
        m.metrics.clone()
    };
    let shown: Vec<&crate::matrix::Axis> = m.axes.iter().filter(|a| !a.average).collect();
    let averaged: Vec<&str> = m
        .axes
        .iter()
        .filter(|a| a.average)
        .map(|a| a.name.as_str())
        .collect();
    let mut s = String::new();
    if !averaged.is_empty() {
        let _ = writeln!(
            s,
            "Means over {}; [the smallest–the largest] replicate where they differ.\n",
            averaged.join(", ")
        );
    }
    s.push('|');
    for a in &shown {
        let _ = write!(s, " {} |", a.name);
    }
    for x in &metrics {
        let _ = write!(s, " {x} |");
    }
    s.push('\n');
    s.push('|');
    for _ in &shown {
        s.push_str("---|");
    }
    for _ in &metrics {
        s.push_str("---:|");
    }
    s.push('\n');
    for p in points(m, &[], &[]) {
        s.push('|');
        for (_, v) in &p {
            let _ = write!(s, " {} |", show(v));
        }
        for x in &metrics {
            let (v, n, total) = mean_at(r, &p, x);
            let mut cell = match v {
                Some(v) if n == total => fmt_num(v),
                Some(v) => format!("{} ({n}/{total})", fmt_num(v)),
                None => "missing".into(),
            };
            if let Some((lo, hi)) = spread_at(r, &p, x).filter(|(lo, hi)| lo != hi) {
                // Replicates (a seed axis): their range beside the mean.
                let _ = write!(cell, " [{}–{}]", fmt_num(lo), fmt_num(hi));
            }
            let _ = write!(s, " {cell} |");
        }
        s.push('\n');
    }
    s
}

/// Writes `results.json`, `results.csv`, `plots/` and `report.md` into `out`; returns the
/// report's text.
pub fn write_all(r: &Results, out: &std::path::Path) -> Result<String, crate::SweepError> {
    std::fs::create_dir_all(out).map_err(|e| crate::SweepError::io(out, e))?;
    crate::write_atomic(&out.join("results.json"), r.to_json().as_bytes())?;
    crate::write_atomic(&out.join("results.csv"), r.to_csv().as_bytes())?;
    let plots: Vec<(String, String)> = crate::plot::draw_all(r, &out.join("plots"))?
        .into_iter()
        .map(|(t, f)| (t, format!("plots/{f}")))
        .collect();
    let md = markdown(r, &plots);
    crate::write_atomic(&out.join("report.md"), md.as_bytes())?;
    Ok(md)
}

/// The whole `report.md`; `plots` are the PNG files (relative paths) to embed.
pub fn markdown(r: &Results, plots: &[(String, String)]) -> String {
    let m = &r.matrix;
    let mut s = String::new();
    let _ = writeln!(s, "# {}\n", m.title);
    if !m.description.is_empty() {
        let _ = writeln!(s, "{}\n", m.description.trim());
    }
    let _ = writeln!(
        s,
        "Reproduce: `{}` — {} cells, fingerprint `{:016x}`.\n",
        m.source.command(m.quick),
        m.cells.len(),
        m.fingerprint
    );
    let verdicts = verdicts(r);
    if !verdicts.is_empty() {
        s.push_str("## Trends\n\n");
        for v in &verdicts {
            let _ = writeln!(s, "- **{}** — {}: {}", v.word(), v.claim, v.detail);
        }
        s.push('\n');
        let fixed: Vec<&crate::verdict::Verdict> = verdicts
            .iter()
            .filter(|v| v.by_construction.is_some())
            .collect();
        if !fixed.is_empty() {
            let _ = writeln!(
                s,
                "Verdicts that cannot fail (by construction; listed, not counted as evidence): {}.\n",
                fixed
                    .iter()
                    .map(|v| format!("\"{}\"", v.claim))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    if !m.published.is_empty() {
        s.push_str("## Beside the published values\n\n");
        s.push_str(&comparison_table(r));
        if m.published_skipped > 0 {
            let _ = writeln!(
                s,
                "\n{} published values are at points outside this --quick matrix.",
                m.published_skipped
            );
        }
        s.push('\n');
    }
    if !m.notes.is_empty() {
        s.push_str("## Differences from the paper, explained\n\n");
        for n in &m.notes {
            let _ = writeln!(s, "- {}", n.trim());
        }
        s.push('\n');
    }
    if !plots.is_empty() {
        s.push_str("## Plots\n\n");
        for (title, png) in plots {
            let svg = png.trim_end_matches(".png").to_string() + ".svg";
            let _ = writeln!(s, "![{title}]({png}) ([SVG]({svg}))\n");
        }
    }
    s.push_str("## All points\n\n");
    s.push_str(&cells_table(r));
    let failed: Vec<_> = r.failed().collect();
    let missing: Vec<_> = r.missing().collect();
    if !failed.is_empty() || !missing.is_empty() {
        s.push_str("\n## Cells without a result\n\n");
        for (c, e) in failed {
            let _ = writeln!(s, "- cell {} ({}): failed: {e}", c.index, c.label());
        }
        for c in missing {
            let _ = writeln!(s, "- cell {} ({}): missing", c.index, c.label());
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_short_and_exact_enough() {
        assert_eq!(fmt_num(2.3456), "2.346");
        assert_eq!(fmt_num(1234.6), "1235");
        assert_eq!(fmt_num(0.125), "0.125");
        assert_eq!(fmt_num(3.66e-9), "3.66e-9");
        assert_eq!(fmt_num(2e-5), "2e-5");
        assert_eq!(fmt_num(-1.25e7), "-1.25e7");
        assert_eq!(fmt_num(0.0), "0");
    }
}

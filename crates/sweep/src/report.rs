//! `report.md`: our numbers beside the paper's, a verdict per claimed trend, every cell's
//! metrics, failed and missing cells, and the plots.
//!
//! Values are means over replicate axes (`average = true`, e.g. seeds) of the cells that
//! ran; a point with no result is shown as "missing", never dropped.

use crate::matrix::show;
use crate::query::label;
pub use crate::query::{fmt_num, mean_at, points, published_at, spread_at};
use crate::results::Results;
use crate::verdict::verdicts;
use std::fmt::Write as _;

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
        for v in verdicts.iter().filter(|v| v.table.is_some()) {
            let _ = writeln!(s, "### Per point: {}\n", v.claim);
            s.push_str(v.table.as_deref().unwrap_or_default());
            s.push('\n');
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

//! The evaluators of the trend kinds that are not a comparison between two rows:
//! `monotone`, `at_most`, `matches` (against published values) and `consistent` (a
//! measured failure count against a reference probability).

use super::{checked, ties, Folded, Magnitude, Outcome};
use crate::claims::{Direction, Limit, Trend};
use crate::matrix::show;
use crate::query::{fmt_num, label, mean_at, points, spread_at, with};
use crate::results::Results;
use crate::stats::{geo_mean, poisson_tails};
use std::fmt::Write as _;

pub(super) fn monotone(r: &Results, t: &Trend, axis: &str, direction: Direction) -> Folded {
    let m = &r.matrix;
    let a = m.axis(axis).expect("validated");
    let mut series = Vec::new();
    let mut bad = Vec::new();
    let mut empty = Vec::new();
    for p in points(m, &[axis], &t.at) {
        let ys: Vec<(String, f64)> = a
            .values
            .iter()
            .filter_map(|v| {
                mean_at(r, &with(&p, axis, v), &t.metric)
                    .0
                    .map(|y| (show(v), y))
            })
            .collect();
        if ys.len() < 2 {
            continue;
        }
        if t.count && ys.iter().all(|(_, y)| *y == 0.0) {
            // A count with no event anywhere along the axis: no evidence either way.
            empty.push(label(&p));
            continue;
        }
        // Never the other way (a plateau, such as a count at its floor of zero, is
        // allowed), and a net move the claimed way beyond the tie tolerance.
        let (first, last) = (ys[0].1, ys[ys.len() - 1].1);
        let moved = !ties(first, last, t.tie);
        let ok = match direction {
            Direction::Increasing => ys.windows(2).all(|w| w[1].1 >= w[0].1) && last > first,
            Direction::Decreasing => ys.windows(2).all(|w| w[1].1 <= w[0].1) && last < first,
        } && moved;
        let trace = format!(
            "{}{}",
            if p.is_empty() {
                String::new()
            } else {
                format!("{}: ", label(&p))
            },
            ys.iter()
                .map(|(_, y)| fmt_num(*y))
                .collect::<Vec<_>>()
                .join(" → ")
        );
        if !ok {
            bad.push(trace.clone());
        }
        series.push(trace);
    }
    if series.is_empty() {
        return (
            Outcome::NoData,
            None,
            None,
            None,
            format!("no series with two points along {axis}"),
        );
    }
    let word = match direction {
        Direction::Increasing => "increases",
        Direction::Decreasing => "decreases",
    };
    let mut d = format!(
        "{} {word} along {axis} in {}/{} series ({})",
        t.metric,
        series.len() - bad.len(),
        series.len(),
        series.join("; ")
    );
    if !empty.is_empty() {
        let _ = write!(
            d,
            "; no event anywhere along {axis} (left out): {}",
            empty.join(", ")
        );
    }
    checked(bad.is_empty(), d)
}

/// `kind = "at_most"`: every point's highest replicate at most its limit (a value, or
/// the point's own value of another metric: a bound reached exactly holds, and is said).
pub(super) fn at_most(r: &Results, t: &Trend, max: &Limit) -> Folded {
    let m = &r.matrix;
    // (value, limit, point)
    let mut vals = Vec::new();
    for p in points(m, &[], &t.at) {
        let (Some(mean), _, _) = mean_at(r, &p, &t.metric) else {
            continue;
        };
        let limit = match max {
            Limit::Value(v) => *v,
            Limit::Metric(than) => match mean_at(r, &p, than).0 {
                Some(v) => v,
                None => continue,
            },
        };
        let hi = spread_at(r, &p, &t.metric).map_or(mean, |s| s.1);
        vals.push((hi, limit, label(&p)));
    }
    if vals.is_empty() {
        let d = format!("no point has {}", t.metric);
        return (Outcome::NoData, None, None, None, d);
    }
    // A bound computed and a time measured in the same floating-point steps may differ in
    // the last place: a millionth of the limit is "at" it.
    let slack = |limit: f64| limit.abs() * 1e-6;
    let over: Vec<_> = vals.iter().filter(|v| v.0 > v.1 + slack(v.1)).collect();
    let at = vals
        .iter()
        .filter(|v| v.0 <= v.1 + slack(v.1) && v.0 >= v.1 - slack(v.1))
        .count();
    let worst = vals
        .iter()
        .max_by(|a, b| (a.0 - a.1).total_cmp(&(b.0 - b.1)))
        .expect("non-empty");
    let what = match max {
        Limit::Value(v) => fmt_num(*v),
        Limit::Metric(than) => than.clone(),
    };
    let mut detail = format!(
        "{} of {} points at most {what} (closest: {} against {} at {})",
        vals.len() - over.len(),
        vals.len(),
        fmt_num(worst.0),
        fmt_num(worst.1),
        worst.2
    );
    if at > 0 && matches!(max, Limit::Metric(_)) {
        let _ = write!(detail, "; {at} reach it exactly");
    }
    if over.is_empty() {
        return (Outcome::Holds, None, None, None, detail);
    }
    let _ = write!(
        detail,
        "; above it at {}",
        over.iter()
            .map(|v| v.2.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    (Outcome::Fails, None, None, None, detail)
}

pub(super) fn matches(r: &Results, t: &Trend, tolerance: f64) -> Folded {
    let m = &r.matrix;
    let mut errs = Vec::new();
    for p in m
        .published
        .iter()
        .filter(|p| p.metric == t.metric && t.at.iter().all(|kv| p.at.contains(kv)))
    {
        if let (Some(ours), _, _) = mean_at(r, &p.at, &p.metric) {
            errs.push((ours, p.value, label(&p.at)));
        }
    }
    if errs.is_empty() {
        return (
            Outcome::NoData,
            None,
            None,
            None,
            "no published point has a result".into(),
        );
    }
    // Relative error; against a published zero, 0 when ours is zero too, else infinite.
    let rel = |e: &(f64, f64, String)| {
        if e.1 == 0.0 {
            if e.0 == 0.0 {
                0.0
            } else {
                f64::INFINITY.copysign(e.0)
            }
        } else {
            (e.0 - e.1) / e.1
        }
    };
    let worst = errs
        .iter()
        .max_by(|a, b| rel(a).abs().total_cmp(&rel(b).abs()))
        .expect("non-empty");
    let within = errs.iter().filter(|e| rel(e).abs() <= tolerance).count();
    let detail = format!(
        "within {} % of the published value at {within}/{} points (worst {:+.1} % at {})",
        fmt_num(tolerance * 100.0),
        errs.len(),
        rel(worst) * 100.0,
        worst.2
    );
    if within == errs.len() {
        return (Outcome::Holds, Some(Magnitude::Matches), None, None, detail);
    }
    // Outside: on one side everywhere (by the geometric mean of ours / theirs), or both.
    // (The factor over the points outside the tolerance.)
    let ratios: Vec<f64> = errs
        .iter()
        .filter(|e| rel(e).abs() > tolerance)
        .map(|e| e.0 / e.1)
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    let below = errs.iter().all(|e| rel(e) < tolerance);
    let above = errs.iter().all(|e| rel(e) > -tolerance);
    let mag = match (below, above, ratios.is_empty()) {
        (true, false, false) => Some(Magnitude::Smaller(1.0 / geo_mean(&ratios))),
        (false, true, false) => Some(Magnitude::Larger(geo_mean(&ratios))),
        _ => None,
    };
    (Outcome::Fails, mag, None, None, detail)
}

pub(super) fn consistent(
    r: &Results,
    t: &Trend,
    reference: &str,
    failures: &str,
    trials: &str,
) -> Folded {
    let mut n = 0;
    let mut bad = Vec::new();
    let mut smallest = 1.0f64;
    for c in r
        .cells
        .iter()
        .filter(|c| crate::matrix::matches_at(&c.cell, &t.at))
    {
        let Some(mm) = c.metrics() else { continue };
        let (Some(&p), Some(&k), Some(&n_t)) =
            (mm.get(reference), mm.get(failures), mm.get(trials))
        else {
            continue;
        };
        n += 1;
        let (lo, hi) = poisson_tails(k as u64, p * n_t);
        let tail = lo.min(hi);
        smallest = smallest.min(tail);
        if tail < 0.0005 {
            bad.push(format!(
                "{}: {k} failures where {} expected",
                c.cell.label(),
                fmt_num(p * n_t)
            ));
        }
    }
    if n == 0 {
        return (
            Outcome::NoData,
            None,
            None,
            None,
            "no cell has a result".into(),
        );
    }
    let mut d = format!(
        "{failures} / {trials} consistent with {reference} at {}/{n} cells (two-sided Poisson test at 0.001; smallest tail {})",
        n - bad.len(),
        fmt_num(smallest)
    );
    if !bad.is_empty() {
        let _ = write!(d, "; off at {}", bad.join(", "));
    }
    checked(bad.is_empty(), d)
}

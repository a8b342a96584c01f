//! The claims of a matrix: published values to compare with, the trends the paper claims,
//! and the plots to draw — their file form and their validation against the expanded
//! cells (axis names, axis values, metric names), before anything runs.

use crate::kinds::Kind;
use crate::space::{coerce, matches_at, show, Axis, Cell, Point};
use crate::SweepError;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use toml::Value;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PublishedFile {
    #[serde(default)]
    at: toml::Table,
    metric: Option<String>,
    #[serde(default)]
    metrics: Vec<String>,
    value: Option<f64>,
    formula: Option<String>,
    source: String,
}

/// Which way is better for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Smaller is better (latency, WAF, recovery time).
    Lower,
    /// Larger is better (throughput, lifetime).
    Higher,
}

/// A monotone trend's direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// The metric grows along the axis.
    Increasing,
    /// The metric shrinks along the axis.
    Decreasing,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TrendFile {
    claim: String,
    kind: String,
    metric: String,
    axis: Option<String>,
    winner: Option<Value>,
    loser: Option<Value>,
    better: Option<Better>,
    direction: Option<Direction>,
    tolerance: Option<f64>,
    reference: Option<String>,
    than: Option<String>,
    /// `kind = "at_most"`: the largest value allowed at any point (or `than`: a metric
    /// each point is bounded by).
    max: Option<f64>,
    failures: Option<String>,
    trials: Option<String>,
    #[serde(default)]
    at: toml::Table,
    /// Relative difference within which two values are a tie (default
    /// [`DEFAULT_TIE`]; 0 for `count` metrics: equal counts only).
    tie: Option<f64>,
    /// The metric counts events: each point's ratio gets a 95 % interval.
    count: Option<bool>,
    /// Why the outcome follows from the construction (the trend is then no evidence).
    by_construction: Option<String>,
    /// The paper's headline ratio for this comparison (winner's advantage, as ours is
    /// given: the loser's value over the winner's for `better = "lower"`).
    paper: Option<f64>,
    /// Where the paper gives `paper` (figure, table, page).
    source: Option<String>,
    /// Relative tolerance of the magnitude check against the paper's ratio (default
    /// [`DEFAULT_MAGNITUDE`]).
    magnitude: Option<f64>,
    /// `kind = "wins"` with `count`: a metric holding each cell's expected count under an
    /// analytic model; the per-point table shows the ratio it predicts.
    expected: Option<String>,
    /// `kind = "wins"` with `count`: a metric bounding the ratio at each point (taken at
    /// the loser), shown per point with the paper's ratio checked against it.
    bound: Option<String>,
    /// `kind = "wins"`: points where this metric is above 0 on either side are left out
    /// of the comparison and listed (e.g. `nand.lost_pages`: a cost measured where data
    /// were lost measures the loss).
    exclude_if: Option<String>,
}

/// Two values within this relative difference are a tie unless a trend says otherwise.
pub const DEFAULT_TIE: f64 = 0.005;
/// Our ratio matches the paper's when within this relative tolerance of it, unless a trend
/// says otherwise.
pub const DEFAULT_MAGNITUDE: f64 = 0.25;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PlotFile {
    metric: String,
    x: String,
    series: Option<String>,
    title: Option<String>,
    y_label: String,
    log_x: Option<bool>,
    log_y: Option<bool>,
    #[serde(default)]
    extra: Vec<String>,
    /// `"tail"`: a latency distribution instead of a metric over an axis (see
    /// [`Plot::tail`]).
    kind: Option<String>,
}

/// A published (or closed-form) value to compare with.
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    /// The axis values it applies to (other axes are averaged over).
    pub at: Vec<(String, Value)>,
    /// The metric.
    pub metric: String,
    /// The value.
    pub value: f64,
    /// Paper, table or figure, page (or the formula's reference).
    pub source: String,
}

/// A claimed trend, checked on our numbers (and on the paper's where it gives them).
#[derive(Debug, Clone, PartialEq)]
pub enum TrendKind {
    /// `winner` beats `loser` on the axis, at every point of the other axes.
    Wins {
        /// The compared axis.
        axis: String,
        /// The value expected to win.
        winner: Value,
        /// The value expected to lose.
        loser: Value,
        /// Which way is better.
        better: Better,
        /// A loss by at most this fraction still counts (`tolerance`: "no more than 1 %
        /// worse" is `wins` with `tolerance = 0.01`); 0 = a strict win or a tie.
        slack: f64,
    },
    /// The trend's metric beats metric `than` at every point (two columns of one cell,
    /// e.g. a scheme's time against its baseline's, measured on the same run).
    Beats {
        /// The metric it is compared with.
        than: String,
        /// Which way is better.
        better: Better,
    },
    /// The metric moves one way along the axis, in every series: never the other way
    /// (plateaus allowed, e.g. an error count at zero), and its last value beyond its first.
    Monotone {
        /// The axis.
        axis: String,
        /// The direction.
        direction: Direction,
    },
    /// Our value is within `tolerance` (relative) of the published one, at every published
    /// point of the metric.
    Matches {
        /// Relative tolerance.
        tolerance: f64,
    },
    /// The metric is at most its limit at every point (a bound, or an event that must not
    /// happen: `max = 0`), judged on each cell's highest replicate. Reaching the limit
    /// exactly holds: a bound is met, not beaten.
    AtMost {
        /// The largest value allowed.
        max: Limit,
    },
    /// A measured rate (`failures / trials`) is statistically consistent with a reference
    /// probability (another metric) at every cell: both Poisson tails above 0.001.
    Consistent {
        /// The reference probability metric.
        reference: String,
        /// The failure-count metric.
        failures: String,
        /// The trial-count metric.
        trials: String,
    },
}

/// What an `at_most` trend bounds a metric by.
#[derive(Debug, Clone, PartialEq)]
pub enum Limit {
    /// A fixed value (`max = VALUE`).
    Value(f64),
    /// Another metric of the same cell (`than = "METRIC"`: a bound the cell reports).
    Metric(String),
}

/// A trend claim.
#[derive(Debug, Clone, PartialEq)]
pub struct Trend {
    /// The claim, as the paper makes it.
    pub claim: String,
    /// The metric.
    pub metric: String,
    /// Restricts the check to these axis values.
    pub at: Vec<(String, Value)>,
    /// What is checked.
    pub kind: TrendKind,
    /// Relative difference within which two compared values tie.
    pub tie: f64,
    /// The metric counts events (95 % intervals on ratios; a ratio whose interval holds 1
    /// is inconclusive).
    pub count: bool,
    /// Why the outcome cannot fail (`None`: it can).
    pub by_construction: Option<String>,
    /// The paper's headline ratio and where it is given.
    pub paper: Option<(f64, String)>,
    /// Relative tolerance of the magnitude check against the paper.
    pub magnitude: f64,
    /// A count comparison's analytic expected-count metric (see the file's `expected`).
    pub expected: Option<String>,
    /// A count comparison's bound metric (see the file's `bound`).
    pub bound: Option<String>,
    /// Points where this metric is above 0 on either side are left out (see the file's
    /// `exclude_if`).
    pub exclude_if: Option<String>,
}

/// A plot: a metric over an axis, one series per value of another axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    /// The metric.
    pub metric: String,
    /// More metrics drawn as their own series (e.g. analytic columns).
    pub extra: Vec<String>,
    /// The x axis.
    pub x: String,
    /// The series axis.
    pub series: Option<String>,
    /// Title.
    pub title: String,
    /// Y axis title with unit.
    pub y_label: String,
    /// Log scale on x (`None`: when values span two decades or more).
    pub log_x: Option<bool>,
    /// Log scale on y (`None`: when values span two decades or more).
    pub log_y: Option<bool>,
    /// A latency distribution (`kind = "tail"`): `metric` names a request kind's latency
    /// (`latency.write`); one figure per value of `x`, one line per value of `series`
    /// through its quantiles (`p50_us` … `max_us`, drawn as the share of requests slower
    /// than each, log scale); each `extra` metric (a bound, µs) drawn as a vertical line.
    pub tail: bool,
}

/// The quantiles a tail plot draws: (metric suffix, share of requests slower than it).
pub const TAIL_QUANTILES: [(&str, f64); 5] = [
    ("p50_us", 0.5),
    ("p90_us", 0.1),
    ("p99_us", 0.01),
    ("p999_us", 0.001),
    ("p9999_us", 0.0001),
];

/// What the claims are checked against: the matrix file, its kind's metric names, its axes
/// and cells.
pub(crate) struct Scope<'a> {
    /// The matrix file (errors name it).
    pub file: &'a str,
    /// The cells' kind.
    pub kind: Kind,
    /// Every metric name the kind reports.
    pub known: BTreeSet<String>,
    /// The axes.
    pub axes: &'a [Axis],
    /// The cells.
    pub cells: &'a [Cell],
}

impl Scope<'_> {
    fn err(&self, message: String) -> SweepError {
        SweepError::Matrix {
            file: self.file.to_string(),
            message,
        }
    }

    /// Refuses a metric the kind does not report, suggesting near names.
    pub fn metric(&self, what: &str, m: &str) -> Result<(), SweepError> {
        if self.known.contains(m) {
            return Ok(());
        }
        let near: Vec<String> = self
            .known
            .iter()
            .filter(|k| {
                k.contains(m)
                    || m.contains(k.as_str())
                    || k.split('.').next_back() == m.split('.').next_back()
            })
            .take(6)
            .map(|s| format!("{s:?}"))
            .collect();
        Err(self.err(format!(
            "{what}: unknown metric {m:?} for kind \"{}\"{}",
            self.kind.name(),
            if near.is_empty() {
                String::new()
            } else {
                format!(" (did you mean {})", near.join(", "))
            }
        )))
    }

    /// The axis `name`.
    pub fn axis(&self, what: &str, name: &str) -> Result<&Axis, SweepError> {
        self.axes.iter().find(|a| a.name == name).ok_or_else(|| {
            self.err(format!(
                "{what}: no axis named {name:?} (axes: {})",
                self.axes
                    .iter()
                    .map(|a| a.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    }

    /// An `at` table: axis names and full-size values — a value, or an array of values
    /// (any of them); `None` when a value is only in the full matrix (the entry does not
    /// apply to the --quick expansion; of an array, the values the expansion has are kept).
    pub fn at(&self, what: &str, at: &toml::Table) -> Result<Option<Point>, SweepError> {
        let mut out = Vec::new();
        let mut present = true;
        for (k, v) in at {
            let a = self.axis(what, k)?;
            let check = |v: &Value| -> Result<Value, SweepError> {
                let v = coerce(v, &a.full_values);
                if a.full_values.contains(&v) {
                    return Ok(v);
                }
                Err(self.err(format!(
                    "{what}: at {k} = {v}: no such cell (axis {k} has {})",
                    a.full_values
                        .iter()
                        .map(show)
                        .collect::<Vec<_>>()
                        .join(", ")
                )))
            };
            let v = match v {
                Value::Array(vs) => {
                    let vs = vs.iter().map(check).collect::<Result<Vec<_>, _>>()?;
                    let kept: Vec<Value> =
                        vs.into_iter().filter(|v| a.values.contains(v)).collect();
                    present &= !kept.is_empty();
                    Value::Array(kept)
                }
                v => {
                    let v = check(v)?;
                    present &= a.values.contains(&v);
                    v
                }
            };
            out.push((k.clone(), v));
        }
        Ok(present.then_some(out))
    }

    /// The published values present in this expansion, and how many are at points outside
    /// it (a --quick matrix).
    pub fn published(
        &self,
        files: &[PublishedFile],
    ) -> Result<(Vec<Published>, usize), SweepError> {
        let mut published = Vec::new();
        let mut skipped = 0;
        for (i, p) in files.iter().enumerate() {
            let what = format!("published[{i}]");
            let mut ms = p.metrics.clone();
            ms.extend(p.metric.clone());
            if ms.is_empty() {
                return Err(self.err(format!("{what}: give metric = \"NAME\" or metrics = [...]")));
            }
            for m in &ms {
                self.metric(&what, m)?;
            }
            let Some(at) = self.at(&what, &p.at)? else {
                skipped += ms.len();
                continue;
            };
            let matched: Vec<&Cell> = self.cells.iter().filter(|c| matches_at(c, &at)).collect();
            if matched.is_empty() {
                return Err(self.err(format!("{what}: at {:?} matches no cell", p.at)));
            }
            let mut add = |at: &Point, value: f64| {
                for m in &ms {
                    published.push(Published {
                        at: at.clone(),
                        metric: m.clone(),
                        value,
                        source: p.source.clone(),
                    });
                }
            };
            let point_of = |c: &Cell| -> Point {
                self.axes
                    .iter()
                    .zip(&c.axes)
                    .filter(|(a, _)| !a.average)
                    .map(|(_, kv)| kv.clone())
                    .collect()
            };
            match (p.value, &p.formula) {
                (Some(v), None) => {
                    // A value the paper gives once for points this matrix splits further
                    // (along an axis the paper did not vary, such as a modelling choice):
                    // the same value at each of them, in cell order.
                    let mut pts: Vec<Point> = Vec::new();
                    for c in &matched {
                        let k = point_of(c);
                        if !pts.contains(&k) {
                            pts.push(k);
                        }
                    }
                    if pts.len() == 1 {
                        add(&at, v);
                    } else {
                        for k in &pts {
                            add(k, v);
                        }
                    }
                }
                (None, Some(name)) => {
                    // One entry per group of matched cells (the non-averaged axes).
                    let mut groups: BTreeMap<Vec<String>, (Point, f64)> = BTreeMap::new();
                    for c in matched {
                        let v = crate::analytic::evaluate(name, &c.config)
                            .map_err(|m| self.err(format!("{what}: formula = {name:?}: {m}")))?;
                        let key = point_of(c);
                        groups
                            .entry(key.iter().map(|(_, v)| v.to_string()).collect())
                            .or_insert((key, v));
                    }
                    for (_, (at, v)) in groups {
                        add(&at, v);
                    }
                }
                _ => {
                    return Err(self.err(format!(
                        "{what}: give exactly one of value = NUMBER or formula = \"NAME\""
                    )))
                }
            }
        }
        Ok((published, skipped))
    }

    /// The trend claims that apply to this expansion.
    pub fn trends(&self, files: &[TrendFile]) -> Result<Vec<Trend>, SweepError> {
        let mut trends = Vec::new();
        for (i, t) in files.iter().enumerate() {
            let what = format!("trend[{i}] ({:?})", t.claim);
            self.metric(&what, &t.metric)?;
            let Some(at) = self.at(&what, &t.at)? else {
                continue;
            };
            let kind = self.trend_kind(&what, t)?;
            let count = t.count.unwrap_or(false);
            let fraction = |key: &str, x: Option<f64>, default: f64| match x {
                None => Ok(default),
                Some(x) if x.is_finite() && (0.0..1.0).contains(&x) => Ok(x),
                Some(x) => Err(self.err(format!("{what}: {key} = {x} must be in [0, 1)"))),
            };
            let tie = fraction("tie", t.tie, if count { 0.0 } else { DEFAULT_TIE })?;
            let magnitude = match t.magnitude {
                None => DEFAULT_MAGNITUDE,
                Some(x) if x.is_finite() && x > 0.0 => x,
                Some(x) => {
                    return Err(self.err(format!("{what}: magnitude = {x} must be positive")))
                }
            };
            let paper = match (t.paper, &t.source) {
                (None, None) => None,
                (Some(p), Some(src)) if p.is_finite() && p > 0.0 => Some((p, src.clone())),
                (Some(p), Some(_)) => {
                    return Err(self.err(format!("{what}: paper = {p} must be a positive ratio")))
                }
                _ => {
                    return Err(self.err(format!(
                        "{what}: paper = RATIO and source = \"FIGURE\" go together"
                    )))
                }
            };
            if paper.is_some() && !matches!(kind, TrendKind::Wins { .. } | TrendKind::Beats { .. })
            {
                return Err(self.err(format!(
                    "{what}: paper = RATIO applies to kind = \"wins\" or \"beats\""
                )));
            }
            for m in [&t.expected, &t.bound].into_iter().flatten() {
                self.metric(&what, m)?;
                if !(count && matches!(kind, TrendKind::Wins { .. })) {
                    return Err(self.err(format!(
                        "{what}: expected / bound = {m:?} apply to kind = \"wins\" with count = true"
                    )));
                }
            }
            if let Some(m) = &t.exclude_if {
                self.metric(&what, m)?;
                if !matches!(kind, TrendKind::Wins { .. }) {
                    return Err(self.err(format!(
                        "{what}: exclude_if = {m:?} applies to kind = \"wins\""
                    )));
                }
            }
            if let Some(why) = &t.by_construction {
                if why.trim().is_empty() {
                    return Err(self.err(format!(
                        "{what}: by_construction = \"\": say why the outcome cannot fail"
                    )));
                }
            }
            trends.push(Trend {
                claim: t.claim.clone(),
                metric: t.metric.clone(),
                at,
                kind,
                tie,
                count,
                by_construction: t.by_construction.clone(),
                paper,
                magnitude,
                expected: t.expected.clone(),
                bound: t.bound.clone(),
                exclude_if: t.exclude_if.clone(),
            });
        }
        Ok(trends)
    }

    /// What trend file `t` (named `what` in errors) checks: its kind with the keys that
    /// kind needs, each checked against the matrix's axes and metrics.
    fn trend_kind(&self, what: &str, t: &TrendFile) -> Result<TrendKind, SweepError> {
        let need = |x: Option<&str>, key: &str| -> Result<String, SweepError> {
            x.map(str::to_string)
                .ok_or_else(|| self.err(format!("{what}: kind = {:?} needs {key}", t.kind)))
        };
        Ok(match t.kind.as_str() {
        "wins" => {
            let axis = need(t.axis.as_deref(), "axis")?;
            let a = self.axis(what, &axis)?;
            let pick = |v: &Option<Value>, key: &str| -> Result<Value, SweepError> {
                let v = v
                    .as_ref()
                    .ok_or_else(|| self.err(format!("{what}: kind = \"wins\" needs {key}")))?;
                let v = coerce(v, &a.full_values);
                if !a.full_values.contains(&v) {
                    return Err(self.err(format!(
                        "{what}: {key} = {v} is not a value of axis {axis}"
                    )));
                }
                Ok(v)
            };
            TrendKind::Wins {
                winner: pick(&t.winner, "winner")?,
                loser: pick(&t.loser, "loser")?,
                better: t.better.ok_or_else(|| {
                    self.err(format!("{what}: kind = \"wins\" needs better = \"lower\" or \"higher\""))
                })?,
                slack: match t.tolerance {
                    Some(x) if (0.0..1.0).contains(&x) => x,
                    Some(x) => {
                        return Err(self.err(format!(
                            "{what}: tolerance = {x} must be in [0, 1)"
                        )))
                    }
                    None => 0.0,
                },
                axis,
            }
        }
        "beats" => {
            let than = need(t.than.as_deref(), "than")?;
            self.metric(what, &than)?;
            TrendKind::Beats {
                than,
                better: t.better.ok_or_else(|| {
                    self.err(format!("{what}: kind = \"beats\" needs better = \"lower\" or \"higher\""))
                })?,
            }
        }
        "monotone" => {
            let axis = need(t.axis.as_deref(), "axis")?;
            self.axis(what, &axis)?;
            TrendKind::Monotone {
                axis,
                direction: t.direction.ok_or_else(|| {
                    self.err(format!(
                        "{what}: kind = \"monotone\" needs direction = \"increasing\" or \"decreasing\""
                    ))
                })?,
            }
        }
        "matches" => {
            let tolerance = t.tolerance.ok_or_else(|| {
                self.err(format!("{what}: kind = \"matches\" needs tolerance = FRACTION"))
            })?;
            if !(tolerance > 0.0 && tolerance.is_finite()) {
                return Err(self.err(format!("{what}: tolerance = {tolerance} must be positive")));
            }
            TrendKind::Matches { tolerance }
        }
        "at_most" => {
            let max = match (t.max, &t.than) {
                (Some(max), None) if max.is_finite() => Limit::Value(max),
                (Some(max), None) => {
                    return Err(self.err(format!("{what}: max = {max} must be finite")))
                }
                (None, Some(than)) => {
                    self.metric(what, than)?;
                    Limit::Metric(than.clone())
                }
                _ => {
                    return Err(self.err(format!(
                        "{what}: kind = \"at_most\" needs max = VALUE or than = \"METRIC\" (one of them)"
                    )))
                }
            };
            TrendKind::AtMost { max }
        }
        "consistent" => {
            let reference = need(t.reference.as_deref(), "reference")?;
            let failures = need(t.failures.as_deref(), "failures")?;
            let trials = need(t.trials.as_deref(), "trials")?;
            for m in [&reference, &failures, &trials] {
                self.metric(what, m)?;
            }
            TrendKind::Consistent {
                reference,
                failures,
                trials,
            }
        }
        other => {
            return Err(self.err(format!(
                "{what}: kind = {other:?}: expected \"wins\", \"beats\", \"monotone\", \"matches\", \"at_most\" or \"consistent\""
            )))
        }
    })
    }

    /// The plots (titled `default_title` unless they say otherwise).
    pub fn plots(&self, files: &[PlotFile], default_title: &str) -> Result<Vec<Plot>, SweepError> {
        let mut plots = Vec::new();
        for (i, p) in files.iter().enumerate() {
            let what = format!("plot[{i}]");
            let tail = match p.kind.as_deref() {
                None => false,
                Some("tail") => true,
                Some(k) => {
                    return Err(self.err(format!(
                    "{what}: kind = {k:?}: expected \"tail\" (or no kind: a metric over an axis)"
                )))
                }
            };
            if tail {
                for (q, _) in TAIL_QUANTILES
                    .iter()
                    .chain(&[("max_us", 0.0), ("count", 0.0)])
                {
                    self.metric(&what, &format!("{}.{q}", p.metric))?;
                }
            } else {
                self.metric(&what, &p.metric)?;
            }
            for m in &p.extra {
                self.metric(&what, m)?;
            }
            self.axis(&what, &p.x)?;
            if let Some(s) = &p.series {
                self.axis(&what, s)?;
                if s == &p.x {
                    return Err(self.err(format!("{what}: series = x = {s:?}")));
                }
            }
            plots.push(Plot {
                metric: p.metric.clone(),
                extra: p.extra.clone(),
                x: p.x.clone(),
                series: p.series.clone(),
                title: p.title.clone().unwrap_or_else(|| default_title.to_string()),
                y_label: p.y_label.clone(),
                log_x: p.log_x,
                log_y: p.log_y,
                tail,
            });
        }
        Ok(plots)
    }
}

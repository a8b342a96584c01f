//! Verdicts that can fail: every compared point is a strict win, a tie, a loss or (for
//! event counts whose 95 % interval holds 1) inconclusive; a claim that A beats B holds
//! only on strict wins; a comparison the paper quantifies is judged on its magnitude too;
//! and a trend that follows from the construction says so.
//!
//! The vocabulary, in the order a reader meets it:
//!
//! | word | meaning |
//! |---|---|
//! | `holds` | every point a strict win (or every series moves the claimed way) |
//! | `matches` | holds, and our ratio is within the stated tolerance of the paper's |
//! | `same direction, smaller by X×` / `larger by X×` | holds, but the effect (ratio − 1) is X times smaller / larger than the paper's |
//! | `partly` | no loss, but some points are ties (or inconclusive) |
//! | `tie` | every point a tie (0 against 0 included) |
//! | `inconclusive` | no loss, but some counted ratio's 95 % interval holds 1, or neither side of a counted point has 30 events |
//! | `smaller by X×` / `larger by X×` | a value against a published one, outside the tolerance on one side |
//! | `contradicts` | the effect goes the other way than the paper's |
//! | `does NOT hold` | some point is a loss |
//! | `no data` | nothing to compare |
//!
//! `(by construction)` after a word: the outcome cannot fail given how the cells are built
//! (the matrix says why); it is listed, never counted as evidence.

use crate::claims::Trend;
use crate::matrix::{show, Better, TrendKind};
use crate::query::{fmt_num, label, mean_at, points, published_at, with};
use crate::results::Results;
use crate::stats::{geo_mean, poisson_ratio_interval};
use std::fmt::Write as _;

/// Events at a point, oriented as its ratio is: the numerator's count and exposure (cells),
/// then the denominator's.
type Events = (u64, f64, u64, f64);

/// How one compared point came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointOutcome {
    /// The claimed winner is strictly better (beyond the tie tolerance, and for counts
    /// with a 95 % interval that excludes 1).
    Win,
    /// Within the tie tolerance (0 against 0 included).
    Tie,
    /// The claimed winner is worse (beyond any stated slack).
    Loss,
    /// Counts whose ratio's 95 % interval holds 1.
    Inconclusive,
}

/// A trend's outcome on our numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every point a strict win; every series the claimed way; every value within tolerance.
    Holds,
    /// No loss, some strict wins, the rest ties or inconclusive.
    Partly,
    /// Every point a tie.
    Tie,
    /// No loss and no strict win decided: some interval holds 1.
    Inconclusive,
    /// Some point is a loss.
    Fails,
    /// Nothing to compare.
    NoData,
}

/// Our magnitude against the paper's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Magnitude {
    /// Within the tolerance.
    Matches,
    /// Our effect is this many times smaller.
    Smaller(f64),
    /// Our effect is this many times larger.
    Larger(f64),
    /// Our effect goes the other way.
    Contradicts,
}

/// One trend's verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The claim.
    pub claim: String,
    /// The outcome on our numbers.
    pub outcome: Outcome,
    /// Against the paper's magnitude, where the matrix gives it.
    pub magnitude: Option<Magnitude>,
    /// Why the outcome cannot fail (`None`: it can).
    pub by_construction: Option<String>,
    /// Our headline ratio (geometric mean over the points compared; over the paper's own
    /// points when it gives values per point), where there is one.
    pub ours: Option<f64>,
    /// The paper's, and where it is given.
    pub paper: Option<(f64, String)>,
    /// Who wins where, by how much, ties, intervals.
    pub detail: String,
    /// A count comparison's per-point table (Markdown).
    pub table: Option<String>,
}

impl Verdict {
    /// The verdict's word (see the module's table).
    pub fn word(&self) -> String {
        let times = |x: f64| format!("{}×", fmt_num(x));
        let base = match (self.outcome, self.magnitude) {
            (Outcome::NoData, _) => "no data".to_string(),
            (Outcome::Inconclusive, _) => "inconclusive".into(),
            (Outcome::Tie, _) => "tie".into(),
            (Outcome::Partly, _) => "partly".into(),
            (Outcome::Holds, None) => "holds".into(),
            (Outcome::Holds, Some(Magnitude::Matches)) => "matches".into(),
            (Outcome::Holds, Some(Magnitude::Smaller(x))) => {
                format!("same direction, smaller by {}", times(x))
            }
            (Outcome::Holds, Some(Magnitude::Larger(x))) => {
                format!("same direction, larger by {}", times(x))
            }
            (_, Some(Magnitude::Contradicts)) => "contradicts".into(),
            (Outcome::Fails, Some(Magnitude::Smaller(x))) => format!("smaller by {}", times(x)),
            (Outcome::Fails, Some(Magnitude::Larger(x))) => format!("larger by {}", times(x)),
            (Outcome::Fails, _) => "does NOT hold".into(),
        };
        if self.by_construction.is_some() {
            format!("{base} (by construction)")
        } else {
            base
        }
    }

    /// Whether the claim is supported as evidence: it holds (or matches), strictly, and
    /// could have failed.
    pub fn is_evidence(&self) -> bool {
        self.outcome == Outcome::Holds && self.by_construction.is_none()
    }
}

/// `a` and `b` tie: equal, or within `tie` of each other relative to the larger magnitude.
pub fn ties(a: f64, b: f64, tie: f64) -> bool {
    a == b || (a - b).abs() <= tie * a.abs().max(b.abs())
}

/// Our ratio against the paper's: within `tol` (relative), else which way and by how much
/// the effect (ratio − 1) differs; ratios oriented so the paper's is at least 1.
pub fn magnitude(ours: f64, paper: f64, tol: f64, tie: f64) -> Magnitude {
    let (ours, paper) = if paper < 1.0 {
        (1.0 / ours, 1.0 / paper)
    } else {
        (ours, paper)
    };
    if (ours / paper).ln().abs() <= (1.0 + tol).ln() {
        return Magnitude::Matches;
    }
    if ours < 1.0 && !ties(ours, 1.0, tie) {
        return Magnitude::Contradicts;
    }
    let (eo, ep) = (ours - 1.0, paper - 1.0);
    if eo < ep {
        Magnitude::Smaller(if eo <= 0.0 { f64::INFINITY } else { ep / eo })
    } else {
        Magnitude::Larger(if ep <= 0.0 { f64::INFINITY } else { eo / ep })
    }
}

/// A trend's outcome, magnitude, our ratio, the paper's, and the detail.
type Folded = (
    Outcome,
    Option<Magnitude>,
    Option<f64>,
    Option<(f64, String)>,
    String,
);

/// One point of a two-way comparison: the winner's and loser's means and how many cells
/// each averages.
struct Compared {
    at: String,
    /// Better-oriented ratio (above 1: the claimed winner is better).
    ratio: f64,
    outcome: PointOutcome,
    /// Events at this point (counts only): the loser's and the winner's, oriented as
    /// `ratio` is (numerator first), with their exposures (cells).
    events: Option<Events>,
    /// What the per-point table shows beside the ratio (count comparisons).
    extra: PointExtra,
}

/// A counted point's other columns: the ratio an analytic model predicts, the bound on
/// it, and the paper's ratio at the point.
#[derive(Default, Clone, Copy)]
struct PointExtra {
    analytic: Option<f64>,
    bound: Option<f64>,
    paper: Option<f64>,
}

/// Events a counted point needs on its larger side to enter a verdict: below it the point
/// is `inconclusive`, whatever its ratio (a ratio of two counts under 30 spans a factor of
/// about 2 or more at 95 %).
pub const MIN_EVENTS: u64 = 30;

/// Classifies one point: `w` (claimed winner) against `l`, each a mean over `nw` / `nl`
/// cells.
fn classify(
    t: &Trend,
    better: Better,
    slack: f64,
    w: f64,
    nw: usize,
    l: f64,
    nl: usize,
) -> (f64, PointOutcome, Option<Events>) {
    let ratio = match better {
        Better::Lower => l / w,
        Better::Higher => w / l,
    };
    // Event sums over the cells averaged (a sum of Poisson counts is Poisson), oriented
    // as `ratio` is: the loser's first for lower-is-better.
    let (sw, sl) = (
        (w * nw as f64).round().max(0.0) as u64,
        (l * nl as f64).round().max(0.0) as u64,
    );
    let events = t.count.then_some(match better {
        Better::Lower => (sl, nl as f64, sw, nw as f64),
        Better::Higher => (sw, nw as f64, sl, nl as f64),
    });
    if t.count && sw.max(sl) < MIN_EVENTS {
        // Too few events on either side to tell a ratio (0 against 0 included): no
        // evidence either way.
        return (
            if ratio.is_nan() { 1.0 } else { ratio },
            PointOutcome::Inconclusive,
            events,
        );
    }
    if ties(w, l, t.tie) {
        return (
            if ratio.is_nan() { 1.0 } else { ratio },
            PointOutcome::Tie,
            events,
        );
    }
    if let Some((a, ea, b, eb)) = events {
        let (lo, hi) = poisson_ratio_interval(a, ea, b, eb);
        let outcome = if lo <= 1.0 && hi >= 1.0 {
            PointOutcome::Inconclusive
        } else if ratio > 1.0 {
            PointOutcome::Win
        } else if ratio >= 1.0 - slack {
            PointOutcome::Tie
        } else {
            PointOutcome::Loss
        };
        return (ratio, outcome, events);
    }
    let outcome = if ratio > 1.0 {
        PointOutcome::Win
    } else if slack > 0.0 && ratio >= 1.0 - slack {
        // Within a non-inferiority claim's slack: not a loss.
        PointOutcome::Tie
    } else {
        PointOutcome::Loss
    };
    (ratio, outcome, None)
}

/// How a comparison's points came out.
#[derive(Clone, Copy)]
struct Tally {
    n: usize,
    wins: usize,
    tied: usize,
    lost: usize,
    unsure: usize,
}

impl Tally {
    fn of(pts: &[Compared]) -> Tally {
        let count = |o: PointOutcome| pts.iter().filter(|p| p.outcome == o).count();
        Tally {
            n: pts.len(),
            wins: count(PointOutcome::Win),
            tied: count(PointOutcome::Tie),
            lost: count(PointOutcome::Loss),
            unsure: count(PointOutcome::Inconclusive),
        }
    }

    /// The comparison's outcome; `slack` > 0 for a non-inferiority claim.
    fn outcome(&self, slack: f64) -> Outcome {
        let Tally {
            n,
            wins,
            tied,
            lost,
            unsure,
        } = *self;
        if n == 0 {
            Outcome::NoData
        } else if lost > 0 {
            Outcome::Fails
        } else if slack > 0.0 {
            // A non-inferiority claim ("at most 10 % worse"): no point beyond the slack.
            if unsure > 0 {
                Outcome::Inconclusive
            } else {
                Outcome::Holds
            }
        } else if wins == n {
            Outcome::Holds
        } else if tied == n {
            Outcome::Tie
        } else if wins == 0 {
            Outcome::Inconclusive
        } else {
            Outcome::Partly
        }
    }
}

/// Folds a two-way comparison's points into an outcome and its detail.
fn conclude(
    t: &Trend,
    head: String,
    slack: f64,
    pts: &[Compared],
    paper_pts: Option<(f64, f64, String)>,
) -> Folded {
    let outcome = Tally::of(pts).outcome(slack);
    // (Counted points too small to tell a ratio stay out of the mean: 0 against 0 is no
    // ratio of 1.)
    let finite: Vec<f64> = pts
        .iter()
        .filter(|p| !(t.count && p.outcome == PointOutcome::Inconclusive))
        .map(|p| p.ratio)
        .filter(|r| r.is_finite() && *r > 0.0)
        .collect();
    let ours = (!finite.is_empty()).then(|| geo_mean(&finite));
    let mut d = head;
    describe_points(&mut d, t, slack, pts, &finite, ours);
    // The paper's magnitude: per point (published values at both ends, our mean over the
    // same points) or a headline ratio.
    let mut mag = None;
    let mut paper = None;
    let mut ours_vs = None;
    let versus = match (paper_pts, &t.paper) {
        (Some((p, o, src)), _) => Some((p, o, src)),
        (None, Some((p, src))) => ours.map(|o| (*p, o, src.clone())),
        _ => None,
    };
    // Counted events: the pooled ratio's 95 % interval (all points' events together).
    // (No events at all: no interval to speak of.)
    let pooled = t.count.then(|| {
        let (mut a, mut ea, mut b, mut eb) = (0u64, 0.0, 0u64, 0.0);
        for (pa, pea, pb, peb) in pts.iter().filter_map(|p| p.events) {
            (a, ea, b, eb) = (a + pa, ea + pea, b + pb, eb + peb);
        }
        (a + b > 0).then(|| poisson_ratio_interval(a, ea, b, eb))
    });
    let pooled = pooled.flatten();
    if let Some((p, o, src)) = versus {
        let mut m = magnitude(o, p, t.magnitude, t.tie);
        if let Some((lo, hi)) = pooled {
            let _ = write!(
                d,
                "; pooled ratio's 95 % interval {}×–{}×",
                fmt_num(lo),
                fmt_num(hi)
            );
            if m != Magnitude::Matches && (lo..=hi).contains(&p) {
                // Within what our event counts can tell apart from the paper's ratio.
                let _ = write!(d, ", which holds the paper's {}×", fmt_num(p));
                m = Magnitude::Matches;
            }
        }
        let _ = write!(
            d,
            "; paper: {}× ({src}), ours {}× over the same points — {}",
            fmt_num(p),
            fmt_num(o),
            match m {
                Magnitude::Matches => format!("within {} %", fmt_num(t.magnitude * 100.0)),
                Magnitude::Smaller(x) => format!("an effect {}× smaller", fmt_num(x)),
                Magnitude::Larger(x) => format!("an effect {}× larger", fmt_num(x)),
                Magnitude::Contradicts => "the other way".into(),
            }
        );
        paper = Some((p, src));
        ours_vs = Some(o);
        // A claim that fails on our points is judged on them; its magnitude only says
        // when the effect goes the other way.
        if outcome != Outcome::NoData && (outcome != Outcome::Fails || m == Magnitude::Contradicts)
        {
            mag = Some(m);
        }
    }
    (outcome, mag, ours_vs.or(ours), paper, d)
}

/// Appends to `d` what the points say: wins, ties, losses and where, the ratio's
/// geometric mean `ours` over the `finite` ratios, and the counts' intervals.
fn describe_points(
    d: &mut String,
    t: &Trend,
    slack: f64,
    pts: &[Compared],
    finite: &[f64],
    ours: Option<f64>,
) {
    let Tally {
        n,
        wins,
        tied,
        lost,
        unsure,
    } = Tally::of(pts);
    let _ = write!(d, ": {wins} of {n} strict wins");
    if tied > 0 {
        let _ = write!(
            d,
            ", {tied} {}",
            if slack > 0.0 {
                "within the tolerance"
            } else if tied == 1 {
                "tie"
            } else {
                "ties"
            }
        );
    }
    if unsure > 0 {
        let _ = write!(d, ", {unsure} inconclusive");
    }
    if lost > 0 {
        let _ = write!(d, ", {lost} {}", if lost == 1 { "loss" } else { "losses" });
    }
    if t.tie > 0.0 {
        let _ = write!(d, " (ties within ±{} %)", fmt_num(t.tie * 100.0));
    } else {
        d.push_str(" (ties: equal values)");
    }
    if slack > 0.0 {
        let _ = write!(
            d,
            " (a point counts if at most {} % worse)",
            fmt_num(slack * 100.0)
        );
    }
    if let Some(g) = ours {
        let (lo, hi) = finite
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        let _ = write!(
            d,
            "; by {}× (geometric mean of {} {}points; {}×–{}×)",
            fmt_num(g),
            finite.len(),
            if t.count { "conclusive " } else { "" },
            fmt_num(lo),
            fmt_num(hi)
        );
    }
    if t.count {
        let few: Vec<&str> = pts
            .iter()
            .filter(|p| p.events.is_some_and(|(a, _, b, _)| a.max(b) < MIN_EVENTS))
            .map(|p| p.at.as_str())
            .collect();
        let _ = write!(d, "; counts with exact 95 % intervals");
        if !few.is_empty() {
            let _ = write!(
                d,
                "; fewer than {MIN_EVENTS} events on either side (inconclusive) at {}",
                few.join(", ")
            );
        }
    }
    let at = |o: PointOutcome| {
        pts.iter()
            .filter(|p| p.outcome == o)
            .map(|p| p.at.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let held: Vec<&str> = pts
        .iter()
        .filter(|p| {
            p.outcome == PointOutcome::Inconclusive
                && p.events.is_none_or(|(a, _, b, _)| a.max(b) >= MIN_EVENTS)
        })
        .map(|p| p.at.as_str())
        .collect();
    if unsure > 0 && !held.is_empty() {
        let _ = write!(d, "; interval holds 1 at {}", held.join(", "));
    }
    if lost > 0 {
        let _ = write!(d, "; loses at {}", at(PointOutcome::Loss));
    }
}

/// A check with no ratio and no paper: holds when nothing was `off`.
fn checked(ok: bool, detail: String) -> Folded {
    let outcome = if ok { Outcome::Holds } else { Outcome::Fails };
    (outcome, None, None, None, detail)
}

/// A two-way comparison of `winner` against `loser` over `pts`: no data without points.
fn compare(
    t: &Trend,
    winner: &str,
    loser: &str,
    better: Better,
    slack: f64,
    pts: &[Compared],
    paper_pts: Option<(f64, f64, String)>,
) -> Folded {
    if pts.is_empty() {
        let d = format!("no point has both {winner} and {loser}");
        return (Outcome::NoData, None, None, None, d);
    }
    let word = match better {
        Better::Lower => "lower",
        Better::Higher => "higher",
    };
    conclude(
        t,
        format!("{winner} {word} than {loser}"),
        slack,
        pts,
        paper_pts,
    )
}

/// The verdicts of every trend of the matrix on `r`.
pub fn verdicts(r: &Results) -> Vec<Verdict> {
    r.matrix.trends.iter().map(|t| verdict(r, t)).collect()
}

fn verdict(r: &Results, t: &Trend) -> Verdict {
    let m = &r.matrix;
    let mut table = None;
    let (outcome, magnitude, ours, paper, mut detail) = match &t.kind {
        TrendKind::Wins {
            axis,
            winner,
            loser,
            better,
            slack,
        } => {
            let mut pts = Vec::new();
            let (mut ours_on_paper, mut theirs) = (Vec::new(), Vec::new());
            let mut sources: Vec<String> = Vec::new();
            let mut excluded = Vec::new();
            for p in points(m, &[axis], &t.at) {
                if let Some(x) = &t.exclude_if {
                    let above = |side: &toml::Value| {
                        mean_at(r, &with(&p, axis, side), x)
                            .0
                            .is_some_and(|v| v > 0.0)
                    };
                    if above(winner) || above(loser) {
                        excluded.push(label(&p));
                        continue;
                    }
                }
                let (w, nw, _) = mean_at(r, &with(&p, axis, winner), &t.metric);
                let (l, nl, _) = mean_at(r, &with(&p, axis, loser), &t.metric);
                let (Some(w), Some(l)) = (w, l) else { continue };
                let (ratio, outcome, events) = classify(t, *better, *slack, w, nw, l, nl);
                let pw = published_at(m, &with(&p, axis, winner), &t.metric);
                let pl = published_at(m, &with(&p, axis, loser), &t.metric);
                let oriented = |w: f64, l: f64| match better {
                    Better::Lower => l / w,
                    Better::Higher => w / l,
                };
                let mut extra = PointExtra::default();
                if let Some(e) = &t.expected {
                    let ew = mean_at(r, &with(&p, axis, winner), e).0;
                    let el = mean_at(r, &with(&p, axis, loser), e).0;
                    extra.analytic = ew.zip(el).map(|(w, l)| oriented(w, l));
                }
                if let Some(b) = &t.bound {
                    extra.bound = mean_at(r, &with(&p, axis, loser), b).0;
                }
                if let (Some(pw), Some(pl)) = (pw, pl) {
                    let pr = oriented(pw, pl);
                    extra.paper = Some(pr);
                    // (A counted point too small to tell a ratio is no measurement to set beside
                    // the paper's: the magnitude uses the conclusive points only.)
                    let conclusive = outcome != PointOutcome::Inconclusive || !t.count;
                    if conclusive && pr.is_finite() && pr > 0.0 && ratio.is_finite() && ratio > 0.0
                    {
                        theirs.push(pr);
                        ours_on_paper.push(ratio);
                        let at = with(&p, axis, winner);
                        for e in m.published.iter().filter(|e| {
                            e.metric == t.metric
                                && e.at.len() == at.len()
                                && e.at.iter().all(|kv| at.contains(kv))
                        }) {
                            // "AP, Table 5 (1000 P/E, 1-bit ECC, AP)" → "AP, Table 5".
                            let src = e.source.split(" (").next().unwrap_or(&e.source);
                            if !sources.iter().any(|s| s == src) {
                                sources.push(src.to_string());
                            }
                        }
                    }
                }
                pts.push(Compared {
                    at: label(&p),
                    ratio,
                    outcome,
                    events,
                    extra,
                });
            }
            let paper_pts = (!theirs.is_empty()).then(|| {
                (
                    geo_mean(&theirs),
                    geo_mean(&ours_on_paper),
                    format!("{}, {} points", sources.join("; "), theirs.len()),
                )
            });
            let (w, l) = (show(winner), show(loser));
            let mut folded = compare(t, &w, &l, *better, *slack, &pts, paper_pts);
            if !excluded.is_empty() {
                let _ = write!(
                    folded.4,
                    "; left out, {} above 0: {}",
                    t.exclude_if.as_deref().unwrap_or_default(),
                    excluded.join(", ")
                );
            }
            if t.count {
                let (tab, above) = point_table(&w, &l, *better, &pts);
                table = Some(tab);
                if !above.is_empty() {
                    let _ = write!(
                        folded.4,
                        "; the paper's ratio exceeds the bound at {} of {} points ({})",
                        above.len(),
                        pts.iter().filter(|p| p.extra.paper.is_some()).count(),
                        above.join(", ")
                    );
                }
            }
            folded
        }
        TrendKind::Beats { than, better } => {
            let mut pts = Vec::new();
            for p in points(m, &[], &t.at) {
                let (w, nw, _) = mean_at(r, &p, &t.metric);
                let (l, nl, _) = mean_at(r, &p, than);
                let (Some(w), Some(l)) = (w, l) else { continue };
                let (ratio, outcome, events) = classify(t, *better, 0.0, w, nw, l, nl);
                pts.push(Compared {
                    at: label(&p),
                    ratio,
                    outcome,
                    events,
                    extra: PointExtra::default(),
                });
            }
            compare(t, &t.metric, than, *better, 0.0, &pts, None)
        }
        TrendKind::Monotone { axis, direction } => monotone(r, t, axis, *direction),
        TrendKind::Matches { tolerance } => matches(r, t, *tolerance),
        TrendKind::AtMost { max } => at_most(r, t, max),
        TrendKind::Consistent {
            reference,
            failures,
            trials,
        } => consistent(r, t, reference, failures, trials),
    };
    if let Some(why) = &t.by_construction {
        let _ = write!(detail, "; by construction: {why}");
    }
    Verdict {
        claim: t.claim.clone(),
        outcome,
        magnitude,
        by_construction: t.by_construction.clone(),
        ours,
        paper,
        detail,
        table,
    }
}

/// A count comparison's per-point table (events on each side, our ratio with its 95 %
/// interval, the analytic ratio and bound where the trend names them, the paper's ratio,
/// the point's outcome), and the points where the paper's ratio exceeds the bound.
fn point_table(
    winner: &str,
    loser: &str,
    better: Better,
    pts: &[Compared],
) -> (String, Vec<String>) {
    let (num, den) = match better {
        Better::Lower => (loser, winner),
        Better::Higher => (winner, loser),
    };
    let opt = |x: Option<f64>| x.map_or("–".to_string(), fmt_num);
    let mut s = format!(
        "| point | {num} events | {den} events | ours ({num} / {den}) | 95 % interval | analytic | bound | paper | point's verdict |\n|---|---:|---:|---:|---|---:|---:|---:|---|\n"
    );
    let mut above = Vec::new();
    for p in pts {
        let (a, b, interval) = match p.events {
            Some((a, ea, b, eb)) => {
                let (lo, hi) = poisson_ratio_interval(a, ea, b, eb);
                (
                    a.to_string(),
                    b.to_string(),
                    format!("{}–{}", fmt_num(lo), fmt_num(hi)),
                )
            }
            None => ("–".into(), "–".into(), "–".into()),
        };
        let e = p.extra;
        let over = matches!((e.paper, e.bound), (Some(x), Some(b)) if b > 0.0 && x > b);
        if over {
            above.push(p.at.clone());
        }
        let _ = writeln!(
            s,
            "| {} | {a} | {b} | {} | {interval} | {} | {} | {}{} | {} |",
            p.at,
            fmt_num(p.ratio),
            opt(e.analytic),
            opt(e.bound),
            opt(e.paper),
            if over { " (above the bound)" } else { "" },
            match p.outcome {
                PointOutcome::Win => "win",
                PointOutcome::Tie => "tie",
                PointOutcome::Loss => "loss",
                PointOutcome::Inconclusive => "inconclusive",
            }
        );
    }
    (s, above)
}

mod kinds;
use kinds::{at_most, consistent, matches, monotone};
#[cfg(test)]
mod tests;

//! The verdict vocabulary's tests: ties, intervals, magnitudes, outcomes.

use super::*;
use crate::claims::TrendKind;

#[test]
fn magnitudes_are_judged_on_the_effect() {
    assert_eq!(magnitude(1.45, 1.5, 0.25, 0.005), Magnitude::Matches);
    // +1.6 % against +50 %: an effect 31× smaller.
    match magnitude(1.016, 1.5, 0.25, 0.005) {
        Magnitude::Smaller(x) => assert!((x - 31.25).abs() < 0.01),
        m => panic!("{m:?}"),
    }
    assert!(matches!(
        magnitude(40.0, 14.4, 0.25, 0.005),
        Magnitude::Larger(_)
    ));
    assert_eq!(magnitude(0.8, 1.5, 0.25, 0.005), Magnitude::Contradicts);
    // A paper ratio below 1 (the loser better) is judged the same way, inverted.
    assert_eq!(magnitude(0.7, 0.66, 0.25, 0.005), Magnitude::Matches);
}

#[test]
fn ties_are_relative_and_include_zero_against_zero() {
    assert!(ties(0.0, 0.0, 0.0));
    assert!(ties(1.030, 1.028, 0.005));
    assert!(!ties(1.03, 1.02, 0.005));
    assert!(!ties(3.0, 2.0, 0.0));
}

fn trend(count: bool) -> Trend {
    Trend {
        claim: "A beats B".into(),
        metric: "m".into(),
        at: Vec::new(),
        kind: TrendKind::Beats {
            than: "n".into(),
            better: Better::Lower,
        },
        tie: if count { 0.0 } else { 0.005 },
        count,
        by_construction: None,
        paper: None,
        magnitude: 0.25,
        expected: None,
        bound: None,
        exclude_if: None,
    }
}

fn point(t: &Trend, w: f64, l: f64) -> Compared {
    let (ratio, outcome, events) = classify(t, Better::Lower, 0.0, w, 1, l, 1);
    Compared {
        at: format!("{w} vs {l}"),
        ratio,
        outcome,
        events,
        extra: PointExtra::default(),
    }
}

fn outcome_of(t: &Trend, pts: &[Compared]) -> Outcome {
    conclude(t, String::new(), 0.0, pts, None).0
}

#[test]
fn a_tie_is_not_a_win() {
    let t = trend(false);
    let pts = [
        point(&t, 1.0, 2.0),
        point(&t, 0.0, 0.0),
        point(&t, 1.0, 1.003),
    ];
    assert_eq!(outcome_of(&t, &pts), Outcome::Partly);
    let pts = [point(&t, 0.0, 0.0), point(&t, 5.0, 5.0)];
    assert_eq!(outcome_of(&t, &pts), Outcome::Tie);
    let pts = [point(&t, 1.0, 2.0), point(&t, 3.0, 2.0)];
    assert_eq!(outcome_of(&t, &pts), Outcome::Fails);
    let pts = [point(&t, 1.0, 2.0)];
    assert_eq!(outcome_of(&t, &pts), Outcome::Holds);
}

#[test]
fn one_event_against_none_decides_nothing() {
    let t = trend(true);
    let pts = [point(&t, 0.0, 1.0), point(&t, 2.0, 3.0)];
    assert_eq!(outcome_of(&t, &pts), Outcome::Inconclusive);
    let pts = [point(&t, 2.0, 38.0)];
    assert_eq!(outcome_of(&t, &pts), Outcome::Holds);
}

#[test]
fn a_paper_ratio_inside_the_counts_interval_matches() {
    let mut t = trend(true);
    t.paper = Some((12.45, "Table 4".into()));
    let pts = [point(&t, 2.0, 38.0)];
    let (outcome, mag, ours, ..) = conclude(&t, String::new(), 0.0, &pts, None);
    assert_eq!((outcome, mag), (Outcome::Holds, Some(Magnitude::Matches)));
    assert!((ours.unwrap() - 19.0).abs() < 1e-9);
    t.paper = Some((500.0, "made up".into()));
    let (_, mag, ..) = conclude(&t, String::new(), 0.0, &pts, None);
    assert!(matches!(mag, Some(Magnitude::Smaller(_))));
}

#[test]
fn counts_under_thirty_on_both_sides_are_inconclusive() {
    let t = trend(true);
    // 0 against 0 is no evidence for a count, not a tie.
    assert_eq!(point(&t, 0.0, 0.0).outcome, PointOutcome::Inconclusive);
    // 29 against 0 would exclude 1, but rests on too few events.
    assert_eq!(point(&t, 0.0, 29.0).outcome, PointOutcome::Inconclusive);
    assert_eq!(point(&t, 0.0, 30.0).outcome, PointOutcome::Win);
    // The claimed winner's side counts as well: 40 against 5 is a loss.
    assert_eq!(point(&t, 40.0, 5.0).outcome, PointOutcome::Loss);
    let pts = [point(&t, 0.0, 0.0), point(&t, 2.0, 38.0)];
    assert_eq!(outcome_of(&t, &pts), Outcome::Partly);
    let (_, _, _, _, d) = conclude(&t, String::new(), 0.0, &pts, None);
    assert!(d.contains("fewer than 30 events"), "{d}");
    assert!(!d.contains("interval holds 1"), "{d}");
}

#[test]
fn the_point_table_flags_a_paper_ratio_above_the_bound() {
    let t = trend(true);
    let mut a = point(&t, 10.0, 80.0);
    a.extra = PointExtra {
        analytic: Some(7.5),
        bound: Some(16.0),
        paper: Some(60.0),
    };
    let mut b = point(&t, 0.0, 0.0);
    b.extra.paper = Some(4.0);
    let (table, above) = point_table("AP", "BL", Better::Lower, &[a, b]);
    assert_eq!(above, vec!["10 vs 80".to_string()]);
    assert!(table.contains("| 10 vs 80 | 80 | 10 | 8 |"), "{table}");
    assert!(table.contains("60 (above the bound) | win |"), "{table}");
    assert!(table.contains("| 0 vs 0 | 0 | 0 |"), "{table}");
    assert!(table.contains("| – | – | 4 | inconclusive |"), "{table}");
}

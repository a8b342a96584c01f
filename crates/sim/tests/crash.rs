//! Power cuts at every operation: the durability contract holds for every cut point and
//! mode, with both recovery procedures, and with a second cut after power-on.

use ftl::RecoveryKind;
use nand::CutMode;
use sim::crash::{run_case, run_plan, CaseId, CrashConfig, Outcome, Plan};

fn report(name: &str, s: &sim::crash::Summary) {
    eprintln!(
        "{name}: {} cases over {} workload ops: {} passed, {} past the end, {} failed",
        s.cases,
        s.workload_ops,
        s.passed,
        s.not_reached,
        s.failures.len()
    );
    for (id, m) in s.failures.iter().take(10) {
        eprintln!("  replay {id}: {m}");
    }
}

#[test]
fn every_cut_point_and_mode_roll_forward() {
    let cfg = CrashConfig::small(1);
    let s = run_plan(&cfg, Plan::Linear, &CutMode::ALL, &mut |_, _| {}).unwrap();
    report("linear roll-forward", &s);
    assert!(s.failures.is_empty(), "first failure: {:?}", s.failures[0]);
    assert!(s.passed > 2000, "{s:?}");
}

#[test]
fn every_cut_point_and_mode_full_scan() {
    let mut cfg = CrashConfig::small(2);
    cfg.ftl.recovery = RecoveryKind::FullScan;
    let s = run_plan(&cfg, Plan::Linear, &CutMode::ALL, &mut |_, _| {}).unwrap();
    report("linear full scan", &s);
    assert!(s.failures.is_empty(), "first failure: {:?}", s.failures[0]);
    assert!(s.passed > 2000, "{s:?}");
}

#[test]
fn nested_cuts_after_power_on() {
    let cfg = CrashConfig::small(3);
    let s = run_plan(&cfg, Plan::Nested { samples: 600 }, &CutMode::ALL, &mut |_, _| {}).unwrap();
    report("nested", &s);
    assert!(s.failures.is_empty(), "first failure: {:?}", s.failures[0]);
    assert!(s.passed > 500, "{s:?}");
}

#[test]
fn replay_ids_round_trip_and_replay() {
    let id: CaseId = "7:120:paired-page/33:torn-random".parse().unwrap();
    assert_eq!(id.to_string(), "7:120:paired-page/33:torn-random");
    assert!("7:x:before".parse::<CaseId>().is_err());
    assert!("7:1:sideways".parse::<CaseId>().is_err());
    let cfg = CrashConfig::small(7);
    let a = run_case(&cfg, id);
    let b = run_case(&cfg, id);
    assert_eq!(a, b);
    assert_eq!(a, Outcome::Passed);
}

//! The `flares-alg2` comparison can fail. Its claim — FLARES's measured errors flag a chip
//! 16× worse than its model (critical-zone windows) where the model alone sees none — is
//! checked here on the same cell, with Alg. 2's zone rule intact and broken (the `ftl`
//! crate's `sabotage` feature: the window's measured errors ignored). The intact rule
//! passes the comparison the reproduction makes (30 events or more, none for the model);
//! the broken one does not.

use ftl::flares::FlaresConfig;
use ftl::policy::EccKind;
use ftl::sabotage::Sabotage;
use sim::ExperimentConfig as Config;

/// The `flares-alg2` cell at a chip 16× its model, shortened: `mix` and `bug` set FLARES's
/// estimator. Returns the critical-zone windows and the uncorrectable reads.
fn zone_cr(mix: f64, bug: Sabotage) -> (u64, u64) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("experiments/flares-base.toml")).unwrap();
    let mut t: toml::Table = toml::from_str(&text).unwrap();
    let set = |t: &mut toml::Table, path: &[&str], v: toml::Value| {
        let mut cur = t;
        for k in &path[..path.len() - 1] {
            cur = cur
                .entry(k.to_string())
                .or_insert_with(|| toml::Value::Table(Default::default()))
                .as_table_mut()
                .unwrap();
        }
        cur.insert(path[path.len() - 1].to_string(), v);
    };
    set(&mut t, &["aging", "pe"], 3000.into());
    set(&mut t, &["errors", "scale"], 16.0.into());
    set(&mut t, &["workload", "requests"], 12000.into());
    set(&mut t, &["workload", "read_pct"], 100.into());
    set(&mut t, &["workload", "random_pct"], 100.into());
    set(&mut t, &["workload", "size"], 4096.into());
    set(&mut t, &["workload", "footprint"], 0.002.into());
    set(&mut t, &["precondition", "max_overwrite"], 0.0.into());
    let mut cfg = Config::from_toml_str(&toml::to_string(&t).unwrap(), "flares-base.toml")
        .expect("the flares-alg2 cell parses");
    cfg.ftl.page.ecc = EccKind::Flares(FlaresConfig {
        wsize: 100,
        mix,
        req_ret_hours: 8760.0,
        sabotage: bug,
        ..FlaresConfig::default()
    });
    let mut e = cfg.build(&root).expect("builds");
    let r = e.run(&mut |_| {}).expect("runs");
    (r.ecc.policy.zone_cr, r.ecc.uncorrectable_normal)
}

#[test]
fn a_broken_zone_rule_fails_the_alg2_comparison() {
    let (flares, flares_lost) = zone_cr(0.5, Sabotage::None);
    let (model, _) = zone_cr(0.0, Sabotage::None);
    let (broken, _) = zone_cr(0.5, Sabotage::ZoneIgnoresMeasuredErrors);
    // The intact rule: the comparison `flares-alg2` makes holds (FLARES higher, with the
    // 30 events a counted point needs), and no read is lost.
    assert!(flares >= 30 && model == 0, "FLARES {flares}, model {model}");
    assert_eq!(flares_lost, 0);
    // The broken rule sees what the model sees: no event, so the same comparison is at
    // best inconclusive and never a win.
    assert!(
        broken < 30 && broken <= model,
        "broken {broken}, model {model}"
    );
}

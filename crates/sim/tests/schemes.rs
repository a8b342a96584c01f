//! Each paper's scheme from an experiment file, run end to end: the real-time pacings
//! (WAO-GC, RTGC) and the block-level baselines (GFTL, RFTL), DFTL and SPFTL, the combined
//! profile with every technique, and the paged map's recovery in digest mode.

mod common;

use common::{config, experiment_text, run, FILE};
use sim::ExperimentConfig;
use std::path::Path;

/// The real-time pacings from a file: `wear_leveling = false` turns wear levelling off
/// (`true` is the defaults, a table the given settings), WAO-GC's refusals name their key,
/// and a WAO-GC run reports its bound, partial steps and no overrun.
#[test]
fn real_time_pacings_from_a_file() {
    let wl = |v: &str| {
        let t = experiment_text(
            "wl",
            1,
            &FILE.replace("ecc_t = 8", &format!("ecc_t = 8\nwear_leveling = {v}")),
        )
        .replace("PACING", "\"foreground\"")
        .replace("PLACEMENT", "\"striped\"");
        ExperimentConfig::from_toml_str(&t, "wl.toml").map(|c| c.ftl.page.wear_leveling)
    };
    assert_eq!(wl("false").unwrap(), None);
    assert_eq!(
        wl("true").unwrap().map(|w| (w.spread, w.check_every)),
        Some((64, 32))
    );
    assert_eq!(
        wl("{ spread = 9, check_every = 3 }")
            .unwrap()
            .map(|w| w.spread),
        Some(9)
    );
    let e = wl("7").unwrap_err().to_string();
    assert!(
        e.contains("wear_leveling: expected false, true or a table"),
        "{e}"
    );

    // WAO-GC with the defaults it cannot keep its bound with (static wear levelling):
    // refused, by key.
    let Err(e) = config("\"wao-gc\"", "\"striped\"").build(Path::new(".")) else {
        panic!("WAO-GC with static wear levelling was accepted");
    };
    let e = e.to_string();
    assert!(e.contains("wear_leveling off"), "{e}");

    let text = experiment_text("wao", 3, FILE)
        .replace("PACING", "\"wao-gc\"")
        .replace("PLACEMENT", "\"striped\"")
        .replace("over_provisioning = 0.25", "over_provisioning = 0.65\nrecovery = \"full-scan\"\nwear_leveling = false\nflush_buffer = false")
        .replace("[load]", "[load]\npage_requests = true");
    let r = run(ExperimentConfig::from_toml_str(&text, "wao.toml").unwrap());
    assert!(
        r.realtime.write_bound_us > 0.0 && r.realtime.u_lambda > 0,
        "{:?}",
        r.realtime
    );
    assert!(
        r.nand.counter("partial_steps") > 0 && r.nand.counter("gc_victims") > 0,
        "{:?}",
        r.nand
    );
    assert_eq!(r.nand.counter("rt_overruns"), 0);
    assert!(r.nand.counter("max_victim_valid") <= r.realtime.u_lambda);
    let worst = r.latency["write"].max_us;
    assert!(
        worst <= r.realtime.write_bound_us,
        "{worst} > {}",
        r.realtime.write_bound_us
    );
}

/// GFTL and RFTL (WAO-GC's Table I) run from an experiment file on the paper's chip with
/// real bytes: every read verified, every request within the scheme's reported bound, no
/// overrun; and a multi-level chip is refused naming the scheme.
#[test]
fn gftl_and_rftl_run_from_a_file() {
    for scheme in ["gftl", "rftl"] {
        let text = format!(
            r#"name = "rt"
seed = 5
[chip]
preset = "k9k8g08u0b"
[chip.geometry]
blocks_per_plane = 48
[chip.reliability]
wear_fail_rate = 0.0
wear_fail_growth = 0.0
factory_bad_rate = 0.0
[controller]
mode = "bytes"
[errors]
model = "none"
[ftl]
scheme = "{scheme}"
[precondition]
max_overwrite = 0.5
[workload]
requests = 20000
read_pct = 30
size = 2048
align = 2048
[load]
mode = "closed"
queue_depth = 1
page_requests = true
"#
        );
        let cfg = ExperimentConfig::from_toml_str(&text, "rt.toml").unwrap();
        let r = run(cfg);
        assert!(r.host.verified_reads > 1000, "{scheme}: {:?}", r.host);
        assert_eq!(r.host.mismatches, 0, "{scheme}");
        assert_eq!(r.nand.counter("rt_overruns"), 0, "{scheme}");
        assert!(r.nand.counter("gc_victims") > 10, "{scheme}: {:?}", r.nand);
        for kind in ["read", "write"] {
            let bound = if kind == "read" {
                r.realtime.read_bound_us
            } else {
                r.realtime.write_bound_us
            };
            assert!(
                r.latency[kind].max_us <= bound,
                "{scheme} {kind}: {} > {bound}",
                r.latency[kind].max_us
            );
        }
        let mlc = text.replace("k9k8g08u0b", "tiny-mlc");
        let e = match ExperimentConfig::from_toml_str(&mlc, "rt.toml")
            .unwrap()
            .build(Path::new("."))
        {
            Ok(_) => panic!("{scheme} on an MLC chip was accepted"),
            Err(e) => e.to_string(),
        };
        assert!(
            e.contains(&format!("scheme = \"{scheme}\"")) && e.contains("one-bit-per-cell"),
            "{e}"
        );
    }
}

/// DFTL_por and SPFTL from an experiment file: real bytes verified on every read through
/// a preconditioned (aged) volume, metadata accounted by kind, SPFTL's subpage programs
/// and SP-block erases; SPFTL on a chip without subpages is refused by name.
#[test]
fn dftl_and_spftl_run_from_a_file() {
    let mut bytes = Vec::new();
    for scheme in ["dftl-por", "spftl", "spftl-log"] {
        // (SPFTL_log's logging partitions take blocks: a smaller volume keeps the spare.)
        let op = if scheme == "spftl-log" { 0.32 } else { 0.25 };
        let text = format!(
            r#"name = "dftl"
seed = 3
[chip]
preset = "tiny-mlc-sp"
[chip.reliability]
wear_fail_rate = 0.0
wear_fail_growth = 0.0
[controller]
mode = "bytes"
[errors]
model = "none"
[ftl]
scheme = "{scheme}"
[ftl.{scheme}]
overprovision = {op}
[precondition]
max_overwrite = 0.5
[workload]
requests = 6000
read_pct = 30
size = [4096, 8192]
align = 4096
[load]
mode = "closed"
queue_depth = 1
"#
        );
        let cfg = ExperimentConfig::from_toml_str(&text, "dftl.toml").unwrap();
        let r = run(cfg);
        assert!(r.host.verified_reads > 1000, "{scheme}: {:?}", r.host);
        assert_eq!(r.host.mismatches, 0, "{scheme}");
        assert!(r.nand.counter("gc_victims") > 10, "{scheme}: {:?}", r.nand);
        let m = r.meta;
        assert!(
            m.pmt_bytes > 0 && m.bit_bytes > 0 && m.gxt_bytes > 0,
            "{scheme}: {m:?}"
        );
        assert_eq!(
            m.bytes,
            m.pmt_bytes + m.bit_bytes + m.gxt_bytes + m.pmt_gc_bytes + m.bit_gc_bytes,
            "{scheme}: {m:?}"
        );
        assert!(m.share > 0.0 && m.share < 1.0 && m.cpmt_hit_rate < 1.0);
        if scheme != "dftl-por" {
            assert!(m.sp_erases > 0 && m.nwi < (m.fp_erases + m.sp_erases) as f64);
        } else {
            assert_eq!(m.sp_erases, 0);
            assert_eq!(m.nwi, m.fp_erases as f64);
        }
        bytes.push(m.bytes);
        let plain = text.replace("tiny-mlc-sp", "tiny-mlc");
        if scheme != "dftl-por" {
            let e = match ExperimentConfig::from_toml_str(&plain, "dftl.toml")
                .unwrap()
                .build(Path::new("."))
            {
                Ok(_) => panic!("{scheme} on a chip without subpages was accepted"),
                Err(e) => e.to_string(),
            };
            assert!(e.contains("subpages_per_page = 1"), "{e}");
        }
    }
    assert!(
        bytes[1] < bytes[0] && bytes[2] < bytes[0],
        "SPFTL or SPFTL_log wrote no less metadata: {bytes:?}"
    );
}

/// `[ftl] scheme = "combined"`: the combined profile from a file (AP, FLARES, WAO-GC and
/// roll-forward recovery on the page kernel), `[ftl.combined]` keys replacing the
/// profile's; every technique shows in the report: pads and lapses (AP), per-page strength
/// (FLARES), partial steps within the bound (WAO-GC), checkpoints written at flushes
/// (roll-forward's young blocks).
#[test]
fn the_combined_profile_runs_from_a_file_with_every_technique() {
    let rest = r#"
[errors]
model = "none"
[ftl]
scheme = "combined"
[ftl.combined]
over_provisioning = 0.7
[hints]
critical = [[0, 1048576]]
[precondition]
max_overwrite = 1.0
[workload]
requests = 6000
read_pct = 30
size = 4096
flush_every = 8
metadata = { pct = 10, bytes = 1048576 }
"#;
    let cfg =
        ExperimentConfig::from_toml_str(&experiment_text("combined", 5, rest), "c.toml").unwrap();
    let ftl::SchemeConfig::Combined(p) = cfg.ftl.scheme_config() else {
        panic!("not the combined scheme")
    };
    assert_eq!(
        p.over_provisioning, 0.7,
        "the file's key replaces the profile's"
    );
    assert!(!p.auto_over_provisioning, "a value given is taken as given");
    let without = rest.replace("over_provisioning = 0.7", "");
    let cfg2 = ExperimentConfig::from_toml_str(&experiment_text("combined", 5, &without), "c.toml")
        .unwrap();
    let ftl::SchemeConfig::Combined(p2) = cfg2.ftl.scheme_config() else {
        panic!("not the combined scheme")
    };
    assert!(
        p2.auto_over_provisioning && p2.over_provisioning == 0.3,
        "{p2:?}"
    );
    assert_eq!(p.placement, ftl::policy::PlacementKind::MsbCritical);
    assert_eq!(p.gc_pacing, ftl::policy::PacingKind::WaoGc);
    let r = run(cfg);
    assert!(r.setup.ftl.starts_with("combined:"), "{}", r.setup.ftl);
    assert!(r.nand.counter("placement_pads") > 0, "{:?}", r.nand);
    assert!(r.nand.counter("partial_steps") > 0, "{:?}", r.nand);
    assert_eq!(r.nand.counter("rt_overruns"), 0, "{:?}", r.nand);
    assert!(r.nand.counter("checkpoints") > 1, "{:?}", r.nand);
    assert!(r.realtime.write_bound_us > 0.0, "{:?}", r.realtime);
    // An unknown key is named with its section.
    let bad = rest.replace(
        "over_provisioning = 0.7",
        "over_provisioning = 0.7\nspeed = 9",
    );
    let e = ExperimentConfig::from_toml_str(&experiment_text("combined", 5, &bad), "c.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("ftl.combined") && e.contains("speed"), "{e}");
}

/// A regression: AP's placement with a large critical region filled densely (every
/// critical page in an MSB page, the LSB pages beside it padded) deadlocked foreground GC
/// — collecting such a victim costs a whole block (a pad per copy) and frees nothing, and
/// greedy chose it again and again until the die ran out of space. A copy now takes the
/// LSB slot (a counted lapse) when padding every copy left would not fit the die.
#[test]
fn dense_critical_data_does_not_run_ap_out_of_space() {
    // A third of the volume critical (2 MiB of the tiny chip's 8), filled in order.
    let text = r#"
name = "ap-dense"
seed = 1
[chip]
preset = "tiny-mlc"
[chip.geometry]
blocks_per_plane = 64
[controller]
mode = "digest"
sector_size = 512
[errors]
model = "none"
[ftl]
scheme = "page"
[ftl.page]
over_provisioning = 0.3
ecc_t = 8
placement = "msb-critical"
copy_order = "asymmetric"
recovery = "full-scan"
[hints]
critical = [[0, 2097152]]
[precondition]
fill = true
max_overwrite = 1.0
[workload]
requests = 200
read_pct = 50
size = 4096
align = 4096
metadata = { pct = 5, bytes = 2097152 }
"#;
    let r = run(ExperimentConfig::from_toml_str(text, "ap-dense.toml").unwrap());
    assert!(
        r.nand.counter("gc_victims") > 0 && r.nand.counter("placement_pads") > 0,
        "{:?}",
        r.nand
    );
}

/// A digest-mode simulation keeps real bytes only in the blocks the scheme reads back as
/// data: a demand-paged map's partitions, its logs' (`map_log`) included. A regression:
/// the log partition was left out, and the mount after the run found logs with no bytes.
#[test]
fn a_paged_map_with_logs_runs_and_recovers_in_digest_mode() {
    let text = r#"
name = "paged-log"
seed = 3
[chip]
preset = "tiny-mlc-sp"
[chip.geometry]
blocks_per_plane = 64
[chip.reliability]
wear_fail_rate = 0.0
wear_fail_growth = 0.0
[controller]
mode = "digest"
sector_size = 512
[errors]
model = "none"
[ftl]
scheme = "page"
[ftl.page]
over_provisioning = 0.3
map_cache_pages = 2
map_tp_entries = 64
map_log = true
[precondition]
enabled = false
[workload]
requests = 3000
read_pct = 20
random_pct = 100
size = 4096
align = 4096
flush_every = 8
[recovery]
after_run = true
"#;
    let r = run(ExperimentConfig::from_toml_str(text, "paged-log.toml").unwrap());
    assert!(
        r.meta.pmt_bytes > 0 && r.meta.log_merges > 0,
        "{:?}",
        r.meta
    );
    let rec = r.recovery.expect("recovered after the run");
    assert!(rec.mapped_pages > 0, "{rec:?}");
}

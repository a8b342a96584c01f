//! FLARES in the simulator: per-page strengths, re-encoded relocations and page refresh
//! over simulated months, with real bytes verified on every read; and its bad input.

use sim::{ExperimentConfig, Progress};
use std::path::Path;

/// FLARES's chip cut to 32 MiB, real bytes, one 4 KiB codeword per page, eq. 5's RBER,
/// aged to 1000 P/E; a month of required retention and 5-day idle periods so refresh runs.
fn text(ecc: &str, extra: &str) -> String {
    format!(
        r#"
name = "flares-test"
seed = 7
[chip]
preset = "flares-mlc-3x"
[chip.geometry]
blocks_per_plane = 64
[chip.reliability]
wear_fail_rate = 0.0
wear_fail_growth = 0.0
[controller]
mode = "bytes"
sector_size = 4096
[errors]
model = "flares"
[aging]
pe = 1000
[ftl]
scheme = "page"
[ftl.page]
over_provisioning = 0.2
ecc_t = 50
ecc = {ecc}
[precondition]
fill = true
max_overwrite = 0.5
[workload]
requests = 3000
read_pct = 70
random_pct = 100
size = [4096, 16384]
idle = {{ every = 100, seconds = 432000.0 }}
[load]
mode = "closed"
queue_depth = 1
background = "idle"
{extra}
"#
    )
}

fn run(t: &str) -> sim::Report {
    ExperimentConfig::from_toml_str(t, "flares-test.toml")
        .unwrap()
        .build(Path::new("."))
        .unwrap()
        .run(&mut |_: Progress| {})
        .unwrap()
}

#[test]
fn flares_reencodes_and_refreshes_real_bytes_without_losing_any() {
    let r = run(&text("{ flares = { req_ret_hours = 720.0 } }", ""));
    eprint!("{}", r.summary());
    assert!(r.host.verified_reads > 1000, "{:?}", r.host);
    assert_eq!(r.host.mismatches, 0);
    assert_eq!(r.host.read_errors, 0, "{:?}", r.host);
    let p = &r.ecc.policy;
    // A month of retention at 1000 P/E needs t ≈ 6: far below the fixed 50 of metadata.
    assert!(
        r.ecc.mean_t > 3.0 && r.ecc.mean_t < 20.0,
        "{}",
        r.ecc.mean_t
    );
    assert!(p.refresh_writes > 100, "{p:?}");
    assert!(p.scrub_alarms > 0 && p.scrubbed_pages > 0, "{p:?}");
    assert!(p.refresh_wa > 1.0);
    assert_eq!(
        r.nand.programs.get("refresh").copied(),
        Some(p.refresh_writes)
    );
    // The same workload at a fixed t = 50: no refresh, every program at 50, and slower
    // reads (every decode at t = 50).
    let f = run(&text("\"fixed\"", ""));
    assert_eq!(f.host.mismatches, 0);
    assert_eq!(f.ecc.mean_t, 50.0);
    assert_eq!(f.ecc.policy.refresh_writes, 0);
    let lat = |r: &sim::Report| r.latency["read"].mean_us;
    assert!(lat(&r) < lat(&f), "{} vs {}", lat(&r), lat(&f));
}

#[test]
fn flares_runs_are_deterministic() {
    let t = text("{ flares = {} }", "");
    let (a, b) = (run(&t), run(&t));
    assert_eq!(a.metrics(), b.metrics());
}

#[test]
fn flares_bad_constants_name_the_key() {
    for (ecc, key) in [
        ("{ flares = { mix = 1.5 } }", "flares.mix"),
        ("{ flares = { wsize = 0 } }", "flares.wsize"),
        ("{ flares = { target_uber = 1.0 } }", "flares.target_uber"),
        (
            "{ flares = { req_ret_hours = 0.0 } }",
            "flares.req_ret_hours",
        ),
        ("{ flares = { t_min = 3, t_max = 100 } }", "flares.t_max"),
        ("{ flares = { bogus = 1 } }", "bogus"),
    ] {
        let err = ExperimentConfig::from_toml_str(&text(ecc, ""), "flares-test.toml")
            .and_then(|c| c.build(Path::new(".")).map(drop))
            .expect_err(ecc)
            .to_string();
        assert!(err.contains(key), "{ecc}: {err}");
    }
    // A t range the spare area cannot hold: 128 spare bytes take t = 8 at 4 KiB, not 50.
    let small = text("{ flares = {} }", "")
        .replace(
            "blocks_per_plane = 64",
            "blocks_per_plane = 64\nspare_size = 128",
        )
        .replace("ecc_t = 50", "ecc_t = 8");
    let err = ExperimentConfig::from_toml_str(&small, "flares-test.toml")
        .and_then(|c| c.build(Path::new(".")).map(drop))
        .expect_err("t = 50 cannot fit")
        .to_string();
    assert!(err.contains("flares t range 3..=50"), "{err}");
}

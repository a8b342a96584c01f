//! End-to-end simulator tests: determinism, greedy GC against the analytic write
//! amplification, closed- and open-loop load, die parallelism, bad input.

use sim::{ExperimentConfig, Progress};
use std::path::Path;

fn experiment(text: &str) -> sim::Experiment {
    ExperimentConfig::from_toml_str(text, "test.toml")
        .unwrap()
        .build(Path::new("."))
        .unwrap()
}

fn run(text: &str) -> sim::Report {
    experiment(text).run(&mut |_: Progress| {}).unwrap()
}

const SMALL: &str = r#"
name = "small"
seed = 5
[chip]
preset = "tiny-mlc"
[chip.geometry]
blocks_per_plane = 64
[controller]
mode = "bytes"
[errors]
model = "constant"
rber = 2e-5
msb_ratio = 0.5
[ftl.page]
over_provisioning = 0.2
ecc_t = 8
[precondition]
max_overwrite = 1.0
[workload]
requests = 4000
read_pct = 40
trim_pct = 5
flush_every = 500
size = [4096, 8192]
[load]
mode = "closed"
queue_depth = 4
"#;

#[test]
fn same_seed_gives_an_identical_json_report() {
    let a = run(SMALL).to_json();
    let b = run(SMALL).to_json();
    assert_eq!(a, b);
    let c = run(&SMALL.replace("seed = 5", "seed = 6")).to_json();
    assert_ne!(a, c);
    let r = run(SMALL);
    assert_eq!(r.host.mismatches, 0);
    assert!(r.host.verified_reads > 1000);
    assert!(r.ecc.corrected_bits > 0);
    assert!(r.nand.counter("gc_victims") > 0);
    assert!(r.latency["write"].p99_us >= r.latency["write"].p50_us);
    // The CSV holds the same numbers, each with its unit.
    let csv = r.to_csv();
    assert!(csv.starts_with("key,value,unit\n"), "{csv}");
    assert!(csv.contains(&format!("waf,{},ratio\n", r.waf)), "{csv}");
    assert!(
        csv.contains(&format!(
            "nand.meta_bytes,{},bytes\n",
            r.nand.counter("meta_bytes")
        )),
        "{csv}"
    );
    assert!(csv.contains("latency.write.p99_us,"), "{csv}");
    for (key, unit) in [
        ("latency.write.p99_us", "us"),
        ("iops", "requests/s"),
        ("sim_seconds", "s"),
        ("host.pages_written", "count"),
        ("ecc.corrected_bits", "bits"),
        ("ecc.max_codeword_errors", "bits"),
        ("host.read_errors", "count"),
        ("setup.device.timing.erase_ns", "ns"),
        ("setup.device.geometry.page_size", "bytes"),
        ("throughput_mib_s", "MiB/s"),
    ] {
        assert_eq!(sim::metrics::unit_of(key), unit, "{key}");
    }
    // Every line has three fields; words are `text`.
    assert!(csv.contains("setup.device.cell,\"mlc\",text\n"), "{csv}");
    // The chip as numbers, for scripts; settings, not metrics.
    let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    let d = &v["setup"]["device"];
    assert_eq!(d["cell"], "mlc");
    assert_eq!(d["geometry"]["blocks_per_plane"], 64);
    assert_eq!(d["geometry"]["page_size"], 4096);
    assert!(d["timing"]["program_msb_ns"].as_u64().unwrap() > 0);
    assert!(!r.metrics().keys().any(|k| k.starts_with("setup.device")));
    // Flushes wrote checkpoints: whole 4 KiB pages of metadata, the meta programs that are
    // not padding.
    assert!(r.nand.counter("checkpoints") > 0);
    let meta_pages = r.nand.programs["meta"] - r.nand.counter("pad_pages");
    assert!(meta_pages > 0);
    assert_eq!(r.nand.counter("meta_bytes"), meta_pages * 4096);
}

/// Lambert W, principal branch, for x in [−1/e, 0) (Halley's iteration).
fn lambert_w0(x: f64) -> f64 {
    let mut w = if x < -0.3 {
        -1.0 + (2.0 * (1.0 + std::f64::consts::E * x)).sqrt()
    } else {
        x
    };
    for _ in 0..100 {
        let e = w.exp();
        let f = w * e - x;
        let d = e * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0);
        let step = f / d;
        w -= step;
        if step.abs() < 1e-15 {
            break;
        }
    }
    w
}

/// Write amplification of greedy GC under uniform random single-page writes, in the limit of
/// large blocks: Xiang & Kurkoski, "An improved analytic expression for write amplification
/// in NAND flash" (arXiv:1110.4245, ICNC 2012): A = α / (α + W0(−α·e^(−α))), α = T/U
/// (physical over logical pages). For α = 1.3 it gives 2.36 (their simulation: 2.35).
fn analytic_waf(alpha: f64) -> f64 {
    alpha / (alpha + lambert_w0(-alpha * (-alpha).exp()))
}

#[test]
fn lambert_and_formula_match_the_published_example() {
    assert!(
        (analytic_waf(1.3) - 2.36).abs() < 0.01,
        "{}",
        analytic_waf(1.3)
    );
}

#[test]
fn greedy_gc_matches_the_analytic_write_amplification() {
    for op in [0.15f64, 0.25, 0.35] {
        let text = format!(
            r#"
seed = 11
[chip]
preset = "flares-mlc-3x"
[chip.geometry]
blocks_per_plane = 512
pages_per_block = 128
[controller]
mode = "digest"
[errors]
model = "none"
[ftl.page]
over_provisioning = {op}
gc_threshold = 2
ecc_t = 8
[precondition]
max_overwrite = 4.0
tolerance = 0.005
[workload]
requests = 150000
read_pct = 0
size = 4096
[load]
mode = "closed"
queue_depth = 1
"#
        );
        let mut exp = experiment(&text);
        let r = exp.run(&mut |_| {}).unwrap();
        let ppb = 128.0;
        let logical = r.logical_bytes as f64 / 4096.0;
        // Free blocks held back by the GC threshold, the open host frontier and the
        // collected victim waiting for its erase (MLC: until the copies are sealed) hold
        // no data: they are not spare space GC can exploit. The checkpoint region is not
        // data space either.
        let region = exp
            .config
            .ftl
            .page
            .region_blocks_per_die_effective(&exp.chip) as f64;
        let physical = (512.0 - region) * ppb - 4.0 * ppb;
        let alpha = physical / logical;
        let want = analytic_waf(alpha);
        let err = (r.waf - want).abs() / want;
        eprintln!(
            "OP {op}: WAF {:.3}, analytic {want:.3} (α = {alpha:.3}, {:+.1} %)",
            r.waf,
            (r.waf - want) / want * 100.0
        );
        assert!(
            err < 0.05,
            "OP {op}: WAF {:.3} vs analytic {:.3} (α = {alpha:.3}, {:.1} %)",
            r.waf,
            want,
            err * 100.0
        );
    }
}

#[test]
fn independent_channels_serve_reads_in_parallel() {
    let base = r#"
seed = 3
[chip]
preset = "tiny-slc"
[chip.geometry]
channels = CH
blocks_per_plane = BLOCKS
[controller]
mode = "digest"
[errors]
model = "none"
[ftl.page]
ecc_t = 4
over_provisioning = 0.3
[precondition]
max_overwrite = 0.0
[workload]
requests = 5000
read_pct = 100
size = 2048
align = 2048
[load]
mode = "closed"
queue_depth = 16
"#;
    let one = run(&base.replace("CH", "1").replace("BLOCKS", "128"));
    let four = run(&base.replace("CH", "4").replace("BLOCKS", "32"));
    assert!(
        four.iops > 3.5 * one.iops,
        "1 channel {:.0} IOPS, 4 channels {:.0}",
        one.iops,
        four.iops
    );
}

#[test]
fn open_loop_latency_grows_with_the_arrival_rate() {
    let base = r#"
seed = 3
[chip]
preset = "tiny-slc"
[chip.geometry]
blocks_per_plane = 128
[controller]
mode = "digest"
[errors]
model = "none"
[ftl.page]
ecc_t = 4
[precondition]
enabled = false
[workload]
requests = 3000
read_pct = 50
size = 2048
align = 2048
interarrival_us = GAP
arrival = "poisson"
[load]
mode = "open"
"#;
    let slow = run(&base.replace("GAP", "2000"));
    let fast = run(&base.replace("GAP", "150"));
    assert!(fast.latency["write"].mean_us > slow.latency["write"].mean_us * 1.2);
    // Idle device: a one-page read costs tR + transfer (25 µs + 2112 B × 25 ns) plus the
    // decode of four 512-byte sectors and the record at t = 4.
    let l = controller::EccLatency::default();
    let ecc = 4.0 * l.decode(512, 4, 0).0 as f64 + l.decode(24, 4, 0).0 as f64;
    let want = 25.0 + 2112.0 * 0.025 + ecc / 1000.0;
    let r = slow.latency["read"].p50_us;
    assert!(
        (r - want).abs() / want < 0.01,
        "read p50 {r} µs, expected {want:.1}"
    );
}

#[test]
fn bad_experiment_files_are_named() {
    let e = ExperimentConfig::from_toml_str(
        "[chip]\npreset = \"tiny-slc\"\n[workload]\nreqests = 5\n",
        "x.toml",
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("x.toml:4") && e.to_string().contains("reqests"),
        "{e}"
    );
    let cfg = ExperimentConfig::from_toml_str(
        "[chip]\npreset = \"tiny-slc\"\n[chip.geometry]\npage_size = 7\n[workload]\nrequests = 5\n",
        "x.toml",
    )
    .unwrap();
    let e = cfg.build(Path::new(".")).unwrap_err();
    assert!(e.to_string().contains("chip.geometry.page_size"), "{e}");
    let cfg = ExperimentConfig::from_toml_str("[chip]\npreset = \"tiny-slc\"\n[ftl.page]\necc_t = 4\nover_provisioning = 0.4\n[workload]\nrequests = 5\nread_pct = 120\n", "x.toml").unwrap();
    let e = cfg.build(Path::new(".")).unwrap_err();
    assert!(e.to_string().contains("workload.read_pct"), "{e}");
    let cfg = ExperimentConfig::from_toml_str(
        "[chip]\npreset = \"tiny-slc\"\n[ftl.page]\necc_t = 4\nover_provisioning = 0.4\n",
        "x.toml",
    )
    .unwrap();
    assert!(cfg
        .build(Path::new("."))
        .unwrap_err()
        .to_string()
        .contains("missing [workload] or [trace]"));
}

#[test]
fn example_experiment_files_build() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let text = std::fs::read_to_string(&path).unwrap();
            let cfg = ExperimentConfig::from_toml_str(&text, &path.display().to_string()).unwrap();
            cfg.build(&dir)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            n += 1;
        }
    }
    assert!(n >= 3);
    // The spelled-out default equals the built-in one.
    let text = std::fs::read_to_string(dir.join("default.toml")).unwrap();
    let mut file = ExperimentConfig::from_toml_str(&text, "default.toml").unwrap();
    file.report = Default::default();
    assert_eq!(file, ExperimentConfig::builtin_default());
}

#[test]
fn hardware_crc32c_equals_the_software_one() {
    for len in [0usize, 1, 7, 8, 15, 16, 100, 4096, 8192 + 5] {
        let data = nand::pattern::bytes(len, len as u64);
        assert_eq!(
            crc32c::crc32c(&data),
            controller::crc32c_software(&data),
            "len {len}"
        );
    }
    assert_eq!(controller::crc32c_software(b"123456789"), 0xE306_9283);
}

/// Every FTL file under `examples/` (a subfolder's `[ftl]` files, for `nandlab volume` and
/// `nandlab serve --ftl`) parses with known keys and names its scheme.
#[test]
fn example_ftl_files_parse() {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct FtlFile {
        ftl: sim::config::FtlSection,
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut n = 0;
    for sub in ["ftl", "realtime", "spftl"] {
        for entry in std::fs::read_dir(dir.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let text = std::fs::read_to_string(&path).unwrap();
                assert!(
                    text.contains("scheme = "),
                    "{} names no scheme",
                    path.display()
                );
                let f: FtlFile =
                    toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let _ = f.ftl.scheme_config();
                n += 1;
            }
        }
    }
    assert!(n >= 9, "{n} FTL files");
}

//! The command-line program, end to end.

mod common;

use common::{file, nandlab, stderr, stdout};
use std::process::Command;

#[test]
fn chip_info_default_and_presets() {
    let o = nandlab(&["chip", "info"]);
    assert!(o.status.success());
    let s = stdout(&o);
    assert!(
        s.contains("micron-29f64g") && s.contains("8 GiB") && s.contains("WL0=(0,2)"),
        "{s}"
    );
    let o = nandlab(&["chip", "presets"]);
    for p in nand::PRESET_NAMES {
        assert!(stdout(&o).contains(p));
    }
    let o = nandlab(&["chip", "info", "--preset", "nope"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("unknown preset"));
}

#[test]
fn chip_file_errors_name_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.toml");
    std::fs::write(&f, "preset = \"tiny-slc\"\n[geometry]\npage_sise = 4096\n").unwrap();
    let o = nandlab(&["chip", "info", "--config", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("bad.toml") && e.contains("geometry.page_sise"),
        "{e}"
    );
    assert!(!e.contains("backtrace"), "{e}");
}

#[test]
fn chip_format_and_inspect_an_image() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("c.img");
    let o = nandlab(&[
        "chip",
        "format",
        "--preset",
        "tiny-mlc",
        "--image",
        img.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = nandlab(&["chip", "info", "--image", img.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("erase count mean 0.00"));
    std::fs::write(&img, b"garbage").unwrap();
    let o = nandlab(&["chip", "info", "--image", img.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("truncated"), "{}", stderr(&o));
}

#[test]
fn run_is_deterministic_and_writes_reports() {
    let p = |x: &std::path::Path| x.to_str().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("exp.toml");
    std::fs::write(
        &cfg,
        "seed = 4\n[chip]\npreset = \"tiny-mlc\"\n[chip.geometry]\nblocks_per_plane = 64\n[ftl]\nscheme = \"page\"\n[ftl.page]\nover_provisioning = 0.2\n[precondition]\nmax_overwrite = 0.5\n[workload]\nrequests = 3000\nread_pct = 50\n",
    )
    .unwrap();
    let (a, b, c) = (
        dir.path().join("a.json"),
        dir.path().join("b.json"),
        dir.path().join("a.csv"),
    );
    for out in [&a, &b] {
        let o = nandlab(&[
            "run",
            "--config",
            &p(&cfg),
            "--json",
            &p(out),
            "--csv",
            &p(&c),
            "--quiet",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            stdout(&o).contains("WAF") && stdout(&o).contains("p99.9"),
            "{}",
            stdout(&o)
        );
    }
    let ja = std::fs::read_to_string(&a).unwrap();
    assert_eq!(ja, std::fs::read_to_string(&b).unwrap());
    let v: serde_json::Value = serde_json::from_str(&ja).unwrap();
    assert_eq!(v["host"]["requests"], 3000);
    assert_eq!(v["host"]["mismatches"], 0);
    assert!(std::fs::read_to_string(&c)
        .unwrap()
        .starts_with("key,value,unit\n"));
    // A different seed gives a different run.
    let o = nandlab(&[
        "run",
        "--config",
        &p(&cfg),
        "--seed",
        "5",
        "--json",
        &p(&b),
        "--quiet",
    ]);
    assert!(o.status.success());
    assert_ne!(ja, std::fs::read_to_string(&b).unwrap());
}

#[test]
fn run_rejects_bad_input_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("bad.toml");
    std::fs::write(
        &cfg,
        "[chip]\npreset = \"tiny-mlc\"\n[workload]\nrequest = 5\n",
    )
    .unwrap();
    let o = nandlab(&["run", "--config", cfg.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("bad.toml:4") && stderr(&o).contains("request"),
        "{}",
        stderr(&o)
    );
    let trace = dir.path().join("t.trace");
    std::fs::write(&trace, "0 0 8 8 0\n100 0 8 eight 1\n").unwrap();
    let o = nandlab(&[
        "run",
        "--trace",
        trace.to_str().unwrap(),
        "--format",
        "mqsim",
        "--quiet",
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("t.trace:2: field size"),
        "{}",
        stderr(&o)
    );
    let o = nandlab(&[
        "run",
        "--trace",
        trace.to_str().unwrap(),
        "--format",
        "nope",
    ]);
    assert!(
        stderr(&o).contains("expected mqsim (or its alias ssdsim), msr, blkparse or spc"),
        "{}",
        stderr(&o)
    );
}

/// The crash harness refuses runs that would test nothing: a workload of flushes only, a
/// replay whose cut lies past the workload, a plan most of whose cuts never fire.
#[test]
fn crashtest_refuses_vacuous_runs() {
    for every in ["0", "1"] {
        let o = nandlab(&["crashtest", "--flush-every", every, "--samples", "5"]);
        assert!(!o.status.success(), "--flush-every {every}");
        assert!(stderr(&o).contains("--flush-every"), "{}", stderr(&o));
    }
    let o = nandlab(&["crashtest", "--replay", "1:999999:before"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("nothing was cut"), "{}", stderr(&o));
    let o = nandlab(&["crashtest", "--replay", "1:300:before/999999:after"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("never fired"), "{}", stderr(&o));
    let o = nandlab(&["crashtest", "--replay", "1:3:before"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// The crash harness's FTL and workload knobs are reachable from the command line, and bad
/// values name their flag.
#[test]
fn crashtest_reaches_the_library_configurations() {
    let o = nandlab(&[
        "crashtest",
        "--preset",
        "tiny-mlc-4die",
        "--samples",
        "20",
        "--seed",
        "5",
        "--victim",
        "ap-weighted",
        "--wear-leveling",
        "4:2",
        "--checkpoint-interval",
        "2",
        "--gc-threshold",
        "3",
        "--trim-pct",
        "10",
        "--span",
        "0.5",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("tiny-mlc-4die") && stdout(&o).contains("20 passed"),
        "{}",
        stdout(&o)
    );
    for (flag, value) in [
        ("--victim", "lazy"),
        ("--wear-leveling", "3"),
        ("--gc-threshold", "1"),
        ("--trim-pct", "101"),
        ("--span", "0"),
        ("--dies-per-channel", "0"),
    ] {
        let o = nandlab(&["crashtest", "--samples", "1", flag, value]);
        assert!(!o.status.success(), "{flag} {value}");
        let e = stderr(&o);
        assert!(
            e.contains(flag) || e.contains(&flag[2..].replace('-', "_")),
            "{flag}: {e}"
        );
    }
}

/// Every file under `dir` except the per-cell results, by relative path.
fn tree(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            if p.is_dir() {
                if rel != "cells" {
                    stack.push(p);
                }
            } else {
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn reproduce_lists_runs_and_is_independent_of_jobs() {
    let o = nandlab(&["reproduce", "--list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    for n in ["waf", "ap-table1", "recovery"] {
        assert!(stdout(&o).contains(n), "{}", stdout(&o));
    }
    let o = nandlab(&["reproduce", "nope"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("no shipped comparison named \"nope\""));
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    for (dir, jobs) in [(&a, "1"), (&b, "4")] {
        let o = nandlab(&[
            "reproduce",
            "ap-table1",
            "--quick",
            "--jobs",
            jobs,
            "--out",
            dir.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stdout(&o).contains("holds"), "{}", stdout(&o));
    }
    // results.json records its provenance (the commit, the version and this very command
    // line, `--jobs` included): present, then left out of the comparison.
    let without_provenance = |mut t: Vec<(String, Vec<u8>)>, jobs: &str| {
        for (n, bytes) in t.iter_mut().filter(|(n, _)| n == "results.json") {
            let mut v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
            let p = v.as_object_mut().unwrap().remove("provenance");
            let p = p.unwrap_or_else(|| panic!("{n} without provenance"));
            assert!(p["commit"].as_str().is_some_and(|c| !c.is_empty()), "{p}");
            assert_eq!(p["version"], env!("CARGO_PKG_VERSION"), "{p}");
            let cmd = p["command"].as_str().unwrap();
            assert!(
                cmd.contains("reproduce ap-table1 --quick --jobs") && cmd.contains(jobs),
                "{p}"
            );
            *bytes = serde_json::to_vec(&v).unwrap();
        }
        t
    };
    let (ta, tb) = (
        without_provenance(tree(&a), "1"),
        without_provenance(tree(&b), "4"),
    );
    let names: Vec<&str> = ta.iter().map(|(n, _)| n.as_str()).collect();
    for want in [
        "report.md",
        "results.json",
        "results.csv",
        "plots/ap-table1-lsb-analytic.png",
        "plots/ap-table1-lsb-analytic.svg",
    ] {
        assert!(names.contains(&want), "{names:?}");
    }
    assert_eq!(ta, tb, "--jobs 1 and --jobs 4 wrote different files");
    let report =
        String::from_utf8(ta.iter().find(|(n, _)| n == "report.md").unwrap().1.clone()).unwrap();
    assert!(report.contains("Reproduce: `nandlab reproduce ap-table1 --quick`"));
    assert!(report.contains("![AP Table 1"), "{report}");
}

#[test]
fn sweep_errors_name_the_matrix_and_slurm_jobs_are_written() {
    let d = tempfile::tempdir().unwrap();
    let m = file(
        &d,
        "m.toml",
        "name = \"m\"\ntitle = \"t\"\nkind = \"recovery\"\n[[axis]]\nname = \"capacity_mib\"\nvalues = [64]\n",
    );
    let o = nandlab(&["sweep", m.to_str().unwrap()]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("m.toml") && e.contains("capacity_mib = 64"),
        "{e}"
    );
    std::fs::write(
        &m,
        "name = \"m\"\ntitle = \"t\"\nkind = \"recovery\"\n[[axis]]\nname = \"capacity_mib\"\nvalues = [128, 256]\n[[plot]]\nmetric = \"speedup\"\nx = \"capacity_mib\"\ny_label = \"×\"\n",
    )
    .unwrap();
    let job = d.path().join("job");
    let o = nandlab(&[
        "sweep",
        m.to_str().unwrap(),
        "--slurm",
        job.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("2 cells in 2 task(s)"),
        "{}",
        stdout(&o)
    );
    let script = std::fs::read_to_string(job.join("job.sh")).unwrap();
    assert!(script.contains("--array=0-1"), "{script}");
    let o = nandlab(&["sweep", "collect", job.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("2 of 2 cells have no complete result"),
        "{}",
        stderr(&o)
    );
    for t in ["0", "1"] {
        let o = nandlab(&["sweep", "task", job.to_str().unwrap(), "--task", t]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let o = nandlab(&["sweep", "collect", job.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(job.join("report.md").exists() && job.join("plots/m-speedup.png").exists());
}

#[test]
fn runs_that_do_nothing_and_flags_that_do_not_apply_are_errors() {
    let d = tempfile::tempdir().unwrap();
    let bad = file(
        &d,
        "bad.toml",
        "name = \"x\"\nseed = 1\n[chip]\npreset = \"tiny-mlc\"\n[ftl]\nscheme = \"page\"\n[ftl.page]\nover_provisioning = 0.01\n\
         [workload]\nrequests = 10\nread_pct = 150\nsize = 0\nalign = 0\n[load]\nqueue_depth = 0\n",
    );
    let hostname = file(&d, "data.bin", "some bytes");
    let cases: &[(&[&str], &[&str])] = &[
        (&["run", "--requests", "0"], &["workload.requests: 0"]),
        (&["crashtest", "--samples", "0"], &["--samples 0"]),
        (
            &["crashtest", "--mode", "linear", "--samples", "5"],
            &["--samples applies to --mode random and nested"],
        ),
        (&["ecc", "bench", "--seconds", "0"], &["--seconds 0"]),
        (
            &["ecc", "uber", "--bits", "0", "--rber", "1e-4", "-t", "8"],
            &["--bits 0"],
        ),
        (
            &[
                "ecc", "uber", "--bits", "100", "--rber", "1e-4", "-t", "8", "--sigma", "1e300",
            ],
            &["--sigma 1e300"],
        ),
        (
            &["ecc", "uber", "--bits", "100", "--rber", "-1", "-t", "8"],
            &["--rber -1 is not a probability"],
        ),
        (&["run", "--format", "mqsim"], &["--trace"]),
        (&["run", "--wrap"], &["--trace"]),
        (
            &["ecc", "uber", "--ap-table1", "--bits", "100"],
            &["cannot be used with"],
        ),
        (
            &["serve", "--image", "x.img", "--blocks-per-plane", "10"],
            &["--create"],
        ),
        (
            &[
                "ecc",
                "encode",
                "-t",
                "4",
                "--sector",
                "0",
                hostname.to_str().unwrap(),
                "--parity",
                "p",
            ],
            &["--sector 0"],
        ),
        (
            &["run", "--requests", "10", "--json", "/no/such/dir/r.json"],
            &["directory /no/such/dir does not exist"],
        ),
        // Every independent problem of an experiment file at once.
        (
            &["run", "--config", bad.to_str().unwrap()],
            &[
                "workload.read_pct: 150",
                "workload.size: 0",
                "workload.align: 0",
                "load.queue_depth: 0",
                "over_provisioning = 0.01",
            ],
        ),
    ];
    for (args, wants) in cases {
        let o = nandlab(args);
        let e = stderr(&o);
        assert!(!o.status.success(), "{args:?} succeeded: {}", stdout(&o));
        assert!(!e.contains("panicked"), "{args:?}: {e}");
        for w in *wants {
            assert!(e.contains(w), "{args:?}: wanted {w:?} in {e}");
        }
    }
}

#[test]
fn output_cut_short_by_the_reader_is_not_a_panic() {
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_nandlab"))
        .args(["ecc", "flares"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Hang up before the first line (what `| head -c 0` does): its first print hits a
    // closed pipe, deterministically.
    drop(child.stdout.take());
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    child.wait().unwrap();
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn config_errors_say_where_and_what_is_valid() {
    let d = tempfile::tempdir().unwrap();
    let chip = file(
        &d,
        "c.toml",
        "preset = \"tiny-mlc\"\n[geometry]\nblocks_per_plan = 3\npage_size = \"big\"\n",
    );
    let o = nandlab(&["chip", "info", "--config", chip.to_str().unwrap()]);
    let e = stderr(&o);
    assert!(!o.status.success());
    assert!(
        e.contains("c.toml:3: geometry.blocks_per_plan: unknown key (valid here:")
            && e.contains("blocks_per_plane"),
        "{e}"
    );
    // Every key problem at once.
    assert!(
        e.contains("geometry.page_size: expected integer, found string"),
        "{e}"
    );
    let exp = file(
        &d,
        "e.toml",
        "name = \"x\"\nseed = 1\n[chip]\npreset = \"tiny-mlc\"\n[workload]\nrequests = 10\nsize = -4096\n",
    );
    let o = nandlab(&["run", "--config", exp.to_str().unwrap()]);
    let e = stderr(&o);
    assert!(
        e.contains("e.toml:7:") && e.contains("workload.size: expected a request size"),
        "{e}"
    );
    assert!(!e.contains("untagged enum"), "{e}");
    let o = nandlab(&[
        "volume",
        "format",
        "--image",
        d.path().join("v.img").to_str().unwrap(),
        "--blocks-per-plane",
        "0",
    ]);
    let e = stderr(&o);
    assert!(e.contains("--blocks-per-plane 0"), "{e}");
    assert!(
        !d.path().join("v.img").exists(),
        "a failed format left an image"
    );
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        2,
        "a temporary file was left"
    );
}

#[test]
fn reports_say_what_produced_them() {
    let d = tempfile::tempdir().unwrap();
    let exp = d.path().join("open.toml");
    // Arrivals every microsecond: far more than one die serves.
    std::fs::write(
        &exp,
        "name = \"open\"\nseed = 2\n[chip]\npreset = \"tiny-mlc\"\n[controller]\nmode = \"digest\"\n\
         [errors]\nmodel = \"none\"\n[ftl]\nscheme = \"page\"\n[ftl.page]\nover_provisioning = 0.25\n[precondition]\nenabled = false\n\
         [workload]\nrequests = 3000\nread_pct = 50\nsize = 2048\nalign = 512\ninterarrival_us = 1.0\n\
         [load]\nmode = \"open\"\n",
    )
    .unwrap();
    let json = d.path().join("r.json");
    let o = nandlab(&[
        "run",
        "--config",
        exp.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    for want in [
        "chip        tiny-mlc MLC, 1 channel × 1 die",
        "ftl         page: ",
        "victim greedy",
        "workload    synthetic: ",
        "load        open loop",
        "the device is saturated",
        "NAND page programs per host page written (",
        "per host byte)",
    ] {
        assert!(s.contains(want), "{want:?} not in\n{s}");
    }
    // Latencies in a unit that suits each value.
    assert!(s.contains(" ms ") || s.contains(" s "), "{s}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(
        v["waf_per_byte"].as_f64().unwrap() > v["waf"].as_f64().unwrap(),
        "2 KiB writes into 4 KiB pages"
    );
    assert!(v["offered_iops"].as_f64().unwrap() > v["iops"].as_f64().unwrap());
    assert_eq!(v["config"]["workload"]["requests"], 3000);
    assert!(v["setup"]["chip"].as_str().unwrap().contains("tiny-mlc"));
}

#[test]
fn summaries_do_not_print_numbers_that_mean_nothing() {
    let d = tempfile::tempdir().unwrap();
    let exp = file(
        &d,
        "reads.toml",
        "name = \"reads\"\nseed = 2\n[chip]\npreset = \"tiny-mlc\"\n[controller]\nmode = \"digest\"\n\
         [errors]\nmodel = \"none\"\n[ftl]\nscheme = \"page\"\n[ftl.page]\nover_provisioning = 0.25\n[precondition]\nenabled = false\n\
         [workload]\nrequests = 500\nread_pct = 100\nsize = 4096\n",
    );
    let o = nandlab(&["run", "--config", exp.to_str().unwrap(), "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(s.contains("WAF         n/a (no host writes)"), "{s}");
    // Nothing was decoded (every read hit an unwritten page): no "at most N in a codeword".
    assert!(!s.contains("in one codeword"), "{s}");
}

/// Formatting over an existing, non-empty image destroys it: `chip format`, `volume format`
/// and `serve --create` refuse without --force (a repeated command line must not wipe the
/// disk), and with --force they format.
#[test]
fn formatting_an_existing_image_needs_force() {
    let d = tempfile::tempdir().unwrap();
    let img = d.path().join("v.img");
    let img = img.to_str().unwrap();
    let small = ["--blocks-per-plane", "64"];
    let mut fmt = vec!["volume", "format", "--image", img];
    fmt.extend_from_slice(&small);
    assert!(nandlab(&fmt).status.success());
    let before = std::fs::read(img).unwrap();
    let cases: [&[&str]; 3] = [
        &[
            "volume",
            "format",
            "--image",
            img,
            "--blocks-per-plane",
            "64",
        ],
        &["chip", "format", "--preset", "tiny-mlc", "--image", img],
        &[
            "serve",
            "--image",
            img,
            "--create",
            "tiny-mlc",
            "--blocks-per-plane",
            "64",
            "--listen",
            "127.0.0.1:1",
        ],
    ];
    for args in cases {
        let o = nandlab(args);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(
            stderr(&o).contains("exists and is not empty") && stderr(&o).contains("--force"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert_eq!(
            std::fs::read(img).unwrap(),
            before,
            "{args:?} touched the image"
        );
    }
    // An empty file is not a volume: no --force needed.
    let empty = d.path().join("e.img");
    std::fs::write(&empty, b"").unwrap();
    let e = empty.to_str().unwrap();
    assert!(
        nandlab(&["chip", "format", "--preset", "tiny-mlc", "--image", e])
            .status
            .success()
    );
    let mut forced = fmt.clone();
    forced.push("--force");
    assert!(nandlab(&forced).status.success());
}

#[test]
fn volume_verify_with_other_flags_than_stress_says_so() {
    let d = tempfile::tempdir().unwrap();
    let img = d.path().join("v.img");
    let img = img.to_str().unwrap();
    assert!(nandlab(&["volume", "format", "--image", img])
        .status
        .success());
    let o = nandlab(&[
        "volume", "stress", "--image", img, "--ops", "300", "--seed", "5",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let flushed = stdout(&o)
        .lines()
        .filter_map(|l| l.strip_prefix("flushed "))
        .next_back()
        .unwrap()
        .trim()
        .to_string();
    // The same flags: fine. Another seed: an error that says what to do.
    let o = nandlab(&[
        "volume",
        "verify",
        "--image",
        img,
        "--ops",
        "300",
        "--seed",
        "5",
        "--flushed",
        &flushed,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = nandlab(&[
        "volume",
        "verify",
        "--image",
        img,
        "--ops",
        "300",
        "--flushed",
        &flushed,
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("same workload flags as the `volume stress`"),
        "{}",
        stderr(&o)
    );
}

/// With no `[ftl] scheme`, `nandlab run` runs the default profile (combined); a file that
/// sets another scheme's section without naming it is refused rather than ignored.
#[test]
fn the_default_profile_runs_unless_a_scheme_is_named() {
    let d = tempfile::tempdir().unwrap();
    let base = "name = \"d\"\nseed = 3\n[chip]\npreset = \"flares-mlc-3x\"\n[chip.geometry]\nblocks_per_plane = 64\n\
                [controller]\nmode = \"digest\"\n[precondition]\nenabled = false\n[workload]\nrequests = 2000\n";
    let plain = d.path().join("plain.toml");
    std::fs::write(&plain, base).unwrap();
    let o = nandlab(&["run", "--config", plain.to_str().unwrap(), "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("ftl         combined: "),
        "{}",
        stdout(&o)
    );
    let page_keys = d.path().join("page.toml");
    std::fs::write(
        &page_keys,
        format!("{base}[ftl.page]\nover_provisioning = 0.2\n"),
    )
    .unwrap();
    let o = nandlab(&["run", "--config", page_keys.to_str().unwrap(), "--quiet"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("page.toml") && e.contains("[ftl.page]") && e.contains("scheme = \"page\""),
        "{e}"
    );
}

/// docs/guide/cli-reference.md is the binary's own help for every subcommand
/// (`nandlab cli-reference`); `NANDLAB_BLESS=1` rewrites it.
#[test]
fn cli_reference_is_the_binarys_help() {
    let o = nandlab(&["cli-reference"]);
    assert!(o.status.success());
    let now = String::from_utf8(o.stdout).unwrap();
    assert!(now.contains("## `nandlab run`") && now.contains("## `nandlab volume format`"));
    assert!(
        !now.contains("## `nandlab cli-reference`"),
        "hidden commands stay out"
    );
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/guide/cli-reference.md");
    if std::env::var_os("NANDLAB_BLESS").is_some() {
        std::fs::write(&path, &now).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == now,
        "docs/guide/cli-reference.md differs from `nandlab cli-reference`: rerun with NANDLAB_BLESS=1"
    );
}

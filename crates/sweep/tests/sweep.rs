//! Matrices end to end: bad input rejected before anything runs, results independent of
//! the thread count, resume, foreign result files, and a Slurm job's tasks collected into
//! the same files as a local run.

use std::path::{Path, PathBuf};
use sweep::report::write_all;
use sweep::run::run_cells;
use sweep::{Matrix, Results, Source, SweepError};

/// A small experiment on the tiny MLC chip: digest mode, no errors, a few thousand writes.
const BASE: &str = r#"
name = "tiny"
seed = 1
[chip]
preset = "tiny-mlc"
[controller]
mode = "digest"
[errors]
model = "none"
[ftl.page]
over_provisioning = 0.25
[precondition]
enabled = false
[workload]
requests = 3000
read_pct = 20
size = 4096
align = 4096
[load]
queue_depth = 2
"#;

const MATRIX: &str = r#"
name = "tiny"
title = "Tiny matrix"
base = "base.toml"
metrics = ["waf", "host.requests"]

[[axis]]
name = "victim"
values = ["greedy", "cost-benefit"]

[[axis]]
name = "op"
values = [0.3, 0.4]

[[axis]]
name = "seed"
values = [1, 2]
average = true

[[published]]
at = { victim = "greedy", op = 0.3 }
metric = "waf"
value = 2.0
source = "made up for the test"

[[published]]
at = { victim = "greedy" }
metric = "waf"
formula = "xiang-kurkoski-greedy"
source = "Xiang & Kurkoski"

[[trend]]
claim = "waf falls with op"
kind = "monotone"
metric = "waf"
axis = "op"
direction = "decreasing"

[[trend]]
claim = "no cell runs more requests than configured"
kind = "at_most"
metric = "host.requests"
max = 3000

[[trend]]
claim = "nothing is ever written twice"
kind = "at_most"
metric = "waf"
max = 1.0

[[trend]]
claim = "a bound met exactly holds"
kind = "at_most"
metric = "host.requests"
than = "host.requests"

[[trend]]
claim = "a bound exceeded fails"
kind = "at_most"
metric = "host.requests"
than = "waf"

[[plot]]
metric = "waf"
x = "op"
series = "victim"
y_label = "write amplification"
"#;

fn setup(matrix: &str) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("base.toml"), BASE).unwrap();
    let m = d.path().join("m.toml");
    std::fs::write(&m, matrix).unwrap();
    (d, m)
}

fn load(matrix: &str) -> Result<Matrix, SweepError> {
    let (_d, m) = setup(matrix);
    Matrix::load(&Source::File(m), false)
}

fn err(matrix: &str) -> String {
    load(matrix).unwrap_err().to_string()
}

fn run_to(m: &Matrix, out: &Path, jobs: usize, resume: bool) -> sweep::run::Summary {
    let s = run_cells(m, &out.join("cells"), None, jobs, resume, &|_| {}).unwrap();
    let r = Results::collect(m, &out.join("cells")).unwrap();
    write_all(&r, out).unwrap();
    s
}

/// Every output file of a run directory (not the per-cell files), by relative path.
fn outputs(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    for name in ["results.json", "results.csv", "report.md"] {
        v.push((name.to_string(), std::fs::read(dir.join(name)).unwrap()));
    }
    let mut plots: Vec<_> = std::fs::read_dir(dir.join("plots"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    plots.sort();
    assert!(!plots.is_empty());
    for p in plots {
        v.push((
            p.file_name().unwrap().to_string_lossy().into_owned(),
            std::fs::read(&p).unwrap(),
        ));
    }
    v
}

#[test]
fn expansion_order_fingerprints_and_published_formula() {
    let m = load(MATRIX).unwrap();
    assert_eq!(m.cells.len(), 8);
    // First axis slowest.
    assert_eq!(m.cells[0].label(), "victim=greedy op=0.3 seed=1");
    assert_eq!(m.cells[1].label(), "victim=greedy op=0.3 seed=2");
    assert_eq!(m.cells[7].label(), "victim=cost-benefit op=0.4 seed=2");
    // The axis value reached the configuration.
    assert_eq!(
        m.cells[7].config["ftl"]["page"]["victim"].as_str(),
        Some("cost-benefit")
    );
    let fps: std::collections::BTreeSet<u64> = m.cells.iter().map(|c| c.fingerprint).collect();
    assert_eq!(fps.len(), 8, "every cell has its own fingerprint");
    // One literal published value, and the formula at each greedy point (op 0.3, 0.4).
    assert_eq!(m.published.len(), 3);
    let xk = sweep::analytic::xiang_kurkoski_greedy(0.3 / 0.7);
    assert!(m.published.iter().any(|p| (p.value - xk).abs() < 1e-12));
    // The same file loads to the same fingerprint; --quick is another matrix.
    assert_eq!(load(MATRIX).unwrap().fingerprint, m.fingerprint);
}

#[test]
fn bad_matrices_are_rejected_by_name_before_running() {
    let cases: &[(&str, &str, &str)] = &[
        // (replace, with, expected in the error)
        (
            "name = \"op\"\nvalues = [0.3, 0.4]",
            "name = \"op\"\nvalues = []",
            "zero cells",
        ),
        (
            "name = \"op\"\nvalues = [0.3, 0.4]",
            "name = \"op\"\nkey = \"ftl.page.over_provisionning\"\nvalues = [0.3, 0.4]",
            "over_provisionning",
        ),
        (
            "name = \"op\"\nvalues = [0.3, 0.4]",
            "name = \"op\"\nvalues = [\"lots\", 0.4]",
            "cell 0 (victim=greedy op=lots seed=1)",
        ),
        (
            "name = \"op\"\nvalues = [0.3, 0.4]",
            "name = \"op\"\nvalues = [0.3, 1.5]",
            "over_provisioning",
        ),
        (
            "metrics = [\"waf\", \"host.requests\"]",
            "metrics = [\"wafer\"]",
            "unknown metric \"wafer\"",
        ),
        (
            "metric = \"waf\"\nmax = 1.0",
            "metric = \"waf\"",
            "kind = \"at_most\" needs max = VALUE",
        ),
        (
            "at = { victim = \"greedy\", op = 0.3 }",
            "at = { victim = \"greedy\", op = 0.9 }",
            "op = 0.9: no such cell",
        ),
        (
            "at = { victim = \"greedy\", op = 0.3 }",
            "at = { colour = \"red\" }",
            "no axis named \"colour\"",
        ),
        (
            "at = { victim = \"greedy\", op = 0.3 }",
            "at = { victim = \"greedy\", op = [0.3, 0.9] }",
            "op = 0.9: no such cell",
        ),
        (
            "axis = \"op\"\ndirection",
            "axis = \"size\"\ndirection",
            "no axis named \"size\"",
        ),
        (
            "kind = \"monotone\"",
            "kind = \"sideways\"",
            "kind = \"sideways\"",
        ),
        ("base = \"base.toml\"", "base = \"nope.toml\"", "nope.toml"),
        (
            "title = \"Tiny matrix\"",
            "title = \"Tiny matrix\"\ncolour = 1",
            "unknown field `colour`",
        ),
        (
            "formula = \"xiang-kurkoski-greedy\"",
            "formula = \"magic\"",
            "unknown formula \"magic\"",
        ),
        // The verdict keys: a tie tolerance out of range, a paper ratio without its
        // source (or not a ratio, or on a kind that has none), an empty reason.
        (
            "direction = \"decreasing\"",
            "direction = \"decreasing\"\ntie = -0.1",
            "tie = -0.1 must be in [0, 1)",
        ),
        (
            "direction = \"decreasing\"",
            "direction = \"decreasing\"\npaper = 1.5",
            "paper = RATIO and source = \"FIGURE\" go together",
        ),
        (
            "direction = \"decreasing\"",
            "direction = \"decreasing\"\npaper = 1.5\nsource = \"Fig. 1\"",
            "applies to kind = \"wins\" or \"beats\"",
        ),
        (
            "direction = \"decreasing\"",
            "direction = \"decreasing\"\nby_construction = \" \"",
            "say why the outcome cannot fail",
        ),
        (
            "direction = \"decreasing\"",
            "direction = \"decreasing\"\nmagnitude = nan",
            "magnitude = NaN must be positive",
        ),
    ];
    for (from, to, want) in cases {
        assert!(MATRIX.contains(from), "test case does not apply: {from}");
        let e = err(&MATRIX.replacen(from, to, 1));
        assert!(e.contains(want), "{from:?} → {to:?}: {e}");
        assert!(e.contains("m.toml"), "the error names the matrix file: {e}");
    }
}

#[test]
fn results_do_not_depend_on_the_thread_count_and_resume_reruns_only_what_is_missing() {
    let (d, path) = setup(MATRIX);
    let m = Matrix::load(&Source::File(path.clone()), false).unwrap();
    let a = d.path().join("a");
    let b = d.path().join("b");
    let s1 = run_to(&m, &a, 1, false);
    assert_eq!((s1.ran, s1.reused, s1.failed), (8, 0, 0));
    run_to(&m, &b, 4, false);
    let (oa, ob) = (outputs(&a), outputs(&b));
    assert_eq!(oa.len(), ob.len());
    for ((na, xa), (nb, xb)) in oa.iter().zip(&ob) {
        assert_eq!(na, nb);
        assert!(xa == xb, "{na} differs between --jobs 1 and --jobs 4");
    }
    let report = String::from_utf8(oa[2].1.clone()).unwrap();
    assert!(
        report.contains("| victim=greedy op=0.3 | waf |"),
        "{report}"
    );
    assert!(report.contains("waf falls with op"), "{report}");
    // A bound that holds everywhere, and one that cannot (GC copies on a written device).
    assert!(
        report.contains(
            "**holds** — no cell runs more requests than configured: 4 of 4 points at most 3000"
        ),
        "{report}"
    );
    assert!(
        report
            .contains("**does NOT hold** — nothing is ever written twice: 0 of 4 points at most 1"),
        "{report}"
    );
    // A bound given by another metric of the cell: reached exactly holds (and is said);
    // exceeded fails, naming the points.
    assert!(
        report
            .contains("**holds** — a bound met exactly holds: 4 of 4 points at most host.requests")
            && report.contains("4 reach it exactly"),
        "{report}"
    );
    assert!(
        report.contains("**does NOT hold** — a bound exceeded fails: 0 of 4 points at most waf")
            && report.contains("; above it at "),
        "{report}"
    );
    // Resume: one result deleted, one truncated (a killed writer); only those two rerun,
    // and the outputs come out the same.
    std::fs::remove_file(a.join("cells/c0003.json")).unwrap();
    let f = a.join("cells/c0005.json");
    let text = std::fs::read(&f).unwrap();
    std::fs::write(&f, &text[..text.len() / 2]).unwrap();
    let s = run_to(&m, &a, 2, true);
    assert_eq!((s.ran, s.reused), (2, 6));
    assert_eq!(outputs(&a), oa);
    // A missing cell is shown as missing, not dropped.
    std::fs::remove_file(a.join("cells/c0000.json")).unwrap();
    let r = Results::collect(&m, &a.join("cells")).unwrap();
    assert_eq!(r.missing().count(), 1);
    let md = sweep::report::markdown(&r, &[]);
    assert!(
        md.contains("cell 0 (victim=greedy op=0.3 seed=1): missing"),
        "{md}"
    );
    assert!(r.to_csv().contains("\n0,greedy,0.3,1,missing,"));
    assert!(r.to_json().contains("\"status\": \"missing\""));
    // The same directory with another matrix's results is refused, with or without resume.
    let other = MATRIX.replacen("name = \"tiny\"", "name = \"other\"", 1);
    std::fs::write(&path, other).unwrap();
    let m2 = Matrix::load(&Source::File(path.clone()), false).unwrap();
    for resume in [false, true] {
        let e = run_cells(&m2, &a.join("cells"), None, 1, resume, &|_| {}).unwrap_err();
        assert!(e.to_string().contains("a result of matrix \"tiny\""), "{e}");
    }
    // The same matrix with a cell's configuration changed: resume refuses the stale file.
    let changed = MATRIX.replacen("values = [0.3, 0.4]", "values = [0.3, 0.35]", 1);
    std::fs::write(&path, changed).unwrap();
    let m3 = Matrix::load(&Source::File(path), false).unwrap();
    let e = run_cells(&m3, &a.join("cells"), None, 1, true, &|_| {}).unwrap_err();
    assert!(e.to_string().contains("the matrix changed since"), "{e}");
}

#[test]
fn slurm_tasks_collect_into_the_same_files_as_a_local_run() {
    let (d, path) = setup(MATRIX);
    let m = Matrix::load(&Source::File(path.clone()), false).unwrap();
    let local = d.path().join("local");
    run_to(&m, &local, 2, false);
    let job = d.path().join("job");
    let plan = sweep::slurm::write_job(&job, &m, 3, Path::new("/usr/bin/nandlab")).unwrap();
    assert_eq!((plan.cells, plan.chunk, plan.tasks), (8, 3, 3));
    let script = std::fs::read_to_string(job.join("job.sh")).unwrap();
    assert!(script.contains("#SBATCH --array=0-2"), "{script}");
    assert!(script.contains("sweep task"), "{script}");
    // Tasks 0 and 2 ran; collecting names task 1 and its cells.
    sweep::slurm::run_task(&job, 0).unwrap();
    sweep::slurm::run_task(&job, 2).unwrap();
    let e = sweep::slurm::collect(&job, false).unwrap_err().to_string();
    assert!(
        e.contains("3 of 8 cells have no complete result") && e.contains("task(s) 1"),
        "{e}"
    );
    let partial = sweep::slurm::collect(&job, true).unwrap();
    assert_eq!(partial.missing().count(), 3);
    // A task index past the array is refused.
    assert!(sweep::slurm::run_task(&job, 3).is_err());
    sweep::slurm::run_task(&job, 1).unwrap();
    let r = sweep::slurm::collect(&job, false).unwrap();
    write_all(&r, &job).unwrap();
    assert_eq!(outputs(&job), outputs(&local));
    // The matrix edited after the job was written: tasks and collect refuse.
    std::fs::write(
        &path,
        MATRIX.replacen("values = [1, 2]", "values = [1, 2, 3]", 1),
    )
    .unwrap();
    let e = sweep::slurm::collect(&job, false).unwrap_err().to_string();
    assert!(
        e.contains("the matrix changed after the job was written"),
        "{e}"
    );
    // Not a job directory.
    let e = sweep::slurm::collect(d.path(), false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("plan.json"), "{e}");
}

#[test]
fn shipped_matrices_load_full_and_quick() {
    for n in sweep::builtin::names() {
        for quick in [false, true] {
            let m = Matrix::load(&Source::Builtin(n.to_string()), quick)
                .unwrap_or_else(|e| panic!("{n} quick={quick}: {e}"));
            assert!(!m.cells.is_empty() && !m.trends.is_empty() && !m.plots.is_empty());
            // (The papers ran no public block traces: ap-traces and spftl-traces have our
            // numbers only. FLARES's Fig. 7 is a plot whose text gives only relative gains,
            // which `flares` and `flares-setups` check as trends; the paper's chip matched its
            // model, so `flares-alg2` and `flares-chips` have no published values. No paper combines the techniques: `combined`
            // and its parts compare each with itself alone, as trends; nor ran real-fs's
            // programs, which compares the default profile with the page FTL.)
            let unpublished = [
                "ap-traces",
                "spftl-traces",
                "flares",
                "flares-setups",
                "flares-alg2",
                "flares-chips",
                "combined",
                "combined-traces",
                "combined-spftl",
                "real-fs",
            ];
            if !quick && !unpublished.contains(&n) {
                assert!(!m.published.is_empty(), "{n}: no published values");
            }
        }
    }
}

#[test]
fn ap_table1_measurement_counts_real_decoder_failures() {
    // At RBER 8e-5 a 1 KiB page fails about 0.5 % of the time with t = 3; with a strong
    // code (t = 8) essentially never. Both through the real controller.
    let mut t = toml::Table::new();
    t.insert("rber".into(), toml::Value::Float(8e-5));
    t.insert("pages".into(), toml::Value::Integer(20_000));
    let m = sweep::kinds::Kind::ApTable1
        .run(&t, Path::new(""), &Default::default())
        .unwrap();
    let f = m["lsb_failures"];
    let expected = m["lsb_expected"] * 20_000.0;
    assert!(
        (f - expected).abs() < 4.0 * expected.sqrt() + 1.0,
        "{f} vs {expected}"
    );
    assert!(m["msb_failures"] < f);
    t.insert("t".into(), toml::Value::Integer(8));
    let m = sweep::kinds::Kind::ApTable1
        .run(&t, Path::new(""), &Default::default())
        .unwrap();
    assert_eq!(m["lsb_failures"], 0.0);
}

#[test]
fn dcr_cells_check_their_parameters_and_recover_both_ways() {
    let cell = |pairs: &[(&str, toml::Value)]| {
        let mut t = toml::Table::new();
        for (k, v) in pairs {
            t.insert(k.to_string(), v.clone());
        }
        t
    };
    let s = |v: &str| toml::Value::String(v.into());
    let i = toml::Value::Integer;
    let kind = sweep::kinds::Kind::Dcr;
    let e = kind
        .check(
            &cell(&[("workload", s("nethack"))]),
            Path::new(""),
            &Default::default(),
        )
        .unwrap_err();
    assert!(e.contains("workload") && e.contains("postmark"), "{e}");
    let e = kind
        .check(
            &cell(&[("workload", s("bonnie")), ("crash_pct", i(0))]),
            Path::new(""),
            &Default::default(),
        )
        .unwrap_err();
    assert!(e.contains("crash_pct"), "{e}");
    let e = kind
        .check(
            &cell(&[("workload", s("ext2-bonnie"))]),
            Path::new(""),
            &Default::default(),
        )
        .unwrap_err();
    assert!(e.contains("trace"), "{e}");
    // A synthetic file copy on a 256 MiB chip: two blocks updated, DCR faster.
    let m = kind
        .run(
            &cell(&[("workload", s("filecopy2")), ("capacity_mib", i(256))]),
            Path::new(""),
            &Default::default(),
        )
        .unwrap();
    assert_eq!(m["updated_blocks"], 2.0);
    assert!(m["dcr_ms"] < m["vb_ms"], "{m:?}");
    assert!(m["vb_blocks_read"] >= m["blocks"] - 16.0, "{m:?}");
    // The captured trace: Bonnie's 188 updated blocks, as in the paper.
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../traces/dcr-ext2.blktrace"
    );
    let m = kind
        .run(
            &cell(&[
                ("workload", s("ext2-bonnie")),
                ("trace", s(trace)),
                ("trace_disk_bytes", i(401178624)),
            ]),
            Path::new(""),
            &Default::default(),
        )
        .unwrap();
    assert_eq!(m["updated_blocks"], 188.0);
}

/// `[quick.last]` wins over the axis profiles under `--quick` and is ignored without it;
/// `[quick.set]` loses to them.
#[test]
fn quick_last_comes_after_the_axis_values() {
    let m = |quick| Matrix::load(&Source::Builtin("waogc".into()), quick).unwrap();
    let requests = |m: &Matrix| -> Vec<i64> {
        m.cells
            .iter()
            .map(|c| c.config["workload"]["requests"].as_integer().unwrap())
            .collect()
    };
    assert!(requests(&m(true)).iter().all(|&r| r == 30_000));
    let full = requests(&m(false));
    assert!(
        full.contains(&220_000) && full.contains(&1_400_000),
        "{full:?}"
    );
    // The quick chip size comes from [quick.set] (no axis sets it).
    for c in &m(true).cells {
        assert_eq!(
            c.config["chip"]["geometry"]["blocks_per_plane"].as_integer(),
            Some(256)
        );
    }
}

/// Sets the dotted `key` of a cell's configuration.
fn set_key(t: &mut toml::Table, key: &str, v: toml::Value) {
    let mut parts: Vec<&str> = key.split('.').collect();
    let last = parts.pop().unwrap();
    let mut at = t;
    for p in parts {
        at = at
            .entry(p)
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .unwrap();
    }
    at.insert(last.to_string(), v);
}

/// `flares-alg2`'s detection verdict can fail: with FLARES's measured-error path cut (its
/// row at MIX 0, like the model-only row), a chip 16× worse than the model raises no
/// critical-zone window, neither row has an event (`inconclusive`: no evidence) and the
/// claim is not upheld; intact, it holds on the same cells.
#[test]
fn flares_alg2_detection_fails_without_the_measured_path() {
    for (mix, word) in [(0.5, "**holds**"), (0.0, "**inconclusive**")] {
        let mut m = Matrix::load(&Source::Builtin("flares-alg2".into()), true).unwrap();
        m.cells.retain(|c| {
            c.axes
                .iter()
                .any(|(k, v)| k == "scale" && v.as_float() == Some(16.0))
        });
        assert_eq!(m.cells.len(), 2);
        for c in &mut m.cells {
            // A smaller run: a hotter set, so that windows still close.
            set_key(
                &mut c.config,
                "workload.requests",
                toml::Value::Integer(4000),
            );
            set_key(
                &mut c.config,
                "workload.footprint",
                toml::Value::Float(0.0004),
            );
            if c.axes
                .iter()
                .any(|(k, v)| k == "ecc" && v.as_str() == Some("FLARES"))
            {
                set_key(
                    &mut c.config,
                    "ftl.page.ecc.flares.mix",
                    toml::Value::Float(mix),
                );
            }
        }
        let d = tempfile::tempdir().unwrap();
        run_to(&m, d.path(), 2, false);
        let report = std::fs::read_to_string(d.path().join("report.md")).unwrap();
        let claim = format!("{word} — FLARES's measured errors flag a chip 16× worse");
        assert!(report.contains(&claim), "MIX {mix}: {report}");
    }
}

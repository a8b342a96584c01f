//! Shared by the test files: one small device, experiment files built on it, running one
//! to its report, and the test tier.
#![allow(dead_code)] // each test file uses its own part

use sim::{ExperimentConfig, Progress};
use std::path::Path;

/// The chip and controller of every experiment here (after its name and seed).
pub const DEVICE: &str = r#"
[chip]
preset = "tiny-mlc"
[chip.geometry]
blocks_per_plane = 64
[controller]
mode = "bytes"
"#;

/// An experiment file: name, seed, [`DEVICE`], then `rest`.
pub fn experiment_text(name: &str, seed: u64, rest: &str) -> String {
    format!("name = \"{name}\"\nseed = {seed}\n{DEVICE}{rest}")
}

/// One experiment file; the two runs below differ only by the policy names substituted
/// into it.
pub const FILE: &str = r#"
[errors]
model = "none"
[ftl]
scheme = "page"
[ftl.page]
over_provisioning = 0.25
ecc_t = 8
gc_pacing = PACING
placement = PLACEMENT
[precondition]
max_overwrite = 1.0
[workload]
requests = 6000
read_pct = 30
size = 4096
hot = { data_pct = 20, access_pct = 80, hint = true }
[hints]
critical = [{ offset = 0, len = 65536 }]
[load]
mode = "closed"
queue_depth = 1
"#;

/// [`FILE`] with the given GC pacing and placement (TOML values, quoted).
pub fn config(pacing: &str, placement: &str) -> ExperimentConfig {
    let text = experiment_text("policies", 21, FILE)
        .replace("PACING", pacing)
        .replace("PLACEMENT", placement);
    ExperimentConfig::from_toml_str(&text, "policies.toml").unwrap()
}

/// Builds and runs an experiment to its report.
pub fn run(cfg: ExperimentConfig) -> sim::Report {
    cfg.build(Path::new("."))
        .unwrap()
        .run(&mut |_: Progress| {})
        .unwrap()
}

/// Whether this is the fast test tier (`NANDLAB_TEST_TIER=fast`, the inner loop): the
/// longest plans run shorter; unset (README's command, CI), everything runs in full.
pub fn fast_tier() -> bool {
    std::env::var("NANDLAB_TEST_TIER").is_ok_and(|t| t == "fast")
}

//! The matrices shipped under `experiments/`, compiled into the binary so `nandlab
//! reproduce NAME` works from any directory. Each is an ordinary matrix file; the same
//! file can be run with `nandlab sweep experiments/NAME.toml`.

/// `(file name, text)` of every shipped file: matrices and the base experiments they name.
const FILES: &[(&str, &str)] = &[
    ("waf.toml", include_str!("../../../experiments/waf.toml")),
    (
        "waf-base.toml",
        include_str!("../../../experiments/waf-base.toml"),
    ),
    (
        "ap-table1.toml",
        include_str!("../../../experiments/ap-table1.toml"),
    ),
    ("ap.toml", include_str!("../../../experiments/ap.toml")),
    (
        "ap-persistent.toml",
        include_str!("../../../experiments/ap-persistent.toml"),
    ),
    (
        "ap-base.toml",
        include_str!("../../../experiments/ap-base.toml"),
    ),
    (
        "ap-io.toml",
        include_str!("../../../experiments/ap-io.toml"),
    ),
    (
        "ap-sensor.toml",
        include_str!("../../../experiments/ap-sensor.toml"),
    ),
    (
        "ap-traces.toml",
        include_str!("../../../experiments/ap-traces.toml"),
    ),
    (
        "ap-trace-base.toml",
        include_str!("../../../experiments/ap-trace-base.toml"),
    ),
    (
        "flares.toml",
        include_str!("../../../experiments/flares.toml"),
    ),
    (
        "flares-setups.toml",
        include_str!("../../../experiments/flares-setups.toml"),
    ),
    (
        "flares-alg2.toml",
        include_str!("../../../experiments/flares-alg2.toml"),
    ),
    (
        "flares-chips.toml",
        include_str!("../../../experiments/flares-chips.toml"),
    ),
    (
        "flares-fig5.toml",
        include_str!("../../../experiments/flares-fig5.toml"),
    ),
    (
        "flares-base.toml",
        include_str!("../../../experiments/flares-base.toml"),
    ),
    (
        "flares-refresh.toml",
        include_str!("../../../experiments/flares-refresh.toml"),
    ),
    (
        "recovery.toml",
        include_str!("../../../experiments/recovery.toml"),
    ),
    ("dcr.toml", include_str!("../../../experiments/dcr.toml")),
    (
        "dcr-real.toml",
        include_str!("../../../experiments/dcr-real.toml"),
    ),
    (
        "dcr-capacity.toml",
        include_str!("../../../experiments/dcr-capacity.toml"),
    ),
    (
        "spftl.toml",
        include_str!("../../../experiments/spftl.toml"),
    ),
    (
        "spftl-random.toml",
        include_str!("../../../experiments/spftl-random.toml"),
    ),
    (
        "spftl-traces.toml",
        include_str!("../../../experiments/spftl-traces.toml"),
    ),
    (
        "spftl-trace-base.toml",
        include_str!("../../../experiments/spftl-trace-base.toml"),
    ),
    (
        "spftl-base.toml",
        include_str!("../../../experiments/spftl-base.toml"),
    ),
    (
        "waogc.toml",
        include_str!("../../../experiments/waogc.toml"),
    ),
    (
        "waogc-base.toml",
        include_str!("../../../experiments/waogc-base.toml"),
    ),
    (
        "waogc-table1.toml",
        include_str!("../../../experiments/waogc-table1.toml"),
    ),
    (
        "waogc-traces.toml",
        include_str!("../../../experiments/waogc-traces.toml"),
    ),
    (
        "waogc-trace-base.toml",
        include_str!("../../../experiments/waogc-trace-base.toml"),
    ),
    (
        "combined.toml",
        include_str!("../../../experiments/combined.toml"),
    ),
    (
        "combined-base.toml",
        include_str!("../../../experiments/combined-base.toml"),
    ),
    (
        "combined-traces.toml",
        include_str!("../../../experiments/combined-traces.toml"),
    ),
    (
        "combined-trace-base.toml",
        include_str!("../../../experiments/combined-trace-base.toml"),
    ),
    (
        "real-fs.toml",
        include_str!("../../../experiments/real-fs.toml"),
    ),
    (
        "real-fs-base.toml",
        include_str!("../../../experiments/real-fs-base.toml"),
    ),
    (
        "combined-spftl.toml",
        include_str!("../../../experiments/combined-spftl.toml"),
    ),
    (
        "combined-spftl-base.toml",
        include_str!("../../../experiments/combined-spftl-base.toml"),
    ),
];

/// The shipped matrices, in `--list` order.
const MATRICES: &[&str] = &[
    "waf",
    "ap-table1",
    "ap",
    "ap-persistent",
    "ap-io",
    "ap-sensor",
    "ap-traces",
    "flares",
    "flares-setups",
    "flares-alg2",
    "flares-chips",
    "flares-fig5",
    "flares-refresh",
    "recovery",
    "dcr",
    "dcr-capacity",
    "dcr-real",
    "waogc",
    "waogc-table1",
    "waogc-traces",
    "spftl",
    "spftl-random",
    "spftl-traces",
    "combined",
    "combined-traces",
    "combined-spftl",
    "real-fs",
];

/// Matrices a shipped comparison runs after its own (its other parts: DCR's capacity
/// estimate is a separate matrix because its axis is the chip, not the workload).
pub fn companions(name: &str) -> &'static [&'static str] {
    match name {
        "ap" => &["ap-persistent"],
        "dcr" => &["dcr-capacity", "dcr-real"],
        "flares" => &["flares-setups", "flares-alg2", "flares-chips"],
        "waogc" => &["waogc-table1", "waogc-traces"],
        "spftl" => &["spftl-random", "spftl-traces"],
        "combined" => &["combined-traces", "combined-spftl"],
        _ => &[],
    }
}

/// Names of the shipped matrices.
pub fn names() -> Vec<&'static str> {
    MATRICES.to_vec()
}

/// A shipped file's text.
pub fn file(name: &str) -> Option<&'static str> {
    FILES.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

//! nandlab's experiment matrices: a TOML file names a base experiment, the axes to vary and
//! the published values to compare with; this crate expands it into cells, checks every
//! cell before anything runs, runs the cells in parallel (resumable, deterministic per
//! cell), and writes `results.json`, `results.csv`, `report.md` (our numbers beside the
//! paper's, with a verdict per claimed trend) and plots (SVG and PNG). The same matrix can
//! be cut into a Slurm job array and collected back into the same files.
//!
//! One file per concern: [`matrix`] (parse, expand, validate), [`claims`] (published
//! values, trends and plots, checked against the cells), [`kinds`] (what a cell runs:
//! a simulator experiment, AP's Table 1 measurement, a recovery measurement), [`run`]
//! (parallel, resumable execution and the per-cell result files), [`results`]
//! (`results.json` / `results.csv`), [`report`] (tables and trend verdicts), [`plot`],
//! [`slurm`] (job arrays and collection), [`analytic`] (closed-form references),
//! [`builtin`] (the matrices shipped under `experiments/`).

/// The metrics of one cell, by name (what every cell kind returns).
pub type Metrics = std::collections::BTreeMap<String, f64>;

pub mod analytic;
pub mod builtin;
pub mod claims;
pub mod dcr;
pub mod fig5;
pub mod kinds;
pub mod matrix;
pub mod plot;
pub mod query;
pub mod report;
pub mod results;
pub mod run;
pub mod slurm;
pub mod space;
pub mod stats;
pub mod summary;
pub mod verdict;

pub use matrix::{Cell, Matrix, Source};
pub use results::{CellOutcome, CellResult, Results};

/// What can go wrong in a sweep.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// A malformed or inconsistent matrix file.
    #[error("{file}: {message}")]
    Matrix {
        /// The matrix file.
        file: String,
        /// What is wrong, naming the key and value.
        message: String,
    },
    /// A result file that does not belong, or is damaged.
    #[error("{path}: {message}")]
    Results {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A cell failed to run.
    #[error("cell {cell}: {message}")]
    Cell {
        /// The cell's label.
        cell: String,
        /// The error.
        message: String,
    },
    /// File I/O.
    #[error("{path}: {message}")]
    Io {
        /// The file or directory.
        path: String,
        /// The error.
        message: String,
    },
}

impl SweepError {
    pub(crate) fn io(path: &std::path::Path, e: impl std::fmt::Display) -> Self {
        SweepError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        }
    }
}

/// Writes `bytes` to `path` through a temporary file and a rename, so a reader never sees a
/// half-written file (a killed run leaves either the old file or the new one).
pub(crate) fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> Result<(), SweepError> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).map_err(|e| SweepError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| SweepError::io(path, e))
}

//! Per-cell result files and the merged `results.json` / `results.csv`.
//!
//! Each cell writes `cells/cNNNN.json` when it finishes (atomically: a reader sees the old
//! file or the whole new one). The file names its matrix, the cell's index and the
//! fingerprint of the cell's configuration; a resumed or collected run accepts it only if
//! all three match. Nothing in a result depends on wall time, thread count or order, so the
//! merged files are byte-identical for any `--jobs` and for a Slurm run.

use crate::matrix::{show, Cell, Matrix};
use crate::SweepError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

/// How a cell ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "status")]
pub enum CellOutcome {
    /// It ran; its metrics.
    Ok {
        /// Metrics by name.
        metrics: BTreeMap<String, f64>,
    },
    /// It failed at run time (a valid configuration can still run out of space).
    Failed {
        /// The error.
        error: String,
    },
}

/// A cell result file (`cells/cNNNN.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellFile {
    /// The matrix's name.
    pub matrix: String,
    /// The cell's index.
    pub cell: usize,
    /// Its label.
    pub label: String,
    /// CRC-64 of the cell's configuration, hex.
    pub fingerprint: String,
    /// The outcome.
    pub outcome: CellOutcome,
}

impl CellFile {
    /// The result of `cell` of `matrix`.
    pub fn new(matrix: &Matrix, cell: &Cell, outcome: CellOutcome) -> CellFile {
        CellFile {
            matrix: matrix.name.clone(),
            cell: cell.index,
            label: cell.label(),
            fingerprint: format!("{:016x}", cell.fingerprint),
            outcome,
        }
    }

    /// Writes it into `dir` (atomically).
    pub fn write(&self, dir: &Path) -> Result<(), SweepError> {
        let path = dir.join(format!("c{:04}.json", self.cell));
        let text = serde_json::to_string_pretty(self).expect("serialises");
        crate::write_atomic(&path, text.as_bytes())
    }

    /// Reads `cell`'s result file from `dir`: `Ok(None)` when there is none, or it is
    /// incomplete (a half-written file from a killed run is rerun); an error when it belongs
    /// to another matrix or another configuration of this cell.
    pub fn read(dir: &Path, matrix: &Matrix, cell: &Cell) -> Result<Option<CellFile>, SweepError> {
        let path = dir.join(cell.file_name());
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(SweepError::io(&path, e)),
        };
        let Ok(f) = serde_json::from_str::<CellFile>(&text) else {
            return Ok(None);
        };
        let bad = |message: String| SweepError::Results {
            path: path.display().to_string(),
            message,
        };
        if f.matrix != matrix.name {
            return Err(bad(format!(
                "a result of matrix {:?}, not {:?}: use another output directory",
                f.matrix, matrix.name
            )));
        }
        if f.cell != cell.index || f.fingerprint != format!("{:016x}", cell.fingerprint) {
            return Err(bad(format!(
                "a result of cell {} ({}) with configuration {}, but cell {} ({}) is now configuration {:016x}: the matrix changed since (or --quick differs); use another output directory",
                f.cell, f.label, f.fingerprint, cell.index, cell.label(), cell.fingerprint
            )));
        }
        Ok(Some(f))
    }
}

/// One cell in the merged results: its outcome, or `None` when missing.
#[derive(Debug, Clone, PartialEq)]
pub struct CellResult {
    /// The cell.
    pub cell: Cell,
    /// Its outcome (`None`: no result).
    pub outcome: Option<CellOutcome>,
}

impl CellResult {
    /// Its metrics if it ran.
    pub fn metrics(&self) -> Option<&BTreeMap<String, f64>> {
        match &self.outcome {
            Some(CellOutcome::Ok { metrics }) => Some(metrics),
            _ => None,
        }
    }
}

/// Where a set of results came from: written into `results.json` (and nowhere else, so
/// the other outputs stay byte-identical across runs of one matrix).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The git commit the binary was built from (`unknown` outside a checkout).
    pub commit: String,
    /// The binary's version.
    pub version: String,
    /// The exact command line.
    pub command: String,
}

/// The merged results of a matrix.
#[derive(Debug, Clone)]
pub struct Results {
    /// The matrix.
    pub matrix: Matrix,
    /// Every cell, in index order.
    pub cells: Vec<CellResult>,
    /// Who wrote them (set by the command line program; `None` in library use).
    pub provenance: Option<Provenance>,
}

impl Results {
    /// Reads every cell's result file from `dir` (missing ones as `None`).
    pub fn collect(matrix: &Matrix, dir: &Path) -> Result<Results, SweepError> {
        let mut cells = Vec::with_capacity(matrix.cells.len());
        for c in &matrix.cells {
            let f = CellFile::read(dir, matrix, c)?;
            cells.push(CellResult {
                cell: c.clone(),
                outcome: f.map(|f| f.outcome),
            });
        }
        Ok(Results {
            matrix: matrix.clone(),
            cells,
            provenance: None,
        })
    }

    /// Cells without a result.
    pub fn missing(&self) -> impl Iterator<Item = &Cell> {
        self.cells
            .iter()
            .filter(|c| c.outcome.is_none())
            .map(|c| &c.cell)
    }

    /// Cells that failed, with their errors.
    pub fn failed(&self) -> impl Iterator<Item = (&Cell, &str)> {
        self.cells.iter().filter_map(|c| match &c.outcome {
            Some(CellOutcome::Failed { error }) => Some((&c.cell, error.as_str())),
            _ => None,
        })
    }

    /// Every metric name any cell reported.
    pub fn metric_names(&self) -> BTreeSet<String> {
        self.cells
            .iter()
            .filter_map(CellResult::metrics)
            .flat_map(|m| m.keys().cloned())
            .collect()
    }

    /// `results.json`.
    pub fn to_json(&self) -> String {
        let m = &self.matrix;
        let cells: Vec<serde_json::Value> = self
            .cells
            .iter()
            .map(|c| {
                let axes: serde_json::Map<String, serde_json::Value> = c
                    .cell
                    .axes
                    .iter()
                    .map(|(k, v)| (k.clone(), serde_json::to_value(v).expect("toml value")))
                    .collect();
                let mut o = serde_json::json!({
                    "index": c.cell.index,
                    "label": c.cell.label(),
                    "axes": axes,
                });
                let obj = o.as_object_mut().expect("object");
                match &c.outcome {
                    None => {
                        obj.insert("status".into(), "missing".into());
                    }
                    Some(CellOutcome::Failed { error }) => {
                        obj.insert("status".into(), "failed".into());
                        obj.insert("error".into(), error.clone().into());
                    }
                    Some(CellOutcome::Ok { metrics }) => {
                        obj.insert("status".into(), "ok".into());
                        obj.insert(
                            "metrics".into(),
                            serde_json::to_value(metrics).expect("metrics"),
                        );
                    }
                }
                o
            })
            .collect();
        let mut v = serde_json::json!({
            "matrix": m.name,
            "title": m.title,
            "kind": m.kind.name(),
            "quick": m.quick,
            "fingerprint": format!("{:016x}", m.fingerprint),
            "cells": cells,
        });
        if let Some(p) = &self.provenance {
            v.as_object_mut().expect("object").insert(
                "provenance".into(),
                serde_json::to_value(p).expect("provenance"),
            );
        }
        let mut s = serde_json::to_string_pretty(&v).expect("serialises");
        s.push('\n');
        s
    }

    /// `results.csv`: one row per cell — index, the axes, status, then every metric.
    pub fn to_csv(&self) -> String {
        let names = self.metric_names();
        let mut s = String::from("index");
        for a in &self.matrix.axes {
            let _ = write!(s, ",{}", csv_field(&a.name));
        }
        s.push_str(",status");
        for n in &names {
            let _ = write!(s, ",{}", csv_field(n));
        }
        s.push('\n');
        for c in &self.cells {
            let _ = write!(s, "{}", c.cell.index);
            for (_, v) in &c.cell.axes {
                let _ = write!(s, ",{}", csv_field(&show(v)));
            }
            let status = match &c.outcome {
                None => "missing",
                Some(CellOutcome::Failed { .. }) => "failed",
                Some(CellOutcome::Ok { .. }) => "ok",
            };
            let _ = write!(s, ",{status}");
            for n in &names {
                match c.metrics().and_then(|m| m.get(n)) {
                    Some(v) => {
                        let _ = write!(s, ",{v}");
                    }
                    None => s.push(','),
                }
            }
            s.push('\n');
        }
        s
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

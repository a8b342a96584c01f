//! Sweeps on a Slurm cluster: a job array whose tasks each run a chunk of the matrix's
//! cells with the same binary, writing the same per-cell result files a local run writes;
//! `collect` merges them into the same `results.json` / `report.md`.
//!
//! The directory holds `plan.json` (the matrix, its fingerprint, the chunking), `job.sh`
//! (the `sbatch` script), `logs/task-N.out` and `cells/`. A task re-expands the matrix and
//! refuses to run if its fingerprint differs from the plan's (the matrix file changed after
//! the job was written).

use crate::matrix::{Matrix, Source};
use crate::results::Results;
use crate::run::{run_cells, Summary};
use crate::SweepError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// `plan.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// The matrix source (an absolute path, or `builtin:NAME`).
    pub source: String,
    /// The matrix name.
    pub name: String,
    /// The `--quick` expansion.
    pub quick: bool,
    /// Its fingerprint, hex.
    pub fingerprint: String,
    /// Cells.
    pub cells: usize,
    /// Cells per array task.
    pub chunk: usize,
    /// Array tasks.
    pub tasks: usize,
}

impl Plan {
    /// The cell indices of array task `task`.
    pub fn task_cells(&self, task: usize) -> Vec<usize> {
        let start = task * self.chunk;
        (start..(start + self.chunk).min(self.cells)).collect()
    }

    /// The array task that runs cell `cell`.
    pub fn task_of(&self, cell: usize) -> usize {
        cell / self.chunk
    }
}

fn plan_path(dir: &Path) -> PathBuf {
    dir.join("plan.json")
}

/// Writes the job directory for `matrix`: `plan.json`, `job.sh` (running `binary`), and
/// the empty `logs/` and `cells/`. Returns the plan.
pub fn write_job(
    dir: &Path,
    matrix: &Matrix,
    chunk: usize,
    binary: &Path,
) -> Result<Plan, SweepError> {
    let chunk = chunk.max(1);
    let source = match &matrix.source {
        Source::File(p) => Source::File(std::path::absolute(p).map_err(|e| SweepError::io(p, e))?),
        s => s.clone(),
    };
    let plan = Plan {
        source: source.label(),
        name: matrix.name.clone(),
        quick: matrix.quick,
        fingerprint: format!("{:016x}", matrix.fingerprint),
        cells: matrix.cells.len(),
        chunk,
        tasks: matrix.cells.len().div_ceil(chunk),
    };
    let dir = std::path::absolute(dir).map_err(|e| SweepError::io(dir, e))?;
    for sub in ["logs", "cells"] {
        let d = dir.join(sub);
        std::fs::create_dir_all(&d).map_err(|e| SweepError::io(&d, e))?;
    }
    crate::run::check_dir(matrix, &dir.join("cells"))?;
    let text = serde_json::to_string_pretty(&plan).expect("serialises");
    crate::write_atomic(&plan_path(&dir), text.as_bytes())?;
    let binary = std::path::absolute(binary).map_err(|e| SweepError::io(binary, e))?;
    let q = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', "'\\''"));
    let script = format!(
        "#!/bin/bash\n\
         # nandlab sweep of matrix {name:?} ({cells} cells, {chunk} per task): submit with\n\
         #   sbatch {job}\n\
         # then merge with\n\
         #   nandlab sweep collect {dirq}\n\
         #SBATCH --job-name=nandlab-{name}\n\
         #SBATCH --array=0-{last}\n\
         #SBATCH --ntasks=1\n\
         #SBATCH --cpus-per-task=1\n\
         #SBATCH --output={logs}/task-%a.out\n\
         set -euo pipefail\n\
         exec {bin} sweep task {dirq} --task \"$SLURM_ARRAY_TASK_ID\"\n",
        name = plan.name,
        cells = plan.cells,
        chunk = plan.chunk,
        job = q(&dir.join("job.sh")),
        dirq = q(&dir),
        last = plan.tasks.saturating_sub(1),
        logs = dir.join("logs").display(),
        bin = q(&binary),
    );
    let job = dir.join("job.sh");
    crate::write_atomic(&job, script.as_bytes())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&job, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| SweepError::io(&job, e))?;
    }
    Ok(plan)
}

/// Reads `plan.json` and re-expands its matrix, which must still have the plan's
/// fingerprint.
pub fn load(dir: &Path) -> Result<(Plan, Matrix), SweepError> {
    let path = plan_path(dir);
    let text = std::fs::read_to_string(&path).map_err(|e| SweepError::Io {
        path: path.display().to_string(),
        message: format!("cannot read ({e}): not a directory written by `nandlab sweep --slurm`"),
    })?;
    let plan: Plan = serde_json::from_str(&text).map_err(|e| SweepError::Results {
        path: path.display().to_string(),
        message: format!("malformed plan: {e}"),
    })?;
    let matrix = Matrix::load(&Source::from_label(&plan.source), plan.quick)?;
    let fp = format!("{:016x}", matrix.fingerprint);
    if matrix.name != plan.name || fp != plan.fingerprint || matrix.cells.len() != plan.cells {
        return Err(SweepError::Results {
            path: path.display().to_string(),
            message: format!(
                "planned for matrix {:?} with fingerprint {} ({} cells), but {} is now {:?} with {fp} ({} cells): the matrix changed after the job was written",
                plan.name,
                plan.fingerprint,
                plan.cells,
                plan.source,
                matrix.name,
                matrix.cells.len()
            ),
        });
    }
    if plan.chunk == 0 || plan.tasks != plan.cells.div_ceil(plan.chunk) {
        return Err(SweepError::Results {
            path: path.display().to_string(),
            message: format!(
                "chunk = {}, tasks = {} do not cover {} cells",
                plan.chunk, plan.tasks, plan.cells
            ),
        });
    }
    Ok((plan, matrix))
}

/// Runs array task `task` of the job in `dir` (one thread: the scheduler places tasks).
pub fn run_task(dir: &Path, task: usize) -> Result<Summary, SweepError> {
    let (plan, matrix) = load(dir)?;
    if task >= plan.tasks {
        return Err(SweepError::Results {
            path: plan_path(dir).display().to_string(),
            message: format!("task {task}: the job has tasks 0..={}", plan.tasks - 1),
        });
    }
    let cells = plan.task_cells(task);
    run_cells(&matrix, &dir.join("cells"), Some(&cells), 1, true, &|_| {})
}

/// Merges the job's cell results. Missing results are an error naming the cells, their
/// tasks and the tasks' logs, unless `allow_missing` (then they show as missing).
pub fn collect(dir: &Path, allow_missing: bool) -> Result<Results, SweepError> {
    let (plan, matrix) = load(dir)?;
    let results = Results::collect(&matrix, &dir.join("cells"))?;
    let missing: Vec<_> = results.missing().collect();
    if !missing.is_empty() && !allow_missing {
        let mut tasks: Vec<usize> = missing.iter().map(|c| plan.task_of(c.index)).collect();
        tasks.dedup();
        let shown: Vec<String> = missing
            .iter()
            .take(10)
            .map(|c| format!("{} ({})", c.index, c.label()))
            .collect();
        return Err(SweepError::Results {
            path: dir.join("cells").display().to_string(),
            message: format!(
                "{} of {} cells have no complete result: {}{}; from array task(s) {} — see {}/task-N.out, resubmit with `sbatch --array={} {}`, or collect with --allow-missing to report them as missing",
                missing.len(),
                plan.cells,
                shown.join(", "),
                if missing.len() > 10 { ", …" } else { "" },
                tasks
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
                dir.join("logs").display(),
                tasks
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
                dir.join("job.sh").display()
            ),
        });
    }
    Ok(results)
}

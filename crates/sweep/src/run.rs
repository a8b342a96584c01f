//! Running cells: on `jobs` threads, each cell deterministic and independent, each result
//! written to its own file as it finishes, so a killed sweep resumes where it stopped.

use crate::matrix::{Cell, Matrix};
use crate::results::{CellFile, CellOutcome};
use crate::SweepError;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// One finished cell, for progress display.
#[derive(Debug, Clone)]
pub struct Finished<'a> {
    /// The cell.
    pub cell: &'a Cell,
    /// Whether it failed.
    pub failed: bool,
    /// Whether its result came from an earlier run (`--resume`).
    pub reused: bool,
    /// Wall seconds it took (0 when reused); for display only, never in a result.
    pub seconds: f64,
}

/// What a run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Cells run now.
    pub ran: usize,
    /// Cells whose earlier result was kept.
    pub reused: usize,
    /// Cells that failed (run now or earlier).
    pub failed: usize,
}

/// Refuses a cell directory holding results of another matrix.
pub fn check_dir(matrix: &Matrix, dir: &Path) -> Result<(), SweepError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(SweepError::io(dir, e)),
    };
    for e in entries {
        let e = e.map_err(|e| SweepError::io(dir, e))?;
        let path = e.path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if let Ok(f) = serde_json::from_str::<CellFile>(&text) {
            if f.matrix != matrix.name {
                return Err(SweepError::Results {
                    path: path.display().to_string(),
                    message: format!(
                        "a result of matrix {:?}, not {:?}: use another output directory",
                        f.matrix, matrix.name
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Runs `cells` (indices into the matrix; all when `None`) of `matrix` on `jobs` threads,
/// writing each result into `dir`. With `resume`, cells whose result file is complete and
/// matches are kept. `on_done` is called as each cell finishes (from worker threads).
pub fn run_cells(
    matrix: &Matrix,
    dir: &Path,
    cells: Option<&[usize]>,
    jobs: usize,
    resume: bool,
    on_done: &(dyn Fn(Finished<'_>) + Sync),
) -> Result<Summary, SweepError> {
    std::fs::create_dir_all(dir).map_err(|e| SweepError::io(dir, e))?;
    check_dir(matrix, dir)?;
    let todo: Vec<&Cell> = match cells {
        None => matrix.cells.iter().collect(),
        Some(ix) => ix.iter().map(|&i| &matrix.cells[i]).collect(),
    };
    let mut pending = Vec::new();
    let mut summary = Summary::default();
    for c in todo {
        if resume {
            if let Some(f) = CellFile::read(dir, matrix, c)? {
                summary.reused += 1;
                let failed = matches!(f.outcome, CellOutcome::Failed { .. });
                summary.failed += failed as usize;
                on_done(Finished {
                    cell: c,
                    failed,
                    reused: true,
                    seconds: 0.0,
                });
                continue;
            }
        }
        pending.push(c);
    }
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let fatal: Mutex<Option<SweepError>> = Mutex::new(None);
    let ran = AtomicUsize::new(0);
    let failed = AtomicUsize::new(0);
    let jobs = jobs.clamp(1, pending.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&c) = pending.get(i) else {
                    return;
                };
                let wall = std::time::Instant::now();
                let outcome = run_one(matrix, c);
                let is_failed = matches!(outcome, CellOutcome::Failed { .. });
                if let Err(e) = CellFile::new(matrix, c, outcome).write(dir) {
                    fatal.lock().expect("lock").get_or_insert(e);
                    stop.store(true, Ordering::Relaxed);
                    return;
                }
                ran.fetch_add(1, Ordering::Relaxed);
                failed.fetch_add(is_failed as usize, Ordering::Relaxed);
                on_done(Finished {
                    cell: c,
                    failed: is_failed,
                    reused: false,
                    seconds: wall.elapsed().as_secs_f64(),
                });
            });
        }
    });
    if let Some(e) = fatal.into_inner().expect("lock") {
        return Err(e);
    }
    summary.ran = ran.into_inner();
    summary.failed += failed.into_inner();
    Ok(summary)
}

/// Runs one cell; a run-time error or a panic is the cell's outcome, not the sweep's.
pub fn run_one(matrix: &Matrix, cell: &Cell) -> CellOutcome {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        matrix
            .kind
            .run(&cell.config, &matrix.base_dir, &matrix.registry)
    }));
    match r {
        Ok(Ok(mut metrics)) => {
            // JSON has no NaN or infinity: such a metric is left out (shown as missing).
            metrics.retain(|_, v| v.is_finite());
            CellOutcome::Ok { metrics }
        }
        Ok(Err(error)) => CellOutcome::Failed { error },
        Err(p) => CellOutcome::Failed {
            error: format!(
                "panicked: {}",
                p.downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_default()
            ),
        },
    }
}

//! `nandlab sweep` and `nandlab reproduce`: experiment matrices run in parallel, resumable,
//! with the paper's numbers beside ours, trend verdicts and plots; or cut into a Slurm job
//! array and collected back.

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use sweep::report::write_all;
use sweep::run::{run_cells, Finished};
use sweep::verdict::verdicts;
use sweep::{Matrix, Results, Source};

/// How a sweep runs locally.
#[derive(Debug, Clone, Args)]
pub struct RunOpts {
    /// The scaled-down matrix (the axes' `quick` values and `[quick.set]`).
    #[arg(long)]
    quick: bool,
    /// Cells run at once (default: all cores).
    #[arg(long, short)]
    jobs: Option<usize>,
    /// Output directory (results.json, results.csv, report.md, plots/, cells/).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Keep the cells whose result file is complete; run the others.
    #[arg(long)]
    resume: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SweepArgs {
    #[command(subcommand)]
    command: Option<SweepCommand>,
    /// The matrix file (TOML; see experiments/).
    matrix: Option<PathBuf>,
    #[command(flatten)]
    run: RunOpts,
    /// Instead of running: write a Slurm job array into this directory (then `sbatch
    /// DIR/job.sh` and `nandlab sweep collect DIR`).
    #[arg(long)]
    slurm: Option<PathBuf>,
    /// Cells per Slurm array task.
    #[arg(long, default_value_t = 1, requires = "slurm")]
    chunk: usize,
}

#[derive(Debug, Subcommand)]
enum SweepCommand {
    /// Merge a Slurm job's per-task results into results.json, results.csv, report.md.
    Collect {
        /// The job directory (written by `sweep MATRIX --slurm DIR`).
        dir: PathBuf,
        /// Output directory (default: the job directory).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Report cells without a result as missing instead of failing.
        #[arg(long)]
        allow_missing: bool,
    },
    /// Run one array task of a Slurm job (what job.sh runs).
    #[command(hide = true)]
    Task {
        /// The job directory.
        dir: PathBuf,
        /// The array task index.
        #[arg(long)]
        task: usize,
    },
}

#[derive(Debug, Args)]
pub struct ReproduceArgs {
    /// The shipped comparison to reproduce (see --list).
    #[arg(required_unless_present_any = ["list", "summary"])]
    name: Option<String>,
    /// List the shipped comparisons.
    #[arg(long)]
    list: bool,
    /// Instead of running: write the one-page summary of every verdict
    /// (docs/reproduce/SUMMARY.md) from the committed results under --from.
    #[arg(long, conflicts_with_all = ["name", "list"])]
    summary: bool,
    /// Where --summary reads the results (NAME/cells per comparison) and writes SUMMARY.md.
    #[arg(long, default_value = "docs/reproduce", requires = "summary")]
    from: PathBuf,
    #[command(flatten)]
    run: RunOpts,
}

pub fn sweep(a: SweepArgs) -> Result<()> {
    match a.command {
        Some(SweepCommand::Collect {
            dir,
            out,
            allow_missing,
        }) => {
            let mut results = sweep::slurm::collect(&dir, allow_missing)?;
            results.provenance = Some(provenance());
            finish(&results, out.as_deref().unwrap_or(&dir))
        }
        Some(SweepCommand::Task { dir, task }) => {
            let s = sweep::slurm::run_task(&dir, task)?;
            println!(
                "task {task}: {} cells run, {} kept from before, {} failed",
                s.ran, s.reused, s.failed
            );
            Ok(())
        }
        None => {
            let Some(path) = a.matrix else {
                bail!("give a matrix file (e.g. experiments/waf.toml), or `sweep collect DIR`");
            };
            let source = Source::File(path);
            if let Some(dir) = a.slurm {
                let matrix = Matrix::load(&source, a.run.quick)?;
                let exe = std::env::current_exe().context("cannot find this program's path")?;
                let plan = sweep::slurm::write_job(&dir, &matrix, a.chunk, &exe)?;
                println!(
                    "wrote a Slurm job array for matrix {:?}: {} cells in {} task(s) of {}",
                    plan.name, plan.cells, plan.tasks, plan.chunk
                );
                println!("  submit:  sbatch {}", dir.join("job.sh").display());
                println!("  collect: nandlab sweep collect {}", dir.display());
                return Ok(());
            }
            run_matrix(&source, &a.run)
        }
    }
}

pub fn reproduce(a: ReproduceArgs) -> Result<()> {
    if a.list {
        for n in sweep::builtin::names() {
            let m = Matrix::load(&Source::Builtin(n.to_string()), false)?;
            println!("{n:<12} {}", m.title);
        }
        return Ok(());
    }
    if a.summary {
        let text = sweep::summary::summary(&a.from)?;
        let path = a.from.join("SUMMARY.md");
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        println!("wrote {}", path.display());
        return Ok(());
    }
    let name = a.name.expect("required unless --list or --summary");
    if !sweep::builtin::names().contains(&name.as_str()) {
        bail!(
            "no shipped comparison named {name:?}; `nandlab reproduce --list` shows them: {}",
            sweep::builtin::names().join(", ")
        );
    }
    run_matrix(&Source::Builtin(name.clone()), &a.run)?;
    for part in sweep::builtin::companions(&name) {
        // A companion's results go beside the comparison's (`--out DIR`: DIR's sibling
        // named after the part).
        let mut run = a.run.clone();
        if let Some(out) = &a.run.out {
            run.out = Some(out.with_file_name(part));
        }
        run_matrix(&Source::Builtin(part.to_string()), &run)?;
    }
    Ok(())
}

fn run_matrix(source: &Source, o: &RunOpts) -> Result<()> {
    let matrix = Matrix::load(source, o.quick)?;
    let out = o.out.clone().unwrap_or_else(|| {
        let root = match source {
            Source::Builtin(_) => "reproduce",
            Source::File(_) => "sweeps",
        };
        PathBuf::from(root).join(format!(
            "{}{}",
            matrix.name,
            if o.quick { "-quick" } else { "" }
        ))
    });
    let jobs = o
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if jobs == 0 {
        bail!("--jobs 0: at least one cell must run at a time");
    }
    eprintln!(
        "{}: {} cells on {jobs} thread(s) → {}",
        matrix.name,
        matrix.cells.len(),
        out.display()
    );
    let bar = (!o.quiet && std::io::stderr().is_terminal()).then(|| {
        let b = ProgressBar::with_draw_target(
            Some(matrix.cells.len() as u64),
            ProgressDrawTarget::stderr(),
        );
        b.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} cells · {elapsed} · {msg}")
                .expect("valid template"),
        );
        b
    });
    let on_done = |f: Finished<'_>| {
        if let Some(b) = &bar {
            b.inc(1);
            b.set_message(format!(
                "{}{} {}",
                f.cell.label(),
                if f.reused {
                    " (kept)".to_string()
                } else {
                    format!(" {:.1} s", f.seconds)
                },
                if f.failed { "FAILED" } else { "" }
            ));
        }
    };
    let cells_dir = out.join("cells");
    let summary = run_cells(&matrix, &cells_dir, None, jobs, o.resume, &on_done)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    eprintln!(
        "{} cells run, {} kept from an earlier run, {} failed",
        summary.ran, summary.reused, summary.failed
    );
    let mut results = Results::collect(&matrix, &cells_dir)?;
    results.provenance = Some(provenance());
    finish(&results, &out)
}

/// This program's commit, version and command line, for `results.json`.
fn provenance() -> sweep::results::Provenance {
    let quote = |a: String| {
        if !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@".contains(c))
        {
            a
        } else {
            format!("'{}'", a.replace('\'', "'\\''"))
        }
    };
    sweep::results::Provenance {
        commit: env!("NANDLAB_GIT_COMMIT").to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        command: std::env::args().map(quote).collect::<Vec<_>>().join(" "),
    }
}

/// Writes the outputs and prints the verdicts and the comparison.
fn finish(results: &Results, out: &Path) -> Result<()> {
    write_all(results, out)?;
    let m = &results.matrix;
    println!("== {}", m.title);
    let table = sweep::report::comparison_table(results);
    if !table.is_empty() {
        print!("{table}");
    }
    for v in verdicts(results) {
        println!("{:>13}: {} — {}", v.word(), v.claim, v.detail);
    }
    println!("report: {}", out.join("report.md").display());
    let failed: Vec<_> = results.failed().collect();
    if !failed.is_empty() {
        for (c, e) in &failed {
            eprintln!("cell {} ({}) failed: {e}", c.index, c.label());
        }
        bail!(
            "{} of {} cells failed (shown in the report)",
            failed.len(),
            results.cells.len()
        );
    }
    let missing = results.missing().count();
    if missing > 0 {
        eprintln!("{missing} cells have no result (shown as missing in the report)");
    }
    Ok(())
}

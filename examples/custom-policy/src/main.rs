//! Runs `sweep.toml` (beside this crate's `Cargo.toml`) with this crate's policies
//! registered: `cargo run --release -p custom-policy -- [--quick] [--out DIR]`. Writes the
//! sweep's report (results.json, results.csv, report.md, plots) to DIR (default
//! `target/custom-policy`) and prints the comparison table and the verdicts.

use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use sweep::matrix::{Matrix, Source};

fn main() -> Result<()> {
    let mut quick = false;
    let mut out = PathBuf::from("target/custom-policy");
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "--out" => out = args.next().context("--out needs a directory")?.into(),
            other => bail!("unknown argument {other:?} (expected --quick, --out DIR)"),
        }
    }
    let registry = custom_policy::registry()?;
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sweep.toml");
    let matrix = Matrix::load_with(&Source::File(file), quick, registry)?;
    eprintln!(
        "{}: {} cells → {}",
        matrix.name,
        matrix.cells.len(),
        out.display()
    );
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cells = out.join("cells");
    let summary = sweep::run::run_cells(&matrix, &cells, None, jobs, false, &|_| {})?;
    let results = sweep::results::Results::collect(&matrix, &cells)?;
    sweep::report::write_all(&results, &out)?;
    print!("{}", sweep::report::comparison_table(&results));
    print!("{}", sweep::report::cells_table(&results));
    for v in sweep::verdict::verdicts(&results) {
        println!("{}: {} — {}", v.word(), v.claim, v.detail);
    }
    if summary.failed > 0 {
        bail!(
            "{} cells failed (see {})",
            summary.failed,
            out.join("report.md").display()
        );
    }
    println!("report: {}", out.join("report.md").display());
    Ok(())
}

//! `nandlab` — the command-line program of the nandlab NAND flash storage lab.

mod bench_cmd;
mod chip_cmd;
mod crash_cmd;
mod ecc_cmd;
mod ecc_side;
#[cfg(target_os = "linux")]
mod hugepages;
mod nbd;
mod recovery_bench;
mod run_cmd;
mod serve_cmd;
mod sweep_cmd;
mod volume_cmd;

use clap::{Parser, Subcommand};

#[cfg(target_os = "linux")]
#[global_allocator]
static ALLOC: hugepages::HugePageAlloc = hugepages::HugePageAlloc;

/// NAND flash storage lab: a chip emulator faithful to the physics, FTLs and a simulator.
#[derive(Debug, Parser)]
#[command(name = "nandlab", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a simulation: the built-in default, an experiment file, or a trace replay.
    Run(run_cmd::RunArgs),
    /// Simulator throughput and memory at steady state (digest mode, 32 GiB) and the
    /// bytes/digest mode ratio.
    Bench(bench_cmd::BenchArgs),
    /// Cut power at every (or a sample of) chip operation(s), recover, and check the
    /// durability contract.
    Crashtest(crash_cmd::CrashArgs),
    /// Serve a volume over NBD (127.0.0.1:10809 by default).
    Serve(serve_cmd::ServeArgs),
    /// A volume on a file-backed chip image: format, stress (killable), verify.
    #[command(subcommand)]
    Volume(volume_cmd::VolumeCommand),
    /// Inspect emulated NAND chips: presets, configurations and chip images.
    #[command(subcommand)]
    Chip(chip_cmd::ChipCommand),
    /// Run an experiment matrix: cells in parallel (resumable), results.json/csv, report.md
    /// with the published values, plots; or write a Slurm job array / collect one.
    Sweep(sweep_cmd::SweepArgs),
    /// Reproduce a paper's comparison from a shipped matrix (`--list` shows them).
    Reproduce(sweep_cmd::ReproduceArgs),
    /// The BCH codec (Linux lib/bch.c compatible) and the reliability calculator.
    #[command(subcommand)]
    Ecc(ecc_cmd::EccCommand),
    /// Print every subcommand's help as Markdown (docs/guide/cli-reference.md is this
    /// output; a test keeps it current).
    #[command(hide = true)]
    CliReference,
}

/// Every command's long help, depth first, as the guide's CLI reference.
fn cli_reference() -> String {
    use clap::CommandFactory;
    fn walk(cmd: &mut clap::Command, path: &str, out: &mut String) {
        if cmd.is_hide_set() {
            return;
        }
        let help = cmd.render_long_help().to_string();
        out.push_str(&format!(
            "## `{path}`\n\n```text\n{}\n```\n\n",
            help.trim_end()
        ));
        let names: Vec<String> = cmd
            .get_subcommands()
            .filter(|s| s.get_name() != "help")
            .map(|s| s.get_name().to_string())
            .collect();
        for n in names {
            let sub = cmd.find_subcommand_mut(&n).expect("listed");
            walk(sub, &format!("{path} {n}"), out);
        }
    }
    let mut out = String::from(
        "# CLI reference\n\nGenerated from the binary's own help (`nandlab cli-reference`); a \
         test fails when this file and the binary differ (`NANDLAB_BLESS=1 cargo test -p \
         nandlab --test cli cli_reference` rewrites it).\n\n",
    );
    let mut cmd = Cli::command();
    cmd.build();
    walk(&mut cmd, "nandlab", &mut out);
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    // Output cut short by the reader (`nandlab … | head`) ends the program quietly, as it
    // does a C tool, instead of panicking in `println!`. Not for the NBD server: a client
    // hanging up must not kill it (its sockets report EPIPE as an error it handles).
    #[cfg(target_os = "linux")]
    if !matches!(cli.command, Command::Serve(_)) {
        // SAFETY: restoring the default disposition of one signal, before any thread starts.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    let result = match cli.command {
        Command::Run(args) => run_cmd::run(args),
        Command::Bench(args) => bench_cmd::run(args),
        Command::Crashtest(args) => crash_cmd::run(args),
        Command::Volume(cmd) => volume_cmd::run(cmd),
        Command::Serve(args) => serve_cmd::run(args),
        Command::Chip(cmd) => chip_cmd::run(cmd),
        Command::Ecc(cmd) => ecc_cmd::run(cmd),
        Command::Sweep(args) => sweep_cmd::sweep(args),
        Command::Reproduce(args) => sweep_cmd::reproduce(args),
        Command::CliReference => {
            print!("{}", cli_reference());
            Ok(())
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // One line per cause, no backtrace: errors here are the user's input.
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

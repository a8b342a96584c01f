//! `nandlab crashtest`: the power-cut harness from the command line.

use crate::volume_cmd::RecoveryArg;
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use nand::{ChipConfig, CutMode};
use sim::crash::{run_case, run_plan, CaseId, CrashConfig, Outcome, Plan};
use std::io::IsTerminal;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ModeArg {
    /// Every operation index × every cut mode.
    Linear,
    /// A seeded sample of (operation, cut mode).
    Random,
    /// A seeded sample with a second cut after power-on (mount and the work after it).
    Nested,
}

#[derive(Debug, Args)]
pub struct CrashArgs {
    /// Which cut points to try.
    #[arg(long, value_enum, default_value = "random")]
    mode: ModeArg,
    /// Cases of the random and nested modes.
    #[arg(long, default_value_t = 500)]
    samples: usize,
    /// Workload and chip seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Host operations before the cut.
    #[arg(long, default_value_t = 400)]
    ops: usize,
    /// A flush every this many host operations.
    #[arg(long, default_value_t = 16)]
    flush_every: usize,
    /// Chip preset (bytes mode; keep it small).
    #[arg(long, default_value = "tiny-mlc")]
    preset: String,
    /// Blocks per plane (overrides the preset).
    #[arg(long)]
    blocks_per_plane: Option<u32>,
    /// Recovery procedure under test.
    #[arg(long, value_enum, default_value = "roll-forward")]
    recovery: RecoveryArg,
    /// Cut modes, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    cuts: Vec<String>,
    /// Replay one case by its id (seed:n:mode or seed:n:mode/k:mode).
    #[arg(long)]
    replay: Option<String>,
}

pub fn run(args: CrashArgs) -> Result<()> {
    let mut cfg = CrashConfig::small(args.seed);
    let mut chip = ChipConfig::preset(&args.preset)
        .with_context(|| format!("unknown chip preset `{}`", args.preset))?;
    if let Some(b) = args.blocks_per_plane {
        chip.geometry.blocks_per_plane = b;
    }
    chip.reliability.wear_fail_rate = 0.0;
    chip.reliability.wear_fail_growth = 0.0;
    chip.seed = args.seed;
    cfg.chip = chip;
    if args.flush_every < 2 {
        bail!(
            "--flush-every {}: every operation would be a flush (no write for a cut to land in); use 2 or more",
            args.flush_every
        );
    }
    cfg.ops = args.ops;
    cfg.flush_every = args.flush_every;
    cfg.fit_ecc().map_err(anyhow::Error::msg)?;
    cfg.scheme.set_recovery(args.recovery.into());
    if let Some(id) = &args.replay {
        let id: CaseId = id.parse().map_err(anyhow::Error::msg)?;
        return match run_case(&cfg, id) {
            Outcome::Passed => {
                println!("replay {id}: passed");
                Ok(())
            }
            Outcome::NotReached => bail!(
                "replay {id}: the workload ends before operation {}: nothing was cut",
                id.at
            ),
            Outcome::SecondNotReached => bail!(
                "replay {id}: the first cut checked out, but the second lies past the work after power-on: it never fired"
            ),
            Outcome::OutOfSpace(m) => bail!("replay {id}: out of space after recovery: {m}"),
            Outcome::Failed(m) => bail!("replay {id}: {m}"),
        };
    }
    let modes: Vec<CutMode> = if args.cuts.is_empty() {
        CutMode::ALL.to_vec()
    } else {
        args.cuts
            .iter()
            .map(|c| {
                CutMode::from_name(c).with_context(|| {
                    let names: Vec<_> = CutMode::ALL.iter().map(|m| m.name()).collect();
                    format!("unknown cut mode `{c}` (one of {})", names.join(", "))
                })
            })
            .collect::<Result<_>>()?
    };
    let plan = match args.mode {
        ModeArg::Linear => Plan::Linear,
        ModeArg::Random => Plan::Random {
            samples: args.samples,
        },
        ModeArg::Nested => Plan::Nested {
            samples: args.samples,
        },
    };
    let bar = if std::io::stderr().is_terminal() {
        indicatif::ProgressBar::new(0)
    } else {
        indicatif::ProgressBar::hidden()
    };
    let s = run_plan(&cfg, plan, &modes, &mut |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })
    .map_err(anyhow::Error::msg)?;
    bar.finish_and_clear();
    let w = &s.workload;
    println!(
        "crashtest: {:?} mode, {} recovery, chip {} (seed {})",
        args.mode,
        cfg.scheme.recovery().name(),
        args.preset,
        args.seed
    );
    println!(
        "workload:  {} host ops, {} chip ops; {} GC victims, {} checkpoints, {} padding pages, {} trims",
        cfg.ops,
        s.workload_ops,
        w.gc_victims,
        w.checkpoints,
        w.pad_pages,
        w.trims
    );
    print!("{s}");
    let missed = s.not_reached + s.second_not_reached;
    if s.cases > 0 && missed * 2 > s.cases {
        bail!(
            "{missed} of {} cases never fired their cut(s): the plan tests little (a longer workload or fewer ops per case)",
            s.cases
        );
    }
    if !s.failures.is_empty() || !s.out_of_space.is_empty() {
        bail!(
            "{} of {} cases failed (replay one with --replay ID)",
            s.failures.len() + s.out_of_space.len(),
            s.cases
        );
    }
    Ok(())
}

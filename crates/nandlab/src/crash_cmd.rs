//! `nandlab crashtest`: the power-cut harness from the command line.

use crate::volume_cmd::RecoveryArg;
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use ftl::SchemeKind;
use nand::{ChipConfig, CutMode};
use sim::crash::{run_case_described, run_plan, CaseId, CrashConfig, Outcome, Plan};
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

/// `--scheme`: the names and one-line descriptions of the registry (`ftl::SchemeKind`).
fn scheme_arg() -> impl clap::builder::TypedValueParser<Value = SchemeKind> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(SchemeKind::ALL.map(|k| PossibleValue::new(k.name()).help(k.about())))
        .map(|s| SchemeKind::from_name(&s).expect("a registry name"))
}

#[derive(Debug, Args)]
pub struct CrashArgs {
    /// FTL scheme under test. DFTL_por, SPFTL and SPFTL_log default `--preset` to
    /// `tiny-mlc-sp` (a chip with subpages); GFTL and RFTL need an SLC preset and always
    /// recover by their full scan (`--recovery` does not apply); the combined profile runs
    /// with over-provisioning 0.7 on the tiny MLC preset, every third logical page critical.
    #[arg(long, default_value = "page", value_parser = scheme_arg())]
    scheme: SchemeKind,
    /// Which cut points to try.
    #[arg(long, value_enum, default_value = "random")]
    mode: ModeArg,
    /// Cases of the random and nested modes (default 500).
    #[arg(long)]
    samples: Option<usize>,
    /// Workload and chip seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Host operations before the cut.
    #[arg(long, default_value_t = 400)]
    ops: usize,
    /// A flush every this many host operations.
    #[arg(long, default_value_t = 16)]
    flush_every: usize,
    /// An idle period every this many host operations (0: none): the clock moves on two
    /// hours and the FTL runs its idle-time work (GC and refresh jobs, erases, FLARES's
    /// scrub, the checkpoint's probe), so cuts land in that work too.
    #[arg(long, default_value_t = 0)]
    idle_every: usize,
    /// A discard of a range every this many host operations (0: none): every other one
    /// the whole volume (as mkfs discards), the others a random run of the span.
    #[arg(long, default_value_t = 0)]
    discard_every: usize,
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
    /// Percent of host operations that are trims.
    #[arg(long)]
    trim_pct: Option<u32>,
    /// Fraction of the volume the workload touches (0 < span ≤ 1).
    #[arg(long)]
    span: Option<f64>,
    /// A flush writes a checkpoint once this many blocks were opened since the last one.
    #[arg(long)]
    checkpoint_interval: Option<u32>,
    /// Checkpoint-region blocks per die (6 or more in all: two anchors and rotating
    /// blocks that swap with worn-less free blocks).
    #[arg(long)]
    region_blocks_per_die: Option<u32>,
    /// Foreground GC threshold (free blocks per die, ≥ 2).
    #[arg(long)]
    gc_threshold: Option<u32>,
    /// Victim policy: greedy, cost-benefit, ap-weighted.
    #[arg(long)]
    victim: Option<String>,
    /// Asymmetric Programming: critical pages kept out of LSB pages (MSB-critical
    /// placement, asymmetric GC copy order), every `--critical-every`-th logical page
    /// written critical; the invariant is checked after every operation and mount.
    #[arg(long)]
    ap: bool,
    /// Meta-Cure: every critical page also written as a backup copy in another block,
    /// every `--critical-every`-th logical page (default 6) written critical, the
    /// over-provisioning raised to at least 0.35 for the copies; `verify` checks the replica
    /// sets after every operation and mount.
    #[arg(long)]
    meta_cure: bool,
    /// Writes of every N-th logical page carry the critical hint (default 3 with `--ap` or
    /// `--meta-cure`).
    #[arg(long)]
    critical_every: Option<u64>,
    /// Static wear levelling as SPREAD:CHECK_EVERY (e.g. 3:2), or `off`.
    #[arg(long)]
    wear_leveling: Option<String>,
    /// Channels (overrides the preset).
    #[arg(long)]
    channels: Option<u32>,
    /// Dies per channel (overrides the preset).
    #[arg(long)]
    dies_per_channel: Option<u32>,
    /// How the checkpoint region's units reach flash (page-level and combined schemes):
    /// `whole-page`, or `subpage` (SPFTL's subpage programming; a preset with subpages,
    /// e.g. `tiny-mlc-sp`).
    #[arg(long)]
    meta_writer: Option<MetaWriterArg>,
    /// A demand-paged map (page-level scheme): N translation pages cached in RAM, the
    /// rest read from the map partition on a miss (`map_cache_pages`).
    #[arg(long)]
    map_cache_pages: Option<u32>,
    /// Entries per translation page with `--map-cache-pages` (`map_tp_entries`; default a
    /// metadata unit's worth): small ones give a small chip many translation pages.
    #[arg(long)]
    map_tp_entries: Option<u32>,
    /// SPFTL_log's logs over the demand-paged map (`map_log`; with `--map-cache-pages`, on
    /// a preset with subpages, e.g. `tiny-mlc-sp`).
    #[arg(long)]
    map_log: bool,
}

/// `--meta-writer` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum MetaWriterArg {
    /// A unit is a whole page.
    WholePage,
    /// A unit is a subpage (SPFTL).
    Subpage,
}

/// Applies the FTL and workload flags to `cfg`; errors name the flag.
fn configure(args: &CrashArgs, cfg: &mut CrashConfig) -> Result<()> {
    if let Some(t) = args.trim_pct {
        if t > 100 {
            bail!("--trim-pct {t}: a percentage is at most 100");
        }
        cfg.trim_pct = t;
    }
    if let Some(s) = args.span {
        if !(s > 0.0 && s <= 1.0) {
            bail!("--span {s}: must be in (0, 1]");
        }
        cfg.span = s;
    }
    // The flags only the page-level scheme takes.
    let page_only = [
        (args.ap, "--ap"),
        (args.meta_cure, "--meta-cure"),
        (args.gc_threshold.is_some(), "--gc-threshold"),
        (args.victim.is_some(), "--victim"),
        (args.critical_every.is_some(), "--critical-every"),
        (args.meta_writer.is_some(), "--meta-writer"),
        (args.map_cache_pages.is_some(), "--map-cache-pages"),
        (args.map_tp_entries.is_some(), "--map-tp-entries"),
        (args.map_log, "--map-log"),
    ];
    if matches!(
        cfg.scheme,
        ftl::SchemeConfig::Gftl(_)
            | ftl::SchemeConfig::Rftl(_)
            | ftl::SchemeConfig::DftlPor(_)
            | ftl::SchemeConfig::Spftl(_)
            | ftl::SchemeConfig::SpftlLog(_)
    ) {
        let with_checkpoints = [
            (args.checkpoint_interval.is_some(), "--checkpoint-interval"),
            (
                args.region_blocks_per_die.is_some(),
                "--region-blocks-per-die",
            ),
            (args.wear_leveling.is_some(), "--wear-leveling"),
        ];
        if let Some((_, flag)) = page_only.iter().chain(&with_checkpoints).find(|f| f.0) {
            bail!("{flag} does not apply to --scheme {}", cfg.scheme.name());
        }
        return Ok(());
    }
    if let ftl::SchemeConfig::Block(b) = &mut cfg.scheme {
        for (set, flag) in page_only {
            if set {
                bail!("{flag} applies to the page-level scheme, not --scheme block");
            }
        }
        if let Some(i) = args.checkpoint_interval {
            if i == 0 {
                bail!("--checkpoint-interval 0: must be at least 1");
            }
            b.checkpoint_interval = i;
        }
        if let Some(r) = args.region_blocks_per_die {
            b.region_blocks_per_die = r;
        }
        if let Some(w) = &args.wear_leveling {
            b.wear_leveling = parse_wear_leveling(w)?;
        }
        return Ok(());
    }
    let (ftl::SchemeConfig::Page(p) | ftl::SchemeConfig::Combined(p)) = &mut cfg.scheme else {
        unreachable!("the other schemes are handled above")
    };
    if args.ap {
        p.placement = ftl::policy::PlacementKind::MsbCritical;
        p.copy_order = ftl::policy::CopyOrderKind::Asymmetric;
        cfg.critical_every = 3;
    }
    if args.meta_cure {
        p.replicas = 1;
        p.over_provisioning = p.over_provisioning.max(0.35);
        cfg.critical_every = 6;
    }
    if let Some(n) = args.critical_every {
        cfg.critical_every = n;
    }
    if let Some(i) = args.checkpoint_interval {
        p.checkpoint_interval = i;
    }
    if let Some(r) = args.region_blocks_per_die {
        p.region_blocks_per_die = r;
    }
    if let Some(g) = args.gc_threshold {
        if g < 2 {
            bail!("--gc-threshold {g}: must be at least 2");
        }
        p.gc_threshold = g;
    }
    if let Some(v) = &args.victim {
        p.victim = match v.as_str() {
            "greedy" => ftl::VictimKind::Greedy,
            "cost-benefit" => ftl::VictimKind::CostBenefit,
            "ap-weighted" => ftl::VictimKind::ApWeighted,
            o => bail!("--victim {o:?}: one of greedy, cost-benefit, ap-weighted"),
        };
    }
    if let Some(w) = &args.wear_leveling {
        p.wear_leveling = parse_wear_leveling(w)?;
    }
    if let Some(m) = args.meta_writer {
        p.meta_writer = match m {
            MetaWriterArg::WholePage => ftl::policy::MetaWriterKind::WholePage,
            MetaWriterArg::Subpage => ftl::policy::MetaWriterKind::Subpage,
        };
    }
    if let Some(n) = args.map_cache_pages {
        p.map_cache_pages = n;
    }
    if let Some(n) = args.map_tp_entries {
        if p.map_cache_pages == 0 {
            bail!("--map-tp-entries {n}: applies with --map-cache-pages");
        }
        p.map_tp_entries = n;
    }
    if args.map_log {
        if p.map_cache_pages == 0 {
            bail!("--map-log: applies with --map-cache-pages");
        }
        p.map_log = true;
    }
    Ok(())
}

/// `--wear-leveling SPREAD:CHECK_EVERY` or `off`.
fn parse_wear_leveling(w: &str) -> Result<Option<ftl::WearLevelConfig>> {
    if w == "off" {
        return Ok(None);
    }
    let parse = |x: Option<&str>| x.and_then(|v| v.parse::<u32>().ok());
    let mut it = w.split(':');
    match (parse(it.next()), parse(it.next()), it.next()) {
        (Some(spread), Some(check_every), None) if check_every > 0 => {
            Ok(Some(ftl::WearLevelConfig {
                spread,
                check_every,
            }))
        }
        _ => bail!("--wear-leveling {w:?}: SPREAD:CHECK_EVERY (e.g. 3:2) or off"),
    }
}

pub fn run(args: CrashArgs) -> Result<()> {
    let mut args = args;
    if matches!(
        args.scheme,
        SchemeKind::DftlPor | SchemeKind::Spftl | SchemeKind::SpftlLog
    ) && args.preset == "tiny-mlc"
    {
        args.preset = "tiny-mlc-sp".into();
    }
    let mut cfg = base_config(&args)?;
    let chip = crash_chip(&args)?;
    cfg.chip = chip;
    if args.flush_every < 2 {
        bail!(
            "--flush-every {}: every operation would be a flush (no write for a cut to land in); use 2 or more",
            args.flush_every
        );
    }
    if args.idle_every == 1 {
        bail!("--idle-every 1: every operation would be idle time; use 0 (none) or 2 or more");
    }
    cfg.ops = args.ops;
    cfg.flush_every = args.flush_every;
    cfg.idle_every = args.idle_every;
    cfg.discard_every = args.discard_every;
    configure(&args, &mut cfg)?;
    cfg.fit_ecc().map_err(anyhow::Error::msg)?;
    cfg.scheme.set_recovery(args.recovery.into());
    if let Some(id) = &args.replay {
        return replay(&cfg, id);
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
    let samples = args.samples.unwrap_or(500);
    if samples == 0 {
        bail!("--samples 0: a run of no cases checks nothing");
    }
    let plan = match args.mode {
        ModeArg::Linear if args.samples.is_some() => {
            bail!("--samples applies to --mode random and nested; linear tries every operation")
        }
        ModeArg::Linear => Plan::Linear,
        ModeArg::Random => Plan::Random { samples },
        ModeArg::Nested => Plan::Nested { samples },
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
        "workload:  {} host ops, {} chip ops; {} GC victims, {} checkpoints, {} region swaps, {} padding pages, {} SLC-mode host blocks, {} trims",
        cfg.ops,
        s.workload_ops,
        w.gc_victims,
        w.checkpoints,
        w.region_swaps,
        w.pad_pages,
        w.slc_blocks,
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

/// The harness's configuration for `--scheme` on `--preset` (DFTL's schemes on a chip
/// with subpages, GFTL and RFTL on an SLC chip).
fn base_config(args: &CrashArgs) -> Result<CrashConfig> {
    let cfg = match args.scheme {
        SchemeKind::Page => CrashConfig::small(args.seed),
        SchemeKind::Combined => CrashConfig::small_combined(args.seed),
        SchemeKind::DftlPor | SchemeKind::Spftl | SchemeKind::SpftlLog => {
            let mode = match args.scheme {
                SchemeKind::DftlPor => ftl::MetaMode::Page,
                SchemeKind::Spftl => ftl::MetaMode::Subpage,
                _ => ftl::MetaMode::Log,
            };
            CrashConfig::small_dftl(args.seed, &args.preset, mode)
        }
        SchemeKind::Block => CrashConfig::small_block(args.seed, &args.preset),
        SchemeKind::Gftl | SchemeKind::Rftl => {
            let kind = if args.scheme == SchemeKind::Gftl {
                ftl::RtKind::Gftl
            } else {
                ftl::RtKind::Rftl
            };
            let chip = ChipConfig::preset(&args.preset)
                .with_context(|| format!("unknown chip preset `{}`", args.preset))?;
            if chip.cell != nand::CellType::Slc {
                bail!(
                    "--scheme {}: needs an SLC preset (e.g. --preset tiny-slc), not {}",
                    kind.name(),
                    args.preset
                );
            }
            CrashConfig::small_rt(args.seed, &args.preset, kind)
        }
    };
    Ok(cfg)
}

/// The chip of `--preset`, with `--blocks-per-plane`, `--channels`, `--dies-per-channel`
/// and the seed; no wear failures (a cut is the only fault). Refused when its pages with
/// real bytes would not fit in the RAM available.
fn crash_chip(args: &CrashArgs) -> Result<ChipConfig> {
    let mut chip = ChipConfig::preset(&args.preset)
        .with_context(|| format!("unknown chip preset `{}`", args.preset))?;
    if let Some(b) = args.blocks_per_plane {
        chip.geometry.blocks_per_plane = b;
    }
    if let Some(c) = args.channels {
        chip.geometry.channels = c;
    }
    if let Some(d) = args.dies_per_channel {
        chip.geometry.dies_per_channel = d;
    }
    chip.validate()
        .map_err(|e| anyhow::anyhow!("chip geometry: {e}"))?;
    chip.reliability.wear_fail_rate = 0.0;
    chip.reliability.wear_fail_growth = 0.0;
    chip.seed = args.seed;
    // Every case holds the whole chip in RAM with real bytes: refuse up front what the
    // machine cannot hold, rather than thrash or be killed half-way.
    let need = chip.geometry.total_pages() * chip.geometry.raw_page_size() as u64;
    if let Some(avail) = mem_available() {
        if need > avail / 10 * 9 {
            bail!(
                "chip {}: a crash test keeps the chip's pages in RAM with real bytes (up to {} MiB with their spare areas), but only {} MiB are available; use a smaller preset or --blocks-per-plane",
                args.preset,
                need >> 20,
                avail >> 20
            );
        }
    }
    Ok(chip)
}

/// `--replay ID`: one case, described and checked.
fn replay(cfg: &CrashConfig, id: &str) -> Result<()> {
    let id: CaseId = id.parse().map_err(anyhow::Error::msg)?;
    let (outcome, info) = run_case_described(cfg, id);
    if let Some(i) = &info {
        println!("replay {id}: {} [{}]", i.text, i.class);
    }
    match outcome {
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
    }
}

/// Bytes of memory available to new allocations (`MemAvailable` of /proc/meminfo).
fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

//! `nandlab chip …`: chip presets, configuration files and images.

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use nand::backend::FileStorage;
use nand::{BitKind, Chip, ChipConfig, Nanos, PairingTable, PRESET_NAMES};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The preset used when no chip is named.
pub const DEFAULT_PRESET: &str = "micron-29f64g";

#[derive(Debug, Subcommand)]
pub enum ChipCommand {
    /// Print a chip's geometry, capacity, timings, reliability and page pairing.
    Info(InfoArgs),
    /// List the built-in presets.
    Presets,
    /// Create an erased chip image file (factory-bad blocks drawn from the seed).
    Format {
        #[command(flatten)]
        chip: ChipSource,
        /// The image file to create.
        #[arg(long)]
        image: PathBuf,
        /// Overwrite an existing, non-empty image (what it holds is lost).
        #[arg(long)]
        force: bool,
    },
    /// Age a chip image: cycle every good block through program and erase (the chip's
    /// rules and wear model; blocks that wear out turn grown-bad) until it has PE cycles.
    /// Blocks holding data lose it: age an image before formatting a volume on it.
    Age {
        /// The chip image.
        #[arg(long)]
        image: PathBuf,
        /// Target P/E cycles of every block.
        #[arg(long)]
        pe: u32,
    },
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    #[command(flatten)]
    chip: ChipSource,
    /// Show the state of an existing chip image (erase counts, bad blocks) instead.
    #[arg(long, conflicts_with_all = ["preset", "config"])]
    image: Option<PathBuf>,
    /// Print the full configuration as TOML (a starting point for `--config`).
    #[arg(long)]
    toml: bool,
}

/// Where a chip configuration comes from.
#[derive(Debug, Args)]
pub struct ChipSource {
    /// A built-in preset (see `nandlab chip presets`).
    #[arg(long, conflicts_with = "config")]
    preset: Option<String>,
    /// A TOML chip file (a preset plus overrides, or every field).
    #[arg(long)]
    config: Option<PathBuf>,
}

impl ChipSource {
    /// The chosen configuration, defaulting to [`DEFAULT_PRESET`].
    pub fn load(&self) -> Result<ChipConfig> {
        if let Some(path) = &self.config {
            return load_config(path);
        }
        let name = self.preset.as_deref().unwrap_or(DEFAULT_PRESET);
        match ChipConfig::preset(name) {
            Some(c) => Ok(c),
            None => bail!(
                "unknown preset {name:?}; known presets: {}",
                PRESET_NAMES.join(", ")
            ),
        }
    }
}

/// Reads and validates a TOML chip file; errors name the file and the key.
pub fn load_config(path: &Path) -> Result<ChipConfig> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read chip file {}", path.display()))?;
    ChipConfig::from_toml_str(&text).map_err(|e| {
        let at = key_line(&text, &e.field).map_or(String::new(), |l| format!(":{l}"));
        anyhow::anyhow!("chip file {}{at}: {e}", path.display())
    })
}

/// The line of `text` (1-based) that sets dotted `key` (`geometry.page_size`: the
/// `page_size = …` line under `[geometry]`, or a dotted `geometry.page_size = …`).
fn key_line(text: &str, key: &str) -> Option<usize> {
    let (section, leaf) = key.rsplit_once('.').unwrap_or(("", key));
    let mut current = String::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with('[') && t.ends_with(']') {
            current = t.trim_matches(|c| c == '[' || c == ']').trim().to_string();
            continue;
        }
        let Some((k, _)) = t.split_once('=') else {
            continue;
        };
        let k = k.trim();
        let full = if current.is_empty() {
            k.to_string()
        } else {
            format!("{current}.{k}")
        };
        if full == key || (current == section && k == leaf) {
            return Some(i + 1);
        }
    }
    None
}

pub fn run(cmd: ChipCommand) -> Result<()> {
    match cmd {
        ChipCommand::Info(args) => {
            if let Some(image) = &args.image {
                let (storage, config) = FileStorage::open(image)
                    .with_context(|| format!("cannot open chip image {}", image.display()))?;
                let chip = Chip::new(config, storage)?;
                print!("{}", describe(chip.config()));
                print!("{}", image_state(&chip));
                return Ok(());
            }
            let config = args.chip.load()?;
            if args.toml {
                print!("{}", config.to_toml_string());
            } else {
                print!("{}", describe(&config));
            }
            Ok(())
        }
        ChipCommand::Presets => {
            for name in PRESET_NAMES {
                let c = ChipConfig::preset(name).expect("listed preset exists");
                println!(
                    "{name:<16} {:<4} {:>9}  {} B + {} B pages, {} pages/block",
                    c.cell.name().to_uppercase(),
                    human_bytes(c.geometry.capacity_bytes()),
                    c.geometry.page_size,
                    c.geometry.spare_size,
                    c.geometry.pages_per_block
                );
            }
            Ok(())
        }
        ChipCommand::Age { image, pe } => {
            let (storage, config) = FileStorage::open(&image)
                .with_context(|| format!("cannot open chip image {}", image.display()))?;
            let mut chip = Chip::new(config, storage)?;
            let bad_before = chip.bad_blocks().count();
            let r = chip
                .age_all(nand::Nanos::ZERO, pe)
                .with_context(|| format!("aging {}", image.display()))?;
            chip.sync()?;
            let bad = chip.bad_blocks().count();
            println!(
                "aged {} to {pe} P/E: {} erases and {} programs ({:.1} h of array time), {} blocks wore out ({} bad in all)",
                image.display(),
                r.erases,
                r.programs,
                r.time.0 as f64 / 3.6e12,
                bad - bad_before,
                bad
            );
            Ok(())
        }
        ChipCommand::Format { chip, image, force } => {
            crate::volume_cmd::refuse_overwrite(&image, force, "`chip format`")?;
            let config = chip.load()?;
            let storage = FileStorage::create(&image, &config)
                .with_context(|| format!("cannot create chip image {}", image.display()))?;
            let mut chip = Chip::new(config, storage)?;
            chip.sync()?;
            let bad = chip.bad_blocks().count();
            println!(
                "formatted {} ({}, {}), {} factory-bad blocks",
                image.display(),
                chip.config().name,
                human_bytes(chip.geometry().capacity_bytes()),
                bad
            );
            Ok(())
        }
    }
}

fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if v.fract() == 0.0 {
        format!("{v} {}", UNITS[u])
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}

/// The human description printed by `chip info`.
pub fn describe(c: &ChipConfig) -> String {
    let g = &c.geometry;
    let t = &c.timing;
    let r = &c.reliability;
    let mut s = String::new();
    let w = &mut s;
    let _ = writeln!(
        w,
        "chip        {} ({}, layout {}, seed {})",
        c.name,
        c.cell.name().to_uppercase(),
        c.layout.name(),
        c.seed
    );
    let _ = writeln!(
        w,
        "geometry    {} channel(s) × {} die(s) × {} plane(s) × {} blocks × {} pages",
        g.channels, g.dies_per_channel, g.planes_per_die, g.blocks_per_plane, g.pages_per_block
    );
    let _ = writeln!(
        w,
        "page        {} B data + {} B spare, {} subpage(s) of {} B + {} B",
        g.page_size,
        g.spare_size,
        g.subpages_per_page,
        g.subpage_size(),
        g.subpage_spare_size()
    );
    let _ = writeln!(
        w,
        "capacity    {} ({} bytes) in {} blocks, {} pages; block = {}",
        human_bytes(g.capacity_bytes()),
        g.capacity_bytes(),
        g.total_blocks(),
        g.total_pages(),
        human_bytes(g.block_bytes())
    );
    let kinds: &[BitKind] = match c.cell.bits_per_cell() {
        1 => &[BitKind::Lsb],
        2 => &[BitKind::Lsb, BitKind::Msb],
        _ => &[BitKind::Lsb, BitKind::Csb, BitKind::Msb],
    };
    let per_kind = |f: &dyn Fn(BitKind) -> Nanos| {
        kinds
            .iter()
            .map(|&k| format!("{} {}", k.name(), f(k)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(w, "read        {}", per_kind(&|k| t.read(k)));
    let _ = writeln!(w, "program     {}", per_kind(&|k| t.program(k)));
    let _ = writeln!(w, "erase       {}", t.erase());
    let _ = writeln!(
        w,
        "transfer    {:.3} ns/B ({} per page + spare)",
        t.transfer_ps_per_byte as f64 / 1000.0,
        t.transfer(g.raw_page_size())
    );
    let _ = writeln!(w, "endurance   {} P/E cycles; NOP {}; factory-bad rate {}; wear failure p = {} + {}·(pe−E)/E past E",
        r.endurance, r.nop, r.factory_bad_rate, r.wear_fail_rate, r.wear_fail_growth);
    match PairingTable::new(c.layout, c.cell, g.pages_per_block) {
        Ok(p) => s.push_str(&pairing_summary(&p)),
        Err(e) => {
            let _ = writeln!(s, "pairing     invalid: {e}");
        }
    }
    // WAO-GC's bounds (Ref. 003): what partial GC can guarantee on this chip.
    match ftl::rt_bounds::WaoBounds::new(c, 0.01) {
        Ok(b) => {
            let _ = writeln!(
                s,
                "real-time   partial GC: α = {} copies per step, logical/physical ratio up to U(σ) = {:.2} % (exact form of eq. 6: {:.2} %), worst write t_er + t_wr = {:.3} ms",
                b.alpha,
                b.u_sigma * 100.0,
                b.lambda_max as f64 / b.pi as f64 * 100.0,
                b.worst_write() as f64 / 1e6
            );
        }
        Err(e) => {
            let _ = writeln!(s, "real-time   {e}");
        }
    }
    s
}

fn pairing_summary(p: &PairingTable) -> String {
    let counts = p.kind_counts();
    let mut s = format!(
        "pairing     {} word lines/block; pages per kind: LSB {}, CSB {}, MSB {}\n",
        p.wordline_count(),
        counts[0],
        counts[1],
        counts[2]
    );
    if p.layout().cell_type().bits_per_cell() > 1 {
        let show = |wl: u32| {
            let pages: Vec<String> = p.wordline_pages(wl).iter().map(|x| x.to_string()).collect();
            format!("WL{wl}=({})", pages.join(","))
        };
        let n = p.wordline_count();
        let head: Vec<String> = (0..n.min(4)).map(show).collect();
        let tail: Vec<String> = (n.saturating_sub(2).max(4)..n).map(show).collect();
        let _ = writeln!(
            s,
            "            {}{}{}",
            head.join(" "),
            if tail.is_empty() { "" } else { " … " },
            tail.join(" ")
        );
    }
    s
}

fn image_state<S: nand::Storage>(chip: &Chip<S>) -> String {
    let counts: Vec<u32> = chip.erase_counts().collect();
    let n = counts.len().max(1) as f64;
    let mean = counts.iter().map(|&c| c as f64).sum::<f64>() / n;
    let max = counts.iter().copied().max().unwrap_or(0);
    let mut factory = 0;
    let mut grown = 0;
    for (_, status) in chip.bad_blocks() {
        match status {
            nand::BlockStatus::FactoryBad => factory += 1,
            _ => grown += 1,
        }
    }
    let mut by_wear: Vec<(u32, usize)> = counts.iter().enumerate().map(|(b, &c)| (c, b)).collect();
    by_wear.sort_unstable_by(|a, b| b.cmp(a));
    let most: Vec<String> = by_wear
        .iter()
        .take(8)
        .map(|&(c, b)| format!("{b}: {c}"))
        .collect();
    let bad: Vec<String> = chip.bad_blocks().map(|(b, _)| b.to_string()).collect();
    format!(
        "image       erase count mean {mean:.2}, max {max}; bad blocks: {factory} factory, {grown} grown\n            most erased (block: erases) {}\n            bad blocks {}\n",
        most.join(", "),
        if bad.is_empty() { "none".to_string() } else { bad.join(", ") }
    )
}

//! The `dcr` kind: DCR's Tables 1–2 and its capacity estimate (Ref. 004, §4) — a
//! block-level FTL ([`ftl::BlockFtl`]) on DCR's 1 GiB SLC chip (`slc-1g-dcr`, scaled by
//! `capacity_mib`), a file-system image written and checkpointed, then one workload shape
//! cut by a crash once it has allocated `crash_pct` % of the blocks the whole workload
//! allocates; the same crash image is recovered by DCR and by the version-based scan.
//!
//! The workload shapes follow the paper's benchmarks on ext2 (logical pages of 2 KiB; the
//! first 64 logical blocks hold the file system's metadata, a log-like area where inode
//! and bitmap updates land in fresh pages of allocated blocks — the first page of each is
//! written with the image; files are laid out contiguously by an allocation cursor):
//!
//! - `mplayer`: 8.9 MB read sequentially from an existing file, one metadata update per
//!   256 pages read (0 blocks allocated, as in Table 1);
//! - `filecopy1` / `filecopy2` / `filecopy3`: a file of 1.024 / 0.256 / 10.752 MB read and
//!   written to fresh space, two metadata updates per 64 pages;
//! - `bonnie`: 24.064 MB written sequentially in 8 KiB chunks, then read back;
//! - `postmark`: 600 files of 0.5–10 KiB created, then transactions (read, append, create,
//!   delete — ext2 without `discard`: a delete updates metadata only) until 8.576 MB of
//!   data have been written;
//! - `tiotest`: four threads each writing a 20.6 MB file in 4 KiB chunks, interleaved, then
//!   random 4 KiB reads.
//!
//! Times are simulated NAND time (reads on one die serialize), plus, where a cell sets one,
//! the firmware's CPU time from a [`CpuCost`] model (zero by default). The paper measured
//! CPU and NAND time together on an ARM11 board; `reproduce dcr` runs both: NAND time
//! alone, and NAND time with the CPU cost calibrated on the paper's Table 2 and §4.

use crate::Metrics;
use controller::{Controller, ControllerConfig, PayloadMode};
use ftl::{BlockFtl, BlockFtlConfig, Ftl, RecoveryKind, RecoveryReport, SchemeConfig};
use nand::{Chip, ChipConfig, ConstantRber, Lpn, Nanos, RamStorage};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde::Deserialize;
use sim::{ReqKind, RequestSource, TraceFormat, TraceOptions, TraceReader};
use std::path::Path;

/// Metrics of a `dcr` cell.
pub const METRICS: [&str; 16] = [
    "capacity_mib",
    "blocks",
    "workload_blocks",
    "updated_blocks",
    "dcr_ms",
    "vb_ms",
    "dcr_nand_ms",
    "vb_nand_ms",
    "reduction_pct",
    "speedup",
    "dcr_blocks_read",
    "vb_blocks_read",
    "dcr_pages_read",
    "vb_pages_read",
    "map_ram_bytes",
    "written_mb",
];

/// Parameters of a `dcr` cell.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DcrParams {
    /// Workload shape (see the module docs).
    pub workload: String,
    /// The crash comes once the workload has allocated this share of the blocks it
    /// allocates in all (1..=100).
    #[serde(default = "hundred")]
    pub crash_pct: u32,
    /// Chip capacity in MiB (1024: DCR's chip; up to 128 GiB, digest mode).
    #[serde(default = "gib")]
    pub capacity_mib: u64,
    /// Workload seed.
    #[serde(default = "one")]
    pub seed: u64,
    /// For the `ext2-*` workloads: the block trace captured in a Linux guest (blkparse,
    /// relative to the matrix's folder) holding every shape between phase markers.
    #[serde(default)]
    pub trace: Option<String>,
    /// The size of that guest's disk in bytes: marker k is its read at `size - (k + 1)`
    /// MiB, past the file system (which ends 16 MiB before the end).
    #[serde(default)]
    pub trace_disk_bytes: Option<u64>,
    /// The firmware's CPU time added to both procedures' NAND time (none by default).
    #[serde(default)]
    pub cpu: CpuCost,
}

/// A recovery's CPU time on the controller, beside the NAND time the simulation charges:
/// what both procedures spend whatever they read — a fixed start (boot, checkpoint
/// parsing), a per-block part for every block of the chip (its entry of the checkpoint's
/// block table loaded, the RAM tables and allocation lists built) and a part per updated
/// block replayed (the update function: the block's records parsed, the map and lists
/// updated). The header scans and record reads themselves are NAND time, charged by the
/// simulation; the version-based scan's extra cost is there (its header reads).
///
/// The calibration `reproduce dcr` uses (`cost = "arm11"`) fits the paper's board: on
/// Table 2 the paper's DCR is 0.228 s + 34.59 ms per updated block (least squares over its
/// 12 points) where nandlab's NAND time is 5.7 ms + 1.73 ms per block, so 32.85 ms per
/// updated block and 222 ms at 1 GiB are CPU; §4's estimate has DCR grow 10.38 µs per block
/// of capacity (2.8 s at 4 GB to 13.34 s at 128 GB) where nandlab's NAND time grows
/// 0.45 µs, so 9.93 µs per block is CPU, leaving 141 ms fixed.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CpuCost {
    /// Fixed, ms.
    pub fixed_ms: f64,
    /// Per block of the chip, µs.
    pub block_us: f64,
    /// Per updated block, ms.
    pub updated_ms: f64,
}

impl CpuCost {
    /// The CPU time of a recovery on a chip of `blocks` blocks that replays `updated`
    /// blocks, ms.
    pub fn ms(&self, blocks: u64, updated: u64) -> f64 {
        self.fixed_ms + self.block_us * blocks as f64 / 1e3 + self.updated_ms * updated as f64
    }

    fn check(&self) -> Result<(), String> {
        for (k, v) in [
            ("fixed_ms", self.fixed_ms),
            ("block_us", self.block_us),
            ("updated_ms", self.updated_ms),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!(
                    "cpu.{k} = {v}: a CPU time is finite and not negative"
                ));
            }
        }
        Ok(())
    }
}

fn hundred() -> u32 {
    100
}
fn gib() -> u64 {
    1024
}
fn one() -> u64 {
    1
}

const SHAPES: [&str; 7] = [
    "mplayer",
    "filecopy1",
    "filecopy2",
    "filecopy3",
    "bonnie",
    "postmark",
    "tiotest",
];

/// The captured trace's phases (phase 0 is the image).
const TRACE_PHASES: [(&str, usize); 7] = [
    ("ext2-mplayer", 1),
    ("ext2-filecopy1", 2),
    ("ext2-filecopy2", 3),
    ("ext2-filecopy3", 4),
    ("ext2-bonnie", 5),
    ("ext2-postmark", 6),
    ("ext2-tiotest", 7),
];

/// Parses and checks a cell's parameters.
pub fn params(config: &toml::Table) -> Result<DcrParams, String> {
    let p: DcrParams = toml::Value::Table(config.clone())
        .try_into()
        .map_err(|e: toml::de::Error| e.message().to_string())?;
    let traced = TRACE_PHASES.iter().any(|(n, _)| *n == p.workload);
    if !SHAPES.contains(&p.workload.as_str()) && !traced {
        return Err(format!(
            "workload = {:?}: one of {}, or a captured one: {}",
            p.workload,
            SHAPES.join(", "),
            TRACE_PHASES.map(|(n, _)| n).join(", ")
        ));
    }
    if traced && (p.trace.is_none() || p.trace_disk_bytes.is_none()) {
        return Err(format!(
            "workload = {:?} replays a captured trace: set trace (its path) and trace_disk_bytes",
            p.workload
        ));
    }
    if !(1..=100).contains(&p.crash_pct) {
        return Err(format!("crash_pct = {}: must be in 1..=100", p.crash_pct));
    }
    if !(64..=128 << 10).contains(&p.capacity_mib) {
        return Err(format!(
            "capacity_mib = {}: must be in 64..=131072",
            p.capacity_mib
        ));
    }
    p.cpu.check()?;
    Ok(p)
}

/// One host operation of a workload (logical 2 KiB pages).
#[derive(Debug, Clone, Copy)]
enum Op {
    Write(u64),
    Read(u64),
}

/// Pages per MB (decimal, as the paper's sizes) of 2 KiB pages.
fn pages_of_mb(mb: f64) -> u64 {
    (mb * 1e6 / 2048.0).round() as u64
}

/// The file-system layout a workload runs on.
struct Fs {
    /// First page of the metadata log area, and its next page.
    meta_next: u64,
    meta_end: u64,
    /// First page of the existing files (written before the checkpoint).
    existing: u64,
    existing_pages: u64,
    ppb: u64,
    /// Allocation cursor for new data.
    cursor: u64,
    end: u64,
}

/// Logical blocks of file-system metadata.
const META_BLOCKS: u64 = 64;

impl Fs {
    fn new(logical: u64, ppb: u64) -> Fs {
        let existing_pages = pages_of_mb(16.0);
        Fs {
            meta_next: 1,
            meta_end: META_BLOCKS * ppb,
            ppb,
            existing: META_BLOCKS * ppb,
            existing_pages,
            cursor: (META_BLOCKS * ppb + existing_pages).div_ceil(ppb) * ppb,
            end: logical,
        }
    }

    /// A metadata update: the next page of the log area (wrapping).
    fn meta(&mut self, out: &mut Vec<Op>) {
        out.push(Op::Write(self.meta_next));
        self.meta_next = (self.meta_next + 1) % self.meta_end;
        if self.meta_next.is_multiple_of(self.ppb) {
            // Each block's first page holds the image's metadata.
            self.meta_next += 1;
        }
    }

    /// `n` fresh pages at the cursor.
    fn alloc(&mut self, n: u64) -> u64 {
        let at = self.cursor;
        self.cursor = (self.cursor + n).min(self.end);
        at
    }
}

/// The operations of workload `shape` (see the module docs).
fn workload(shape: &str, fs: &mut Fs, seed: u64) -> Vec<Op> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    match shape {
        "mplayer" => {
            for i in 0..pages_of_mb(8.9) {
                out.push(Op::Read(fs.existing + i % fs.existing_pages));
                if i % 256 == 255 {
                    fs.meta(&mut out);
                }
            }
        }
        "filecopy1" | "filecopy2" | "filecopy3" => {
            let mb = match shape {
                "filecopy1" => 1.024,
                "filecopy2" => 0.256,
                _ => 10.752,
            };
            let n = pages_of_mb(mb);
            let dst = fs.alloc(n);
            for i in 0..n {
                out.push(Op::Read(fs.existing + i % fs.existing_pages));
                out.push(Op::Write(dst + i));
                if i % 64 == 63 {
                    fs.meta(&mut out);
                    fs.meta(&mut out);
                }
            }
            fs.meta(&mut out);
        }
        "bonnie" => {
            let n = pages_of_mb(24.064);
            let dst = fs.alloc(n);
            for i in 0..n {
                out.push(Op::Write(dst + i));
                if i % 256 == 255 {
                    fs.meta(&mut out);
                }
            }
            for i in 0..n {
                out.push(Op::Read(dst + i));
            }
        }
        "postmark" => {
            let budget = pages_of_mb(8.576);
            let mut written = 0u64;
            let mut files: Vec<(u64, u64)> = Vec::new();
            let mut create = |fs: &mut Fs, out: &mut Vec<Op>, written: &mut u64| {
                let pages = 1 + rng.next_u64() % 5; // 0.5–10 KiB in 2 KiB pages
                let at = fs.alloc(pages);
                for p in 0..pages {
                    out.push(Op::Write(at + p));
                }
                fs.meta(out);
                *written += pages;
                (at, pages)
            };
            for _ in 0..600 {
                if written >= budget {
                    break;
                }
                let f = create(fs, &mut out, &mut written);
                files.push(f);
            }
            let mut k = 0u64;
            while written < budget && !files.is_empty() {
                k = k.wrapping_mul(6364136223846793005).wrapping_add(seed | 1);
                let i = (k >> 33) as usize % files.len();
                match (k >> 20) % 4 {
                    0 => {
                        let (at, n) = files[i];
                        for p in 0..n {
                            out.push(Op::Read(at + p));
                        }
                    }
                    1 => {
                        // Append: the file grows at the cursor.
                        let at = fs.alloc(1);
                        out.push(Op::Write(at));
                        fs.meta(&mut out);
                        written += 1;
                    }
                    2 => {
                        files.swap_remove(i);
                        fs.meta(&mut out);
                    }
                    _ => {
                        let f = create(fs, &mut out, &mut written);
                        files.push(f);
                    }
                }
            }
        }
        _ => {
            // tiotest: four writers, 4 KiB chunks, interleaved; then random reads.
            let per = pages_of_mb(82.432) / 4;
            let bases: Vec<u64> = (0..4).map(|_| fs.alloc(per)).collect();
            let mut i = 0;
            while i < per {
                for b in &bases {
                    for p in i..(i + 2).min(per) {
                        out.push(Op::Write(b + p));
                    }
                }
                i += 2;
            }
            fs.meta(&mut out);
            for _ in 0..per {
                let b = bases[(rng.next_u64() % 4) as usize];
                out.push(Op::Read(b + rng.next_u64() % per));
            }
        }
    }
    out
}

/// The phases of a trace captured by the guest's `dcr` mode: phase 0 the image (up to
/// marker 1), phase k the requests between markers k and k + 1, as operations on 2 KiB
/// logical pages. Marker k is a read at `disk - (k + 1)` MiB; other requests past the
/// file system (the last 16 MiB: the kernel's partition probes, readahead after a marker)
/// are dropped, as are flushes (a block-level FTL's writes are durable as they land); the
/// guest's ext2 issues no discards.
fn trace_phases(path: &Path, disk: u64) -> Result<Vec<Vec<Op>>, String> {
    const MIB: u64 = 1 << 20;
    let fs_end = disk
        .checked_sub(16 * MIB)
        .ok_or("trace_disk_bytes below 16 MiB")?;
    let mut reader = TraceReader::open(path, TraceFormat::Blkparse, &TraceOptions::new(u64::MAX))
        .map_err(|e| e.to_string())?;
    let mut phases: Vec<Vec<Op>> = vec![Vec::new()];
    while let Some(r) = reader.next_request() {
        let r = r.map_err(|e| e.to_string())?;
        if r.offset >= fs_end {
            let next = phases.len() as u64;
            if r.kind == ReqKind::Read && r.offset == disk - (next + 1) * MIB {
                phases.push(Vec::new());
            }
            continue;
        }
        let first = r.offset / PAGE;
        let last = (r.offset + r.len.max(1) - 1) / PAGE;
        let ops = phases.last_mut().expect("a phase");
        for p in first..=last {
            match r.kind {
                ReqKind::Write => ops.push(Op::Write(p)),
                ReqKind::Read => ops.push(Op::Read(p)),
                ReqKind::Trim | ReqKind::Flush => {}
            }
        }
    }
    Ok(phases)
}

/// Logical page size of the chip (2 KiB).
const PAGE: u64 = 2048;

type Ctl = Controller<RamStorage, ConstantRber>;

/// A formatted volume with the file-system image written and checkpointed (a clean
/// shutdown): the controller, the logical pages and the time. The image is `image`'s
/// writes, or (`None`) the synthetic one: 16 MB of existing files and the first page of
/// each metadata block.
fn prepared(
    capacity_mib: u64,
    cfg: BlockFtlConfig,
    image: Option<&[Op]>,
) -> Result<(Ctl, u64, u64), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let mut chip = ChipConfig::preset("slc-1g-dcr").ok_or("no slc-1g-dcr preset")?;
    let g = &mut chip.geometry;
    let block = g.pages_per_block as u64 * g.page_size as u64;
    g.blocks_per_plane = ((capacity_mib << 20) / block) as u32;
    chip.seed = 7;
    chip.reliability.factory_bad_rate = 0.0;
    let scheme = SchemeConfig::Block(cfg);
    let storage = scheme.digest_storage(&chip);
    let ctl = Controller::new(
        Chip::new(chip, storage).map_err(|x| e(&x))?,
        ConstantRber(0.0),
        ControllerConfig {
            mode: PayloadMode::Digest,
            ..Default::default()
        },
    )
    .map_err(|x| e(&x))?;
    let mut ftl = BlockFtl::format(ctl, cfg, Nanos::ZERO).map_err(|x| e(&x))?;
    let n = ftl.logical_pages();
    let ppb = 64;
    let mut t = Nanos::ZERO;
    let mut writes: Vec<u64> = Vec::new();
    match image {
        Some(ops) => writes.extend(ops.iter().filter_map(|o| match o {
            Op::Write(p) => Some(*p),
            Op::Read(_) => None,
        })),
        None => {
            let fs = Fs::new(n, ppb);
            // The metadata area: one page per block written (the rest is the log's room).
            writes.extend((0..fs.meta_end.min(n)).step_by(ppb as usize));
            writes.extend(fs.existing..fs.existing + fs.existing_pages);
        }
    }
    let mut drained = Vec::new();
    for (i, p) in writes.into_iter().enumerate() {
        if i % 4096 == 0 {
            ftl.take_ops(&mut drained);
            drained.clear();
        }
        t += Nanos(1000);
        if p >= n {
            return Err(format!("the image writes page {p}; the volume has {n}"));
        }
        ftl.write(t, Lpn::checked(p, n).map_err(|x| e(&x))?, &[])
            .map_err(|x| e(&x))?;
    }
    ftl.shutdown(t).map_err(|x| e(&x))?;
    Ok((ftl.into_controller(), n, t.0))
}

/// Runs `ops` on a volume mounted from `ctl` (after its clean shutdown) until `stop`
/// blocks were allocated (`None`: all of them); the controller after, the blocks
/// allocated, pages written and the time.
fn run_until(
    ctl: Ctl,
    cfg: BlockFtlConfig,
    ops: &[Op],
    stop: Option<u32>,
    t0: u64,
) -> Result<(Ctl, u32, u64, u64), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let mut ftl = BlockFtl::mount(ctl, cfg, Nanos(t0)).map_err(|x| e(&x))?;
    let n = ftl.logical_pages();
    let mut t = t0;
    let mut written = 0u64;
    let mut drained = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        if i % 4096 == 0 {
            // Nobody places these operations on a timeline: drop them as they come.
            ftl.take_ops(&mut drained);
            drained.clear();
        }
        if stop.is_some_and(|s| ftl.allocated_since_checkpoint() >= s) {
            break;
        }
        t += 1000;
        let now = Nanos(t);
        let lpn = |l: u64| Lpn::checked(l % n, n).map_err(|x| e(&x));
        match *op {
            Op::Write(l) => {
                written += 1;
                ftl.write(now, lpn(l)?, &[]).map_err(|x| e(&x))?
            }
            Op::Read(l) => ftl.read(now, lpn(l)?, &mut []).map_err(|x| e(&x))?,
        }
    }
    let a = ftl.allocated_since_checkpoint();
    Ok((ftl.into_controller(), a, written, t))
}

/// The kernel configuration of every cell: no checkpoint during a workload (the paper
/// crashes between two), DCR's lists at 1 % of the blocks.
fn kernel() -> BlockFtlConfig {
    BlockFtlConfig {
        checkpoint_interval: u32::MAX,
        ecc_t: 4,
        ..BlockFtlConfig::default()
    }
}

/// Runs one cell (trace paths relative to `base_dir`).
pub fn run(p: &DcrParams, base_dir: &Path) -> Result<Metrics, String> {
    let cfg = kernel();
    let traced = TRACE_PHASES.iter().find(|(n, _)| *n == p.workload);
    let (ctl, ops, t0) = match traced {
        Some(&(_, phase)) => {
            let path = base_dir.join(p.trace.as_deref().ok_or("no trace")?);
            let phases = trace_phases(&path, p.trace_disk_bytes.ok_or("no trace_disk_bytes")?)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            if phases.len() <= phase {
                return Err(format!(
                    "{}: {} phases, {} needs phase {phase}",
                    path.display(),
                    phases.len() - 1,
                    p.workload
                ));
            }
            let (ctl, _, t0) = prepared(p.capacity_mib, cfg, Some(&phases[0]))?;
            let ops = phases[phase].clone();
            (ctl, ops, t0)
        }
        None => {
            let (ctl, n, t0) = prepared(p.capacity_mib, cfg, None)?;
            let mut fs = Fs::new(n, 64);
            (ctl, workload(&p.workload, &mut fs, p.seed), t0)
        }
    };
    let blocks = ctl.chip().geometry().total_blocks();
    // Every block the whole workload allocates, then the crash at its share.
    let (_, total, _, _) = run_until(ctl.clone(), cfg, &ops, None, t0)?;
    let stop = (total as u64 * p.crash_pct as u64).div_ceil(100) as u32;
    let (crashed, updated, written, t) = run_until(ctl, cfg, &ops, Some(stop), t0)?;
    let mut reports: Vec<RecoveryReport> = Vec::new();
    let mut ram = 0;
    for kind in [RecoveryKind::RollForward, RecoveryKind::FullScan] {
        let k = BlockFtlConfig {
            recovery: kind,
            ..cfg
        };
        let m = BlockFtl::mount(crashed.clone(), k, Nanos(t)).map_err(|x| x.to_string())?;
        ram = m.map_ram_bytes();
        reports.push(m.recovery_report().cloned().ok_or("no recovery report")?);
    }
    let (d, v) = (&reports[0], &reports[1]);
    if d.mapped_pages != v.mapped_pages {
        return Err(format!(
            "DCR and version-based disagree: {} vs {} mapped pages",
            d.mapped_pages, v.mapped_pages
        ));
    }
    let ms = |t: Nanos| t.0 as f64 / 1e6;
    // Both procedures replay the same updated blocks on the same chip: the same CPU time.
    let cpu = p.cpu.ms(blocks as u64, updated as u64);
    let (dcr_ms, vb_ms) = (ms(d.time) + cpu, ms(v.time) + cpu);
    let mut m = Metrics::new();
    m.insert("capacity_mib".into(), p.capacity_mib as f64);
    m.insert("blocks".into(), blocks as f64);
    m.insert("workload_blocks".into(), total as f64);
    m.insert("updated_blocks".into(), updated as f64);
    m.insert("dcr_ms".into(), dcr_ms);
    m.insert("vb_ms".into(), vb_ms);
    m.insert("dcr_nand_ms".into(), ms(d.time));
    m.insert("vb_nand_ms".into(), ms(v.time));
    m.insert(
        "reduction_pct".into(),
        100.0 * (1.0 - dcr_ms / vb_ms.max(1e-6)),
    );
    m.insert("speedup".into(), vb_ms / dcr_ms.max(1e-6));
    m.insert("dcr_blocks_read".into(), d.blocks_scanned as f64);
    m.insert("vb_blocks_read".into(), v.blocks_scanned as f64);
    m.insert("dcr_pages_read".into(), d.pages_read as f64);
    m.insert("vb_pages_read".into(), v.pages_read as f64);
    m.insert("map_ram_bytes".into(), ram as f64);
    m.insert("written_mb".into(), written as f64 * 2048.0 / 1e6);
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(extra: &str) -> toml::Table {
        format!("workload = \"postmark\"\n{extra}").parse().unwrap()
    }

    /// The CPU cost model: zero unless set, each part added as stated, and a negative or
    /// non-finite part refused naming its key.
    #[test]
    fn cpu_cost_adds_its_parts_and_refuses_negative_ones() {
        assert_eq!(params(&cfg("")).unwrap().cpu, CpuCost::default());
        let p = params(&cfg(
            "[cpu]\nfixed_ms = 141.0\nblock_us = 10.0\nupdated_ms = 32.0",
        ))
        .unwrap();
        // 141 ms + 8192 blocks × 10 µs + 3 updated blocks × 32 ms.
        assert!((p.cpu.ms(8192, 3) - (141.0 + 81.92 + 96.0)).abs() < 1e-9);
        let e = params(&cfg("[cpu]\nblock_us = -1.0")).unwrap_err();
        assert!(e.contains("cpu.block_us = -1"), "{e}");
        let e = params(&cfg("[cpu]\ncores = 2")).unwrap_err();
        assert!(e.contains("cores"), "{e}");
    }

    /// With a CPU cost, both procedures pay the same on top of their NAND time, so the
    /// difference between them is unchanged and the reduction smaller.
    #[test]
    fn cpu_cost_is_the_same_for_both_procedures() {
        let run_with = |extra: &str| {
            let mut c = cfg(extra);
            c.insert("capacity_mib".into(), toml::Value::Integer(64));
            c.insert("crash_pct".into(), toml::Value::Integer(50));
            run(&params(&c).unwrap(), Path::new(".")).unwrap()
        };
        let nand = run_with("");
        let cpu = run_with("[cpu]\nfixed_ms = 100.0\nupdated_ms = 10.0");
        let diff = |m: &Metrics| m["vb_ms"] - m["dcr_ms"];
        assert!((diff(&nand) - diff(&cpu)).abs() < 1e-6);
        assert_eq!(nand["dcr_nand_ms"], cpu["dcr_nand_ms"]);
        let extra = 100.0 + 10.0 * cpu["updated_blocks"];
        assert!((cpu["dcr_ms"] - nand["dcr_ms"] - extra).abs() < 1e-6);
        assert!(cpu["reduction_pct"] < nand["reduction_pct"]);
    }
}

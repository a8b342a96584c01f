//! `nandlab bench`: simulator throughput at steady state (device full, GC active).
//!
//! A page-mapped MLC device (4 KiB + 224 B pages, 256 pages per block, 8 channels × 4 dies ×
//! 2 planes) is preconditioned (filled, then overwritten at random until its write
//! amplification settles) and then driven by 4 KiB random writes and by a 70/30 read/write
//! mix, at queue depth 32. Reported: simulated host requests per wall-clock second, the NAND
//! operations simulated per second behind them (a rate that does not depend on the write
//! amplification), chip operations per request, and peak memory (VmHWM) with its bytes per
//! physical page. `--match-load` preconditions only 90 % of the logical space, another
//! simulator's usual occupancy, so that a side-by-side run does equal work
//! (`docs/performance.md`). The same steady-state phases then run in bytes mode and in digest mode
//! on a device small enough for RAM, for the bytes/digest ratio. Each phase is cut into
//! windows whose spread is printed (wall clock on a shared machine varies), and the two
//! modes' windows alternate so that a slow spell does not fall on one mode only.

use anyhow::{Context, Result};
use clap::Args;
use sim::{Engine, ExperimentConfig, LoadMode, Synthetic, SyntheticConfig};
use std::path::Path;
use std::time::Instant;

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Capacity of the digest-mode device in GiB (blocks per plane scale with it); 0 skips
    /// that phase. At least 2: at 1 GiB the 32 dies' GC reserves (5 blocks each) do not fit
    /// in the 12.5 % over-provisioning, and the FTL refuses the configuration.
    #[arg(long, default_value_t = 32)]
    capacity_gib: u64,
    /// Requests per measured phase.
    #[arg(long, default_value_t = 2_000_000)]
    requests: u64,
    /// Capacity of the bytes-vs-digest comparison device in MiB; 0 skips that comparison.
    #[arg(long, default_value_t = 1024)]
    small_mib: u64,
    /// Requests per phase of the bytes-vs-digest comparison.
    #[arg(long, default_value_t = 300_000)]
    small_requests: u64,
    /// Capacity of the FLARES-vs-fixed-t comparison device in MiB (digest mode); 0 skips it.
    #[arg(long, default_value_t = 1024)]
    flares_mib: u64,
    /// Requests per phase of the FLARES-vs-fixed-t comparison: more than the other
    /// comparisons take, since its ratio sits a few points from 1 and each of the 16
    /// windows must be long enough (here about 0.1 s) for a shared machine's bursts to
    /// average out.
    #[arg(long, default_value_t = 2_000_000)]
    flares_requests: u64,
    /// The large device's load matched to another simulator's usual setup (MQSim's 90 %
    /// `Initial_Occupancy_Percentage` with its steady-state preconditioning): 90 % of the
    /// logical space filled and overwritten at random within it until the write
    /// amplification settles, the rest never written, the same over-provisioning.
    #[arg(long)]
    match_load: bool,
    /// Capacity of the combined-profile-vs-plain-page-FTL comparison device in MiB
    /// (digest mode; the combined profile at the over-provisioning its bound needs, raised
    /// with the map's young-block budget on larger devices, the plain FTL at 35 %); 0 (the
    /// default) skips it.
    #[arg(long, default_value_t = 0)]
    combined_mib: u64,
    /// The combined comparison's second device with this `[ftl]` section instead of the
    /// combined profile (TOML text, e.g. `[ftl.combined]` keys that take one technique out):
    /// what each part of the profile costs.
    #[arg(long, value_name = "TOML")]
    combined_ftl: Option<String>,
    /// The large device's `[controller] pack_spare`: `auto` packs each page's spare prefix
    /// on chips of 2^26 pages or more (256 GiB here), `always`, `never`.
    #[arg(long, default_value = "auto", value_parser = ["auto", "always", "never"])]
    pack_spare: String,
    /// The large device's map demand-paged (DFTL's translation pages, `[ftl.page]
    /// map_cache_pages`) with this many translation pages cached in RAM; 0 (the default)
    /// keeps the whole map in RAM.
    #[arg(long, default_value_t = 0)]
    map_cache_pages: u32,
    /// Capacity of the packed-vs-unpacked comparison device in MiB (digest mode, the page
    /// FTL; `pack_spare` always against never, side by side: what packing costs per
    /// simulated operation); 0 (the default) skips it.
    #[arg(long, default_value_t = 0)]
    pack_mib: u64,
    /// Instead: the recovery benchmark (full scan vs checkpoint + roll-forward, simulated
    /// recovery time) on chips of these sizes in MiB.
    #[arg(long, value_delimiter = ',', num_args = 0.., default_missing_value = "128,512,2048,8192,32768")]
    recovery: Option<Vec<u64>>,
    /// Instead: DCR against the version-based scan on the block-level FTL (Postmark crash)
    /// on chips of these sizes in GiB: wall time, simulated recovery times, peak memory.
    #[arg(long, value_delimiter = ',', num_args = 0.., default_missing_value = "1,8,128")]
    dcr: Option<Vec<u64>>,
}

fn device(capacity: u64, bytes_mode: bool, op: f64) -> Result<sim::Experiment> {
    device_with(capacity, bytes_mode, op, "\"fixed\"")
}

/// The page FTL's `[ftl]` tables: over-provisioning `op`, t = 8, ECC-strength policy `ecc`
/// (a TOML value for `ftl.page.ecc`).
fn page_ftl(op: f64, ecc: &str) -> String {
    format!("[ftl.page]\nover_provisioning = {op}\necc_t = 8\necc = {ecc}\n")
}

/// The benchmark device with ECC-strength policy `ecc`.
fn device_with(capacity: u64, bytes_mode: bool, op: f64, ecc: &str) -> Result<sim::Experiment> {
    device_ftl(capacity, bytes_mode, &page_ftl(op, ecc), "auto")
}

/// The digest-mode benchmark device (fixed t = 8) with `[controller] pack_spare = pack`,
/// its map demand-paged with `map_cache_pages` translation pages cached when that is not 0.
fn device_packed(
    capacity: u64,
    op: f64,
    pack: &str,
    map_cache_pages: u32,
) -> Result<sim::Experiment> {
    let mut ftl = page_ftl(op, "\"fixed\"");
    if map_cache_pages > 0 {
        ftl.push_str(&format!("map_cache_pages = {map_cache_pages}\n"));
    }
    device_ftl(capacity, false, &ftl, pack)
}

/// The benchmark device with `ftl` as its `[ftl]` tables (TOML).
/// `pack` is `[controller] pack_spare`.
fn device_ftl(capacity: u64, bytes_mode: bool, ftl: &str, pack: &str) -> Result<sim::Experiment> {
    // 8 × 4 × 2 planes of 256-page blocks of 4 KiB: 64 MiB per block across the device.
    let per_block_row = 8 * 4 * 2 * 256 * 4096u64;
    let blocks = (capacity / per_block_row).max(8);
    let text = format!(
        r#"
name = "bench"
seed = 42
[chip]
preset = "flares-mlc-3x"
[chip.geometry]
channels = 8
dies_per_channel = 4
planes_per_die = 2
blocks_per_plane = {blocks}
pages_per_block = 256
[controller]
mode = "{}"
sector_size = 512
pack_spare = "{pack}"
[errors]
model = "flares"
{ftl}
[precondition]
enabled = false
[workload]
requests = 1
"#,
        if bytes_mode { "bytes" } else { "digest" },
    );
    Ok(ExperimentConfig::from_toml_str(&text, "bench")?.build(Path::new("."))?)
}

struct Phase {
    name: &'static str,
    /// Requests per second over the whole phase.
    rate: f64,
    /// Slowest and fastest of its windows.
    range: (f64, f64),
    waf: f64,
    /// NAND operations (reads, programs, erases) simulated per second over the phase: the
    /// simulator's work rate, whatever the write amplification.
    chip_ops: f64,
    /// The same rate per window, in order (windows of the engines alternate, so window
    /// `w` of two engines ran side by side).
    window_ops: Vec<f64>,
    /// Requests per second per window, in the same order.
    window_rates: Vec<f64>,
}

/// The median of `v` (0 for none).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Windows each phase is cut into: wall-clock rates on a shared machine vary, so the
/// spread of the windows is printed beside the whole phase's rate.
const WINDOWS: u64 = 4;

/// Windows of a two-engine comparison whose result is a ratio: shorter, more of them, so
/// the median of the window-by-window ratios shrugs off a neighbour's burst on a shared
/// machine.
const PAIRED_WINDOWS: u64 = 16;

/// The benchmark's two workloads: name and read percentage.
const WORKLOADS: [(&str, f64); 2] = [("4 KiB random write", 0.0), ("70/30 read/write", 70.0)];

/// Runs `requests` requests of a workload at queue depth 32; returns the wall time.
fn window(engine: &mut Engine, requests: u64, read_pct: f64, seed: u64) -> Result<f64> {
    let cfg = SyntheticConfig {
        requests: Some(requests),
        read_pct,
        ..SyntheticConfig::default()
    };
    let mut src = Synthetic::new(cfg, engine.capacity(), seed)?;
    let t = Instant::now();
    engine.run(
        &mut src,
        LoadMode::ClosedLoop { queue_depth: 32 },
        &mut |_| {},
    )?;
    Ok(t.elapsed().as_secs_f64())
}

/// Both workloads on each engine, `requests` each, in `windows` windows; the engines'
/// windows alternate, so a slow spell of a shared machine falls on all of them alike.
/// (Never inlined: `scripts/bench-instr.sh` counts instructions inside this function
/// only, by its symbol.)
#[inline(never)]
fn phases(
    engines: &mut [&mut Engine],
    requests: u64,
    seed: u64,
    windows: u64,
) -> Result<Vec<Vec<Phase>>> {
    let per = (requests / windows).max(1);
    let mut out: Vec<Vec<Phase>> = engines.iter().map(|_| Vec::new()).collect();
    for (wi, (name, read_pct)) in WORKLOADS.into_iter().enumerate() {
        let before: Vec<_> = engines.iter().map(|e| e.counters()).collect();
        let mut total = vec![0.0; engines.len()];
        let mut range = vec![(f64::INFINITY, 0.0f64); engines.len()];
        let mut window_ops = vec![Vec::new(); engines.len()];
        let mut window_rates = vec![Vec::new(); engines.len()];
        for w in 0..windows {
            for (i, e) in engines.iter_mut().enumerate() {
                let ops_before = e.counters().total_chip_ops();
                // Each workload's windows draw their own addresses: with the seeds of the
                // write phase, the 70/30 phase's writes would revisit the write phase's
                // addresses in the same order (the generator draws the same numbers per
                // request whatever the read share), so GC would find its victims emptied
                // by design and the WAF would come out low.
                let secs = window(e, per, read_pct, seed + ((wi as u64) << 32) + w)?;
                window_ops[i].push((e.counters().total_chip_ops() - ops_before) as f64 / secs);
                total[i] += secs;
                let r = per as f64 / secs;
                window_rates[i].push(r);
                range[i] = (range[i].0.min(r), range[i].1.max(r));
            }
        }
        for (i, e) in engines.iter().enumerate() {
            let after = e.counters();
            let waf = (after.total_programs() - before[i].total_programs()) as f64
                / (after.host_writes - before[i].host_writes).max(1) as f64;
            let ops = after.total_chip_ops() - before[i].total_chip_ops();
            out[i].push(Phase {
                name,
                rate: (per * windows) as f64 / total[i],
                range: range[i],
                waf,
                chip_ops: ops as f64 / total[i],
                window_ops: core::mem::take(&mut window_ops[i]),
                window_rates: core::mem::take(&mut window_rates[i]),
            });
        }
    }
    Ok(out)
}

fn precondition(engine: &mut Engine) -> Result<f64> {
    let t = Instant::now();
    engine.precondition(true, 3.0, 0.02, 1.0, 7)?;
    Ok(t.elapsed().as_secs_f64())
}

pub fn run(a: BenchArgs) -> Result<()> {
    if let Some(sizes) = &a.recovery {
        return crate::recovery_bench::run(sizes);
    }
    if let Some(sizes) = &a.dcr {
        return crate::recovery_bench::run_dcr(sizes);
    }
    if a.capacity_gib > 0 {
        big_device(&a)?;
    }
    if a.small_mib > 0 {
        bytes_vs_digest(&a)?;
    }
    if a.flares_mib > 0 {
        flares_vs_fixed(&a)?;
    }
    if a.combined_mib > 0 {
        combined_vs_page(&a)?;
    }
    if a.pack_mib > 0 {
        packed_vs_unpacked(&a)?;
    }
    Ok(())
}

/// A packed digest-mode store against an unpacked one on one device size, side by side:
/// what packing the spare prefixes costs per simulated chip operation, and what it saves.
fn packed_vs_unpacked(a: &BenchArgs) -> Result<()> {
    let cap = a.pack_mib << 20;
    println!(
        "\n== packed vs unpacked spare prefixes, {} MiB digest-mode device (page FTL, fixed t = 8)",
        a.pack_mib
    );
    let plain = device_packed(cap, 0.25, "never", 0)?;
    let packed = device_packed(cap, 0.25, "always", 0)?;
    let bytes = |e: &sim::Experiment| {
        e.engine
            .volume()
            .controller()
            .chip()
            .storage()
            .block_bytes()
    };
    println!(
        "slots       {} bytes per block unpacked, {} packed",
        bytes(&plain),
        bytes(&packed)
    );
    side_by_side(
        a.small_requests,
        [plain, packed],
        ["unpacked", "packed"],
        "packed/unpacked",
    )
}

/// The combined profile against the plain page-level FTL (fixed t = 8, foreground GC) on
/// one device size, side by side: the cost of every technique together per simulated chip
/// operation (the combined profile's measure: at most 2×).
fn combined_vs_page(a: &BenchArgs) -> Result<()> {
    let cap = a.combined_mib << 20;
    println!(
        "\n== combined profile vs plain page FTL, {} MiB digest-mode device (512-byte sectors: FLARES's t up to 13)",
        a.combined_mib
    );
    let plain = device_with(cap, false, 0.35, "\"fixed\"")?;
    // The profile's own over-provisioning: a fixed 0.35 is below what its bound needs
    // from 512 MiB on (the young-block budget grows with the map).
    let ftl = a
        .combined_ftl
        .clone()
        .unwrap_or_else(|| "[ftl]\nscheme = \"combined\"\n".into());
    if a.combined_ftl.is_some() {
        println!("second device's [ftl]: {}", ftl.replace('\n', " "));
    }
    let combined = device_ftl(cap, false, &ftl, "auto")?;
    side_by_side(
        a.small_requests,
        [plain, combined],
        ["plain", "combined"],
        "combined/plain",
    )
}

/// Preconditions two devices, runs both workloads on them (`requests` per phase) in
/// alternating paired windows and prints the comparison ([`paired_report`]).
fn side_by_side(
    requests: u64,
    devices: [sim::Experiment; 2],
    labels: [&str; 2],
    ratio: &str,
) -> Result<()> {
    let [mut x, mut y] = devices;
    precondition(&mut x.engine)?;
    precondition(&mut y.engine)?;
    let rates = phases(
        &mut [&mut x.engine, &mut y.engine],
        requests,
        1,
        PAIRED_WINDOWS,
    )?;
    paired_report(&rates, labels, ratio);
    Ok(())
}

/// Prints two engines' phases side by side and their ratio per phase (second over first):
/// over the whole phase and the median of the window-by-window ratios.
fn paired_report(rates: &[Vec<Phase>], labels: [&str; 2], ratio: &str) {
    for (label, r) in labels.iter().zip(rates) {
        println!(
            "{label:<8} {}",
            r.iter()
                .map(|p| format!(
                    "{}: {:.0} req/s, {:.2}M chip ops/s, WAF {:.2}",
                    p.name,
                    p.rate,
                    p.chip_ops / 1e6,
                    p.waf
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    let paired = |a: &[f64], b: &[f64]| {
        let r = a.iter().zip(b).map(|(a, b)| b / a).collect::<Vec<_>>();
        (r.len(), median(r))
    };
    for (f, x) in rates[0].iter().zip(&rates[1]) {
        let (n, ops) = paired(&f.window_ops, &x.window_ops);
        let (_, req) = paired(&f.window_rates, &x.window_rates);
        // Both measures: chip operations per second (the simulator's work rate, which
        // falls with the write amplification) and requests per second (the same host
        // work, whatever each FTL makes of it).
        println!(
            "ratio    {}: {ratio} = {:.2}× chip ops/s over the phase (median of {n} side-by-side windows {ops:.2}×); {:.2}× requests/s (median {req:.2}×)",
            f.name,
            x.chip_ops / f.chip_ops,
            x.rate / f.rate,
        );
    }
}

/// FLARES against a fixed t on one device size, side by side: the policy's cost per
/// simulated chip operation (a strength per program from the page's profile, Alg. 1 on
/// every read, re-encoded copies).
fn flares_vs_fixed(a: &BenchArgs) -> Result<()> {
    let cap = a.flares_mib << 20;
    println!(
        "\n== FLARES vs fixed t = 8, {} MiB digest-mode device (512-byte sectors: t up to 13)",
        a.flares_mib
    );
    let fixed = device_with(cap, false, 0.25, "\"fixed\"")?;
    let flares = device_with(cap, false, 0.25, "{ flares = { t_max = 13 } }")?;
    side_by_side(
        a.flares_requests,
        [fixed, flares],
        ["fixed", "flares"],
        "FLARES/fixed",
    )
}

/// The steady-state phases on the large digest-mode device.
fn big_device(a: &BenchArgs) -> Result<()> {
    let cap = a.capacity_gib << 30;
    println!(
        "== steady-state simulator throughput, digest mode, {} GiB page-mapped device, {}",
        a.capacity_gib,
        if a.map_cache_pages > 0 {
            format!(
                "demand-paged map ({} translation pages cached)",
                a.map_cache_pages
            )
        } else {
            "whole map in RAM".into()
        }
    );
    let mut big = device_packed(cap, 0.125, &a.pack_spare, a.map_cache_pages)
        .context("building the benchmark device")?;
    println!(
        "device      {} pages of 4 KiB, {} logical; preconditioning…",
        big.chip.geometry.total_pages(),
        big.engine.capacity() / 4096
    );
    if a.match_load {
        let t = Instant::now();
        big.engine.precondition(true, 3.0, 0.02, 0.9, 7)?;
        println!(
            "precondition {:.1} s wall (--match-load: 90 % of the logical space filled, then overwritten at random within it to steady state)",
            t.elapsed().as_secs_f64()
        );
    } else {
        let pre = precondition(&mut big.engine)?;
        println!("precondition {pre:.1} s wall (fill + random overwrite to steady state)");
    }
    let res = phases(&mut [&mut big.engine], a.requests, 1, WINDOWS)?.remove(0);
    let rss = crate::hugepages::peak_rss_mib();
    for p in &res {
        println!(
            "{:<22} {:>12.0} requests/s   (windows {:.0}–{:.0}; WAF {:.2}; {:.2}M chip ops/s; {:.2} chip ops per request)",
            p.name,
            p.rate,
            p.range.0,
            p.range.1,
            p.waf,
            p.chip_ops / 1e6,
            p.chip_ops / p.rate
        );
    }
    if let Some(m) = rss {
        let pages = big.chip.geometry.total_pages() as f64;
        println!(
            "peak memory {m:.0} MiB (VmHWM): {:.1} bytes per physical page",
            m * 1048576.0 / pages
        );
    }
    let chip = big.engine.volume().controller().chip();
    println!(
        "aside       {} page states kept whole beside the packed page table, {} spare prefixes kept verbatim (no compact form)",
        chip.page_states_aside(),
        chip.storage().verbatim_pages()
    );
    if let Ok(thp) = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled") {
        // The binary's allocator asks for huge pages on large tables (see `hugepages`).
        println!("huge pages  transparent huge pages: {}", thp.trim());
    }
    // No ratio to another simulator is printed: the binary cannot have measured one (a
    // side-by-side run on the same machine belongs in the docs, with how it was made).
    Ok(())
}

/// The same phases in bytes and in digest mode on a device that fits in RAM.
fn bytes_vs_digest(a: &BenchArgs) -> Result<()> {
    let small = a.small_mib << 20;
    println!(
        "\n== bytes vs digest mode, {} MiB device (fits in RAM)",
        a.small_mib
    );
    // A small device spends more of its blocks on per-die GC reserves: more OP.
    let mut d = device(small, false, 0.25)?;
    let mut b = device(small, true, 0.25)?;
    precondition(&mut d.engine)?;
    precondition(&mut b.engine)?;
    let rates = phases(
        &mut [&mut d.engine, &mut b.engine],
        a.small_requests,
        1,
        WINDOWS,
    )?;
    for (label, e, r) in [("digest", &d, &rates[0]), ("bytes", &b, &rates[1])] {
        let m = e.engine.metrics();
        println!(
            "{label:<7} {}   (reads verified {}, mismatches {})",
            r.iter()
                .map(|p| format!(
                    "{}: {:.0} req/s ({:.0}–{:.0})",
                    p.name, p.rate, p.range.0, p.range.1
                ))
                .collect::<Vec<_>>()
                .join(", "),
            m.verified_reads,
            m.mismatches
        );
    }
    for (d, b) in rates[0].iter().zip(&rates[1]) {
        println!(
            "ratio       {}: digest/bytes = {:.2}×",
            d.name,
            d.rate / b.rate
        );
    }
    Ok(())
}

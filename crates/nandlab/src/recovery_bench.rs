//! `nandlab bench --recovery`: simulated recovery time of the two recovery procedures on
//! chips from 128 MiB to 32 GiB under the same workload (the shape of DCR's Postmark table:
//! a full scan grows with capacity, roll-forward with the work since the checkpoint). The
//! measurement is `sweep::kinds::measure_recovery`, the cell of `nandlab reproduce
//! recovery`.

use anyhow::{anyhow, Result};
use std::time::Instant;
use sweep::kinds::{measure_recovery, RECOVERY_WORK};

/// `nandlab bench --dcr`: the block-level FTL's Postmark crash (the `dcr-capacity` cell)
/// on chips of these sizes in GiB, one after another on one core: wall time of the whole
/// cell (format, file-system image, the workload twice — once to count its blocks — and
/// both recoveries of the crash image), the simulated recovery times, the block map's RAM
/// and the process's peak memory.
pub fn run_dcr(capacities_gib: &[u64]) -> Result<()> {
    println!("== DCR vs version-based: Postmark crash on a block-level FTL, slc-1g-dcr grown, digest mode");
    println!(
        "{:>9} {:>9} | {:>10} {:>10} {:>7} | {:>10} | {:>8} {:>9}",
        "capacity", "blocks", "DCR", "version", "×", "map RAM", "wall", "peak RSS"
    );
    for &gib in capacities_gib {
        let p = sweep::dcr::DcrParams {
            workload: "postmark".into(),
            crash_pct: 100,
            capacity_mib: gib << 10,
            seed: 1,
            trace: None,
            trace_disk_bytes: None,
            cpu: sweep::dcr::CpuCost::default(),
        };
        let start = Instant::now();
        let m = sweep::dcr::run(&p, std::path::Path::new("."))
            .map_err(|e| anyhow!("{gib} GiB: {e}"))?;
        let wall = start.elapsed().as_secs_f64();
        let get = |k: &str| m.get(k).copied().unwrap_or(f64::NAN);
        println!(
            "{:>5} GiB {:>9} | {:>7.1} ms {:>7.1} ms {:>6.1}× | {:>6.1} MiB | {:>6.2} s {:>5.0} MiB",
            gib,
            get("blocks"),
            get("dcr_ms"),
            get("vb_ms"),
            get("speedup"),
            get("map_ram_bytes") / (1 << 20) as f64,
            wall,
            crate::hugepages::peak_rss_mib().unwrap_or(f64::NAN)
        );
    }
    println!(
        "(simulated recovery time: reads of one die serialize; peak RSS so far in the process)"
    );
    Ok(())
}

pub fn run(capacities_mib: &[u64]) -> Result<()> {
    println!(
        "== recovery after a crash: {RECOVERY_WORK} random 4 KiB writes (flushed) since the last checkpoint, device half full"
    );
    println!(
        "{:>9} {:>5} {:>8} | {:>12} {:>9} {:>10} | {:>12} {:>9} {:>10} | {:>7}",
        "capacity",
        "dies",
        "blocks",
        "full scan",
        "blocks",
        "pages",
        "roll-fwd",
        "blocks",
        "pages",
        "speedup"
    );
    for &mib in capacities_mib {
        let m = measure_recovery(mib, RECOVERY_WORK, 3).map_err(|e| anyhow!("{mib} MiB: {e}"))?;
        let (fr, rr) = (&m.full, &m.roll);
        let cap = if mib >= 1024 {
            format!("{} GiB", mib / 1024)
        } else {
            format!("{mib} MiB")
        };
        println!(
            "{:>9} {:>5} {:>8} | {:>10.1} ms {:>9} {:>10} | {:>10.1} ms {:>9} {:>10} | {:>6.1}×",
            cap,
            m.dies,
            m.blocks,
            fr.time.0 as f64 / 1e6,
            fr.blocks_scanned,
            fr.pages_read,
            rr.time.0 as f64 / 1e6,
            rr.blocks_scanned,
            rr.pages_read,
            fr.time.0 as f64 / rr.time.0.max(1) as f64
        );
    }
    println!(
        "(simulated time: per-die sums of read, transfer and decode time; dies work in parallel)"
    );
    Ok(())
}

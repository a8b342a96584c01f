//! `nandlab bench --recovery`: simulated recovery time of the two recovery procedures on
//! chips from 128 MiB to 32 GiB under the same workload (the shape of DCR's Postmark table:
//! a full scan grows with capacity, roll-forward with the work since the checkpoint). The
//! measurement is `sweep::kinds::measure_recovery`, the cell of `nandlab reproduce
//! recovery`.

use anyhow::{anyhow, Result};
use sweep::kinds::{measure_recovery, RECOVERY_WORK};

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

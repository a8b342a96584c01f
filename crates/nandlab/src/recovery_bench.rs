//! `nandlab bench --recovery`: simulated recovery time of the two recovery procedures on
//! chips from 128 MiB to 32 GiB under the same workload (the shape of DCR's Postmark table:
//! a full scan grows with capacity, roll-forward with the work since the checkpoint).

use anyhow::{Context, Result};
use controller::{Controller, ControllerConfig, PayloadMode};
use ftl::{PageFtlConfig, RecoveryKind, SchemeConfig};
use nand::{Chip, ChipConfig, ConstantRber, Lpn, Nanos, RamStorage};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// Host pages written (random 4 KiB, flushed) between the last checkpoint and the crash.
pub const WORK: u64 = 20_000;

pub fn run(capacities_mib: &[u64]) -> Result<()> {
    println!(
        "== recovery after a crash: {WORK} random 4 KiB writes (flushed) since the last checkpoint, device half full"
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
        let mut chip = ChipConfig::preset("flares-mlc-3x").context("preset")?;
        let g = &mut chip.geometry;
        // 2 planes of 1 MiB blocks per die, at least 64 blocks per plane; up to 8 channels
        // × 4 dies as the chip grows.
        let dies = ((mib / 128).clamp(1, 32)) as u32;
        g.channels = dies.div_ceil(4);
        g.dies_per_channel = dies / g.channels;
        g.planes_per_die = 2;
        g.pages_per_block = 256;
        g.page_size = 4096;
        let row = (g.channels * g.dies_per_channel) as u64 * 2 * 256 * 4096;
        g.blocks_per_plane = ((mib << 20) / row).max(8) as u32;
        chip.seed = 7;
        let mut scheme = SchemeConfig::Page(PageFtlConfig {
            over_provisioning: 0.125,
            ecc_t: 8,
            checkpoint_interval: u32::MAX,
            ..PageFtlConfig::default()
        });
        let geo = chip.geometry;
        let mut mask = vec![false; geo.total_blocks() as usize];
        for b in scheme.keep_whole_blocks(&chip) {
            mask[b as usize] = true;
        }
        let storage = RamStorage::digest(&geo, controller::layout::DIGEST_SPARE_BYTES)
            .with_full_blocks(&geo, mask);
        let ctl = Controller::new(
            Chip::new(chip.clone(), storage)?,
            ConstantRber(0.0),
            ControllerConfig {
                mode: PayloadMode::Digest,
                sector_size: 512,
                ..Default::default()
            },
        )?;
        let mut dev = scheme.format(ctl, Nanos::ZERO)?;
        let n = dev.logical_pages();
        let mut t = Nanos::ZERO;
        // Half full, checkpointed (a clean shutdown) ...
        for l in 0..n / 2 {
            t += Nanos(1_000);
            dev.write(t, Lpn::checked(l, n).expect("in range"), &[])?;
        }
        dev.shutdown(t)?;
        // ... then the same work on every size, flushed, and a crash.
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for i in 0..WORK {
            t += Nanos(1_000);
            let l = rng.next_u64() % (n / 2);
            dev.write(t, Lpn::checked(l, n).expect("in range"), &[])?;
            if i % 1000 == 999 {
                dev.flush(t)?;
            }
        }
        dev.flush(t)?;
        let ctl = dev.into_controller();
        scheme.set_recovery(RecoveryKind::FullScan);
        let full = scheme.mount(ctl, t)?;
        let fr = full.recovery_report().cloned().context("report")?;
        let ctl = full.into_controller();
        scheme.set_recovery(RecoveryKind::RollForward);
        let roll = scheme.mount(ctl, t)?;
        let rr = roll.recovery_report().cloned().context("report")?;
        anyhow::ensure!(
            fr.mapped_pages == rr.mapped_pages,
            "the two procedures disagree: {} vs {} mapped pages",
            fr.mapped_pages,
            rr.mapped_pages
        );
        let cap = if mib >= 1024 {
            format!("{} GiB", mib / 1024)
        } else {
            format!("{mib} MiB")
        };
        println!(
            "{:>9} {:>5} {:>8} | {:>10.1} ms {:>9} {:>10} | {:>10.1} ms {:>9} {:>10} | {:>6.1}×",
            cap,
            geo.total_dies(),
            geo.total_blocks(),
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

//! The checkpoint region's wear levelling and its anchor: rotation in a digest-mode store,
//! the automatic region's minimum size, the anchor's refresh and its mount when records
//! have worn past the code.

use controller::{Controller, ControllerConfig};
use ftl::{BoxedVolume, PageFtlConfig, SchemeConfig};
use nand::{Chip, ChipConfig, ConstantRber, Lpn, Nanos, RamStorage};

/// Region wear levelling in a digest-mode store (what the simulator runs): region blocks
/// swap with less-worn free blocks, the blocks that join the region keep whole pages (the
/// checkpoint reads back), and both recoveries rebuild the same mapping after a remount;
/// the region's erases stay within a few of the data blocks'.
#[test]
fn region_rotation_in_digest_mode_levels_and_remounts() {
    for recovery in [ftl::RecoveryKind::RollForward, ftl::RecoveryKind::FullScan] {
        let mut chip = ChipConfig::preset("tiny-mlc").unwrap();
        chip.geometry.blocks_per_plane = 40;
        chip.reliability.wear_fail_rate = 0.0;
        chip.reliability.wear_fail_growth = 0.0;
        let fcfg = PageFtlConfig {
            over_provisioning: 0.3,
            region_blocks_per_die: 8,
            checkpoint_interval: 1,
            recovery,
            ..Default::default()
        };
        let scheme = SchemeConfig::Page(fcfg);
        let storage = scheme.digest_storage(&chip);
        let ctl = Controller::new(
            Chip::new(chip, storage).unwrap(),
            ConstantRber(0.0),
            ControllerConfig {
                mode: controller::PayloadMode::Digest,
                ..Default::default()
            },
        )
        .unwrap();
        let mut dev = scheme.format(ctl, Nanos::ZERO).unwrap();
        let n = dev.logical_pages();
        let (max, mean) = scattered_writes_rotate_the_region(&mut dev, 12, 3, &|_| Vec::new());
        assert!(max <= mean + 12.0, "{recovery:?}: max {max} mean {mean:.1}");
        let before: Vec<_> = (0..n).map(|l| dev.mapping(l)).collect();
        let ctl = dev.into_controller();
        let dev = scheme.mount(ctl, Nanos(1 << 40)).unwrap();
        dev.verify().unwrap();
        let after: Vec<_> = (0..n).map(|l| dev.mapping(l)).collect();
        assert_eq!(before, after, "{recovery:?}");
    }
}

/// Writes `rounds` times the volume's pages in a scattered order (write v to logical page
/// (13v + v/5) mod n, with `page(v)`'s bytes) and flushes every `flush_every` writes; then
/// the invariants hold and the region has swapped at least three blocks. The erase counts'
/// maximum and mean.
fn scattered_writes_rotate_the_region(
    dev: &mut BoxedVolume<RamStorage, ConstantRber>,
    rounds: u64,
    flush_every: u64,
    page: &dyn Fn(u64) -> Vec<u8>,
) -> (f64, f64) {
    let n = dev.logical_pages();
    for v in 1..(rounds * n) {
        let l = (v * 13 + v / 5) % n;
        dev.write(Nanos(v * 10), Lpn::checked(l, n).unwrap(), &page(v))
            .unwrap();
        if v % flush_every == 0 {
            dev.flush(Nanos(v * 10 + 1)).unwrap();
        }
    }
    dev.verify().unwrap();
    let c = *dev.counters();
    assert!(c.region_swaps >= 3, "{c:?}");
    let ec = dev.erase_counts();
    (
        *ec.iter().max().unwrap() as f64,
        ec.iter().sum::<u32>() as f64 / ec.len() as f64,
    )
}

/// `preset` cut to 64 blocks, without wear failures, and a page FTL at 30 %
/// over-provisioning and t = 4 with the automatic region.
fn small_chip(preset: &str) -> (ChipConfig, PageFtlConfig) {
    let mut chip = ChipConfig::preset(preset).unwrap();
    chip.geometry.blocks_per_plane = 64 / chip.geometry.planes_per_die;
    chip.reliability.wear_fail_rate = 0.0;
    chip.reliability.wear_fail_growth = 0.0;
    let fcfg = PageFtlConfig {
        over_provisioning: 0.3,
        ecc_t: 4,
        ..Default::default()
    };
    (chip, fcfg)
}

/// The automatic region on a small chip (whose checkpoint fits one block) is large enough
/// to rotate: a regression — it was 4 blocks, too few for rotation, erased at every
/// checkpoint while the data blocks shared the writes, and on `tiny-mlc-sp` it wore out
/// (3,486 erases against the data blocks' 156) and the volume ran out of space.
#[test]
fn the_automatic_region_rotates_on_a_small_chip() {
    for preset in ["tiny-mlc", "tiny-slc"] {
        let (chip, fcfg) = small_chip(preset);
        assert!(fcfg.region_blocks(&chip).len() >= 6, "{preset}");
        let ctl = Controller::new(
            Chip::ram(chip).unwrap(),
            ConstantRber(0.0),
            ControllerConfig::default(),
        )
        .unwrap();
        let scheme = SchemeConfig::Page(fcfg);
        let mut dev = scheme.format(ctl, Nanos::ZERO).unwrap();
        let ps = dev.page_size();
        let (max, mean) =
            scattered_writes_rotate_the_region(&mut dev, 40, 4, &|v| vec![v as u8; ps]);
        assert!(
            max <= 2.0 * mean + 12.0,
            "{preset}: max {max} mean {mean:.1}"
        );
    }
}

/// Pages programmed 10 days or more before the read do not decode (an RBER far past any
/// code); younger ones read clean.
#[derive(Debug, Clone, Copy)]
struct RetentionCliff;

const DAY: u64 = 24 * 3_600_000_000_000;

impl nand::ErrorModel for RetentionCliff {
    fn rber(&self, page: &nand::PageAge) -> f64 {
        if page.retention.0 >= 10 * DAY {
            0.05
        } else {
            0.0
        }
    }
}

/// The anchor records in the two anchor blocks of a volume's region, read at time 0 (no
/// retention: every record decodes): (sequence number, storage page index), oldest first.
fn anchor_records(
    ctl: &mut Controller<RamStorage, RetentionCliff>,
    anchors: &[u32],
) -> Vec<(u64, u64)> {
    let geo = *ctl.chip().geometry();
    let mut buf = vec![0u8; geo.page_size as usize];
    let mut out = Vec::new();
    for &b in anchors {
        let ba = geo.block_at(b).unwrap();
        for p in 0..geo.pages_per_block {
            if let Ok(controller::PageRead::Data(info)) =
                ctl.read_meta(Nanos(0), ba.page(p).unwrap(), &mut buf)
            {
                // Tag 4: an anchor record (its sequence number in the record's lpn field).
                if info.record.kind == controller::PageKind::Meta(controller::MetaTag::new(4)) {
                    out.push((
                        info.record.lpn,
                        b as u64 * geo.pages_per_block as u64 + p as u64,
                    ));
                }
            }
        }
    }
    out.sort_unstable();
    out
}

/// The anchor (the list of a rotating region's blocks) is rewritten by the first checkpoint
/// a day or more after its newest record, and by the first after a mount: a regression — it
/// was written only at format and at a swap, and on a worn chip under weak ECC (t = 8 at
/// 3000 P/E, month-long idle periods) its newest record aged past the code and the volume
/// no longer mounted. Mount finds the newest record when older ones no longer decode, and
/// refuses, naming the anchor, when none decodes.
#[test]
fn the_anchor_is_refreshed_and_mount_reads_past_a_worn_record() {
    let (chip, fcfg) = small_chip("tiny-mlc");
    let region = fcfg.region_blocks(&chip);
    assert!(region.len() >= 6);
    let anchors = [region[0], region[1]];
    let scheme = SchemeConfig::Page(fcfg);
    // Eight checkpoints `spacing` apart, each after rewriting pages 0..8 with its number.
    let run = |spacing: u64| {
        let ctl = Controller::new(
            Chip::ram(chip.clone()).unwrap(),
            RetentionCliff,
            ControllerConfig::default(),
        )
        .unwrap();
        let mut dev = scheme.format(ctl, Nanos::ZERO).unwrap();
        let n = dev.logical_pages();
        let ps = dev.page_size();
        for k in 1..=8u64 {
            let now = Nanos(k * spacing);
            for l in 0..8 {
                dev.write(now, Lpn::checked(l, n).unwrap(), &vec![k as u8; ps])
                    .unwrap();
            }
            // A checkpoint (a flush only seals and persists trims).
            dev.shutdown(now).unwrap();
            dev.verify().unwrap();
        }
        assert_eq!(dev.counters().region_swaps, 0);
        dev.into_controller()
    };
    // Within a day: the format's record only.
    let mut ctl = run(DAY / 24);
    assert_eq!(anchor_records(&mut ctl, &anchors).len(), 1);
    // Two days apart: each checkpoint rewrites the record first.
    let mut ctl = run(2 * DAY);
    let recs = anchor_records(&mut ctl, &anchors);
    assert_eq!(recs.len(), 9, "{recs:?}");
    // On day 17 the records of days 0–6 no longer decode; those of days 8–16 follow them.
    let mut dev = scheme.mount(ctl, Nanos(17 * DAY)).unwrap();
    dev.verify().unwrap();
    let n = dev.logical_pages();
    let ps = dev.page_size();
    let mut buf = vec![0u8; ps];
    for l in 0..8 {
        dev.read(Nanos(17 * DAY), Lpn::checked(l, n).unwrap(), &mut buf)
            .unwrap();
        assert_eq!(buf, vec![8; ps], "page {l}");
    }
    // The first checkpoint after the mount rewrites the record (its age is unknown); the
    // sequence continues (a mount that lost the anchor would have fixed the region).
    dev.write(Nanos(17 * DAY), Lpn::checked(0, n).unwrap(), &vec![9; ps])
        .unwrap();
    dev.shutdown(Nanos(17 * DAY)).unwrap();
    let mut ctl = dev.into_controller();
    let recs = anchor_records(&mut ctl, &anchors);
    assert_eq!(recs.last().unwrap().0, 10, "{recs:?}");
    // On day 40 no record decodes: refused, naming the anchor.
    match scheme.mount(ctl, Nanos(40 * DAY)) {
        Err(e) => assert!(e.to_string().contains("anchor"), "{e}"),
        Ok(_) => panic!("a volume whose anchor does not decode mounted"),
    }
}

/// LSB pages (every metadata page: region blocks are in SLC mode) gain errors with
/// retention, 2·10⁻⁴ of their bits per day; MSB pages none.
#[derive(Debug, Clone, Copy)]
struct LsbRetention;

impl nand::ErrorModel for LsbRetention {
    fn rber(&self, page: &nand::PageAge) -> f64 {
        match page.kind {
            nand::BitKind::Lsb => 2e-4 * page.retention.0 as f64 / DAY as f64,
            _ => 0.0,
        }
    }
}

/// An idle volume keeps its metadata readable, in the page-level and the block-level kernel
/// (both keep their checkpoints in the region): idle time (`tick`) reads the committed
/// checkpoint generation's oldest page at most once an hour and rewrites the generation —
/// and with it the anchor record — once that page needs half its code. A regression: only
/// host activity (a full log, the checkpoint interval, a shutdown) wrote a generation, so
/// on a volume whose host merely rewrote a few pages now and then (flushed, never a
/// checkpoint) the checkpoint and the anchor aged past the code, and after a crash the
/// volume did not mount although every page of data read back.
#[test]
fn idle_time_scrubs_an_aging_checkpoint_and_the_volume_mounts_after_weeks() {
    let (chip, mut fcfg) = small_chip("tiny-mlc");
    fcfg.ecc_t = 8;
    let block = ftl::BlockFtlConfig {
        over_provisioning: 0.3,
        ..Default::default()
    };
    assert_eq!(block.ecc_t, 8);
    for scheme in [SchemeConfig::Page(fcfg), SchemeConfig::Block(block)] {
        idle_time_scrub_keeps(&chip, &scheme);
    }
}

/// [`idle_time_scrubs_an_aging_checkpoint_and_the_volume_mounts_after_weeks`] on one
/// scheme.
fn idle_time_scrub_keeps(chip: &ChipConfig, scheme: &SchemeConfig) {
    let name = scheme.name();
    let ctl = Controller::new(
        Chip::ram(chip.clone()).unwrap(),
        LsbRetention,
        ControllerConfig::default(),
    )
    .unwrap();
    let mut dev = scheme.format(ctl, Nanos::ZERO).unwrap();
    let n = dev.logical_pages();
    let ps = dev.page_size();
    let checkpoints = |d: &BoxedVolume<RamStorage, LsbRetention>| d.counters().checkpoints;
    let at_format = checkpoints(&dev);
    // Every 4 days pages 0..8 are rewritten and flushed (fresh data, no checkpoint); idle
    // time comes every 12 hours.
    for half_day in 1..=80u64 {
        let now = Nanos(half_day * DAY / 2);
        if half_day % 8 == 0 {
            for l in 0..8 {
                dev.write(now, Lpn::checked(l, n).unwrap(), &vec![half_day as u8; ps])
                    .unwrap();
            }
            dev.flush(now).unwrap();
        }
        while dev.tick(now).unwrap() {}
        dev.verify().unwrap();
    }
    // The generation needs half its code (4 bits of 8 per codeword) after about 5 days: it
    // is rewritten about every 5 days, not every day.
    let written = checkpoints(&dev) - at_format;
    assert!(
        (5..=12).contains(&written),
        "{name}: {written} idle-time checkpoints in 40 days"
    );
    // A crash on day 40: the volume mounts and every page reads back.
    let ctl = dev.into_controller();
    let now = Nanos(40 * DAY + 1);
    let mut dev = scheme.mount(ctl, now).unwrap();
    dev.verify().unwrap();
    let mut buf = vec![0u8; ps];
    for l in 0..8 {
        dev.read(now, Lpn::checked(l, n).unwrap(), &mut buf)
            .unwrap();
        assert_eq!(buf, vec![80u8; ps], "{name}: page {l}");
    }
}

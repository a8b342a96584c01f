//! Mounting arbitrary chip images: random bytes in pages and spare areas, random damage to
//! a real volume, and a corrupted checkpoint region. Every mount returns an error or a
//! volume whose every page reads (or reports unreadable) — it never panics.

use crate::tier;
use controller::{Controller, ControllerConfig, DataClass, MetaTag, OobRecord, PageKind};
use ftl::{Ftl, FtlError, PageFtl, PageFtlConfig, RecoveryKind};
use nand::{Chip, ChipConfig, ConstantRber, Lpn, Nanos, RamStorage};
use proptest::prelude::*;

type Ctl = Controller<RamStorage, ConstantRber>;

fn controller(seed: u64) -> Ctl {
    controller_of(ChipConfig::preset("tiny-slc").unwrap(), seed)
}

fn controller_of(mut cfg: ChipConfig, seed: u64) -> Ctl {
    cfg.seed = seed;
    Controller::new(
        Chip::ram(cfg).unwrap(),
        ConstantRber(0.0),
        ControllerConfig {
            seed,
            ..Default::default()
        },
    )
    .unwrap()
}

fn ftl_cfg(ctl: &mut Ctl, recovery: RecoveryKind) -> PageFtlConfig {
    PageFtlConfig {
        over_provisioning: 0.25,
        ecc_t: ctl.max_t().min(4),
        recovery,
        // Eight region blocks: two of them the anchor, so forged and torn anchor records
        // are fuzzed too.
        region_blocks_per_die: 8,
        ..PageFtlConfig::default()
    }
}

/// The invariants a mounted image keeps. A block erased behind the FTL's back (the
/// `Erase` damage) legitimately leaves the erase-count mirror behind the chip: roll-forward
/// takes erase counts from the checkpoint for blocks it has no reason to read (it affects
/// wear decisions only), so that one check is waived here.
fn check_invariants(dev: &PageFtl<RamStorage, ConstantRber>, when: &str) {
    if let Err(ftl::Invariant::Structure(e)) = dev.verify() {
        panic!("invariant {when}: {e}");
    }
}

/// A mounted volume must keep its invariants and serve every page: data, zeros or a clean
/// "unreadable" error.
fn exercise(dev: &mut PageFtl<RamStorage, ConstantRber>) {
    check_invariants(dev, "after mount");
    let n = dev.logical_pages();
    let mut buf = vec![0u8; dev.page_size()];
    for l in 0..n {
        match dev.read(Nanos(1), Lpn::checked(l, n).unwrap(), &mut buf) {
            Ok(()) | Err(FtlError::Unreadable(_)) => {}
            Err(e) => panic!("read {l}: {e}"),
        }
    }
    // And it accepts writes (or reports it is full).
    for l in 0..n.min(40) {
        match dev.write(
            Nanos(2),
            Lpn::checked(l, n).unwrap(),
            &vec![l as u8; buf.len()],
        ) {
            Ok(()) | Err(FtlError::NoSpace) => {}
            Err(e) => panic!("write {l}: {e}"),
        }
    }
    check_invariants(dev, "after writes on a mounted image");
}

#[derive(Debug, Clone)]
enum Damage {
    /// Program a page with random bytes (data and spare as stored, no ECC).
    Raw { block: u32, fill: u8 },
    /// Program a page through the controller with a forged record.
    Forged {
        block: u32,
        lpn: u64,
        seq: u64,
        kind: u8,
    },
    /// Erase a block.
    Erase { block: u32 },
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (0u32..64, any::<u8>()).prop_map(|(block, fill)| Damage::Raw { block, fill }),
        (
            0u32..64,
            any::<u64>(),
            prop_oneof![0u64..100_000, any::<u64>()],
            0u8..4
        )
            .prop_map(|(block, lpn, seq, kind)| {
                Damage::Forged {
                    block,
                    lpn,
                    seq,
                    kind,
                }
            }),
        (0u32..64).prop_map(|block| Damage::Erase { block }),
    ]
}

fn apply(ctl: &mut Ctl, d: &Damage, seed: u64) {
    let geo = *ctl.chip().geometry();
    let blocks = geo.total_blocks();
    match *d {
        Damage::Raw { block, fill } => {
            let b = geo.block_at(block % blocks).unwrap();
            let next = ctl.chip().block_info(b).unwrap().next_page;
            if next < geo.pages_per_block {
                let a = b.page(next).unwrap();
                let mut data = nand::pattern::bytes(geo.page_size as usize, seed ^ fill as u64);
                data[0] = fill;
                let spare =
                    nand::pattern::bytes(geo.spare_size as usize, seed.wrapping_add(fill as u64));
                let _ = ctl.chip_mut().program(Nanos(0), a, &data, &spare);
            }
        }
        Damage::Forged {
            block,
            lpn,
            seq,
            kind,
        } => {
            let b = geo.block_at(block % blocks).unwrap();
            let next = ctl.chip().block_info(b).unwrap().next_page;
            if next < geo.pages_per_block {
                let a = b.page(next).unwrap();
                let kind = match kind {
                    0 => PageKind::User(DataClass::NORMAL),
                    1 => PageKind::GcCopy(DataClass::CRITICAL),
                    k => PageKind::Meta(MetaTag::new(k - 1)),
                };
                let data = nand::pattern::bytes(geo.page_size as usize, seq);
                let _ = ctl.program(Nanos(0), a, &data, OobRecord::new(lpn, seq, kind), 4);
            }
        }
        Damage::Erase { block } => {
            let b = geo.block_at(block % blocks).unwrap();
            let _ = ctl.chip_mut().erase(Nanos(0), b);
        }
    }
}

/// Regression: a forged record with a sequence number near `u64::MAX` was adopted by
/// recovery (saturating), and the next write overflowed the counter (a panic in debug
/// builds, a wrap in release). Mount must refuse such a chip, with both procedures.
#[test]
fn forged_huge_sequence_number_is_refused() {
    for kind in [RecoveryKind::FullScan, RecoveryKind::RollForward] {
        for seq in [u64::MAX, u64::MAX - 1, 1 << 63] {
            let mut ctl = controller(5);
            let cfg = ftl_cfg(&mut ctl, kind);
            let mut dev = PageFtl::format(ctl, cfg, Nanos(0)).unwrap();
            let n = dev.logical_pages();
            let ps = dev.page_size();
            for l in 0..3 {
                dev.write(Nanos(l), Lpn::checked(l, n).unwrap(), &vec![1; ps])
                    .unwrap();
            }
            dev.flush(Nanos(10)).unwrap();
            // The forged page lands where roll-forward looks too: the host frontier.
            let at = dev.mapping(2).unwrap().block_addr();
            let mut ctl = dev.into_controller();
            let next = ctl.chip().block_info(at).unwrap().next_page;
            let a = at.page(next).unwrap();
            let data = nand::pattern::bytes(ps, 3);
            ctl.program(
                Nanos(11),
                a,
                &data,
                OobRecord::new(2, seq, PageKind::User(DataClass::NORMAL)),
                cfg.ecc_t,
            )
            .unwrap();
            match PageFtl::mount(ctl, cfg, Nanos(20)) {
                Err(FtlError::Corrupt(m)) => assert!(m.contains("sequence"), "{m}"),
                other => panic!("{kind:?} seq {seq}: {:?}", other.map(|_| ())),
            }
        }
    }
}

/// A block-table record that says a block holding live data is factory-bad (checksum
/// valid: a damaged or forged entry). Skipping the block, as a full scan used to, serves
/// older versions of its pages or zeros; both procedures must report it instead.
#[test]
fn data_block_recorded_factory_bad_is_reported() {
    for kind in [RecoveryKind::FullScan, RecoveryKind::RollForward] {
        let mut ctl = controller(6);
        let cfg = ftl_cfg(&mut ctl, kind);
        let mut dev = PageFtl::format(ctl, cfg, Nanos(0)).unwrap();
        let n = dev.logical_pages();
        let ps = dev.page_size();
        for l in 0..3 {
            dev.write(Nanos(l), Lpn::checked(l, n).unwrap(), &vec![7; ps])
                .unwrap();
        }
        dev.flush(Nanos(10)).unwrap();
        // The block the host frontier wrote since the format's checkpoint: roll-forward
        // reads its header too.
        let at = dev.mapping(2).unwrap().block_addr();
        let mut ctl = dev.into_controller();
        ctl.chip_mut()
            .forge_block_flags(at, nand::state::FLAG_FACTORY_BAD)
            .unwrap();
        match PageFtl::mount(ctl, cfg, Nanos(20)) {
            Err(FtlError::Corrupt(m)) => assert!(m.contains("factory-bad"), "{kind:?}: {m}"),
            Err(e) => panic!("{kind:?}: {e}"),
            Ok(mut dev) => {
                let mut buf = vec![0u8; ps];
                let r = dev.read(Nanos(30), Lpn::checked(2, n).unwrap(), &mut buf);
                panic!("{kind:?}: mounted; page 2 reads {r:?} {:?}", &buf[..4]);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: tier::cases(300), .. ProptestConfig::default() })]

    /// Random bytes on a blank chip: no volume, so an error — never a panic.
    #[test]
    fn garbage_chip_is_refused(damages in prop::collection::vec(damage(), 0..80), seed in any::<u64>(), full in any::<bool>()) {
        let mut ctl = controller(seed);
        for d in &damages {
            apply(&mut ctl, d, seed);
        }
        let kind = if full { RecoveryKind::FullScan } else { RecoveryKind::RollForward };
        let cfg = ftl_cfg(&mut ctl, kind);
        if let Ok(mut dev) = PageFtl::mount(ctl, cfg, Nanos(0)) {
            exercise(&mut dev);
        }
    }

    /// A real volume, then random damage anywhere (checkpoint region included): an error or
    /// a working volume.
    #[test]
    fn damaged_volume_mounts_or_errors(damages in prop::collection::vec(damage(), 1..40), seed in any::<u64>(), full in any::<bool>()) {
        let mut ctl = controller(seed);
        let kind = if full { RecoveryKind::FullScan } else { RecoveryKind::RollForward };
        let cfg = ftl_cfg(&mut ctl, kind);
        let mut dev = PageFtl::format(ctl, cfg, Nanos(0)).unwrap();
        fill(&mut dev, seed);
        let mut ctl = dev.into_controller();
        for d in &damages {
            apply(&mut ctl, d, seed);
        }
        if let Ok(mut dev) = PageFtl::mount(ctl, cfg, Nanos(0)) {
            exercise(&mut dev);
        }
    }
}

/// Writes the volume twice over (a flush every 50 writes), in an order `seed` picks.
fn fill(dev: &mut PageFtl<RamStorage, ConstantRber>, seed: u64) {
    let n = dev.logical_pages();
    let ps = dev.page_size();
    for v in 0..(n * 2) {
        let l = (v * 7919 + seed) % n;
        dev.write(
            Nanos(v),
            Lpn::checked(l, n).unwrap(),
            &nand::pattern::bytes(ps, v),
        )
        .unwrap();
        if v % 50 == 0 {
            dev.flush(Nanos(v)).unwrap();
        }
    }
}

/// A volume with a demand-paged map (translation pages of 16 entries, two cached; with
/// `map_log` its write-backs logged) on `preset`, filled, damaged by `damages`, mounted:
/// an error or a working volume.
fn damaged_paged_volume(preset: &str, map_log: bool, damages: &[Damage], seed: u64, full: bool) {
    let mut chip = ChipConfig::preset(preset).unwrap();
    chip.geometry.blocks_per_plane = 64;
    let mut ctl = controller_of(chip, seed);
    let kind = if full {
        RecoveryKind::FullScan
    } else {
        RecoveryKind::RollForward
    };
    let cfg = PageFtlConfig {
        map_cache_pages: 2,
        map_tp_entries: 16,
        map_log,
        ..ftl_cfg(&mut ctl, kind)
    };
    let mut dev = PageFtl::format(ctl, cfg, Nanos(0)).unwrap();
    fill(&mut dev, seed);
    assert!(dev.counters().cpmt_misses > 0);
    let mut ctl = dev.into_controller();
    for d in damages {
        apply(&mut ctl, d, seed);
    }
    if let Ok(mut dev) = PageFtl::mount(ctl, cfg, Nanos(0)) {
        exercise(&mut dev);
    }
}

/// A region that holds checkpoint pages but no complete generation is reported as damaged,
/// not as "not a formatted volume"; a blank chip is still "not formatted".
#[test]
fn a_damaged_checkpoint_region_says_so() {
    for kind in [RecoveryKind::FullScan, RecoveryKind::RollForward] {
        let mut ctl = controller(9);
        let cfg = ftl_cfg(&mut ctl, kind);
        let chip_cfg = ctl.chip().config().clone();
        let dev = PageFtl::format(ctl, cfg, Nanos(0)).unwrap();
        let mut ctl = dev.into_controller();
        let geo = *ctl.chip().geometry();
        for &b in &cfg.region_blocks(&chip_cfg) {
            ctl.chip_mut()
                .erase(Nanos(1), geo.block_at(b).unwrap())
                .unwrap();
        }
        // The first page of a three-page generation, and nothing after it.
        let mut page = vec![0u8; geo.page_size as usize];
        page[..4].copy_from_slice(b"NLCP");
        page[4] = 1; // version
        page[8..16].copy_from_slice(&5u64.to_le_bytes()); // generation
        page[20..24].copy_from_slice(&3u32.to_le_bytes()); // body pages
        page[24..28].copy_from_slice(&16u32.to_le_bytes()); // payload length
        let first = cfg.region_blocks(&chip_cfg)[0];
        let at = geo.block_at(first).unwrap().page(0).unwrap();
        ctl.program_meta(
            Nanos(2),
            at,
            &page,
            OobRecord::new(5, 0, PageKind::Meta(MetaTag::new(1))),
            cfg.ecc_t,
        )
        .unwrap();
        match PageFtl::mount(ctl, cfg, Nanos(3)) {
            Err(FtlError::Corrupt(m)) => assert!(m.contains("damaged"), "{kind:?}: {m}"),
            other => panic!("{kind:?}: {:?}", other.map(|_| ())),
        }
        let mut blank = controller(10);
        let cfg = ftl_cfg(&mut blank, kind);
        match PageFtl::mount(blank, cfg, Nanos(0)) {
            Err(FtlError::Corrupt(m)) => assert!(m.contains("not a formatted"), "{m}"),
            other => panic!("{:?}", other.map(|_| ())),
        }
    }
}

// ----- the block-level kernel (DCR's setting) -----------------------------------------

fn block_cfg(ctl: &mut Ctl, recovery: RecoveryKind) -> ftl::SchemeConfig {
    ftl::SchemeConfig::Block(ftl::BlockFtlConfig {
        over_provisioning: 0.3,
        ecc_t: ctl.max_t().min(4),
        checkpoint_interval: 4,
        recovery,
        ..ftl::BlockFtlConfig::default()
    })
}

/// A mounted block-level volume keeps its structural invariants and serves every page.
fn exercise_volume(dev: &mut ftl::BoxedVolume<RamStorage, ConstantRber>) {
    if let Err(ftl::Invariant::Structure(e)) = dev.verify() {
        panic!("invariant after mount: {e}");
    }
    let n = dev.logical_pages();
    let mut buf = vec![0u8; dev.page_size()];
    for l in 0..n {
        match dev.read(Nanos(1), Lpn::checked(l, n).unwrap(), &mut buf) {
            Ok(()) | Err(FtlError::Unreadable(_)) => {}
            Err(e) => panic!("read {l}: {e}"),
        }
    }
    for l in 0..n.min(40) {
        match dev.write(
            Nanos(2),
            Lpn::checked(l * 3 % n, n).unwrap(),
            &vec![l as u8; buf.len()],
        ) {
            Ok(()) | Err(FtlError::NoSpace) | Err(FtlError::Unreadable(_)) => {}
            Err(e) => panic!("write {l}: {e}"),
        }
    }
    if let Err(ftl::Invariant::Structure(e)) = dev.verify() {
        panic!("invariant after writes on a mounted image: {e}");
    }
}

/// Forged records with huge sequence numbers in a block allocated since the checkpoint
/// are refused by both procedures.
#[test]
fn block_level_forged_huge_sequence_number_is_refused() {
    for kind in [RecoveryKind::FullScan, RecoveryKind::RollForward] {
        let mut ctl = controller(15);
        let cfg = block_cfg(&mut ctl, kind);
        let mut dev = cfg.format(ctl, Nanos(0)).unwrap();
        let n = dev.logical_pages();
        let ps = dev.page_size();
        dev.write(Nanos(1), Lpn::checked(0, n).unwrap(), &vec![1; ps])
            .unwrap();
        let at = dev.mapping(0).unwrap().block_addr();
        let mut ctl = dev.into_controller();
        let next = ctl.chip().block_info(at).unwrap().next_page;
        let data = nand::pattern::bytes(ps, 3);
        ctl.program(
            Nanos(11),
            at.page(next).unwrap(),
            &data,
            OobRecord::new(1, u64::MAX - 1, PageKind::User(DataClass::NORMAL)),
            4,
        )
        .unwrap();
        match cfg.mount(ctl, Nanos(20)) {
            Err(FtlError::Corrupt(m)) => assert!(m.contains("sequence"), "{m}"),
            other => panic!("{kind:?}: {:?}", other.map(|_| ())),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: tier::cases(200), .. ProptestConfig::default() })]

    /// Random bytes on a blank chip, mounted as a block-level volume: an error, never a
    /// panic.
    #[test]
    fn block_level_garbage_chip_is_refused(damages in prop::collection::vec(damage(), 0..80), seed in any::<u64>(), full in any::<bool>()) {
        let mut ctl = controller(seed);
        for d in &damages {
            apply(&mut ctl, d, seed);
        }
        let kind = if full { RecoveryKind::FullScan } else { RecoveryKind::RollForward };
        let cfg = block_cfg(&mut ctl, kind);
        if let Ok(mut dev) = cfg.mount(ctl, Nanos(0)) {
            exercise_volume(&mut dev);
        }
    }

    /// A real block-level volume (merges, wear levelling, checkpoints), then random damage
    /// anywhere — checkpoint region and torn or forged spare areas included: an error or a
    /// working volume.
    #[test]
    fn block_level_damaged_volume_mounts_or_errors(damages in prop::collection::vec(damage(), 1..40), seed in any::<u64>(), full in any::<bool>()) {
        let mut ctl = controller(seed);
        let kind = if full { RecoveryKind::FullScan } else { RecoveryKind::RollForward };
        let cfg = block_cfg(&mut ctl, kind);
        let mut dev = cfg.format(ctl, Nanos(0)).unwrap();
        let n = dev.logical_pages();
        let ps = dev.page_size();
        for v in 0..(n * 2) {
            let l = if v % 3 == 0 { (v * 7919 + seed) % n } else { v % n };
            dev.write(Nanos(v), Lpn::checked(l, n).unwrap(), &nand::pattern::bytes(ps, v)).unwrap();
        }
        let mut ctl = dev.into_controller();
        for d in &damages {
            apply(&mut ctl, d, seed);
        }
        if let Ok(mut dev) = cfg.mount(ctl, Nanos(0)) {
            exercise_volume(&mut dev);
        }
    }
}

// ----- GFTL and RFTL (WAO-GC's Table I) ---------------------------------------------------

fn rt_cfg(gftl: bool) -> ftl::SchemeConfig {
    let c = ftl::RtBlockConfig::default();
    if gftl {
        ftl::SchemeConfig::Gftl(c)
    } else {
        ftl::SchemeConfig::Rftl(c)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: tier::cases(150), .. ProptestConfig::default() })]

    /// Random bytes on a blank chip, mounted as GFTL or RFTL: an error, never a panic.
    #[test]
    fn rt_block_garbage_chip_is_refused(damages in prop::collection::vec(damage(), 0..80), seed in any::<u64>(), gftl in any::<bool>()) {
        let mut ctl = controller(seed);
        for d in &damages {
            apply(&mut ctl, d, seed);
        }
        if let Ok(mut dev) = rt_cfg(gftl).mount(ctl, Nanos(0)) {
            exercise_volume(&mut dev);
        }
    }

    /// A real GFTL or RFTL volume (jobs run, the buffer's blocks erased), then random
    /// damage anywhere: an error or a working volume.
    #[test]
    fn rt_block_damaged_volume_mounts_or_errors(damages in prop::collection::vec(damage(), 1..40), seed in any::<u64>(), gftl in any::<bool>()) {
        let ctl = controller(seed);
        let cfg = rt_cfg(gftl);
        let mut dev = cfg.format(ctl, Nanos(0)).unwrap();
        let n = dev.logical_pages();
        let ps = dev.page_size();
        for v in 0..(n * 2) {
            let l = if v % 3 == 0 { (v * 7919 + seed) % n } else { v % n };
            dev.write(Nanos(v), Lpn::checked(l, n).unwrap(), &nand::pattern::bytes(ps, v)).unwrap();
        }
        let mut ctl = dev.into_controller();
        for d in &damages {
            apply(&mut ctl, d, seed);
        }
        if let Ok(mut dev) = cfg.mount(ctl, Nanos(0)) {
            exercise_volume(&mut dev);
        }
    }
}

// ----- DFTL_por (SPFTL's baseline) --------------------------------------------------------

/// Every page reads (or reports unreadable), writes are taken or refused with an error.
fn exercise_dftl(dev: &mut ftl::BoxedVolume<RamStorage, ConstantRber>) {
    let n = dev.logical_pages();
    let mut buf = vec![0u8; dev.page_size()];
    for l in 0..n {
        match dev.read(Nanos(1), Lpn::checked(l, n).unwrap(), &mut buf) {
            Ok(()) | Err(FtlError::Unreadable(_)) => {}
            Err(e) => panic!("read {l}: {e}"),
        }
    }
    for l in 0..n.min(40) {
        let _ = dev.write(
            Nanos(2),
            Lpn::checked(l * 3 % n, n).unwrap(),
            &vec![l as u8; buf.len()],
        );
    }
}

/// `tiny-slc` with two subpages per page, a larger spare area and twice the blocks
/// (SPFTL_log's logging partitions).
fn controller_sp(seed: u64) -> Ctl {
    let mut cfg = ChipConfig::preset("tiny-slc").unwrap();
    cfg.geometry.subpages_per_page = 2;
    cfg.geometry.spare_size = 128;
    cfg.geometry.blocks_per_plane *= 2;
    controller_of(cfg, seed)
}

/// A real volume of `cfg` (GC and metadata write-backs run; every fifth write critical),
/// flushed, then `damages`; a mount must error or give a volume that passes `check`.
fn damaged_volume(
    cfg: ftl::SchemeConfig,
    ctl: Ctl,
    damages: &[Damage],
    seed: u64,
    check: fn(&mut ftl::BoxedVolume<RamStorage, ConstantRber>),
) {
    let mut dev = cfg.format(ctl, Nanos(0)).unwrap();
    let n = dev.logical_pages();
    let ps = dev.page_size();
    for v in 0..(n * 2) {
        let l = if v % 3 == 0 {
            (v * 7919 + seed) % n
        } else {
            v % n
        };
        let class = if v % 5 == 0 {
            DataClass::CRITICAL
        } else {
            DataClass::NORMAL
        };
        dev.write_with(
            Nanos(v),
            Lpn::checked(l, n).unwrap(),
            &nand::pattern::bytes(ps, v),
            class,
        )
        .unwrap();
    }
    dev.flush(Nanos(n * 2)).unwrap();
    let mut ctl = dev.into_controller();
    for d in damages {
        apply(&mut ctl, d, seed);
    }
    if let Ok(mut dev) = cfg.mount(ctl, Nanos(0)) {
        check(&mut dev);
    }
}

fn dftl_cfg() -> ftl::SchemeConfig {
    ftl::SchemeConfig::DftlPor(dftl_settings())
}

fn dftl_settings() -> ftl::DftlConfig {
    ftl::DftlConfig {
        overprovision: 0.45,
        ecc_t: 1,
        meta_ecc_t: 1,
        gc_threshold: 2,
        memory: ftl::MemoryBudget {
            cpmt: 8 * ftl::dftl::CPMT_ENTRY_BYTES,
            cbit: 4 * ftl::dftl::CBIT_ENTRY_BYTES,
            ..Default::default()
        },
        ..Default::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: tier::cases(150), .. ProptestConfig::default() })]

    /// Random bytes on a blank chip, mounted as DFTL_por: an error (no GXT), never a panic.
    #[test]
    fn dftl_garbage_chip_is_refused(damages in prop::collection::vec(damage(), 0..80), seed in any::<u64>()) {
        let mut ctl = controller(seed);
        for d in &damages {
            apply(&mut ctl, d, seed);
        }
        if let Ok(mut dev) = dftl_cfg().mount(ctl, Nanos(0)) {
            exercise_volume(&mut dev);
        }
    }

    /// A real DFTL_por volume (GC and metadata write-backs run), then random damage
    /// anywhere: an error or a volume whose pages read or report unreadable and that takes
    /// writes. (Not its invariants: a page forged into the update block with a decodable
    /// record is a write to recovery, and the page it claims to supersede is trusted, so
    /// the block counts it decrements may end up short of the map.)
    #[test]
    fn dftl_damaged_volume_mounts_or_errors(damages in prop::collection::vec(damage(), 1..40), seed in any::<u64>()) {
        damaged_volume(dftl_cfg(), controller(seed), &damages, seed, exercise_dftl);
    }

    /// The same for SPFTL_log: damaged logs, GXT logs, LIDs.
    #[test]
    fn spftl_log_damaged_volume_mounts_or_errors(damages in prop::collection::vec(damage(), 1..40), seed in any::<u64>()) {
        let cfg = ftl::SchemeConfig::SpftlLog(ftl::DftlConfig { overprovision: 0.4, ..dftl_settings() });
        damaged_volume(cfg, controller_sp(seed), &damages, seed, exercise_dftl);
    }
}

// ----- The combined profile ----------------------------------------------------------------

/// The combined profile on `tiny-mlc` (AP's placement, FLARES's PPROF codewords, WAO-GC's
/// shared destinations, roll-forward recovery; over-provisioning raised to what the bound
/// needs on this chip).
fn combined_cfg() -> ftl::SchemeConfig {
    ftl::SchemeConfig::Combined(ftl::combined::profile())
}

fn controller_mlc(seed: u64) -> Ctl {
    controller_of(ChipConfig::preset("tiny-mlc").unwrap(), seed)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: tier::cases(80), .. ProptestConfig::default() })]

    /// Random bytes on a blank MLC chip, mounted with the combined profile: an error, never
    /// a panic (or a volume that keeps its invariants, serves and takes writes).
    #[test]
    fn combined_garbage_chip_is_refused(damages in prop::collection::vec(damage(), 0..80), seed in any::<u64>()) {
        let mut ctl = controller_mlc(seed);
        for d in &damages {
            apply(&mut ctl, d, seed);
        }
        if let Ok(mut dev) = combined_cfg().mount(ctl, Nanos(0)) {
            exercise_volume(&mut dev);
        }
    }

    /// A real combined volume (partial GC, forced checkpoints, critical and FLARES pages),
    /// then random damage anywhere: an error or a volume whose pages read or report
    /// unreadable and that takes writes.
    #[test]
    fn combined_damaged_volume_mounts_or_errors(damages in prop::collection::vec(damage(), 1..40), seed in any::<u64>()) {
        damaged_volume(combined_cfg(), controller_mlc(seed), &damages, seed, exercise_volume);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: tier::cases(200), .. ProptestConfig::default() })]

    /// A volume with a demand-paged map (translation pages of 16 entries, two cached: the
    /// checkpoint carries the directory and the dirty pages, the mount reads the others),
    /// then random damage anywhere (the map partition and the region included): an error
    /// or a working volume.
    #[test]
    fn paged_map_damaged_volume_mounts_or_errors(damages in prop::collection::vec(damage(), 1..40), seed in any::<u64>(), full in any::<bool>()) {
        damaged_paged_volume("tiny-slc", false, &damages, seed, full);
    }

    /// The same with SPFTL_log's logs over the paged map (`map_log`, on the chip with
    /// subpages): the checkpoint's log directory and the logs themselves damaged too.
    #[test]
    fn logged_paged_map_damaged_volume_mounts_or_errors(damages in prop::collection::vec(damage(), 1..40), seed in any::<u64>(), full in any::<bool>()) {
        damaged_paged_volume("tiny-mlc-sp", true, &damages, seed, full);
    }
}

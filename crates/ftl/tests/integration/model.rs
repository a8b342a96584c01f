//! Model checking the page-level FTL: random mixes of writes, overwrites, trims and reads in
//! bytes mode against an in-memory reference map. Every read must return the last written
//! data (zeros after a trim) across garbage collection, wear levelling and injected
//! program/erase failures; nothing is ever lost.

use crate::tier;
use controller::{Controller, ControllerConfig};
use ftl::{BoxedVolume, FtlError, PageFtlConfig, SchemeConfig, VictimKind, WearLevelConfig};
use nand::{Chip, ChipConfig, ConstantRber, Failure, Lpn, Nanos, RamStorage};
use proptest::prelude::*;

type Dev = BoxedVolume<RamStorage, ConstantRber>;

fn device(preset: &str, victim: VictimKind, wl: bool, rber: f64, seed: u64) -> Dev {
    device_with(preset, victim, wl, rber, seed).0
}

/// Like [`device`], with the non-default placement and GC pacing policies.
fn device_alt(preset: &str, victim: VictimKind, seed: u64) -> Dev {
    let (dev, scheme) = device_with(preset, victim, true, 0.0, seed);
    let ctl = dev.into_controller();
    let SchemeConfig::Page(mut cfg) = scheme else {
        unreachable!("a page-level configuration")
    };
    cfg.placement = ftl::policy::PlacementKind::HintStreams;
    cfg.gc_pacing = ftl::policy::PacingKind::Incremental { steps: 2 };
    SchemeConfig::Page(cfg).format(ctl, Nanos::ZERO).unwrap()
}

/// The combined profile (AP, FLARES, WAO-GC, roll-forward recovery) on the model's chip.
fn device_combined(preset: &str, seed: u64) -> Dev {
    device_combined_with(preset, seed, ftl::combined::profile())
}

/// The combined profile `cfg` on the model's chip.
fn device_combined_with(preset: &str, seed: u64, cfg: ftl::PageFtlConfig) -> Dev {
    let (dev, _) = device_with(preset, VictimKind::Greedy, false, 0.0, seed);
    let dev = SchemeConfig::Combined(cfg)
        .format(dev.into_controller(), Nanos::ZERO)
        .unwrap();
    dev.verify().unwrap();
    dev
}

/// The device and the scheme configuration it was formatted with (built by the scheme
/// factory, as every consumer does).
fn device_with(
    preset: &str,
    victim: VictimKind,
    wl: bool,
    rber: f64,
    seed: u64,
) -> (Dev, SchemeConfig) {
    let mut cfg = ChipConfig::preset(preset).unwrap();
    // 48 blocks: four of them hold the checkpoint region (SLC mode, half the pages).
    cfg.geometry.blocks_per_plane = 48 / cfg.geometry.planes_per_die;
    cfg.reliability.wear_fail_rate = 0.0;
    cfg.reliability.wear_fail_growth = 0.0;
    cfg.seed = seed;
    let chip = Chip::ram(cfg).unwrap();
    let mut ctl = Controller::new(
        chip,
        ConstantRber(rber),
        ControllerConfig {
            seed,
            ..Default::default()
        },
    )
    .unwrap();
    let ecc_t = ctl.max_t().min(8);
    let fcfg = PageFtlConfig {
        over_provisioning: 0.3,
        gc_threshold: 3,
        victim,
        wear_leveling: wl.then_some(WearLevelConfig {
            spread: 3,
            check_every: 2,
        }),
        ecc_t,
        ..Default::default()
    };
    let scheme = SchemeConfig::Page(fcfg);
    let dev = scheme.format(ctl, Nanos::ZERO).unwrap();
    dev.verify().unwrap();
    (dev, scheme)
}

fn pattern(len: usize, lpn: u64, version: u64) -> Vec<u8> {
    nand::pattern::bytes(len, lpn << 32 | version)
}

#[derive(Debug, Clone)]
enum Op {
    Write(u64),
    Trim(u64),
    Read(u64),
    FailProgram(u32),
    FailErase(u32),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            60 => (0u64..1000).prop_map(Op::Write),
            8 => (0u64..1000).prop_map(Op::Trim),
            25 => (0u64..1000).prop_map(Op::Read),
            1 => (0u32..1000).prop_map(Op::FailProgram),
            1 => (0u32..1000).prop_map(Op::FailErase),
        ],
        1..600,
    )
}

/// Free blocks per die the page-level configurations keep (`gc_threshold`): blocks that
/// may go bad back to back before a write can find no page.
const PAGE_MARGIN: u64 = 3;
/// The same for a real-time pacing (one shared destination): the destination and
/// [`ftl::policy::RESERVE`] (see its docs for why a die tolerates no more).
const REAL_TIME_MARGIN: u64 = 1 + ftl::policy::RESERVE as u64;

fn check(dev: &mut Dev, ops: &[Op]) -> Result<(), TestCaseError> {
    check_with_margin(dev, ops, PAGE_MARGIN)
}

/// A `NoSpace` answer to `what`: only acceptable once injected failures have retired as
/// many blocks as the configuration keeps free (`margin`); the run ends there.
fn out_of_space(dev: &Dev, margin: u64, what: &str) -> Result<(), TestCaseError> {
    let retired = dev.counters().retired_blocks;
    prop_assert!(
        retired >= margin,
        "{}: NoSpace with {} retired blocks: {:?} free {:?}",
        what,
        retired,
        dev.counters(),
        dev.free_blocks()
    );
    Ok(())
}

/// [`check`], where `NoSpace` is acceptable once `margin` blocks were retired (injected
/// failures took the free blocks the configuration keeps).
fn check_with_margin(dev: &mut Dev, ops: &[Op], margin: u64) -> Result<(), TestCaseError> {
    let n = dev.logical_pages();
    let ps = dev.page_size();
    let mut model: Vec<Option<u64>> = vec![None; n as usize];
    let mut version = 0u64;
    let blocks = dev.controller().chip().geometry().total_blocks();
    let mut t = Nanos::ZERO;
    let mut buf = vec![0u8; ps];
    for (i, op) in ops.iter().enumerate() {
        // The invariants hold between any two operations.
        if let Err(e) = dev.verify() {
            return Err(TestCaseError::fail(format!(
                "invariant before op {i} ({op:?}): {e}"
            )));
        }
        t += Nanos::from_us(100);
        match *op {
            Op::Write(l) => {
                let l = l % n;
                version += 1;
                // Hints vary with the page (they steer placement where a policy reads them).
                let class = match l % 4 {
                    0 => ftl::DataClass::CRITICAL,
                    1 => ftl::DataClass {
                        critical: false,
                        temperature: ftl::Temperature::Cold,
                    },
                    2 => ftl::DataClass {
                        critical: false,
                        temperature: ftl::Temperature::Hot,
                    },
                    _ => ftl::DataClass::NORMAL,
                };
                match dev.write_with(
                    t,
                    Lpn::checked(l, n).unwrap(),
                    &pattern(ps, l, version),
                    class,
                ) {
                    Ok(()) => model[l as usize] = Some(version),
                    Err(FtlError::NoSpace) => return out_of_space(dev, margin, "write"),
                    Err(e) => return Err(TestCaseError::fail(format!("write {l}: {e}"))),
                }
            }
            Op::Trim(l) => {
                let l = l % n;
                match dev.trim(t, Lpn::checked(l, n).unwrap()) {
                    Ok(()) => model[l as usize] = None,
                    // A trim is persisted (logged in the checkpoint region, or a checkpoint
                    // written): the same rule as for writes.
                    Err(FtlError::NoSpace) => return out_of_space(dev, margin, "trim"),
                    Err(e) => return Err(TestCaseError::fail(format!("trim {l}: {e}"))),
                }
            }
            Op::Read(l) => {
                let l = l % n;
                dev.read(t, Lpn::checked(l, n).unwrap(), &mut buf)
                    .map_err(|e| TestCaseError::fail(format!("read {l}: {e}")))?;
                let want = model[l as usize].map_or(vec![0u8; ps], |v| pattern(ps, l, v));
                prop_assert_eq!(&buf, &want, "lpn {} after op {:?}", l, op);
            }
            Op::FailProgram(b) | Op::FailErase(b) => {
                let kind = if matches!(op, Op::FailProgram(_)) {
                    Failure::Program
                } else {
                    Failure::Erase
                };
                let addr = dev
                    .controller()
                    .chip()
                    .geometry()
                    .block_at(b % blocks)
                    .unwrap();
                dev.controller_mut()
                    .chip_mut()
                    .inject_failure(addr, kind)
                    .unwrap();
            }
        }
    }
    dev.verify()
        .map_err(|e| TestCaseError::fail(format!("invariant at the end: {e}")))?;
    // Finally every logical page reads back as the model says.
    for l in 0..n {
        dev.read(t, Lpn::checked(l, n).unwrap(), &mut buf)
            .map_err(|e| TestCaseError::fail(format!("final read {l}: {e}")))?;
        let want = model[l as usize].map_or(vec![0u8; ps], |v| pattern(ps, l, v));
        prop_assert_eq!(&buf, &want, "final lpn {}", l);
    }
    prop_assert_eq!(dev.counters().lost_pages, 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: tier::cases(2000), .. ProptestConfig::default() })]

    #[test]
    fn page_ftl_matches_reference_map(ops in ops(), seed in any::<u64>(), which in 0usize..8) {
        if which >= 6 {
            // The combined profile, on an MLC chip (AP at work) and an SLC one (AP left out).
            let preset = if which == 6 { "tiny-mlc" } else { "tiny-slc" };
            let mut dev = device_combined(preset, seed);
            return check_with_margin(&mut dev, &ops, REAL_TIME_MARGIN);
        }
        if which >= 4 {
            // Hint-directed streams and incremental GC pacing.
            let preset = if which == 4 { "tiny-slc" } else { "tiny-mlc" };
            let mut dev = device_alt(preset, VictimKind::Greedy, seed);
            return check(&mut dev, &ops);
        }
        let (preset, victim, wl) = [
            ("tiny-slc", VictimKind::Greedy, true),
            ("tiny-mlc", VictimKind::CostBenefit, true),
            ("tiny-mlc", VictimKind::ApWeighted, false),
            ("tiny-slc", VictimKind::Greedy, false),
        ][which];
        let mut dev = device(preset, victim, wl, 0.0, seed);
        check(&mut dev, &ops)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: tier::cases(500), .. ProptestConfig::default() })]

    /// The combined profile with SPFTL's subpage metadata units (on a chip with subpages).
    #[test]
    fn combined_with_subpage_metadata_matches_reference_map(ops in ops(), seed in any::<u64>()) {
        let cfg = ftl::PageFtlConfig {
            meta_writer: ftl::policy::MetaWriterKind::Subpage,
            ..ftl::combined::profile()
        };
        let mut dev = device_combined_with("tiny-mlc-sp", seed, cfg);
        check_with_margin(&mut dev, &ops, REAL_TIME_MARGIN)?;
    }
}

#[test]
fn long_run_with_bit_errors_and_failures_loses_nothing() {
    let mut dev = device("tiny-mlc", VictimKind::Greedy, true, 2e-5, 9);
    let mut ops = Vec::new();
    let mut x = 12345u64;
    for i in 0..20_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ops.push(match x % 100 {
            0..=69 => Op::Write(x >> 8),
            70..=74 => Op::Trim(x >> 8),
            _ if i % 997 == 0 => Op::FailProgram((x >> 8) as u32),
            _ => Op::Read(x >> 8),
        });
    }
    check(&mut dev, &ops).unwrap();
    let c = *dev.counters();
    assert!(c.gc_victims > 100, "{c:?}");
    assert!(c.wl_migrations > 0, "{c:?}");
    assert!(c.retired_blocks > 0, "{c:?}");
    assert!(dev.controller().stats().corrected_bits > 0);
}

#[test]
fn remount_from_the_chip_alone_restores_every_page() {
    let (mut dev, scheme) = device_with("tiny-slc", VictimKind::Greedy, true, 0.0, 3);
    let n = dev.logical_pages();
    let ps = dev.page_size();
    let mut version = vec![0u64; n as usize];
    let mut x = 99u64;
    for v in 1..3000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let l = x % n;
        dev.write(Nanos(v), Lpn::checked(l, n).unwrap(), &pattern(ps, l, v))
            .unwrap();
        version[l as usize] = v;
    }
    let ctl = dev.into_controller();
    let mut dev = scheme.mount(ctl, Nanos(10_000)).unwrap();
    dev.verify().unwrap();
    assert_eq!(dev.logical_pages(), n);
    let mut buf = vec![0u8; ps];
    for l in 0..n {
        dev.read(Nanos(10_001), Lpn::checked(l, n).unwrap(), &mut buf)
            .unwrap();
        let want = if version[l as usize] == 0 {
            vec![0u8; ps]
        } else {
            pattern(ps, l, version[l as usize])
        };
        assert_eq!(buf, want, "lpn {l}");
    }
    // And it keeps working.
    for v in 0..2000u64 {
        let l = v % n;
        dev.write(
            Nanos(20_000 + v),
            Lpn::checked(l, n).unwrap(),
            &pattern(ps, l, 1_000_000 + v),
        )
        .unwrap();
    }
}

#[test]
fn bad_input_is_rejected() {
    let mut dev = device("tiny-slc", VictimKind::Greedy, false, 0.0, 1);
    let n = dev.logical_pages();
    let ps = dev.page_size();
    assert_eq!(Lpn::checked(n, n).unwrap_err().lpn, n);
    // A checked Lpn from another volume size is still range-checked by the FTL.
    let big = Lpn::checked(n + 5, n + 10).unwrap();
    assert_eq!(
        dev.write(Nanos::ZERO, big, &vec![0; ps]),
        Err(FtlError::OutOfRange {
            lpn: n + 5,
            count: n
        })
    );
    assert_eq!(
        dev.write(Nanos::ZERO, Lpn::checked(0, n).unwrap(), &[1, 2, 3]),
        Err(FtlError::BufferSize {
            got: 3,
            expected: ps
        })
    );
    let mut cfg = ChipConfig::preset("tiny-slc").unwrap();
    cfg.geometry.blocks_per_plane = 24;
    let ctl = Controller::new(
        Chip::ram(cfg).unwrap(),
        ConstantRber(0.0),
        ControllerConfig::default(),
    )
    .unwrap();
    let err = SchemeConfig::Page(PageFtlConfig {
        over_provisioning: 0.01,
        ecc_t: 4,
        ..Default::default()
    })
    .format(ctl, Nanos::ZERO)
    .map(|_| ())
    .unwrap_err();
    assert!(err.to_string().contains("over_provisioning"), "{err}");
}

/// A write's class (its hint) is kept in the page's record: it survives garbage collection
/// (copies keep it), a power cut and a mount with either recovery procedure.
#[test]
fn write_classes_survive_gc_power_cuts_and_mount() {
    use ftl::{DataClass, RecoveryKind, Temperature};
    let class_of = |l: u64| match l % 3 {
        0 => DataClass::CRITICAL,
        1 => DataClass {
            critical: false,
            temperature: Temperature::Cold,
        },
        _ => DataClass::NORMAL,
    };
    for recovery in [RecoveryKind::RollForward, RecoveryKind::FullScan] {
        let (mut dev, mut scheme) = device_with("tiny-mlc", VictimKind::Greedy, true, 0.0, 4);
        scheme.set_recovery(recovery);
        let n = dev.logical_pages();
        let ps = dev.page_size();
        let mut x = 5u64;
        for v in 1..4000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let l = x % n;
            dev.write_with(
                Nanos(v),
                Lpn::checked(l, n).unwrap(),
                &pattern(ps, l, v),
                class_of(l),
            )
            .unwrap();
            if v % 500 == 0 {
                dev.flush(Nanos(v)).unwrap();
            }
        }
        assert!(dev.counters().gc_victims > 20);
        dev.flush(Nanos(5000)).unwrap();
        // Power fails in the middle of the next write.
        dev.controller_mut()
            .chip_mut()
            .arm_cut(1, nand::CutMode::Before);
        assert!(dev
            .write(Nanos(5001), Lpn::checked(1, n).unwrap(), &pattern(ps, 1, 9))
            .is_err());
        let mut ctl = dev.into_controller();
        ctl.chip_mut().disarm_cut();
        ctl.chip_mut().power_on();
        let mut dev = scheme.mount(ctl, Nanos(6000)).unwrap();
        dev.verify().unwrap();
        let mut seen = [0u32; 3];
        for l in 0..n {
            let Some(at) = dev.mapping(l) else { continue };
            let rec = match dev.controller_mut().read_record(Nanos(6001), at).unwrap() {
                controller::PageRead::Data(i) => i.record,
                other => panic!("lpn {l}: {other:?}"),
            };
            assert_eq!(
                rec.kind.data_class(),
                Some(class_of(l)),
                "lpn {l} ({recovery:?})"
            );
            seen[(l % 3) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 50), "{seen:?}");
    }
}

/// Told when its dies are next free (`Ftl::sync_dies`, as the engine does before each
/// request), the FTL issues each operation at the time it runs on its die: the chip records
/// that as the program time, not the dispatch time; back-to-back programs on one die follow
/// each other.
#[test]
fn programs_are_stamped_with_die_time() {
    let mut dev = device("tiny-slc", VictimKind::Greedy, false, 0.0, 8);
    let n = dev.logical_pages();
    let ps = dev.page_size();
    let dies = dev.controller().chip().geometry().total_dies() as usize;
    let busy = Nanos::from_ms(40);
    dev.sync_dies(&vec![busy; dies]);
    let at = Nanos::from_ms(1);
    let mut stamps = Vec::new();
    for l in 0..3 {
        dev.write(at, Lpn::checked(l, n).unwrap(), &pattern(ps, l, 1))
            .unwrap();
        let a = dev.mapping(l).unwrap();
        stamps.push(dev.controller().chip().page_state(a).unwrap().programmed_at);
    }
    assert_eq!(stamps[0], busy);
    // One die: each program starts when the previous one ends.
    let prog = dev.controller().chip().config().timing.program_lsb_ns;
    assert!(stamps[1].0 >= busy.0 + prog, "{stamps:?}");
    assert!(stamps[2].0 >= stamps[1].0 + prog, "{stamps:?}");
    // Without a sync the FTL stamps with the time it is given.
    let mut dev = device("tiny-slc", VictimKind::Greedy, false, 0.0, 8);
    dev.write(at, Lpn::checked(0, n).unwrap(), &pattern(ps, 0, 1))
        .unwrap();
    let a = dev.mapping(0).unwrap();
    assert_eq!(
        dev.controller().chip().page_state(a).unwrap().programmed_at,
        at
    );
}

/// The flush buffer: flushes every page or two open host blocks in SLC mode, so a flush pads
/// (almost) nothing; GC moves what survives into native blocks; both recoveries find every
/// page, in SLC-mode blocks too, and the volume keeps working after the mount.
#[test]
fn flush_buffer_cuts_padding_and_survives_gc_and_mount() {
    let run = |buffer: bool, recovery: ftl::RecoveryKind| {
        let (dev, scheme) = device_with("tiny-mlc", VictimKind::Greedy, true, 0.0, 5);
        let SchemeConfig::Page(mut cfg) = scheme else {
            unreachable!("a page-level configuration")
        };
        cfg.flush_buffer = buffer;
        cfg.recovery = recovery;
        let scheme = SchemeConfig::Page(cfg);
        let mut dev = scheme.format(dev.into_controller(), Nanos::ZERO).unwrap();
        let n = dev.logical_pages();
        let ps = dev.page_size();
        let mut version = vec![0u64; n as usize];
        let mut t = 0u64;
        // Several volumes' worth of synced single-page writes: GC runs throughout.
        for v in 1..(4 * n) {
            let l = (v * 7 + v / 3) % n;
            t += 10;
            dev.write(Nanos(t), Lpn::checked(l, n).unwrap(), &pattern(ps, l, v))
                .unwrap();
            version[l as usize] = v;
            if v % 2 == 0 {
                dev.flush(Nanos(t + 1)).unwrap();
            }
            dev.verify().unwrap();
        }
        dev.flush(Nanos(t + 5)).unwrap();
        let counters = *dev.counters();
        let ctl = dev.into_controller();
        let mut dev = scheme.mount(ctl, Nanos(t + 100)).unwrap();
        dev.verify().unwrap();
        let mut buf = vec![0u8; ps];
        for l in 0..n {
            dev.read(Nanos(t + 101), Lpn::checked(l, n).unwrap(), &mut buf)
                .unwrap();
            let v = version[l as usize];
            let want = if v == 0 {
                vec![0u8; ps]
            } else {
                pattern(ps, l, v)
            };
            assert_eq!(
                buf, want,
                "lpn {l} after mount ({recovery:?}, buffer {buffer})"
            );
        }
        for v in 0..n {
            dev.write(
                Nanos(t + 200 + v),
                Lpn::checked(v, n).unwrap(),
                &pattern(ps, v, 1 << 30),
            )
            .unwrap();
            dev.verify().unwrap();
        }
        counters
    };
    for recovery in [ftl::RecoveryKind::RollForward, ftl::RecoveryKind::FullScan] {
        let with = run(true, recovery);
        let without = run(false, recovery);
        assert!(with.gc_victims > 0, "{with:?}");
        assert!(
            with.pad_pages * 4 < without.pad_pages,
            "pads with the buffer {} vs without {}",
            with.pad_pages,
            without.pad_pages
        );
    }
}

/// A real-time die at its low-water mark whose next two blocks fail to program (found by
/// the property above, shrunk): the first failure is absorbed, the second leaves no page
/// for GC's copies — `NoSpace`, with nothing lost and every page readable. A trim that
/// empties a block then lets GC erase it, and writes resume.
#[test]
fn real_time_die_after_two_failed_blocks_loses_nothing_and_recovers_by_trim() {
    let mut dev = device_combined("tiny-slc", 0);
    let n = dev.logical_pages();
    let ps = dev.page_size();
    let blocks = dev.controller().chip().geometry().total_blocks();
    let mut model: Vec<Option<u64>> = vec![None; n as usize];
    let mut t = Nanos::ZERO;
    let mut version = 0u64;
    // Fill, then overwrite a few pages until the die is down to two free blocks.
    let mut x = 7u64;
    let mut failed = false;
    let mut injected = 0u32;
    for i in 0..20_000u64 {
        t += Nanos::from_us(100);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let l = if i < n { i } else { x % n };
        if injected == 0 && i > n && dev.free_blocks()[0] == 2 {
            // Both blocks the die will open next (its erased data blocks: the region's
            // rotation moves the region, so its current blocks are asked for) fail their
            // first program.
            let region = dev.region_blocks();
            for b in (0..blocks).filter(|b| !region.contains(b)) {
                let addr = dev.controller().chip().geometry().block_at(b).unwrap();
                let info = dev.controller().chip().block_info(addr).unwrap();
                if info.next_page == 0 && !info.needs_erase {
                    dev.controller_mut()
                        .chip_mut()
                        .inject_failure(addr, Failure::Program)
                        .unwrap();
                    injected += 1;
                }
            }
            assert_eq!(injected, 2);
        }
        version += 1;
        match dev.write(t, Lpn::checked(l, n).unwrap(), &pattern(ps, l, version)) {
            Ok(()) => model[l as usize] = Some(version),
            Err(FtlError::NoSpace) => {
                failed = true;
                break;
            }
            Err(e) => panic!("write {l}: {e}"),
        }
        dev.verify().unwrap();
    }
    assert!(
        failed,
        "two back-to-back failures at the low-water mark: {:?}",
        dev.counters()
    );
    assert_eq!(dev.counters().retired_blocks, 2);
    let mut buf = vec![0u8; ps];
    for l in 0..n {
        dev.read(t, Lpn::checked(l, n).unwrap(), &mut buf).unwrap();
        let want = model[l as usize].map_or(vec![0u8; ps], |v| pattern(ps, l, v));
        assert_eq!(buf, want, "lpn {l}");
    }
    assert_eq!(dev.counters().lost_pages, 0);
    // Trims, one page at a time, until one empties a block: the next write succeeds.
    let mut resumed = None;
    for l in 0..n {
        t += Nanos::from_us(100);
        dev.trim(t, Lpn::checked(l, n).unwrap()).unwrap();
        model[l as usize] = None;
        version += 1;
        let target = n - 1;
        match dev.write(
            t,
            Lpn::checked(target, n).unwrap(),
            &pattern(ps, target, version),
        ) {
            Ok(()) => {
                model[target as usize] = Some(version);
                resumed = Some(l);
                break;
            }
            Err(FtlError::NoSpace) => {}
            Err(e) => panic!("write after trim {l}: {e}"),
        }
        dev.verify().unwrap();
    }
    assert!(
        resumed.is_some(),
        "no write succeeded after trimming every page"
    );
    for l in 0..n {
        dev.read(t, Lpn::checked(l, n).unwrap(), &mut buf).unwrap();
        let want = model[l as usize].map_or(vec![0u8; ps], |v| pattern(ps, l, v));
        assert_eq!(buf, want, "lpn {l} after the trims");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: tier::cases(500), .. ProptestConfig::default() })]

    /// The page kernel with a demand-paged map: translation pages of 16 entries, two of
    /// them cached (misses, write-backs, the partition's compaction and checkpoints at
    /// work on the model's small chips), on SLC, MLC and MLC with subpage units, and the
    /// combined profile with it on MLC and SLC.
    #[test]
    fn paged_map_matches_reference_map(ops in ops(), seed in any::<u64>(), which in 0usize..5) {
        if which >= 3 {
            // The combined profile (WAO-GC: bounded upkeep, checkpoints in steps).
            let preset = if which == 3 { "tiny-mlc" } else { "tiny-slc" };
            let cfg = PageFtlConfig {
                map_cache_pages: 2,
                map_tp_entries: 16,
                ..ftl::combined::profile()
            };
            let mut dev = device_combined_with(preset, seed, cfg);
            return check_with_margin(&mut dev, &ops, REAL_TIME_MARGIN);
        }
        let (preset, writer) = [
            ("tiny-slc", ftl::policy::MetaWriterKind::WholePage),
            ("tiny-mlc", ftl::policy::MetaWriterKind::WholePage),
            ("tiny-mlc-sp", ftl::policy::MetaWriterKind::Subpage),
        ][which];
        let (dev, scheme) = device_with(preset, VictimKind::Greedy, true, 0.0, seed);
        let SchemeConfig::Page(cfg) = scheme else {
            unreachable!("a page-level configuration")
        };
        let cfg = PageFtlConfig {
            map_cache_pages: 2,
            map_tp_entries: 16,
            meta_writer: writer,
            ..cfg
        };
        let mut dev = SchemeConfig::Page(cfg).format(dev.into_controller(), Nanos::ZERO).unwrap();
        check(&mut dev, &ops)?;
        let c = dev.counters();
        prop_assert!(ops.len() < 100 || c.retired_blocks > 0 || (c.cpmt_misses > 0 && c.meta_bytes_by_kind.pmt > 0), "{:?}", c);
    }

    /// SPFTL_log over the demand-paged map (`map_log`) on the chip with subpages:
    /// translation pages of 16 entries (logs of at most 8, so write-backs alternate between
    /// logs and merges), two cached; the page kernel and the combined profile.
    #[test]
    fn logged_paged_map_matches_reference_map(ops in ops(), seed in any::<u64>(), which in 0usize..2) {
        if which == 1 {
            let cfg = PageFtlConfig {
                map_cache_pages: 2,
                map_tp_entries: 16,
                map_log: true,
                ..ftl::combined::profile()
            };
            let mut dev = device_combined_with("tiny-mlc-sp", seed, cfg);
            return check_with_margin(&mut dev, &ops, REAL_TIME_MARGIN);
        }
        let (dev, scheme) = device_with("tiny-mlc-sp", VictimKind::Greedy, true, 0.0, seed);
        let SchemeConfig::Page(cfg) = scheme else {
            unreachable!("a page-level configuration")
        };
        // A map partition of 6 blocks: with the automatic sizes of both partitions this
        // small chip has too few data blocks for its over-provisioning.
        let cfg = PageFtlConfig {
            map_cache_pages: 2,
            map_tp_entries: 16,
            map_blocks_per_die: 6,
            map_log: true,
            ..cfg
        };
        let mut dev = SchemeConfig::Page(cfg).format(dev.into_controller(), Nanos::ZERO).unwrap();
        check(&mut dev, &ops)?;
        let c = dev.counters();
        // Write-backs alternate between logs and merges (a merge each ~20 ops measured).
        prop_assert!(ops.len() < 400 || c.retired_blocks > 0 || c.log_merges > 0, "{:?}", c);
    }
}

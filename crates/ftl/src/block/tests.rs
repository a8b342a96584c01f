//! The block-level kernel against a reference model, its bad-input errors, and DCR against
//! the version-based scan on the same crash images.

use super::*;
use crate::testkit::{self, pattern, Ctl, Op};
use crate::Ftl;
use alloc::collections::BTreeMap;
use alloc::string::ToString;
use nand::{ConstantRber, CutMode, RamStorage};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

fn controller(preset: &str, seed: u64) -> Ctl {
    let mut ctl = testkit::controller(preset, seed);
    // (The tiny SLC chip's 64-byte spare area holds t = 4 at most.)
    assert!(ctl.max_t() >= 4);
    ctl
}

fn config() -> BlockFtlConfig {
    BlockFtlConfig {
        over_provisioning: 0.3,
        checkpoint_interval: 4,
        wear_leveling: Some(WearLevelConfig {
            spread: 3,
            check_every: 4,
        }),
        ecc_t: 4,
        ..BlockFtlConfig::default()
    }
}

/// The model runs' mix: sequential runs, random writes, trims, flushes, reads.
const MIX: testkit::Mix = &[
    (Op::Seq, 30),
    (Op::Random, 65),
    (Op::Trim, 72),
    (Op::Flush, 76),
    (Op::Read, 100),
];

/// A random mix of writes (sequential runs and random pages), trims, reads and flushes
/// checked against a model, with `verify` after every operation; then a clean remount
/// with each procedure.
fn model_run(preset: &str, seed: u64, ops: usize) -> BlockFtl<RamStorage, ConstantRber> {
    let ftl = BlockFtl::format(controller(preset, seed), config(), Nanos::ZERO).unwrap();
    ftl.verify().unwrap();
    let n = ftl.logical_pages();
    let verify = |f: &BlockFtl<_, _>| f.verify().map_err(|e| e.to_string());
    let no_other = |f, _| f;
    let (mut ftl, model) = testkit::run(ftl, seed, ops, n, MIX, verify, no_other);
    let t = model.t;
    ftl.shutdown(t).unwrap();
    let c = ftl.s.counters_mut();
    assert!(c.gc_victims > 10, "merges ran: {c:?}");
    let ctl = ftl.into_controller();
    let mut ctl = Some(ctl);
    let mut last = None;
    for kind in [RecoveryKind::FullScan, RecoveryKind::RollForward] {
        let mut cfg = config();
        cfg.recovery = kind;
        let mut m = BlockFtl::mount(ctl.take().unwrap(), cfg, t).unwrap();
        m.verify().unwrap();
        testkit::read_back(&mut m, &model, &format!("{kind:?} remount"));
        m.verify().unwrap();
        ctl = Some(m.into_controller());
        last = Some(kind);
    }
    assert_eq!(last, Some(RecoveryKind::RollForward));
    BlockFtl::mount(ctl.unwrap(), config(), t).unwrap()
}

#[test]
fn model_slc() {
    let ftl = model_run("tiny-slc", 1, 3000);
    assert!(ftl.s.counters().checkpoints > 0);
}

#[test]
fn model_mlc() {
    model_run("tiny-mlc", 2, 3000);
}

/// Wear levelling and both reserved lists are used by a long random workload.
#[test]
fn lists_and_wear_levelling_are_used() {
    // Checkpoints only when the lists run out: merges exhaust the regular list between
    // two and reach the spare list.
    let cfg = BlockFtlConfig {
        checkpoint_interval: 1000,
        spare_blocks: Some(2),
        ..config()
    };
    let mut ftl = BlockFtl::format(controller("tiny-slc", 3), cfg, Nanos::ZERO).unwrap();
    let n = ftl.logical_pages();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let data = pattern(ftl.page_size(), 0, 0);
    let (mut used_s, mut used_h) = (false, false);
    for i in 0..6000u64 {
        // Hot: a few logical blocks take most writes.
        let l = if i % 4 == 0 {
            rng.next_u64() % n
        } else {
            rng.next_u64() % (3 * ftl.ppb() as u64)
        };
        ftl.write(Nanos(i * 1000), Lpn::checked(l, n).unwrap(), &data)
            .unwrap();
        used_s |= ftl.lists.si > 0;
        used_h |= ftl.lists.hi > 0;
    }
    ftl.verify().unwrap();
    assert!(ftl.s.counters_mut().wl_migrations > 0, "wear levelling ran");
    assert!(used_h, "the hot block list served wear levelling");
    assert!(used_s, "the spare free block list served a merge");
}

#[test]
fn bad_configurations_name_the_key() {
    let err = |cfg: BlockFtlConfig| {
        BlockFtl::format(controller("tiny-slc", 1), cfg, Nanos::ZERO)
            .unwrap_err()
            .to_string()
    };
    let e = err(BlockFtlConfig {
        spare_blocks: Some(0),
        ..config()
    });
    assert!(e.contains("spare_blocks = 0"), "{e}");
    let e = err(BlockFtlConfig {
        hot_blocks: Some(0),
        ..config()
    });
    assert!(e.contains("hot_blocks = 0"), "{e}");
    let e = err(BlockFtlConfig {
        checkpoint_interval: 0,
        ..config()
    });
    assert!(e.contains("checkpoint_interval = 0"), "{e}");
    let e = err(BlockFtlConfig {
        spare_blocks: Some(12),
        ..config()
    });
    assert!(e.contains("spare_blocks") && e.contains("free pool"), "{e}");
    let e = err(BlockFtlConfig {
        hot_blocks: Some(12),
        ..config()
    });
    assert!(e.contains("hot_blocks") && e.contains("free pool"), "{e}");
    let e = err(BlockFtlConfig {
        over_provisioning: 0.02,
        ..config()
    });
    assert!(
        e.contains("over_provisioning") && e.contains("logical blocks"),
        "{e}"
    );
}

/// A workload on `preset` cut at chip operation `at` with `mode`: the image.
fn crash_image(preset: &str, seed: u64, at: u64, mode: CutMode) -> Option<(Ctl, Nanos)> {
    let mut ftl = BlockFtl::format(controller(preset, seed), config(), Nanos::ZERO).unwrap();
    let n = ftl.logical_pages();
    let size = ftl.page_size();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let ops0 = ftl.s.controller().chip().ops();
    ftl.s
        .controller_for_harness()
        .chip_mut()
        .arm_cut(ops0 + at, mode);
    let mut t = Nanos::ZERO;
    for i in 0..600u64 {
        t += Nanos(10_000);
        let l = rng.next_u64() % n;
        let r = match i % 20 {
            19 => ftl.flush(t),
            7 => ftl.trim(t, Lpn::checked(l, n).unwrap()),
            _ => ftl.write(t, Lpn::checked(l, n).unwrap(), &pattern(size, l, i)),
        };
        if r.is_err() {
            let mut ctl = ftl.into_controller();
            ctl.chip_mut().power_on();
            return Some((ctl, t));
        }
    }
    None
}

/// DCR and the version-based scan recover identical state from the same crash image:
/// their checkpoints after mount are equal byte for byte.
#[test]
fn dcr_and_version_based_agree_on_every_cut() {
    let mut compared = 0;
    for (preset, step) in [("tiny-slc", 7u64), ("tiny-mlc", 13)] {
        for (k, at) in (1..4000u64).step_by(step as usize).enumerate() {
            let mode = CutMode::ALL[k % CutMode::ALL.len()];
            let Some((ctl, t)) = crash_image(preset, 5, at, mode) else {
                break;
            };
            let mut states = Vec::new();
            for kind in [RecoveryKind::RollForward, RecoveryKind::FullScan] {
                let cfg = BlockFtlConfig {
                    recovery: kind,
                    ..config()
                };
                let m = BlockFtl::mount(ctl.clone(), cfg, t)
                    .unwrap_or_else(|e| panic!("{preset} cut {at} {mode:?} {kind:?}: {e}"));
                m.verify()
                    .unwrap_or_else(|e| panic!("{preset} cut {at} {mode:?} {kind:?}: {e}"));
                let crc = m.s.controller().crc32c_fn();
                states.push((m.snapshot(false).encode(crc), m.s.seq, m.map.clone()));
            }
            assert!(
                states[0] == states[1],
                "{preset}: cut at {at} ({mode:?}): DCR and version-based recover different state"
            );
            compared += 1;
        }
    }
    assert!(compared > 400, "{compared} images compared");
}

/// DCR reads the checkpoint and the blocks allocated since; the version-based scan every
/// block's header.
#[test]
fn dcr_reads_fewer_blocks() {
    let (ctl, t) = crash_image("tiny-slc", 9, 2500, CutMode::Before).unwrap();
    let mut reads = Vec::new();
    for kind in [RecoveryKind::RollForward, RecoveryKind::FullScan] {
        let cfg = BlockFtlConfig {
            recovery: kind,
            ..config()
        };
        let m = BlockFtl::mount(ctl.clone(), cfg, t).unwrap();
        let r = m.recovery_report().unwrap().clone();
        reads.push(r);
    }
    assert_eq!(reads[0].procedure, "dcr");
    assert_eq!(reads[1].procedure, "version-based");
    assert!(reads[0].pages_read < reads[1].pages_read, "{reads:?}");
    assert!(reads[0].time < reads[1].time, "{reads:?}");
}

/// Program and erase failures: a failing primary or replacement is evacuated by a merge
/// and retired; a victim whose erase fails is retired; nothing written is lost and the
/// invariants hold throughout (bytes mode, checked against a model).
#[test]
fn failed_programs_and_erases_retire_blocks_without_loss() {
    use nand::Failure;
    for preset in ["tiny-slc", "tiny-mlc"] {
        let mut ftl = BlockFtl::format(controller(preset, 4), config(), Nanos::ZERO).unwrap();
        let n = ftl.logical_pages();
        let size = ftl.page_size();
        let mut model: BTreeMap<u64, u64> = BTreeMap::new();
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let mut buf = vec![0u8; size];
        let mut injected = 0;
        for i in 0..2500u64 {
            let t = Nanos(i * 10_000);
            let l = if i % 3 == 0 {
                rng.next_u64() % n
            } else {
                i % n
            };
            if i % 401 == 200 {
                // The next program (or erase) of a block holding `l` fails: four failures
                // in all (the tiny chip's pool is nine blocks).
                let (x, _) = ftl.locate(Lpn::checked(l, n).unwrap()).unwrap();
                let e = ftl.map[x as usize];
                let b = if e.r != NONE && injected % 2 == 1 {
                    e.r
                } else {
                    e.p
                };
                if b != NONE && injected < 4 {
                    let f = if injected < 2 {
                        Failure::Program
                    } else {
                        Failure::Erase
                    };
                    let a = ftl.s.block_addr(b);
                    ftl.s
                        .controller_for_harness()
                        .chip_mut()
                        .inject_failure(a, f)
                        .unwrap();
                    injected += 1;
                }
            }
            if let Err(e) = ftl.write(t, Lpn::checked(l, n).unwrap(), &pattern(size, l, i)) {
                let roles: Vec<_> = ftl.blk.iter().map(|k| k.role).collect();
                panic!(
                    "{preset} op {i}: {e}; {:?} {:?} freed {} allocs {}",
                    roles, ftl.lists, ftl.freed_since_cp, ftl.allocs_since_cp
                );
            }
            model.insert(l, i);
            ftl.verify()
                .unwrap_or_else(|e| panic!("{preset} op {i}: {e}"));
        }
        for (&l, &v) in &model {
            ftl.read(Nanos(1 << 40), Lpn::checked(l, n).unwrap(), &mut buf)
                .unwrap();
            assert!(buf == pattern(size, l, v), "{preset}: page {l} lost");
        }
        let c = ftl.s.counters_mut();
        assert!(injected == 4 && c.retired_blocks >= 3, "{preset}: {c:?}");
    }
}

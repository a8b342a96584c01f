//! DFTL_por and SPFTL against a reference model (`verify` after every operation), clean
//! and crash remounts, power cuts at every operation of a short run, and bad input.

use super::*;
use crate::testkit::{self, controller_on, pattern, Op};
use crate::Ftl;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::ToString;
use nand::{ChipConfig, ConstantRber, CutMode, RamStorage};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

type F = DftlFtl<RamStorage, ConstantRber>;

/// `tiny-mlc` with 64 blocks per plane and two subpages per page.
fn chip(seed: u64, subpages: u32) -> ChipConfig {
    let mut cfg = ChipConfig::preset("tiny-mlc").unwrap();
    cfg.geometry.blocks_per_plane = 64;
    cfg.geometry.subpages_per_page = subpages;
    cfg.reliability.wear_fail_rate = 0.0;
    cfg.reliability.wear_fail_growth = 0.0;
    cfg.seed = seed;
    cfg
}

/// A small memory budget so that the caches evict constantly.
fn small() -> DftlConfig {
    DftlConfig {
        overprovision: 0.25,
        memory: MemoryBudget {
            cpmt: 8 * CPMT_ENTRY_BYTES,
            cbit: 4 * CBIT_ENTRY_BYTES,
            ..MemoryBudget::default()
        },
        ..DftlConfig::default()
    }
}

/// Random and sequential writes, trims, reads and flushes; `verify` after every
/// operation; remounts (clean) along the way.
fn model_run(mode: MetaMode, seed: u64, ops: usize) {
    model_run_with(mode, seed, ops, small())
}

fn model_run_with(mode: MetaMode, seed: u64, ops: usize, cfg: DftlConfig) {
    let ftl = F::format(controller_on(chip(seed, 2), seed), mode, cfg, Nanos::ZERO).unwrap();
    ftl.verify().unwrap();
    let n = ftl.logical_pages();
    let mix: testkit::Mix = &[
        (Op::Seq, 25),
        (Op::Random, 70),
        (Op::Trim, 75),
        (Op::Read, 95),
        (Op::Flush, 99),
    ];
    let verify = |f: &F| f.verify().map_err(|e| e.to_string());
    // The rest of the rolls remount (clean).
    let remount = |ftl: F, t| {
        let ctl = ftl.into_controller();
        F::mount(ctl, mode, cfg, t).unwrap_or_else(|e| panic!("mount: {e}"))
    };
    let (mut ftl, model) = testkit::run(ftl, seed, ops, n, mix, verify, remount);
    let t = model.t;
    testkit::read_back(&mut ftl, &model, "end");
    ftl.verify().unwrap();
    let c = *ftl.counters();
    assert!(c.gc_victims > 0, "the run never collected a victim");
    assert!(c.meta_bytes_by_kind.pmt > 0 && c.meta_bytes_by_kind.bit > 0);
    assert!(
        c.erases[crate::Cause::Meta.index()] > 0,
        "no metadata block was ever reused"
    );
    assert!(c.cpmt_misses > 0 && c.cpmt_hits > 0);
    if mode != MetaMode::Page {
        assert!(c.sp_erases > 0);
        assert!(ftl.controller().chip().counters().subpage_programs > 0);
    }
    if mode == MetaMode::Log {
        assert!(c.log_merges > 0, "no log was ever merged");
        assert!(ftl.plid.iter().any(|&a| a != NONE), "no PMT log is live");
    }
    let ctl = ftl.into_controller();
    let mut ftl = F::mount(ctl, mode, cfg, t).unwrap();
    testkit::read_back(&mut ftl, &model, "remount");
    ftl.verify().unwrap();
}

#[test]
fn dftl_por_follows_the_model() {
    model_run(MetaMode::Page, 1, 6000);
}

#[test]
fn spftl_follows_the_model() {
    model_run(MetaMode::Subpage, 2, 6000);
}

/// (SPFTL_log's logging partitions take ten of the test chip's 128 blocks: the volume is
/// made smaller so that the user partition keeps DFTL_por's spare blocks — with 16-page
/// blocks and ~10 % spare, greedy GC of every mode can run out of free blocks.)
#[test]
fn spftl_log_follows_the_model() {
    model_run_with(
        MetaMode::Log,
        3,
        6000,
        DftlConfig {
            overprovision: 0.32,
            ..small()
        },
    );
}

/// SPFTL_log logs small write-backs by subpages: fewer metadata bytes than DFTL_por, with
/// merges and GXT logs along the way.
#[test]
fn spftl_log_writes_less_metadata() {
    let (d, l) = (random_writes(MetaMode::Page), random_writes(MetaMode::Log));
    let ratio = l.meta_bytes as f64 / d.meta_bytes as f64;
    assert!(
        (0.4..0.9).contains(&ratio),
        "SPFTL_log/DFTL_por metadata bytes {ratio}"
    );
    assert!(l.meta_bytes_by_kind.gxt < d.meta_bytes_by_kind.gxt);
}

/// 4,000 random writes on a fresh volume of `mode`: its counters.
fn random_writes(mode: MetaMode) -> crate::FtlCounters {
    let mut ftl = F::format(controller_on(chip(5, 2), 5), mode, small(), Nanos::ZERO).unwrap();
    let n = ftl.logical_pages();
    let size = ftl.page_size();
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    for i in 0..4000u64 {
        let l = rng.next_u64() % n;
        ftl.write(
            Nanos(i * 1000),
            Lpn::checked(l, n).unwrap(),
            &pattern(size, l, i),
        )
        .unwrap();
    }
    *ftl.counters()
}

/// SPFTL writes half the metadata bytes of DFTL_por for the same random writes (each
/// unit is half a page; write-backs batch about as many entries).
#[test]
fn spftl_halves_metadata_bytes() {
    let (d, s) = (
        random_writes(MetaMode::Page).meta_bytes,
        random_writes(MetaMode::Subpage).meta_bytes,
    );
    let ratio = s as f64 / d as f64;
    assert!(
        (0.4..0.75).contains(&ratio),
        "SPFTL/DFTL_por metadata bytes {ratio}"
    );
}

/// A power cut at every chip operation of a short run (every cut mode in turn):
/// recovery keeps every flushed write, never returns another page's data, and passes
/// `verify`.
/// The operations that completed (logical page, version or `None` for a trim) and how many
/// of them a completed flush covers.
type Done = (Vec<(u64, Option<u64>)>, usize);

fn cut_everywhere(mode: MetaMode, seed: u64) {
    cut_everywhere_with(mode, seed, small(), None, 200)
}

/// [`cut_everywhere`] with `cfg`, the test chip grown to `blocks_per_plane` (when given),
/// and writes drawn from the first `span` logical pages.
fn cut_everywhere_with(
    mode: MetaMode,
    seed: u64,
    cfg: DftlConfig,
    blocks_per_plane: Option<u32>,
    span: u64,
) {
    let ops = 260u64;
    let workload = |ftl: &mut F, upto: Option<u64>| -> Result<Done, Done> {
        let n = ftl.logical_pages();
        let size = ftl.page_size();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut log = Vec::new();
        let mut flushed = 0;
        for i in 0..upto.unwrap_or(ops) {
            let l = rng.next_u64() % n.min(span);
            let t = Nanos(i * 1000);
            let mut pending = None;
            let r = match rng.next_u32() % 20 {
                0 => ftl.flush(t).map(|_| flushed = log.len()),
                1 => {
                    pending = Some((l, None));
                    ftl.trim(t, Lpn::checked(l, n).unwrap())
                        .map(|_| log.push((l, None)))
                }
                _ => {
                    pending = Some((l, Some(i)));
                    ftl.write(t, Lpn::checked(l, n).unwrap(), &pattern(size, l, i))
                        .map(|_| log.push((l, Some(i))))
                }
            };
            if r.is_err() {
                // The operation in flight may or may not have happened.
                if let Some(x) = pending {
                    log.push(x);
                }
                return Err((log, flushed));
            }
        }
        Ok((log, flushed))
    };
    let fresh = || {
        let mut c = chip(seed, 2);
        if let Some(b) = blocks_per_plane {
            c.geometry.blocks_per_plane = b;
        }
        F::format(controller_on(c, seed), mode, cfg, Nanos::ZERO).unwrap()
    };
    // How many chip operations the run takes.
    let mut ftl = fresh();
    let start = ftl.controller().chip().ops();
    workload(&mut ftl, None).unwrap();
    let total = ftl.controller().chip().ops() - start;
    let modes = CutMode::ALL;
    let step = (total / 150).max(1);
    let mut k = 0;
    let mut cut_at = 1;
    while cut_at <= total {
        let cm = modes[k % modes.len()];
        k += 1;
        let mut ftl = fresh();
        ftl.controller_mut().chip_mut().arm_cut(cut_at, cm);
        let (log, flushed) = match workload(&mut ftl, None) {
            Ok(x) | Err(x) => x,
        };
        let mut ctl = ftl.into_controller();
        ctl.chip_mut().disarm_cut();
        ctl.chip_mut().power_on();
        let id = format!("{mode:?} cut at op {cut_at} ({cm:?})");
        let mut ftl =
            F::mount(ctl, mode, cfg, Nanos(1 << 40)).unwrap_or_else(|e| panic!("{id}: mount: {e}"));
        ftl.verify().unwrap_or_else(|e| panic!("{id}: {e}"));
        // Per page: the durable value (as of the last completed flush) and those after.
        let n = ftl.logical_pages();
        let size = ftl.page_size();
        let mut durable: BTreeMap<u64, Option<u64>> = BTreeMap::new();
        let mut since: BTreeMap<u64, Vec<Option<u64>>> = BTreeMap::new();
        for (i, &(l, v)) in log.iter().enumerate() {
            if i < flushed {
                durable.insert(l, v);
            } else {
                since.entry(l).or_default().push(v);
            }
        }
        let mut buf = vec![0u8; size];
        let mut pages: Vec<u64> = (0..n.min(200)).chain(log.iter().map(|e| e.0)).collect();
        pages.sort_unstable();
        pages.dedup();
        for l in pages {
            let m = ftl.mapping(l);
            let info = m.map(|a| {
                ftl.controller()
                    .chip()
                    .page_state(a)
                    .map(|st| format!("{st:?}"))
            });
            ftl.read(Nanos(1 << 40), Lpn::checked(l, n).unwrap(), &mut buf)
                .unwrap_or_else(|e| {
                    panic!(
                        "{id}: read {l}: {e} (mapped to {m:?}: {info:?}; u {} wp {})",
                        ftl.u, ftl.u_wp
                    )
                });
            let mut ok: Vec<Option<u64>> = vec![durable.get(&l).copied().flatten()];
            ok.extend(since.get(&l).into_iter().flatten().copied());
            let good = ok.iter().any(|v| match v {
                None => buf.iter().all(|&b| b == 0),
                Some(v) => buf == pattern(size, l, *v),
            });
            let what = (0..ops)
                .find(|&v| buf == pattern(size, l, v))
                .map_or("other".to_string(), |v| v.to_string());
            assert!(good, "{id}: page {l} holds neither its flushed value nor a later one: read {what}, allowed {ok:?} (flushed {flushed} of {})", log.len());
        }
        // And it keeps working.
        for i in 0..40u64 {
            let l = i * 7 % n;
            ftl.write(
                Nanos((1 << 40) + i),
                Lpn::checked(l, n).unwrap(),
                &pattern(size, l, 9_000 + i),
            )
            .unwrap_or_else(|e| panic!("{id}: write after mount: {e}"));
            ftl.verify()
                .unwrap_or_else(|e| panic!("{id}: after mount: {e}"));
        }
        cut_at += step;
    }
}

#[test]
fn dftl_por_survives_cuts() {
    cut_everywhere(MetaMode::Page, 11);
}

#[test]
fn spftl_survives_cuts() {
    cut_everywhere(MetaMode::Subpage, 12);
}

#[test]
fn spftl_log_survives_cuts() {
    cut_everywhere(MetaMode::Log, 13);
}

/// SPFTL_log with the paper's small logging area (`log_blocks = 2`): the logging
/// partitions cannot hold a live log per unit, so reclaiming a logging block merges its
/// live logs into their units — the model holds across remounts, and every cut point too.
fn paper_logging_area() -> DftlConfig {
    DftlConfig {
        overprovision: 0.32,
        log_blocks: 2,
        ..small()
    }
}

#[test]
fn spftl_log_with_two_logging_blocks_follows_the_model() {
    model_run_with(MetaMode::Log, 3, 6000, paper_logging_area());
    // The merges a full logging block forces: more than with a partition per type, on a
    // chip with more PMT units than a logging block holds.
    let merges = |cfg: DftlConfig| {
        let mut c = chip(5, 2);
        c.geometry.blocks_per_plane = 1024;
        let mut ftl = F::format(controller_on(c, 5), MetaMode::Log, cfg, Nanos::ZERO).unwrap();
        let n = ftl.logical_pages();
        let page = vec![7u8; ftl.page_size()];
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for i in 0..4000u64 {
            let l = rng.next_u64() % n;
            ftl.write(Nanos(i * 1000), Lpn::checked(l, n).unwrap(), &page)
                .unwrap();
        }
        ftl.verify().unwrap();
        ftl.counters().log_merges
    };
    let (small_area, partition) = (
        merges(paper_logging_area()),
        merges(DftlConfig {
            overprovision: 0.32,
            ..small()
        }),
    );
    assert!(
        small_area > partition,
        "merges: {small_area} with two logging blocks, {partition} with a partition"
    );
}

/// Cuts while a full logging block is merged into its units: writes spread over a volume
/// with more PMT units than two logging blocks hold.
#[test]
fn spftl_log_with_two_logging_blocks_survives_cuts() {
    cut_everywhere_with(
        MetaMode::Log,
        14,
        paper_logging_area(),
        Some(1024),
        u64::MAX,
    );
}

#[test]
fn one_logging_block_is_refused_naming_the_key() {
    let cfg = DftlConfig {
        log_blocks: 1,
        ..small()
    };
    let e = F::format(
        controller_on(chip(1, 2), 1),
        MetaMode::Log,
        cfg,
        Nanos::ZERO,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("log_blocks = 1"), "{e}");
}

#[test]
fn bad_input_names_the_key() {
    let err = |mode, cfg: DftlConfig, subpages| {
        F::format(controller_on(chip(1, subpages), 1), mode, cfg, Nanos::ZERO)
            .unwrap_err()
            .to_string()
    };
    let e = err(MetaMode::Subpage, small(), 1);
    assert!(e.contains("subpages_per_page = 1"), "{e}");
    let e = err(MetaMode::Log, small(), 1);
    assert!(e.contains("subpages_per_page = 1"), "{e}");
    let e = err(
        MetaMode::Log,
        DftlConfig {
            memory: MemoryBudget {
                merge_buffer: 1024,
                ..small().memory
            },
            ..small()
        },
        2,
    );
    assert!(e.contains("merge_buffer"), "{e}");
    let e = err(
        MetaMode::Page,
        DftlConfig {
            memory: MemoryBudget {
                gxt: 16,
                ..small().memory
            },
            ..small()
        },
        2,
    );
    assert!(e.contains("memory.gxt"), "{e}");
    let e = err(
        MetaMode::Page,
        DftlConfig {
            meta_spare: 16.0,
            ..small()
        },
        2,
    );
    assert!(
        e.contains("larger than the device") || e.contains("overprovision"),
        "{e}"
    );
    let e = err(
        MetaMode::Page,
        DftlConfig {
            overprovision: 0.01,
            ..small()
        },
        2,
    );
    assert!(e.contains("overprovision"), "{e}");
    let e = err(
        MetaMode::Subpage,
        DftlConfig {
            meta_ecc_t: 40,
            ..small()
        },
        2,
    );
    assert!(e.contains("meta_ecc_t"), "{e}");
    // A volume of the other writer is refused, not misread.
    let ftl = F::format(
        controller_on(chip(1, 2), 1),
        MetaMode::Page,
        small(),
        Nanos::ZERO,
    )
    .unwrap();
    let e = F::mount(
        ftl.into_controller(),
        MetaMode::Subpage,
        small(),
        Nanos::ZERO,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("GXT") || e.contains("another"), "{e}");
}

/// SPFTL_log: the newest GXT log (or every GXT log) unreadable at mount (worn, not torn):
/// the mount falls back to an older one only if the volume did not change after it, and
/// otherwise reports (these runs all changed after: they report); it never panics, and a
/// volume it gives is consistent and reads only values written to each page.
#[test]
fn spftl_log_survives_unreadable_gxt_logs() {
    let cfg = DftlConfig {
        overprovision: 0.32,
        ..small()
    };
    for (seed, all) in [(21u64, false), (22, true), (23, false)] {
        let mut ftl = F::format(
            controller_on(chip(seed, 2), seed),
            MetaMode::Log,
            cfg,
            Nanos::ZERO,
        )
        .unwrap();
        let n = ftl.logical_pages();
        let size = ftl.page_size();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut history: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for i in 0..(700 + seed * 13) {
            let l = rng.next_u64() % n;
            ftl.write(Nanos(i), Lpn::checked(l, n).unwrap(), &pattern(size, l, i))
                .unwrap();
            history.entry(l).or_default().push(i);
        }
        let k = PartKind::GxtLog as usize;
        // (Until a GXT log is in the current block.)
        for i in 0..2000u64 {
            if ftl.parts[k].wp > 0 {
                break;
            }
            let l = rng.next_u64() % n;
            let v = 5000 + i;
            ftl.write(Nanos(v), Lpn::checked(l, n).unwrap(), &pattern(size, l, v))
                .unwrap();
            history.entry(l).or_default().push(v);
        }
        ftl.flush(Nanos(10_000)).unwrap();
        let (first, len) = (ftl.parts[k].first, ftl.parts[k].len);
        let slots = ftl.slots();
        let (upd, wp) = (ftl.parts[k].upd, ftl.parts[k].wp);
        assert!(upd != NONE && wp > 0, "no GXT log was written");
        let targets: Vec<(u32, u32)> = if all {
            (first..first + len)
                .flat_map(|b| (0..slots).map(move |s| (b, s)))
                .collect()
        } else {
            vec![(upd, wp - 1)]
        };
        let mut ctl = ftl.into_controller();
        let g = *ctl.chip().geometry();
        let lsb = sizing::lsb_pages(ctl.chip().config());
        let image = (g.page_size + g.spare_size) as usize;
        for (b, s) in targets {
            let flat = b as u64 * g.pages_per_block as u64 + lsb[s as usize] as u64;
            let mut buf = vec![0u8; image];
            let st = ctl.chip_mut().storage_mut();
            st.read(flat, &mut buf).unwrap();
            if buf.iter().all(|&x| x == 0xFF) {
                continue;
            }
            for (i, x) in buf.iter_mut().enumerate() {
                if i % 3 == 0 {
                    *x ^= 0x5A;
                }
            }
            st.write(flat, &buf).unwrap();
        }
        let mut ftl = match F::mount(ctl, MetaMode::Log, cfg, Nanos(20_000)) {
            Ok(f) => f,
            Err(e) => {
                assert!(matches!(e, FtlError::Corrupt(_)), "seed {seed}: {e}");
                continue;
            }
        };
        ftl.verify().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let mut buf = vec![0u8; size];
        for l in 0..n {
            ftl.read(Nanos(30_000), Lpn::checked(l, n).unwrap(), &mut buf)
                .unwrap_or_else(|e| panic!("seed {seed}: read {l}: {e}"));
            let ok = buf.iter().all(|&x| x == 0)
                || history
                    .get(&l)
                    .is_some_and(|h| h.iter().any(|&v| buf == pattern(size, l, v)));
            assert!(ok, "seed {seed}: page {l} reads data never written to it");
        }
    }
}

//! The page kernel with a demand-paged map (`map_cache_pages` > 0): translation pages
//! cached a few at a time, every lookup through the cache (misses and write-backs charged
//! as metadata operations), checkpoints carrying the directory and the dirty cached pages,
//! and mounts — after a clean shutdown, after a power cut, from a volume checkpointed with
//! the map in RAM — that read back every page.

use controller::{Controller, ControllerConfig};
use ftl::policy::MetaWriterKind;
use ftl::{Cause, Ftl, FtlError, PageFtl, PageFtlConfig, RecoveryKind};
use nand::{Chip, ChipConfig, ConstantRber, Lpn, Nanos, RamStorage};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

type Ctl = Controller<RamStorage, ConstantRber>;

fn controller(preset: &str, blocks_per_plane: u32) -> Ctl {
    let mut chip = ChipConfig::preset(preset).unwrap();
    chip.geometry.blocks_per_plane = blocks_per_plane;
    chip.reliability.wear_fail_rate = 0.0;
    chip.reliability.wear_fail_growth = 0.0;
    chip.reliability.factory_bad_rate = 0.0;
    Controller::new(
        Chip::ram(chip).unwrap(),
        ConstantRber(0.0),
        ControllerConfig::default(),
    )
    .unwrap()
}

fn config(cache: u32) -> PageFtlConfig {
    PageFtlConfig {
        over_provisioning: 0.25,
        ecc_t: 4,
        map_cache_pages: cache,
        ..PageFtlConfig::default()
    }
}

/// A page whose bytes name `lpn` and `version`.
fn page(ps: usize, lpn: u64, version: u32) -> Vec<u8> {
    let mut v = vec![0u8; ps];
    v[..8].copy_from_slice(&lpn.to_le_bytes());
    v[8..12].copy_from_slice(&version.to_le_bytes());
    v[12] = 1;
    v
}

/// Random writes, trims and reads checked against `model` (version per logical page, 0:
/// unmapped), `verify` after every operation, a flush every `flush_every`.
fn drive(
    dev: &mut PageFtl<RamStorage, ConstantRber>,
    model: &mut [u32],
    now: &mut Nanos,
    ops: u64,
    flush_every: u64,
    rng: &mut ChaCha8Rng,
) {
    let n = dev.logical_pages();
    let ps = dev.page_size();
    let mut buf = vec![0u8; ps];
    for i in 1..=ops {
        // A skewed load: half the operations in the first eighth of the volume.
        let lpn = if rng.next_u32().is_multiple_of(2) {
            rng.next_u64() % (n / 8)
        } else {
            rng.next_u64() % n
        };
        let l = Lpn::checked(lpn, n).unwrap();
        match rng.next_u32() % 10 {
            0 => {
                dev.trim(*now, l).unwrap();
                model[lpn as usize] = 0;
            }
            1..=2 => {
                dev.read(*now, l, &mut buf).unwrap();
                check(&buf, lpn, model[lpn as usize]);
            }
            _ => {
                let v = model[lpn as usize] + 1;
                dev.write(*now, l, &page(ps, lpn, v)).unwrap();
                model[lpn as usize] = v;
            }
        }
        *now += Nanos(100_000);
        if flush_every > 0 && i % flush_every == 0 {
            dev.flush(*now).unwrap();
        }
        dev.verify().unwrap();
    }
}

fn check(buf: &[u8], lpn: u64, version: u32) {
    if version == 0 {
        assert!(buf.iter().all(|&b| b == 0), "lpn {lpn} should be unmapped");
    } else {
        assert_eq!(
            (
                u64::from_le_bytes(buf[..8].try_into().unwrap()),
                u32::from_le_bytes(buf[8..12].try_into().unwrap())
            ),
            (lpn, version),
            "lpn {lpn}"
        );
    }
}

fn read_all(dev: &mut PageFtl<RamStorage, ConstantRber>, model: &[u32], now: Nanos) {
    let n = dev.logical_pages();
    let mut buf = vec![0u8; dev.page_size()];
    for lpn in 0..n {
        dev.read(now, Lpn::checked(lpn, n).unwrap(), &mut buf)
            .unwrap();
        check(&buf, lpn, model[lpn as usize]);
    }
}

/// Formats `cfg` on `preset`, drives four volumes of the skewed load (a flush every 16),
/// reads every page back, then mounts with each recovery procedure (reading every page and
/// driving a volume more after each). Returns the counters before the first mount.
fn serve_and_remount(preset: &str, blocks: u32, cfg: PageFtlConfig, seed: u64) -> ftl::FtlCounters {
    let mut dev = PageFtl::format(controller(preset, blocks), cfg, Nanos::ZERO).unwrap();
    let n = dev.logical_pages();
    let mut model = vec![0u32; n as usize];
    let mut now = Nanos(1_000);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    drive(&mut dev, &mut model, &mut now, 4 * n, 16, &mut rng);
    let c = *dev.counters();
    read_all(&mut dev, &model, now);
    // A clean shutdown, then a mount with each recovery procedure.
    dev.flush(now).unwrap();
    for recovery in [RecoveryKind::RollForward, RecoveryKind::FullScan] {
        let ctl = dev.into_controller();
        dev = PageFtl::mount(ctl, PageFtlConfig { recovery, ..cfg }, now).unwrap();
        dev.verify().unwrap();
        read_all(&mut dev, &model, now);
        drive(&mut dev, &mut model, &mut now, n, 16, &mut rng);
        dev.flush(now).unwrap();
    }
    c
}

#[test]
fn a_paged_map_serves_every_page_through_a_small_cache_and_remounts() {
    for (preset, blocks, writer) in [
        ("tiny-slc", 768, MetaWriterKind::WholePage),
        ("tiny-mlc", 384, MetaWriterKind::WholePage),
        ("tiny-mlc-sp", 192, MetaWriterKind::Subpage),
    ] {
        let cfg = PageFtlConfig {
            meta_writer: writer,
            ..config(3)
        };
        let c = serve_and_remount(preset, blocks, cfg, 7);
        assert!(c.gc_victims > 0, "{preset}: GC ran");
        assert!(c.cpmt_misses > 0 && c.cpmt_hits > 0, "{preset}: {c:?}");
        assert!(c.meta_bytes_by_kind.pmt > 0, "{preset}: write-backs {c:?}");
        assert!(
            c.reads[Cause::Meta.index()] >= c.cpmt_misses / 2,
            "{preset}"
        );
    }
}

#[test]
fn logged_updates_serve_every_page_remount_and_write_fewer_bytes() {
    // SPFTL_log over the paged map on `tiny-mlc-sp` (2 subpages of 2 KiB: logs of 340
    // entries), with whole-page translation pages (1024 entries), subpage ones (512), and
    // whole-page ones of 256 entries. The same load as without logs writes fewer metadata
    // bytes back.
    for (preset, blocks, writer, entries) in [
        ("tiny-mlc-sp", 192, MetaWriterKind::WholePage, 0),
        ("tiny-mlc-sp", 192, MetaWriterKind::Subpage, 0),
        ("tiny-mlc-sp", 192, MetaWriterKind::WholePage, 256),
    ] {
        let mut pmt = Vec::new();
        for map_log in [false, true] {
            let cfg = PageFtlConfig {
                meta_writer: writer,
                map_log,
                map_tp_entries: entries,
                ..config(3)
            };
            let c = serve_and_remount(preset, blocks, cfg, 17);
            assert!(c.gc_victims > 0 && c.cpmt_misses > 0, "{preset}: {c:?}");
            pmt.push(c.meta_bytes_by_kind.pmt);
        }
        // With subpage translation pages a log is as large as the page it logs: no saving
        // is expected there.
        if writer == MetaWriterKind::WholePage {
            assert!(
                pmt[1] * 10 < pmt[0] * 8,
                "{preset} {writer:?}: write-back bytes {pmt:?} (without, with logs)"
            );
        }
    }
}

#[test]
fn a_power_cut_keeps_every_flushed_page_with_a_paged_map() {
    for (preset, blocks, map_log) in [
        ("tiny-slc", 768, false),
        ("tiny-mlc", 384, false),
        ("tiny-mlc-sp", 192, true),
    ] {
        let cfg = PageFtlConfig {
            map_log,
            ..config(2)
        };
        let mut dev = PageFtl::format(controller(preset, blocks), cfg, Nanos::ZERO).unwrap();
        let n = dev.logical_pages();
        let mut model = vec![0u32; n as usize];
        let mut now = Nanos(1_000);
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        // Six power cuts per chip; two in the fast test tier (`NANDLAB_TEST_TIER=fast`).
        let rounds = if crate::tier::fast() { 2 } else { 6 };
        for round in 0..rounds {
            drive(&mut dev, &mut model, &mut now, 2 * n, 0, &mut rng);
            dev.flush(now).unwrap();
            let flushed = model.clone();
            // Writes after the flush, then the power goes (no flush, no shutdown).
            let ps = dev.page_size();
            let mut after = model.clone();
            for i in 0..(n / 3) {
                let lpn = (i * 7 + round) % n;
                let v = after[lpn as usize] + 1;
                dev.write(now, Lpn::checked(lpn, n).unwrap(), &page(ps, lpn, v))
                    .unwrap();
                after[lpn as usize] = v;
                now += Nanos(50_000);
            }
            let ctl = dev.into_controller();
            dev = PageFtl::mount(ctl, cfg, now).unwrap();
            dev.verify().unwrap();
            // Each page reads its flushed version or the one written after it.
            let mut buf = vec![0u8; ps];
            for lpn in 0..n {
                dev.read(now, Lpn::checked(lpn, n).unwrap(), &mut buf)
                    .unwrap();
                let v = u32::from_le_bytes(buf[8..12].try_into().unwrap());
                let (f, a) = (flushed[lpn as usize], after[lpn as usize]);
                if buf.iter().all(|&b| b == 0) {
                    assert_eq!(f, 0, "{preset}: flushed lpn {lpn} lost");
                    model[lpn as usize] = 0;
                } else {
                    assert!(
                        v == f || v == a,
                        "{preset}: lpn {lpn} reads {v}, not {f} or {a}"
                    );
                    model[lpn as usize] = v;
                }
            }
        }
    }
}

#[test]
fn a_volume_is_mounted_with_the_map_store_it_was_formatted_with() {
    // The map partition takes blocks a RAM-map volume uses for data, and back: a mount
    // with the other store is refused by key, and the volume is left as it was.
    let logged = PageFtlConfig {
        map_log: true,
        ..config(4)
    };
    for (preset, formatted, mounted, key) in [
        ("tiny-slc", config(0), config(4), "map_cache_pages"),
        ("tiny-slc", config(4), config(0), "map_cache_pages"),
        ("tiny-mlc-sp", config(4), logged, "map_log"),
        ("tiny-mlc-sp", logged, config(4), "map_log"),
    ] {
        let mut dev = PageFtl::format(controller(preset, 64), formatted, Nanos::ZERO).unwrap();
        let n = dev.logical_pages();
        let mut model = vec![0u32; n as usize];
        let mut now = Nanos(1_000);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        drive(&mut dev, &mut model, &mut now, n, 32, &mut rng);
        dev.flush(now).unwrap();
        let failure = PageFtl::try_mount(dev.into_controller(), mounted, now).unwrap_err();
        assert!(
            matches!(&failure.error, FtlError::Config(m) if m.contains(key)),
            "{}",
            failure.error
        );
        let mut dev = PageFtl::mount(failure.controller, formatted, now).unwrap();
        dev.verify().unwrap();
        read_all(&mut dev, &model, now);
    }
}

#[test]
fn a_paged_map_is_refused_where_it_is_not_built_for() {
    for (cfg, key) in [
        (
            PageFtlConfig {
                gc_pacing: ftl::policy::PacingKind::WaoGc,
                wear_leveling: None,
                recovery: RecoveryKind::FullScan,
                ..config(4)
            },
            "map_cache_pages",
        ),
        (
            PageFtlConfig {
                gc_pacing: ftl::policy::PacingKind::OnDemand,
                wear_leveling: None,
                ..config(4)
            },
            "map_cache_pages",
        ),
        (
            PageFtlConfig {
                replicas: 1,
                ..config(4)
            },
            "replicas",
        ),
        (
            PageFtlConfig {
                map_blocks_per_die: 1,
                ..config(4)
            },
            "map_blocks_per_die",
        ),
        (
            PageFtlConfig {
                map_log: true,
                ..config(0)
            },
            "map_log",
        ),
    ] {
        let err = PageFtl::format(controller("tiny-slc", 64), cfg, Nanos::ZERO).unwrap_err();
        assert!(
            matches!(&err, FtlError::Config(m) if m.contains(key)),
            "{key}: {err}"
        );
    }
    // Logs are subpages: a chip without them has none to give.
    let cfg = PageFtlConfig {
        map_log: true,
        ..config(4)
    };
    let err = PageFtl::format(controller("tiny-mlc", 64), cfg, Nanos::ZERO).unwrap_err();
    assert!(
        matches!(&err, FtlError::Config(m) if m.contains("map_log")),
        "{err}"
    );
}

#[test]
fn a_paged_map_under_flares_keeps_every_page_across_refresh_rewrites() {
    // FLARES's per-page strength on its chip, translation pages of 64 entries with four
    // cached: every relocation a refresh alarm makes goes through the cache too.
    const SEC: u64 = 1_000_000_000;
    const YEAR: u64 = 8760 * 3600 * SEC;
    let mut chip = ChipConfig::preset("flares-mlc-3x").unwrap();
    chip.geometry.blocks_per_plane = 64;
    chip.reliability.wear_fail_rate = 0.0;
    chip.reliability.wear_fail_growth = 0.0;
    let ctl = Controller::new(
        Chip::ram(chip).unwrap(),
        ConstantRber(0.0),
        ControllerConfig {
            sector_size: 4096,
            ..Default::default()
        },
    )
    .unwrap();
    let cfg = PageFtlConfig {
        ecc_t: 50,
        ecc: ftl::policy::EccKind::Flares(ftl::flares::FlaresConfig::default()),
        map_tp_entries: 64,
        ..config(4)
    };
    let mut dev = PageFtl::format(ctl, cfg, Nanos::ZERO).unwrap();
    let n = dev.logical_pages();
    let mut model = vec![0u32; n as usize];
    let mut now = Nanos(1_000 * SEC);
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    drive(&mut dev, &mut model, &mut now, 2 * n, 64, &mut rng);
    dev.flush(now).unwrap();
    // Two years on: every page read is past its retention limit and rewritten in idle time.
    now += Nanos(2 * YEAR);
    let mut dev = PageFtl::mount(dev.into_controller(), cfg, now).unwrap();
    dev.verify().unwrap();
    read_all(&mut dev, &model, now);
    while dev.tick(now).unwrap() {}
    dev.verify().unwrap();
    let c = *dev.counters();
    assert!(c.refresh_alarms > 0, "{c:?}");
    assert!(c.cpmt_misses > 0);
    read_all(&mut dev, &model, now);
    dev.flush(now).unwrap();
    let mut dev = PageFtl::mount(dev.into_controller(), cfg, now).unwrap();
    read_all(&mut dev, &model, now);
}

#[test]
fn the_combined_profile_with_a_paged_map_keeps_its_bound_and_every_page() {
    // WAO-GC's partial steps with a demand-paged map: one upkeep step per request, map
    // checkpoints in steps beside the writes; no flush and no idle time for 8 volumes of
    // writes — never a whole checkpoint inside a write (no overrun).
    for (preset, blocks, map_log) in [
        ("tiny-slc", 256, false),
        ("tiny-mlc", 128, false),
        ("tiny-mlc-sp", 128, true),
    ] {
        let cfg = PageFtlConfig {
            map_cache_pages: 2,
            map_tp_entries: 32,
            map_log,
            ..ftl::combined::profile()
        };
        let mut dev: ftl::BoxedVolume<RamStorage, ConstantRber> = ftl::SchemeConfig::Combined(cfg)
            .format(controller(preset, blocks), Nanos::ZERO)
            .unwrap();
        let n = dev.logical_pages();
        let ps = dev.page_size();
        let bound = dev.latency_bound().expect("a real-time bound");
        let mut model = vec![0u32; n as usize];
        let mut now = Nanos(1_000);
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        for _ in 0..8 * n {
            let lpn = rng.next_u64() % n;
            let v = model[lpn as usize] + 1;
            dev.write(now, Lpn::checked(lpn, n).unwrap(), &page(ps, lpn, v))
                .unwrap();
            model[lpn as usize] = v;
            now += Nanos(100_000);
        }
        dev.verify().unwrap();
        let c = *dev.counters();
        assert_eq!(c.rt_overruns, 0, "{preset}: {c:?}");
        assert!(
            c.cpmt_misses > 0 && c.meta_bytes_by_kind.pmt > 0,
            "{preset}"
        );
        assert!(c.checkpoint_steps > 0, "{preset}: checkpoints in steps");
        // The map's costs are in the bound: a write may miss and write back.
        let plain = ftl::SchemeConfig::Combined(ftl::combined::profile())
            .format(controller(preset, blocks), Nanos::ZERO)
            .unwrap()
            .latency_bound()
            .unwrap();
        assert!(bound.write_ns > plain.write_ns && bound.read_ns > plain.read_ns);
        let mut buf = vec![0u8; ps];
        for lpn in 0..n {
            dev.read(now, Lpn::checked(lpn, n).unwrap(), &mut buf)
                .unwrap();
            check(&buf, lpn, model[lpn as usize]);
        }
        // A power cut (no flush): every page reads a version written.
        let ctl = dev.into_controller();
        let mut dev = ftl::SchemeConfig::Combined(cfg).mount(ctl, now).unwrap();
        dev.verify().unwrap();
        for lpn in 0..n {
            dev.read(now, Lpn::checked(lpn, n).unwrap(), &mut buf)
                .unwrap();
            let v = u32::from_le_bytes(buf[8..12].try_into().unwrap());
            assert!(v <= model[lpn as usize], "{preset}: lpn {lpn}");
        }
    }
}

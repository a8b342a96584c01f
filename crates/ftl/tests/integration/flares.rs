//! FLARES's page profile across a remount: the critical part (strength, P/E cycles,
//! program time) is read back from each page's spare-area PPROF codeword, so a page
//! written before the remount keeps its retention clock — a read past its limit after
//! the remount raises the rewrite alarm that relocates it.

use controller::{Controller, ControllerConfig, PageRead};
use ftl::flares::FlaresConfig;
use ftl::policy::EccKind;
use ftl::{BoxedVolume, PageFtlConfig, SchemeConfig};
use nand::{Chip, ChipConfig, ConstantRber, Lpn, Nanos, RamStorage};

type Dev = BoxedVolume<RamStorage, ConstantRber>;

const SEC: u64 = 1_000_000_000;
const YEAR: u64 = 8760 * 3600 * SEC;

fn scheme() -> SchemeConfig {
    SchemeConfig::Page(PageFtlConfig {
        over_provisioning: 0.25,
        ecc_t: 50,
        ecc: EccKind::Flares(FlaresConfig::default()),
        ..Default::default()
    })
}

fn controller() -> Controller<RamStorage, ConstantRber> {
    let mut cfg = ChipConfig::preset("flares-mlc-3x").unwrap();
    cfg.geometry.blocks_per_plane = 32;
    cfg.reliability.wear_fail_rate = 0.0;
    cfg.reliability.wear_fail_growth = 0.0;
    let ctl = ControllerConfig {
        sector_size: 4096,
        ..Default::default()
    };
    Controller::new(Chip::ram(cfg).unwrap(), ConstantRber(0.0), ctl).unwrap()
}

#[test]
fn the_profile_survives_a_remount_and_its_retention_clock_keeps_running() {
    let s = scheme();
    let t1 = Nanos(1000 * SEC);
    let mut dev: Dev = s.format(controller(), Nanos::ZERO).unwrap();
    let page = vec![0u8; 4096];
    for l in 0..64u64 {
        dev.write(t1, Lpn::checked(l, 64).unwrap(), &page).unwrap();
    }
    dev.flush(t1).unwrap();
    // The critical part is in the spare area: strength, P/E cycles and program time.
    let at = dev.mapping(5).unwrap();
    let PageRead::Data(info) = dev.controller_mut().read_record(t1, at).unwrap() else {
        panic!("erased")
    };
    let p = info.pprof.expect("a PPROF codeword");
    assert_eq!(p.p_cur, info.record.t);
    assert_eq!(p.writestamp as u64, 1000 + 1);
    assert!(p.p_cur >= 3 && p.p_cur < 50, "{p:?}");
    // Remount two years later and read: the pages were encoded for one year, so each read
    // finds its page past max_ret_time and raises a rewrite alarm — only possible if the
    // program time came back from flash.
    let ctl = dev.into_controller();
    let t2 = Nanos(t1.0 + 2 * YEAR);
    let mut dev: Dev = s.mount(ctl, t2).unwrap();
    let mut buf = vec![0u8; 4096];
    for l in 0..64u64 {
        dev.read(t2, Lpn::checked(l, 64).unwrap(), &mut buf)
            .unwrap();
    }
    let c = dev.counters();
    assert_eq!(c.ecc_policy.pprof_fallbacks, 0, "{:?}", c.ecc_policy);
    assert!(c.ecc_policy.retention_alarms >= 64, "{:?}", c.ecc_policy);
    assert!(c.refresh_alarms >= 64);
    // The alarms relocate the pages in idle time (cause `refresh`), re-encoded.
    while dev.tick(t2).unwrap() {}
    let c = dev.counters();
    assert!(
        c.programs[ftl::Cause::Refresh.index()] >= 64,
        "{:?}",
        c.programs
    );
    for l in 0..64u64 {
        dev.read(t2, Lpn::checked(l, 64).unwrap(), &mut buf)
            .unwrap();
        assert_eq!(buf, page);
    }
    dev.verify().unwrap();
}

/// A clean shutdown saves the non-critical part (p_next, errc, failc of every page) in
/// its checkpoint, and the volume mounts from it and reads every page with its profile
/// (the restore itself: `flares::strength::tests::stash_and_restore_round_trip`).
#[test]
fn a_clean_shutdown_keeps_the_non_critical_part() {
    let s = scheme();
    let mut ctl = controller();
    ctl.enable_pprof().unwrap();
    let mut dev: Dev = s.format(ctl, Nanos::ZERO).unwrap();
    let page = vec![0u8; 4096];
    let n = 64;
    for l in 0..n {
        dev.write(Nanos(SEC), Lpn::checked(l, n).unwrap(), &page)
            .unwrap();
    }
    dev.flush(Nanos(SEC)).unwrap();
    // The shutdown checkpoint carries 3 bytes per physical page more than a flush's.
    let before = dev.counters().meta_bytes;
    dev.flush(Nanos(SEC)).unwrap();
    dev.shutdown(Nanos(2 * SEC)).unwrap();
    let cp = dev.counters().meta_bytes - before;
    let pages = dev.controller().chip().geometry().total_pages();
    assert!(cp >= 3 * pages, "{cp} bytes written for {pages} pages");
    let c1 = dev.counters().checkpoints;
    assert!(c1 >= 1);
    let ctl = dev.into_controller();
    let mut dev: Dev = s.mount(ctl, Nanos(3 * SEC)).unwrap();
    let mut buf = vec![0u8; 4096];
    for l in 0..n {
        dev.read(Nanos(3 * SEC), Lpn::checked(l, n).unwrap(), &mut buf)
            .unwrap();
    }
    assert_eq!(dev.counters().ecc_policy.pprof_fallbacks, 0);
    dev.verify().unwrap();
}

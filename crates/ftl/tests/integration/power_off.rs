//! A volume whose chip lost power (a fired cut) refuses every request until it is mounted
//! again — writes, reads, trims, flushes and background work all fail with `PowerLoss` and
//! change nothing — and the chip then mounts. Every scheme, every cut mode.
//!
//! A real controller loses its RAM when the power goes; what a volume still holds after an
//! operation interrupted half-way through its bookkeeping must not serve a read, take a
//! write or acknowledge a flush (GFTL's flush, which touches no flash, did: then a debug
//! build's invariant check at that flush panicked).

use controller::{Controller, ControllerConfig, CtlError};
use ftl::{BoxedVolume, FtlError, SchemeConfig};
use nand::{Chip, ChipConfig, ConstantRber, CutMode, Lpn, NandError, Nanos, RamStorage};

type Dev = BoxedVolume<RamStorage, ConstantRber>;

fn is_power_loss(e: &FtlError) -> bool {
    matches!(
        e,
        FtlError::Controller(CtlError::Nand(NandError::PowerLoss))
    )
}

/// Fills `scheme` on `chip`, arms a cut of `mode` at the `at`-th chip operation, then
/// serves a mix of requests; from the request the cut fired in on, each must fail with
/// `PowerLoss` and leave the counters as they were. Then a power-on and a mount.
fn case(scheme: &SchemeConfig, chip: &ChipConfig, mode: CutMode, at: u64) {
    let ctl = Controller::new(
        Chip::ram(chip.clone()).unwrap(),
        ConstantRber(0.0),
        ControllerConfig::default(),
    )
    .unwrap();
    let mut dev: Dev = scheme.format(ctl, Nanos::ZERO).unwrap();
    let (n, ps) = (dev.logical_pages(), dev.page_size());
    let mut t = 10u64;
    for v in 0..n {
        t += 10;
        let l = Lpn::checked(v, n).unwrap();
        dev.write(Nanos(t), l, &nand::pattern::bytes(ps, v))
            .unwrap();
    }
    dev.controller_mut().chip_mut().arm_cut(at, mode);
    let mut buf = vec![0u8; ps];
    let mut off = None;
    for v in 0..2 * n {
        t += 10;
        let l = Lpn::checked((v * 13 + 5) % n, n).unwrap();
        let r = match v % 6 {
            0 => dev.flush(Nanos(t)),
            1 => dev.read(Nanos(t), l, &mut buf),
            2 => dev.trim(Nanos(t), l),
            3 => dev.tick(Nanos(t)).map(|_| ()),
            _ => dev.write(Nanos(t), l, &nand::pattern::bytes(ps, v + 7)),
        };
        let what = format!("{} {} at {at}: request {v}", dev.scheme(), mode.name());
        match off {
            None if !dev.controller().chip().is_powered() => {
                // The request the cut fired in fails too (the host never learns more).
                assert!(r.as_ref().is_err_and(is_power_loss), "{what}: {r:?}");
                off = Some(*dev.counters());
            }
            None => assert!(r.is_ok(), "{what}: {r:?} before the cut"),
            Some(ref counters) => {
                assert!(
                    r.as_ref().is_err_and(is_power_loss),
                    "{what}: {r:?} after the cut"
                );
                assert_eq!(
                    dev.counters(),
                    counters,
                    "{what}: counters moved after the cut"
                );
            }
        }
    }
    assert!(
        off.is_some(),
        "{} {}: the cut at {at} never fired",
        dev.scheme(),
        mode.name()
    );
    let mut ctl = dev.into_controller();
    ctl.chip_mut().disarm_cut();
    ctl.chip_mut().power_on();
    let dev = scheme.mount(ctl, Nanos(t + (1 << 20))).unwrap();
    dev.verify().unwrap();
}

#[test]
fn a_volume_without_power_refuses_every_request_until_mounted() {
    let slc = ChipConfig::preset("tiny-slc").unwrap();
    let mlc = ChipConfig::preset("tiny-mlc").unwrap();
    let dftl = ftl::DftlConfig {
        overprovision: 0.45,
        ecc_t: 1,
        meta_ecc_t: 1,
        gc_threshold: 2,
        ..Default::default()
    };
    let schemes = [
        (
            SchemeConfig::Page(ftl::PageFtlConfig {
                over_provisioning: 0.3,
                ecc_t: 2,
                ..Default::default()
            }),
            &slc,
        ),
        (SchemeConfig::Combined(ftl::combined::profile()), &mlc),
        (
            SchemeConfig::Block(ftl::BlockFtlConfig {
                over_provisioning: 0.3,
                ecc_t: 2,
                ..Default::default()
            }),
            &slc,
        ),
        (SchemeConfig::Gftl(ftl::RtBlockConfig::default()), &slc),
        (SchemeConfig::Rftl(ftl::RtBlockConfig::default()), &slc),
        (SchemeConfig::DftlPor(dftl), &slc),
    ];
    for (scheme, chip) in &schemes {
        for mode in CutMode::ALL {
            for at in [1, 3, 8] {
                case(scheme, chip, mode, at);
            }
        }
    }
}

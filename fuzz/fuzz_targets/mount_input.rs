// The body of the `mount` fuzz target, shared with the std-only driver that CI runs
// (`crates/ftl/tests/integration/fuzz_driver.rs`): both `include!` this file.
//
// Mount arbitrary chip images. The input drives a formatted volume (writes, trims, flushes,
// a power cut at a chosen chip operation) and then damages the chip at will (pages
// programmed through the controller with forged records — valid ECC, arbitrary logical
// page, sequence number and kind — raw garbage pages, erased blocks, the checkpoint region
// included). The page-level FTL then mounts it with the recovery procedure the first byte
// picks: it must return an error or a volume that keeps its invariants, whose pages all
// read (or report unreadable) and that accepts writes — never panic.

/// Runs one fuzz input (see the file's comment).
pub fn run_input(data: &[u8]) {
    use controller::{Controller, ControllerConfig, DataClass, MetaTag, OobRecord, PageKind};
    use ftl::{FtlError, PageFtlConfig, RecoveryKind, SchemeConfig};
    use nand::{Chip, ChipConfig, ConstantRber, CutMode, Lpn, Nanos};

    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let cfg = ChipConfig::preset("tiny-slc").expect("preset");
    let geo = cfg.geometry;
    let mut ctl = Controller::new(
        Chip::ram(cfg).expect("chip"),
        ConstantRber(0.0),
        ControllerConfig::default(),
    )
    .expect("controller");
    let t = ctl.max_t().min(4);
    let scheme = SchemeConfig::Page(PageFtlConfig {
        over_provisioning: 0.25,
        ecc_t: t,
        checkpoint_interval: 2,
        recovery: if first & 1 == 0 {
            RecoveryKind::RollForward
        } else {
            RecoveryKind::FullScan
        },
        ..PageFtlConfig::default()
    });
    let mut dev = scheme.format(ctl, Nanos::ZERO).expect("format");
    let n = dev.logical_pages();
    let ps = dev.page_size();
    let mut cmds = rest.chunks_exact(4);
    // Phase 1: host operations until a 0xFF command byte; a power cut armed by command 7.
    for c in cmds.by_ref() {
        if c[0] == 0xFF {
            break;
        }
        let lpn = Lpn::checked(c[1] as u64 % n, n).expect("lpn");
        let r = match c[0] % 8 {
            0..=3 => dev.write(Nanos(1), lpn, &vec![c[2]; ps]),
            4 => dev.trim(Nanos(1), lpn),
            5 | 6 => dev.flush(Nanos(1)),
            _ => {
                let mode = CutMode::ALL[c[2] as usize % CutMode::ALL.len()];
                dev.controller_mut()
                    .chip_mut()
                    .arm_cut(1 + c[3] as u64, mode);
                Ok(())
            }
        };
        if r.is_err() {
            break;
        }
    }
    let mut ctl = dev.into_controller();
    ctl.chip_mut().disarm_cut();
    ctl.chip_mut().power_on();
    // Phase 2: damage.
    for c in cmds {
        let b = geo
            .block_at(c[1] as u32 % geo.total_blocks())
            .expect("block");
        let next = ctl.chip().block_info(b).expect("info").next_page;
        match c[0] % 3 {
            0 => {
                let _ = ctl.chip_mut().erase(Nanos::ZERO, b);
            }
            1 if next < geo.pages_per_block => {
                let kind = match c[3] % 4 {
                    0 => PageKind::User(DataClass::NORMAL),
                    1 => PageKind::GcCopy(DataClass::CRITICAL),
                    k => PageKind::Meta(MetaTag::new(k - 1)),
                };
                let rec = OobRecord::new(c[2] as u64, c[3] as u64 * 7, kind);
                let _ = ctl.program(
                    Nanos::ZERO,
                    b.page(next).expect("page"),
                    &vec![c[2]; ps],
                    rec,
                    t,
                );
            }
            2 if next < geo.pages_per_block => {
                let raw = geo.raw_page_size();
                let page: Vec<u8> = (0..raw)
                    .map(|i| (i as u8).wrapping_mul(c[2]) ^ c[3])
                    .collect();
                let _ = ctl.chip_mut().program(
                    Nanos::ZERO,
                    b.page(next).expect("page"),
                    &page[..ps],
                    &page[ps..],
                );
            }
            _ => {}
        }
    }
    if let Ok(mut dev) = scheme.mount(ctl, Nanos::ZERO) {
        // A volume that mounts keeps every invariant, whatever the chip held (but for an
        // erase-count mirror behind blocks erased behind the FTL's back: see mount_fuzz.rs).
        if let Err(ftl::Invariant::Structure(e)) = dev.verify() {
            panic!("invariant after mount: {e}");
        }
        let n = dev.logical_pages();
        let mut buf = vec![0u8; ps];
        for l in 0..n {
            match dev.read(Nanos(2), Lpn::checked(l, n).expect("lpn"), &mut buf) {
                Ok(()) | Err(FtlError::Unreadable(_)) => {}
                Err(e) => panic!("read {l}: {e}"),
            }
        }
        for l in 0..n.min(64) {
            match dev.write(Nanos(3), Lpn::checked(l, n).expect("lpn"), &vec![1; ps]) {
                Ok(()) | Err(FtlError::NoSpace) => {}
                Err(e) => panic!("write {l}: {e}"),
            }
        }
    }
}

//! A digest-mode store with packed spare prefixes (`RecordPacker`, what chips of
//! `PACK_SPARE_FROM_PAGES` pages or more get) holds exactly the bytes an unpacked one does:
//! the same FTL run on both, power cuts of every mode included, leaves every page's stored
//! bytes, the mapping and the counters identical, and packing really packs.

use controller::{Controller, ControllerConfig, PayloadMode};
use ftl::{BoxedVolume, PageFtlConfig, RtBlockConfig, SchemeConfig};
use nand::{Chip, ChipConfig, ConstantRber, CutMode, Lpn, Nanos, RamStorage, Storage};

fn device(
    scheme: &SchemeConfig,
    chip: &ChipConfig,
    pack: bool,
) -> Controller<RamStorage, ConstantRber> {
    let storage = scheme.digest_storage_packed(chip, pack);
    Controller::new(
        Chip::new(chip.clone(), storage).unwrap(),
        ConstantRber(0.0),
        ControllerConfig {
            mode: PayloadMode::Digest,
            ..Default::default()
        },
    )
    .unwrap()
}

/// Writes in a scattered order with flushes; every `cut_every` writes a power cut of the
/// next mode in turn, then a mount. The volume at the end.
fn run(
    scheme: &SchemeConfig,
    chip: &ChipConfig,
    pack: bool,
) -> BoxedVolume<RamStorage, ConstantRber> {
    let mut dev = scheme
        .format(device(scheme, chip, pack), Nanos::ZERO)
        .unwrap();
    let n = dev.logical_pages();
    // Digest mode: the data area is not passed.
    let data: Vec<u8> = Vec::new();
    let (mut t, mut written) = (10u64, 0u64);
    for (round, mode) in CutMode::ALL.iter().cycle().take(8).enumerate() {
        for v in 0..3 * n {
            let l = (v * 13 + v / 5 + round as u64) % n;
            t += 10;
            // A write fails once the cut has fired: the device is off until the mount.
            if dev
                .write(Nanos(t), Lpn::checked(l, n).unwrap(), &data)
                .is_err()
            {
                break;
            }
            written += 1;
            if v % 7 == 0 && dev.flush(Nanos(t + 1)).is_err() {
                break;
            }
            if v == n + round as u64 * 5 {
                dev.controller_mut().chip_mut().arm_cut(3, *mode);
            }
        }
        let mut ctl = dev.into_controller();
        ctl.chip_mut().disarm_cut();
        ctl.chip_mut().power_on();
        t += 1 << 20;
        dev = scheme.mount(ctl, Nanos(t)).unwrap();
        dev.verify().unwrap();
    }
    // Each round writes past its cut's arming point (n writes and more).
    assert!(written > 8 * n, "{written} writes of {}", 8 * 3 * n);
    dev
}

/// Every programmed page's stored bytes (data and spare), page by page (an erased page's
/// are not the store's to give: the chip never reads them there).
fn pages(dev: &mut BoxedVolume<RamStorage, ConstantRber>) -> Vec<(u64, Vec<u8>)> {
    let chip = dev.controller_mut().chip_mut();
    let g = *chip.geometry();
    let len = (g.page_size + g.spare_size) as usize;
    let programmed: Vec<u64> = (0..g.total_pages())
        .filter(|&pi| !chip.page_state(g.page_at(pi).unwrap()).unwrap().erased)
        .collect();
    programmed
        .into_iter()
        .map(|pi| {
            let mut buf = vec![0u8; len];
            chip.storage_mut().read(pi, &mut buf).unwrap();
            (pi, buf)
        })
        .collect()
}

#[test]
fn packed_and_unpacked_stores_hold_the_same_bytes() {
    let chip = |preset: &str| {
        let mut chip = ChipConfig::preset(preset).unwrap();
        chip.geometry.blocks_per_plane = 40;
        chip.reliability.wear_fail_rate = 0.0;
        chip.reliability.wear_fail_growth = 0.0;
        chip
    };
    let schemes = [
        (
            chip("tiny-mlc"),
            SchemeConfig::Page(PageFtlConfig {
                over_provisioning: 0.3,
                region_blocks_per_die: 8,
                checkpoint_interval: 1,
                ..Default::default()
            }),
        ),
        (
            chip("tiny-slc"),
            SchemeConfig::Gftl(RtBlockConfig::default()),
        ),
    ];
    for (chip, scheme) in &schemes {
        let mut plain = run(scheme, chip, false);
        let mut packed = run(scheme, chip, true);
        let n = plain.logical_pages();
        let map = |d: &BoxedVolume<RamStorage, ConstantRber>| -> Vec<_> {
            (0..n).map(|l| d.mapping(l)).collect()
        };
        assert_eq!(map(&plain), map(&packed), "{scheme:?}: mapping");
        assert_eq!(plain.counters(), packed.counters(), "{scheme:?}: counters");
        assert_eq!(
            plain.controller().chip().counters(),
            packed.controller().chip().counters(),
            "{scheme:?}: chip counters"
        );
        assert_eq!(
            pages(&mut plain),
            pages(&mut packed),
            "{scheme:?}: stored bytes"
        );
        let (a, b) = (
            plain.controller().chip().storage(),
            packed.controller().chip().storage(),
        );
        assert!(
            b.allocated_bytes() < a.allocated_bytes(),
            "{scheme:?}: packed {} bytes, plain {}",
            b.allocated_bytes(),
            a.allocated_bytes()
        );
        assert_eq!(a.verbatim_pages(), 0);
        // Torn programs leave bytes without a compact form: they are kept verbatim.
        assert!(
            b.verbatim_pages() < b.stored_pages() as usize / 10,
            "{scheme:?}: {} verbatim of {}",
            b.verbatim_pages(),
            b.stored_pages()
        );
    }
}

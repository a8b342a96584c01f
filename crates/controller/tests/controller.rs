//! The controller path: round trips, error injection and correction, uncorrectable pages
//! never returning wrong data, erased and torn pages, OOB-only reads, digest mode agreeing
//! with bytes mode, determinism.

use controller::{
    Controller, ControllerConfig, CtlError, DataClass, EccLatency, MetaTag, OobRecord, PageKind,
    PageRead, PayloadMode,
};
use nand::{
    Chip, ChipConfig, ConstantRber, CutMode, ErrorModel, KindRatio, Nanos, PhysAddr, RamStorage,
    Storage, TornFill,
};

fn chip(preset: &str) -> Chip {
    let mut c = ChipConfig::preset(preset).unwrap();
    c.reliability.wear_fail_rate = 0.0;
    c.reliability.wear_fail_growth = 0.0;
    Chip::ram(c).unwrap()
}

fn ctl<M: ErrorModel>(preset: &str, model: M, seed: u64) -> Controller<RamStorage, M> {
    let cfg = ControllerConfig {
        seed,
        ..ControllerConfig::default()
    };
    Controller::new(chip(preset), model, cfg).unwrap()
}

fn page(c: &Chip, block: u32, page: u32) -> PhysAddr {
    c.geometry().block_at(block).unwrap().page(page).unwrap()
}

fn data(len: usize, tag: u64) -> Vec<u8> {
    nand::pattern::bytes(len, tag)
}

#[test]
fn clean_round_trip_returns_data_and_record() {
    let mut c = ctl("tiny-mlc", ConstantRber(0.0), 1);
    let p = page(c.chip(), 1, 0);
    let d = data(4096, 1);
    c.program(
        Nanos::ZERO,
        p,
        &d,
        OobRecord::new(42, 7, PageKind::Meta(MetaTag::new(3))),
        8,
    )
    .unwrap();
    let mut out = vec![0u8; 4096];
    let PageRead::Data(info) = c.read(Nanos::from_ms(1), p, &mut out).unwrap() else {
        panic!("erased")
    };
    assert_eq!(out, d);
    assert_eq!(
        (
            info.record.lpn,
            info.record.seq,
            info.record.kind,
            info.record.t
        ),
        (42, 7, PageKind::Meta(MetaTag::new(3)), 8)
    );
    assert_eq!(info.corrected, 0);
    assert!(info.ecc > Nanos::ZERO);
    // OOB-only read sees the same record.
    let PageRead::Data(r) = c.read_record(Nanos::from_ms(2), p).unwrap() else {
        panic!()
    };
    assert_eq!(r.record, info.record);
    assert!(r.timing.transfer < info.timing.transfer);
}

#[test]
fn bit_errors_are_injected_and_corrected() {
    let mut c = ctl("tiny-mlc", ConstantRber(2e-4), 2);
    let d = data(4096, 3);
    for pg in 0..8 {
        let p = page(c.chip(), 2, pg);
        c.program(
            Nanos::ZERO,
            p,
            &d,
            OobRecord::new(pg as u64, pg as u64, PageKind::User(DataClass::NORMAL)),
            12,
        )
        .unwrap();
    }
    let mut total = 0;
    for round in 0..50 {
        for pg in 0..8 {
            let p = page(c.chip(), 2, pg);
            let mut out = vec![0u8; 4096];
            match c.read(Nanos::from_secs(round), p, &mut out).unwrap() {
                PageRead::Data(info) => {
                    assert_eq!(out, d);
                    total += info.corrected;
                }
                PageRead::Erased { .. } => panic!("erased"),
            }
        }
    }
    // 400 reads × (8 sectors × (4096 × 8 + 156) + record 224 + header 32) bits × 2e-4
    // ≈ 2730 flips expected (sd ≈ 52).
    assert!(total > 2450 && total < 3000, "{total} bits corrected");
    assert_eq!(c.stats().corrected_bits, total as u64);
}

#[test]
fn beyond_t_is_uncorrectable_never_wrong_data() {
    // t = 1 miscorrects two-error codewords often: the CRC must catch every one.
    let mut c = ctl("tiny-mlc", ConstantRber(1.1e-4), 3);
    let d = data(4096, 5);
    let p = page(c.chip(), 3, 0);
    c.program(
        Nanos::ZERO,
        p,
        &d,
        OobRecord::new(1, 1, PageKind::User(DataClass::NORMAL)),
        1,
    )
    .unwrap();
    let (mut ok, mut bad) = (0, 0);
    for i in 0..3000 {
        let mut out = vec![0u8; 4096];
        match c.read(Nanos(i), p, &mut out) {
            Ok(PageRead::Data(_)) => {
                assert_eq!(out, d, "wrong data returned as good");
                ok += 1;
            }
            Err(CtlError::Uncorrectable { .. }) => bad += 1,
            other => panic!("{other:?}"),
        }
    }
    assert!(ok > 0 && bad > 0, "ok {ok} bad {bad}");
    assert!(
        c.stats().miscorrections_caught > 0,
        "no miscorrection exercised the CRC"
    );
}

#[test]
fn strength_that_does_not_fit_is_refused() {
    let mut c = ctl("tiny-mlc", ConstantRber(0.0), 0);
    let p = page(c.chip(), 1, 0);
    let d = data(4096, 1);
    let max = c.max_t();
    assert!(max >= 8, "max t {max}");
    let err = c
        .program(
            Nanos::ZERO,
            p,
            &d,
            OobRecord::new(0, 0, PageKind::User(DataClass::NORMAL)),
            max + 1,
        )
        .unwrap_err();
    assert!(
        matches!(err, CtlError::ParityTooLarge { t, .. } if t == max + 1),
        "{err}"
    );
    assert!(err.to_string().contains(&format!("t = {}", max + 1)));
    let err = c
        .program(
            Nanos::ZERO,
            p,
            &d,
            OobRecord::new(0, 0, PageKind::User(DataClass::NORMAL)),
            0,
        )
        .unwrap_err();
    assert!(matches!(err, CtlError::Ecc(ecc::EccError::ZeroT)));
    // Nothing was programmed by the refused calls.
    assert!(c.chip().page_state(p).unwrap().erased);
    let err = Controller::new(
        chip("tiny-mlc"),
        ConstantRber(0.0),
        ControllerConfig {
            sector_size: 1000,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(matches!(err, CtlError::SectorSize { sector: 1000, .. }));
}

#[test]
fn erased_and_torn_pages() {
    let mut c = ctl("tiny-mlc", ConstantRber(0.0), 4);
    let mut out = vec![0u8; 4096];
    let p = page(c.chip(), 1, 0);
    assert!(matches!(
        c.read(Nanos::ZERO, p, &mut out).unwrap(),
        PageRead::Erased { .. }
    ));
    assert!(matches!(
        c.read_record(Nanos::ZERO, p).unwrap(),
        PageRead::Erased { .. }
    ));
    // A torn program reads as uncorrectable, never as data.
    for seed in 0..20u64 {
        let q = page(c.chip(), 4, seed as u32 % 16);
        if !c.chip().page_state(q).unwrap().erased
            || c.chip().block_info(q.block_addr()).unwrap().next_page > q.page()
        {
            c.chip_mut().erase(Nanos::ZERO, q.block_addr()).unwrap();
        }
        let q = page(c.chip(), 4, 0);
        c.chip_mut().arm_cut(
            1,
            CutMode::TornProgram(if seed % 2 == 0 {
                TornFill::Erased
            } else {
                TornFill::Random
            }),
        );
        assert!(c
            .program(
                Nanos::ZERO,
                q,
                &data(4096, seed),
                OobRecord::new(9, 9, PageKind::User(DataClass::NORMAL)),
                8
            )
            .is_err());
        c.chip_mut().power_on();
        let landed = match c.chip().last_cut().unwrap().effect {
            nand::CutEffect::Torn { landed } => landed,
            e => panic!("{e:?}"),
        };
        match c.read(Nanos::ZERO, q, &mut out) {
            Err(CtlError::Uncorrectable { .. }) => {}
            Ok(PageRead::Erased { .. }) if landed == 0 => {}
            other => panic!("torn page (landed {landed}) read as {other:?}"),
        }
        c.chip_mut().erase(Nanos::ZERO, q.block_addr()).unwrap();
    }
}

#[test]
fn digest_mode_agrees_with_bytes_mode() {
    // The same model and strength: the uncorrectable-page rate of real decoding and of
    // sampling must agree within statistical tolerance over 10^5 reads.
    const READS: u64 = 100_000;
    let rber = 7e-4;
    let t = 4;
    let rate = |mode: PayloadMode| {
        let cfg = ChipConfig::preset("tiny-slc").unwrap();
        let storage = match mode {
            PayloadMode::Bytes => RamStorage::new(&cfg.geometry),
            PayloadMode::Digest => RamStorage::spare_only(&cfg.geometry),
        };
        let chip = Chip::new(cfg, storage).unwrap();
        let ccfg = ControllerConfig {
            mode,
            seed: 99,
            ..Default::default()
        };
        let mut c = Controller::new(chip, ConstantRber(rber), ccfg).unwrap();
        let p = c.chip().geometry().block_at(1).unwrap().page(0).unwrap();
        let d = match mode {
            PayloadMode::Bytes => data(2048, 1),
            PayloadMode::Digest => Vec::new(),
        };
        c.program(
            Nanos::ZERO,
            p,
            &d,
            OobRecord::new(5, 5, PageKind::User(DataClass::NORMAL)),
            t,
        )
        .unwrap();
        let mut out = vec![0u8; d.len()];
        let mut bad = 0u64;
        for i in 0..READS {
            match c.read(Nanos(i), p, &mut out) {
                Ok(PageRead::Data(_)) => {}
                Err(CtlError::Uncorrectable { .. }) => bad += 1,
                other => panic!("{other:?}"),
            }
        }
        bad as f64 / READS as f64
    };
    let b = rate(PayloadMode::Bytes);
    let d = rate(PayloadMode::Digest);
    // Binomial standard error of the difference of two rates, 5 sigma.
    let se = (b * (1.0 - b) / READS as f64 + d * (1.0 - d) / READS as f64).sqrt();
    assert!(b > 0.01 && b < 0.9, "bytes-mode rate {b} not informative");
    assert!(
        (b - d).abs() < 5.0 * se,
        "bytes {b:.5} vs digest {d:.5} (se {se:.5})"
    );
    // And both agree with the analytic rate: 4 sectors (+ record) each failing with
    // P(X > t) at the codeword length.
    let cw = 512 * 8 + 52;
    let p_sector = ecc::reliability::prob_more_than(cw, rber, t as u64);
    let p_record = ecc::reliability::prob_more_than(24 * 8 + 32, rber, 4);
    let analytic = 1.0 - (1.0 - p_sector).powi(4) * (1.0 - p_record);
    assert!(
        (d - analytic).abs() < 5.0 * (analytic * (1.0 - analytic) / READS as f64).sqrt(),
        "digest {d} vs analytic {analytic}"
    );
}

#[test]
fn same_seed_same_outcomes() {
    let run = |seed| {
        let mut c = ctl("tiny-mlc", ConstantRber(1e-3), seed);
        let p = page(c.chip(), 1, 0);
        c.program(
            Nanos::ZERO,
            p,
            &data(4096, 1),
            OobRecord::new(1, 1, PageKind::User(DataClass::NORMAL)),
            6,
        )
        .unwrap();
        let mut out = vec![0u8; 4096];
        (0..200)
            .map(|i| match c.read(Nanos(i), p, &mut out) {
                Ok(PageRead::Data(info)) => info.corrected as i64,
                _ => -1,
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(run(5), run(5));
    assert_ne!(run(5), run(6));
}

#[test]
fn msb_pages_see_fewer_errors_with_ap_sigma() {
    let mut c = ctl("tiny-mlc", KindRatio::ap(ConstantRber(4e-4), 0.5), 7);
    let d = data(4096, 2);
    // dist3: page 0 LSB, page 2 MSB.
    for pg in 0..3 {
        let p = page(c.chip(), 1, pg);
        c.program(
            Nanos::ZERO,
            p,
            &d,
            OobRecord::new(pg as u64, 0, PageKind::User(DataClass::NORMAL)),
            12,
        )
        .unwrap();
    }
    let mut sum = [0u64; 2];
    for (i, pg) in [0u32, 2].iter().enumerate() {
        let p = page(c.chip(), 1, *pg);
        for r in 0..300 {
            let mut out = vec![0u8; 4096];
            if let Ok(PageRead::Data(info)) = c.read(Nanos(r), p, &mut out) {
                sum[i] += info.corrected as u64;
            }
        }
    }
    let ratio = sum[1] as f64 / sum[0] as f64;
    assert!((ratio - 0.5).abs() < 0.12, "MSB/LSB error ratio {ratio}");
}

#[test]
fn decode_latency_matches_flares_anchors() {
    let l = EccLatency::default();
    let t1 = l.decode(4096, 1, 1).0 as f64 / 1000.0;
    let t50 = l.decode(4096, 50, 50).0 as f64 / 1000.0;
    assert!((t1 - 83.9).abs() < 0.01, "{t1}");
    assert!((t50 - 194.0).abs() < 0.01, "{t50}");
    // By default a decode takes its strength's worst-case time, errors or not.
    assert_eq!(l.decode(4096, 50, 0), l.decode(4096, 50, 50));
    assert!(l.decode(512, 8, 0) < l.decode(4096, 8, 0));
    // With an error-dependent share, a clean codeword decodes faster.
    let w = EccLatency {
        error_weight: 0.5,
        ..l
    };
    assert!(w.decode(4096, 50, 0) < w.decode(4096, 50, 50));
    assert_eq!(w.decode(4096, 50, 50), l.decode(4096, 50, 50));
}

/// GC relocation in bytes mode: a pristine page moves as a copy, a page with bit errors is
/// decoded and its corrected data programmed; either way the new page reads back the
/// original data with the original parity, record strength and CRC, and the read is
/// charged as a full page read.
#[test]
fn relocation_moves_corrected_data_with_or_without_errors() {
    for (rber, expect_errors) in [(0.0, false), (2e-4, true)] {
        let mut c = ctl("tiny-mlc", ConstantRber(rber), 3);
        let mut moved = 0;
        for p in 0..8 {
            let src = page(c.chip(), 1, p);
            let dst = page(c.chip(), 2, p);
            let d = data(4096, 100 + p as u64);
            let rec = OobRecord::new(p as u64, 1, PageKind::User(DataClass::NORMAL));
            c.program(Nanos::ZERO, src, &d, rec, 8).unwrap();
            let PageRead::Data(info) = c.read_for_relocation(Nanos::from_ms(1), src).unwrap()
            else {
                panic!("erased")
            };
            moved += info.corrected;
            let mut plain = vec![0u8; 4096];
            let full = c.read(Nanos::from_ms(1), src, &mut plain).unwrap();
            let PageRead::Data(full) = full else { panic!() };
            assert_eq!(info.timing, full.timing, "a full page read's timing");
            c.program_relocated(
                Nanos::from_ms(2),
                dst,
                OobRecord::new(p as u64, 2, PageKind::GcCopy(DataClass::NORMAL)),
            )
            .unwrap();
            // Read the copy back with no error model in the way: the exact bytes.
            let g = *c.chip().geometry();
            let mut out = vec![0u8; g.page_size as usize];
            let mut spare = vec![0u8; g.spare_size as usize];
            let mut sspare = vec![0u8; g.spare_size as usize];
            let mut sout = vec![0u8; g.page_size as usize];
            c.chip_mut()
                .read(Nanos::ZERO, dst, &mut out, &mut spare)
                .unwrap();
            c.chip_mut()
                .read(Nanos::ZERO, src, &mut sout, &mut sspare)
                .unwrap();
            assert_eq!(out, d);
            let layout = c.layout(8).unwrap();
            let parity =
                layout.parity_offset..layout.parity_offset + layout.sectors * layout.parity_bytes;
            assert_eq!(
                spare[parity.clone()],
                sspare[parity],
                "parity moved unchanged"
            );
            let PageRead::Data(back) = c.read(Nanos::from_ms(3), dst, &mut out).unwrap() else {
                panic!()
            };
            assert_eq!(out, d);
            assert_eq!((back.record.seq, back.record.t), (2, 8));
        }
        assert_eq!(
            moved > 0,
            expect_errors,
            "rber {rber}: {moved} bits corrected"
        );
    }
}

/// FLARES's relocation: a page read at one strength and programmed at another is
/// re-encoded — its new parity is exactly a fresh encode at the new strength (what a host
/// program of the same bytes writes), its record names the new strength, and a read at an
/// error rate the new strength corrects returns the original bytes; both for a pristine
/// read (data clocked out of the page register) and one with bit errors.
#[test]
fn relocation_at_another_strength_reencodes() {
    for (rber, t_from, t_to) in [(0.0, 4, 12), (2e-4, 12, 4), (1e-4, 8, 12)] {
        let mut c = ctl("tiny-mlc", ConstantRber(rber), 9);
        for p in 0..6 {
            let (src, dst, host) = (
                page(c.chip(), 1, p),
                page(c.chip(), 2, p),
                page(c.chip(), 3, p),
            );
            let d = data(4096, 300 + p as u64);
            let rec = OobRecord::new(p as u64, 1, PageKind::User(DataClass::NORMAL));
            c.program(Nanos::ZERO, src, &d, rec, t_from).unwrap();
            let PageRead::Data(_) = c.read_for_relocation(Nanos::from_ms(1), src).unwrap() else {
                panic!("erased")
            };
            assert_eq!(c.relocation_t(), Some(t_from));
            let new = OobRecord::new(p as u64, 2, PageKind::GcCopy(DataClass::NORMAL));
            c.program_relocated_as(Nanos::from_ms(2), dst, new, t_to)
                .unwrap();
            // The reference: the same bytes programmed by the host path at t_to.
            c.program(Nanos::from_ms(2), host, &d, new, t_to).unwrap();
            let g = *c.chip().geometry();
            let raw = |c: &mut Controller<RamStorage, ConstantRber>, a| {
                let mut out = vec![0u8; g.page_size as usize];
                let mut spare = vec![0u8; g.spare_size as usize];
                c.chip_mut()
                    .read(Nanos::ZERO, a, &mut out, &mut spare)
                    .unwrap();
                (out, spare)
            };
            let (dd, ds) = raw(&mut c, dst);
            let (hd, hs) = raw(&mut c, host);
            assert_eq!(dd, d, "the corrected bytes moved");
            assert_eq!(dd, hd);
            let l = c.layout(t_to).unwrap();
            let parity = l.parity_offset..l.parity_offset + l.sectors * l.parity_bytes;
            assert_eq!(
                ds[parity.clone()],
                hs[parity],
                "parity of a fresh encode at {t_to}"
            );
            let mut out = vec![0u8; 4096];
            let PageRead::Data(info) = c.read(Nanos::from_ms(3), dst, &mut out).unwrap() else {
                panic!("erased")
            };
            assert_eq!(info.record.t as u32, t_to);
            assert_eq!(out, d);
        }
    }
}

/// FLARES's PPROF codeword: written with every program when enabled, read back with the
/// page; bit rot in it within its t = 5 is corrected, beyond it the read still returns
/// the data and reports no profile (the FTL then falls back to its model), never a wrong
/// one.
#[test]
fn pprof_codeword_round_trips_corrects_and_fails_safe() {
    let mut c = Controller::new(
        chip("tiny-mlc"),
        ConstantRber(0.0),
        ControllerConfig {
            verify_stored: true,
            ..ControllerConfig::default()
        },
    )
    .unwrap();
    c.enable_pprof().unwrap();
    assert!(c.pprof_enabled());
    let l = c.layout(4).unwrap();
    let po = l.pprof_offset.expect("a PPROF slot");
    let g = *c.chip().geometry();
    for (n, (flips, expect)) in [(0usize, true), (3, true), (5, true), (12, false)]
        .into_iter()
        .enumerate()
    {
        let p = page(c.chip(), 1, n as u32);
        let d = data(4096, 700 + flips as u64);
        c.set_next_pecycles(1234);
        let rec = OobRecord::new(9, 1, PageKind::User(DataClass::NORMAL));
        c.program(Nanos(77 * 1_000_000_000), p, &d, rec, 4).unwrap();
        // Rot `flips` bits of the stored PPROF codeword behind the controller's back.
        let i = g.page_index(p).unwrap();
        let (mut sd, mut ss) = (vec![0u8; 4096], vec![0u8; g.spare_size as usize]);
        c.chip_mut()
            .storage_mut()
            .read_split(i, &mut sd, &mut ss)
            .unwrap();
        for f in 0..flips {
            ss[po + f * 7 / 8 % 13] ^= 1 << (f % 8);
        }
        c.chip_mut().storage_mut().write_split(i, &sd, &ss).unwrap();
        let before = c.stats().pprof_failures;
        let mut out = vec![0u8; 4096];
        let PageRead::Data(info) = c.read(Nanos(80 * 1_000_000_000), p, &mut out).unwrap() else {
            panic!("erased")
        };
        assert_eq!(out, d, "{flips} flips: the data are intact");
        if expect {
            let r = info.pprof.expect("decoded");
            assert_eq!(
                (r.p_cur, r.p_next, r.pecycles, r.writestamp),
                (4, 4, 1234, 78)
            );
        } else {
            assert_eq!(info.pprof, None, "{flips} flips");
            assert_eq!(c.stats().pprof_failures, before + 1);
        }
    }
}

/// Persistent errors: with the whole rate in the cells, every read of a program sees the
/// same errors (bytes mode: the same corrected count, data intact); with none, reads vary.
/// A new program of the page draws new cells' errors. `page_bits` draws over fewer bits.
#[test]
fn persistent_errors_repeat_across_reads_and_page_bits_shrink_the_draw() {
    let reads = |persistent: f64, page_bits: Option<u64>, mode: PayloadMode| {
        let cfg = ControllerConfig {
            seed: 5,
            mode,
            ..ControllerConfig::default()
        };
        let mut c = Controller::new(chip("tiny-mlc"), ConstantRber(3e-4), cfg).unwrap();
        c.set_error_draw(controller::ErrorDraw {
            page_bits,
            persistent,
            ..Default::default()
        })
        .unwrap();
        c.track_read_risk(true);
        let p = page(c.chip(), 2, 0);
        let d = if mode == PayloadMode::Bytes {
            data(4096, 9)
        } else {
            Vec::new()
        };
        let rec = OobRecord::new(0, 0, PageKind::User(DataClass::NORMAL));
        c.program(Nanos::ZERO, p, &d, rec, 12).unwrap();
        let mut out = vec![0u8; d.len()];
        let got: Vec<u32> = (0..40)
            .map(|i| match c.read(Nanos::from_ms(i), p, &mut out).unwrap() {
                PageRead::Data(info) => {
                    assert_eq!(out, d);
                    info.corrected
                }
                PageRead::Erased { .. } => panic!("erased"),
            })
            .collect();
        let risk = c.last_read_risk().expect("decoded");
        assert!(risk.p >= 0.0 && risk.p <= 1.0);
        got
    };
    for mode in [PayloadMode::Bytes, PayloadMode::Digest] {
        let kept = reads(1.0, None, mode);
        assert!(kept[0] > 0, "{kept:?}");
        assert!(kept.iter().all(|&k| k == kept[0]), "{mode:?}: {kept:?}");
        let fresh = reads(0.0, None, mode);
        assert!(fresh.iter().any(|&k| k != fresh[0]), "{mode:?}: {fresh:?}");
        let mixed = reads(0.5, None, mode);
        assert!(mixed.iter().any(|&k| k != mixed[0]), "{mode:?}: {mixed:?}");
        // ~10 errors per read over the page's ~34,000 bits; ~0.3 over 1,000.
        let small: u32 = reads(0.0, Some(1000), mode).iter().sum();
        let full: u32 = fresh.iter().sum();
        assert!(small * 10 < full, "{small} vs {full}");
    }
    let mut c = ctl("tiny-mlc", ConstantRber(0.0), 1);
    let bad = controller::ErrorDraw {
        persistent: 1.5,
        ..Default::default()
    };
    assert!(c.set_error_draw(bad).is_err());
}

/// Block variation gives blocks different rates (the same block the same factor every
/// read); a retention step multiplies the rate once a page's data pass its age.
#[test]
fn block_variation_and_a_retention_step_scale_the_rate() {
    let mean_errors = |draw: controller::ErrorDraw, block: u32, at: Nanos| {
        let cfg = ControllerConfig {
            seed: 11,
            mode: PayloadMode::Digest,
            ..ControllerConfig::default()
        };
        let mut c = Controller::new(chip("tiny-mlc"), ConstantRber(5e-5), cfg).unwrap();
        c.set_error_draw(draw).unwrap();
        let p = page(c.chip(), block, 0);
        let rec = OobRecord::new(0, 0, PageKind::User(DataClass::NORMAL));
        c.program(Nanos::ZERO, p, &[], rec, 12).unwrap();
        let n = 400;
        let total: u32 = (0..n)
            .map(|_| match c.read(at, p, &mut []).unwrap() {
                PageRead::Data(info) => info.corrected,
                PageRead::Erased { .. } => panic!("erased"),
            })
            .sum();
        total as f64 / n as f64
    };
    let plain = controller::ErrorDraw::default();
    let base = mean_errors(plain, 3, Nanos::from_secs(1));
    // ~1.7 errors per read over the page's ~34,500 bits at 5e-5.
    assert!((base - 1.73).abs() < 0.25, "{base}");
    let varied = controller::ErrorDraw {
        block_sigma: 1.0,
        ..Default::default()
    };
    let per_block: Vec<f64> = (1..7)
        .map(|b| mean_errors(varied, b, Nanos::from_secs(1)) / base)
        .collect();
    let (lo, hi) = per_block
        .iter()
        .fold((f64::MAX, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
    assert!(hi / lo > 2.0, "{per_block:?}");
    assert_eq!(
        mean_errors(varied, 2, Nanos::from_secs(1)),
        mean_errors(varied, 2, Nanos::from_secs(1))
    );
    let step = controller::ErrorDraw {
        step_hours: Some(10.0),
        step_factor: 4.0,
        ..Default::default()
    };
    let before = mean_errors(step, 3, Nanos::from_secs(9 * 3600)) / base;
    let after = mean_errors(step, 3, Nanos::from_secs(11 * 3600)) / base;
    assert!((before - 1.0).abs() < 0.2, "{before}");
    assert!((after - 4.0).abs() < 0.6, "{after}");
    let bad = controller::ErrorDraw {
        step_hours: Some(1.0),
        step_factor: 0.0,
        ..Default::default()
    };
    let mut c = ctl("tiny-mlc", ConstantRber(0.0), 1);
    assert!(c.set_error_draw(bad).is_err());
}

/// The PPROF codeword's decode is charged on every path that decodes it: a read the
/// error model left clean (the shortcut), a read decoded in full (here forced by
/// `verify_stored`) and a spare-only read of a recovery scan all cost the PPROF
/// decode more with the codeword than without, by the same amount.
#[test]
fn pprof_decode_is_charged_on_every_read_path() {
    let read = |pprof: bool, verify_stored: bool| {
        let mut c = Controller::new(
            chip("tiny-mlc"),
            ConstantRber(0.0),
            ControllerConfig {
                verify_stored,
                ..ControllerConfig::default()
            },
        )
        .unwrap();
        if pprof {
            c.enable_pprof().unwrap();
        }
        let p = page(c.chip(), 1, 0);
        let rec = OobRecord::new(3, 1, PageKind::User(DataClass::NORMAL));
        c.program(Nanos::ZERO, p, &data(4096, 5), rec, 8).unwrap();
        let mut out = vec![0u8; 4096];
        let PageRead::Data(full) = c.read(Nanos::from_ms(1), p, &mut out).unwrap() else {
            panic!("erased")
        };
        let PageRead::Data(spare) = c.read_record(Nanos::from_ms(2), p).unwrap() else {
            panic!("erased")
        };
        (full.ecc, spare.ecc)
    };
    let l = EccLatency::default();
    let pprof = l.decode(
        controller::layout::PPROF_DATA_BYTES,
        controller::layout::PPROF_T,
        0,
    );
    for verify in [false, true] {
        let (full_off, spare_off) = read(false, verify);
        let (full_on, spare_on) = read(true, verify);
        assert_eq!(
            full_on,
            full_off + pprof,
            "full read, verify_stored {verify}"
        );
        assert_eq!(
            spare_on,
            spare_off + pprof,
            "spare read, verify_stored {verify}"
        );
    }
    // Clean shortcut and full decode agree when errors do not weigh on the time.
    assert_eq!(read(true, false).0, read(true, true).0);
}

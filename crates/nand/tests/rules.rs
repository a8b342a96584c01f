//! One test per operation real NAND forbids: each must be refused with its typed error,
//! and must leave the chip unchanged.

mod common;
use common::*;
use nand::{BlockStatus, Failure, NandError, Nanos, Usage};

const T0: Nanos = Nanos::ZERO;

#[test]
fn program_before_erase_is_refused() {
    let mut c = chip("tiny-slc");
    let p = page(&c, 1, 0);
    let (d, s) = buffers(&c, 1);
    c.program(T0, p, &d, &s).unwrap();
    let (d2, s2) = buffers(&c, 2);
    assert_eq!(c.program(T0, p, &d2, &s2), Err(NandError::NotErased(p)));
    assert_eq!(
        read_page(&mut c, p),
        (d, s),
        "the refused program changed nothing"
    );
    // After an erase the page programs again.
    c.erase(T0, block(&c, 1)).unwrap();
    c.program(T0, p, &d2, &s2).unwrap();
}

#[test]
fn out_of_order_program_is_refused_and_skipped_pages_are_lost_until_erase() {
    let mut c = chip("tiny-slc");
    let (d, s) = buffers(&c, 1);
    c.program(T0, page(&c, 1, 3), &d, &s).unwrap();
    for skipped in 0..3 {
        let p = page(&c, 1, skipped);
        assert_eq!(
            c.program(T0, p, &d, &s),
            Err(NandError::OutOfOrder { page: p, next: 4 })
        );
    }
    c.program(T0, page(&c, 1, 5), &d, &s).unwrap();
    assert!(matches!(
        c.program(T0, page(&c, 1, 4), &d, &s),
        Err(NandError::OutOfOrder { next: 6, .. })
    ));
    c.erase(T0, block(&c, 1)).unwrap();
    c.program(T0, page(&c, 1, 0), &d, &s).unwrap();
}

#[test]
fn msb_before_its_lsb_is_refused_on_mlc() {
    let mut c = chip("tiny-mlc"); // dist3: WL0 = (0, 2), WL1 = (1, 4)
    let (d, s) = buffers(&c, 1);
    // Skip page 0 (LSB of WL0) and 1, then try page 2 (MSB of WL0).
    let p2 = page(&c, 1, 2);
    assert_eq!(
        c.program(T0, p2, &d, &s),
        Err(NandError::LowerPageNotProgrammed { page: p2, lower: 0 })
    );
    // In order it works.
    for p in 0..5 {
        c.program(T0, page(&c, 2, p), &d, &s).unwrap();
    }
    // Page 1 (LSB of WL1) skipped: page 4 (its MSB) is refused even though 4 > next.
    let mut c = chip("tiny-mlc");
    c.program(T0, page(&c, 3, 0), &d, &s).unwrap();
    c.program(T0, page(&c, 3, 2), &d, &s).unwrap();
    c.program(T0, page(&c, 3, 3), &d, &s).unwrap();
    let p4 = page(&c, 3, 4);
    assert_eq!(
        c.program(T0, p4, &d, &s),
        Err(NandError::LowerPageNotProgrammed { page: p4, lower: 1 })
    );
}

#[test]
fn partial_program_is_refused_on_mlc() {
    let mut c = chip("tiny-mlc");
    let (d, s) = buffers(&c, 1);
    let p = page(&c, 1, 0);
    assert_eq!(
        c.program_partial(T0, p, &d, &s),
        Err(NandError::PartialProgramOnMlc(p))
    );
    c.program(T0, p, &d, &s).unwrap();
    assert_eq!(
        c.program_partial(T0, p, &d, &s),
        Err(NandError::PartialProgramOnMlc(p))
    );
}

#[test]
fn subpage_program_is_refused_on_mlc_but_allowed_in_slc_mode() {
    let mut cfg = config("tiny-mlc");
    cfg.geometry.subpages_per_page = 2;
    let mut c = nand::Chip::ram(cfg).unwrap();
    let g = *c.geometry();
    let d = vec![0u8; g.subpage_size()];
    let s = vec![0u8; g.subpage_spare_size()];
    let b = block(&c, 1);
    assert_eq!(
        c.program_subpage(T0, page(&c, 1, 0), 0, &d, &s),
        Err(NandError::SubpageOnMlc(b))
    );
    c.set_slc_mode(b, true).unwrap();
    c.program_subpage(T0, page(&c, 1, 0), 0, &d, &s).unwrap();
}

#[test]
fn slc_nop_limit_and_partial_program_rules() {
    let mut c = chip("tiny-slc"); // NOP 4
    let g = *c.geometry();
    let p = page(&c, 1, 0);
    let chunk = g.page_size as usize / 8;
    let spare = vec![0xFF; g.spare_size as usize];
    for i in 0..4 {
        let mut d = vec![0xFF; g.page_size as usize];
        d[i * chunk..(i + 1) * chunk].fill(i as u8);
        c.program_partial(T0, p, &d, &spare).unwrap();
    }
    let mut d = vec![0xFF; g.page_size as usize];
    d[5 * chunk] = 0;
    assert_eq!(
        c.program_partial(T0, p, &d, &spare),
        Err(NandError::NopExceeded { page: p, limit: 4 })
    );
    let (data, _) = read_page(&mut c, p);
    for i in 0..4 {
        assert!(data[i * chunk..(i + 1) * chunk]
            .iter()
            .all(|&b| b == i as u8));
    }
    assert!(data[4 * chunk..].iter().all(|&b| b == 0xFF));

    // Reprogramming already-programmed bytes is refused.
    let q = page(&c, 2, 0);
    let mut d = vec![0xFF; g.page_size as usize];
    d[0] = 0x0F;
    c.program_partial(T0, q, &d, &spare).unwrap();
    assert_eq!(
        c.program_partial(T0, q, &d, &spare),
        Err(NandError::PartialOverlap(q))
    );
    // Only the newest page of a block may take another partial program.
    c.program(T0, page(&c, 2, 1), &vec![1; g.page_size as usize], &spare)
        .unwrap();
    let mut d2 = vec![0xFF; g.page_size as usize];
    d2[100] = 0;
    assert_eq!(
        c.program_partial(T0, q, &d2, &spare),
        Err(NandError::PartialNotLast { page: q, last: 1 })
    );
}

#[test]
fn nop_of_one_forbids_partial_reprogramming() {
    let mut cfg = config("tiny-slc");
    cfg.reliability.nop = 1;
    let mut c = nand::Chip::ram(cfg).unwrap();
    let g = *c.geometry();
    let p = page(&c, 1, 0);
    let mut d = vec![0xFF; g.page_size as usize];
    d[0] = 0;
    let s = vec![0xFF; g.spare_size as usize];
    c.program_partial(T0, p, &d, &s).unwrap();
    d[0] = 0xFF;
    d[1] = 0;
    assert_eq!(
        c.program_partial(T0, p, &d, &s),
        Err(NandError::NopExceeded { page: p, limit: 1 })
    );
}

#[test]
fn sp_block_refuses_full_page_programs_and_other_partitions() {
    let mut c = chip("tiny-slc"); // 4 subpages
    let g = *c.geometry();
    let d = pattern(g.subpage_size(), 7);
    let s = pattern(g.subpage_spare_size(), 8);
    let b = block(&c, 1);
    c.program_subpage(T0, page(&c, 1, 0), 2, &d, &s).unwrap();
    assert_eq!(c.block_info(b).unwrap().usage, Usage::Subpage(2));
    let (fd, fs) = buffers(&c, 1);
    assert_eq!(
        c.program(T0, page(&c, 1, 1), &fd, &fs),
        Err(NandError::FullPageInSpBlock(b))
    );
    assert_eq!(
        c.program_subpage(T0, page(&c, 1, 1), 0, &d, &s),
        Err(NandError::PartitionInUse {
            block: b,
            active: 2,
            requested: 0
        })
    );
    // The same partition of the same page is taken; lower pages are past.
    assert_eq!(
        c.program_subpage(T0, page(&c, 1, 0), 2, &d, &s),
        Err(NandError::NotErased(page(&c, 1, 0)))
    );
    c.program_subpage(T0, page(&c, 1, 3), 2, &d, &s).unwrap();
    assert!(matches!(
        c.program_subpage(T0, page(&c, 1, 2), 2, &d, &s),
        Err(NandError::OutOfOrder { next: 4, .. })
    ));
    // Read back: the subpage holds the data, the rest of the page is erased.
    let mut rd = vec![0u8; g.subpage_size()];
    let mut rs = vec![0u8; g.subpage_spare_size()];
    c.read_subpage(T0, page(&c, 1, 3), 2, &mut rd, &mut rs)
        .unwrap();
    assert_eq!((rd, rs), (d.clone(), s.clone()));
    let p3 = page(&c, 1, 3);
    let (full, _) = read_page(&mut c, p3);
    assert!(full[..2 * g.subpage_size()].iter().all(|&x| x == 0xFF));
    // After erase, another partition (pong-pong order) may be used.
    c.erase(T0, b).unwrap();
    c.program_subpage(T0, page(&c, 1, 0), 3, &d, &s).unwrap();
}

#[test]
fn full_page_block_refuses_subpage_programs() {
    let mut c = chip("tiny-slc");
    let g = *c.geometry();
    let (fd, fs) = buffers(&c, 1);
    c.program(T0, page(&c, 1, 0), &fd, &fs).unwrap();
    let b = block(&c, 1);
    assert_eq!(
        c.program_subpage(
            T0,
            page(&c, 1, 1),
            0,
            &vec![0; g.subpage_size()],
            &vec![0; g.subpage_spare_size()]
        ),
        Err(NandError::SubpageInFullPageBlock(b))
    );
}

#[test]
fn subpage_on_chip_without_subpages_is_refused() {
    let mut cfg = config("tiny-slc");
    cfg.geometry.subpages_per_page = 1;
    let mut c = nand::Chip::ram(cfg).unwrap();
    assert_eq!(
        c.program_subpage(T0, page(&c, 1, 0), 0, &[0; 2048], &[0; 64]),
        Err(NandError::NoSubpages)
    );
    let mut c = chip("tiny-slc");
    assert_eq!(
        c.program_subpage(T0, page(&c, 1, 0), 4, &[0; 512], &[0; 16]),
        Err(NandError::SubpageOutOfRange { index: 4, count: 4 })
    );
}

#[test]
fn slc_mode_uses_lsb_pages_only_and_changes_only_when_erased() {
    let mut c = chip("tiny-mlc");
    let (d, s) = buffers(&c, 1);
    let b = block(&c, 1);
    c.set_slc_mode(b, true).unwrap();
    c.program(T0, page(&c, 1, 0), &d, &s).unwrap();
    c.program(T0, page(&c, 1, 1), &d, &s).unwrap();
    let p2 = page(&c, 1, 2); // MSB of WL0
    assert_eq!(
        c.program(T0, p2, &d, &s),
        Err(NandError::UpperPageInSlcMode(p2))
    );
    c.program(T0, page(&c, 1, 3), &d, &s).unwrap(); // LSB of WL2
    assert_eq!(
        c.set_slc_mode(b, false),
        Err(NandError::ModeChangeNotErased(b))
    );
    c.erase(T0, b).unwrap();
    assert!(
        c.block_info(b).unwrap().slc_mode,
        "mode persists across erase"
    );
    c.set_slc_mode(b, false).unwrap();
    let mut slc = chip("tiny-slc");
    assert_eq!(
        slc.set_slc_mode(block(&slc, 1), true),
        Err(NandError::SlcModeOnSlc)
    );
}

#[test]
fn never_programmed_pages_read_erased() {
    let mut c = chip("tiny-mlc");
    let p = page(&c, 5, 7);
    let (d, s) = read_page(&mut c, p);
    assert!(d.iter().chain(&s).all(|&b| b == 0xFF));
}

#[test]
fn bad_blocks_refuse_operations() {
    let mut cfg = config("tiny-slc");
    cfg.reliability.factory_bad_rate = 0.5;
    cfg.seed = 11;
    let mut c = nand::Chip::ram(cfg).unwrap();
    let bad: Vec<_> = c.bad_blocks().collect();
    assert!(!bad.is_empty());
    let (b, status) = bad[0];
    assert_eq!(status, BlockStatus::FactoryBad);
    let (d, s) = buffers(&c, 1);
    let p = b.page(0).unwrap();
    let g = *c.geometry();
    assert_eq!(c.program(T0, p, &d, &s), Err(NandError::BadBlock(b)));
    assert_eq!(c.erase(T0, b), Err(NandError::BadBlock(b)));
    let mut rd = vec![0; g.page_size as usize];
    let mut rs = vec![0; g.spare_size as usize];
    assert_eq!(c.read(T0, p, &mut rd, &mut rs), Err(NandError::BadBlock(b)));

    // A grown-bad block stays readable (so its data can be moved) but takes no programs.
    let mut c = chip("tiny-slc");
    let b = block(&c, 2);
    let p = page(&c, 2, 0);
    c.program(T0, p, &d, &s).unwrap();
    c.mark_bad(b).unwrap();
    assert_eq!(c.block_status(b).unwrap(), BlockStatus::GrownBad);
    assert_eq!(read_page(&mut c, p).0, d);
    assert_eq!(
        c.program(T0, page(&c, 2, 1), &d, &s),
        Err(NandError::BadBlock(b))
    );
    assert_eq!(c.erase(T0, b), Err(NandError::BadBlock(b)));
}

#[test]
fn injected_failures_turn_blocks_grown_bad() {
    let mut c = chip("tiny-slc");
    let (d, s) = buffers(&c, 1);
    let b = block(&c, 1);
    c.inject_failure(b, Failure::Program).unwrap();
    let p = page(&c, 1, 0);
    assert_eq!(c.program(T0, p, &d, &s), Err(NandError::ProgramFailed(p)));
    assert_eq!(c.block_status(b).unwrap(), BlockStatus::GrownBad);
    assert!(c.page_state(p).unwrap().damaged);
    let b2 = block(&c, 2);
    c.inject_failure(b2, Failure::Erase).unwrap();
    assert_eq!(c.erase(T0, b2), Err(NandError::EraseFailed(b2)));
    assert_eq!(c.block_status(b2).unwrap(), BlockStatus::GrownBad);
    assert_eq!(c.counters().program_failures, 1);
    assert_eq!(c.counters().erase_failures, 1);
}

#[test]
fn wear_out_failures_start_past_rated_endurance() {
    let mut cfg = config("tiny-slc");
    cfg.reliability.endurance = 50;
    cfg.reliability.wear_fail_rate = 0.05;
    cfg.reliability.wear_fail_growth = 1.0;
    let mut c = nand::Chip::ram(cfg).unwrap();
    let b = block(&c, 1);
    let (d, s) = buffers(&c, 1);
    let mut cycles = 0;
    loop {
        match c.program(T0, b.page(0).unwrap(), &d, &s) {
            Ok(_) => {}
            Err(NandError::ProgramFailed(_)) => break,
            Err(e) => panic!("{e}"),
        }
        match c.erase(T0, b) {
            Ok(_) => cycles += 1,
            Err(NandError::EraseFailed(_)) => break,
            Err(e) => panic!("{e}"),
        }
        assert!(cycles < 1000, "never failed");
    }
    assert!(
        cycles >= 50,
        "failed at {cycles} cycles, before rated endurance"
    );
    assert_eq!(c.block_status(b).unwrap(), BlockStatus::GrownBad);
}

#[test]
fn addresses_outside_the_geometry_and_wrong_buffers_are_refused() {
    let mut c = chip("tiny-slc");
    let g = *c.geometry();
    let (d, s) = buffers(&c, 1);
    let outside = nand::PhysAddr::new(0, 0, 0, g.blocks_per_plane, 0).unwrap();
    assert_eq!(
        c.program(T0, outside, &d, &s),
        Err(NandError::PageOutOfRange(outside))
    );
    let outside = nand::PhysAddr::new(0, 0, 0, 0, g.pages_per_block).unwrap();
    assert_eq!(
        c.program(T0, outside, &d, &s),
        Err(NandError::PageOutOfRange(outside))
    );
    let ob = nand::BlockAddr::new(1, 0, 0, 0).unwrap();
    assert_eq!(c.erase(T0, ob), Err(NandError::BlockOutOfRange(ob)));
    assert_eq!(
        c.program(T0, page(&c, 1, 0), &d[1..], &s),
        Err(NandError::BufferSize {
            what: "data",
            got: d.len() - 1,
            expected: d.len()
        })
    );
    assert_eq!(c.counters().programs, 0);
    assert_eq!(c.ops(), 0, "refused operations do not count");
}

#[test]
fn timing_depends_on_bit_kind_and_bytes_moved() {
    let mut c = chip("tiny-mlc"); // LSB 500 µs, MSB 1500 µs, 5 ns/B
    let g = *c.geometry();
    let (d, s) = buffers(&c, 1);
    let t0 = c.program(T0, page(&c, 1, 0), &d, &s).unwrap();
    c.program(T0, page(&c, 1, 1), &d, &s).unwrap();
    let t2 = c.program(T0, page(&c, 1, 2), &d, &s).unwrap();
    assert_eq!(t0.array, Nanos::from_us(500));
    assert_eq!(t2.array, Nanos::from_us(1500));
    assert_eq!(t0.transfer, Nanos(g.raw_page_size() as u64 * 5));
    let mut sp = vec![0; g.spare_size as usize];
    let tr = c.read_spare(T0, page(&c, 1, 2), &mut sp).unwrap();
    assert_eq!(tr.array, Nanos::from_us(80));
    assert_eq!(tr.transfer, Nanos(g.spare_size as u64 * 5));
    let te = c.erase(T0, block(&c, 1)).unwrap();
    assert_eq!(te.total(), Nanos::from_ms(3));
}

#[test]
fn wear_and_age_are_tracked() {
    let mut c = chip("tiny-slc");
    let (d, s) = buffers(&c, 1);
    let b = block(&c, 1);
    for _ in 0..3 {
        c.erase(Nanos::from_ms(1), b).unwrap();
    }
    let p = page(&c, 1, 0);
    c.program(Nanos::from_secs(10), p, &d, &s).unwrap();
    for _ in 0..5 {
        read_page(&mut c, p);
    }
    let st = c.page_state(p).unwrap();
    assert_eq!(st.erase_count, 3);
    assert_eq!(st.programmed_at, Nanos::from_secs(10));
    assert_eq!(st.reads, 5);
    assert_eq!(c.block_info(b).unwrap().reads_since_erase, 5);
    c.program(Nanos::from_secs(20), page(&c, 1, 1), &d, &s)
        .unwrap();
    assert_eq!(c.page_state(page(&c, 1, 1)).unwrap().reads, 0);
}

#[test]
fn sparse_ram_grows_with_programmed_pages_only() {
    let mut c = chip("micron-29f64g"); // 8 GiB chip: must not allocate it
    assert_eq!(c.storage().stored_bytes(), 0);
    let (d, s) = buffers(&c, 1);
    for p in 0..4 {
        c.program(T0, page(&c, 100, p), &d, &s).unwrap();
    }
    assert_eq!(c.storage().stored_pages(), 4);
    assert_eq!(c.storage().stored_bytes(), 4 * (8192 + 448));
    c.erase(T0, block(&c, 100)).unwrap();
    assert_eq!(c.storage().stored_pages(), 0);
}

/// `Chip::program` takes a one-pass fast path for the common case and the general path
/// otherwise (here forced by a cut armed far ahead, which never fires). Both must accept
/// and refuse the same programs with the same results, timings and state.
#[test]
fn the_program_fast_path_matches_the_general_path() {
    for preset in ["tiny-mlc", "tiny-slc"] {
        let mut fast = chip(preset);
        let mut general = chip(preset);
        general.arm_cut(u64::MAX / 2, nand::CutMode::After);
        let g = *fast.geometry();
        let ppb = g.pages_per_block;
        // In order, skipping ahead, backwards, twice, upper before lower, a bad length,
        // after an erase, on a block with an injected failure.
        let script: Vec<(u32, u32, usize)> = vec![
            (1, 0, 0),
            (1, 1, 0),
            (1, 1, 0),
            (1, 0, 0),
            (1, 4, 0),
            (1, 2, 0),
            (2, 3, 0),
            (2, 0, 1),
            (2, 0, 0),
            (3, ppb - 1, 0),
            (4, 0, 0),
        ];
        for (i, &(b, p, short)) in script.iter().enumerate() {
            let (d, s) = buffers(&fast, i as u64);
            let addr = page(&fast, b, p);
            let t = Nanos(1000 * i as u64);
            if b == 4 {
                for c in [&mut fast, &mut general] {
                    c.inject_failure(block(c, 4), Failure::Program).unwrap();
                }
            }
            let a = fast.program(t, addr, &d[short..], &s);
            let r = general.program(t, addr, &d[short..], &s);
            assert_eq!(format!("{a:?}"), format!("{r:?}"), "{preset}: step {i}");
            if i == 5 {
                for c in [&mut fast, &mut general] {
                    c.erase(t, block(c, 1)).unwrap();
                    c.program(t, page(c, 1, 0), &d, &s).unwrap();
                }
            }
        }
        assert_eq!(fast.counters(), general.counters(), "{preset}");
        for b in 0..5 {
            assert_eq!(
                fast.block_info(block(&fast, b)).unwrap(),
                general.block_info(block(&general, b)).unwrap()
            );
            for p in 0..ppb {
                let addr = page(&fast, b, p);
                assert_eq!(
                    fast.page_state(addr).unwrap(),
                    general.page_state(addr).unwrap()
                );
                assert_eq!(read_page(&mut fast, addr), read_page(&mut general, addr));
            }
        }
    }
}

//! Each power-cut mode leaves exactly the state the fault model specifies.

mod common;
use common::*;
use nand::{CutEffect, CutMode, CutTarget, NandError, Nanos, TornFill};

const T0: Nanos = Nanos::ZERO;

/// The byte stream a program lays down: data then spare.
fn stream(d: &[u8], s: &[u8]) -> Vec<u8> {
    d.iter().chain(s).copied().collect()
}

#[test]
fn everything_fails_while_unpowered_until_power_on() {
    let mut c = chip("tiny-mlc");
    let (d, s) = buffers(&c, 1);
    let at = c.arm_cut(1, CutMode::Before);
    assert_eq!(at, 1);
    let p = page(&c, 1, 0);
    assert_eq!(c.program(T0, p, &d, &s), Err(NandError::PowerLoss));
    assert!(!c.is_powered());
    let mut rd = vec![0; d.len()];
    let mut rs = vec![0; s.len()];
    assert_eq!(c.read(T0, p, &mut rd, &mut rs), Err(NandError::PowerLoss));
    assert_eq!(c.erase(T0, block(&c, 1)), Err(NandError::PowerLoss));
    assert_eq!(c.mark_bad(block(&c, 1)), Err(NandError::PowerLoss));
    assert_eq!(
        c.set_slc_mode(block(&c, 1), true),
        Err(NandError::PowerLoss)
    );
    c.power_on();
    c.program(T0, p, &d, &s).unwrap();
}

#[test]
fn before_leaves_nothing() {
    let mut c = chip("tiny-mlc");
    let (d, s) = buffers(&c, 1);
    let p = page(&c, 1, 0);
    c.arm_cut(1, CutMode::Before);
    assert_eq!(c.program(T0, p, &d, &s), Err(NandError::PowerLoss));
    let rec = *c.last_cut().unwrap();
    assert_eq!(rec.target, CutTarget::Program(p));
    assert_eq!(rec.effect, CutEffect::NotStarted);
    c.power_on();
    assert!(c.page_state(p).unwrap().erased);
    assert_eq!(c.block_info(block(&c, 1)).unwrap().next_page, 0);
}

#[test]
fn after_completes_the_operation_but_reports_power_loss() {
    let mut c = chip("tiny-mlc");
    let (d, s) = buffers(&c, 1);
    let p = page(&c, 1, 0);
    c.arm_cut(1, CutMode::After);
    assert_eq!(c.program(T0, p, &d, &s), Err(NandError::PowerLoss));
    assert_eq!(c.last_cut().unwrap().effect, CutEffect::Completed);
    c.power_on();
    assert_eq!(read_page(&mut c, p), (d, s));
    // After, on an erase: the block is erased.
    c.arm_cut(1, CutMode::After);
    assert_eq!(c.erase(T0, block(&c, 1)), Err(NandError::PowerLoss));
    c.power_on();
    assert!(c.page_state(p).unwrap().erased);
    assert_eq!(c.block_info(block(&c, 1)).unwrap().erase_count, 1);
}

/// Programs page 0 of block 1 under a torn-program cut on a chip seeded `seed`; returns
/// the chip, the page, the byte stream written, the one read back and the bytes that landed.
fn torn(seed: u64, fill: TornFill) -> (nand::Chip, nand::PhysAddr, Vec<u8>, Vec<u8>, usize) {
    let mut cfg = config("tiny-mlc");
    cfg.seed = seed;
    let mut c = nand::Chip::ram(cfg).unwrap();
    let (d, s) = buffers(&c, seed);
    let p = page(&c, 1, 0);
    c.arm_cut(1, CutMode::TornProgram(fill));
    assert_eq!(c.program(T0, p, &d, &s), Err(NandError::PowerLoss));
    let CutEffect::Torn { landed } = c.last_cut().unwrap().effect else {
        panic!("not torn")
    };
    c.power_on();
    let (rd, rs) = read_page(&mut c, p);
    (c, p, stream(&d, &s), stream(&rd, &rs), landed)
}

#[test]
fn torn_program_lands_a_prefix_and_leaves_the_rest_erased() {
    for seed in 0..20 {
        let (mut c, p, want, got, landed) = torn(seed, TornFill::Erased);
        assert!(landed < want.len());
        assert_eq!(&got[..landed], &want[..landed], "seed {seed}");
        assert!(got[landed..].iter().all(|&b| b == 0xFF), "seed {seed}");
        let st = c.page_state(p).unwrap();
        assert!(!st.erased && st.damaged);
        // The torn page is not erased: it cannot be programmed again.
        let (d, s) = buffers(&c, seed);
        assert_eq!(c.program(T0, p, &d, &s), Err(NandError::NotErased(p)));
    }
}

#[test]
fn torn_program_random_fill_garbles_the_rest() {
    let mut garbled = 0;
    for seed in 0..20 {
        let (_, _, want, got, landed) = torn(seed, TornFill::Random);
        assert_eq!(&got[..landed], &want[..landed]);
        let rest = &got[landed..];
        if rest.len() >= 64 {
            assert!(
                rest.iter().any(|&b| b != 0xFF),
                "rest still erased (seed {seed})"
            );
            assert_ne!(rest, &want[landed..], "rest holds the data (seed {seed})");
            garbled += 1;
        }
    }
    assert!(garbled > 10);
}

#[test]
fn interrupted_erase_leaves_garbage_until_erased_again() {
    let mut c = chip("tiny-mlc");
    let b = block(&c, 1);
    let mut written = Vec::new();
    for pg in 0..6 {
        let (d, s) = buffers(&c, pg as u64);
        c.program(T0, page(&c, 1, pg), &d, &s).unwrap();
        written.push((d, s));
    }
    c.arm_cut(1, CutMode::InterruptedErase);
    assert_eq!(c.erase(T0, b), Err(NandError::PowerLoss));
    assert_eq!(
        c.last_cut().unwrap().effect,
        CutEffect::PartialErase { pages: 6 }
    );
    c.power_on();
    let info = c.block_info(b).unwrap();
    assert!(info.needs_erase);
    assert_eq!(
        info.erase_count, 1,
        "an interrupted erase still wears the block"
    );
    for (pg, (d, s)) in written.iter().enumerate() {
        let p = page(&c, 1, pg as u32);
        let got = read_page(&mut c, p);
        assert_ne!(&got, &(d.clone(), s.clone()), "page {pg} intact");
        // Partial erase only sets bits (0 → 1).
        for (g, w) in stream(&got.0, &got.1).iter().zip(stream(d, s)) {
            assert_eq!(g & w, w);
        }
        assert!(c.page_state(p).unwrap().damaged);
    }
    // Unprogrammed pages stay erased; programming anything is refused until erase.
    let (d, s) = buffers(&c, 99);
    assert_eq!(
        c.program(T0, page(&c, 1, 6), &d, &s),
        Err(NandError::NeedsErase(b))
    );
    c.erase(T0, b).unwrap();
    assert_eq!(c.block_info(b).unwrap().erase_count, 2);
    c.program(T0, page(&c, 1, 0), &d, &s).unwrap();
}

#[test]
fn interrupted_msb_program_corrupts_its_paired_lsb_page() {
    for seed in 0..10 {
        let mut cfg = config("tiny-mlc"); // dist3: WL1 = (1, 4)
        cfg.seed = seed;
        let mut c = nand::Chip::ram(cfg).unwrap();
        let mut written = Vec::new();
        for pg in 0..4 {
            let (d, s) = buffers(&c, pg as u64);
            c.program(T0, page(&c, 1, pg), &d, &s).unwrap();
            written.push((d, s));
        }
        let (d4, s4) = buffers(&c, 4);
        c.arm_cut(1, CutMode::PairedPage);
        assert_eq!(
            c.program(T0, page(&c, 1, 4), &d4, &s4),
            Err(NandError::PowerLoss)
        );
        assert_eq!(
            c.last_cut().unwrap().effect,
            CutEffect::PairedCorruption { lower_pages: 1 }
        );
        c.power_on();
        // The paired LSB page 1 is damaged; pages on other word lines are intact.
        let p1 = page(&c, 1, 1);
        assert_ne!(read_page(&mut c, p1), written[1]);
        assert!(c.page_state(p1).unwrap().damaged);
        for pg in [0u32, 2, 3] {
            let p = page(&c, 1, pg);
            assert_eq!(read_page(&mut c, p), written[pg as usize], "page {pg}");
            assert!(!c.page_state(p).unwrap().damaged);
        }
        let p4 = page(&c, 1, 4);
        assert!(c.page_state(p4).unwrap().damaged);
    }
}

#[test]
fn paired_page_cut_on_an_lsb_program_is_a_plain_cut() {
    let mut c = chip("tiny-mlc");
    let (d, s) = buffers(&c, 1);
    c.arm_cut(1, CutMode::PairedPage);
    let p = page(&c, 1, 0);
    assert_eq!(c.program(T0, p, &d, &s), Err(NandError::PowerLoss));
    assert_eq!(c.last_cut().unwrap().effect, CutEffect::NotStarted);
    c.power_on();
    assert!(c.page_state(p).unwrap().erased);
    // Likewise on an SLC chip or an SLC-mode block: no paired pages to damage.
    let mut c = chip("tiny-slc");
    c.arm_cut(1, CutMode::PairedPage);
    let (d, s) = buffers(&c, 1);
    let p = page(&c, 1, 0);
    assert_eq!(c.program(T0, p, &d, &s), Err(NandError::PowerLoss));
    assert_eq!(c.last_cut().unwrap().effect, CutEffect::NotStarted);
}

#[test]
fn cuts_on_reads_and_mismatched_modes_do_nothing_harmful() {
    let mut c = chip("tiny-slc");
    let (d, s) = buffers(&c, 1);
    let p = page(&c, 1, 0);
    c.program(T0, p, &d, &s).unwrap();
    for mode in CutMode::ALL {
        c.arm_cut(1, mode);
        let mut rd = vec![0; d.len()];
        let mut rs = vec![0; s.len()];
        assert_eq!(c.read(T0, p, &mut rd, &mut rs), Err(NandError::PowerLoss));
        assert_eq!(c.last_cut().unwrap().target, CutTarget::Read(p));
        c.power_on();
        assert_eq!(read_page(&mut c, p), (d.clone(), s.clone()), "{mode:?}");
    }
    // An erase-only mode on a program does not start it, and vice versa.
    let q = page(&c, 1, 1);
    c.arm_cut(1, CutMode::InterruptedErase);
    assert_eq!(c.program(T0, q, &d, &s), Err(NandError::PowerLoss));
    c.power_on();
    assert!(c.page_state(q).unwrap().erased);
    c.arm_cut(1, CutMode::TornProgram(TornFill::Random));
    assert_eq!(c.erase(T0, block(&c, 1)), Err(NandError::PowerLoss));
    c.power_on();
    assert_eq!(read_page(&mut c, p), (d, s));
}

#[test]
fn cut_fires_at_the_nth_operation_and_can_nest() {
    let mut c = chip("tiny-slc");
    let (d, s) = buffers(&c, 1);
    c.arm_cut(3, CutMode::Before);
    c.program(T0, page(&c, 1, 0), &d, &s).unwrap();
    // A refused operation does not count.
    assert!(c.program(T0, page(&c, 1, 0), &d, &s).is_err());
    c.program(T0, page(&c, 1, 1), &d, &s).unwrap();
    assert_eq!(
        c.program(T0, page(&c, 1, 2), &d, &s),
        Err(NandError::PowerLoss)
    );
    assert_eq!(c.last_cut().unwrap().op, 3);
    c.power_on();
    // A second cut during "recovery".
    c.arm_cut(1, CutMode::After);
    assert_eq!(c.erase(T0, block(&c, 1)), Err(NandError::PowerLoss));
    c.power_on();
    assert_eq!(c.counters().power_cuts, 2);
    c.disarm_cut();
}

#[test]
fn cut_mode_names_round_trip() {
    for m in CutMode::ALL {
        assert_eq!(CutMode::from_name(m.name()), Some(m));
    }
    assert_eq!(CutMode::from_name("nope"), None);
}

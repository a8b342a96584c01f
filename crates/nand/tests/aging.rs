//! Bulk aging equals aging operation by operation: the same erase counts, wear failures,
//! grown-bad blocks, counters and operation index, on SLC, MLC and SLC-mode blocks, with
//! failures past endurance and a power cut armed in the middle.

use nand::{BlockStatus, Chip, ChipConfig, CutMode, Failure, Nanos};

fn chip(preset: &str, seed: u64) -> Chip {
    let mut cfg = ChipConfig::preset(preset).unwrap();
    cfg.seed = seed;
    // A short rated life with a steep failure curve, so aging past it fails blocks.
    cfg.reliability.endurance = 30;
    cfg.reliability.wear_fail_rate = 0.002;
    cfg.reliability.wear_fail_growth = 0.05;
    Chip::ram(cfg).unwrap()
}

/// What aging may change of one block: erase count, status, write point, needs-erase,
/// time of its last erase.
type BlockView = (u32, BlockStatus, u32, bool, Nanos);

/// Everything aging may change, per block, plus the chip's counters and operation index.
fn state(c: &Chip) -> (Vec<BlockView>, nand::OpCounters, u64) {
    let g = *c.geometry();
    let blocks = (0..g.total_blocks())
        .map(|b| {
            let i = c.block_info(g.block_at(b).unwrap()).unwrap();
            (
                i.erase_count,
                i.status,
                i.next_page,
                i.needs_erase,
                i.erased_at,
            )
        })
        .collect();
    (blocks, *c.counters(), c.ops())
}

#[test]
fn bulk_aging_equals_operation_by_operation() {
    for (preset, seed) in [("tiny-slc", 1), ("tiny-mlc", 2), ("tiny-mlc", 3)] {
        let mut bulk = chip(preset, seed);
        let mut exact = chip(preset, seed);
        let g = *bulk.geometry();
        for c in [&mut bulk, &mut exact] {
            // Some history first: an SLC-mode block, a block holding data, an injected
            // program failure.
            let b1 = g.block_at(1).unwrap();
            if g.pages_per_block > 1 && preset == "tiny-mlc" {
                c.set_slc_mode(b1, true).unwrap();
            }
            let b2 = g.block_at(2).unwrap();
            let data = vec![0x5A; g.page_size as usize];
            let spare = vec![0xA5; g.spare_size as usize];
            c.program(Nanos(1), b2.page(0).unwrap(), &data, &spare)
                .unwrap();
            c.inject_failure(g.block_at(3).unwrap(), Failure::Program)
                .unwrap();
        }
        let mut failed = 0;
        for (pe, t) in [(20u32, 100u64), (34, 200), (40, 300)] {
            for b in 0..g.total_blocks() {
                let a = g.block_at(b).unwrap();
                if bulk.block_info(a).unwrap().status != BlockStatus::Good {
                    continue;
                }
                let rb = bulk.age_block(Nanos(t), a, pe).unwrap();
                let re = exact.age_block_exact(Nanos(t), a, pe).unwrap();
                assert_eq!(rb, re, "{preset} block {b} to {pe}");
                failed += rb.failed as u32;
            }
            assert_eq!(state(&bulk), state(&exact), "{preset} after aging to {pe}");
        }
        assert!(failed > 0, "{preset}: no block failed past endurance");
        let (blocks, _, _) = state(&bulk);
        assert!(blocks.iter().any(|b| b.1 == BlockStatus::Good && b.0 == 40));
    }
}

#[test]
fn an_armed_cut_fires_at_the_same_operation() {
    let mut bulk = chip("tiny-mlc", 9);
    let mut exact = chip("tiny-mlc", 9);
    let a = bulk.geometry().block_at(5).unwrap();
    for c in [&mut bulk, &mut exact] {
        c.arm_cut(123, CutMode::Before);
    }
    let eb = bulk.age_block(Nanos(5), a, 25).unwrap_err();
    let ee = exact.age_block_exact(Nanos(5), a, 25).unwrap_err();
    assert_eq!(eb, ee);
    assert_eq!(state(&bulk), state(&exact));
    assert_eq!(bulk.ops(), 123);
}

#[test]
fn aging_a_whole_chip_is_fast_and_leaves_it_usable() {
    let mut cfg = ChipConfig::preset("tiny-mlc").unwrap();
    cfg.geometry.blocks_per_plane = 512;
    let mut c = Chip::ram(cfg).unwrap();
    let r = c.age_all(Nanos(7), 3000).unwrap();
    assert_eq!(r.erases, 1024 * 3000);
    assert!(c.erase_counts().all(|e| e == 3000));
    let g = *c.geometry();
    let a = g.block_at(17).unwrap().page(0).unwrap();
    c.program(
        Nanos(8),
        a,
        &vec![1; g.page_size as usize],
        &vec![2; g.spare_size as usize],
    )
    .unwrap();
    assert_eq!(c.page_state(a).unwrap().erase_count, 3000);
}

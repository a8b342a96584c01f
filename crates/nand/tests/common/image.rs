//! Shared by the file-image tests: a chip config, a workload that touches every kind of
//! state, and a dump of everything observable.

use super::*;
use nand::{Chip, ChipConfig, CutMode, Nanos, Storage};

pub fn cfg() -> ChipConfig {
    let mut c = config("tiny-mlc");
    c.seed = 42;
    c.reliability.factory_bad_rate = 0.1;
    c
}

/// A full dump of everything observable about a chip.
pub fn snapshot<S: Storage>(c: &mut Chip<S>) -> Vec<String> {
    let g = *c.geometry();
    let mut out = Vec::new();
    for b in 0..g.total_blocks() {
        let ba = g.block_at(b).unwrap();
        out.push(format!("{ba}: {:?}", c.block_info(ba).unwrap()));
        if c.block_status(ba).unwrap() == nand::BlockStatus::FactoryBad {
            continue;
        }
        for p in 0..g.pages_per_block {
            let pa = ba.page(p).unwrap();
            let st = c.page_state(pa).unwrap();
            out.push(format!("{pa}: {st:?}"));
            if !st.erased {
                let mut d = vec![0; g.page_size as usize];
                let mut s = vec![0; g.spare_size as usize];
                // Peek without counting: read then compare the state separately.
                c.read(Nanos::ZERO, pa, &mut d, &mut s).unwrap();
                out.push(format!("{:x?}", crc32fast::hash(&[d, s].concat())));
            }
        }
    }
    out
}

/// Does a mixed workload on a chip: programs, erases, an SLC-mode block, a torn page, a
/// grown-bad block.
pub fn exercise<S: Storage>(c: &mut Chip<S>) {
    let good: Vec<u32> = (0..c.geometry().total_blocks())
        .filter(|&b| {
            c.block_status(c.geometry().block_at(b).unwrap()).unwrap() == nand::BlockStatus::Good
        })
        .collect();
    let t = Nanos::from_secs(5);
    for (i, &b) in good.iter().take(6).enumerate() {
        let ba = c.geometry().block_at(b).unwrap();
        if i == 3 {
            c.set_slc_mode(ba, true).unwrap();
        }
        for p in 0..(i as u32 * 2 + 1) {
            if i == 3 && c.pairing().kind(p) != nand::BitKind::Lsb {
                continue;
            }
            let (d, s) = buffers(c, (b * 100 + p) as u64);
            c.program(t, ba.page(p).unwrap(), &d, &s).unwrap();
        }
        if i == 1 {
            c.erase(t, ba).unwrap();
        }
    }
    let torn = c.geometry().block_at(good[6]).unwrap();
    let (d, s) = buffers(c, 7);
    c.arm_cut(1, CutMode::TornProgram(nand::TornFill::Random));
    assert!(c.program(t, torn.page(0).unwrap(), &d, &s).is_err());
    c.power_on();
    c.mark_bad(c.geometry().block_at(good[7]).unwrap()).unwrap();
    // Copy programs (GC relocation): a copy, a copy of the copy, one under a cut that lets
    // it land (the merge path), then the source block erased under them.
    let src = c.geometry().block_at(good[0]).unwrap().page(0).unwrap();
    let dst = c.geometry().block_at(good[8]).unwrap();
    let (_, s2) = buffers(c, 8);
    // A copy-back programs the page in the register: read the source first.
    let mut spare = vec![0u8; c.geometry().spare_size as usize];
    c.read_spare(t, src, &mut spare).unwrap();
    c.program_copy(t, dst.page(0).unwrap(), src, &s2).unwrap();
    c.read_spare(t, dst.page(0).unwrap(), &mut spare).unwrap();
    c.program_copy(t, dst.page(1).unwrap(), dst.page(0).unwrap(), &s2)
        .unwrap();
    c.read_spare(t, src, &mut spare).unwrap();
    c.arm_cut(1, CutMode::After);
    assert!(c.program_copy(t, dst.page(2).unwrap(), src, &s2).is_err());
    c.power_on();
    c.erase(t, src.block_addr()).unwrap();
}

//! Copy programs (`Chip::program_copy`, what GC relocation of a pristine page uses) and the
//! page register (`Chip::data_out`): the same rules as a program, the same bytes as a copy
//! through memory, and RAM frames shared until one of the pages changes.

mod common;
use common::*;
use nand::{CutMode, NandError, Nanos};

const T0: Nanos = Nanos::ZERO;

/// Page addresses of `c`'s geometry, usable while the chip is borrowed mutably.
fn addresses(c: &nand::Chip) -> impl Fn(u32, u32) -> nand::PhysAddr {
    let g = *c.geometry();
    move |b, p| g.block_at(b).unwrap().page(p).unwrap()
}

/// Reads `src` into the page register (its spare area), as a relocating controller does.
fn load(c: &mut nand::Chip, src: nand::PhysAddr) {
    let mut spare = vec![0u8; c.geometry().spare_size as usize];
    c.read_spare(T0, src, &mut spare).unwrap();
}

/// A copy-back program: read the source, then program the copy.
fn copy(
    c: &mut nand::Chip,
    dst: nand::PhysAddr,
    src: nand::PhysAddr,
    spare: &[u8],
) -> Result<nand::OpTiming, NandError> {
    load(c, src);
    c.program_copy(T0, dst, src, spare)
}

/// A copy needs its source in the page register: the last operation must have read it.
#[test]
fn a_copy_needs_its_source_in_the_page_register() {
    let mut c = chip("tiny-slc");
    let at = addresses(&c);
    let (d, s) = buffers(&c, 1);
    let src = at(1, 0);
    c.program(T0, src, &d, &s).unwrap();
    // Never read: refused, and nothing counted.
    let ops = c.ops();
    assert_eq!(
        c.program_copy(T0, at(2, 0), src, &s),
        Err(NandError::NotInRegister(src))
    );
    assert_eq!(c.ops(), ops);
    // Read, then another operation in between: the register no longer holds it.
    load(&mut c, src);
    assert!(c.register_holds(src));
    c.program(T0, at(3, 0), &d, &s).unwrap();
    assert!(!c.register_holds(src));
    assert_eq!(
        c.program_copy(T0, at(2, 0), src, &s),
        Err(NandError::NotInRegister(src))
    );
    // Read just before: the copy lands.
    copy(&mut c, at(2, 0), src, &s).unwrap();
    assert_eq!(read_page(&mut c, at(2, 0)), (d, s));
}

#[test]
fn a_copy_holds_the_source_data_and_its_own_spare() {
    let mut c = chip("tiny-mlc");
    let at = addresses(&c);
    let (d, s) = buffers(&c, 1);
    let (_, s2) = buffers(&c, 2);
    let src = at(1, 0);
    c.program(T0, src, &d, &s).unwrap();
    let t = copy(&mut c, at(2, 0), src, &s2).unwrap();
    // A copy costs what the program of the same bytes costs.
    let (d3, s3) = buffers(&c, 3);
    assert_eq!(c.program(T0, at(3, 0), &d3, &s3).unwrap(), t);
    assert_eq!(read_page(&mut c, at(2, 0)), (d.clone(), s2.clone()));
    assert_eq!(read_page(&mut c, src), (d, s));
}

#[test]
fn a_copy_obeys_the_program_rules() {
    let mut c = chip("tiny-mlc"); // dist3: WL0 = (0, 2)
    let at = addresses(&c);
    let (d, s) = buffers(&c, 1);
    let src = at(1, 0);
    c.program(T0, src, &d, &s).unwrap();
    c.program(T0, at(2, 0), &d, &s).unwrap();
    // Program before erase, out of order, upper page before its lower page, erased source.
    assert_eq!(
        copy(&mut c, at(2, 0), src, &s),
        Err(NandError::NotErased(at(2, 0)))
    );
    c.program(T0, at(5, 1), &d, &s).unwrap();
    assert!(matches!(
        copy(&mut c, at(5, 0), src, &s),
        Err(NandError::OutOfOrder { next: 2, .. })
    ));
    assert!(matches!(
        copy(&mut c, at(6, 2), src, &s),
        Err(NandError::LowerPageNotProgrammed { lower: 0, .. })
    ));
    assert_eq!(
        copy(&mut c, at(6, 0), at(7, 0), &s),
        Err(NandError::CopyFromErased(at(7, 0)))
    );
    // Refused copies change nothing: page 6/0 is still erased and programs normally.
    copy(&mut c, at(6, 0), src, &s).unwrap();
    assert_eq!(read_page(&mut c, at(6, 0)), (d, s));
}

#[test]
fn copies_share_ram_frames_until_a_page_changes() {
    let mut c = chip("tiny-slc");
    let at = addresses(&c);
    let g = *c.geometry();
    let (ps, ss, ppb) = (
        g.page_size as u64,
        g.spare_size as u64,
        g.pages_per_block as u64,
    );
    // The source's first half stays erased (0xFF), so a partial program can fill it later.
    let mut d = pattern(ps as usize, 1);
    d[..ps as usize / 2].fill(0xFF);
    let s = vec![0xFF; ss as usize];
    let src = at(1, 0);
    c.program(T0, src, &d, &s).unwrap();
    for p in 0..3 {
        copy(&mut c, at(2, p), src, &s).unwrap();
    }
    // Four pages stored, one data frame: two blocks of spare areas and one page of data.
    assert_eq!(c.storage().stored_pages(), 4);
    assert_eq!(c.storage().stored_bytes(), 4 * (ps + ss));
    let blk = c.storage().block_bytes();
    assert!(blk >= ppb * ss);
    assert_eq!(c.storage().allocated_bytes(), 2 * blk + ps);
    // A partial program of one copy writes its own frame; the others keep the old bytes.
    let mut half = pattern(ps as usize, 2);
    half[ps as usize / 2..].fill(0xFF);
    c.program_partial(T0, at(2, 2), &half, &s).unwrap();
    let mut merged = half.clone();
    merged[ps as usize / 2..].copy_from_slice(&d[ps as usize / 2..]);
    assert_eq!(read_page(&mut c, at(2, 2)).0, merged);
    assert_eq!(read_page(&mut c, at(2, 1)).0, d);
    assert_eq!(read_page(&mut c, src).0, d);
    assert_eq!(c.storage().allocated_bytes(), 2 * blk + 2 * ps);
    // Erasing the source leaves the copies whole; erasing them frees every frame.
    c.erase(T0, at(1, 0).block_addr()).unwrap();
    assert_eq!(read_page(&mut c, at(2, 0)).0, d);
    assert_eq!(c.storage().allocated_bytes(), blk + 2 * ps);
    c.erase(T0, at(2, 0).block_addr()).unwrap();
    assert_eq!(c.storage().allocated_bytes(), 0);
    assert_eq!(c.storage().stored_pages(), 0);
}

#[test]
fn a_cut_copy_lands_through_the_merge_path() {
    let mut c = chip("tiny-mlc");
    let at = addresses(&c);
    let (d, s) = buffers(&c, 1);
    let src = at(1, 0);
    c.program(T0, src, &d, &s).unwrap();
    let (_, s2) = buffers(&c, 2);
    load(&mut c, src);
    c.arm_cut(1, CutMode::After);
    assert_eq!(
        c.program_copy(T0, at(2, 0), src, &s2),
        Err(NandError::PowerLoss)
    );
    c.power_on();
    assert_eq!(read_page(&mut c, at(2, 0)), (d, s2));
}

#[test]
fn data_out_transfers_only_the_page_just_read() {
    let mut c = chip("tiny-mlc");
    let at = addresses(&c);
    let g = *c.geometry();
    let (d, s) = buffers(&c, 1);
    let p = at(1, 0);
    c.program(T0, p, &d, &s).unwrap();
    let mut out = vec![0u8; g.page_size as usize];
    let mut spare = vec![0u8; g.spare_size as usize];
    // Nothing read yet.
    assert_eq!(c.data_out(p, &mut out), Err(NandError::NotInRegister(p)));
    let ops = c.ops();
    c.read_spare(T0, p, &mut spare).unwrap();
    assert_eq!(spare, s);
    c.data_out(p, &mut out).unwrap();
    assert_eq!(out, d);
    // Clocking data out is no operation of its own, and can be repeated.
    assert_eq!(c.ops(), ops + 1);
    c.data_out(p, &mut out).unwrap();
    // Another page, or any operation since, is refused.
    let q = at(2, 0);
    assert_eq!(c.data_out(q, &mut out), Err(NandError::NotInRegister(q)));
    c.read_spare(T0, q, &mut spare).unwrap();
    assert_eq!(c.data_out(p, &mut out), Err(NandError::NotInRegister(p)));
    // An erased page reads as all ones.
    c.data_out(q, &mut out).unwrap();
    assert!(out.iter().all(|&b| b == 0xFF));
    c.program(T0, at(1, 1), &d, &s).unwrap();
    assert_eq!(c.data_out(q, &mut out), Err(NandError::NotInRegister(q)));
    // A wrong-sized buffer is refused.
    c.read_spare(T0, p, &mut spare).unwrap();
    assert!(matches!(
        c.data_out(p, &mut [0u8; 16]),
        Err(NandError::BufferSize { .. })
    ));
}

#[test]
fn prefetch_hints_change_nothing() {
    let mut c = chip("tiny-mlc");
    let at = addresses(&c);
    let g = *c.geometry();
    let (d, s) = buffers(&c, 1);
    c.program(T0, at(1, 0), &d, &s).unwrap();
    let before = c.counters();
    // Written, erased, past the block's end, past the chip's end: all ignored.
    for (b, p) in [
        (1, 0),
        (1, 1),
        (2, 0),
        (1, g.pages_per_block),
        (g.total_blocks(), 0),
    ] {
        c.prefetch_flat(b as usize, p, false);
        c.prefetch_flat(b as usize, p, true);
    }
    c.prefetch_page(at(1, 0));
    nand::hint::prefetch_lines(&d);
    nand::hint::prefetch_lines(&[]);
    assert_eq!(c.counters(), before);
    assert_eq!(read_page(&mut c, at(1, 0)), (d, s));
}

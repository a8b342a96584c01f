//! Aging a chip: cycling blocks through program and erase with the chip's rules and wear
//! model, fast.
//!
//! One aging cycle of a block is what an FTL would do to it: program every page it can
//! take (every page in order; the LSB pages of an SLC-mode block), then erase it.
//! [`Chip::age_block`] runs cycles until the block's erase count reaches a target. A cycle in
//! which no operation fails changes nothing but counters, so the bulk path adds them
//! without touching storage: below the rated endurance the wear model cannot fail an
//! operation (its failure probability is 0); past it, the per-event wear draws the cycle's
//! operations would make are made first (they depend only on the block, its erase count
//! and the operation). A cycle that fails, or where a failure is injected or a power cut
//! armed, is run operation by operation through the chip's own `program` and `erase`, so
//! wear failures, grown-bad marks, counters and cut indices come out exactly as if every
//! cycle had been — [`Chip::age_block_exact`] runs them all that way, and a test compares
//! the two.

use super::*;

/// What aging a block did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AgeReport {
    /// Program operations (attempted).
    pub programs: u64,
    /// Erase operations (attempted).
    pub erases: u64,
    /// The block failed (program or erase) and is now grown bad.
    pub failed: bool,
    /// Simulated array time of those operations.
    pub time: Nanos,
}

impl AgeReport {
    /// Adds another block's report.
    pub fn add(&mut self, o: &AgeReport) {
        self.programs += o.programs;
        self.erases += o.erases;
        self.failed |= o.failed;
        self.time += o.time;
    }
}

impl<S: Storage> Chip<S> {
    /// Ages `block` until its erase count reaches `pe` (or it fails): see the module docs.
    /// A block holding data is erased first (that erase counts). Bad blocks are refused.
    pub fn age_block(
        &mut self,
        now: Nanos,
        block: BlockAddr,
        pe: u32,
    ) -> Result<AgeReport, NandError> {
        self.age(now, block, pe, false)
    }

    /// [`age_block`](Chip::age_block) operation by operation: the reference the bulk path
    /// is tested against (and what runs while a power cut is armed).
    pub fn age_block_exact(
        &mut self,
        now: Nanos,
        block: BlockAddr,
        pe: u32,
    ) -> Result<AgeReport, NandError> {
        self.age(now, block, pe, true)
    }

    /// Ages every good block to `pe` P/E cycles; blocks that fail on the way stay grown bad.
    pub fn age_all(&mut self, now: Nanos, pe: u32) -> Result<AgeReport, NandError> {
        let mut total = AgeReport::default();
        for i in 0..self.blocks.len() {
            if status_of(&self.blocks[i]) != BlockStatus::Good {
                continue;
            }
            let addr = self.config.geometry.block_at(i as u32).expect("in range");
            total.add(&self.age_block(now, addr, pe)?);
        }
        Ok(total)
    }

    fn age(
        &mut self,
        now: Nanos,
        block: BlockAddr,
        pe: u32,
        exact: bool,
    ) -> Result<AgeReport, NandError> {
        self.ensure_power()?;
        let bi = self.block_index(block)?;
        if status_of(&self.blocks[bi]) != BlockStatus::Good {
            return Err(NandError::BadBlock(block));
        }
        let g = self.config.geometry;
        let ppb = g.pages_per_block;
        let mut r = AgeReport::default();
        let erase_t = self.config.timing.erase();
        let b = self.blocks[bi];
        if (b.next_page > 0 || b.has(FLAG_NEEDS_ERASE) || b.usage != Usage::Fresh)
            && b.erase_count < pe
        {
            r.erases += 1;
            r.time += erase_t;
            if let Err(e) = self.erase(now, block) {
                return fail(r, e);
            }
        }
        let pages: Vec<u32> = if self.multi_level(bi) {
            (0..ppb).collect()
        } else if self.config.cell != CellType::Slc {
            self.pairing.pages_of_kind(BitKind::Lsb).collect()
        } else {
            (0..ppb).collect()
        };
        let program_t = Nanos(
            pages
                .iter()
                .map(|&p| self.program_timing(p, 0).array.0)
                .sum(),
        );
        let mut fast_cycles = 0u64;
        while self.blocks[bi].erase_count < pe {
            let e = self.blocks[bi].erase_count;
            // Past endurance a cycle can fail: it is run operation by operation only if
            // one of its operations' wear draws (the same per-event draws the operations
            // make) says so.
            let risky = exact
                || self.cut.is_some()
                || self.blocks[bi].inject != 0
                || (self.config.reliability.failure_probability(e) > 0.0
                    && (pages.iter().any(|&p| self.wear_fails(bi, p as u64))
                        || self.wear_fails(bi, u64::MAX)));
            r.programs += pages.len() as u64;
            r.erases += 1;
            r.time += program_t + erase_t;
            if !risky {
                // Nothing can fail or be cut: the cycle's only effects are its counts.
                self.blocks[bi].erase_count = e + 1;
                fast_cycles += 1;
                continue;
            }
            if fast_cycles > 0 {
                self.settle(bi, now, pages.len() as u64, fast_cycles)?;
                fast_cycles = 0;
            }
            let data = vec![0u8; g.page_size as usize];
            let spare = vec![0u8; g.spare_size as usize];
            for &p in &pages {
                let addr = block.page(p).expect("page in block");
                if let Err(e) = self.program(now, addr, &data, &spare) {
                    return fail(r, e);
                }
            }
            if let Err(e) = self.erase(now, block) {
                return fail(r, e);
            }
        }
        if fast_cycles > 0 {
            self.settle(bi, now, pages.len() as u64, fast_cycles)?;
        }
        Ok(r)
    }

    /// Books `cycles` bulk cycles of block `bi` (its erase count already advanced): the
    /// operations count as executed (counters, the operation index power cuts key on) and
    /// the block ends erased at `now`.
    fn settle(&mut self, bi: usize, now: Nanos, pages: u64, cycles: u64) -> Result<(), NandError> {
        self.counters.programs += pages * cycles;
        self.counters.erases += cycles;
        self.ops += (pages + 1) * cycles;
        self.register = None;
        self.mark_erased(bi, now)
    }
}

/// A failed aging operation: a wear failure ends the block's aging (it is grown bad now);
/// anything else (power loss) is an error.
fn fail(mut r: AgeReport, e: NandError) -> Result<AgeReport, NandError> {
    match e {
        NandError::ProgramFailed(_) | NandError::EraseFailed(_) => {
            r.failed = true;
            Ok(r)
        }
        e => Err(e),
    }
}

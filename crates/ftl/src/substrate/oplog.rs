//! The op log: every flash operation an FTL issues, with its cause, for the engine's
//! timelines; and the counters that summarise them.

use super::Substrate;
use crate::{Cause, FlashOp, FtlCounters, OpKind};
use ::alloc::vec::Vec;
use nand::{ErrorModel, Nanos, OpTiming, Storage};

/// Flash operations since the engine last drained them, and the running counters.
#[derive(Debug, Default)]
pub(crate) struct OpLog {
    pub ops: Vec<FlashOp>,
    pub counters: FtlCounters,
    dies_per_channel: u32,
}

impl OpLog {
    /// An empty log for a chip with `dies_per_channel` dies on each channel.
    pub fn new(dies_per_channel: u32) -> Self {
        OpLog {
            ops: Vec::new(),
            counters: FtlCounters::default(),
            dies_per_channel: dies_per_channel.max(1),
        }
    }

    /// Logs one operation on `die` and counts it; returns its index in the batch.
    #[inline]
    pub fn push(
        &mut self,
        die: u32,
        kind: OpKind,
        cause: Cause,
        t: OpTiming,
        ecc: Nanos,
        after: Option<u32>,
    ) -> u32 {
        let c = cause.index();
        match kind {
            OpKind::Read => self.counters.reads[c] += 1,
            OpKind::Program => self.counters.programs[c] += 1,
            OpKind::Erase => self.counters.erases[c] += 1,
        }
        self.ops.push(FlashOp {
            die,
            channel: die / self.dies_per_channel,
            kind,
            cause,
            array: t.array,
            transfer: t.transfer,
            ecc,
            after,
        });
        (self.ops.len() - 1) as u32
    }

    /// Moves the logged operations into `out` (appending).
    pub fn take(&mut self, out: &mut Vec<FlashOp>) {
        if out.is_empty() {
            // Hand over the buffer (and take the caller's empty one back): no copy.
            core::mem::swap(out, &mut self.ops);
        } else {
            out.append(&mut self.ops);
        }
    }
}

impl<S: Storage, M: ErrorModel> Substrate<S, M> {
    /// Reads of `causes` logged and not yet drained, and the simulated time they and the
    /// erases of `causes` take: the engine's model ([`crate::timeline`]) with every
    /// operation issued at once — arrays overlap across dies, a channel carries its dies'
    /// transfers one at a time, and its decode engines take the decodes in turn (a mount's
    /// recovery time: its reads, and the erases of blocks it could not trust to be erased).
    pub fn recovery_time(&self, causes: &[Cause]) -> (u64, Nanos) {
        let ops: Vec<crate::FlashOp> = self
            .log
            .ops
            .iter()
            .filter(|op| {
                matches!(op.kind, OpKind::Read | OpKind::Erase) && causes.contains(&op.cause)
            })
            .map(|op| crate::FlashOp { after: None, ..*op })
            .collect();
        let reads = ops.iter().filter(|op| op.kind == OpKind::Read).count();
        let g = self.geo;
        let engines = self.ctl.config().ecc_engines;
        let mut tl =
            crate::timeline::Timeline::new(g.total_dies() as usize, g.channels as usize, engines);
        (reads as u64, tl.schedule(&ops, Nanos::ZERO))
    }

    /// Logs an operation on block `block`.
    #[inline]
    pub fn push_op(
        &mut self,
        block: u32,
        kind: OpKind,
        cause: Cause,
        t: OpTiming,
        ecc: Nanos,
        after: Option<u32>,
    ) -> u32 {
        let die = self.die_of(block);
        self.log.push(die, kind, cause, t, ecc, after)
    }

    /// Logs an erase of block `block`.
    pub fn push_erase(&mut self, block: u32, cause: Cause, t: OpTiming) {
        self.push_op(block, OpKind::Erase, cause, t, Nanos::ZERO, None);
    }
}

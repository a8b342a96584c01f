//! The op log: every flash operation an FTL issues, with its cause, for the engine's
//! timelines; and the counters that summarise them.

use super::Substrate;
use crate::{Cause, FlashOp, FtlCounters, OpKind};
use ::alloc::vec;
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

    /// Reads of `cause` logged and not yet drained, and the simulated time they take on a
    /// chip of `channels` channels: reads on one die serialize, dies overlap, a channel
    /// carries its dies' transfers one at a time (a mount's recovery time).
    pub fn read_time(&self, cause: Cause, channels: u32) -> (u64, Nanos) {
        let reads = || {
            self.ops
                .iter()
                .filter(move |op| op.cause == cause && op.kind == OpKind::Read)
        };
        let ndies = reads().map(|op| op.die as usize + 1).max().unwrap_or(0);
        let mut die_t = vec![0u64; ndies];
        let mut ch_t = vec![0u64; channels.max(1) as usize];
        let mut n = 0u64;
        for op in reads() {
            n += 1;
            die_t[op.die as usize] += op.array.0 + op.transfer.0 + op.ecc.0;
            let nc = ch_t.len();
            ch_t[op.channel as usize % nc] += op.transfer.0;
        }
        let time = die_t.iter().chain(ch_t.iter()).copied().max().unwrap_or(0);
        (n, Nanos(time))
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

//! Per-die, per-channel and per-decoder "busy until" timelines: the one model of how flash
//! operations overlap, used by the simulator's engine for every request and by the FTL for
//! a mount's recovery time.
//!
//! A program occupies its channel for the data transfer and its die for transfer plus array
//! time; a read occupies the die for the array time, then the channel (and the die, whose
//! page register holds the data) for the transfer, then one of its channel's ECC decode
//! engines for the decode; an erase occupies only the die. An operation starts when its
//! die (and channel) are free and its dependency, if any, has finished; a decode starts
//! when its transfer has ended and an engine of the channel is free. Independent dies work
//! in parallel; GC operations delay host operations on the same die exactly as on hardware,
//! and reads on one channel queue for its decoders as they do on a controller with a BCH
//! engine per channel.
//!
//! `engines` decoders per channel; 0 leaves decodes unconstrained (any number run at once:
//! each read's decode only delays that read's end), the model before decoders were a
//! resource.

use crate::{FlashOp, OpKind};
use alloc::vec;
use alloc::vec::Vec;
use nand::Nanos;

/// The busy-until times of every die, channel and decode engine.
#[derive(Debug, Clone)]
pub struct Timeline {
    die_free: Vec<Nanos>,
    chan_free: Vec<Nanos>,
    /// Decode engines, `engines` per channel, channel-major.
    engine_free: Vec<Nanos>,
    engines: usize,
    ends: Vec<Nanos>,
    busy: Vec<Nanos>,
    /// Scratch timelines for [`Timeline::isolated`] (all zero between calls).
    idle_die: Vec<Nanos>,
    idle_chan: Vec<Nanos>,
    idle_engine: Vec<Nanos>,
}

/// The timelines [`place`] works on.
struct Lanes<'a> {
    die: &'a mut [Nanos],
    chan: &'a mut [Nanos],
    engine: &'a mut [Nanos],
    engines: usize,
}

impl Timeline {
    /// Idle timelines for `dies` dies on `channels` channels with `engines` decode engines
    /// per channel (0: decodes unconstrained).
    pub fn new(dies: usize, channels: usize, engines: u32) -> Self {
        let engines = engines as usize;
        Timeline {
            die_free: vec![Nanos::ZERO; dies],
            chan_free: vec![Nanos::ZERO; channels],
            engine_free: vec![Nanos::ZERO; channels * engines],
            engines,
            ends: Vec::new(),
            busy: vec![Nanos::ZERO; dies],
            idle_die: vec![Nanos::ZERO; dies],
            idle_chan: vec![Nanos::ZERO; channels],
            idle_engine: vec![Nanos::ZERO; channels * engines],
        }
    }

    /// Places `ops` (one request's batch) no earlier than `ready`; returns when the last one
    /// finishes (`ready` if there are none).
    pub fn schedule(&mut self, ops: &[FlashOp], ready: Nanos) -> Nanos {
        let lanes = Lanes {
            die: &mut self.die_free,
            chan: &mut self.chan_free,
            engine: &mut self.engine_free,
            engines: self.engines,
        };
        place(lanes, &mut self.ends, Some(&mut self.busy), ops, ready)
    }

    /// How long `ops` take on dies, channels and decoders that are all free: a request's
    /// own service time, without the time it waits behind work already on the timelines.
    /// Changes no timeline.
    pub fn isolated(&mut self, ops: &[FlashOp]) -> Nanos {
        // The common request, one operation on a free die: its own times.
        if let [op] = ops {
            return match op.kind {
                OpKind::Erase => op.array,
                OpKind::Program => op.transfer + op.array,
                OpKind::Read => op.array + op.transfer + op.ecc,
            };
        }
        let lanes = Lanes {
            die: &mut self.idle_die,
            chan: &mut self.idle_chan,
            engine: &mut self.idle_engine,
            engines: self.engines,
        };
        let done = place(lanes, &mut self.ends, None, ops, Nanos::ZERO);
        let k = self.engines;
        for op in ops {
            self.idle_die[op.die as usize] = Nanos::ZERO;
            let c = op.channel as usize;
            self.idle_chan[c] = Nanos::ZERO;
            self.idle_engine[c * k..(c + 1) * k].fill(Nanos::ZERO);
        }
        done
    }

    /// When each die is next free.
    pub fn die_free(&self) -> &[Nanos] {
        &self.die_free
    }

    /// When every die, channel and decoder is free: the start of a barrier (a trim or
    /// flush served after everything issued before it).
    pub fn all_free(&self) -> Nanos {
        self.die_free
            .iter()
            .chain(self.chan_free.iter())
            .chain(self.engine_free.iter())
            .copied()
            .max()
            .unwrap_or(Nanos::ZERO)
    }

    /// Total busy time of each die so far.
    pub fn die_busy(&self) -> &[Nanos] {
        &self.busy
    }

    /// Moves every timeline to at least `t` (after an untimed phase such as preconditioning).
    pub fn advance_to(&mut self, t: Nanos) {
        let all = self.die_free.iter_mut().chain(self.chan_free.iter_mut());
        for x in all.chain(self.engine_free.iter_mut()) {
            *x = (*x).max(t);
        }
    }
}

/// Places `ops` on `lanes` no earlier than `ready` (`ends`: scratch for each operation's
/// end; `busy`: per-die busy time to add to).
fn place(
    lanes: Lanes<'_>,
    ends: &mut Vec<Nanos>,
    mut busy: Option<&mut Vec<Nanos>>,
    ops: &[FlashOp],
    ready: Nanos,
) -> Nanos {
    let Lanes {
        die: die_free,
        chan: chan_free,
        engine: engine_free,
        engines: k,
    } = lanes;
    ends.clear();
    let mut done = ready;
    for op in ops {
        let r = match op.after {
            Some(i) => ends.get(i as usize).copied().unwrap_or(ready).max(ready),
            None => ready,
        };
        let d = op.die as usize;
        let c = op.channel as usize;
        let end = match op.kind {
            OpKind::Program => {
                let s = r.max(chan_free[c]).max(die_free[d]);
                chan_free[c] = s + op.transfer;
                die_free[d] = s + op.transfer + op.array;
                if let Some(b) = busy.as_deref_mut() {
                    b[d] += op.transfer + op.array;
                }
                die_free[d]
            }
            OpKind::Read => {
                let s = r.max(die_free[d]);
                let t = (s + op.array).max(chan_free[c]);
                chan_free[c] = t + op.transfer;
                die_free[d] = t + op.transfer;
                if let Some(b) = busy.as_deref_mut() {
                    b[d] += op.array + op.transfer;
                }
                decode(
                    &mut engine_free[c * k..(c + 1) * k],
                    t + op.transfer,
                    op.ecc,
                )
            }
            OpKind::Erase => {
                let s = r.max(die_free[d]);
                die_free[d] = s + op.array;
                if let Some(b) = busy.as_deref_mut() {
                    b[d] += op.array;
                }
                die_free[d]
            }
        };
        ends.push(end);
        done = done.max(end);
    }
    done
}

/// When a decode of `ecc` whose data arrived at `at` ends, on the first engine of
/// `engines` (one channel's) to be free; no engines: unconstrained. A read that decodes
/// nothing (an erased page) takes no engine.
#[inline]
fn decode(engines: &mut [Nanos], at: Nanos, ecc: Nanos) -> Nanos {
    if ecc == Nanos::ZERO {
        return at;
    }
    let Some(free) = engines.iter_mut().min() else {
        return at + ecc;
    };
    let end = at.max(*free) + ecc;
    *free = end;
    end
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::Cause;
    use alloc::vec;

    fn op(die: u32, kind: OpKind, array: u64, xfer: u64, after: Option<u32>) -> FlashOp {
        FlashOp {
            die,
            channel: 0,
            kind,
            cause: Cause::Host,
            array: Nanos(array),
            transfer: Nanos(xfer),
            ecc: Nanos::ZERO,
            after,
        }
    }

    #[test]
    fn dies_overlap_and_channel_serialises_transfers() {
        let mut t = Timeline::new(2, 1, 0);
        // Two programs on two dies share the channel for transfer, overlap in the array.
        let end = t.schedule(
            &[
                op(0, OpKind::Program, 100, 10, None),
                op(1, OpKind::Program, 100, 10, None),
            ],
            Nanos(0),
        );
        assert_eq!(end, Nanos(120)); // second starts after the first transfer: 10 + 10 + 100
                                     // A read on die 0 waits for its program.
        let end = t.schedule(&[op(0, OpKind::Read, 20, 10, None)], Nanos(0));
        assert_eq!(end, Nanos(110 + 20 + 10));
        // A dependent program waits for the read it copies.
        let mut t = Timeline::new(2, 2, 0);
        let end = t.schedule(
            &[
                op(0, OpKind::Read, 50, 5, None),
                op(1, OpKind::Program, 100, 5, Some(0)),
            ],
            Nanos(0),
        );
        assert_eq!(end, Nanos(55 + 5 + 100));
        assert_eq!(t.die_busy()[1], Nanos(105));
    }

    /// A request's own service is its batch on free timelines: what `schedule` gives on a
    /// fresh timeline, one operation or many, and it changes no busy-until time.
    #[test]
    fn isolated_is_the_batch_on_free_timelines() {
        let batches = [
            vec![op(0, OpKind::Read, 50, 5, None)],
            vec![op(1, OpKind::Program, 100, 5, None)],
            vec![op(0, OpKind::Erase, 900, 0, None)],
            vec![
                op(0, OpKind::Read, 50, 5, None),
                op(1, OpKind::Program, 100, 5, Some(0)),
                op(0, OpKind::Erase, 900, 0, None),
            ],
        ];
        let mut busy = Timeline::new(2, 1, 0);
        busy.schedule(&[op(0, OpKind::Erase, 5000, 0, None)], Nanos(0));
        for b in &batches {
            let fresh = Timeline::new(2, 1, 0).schedule(b, Nanos(0));
            assert_eq!(busy.isolated(b), fresh, "{b:?}");
            assert_eq!(busy.die_free(), &[Nanos(5000), Nanos(0)]);
        }
    }

    fn read(die: u32, array: u64, xfer: u64, ecc: u64) -> FlashOp {
        FlashOp {
            ecc: Nanos(ecc),
            ..op(die, OpKind::Read, array, xfer, None)
        }
    }

    /// Two reads on two dies of one channel: their arrays overlap, their transfers share
    /// the channel, and with one engine per channel the second decode waits for the first.
    #[test]
    fn decodes_queue_for_their_channels_engines() {
        let batch = [read(0, 50, 10, 100), read(1, 50, 10, 100)];
        // Unconstrained: each decode right after its transfer.
        assert_eq!(
            Timeline::new(2, 1, 0).schedule(&batch, Nanos(0)),
            Nanos(50 + 20 + 100)
        );
        // One engine: the second decode starts when the first ends (160), not at 70.
        let mut one = Timeline::new(2, 1, 1);
        assert_eq!(one.schedule(&batch, Nanos(0)), Nanos(50 + 10 + 200));
        assert_eq!(one.isolated(&batch), Nanos(260));
        // A barrier waits for the decoders too.
        assert_eq!(one.all_free(), Nanos(260));
        // Two engines: the decodes overlap again.
        assert_eq!(
            Timeline::new(2, 1, 2).schedule(&batch, Nanos(0)),
            Nanos(170)
        );
        // Engines are per channel: reads on two channels do not wait for each other.
        let mut two = Timeline::new(2, 2, 1);
        let split = [
            read(0, 50, 10, 100),
            FlashOp {
                channel: 1,
                ..read(1, 50, 10, 100)
            },
        ];
        assert_eq!(two.schedule(&split, Nanos(0)), Nanos(160));
        // An erased page (no decode) takes no engine.
        let mut e = Timeline::new(1, 1, 1);
        assert_eq!(e.schedule(&[read(0, 50, 10, 0)], Nanos(0)), Nanos(60));
        assert_eq!(e.all_free(), Nanos(60));
    }
}

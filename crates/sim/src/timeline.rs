//! Per-die and per-channel "busy until" timelines.
//!
//! A program occupies its channel for the data transfer and its die for transfer plus array
//! time; a read occupies the die for the array time, then the channel (and the die, whose
//! page register holds the data) for the transfer, then the controller decodes; an erase
//! occupies only the die. An operation starts when its die (and channel) are free and its
//! dependency, if any, has finished. Independent dies work in parallel; GC operations
//! delay host operations on the same die exactly as on hardware.

use ftl::{FlashOp, OpKind};
use nand::Nanos;

/// The busy-until times of every die and channel.
#[derive(Debug, Clone)]
pub struct Timeline {
    die_free: Vec<Nanos>,
    chan_free: Vec<Nanos>,
    ends: Vec<Nanos>,
    busy: Vec<Nanos>,
    /// Scratch timelines for [`Timeline::isolated`] (all zero between calls).
    idle_die: Vec<Nanos>,
    idle_chan: Vec<Nanos>,
}

impl Timeline {
    /// Idle timelines for `dies` dies on `channels` channels.
    pub fn new(dies: usize, channels: usize) -> Self {
        Timeline {
            die_free: vec![Nanos::ZERO; dies],
            chan_free: vec![Nanos::ZERO; channels],
            ends: Vec::new(),
            busy: vec![Nanos::ZERO; dies],
            idle_die: vec![Nanos::ZERO; dies],
            idle_chan: vec![Nanos::ZERO; channels],
        }
    }

    /// Places `ops` (one request's batch) no earlier than `ready`; returns when the last one
    /// finishes (`ready` if there are none).
    pub fn schedule(&mut self, ops: &[FlashOp], ready: Nanos) -> Nanos {
        place(
            &mut self.die_free,
            &mut self.chan_free,
            &mut self.ends,
            Some(&mut self.busy),
            ops,
            ready,
        )
    }

    /// How long `ops` take on dies and channels that are all free: a request's own service
    /// time, without the time it waits behind work already on the timelines. Changes no
    /// timeline.
    pub fn isolated(&mut self, ops: &[FlashOp]) -> Nanos {
        // The common request, one operation on a free die: its own times.
        if let [op] = ops {
            return match op.kind {
                OpKind::Erase => op.array,
                OpKind::Program => op.transfer + op.array,
                OpKind::Read => op.array + op.transfer + op.ecc,
            };
        }
        let done = place(
            &mut self.idle_die,
            &mut self.idle_chan,
            &mut self.ends,
            None,
            ops,
            Nanos::ZERO,
        );
        for op in ops {
            self.idle_die[op.die as usize] = Nanos::ZERO;
            self.idle_chan[op.channel as usize] = Nanos::ZERO;
        }
        done
    }

    /// When each die is next free.
    pub fn die_free(&self) -> &[Nanos] {
        &self.die_free
    }

    /// When every die and channel is free: the start of a barrier (a trim or flush served
    /// after everything issued before it).
    pub fn all_free(&self) -> Nanos {
        self.die_free
            .iter()
            .chain(self.chan_free.iter())
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
        for x in self.die_free.iter_mut().chain(self.chan_free.iter_mut()) {
            *x = (*x).max(t);
        }
    }
}

/// Places `ops` on the timelines `die_free` and `chan_free` no earlier than `ready`
/// (`ends`: scratch for each operation's end; `busy`: per-die busy time to add to).
fn place(
    die_free: &mut [Nanos],
    chan_free: &mut [Nanos],
    ends: &mut Vec<Nanos>,
    mut busy: Option<&mut Vec<Nanos>>,
    ops: &[FlashOp],
    ready: Nanos,
) -> Nanos {
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
                t + op.transfer + op.ecc
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

#[cfg(test)]
mod tests {
    use super::*;
    use ftl::Cause;

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
        let mut t = Timeline::new(2, 1);
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
        let mut t = Timeline::new(2, 2);
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
        let mut busy = Timeline::new(2, 1);
        busy.schedule(&[op(0, OpKind::Erase, 5000, 0, None)], Nanos(0));
        for b in &batches {
            let fresh = Timeline::new(2, 1).schedule(b, Nanos(0));
            assert_eq!(busy.isolated(b), fresh, "{b:?}");
            assert_eq!(busy.die_free(), &[Nanos(5000), Nanos(0)]);
        }
    }
}

//! The request loops of each load mode, over a source read a few requests ahead.

use super::{Engine, Progress};
use crate::request::{ReqKind, Request};
use crate::workload::RequestSource;
use crate::SimError;
use ftl::Ftl;
use nand::Nanos;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Requests pulled from the source ahead of their dispatch.
const LOOKAHEAD: usize = 8;

/// A request source read a few requests ahead, so the FTL can start loading the map
/// entries of upcoming requests (`Ftl::prefetch`) while it serves the current one. Requests
/// (and a source error) come out in the source's order; nothing past an error is pulled.
pub(super) struct Lookahead<'a> {
    src: &'a mut dyn RequestSource,
    buf: VecDeque<Result<Request, SimError>>,
    done: bool,
}

impl<'a> Lookahead<'a> {
    pub(super) fn new(src: &'a mut dyn RequestSource) -> Self {
        Lookahead {
            src,
            buf: VecDeque::with_capacity(LOOKAHEAD),
            done: false,
        }
    }

    fn next(&mut self, ftl: &dyn Ftl, page: u64) -> Option<Result<Request, SimError>> {
        while !self.done && self.buf.len() < LOOKAHEAD {
            match self.src.next_request() {
                None => self.done = true,
                Some(r) => {
                    match &r {
                        Ok(q) if matches!(q.kind, ReqKind::Read | ReqKind::Write) => {
                            ftl.prefetch(q.offset / page)
                        }
                        Ok(_) => {}
                        Err(_) => self.done = true,
                    }
                    self.buf.push_back(r);
                }
            }
        }
        let next = self.buf.pop_front();
        // Second stage for the request a few places behind: its map entry has had time to
        // arrive; start on what it points to.
        if let Some(Ok(q)) = self.buf.get(LOOKAHEAD / 2) {
            if matches!(q.kind, ReqKind::Read | ReqKind::Write) {
                ftl.prefetch_mapped(q.offset / page);
            }
        }
        // Third stage, for a read two places behind: the data it will copy out.
        if let Some(Ok(q)) = self.buf.get(1) {
            if q.kind == ReqKind::Read {
                ftl.prefetch_data(q.offset / page);
            }
        }
        next
    }

    fn remaining(&self) -> Option<u64> {
        self.src.remaining().map(|n| n + self.buf.len() as u64)
    }
}

/// Pulls the source's next request into `next` (arrival shifted by `base`) if `next` is
/// empty and the source is not exhausted.
fn refill(
    source: &mut Lookahead<'_>,
    ftl: &dyn Ftl,
    page: u64,
    base: Nanos,
    next: &mut Option<Request>,
    exhausted: &mut bool,
) -> Result<(), SimError> {
    if next.is_none() && !*exhausted {
        match source.next(ftl, page) {
            Some(r) => {
                let mut r = r?;
                r.arrival += base;
                *next = Some(r);
            }
            None => *exhausted = true,
        }
    }
    Ok(())
}

impl Engine {
    /// Open loop with a bounded device queue (`load.device_queue`): an event loop in
    /// which the device takes a request when a slot is free, and requests that have
    /// arrived by then wait in the scheduler. Returns the requests served.
    pub(super) fn run_open_slots(
        &mut self,
        source: &mut Lookahead<'_>,
        base: Nanos,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<u64, SimError> {
        let mut done = 0u64;
        let slots = self.slots.unwrap_or(usize::MAX);
        let mut inflight: BinaryHeap<Reverse<Nanos>> = BinaryHeap::new();
        let mut next: Option<Request> = None;
        let mut exhausted = false;
        loop {
            refill(
                source,
                &*self.ftl,
                self.page,
                base,
                &mut next,
                &mut exhausted,
            )?;
            let head = self.sched.peek_first(&mut |_| true).map(|q| q.arrival);
            let Some(head) = head else {
                // Nothing queued: the next arrival (after its idle period, if any).
                let Some(r) = next.take() else { break };
                self.idle_before(&r)?;
                self.sched.push(r);
                continue;
            };
            // Requests served ahead by request feedback can leave more than
            // `slots` in flight: the slot frees when enough of them have completed.
            while inflight.len() > slots {
                inflight.pop();
            }
            let slot = if inflight.len() < slots {
                self.clock
            } else {
                inflight.peek().map_or(self.clock, |c| c.0)
            };
            let at = slot.max(head);
            // Everything that has arrived by then queues behind the head.
            while let Some(r) = next.take_if(|r| r.arrival <= at) {
                self.sched.push(r);
                refill(
                    source,
                    &*self.ftl,
                    self.page,
                    base,
                    &mut next,
                    &mut exhausted,
                )?;
            }
            if inflight.len() >= slots {
                inflight.pop();
            }
            let q = self.sched.pop().expect("the head is queued");
            let c = self.dispatch(&q, at)?;
            inflight.push(Reverse(c));
            done += 1 + self.fed.len() as u64;
            inflight.extend(self.fed.drain(..).map(Reverse));
            report_progress(done, self.clock, source.remaining(), progress);
        }
        Ok(done)
    }

    /// Open loop: each request at its arrival time (or when the device is free).
    pub(super) fn run_open(
        &mut self,
        source: &mut Lookahead<'_>,
        base: Nanos,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<u64, SimError> {
        let mut done = 0u64;
        while let Some(r) = source.next(&*self.ftl, self.page) {
            let mut r = r?;
            r.arrival += base;
            self.idle_before(&r)?;
            self.sched.push(r);
            while let Some(q) = self.sched.pop() {
                let at = q.arrival.max(self.clock);
                self.dispatch(&q, at)?;
                done += 1 + self.fed.len() as u64;
                self.fed.clear();
                report_progress(done, self.clock, source.remaining(), progress);
            }
        }
        Ok(done)
    }

    /// Closed loop: `queue_depth` requests kept in the device, a new one arriving as one
    /// completes.
    pub(super) fn run_closed(
        &mut self,
        source: &mut Lookahead<'_>,
        base: Nanos,
        queue_depth: u32,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<u64, SimError> {
        let mut done = 0u64;
        let qd = queue_depth.max(1) as usize;
        let mut inflight: BinaryHeap<Reverse<Nanos>> = BinaryHeap::new();
        let mut now = base;
        let mut exhausted = false;
        // A request behind an idle period: it waits until every outstanding request
        // has completed and the idle time has passed.
        let mut held: Option<Request> = None;
        loop {
            if let Some(r) = held {
                if inflight.is_empty() && self.sched.is_empty() {
                    self.idle(now, r.idle_before)?;
                    now = now.max(self.clock);
                    self.sched.push(Request { arrival: now, ..r });
                    held = None;
                }
            }
            // Keep `qd` requests in the device: arrivals at the current time.
            while !exhausted && held.is_none() && inflight.len() + self.sched.len() < qd {
                match source.next(&*self.ftl, self.page) {
                    Some(r) => {
                        let mut r = r?;
                        if r.idle_before > Nanos::ZERO {
                            held = Some(r);
                            break;
                        }
                        r.arrival = now;
                        self.sched.push(r);
                    }
                    None => exhausted = true,
                }
            }
            // Dispatch while the device has a free slot; the rest wait queued.
            let slots = self.slots.unwrap_or(usize::MAX);
            while inflight.len() < slots {
                let Some(q) = self.sched.pop() else { break };
                let c = self.dispatch(&q, now)?;
                inflight.push(Reverse(c));
                done += 1 + self.fed.len() as u64;
                inflight.extend(self.fed.drain(..).map(Reverse));
                report_progress(done, now, source.remaining(), progress);
            }
            match inflight.pop() {
                Some(Reverse(c)) => now = now.max(c),
                None if held.is_some() => {}
                None => break,
            }
        }
        self.clock = self.clock.max(now);
        Ok(done)
    }
}

/// Calls `progress` every 4096 requests.
fn report_progress(
    done: u64,
    now: Nanos,
    remaining: Option<u64>,
    progress: &mut dyn FnMut(Progress),
) {
    if done.is_multiple_of(4096) {
        progress(Progress {
            done,
            remaining,
            now,
        });
    }
}

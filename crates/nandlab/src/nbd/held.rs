//! Timing emulation's side of a connection (`serve --timing emulate`): each request's
//! arrival and completion, and the replies held until their requests complete.

use super::conn::Conn;
use super::Export;
use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::time::{Duration, Instant};

/// How long before a held reply is due its connection stops sleeping and polls.
const SPIN: Duration = Duration::from_micros(100);
/// How long a connection that has just sent its last held reply polls for the client's
/// next request before it blocks (a client at queue depth 1 answers within tens of µs,
/// and a thread woken from a block starts tens of µs late on a virtual machine).
const SPIN_NEXT: Duration = Duration::from_micros(100);

/// Replies held until their requests complete (timing emulation), soonest first; each
/// with its sequence number, so that replies due at the same time keep their order.
#[derive(Default)]
pub(super) struct HeldReplies {
    replies: BinaryHeap<Reverse<HeldReply>>,
    seq: u64,
}

/// A held reply: when it is due, its sequence number, its request's arrival, its bytes.
type HeldReply = (Instant, u64, Instant, Vec<u8>);

impl HeldReplies {
    /// Holds `reply` (whole replies' bytes) of a request that arrived at `arrival` until
    /// `due`.
    pub(super) fn hold(&mut self, arrival: Instant, due: Instant, reply: Vec<u8>) {
        if !reply.is_empty() {
            self.seq += 1;
            self.replies.push(Reverse((due, self.seq, arrival, reply)));
        }
    }

    /// Sends every reply due by now in one write, and reports each one's lag. Whether it
    /// sent any.
    fn release_due<F>(&mut self, conn: &mut Conn, with: &mut F) -> io::Result<bool>
    where
        F: FnMut(&mut dyn FnMut(&mut dyn Export) -> Result<(), u32>) -> Result<(), u32>,
    {
        let now = Instant::now();
        let mut out = Vec::new();
        let mut lags = Vec::new();
        while let Some(Reverse((due, ..))) = self.replies.peek() {
            if *due > now {
                break;
            }
            let Reverse((due, _, arrival, bytes)) = self.replies.pop().expect("peeked");
            out.extend_from_slice(&bytes);
            lags.push((arrival, due));
        }
        if out.is_empty() {
            return Ok(false);
        }
        conn.write_now(&out)?;
        let sent = Instant::now();
        let _ = with(&mut |e| {
            for (arrival, due) in &lags {
                e.timing_reply(
                    *arrival,
                    due.saturating_duration_since(*arrival),
                    sent.saturating_duration_since(*due),
                );
            }
            Ok(())
        });
        Ok(true)
    }

    /// Sends due replies until the client has sent something (or nothing is held: the
    /// caller then waits for the client as usual).
    pub(super) fn wait_for_request<F>(&mut self, conn: &mut Conn, with: &mut F) -> io::Result<()>
    where
        F: FnMut(&mut dyn FnMut(&mut dyn Export) -> Result<(), u32>) -> Result<(), u32>,
    {
        loop {
            let sent = self.release_due(conn, with)?;
            let Some(Reverse((due, ..))) = self.replies.peek() else {
                if sent {
                    // The last reply just went out: poll a while for the next request.
                    let until = Instant::now() + SPIN_NEXT;
                    while Instant::now() < until && !conn.wait_readable(Duration::ZERO)? {}
                }
                return Ok(());
            };
            // Sleep until shortly before the reply is due, then poll without sleeping: a
            // wake-up from a sleep comes tens of microseconds late on a virtual machine.
            let wait = due.saturating_duration_since(Instant::now());
            let sleep = wait.saturating_sub(SPIN);
            if conn.wait_readable(sleep)? {
                return Ok(());
            }
        }
    }

    /// Sends every held reply at its time (the connection is closing).
    pub(super) fn release_all<F>(&mut self, conn: &mut Conn, with: &mut F) -> io::Result<()>
    where
        F: FnMut(&mut dyn FnMut(&mut dyn Export) -> Result<(), u32>) -> Result<(), u32>,
    {
        while let Some(Reverse((due, ..))) = self.replies.peek() {
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
            let _ = self.release_due(conn, with)?;
        }
        Ok(())
    }
}

/// A connection's timing emulation in [`transmit`](super::transmit): the current request's arrival and the
/// latest completion its calls reported, and the replies held.
pub(super) type Emulation<'a> = Option<(&'a Timing, &'a mut HeldReplies)>;

/// The current request's times (timing emulation).
#[derive(Default)]
pub(super) struct Timing {
    /// When its header arrived.
    pub(super) arrival: Cell<Option<Instant>>,
    /// The latest completion its calls reported.
    pub(super) done: Cell<Option<Instant>>,
}

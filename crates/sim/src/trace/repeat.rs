//! `[trace] repeat`: a trace replayed several times back to back.

use crate::request::Request;
use crate::workload::RequestSource;
use crate::SimError;
use nand::Nanos;

/// Reopens a trace for another pass.
pub type Reopen = Box<dyn FnMut() -> Result<Box<dyn RequestSource>, SimError>>;

/// A trace replayed `passes` times back to back: each pass reopens it and shifts its
/// arrivals past the previous pass's last (`[trace] repeat`).
pub struct Repeated {
    current: Box<dyn RequestSource>,
    reopen: Reopen,
    left: u32,
    offset: Nanos,
    last: Nanos,
}

impl Repeated {
    /// `first` is the first pass; `reopen` makes each of the `passes - 1` others.
    pub fn new(first: Box<dyn RequestSource>, passes: u32, reopen: Reopen) -> Self {
        Repeated {
            current: first,
            reopen,
            left: passes.saturating_sub(1),
            offset: Nanos::ZERO,
            last: Nanos::ZERO,
        }
    }
}

impl RequestSource for Repeated {
    fn next_request(&mut self) -> Option<Result<Request, SimError>> {
        loop {
            match self.current.next_request() {
                Some(Ok(mut r)) => {
                    r.arrival += self.offset;
                    self.last = self.last.max(r.arrival);
                    return Some(Ok(r));
                }
                Some(Err(e)) => return Some(Err(e)),
                None if self.left > 0 => {
                    self.left -= 1;
                    self.offset = self.last;
                    match (self.reopen)() {
                        Ok(next) => self.current = next,
                        Err(e) => return Some(Err(e)),
                    }
                }
                None => return None,
            }
        }
    }

    fn remaining(&self) -> Option<u64> {
        None
    }

    fn notes(&self) -> Vec<String> {
        self.current.notes()
    }
}

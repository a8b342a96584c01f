//! Generations written in steps (see the module docs, "Generations in steps"): the
//! generation being written, one erase or one unit program per [`Region::step`], its
//! trailer last.

use super::{CpState, PageHeader, Region, HEADER};
use crate::substrate::Substrate;
use crate::{Cause, FtlError};
use ::alloc::vec;
use ::alloc::vec::Vec;
use nand::{ErrorModel, Nanos, Storage};

/// A generation being written in steps (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    /// Its generation number.
    pub gen: u64,
    /// Region blocks it has opened, in page order.
    pub blocks: Vec<u32>,
    /// Units used in the last of `blocks` (`slots`: the next step opens a block).
    pub used: u32,
    /// Body pages written so far.
    pub index: u32,
    /// Body pages in all, the trailer included.
    pub body_pages: u32,
    /// The anchor refresh this generation may owe ([`Region::anchor_due`]) is settled: done,
    /// or not due at its first step.
    pub anchor_settled: bool,
}

/// What a step of a stepped generation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// An erase or a program: more steps to go.
    More,
    /// The trailer was programmed: the generation is committed.
    Committed,
}

impl<S: Storage, M: ErrorModel> Region<S, M> {
    /// Region blocks the generation being written in steps has still to open (one more
    /// than it needs: a block may go bad mid-write).
    pub(super) fn blocks_still_needed(&self, p: &Pending) -> usize {
        let slots = self.writer.slots();
        let left = p.body_pages - p.index;
        let room = if p.blocks.is_empty() {
            0
        } else {
            slots - p.used
        };
        left.saturating_sub(room).div_ceil(slots) as usize + 1
    }

    /// Body pages (the trailer included) of a stepped generation of `len` bytes.
    pub fn stepped_body_pages(&self, sub: &Substrate<S, M>, len: usize) -> u32 {
        len.div_ceil(self.payload(sub)) as u32 + 1
    }

    /// Steps a stepped generation of `len` bytes takes at most, none failing: a program per
    /// body page and an erase per region block it opens, and an anchor refresh's erase and
    /// program — as (programs, erases).
    pub fn steps_split(&self, sub: &Substrate<S, M>, len: usize) -> (u32, u32) {
        let pages = self.stepped_body_pages(sub, len);
        let anchor = u32::from(!self.anchors.is_empty());
        (pages + anchor, pages.div_ceil(self.writer.slots()) + anchor)
    }

    /// Log entries the trailer of a stepped generation can carry, of `entry` bytes each.
    pub fn trailer_entries(&self, sub: &Substrate<S, M>, entry: usize) -> usize {
        self.payload(sub) / entry
    }

    /// Starts writing a generation of `len` body bytes in steps (replacing one already
    /// being written, which is abandoned). Nothing is written until the first
    /// [`step`](Self::step).
    pub fn begin(&mut self, sub: &Substrate<S, M>, len: usize) {
        self.pending = None;
        let body_pages = self.stepped_body_pages(sub, len);
        let gen = self.next_gen();
        self.pending = Some(Pending {
            gen,
            blocks: Vec::new(),
            used: self.writer.slots(),
            index: 0,
            body_pages,
            anchor_settled: false,
        });
    }

    /// Whether the generation being written in steps has only its trailer left to write.
    pub fn at_trailer(&self) -> bool {
        self.pending
            .as_ref()
            .is_some_and(|p| p.index + 1 == p.body_pages && p.used < self.writer.slots())
    }

    /// One step of the generation being written: erases the next region block when the
    /// current one is full, else programs the next body page — a chunk of `bytes` (the
    /// same bytes at every step), or the trailer carrying `trailer` (whole log entries)
    /// last, which commits the generation: its log starts after the trailer.
    pub fn step(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        bytes: &[u8],
        trailer: &[u8],
    ) -> Result<Step, FtlError> {
        let slots = self.writer.slots();
        let mut p = self.pending.take().expect("a generation is being written");
        let r = self.step_inner(sub, now, &mut p, bytes, trailer, slots);
        if let Ok(Step::Committed) = r {
            self.cp = CpState {
                gen: p.gen,
                blocks: p.blocks,
                used: p.used,
                pages: p.body_pages,
                body_pages: p.body_pages,
            };
            self.probed = Some(now);
        } else {
            self.pending = Some(p);
        }
        r
    }

    fn step_inner(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        p: &mut Pending,
        bytes: &[u8],
        trailer: &[u8],
        slots: u32,
    ) -> Result<Step, FtlError> {
        if !p.anchor_settled {
            if self.anchor_due(now) {
                // One step each: the erase of the anchor block the record goes to, if it
                // needs one, and the record's program (a failure gives up until the next
                // generation).
                if self.anchor_op(sub, now)? != super::anchor::AnchorOp::Erased {
                    p.anchor_settled = true;
                }
                return Ok(Step::More);
            }
            p.anchor_settled = true;
        }
        if p.used == slots {
            let Some(&b) = self.order_without(sub, &p.blocks).first() else {
                return Err(FtlError::NoSpace);
            };
            if sub.erase_block(now, b, Cause::Meta)? {
                p.blocks.push(b);
                p.used = 0;
            }
            return Ok(Step::More);
        }
        let payload = self.payload(sub);
        let last = p.index + 1 == p.body_pages;
        let chunk = if last {
            debug_assert!(trailer.len() <= payload);
            &trailer[..trailer.len().min(payload)]
        } else {
            let at = p.index as usize * payload;
            &bytes[at..(at + payload).min(bytes.len())]
        };
        let h = PageHeader {
            log: false,
            trailer: last,
            gen: p.gen,
            index: p.index,
            body_pages: p.body_pages,
            len: chunk.len() as u32,
        };
        let mut page = vec![0u8; self.writer.unit_bytes(sub)];
        h.write(&mut page);
        page[HEADER..HEADER + chunk.len()].copy_from_slice(chunk);
        let b = *p.blocks.last().expect("a block is open");
        if !self.program(sub, now, b, p.used, &page, &h)? {
            // Retired mid-write: continue in the next region block.
            p.used = slots;
            return Ok(Step::More);
        }
        p.used += 1;
        p.index += 1;
        Ok(if last { Step::Committed } else { Step::More })
    }
}

//! Which GXT a mount may use: SPFTL_log's GXT logs on top of the whole GXT, and — after a
//! GXT write that does not decode — the checks that nothing was written after the GXT the
//! mount falls back to (else it refuses stale metadata).

use super::gxt::Gxt;
use super::{bst, BitEntry, DftlFtl, PartKind, GXT_LOG_TAG};
use crate::{Cause, FtlError};
use alloc::collections::BTreeMap;
use alloc::vec;
use alloc::vec::Vec;
use controller::PageKind;
use nand::{BlockStatus, ErrorModel, Nanos, Storage};

/// A mount refused because the GXT it could use is older than the volume.
const STALE: FtlError = FtlError::Corrupt(
    "the newest GXT does not decode and the volume changed after the one before it: refusing to mount stale metadata",
);

impl<S: Storage, M: ErrorModel> DftlFtl<S, M> {
    /// After a GXT write that did not decode, the mount uses an older GXT: that is sound
    /// only if the volume did not change after it (the bad one was the last write, torn
    /// by the cut). A metadata block holding no unit the GXT's directories name, outside
    /// the update blocks, whose first unit is newer than the GXT (sequence number
    /// `gxt_seq`) was written after it: refused (charged record reads).
    pub(crate) fn moved_on_meta(
        &mut self,
        now: Nanos,
        gxt_seq: u64,
        holds: &[bool],
    ) -> Result<(), FtlError> {
        let slots = self.slots();
        for k in [
            PartKind::Pmt,
            PartKind::Bit,
            PartKind::PmtLog,
            PartKind::BitLog,
        ] {
            let live = self.live_units(k);
            let p = self.parts[k as usize].clone();
            for i in 0..p.len {
                let b = p.first + i;
                if p.bad[i as usize] || b == p.upd || live[i as usize] > 0 || !holds[b as usize] {
                    continue;
                }
                let mut failed = false;
                if let Some(r) = self.unit_record(now, b * slots, Cause::Mount, &mut failed)? {
                    if r.seq > gxt_seq {
                        return Err(STALE);
                    }
                }
            }
        }
        Ok(())
    }

    /// The user side of [`moved_on_meta`](Self::moved_on_meta): a user block other
    /// than the update block whose last page is newer than the GXT, or that the recovered
    /// BIT calls free but holds pages, was written after the GXT (a charged header read of
    /// every user block, and a record read of each one's last page: the price of a
    /// damaged GXT, not paid by a clean mount).
    pub(crate) fn moved_on_user(
        &mut self,
        now: Nanos,
        gxt_seq: u64,
        bit: &[BitEntry],
        fix: &BTreeMap<u32, BitEntry>,
    ) -> Result<(), FtlError> {
        for b in self.user_first..self.s.geo().total_blocks() {
            if b == self.u || self.s.state[b as usize] == crate::substrate::BState::Bad {
                continue;
            }
            let info = self.s.read_header(now, b, Cause::Mount)?;
            if !info.programmed || info.status != BlockStatus::Good {
                continue;
            }
            let e = fix.get(&b).copied().unwrap_or(bit[b as usize]);
            if e.state == bst::FREE {
                return Err(STALE);
            }
            let wp = self
                .s
                .write_pointer(now, b, &info, self.ppb, |i| i, Cause::Mount)?;
            let p = b * self.ppb + wp.max(1) - 1;
            let (rec, _) = self.page_record(now, p, Cause::Mount)?;
            if rec.is_some_and(|r| r.seq > gxt_seq) {
                return Err(STALE);
            }
        }
        Ok(())
    }

    /// SPFTL_log: the whole GXT `base` (sequence number `seq`) with the newest readable GXT
    /// log extending it applied (each GXT-log block's slots read whole, charged, newest
    /// first, down to the first log that extends the base or predates it); and the
    /// sequence number of what it used. A GXT log that does not decode sets `damaged`.
    pub(crate) fn apply_gxt_log(
        &mut self,
        now: Nanos,
        seq: u64,
        base: Gxt,
        (holds, slot_end): (&[bool], &[u32]),
        max_seq: &mut u64,
        damaged: &mut bool,
    ) -> Result<(Gxt, u64), FtlError> {
        let p = self.parts[PartKind::GxtLog as usize].clone();
        let slots = self.slots();
        let mut cells = base.cells(&self.cfg);
        let crc = self.s.controller().crc32c_fn();
        let mut best: Option<(u64, Vec<(usize, u32)>)> = None;
        let mut buf = vec![0u8; self.log_unit];
        for b in p.first..p.first + p.len {
            if p.bad[(b - p.first) as usize] || !holds[b as usize] {
                continue;
            }
            // Newest first: a block's logs are in ascending order, so the first one that
            // extends the base is the block's newest, and one older than the base ends it.
            for slot in (0..slot_end[b as usize]).rev() {
                let mut failed = false;
                let r = self.read_unit(
                    now,
                    b * slots + slot,
                    &mut buf,
                    Cause::Mount,
                    Some(&mut failed),
                )?;
                *damaged |= failed;
                let Some(r) = r.filter(|r| r.kind == PageKind::Meta(GXT_LOG_TAG)) else {
                    continue;
                };
                *max_seq = (*max_seq).max(r.seq);
                if r.seq <= seq || best.as_ref().is_some_and(|x| x.0 >= r.seq) {
                    break;
                }
                if let Some(v) = super::gxt::other_version(&buf) {
                    return Err(FtlError::UnknownFormat {
                        what: "GXT log",
                        version: v as u32,
                        newest: super::gxt::GXT_VERSION as u32,
                    });
                }
                match super::gxt::decode_log(&buf, cells.len(), crc) {
                    Some((s, e)) if s == seq => {
                        best = Some((r.seq, e));
                        break;
                    }
                    Some(_) => {}
                    None => *damaged = true,
                }
            }
        }
        let Some((used, entries)) = best else {
            return Ok((base, seq));
        };
        for (i, v) in entries {
            cells[i] = v;
        }
        let g = Gxt::from_cells(&cells, &self.shape(), &self.cfg).ok_or(FtlError::Corrupt(
            "a GXT log names values outside their fields",
        ))?;
        Ok((g, used))
    }
}

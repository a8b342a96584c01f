//! Format, mount (its recovery is `recover`'s: the newest GXT and the blocks written
//! after it), the simulator's shadows and the invariants (`check`).

use super::meta::{encode_bit, INDEX_BITS};
use super::{bst, BitEntry, DftlConfig, DftlFtl, MetaMode, PartKind, NONE, PMT_ENTRY};
use crate::{Cause, FtlError, MountFailure};
use alloc::boxed::Box;
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use controller::Controller;
use nand::{ErrorModel, Nanos, Storage};

impl<S: Storage, M: ErrorModel> DftlFtl<S, M> {
    /// Formats the chip: every good block erased, the metadata blocks switched to SLC mode,
    /// every BIT unit and the first GXT written.
    pub fn format(
        ctl: Controller<S, M>,
        mode: MetaMode,
        cfg: DftlConfig,
        now: Nanos,
    ) -> Result<Self, FtlError> {
        let mut ftl = Self::empty(ctl, mode, cfg).map_err(|f| f.error)?;
        let mut bit = Vec::with_capacity(ftl.s.geo().total_blocks() as usize);
        for b in 0..ftl.s.geo().total_blocks() {
            let e = ftl.format_block(now, b)?;
            bit.push(e);
        }
        for k in [
            PartKind::Pmt,
            PartKind::Bit,
            PartKind::PmtLog,
            PartKind::BitLog,
        ] {
            if ftl.parts[k as usize].len > 0 && ftl.parts[k as usize].free.len() < 2 {
                return Err(FtlError::Config(format!(
                    "the {:?} partition has fewer than two good blocks",
                    k
                )));
            }
        }
        ftl.take_free_user_blocks(&mut bit)?;
        ftl.flash_bit.clone_from(&bit);
        ftl.write_every_bit_unit(now, &bit)?;
        ftl.write_gxt(now)?;
        for b in 0..ftl.user_first {
            ftl.s.keep_whole(b);
        }
        crate::debug_verify("format", || ftl.verify());
        Ok(ftl)
    }

    /// Format, block `b`: erased if it holds anything, its mode set (SLC for metadata on a
    /// multi-level chip), into its metadata partition's free list; returns its BIT entry.
    fn format_block(&mut self, now: Nanos, b: u32) -> Result<BitEntry, FtlError> {
        let meta = b < self.user_first;
        let info = self.s.format_block(now, b)?;
        let good = info.is_some();
        self.s.adopt_state(b, crate::substrate::BState::Region);
        let entry = BitEntry {
            valid: 0,
            state: if !good {
                bst::BAD
            } else if meta {
                bst::META
            } else {
                bst::FREE
            },
            erase: self.s.erase[b as usize],
        };
        if !good {
            if meta {
                self.mark_meta_bad(b);
            } else {
                self.s.adopt_state(b, crate::substrate::BState::Bad);
            }
            return Ok(entry);
        }
        let multi = self.s.controller().chip().config().cell != nand::CellType::Slc;
        if meta && multi {
            self.s.set_slc_mode(b, true)?;
        } else if !meta && info.is_some_and(|i| i.slc_mode) {
            self.s.set_slc_mode(b, false)?;
        }
        if let Some(k) = self.part_of(b) {
            if k != PartKind::Gxt && k != PartKind::GxtLog {
                self.parts[k as usize].free.push_back(b);
            }
        }
        Ok(entry)
    }

    /// Format: the free user blocks, least worn first; the first becomes the update block,
    /// the next ones the free queue. `Config` if too few are good for the volume.
    fn take_free_user_blocks(&mut self, bit: &mut [BitEntry]) -> Result<(), FtlError> {
        let n = self.s.geo().total_blocks();
        let mut free: Vec<(u32, u32)> = (self.user_first..n)
            .filter(|&b| bit[b as usize].state == bst::FREE)
            .map(|b| (bit[b as usize].erase, b))
            .collect();
        free.sort_unstable();
        let need = self.lpns / self.ppb + self.cfg.gc_threshold + 2;
        if (free.len() as u32) < need {
            return Err(FtlError::Config(format!(
                "{} good user blocks, the volume needs {need} (too many bad blocks for overprovision = {})",
                free.len(),
                self.cfg.overprovision
            )));
        }
        let u = free[0].1;
        bit[u as usize].state = bst::USED;
        self.u = u;
        self.u_wp = 0;
        self.free_total = free.len() as u32 - 1;
        self.free_q = free
            .iter()
            .skip(1)
            .take(self.cfg.free_queue as usize)
            .map(|&(_, b)| b)
            .collect();
        Ok(())
    }

    /// Format: every BIT unit, from `bit`.
    fn write_every_bit_unit(&mut self, now: Nanos, bit: &[BitEntry]) -> Result<(), FtlError> {
        let n = self.s.geo().total_blocks();
        let per = self.bit_per_unit;
        for j in 0..self.bit_units {
            let mut buf = vec![0u8; self.unit];
            for k in 0..per {
                let b = j * per + k;
                if b < n {
                    encode_bit(&mut buf, k as usize, bit[b as usize]);
                }
            }
            let stamp = self.s.seq;
            let a = self.write_unit(now, PartKind::Bit, j, stamp, &buf)?;
            self.bid[j as usize] = a;
        }
        Ok(())
    }

    /// Mounts a volume (after a clean shutdown or a power cut).
    pub fn mount(
        ctl: Controller<S, M>,
        mode: MetaMode,
        cfg: DftlConfig,
        now: Nanos,
    ) -> Result<Self, FtlError> {
        Self::try_mount(ctl, mode, cfg, now).map_err(|f| f.error)
    }

    /// Like [`mount`](DftlFtl::mount), handing the controller back on failure.
    pub fn try_mount(
        ctl: Controller<S, M>,
        mode: MetaMode,
        cfg: DftlConfig,
        now: Nanos,
    ) -> Result<Self, Box<MountFailure<S, M>>> {
        let mut ftl = Self::empty(ctl, mode, cfg)?;
        let recovered = ftl.recover(now);
        // No debug-build verify here: DFTL's mount refuses a BIT entry no write could have
        // made, but trusts a decodable GXT or update-block record, so a damaged image (the
        // mount fuzzer's) can mount with tables that fail it.
        ftl.mounted(recovered, false)
    }

    /// Rebuilds `flash_pmt`, `flash_bit` and `truth` from the units the directories name
    /// (raw storage reads: simulator bookkeeping, not charged) and the caches.
    pub(super) fn rebuild_shadows(&mut self) -> Result<(), FtlError> {
        let mut bad_entries = false;
        let per = self.pmt_per_unit;
        let mut buf = vec![0u8; self.unit];
        for i in 0..self.pmt_units {
            let a = self.pmd[i as usize];
            let lo = i * per;
            let hi = (lo + per).min(self.lpns);
            if a == NONE || !self.peek_unit(a, &mut buf) {
                for l in lo..hi {
                    self.flash_pmt[l as usize] = NONE;
                }
                continue;
            }
            for l in lo..hi {
                let o = (l - lo) as usize * PMT_ENTRY;
                self.flash_pmt[l as usize] =
                    u32::from_le_bytes(buf[o..o + 4].try_into().expect("4"));
            }
        }
        // SPFTL_log: the logs on top.
        let mut lbuf = vec![0u8; self.log_unit];
        for i in 0..self.plid.len() as u32 {
            let a = self.plid[i as usize];
            if a == NONE || !self.peek_unit(a, &mut lbuf) {
                continue;
            }
            match self.decode_log(PartKind::Pmt, i, &lbuf) {
                Some(e) => {
                    for (l, v) in e {
                        self.flash_pmt[l as usize] = v as u32;
                    }
                }
                None => bad_entries = true,
            }
        }
        let pages = self.s.geo().total_blocks() * self.ppb;
        if self
            .flash_pmt
            .iter()
            .any(|&v| v != NONE && (v >= pages || v / self.ppb < self.user_first))
        {
            bad_entries = true;
        }
        self.truth.clone_from(&self.flash_pmt);
        for (k, v, _) in self.cpmt.entries() {
            self.truth[k as usize] = v;
        }
        if bad_entries {
            return Err(FtlError::Corrupt(
                "a PMT unit maps a page outside the user partition",
            ));
        }
        Ok(())
    }

    /// The bytes of unit `a` straight from storage (no charge, no error draw): only for
    /// the simulator's record of the flash units (`verify`, `mapping`), never a decision.
    fn peek_unit(&mut self, a: u32, buf: &mut [u8]) -> bool {
        let (b, slot) = self.unit_at(a);
        let g = self.s.geo();
        let addr = self
            .s
            .block_addr(b)
            .page(self.lsb[slot as usize])
            .expect("slot");
        let mut page = vec![0u8; (g.page_size + g.spare_size) as usize];
        if !self.s.inspect_stored(addr, &mut page) {
            return false;
        }
        let len = self.unit_len(b);
        let off = if self.is_sub(b) {
            self.sp_part[b as usize] as usize * len
        } else {
            0
        };
        buf[..len].copy_from_slice(&page[off..off + len]);
        true
    }

    /// The GXT's shape on this chip.
    pub(crate) fn shape(&self) -> super::gxt::Shape {
        super::gxt::Shape {
            nblocks: self.s.geo().total_blocks(),
            meta_blocks: self.user_first,
            pmt_units: self.pmt_units,
            bit_units: self.bit_units,
            log: self.mode == MetaMode::Log,
        }
    }

    /// The stamp of the unit or log at `a` (a charged record read); unreadable: `Corrupt`.
    pub(super) fn stamp_at(&mut self, now: Nanos, a: u32) -> Result<u64, FtlError> {
        let mut failed = false;
        match self.unit_record(now, a, Cause::Mount, &mut failed)? {
            Some(x) => Ok(x.lpn >> INDEX_BITS),
            None => Err(FtlError::Corrupt(
                "a PMT unit or log its directory names is unreadable",
            )),
        }
    }
}

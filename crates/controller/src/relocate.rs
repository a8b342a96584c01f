//! Moving a page (GC, wear levelling, refresh): the relocation read that keeps the
//! corrected data and parity in the controller (a pristine page's data stay in the chip's
//! page register), and the program of the copy — data and parity moved as they are
//! (copy-back while the register still holds them), or re-encoded at another strength.

use crate::read::Data;
use crate::{Controller, CtlError, OobRecord, PageRead, PayloadMode};
use alloc::vec;
use nand::rber::ErrorModel;
use nand::{Nanos, OpTiming, PhysAddr, Storage};

impl<S: Storage, M: ErrorModel> Controller<S, M> {
    /// Reads a page to move it elsewhere: like [`read`](Controller::read), but the corrected
    /// data and parity stay in the controller for
    /// [`program_relocated`](Controller::program_relocated), which writes them to a new page
    /// without re-encoding.
    ///
    /// In bytes mode the chip reads the page into its register and the controller takes
    /// the spare area first; the data are clocked out only when the error draw flipped a
    /// bit or a fault touched the page. A pristine page's data are, by then, exactly what
    /// it holds, so they are programmed as a copy of it ([`nand::Chip::program_copy`]) without
    /// passing through the controller's memory. Timing, error draws and statistics are
    /// those of a full read.
    pub fn read_for_relocation(
        &mut self,
        now: Nanos,
        addr: PhysAddr,
    ) -> Result<PageRead, CtlError> {
        self.reloc = None;
        self.reloc_from = None;
        let mut data = core::mem::take(&mut self.reloc_data);
        let mut spare = core::mem::take(&mut self.reloc_spare);
        let mut state = match self.cfg.mode {
            PayloadMode::Digest => Data::Digest,
            PayloadMode::Bytes => Data::InRegister,
        };
        let r = if state == Data::Digest {
            self.read_into(now, addr, &mut data, &mut spare)
        } else {
            match self.chip.read_spare_with_state(now, addr, &mut spare) {
                Err(e) => Err(e.into()),
                Ok((mut timing, st)) => {
                    timing.transfer = self.full_transfer();
                    self.finish_read(now, addr, st, &mut data, &mut spare, timing, &mut state)
                }
            }
        };
        self.reloc_data = data;
        self.reloc_spare = spare;
        let read = r?;
        if let PageRead::Data(info) = read {
            self.reloc = Some(info.record);
            if state == Data::InRegister {
                self.reloc_from = Some(addr);
            }
        }
        Ok(read)
    }

    /// Programs the page last read by [`read_for_relocation`](Controller::read_for_relocation)
    /// at `addr` with a new record (logical page, sequence number, kind); data, parity,
    /// strength and data CRC are kept. May be retried at another address after a program
    /// failure.
    pub fn program_relocated(
        &mut self,
        now: Nanos,
        addr: PhysAddr,
        mut record: OobRecord,
    ) -> Result<OpTiming, CtlError> {
        let src = self
            .reloc
            .expect("program_relocated follows a successful read_for_relocation");
        let layout = self.layout(src.t as u32)?;
        self.last_program = Some((addr, record.kind));
        record.t = src.t;
        record.crc = src.crc;
        let mut spare = core::mem::take(&mut self.reloc_spare);
        let r = self
            .put_record(&mut spare, &layout, &record, now)
            .and_then(|()| {
                Ok(match (self.cfg.mode, self.reloc_from) {
                    (PayloadMode::Digest, _) => {
                        self.chip.program(now, addr, &self.zeros, &spare)?
                    }
                    (PayloadMode::Bytes, Some(from)) if self.chip.register_holds(from) => {
                        self.chip.program_copy(now, addr, from, &spare)?
                    }
                    (PayloadMode::Bytes, Some(_)) => {
                        // A program in between (one that failed: this is a retry) emptied
                        // the page register: read the pristine source again, then program
                        // its bytes; both operations are charged to this one.
                        let r = self.fetch_relocated(now)?;
                        let p = self.chip.program(now, addr, &self.reloc_data, &spare)?;
                        OpTiming {
                            array: r.array + p.array,
                            transfer: r.transfer + p.transfer,
                        }
                    }
                    (PayloadMode::Bytes, None) => {
                        self.chip.program(now, addr, &self.reloc_data, &spare)?
                    }
                })
            });
        self.reloc_spare = spare;
        r
    }

    /// The strength of the page last read by
    /// [`read_for_relocation`](Controller::read_for_relocation), if that read decoded.
    pub fn relocation_t(&self) -> Option<u32> {
        self.reloc.map(|r| r.t as u32)
    }

    /// Like [`program_relocated`](Controller::program_relocated), but the data are
    /// re-encoded at strength `t` when it differs from the strength they were read with
    /// (FLARES: a page moved by GC or refresh takes its new p). Re-encoding needs the
    /// corrected data in the controller: a pristine page's data are clocked out of the
    /// chip's page register first (charged as the page's bus transfer), then encoded and
    /// programmed like a host page — no copy-back. At the same strength the stored parity
    /// is exactly what re-encoding would produce, so that case is `program_relocated`.
    pub fn program_relocated_as(
        &mut self,
        now: Nanos,
        addr: PhysAddr,
        record: OobRecord,
        t: u32,
    ) -> Result<OpTiming, CtlError> {
        let src = self
            .reloc
            .expect("program_relocated_as follows a successful read_for_relocation");
        if src.t as u32 == t {
            return self.program_relocated(now, addr, record);
        }
        // (Digest mode keeps no data: nothing to fetch, an empty payload.)
        let extra = self.fetch_relocated(now)?;
        let data = core::mem::take(&mut self.reloc_data);
        let bytes = self.cfg.mode == PayloadMode::Bytes;
        let r = self.program_inner(now, addr, &data, record, t, bytes);
        self.reloc_data = data;
        let p = r?;
        Ok(OpTiming {
            array: p.array + extra.array,
            transfer: p.transfer + extra.transfer,
        })
    }

    /// Brings the data of the page last read for relocation into the controller (bytes
    /// mode) if they stayed on the chip (a pristine read): clocked out of the page
    /// register (the bus time is returned), or, if an operation in between emptied it,
    /// sensed again (the read's time is returned).
    pub(crate) fn fetch_relocated(&mut self, now: Nanos) -> Result<OpTiming, CtlError> {
        let Some(from) = self.reloc_from.take() else {
            return Ok(OpTiming::default());
        };
        let g = *self.chip.geometry();
        self.reloc_data.resize(g.page_size as usize, 0);
        if self.chip.register_holds(from) {
            self.chip.data_out(from, &mut self.reloc_data)?;
            Ok(OpTiming {
                array: Nanos::ZERO,
                transfer: self.chip.config().timing.transfer(g.page_size as usize),
            })
        } else {
            let mut raw_spare = vec![0u8; g.spare_size as usize];
            Ok(self
                .chip
                .read(now, from, &mut self.reloc_data, &mut raw_spare)?)
        }
    }
}

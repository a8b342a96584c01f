//! The read path: a page read (data and record), a record-only read (recovery scans),
//! the error draw over the whole page, the decode of header, record, PPROF and sectors,
//! and the failure accounting.

use crate::draw::{draw_persistent, page_seed, Drawn, LastDecode};
use crate::inject::{flip, split_errors};
use crate::layout::{self, majority, Layout, HEADER_BYTES, RECORD_BYTES, RECORD_T};
use crate::{
    Controller, CtlError, OobRecord, PageKind, PageRead, PayloadMode, ReadInfo, MAX_SECTORS,
};
use nand::rber::{sample_bit_errors, sample_page_errors, ErrorModel};
use nand::{Nanos, OpTiming, PhysAddr, Storage};
use rand_core::RngCore;

impl<S: Storage, M: ErrorModel> Controller<S, M> {
    pub(crate) fn uncorrectable(&mut self, addr: PhysAddr, kind: Option<PageKind>) -> CtlError {
        match kind {
            Some(k) if k.is_meta() => self.stats.uncorrectable_critical += 1,
            _ => self.stats.uncorrectable_normal += 1,
        }
        CtlError::Uncorrectable {
            addr,
            kind,
            timing: OpTiming::default(),
            ecc: Nanos::ZERO,
        }
    }

    /// Reads a page: `data` receives the corrected data area (page size in bytes mode,
    /// empty in digest mode).
    pub fn read(
        &mut self,
        now: Nanos,
        addr: PhysAddr,
        data: &mut [u8],
    ) -> Result<PageRead, CtlError> {
        self.check_data_len(data.len())?;
        let mut spare = core::mem::take(&mut self.spare);
        let r = self.read_into(now, addr, data, &mut spare);
        self.spare = spare;
        r
    }

    /// Reads a metadata page written by [`program_meta`](Controller::program_meta): the whole
    /// data area (page size) with full decoding and CRC check, in digest mode too.
    pub fn read_meta(
        &mut self,
        now: Nanos,
        addr: PhysAddr,
        data: &mut [u8],
    ) -> Result<PageRead, CtlError> {
        self.check_page_len(data.len())?;
        let mut spare = core::mem::take(&mut self.spare);
        let r = match self.chip.read_with_state(now, addr, data, &mut spare) {
            Err(e) => Err(e.into()),
            Ok((timing, st)) => {
                self.finish_read(now, addr, st, data, &mut spare, timing, &mut Data::Read)
            }
        };
        self.spare = spare;
        r
    }

    /// Reads and decodes page `addr` into `data`/`spare`.
    pub(crate) fn read_into(
        &mut self,
        now: Nanos,
        addr: PhysAddr,
        data: &mut [u8],
        spare: &mut [u8],
    ) -> Result<PageRead, CtlError> {
        let digest = self.cfg.mode == PayloadMode::Digest;
        if digest {
            // Digest mode keeps no data bytes: read the spare area and charge the bus for
            // the whole page, exactly what a full page read costs.
            let r = self.chip.read_spare_with_state(now, addr, spare);
            return match r {
                Err(e) => Err(e.into()),
                Ok((mut timing, st)) => {
                    timing.transfer = self.full_transfer();
                    self.finish_read(now, addr, st, &mut [], spare, timing, &mut Data::Digest)
                }
            };
        }
        let r = self.chip.read_with_state(now, addr, data, spare);
        match r {
            Err(e) => Err(e.into()),
            Ok((timing, st)) => {
                self.finish_read(now, addr, st, data, spare, timing, &mut Data::Read)
            }
        }
    }

    /// Bus time of a whole page (data and spare).
    pub(crate) fn full_transfer(&self) -> Nanos {
        let g = self.chip.geometry();
        let full = g.page_size as usize + g.spare_size as usize;
        self.chip.config().timing.transfer(full)
    }

    /// Reads only the spare area and decodes the OOB record (a recovery scan). The data
    /// sectors are not checked.
    pub fn read_record(&mut self, now: Nanos, addr: PhysAddr) -> Result<PageRead, CtlError> {
        let mut spare = core::mem::take(&mut self.spare);
        let r = self.chip.read_spare(now, addr, &mut spare);
        let result = match r {
            Err(e) => Err(e.into()),
            Ok(timing) => {
                if spare.iter().all(|&b| b == 0xFF) {
                    Ok(PageRead::Erased { timing })
                } else {
                    let st = self.chip.page_state(addr)?;
                    let (age, damaged) = (st.age(now), self.suspect(st.damaged));
                    let mut counts = [0u64; 3];
                    let regions = self.meta_regions();
                    split_errors(&mut self.rng, &self.model, &age, &regions, &mut counts);
                    let failed = self.cfg.latency.decode(RECORD_BYTES, RECORD_T, RECORD_T);
                    let pprof_ns = self.pprof_decode_time(counts[2] as u32);
                    self.decode_header_and_record(addr, &mut spare, counts[0], counts[1], damaged)
                        .map_err(|e| e.timed(timing, failed))
                        .map(|(record, corrected, layout)| {
                            let pprof = self.decode_pprof(&mut spare, &layout, counts[2], damaged);
                            PageRead::Data(ReadInfo {
                                record,
                                corrected,
                                timing,
                                ecc: self.cfg.latency.decode(RECORD_BYTES, RECORD_T, corrected)
                                    + pprof_ns,
                                pprof,
                            })
                        })
                }
            }
        };
        self.spare = spare;
        result
    }

    /// Bits of the header, of the record codeword and of the PPROF codeword (0 without).
    pub(crate) fn meta_regions(&self) -> [u64; 3] {
        [
            (HEADER_BYTES * 8) as u64,
            (RECORD_BYTES * 8) as u64 + self.record_code.ecc_bits() as u64,
            self.pprof_code.as_ref().map_or(0, |c| {
                (layout::PPROF_DATA_BYTES * 8) as u64 + c.ecc_bits() as u64
            }),
        ]
    }

    /// Injects errors into, and decodes, the header and the record. Returns the record, the
    /// bits corrected and the layout.
    pub(crate) fn decode_header_and_record(
        &mut self,
        addr: PhysAddr,
        spare: &mut [u8],
        k_header: u64,
        k: u64,
        damaged: bool,
    ) -> Result<(OobRecord, u32, Layout), CtlError> {
        let pbits = self.record_code.ecc_bits() as usize;
        if k_header > 0 {
            flip(
                &mut self.rng,
                &mut spare[..HEADER_BYTES],
                HEADER_BYTES * 8,
                &mut [],
                0,
                k_header,
            );
        }
        let t = majority(spare[0], spare[1], spare[2]) as u32;
        let layout = match self.layout(t) {
            Ok(l) => l,
            Err(_) => return Err(self.uncorrectable(addr, None)),
        };
        let ro = layout.record_offset;
        let rp = layout.record_parity_offset;
        let rlen = self.record_code.ecc_bytes();
        let (rec_bytes, rest) = spare[ro..].split_at_mut(RECORD_BYTES);
        let parity = &mut rest[rp - ro - RECORD_BYTES..][..rlen];
        if k > 0 {
            flip(&mut self.rng, rec_bytes, RECORD_BYTES * 8, parity, pbits, k);
        }
        // A codeword that took no flips and sits on an undamaged page decodes to itself:
        // skip the decoder (its latency is still charged).
        let corrected = if k == 0 && !damaged {
            0
        } else {
            match self.record_code.decode(rec_bytes, parity) {
                Ok(n) => n,
                Err(_) => return Err(self.uncorrectable(addr, None)),
            }
        };
        let record = match OobRecord::decode(&(&*rec_bytes).try_into().expect("record size")) {
            Some(r) if r.t as u32 == t => r,
            _ => return Err(self.uncorrectable(addr, None)),
        };
        Ok((record, corrected, layout))
    }

    /// Clocks the data area out of the chip's page register into `data` if it is still
    /// there.
    pub(crate) fn fetch(
        &mut self,
        addr: PhysAddr,
        data: &mut [u8],
        state: &mut Data,
    ) -> Result<(), CtlError> {
        if *state == Data::InRegister {
            self.chip.data_out(addr, data)?;
            *state = Data::Read;
        }
        Ok(())
    }

    /// Whether a page must be decoded in full even without drawn errors: a fault touched it,
    /// or the storage can change on its own (`verify_stored`, bytes mode).
    #[inline]
    pub(crate) fn suspect(&self, damaged: bool) -> bool {
        damaged || (self.cfg.verify_stored && self.cfg.mode == PayloadMode::Bytes)
    }

    /// Decodes a page just read (`st`: its state after the read). A failure carries the
    /// read's chip time and the time a decode of the page's strength takes to fail (every
    /// sector at its limit).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn finish_read(
        &mut self,
        now: Nanos,
        addr: PhysAddr,
        st: nand::PageState,
        data: &mut [u8],
        spare: &mut [u8],
        timing: OpTiming,
        state: &mut Data,
    ) -> Result<PageRead, CtlError> {
        let stored_t = majority(spare[0], spare[1], spare[2]) as u32;
        match self.decode_page(now, addr, st, data, spare, timing, state) {
            Err(e @ CtlError::Uncorrectable { .. }) => {
                let mut failed = self.cfg.latency.decode(RECORD_BYTES, RECORD_T, RECORD_T);
                if let Ok(l) = self.layout(stored_t) {
                    let t = l.t;
                    failed += self.cfg.latency.decode_sectors(
                        l.sector_size,
                        l.sectors,
                        t,
                        t * l.sectors as u32,
                    );
                }
                Err(e.timed(timing, failed))
            }
            r => r,
        }
    }

    /// [`finish_read`](Self::finish_read) without the failure's timing.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn decode_page(
        &mut self,
        now: Nanos,
        addr: PhysAddr,
        st: nand::PageState,
        data: &mut [u8],
        spare: &mut [u8],
        timing: OpTiming,
        state: &mut Data,
    ) -> Result<PageRead, CtlError> {
        let digest = *state == Data::Digest;
        if spare.iter().all(|&b| b == 0xFF) {
            self.fetch(addr, data, state)?;
            if digest || data.iter().all(|&b| b == 0xFF) {
                return Ok(PageRead::Erased { timing });
            }
            return Err(self.uncorrectable(addr, None));
        }
        let (age, damaged) = (st.age(now), self.suspect(st.damaged));
        // One error draw for the whole page — header, record and every sector — sized by
        // the strength the page was written with (read from the stored header before any
        // flip; a header that names no valid layout is garbage).
        let stored_t = majority(spare[0], spare[1], spare[2]) as u32;
        let Ok(stored) = self.layout(stored_t) else {
            return Err(self.uncorrectable(addr, None));
        };
        let [h, r, q] = self.meta_regions();
        let c = stored.codeword_bits();
        let bits = h + r + q + c * stored.sectors as u64;
        // The draw covers the page's bits, or the count the error-draw options set (its
        // errors then spread over the real bits); part of it may persist in the cells.
        let drawn_over = self.draw.page_bits.unwrap_or(bits);
        let factor = if self.draw.scales() {
            self.draw
                .factor(self.cfg.seed, addr.block_addr().raw(), &age)
        } else {
            1.0
        };
        self.stats.page_decodes += 1;
        if self.track_risk {
            self.last_decode = Some(LastDecode {
                age,
                factor,
                codeword_bits: c as f64 * drawn_over as f64 / bits as f64,
                codewords: stored.sectors as u32,
                t: stored.t,
            });
        }
        let drawn = if self.draw.persistent > 0.0 {
            let seed = page_seed(self.cfg.seed, addr, &st);
            draw_persistent(
                &mut self.rng,
                &self.model,
                &age,
                drawn_over,
                self.draw.persistent,
                factor,
                seed,
            )
        } else if factor != 1.0 {
            Drawn {
                persistent: 0,
                fresh: sample_bit_errors(
                    &mut self.rng,
                    drawn_over,
                    (self.model.rber(&age) * factor).min(1.0),
                ),
                seed: 0,
            }
        } else {
            Drawn {
                persistent: 0,
                fresh: sample_page_errors(&mut self.rng, drawn_over, &self.model, &age),
                seed: 0,
            }
        };
        let total = drawn.total();
        if total == 0 && !damaged {
            // No bit flipped and no fault touched the page: it holds what was programmed.
            // Nothing to decode or check; the decoder's time for clean codewords is charged.
            let layout = stored;
            let ro = layout.record_offset;
            let rec: &[u8; RECORD_BYTES] = spare[ro..ro + RECORD_BYTES].try_into().expect("size");
            let record = match OobRecord::decode(rec) {
                Some(r) if r.t as u32 == stored_t => r,
                _ => return Err(self.uncorrectable(addr, None)),
            };
            let ecc = self.clean_ecc[layout.t as usize];
            let pprof = self.decode_pprof(spare, &layout, 0, false);
            self.stats.reads += 1;
            self.stats.decode_ns += ecc.0;
            return Ok(PageRead::Data(ReadInfo {
                record,
                corrected: 0,
                timing,
                ecc,
                pprof,
            }));
        }
        let mut per = [0u64; MAX_SECTORS];
        let (mut k_header, mut k_record, mut k_pprof) = (0, 0, 0);
        // Which region an error at page bit `x` lands in (its sector's index past the
        // metadata regions).
        let mut land = |x: u64| -> Option<usize> {
            if x < h {
                k_header += 1;
            } else if x < h + r {
                k_record += 1;
            } else if x < h + r + q {
                k_pprof += 1;
            } else {
                let s = ((x - h - r - q) / c) as usize;
                per[s] += 1;
                return Some(s);
            }
            None
        };
        // Of the sectors' errors, the persistent ones (placed by the page's own stream,
        // the same every read); empty when nothing persists.
        let mut kept_all;
        let kept: &[u64] = if drawn.persistent == 0 {
            for _ in 0..total {
                // Each error lands on a uniformly random bit of the page.
                land(((self.rng.next_u64() as u128 * bits as u128) >> 64) as u64);
            }
            &[]
        } else {
            kept_all = [0u64; MAX_SECTORS];
            let mut place = drawn.placement();
            for i in 0..total {
                let persists = i < drawn.persistent;
                let rng = if persists { &mut place } else { &mut self.rng };
                if let Some(s) = land(((rng.next_u64() as u128 * bits as u128) >> 64) as u64) {
                    kept_all[s] += persists as u64;
                }
            }
            &kept_all
        };
        let (record, mut corrected, layout) =
            self.decode_header_and_record(addr, spare, k_header, k_record, damaged)?;
        let pprof = self.decode_pprof(spare, &layout, k_pprof, damaged);
        // (The record names the same strength, or decoding failed above.)
        let kind = Some(record.kind);
        let t = layout.t;
        let mut ecc = self.cfg.latency.decode(RECORD_BYTES, RECORD_T, corrected)
            + self.pprof_decode_time(k_pprof as u32);
        let mut max_cw = corrected;
        self.stats.reads += 1;
        if digest {
            let n = layout.sectors;
            let total: u64 = per[..n].iter().sum();
            // Digest mode keeps no data bytes to check: a page a fault damaged (torn,
            // scrambled by a paired-page cut, partly erased) is taken as unreadable.
            if damaged || per[..n].iter().any(|&k| k > t as u64) {
                return Err(self.uncorrectable(addr, kind));
            }
            max_cw = max_cw.max(per[..n].iter().copied().max().unwrap_or(0) as u32);
            corrected += total as u32;
            ecc += self.cfg.latency.decode_sectors(
                layout.sector_size,
                layout.sectors,
                t,
                total as u32,
            );
        } else {
            self.fetch(addr, data, state)?;
            // (Borrowed, neither cloned nor moved out of the cache: the loop uses only
            // fields disjoint from it.)
            let code = self.codes[t as usize].as_ref().expect("built by layout");
            let mut failed = false;
            for s in 0..layout.sectors {
                let sector = &mut data[s * layout.sector_size..(s + 1) * layout.sector_size];
                let off = layout.parity_offset + s * layout.parity_bytes;
                let parity = &mut spare[off..off + layout.parity_bytes];
                let k = per[s];
                let n = if k == 0 && !damaged {
                    0
                } else {
                    let ks = kept.get(s).copied().unwrap_or(0);
                    if ks > 0 {
                        flip(
                            &mut drawn.sector_bits(s),
                            sector,
                            layout.sector_size * 8,
                            parity,
                            layout.parity_bits,
                            ks,
                        );
                    }
                    flip(
                        &mut self.rng,
                        sector,
                        layout.sector_size * 8,
                        parity,
                        layout.parity_bits,
                        k - ks,
                    );
                    match code.decode(sector, parity) {
                        Ok(n) => n,
                        Err(_) => {
                            failed = true;
                            break;
                        }
                    }
                };
                corrected += n;
                max_cw = max_cw.max(n);
                ecc += self.cfg.latency.decode(layout.sector_size, t, n);
            }
            if failed {
                return Err(self.uncorrectable(addr, kind));
            }
            // A page that took no flips and was never damaged holds what was programmed:
            // its CRC cannot fail, so it is checked only when something could have changed.
            let pristine = !damaged && per[..layout.sectors].iter().all(|&k| k == 0);
            if !pristine && (self.crc32c)(data) != record.crc {
                // More than t errors decoded to another codeword: caught here.
                self.stats.miscorrections_caught += 1;
                return Err(self.uncorrectable(addr, kind));
            }
        }
        self.stats.corrected_bits += corrected as u64;
        self.stats.max_codeword_errors = self.stats.max_codeword_errors.max(max_cw);
        self.stats.decode_ns += ecc.0;
        Ok(PageRead::Data(ReadInfo {
            record,
            corrected,
            timing,
            ecc,
            pprof,
        }))
    }
}

/// Where the data area of a page being decoded is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Data {
    /// Digest mode: there are no data bytes.
    Digest,
    /// Read into the caller's buffer.
    Read,
    /// Still in the chip's page register (only the spare area was transferred).
    InRegister,
}

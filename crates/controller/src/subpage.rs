//! The subpage path (SPFTL §III): a subpage is its own codeword set. Subpage `s` of a page
//! holds data bytes `[s·d, (s+1)·d)` of the data area and spare bytes `[s·r, (s+1)·r)` of
//! the spare area (`d`, `r`: the geometry's subpage and subpage-spare sizes), laid out like
//! a page of that size: `| t t t v | OOB record | record parity | parity(sector 0) | … |`.
//! A subpage program writes only its slices (the chip leaves the rest erased and enforces
//! the SP-block rules); a subpage read transfers only its slices, draws its bit errors over
//! header, record and its sectors at the page's age, flips real bits and decodes them.
//!
//! Metadata only: subpages always carry real bytes, in digest mode too (the FTL keeps its
//! SP blocks whole), and no PPROF codeword.

use crate::inject::{flip, split_errors};
use crate::layout::{Layout, HEADER_BYTES, RECORD_BYTES, RECORD_T};
use crate::{header, Controller, CtlError, OobRecord, PageRead, ReadInfo, MAX_SECTORS};
use nand::rber::ErrorModel;
use nand::{Geometry, Nanos, OpTiming, PhysAddr, Storage};

impl<S: Storage, M: ErrorModel> Controller<S, M> {
    /// The layout of one subpage at strength `t`: the subpage's data and spare slices laid
    /// out like a page of that size. Errors: the chip has no subpages, or `t`'s parity does
    /// not fit the subpage's spare slice.
    pub fn subpage_layout(&mut self, t: u32) -> Result<Layout, CtlError> {
        let g = *self.chip.geometry();
        if g.subpages_per_page < 2 {
            return Err(CtlError::NoSubpages);
        }
        if let Some(Some(l)) = self.sub_layouts.get(t as usize) {
            return Ok(*l);
        }
        self.code(t)?;
        let sg = Geometry {
            page_size: g.subpage_size() as u32,
            spare_size: g.subpage_spare_size() as u32,
            subpages_per_page: 1,
            ..g
        };
        let code = self.codes[t as usize].as_ref().expect("built above");
        let l = Layout::new(&sg, self.cfg.sector_size, code, &self.record_code, false)?;
        if self.sub_layouts.len() <= t as usize {
            self.sub_layouts.resize(t as usize + 1, None);
        }
        self.sub_layouts[t as usize] = Some(l);
        Ok(l)
    }

    /// Programs subpage `sub` of page `addr` with `data` (a subpage's bytes, always real)
    /// and `record` at strength `t` (the controller fills in `record.t` and `record.crc`).
    pub fn program_subpage(
        &mut self,
        now: Nanos,
        addr: PhysAddr,
        sub: u32,
        data: &[u8],
        mut record: OobRecord,
        t: u32,
    ) -> Result<OpTiming, CtlError> {
        let l = self.subpage_layout(t)?;
        let g = *self.chip.geometry();
        if data.len() != g.subpage_size() {
            return Err(CtlError::BufferSize {
                got: data.len(),
                expected: g.subpage_size(),
            });
        }
        self.last_program = Some((addr, record.kind));
        record.t = t as u8;
        record.crc = (self.crc32c)(data);
        let mut spare = alloc::vec![0xFFu8; g.subpage_spare_size()];
        spare[..HEADER_BYTES].copy_from_slice(&header(t));
        let rec = record.encode();
        spare[l.record_offset..l.record_offset + RECORD_BYTES].copy_from_slice(&rec);
        let rp = l.record_parity_offset;
        self.record_enc
            .encode(
                &rec,
                &mut spare[rp..rp + crate::layout::RECORD_PARITY_BYTES],
            )
            .map_err(CtlError::Ecc)?;
        let code = self.codes[t as usize]
            .as_ref()
            .expect("built by the layout");
        let parity = l.parity_offset..l.parity_offset + l.sectors * l.parity_bytes;
        code.encode_sectors(data, l.sector_size, &mut spare[parity])
            .map_err(CtlError::Ecc)?;
        Ok(self.chip.program_subpage(now, addr, sub, data, &spare)?)
    }

    /// Reads subpage `sub` of page `addr` into `data` (a subpage's bytes): one error draw
    /// over the subpage's header, record and sectors, real flips, decoding and the CRC
    /// check. An erased subpage is [`PageRead::Erased`]; anything that does not decode is
    /// `Uncorrectable`, never data.
    pub fn read_subpage(
        &mut self,
        now: Nanos,
        addr: PhysAddr,
        sub: u32,
        data: &mut [u8],
    ) -> Result<PageRead, CtlError> {
        let g = *self.chip.geometry();
        if g.subpages_per_page < 2 {
            return Err(CtlError::NoSubpages);
        }
        if data.len() != g.subpage_size() {
            return Err(CtlError::BufferSize {
                got: data.len(),
                expected: g.subpage_size(),
            });
        }
        let mut spare = alloc::vec![0u8; g.subpage_spare_size()];
        let timing = self.chip.read_subpage(now, addr, sub, data, &mut spare)?;
        if spare.iter().all(|&b| b == 0xFF) {
            if data.iter().all(|&b| b == 0xFF) {
                return Ok(PageRead::Erased { timing });
            }
            return Err(self.uncorrectable(addr, None).timed_sub(timing));
        }
        let st = self.chip.page_state(addr)?;
        let (age, damaged) = (st.age(now), self.suspect(st.damaged));
        let stored_t = crate::layout::majority(spare[0], spare[1], spare[2]) as u32;
        let Ok(l) = self.subpage_layout(stored_t) else {
            return Err(self.uncorrectable(addr, None).timed_sub(timing));
        };
        // Regions: header, record + its parity, then each sector codeword.
        let [h, r, _] = self.meta_regions();
        let mut regions = [0u64; MAX_SECTORS + 2];
        regions[0] = h;
        regions[1] = r;
        for s in 0..l.sectors {
            regions[2 + s] = l.codeword_bits();
        }
        let mut counts = [0u64; MAX_SECTORS + 2];
        let n = l.sectors + 2;
        split_errors(
            &mut self.rng,
            &self.model,
            &age,
            &regions[..n],
            &mut counts[..n],
        );
        let fail_t = self.cfg.latency.decode(RECORD_BYTES, RECORD_T, RECORD_T)
            + self.cfg.latency.decode_sectors(
                l.sector_size,
                l.sectors,
                l.t,
                l.t * l.sectors as u32,
            );
        let (record, mut corrected, _) = self
            .decode_header_and_record(addr, &mut spare, counts[0], counts[1], damaged)
            .map_err(|e| e.timed(timing, fail_t))?;
        let kind = Some(record.kind);
        let t = l.t;
        let mut ecc = self.cfg.latency.decode(RECORD_BYTES, RECORD_T, corrected);
        let code = self.codes[t as usize]
            .as_ref()
            .expect("built by the layout");
        let mut max_cw = corrected;
        for s in 0..l.sectors {
            let sector = &mut data[s * l.sector_size..(s + 1) * l.sector_size];
            let off = l.parity_offset + s * l.parity_bytes;
            let parity = &mut spare[off..off + l.parity_bytes];
            let k = counts[2 + s];
            let n = if k == 0 && !damaged {
                0
            } else {
                flip(
                    &mut self.rng,
                    sector,
                    l.sector_size * 8,
                    parity,
                    l.parity_bits,
                    k,
                );
                match code.decode(sector, parity) {
                    Ok(n) => n,
                    Err(_) => {
                        return Err(self.uncorrectable(addr, kind).timed(timing, fail_t));
                    }
                }
            };
            corrected += n;
            max_cw = max_cw.max(n);
            ecc += self.cfg.latency.decode(l.sector_size, t, n);
        }
        if (self.crc32c)(data) != record.crc {
            self.stats.miscorrections_caught += 1;
            return Err(self.uncorrectable(addr, kind).timed(timing, fail_t));
        }
        self.stats.reads += 1;
        self.stats.corrected_bits += corrected as u64;
        self.stats.max_codeword_errors = self.stats.max_codeword_errors.max(max_cw);
        self.stats.decode_ns += ecc.0;
        Ok(PageRead::Data(ReadInfo {
            record,
            corrected,
            timing,
            ecc,
            pprof: None,
        }))
    }
}

impl CtlError {
    /// An uncorrectable error with the read's chip time (nothing decoded).
    fn timed_sub(self, t: OpTiming) -> CtlError {
        self.timed(t, Nanos::ZERO)
    }
}

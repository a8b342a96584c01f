//! FLARES's page profile in the spare area (§4.2): the PPROF codeword — p_cur, p_next,
//! pecycles and the program time, BCH GF(2^7) t = 5 — written with every program once an
//! FTL enables it, and decoded with every read ([`PprofRecord`], its layout in `layout`).

use crate::inject::flip;
use crate::layout::{self, Layout, PprofRecord, HEADER_BYTES};
use crate::{Controller, CtlError};
use ecc::Bch;
use nand::rber::ErrorModel;
use nand::{Nanos, Storage};

impl<S: Storage, M: ErrorModel> Controller<S, M> {
    /// Pages carry FLARES's PPROF codeword from now on (the layouts are rebuilt with it).
    /// A volume's pages are all written one way: an FTL turns this on before it formats
    /// or mounts.
    pub fn enable_pprof(&mut self) -> Result<(), CtlError> {
        if self.pprof_code.is_none() {
            let code = Bch::new(layout::PPROF_M, layout::PPROF_T).map_err(CtlError::Ecc)?;
            debug_assert_eq!(code.ecc_bytes(), layout::PPROF_PARITY_BYTES);
            self.pprof_enc = Some(code.fixed_encoder().map_err(CtlError::Ecc)?);
            self.pprof_code = Some(code);
            self.layouts.clear();
            self.clean_ecc.clear();
        }
        Ok(())
    }

    /// Whether pages carry the PPROF codeword.
    pub fn pprof_enabled(&self) -> bool {
        self.pprof_code.is_some()
    }

    /// The P/E cycles the next program's PPROF records (the FTL's erase count of the
    /// block; the controller keeps no wear table of its own).
    pub fn set_next_pecycles(&mut self, pecycles: u32) {
        self.next_pecycles = pecycles;
    }

    /// Writes the PPROF codeword of a page programmed at `now` at layout `l` into `spare`
    /// (nothing if the layout has none): strength, the P/E cycles the FTL set, program time.
    pub(crate) fn put_pprof(
        &mut self,
        spare: &mut [u8],
        l: &Layout,
        now: Nanos,
    ) -> Result<(), CtlError> {
        let (Some(po), Some(enc)) = (l.pprof_offset, &self.pprof_enc) else {
            return Ok(());
        };
        spare[HEADER_BYTES - 1] = layout::LAYOUT_VERSION_PPROF;
        let key = (l.t, self.next_pecycles.min(0x3FFF), now.0 / 1_000_000_000);
        let code = &mut spare[po..po + layout::PPROF_BYTES];
        match &self.pprof_last {
            Some((last, c)) if *last == key => code.copy_from_slice(c),
            _ => {
                let p = PprofRecord {
                    p_cur: l.t as u8,
                    p_next: l.t as u8,
                    pecycles: key.1 as u16,
                    writestamp: (key.2.min(u32::MAX as u64 - 1) + 1) as u32,
                };
                let d = p.encode();
                let (data, parity) = code.split_at_mut(layout::PPROF_DATA_BYTES);
                data.copy_from_slice(&d);
                enc.encode(&d, parity).map_err(CtlError::Ecc)?;
                self.pprof_last = Some((key, (&*code).try_into().expect("codeword size")));
            }
        }
        Ok(())
    }

    /// Decoder time of the PPROF codeword holding `errors` errors (zero when pages carry
    /// none). Every path that decodes the codeword charges it: the clean shortcut, the
    /// decoding path, the spare-only read of a recovery scan and the worst-case bound.
    pub(crate) fn pprof_decode_time(&self, errors: u32) -> Nanos {
        if self.pprof_code.is_some() {
            self.cfg
                .latency
                .decode(layout::PPROF_DATA_BYTES, layout::PPROF_T, errors)
        } else {
            Nanos::ZERO
        }
    }

    /// Injects `k` errors into the PPROF codeword of a page at layout `l` and decodes it.
    /// `None` (counted in `pprof_failures` when the page has one): no codeword, or it did
    /// not decode, or it names another strength than the page's header.
    pub(crate) fn decode_pprof(
        &mut self,
        spare: &mut [u8],
        l: &Layout,
        k: u64,
        damaged: bool,
    ) -> Option<PprofRecord> {
        let po = l.pprof_offset?;
        // (A borrow, not a move out of the option: `Bch` is a few hundred bytes, and this
        // runs on every read.)
        let code = self.pprof_code.as_ref()?;
        let (d, p) = spare[po..po + layout::PPROF_BYTES].split_at_mut(layout::PPROF_DATA_BYTES);
        if k > 0 {
            flip(
                &mut self.rng,
                d,
                layout::PPROF_DATA_BYTES * 8,
                p,
                code.ecc_bits() as usize,
                k,
            );
        }
        let ok = !(k > 0 || damaged) || code.decode(d, p).is_ok();
        let rec = ok
            .then(|| PprofRecord::decode(&(&*d).try_into().expect("8 bytes")))
            .flatten()
            .filter(|r| r.p_cur as u32 == l.t);
        if rec.is_none() {
            self.stats.pprof_failures += 1;
        }
        rec
    }
}

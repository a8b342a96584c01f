//! # controller — the flash controller path
//!
//! Between an FTL and the chip: every page program encodes the data area sector by sector
//! with a BCH code of the requested strength and writes parity plus an OOB record
//! ([`OobRecord`]: logical page, sequence number, kind, strength, CRC32C) to the spare area
//! ([`layout`]); every read injects the raw bit errors an [`ErrorModel`] predicts for the
//! page's wear and age — real flips on real bits — decodes, verifies the CRC (so a
//! miscorrection beyond t is reported as uncorrectable, never returned as data), and
//! reports the corrected bits and the decode latency ([`EccLatency`]).
//!
//! Two payload modes: [`PayloadMode::Bytes`] runs all of the above on real bytes;
//! [`PayloadMode::Digest`] (for multi-GiB simulations, over a spare-only chip store) keeps
//! only the OOB record and samples each sector's error count from the same model,
//! comparing it with t instead of running the decoder.
//!
//! Deterministic: randomness comes from a ChaCha8 stream seeded by the config.
#![no_std]
#![warn(missing_docs)]

extern crate alloc;

mod draw;
mod inject;
pub mod layout;
mod pprof;
mod read;
mod relocate;
mod subpage;

pub use layout::{DataClass, Layout, MetaTag, OobRecord, PageKind, Temperature};

use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use ecc::{Bch, EccError, FixedEncoder};
pub use layout::PprofRecord;
use layout::{HEADER_BYTES, LAYOUT_VERSION, RECORD_BYTES, RECORD_M, RECORD_T};
use nand::rber::ErrorModel;

use nand::{BlockAddr, Chip, NandError, Nanos, OpTiming, PhysAddr, RamStorage, Storage};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Controller errors.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CtlError {
    /// The chip refused or failed the operation.
    #[error(transparent)]
    Nand(#[from] NandError),
    /// The ECC strength is invalid (t = 0, too large for the field).
    #[error("ECC strength: {0}")]
    Ecc(EccError),
    /// Sector size does not divide the page.
    #[error("sector size {sector} does not suit the {page}-byte page (it must divide the page into at most 64 sectors)")]
    SectorSize {
        /// The rejected sector size.
        sector: usize,
        /// Page size.
        page: usize,
    },
    /// The parity of strength t does not fit the spare area.
    #[error("t = {t} needs {needed} spare bytes; the page has {spare}")]
    ParityTooLarge {
        /// Requested strength.
        t: u32,
        /// Spare bytes the layout needs.
        needed: usize,
        /// Spare bytes available.
        spare: usize,
    },
    /// An invalid [`ErrorDraw`].
    #[error("error draw: {0}")]
    ErrorDraw(&'static str),
    /// A subpage operation on a chip without subpages (`geometry.subpages_per_page` = 1).
    #[error("the chip has no subpages (geometry.subpages_per_page = 1)")]
    NoSubpages,
    /// A data buffer of the wrong size for the payload mode.
    #[error("data buffer is {got} bytes, expected {expected}")]
    BufferSize {
        /// Given.
        got: usize,
        /// Required.
        expected: usize,
    },
    /// More errors than the code corrects (or a miscorrection caught by the CRC, or a
    /// header or record that does not decode: a torn or garbage page).
    #[error("uncorrectable page {addr}")]
    Uncorrectable {
        /// The page.
        addr: PhysAddr,
        /// Its kind, if the record still decoded.
        kind: Option<PageKind>,
        /// What the failed read took on the chip (it happened: an FTL charges it).
        timing: OpTiming,
        /// Decoder time spent finding out (a failed decode runs to the strength's limit).
        ecc: Nanos,
    },
}

impl CtlError {
    /// An uncorrectable error with the read's chip time and decoder time filled in.
    fn timed(self, t: OpTiming, e: Nanos) -> CtlError {
        match self {
            CtlError::Uncorrectable { addr, kind, .. } => CtlError::Uncorrectable {
                addr,
                kind,
                timing: t,
                ecc: e,
            },
            other => other,
        }
    }
}

/// Whether pages carry real bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PayloadMode {
    /// Real data, real flips, real decoding.
    Bytes,
    /// Only the OOB record is stored; error counts are sampled and compared with t.
    Digest,
}

/// ECC decode latency model, after FLARES §4.1 (a 4 KiB codeword decodes in 83.9 µs at
/// t = 1 and 194 µs at t = 50, worst case): a streaming part proportional to the codeword
/// length plus a part per unit of t, of which `error_weight` scales with the errors actually
/// found (errors = t is the worst case).
///
/// `error_weight` is 0 by default: every decode takes its strength's tabulated time, as in
/// FLARES's emulation, whose latencies are the only decoder data the papers give. A
/// decoder that stops early on a clean codeword (syndromes all zero) would take less; no
/// source we rely on gives that share, so it is an option, not the default. (It was 0.5
/// until the decoder became a resource, which halved the t-dependent part of a clean
/// decode with no source behind it.)
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EccLatency {
    /// Nanoseconds per KiB of codeword streamed through the decoder.
    pub stream_ns_per_kib: f64,
    /// Nanoseconds per unit of t in the worst case.
    pub per_t_ns: f64,
    /// Fraction of the per-t part that depends on the number of errors (0..=1).
    pub error_weight: f64,
}

impl Default for EccLatency {
    fn default() -> Self {
        // 83.9 µs = s·4 + p·1 and 194 µs = s·4 + p·50 for a 4 KiB codeword.
        let per_t = (194_000.0 - 83_900.0) / 49.0;
        EccLatency {
            stream_ns_per_kib: (83_900.0 - per_t) / 4.0,
            per_t_ns: per_t,
            error_weight: 0.0,
        }
    }
}

impl EccLatency {
    /// Decode time of one codeword of `bytes` data bytes at strength `t` with `errors`
    /// errors.
    pub fn decode(&self, bytes: usize, t: u32, errors: u32) -> Nanos {
        let e = errors.min(t) as f64;
        let t = t as f64;
        let w = self.error_weight;
        let ns = self.stream_ns_per_kib * bytes as f64 / 1024.0
            + self.per_t_ns * (t * (1.0 - w) + e * w);
        Nanos(ns as u64)
    }

    /// Decode time of `sectors` codewords of `bytes` data bytes at strength `t` holding
    /// `errors` errors in total, none over t (the error-dependent part is linear, so how the
    /// errors spread over the sectors does not matter).
    pub fn decode_sectors(&self, bytes: usize, sectors: usize, t: u32, errors: u32) -> Nanos {
        let clean = self.decode(bytes, t, 0).0 * sectors as u64;
        Nanos(clean + (self.per_t_ns * self.error_weight * errors as f64) as u64)
    }
}

/// Controller configuration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControllerConfig {
    /// Bytes per ECC sector (512, 1024, 2048 or 4096 typically).
    pub sector_size: usize,
    /// Payload mode.
    pub mode: PayloadMode,
    /// Decode latency model.
    pub latency: EccLatency,
    /// Seed of the error-injection stream.
    pub seed: u64,
    /// Decode every codeword and check every data CRC of every read, even when the error
    /// model drew no flip and no fault touched the page (bytes mode). For storage that can
    /// change behind the emulator's back — a chip image file on a real disk — whose stored
    /// parity and CRC are then what protects the data: flipped bits within `t` are
    /// corrected, beyond it the read fails, it never returns wrong data. Off (the
    /// simulator's own RAM, where the error model is the only source of errors), a pristine
    /// page skips the decoder and is charged the clean decode time.
    pub verify_stored: bool,
    /// BCH decode engines per channel: a read's decode occupies one from the end of its
    /// transfer, and reads on a channel queue for its engines (`sim::timeline`, and the
    /// FTL's recovery-time estimate). Default 1, as a controller with an engine per
    /// channel; 0 leaves decodes unconstrained (any number at once: the model before
    /// decoders were a resource).
    pub ecc_engines: u32,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            sector_size: 512,
            mode: PayloadMode::Bytes,
            latency: EccLatency::default(),
            seed: 0,
            verify_stored: false,
            ecc_engines: 1,
        }
    }
}

/// ECC statistics, split by critical (metadata) and normal pages where it matters (AP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EccStats {
    /// Page reads decoded (erased pages excluded).
    pub reads: u64,
    /// Page decodes attempted: every read of a programmed page that drew its errors,
    /// whether it decoded or not (see `Controller::last_read_risk`).
    pub page_decodes: u64,
    /// Bits corrected in total.
    pub corrected_bits: u64,
    /// Most errors seen in one codeword.
    pub max_codeword_errors: u32,
    /// Uncorrectable reads of metadata pages.
    pub uncorrectable_critical: u64,
    /// Uncorrectable reads of other (or unidentifiable) pages.
    pub uncorrectable_normal: u64,
    /// Total decode time.
    pub decode_ns: u64,
    /// Reads that BCH "corrected" to a wrong codeword (more than t errors) and the CRC
    /// caught; counted within the uncorrectable totals too.
    pub miscorrections_caught: u64,
    /// Reads whose PPROF codeword (FLARES) did not decode: the FTL falls back to its model.
    pub pprof_failures: u64,
}

/// A successful page read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageRead {
    /// The page is erased (never programmed since erase).
    Erased {
        /// Chip time of the read.
        timing: OpTiming,
    },
    /// The page decoded.
    Data(ReadInfo),
}

/// What a successful read of a programmed page returns besides the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadInfo {
    /// The page's OOB record.
    pub record: OobRecord,
    /// Bits corrected.
    pub corrected: u32,
    /// Chip time (array + transfer).
    pub timing: OpTiming,
    /// Decode time.
    pub ecc: Nanos,
    /// The page's PPROF codeword, when pages carry one and it decoded.
    pub pprof: Option<PprofRecord>,
}

impl ReadInfo {
    /// Chip plus decode time.
    pub fn total(&self) -> Nanos {
        self.timing.total() + self.ecc
    }
}

/// The controller over a chip and an error model (a clone: the same controller over a
/// copy of its chip).
#[derive(Clone)]
pub struct Controller<S: Storage = RamStorage, M: ErrorModel = nand::ConstantRber> {
    chip: Chip<S>,
    model: M,
    cfg: ControllerConfig,
    rng: ChaCha8Rng,
    /// Sector codes by strength, built on first use; shared (a code never changes once
    /// built), so a controller's clone and [`adopt_codes`](Self::adopt_codes) take them
    /// without copying their tables.
    codes: Vec<Option<Arc<Bch>>>,
    /// Layouts by strength, computed once.
    layouts: Vec<Option<Layout>>,
    /// Subpage layouts by strength (see `subpage`), computed once.
    sub_layouts: Vec<Option<Layout>>,
    /// Per strength: decode time of a page read with no bit errors.
    clean_ecc: Vec<Nanos>,
    record_code: Bch,
    /// Table-driven encoder of the record code (run on every program).
    record_enc: FixedEncoder<RECORD_BYTES>,
    stats: EccStats,
    spare: Vec<u8>,
    /// Zero data area handed to the chip in digest mode.
    zeros: Vec<u8>,
    /// Data and spare of the last page read for relocation (see
    /// [`read_for_relocation`](Controller::read_for_relocation)).
    reloc_data: Vec<u8>,
    reloc_spare: Vec<u8>,
    reloc: Option<OobRecord>,
    /// The page last read for relocation, when its data were never fetched (a pristine
    /// read): [`program_relocated`](Controller::program_relocated) programs a copy of it.
    reloc_from: Option<PhysAddr>,
    /// CRC32C of data areas (software by default; see [`Controller::set_crc32c`]).
    crc32c: fn(&[u8]) -> u32,
    /// The address and kind of the last page program issued (see
    /// [`Controller::last_program`]).
    last_program: Option<(PhysAddr, PageKind)>,
    /// The PPROF codeword's code, when pages carry one (see `enable_pprof`).
    pprof_code: Option<Bch>,
    /// Its table-driven encoder (run on every program).
    pprof_enc: Option<FixedEncoder<{ layout::PPROF_DATA_BYTES }>>,
    /// P/E cycles the next program's PPROF records.
    next_pecycles: u32,
    /// The last PPROF codeword encoded (data and parity) and what it was encoded from
    /// (strength, P/E cycles, program second): consecutive programs of a block at one
    /// strength within one second carry the same profile, so most programs reuse it.
    pprof_last: Option<((u32, u32, u64), [u8; layout::PPROF_BYTES])>,
    /// How page reads draw their errors (see [`ErrorDraw`]).
    draw: ErrorDraw,
    /// The last page decoded (see [`Controller::last_read_risk`]).
    last_decode: Option<draw::LastDecode>,
    /// Whether decodes are remembered for [`Controller::last_read_risk`].
    track_risk: bool,
}

pub use draw::{ErrorDraw, ReadRisk};
pub use layout::crc32c_software;

impl<S: Storage, M: ErrorModel> core::fmt::Debug for Controller<S, M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Controller")
            .field("chip", &self.chip)
            .field("cfg", &self.cfg)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// The header bytes: strength three times, then the layout version.
pub(crate) fn header(t: u32) -> [u8; HEADER_BYTES] {
    [t as u8, t as u8, t as u8, LAYOUT_VERSION]
}

impl<S: Storage, M: ErrorModel> Controller<S, M> {
    /// A controller over `chip` with error model `model`.
    pub fn new(chip: Chip<S>, model: M, cfg: ControllerConfig) -> Result<Self, CtlError> {
        let g = *chip.geometry();
        let page = g.page_size as usize;
        if cfg.sector_size == 0 || !page.is_multiple_of(cfg.sector_size) {
            return Err(CtlError::SectorSize {
                sector: cfg.sector_size,
                page,
            });
        }
        let record_code = Bch::new(RECORD_M, RECORD_T).map_err(CtlError::Ecc)?;
        debug_assert_eq!(record_code.ecc_bytes(), layout::RECORD_PARITY_BYTES);
        let record_enc = record_code
            .fixed_encoder::<RECORD_BYTES>()
            .map_err(CtlError::Ecc)?;
        let digest = cfg.mode == PayloadMode::Digest;
        Ok(Controller {
            spare: vec![0; g.spare_size as usize],
            zeros: if digest { vec![0; page] } else { Vec::new() },
            reloc_data: vec![0; if digest { 0 } else { page }],
            reloc_spare: vec![0; g.spare_size as usize],
            reloc: None,
            reloc_from: None,
            crc32c: crc32c_software,
            last_program: None,
            draw: ErrorDraw::default(),
            last_decode: None,
            track_risk: false,
            sub_layouts: Vec::new(),
            pprof_code: None,
            pprof_enc: None,
            next_pecycles: 0,
            pprof_last: None,
            chip,
            model,
            rng: ChaCha8Rng::seed_from_u64(cfg.seed),
            cfg,
            codes: Vec::new(),
            layouts: Vec::new(),
            clean_ecc: Vec::new(),
            record_code,
            record_enc,
            stats: EccStats::default(),
        })
    }

    /// Replaces the CRC32C implementation (a `std` host can supply a hardware-accelerated
    /// one; it must compute the same Castagnoli CRC).
    pub fn set_crc32c(&mut self, f: fn(&[u8]) -> u32) {
        self.crc32c = f;
    }

    /// The CRC32C implementation in use (for callers that protect their own structures).
    pub fn crc32c_fn(&self) -> fn(&[u8]) -> u32 {
        self.crc32c
    }

    /// Sets how page reads draw their errors (see [`ErrorDraw`]): the bits a page exposes
    /// and the share of errors that persist in its cells across reads.
    pub fn set_error_draw(&mut self, draw: ErrorDraw) -> Result<(), CtlError> {
        draw.validate().map_err(CtlError::ErrorDraw)?;
        self.draw = draw;
        Ok(())
    }

    /// Remember each page decode for [`last_read_risk`](Self::last_read_risk) (off by
    /// default: the simulator turns it on when it measures critical reads).
    pub fn track_read_risk(&mut self, on: bool) {
        self.track_risk = on;
        if !on {
            self.last_decode = None;
        }
    }

    /// The analytic failure probability of the last page this controller decoded, at its
    /// age and strength under the error model (and as an LSB and as an MSB page of the same
    /// age); `None` before the first decode or without
    /// [`track_read_risk`](Self::track_read_risk). A simulator's measurement, not
    /// firmware.
    pub fn last_read_risk(&self) -> Option<ReadRisk> {
        self.last_decode.map(|d| d.risk(&self.model))
    }

    /// The address and page kind of the last page program this controller issued (whether
    /// or not it completed): what a power cut that hit a program was writing.
    pub fn last_program(&self) -> Option<(PhysAddr, PageKind)> {
        self.last_program
    }

    /// The chip.
    pub fn chip(&self) -> &Chip<S> {
        &self.chip
    }

    /// The chip, for operations the controller does not mediate (erase, modes, faults).
    pub fn chip_mut(&mut self) -> &mut Chip<S> {
        &mut self.chip
    }

    /// The configuration.
    pub fn config(&self) -> &ControllerConfig {
        &self.cfg
    }

    /// ECC statistics so far.
    pub fn stats(&self) -> &EccStats {
        &self.stats
    }

    /// The error model.
    pub fn model(&self) -> &M {
        &self.model
    }

    /// The sector codes built so far, by strength (index t), and the sector size they are
    /// for — what [`adopt_codes`](Self::adopt_codes) takes.
    pub fn built_codes(&self) -> (usize, &[Option<Arc<Bch>>]) {
        (self.cfg.sector_size, &self.codes)
    }

    /// Adds the sector codes this controller built to `store` (indexed by strength) where it
    /// has none: what a later controller of the same sector size takes with
    /// [`adopt_codes`](Self::adopt_codes).
    pub fn share_codes(&self, store: &mut Vec<Option<Arc<Bch>>>) {
        if store.len() < self.codes.len() {
            store.resize_with(self.codes.len(), || None);
        }
        for (mine, built) in store.iter_mut().zip(&self.codes) {
            if mine.is_none() {
                mine.clone_from(built);
            }
        }
    }

    /// Takes sector codes another controller built (`built_codes`) where this one has none
    /// yet: a code is a pure function of the sector size and t, and building one takes
    /// milliseconds (a simulator formats a fitted device several times and mounts a copy to
    /// measure recovery). Codes for another sector size are ignored.
    pub fn adopt_codes(&mut self, sector_size: usize, codes: &[Option<Arc<Bch>>]) {
        if sector_size != self.cfg.sector_size {
            return;
        }
        if self.codes.len() < codes.len() {
            self.codes.resize_with(codes.len(), || None);
        }
        for (t, (mine, theirs)) in self.codes.iter_mut().zip(codes).enumerate() {
            if let (None, Some(c)) = (&mine, theirs) {
                debug_assert_eq!(c.t() as usize, t, "codes are indexed by strength");
                *mine = Some(Arc::clone(c));
            }
        }
    }

    fn code(&mut self, t: u32) -> Result<&Bch, CtlError> {
        if t == 0 {
            return Err(CtlError::Ecc(EccError::ZeroT));
        }
        let i = t as usize;
        if self.codes.len() <= i {
            self.codes.resize_with(i + 1, || None);
        }
        if self.codes[i].is_none() {
            // The sector codeword must also fit the field; pick the smallest that does.
            let code = Bch::for_sector(self.cfg.sector_size, t).map_err(CtlError::Ecc)?;
            self.codes[i] = Some(Arc::new(code));
        }
        Ok(self.codes[i].as_deref().expect("just built"))
    }

    /// The page layout at strength `t`, or why `t` does not fit.
    #[inline]
    pub fn layout(&mut self, t: u32) -> Result<Layout, CtlError> {
        if let Some(Some(l)) = self.layouts.get(t as usize) {
            return Ok(*l);
        }
        self.build_layout(t)
    }

    /// Builds (once) the code and layout of strength `t`.
    #[cold]
    fn build_layout(&mut self, t: u32) -> Result<Layout, CtlError> {
        self.code(t)?;
        let code = self.codes[t as usize].as_ref().expect("built above");
        let l = Layout::new(
            self.chip.geometry(),
            self.cfg.sector_size,
            code,
            &self.record_code,
            self.pprof_code.is_some(),
        )?;
        if self.layouts.len() <= t as usize {
            self.layouts.resize(t as usize + 1, None);
        }
        self.layouts[t as usize] = Some(l);
        if self.clean_ecc.len() <= t as usize {
            self.clean_ecc.resize(t as usize + 1, Nanos::ZERO);
        }
        // Decode time of a page read without errors: the record and every sector clean.
        let pprof = self.pprof_decode_time(0);
        let lat = &self.cfg.latency;
        self.clean_ecc[t as usize] = lat.decode(RECORD_BYTES, RECORD_T, 0)
            + pprof
            + lat.decode_sectors(l.sector_size, l.sectors, t, 0);
        Ok(l)
    }

    /// The longest a page read at strength `t` can spend in the decoder: the record, the
    /// PPROF codeword if enabled and every sector, each at its strength's limit (what a
    /// latency bound adds to a read's array and bus time). Errors as
    /// [`layout`](Controller::layout) does.
    pub fn worst_decode(&mut self, t: u32) -> Result<Nanos, CtlError> {
        let l = self.layout(t)?;
        let pprof = self.pprof_decode_time(layout::PPROF_T);
        let lat = &self.cfg.latency;
        Ok(lat.decode(RECORD_BYTES, RECORD_T, RECORD_T)
            + pprof
            + lat.decode_sectors(l.sector_size, l.sectors, l.t, l.t * l.sectors as u32))
    }

    /// The strongest t whose parity fits the spare area.
    pub fn max_t(&mut self) -> u32 {
        self.strongest_fitting(255).unwrap_or(0)
    }

    /// The strongest t up to `limit` whose layout fits the spare area (`None`: not even
    /// t = 1). A layout that fits at t fits at every smaller t (parity grows with t), so
    /// this bisects: about log2(limit) codes built, not one per strength (each BCH code's
    /// tables take milliseconds to build, and a fitted device is formatted several times).
    pub fn strongest_fitting(&mut self, limit: u32) -> Option<u32> {
        if limit == 0 || self.layout(1).is_err() {
            return None;
        }
        if self.layout(limit).is_ok() {
            return Some(limit);
        }
        // Invariant: layout(lo) fits, layout(hi) does not.
        let (mut lo, mut hi) = (1, limit);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.layout(mid).is_ok() {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some(lo)
    }

    /// Writes header, record and record parity of `record` at layout `l` into `spare`, and
    /// the PPROF codeword if the layout has one (program time `now`).
    fn put_record(
        &mut self,
        spare: &mut [u8],
        l: &Layout,
        record: &OobRecord,
        now: Nanos,
    ) -> Result<(), CtlError> {
        spare[..HEADER_BYTES].copy_from_slice(&header(l.t));
        self.put_pprof(spare, l, now)?;
        let rec = record.encode();
        spare[l.record_offset..l.record_offset + RECORD_BYTES].copy_from_slice(&rec);
        let rp = l.record_parity_offset;
        self.record_enc
            .encode(&rec, &mut spare[rp..rp + layout::RECORD_PARITY_BYTES])
            .map_err(CtlError::Ecc)
    }

    /// A whole data area, whatever the payload mode (metadata pages).
    fn check_page_len(&self, len: usize) -> Result<(), CtlError> {
        let expected = self.chip.geometry().page_size as usize;
        if len == expected {
            Ok(())
        } else {
            Err(CtlError::BufferSize { got: len, expected })
        }
    }

    fn check_data_len(&self, len: usize) -> Result<(), CtlError> {
        let expected = match self.cfg.mode {
            PayloadMode::Bytes => self.chip.geometry().page_size as usize,
            PayloadMode::Digest => 0,
        };
        if len == expected {
            Ok(())
        } else {
            Err(CtlError::BufferSize { got: len, expected })
        }
    }

    /// Programs `data` (the page's data area; empty in digest mode) with `record` at ECC
    /// strength `t`. The controller fills in `record.t` and `record.crc`.
    pub fn program(
        &mut self,
        now: Nanos,
        addr: PhysAddr,
        data: &[u8],
        record: OobRecord,
        t: u32,
    ) -> Result<OpTiming, CtlError> {
        self.check_data_len(data.len())?;
        self.program_inner(
            now,
            addr,
            data,
            record,
            t,
            self.cfg.mode == PayloadMode::Bytes,
        )
    }

    /// Programs a metadata page (a checkpoint): always a whole data area with real bytes
    /// and full ECC, in digest mode too (the storage must keep that block whole).
    pub fn program_meta(
        &mut self,
        now: Nanos,
        addr: PhysAddr,
        data: &[u8],
        record: OobRecord,
        t: u32,
    ) -> Result<OpTiming, CtlError> {
        self.check_page_len(data.len())?;
        self.program_inner(now, addr, data, record, t, true)
    }

    fn program_inner(
        &mut self,
        now: Nanos,
        addr: PhysAddr,
        data: &[u8],
        mut record: OobRecord,
        t: u32,
        bytes: bool,
    ) -> Result<OpTiming, CtlError> {
        let layout = self.layout(t)?;
        self.last_program = Some((addr, record.kind));
        record.t = t as u8;
        // (Digest mode passes no data: the CRC32C of nothing is 0.)
        record.crc = if data.is_empty() {
            0
        } else {
            (self.crc32c)(data)
        };
        let mut spare = core::mem::take(&mut self.spare);
        spare.fill(0xFF);
        let r = self
            .put_record(&mut spare, &layout, &record, now)
            .and_then(|()| {
                if bytes {
                    // Every sector's parity, in consecutive slots (see `Layout`).
                    let code = self.codes[t as usize].as_ref().expect("built by layout");
                    let parity = layout.parity_offset
                        ..layout.parity_offset + layout.sectors * layout.parity_bytes;
                    code.encode_sectors(data, layout.sector_size, &mut spare[parity])
                        .map_err(CtlError::Ecc)?;
                }
                let payload: &[u8] = if bytes { data } else { &self.zeros };
                Ok(self.chip.program(now, addr, payload, &spare)?)
            });
        self.spare = spare;
        r
    }

    /// The bytes stored in page `addr` (data area then spare area, `buf` a whole raw page)
    /// as the storage holds them: no chip operation, no error draw, nothing counted.
    /// Simulator introspection for invariant checks and bookkeeping beside an FTL — never
    /// for an FTL's decisions, which must read through the charged paths (a test in the
    /// `ftl` crate holds the FTL sources to that).
    pub fn inspect_stored(&mut self, addr: PhysAddr, buf: &mut [u8]) -> Result<(), CtlError> {
        let g = *self.chip.geometry();
        let pi = g
            .page_index(addr)
            .ok_or(CtlError::Nand(NandError::PageOutOfRange(addr)))?;
        self.chip
            .storage_mut()
            .read(pi, buf)
            .map_err(|e| CtlError::Nand(e.into()))
    }

    /// Erases a block (an FTL's admin operation: no data passes the controller).
    pub fn erase(&mut self, now: Nanos, block: BlockAddr) -> Result<OpTiming, NandError> {
        self.chip.erase(now, block)
    }

    /// Switches an erased, unprogrammed block of a multi-level chip in or out of SLC mode.
    pub fn set_slc_mode(&mut self, block: BlockAddr, slc: bool) -> Result<(), NandError> {
        self.chip.set_slc_mode(block, slc)
    }

    /// Tells the storage to keep (or stop keeping) flat block `block`'s whole pages in
    /// digest mode (an FTL's metadata region moving through the blocks; see
    /// [`Storage::keep_whole`]). Changes nothing on the chip.
    pub fn keep_whole(&mut self, block: u32, keep: bool) {
        self.chip.storage_mut().keep_whole(block, keep);
    }

    /// Reads a block's header (bad-block marker, erase counter, whether it holds data, SLC
    /// mode): one charged spare read ([`Chip::read_block_header`]).
    pub fn read_block_header(
        &mut self,
        now: Nanos,
        block: BlockAddr,
    ) -> Result<(nand::BlockInfo, OpTiming), NandError> {
        self.chip.read_block_header(now, block)
    }
}

/// Most sectors per page the controller handles (a 64 KiB page of 1 KiB sectors).
const MAX_SECTORS: usize = 64;

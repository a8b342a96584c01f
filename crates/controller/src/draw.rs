//! How a page read's bit errors are drawn, beyond the error model's rate: the bits a page
//! exposes (AP Table 1's counting), errors that persist in a page's cells across reads, and
//! the analytic failure probability of the last page decoded (what a measured failure count
//! is tested against).
//!
//! By default every read of a page draws its errors afresh over all the page's bits
//! (header, record, PPROF and every sector), independently of the page's earlier reads.
//! Two options change that, both modelling choices a reproduction states:
//!
//! - **`page_bits`**: the page's errors are drawn as if it held this many bits, then spread
//!   uniformly over its real bits. AP's Table 1 counts the 8192 + 448-byte page of the
//!   Micron 29F64G as one codeword of N = 8640 *bits* (the byte count used as a bit count);
//!   `page_bits = 8640` reproduces that counting on a page whose codeword really holds
//!   65,536 data bits (7.6× fewer errors per read).
//! - **`persistent`**: the share of the rate that lives in the page's cells (retention and
//!   program-disturb errors are properties of the cells; a read redraws only the rest, the
//!   read noise). A page's persistent error count is the Binomial quantile at a uniform
//!   fixed per programmed page (a hash of the controller's seed, the page's address, its
//!   block's P/E count and its program time), so every read of that program sees the same
//!   persistent errors, and they only grow as the page ages; their positions come from a
//!   stream seeded by the same hash, so they land in the same sectors and bits every read.
//!   The rest is drawn per read as before. A read-retry re-reads the same cells: it can
//!   rescue a page only through the read-noise part. (A persistent and a read-noise error
//!   on the same bit cancel; at these rates that is a negligible event.)
//!
//! - **`block_sigma`** and **`step_hours` / `step_factor`**: a chip that departs from the
//!   model an ECC-strength policy relies on in ways a single scale factor cannot express —
//!   blocks that differ (a log-normal factor per block, mean 1) and a retention step (the
//!   rate multiplied once a page's data pass an age). FLARES's measured-error path is
//!   tested against both (`reproduce flares`, part `flares-alg2`).
//!
//! Only page decodes ([`Controller::read`](crate::Controller::read), relocation reads)
//! apply the options; record-only recovery scans and subpage reads keep the default draw.

use nand::rber::{errors_at_quantile, sample_bit_errors, ErrorModel, PageAge};
use nand::{BitKind, PhysAddr};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// The error-draw options (see the module docs). The default is the fresh draw over the
/// page's real bits at the model's rate.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ErrorDraw {
    /// Draw a page's errors over this many bits instead of its real size (`None`: real).
    pub page_bits: Option<u64>,
    /// Share of the rate that persists in the page's cells across reads, in [0, 1].
    pub persistent: f64,
    /// Block-to-block variation of the rate: each block's rate is the model's times
    /// exp(σ·z − σ²/2), z a standard normal fixed per block (a hash of the controller's
    /// seed and the block's address), so the mean factor is 1 and σ the spread of its
    /// logarithm. 0: every block is the model.
    pub block_sigma: f64,
    /// A retention step: pages whose data are older than this many hours see the rate
    /// times [`step_factor`](Self::step_factor) (a chip whose charge loss accelerates past
    /// a point the model does not know). `None`: no step.
    pub step_hours: Option<f64>,
    /// The rate's factor past the retention step (above 0).
    pub step_factor: f64,
}

impl ErrorDraw {
    /// Whether the options are valid: `page_bits` above 0, `persistent` in [0, 1],
    /// `block_sigma` in [0, 3], a step at a finite non-negative age with a positive
    /// factor.
    pub fn validate(&self) -> Result<(), &'static str> {
        if self.page_bits == Some(0) {
            return Err("page_bits must be above 0");
        }
        if !(0.0..=1.0).contains(&self.persistent) {
            return Err("persistent must be in [0, 1]");
        }
        if !(0.0..=3.0).contains(&self.block_sigma) {
            return Err("block_sigma must be in [0, 3]");
        }
        if let Some(h) = self.step_hours {
            if !(h.is_finite() && h >= 0.0) {
                return Err("step_hours must be a finite number of hours, 0 or more");
            }
            if !(self.step_factor.is_finite() && self.step_factor > 0.0) {
                return Err("step_factor must be above 0 with a step");
            }
        }
        Ok(())
    }

    /// Whether the draw departs from the model's rate (block variation or a step).
    pub(crate) fn scales(&self) -> bool {
        self.block_sigma > 0.0 || self.step_hours.is_some()
    }

    /// The factor on the model's rate for a page of block `block` (its flat address bits)
    /// whose data are `age` old.
    pub(crate) fn factor(&self, seed: u64, block: u64, age: &PageAge) -> f64 {
        let mut f = 1.0;
        if self.block_sigma > 0.0 {
            let mut rng =
                ChaCha8Rng::seed_from_u64(seed ^ 0xB10C ^ block.wrapping_mul(0x9E37_79B9));
            let unit =
                |r: &mut ChaCha8Rng| ((r.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
            let (u1, u2) = (unit(&mut rng), unit(&mut rng));
            let z = libm::sqrt(-2.0 * libm::log(u1)) * libm::cos(2.0 * core::f64::consts::PI * u2);
            let s = self.block_sigma;
            f *= libm::exp(s * z - s * s / 2.0);
        }
        if let Some(h) = self.step_hours {
            if age.retention.0 as f64 >= h * 3.6e12 {
                f *= self.step_factor;
            }
        }
        f
    }
}

/// What the controller remembers of the last page it decoded, for
/// [`Controller::last_read_risk`](crate::Controller::last_read_risk).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LastDecode {
    pub age: PageAge,
    /// The rate's factor from the error-draw options (1: the model's rate).
    pub factor: f64,
    /// Bits each codeword's errors are drawn over (the codeword's share of the draw).
    pub codeword_bits: f64,
    pub codewords: u32,
    pub t: u32,
}

/// The analytic failure probability of the last page decoded, at its age, and what it
/// would have been in an LSB and in an MSB page of the same age (AP's σ bound).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadRisk {
    /// Whether the page is an LSB page (SLC pages are LSB pages).
    pub lsb: bool,
    /// P(some codeword of the page holds more than t errors), at the page's own bit kind.
    pub p: f64,
    /// The same for an LSB page of the same age.
    pub p_lsb: f64,
    /// The same for an MSB page of the same age (an LSB page's on SLC).
    pub p_msb: f64,
}

impl LastDecode {
    /// The read's failure probabilities under `model` (independent codewords, each
    /// Binomial over its share of the draw; the header and record, under their own much
    /// stronger codes, are left out).
    pub(crate) fn risk<M: ErrorModel + ?Sized>(&self, model: &M) -> ReadRisk {
        let at = |kind: BitKind| {
            let age = PageAge { kind, ..self.age };
            let cw = ecc::reliability::prob_more_than(
                libm::round(self.codeword_bits) as u64,
                (model.rber(&age) * self.factor).min(1.0),
                self.t as u64,
            );
            -libm::expm1(self.codewords as f64 * libm::log1p(-cw.min(1.0 - 1e-300)))
        };
        let (p_lsb, p_msb) = (at(BitKind::Lsb), at(BitKind::Msb));
        // The page's own kind is one of the two on MLC (and LSB on SLC): no third tail.
        let p = match self.age.kind {
            BitKind::Lsb => p_lsb,
            BitKind::Msb => p_msb,
            k => at(k),
        };
        ReadRisk {
            lsb: self.age.kind == BitKind::Lsb,
            p,
            p_lsb,
            p_msb,
        }
    }
}

/// The per-program seed of a page's persistent errors.
pub(crate) fn page_seed(seed: u64, addr: PhysAddr, st: &nand::PageState) -> u64 {
    let mut h = seed ^ 0x9E37_79B9_7F4A_7C15;
    for x in [
        addr.raw(),
        st.erase_count as u64,
        st.programmed_at.0,
        st.programs as u64,
    ] {
        h = (h ^ x).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        h ^= h >> 31;
    }
    h
}

/// A page's error draw split into its persistent part (a count, and the stream its
/// positions come from) and the read's own part.
pub(crate) struct Drawn {
    /// Errors that persist in the page's cells.
    pub persistent: u64,
    /// Errors this read adds.
    pub fresh: u64,
    /// The stream placing the persistent errors (and, per sector, their bits).
    pub seed: u64,
}

impl Drawn {
    pub fn total(&self) -> u64 {
        self.persistent + self.fresh
    }

    /// The stream placing the persistent errors over the page's regions.
    pub fn placement(&self) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(self.seed)
    }

    /// The stream placing sector `s`'s persistent errors on its bits.
    pub fn sector_bits(&self, s: usize) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(self.seed ^ (s as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03))
    }
}

/// Draws the persistent and fresh errors of a page of `bits` bits read at `age` (see the
/// module docs); only called when [`ErrorDraw::persistent`] is above 0.
pub(crate) fn draw_persistent<M: ErrorModel + ?Sized>(
    rng: &mut ChaCha8Rng,
    model: &M,
    age: &PageAge,
    bits: u64,
    f: f64,
    factor: f64,
    seed: u64,
) -> Drawn {
    let rate = (model.rber(age) * factor).min(1.0);
    let mut page = ChaCha8Rng::seed_from_u64(seed ^ 0x0050_4552_5349_5354);
    let u = (page.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
    Drawn {
        persistent: errors_at_quantile(u, bits, f * rate),
        fresh: sample_bit_errors(rng, bits, (1.0 - f) * rate),
        seed,
    }
}

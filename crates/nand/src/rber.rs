//! Raw bit error models: the RBER of a page from its wear, age, bit kind and read count.
//!
//! - [`FlaresRber`]: FLARES eq. (5) with the Table III fit:
//!   RBER(PE, t) = A·e^(B·PE) + C + Bo·(PE^n · t)^m, t in hours.
//! - [`KindRatio`]: scales another model per bit kind; AP's MSB pages have σ = 0.5 times the
//!   LSB error rate.
//! - [`ReadDisturb`]: adds a term linear in reads since program.
//! - [`ConstantRber`]: a fixed rate, for tests.
//!
//! [`sample_bit_errors`] draws how many of `bits` bits flip at a given RBER (exact binomial
//! by inversion, with a seeded RNG); [`flip_random_bits`] lands them on real bits of a buffer.

use crate::pairing::BitKind;
use crate::time::Nanos;
use alloc::vec::Vec;
use rand_core::RngCore;
use serde::{Deserialize, Serialize};

/// What an error model knows about a page when it is read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PageAge {
    /// P/E cycles of the page's block.
    pub pe_cycles: u32,
    /// Time since the page was programmed.
    pub retention: Nanos,
    /// Which bit of its cells the page stores.
    pub kind: BitKind,
    /// Reads since the page was programmed.
    pub reads: u32,
}

/// A raw bit error rate model.
pub trait ErrorModel {
    /// Probability that one bit of the page reads wrong.
    fn rber(&self, page: &PageAge) -> f64;

    /// Bounds `(lo, hi)` with `lo ≤ rber(page) ≤ hi` as computed, cheaper to evaluate than
    /// the rate itself. [`sample_page_errors`] decides most reads of a page with few
    /// expected errors from `hi` alone and calls [`rber`](ErrorModel::rber) only when it
    /// must. The default is the rate itself, twice.
    fn rber_bounds(&self, page: &PageAge) -> (f64, f64) {
        let r = self.rber(page);
        (r, r)
    }
}

impl<M: ErrorModel + ?Sized> ErrorModel for &M {
    fn rber(&self, page: &PageAge) -> f64 {
        (**self).rber(page)
    }
    fn rber_bounds(&self, page: &PageAge) -> (f64, f64) {
        (**self).rber_bounds(page)
    }
}

impl<M: ErrorModel + ?Sized> ErrorModel for alloc::boxed::Box<M> {
    fn rber(&self, page: &PageAge) -> f64 {
        (**self).rber(page)
    }
    fn rber_bounds(&self, page: &PageAge) -> (f64, f64) {
        (**self).rber_bounds(page)
    }
}

/// The same RBER for every page.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ConstantRber(pub f64);

impl ErrorModel for ConstantRber {
    fn rber(&self, _: &PageAge) -> f64 {
        self.0
    }
}

/// RBER growing exponentially with wear: `fresh · (rated_rber / fresh)^(pe / rated_pe)`,
/// no retention term. [`WearExp::AP_MICRON_29F64G`] is AP's chip: the RBER range of AP
/// Table 1 (2e-6 … 8e-5) spanning the rated life of 3000 P/E cycles (§3, Fig. 3). The paper
/// gives the range and the endpoint behaviour, not the curve; exponential growth in P/E
/// cycles is the usual shape of measured MLC wear (Mielke et al. 2008, AP's reference 37).
/// The model's values are for LSB pages; AP's MSB pages see σ times that ([`KindRatio`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WearExp {
    /// RBER of a fresh block (0 P/E cycles).
    pub fresh: f64,
    /// RBER at the rated endurance.
    pub rated_rber: f64,
    /// The rated endurance, P/E cycles.
    pub rated_pe: u32,
}

impl WearExp {
    /// AP's Micron 29F64G: 2e-6 fresh, 8e-5 at 3000 P/E (1000 P/E: 6.8e-6; 2000: 2.3e-5).
    /// A 3-bit ECC over one 8 KiB codeword then fails on about 77 % of LSB page reads at
    /// 3000 P/E and 27 % of MSB page reads (σ = 0.5).
    pub const AP_MICRON_29F64G: WearExp = WearExp {
        fresh: 2e-6,
        rated_rber: 8e-5,
        rated_pe: 3000,
    };
}

impl ErrorModel for WearExp {
    fn rber(&self, p: &PageAge) -> f64 {
        let x = p.pe_cycles as f64 / self.rated_pe.max(1) as f64;
        (self.fresh * libm::pow(self.rated_rber / self.fresh, x)).min(0.5)
    }
}

/// FLARES eq. (5). Parameters default to the paper's Table III fit (25 °C, MLC 3x nm).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlaresRber {
    /// A (write-error amplitude).
    pub a: f64,
    /// B (write-error growth per P/E cycle).
    pub b: f64,
    /// C (write-error offset).
    pub c: f64,
    /// Bo (retention amplitude).
    pub bo: f64,
    /// m (retention exponent).
    pub m: f64,
    /// n (P/E exponent of the retention term).
    pub n: f64,
}

impl Default for FlaresRber {
    fn default() -> Self {
        FlaresRber {
            a: 1.059e-5,
            b: 8.634e-6,
            c: -1.009e-5,
            bo: 1.691e-11,
            m: 0.6027,
            n: 2.167,
        }
    }
}

impl FlaresRber {
    /// RBER_wr(PE) = A·e^(B·PE) + C: errors present right after programming.
    pub fn write_part(&self, pe: f64) -> f64 {
        self.a * libm::exp(self.b * pe) + self.c
    }

    /// RBER_rd(PE, t) = Bo·(PE^n · t)^m: errors accumulated over `hours` of retention.
    pub fn retention_part(&self, pe: f64, hours: f64) -> f64 {
        if pe <= 0.0 || hours <= 0.0 {
            return 0.0;
        }
        // Bo·(PE^n·t)^m = Bo·e^(m·(n·ln PE + ln t)): two logarithms and one exponential
        // instead of two general powers.
        self.bo * libm::exp(self.m * (self.n * libm::log(pe) + libm::log(hours)))
    }

    /// The full model at `pe` cycles and `hours` of retention (never negative).
    pub fn at(&self, pe: f64, hours: f64) -> f64 {
        (self.write_part(pe) + self.retention_part(pe, hours)).max(0.0)
    }
}

impl ErrorModel for FlaresRber {
    fn rber(&self, p: &PageAge) -> f64 {
        self.at(p.pe_cycles as f64, p.retention.as_hours_f64())
    }
}

/// [`FlaresRber`] remembering the P/E-dependent terms of the last page it evaluated (pages
/// of one block, read one after another by GC and scans, share them): the same values,
/// with two transcendental evaluations fewer per hit.
///
/// Its [`rber_bounds`](ErrorModel::rber_bounds) need no transcendental function at all
/// on a hit: the retention term Bo·PE^(n·m)·t^m is bounded above by rounding t up to the
/// next power of two, whose m-th power comes from a table built once (for m > 0 and
/// Bo ≥ 0; other fits get the exact rate as both bounds).
#[derive(Debug, Clone)]
pub struct CachedFlares {
    model: FlaresRber,
    /// (P/E count, write part, n·ln PE, Bo·PE^(n·m)) of the last evaluation.
    last: core::cell::Cell<Option<(u32, f64, f64, f64)>>,
    /// `2^(m·(e + 1))` for hours in `[2^e, 2^(e+1))`, `e` from `-OCTAVES/2`; empty when the
    /// fit's retention term does not grow with time.
    octave: Vec<f64>,
}

/// Octaves of retention time (in hours) [`CachedFlares`] bounds from its table: 2^-64 h
/// (0.2 ns) to 2^64 h.
const OCTAVES: usize = 128;

/// Relative slack of [`CachedFlares`]' upper bound over the rate as computed: far above
/// any rounding difference between the two evaluations, far below the rate's own scale.
const BOUND_SLACK: f64 = 1e-9;

impl Default for CachedFlares {
    fn default() -> Self {
        CachedFlares::new(FlaresRber::default())
    }
}

impl CachedFlares {
    /// Wraps `model`.
    pub fn new(model: FlaresRber) -> Self {
        let octave = if model.m > 0.0 && model.bo >= 0.0 {
            (0..OCTAVES)
                .map(|i| {
                    let e = i as f64 - (OCTAVES / 2) as f64;
                    libm::exp(model.m * (e + 1.0) * core::f64::consts::LN_2)
                })
                .collect()
        } else {
            Vec::new()
        };
        CachedFlares {
            model,
            last: core::cell::Cell::new(None),
            octave,
        }
    }

    /// (write part, n·ln PE, Bo·PE^(n·m)) at `pe` cycles, from the cache when it holds them.
    fn pe_terms(&self, pe_cycles: u32) -> (f64, f64, f64) {
        match self.last.get() {
            Some((pe, w, l, s)) if pe == pe_cycles => (w, l, s),
            _ => {
                let m = &self.model;
                let pe = pe_cycles as f64;
                let w = m.write_part(pe);
                let (l, s) = if pe > 0.0 {
                    let l = m.n * libm::log(pe);
                    (l, m.bo * libm::exp(m.m * l))
                } else {
                    (f64::NEG_INFINITY, 0.0)
                };
                self.last.set(Some((pe_cycles, w, l, s)));
                (w, l, s)
            }
        }
    }
}

impl ErrorModel for CachedFlares {
    fn rber(&self, p: &PageAge) -> f64 {
        let m = &self.model;
        let (w, nlnpe, _) = self.pe_terms(p.pe_cycles);
        let hours = p.retention.as_hours_f64();
        let rd = if p.pe_cycles == 0 || hours <= 0.0 {
            0.0
        } else {
            m.bo * libm::exp(m.m * (nlnpe + libm::log(hours)))
        };
        (w + rd).max(0.0)
    }

    fn rber_bounds(&self, p: &PageAge) -> (f64, f64) {
        let (w, _, scale) = self.pe_terms(p.pe_cycles);
        let hours = p.retention.as_hours_f64();
        if p.pe_cycles == 0 || hours <= 0.0 {
            // No retention term: the rate is the write part.
            let r = w.max(0.0);
            return (r, r);
        }
        // hours ∈ [2^e, 2^(e+1)) for a normal f64 with biased exponent e + 1023.
        let e = ((hours.to_bits() >> 52) & 0x7FF) as i64 - 1023;
        let i = usize::try_from(e + (OCTAVES / 2) as i64).ok();
        match i.and_then(|i| self.octave.get(i)) {
            Some(&pow) => {
                // rd = Bo·PE^(n·m)·t^m ≥ 0, so w ≤ w + rd (and the rate is max(w + rd, 0)).
                let hi = (w + scale * pow) * (1.0 + BOUND_SLACK);
                (w, hi.max(0.0))
            }
            _ => {
                let r = self.rber(p);
                (r, r)
            }
        }
    }
}

/// Scales an inner model by bit kind: `[lsb, csb, msb]` factors. AP: `[1.0, 1.0, 0.5]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KindRatio<M> {
    /// The model for LSB pages.
    pub inner: M,
    /// Factor per bit kind (LSB, CSB, MSB).
    pub factors: [f64; 3],
}

impl<M> KindRatio<M> {
    /// AP's asymmetry: MSB pages see σ times the LSB error rate.
    pub fn ap(inner: M, sigma: f64) -> Self {
        KindRatio {
            inner,
            factors: [1.0, 1.0, sigma],
        }
    }
}

impl<M: ErrorModel> ErrorModel for KindRatio<M> {
    fn rber(&self, p: &PageAge) -> f64 {
        self.inner.rber(p) * self.factors[p.kind.index()]
    }
    fn rber_bounds(&self, p: &PageAge) -> (f64, f64) {
        let f = self.factors[p.kind.index()];
        let (lo, hi) = self.inner.rber_bounds(p);
        if f >= 0.0 {
            (lo * f, hi * f)
        } else {
            let r = self.rber(p);
            (r, r)
        }
    }
}

/// An inner model's rate times `factor` (at most 0.5): a chip whose real RBER is a stated
/// factor above or below a model an FTL relies on (FLARES's measured-error path is what
/// should notice).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scaled<M> {
    /// The model the chip departs from.
    pub inner: M,
    /// The chip's RBER over the model's (> 0).
    pub factor: f64,
}

impl<M: ErrorModel> ErrorModel for Scaled<M> {
    fn rber(&self, p: &PageAge) -> f64 {
        (self.inner.rber(p) * self.factor).min(0.5)
    }
    fn rber_bounds(&self, p: &PageAge) -> (f64, f64) {
        let (lo, hi) = self.inner.rber_bounds(p);
        ((lo * self.factor).min(0.5), (hi * self.factor).min(0.5))
    }
}

/// Adds `per_read` × reads-since-program to an inner model (read disturb).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadDisturb<M> {
    /// The undisturbed model.
    pub inner: M,
    /// RBER added per read since program.
    pub per_read: f64,
}

impl<M: ErrorModel> ErrorModel for ReadDisturb<M> {
    fn rber(&self, p: &PageAge) -> f64 {
        self.inner.rber(p) + self.per_read * p.reads as f64
    }
    fn rber_bounds(&self, p: &PageAge) -> (f64, f64) {
        let (lo, hi) = self.inner.rber_bounds(p);
        let d = self.per_read * p.reads as f64;
        (lo + d, hi + d)
    }
}

fn unit(rng: &mut impl RngCore) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Number of bit errors among `bits` bits at rate `rber`: an exact Binomial(bits, rber)
/// draw by inversion (expected O(mean) steps); a normal approximation only when the mean
/// exceeds 500, where inversion would underflow.
pub fn sample_bit_errors(rng: &mut impl RngCore, bits: u64, rber: f64) -> u64 {
    if rber <= 0.0 || bits == 0 {
        return 0;
    }
    if rber >= 1.0 {
        return bits;
    }
    let mean = bits as f64 * rber;
    if mean > 500.0 {
        // Box–Muller normal with continuity correction.
        let u1 = unit(rng).max(f64::MIN_POSITIVE);
        let u2 = unit(rng);
        let z = libm::sqrt(-2.0 * libm::log(u1)) * libm::cos(2.0 * core::f64::consts::PI * u2);
        let x = mean + z * libm::sqrt(mean * (1.0 - rber)) + 0.5;
        return (x.max(0.0) as u64).min(bits);
    }
    let u = unit(rng);
    let log_p0 = bits as f64 * ln_1m(rber);
    // P(0) = e^log_p0 ≥ 1 + log_p0: a draw below that bound is 0 errors without evaluating
    // the exponential — the same answer as the comparison below (the slack covers
    // rounding), for the common case of a page with few expected errors.
    if u < 1.0 + log_p0 - 1e-12 {
        return 0;
    }
    invert(u, bits, rber, log_p0)
}

/// The number of bit errors among `bits` bits of a page `model` describes: the same draw,
/// from the same random numbers, as `sample_bit_errors(rng, bits, model.rber(page))`, but
/// the model's rate is evaluated only when its cheap upper bound
/// ([`ErrorModel::rber_bounds`]) cannot already tell that the draw is 0 errors — the
/// common case of every read of a healthy page.
pub fn sample_page_errors<M: ErrorModel + ?Sized>(
    rng: &mut impl RngCore,
    bits: u64,
    model: &M,
    page: &PageAge,
) -> u64 {
    let (lo, hi) = model.rber_bounds(page);
    // With 0 < lo ≤ rate ≤ hi < 1 and a mean of at most 500, the exact draw takes the
    // inversion path, whose first step is this uniform draw.
    if bits > 0 && lo > 0.0 && hi < 1.0 && bits as f64 * hi <= 500.0 {
        let u = unit(rng);
        // ln P(0) falls as the rate grows: below the bound's threshold is below the rate's.
        if u < 1.0 + bits as f64 * ln_1m(hi) - 1e-12 {
            return 0;
        }
        let rber = model.rber(page);
        let log_p0 = bits as f64 * ln_1m(rber);
        if u < 1.0 + log_p0 - 1e-12 {
            return 0;
        }
        return invert(u, bits, rber, log_p0);
    }
    sample_bit_errors(rng, bits, model.rber(page))
}

/// The Binomial(`bits`, `rate`) error count at quantile `u` ∈ [0, 1): the smallest k whose
/// cumulative probability reaches `u`. For a fixed `u` the count never falls as `rate`
/// grows, so a page's persistent errors (`u` fixed per programmed page) only accumulate as
/// it ages. Above a mean of 500 errors (far past any code's reach) it is the mean, rounded.
pub fn errors_at_quantile(u: f64, bits: u64, rate: f64) -> u64 {
    if bits == 0 || rate <= 0.0 {
        return 0;
    }
    if rate >= 1.0 {
        return bits;
    }
    if bits as f64 * rate > 500.0 {
        return libm::round(bits as f64 * rate) as u64;
    }
    let log_p0 = bits as f64 * ln_1m(rate);
    if u < 1.0 + log_p0 - 1e-12 {
        return 0;
    }
    invert(u, bits, rate, log_p0)
}

/// Inversion of the Binomial(bits, rber) distribution at the uniform draw `u`, with
/// `log_p0` = ln P(0): the smallest k whose cumulative probability reaches `u`.
fn invert(u: f64, bits: u64, rber: f64, log_p0: f64) -> u64 {
    let ratio = rber / (1.0 - rber);
    let mut pmf = libm::exp(log_p0);
    let mut cdf = pmf;
    let mut k = 0u64;
    while u > cdf && k < bits {
        pmf *= (bits - k) as f64 / (k + 1) as f64 * ratio;
        k += 1;
        cdf += pmf;
        if pmf < 1e-300 && cdf > 0.999_999_999_999 {
            break;
        }
    }
    k
}

/// ln(1 − p). For p ≤ 2⁻¹⁴ the series −(p + p²/2 + p³/3 + p⁴/4) is exact to double
/// precision (the next term is below 2⁻⁶⁴·p), and a read's error draw is the hot path of
/// every simulated page read; larger p go to `log1p`.
fn ln_1m(p: f64) -> f64 {
    if p <= 1.0 / 16384.0 {
        -(p + p * p * (0.5 + p * (1.0 / 3.0 + p * 0.25)))
    } else {
        libm::log1p(-p)
    }
}

/// Flips `count` distinct random bits of `buf` (all of them if `count` ≥ its bit length);
/// returns the flipped bit positions.
pub fn flip_random_bits(rng: &mut impl RngCore, buf: &mut [u8], count: u64) -> Vec<usize> {
    let bits = buf.len() * 8;
    let count = (count as usize).min(bits);
    let mut picked: Vec<usize> = Vec::with_capacity(count);
    while picked.len() < count {
        let p = ((rng.next_u64() as u128 * bits as u128) >> 64) as usize;
        if !picked.contains(&p) {
            picked.push(p);
            buf[p / 8] ^= 0x80 >> (p % 8);
        }
    }
    picked
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    /// The inversion draw without the shortcut for 0 errors or the ln(1 − p) series.
    fn sample_reference(rng: &mut impl RngCore, bits: u64, rber: f64) -> u64 {
        invert(unit(rng), bits, rber, bits as f64 * libm::log1p(-rber))
    }

    #[test]
    fn zero_error_shortcut_changes_no_draw() {
        let mut a = ChaCha8Rng::seed_from_u64(9);
        let mut b = ChaCha8Rng::seed_from_u64(9);
        let mut nonzero = 0;
        for i in 0..200_000u64 {
            let bits = 1 + (i * 7919) % 40_000;
            let rber = 10f64.powf(-8.0 + (i % 57) as f64 / 10.0);
            if bits as f64 * rber > 500.0 {
                continue;
            }
            let x = sample_bit_errors(&mut a, bits, rber);
            assert_eq!(
                x,
                sample_reference(&mut b, bits, rber),
                "bits {bits} rber {rber}"
            );
            nonzero += (x > 0) as u32;
        }
        assert!(nonzero > 1000);
    }

    /// Pages of every age and wear the bounded draw meets: P/E 0..20k, retention 0 to
    /// decades, both bit kinds, some reads.
    fn ages() -> impl Iterator<Item = PageAge> {
        (0..4000u64).map(|i| PageAge {
            pe_cycles: [0, 1, 7, 100, 1000, 3000, 10_000, 20_000][(i % 8) as usize],
            retention: Nanos((i * 2_654_435_761) % (1u64 << (i % 59))),
            kind: if i % 3 == 0 {
                BitKind::Msb
            } else {
                BitKind::Lsb
            },
            reads: (i % 5) as u32 * 1000,
        })
    }

    #[test]
    fn flares_bounds_hold_the_rate() {
        let c = CachedFlares::default();
        let m = ReadDisturb {
            inner: KindRatio::ap(CachedFlares::default(), 0.5),
            per_read: 1e-10,
        };
        for age in ages() {
            for (lo, r, hi) in [
                (c.rber_bounds(&age).0, c.rber(&age), c.rber_bounds(&age).1),
                (m.rber_bounds(&age).0, m.rber(&age), m.rber_bounds(&age).1),
            ] {
                assert!(lo <= r && r <= hi, "{age:?}: {lo} {r} {hi}");
                // The bound is within a factor 2^m of the rate (one octave of retention).
                assert!(hi <= 1.6 * r + 1e-300, "{age:?}: {r} {hi}");
            }
        }
    }

    /// A scaled model is the inner rate times its factor, capped at 0.5, and its bounds
    /// still hold the rate.
    #[test]
    fn scaled_multiplies_the_rate_and_keeps_its_bounds() {
        let plain = CachedFlares::default();
        for factor in [0.25, 4.0, 1e9] {
            let m = Scaled {
                inner: CachedFlares::default(),
                factor,
            };
            for age in ages() {
                let r = m.rber(&age);
                assert_eq!(r, (plain.rber(&age) * factor).min(0.5));
                let (lo, hi) = m.rber_bounds(&age);
                assert!(lo <= r && r <= hi, "{age:?}: {lo} {r} {hi}");
            }
        }
        assert_eq!(
            Scaled {
                inner: ConstantRber(0.4),
                factor: 2.0
            }
            .rber(&ages().next().unwrap()),
            0.5
        );
    }

    #[test]
    fn bounded_draw_is_the_exact_draw() {
        let models: [alloc::boxed::Box<dyn ErrorModel>; 3] = [
            alloc::boxed::Box::new(CachedFlares::default()),
            alloc::boxed::Box::new(KindRatio::ap(CachedFlares::default(), 0.5)),
            alloc::boxed::Box::new(ReadDisturb {
                inner: CachedFlares::default(),
                per_read: 1e-9,
            }),
        ];
        let mut nonzero = 0;
        for (k, model) in models.iter().enumerate() {
            let mut a = ChaCha8Rng::seed_from_u64(k as u64);
            let mut b = ChaCha8Rng::seed_from_u64(k as u64);
            for (i, age) in ages().enumerate() {
                let bits = [1u64, 4096 * 8, 35_000, 200_000, 2_000_000][i % 5];
                let x = sample_page_errors(&mut a, bits, model, &age);
                assert_eq!(
                    x,
                    sample_bit_errors(&mut b, bits, model.rber(&age)),
                    "{age:?}"
                );
                nonzero += (x > 0) as u32;
            }
            // Both streams consumed the same random numbers.
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert!(nonzero > 1000, "{nonzero}");
    }

    #[test]
    fn quantile_counts_grow_with_the_rate_and_have_the_binomial_mean() {
        let bits = 70_000u64;
        let mut sum = 0u64;
        let n = 20_000;
        for i in 0..n {
            let u = (i as f64 + 0.5) / n as f64;
            let mut last = 0;
            for rate in [1e-6, 1e-5, 4e-5, 8e-5, 1e-3, 1e-2] {
                let k = errors_at_quantile(u, bits, rate);
                assert!(k >= last, "u {u} rate {rate}: {k} < {last}");
                last = k;
            }
            sum += errors_at_quantile(u, bits, 4e-5);
        }
        let mean = sum as f64 / n as f64;
        assert!((mean - 2.8).abs() < 0.05, "mean {mean}");
        assert_eq!(errors_at_quantile(0.3, bits, 0.0), 0);
        assert_eq!(errors_at_quantile(0.3, 0, 0.5), 0);
    }

    #[test]
    fn ln_1m_matches_log1p() {
        let mut p = 1e-12;
        while p < 0.5 {
            let (a, b) = (ln_1m(p), libm::log1p(-p));
            assert!(
                ((a - b) / b).abs() < 4.0 * f64::EPSILON,
                "p {p}: {a} vs {b}"
            );
            p *= 1.37;
        }
    }

    #[test]
    fn flares_model_has_the_paper_shape() {
        let f = FlaresRber::default();
        // Fresh pages: A + C = 5e-7.
        assert!((f.at(0.0, 0.0) - 5.0e-7).abs() < 1e-12);
        // Monotone in wear and in retention.
        assert!(f.at(3000.0, 0.0) > f.at(1000.0, 0.0));
        assert!(f.at(3000.0, 8760.0) > f.at(3000.0, 24.0));
        // Retention dominates late in life: at 10k cycles and one year the rate is ~1e-3.
        let r = f.at(10_000.0, 8760.0);
        assert!(r > 1e-4 && r < 1e-2, "{r}");
    }

    #[test]
    fn cached_flares_equals_flares() {
        let f = FlaresRber::default();
        let c = CachedFlares::new(f);
        for pe in [0u32, 1, 500, 500, 3000, 3000, 10_000] {
            for h in [0u64, 1, 24, 8760] {
                let age = PageAge {
                    pe_cycles: pe,
                    retention: Nanos::from_hours(h),
                    kind: BitKind::Lsb,
                    reads: 0,
                };
                let (a, b) = (f.rber(&age), c.rber(&age));
                assert!(
                    (a - b).abs() <= 1e-15 * a.max(1e-30),
                    "{pe} {h}: {a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn binomial_sampler_has_the_right_mean_and_variance() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for &(bits, p) in &[
            (32768u64, 1e-4),
            (8640, 2e-5),
            (4096, 0.01),
            (1_000_000, 0.001),
        ] {
            let n = 20_000;
            let draws: Vec<f64> = (0..n)
                .map(|_| sample_bit_errors(&mut rng, bits, p) as f64)
                .collect();
            let mean = draws.iter().sum::<f64>() / n as f64;
            let var = draws.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
            let m = bits as f64 * p;
            let v = m * (1.0 - p);
            assert!(
                (mean - m).abs() < 5.0 * (v / n as f64).sqrt(),
                "{bits} {p}: mean {mean} vs {m}"
            );
            assert!((var - v).abs() / v < 0.1, "{bits} {p}: var {var} vs {v}");
        }
    }

    #[test]
    fn flips_are_distinct_real_bits() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let mut buf = vec![0u8; 64];
        let pos = flip_random_bits(&mut rng, &mut buf, 100);
        assert_eq!(pos.len(), 100);
        assert_eq!(buf.iter().map(|b| b.count_ones()).sum::<u32>(), 100);
    }
}

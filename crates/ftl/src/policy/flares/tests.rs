//! Tests of the FLARES core and policy.

extern crate std;
use super::*;

/// A core with its own counters, as the FTL's policy runs it.
struct Counted {
    core: FlaresCore,
    k: EccPolicyCounters,
}

impl core::ops::Deref for Counted {
    type Target = FlaresCore;
    fn deref(&self) -> &FlaresCore {
        &self.core
    }
}

impl Counted {
    fn new(cfg: FlaresConfig) -> Self {
        Counted {
            core: FlaresCore::new(FlaresTables::new(cfg, 32768, 32768)),
            k: EccPolicyCounters::default(),
        }
    }
    fn read(&mut self, p: &mut Pprof, deterr: u32, fail: bool, now: Nanos) -> Outcome {
        self.core.read(p, deterr, fail, now, &mut self.k)
    }
    fn estimate(&mut self, p: &mut Pprof) -> Zone {
        self.core.estimate(p, &mut self.k)
    }
}

fn core() -> Counted {
    Counted::new(FlaresConfig::default())
}

/// A page read `reads` times at `rber` (expected errors, no noise) from a profile
/// programmed at `pe` with `p_cur`.
fn window(c: &mut Counted, p: &mut Pprof, rber: f64, now: Nanos) -> Outcome {
    let e = (rber * 32768.0).round() as u32;
    let mut last = Outcome::Nothing;
    for _ in 0..c.tables.config().wsize {
        last = c.read(p, e, false, now);
    }
    last
}

#[test]
fn corr_table_matches_the_reliability_crate() {
    let c = core();
    // p = 3 sustains 1.634e-6 (`nandlab ecc flares`'s table).
    assert!((c.tables.max_rber(3) / 1.634e-6 - 1.0).abs() < 1e-3);
    assert_eq!(c.tables.p_for(1.0e-6), (3, false));
    assert_eq!(c.tables.p_for(1.0e-9), (3, false), "t_min bounds below");
    assert_eq!(c.tables.p_for(1.0), (50, true));
    assert_eq!(c.tables.p_for(c.tables.max_rber(7)), (7, false));
}

#[test]
fn required_rows_by_bisection_match_the_row_by_row_fill() {
    let mut steep = FlaresConfig {
        t_min: 1,
        t_max: 8,
        pe_step: 1,
        ..Default::default()
    };
    // The crash tests' model: RBER_wr grows ~e^(0.3·PE), strengths change every few rows.
    steep.model.a = 2e-5;
    steep.model.b = 0.3;
    steep.model.c = -2e-5;
    for cfg in [
        FlaresConfig::default(),
        FlaresConfig {
            pe_step: 1,
            t_max: 13,
            ..Default::default()
        },
        FlaresConfig {
            pe_step: 96,
            ..Default::default()
        },
        steep,
    ] {
        let t = FlaresTables::new(cfg, 4096 + 104, 8 * 4096);
        let step = cfg.pe_step.max(1);
        let each = t.required_rows_each(step, PE_SPAN / step);
        assert_eq!(t.required, each, "{cfg:?}");
        let changes = t.required.windows(2).filter(|w| w[0] != w[1]).count();
        if cfg.pe_step == 1 {
            assert!(changes >= 3, "{cfg:?}: {changes} changes test little");
        }
    }
}

#[test]
fn retention_table_never_promises_more_than_the_model() {
    let c = core();
    let m = FlaresRber::default();
    for pe in [1u32, 63, 64, 65, 999, 1000, 3000, 9999] {
        for p in [3u32, 10, 30, 50] {
            let ret = c.tables.max_ret(p, pe);
            let hours = ret.0 as f64 / NS_PER_HOUR;
            if ret > Nanos::ZERO && hours < HORIZON_HOURS {
                assert!(m.at(pe as f64, hours) <= c.tables.max_rber(p) * (1.0 + 1e-9));
            }
        }
    }
    assert_eq!(c.tables.max_ret(10, 1 << 14), Nanos::ZERO);
}

#[test]
fn a_page_walks_through_every_zone() {
    let mut c = core();
    // (A row's upper end: the program's table look-up is the exact requirement.)
    let pe = 1023;
    let mut p = Pprof::default();
    let t0 = Nanos(0);
    let t = c.program(&mut p, pe, t0);
    assert_eq!(
        t,
        c.tables.required_p(pe).0,
        "first program takes the model's p"
    );
    // Safe zone: the measured RBER equals the model's write part.
    let wr = c.tables.rber_wr(pe);
    let mut p2 = p;
    let mut sz = false;
    for _ in 0..5 {
        if window(&mut c, &mut p2, wr, t0) == Outcome::Window(Zone::Sz) {
            sz = true;
        }
    }
    // (The model's p may sit near its limit: then CR, which is also a valid walk.)
    assert!(sz || c.k.zones[Zone::Cr.index()] > 0, "{:?}", c.k.zones);
    // Fast zone: ten times the errors.
    let mut p3 = p;
    assert_eq!(
        window(&mut c, &mut p3, wr * 10.0 + 2e-5, t0),
        Outcome::Window(Zone::Fs)
    );
    assert!(p3.p_next > p3.p_cur);
    // Over-correction: a page encoded far stronger than needed steps down by one only
    // after MAXOVER + 1 windows.
    let mut p4 = p;
    p4.p_cur = 40;
    p4.p_next = 40;
    for i in 0..=c.tables.config().maxover {
        assert_eq!(window(&mut c, &mut p4, wr, t0), Outcome::Window(Zone::Oc));
        let expect = if i == c.tables.config().maxover {
            39
        } else {
            40
        };
        assert_eq!(p4.p_next, expect, "window {i}");
    }
    // Critical zone: a projected RBER just under p_cur's limit; after MAXCRITICAL + 1
    // windows p_next grows by one.
    let mut p5 = p;
    let cur = p5.p_cur as u32;
    let limit = c.tables.max_rber(cur);
    let proj_rd = FlaresRber::default().retention_part(pe as f64, 8760.0);
    // avg = 0.5·meas + 0.5·wr must equal 0.99·limit − proj_rd.
    let meas = 2.0 * (0.99 * limit - proj_rd) - wr;
    assert!(meas > 0.0);
    let mut zones = alloc::vec::Vec::new();
    for _ in 0..=c.tables.config().maxcritical {
        // Exact errors per read would round: set errc directly for the window.
        p5.errc = (meas * 32768.0 * 100.0).round() as u16;
        p5.ops = 100;
        zones.push(c.estimate(&mut p5));
    }
    assert!(zones.iter().all(|&z| z == Zone::Cr), "{zones:?}");
    assert_eq!(p5.p_next as u32, cur + 1);
    // Failure zone: MAXFAIL + 1 failed decodes in a window.
    let mut p6 = p;
    let mut out = Outcome::Nothing;
    for _ in 0..=c.tables.config().maxfail {
        out = c.read(&mut p6, 0, true, t0);
    }
    for _ in c.tables.config().maxfail + 1..c.tables.config().wsize {
        out = c.read(&mut p6, 0, false, t0);
    }
    assert_eq!(out, Outcome::Rewrite);
    assert!(p6.p_next > p6.p_cur);
    assert_eq!(c.k.zones[Zone::Fa.index()], 1);
}

#[test]
fn retention_past_the_limit_raises_a_rewrite_alarm() {
    let mut c = core();
    let mut p = Pprof::default();
    // (On a row's upper end the table is exact.)
    let pe = 3007;
    c.program(&mut p, pe, Nanos(0));
    let limit = c.tables.max_ret(p.p_cur as u32, pe);
    assert!(limit > Nanos::ZERO);
    let before = Nanos(limit.0.saturating_sub(2_000_000_000));
    assert_ne!(c.read(&mut p, 0, false, before), Outcome::Rewrite);
    assert_eq!(
        c.read(&mut p, 0, false, Nanos(limit.0 + 2_000_000_000)),
        Outcome::Rewrite
    );
    // A page chosen for one year must hold one year.
    assert!(limit.0 as f64 / NS_PER_HOUR >= 8760.0 * 0.999, "{limit:?}");
}

#[test]
fn bad_constants_are_named() {
    let mut cfg = FlaresConfig {
        mix: 1.5,
        ..FlaresConfig::default()
    };
    assert!(cfg.validate().unwrap_err().contains("flares.mix"));
    cfg.mix = 0.5;
    cfg.wsize = 0;
    assert!(cfg.validate().unwrap_err().contains("flares.wsize"));
    cfg.wsize = 100;
    cfg.target_uber = 0.0;
    assert!(cfg.validate().unwrap_err().contains("flares.target_uber"));
    cfg.target_uber = 1e-11;
    cfg.req_ret_hours = 0.0;
    assert!(cfg.validate().unwrap_err().contains("flares.req_ret_hours"));
    cfg.req_ret_hours = 720.0;
    cfg.t_max = 70;
    assert!(cfg.validate().unwrap_err().contains("flares.t_max"));
    cfg.t_max = 50;
    assert!(cfg.validate().is_ok());
}

/// Deterministic Gaussian-noised RBER draws (Box–Muller over a small LCG).
struct Noise(u64);
impl Noise {
    fn unit(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    /// A Poisson draw of mean `mean` (inversion): the bit errors of a 32768-bit page.
    fn poisson(&mut self, mean: f64) -> u32 {
        let (mut k, mut p) = (0u32, libm::exp(-mean));
        let (mut cdf, u) = (p, self.unit());
        while u > cdf && k < 1000 {
            k += 1;
            p *= mean / k as f64;
            cdf += p;
        }
        k
    }
    fn gauss(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        libm::sqrt(-2.0 * libm::log(u)) * libm::cos(2.0 * core::f64::consts::PI * v)
    }
}

/// The paper's smooth-aging check (§5.1): P/E and retention grow together from 1,000
/// cycles; every read sees the model's RBER at the page's age with Gaussian noise
/// (σ = 5e-7); the page is reprogrammed whenever FLARES asks (a rewrite alarm) and
/// otherwise every 100 reads. The strength FLARES encodes with is never below what the
/// analytic model requires for one year at that wear.
#[test]
fn never_under_corrects_on_smooth_aging() {
    let cases = [100u32, 10]
        .into_iter()
        .flat_map(|w| [0.5, 1.0].into_iter().map(move |mix| (w, mix)))
        .flat_map(|(w, mix)| (0..3u64).map(move |seed| (w, mix, seed)));
    for (wsize, mix, seed) in cases {
        let mut under = 0;
        let cfg = FlaresConfig {
            wsize,
            mix,
            ..FlaresConfig::default()
        };
        let mut c = Counted::new(cfg);
        let m = FlaresRber::default();
        let mut noise = Noise(wsize as u64 + 1000 * seed);
        let mut p = Pprof::default();
        let mut pe = 1000u32;
        let mut now = Nanos(0);
        let hour = Nanos(3_600_000_000_000);
        let mut programs = 0;
        while pe < 4000 {
            let t = c.program(&mut p, pe, now);
            programs += 1;
            let (need, beyond) = c.tables.required_p_exact(pe);
            if !beyond && t < need {
                assert!(
                    t + 1 >= need,
                    "wsize {wsize}, mix {mix}, pe {pe}: chose {t}, the model needs {need}; {p:?} {:?}",
                    c.k.zones
                );
                under += 1;
            }
            for _ in 0..100 {
                now = Nanos(now.0 + hour.0);
                let ret = FlaresCore::retention(&p, now).0 as f64 / 3.6e12;
                let rber = (m.at(pe as f64, ret) + 5e-7 * noise.gauss()).max(0.0);
                let e = noise.poisson(rber * 32768.0);
                let cur = p.p_cur as u32;
                if c.read(&mut p, e.min(cur), e > cur, now) == Outcome::Rewrite {
                    break;
                }
            }
            // One P/E cycle per 10 programs of the page: wear and retention grow together.
            if programs % 10 == 0 {
                pe += 10;
            }
        }
        // The paper's claim: never underestimated.
        assert_eq!(
            under, 0,
            "wsize {wsize}, mix {mix}, seed {seed}: {under} of {programs} programs under-corrected"
        );
    }
}

/// A sharp one-decade step of the measured RBER (the paper's operating-point jumps):
/// the failure zone and the fast or critical zones react, and p_next rises.
#[test]
fn a_one_decade_rber_step_moves_p_up() {
    let mut c = core();
    let pe = 1000;
    let mut p = Pprof::default();
    c.program(&mut p, pe, Nanos(0));
    let before = p.p_cur;
    // Ten times the model's RBER after one year, measured on every read.
    let proj = c.tables.rber_wr(pe) + FlaresRber::default().retention_part(pe as f64, 8760.0);
    let e = (proj * 10.0 * 32768.0).round() as u32;
    let mut zones = alloc::vec::Vec::new();
    for _ in 0..4 {
        for _ in 0..100 {
            let cur = p.p_cur as u32;
            if let Outcome::Window(z) = c.read(&mut p, e.min(cur), e > cur, Nanos(0)) {
                zones.push(z);
            }
        }
        c.program(&mut p, pe, Nanos(0));
    }
    assert!(p.p_cur > before + 5, "{before} -> {}", p.p_cur);
    assert!(
        c.k.zones[Zone::Fa.index()] + c.k.zones[Zone::Fs.index()] > 0,
        "{zones:?} {:?}",
        c.k.zones
    );
}

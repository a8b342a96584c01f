//! Synthetic workloads with IOMeter's knobs, and the request-source trait traces share.

use crate::request::{ReqKind, Request};
use crate::SimError;
use ftl::{DataClass, Temperature};
use nand::Nanos;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

/// A stream of host requests (a generator or a trace reader).
pub trait RequestSource {
    /// The next request, an error (malformed input), or `None` at the end.
    fn next_request(&mut self) -> Option<Result<Request, SimError>>;
    /// How many requests remain, if known (for progress bars).
    fn remaining(&self) -> Option<u64> {
        None
    }
    /// What the source skipped, clamped or changed in its input, in words (a trace's
    /// counted warnings); empty for generated workloads.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A source whose reads and writes are served page by page: each is cut at page
/// boundaries into requests of at most one page, in order, all with the request's arrival
/// (the first piece keeps its idle period). Trims and flushes pass whole.
pub struct PageRequests {
    inner: Box<dyn RequestSource>,
    page: u64,
    /// The rest of the request being cut.
    rest: Option<Request>,
}

impl PageRequests {
    /// Cuts `inner`'s reads and writes into pieces of `page` bytes (page-aligned).
    pub fn new(inner: Box<dyn RequestSource>, page: u64) -> Self {
        PageRequests {
            inner,
            page: page.max(1),
            rest: None,
        }
    }
}

impl RequestSource for PageRequests {
    fn next_request(&mut self) -> Option<Result<Request, SimError>> {
        let mut r = match self.rest.take() {
            Some(r) => r,
            None => match self.inner.next_request()? {
                Ok(r) => r,
                Err(e) => return Some(Err(e)),
            },
        };
        if !matches!(r.kind, ReqKind::Read | ReqKind::Write) {
            return Some(Ok(r));
        }
        let end = (r.offset / self.page + 1) * self.page;
        if r.offset + r.len > end {
            let cut = end - r.offset;
            self.rest = Some(Request {
                offset: end,
                len: r.len - cut,
                idle_before: Nanos::ZERO,
                ..r
            });
            r.len = cut;
        }
        Some(Ok(r))
    }

    fn remaining(&self) -> Option<u64> {
        self.inner.remaining()
    }

    fn notes(&self) -> Vec<String> {
        self.inner.notes()
    }
}

/// Request sizes: a fixed size, a uniform choice among sizes, or a uniform range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "workload.size: expected a request size in bytes (a positive multiple of 512, e.g. 4096), a list of sizes ([4096, 8192]) or a range ({ min = 4096, max = 65536 })"
)]
pub enum SizeSpec {
    /// Every request this many bytes.
    Fixed(u64),
    /// Uniformly one of these sizes.
    Choice(Vec<u64>),
    /// Uniform in [min, max], rounded down to the alignment.
    Range {
        /// Smallest size in bytes.
        min: u64,
        /// Largest size in bytes.
        max: u64,
    },
}

/// A hot/cold skew: `access_pct` % of accesses go to the first `data_pct` % of the footprint.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HotCold {
    /// Share of the footprint that is hot (0..100).
    pub data_pct: f64,
    /// Share of accesses that go to it (0..100).
    pub access_pct: f64,
    /// Give writes the temperature hint of their region (hot region: hot, the rest: cold),
    /// as a host that knows its data would.
    #[serde(default)]
    pub hint: bool,
}

/// A file system's metadata traffic beside its data (AP's NTFS setting, where the metadata
/// lives at fixed addresses at the start of the volume): `pct` % of reads and writes are one
/// aligned unit at a uniformly random place in the first `bytes` of the volume; every other
/// request (random or sequential) lands in the footprint after them. Mark the region
/// critical with `[hints] critical` to have its pages treated as metadata.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetadataStream {
    /// Share of reads and writes that are metadata accesses (0..100).
    pub pct: f64,
    /// Size of the metadata region at the start of the volume, bytes (a multiple of
    /// `align`).
    pub bytes: u64,
}

/// Host idle periods: after every `every` requests, no I/O for `seconds` of simulated time
/// (hours or days let retention age the data).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdlePeriods {
    /// Requests between two idle periods (≥ 1).
    pub every: u64,
    /// Length of each idle period in seconds (≥ 0).
    pub seconds: f64,
}

/// How arrivals are spaced (open-loop).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Every `interarrival_us`.
    #[default]
    Fixed,
    /// Exponentially distributed gaps with mean `interarrival_us` (a Poisson process).
    Poisson,
}

/// IOMeter-style synthetic workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SyntheticConfig {
    /// Number of requests (unless `duration_ms` ends the run first).
    pub requests: Option<u64>,
    /// Simulated duration in milliseconds (open-loop arrivals).
    pub duration_ms: Option<f64>,
    /// Percentage of reads among reads and writes.
    pub read_pct: f64,
    /// Percentage of random (vs sequential) accesses.
    pub random_pct: f64,
    /// Percentage of trims among all requests.
    pub trim_pct: f64,
    /// A flush after every this many requests (none if absent).
    pub flush_every: Option<u64>,
    /// Request sizes in bytes.
    pub size: SizeSpec,
    /// Offsets (and sizes) are multiples of this many bytes.
    pub align: u64,
    /// Fraction of the device's capacity the workload touches (0 < f ≤ 1).
    pub footprint: f64,
    /// Optional hot/cold skew.
    pub hot: Option<HotCold>,
    /// Mean time between arrivals in microseconds (0 = all at once; closed-loop ignores it).
    pub interarrival_us: f64,
    /// Arrival process.
    pub arrival: Arrival,
    /// Host idle periods.
    pub idle: Option<IdlePeriods>,
    /// A metadata stream at the start of the volume (data requests then go after it).
    pub metadata: Option<MetadataStream>,
}

impl Default for SyntheticConfig {
    fn default() -> Self {
        SyntheticConfig {
            requests: Some(100_000),
            duration_ms: None,
            read_pct: 30.0,
            random_pct: 100.0,
            trim_pct: 0.0,
            flush_every: None,
            size: SizeSpec::Fixed(4096),
            align: 4096,
            footprint: 1.0,
            hot: None,
            interarrival_us: 0.0,
            arrival: Arrival::Fixed,
            idle: None,
            metadata: None,
        }
    }
}

impl SyntheticConfig {
    /// Checks the knobs; errors name the key.
    pub fn validate(&self) -> Result<(), SimError> {
        // Every problem at once, each naming its key.
        let mut errs: Vec<String> = Vec::new();
        let mut bad = |k: &str, m: String| errs.push(format!("workload.{k}: {m}"));
        for (k, v) in [
            ("read_pct", self.read_pct),
            ("random_pct", self.random_pct),
            ("trim_pct", self.trim_pct),
        ] {
            if !(0.0..=100.0).contains(&v) {
                bad(k, format!("{v} is not a percentage"));
            }
        }
        if self.align == 0 || !self.align.is_multiple_of(512) {
            bad(
                "align",
                format!("{} must be a positive multiple of 512", self.align),
            );
        }
        if !(self.footprint > 0.0 && self.footprint <= 1.0) {
            bad("footprint", format!("{} must be in (0, 1]", self.footprint));
        }
        if !(self.interarrival_us >= 0.0 && self.interarrival_us.is_finite()) {
            bad(
                "interarrival_us",
                format!("{} must be ≥ 0", self.interarrival_us),
            );
        }
        if self.requests.is_none() && self.duration_ms.is_none() {
            bad("requests", "give `requests` or `duration_ms`".into());
        }
        if self.requests == Some(0) {
            bad(
                "requests",
                "0: a run of no requests measures nothing".into(),
            );
        }
        if let Some(d) = self.duration_ms {
            if d.is_nan() || d <= 0.0 || self.interarrival_us == 0.0 {
                bad(
                    "duration_ms",
                    format!("{d} needs a positive value and interarrival_us > 0"),
                );
            }
        }
        let sizes: Vec<u64> = match &self.size {
            SizeSpec::Fixed(s) => vec![*s],
            SizeSpec::Choice(v) if v.is_empty() => {
                bad("size", "empty list".into());
                Vec::new()
            }
            SizeSpec::Choice(v) => v.clone(),
            SizeSpec::Range { min, max } if min > max => {
                bad("size", format!("min {min} > max {max}"));
                Vec::new()
            }
            SizeSpec::Range { min, max } => vec![*min, *max],
        };
        if let Some(s) = sizes.iter().find(|&&s| s == 0 || s % 512 != 0) {
            bad("size", format!("{s} must be a positive multiple of 512"));
        }
        if let Some(i) = self.idle {
            if i.every == 0 {
                bad("idle.every", format!("{} must be at least 1", i.every));
            }
            if !(i.seconds >= 0.0 && i.seconds.is_finite() && i.seconds < 1e12) {
                bad(
                    "idle.seconds",
                    format!("{} must be a non-negative number of seconds", i.seconds),
                );
            }
        }
        if let Some(m) = self.metadata {
            if !(0.0..=100.0).contains(&m.pct) {
                bad("metadata.pct", format!("{} is not a percentage", m.pct));
            }
            if m.bytes == 0 || self.align == 0 || !m.bytes.is_multiple_of(self.align) {
                bad(
                    "metadata.bytes",
                    format!(
                        "{} must be a positive multiple of align ({})",
                        m.bytes, self.align
                    ),
                );
            }
        }
        if let Some(h) = self.hot {
            if !(h.data_pct > 0.0 && h.data_pct < 100.0 && (0.0..=100.0).contains(&h.access_pct)) {
                bad(
                    "hot",
                    format!(
                        "data_pct {} / access_pct {} out of range",
                        h.data_pct, h.access_pct
                    ),
                );
            }
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(SimError::Config(errs.join("\n")))
        }
    }

    /// The largest request size it can issue, in bytes.
    pub fn max_size(&self) -> u64 {
        match &self.size {
            SizeSpec::Fixed(s) => *s,
            SizeSpec::Choice(v) => v.iter().copied().max().unwrap_or(0),
            SizeSpec::Range { max, .. } => *max,
        }
    }
}

/// The generator.
#[derive(Debug)]
pub struct Synthetic {
    cfg: SyntheticConfig,
    rng: ChaCha8Rng,
    /// Bytes data requests range over (after `base`).
    footprint: u64,
    /// Where data requests start: the metadata region's size (0 without one).
    base: u64,
    cursor: u64,
    issued: u64,
    now: Nanos,
}

impl Synthetic {
    /// A generator over a device of `capacity` bytes.
    pub fn new(cfg: SyntheticConfig, capacity: u64, seed: u64) -> Result<Self, SimError> {
        cfg.validate()?;
        if cfg.max_size() > capacity {
            return Err(SimError::Config(format!(
                "workload.size: a {}-byte request is larger than the volume's {capacity} bytes",
                cfg.max_size()
            )));
        }
        let footprint = ((capacity as f64 * cfg.footprint) as u64 / cfg.align) * cfg.align;
        if footprint == 0 {
            return Err(SimError::Config(
                "workload.footprint: less than one aligned unit".into(),
            ));
        }
        // Data requests go after the metadata region.
        let base = cfg.metadata.map_or(0, |m| m.bytes);
        if base > 0 && base + cfg.max_size() > footprint {
            return Err(SimError::Config(format!(
                "workload.metadata.bytes: {base} leaves no room for a {}-byte data request in the {footprint}-byte footprint",
                cfg.max_size()
            )));
        }
        Ok(Synthetic {
            rng: ChaCha8Rng::seed_from_u64(seed),
            footprint: footprint - base,
            base,
            cfg,
            cursor: 0,
            issued: 0,
            now: Nanos::ZERO,
        })
    }

    fn unit(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    fn below(&mut self, n: u64) -> u64 {
        below(&mut self.rng, n)
    }

    fn size(&mut self) -> u64 {
        let a = self.cfg.align;
        let s = match &self.cfg.size {
            SizeSpec::Fixed(s) => *s,
            SizeSpec::Choice(v) => v[below(&mut self.rng, v.len() as u64) as usize],
            SizeSpec::Range { min, max } => min + below(&mut self.rng, max - min + 1),
        };
        (s / a).max(1) * a
    }
}

/// A uniform draw in [0, n).
fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    ((rng.next_u64() as u128 * n as u128) >> 64) as u64
}

impl RequestSource for Synthetic {
    fn next_request(&mut self) -> Option<Result<Request, SimError>> {
        if self.cfg.requests.is_some_and(|n| self.issued >= n) {
            return None;
        }
        let gap = match self.cfg.arrival {
            Arrival::Fixed => self.cfg.interarrival_us,
            Arrival::Poisson => -self.cfg.interarrival_us * (1.0 - self.unit()).ln(),
        };
        let mut idle_before = Nanos::ZERO;
        if self.issued > 0 {
            self.now += Nanos((gap * 1000.0) as u64);
            if let Some(i) = self.cfg.idle {
                if self.issued.is_multiple_of(i.every) {
                    idle_before = Nanos((i.seconds * 1e9) as u64);
                    self.now += idle_before;
                }
            }
        }
        if let Some(d) = self.cfg.duration_ms {
            if self.now.0 as f64 > d * 1e6 {
                return None;
            }
        }
        self.issued += 1;
        if self
            .cfg
            .flush_every
            .is_some_and(|k| k > 0 && self.issued.is_multiple_of(k))
        {
            return Some(Ok(Request {
                arrival: self.now,
                kind: ReqKind::Flush,
                offset: 0,
                len: 0,
                class: DataClass::NORMAL,
                idle_before,
            }));
        }
        let len = self.size().min(self.footprint);
        let r = self.unit() * 100.0;
        let kind = if r < self.cfg.trim_pct {
            ReqKind::Trim
        } else if self.unit() * 100.0 < self.cfg.read_pct {
            ReqKind::Read
        } else {
            ReqKind::Write
        };
        if let Some(m) = self.cfg.metadata {
            if kind != ReqKind::Trim && self.unit() * 100.0 < m.pct {
                let a = self.cfg.align;
                return Some(Ok(Request {
                    arrival: self.now,
                    kind,
                    offset: self.below(m.bytes / a) * a,
                    len: a,
                    class: DataClass::NORMAL,
                    idle_before,
                }));
            }
        }
        let a = self.cfg.align;
        let slots = (self.footprint - len) / a + 1;
        let mut class = DataClass::NORMAL;
        let offset = if self.unit() * 100.0 < self.cfg.random_pct {
            match self.cfg.hot {
                Some(h) => {
                    let hot_slots = ((slots as f64 * h.data_pct / 100.0) as u64).max(1);
                    let hot = self.unit() * 100.0 < h.access_pct;
                    if h.hint {
                        class.temperature = if hot {
                            Temperature::Hot
                        } else {
                            Temperature::Cold
                        };
                    }
                    if hot {
                        self.below(hot_slots) * a
                    } else {
                        (hot_slots + self.below((slots - hot_slots).max(1))).min(slots - 1) * a
                    }
                }
                None => self.below(slots) * a,
            }
        } else {
            if self.cursor + len > self.footprint {
                self.cursor = 0;
            }
            let o = self.cursor;
            self.cursor += len;
            o
        };
        Some(Ok(Request {
            arrival: self.now,
            kind,
            offset: self.base + offset,
            len,
            class,
            idle_before,
        }))
    }

    fn remaining(&self) -> Option<u64> {
        self.cfg.requests.map(|n| n - self.issued)
    }
}

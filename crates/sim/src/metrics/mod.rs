//! Metrics of a run (latency histograms and counts per request kind) and the report built
//! from them: its parts and their building in `report`, its output forms (JSON, CSV, metrics
//! by dotted name) in `export`.

use crate::request::ReqKind;
use hdrhistogram::Histogram;
use nand::Nanos;
use serde::Serialize;

mod counters;
mod export;
mod report;

pub(crate) use export::json_leaves;
pub use export::unit_of;
pub use report::*;

/// One distribution of times (ns): a histogram, the exact sum and the exact largest value.
#[derive(Debug, Clone)]
pub(crate) struct Dist {
    h: Histogram<u64>,
    sum: u128,
    max: u64,
}

impl Default for Dist {
    fn default() -> Self {
        Dist {
            h: Histogram::new(3).expect("valid sigfig"),
            sum: 0,
            max: 0,
        }
    }
}

impl Dist {
    fn record(&mut self, ns: u64) {
        self.h
            .record(ns)
            .expect("auto-resizing histogram accepts any value");
        self.sum += ns as u128;
        self.max = self.max.max(ns);
    }

    /// Mean, p99, p99.9 and maximum in µs over `n` values.
    pub(crate) fn summary(&self, n: u64) -> report::Quantiles {
        let us = |v: u64| v as f64 / 1000.0;
        report::Quantiles {
            mean_us: self.sum as f64 / n.max(1) as f64 / 1000.0,
            p99_us: us(self.h.value_at_quantile(0.99)),
            p999_us: us(self.h.value_at_quantile(0.999)),
            max_us: us(self.max),
        }
    }
}

/// Latency histograms and counts per request kind.
#[derive(Debug, Clone)]
pub struct Metrics {
    lat: Vec<Histogram<u64>>,
    /// Per kind: the response time split into waiting (host queue, and dies and channels
    /// busy with earlier work) and the request's own service.
    queue: [Dist; 4],
    service: [Dist; 4],
    count: [u64; 4],
    bytes: [u64; 4],
    sum_ns: [u128; 4],
    /// Exact largest latency per kind, ns (the histogram rounds up to its resolution).
    max_ns: [u64; 4],
    /// Host pages that could not be read (uncorrectable).
    pub read_errors: u64,
    /// Host page reads of critical pages (inside the experiment's critical ranges).
    pub critical_reads: u64,
    /// Critical pages that could not be read (AP's "uncorrectable critical page errors").
    pub critical_read_errors: u64,
    /// The analytic side of the critical reads that decoded one page (see
    /// [`CriticalRisk`]).
    pub critical_risk: CriticalRisk,
    /// Queued non-critical writes served ahead of a critical write to fill the LSB slot it
    /// skips (AP's request feedback).
    pub request_feedbacks: u64,
    /// Host reads checked against the engine's shadow copy (bytes mode).
    pub verified_reads: u64,
    /// Reads whose data differed from what was written.
    pub mismatches: u64,
    /// Trims whose own flash work exceeded the scheme's derived trim bound.
    pub trim_overruns: u64,
    /// Flushes whose own flash work exceeded the scheme's derived flush bound.
    pub flush_overruns: u64,
    /// First arrival and last completion of the measured phase.
    pub start: Option<Nanos>,
    /// Last completion.
    pub end: Nanos,
    /// Last arrival.
    pub last_arrival: Nanos,
}

/// Host reads of critical pages served by exactly one page decode (a read of a lost page
/// decodes nothing; Meta-Cure's replica read is a second decode): their failures beside the
/// failure probability the error model gives each at its page's age, kind and strength
/// (`controller::ReadRisk`), summed; and the same as if every one had been an LSB page,
/// or an MSB page — AP's σ bound on what placement can gain.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct CriticalRisk {
    /// Reads counted.
    pub decodes: u64,
    /// Of which uncorrectable.
    pub failures: u64,
    /// Of which from LSB pages.
    pub lsb: u64,
    /// Σ of their failure probabilities: the expected failure count.
    pub expected: f64,
    /// Σ as LSB pages.
    pub expected_lsb: f64,
    /// Σ as MSB pages.
    pub expected_msb: f64,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            lat: (0..4)
                .map(|_| Histogram::new(3).expect("valid sigfig"))
                .collect(),
            queue: Default::default(),
            service: Default::default(),
            count: [0; 4],
            bytes: [0; 4],
            sum_ns: [0; 4],
            max_ns: [0; 4],
            read_errors: 0,
            critical_reads: 0,
            critical_read_errors: 0,
            critical_risk: CriticalRisk::default(),
            request_feedbacks: 0,
            verified_reads: 0,
            mismatches: 0,
            trim_overruns: 0,
            flush_overruns: 0,
            start: None,
            end: Nanos::ZERO,
            last_arrival: Nanos::ZERO,
        }
    }
}

impl Metrics {
    /// Records one completed request: it arrived at `arrival` and completed at `done`; its
    /// own service (its operations on idle dies and its firmware work) took `service`, and
    /// the rest of its response time was waiting — in the host queue, or for dies and
    /// channels busy with earlier work.
    pub fn record(
        &mut self,
        kind: ReqKind,
        bytes: u64,
        arrival: Nanos,
        service: Nanos,
        done: Nanos,
    ) {
        let i = kind.index();
        let lat = done.saturating_sub(arrival).0;
        let service = service.0.min(lat);
        self.queue[i].record(lat - service);
        self.service[i].record(service);
        self.lat[i]
            .record(lat)
            .expect("auto-resizing histogram accepts any value");
        self.count[i] += 1;
        self.bytes[i] += bytes;
        self.sum_ns[i] += lat as u128;
        self.max_ns[i] = self.max_ns[i].max(lat);
        self.start.get_or_insert(arrival);
        self.last_arrival = self.last_arrival.max(arrival);
        self.end = self.end.max(done);
    }

    /// Requests recorded.
    pub fn requests(&self) -> u64 {
        self.count.iter().sum()
    }
}

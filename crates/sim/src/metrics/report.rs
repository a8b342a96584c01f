//! The report: its parts and how it is built from a run's metrics and counters.

use super::counters::{diff, scalar_counters};
use super::Metrics;
use crate::request::ReqKind;
use controller::EccStats;
use ftl::{Cause, FtlCounters};
use nand::Nanos;
use serde::Serialize;
use std::collections::BTreeMap;

/// Latency summary of one request kind, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct LatencyStats {
    /// Requests.
    pub count: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// 99.99th percentile.
    pub p9999_us: f64,
    /// Maximum.
    pub max_us: f64,
}

/// A time distribution's summary, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct Quantiles {
    /// Mean.
    pub mean_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Maximum.
    pub max_us: f64,
}

/// One request kind's response time split: its own service — its flash operations on
/// dies and channels that are free (GC steps, pads, checkpoint and trim-log pages it
/// issued included) and its firmware work — and the rest, waiting: in the host queue, and
/// for dies and channels busy with earlier requests' work (a trim or flush is a barrier:
/// it starts once every die is free).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct LatencySplit {
    /// Waiting: response time less service.
    pub queue: Quantiles,
    /// The request's own service.
    pub service: Quantiles,
}

/// Host-side operation counts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct HostStats {
    /// Requests completed.
    pub requests: u64,
    /// Logical pages written.
    pub pages_written: u64,
    /// Logical pages read.
    pub pages_read: u64,
    /// Trim requests.
    pub trim_requests: u64,
    /// Bytes the trim requests covered.
    pub trimmed_bytes: u64,
    /// Whole logical pages the trims covered (a trim discards only whole pages; a page
    /// trimmed twice counts twice).
    pub pages_trimmed: u64,
    /// Mapped pages the trims dropped: distinct, a page already unmapped (never written,
    /// or trimmed before) is not counted again.
    pub pages_unmapped_by_trim: u64,
    /// Flushes.
    pub flushes: u64,
    /// Pages that could not be read back (uncorrectable).
    pub read_errors: u64,
    /// Reads of critical pages (the experiment's `[hints] critical` ranges).
    pub critical_pages_read: u64,
    /// Critical pages that could not be read back (uncorrectable).
    pub critical_read_errors: u64,
    /// The critical reads that decoded one page, beside the error model's analytic
    /// failure probability (absent when no critical page was read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub critical_risk: Option<CriticalRiskReport>,
    /// Queued non-critical writes served ahead of a critical write (AP's request feedback).
    pub request_feedbacks: u64,
    /// Reads checked against the written data (bytes mode).
    pub verified_reads: u64,
    /// Reads that returned other data than written (must be 0).
    pub mismatches: u64,
}

/// `host.critical_risk`: critical reads that decoded one page, their failures, and what
/// the error model expects of them (see [`crate::metrics::CriticalRisk`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct CriticalRiskReport {
    /// Reads counted.
    pub decodes: u64,
    /// Of which uncorrectable.
    pub failures: u64,
    /// Share of them served from LSB pages.
    pub lsb_share: f64,
    /// Expected failures: the sum of each read's analytic failure probability.
    pub expected: f64,
    /// Mean failure probability per read (`expected / decodes`).
    pub failure_probability: f64,
    /// Expected failures had every one been an LSB page.
    pub expected_lsb: f64,
    /// Expected failures had every one been an MSB page.
    pub expected_msb: f64,
    /// `expected_lsb / expected_msb`: the most any placement can gain at these pages' ages
    /// (every page moved from LSB to MSB); 1 on SLC, `NaN`-free (0 when nothing can fail).
    pub lsb_bound: f64,
}

impl CriticalRiskReport {
    fn of(r: &crate::metrics::CriticalRisk) -> Option<Self> {
        (r.decodes > 0).then(|| CriticalRiskReport {
            decodes: r.decodes,
            failures: r.failures,
            lsb_share: r.lsb as f64 / r.decodes as f64,
            expected: r.expected,
            failure_probability: r.expected / r.decodes as f64,
            expected_lsb: r.expected_lsb,
            expected_msb: r.expected_msb,
            lsb_bound: if r.expected_msb > 0.0 {
                r.expected_lsb / r.expected_msb
            } else {
                0.0
            },
        })
    }
}

/// NAND-side counts: operations by cause, and every scalar counter the FTL keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct NandStats {
    /// Page reads by cause.
    pub reads: BTreeMap<&'static str, u64>,
    /// Page programs by cause.
    pub programs: BTreeMap<&'static str, u64>,
    /// Block erases by cause.
    pub erases: BTreeMap<&'static str, u64>,
    /// All page programs.
    pub total_programs: u64,
    /// All erases.
    pub total_erases: u64,
    /// Every scalar field of [`FtlCounters`] by its name (`gc_victims`, `valid_copies`,
    /// `meta_bytes`, `rt_overruns`, …; their meaning is documented there), over the
    /// measured phase — the running maxima (`max_victim_valid`, `max_buffer_pages`) since
    /// the volume was formatted. Declared once, in `FtlCounters`: a counter added there is
    /// reported (`nand.<name>`) and known to sweeps with no other edit.
    #[serde(flatten)]
    pub counters: BTreeMap<String, u64>,
}

impl NandStats {
    /// The FTL counter `name` (a field of [`FtlCounters`]).
    ///
    /// # Panics
    /// If `FtlCounters` has no scalar field `name`.
    pub fn counter(&self, name: &str) -> u64 {
        match self.counters.get(name) {
            Some(&v) => v,
            None => panic!("FtlCounters has no scalar counter `{name}`"),
        }
    }
}

/// Erase counts over all blocks (absolute, including preconditioning).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct WearStats {
    /// Sum of erase counts.
    pub total: u64,
    /// Smallest.
    pub min: u32,
    /// Largest.
    pub max: u32,
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub stddev: f64,
}

/// ECC outcome of the measured phase.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct EccReport {
    /// Pages decoded.
    pub reads: u64,
    /// Bits corrected.
    pub corrected_bits: u64,
    /// Uncorrectable metadata ("critical") page reads.
    pub uncorrectable_critical: u64,
    /// Uncorrectable other page reads.
    pub uncorrectable_normal: u64,
    /// Miscorrections caught by the CRC.
    pub miscorrections_caught: u64,
    /// Most errors in one codeword.
    pub max_codeword_errors: u32,
    /// Total decode time, µs.
    pub decode_us: f64,
    /// Mean ECC strength of the pages programmed in the phase (host data, copies,
    /// refreshes and metadata).
    pub mean_t: f64,
    /// The ECC-strength policy's own counts (FLARES).
    pub policy: PolicyReport,
}

/// What an adaptive ECC-strength policy (FLARES) did in the measured phase.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct PolicyReport {
    /// Estimation windows closed per zone.
    pub zone_fs: u64,
    /// Over-correction windows.
    pub zone_oc: u64,
    /// Critical-zone windows.
    pub zone_cr: u64,
    /// Failure-zone windows.
    pub zone_fa: u64,
    /// Safe-zone windows.
    pub zone_sz: u64,
    /// Rewrite alarms for retention raised on reads.
    pub retention_alarms: u64,
    /// Rewrite alarms of the failure zone.
    pub failure_alarms: u64,
    /// Pages the idle-time scrub checked.
    pub scrubbed_pages: u64,
    /// Pages the scrub found past their retention.
    pub scrub_alarms: u64,
    /// Pages rewritten by refresh (programs of cause `refresh`).
    pub refresh_writes: u64,
    /// Relocated pages re-encoded at another strength than their source's.
    pub reencoded_copies: u64,
    /// FLARES's write amplification: (host page writes + refresh writes) / host page
    /// writes (1 = refresh added nothing; the paper's Fig. 6 measure).
    pub refresh_wa: f64,
    /// Controller RAM of the per-page profiles (bytes).
    pub pprof_ram_bytes: u64,
    /// Spare-area bytes per page of the profile's critical part (its own codeword).
    pub pprof_spare_bytes: u64,
    /// Page profiles whose spare-area codeword did not decode (the controller's count).
    pub pprof_failures: u64,
    /// Profiles rebuilt without their spare-area codeword.
    pub pprof_fallbacks: u64,
}

/// What produced a report, in words (the full experiment configuration is in
/// [`Report::config`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Setup {
    /// Cell type and geometry: `MLC, 1 channel × 1 die × 2 planes × 64 blocks × 256 pages
    /// of 8192 + 448 B`.
    pub chip: String,
    /// Raw capacity in bytes (data areas).
    pub raw_bytes: u64,
    /// The chip as numbers, for scripts: what `chip` says in words, and its timing.
    /// Settings, not measurements: not among [`Report::metrics`].
    pub device: Option<Device>,
    /// The FTL and its policies.
    pub ftl: String,
    /// The bit error model.
    pub errors: String,
    /// The load: closed loop at a queue depth, or open loop at the requests' own times.
    pub load: String,
    /// The synthetic workload's parameters, or the trace replayed.
    pub workload: String,
}

/// The chip a report ran on, as numbers (`setup.device` in the JSON form): cell type,
/// geometry (`page_size` and `spare_size` in bytes) and timing (`*_ns` in nanoseconds,
/// `transfer_ps_per_byte` in picoseconds per byte on the channel).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Device {
    /// The chip's preset or name.
    pub name: String,
    /// `slc`, `mlc` or `tlc`.
    pub cell: nand::CellType,
    /// Channels, dies per channel, planes per die, blocks per plane, pages per block,
    /// page and spare bytes, subpages per page.
    pub geometry: nand::Geometry,
    /// Array and bus times.
    pub timing: nand::Timing,
}

/// The report of a run: everything DESIGN.md's "metrics every run reports" that applies.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Report {
    /// Experiment name.
    pub name: String,
    /// Seed.
    pub seed: u64,
    /// Chip preset / name.
    pub chip: String,
    /// FTL scheme.
    pub ftl: String,
    /// Payload mode.
    pub payload: String,
    /// Logical capacity in bytes.
    pub logical_bytes: u64,
    /// Simulated time of the measured phase, seconds.
    pub sim_seconds: f64,
    /// Host operations.
    pub host: HostStats,
    /// NAND operations.
    pub nand: NandStats,
    /// Write amplification of the measured phase: NAND page programs (host, GC, wear
    /// levelling, metadata, padding) per host page written. A host write smaller than a
    /// page counts as one page (see `waf_per_byte`).
    pub waf: f64,
    /// Write amplification per byte: bytes programmed into NAND data areas per byte the
    /// host wrote (higher than `waf` when host writes are smaller than a page).
    pub waf_per_byte: f64,
    /// Open loop: the load offered, requests per second of arrivals (`null` in closed
    /// loop, where the device sets the pace).
    pub offered_iops: Option<f64>,
    /// What produced this report, in words.
    pub setup: Setup,
    /// The experiment configuration, as given (chip section, FTL, workload, load, …).
    pub config: serde_json::Value,
    /// Erase counts.
    pub wear: WearStats,
    /// Latency per request kind.
    pub latency: BTreeMap<&'static str, LatencyStats>,
    /// Latency per request kind split into queue wait and service.
    pub latency_split: BTreeMap<&'static str, LatencySplit>,
    /// ECC.
    pub ecc: EccReport,
    /// Space and latency bounds (WAO-GC's Table I and Fig. 11).
    pub realtime: RealTimeReport,
    /// FTL metadata by kind, its share of flash writes, SP-block wear and NWI, the
    /// demand-paged caches' hit rates, NAND service time (SPFTL's Figs. 1, 5, 6, §V-D).
    pub meta: MetaReport,
    /// IOPS over the measured phase (simulated time).
    pub iops: f64,
    /// NAND page reads and programs per second of the measured phase (FLARES's Fig. 7
    /// throughput measure).
    pub flash_ops_per_s: f64,
    /// NAND page reads and programs per second of die busy time (summed over dies): the
    /// same throughput measure where the host idles for long stretches (idle time is not
    /// the flash's).
    pub flash_ops_per_busy_s: f64,
    /// Mean response time over every request of the measured phase (arrival to
    /// completion, queueing included), µs.
    pub mean_response_us: f64,
    /// The longest response time of a read or write request of the measured phase (the
    /// larger of `latency.read.max_us` and `latency.write.max_us`: WAO-GC's "system
    /// latency in the worst case" of data requests; trims and flushes are barriers that
    /// wait for the whole device), µs.
    pub max_response_us: f64,
    /// Host throughput in MiB/s (simulated time).
    pub throughput_mib_s: f64,
    /// What the request source skipped, clamped or changed in its input (a trace's
    /// counted warnings: other devices, zero-length requests, clamped timestamps, folds).
    pub input_notes: Vec<String>,
    /// The recovery of a copy of the chip as the run left it (`[recovery] after_run`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery: Option<RecoveryStats>,
}

/// FTL metadata (SPFTL, Ref. 001): bytes by kind, share of flash writes, erases of
/// full-page and SP blocks, NWI (eq. 1), cache hit rates and NAND service time.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct MetaReport {
    /// Metadata bytes programmed in all (every scheme: checkpoints and logs too).
    pub bytes: u64,
    /// Page-map (PMT) units written back.
    pub pmt_bytes: u64,
    /// Block-information (BIT) units written back.
    pub bit_bytes: u64,
    /// Global-context (GXT) units.
    pub gxt_bytes: u64,
    /// PMT units copied by the PMT partition's GC.
    pub pmt_gc_bytes: u64,
    /// BIT units copied by the BIT partition's GC.
    pub bit_gc_bytes: u64,
    /// Host data bytes programmed (host pages, GC copies, padding: every program that is
    /// not a metadata unit, at the page size).
    pub data_bytes: u64,
    /// `bytes / (bytes + data_bytes)`: the metadata share of every byte programmed.
    pub share: f64,
    /// `bytes / (bytes + host bytes written)`: metadata against the user data it serves,
    /// GC copies left out (SPFTL's Fig. 1 breakdown of flash writes into user data and FTL
    /// metadata).
    pub share_of_host: f64,
    /// Metadata bytes per host byte written.
    pub per_host_byte: f64,
    /// Erases of full-page blocks.
    pub fp_erases: u64,
    /// Erases of SP blocks (SPFTL's metadata blocks).
    pub sp_erases: u64,
    /// NWI: `fp_erases + sp_erases × sp_weight` (eq. 1).
    pub nwi: f64,
    /// CPMT look-ups that hit (0 when the scheme has no CPMT).
    pub cpmt_hit_rate: f64,
    /// CBIT look-ups that hit.
    pub cbit_hit_rate: f64,
    /// SPFTL_log: logs merged into their metadata unit (a log subpage that filled).
    pub log_merges: u64,
    /// NAND service time: every die's busy time over the measured phase, s (§V-D's FTL
    /// service time).
    pub service_s: f64,
}

/// A scheme's space utilisation and, when it guarantees one, its latency bound (µs; 0
/// when the scheme states none).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct RealTimeReport {
    /// Logical capacity over the chip's raw capacity (WAO-GC's Fig. 11).
    pub space_utilisation: f64,
    /// The guaranteed worst write of one page on an idle die, with transfers and decode.
    pub write_bound_us: f64,
    /// The guaranteed worst read of one page on an idle die.
    pub read_bound_us: f64,
    /// The write bound in array times only, as WAO-GC's Table I states U(t).
    pub array_write_bound_us: f64,
    /// The most valid pages a victim can hold (Table I's U(λ)).
    pub u_lambda: u64,
    /// Table I's L_buf (pages of the destination writes take while a victim is collected).
    pub l_buf: u64,
    /// Valid-page copies per partial step (α; 0 when GC completes inside one write).
    pub alpha: u64,
    /// The derived worst flash work of one trim (0: not derived for this scheme); the map
    /// work per discarded page is charged on top.
    pub trim_bound_us: f64,
    /// The derived worst flash work of one flush (0: not derived for this scheme).
    pub flush_bound_us: f64,
    /// Trims whose own flash work exceeded `trim_bound_us`.
    pub trim_overruns: u64,
    /// Flushes whose own flash work exceeded `flush_bound_us`.
    pub flush_overruns: u64,
}

/// A crash recovery measured after the run (`[recovery] after_run`): the scheme's own
/// procedure over a copy of the chip, in simulated NAND time.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RecoveryStats {
    /// The procedure (`roll-forward`, `full-scan`, …).
    pub procedure: String,
    /// Simulated recovery time, ms (per die the sum of its reads, dies in parallel).
    pub ms: f64,
    /// Pages read in all.
    pub pages_read: u64,
    /// Checkpoint pages read.
    pub checkpoint_pages: u64,
    /// Data blocks whose pages were read.
    pub blocks_scanned: u64,
    /// Logical pages mapped after recovery.
    pub mapped_pages: u64,
}

/// What a report is built from.
pub struct ReportInput<'a> {
    /// Experiment name.
    pub name: &'a str,
    /// Seed.
    pub seed: u64,
    /// Chip name.
    pub chip: &'a str,
    /// FTL scheme name.
    pub ftl: &'a str,
    /// Payload mode name.
    pub payload: &'a str,
    /// Logical capacity.
    pub logical_bytes: u64,
    /// The run's metrics.
    pub metrics: &'a Metrics,
    /// FTL counters now.
    pub counters: &'a FtlCounters,
    /// FTL counters at the start of the measured phase.
    pub baseline: &'a FtlCounters,
    /// ECC stats now.
    pub ecc: EccStats,
    /// ECC stats at the start of the measured phase.
    pub ecc_baseline: EccStats,
    /// Controller RAM of the ECC-strength policy's per-page state.
    pub policy_ram_bytes: u64,
    /// The scheme's latency bound, if it guarantees one.
    pub latency_bound: Option<ftl::LatencyBound>,
    /// The chip's raw data capacity in bytes (every page of every block).
    pub raw_bytes: u64,
    /// Spare bytes per page of the policy's own record (FLARES's PPROF codeword).
    pub pprof_spare_bytes: u64,
    /// Erase counts of all blocks.
    pub erase_counts: &'a [u32],
    /// Page size in bytes (for the per-byte WAF).
    pub page_size: u64,
    /// Open loop (offered load is reported).
    pub open_loop: bool,
    /// What produced the run.
    pub setup: Setup,
    /// The experiment configuration.
    pub config: serde_json::Value,
    /// NWI weight of an SP block's erase (SPFTL eq. 1).
    pub sp_weight: f64,
    /// Every die's busy time over the measured phase, ns.
    pub busy_ns: u64,
}

impl Report {
    /// Builds the report.
    pub fn build(i: ReportInput<'_>) -> Report {
        let m = i.metrics;
        let c = diff(i.counters, i.baseline);
        let by_cause = |a: [u64; Cause::COUNT]| -> BTreeMap<&'static str, u64> {
            Cause::ALL
                .iter()
                .filter(|k| a[k.index()] > 0)
                .map(|k| (k.name(), a[k.index()]))
                .collect()
        };
        let latency = latency_stats(m);
        let latency_split = latency_split(m);
        let ec = i.erase_counts;
        let n = ec.len().max(1) as f64;
        let total: u64 = ec.iter().map(|&x| x as u64).sum();
        let mean = total as f64 / n;
        let var = ec.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
        let span = m.end.saturating_sub(m.start.unwrap_or(Nanos::ZERO)).0 as f64 / 1e9;
        let requests = m.requests();
        let max_response_us: f64 = ["read", "write"]
            .iter()
            .filter_map(|k| latency.get(k))
            .map(|l: &LatencyStats| l.max_us)
            .fold(0.0, f64::max);
        let meta = meta_report(&c, m, &i);
        let ecc = ecc_report(&c, &i);
        let realtime = realtime_report(&i, m);
        Report {
            meta,
            name: i.name.to_string(),
            seed: i.seed,
            chip: i.chip.to_string(),
            ftl: i.ftl.to_string(),
            payload: i.payload.to_string(),
            logical_bytes: i.logical_bytes,
            sim_seconds: span,
            host: HostStats {
                requests,
                pages_written: c.host_writes,
                pages_read: c.host_reads,
                trim_requests: m.count[ReqKind::Trim.index()],
                trimmed_bytes: m.bytes[ReqKind::Trim.index()],
                pages_trimmed: c.trims,
                pages_unmapped_by_trim: c.trimmed_pages,
                flushes: c.flushes,
                read_errors: m.read_errors,
                critical_pages_read: m.critical_reads,
                critical_read_errors: m.critical_read_errors,
                critical_risk: CriticalRiskReport::of(&m.critical_risk),
                request_feedbacks: m.request_feedbacks,
                verified_reads: m.verified_reads,
                mismatches: m.mismatches,
            },
            nand: NandStats {
                reads: by_cause(c.reads),
                programs: by_cause(c.programs),
                erases: by_cause(c.erases),
                total_programs: c.programs.iter().sum(),
                total_erases: c.erases.iter().sum(),
                counters: scalar_counters(&c),
            },
            waf: c.waf(),
            waf_per_byte: if m.bytes[1] > 0 {
                c.programs.iter().sum::<u64>() as f64 * i.page_size as f64 / m.bytes[1] as f64
            } else {
                0.0
            },
            offered_iops: {
                let first = m.start.unwrap_or(Nanos::ZERO);
                let span = m.last_arrival.saturating_sub(first).0 as f64 / 1e9;
                (i.open_loop && span > 0.0 && requests > 1).then(|| (requests - 1) as f64 / span)
            },
            setup: i.setup,
            config: i.config,
            wear: WearStats {
                total,
                min: ec.iter().copied().min().unwrap_or(0),
                max: ec.iter().copied().max().unwrap_or(0),
                mean,
                stddev: var.sqrt(),
            },
            latency,
            latency_split,
            ecc,
            realtime,
            iops: if span > 0.0 {
                requests as f64 / span
            } else {
                0.0
            },
            flash_ops_per_s: if span > 0.0 {
                (c.reads.iter().sum::<u64>() + c.programs.iter().sum::<u64>()) as f64 / span
            } else {
                0.0
            },
            flash_ops_per_busy_s: if i.busy_ns > 0 {
                (c.reads.iter().sum::<u64>() + c.programs.iter().sum::<u64>()) as f64
                    / (i.busy_ns as f64 / 1e9)
            } else {
                0.0
            },
            mean_response_us: if requests > 0 {
                m.sum_ns.iter().sum::<u128>() as f64 / requests as f64 / 1000.0
            } else {
                0.0
            },
            max_response_us,
            throughput_mib_s: if span > 0.0 {
                (m.bytes[0] + m.bytes[1]) as f64 / span / (1 << 20) as f64
            } else {
                0.0
            },
            input_notes: Vec::new(),
            recovery: None,
        }
    }
}

/// Latency by request kind (kinds that occurred).
fn latency_stats(m: &Metrics) -> BTreeMap<&'static str, LatencyStats> {
    let mut latency = BTreeMap::new();
    for k in ReqKind::ALL {
        let h = &m.lat[k.index()];
        let n = m.count[k.index()];
        if n == 0 {
            continue;
        }
        let us = |v: u64| v as f64 / 1000.0;
        latency.insert(
            k.name(),
            LatencyStats {
                count: n,
                bytes: m.bytes[k.index()],
                mean_us: (m.sum_ns[k.index()] as f64 / n as f64) / 1000.0,
                p50_us: us(h.value_at_quantile(0.5)),
                p99_us: us(h.value_at_quantile(0.99)),
                p999_us: us(h.value_at_quantile(0.999)),
                p90_us: us(h.value_at_quantile(0.9)),
                p9999_us: us(h.value_at_quantile(0.9999)),
                max_us: us(m.max_ns[k.index()]),
            },
        );
    }
    latency
}

/// Each request kind's latency split into queueing and service (kinds that occurred).
fn latency_split(m: &Metrics) -> BTreeMap<&'static str, LatencySplit> {
    ReqKind::ALL
        .iter()
        .filter(|k| m.count[k.index()] > 0)
        .map(|k| {
            let (i, n) = (k.index(), m.count[k.index()]);
            let split = LatencySplit {
                queue: m.queue[i].summary(n),
                service: m.service[i].summary(n),
            };
            (k.name(), split)
        })
        .collect()
}

/// The metadata section (SPFTL's measures: bytes by kind, shares, NWI, cache hit rates).
fn meta_report(c: &FtlCounters, m: &Metrics, i: &ReportInput<'_>) -> MetaReport {
    let rate = |h: u64, m: u64| {
        if h + m == 0 {
            0.0
        } else {
            h as f64 / (h + m) as f64
        }
    };
    let data_bytes = (c.programs.iter().sum::<u64>() - c.meta_programs) * i.page_size;
    let all_erases: u64 = c.erases.iter().sum();
    MetaReport {
        bytes: c.meta_bytes,
        pmt_bytes: c.meta_bytes_by_kind.pmt,
        bit_bytes: c.meta_bytes_by_kind.bit,
        gxt_bytes: c.meta_bytes_by_kind.gxt,
        pmt_gc_bytes: c.meta_bytes_by_kind.pmt_gc,
        bit_gc_bytes: c.meta_bytes_by_kind.bit_gc,
        data_bytes,
        share: if c.meta_bytes + data_bytes == 0 {
            0.0
        } else {
            c.meta_bytes as f64 / (c.meta_bytes + data_bytes) as f64
        },
        share_of_host: if c.meta_bytes + m.bytes[1] == 0 {
            0.0
        } else {
            c.meta_bytes as f64 / (c.meta_bytes + m.bytes[1]) as f64
        },
        per_host_byte: if m.bytes[1] > 0 {
            c.meta_bytes as f64 / m.bytes[1] as f64
        } else {
            0.0
        },
        fp_erases: all_erases - c.sp_erases,
        sp_erases: c.sp_erases,
        nwi: (all_erases - c.sp_erases) as f64 + c.sp_erases as f64 * i.sp_weight,
        cpmt_hit_rate: rate(c.cpmt_hits, c.cpmt_misses),
        cbit_hit_rate: rate(c.cbit_hits, c.cbit_misses),
        log_merges: c.log_merges,
        service_s: i.busy_ns as f64 / 1e9,
    }
}

/// The ECC section: the measured phase's decoder counts, and the strength policy's.
fn ecc_report(c: &FtlCounters, i: &ReportInput<'_>) -> EccReport {
    let (e, b) = (i.ecc, i.ecc_baseline);
    EccReport {
        reads: e.reads - b.reads,
        corrected_bits: e.corrected_bits - b.corrected_bits,
        uncorrectable_critical: e.uncorrectable_critical - b.uncorrectable_critical,
        uncorrectable_normal: e.uncorrectable_normal - b.uncorrectable_normal,
        miscorrections_caught: e.miscorrections_caught - b.miscorrections_caught,
        max_codeword_errors: e.max_codeword_errors,
        decode_us: (e.decode_ns - b.decode_ns) as f64 / 1000.0,
        mean_t: {
            let h = &c.ecc_policy.programs_by_t;
            let n: u64 = h.iter().sum();
            let sum: u64 = h.iter().enumerate().map(|(t, &k)| t as u64 * k).sum();
            if n > 0 {
                sum as f64 / n as f64
            } else {
                0.0
            }
        },
        policy: {
            let p = &c.ecc_policy;
            let refresh = c.programs[Cause::Refresh.index()];
            PolicyReport {
                zone_fs: p.zones[0],
                zone_oc: p.zones[1],
                zone_cr: p.zones[2],
                zone_fa: p.zones[3],
                zone_sz: p.zones[4],
                retention_alarms: p.retention_alarms,
                failure_alarms: p.failure_alarms,
                scrubbed_pages: p.scrubbed_pages,
                scrub_alarms: p.scrub_alarms,
                refresh_writes: refresh,
                reencoded_copies: p.reencoded_copies,
                pprof_ram_bytes: i.policy_ram_bytes,
                pprof_spare_bytes: i.pprof_spare_bytes,
                pprof_failures: e.pprof_failures - b.pprof_failures,
                pprof_fallbacks: p.pprof_fallbacks,
                refresh_wa: if c.host_writes > 0 {
                    (c.host_writes + refresh) as f64 / c.host_writes as f64
                } else {
                    1.0
                },
            }
        },
    }
}

/// The real-time section: the scheme's derived bounds and the measured overruns.
fn realtime_report(i: &ReportInput<'_>, m: &Metrics) -> RealTimeReport {
    RealTimeReport {
        space_utilisation: if i.raw_bytes > 0 {
            i.logical_bytes as f64 / i.raw_bytes as f64
        } else {
            0.0
        },
        write_bound_us: i.latency_bound.map_or(0.0, |b| b.write_ns as f64 / 1e3),
        read_bound_us: i.latency_bound.map_or(0.0, |b| b.read_ns as f64 / 1e3),
        array_write_bound_us: i
            .latency_bound
            .map_or(0.0, |b| b.array_write_ns as f64 / 1e3),
        u_lambda: i.latency_bound.map_or(0, |b| b.u_lambda as u64),
        l_buf: i.latency_bound.map_or(0, |b| b.l_buf as u64),
        alpha: i.latency_bound.map_or(0, |b| b.alpha as u64),
        trim_bound_us: i.latency_bound.map_or(0.0, |b| b.trim_ns as f64 / 1e3),
        flush_bound_us: i.latency_bound.map_or(0.0, |b| b.flush_ns as f64 / 1e3),
        trim_overruns: m.trim_overruns,
        flush_overruns: m.flush_overruns,
    }
}

//! The report's output forms (JSON, CSV) and its metrics by dotted name.

use super::report::*;
use crate::request::ReqKind;
use ftl::Cause;
use std::collections::BTreeMap;
use std::fmt::Write as _;

impl Report {
    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("report serialises")
    }

    /// `key,value` lines (nested keys joined with dots).
    pub fn to_csv(&self) -> String {
        let mut out = String::from("key,value\n");
        self.leaves(&mut |key, v| match v {
            serde_json::Value::String(s) => {
                let _ = writeln!(out, "{key},\"{}\"", s.replace('"', "\"\""));
            }
            other => {
                let _ = writeln!(out, "{key},{other}");
            }
        });
        out
    }

    /// Calls `f` with every leaf of the report's JSON form and its dotted key, in order.
    fn leaves(&self, f: &mut dyn FnMut(&str, &serde_json::Value)) {
        json_leaves(&serde_json::to_value(self).expect("report serialises"), f);
    }

    /// Every numeric field of the report by its dotted name (`waf`, `host.requests`,
    /// `latency.write.p99_us`, `nand.programs.gc`, …): the metrics a sweep records per cell.
    /// Maps hold only the causes and request kinds that occurred; [`Report::metric_names`]
    /// lists every name a report can have.
    pub fn metrics(&self) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        self.leaves(&mut |key, v| {
            if key.starts_with("config.") {
                return; // settings, not measurements
            }
            if let serde_json::Value::Number(n) = v {
                out.insert(key.to_string(), n.as_f64().unwrap_or(f64::NAN));
            }
        });
        out
    }

    /// Every metric name a report can carry (all causes, all request kinds), for checking a
    /// sweep's metric names before anything runs.
    pub fn metric_names() -> std::collections::BTreeSet<String> {
        let causes = || Cause::ALL.iter().map(|k| (k.name(), 0)).collect();
        let stats = LatencyStats {
            count: 0,
            bytes: 0,
            mean_us: 0.0,
            p50_us: 0.0,
            p99_us: 0.0,
            p999_us: 0.0,
            p90_us: 0.0,
            p9999_us: 0.0,
            max_us: 0.0,
        };
        let example = Report {
            name: String::new(),
            seed: 0,
            chip: String::new(),
            ftl: String::new(),
            payload: String::new(),
            logical_bytes: 0,
            sim_seconds: 0.0,
            host: HostStats {
                requests: 0,
                pages_written: 0,
                pages_read: 0,
                trim_requests: 0,
                trimmed_bytes: 0,
                pages_trimmed: 0,
                pages_unmapped_by_trim: 0,
                flushes: 0,
                read_errors: 0,
                critical_pages_read: 0,
                critical_read_errors: 0,
                request_feedbacks: 0,
                verified_reads: 0,
                mismatches: 0,
            },
            nand: NandStats {
                reads: causes(),
                programs: causes(),
                erases: causes(),
                total_programs: 0,
                total_erases: 0,
                valid_copies: 0,
                gc_victims: 0,
                wl_migrations: 0,
                retired_blocks: 0,
                lost_pages: 0,
                checkpoints: 0,
                trim_records: 0,
                meta_bytes: 0,
                pad_pages: 0,
                placement_pads: 0,
                placement_lapses: 0,
                pairing_lookups: 0,
                replica_programs: 0,
                replica_reads: 0,
                replica_rescues: 0,
                read_retries: 0,
                slc_blocks: 0,
                region_swaps: 0,
                max_victim_valid: 0,
                max_buffer_pages: 0,
                partial_steps: 0,
                rt_overruns: 0,
            },
            waf: 0.0,
            waf_per_byte: 0.0,
            offered_iops: Some(0.0),
            setup: Setup::default(),
            config: serde_json::Value::Null,
            wear: WearStats {
                total: 0,
                min: 0,
                max: 0,
                mean: 0.0,
                stddev: 0.0,
            },
            latency: ReqKind::ALL.iter().map(|k| (k.name(), stats)).collect(),
            latency_split: ReqKind::ALL
                .iter()
                .map(|k| (k.name(), LatencySplit::default()))
                .collect(),
            realtime: RealTimeReport::default(),
            meta: MetaReport::default(),
            ecc: EccReport {
                reads: 0,
                corrected_bits: 0,
                uncorrectable_critical: 0,
                uncorrectable_normal: 0,
                miscorrections_caught: 0,
                max_codeword_errors: 0,
                decode_us: 0.0,
                mean_t: 0.0,
                policy: PolicyReport::default(),
            },
            iops: 0.0,
            flash_ops_per_s: 0.0,
            flash_ops_per_busy_s: 0.0,
            mean_response_us: 0.0,
            max_response_us: 0.0,
            throughput_mib_s: 0.0,
            input_notes: Vec::new(),
            recovery: Some(RecoveryStats::default()),
        };
        example.metrics().into_keys().collect()
    }
}

/// Calls `f` with every leaf of `v` (a value that is not an object) and its dotted key, in
/// order.
pub(crate) fn json_leaves(v: &serde_json::Value, f: &mut dyn FnMut(&str, &serde_json::Value)) {
    fn walk(prefix: &str, v: &serde_json::Value, f: &mut dyn FnMut(&str, &serde_json::Value)) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    let p = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&p, x, f);
                }
            }
            leaf => f(prefix, leaf),
        }
    }
    walk("", v, f);
}

//! The report's output forms (JSON, CSV) and its metrics by dotted name.

use super::counters::scalar_counters;
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

    /// `key,value,unit` lines (nested keys joined with dots; the unit of each number as
    /// [`unit_of`] names it, `text` for words).
    pub fn to_csv(&self) -> String {
        let mut out = String::from("key,value,unit\n");
        self.leaves(&mut |key, v| match v {
            serde_json::Value::String(s) => {
                let _ = writeln!(out, "{key},\"{}\",text", s.replace('"', "\"\""));
            }
            serde_json::Value::Number(_) => {
                let _ = writeln!(out, "{key},{v},{}", unit_of(key));
            }
            other => {
                let _ = writeln!(out, "{key},{other},");
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
            if key.starts_with("config.") || key.starts_with("setup.device.") {
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
        let mut example = Report::default();
        example.nand.reads = causes();
        example.nand.programs = causes();
        example.nand.erases = causes();
        example.nand.counters = scalar_counters(&ftl::FtlCounters::default());
        example.latency = ReqKind::ALL
            .iter()
            .map(|k| (k.name(), LatencyStats::default()))
            .collect();
        example.latency_split = ReqKind::ALL
            .iter()
            .map(|k| (k.name(), LatencySplit::default()))
            .collect();
        example.offered_iops = Some(0.0);
        example.recovery = Some(RecoveryStats::default());
        example.host.critical_risk = Some(super::report::CriticalRiskReport::default());
        example.metrics().into_keys().collect()
    }
}

/// The unit of a report's number by its dotted name: `us`, `ns`, `ps/byte`, `s`, `bytes`,
/// `MiB/s`, `requests/s`, `ops/s`, `fraction` (0..=1), `ratio` (a quotient of like
/// quantities), `bits`, or `count` (events, pages, blocks, requests, cycles).
pub fn unit_of(key: &str) -> &'static str {
    let last = key.rsplit('.').next().unwrap_or(key);
    let under = |what: &str| key.split('.').any(|s| s == what);
    match last {
        _ if last.ends_with("_us") => "us",
        _ if last.ends_with("_ns") => "ns",
        _ if last.ends_with("_ps_per_byte") => "ps/byte",
        "sim_seconds" | "service_s" => "s",
        _ if last.ends_with("_mib_s") => "MiB/s",
        "iops" | "offered_iops" => "requests/s",
        _ if last.starts_with("flash_ops_per") => "ops/s",
        "bytes" | "page_size" | "spare_size" => "bytes",
        _ if last.ends_with("_bytes") => "bytes",
        _ if last.ends_with("_rate") || last.starts_with("share") => "fraction",
        "space_utilisation" | "mix" | "u_lambda" => "fraction",
        "waf" | "waf_per_byte" | "refresh_wa" | "nwi" | "mean_t" | "alpha" | "per_host_byte" => {
            "ratio"
        }
        _ if last.ends_with("_bits") || (last.ends_with("_errors") && under("ecc")) => "bits",
        // (`wear.mean`, `wear.max`, … summarise erase counts.)
        _ => "count",
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

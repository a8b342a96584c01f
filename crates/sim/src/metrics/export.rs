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

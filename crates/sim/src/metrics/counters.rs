//! The FTL's counters in a report: every scalar counter by name (`nand.<name>`), and the
//! measured phase's counts, both derived from `ftl::FtlCounters`' serialised form so that
//! a counter declared there needs no edit here.

use ftl::FtlCounters;
use std::collections::BTreeMap;

/// Every scalar (`u64`) field of `c` by its name: the counters a report carries under
/// `nand.` (arrays by cause and nested groups are reported in their own sections).
pub(crate) fn scalar_counters(c: &FtlCounters) -> BTreeMap<String, u64> {
    let v = serde_json::to_value(c).expect("counters serialise");
    let serde_json::Value::Object(m) = v else {
        unreachable!("FtlCounters serialises as a map")
    };
    m.into_iter()
        .filter_map(|(k, v)| v.as_u64().map(|n| (k, n)))
        .collect()
}

/// The counts of the measured phase: `a − b` for every counter of [`FtlCounters`] (nested
/// groups and per-cause arrays too), walked through their serialised form so that a
/// counter added there needs no edit here. Running maxima (fields named `max_*`) keep
/// `a`'s value: the measured phase's maximum is the whole run's. A counter that went down
/// (a gauge, like the policy's zone occupancy) gives 0.
pub(crate) fn diff(a: &FtlCounters, b: &FtlCounters) -> FtlCounters {
    use serde_json::Value;
    fn walk(a: &mut Value, b: &Value) {
        match (a, b) {
            (Value::Object(ma), Value::Object(mb)) => {
                for (k, va) in ma.iter_mut() {
                    if let (false, Some(vb)) = (k.starts_with("max_"), mb.get(k)) {
                        walk(va, vb);
                    }
                }
            }
            (Value::Array(xa), Value::Array(xb)) => {
                for (va, vb) in xa.iter_mut().zip(xb) {
                    walk(va, vb);
                }
            }
            (Value::Number(na), Value::Number(nb)) => {
                if let (Some(x), Some(y)) = (na.as_u64(), nb.as_u64()) {
                    *na = x.saturating_sub(y).into();
                }
            }
            _ => {}
        }
    }
    let mut va = serde_json::to_value(a).expect("counters serialise");
    walk(
        &mut va,
        &serde_json::to_value(b).expect("counters serialise"),
    );
    serde_json::from_value(va).expect("counters deserialise")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_subtracts_every_counter_and_keeps_running_maxima() {
        let mut b = FtlCounters {
            gc_victims: 3,
            max_victim_valid: 9,
            ..FtlCounters::default()
        };
        b.reads[1] = 5;
        b.meta_bytes_by_kind.pmt = 7;
        b.ecc_policy.retention_alarms = 2;
        let mut a = b;
        a.gc_victims += 10;
        a.reads[1] += 4;
        a.meta_bytes_by_kind.pmt += 1;
        a.ecc_policy.retention_alarms += 6;
        a.max_victim_valid = 12;
        a.sp_erases = 1;
        let d = diff(&a, &b);
        assert_eq!(d.gc_victims, 10);
        assert_eq!(d.reads[1], 4);
        assert_eq!(d.meta_bytes_by_kind.pmt, 1);
        assert_eq!(d.ecc_policy.retention_alarms, 6);
        assert_eq!(
            d.max_victim_valid, 12,
            "a running maximum is not a difference"
        );
        assert_eq!(d.sp_erases, 1);
        assert_eq!(diff(&b, &b).gc_victims, 0);
        let names = scalar_counters(&d);
        assert_eq!(names["gc_victims"], 10);
        assert!(names.contains_key("rt_overruns") && !names.contains_key("reads"));
    }
}

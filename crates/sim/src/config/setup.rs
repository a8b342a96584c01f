//! An experiment described in words for its report (`ExperimentConfig::setup`): the chip,
//! the FTL's settings, the error model, the load and the workload.

use super::{ExperimentConfig, FtlScheme, LoadKind, ModelKind};
use nand::ChipConfig;

impl ExperimentConfig {
    /// What this experiment runs, in words, for reports (`chip` is its resolved chip).
    pub fn setup(&self, chip: &ChipConfig) -> crate::metrics::Setup {
        let g = &chip.geometry;
        let plural =
            |n: u32, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let json = |v: &dyn erased::Ser| v.json();
        let errors = &self.errors;
        crate::metrics::Setup {
            chip: format!(
                "{} {}, {} × {} × {} × {} × {} of {} + {} B",
                chip.name,
                format!("{:?}", chip.cell).to_uppercase(),
                plural(g.channels, "channel", "channels"),
                plural(g.dies_per_channel, "die", "dies"),
                plural(g.planes_per_die, "plane", "planes"),
                plural(g.blocks_per_plane, "block", "blocks"),
                plural(g.pages_per_block, "page", "pages"),
                g.page_size,
                g.spare_size
            ),
            raw_bytes: g.capacity_bytes(),
            device: Some(crate::metrics::Device {
                name: chip.name.clone(),
                cell: chip.cell,
                geometry: *g,
                timing: chip.timing,
            }),
            ftl: format!(
                "{}: {}",
                self.ftl.scheme_config().name(),
                match self.ftl.scheme {
                    FtlScheme::Page => kv(&json(&self.ftl.page)),
                    FtlScheme::Block => kv(&json(&self.ftl.block)),
                    FtlScheme::Gftl => kv(&json(&self.ftl.gftl)),
                    FtlScheme::Rftl => kv(&json(&self.ftl.rftl)),
                    FtlScheme::DftlPor => kv(&json(&self.ftl.dftl_por)),
                    FtlScheme::Spftl => kv(&json(&self.ftl.spftl)),
                    FtlScheme::SpftlLog => kv(&json(&self.ftl.spftl_log)),
                    FtlScheme::Combined => kv(&json(&self.ftl.combined)),
                }
            ),
            errors: match errors.model {
                ModelKind::None => "none".into(),
                ModelKind::Constant => format!("constant RBER {}", errors.rber),
                ModelKind::Flares => "FLARES (P/E cycles and retention)".into(),
                ModelKind::Ap => "AP's 29F64G (LSB RBER 2e-6 fresh to 8e-5 at 3000 P/E)".into(),
            } + &if errors.sigma() != 1.0 {
                format!(", MSB pages × {}", errors.sigma())
            } else {
                String::new()
            } + &if errors.scale != 1.0 {
                format!(", the chip's RBER × {} the model's", errors.scale)
            } else {
                String::new()
            } + &if errors.read_disturb > 0.0 {
                format!(", read disturb {} per read", errors.read_disturb)
            } else {
                String::new()
            },
            load: match self.load.mode {
                LoadKind::Closed => format!(
                    "closed loop, {} outstanding{}",
                    self.load.queue_depth,
                    self.load
                        .device_queue
                        .map_or(String::new(), |d| format!(", device serves {d} at once"))
                ),
                LoadKind::Open => format!(
                    "open loop (requests at their own times){}",
                    self.load
                        .device_queue
                        .map_or(String::new(), |d| format!(", device serves {d} at once"))
                ),
            },
            workload: match (&self.workload, &self.trace) {
                (Some(w), _) => format!("synthetic: {}", kv(&json(w))),
                (None, Some(t)) => format!(
                    "trace {} ({}{})",
                    t.path.display(),
                    json(&t.format).as_str().unwrap_or("?"),
                    if t.wrap {
                        ", addresses folded"
                    } else if t.fit {
                        ", device fitted to it"
                    } else {
                        ""
                    }
                ),
                (None, None) => "none".into(),
            },
        }
    }
}

/// `key value` pairs of a JSON value, nested keys dotted, nulls left out.
fn kv(v: &serde_json::Value) -> String {
    let mut out = Vec::new();
    crate::metrics::json_leaves(v, &mut |key, leaf| match leaf {
        serde_json::Value::Null => {}
        serde_json::Value::String(s) => out.push(format!("{key} {s}")),
        other if key.is_empty() => out.push(other.to_string()),
        other => out.push(format!("{key} {other}")),
    });
    out.join(", ")
}

/// Serialising through a trait object (for [`ExperimentConfig::setup`]).
mod erased {
    /// Anything serialisable, as JSON.
    pub trait Ser {
        fn json(&self) -> serde_json::Value;
    }
    impl<T: serde::Serialize> Ser for T {
        fn json(&self) -> serde_json::Value {
            serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
        }
    }
}

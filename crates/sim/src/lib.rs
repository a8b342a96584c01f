//! # sim — nandlab's simulator
//!
//! Frontends and the engine above the FTL: [`workload`] (synthetic IOMeter-style
//! generator), [`trace`] (MSR, MQSim/DiskSim, blkparse, SPC readers), [`engine`]
//! (request queue and scheduler, simulated clock, open- and closed-loop load),
//! [`timeline`] (per-die and per-channel busy-until), [`metrics`] (latency histograms,
//! reports in text, JSON and CSV) and [`config`] (experiment files).
//!
//! Deterministic: the same experiment file and seed give a byte-identical JSON report.

pub mod config;
pub mod crash;
pub mod engine;
pub mod metrics;
mod summary;
pub use summary::human_time;
pub mod request;
pub use ftl::timeline;
pub mod trace;
pub mod workload;

pub use config::{Experiment, ExperimentConfig};
pub use engine::{Background, Engine, Fifo, LoadMode, Progress, Scheduler};
pub use metrics::{Metrics, Report, ReportInput};
pub use request::{ReqKind, Request};
pub use trace::{BlkAction, Resume, TraceFormat, TraceOptions, TraceReader};
pub use workload::{RequestSource, Synthetic, SyntheticConfig};

use thiserror::Error;

/// The volume a simulation runs: any scheme over the simulator's RAM chip and its boxed
/// error model (the scheme factory's [`ftl::BoxedVolume`]).
pub type SimVolume = ftl::BoxedVolume<nand::RamStorage, Box<dyn nand::ErrorModel + Send>>;

/// Simulator errors.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SimError {
    /// A malformed trace line.
    #[error("{file}:{line}: field {field}: {message}")]
    Trace {
        /// Trace file.
        file: String,
        /// 1-based line number.
        line: u64,
        /// The offending field.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A request past the device.
    #[error("request at byte {offset} (+{len}) is past the device's {capacity} bytes")]
    OutOfRange {
        /// Offset.
        offset: u64,
        /// Length.
        len: u64,
        /// Device capacity.
        capacity: u64,
    },
    /// Bad configuration.
    #[error("{0}")]
    Config(String),
    /// File I/O.
    #[error("{0}")]
    Io(String),
    /// The run would need more memory than the machine has available (said before it
    /// starts, with what to change).
    #[error("{0}")]
    Memory(String),
    /// The FTL failed (out of space, power loss).
    #[error("FTL: {0}")]
    Ftl(#[from] ftl::FtlError),
}

impl Experiment {
    /// Preconditions (if enabled), runs the workload and builds the report.
    pub fn run(&mut self, progress: &mut dyn FnMut(Progress)) -> Result<Report, SimError> {
        let p = self.config.precondition.clone();
        if p.enabled {
            self.engine.precondition(
                p.fill,
                p.max_overwrite,
                p.tolerance,
                p.footprint,
                self.config.seed ^ 0x9E37,
            )?;
        }
        let start = self.engine.clock();
        if let Some(w) = self.warmup.as_mut() {
            self.engine.run(&mut **w, self.mode, &mut |_| {})?;
            self.engine.reset_metrics();
        }
        // The measured arrivals count from the warm-up's start when they continue it.
        let base = if self.warmup.is_some() && self.warmup_continues {
            start
        } else {
            self.engine.clock()
        };
        let baseline = self.engine.counters();
        let ecc_baseline = self.engine.ftl().ecc_stats();
        let busy0: u64 = self.engine.die_busy().iter().map(|t| t.0).sum();
        self.engine
            .run_from(base, &mut *self.source, self.mode, progress)?;
        let counters = self.engine.counters();
        let ftl = self.engine.ftl();
        let mut report = Report::build(ReportInput {
            name: &self.config.name,
            seed: self.config.seed,
            chip: &self.chip.name,
            ftl: self.config.ftl.scheme_config().name(),
            payload: match self.config.controller.mode {
                controller::PayloadMode::Bytes => "bytes",
                controller::PayloadMode::Digest => "digest",
            },
            logical_bytes: self.engine.capacity(),
            metrics: self.engine.metrics(),
            counters: &counters,
            baseline: &baseline,
            ecc: ftl.ecc_stats(),
            ecc_baseline,
            policy_ram_bytes: ftl.policy_ram_bytes(),
            latency_bound: ftl.latency_bound(),
            raw_bytes: self.chip.geometry.capacity_bytes(),
            pprof_spare_bytes: if ftl.controller_pprof() {
                controller::layout::PPROF_BYTES as u64
            } else {
                0
            },
            erase_counts: ftl.erase_counts(),
            page_size: self.chip.geometry.page_size as u64,
            open_loop: matches!(self.mode, engine::LoadMode::OpenLoop),
            setup: self.config.setup(&self.chip),
            config: serde_json::to_value(&self.config).unwrap_or(serde_json::Value::Null),
            sp_weight: match self.config.ftl.scheme_config() {
                ftl::SchemeConfig::DftlPor(c)
                | ftl::SchemeConfig::Spftl(c)
                | ftl::SchemeConfig::SpftlLog(c) => c.sp_weight,
                _ => 1.0 / 1.71,
            },
            busy_ns: self.engine.die_busy().iter().map(|t| t.0).sum::<u64>() - busy0,
        });
        report.input_notes = self.source.notes();
        // The over-provisioning the FTL chose, where it raised the configured value.
        if let (ftl::SchemeConfig::Page(c) | ftl::SchemeConfig::Combined(c), Some(op)) = (
            self.config.ftl.scheme_config(),
            self.engine.ftl().over_provisioning(),
        ) {
            if op != c.over_provisioning {
                let from = format!("over_provisioning {}", c.over_provisioning);
                report.setup.ftl = report.setup.ftl.replace(
                    &from,
                    &format!(
                        "over_provisioning {op} (raised from {} for WAO-GC's bound)",
                        c.over_provisioning
                    ),
                );
            }
        }
        if self.config.recovery.after_run {
            report.recovery = Some(self.recover_copy()?);
        }
        if let Some(n) = &self.fit_note {
            report.setup.workload = format!("{}; {n}", report.setup.workload);
        }
        Ok(report)
    }
}

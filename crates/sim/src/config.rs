//! Experiment files (TOML): chip, controller, error model, FTL, preconditioning, workload or
//! trace, load mode, seeds and report paths. Unknown keys and bad values are rejected by
//! name.
//!
//! ```toml
//! name = "demo"
//! seed = 7
//! [chip]                      # a chip file inline: preset + overrides, or every field
//! preset = "micron-29f64g"
//! [chip.geometry]
//! blocks_per_plane = 64
//! [controller]
//! sector_size = 512
//! mode = "bytes"              # or "digest"
//! [errors]
//! model = "flares"            # "none", "constant" (with rber), "flares", "ap"
//! msb_ratio = 0.5             # AP's σ (default 0.5 with "ap", else 1)
//! page_bits = 8640            # draw a page's errors over this many bits (AP Table 1's N)
//! persistent = 0.0            # share of the RBER that persists in the cells across reads
//! block_sigma = 0.0           # per-block log-normal spread of the RBER (mean factor 1)
//! step_hours = 4380.0         # a retention step: pages older than this see the RBER ×
//! step_factor = 4.0           #   step_factor
//! [ftl]
//! scheme = "page"
//! [ftl.page]
//! over_provisioning = 0.125
//! victim = "greedy"
//! [precondition]
//! fill = true
//! max_overwrite = 2.0
//! [workload]                  # or [trace] path/format/wrap
//! requests = 100000
//! read_pct = 30
//! [load]
//! mode = "closed"
//! queue_depth = 16
//! [report]
//! json = "report.json"
//! ```

use crate::engine::{Background, Engine, LoadMode};
use crate::trace::{TraceFormat, TraceReader};
use crate::workload::{RequestSource, Synthetic, SyntheticConfig};
use crate::SimError;
use controller::{Controller, ControllerConfig, EccLatency, PayloadMode};
use nand::{
    CachedFlares, Chip, ChipConfig, ConstantRber, ErrorModel, FlaresRber, KindRatio, Nanos,
    RamStorage, ReadDisturb,
};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

mod fit;
mod ftl_section;
mod memory;
mod recover;
mod setup;
pub use ftl_section::{FtlScheme, FtlSection};
pub use recover::RecoverySection;

/// `[controller]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ControllerSection {
    /// ECC sector size in bytes.
    pub sector_size: usize,
    /// Payload mode.
    pub mode: PayloadMode,
    /// Decode latency model.
    pub latency: EccLatency,
    /// Firmware time to drop one mapped page on a trim, ns (see `sim::engine`).
    pub map_update_ns: u64,
    /// Firmware time per search of the shared-pages table (AP's placement and GC), ns.
    pub pairing_lookup_ns: u64,
    /// BCH decode engines per channel (`controller::ControllerConfig::ecc_engines`; 0:
    /// decodes unconstrained).
    pub ecc_engines: u32,
    /// Digest mode: whether the chip's store keeps each page's spare prefix packed
    /// (`controller::layout::RecordPacker`, half the bytes, about a tenth fewer simulated
    /// operations per second; never a different result).
    pub pack_spare: PackSpare,
}

/// `[controller] pack_spare`: a digest-mode store's packing of spare prefixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PackSpare {
    /// On chips of `ftl::PACK_SPARE_FROM_PAGES` pages or more (2²⁶: 256 GiB of 4 KiB
    /// pages), where memory, not time, limits a run.
    #[default]
    Auto,
    /// Always (memory first).
    Always,
    /// Never (time first).
    Never,
}

impl PackSpare {
    /// Whether a chip of `pages` pages gets a packed store.
    pub fn packs(self, pages: u64) -> bool {
        match self {
            PackSpare::Auto => pages >= ftl::PACK_SPARE_FROM_PAGES,
            PackSpare::Always => true,
            PackSpare::Never => false,
        }
    }
}

impl Default for ControllerSection {
    fn default() -> Self {
        ControllerSection {
            sector_size: 512,
            mode: PayloadMode::Bytes,
            latency: EccLatency::default(),
            map_update_ns: crate::engine::DEFAULT_MAP_UPDATE.0,
            pairing_lookup_ns: crate::engine::DEFAULT_PAIRING_LOOKUP.0,
            ecc_engines: ControllerConfig::default().ecc_engines,
            pack_spare: PackSpare::Auto,
        }
    }
}

/// Raw bit error model names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// No bit errors.
    None,
    /// A constant RBER (`rber`).
    Constant,
    /// FLARES eq. 5 with Table III parameters.
    #[default]
    Flares,
    /// AP's Micron 29F64G: LSB RBER from 2e-6 fresh to 8e-5 at 3000 P/E, exponential in
    /// P/E cycles ([`nand::WearExp::AP_MICRON_29F64G`]); MSB pages σ = `msb_ratio` (default
    /// 0.5) times that.
    Ap,
}

/// `[errors]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ErrorSection {
    /// Which model.
    pub model: ModelKind,
    /// RBER of the constant model.
    pub rber: f64,
    /// RBER of MSB pages relative to LSB pages (AP's σ, in (0, 1]; default 0.5 with the
    /// `ap` model, else 1: no asymmetry).
    pub msb_ratio: Option<f64>,
    /// RBER added per read since program (read disturb).
    pub read_disturb: f64,
    /// The chip's RBER over the model's (default 1): a chip that departs from the model an
    /// ECC-strength policy relies on (`nand::Scaled`; > 0).
    pub scale: f64,
    /// Draw a page's errors over this many bits instead of its real size, then spread them
    /// over its real bits (`controller::ErrorDraw`): AP Table 1 counts the 8640-byte page as
    /// N = 8640 bits. Unset: the page's real bits.
    pub page_bits: Option<u64>,
    /// Share of the RBER that persists in a page's cells across its reads, in [0, 1]
    /// (`controller::ErrorDraw`; default 0: every read draws afresh).
    pub persistent: f64,
    /// Block-to-block variation: each block's RBER is the model's times a log-normal
    /// factor of mean 1 whose logarithm has this spread (`controller::ErrorDraw`; 0: none).
    pub block_sigma: f64,
    /// A retention step: pages older than this many hours see the RBER times
    /// `step_factor` (`controller::ErrorDraw`; unset: no step).
    pub step_hours: Option<f64>,
    /// The RBER's factor past the retention step (default 1).
    pub step_factor: f64,
}

impl ErrorSection {
    /// The controller's error-draw options these keys set.
    pub fn draw(&self) -> controller::ErrorDraw {
        controller::ErrorDraw {
            page_bits: self.page_bits,
            persistent: self.persistent,
            block_sigma: self.block_sigma,
            step_hours: self.step_hours,
            step_factor: self.step_factor,
        }
    }

    /// AP's σ in effect: `msb_ratio`, or its default (0.5 with the `ap` model, else 1).
    pub fn sigma(&self) -> f64 {
        self.msb_ratio.unwrap_or(if self.model == ModelKind::Ap {
            0.5
        } else {
            1.0
        })
    }
}

impl Default for ErrorSection {
    fn default() -> Self {
        ErrorSection {
            model: ModelKind::Flares,
            rber: 0.0,
            msb_ratio: None,
            read_disturb: 0.0,
            scale: 1.0,
            page_bits: None,
            persistent: 0.0,
            block_sigma: 0.0,
            step_hours: None,
            step_factor: 1.0,
        }
    }
}

/// `[precondition]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PreconditionSection {
    /// Run it at all.
    pub enabled: bool,
    /// Write every logical page once first.
    pub fill: bool,
    /// At most this many volumes of random overwrites.
    pub max_overwrite: f64,
    /// Stop when a window's WAF is within this fraction of the previous window's.
    pub tolerance: f64,
    /// Share of the volume preconditioned, from its start (default 1): the rest stays
    /// unwritten, free space GC can use — a benchmark's test file on an otherwise empty
    /// volume. In (0, 1].
    pub footprint: f64,
}

impl Default for PreconditionSection {
    fn default() -> Self {
        PreconditionSection {
            enabled: true,
            fill: true,
            max_overwrite: 2.0,
            tolerance: 0.02,
            footprint: 1.0,
        }
    }
}

/// `[trace]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSection {
    /// Trace file (relative to the experiment file).
    pub path: PathBuf,
    /// Its format.
    pub format: TraceFormat,
    /// Fold addresses past the device instead of rejecting them (see `sim::trace`).
    #[serde(default)]
    pub wrap: bool,
    /// Size the device to the trace: the smallest number of blocks per plane of the
    /// configured chip whose logical capacity holds the highest address the trace reads or
    /// writes (trims past the end are clipped). Not with `wrap`.
    #[serde(default)]
    pub fit: bool,
    /// The device to replay when the trace holds several (default: the first one seen).
    #[serde(default)]
    pub device: Option<String>,
    /// blkparse: the action whose events are requests (`Q`, `D` or `C`).
    #[serde(default)]
    pub blkparse_action: crate::trace::BlkAction,
    /// Replay the trace this many times back to back (≥ 1; each pass's timestamps after
    /// the previous pass's last): a benchmark run again on the same volume, where one pass
    /// writes less than the chip holds.
    #[serde(default = "one")]
    pub repeat: u32,
    /// Seconds without a request after which the FTL gets idle time until the next one
    /// arrives (its background hook: GC, erases, scrubs, checkpoint steps), as `nandlab
    /// serve` gives it after 0.2 s; unset: a trace has no idle periods.
    #[serde(default)]
    pub idle_after_s: Option<f64>,
}

fn one() -> u32 {
    1
}

/// Load modes by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadKind {
    /// Requests at their timestamps.
    Open,
    /// A fixed number outstanding.
    #[default]
    Closed,
}

/// `[load]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoadSection {
    /// Open or closed loop.
    pub mode: LoadKind,
    /// Outstanding requests in closed loop.
    pub queue_depth: u32,
    /// When the FTL's background hook runs: `"idle"` (host idle periods) or
    /// `"every-request"`.
    pub background: Background,
    /// Requests the device serves at once (its internal queue, ≥ 1); the others wait in the
    /// scheduler. Unset: every queued request is dispatched at once.
    pub device_queue: Option<u32>,
    /// Serve every read and write as page-sized requests, one after another in the order
    /// of the request's pages (trims and flushes whole): latency metrics become per page
    /// operation, as a real-time FTL's bounds are stated (WAO-GC's driver serves pages).
    pub page_requests: bool,
}

impl Default for LoadSection {
    fn default() -> Self {
        LoadSection {
            mode: LoadKind::Closed,
            queue_depth: 8,
            background: Background::Idle,
            device_queue: None,
            page_requests: false,
        }
    }
}

/// `[report]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReportSection {
    /// JSON report path.
    pub json: Option<PathBuf>,
    /// CSV report path.
    pub csv: Option<PathBuf>,
}

/// `[aging]`: cycle the chip before the FTL formats it (see `Chip::age_all`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgingSection {
    /// P/E cycles every good block has when the experiment starts.
    pub pe: u32,
}

/// A byte range of the volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ByteRange {
    /// First byte.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
}

/// `[hints]`: write hints the engine adds to every request, from synthetic workloads and
/// trace replays alike.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HintSection {
    /// Writes to these ranges are critical (AP: where the file system keeps its metadata,
    /// e.g. `[{ offset = 0, len = 1048576 }]` for the first MiB).
    pub critical: Vec<ByteRange>,
}

/// A whole experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentConfig {
    /// Name in reports.
    #[serde(default = "default_name")]
    pub name: String,
    /// Seed of the chip, the controller's error stream and the workload.
    #[serde(default)]
    pub seed: u64,
    /// The chip, as a chip file's table.
    pub chip: toml::Table,
    /// Controller.
    #[serde(default)]
    pub controller: ControllerSection,
    /// Bit errors.
    #[serde(default)]
    pub errors: ErrorSection,
    /// FTL.
    #[serde(default)]
    pub ftl: FtlSection,
    /// Preconditioning.
    #[serde(default)]
    pub precondition: PreconditionSection,
    /// Synthetic workload (if no trace).
    #[serde(default)]
    pub workload: Option<SyntheticConfig>,
    /// Trace replay (instead of a workload).
    #[serde(default)]
    pub trace: Option<TraceSection>,
    /// Chip aging before format.
    #[serde(default)]
    pub aging: Option<AgingSection>,
    /// Write hints.
    #[serde(default)]
    pub hints: HintSection,
    /// Load mode.
    #[serde(default)]
    pub load: LoadSection,
    /// Report files.
    #[serde(default)]
    pub report: ReportSection,
    /// A recovery after the run (`[recovery] after_run`).
    #[serde(default)]
    pub recovery: RecoverySection,
    /// Victim and placement policies of your own that `[ftl]` may name beside the
    /// built-in ones (not part of the file: a program that registers policies sets it
    /// before [`build`](ExperimentConfig::build)).
    #[serde(skip)]
    pub registry: ftl::policy::Registry,
}

fn default_name() -> String {
    "experiment".into()
}

/// A built experiment, ready to run.
pub struct Experiment {
    /// The config it came from.
    pub config: ExperimentConfig,
    /// The chip's config.
    pub chip: ChipConfig,
    /// The engine over the device.
    pub engine: Engine,
    /// The requests.
    pub source: Box<dyn RequestSource>,
    /// Load mode.
    pub mode: LoadMode,
    /// What `fit` chose, in words (`None` without it).
    pub fit_note: Option<String>,
    /// Requests replayed after preconditioning and before `source`, not measured (the
    /// state a recorded trace's first part leaves: `nandlab run --warmup-trace`).
    pub warmup: Option<Box<dyn RequestSource>>,
    /// The measured source's arrivals continue the warm-up's: both count from the time the
    /// warm-up began (the parts of one recorded trace; see `trace::Resume`).
    pub warmup_continues: bool,
}

impl std::fmt::Debug for Experiment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Experiment")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl ExperimentConfig {
    /// Parses an experiment file's text; `file` names it in errors.
    pub fn from_toml_str(text: &str, file: &str) -> Result<Self, SimError> {
        Self::from_toml_str_in(text, file, ftl::policy::Registry::default())
    }

    /// [`from_toml_str`](ExperimentConfig::from_toml_str) for a program with policies of
    /// its own: the victim and placement names of `[ftl.page]` and `[ftl.combined]` must be
    /// built in or in `registry` (an unknown one is an error naming the file and line),
    /// and the experiment builds with them.
    pub fn from_toml_str_in(
        text: &str,
        file: &str,
        registry: ftl::policy::Registry,
    ) -> Result<Self, SimError> {
        let mut cfg: Self =
            toml::from_str(text).map_err(|e| SimError::Config(toml_error(&e, text, file)))?;
        for (section, c) in [("page", &cfg.ftl.page), ("combined", &cfg.ftl.combined)] {
            let checks = [
                ("victim", c.victim.name(), registry.victim(c.victim).err()),
                (
                    "placement",
                    c.placement.name(),
                    registry.placement(c.placement).err(),
                ),
            ];
            for (key, name, err) in checks {
                let Some(err) = err else { continue };
                // The line that names it (the first `key = "name"`), for the message.
                let quoted = format!("\"{name}\"");
                let at = text
                    .lines()
                    .position(|l| l.trim_start().starts_with(key) && l.contains(&quoted))
                    .map_or(file.to_string(), |i| format!("{file}:{}", i + 1));
                return Err(SimError::Config(format!(
                    "{at}: ftl.{section}.{key} = {quoted}: unknown policy ({err})"
                )));
            }
        }
        cfg.registry = registry;
        Ok(cfg)
    }

    /// The built-in default experiment of `nandlab run`: a small MLC chip (AP's Micron
    /// 29F64G with 64 blocks per plane: 256 MiB), bytes mode with the FLARES error model and
    /// AP's σ = 0.5 for MSB pages, the combined profile, preconditioned, then 100 000
    /// requests of a 70/30 read/write random 4–16 KiB mix at queue depth 8.
    pub fn builtin_default() -> Self {
        let chip: toml::Table =
            toml::from_str("preset = \"micron-29f64g\"\n[geometry]\nblocks_per_plane = 64\n")
                .expect("valid");
        ExperimentConfig {
            name: "default".into(),
            seed: 1,
            chip,
            controller: ControllerSection::default(),
            errors: ErrorSection {
                msb_ratio: Some(0.5),
                ..ErrorSection::default()
            },
            ftl: FtlSection {
                scheme: FtlScheme::Combined,
                ..FtlSection::default()
            },
            precondition: PreconditionSection::default(),
            workload: Some(SyntheticConfig {
                requests: Some(100_000),
                read_pct: 70.0,
                size: crate::workload::SizeSpec::Choice(vec![4096, 8192, 16384]),
                ..SyntheticConfig::default()
            }),
            trace: None,
            aging: None,
            hints: HintSection::default(),
            load: LoadSection::default(),
            report: ReportSection::default(),
            recovery: RecoverySection::default(),
            registry: ftl::policy::Registry::default(),
        }
    }

    /// Builds the device, engine and request source. Relative trace paths are resolved
    /// against `base_dir`.
    pub fn build(self, base_dir: &Path) -> Result<Experiment, SimError> {
        // The problems that do not depend on each other are reported together.
        let mut errs: Vec<String> = Vec::new();
        if let Some(Err(SimError::Config(e))) = self.workload.as_ref().map(|w| w.validate()) {
            errs.push(e);
        }
        // (An invalid model is reported with the rest; a stand-in lets the FTL's own
        // checks run.)
        let model = match self.error_model() {
            Ok(m) => m,
            Err(e) => {
                errs.push(e.to_string());
                Box::new(ConstantRber(0.0))
            }
        };
        if self.load.mode == LoadKind::Closed && self.load.queue_depth == 0 {
            errs.push("load.queue_depth: 0 must be at least 1 (closed loop)".into());
        }
        if self.load.device_queue == Some(0) {
            errs.push("load.device_queue: 0 must be at least 1".into());
        }
        let f = self.precondition.footprint;
        if !(f > 0.0 && f <= 1.0) {
            errs.push(format!("precondition.footprint: {f} must be in (0, 1]"));
        }
        let chip_cfg = toml::to_string(&self.chip)
            .map_err(|e| format!("chip: {e}"))
            .and_then(|t| ChipConfig::from_toml_str(&t).map_err(|e| format!("chip.{e}")));
        let mut chip_cfg = match chip_cfg {
            Ok(c) => c,
            Err(e) => {
                errs.push(e);
                return Err(SimError::Config(errs.join("\n")));
            }
        };
        if !self.chip.contains_key("seed") {
            chip_cfg.seed = self.seed;
        }
        let scheme = self.ftl.scheme_config();
        let trace_path = self.trace.as_ref().map(|t| {
            if t.path.is_absolute() {
                t.path.clone()
            } else {
                base_dir.join(&t.path)
            }
        });
        let trace_opts = self.trace.as_ref().map(|t| crate::trace::TraceOptions {
            wrap: t.wrap,
            fit: t.fit,
            device: t.device.clone(),
            blkparse_action: t.blkparse_action,
            idle_after: t.idle_after_s.map(|s| Nanos((s * 1e9) as u64)),
            ..crate::trace::TraceOptions::new(0)
        });
        if let Some(s) = self.trace.as_ref().and_then(|t| t.idle_after_s) {
            if !(0.0..1e9).contains(&s) {
                errs.push(format!(
                    "trace.idle_after_s = {s}: expected a number of seconds, 0 or more"
                ));
            }
        }
        let mut fit_note = None;
        let ftl = match (&self.trace, &trace_path, &trace_opts) {
            (Some(t), Some(path), Some(opts)) if t.fit => {
                if t.wrap {
                    errs.push("trace: fit and wrap exclude each other (fit sizes the device to the trace, wrap folds the trace into the device)".into());
                }
                if !errs.is_empty() {
                    return Err(SimError::Config(errs.join("\n")));
                }
                let extent = crate::trace::TraceReader::extent(path, t.format, opts)?;
                let fitted =
                    self.fit_device(chip_cfg.clone(), model, &scheme, extent, &mut errs)?;
                chip_cfg.geometry.blocks_per_plane = fitted.blocks_per_plane;
                fit_note = Some(fitted.note);
                fitted.ftl
            }
            _ => match self.device(&chip_cfg, model, &scheme, &mut Vec::new()) {
                Ok(f) => f,
                Err(e) => {
                    errs.push(e);
                    return Err(SimError::Config(errs.join("\n")));
                }
            },
        };
        if !errs.is_empty() {
            return Err(SimError::Config(errs.join("\n")));
        }
        let g = chip_cfg.geometry;
        let mut engine = Engine::new(
            ftl,
            g.total_dies() as usize,
            g.channels as usize,
            self.controller.mode == PayloadMode::Bytes,
        );
        let capacity = engine.capacity();
        let ranges: Vec<(u64, u64)> = self
            .hints
            .critical
            .iter()
            .map(|r| (r.offset, r.len))
            .collect();
        self.check_hints(capacity, &g)?;
        self.check_memory(capacity, &g, fit_note.is_some())?;
        engine.set_critical_ranges(&ranges)?;
        engine.set_background(self.load.background);
        engine.set_map_update_cost(Nanos(self.controller.map_update_ns));
        engine.set_pairing_lookup_cost(Nanos(self.controller.pairing_lookup_ns));
        engine.set_device_slots(self.load.device_queue.map(|n| n as usize));
        let source = self.request_source(capacity, trace_path, trace_opts)?;
        let source = if self.load.page_requests {
            Box::new(crate::workload::PageRequests::new(
                source,
                chip_cfg.geometry.page_size as u64,
            ))
        } else {
            source
        };
        let mode = match self.load.mode {
            LoadKind::Open => LoadMode::OpenLoop,
            LoadKind::Closed => LoadMode::ClosedLoop {
                queue_depth: self.load.queue_depth,
            },
        };
        Ok(Experiment {
            config: self,
            chip: chip_cfg,
            engine,
            source,
            mode,
            fit_note,
            warmup: None,
            warmup_continues: false,
        })
    }

    /// The `[hints]` critical ranges lie within the volume (`capacity` bytes), and
    /// Meta-Cure's copies of them fit half the over-provisioned space of geometry `g`.
    fn check_hints(&self, capacity: u64, g: &nand::Geometry) -> Result<(), SimError> {
        for (i, r) in self.hints.critical.iter().enumerate() {
            if r.len == 0 || r.offset.checked_add(r.len).is_none_or(|e| e > capacity) {
                return Err(SimError::Config(format!(
                    "hints.critical[{i}]: offset = {}, len = {} is not a non-empty range within the volume's {capacity} bytes",
                    r.offset, r.len
                )));
            }
        }
        let replicas = self.ftl.page.replicas as u64;
        if replicas > 0 {
            // Meta-Cure's copies live in the over-provisioned space: more than half of it
            // would leave GC nothing to work with (the device fills up and fails).
            let critical: u64 = self.hints.critical.iter().map(|r| r.len).sum();
            let physical = g.total_pages() * g.page_size as u64;
            let spare = physical.saturating_sub(capacity);
            if critical * replicas > spare / 2 {
                return Err(SimError::Config(format!(
                    "ftl.page.replicas = {replicas}: {replicas} backup copies of the {critical} critical bytes ([hints] critical) need {} bytes, more than half of the device's {spare} bytes of over-provisioned space; lower the replicas or the critical ranges, or raise ftl.page.over_provisioning",
                    critical * replicas
                )));
            }
        }
        Ok(())
    }

    /// The request source: the synthetic workload, or the trace at `trace_path` (read with
    /// `trace_opts`, repeated as `[trace] repeat` says).
    fn request_source(
        &self,
        capacity: u64,
        trace_path: Option<std::path::PathBuf>,
        trace_opts: Option<crate::trace::TraceOptions>,
    ) -> Result<Box<dyn RequestSource>, SimError> {
        let trace = self.trace.as_ref().zip(trace_path.zip(trace_opts));
        let source: Box<dyn RequestSource> = match (&self.workload, trace) {
            (Some(_), Some(_)) => {
                return Err(SimError::Config(
                    "give either [workload] or [trace], not both".into(),
                ))
            }
            (None, None) => return Err(SimError::Config("missing [workload] or [trace]".into())),
            (Some(w), None) => Box::new(Synthetic::new(w.clone(), capacity, self.seed)?),
            (None, Some((t, (path, opts)))) => {
                let opts = crate::trace::TraceOptions { capacity, ..opts };
                if t.repeat == 0 {
                    return Err(SimError::Config(
                        "trace.repeat = 0: replay a trace at least once".into(),
                    ));
                }
                let format = t.format;
                let first = TraceReader::open(&path, format, &opts)?;
                if t.repeat == 1 {
                    Box::new(first)
                } else {
                    Box::new(crate::trace::Repeated::new(
                        Box::new(first),
                        t.repeat,
                        Box::new(move || {
                            TraceReader::open(&path, format, &opts)
                                .map(|r| Box::new(r) as Box<dyn RequestSource>)
                        }),
                    ))
                }
            }
        };
        Ok(source)
    }

    /// The chip (aged as `[aging]` says), controller and formatted FTL of `chip_cfg`; an
    /// error names the section. `codes` carries the BCH codes earlier devices of this
    /// experiment built (same sector size) and takes this one's: the fitting formats
    /// several candidates.
    fn device(
        &self,
        chip_cfg: &ChipConfig,
        model: Box<dyn ErrorModel + Send>,
        scheme: &ftl::SchemeConfig,
        codes: &mut Vec<Option<std::sync::Arc<ecc::Bch>>>,
    ) -> Result<crate::SimVolume, String> {
        let g = chip_cfg.geometry;
        let storage = if self.controller.mode == PayloadMode::Bytes {
            RamStorage::new(&g)
        } else {
            // The blocks the scheme reads back as data (its checkpoint region) keep real bytes.
            let pack = self.controller.pack_spare.packs(g.total_pages());
            scheme.digest_storage_packed(chip_cfg, pack)
        };
        let mut chip = Chip::new(chip_cfg.clone(), storage).map_err(|e| format!("chip: {e}"))?;
        if let Some(a) = self.aging {
            chip.age_all(Nanos::ZERO, a.pe)
                .map_err(|e| format!("aging.pe = {}: {e}", a.pe))?;
        }
        let ccfg = ControllerConfig {
            sector_size: self.controller.sector_size,
            mode: self.controller.mode,
            latency: self.controller.latency,
            seed: self.seed ^ 0xC011_7011,
            // The simulator's RAM is not rotting: the error model is the only source of
            // errors, so pristine pages may skip the decoder.
            verify_stored: false,
            ecc_engines: self.controller.ecc_engines,
        };
        let mut ctl = Controller::new(chip, model, ccfg).map_err(|e| format!("controller: {e}"))?;
        // The same Castagnoli CRC, with the CPU's instructions where it has them.
        ctl.set_crc32c(crc32c::crc32c);
        // Critical reads are measured against the model's failure probability.
        ctl.track_read_risk(!self.hints.critical.is_empty());
        ctl.set_error_draw(self.errors.draw())
            .map_err(|e| format!("errors: {e}"))?;
        ctl.adopt_codes(self.controller.sector_size, codes);
        let vol = scheme
            .format_in(ctl, Nanos::ZERO, &self.registry)
            .map_err(|e| format!("ftl.{}: {e}", scheme.name()))?;
        vol.controller().share_codes(codes);
        Ok(vol)
    }

    fn error_model(&self) -> Result<Box<dyn ErrorModel + Send>, SimError> {
        let e = &self.errors;
        let bad = |k: &str, v: f64| Err(SimError::Config(format!("errors.{k}: {v} out of range")));
        if !(0.0..1.0).contains(&e.rber) {
            return bad("rber", e.rber);
        }
        let sigma = e.sigma();
        if !(sigma > 0.0 && sigma <= 1.0) {
            return Err(SimError::Config(format!(
                "errors.msb_ratio: {sigma} out of range (AP's σ, the MSB pages' share of the LSB pages' RBER, is in (0, 1])"
            )));
        }
        if !(e.read_disturb >= 0.0 && e.read_disturb < 1.0) {
            return bad("read_disturb", e.read_disturb);
        }
        if !(e.scale > 0.0 && e.scale.is_finite()) {
            return bad("scale", e.scale);
        }
        e.draw()
            .validate()
            .map_err(|m| SimError::Config(format!("errors.{m}")))?;
        let base: Box<dyn ErrorModel + Send> = match e.model {
            ModelKind::None => Box::new(ConstantRber(0.0)),
            ModelKind::Constant => Box::new(ConstantRber(e.rber)),
            ModelKind::Flares => Box::new(CachedFlares::new(FlaresRber::default())),
            ModelKind::Ap => Box::new(nand::WearExp::AP_MICRON_29F64G),
        };
        let base: Box<dyn ErrorModel + Send> = if e.scale != 1.0 {
            Box::new(nand::Scaled {
                inner: base,
                factor: e.scale,
            })
        } else {
            base
        };
        let kinded: Box<dyn ErrorModel + Send> = if sigma != 1.0 {
            Box::new(KindRatio::ap(base, sigma))
        } else {
            base
        };
        Ok(if e.read_disturb > 0.0 {
            Box::new(ReadDisturb {
                inner: kinded,
                per_read: e.read_disturb,
            })
        } else {
            kinded
        })
    }
}

/// Where in `text` a TOML parse error lies: 1-based line and column.
pub fn toml_error_at(e: &toml::de::Error, text: &str) -> Option<(usize, usize)> {
    e.span().map(|s| {
        let before = &text[..s.start.min(text.len())];
        (
            before.matches('\n').count() + 1,
            before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1,
        )
    })
}

/// A TOML parse error as `file:line:col: message` (`file:0:0` when it has no position).
pub fn toml_error(e: &toml::de::Error, text: &str, file: &str) -> String {
    let (line, col) = toml_error_at(e, text).unwrap_or((0, 0));
    format!("{file}:{line}:{col}: {}", e.message().trim())
}

//! What a cell runs. A kind turns a cell's configuration (a TOML table) into metrics:
//!
//! - `experiment`: the configuration is an experiment file (`sim::ExperimentConfig`); the
//!   metrics are every numeric field of the run's report (`waf`, `latency.write.p99_us`, …).
//! - `ap-table1`: AP's Table 1 at one RBER: the analytic uncorrectable-page probability of
//!   LSB and MSB pages, and the same probability measured by the controller, which reads an
//!   LSB and an MSB page of an MLC chip `pages` times each with AP's σ applied by the chip's
//!   page kind, flips the drawn bits and decodes them with the real BCH decoder.
//! - `recovery`: one chip size: the same crash image recovered by a full scan and by
//!   checkpoint + roll-forward; simulated recovery time and the work of each.
//! - `flares-fig5` (`fig5`), `dcr` (`dcr`): see their modules.

use controller::{
    Controller, ControllerConfig, CtlError, DataClass, OobRecord, PageKind, PageRead, PayloadMode,
};
use ecc::reliability::{page_failure, AP_TABLE1_BITS};
use ftl::{PageFtlConfig, RecoveryKind, SchemeConfig};
use nand::{BitKind, Chip, ChipConfig, ConstantRber, KindRatio, Lpn, Nanos, RamStorage};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::Path;

pub use crate::Metrics;

/// What a matrix's cells run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A simulator experiment (the experiment-file format).
    #[default]
    Experiment,
    /// AP Table 1: analytic and controller-measured page failure at one RBER.
    #[serde(rename = "ap-table1")]
    ApTable1,
    /// Full scan against roll-forward recovery on one chip size.
    Recovery,
    /// FLARES Fig. 5: Alg. 1 and 2 on one page through operating points of growing wear.
    #[serde(rename = "flares-fig5")]
    FlaresFig5,
    /// DCR Tables 1–2 and its capacity estimate: a block-level FTL's crash image recovered
    /// by DCR and by the version-based scan.
    Dcr,
}

impl Kind {
    /// Its name in matrix files.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Experiment => "experiment",
            Kind::ApTable1 => "ap-table1",
            Kind::Recovery => "recovery",
            Kind::FlaresFig5 => "flares-fig5",
            Kind::Dcr => "dcr",
        }
    }

    /// The configuration key of a short axis name (`victim` → `ftl.page.victim`).
    pub fn alias(self, name: &str) -> Option<&'static str> {
        if self != Kind::Experiment {
            return None;
        }
        Some(match name {
            "scheme" => "ftl.scheme",
            "victim" => "ftl.page.victim",
            "op" | "over_provisioning" => "ftl.page.over_provisioning",
            "ecc_t" => "ftl.page.ecc_t",
            "placement" => "ftl.page.placement",
            "gc_pacing" => "ftl.page.gc_pacing",
            "gc_threshold" => "ftl.page.gc_threshold",
            "pe" => "aging.pe",
            "read_pct" => "workload.read_pct",
            "random_pct" => "workload.random_pct",
            "trim_pct" => "workload.trim_pct",
            "requests" => "workload.requests",
            "blocks_per_plane" => "chip.geometry.blocks_per_plane",
            "preset" => "chip.preset",
            "msb_ratio" => "errors.msb_ratio",
            "queue_depth" => "load.queue_depth",
            _ => return None,
        })
    }

    /// Every metric a cell of this kind can report.
    pub fn metric_names(self) -> BTreeSet<String> {
        match self {
            Kind::Experiment => sim::Report::metric_names(),
            Kind::ApTable1 => AP_METRICS.iter().map(|s| s.to_string()).collect(),
            Kind::Recovery => RECOVERY_METRICS.iter().map(|s| s.to_string()).collect(),
            Kind::FlaresFig5 => crate::fig5::METRICS.iter().map(|s| s.to_string()).collect(),
            Kind::Dcr => crate::dcr::METRICS.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// Checks a cell's configuration without running it.
    pub fn check(
        self,
        config: &toml::Table,
        base_dir: &Path,
        registry: &ftl::policy::Registry,
    ) -> Result<(), String> {
        match self {
            Kind::Experiment => {
                let cfg = experiment_config(config, registry)?;
                // Building formats the device and opens the trace: everything that can be
                // wrong with the configuration shows here, before any cell runs.
                cfg.build(base_dir).map(drop).map_err(|e| e.to_string())
            }
            Kind::ApTable1 => ap_params(config).map(drop),
            Kind::Recovery => recovery_params(config).map(drop),
            Kind::FlaresFig5 => crate::fig5::params(config).map(drop),
            Kind::Dcr => crate::dcr::params(config).map(drop),
        }
    }

    /// Runs a cell.
    pub fn run(
        self,
        config: &toml::Table,
        base_dir: &Path,
        registry: &ftl::policy::Registry,
    ) -> Result<Metrics, String> {
        match self {
            Kind::Experiment => {
                let cfg = experiment_config(config, registry)?;
                let mut exp = cfg.build(base_dir).map_err(|e| e.to_string())?;
                let report = exp.run(&mut |_| {}).map_err(|e| e.to_string())?;
                if report.host.mismatches > 0 {
                    return Err(format!(
                        "{} reads returned data other than what was written",
                        report.host.mismatches
                    ));
                }
                Ok(report.metrics())
            }
            Kind::ApTable1 => ap_table1(&ap_params(config)?),
            Kind::Recovery => {
                let p = recovery_params(config)?;
                let m =
                    measure_recovery(p.capacity_mib, p.work, p.seed).map_err(|e| e.to_string())?;
                Ok(m.metrics())
            }
            Kind::FlaresFig5 => Ok(crate::fig5::run(&crate::fig5::params(config)?)),
            Kind::Dcr => crate::dcr::run(&crate::dcr::params(config)?, base_dir),
        }
    }
}

fn experiment_config(
    config: &toml::Table,
    registry: &ftl::policy::Registry,
) -> Result<sim::ExperimentConfig, String> {
    let mut cfg: sim::ExperimentConfig = from_table(config)?;
    cfg.registry = registry.clone();
    Ok(cfg)
}

/// A cell's configuration as `T` (unknown keys and wrong types named by the error).
fn from_table<T: serde::de::DeserializeOwned>(config: &toml::Table) -> Result<T, String> {
    toml::Value::Table(config.clone())
        .try_into()
        .map_err(|e: toml::de::Error| e.message().trim().to_string())
}

// ---------------------------------------------------------------------------------------
// AP Table 1.

const AP_METRICS: [&str; 10] = [
    "lsb_analytic",
    "msb_analytic",
    "lsb_expected",
    "msb_expected",
    "lsb_measured",
    "msb_measured",
    "lsb_failures",
    "msb_failures",
    "pages",
    "codeword_bits",
];

/// Parameters of an `ap-table1` cell.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApParams {
    /// Raw bit error rate of LSB pages.
    pub rber: f64,
    /// Correction strength.
    #[serde(default = "ap_t")]
    pub t: u32,
    /// Bits per page in the analytic formula (AP: 8192 + 448).
    #[serde(default = "ap_bits")]
    pub bits: u64,
    /// MSB pages' RBER relative to LSB pages (AP's σ).
    #[serde(default = "ap_sigma")]
    pub sigma: f64,
    /// Reads of each page kind in the measurement.
    #[serde(default = "ap_pages")]
    pub pages: u64,
    /// Seed of the controller's error draws.
    #[serde(default = "one")]
    pub seed: u64,
}

fn ap_t() -> u32 {
    3
}
fn ap_bits() -> u64 {
    AP_TABLE1_BITS
}
fn ap_sigma() -> f64 {
    0.5
}
fn ap_pages() -> u64 {
    100_000
}
fn one() -> u64 {
    1
}

fn ap_params(config: &toml::Table) -> Result<ApParams, String> {
    let p: ApParams = from_table(config)?;
    if !(p.rber > 0.0 && p.rber < 0.5) {
        return Err(format!("rber = {}: must be in (0, 0.5)", p.rber));
    }
    if !(p.sigma > 0.0 && p.sigma.is_finite()) {
        return Err(format!("sigma = {}: must be positive", p.sigma));
    }
    if p.t == 0 || p.t > 64 {
        return Err(format!("t = {}: must be in 1..=64", p.t));
    }
    if p.pages == 0 || p.pages > 1 << 32 {
        return Err(format!("pages = {}: must be in 1..=2^32", p.pages));
    }
    if p.bits <= p.t as u64 {
        return Err(format!("bits = {}: must exceed t", p.bits));
    }
    Ok(p)
}

/// AP Table 1 at one RBER: analytic (the paper's N) and measured by the controller on a
/// 1 KiB page, one 1 KiB sector: its codeword is 8192 data bits plus the parity, and the
/// controller also draws errors on the page's header and record codeword. `*_expected` is
/// the analytic probability at the controller's own codeword size, the reference the
/// measurement is tested against.
fn ap_table1(p: &ApParams) -> Result<Metrics, String> {
    const PAGE: u32 = 1024;
    let mut chip = ChipConfig::preset("tiny-mlc").ok_or("no tiny-mlc preset")?;
    chip.geometry.page_size = PAGE;
    chip.geometry.subpages_per_page = 1;
    chip.reliability.wear_fail_rate = 0.0;
    chip.reliability.wear_fail_growth = 0.0;
    chip.reliability.factory_bad_rate = 0.0;
    chip.seed = p.seed;
    let g = chip.geometry;
    let model = KindRatio::ap(ConstantRber(p.rber), p.sigma);
    let chip = Chip::new(chip, RamStorage::new(&g)).map_err(|e| e.to_string())?;
    let ccfg = ControllerConfig {
        sector_size: PAGE as usize,
        mode: PayloadMode::Bytes,
        seed: p.seed,
        verify_stored: false,
        ..ControllerConfig::default()
    };
    let mut ctl = Controller::new(chip, model, ccfg).map_err(|e| e.to_string())?;
    let codeword_bits = ctl.layout(p.t).map_err(|e| e.to_string())?.codeword_bits();
    // The first LSB and MSB pages of block 0, programmed in order with random data.
    let pairing = ctl.chip().pairing().clone();
    let first = |k: BitKind| (0..pairing.pages_per_block()).find(|&q| pairing.kind(q) == k);
    let (Some(lsb), Some(msb)) = (first(BitKind::Lsb), first(BitKind::Msb)) else {
        return Err("the chip has no LSB/MSB page pair".into());
    };
    let block = g.block_at(0).ok_or("the chip has no block 0")?;
    let mut rng = ChaCha8Rng::seed_from_u64(p.seed ^ 0xA9_7AB1E1);
    let mut pages: Vec<(u32, Vec<u8>)> = Vec::new();
    let mut now = Nanos::ZERO;
    for q in 0..=lsb.max(msb) {
        let mut data = vec![0u8; PAGE as usize];
        rng.fill_bytes(&mut data);
        let addr = block.page(q).map_err(|e| e.to_string())?;
        now += Nanos(1_000_000);
        ctl.program(
            now,
            addr,
            &data,
            OobRecord::new(q as u64, q as u64, PageKind::User(DataClass::NORMAL)),
            p.t,
        )
        .map_err(|e| e.to_string())?;
        pages.push((q, data));
    }
    let mut buf = vec![0u8; PAGE as usize];
    let mut measure = |q: u32| -> Result<u64, String> {
        let addr = block.page(q).map_err(|e| e.to_string())?;
        let want = &pages[q as usize].1;
        let mut failures = 0;
        for _ in 0..p.pages {
            now += Nanos(1_000);
            match ctl.read(now, addr, &mut buf) {
                Ok(PageRead::Data(_)) => {
                    if &buf != want {
                        return Err(format!(
                            "page {q}: the decoder returned wrong data without an error"
                        ));
                    }
                }
                Ok(PageRead::Erased { .. }) => return Err(format!("page {q} reads as erased")),
                Err(CtlError::Uncorrectable { .. }) => failures += 1,
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(failures)
    };
    let lf = measure(lsb)?;
    let mf = measure(msb)?;
    let n = p.pages as f64;
    let mut m = Metrics::new();
    m.insert(
        "lsb_analytic".into(),
        page_failure(p.bits, p.rber, p.t as u64, 1.0),
    );
    m.insert(
        "msb_analytic".into(),
        page_failure(p.bits, p.rber, p.t as u64, p.sigma),
    );
    m.insert(
        "lsb_expected".into(),
        page_failure(codeword_bits, p.rber, p.t as u64, 1.0),
    );
    m.insert(
        "msb_expected".into(),
        page_failure(codeword_bits, p.rber, p.t as u64, p.sigma),
    );
    m.insert("lsb_measured".into(), lf as f64 / n);
    m.insert("msb_measured".into(), mf as f64 / n);
    m.insert("lsb_failures".into(), lf as f64);
    m.insert("msb_failures".into(), mf as f64);
    m.insert("pages".into(), n);
    m.insert("codeword_bits".into(), codeword_bits as f64);
    Ok(m)
}

// ---------------------------------------------------------------------------------------
// Recovery.

const RECOVERY_METRICS: [&str; 12] = [
    "capacity_bytes",
    "dies",
    "blocks",
    "full_scan_ms",
    "full_scan_blocks",
    "full_scan_pages",
    "roll_forward_ms",
    "roll_forward_blocks",
    "roll_forward_pages",
    "speedup",
    "mapped_pages",
    "work_pages",
];

/// Parameters of a `recovery` cell.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecoveryParams {
    /// Chip size in MiB (128 MiB … 128 GiB).
    pub capacity_mib: u64,
    /// Host pages written (random, flushed) between the last checkpoint and the crash.
    #[serde(default = "recovery_work")]
    pub work: u64,
    /// Seed of the written addresses.
    #[serde(default = "three")]
    pub seed: u64,
}

fn recovery_work() -> u64 {
    RECOVERY_WORK
}
fn three() -> u64 {
    3
}

/// Host pages written between the last checkpoint and the crash, by default.
pub const RECOVERY_WORK: u64 = 20_000;

fn recovery_params(config: &toml::Table) -> Result<RecoveryParams, String> {
    let p: RecoveryParams = from_table(config)?;
    if !(128..=128 << 10).contains(&p.capacity_mib) {
        return Err(format!(
            "capacity_mib = {}: must be in 128..=131072 (128 MiB to 128 GiB)",
            p.capacity_mib
        ));
    }
    if p.work == 0 || p.work > 10_000_000 {
        return Err(format!("work = {}: must be in 1..=10000000", p.work));
    }
    Ok(p)
}

/// The outcome of one recovery measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct RecoveryMeasurement {
    /// Chip capacity in bytes.
    pub capacity_bytes: u64,
    /// Dies.
    pub dies: u32,
    /// Blocks.
    pub blocks: u32,
    /// Full scan's report.
    pub full: ftl::RecoveryReport,
    /// Roll-forward's report.
    pub roll: ftl::RecoveryReport,
    /// Host pages written since the checkpoint.
    pub work: u64,
}

impl RecoveryMeasurement {
    /// As cell metrics.
    pub fn metrics(&self) -> Metrics {
        let ms = |t: Nanos| t.0 as f64 / 1e6;
        let mut m = Metrics::new();
        m.insert("capacity_bytes".into(), self.capacity_bytes as f64);
        m.insert("dies".into(), self.dies as f64);
        m.insert("blocks".into(), self.blocks as f64);
        m.insert("full_scan_ms".into(), ms(self.full.time));
        m.insert("full_scan_blocks".into(), self.full.blocks_scanned as f64);
        m.insert("full_scan_pages".into(), self.full.pages_read as f64);
        m.insert("roll_forward_ms".into(), ms(self.roll.time));
        m.insert(
            "roll_forward_blocks".into(),
            self.roll.blocks_scanned as f64,
        );
        m.insert("roll_forward_pages".into(), self.roll.pages_read as f64);
        m.insert(
            "speedup".into(),
            self.full.time.0 as f64 / self.roll.time.0.max(1) as f64,
        );
        m.insert("mapped_pages".into(), self.full.mapped_pages as f64);
        m.insert("work_pages".into(), self.work as f64);
        m
    }
}

/// Recovery after a crash on a chip of `mib` MiB (FLARES' MLC cell: 4 KiB pages, 1 MiB
/// blocks, 2 planes, up to 32 dies on 8 channels): half full and checkpointed (a clean
/// shutdown), then `work` random 4 KiB writes flushed every 1000, then a crash; the same
/// image is recovered by a full scan and by checkpoint + roll-forward, which must agree.
/// Simulated time is the per-die sum of read, transfer and decode time (dies in parallel).
pub fn measure_recovery(mib: u64, work: u64, seed: u64) -> Result<RecoveryMeasurement, String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let mut chip = ChipConfig::preset("flares-mlc-3x").ok_or("no flares-mlc-3x preset")?;
    let g = &mut chip.geometry;
    let dies = (mib / 128).clamp(1, 32) as u32;
    g.channels = dies.div_ceil(4);
    g.dies_per_channel = dies / g.channels;
    g.planes_per_die = 2;
    g.pages_per_block = 256;
    g.page_size = 4096;
    let row = (g.channels * g.dies_per_channel) as u64 * 2 * 256 * 4096;
    g.blocks_per_plane = ((mib << 20) / row).max(8) as u32;
    chip.seed = 7;
    let mut scheme = SchemeConfig::Page(PageFtlConfig {
        over_provisioning: 0.125,
        ecc_t: 8,
        checkpoint_interval: u32::MAX,
        ..PageFtlConfig::default()
    });
    let geo = chip.geometry;
    let storage = scheme.digest_storage(&chip);
    let ctl = Controller::new(
        Chip::new(chip.clone(), storage).map_err(|x| e(&x))?,
        ConstantRber(0.0),
        ControllerConfig {
            mode: PayloadMode::Digest,
            sector_size: 512,
            ..Default::default()
        },
    )
    .map_err(|x| e(&x))?;
    let mut dev = scheme.format(ctl, Nanos::ZERO).map_err(|x| e(&x))?;
    let n = dev.logical_pages();
    let mut t = Nanos::ZERO;
    let lpn = |l: u64| Lpn::checked(l, n).expect("in range");
    // Half full, checkpointed (a clean shutdown) ...
    for l in 0..n / 2 {
        t += Nanos(1_000);
        dev.write(t, lpn(l), &[]).map_err(|x| e(&x))?;
    }
    dev.shutdown(t).map_err(|x| e(&x))?;
    // ... then the same work on every size, flushed, and a crash.
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for i in 0..work {
        t += Nanos(1_000);
        dev.write(t, lpn(rng.next_u64() % (n / 2)), &[])
            .map_err(|x| e(&x))?;
        if i % 1000 == 999 {
            dev.flush(t).map_err(|x| e(&x))?;
        }
    }
    dev.flush(t).map_err(|x| e(&x))?;
    // The same crash image, recovered both ways.
    let mut ctl = dev.into_controller();
    let mut reports = Vec::new();
    for kind in [RecoveryKind::FullScan, RecoveryKind::RollForward] {
        scheme.set_recovery(kind);
        let vol = scheme.mount(ctl, t).map_err(|x| e(&x))?;
        reports.push(vol.recovery_report().cloned().ok_or("no recovery report")?);
        ctl = vol.into_controller();
    }
    let (fr, rr) = (reports[0].clone(), reports[1].clone());
    if fr.mapped_pages != rr.mapped_pages {
        return Err(format!(
            "the two procedures disagree: {} vs {} mapped pages",
            fr.mapped_pages, rr.mapped_pages
        ));
    }
    Ok(RecoveryMeasurement {
        capacity_bytes: geo.capacity_bytes(),
        dies: geo.total_dies(),
        blocks: geo.total_blocks(),
        full: fr,
        roll: rr,
        work,
    })
}

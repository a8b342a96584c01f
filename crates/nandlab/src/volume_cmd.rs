//! `nandlab volume`: a page-level FTL volume on a file-backed chip image — format it, run
//! a deterministic workload on it (which may be killed at any moment), and check it against
//! the durability contract after a restart.

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use controller::{Controller, ControllerConfig};
use ftl::{BoxedVolume, PageFtlConfig, RecoveryKind, SchemeConfig};
use nand::backend::FileStorage;
use nand::{Chip, ChipConfig, ConstantRber, Nanos};
use sim::crash::{apply_op, check_after_kill, CrashConfig, HostOp};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, Subcommand)]
pub enum VolumeCommand {
    /// Create a chip image and format a volume on it.
    Format(FormatArgs),
    /// Mount (recovering if needed) and run a seeded workload of writes, trims and
    /// flushes; prints `flushed N` after each flush returns (N = operations done).
    Stress(StressArgs),
    /// Mount (recovering if needed) and check every page against the workload, given how
    /// far it was flushed.
    Verify(VerifyArgs),
}

#[derive(Debug, Args)]
pub struct FormatArgs {
    /// The image file.
    #[arg(long)]
    image: PathBuf,
    /// Chip preset.
    #[arg(long, default_value = "tiny-mlc")]
    preset: String,
    /// Blocks per plane (overrides the preset).
    #[arg(long)]
    blocks_per_plane: Option<u32>,
    /// Overwrite an existing, non-empty image (its volume is lost).
    #[arg(long)]
    force: bool,
    /// The FTL: a TOML file with an `[ftl]` section as experiment files have one (`scheme`,
    /// `[ftl.page]`, `[ftl.block]`); kept beside the image as `IMAGE.ftl.toml`, which every
    /// later mount reads. Without it: the page-level FTL, 25 % over-provisioning.
    #[arg(long)]
    ftl: Option<PathBuf>,
}

/// Refuses to overwrite an existing, non-empty `image` unless `force`: formatting destroys
/// the volume on it. `how` names the command line that would, for the message.
pub fn refuse_overwrite(image: &Path, force: bool, how: &str) -> Result<()> {
    match std::fs::metadata(image) {
        Ok(m) if m.len() > 0 && !force => bail!(
            "{} exists and is not empty ({} bytes): {how} would destroy what it holds; add --force to overwrite it",
            image.display(),
            m.len()
        ),
        _ => Ok(()),
    }
}

/// Recovery procedure at mount.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum RecoveryArg {
    /// Checkpoint plus roll-forward.
    RollForward,
    /// Read every page's OOB.
    FullScan,
}

#[derive(Debug, Args)]
pub struct WorkloadArgs {
    /// The image file.
    #[arg(long)]
    image: PathBuf,
    /// Workload seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Host operations.
    #[arg(long, default_value_t = 2000)]
    ops: usize,
    /// A flush every this many operations.
    #[arg(long, default_value_t = 16)]
    flush_every: usize,
    /// Recovery procedure at mount (default: the image's FTL file's, else roll-forward).
    #[arg(long, value_enum)]
    recovery: Option<RecoveryArg>,
}

#[derive(Debug, Args)]
pub struct StressArgs {
    #[command(flatten)]
    w: WorkloadArgs,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    w: WorkloadArgs,
    /// Operations completed at the last `flushed N` line the workload printed (0: none).
    #[arg(long, default_value_t = 0)]
    flushed: usize,
}

pub fn run(cmd: VolumeCommand) -> Result<()> {
    match cmd {
        VolumeCommand::Format(a) => format(a),
        VolumeCommand::Stress(a) => stress(a),
        VolumeCommand::Verify(a) => verify(a),
    }
}

/// A volume on a file-backed chip image.
pub type Vol = BoxedVolume<FileStorage, ConstantRber>;

fn controller(chip: Chip<FileStorage>) -> Result<Controller<FileStorage, ConstantRber>> {
    // The image is a file on a real disk: its bits can rot behind the emulator's back, so
    // every read is decoded and CRC-checked (no "no drawn error, nothing to check" shortcut).
    let cfg = ControllerConfig {
        verify_stored: true,
        ..ControllerConfig::default()
    };
    let mut ctl = Controller::new(chip, ConstantRber(0.0), cfg)?;
    ctl.set_crc32c(crc32c::crc32c);
    Ok(ctl)
}

/// The default scheme of file-backed volumes (the page-level FTL).
fn default_ftl(ctl: &mut Controller<FileStorage, ConstantRber>) -> SchemeConfig {
    SchemeConfig::Page(PageFtlConfig {
        over_provisioning: 0.25,
        ecc_t: ctl.max_t().min(8),
        checkpoint_interval: 8,
        ..PageFtlConfig::default()
    })
}

/// Where an image keeps the FTL it was formatted with (`--ftl`).
pub fn ftl_sidecar(image: &Path) -> PathBuf {
    let mut name = image.as_os_str().to_owned();
    name.push(".ftl.toml");
    PathBuf::from(name)
}

/// What the image's FTL file holds.
#[derive(serde::Serialize)]
struct FtlFileOut<'a> {
    ftl: &'a sim::config::FtlSection,
}

/// The `[ftl]` section of a TOML file.
#[derive(serde::Deserialize)]
struct FtlFile {
    ftl: sim::config::FtlSection,
}

/// Reads an FTL file (`[ftl]` as in experiment files); errors name the file and the line.
fn read_ftl(path: &Path) -> Result<sim::config::FtlSection> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let f: FtlFile = toml::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.to_string().trim()))?;
    Ok(f.ftl)
}

/// The scheme of the volume on `image`: its FTL file's (written by `--ftl` at format), else
/// the default; `recovery` (when given) replaces the file's recovery procedure.
fn ftl_config(
    ctl: &mut Controller<FileStorage, ConstantRber>,
    image: &Path,
    recovery: Option<RecoveryKind>,
) -> Result<SchemeConfig> {
    let side = ftl_sidecar(image);
    let mut cfg = if side.exists() {
        read_ftl(&side)?.scheme_config()
    } else {
        default_ftl(ctl)
    };
    if let Some(r) = recovery {
        if matches!(cfg, SchemeConfig::Gftl(_) | SchemeConfig::Rftl(_))
            && r != RecoveryKind::FullScan
        {
            bail!(
                "--recovery {}: scheme {} recovers by its full scan only",
                r.name(),
                cfg.name()
            );
        }
        cfg.set_recovery(r);
    }
    Ok(cfg)
}

/// Creates a chip image and formats a volume on it (left shut down cleanly and open).
pub fn create(
    image: &Path,
    preset: &str,
    blocks_per_plane: Option<u32>,
    ftl: Option<&Path>,
) -> Result<Vol> {
    create_with(image, preset, blocks_per_plane, ftl, false)
}

/// The `[ftl]` section `nandlab serve --create` formats with when no `--ftl` is given:
/// the combined profile, every key its own.
pub const SERVE_DEFAULT_FTL: &str = "[ftl]\nscheme = \"combined\"\n";

/// [`create`] where no `--ftl` means the combined profile when `combined_default` (`serve
/// --create`; its FTL file is written beside the image like any `--ftl`'s), the page-level
/// FTL otherwise (`volume format`).
pub fn create_with(
    image: &Path,
    preset: &str,
    blocks_per_plane: Option<u32>,
    ftl: Option<&Path>,
    combined_default: bool,
) -> Result<Vol> {
    let section = match ftl {
        Some(p) => Some(read_ftl(p)?),
        None if combined_default => Some(
            toml::from_str::<FtlFile>(SERVE_DEFAULT_FTL)
                .context("the built-in combined profile")?
                .ftl,
        ),
        None => None,
    };
    let mut chip =
        ChipConfig::preset(preset).with_context(|| format!("unknown chip preset `{preset}`"))?;
    if let Some(b) = blocks_per_plane {
        chip.geometry.blocks_per_plane = b;
    }
    chip.validate().map_err(|e| match blocks_per_plane {
        Some(b) => anyhow::anyhow!("--blocks-per-plane {b}: {e}"),
        None => anyhow::anyhow!("preset {preset}: {e}"),
    })?;
    // Formatted under a temporary name and renamed into place when complete: a failed
    // format leaves no half-made image behind (nor destroys an existing one half-way).
    let name = image
        .file_name()
        .map_or_else(|| "image".into(), |n| n.to_string_lossy().into_owned());
    let tmp = image.with_file_name(format!(".{name}.formatting-{}", std::process::id()));
    let made = (|| -> Result<Vol> {
        let storage = FileStorage::create(&tmp, &chip)
            .with_context(|| format!("creating {}", image.display()))?;
        let mut ctl = controller(Chip::new(chip, storage)?)?;
        let cfg = match &section {
            Some(s) => s.scheme_config(),
            None => default_ftl(&mut ctl),
        };
        let mut vol = cfg.format(ctl, Nanos::ZERO)?;
        vol.shutdown(Nanos::ZERO)?;
        vol.controller_mut().chip_mut().sync()?;
        // The FTL file first: an image in place always has the FTL it was formatted with.
        let side = ftl_sidecar(image);
        match &section {
            Some(s) => {
                let text =
                    toml::to_string(&FtlFileOut { ftl: s }).context("writing the FTL file")?;
                std::fs::write(&side, text)
                    .with_context(|| format!("writing {}", side.display()))?;
            }
            None => {
                if side.exists() {
                    std::fs::remove_file(&side)
                        .with_context(|| format!("removing {}", side.display()))?;
                }
            }
        }
        std::fs::rename(&tmp, image)
            .with_context(|| format!("renaming the new image to {}", image.display()))?;
        Ok(vol)
    })();
    if made.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    made
}

/// Opens an image and mounts its volume (recovering after a crash).
pub fn open(image: &Path, recovery: Option<RecoveryKind>) -> Result<Vol> {
    Ok(open_at(image, recovery)?.0)
}

/// Wall-clock time in nanoseconds since the Unix epoch.
pub fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The simulated time an image resumes at: its saved clock plus the wall time that has
/// passed since it was saved (0 for an image that never saved one).
pub fn resume_time(storage: &FileStorage) -> Nanos {
    storage.clock().map_or(Nanos::ZERO, |(sim, unix)| {
        Nanos(sim.saturating_add(unix_ns().saturating_sub(unix)))
    })
}

/// Saves a volume's simulated clock `t` in its image (with the wall time now).
pub fn save_clock(vol: &mut Vol, t: Nanos) -> Result<()> {
    vol.controller_mut()
        .chip_mut()
        .storage_mut()
        .save_clock(t.0, unix_ns())?;
    Ok(())
}

/// [`open`], also returning the simulated time the volume was mounted at (the image's
/// resumed clock: see [`resume_time`]).
pub fn open_at(image: &Path, recovery: Option<RecoveryKind>) -> Result<(Vol, Nanos)> {
    let (storage, chip) =
        FileStorage::open(image).with_context(|| format!("opening {}", image.display()))?;
    let now = resume_time(&storage);
    let mut ctl = controller(Chip::new(chip, storage)?)?;
    let cfg = ftl_config(&mut ctl, image, recovery)?;
    let vol = cfg
        .mount(ctl, now)
        .with_context(|| format!("mounting {}", image.display()))?;
    Ok((vol, now))
}

fn format(a: FormatArgs) -> Result<()> {
    refuse_overwrite(&a.image, a.force, "`volume format`")?;
    let vol = create(&a.image, &a.preset, a.blocks_per_plane, a.ftl.as_deref())?;
    println!(
        "formatted {}: {} logical pages of {} bytes",
        a.image.display(),
        vol.logical_pages(),
        vol.page_size()
    );
    Ok(())
}

fn mount(w: &WorkloadArgs) -> Result<Vol> {
    open(&w.image, w.recovery.map(Into::into))
}

impl From<RecoveryArg> for RecoveryKind {
    fn from(r: RecoveryArg) -> Self {
        match r {
            RecoveryArg::RollForward => RecoveryKind::RollForward,
            RecoveryArg::FullScan => RecoveryKind::FullScan,
        }
    }
}

fn workload(w: &WorkloadArgs, logical: u64) -> (Vec<HostOp>, u64) {
    let mut c = CrashConfig::small(w.seed);
    c.ops = w.ops;
    c.flush_every = w.flush_every;
    (c.workload(0, logical), c.span_pages(logical))
}

fn stress(a: StressArgs) -> Result<()> {
    let mut vol = mount(&a.w)?;
    let (ops, _) = workload(&a.w, vol.logical_pages());
    let mut out = std::io::stdout().lock();
    let mut t = Nanos::ZERO;
    for (i, &op) in ops.iter().enumerate() {
        t += Nanos::from_us(50);
        apply_op(&mut *vol, op, t, 0)?;
        if op == HostOp::Flush {
            vol.controller_mut().chip_mut().sync()?;
            writeln!(out, "flushed {}", i + 1)?;
            out.flush()?;
        }
    }
    vol.shutdown(t)?;
    vol.controller_mut().chip_mut().sync()?;
    writeln!(out, "done {}", ops.len())?;
    Ok(())
}

fn verify(a: VerifyArgs) -> Result<()> {
    let path: &Path = &a.w.image;
    let mut vol = mount(&a.w)?;
    let n = vol.logical_pages();
    let (ops, _) = workload(&a.w, n);
    if a.flushed > ops.len() {
        bail!(
            "--flushed {} is past the workload's {} operations",
            a.flushed,
            ops.len()
        );
    }
    check_after_kill(&mut *vol, &ops, a.flushed)
        .map_err(anyhow::Error::msg)
        .with_context(|| {
            format!(
                "{} after {} flushed operations (verify must be given the same workload flags as the `volume stress` that wrote the image: --seed, --ops, … — a different workload reads as corruption)",
                path.display(),
                a.flushed
            )
        })?;
    let r = vol.recovery_report().cloned();
    println!(
        "{}: all {n} pages as the contract allows ({} of {} operations flushed){}",
        path.display(),
        a.flushed,
        ops.len(),
        r.map(|r| format!(
            "; {} recovery read {} pages in {} blocks, {:.1} ms simulated",
            r.procedure,
            r.pages_read,
            r.blocks_scanned,
            r.time.0 as f64 / 1e6
        ))
        .unwrap_or_default()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A volume opened again a day (of wall time) after its clock was saved resumes a day
    /// later: what it wrote before is a day old.
    #[test]
    fn a_reopened_image_resumes_its_clock() {
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("vol.img");
        let mut vol = create(&image, "tiny-slc", None, None).unwrap();
        let n = vol.logical_pages();
        let t = Nanos::from_ms(5);
        vol.write(
            t,
            nand::Lpn::checked(3, n).unwrap(),
            &vec![7; vol.page_size()],
        )
        .unwrap();
        vol.shutdown(t).unwrap();
        let day = 86_400_000_000_000u64;
        vol.controller_mut()
            .chip_mut()
            .storage_mut()
            .save_clock(t.0, unix_ns() - day)
            .unwrap();
        let at = vol.mapping(3).unwrap();
        drop(vol);
        let (vol, now) = open_at(&image, Some(RecoveryKind::RollForward)).unwrap();
        assert!(
            now.0 >= t.0 + day && now.0 < t.0 + day + 60_000_000_000,
            "{now:?}"
        );
        let age = vol.controller().chip().page_age(at, now).unwrap();
        assert!(age.retention.0 >= day, "{age:?}");
    }

    /// The file image is not trusted: a bit flipped in it behind the emulator's back is
    /// corrected when within `t`, makes the read fail beyond it, and is never served as
    /// good data.
    #[test]
    fn bits_rotting_in_the_image_are_corrected_or_refused() {
        use std::os::unix::fs::FileExt;
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("rot.img");
        let mut vol = create(&image, "tiny-slc", None, None).unwrap();
        let n = vol.logical_pages();
        let ps = vol.page_size();
        let pages: Vec<Vec<u8>> = (0..4)
            .map(|l| nand::pattern::bytes(ps, 0xA000 + l))
            .collect();
        for (l, d) in pages.iter().enumerate() {
            vol.write(Nanos(1), nand::Lpn::checked(l as u64, n).unwrap(), d)
                .unwrap();
        }
        vol.shutdown(Nanos(2)).unwrap();
        drop(vol);
        // Where each page's data sits in the file.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&image)
            .unwrap();
        let bytes = std::fs::read(&image).unwrap();
        let at = |d: &[u8]| bytes.windows(64).position(|w| w == &d[..64]).unwrap() as u64;
        let flip = |off: u64, bits: &[u64]| {
            for &b in bits {
                let mut x = [0u8];
                file.read_exact_at(&mut x, off + b / 8).unwrap();
                x[0] ^= 1 << (b % 8);
                file.write_all_at(&x, off + b / 8).unwrap();
            }
        };
        // Page 1: two flips in its first sector (within t). Page 2: sixty (beyond t).
        // Page 3: one flip in each of its sectors.
        flip(at(&pages[1]), &[3, 1000]);
        flip(at(&pages[2]), &(0..60).map(|i| i * 61).collect::<Vec<_>>());
        flip(
            at(&pages[3]),
            &(0..(ps as u64 / 512))
                .map(|s| s * 4096 + 7)
                .collect::<Vec<_>>(),
        );
        drop(file);
        let mut vol = open(&image, Some(RecoveryKind::RollForward)).unwrap();
        let mut buf = vec![0u8; ps];
        for l in [0u64, 1, 3] {
            vol.read(Nanos(3), nand::Lpn::checked(l, n).unwrap(), &mut buf)
                .unwrap();
            assert_eq!(buf, pages[l as usize], "page {l}");
        }
        assert!(vol.controller().stats().corrected_bits >= 2 + ps as u64 / 512);
        let r = vol.read(Nanos(3), nand::Lpn::checked(2, n).unwrap(), &mut buf);
        assert_eq!(
            r,
            Err(ftl::FtlError::Unreadable(nand::Lpn::checked(2, n).unwrap()))
        );
    }
}

//! `nandlab run`: the main job — an experiment from a file, or the built-in default.

use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sim::config::TraceSection;
use sim::{ExperimentConfig, Progress, Report, TraceFormat};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Experiment file (TOML); without it the built-in default runs.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Replay this trace (with the default chip and FTL, or the config's).
    #[arg(long, requires = "format")]
    trace: Option<PathBuf>,
    /// Trace format: mqsim (ssdsim is the same format, accepted as an alias), msr,
    /// blkparse, spc.
    #[arg(long, requires = "trace")]
    format: Option<String>,
    /// Fold trace addresses past the device into it: byte address a goes to
    /// a mod capacity (the same place whatever the request size; alignment kept), requests
    /// crossing the end are split, trims longer than the device clipped.
    #[arg(long, requires = "trace", conflicts_with = "fit")]
    wrap: bool,
    /// Size the device to the trace: the smallest number of blocks per plane of the chip
    /// whose logical capacity holds the highest address the trace reads or writes (the
    /// choice is printed with the report); trims past the end are clipped.
    #[arg(long, requires = "trace")]
    fit: bool,
    /// Replay the trace this many times back to back (each pass after the previous one).
    #[arg(long, requires = "trace", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// The device to replay when the trace mixes several (MQSim device number, MSR
    /// `host/disk`, SPC ASU, blkparse `maj,min`); default: the first one seen, the others
    /// skipped and counted in the report.
    #[arg(long, requires = "trace")]
    device: Option<String>,
    /// blkparse: which events are requests — Q (queued), D (issued) or C (completed).
    #[arg(long, requires = "trace", value_parser = ["Q", "D", "C"])]
    blkparse_action: Option<String>,
    /// A trace (same format and options) replayed after preconditioning and before
    /// --trace, without measuring it: the state the first part of a recorded session
    /// leaves (e.g. `serve --record-trace` split at the start of the measured job).
    #[arg(long, requires = "trace")]
    warmup_trace: Option<PathBuf>,
    /// Seconds without a request after which the FTL gets idle time until the next one
    /// arrives (`[trace] idle_after_s`; `serve` waits 0.2 s). Default: no idle periods.
    #[arg(long, requires = "trace")]
    idle_after: Option<f64>,
    /// Override the seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Override the number of synthetic requests.
    #[arg(long)]
    requests: Option<u64>,
    /// Skip preconditioning.
    #[arg(long)]
    no_precondition: bool,
    /// Write the JSON report here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the CSV report here.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// The `[ftl]` table of experiment file `text`, if it has one.
fn ftl_table(text: &str) -> Option<toml::Table> {
    toml::from_str::<toml::Table>(text)
        .ok()?
        .remove("ftl")?
        .as_table()
        .cloned()
}

/// Whether experiment file `text` names its FTL scheme (`[ftl] scheme`); a file that does
/// not runs the default profile, `combined` (the library's own default stays the page
/// FTL, which files and tests written before the profile rely on).
fn names_scheme(text: &str) -> bool {
    ftl_table(text).is_some_and(|f| f.contains_key("scheme"))
}

/// The scheme sections (`[ftl.NAME]`) experiment file `text` sets.
fn scheme_sections(text: &str) -> impl Iterator<Item = String> {
    ftl_table(text)
        .into_iter()
        .flat_map(|f| f.into_iter().filter(|(_, v)| v.is_table()).map(|(k, _)| k))
}

pub fn run(a: RunArgs) -> Result<()> {
    // (`defaulted`: no scheme named, the default profile runs.)
    let (mut cfg, base, defaulted) = match &a.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read experiment file {}", path.display()))?;
            let mut cfg = ExperimentConfig::from_toml_str(&text, &path.display().to_string())?;
            let defaulted = !names_scheme(&text);
            if defaulted {
                if let Some(other) = scheme_sections(&text).find(|s| s != "combined") {
                    bail!(
                        "{}: [ftl.{other}] is set but no [ftl] scheme is named, so the default profile \"combined\" would run and ignore it: add scheme = \"{other}\" under [ftl] (or move the keys to [ftl.combined])",
                        path.display()
                    );
                }
                cfg.ftl.scheme = sim::config::FtlScheme::Combined;
            }
            (
                cfg,
                path.parent().map(Path::to_path_buf).unwrap_or_default(),
                defaulted,
            )
        }
        None => (ExperimentConfig::builtin_default(), PathBuf::new(), true),
    };
    if let Some(t) = &a.trace {
        let name = a.format.as_deref().unwrap_or_default();
        let Some(format) = TraceFormat::from_name(name) else {
            bail!("--format {name:?}: expected mqsim (or its alias ssdsim), msr, blkparse or spc");
        };
        cfg.workload = None;
        if a.blkparse_action.is_some() && format != TraceFormat::Blkparse {
            bail!("--blkparse-action applies to blkparse traces, not --format {name}");
        }
        cfg.trace = Some(TraceSection {
            path: std::path::absolute(t)?,
            format,
            wrap: a.wrap,
            fit: a.fit,
            device: a.device.clone(),
            blkparse_action: match a.blkparse_action.as_deref() {
                Some("D") => sim::BlkAction::D,
                Some("C") => sim::BlkAction::C,
                _ => sim::BlkAction::Q,
            },
            repeat: a.repeat,
            idle_after_s: a.idle_after,
        });
        cfg.load.mode = sim::config::LoadKind::Open;
        if a.config.is_none() {
            cfg.name = format!("trace {}", t.display());
        }
    }
    if let Some(s) = a.seed {
        cfg.seed = s;
    }
    if let Some(n) = a.requests {
        match cfg.workload.as_mut() {
            Some(w) => w.requests = Some(n),
            None => bail!("--requests applies to synthetic workloads, not traces"),
        }
    }
    if a.no_precondition {
        cfg.precondition.enabled = false;
    }
    let json = a
        .json
        .clone()
        .or_else(|| cfg.report.json.as_ref().map(|p| base.join(p)));
    let csv = a
        .csv
        .clone()
        .or_else(|| cfg.report.csv.as_ref().map(|p| base.join(p)));
    // Output paths are checked before the work, not after it.
    for p in [&json, &csv].into_iter().flatten() {
        check_output(p)?;
    }
    let wall = Instant::now();
    let mut exp = cfg.build(&base).map_err(|e| {
        // (A configuration the FTL refuses may be the default profile's doing; memory,
        // I/O and trace errors are not.)
        let config = matches!(e, sim::SimError::Config(_));
        let e = anyhow::Error::from(e);
        if defaulted && config {
            e.context(
                "no [ftl] scheme is named, so the default profile \"combined\" was used; name one (e.g. scheme = \"page\") for a chip or size it does not fit",
            )
        } else {
            e
        }
    })?;
    if let (Some(w), Some(t)) = (&a.warmup_trace, &exp.config.trace) {
        let opts = sim::TraceOptions {
            wrap: t.wrap,
            fit: t.fit,
            device: t.device.clone(),
            blkparse_action: t.blkparse_action,
            ..sim::TraceOptions::new(exp.engine.capacity())
        };
        // The parts of one recording: the measured part continues the warm-up's times
        // (the gap between them is idle like any other) when it starts after it ended.
        let opts = sim::TraceOptions {
            idle_after: t.idle_after_s.map(|s| nand::Nanos((s * 1e9) as u64)),
            ..opts
        };
        let warm = sim::TraceReader::span(w, t.format, &opts)?;
        let measured = sim::TraceReader::span(&t.path, t.format, &opts)?;
        if let (Some(warm), Some(m), 1) = (warm, measured, t.repeat) {
            if m.first >= warm.last {
                let opts = sim::TraceOptions {
                    resume: Some(warm),
                    ..opts.clone()
                };
                exp.source = Box::new(sim::TraceReader::open(&t.path, t.format, &opts)?);
                exp.warmup_continues = true;
            }
        }
        exp.warmup = Some(Box::new(sim::TraceReader::open(w, t.format, &opts)?));
    }
    let bar = progress_bar(a.quiet);
    if let Some(b) = &bar {
        b.set_message("preconditioning");
    }
    // The rate is measured from the first request of the measured phase (not from before
    // preconditioning), and the message leaves "preconditioning" as soon as requests flow.
    let mut last: Option<(Instant, u64)> = None;
    let mut on_progress = |p: Progress| {
        if let Some(b) = &bar {
            if let Some(r) = p.remaining {
                b.set_length(p.done + r);
            }
            b.set_position(p.done);
            let Some(last) = last.as_mut() else {
                last = Some((Instant::now(), p.done));
                b.set_message(format!("sim {:.3} s", p.now.0 as f64 / 1e9));
                return;
            };
            let dt = last.0.elapsed().as_secs_f64();
            if dt > 0.2 {
                let rate = (p.done - last.1) as f64 / dt;
                b.set_message(format!(
                    "sim {:.3} s · {:.0} req/s",
                    p.now.0 as f64 / 1e9,
                    rate
                ));
                *last = (Instant::now(), p.done);
            }
        }
    };
    let report = exp.run(&mut on_progress)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    print!("{}", report.summary());
    let secs = wall.elapsed().as_secs_f64();
    println!(
        "runtime     {:.2} s wall, {:.0} simulated requests/s",
        secs,
        report.host.requests as f64 / secs.max(1e-9)
    );
    write_reports(&report, json.as_deref(), csv.as_deref())?;
    if report.host.mismatches > 0 {
        bail!(
            "{} reads returned data other than what was written",
            report.host.mismatches
        );
    }
    Ok(())
}

pub fn write_reports(report: &Report, json: Option<&Path>, csv: Option<&Path>) -> Result<()> {
    if let Some(p) = json {
        std::fs::write(p, report.to_json())
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    if let Some(p) = csv {
        std::fs::write(p, report.to_csv())
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    Ok(())
}

/// Fails unless `p` can be written: its directory exists and it is not a directory.
pub fn check_output(p: &Path) -> Result<()> {
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        bail!(
            "{}: directory {} does not exist",
            p.display(),
            dir.display()
        );
    }
    if p.is_dir() {
        bail!("{}: is a directory", p.display());
    }
    Ok(())
}

/// A progress bar on stderr, only when stderr is a terminal.
pub fn progress_bar(quiet: bool) -> Option<ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    b.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} requests · {msg}")
            .expect("valid template"),
    );
    Some(b)
}

#[cfg(test)]
mod tests {
    use super::names_scheme;

    #[test]
    fn a_file_names_its_scheme_only_with_ftl_scheme() {
        assert!(names_scheme("[ftl]\nscheme = \"page\"\n"));
        assert!(names_scheme("ftl = { scheme = \"block\" }\n"));
        assert!(!names_scheme("[ftl.page]\nover_provisioning = 0.2\n"));
        assert!(!names_scheme("name = \"x\"\n"));
        assert!(!names_scheme("[workload]\nscheme = \"page\"\n"));
        let sections: Vec<String> = super::scheme_sections(
            "[ftl.page]\nover_provisioning = 0.2\n[ftl.combined]\necc_t = 8\n",
        )
        .collect();
        assert_eq!(sections, ["combined", "page"]);
    }
}

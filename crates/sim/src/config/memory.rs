//! A bytes-mode run larger than the machine's memory, refused before it starts.

use super::ExperimentConfig;
use crate::SimError;
use controller::PayloadMode;

impl ExperimentConfig {
    /// In bytes mode a preconditioned device holds real bytes for every page the
    /// precondition writes (its footprint of the `capacity`-byte volume, data and spare):
    /// more than the machine's available memory is refused here, with what to change,
    /// rather than found by the kernel's out-of-memory killer half-way through the fill
    /// (`--fit` grows a device to a trace's highest address: MQSim's tpcc-small reaches
    /// 135 GB). Machines that do not say what is available (no `/proc/meminfo`) are not
    /// checked. `fitted`: the device was sized to a trace.
    pub(super) fn check_memory(
        &self,
        capacity: u64,
        g: &nand::Geometry,
        fitted: bool,
    ) -> Result<(), SimError> {
        self.check_memory_within(capacity, g, fitted, available_memory())
    }

    /// [`check_memory`](Self::check_memory) against `avail` bytes (`None`: unknown).
    fn check_memory_within(
        &self,
        capacity: u64,
        g: &nand::Geometry,
        fitted: bool,
        avail: Option<u64>,
    ) -> Result<(), SimError> {
        let p = &self.precondition;
        if self.controller.mode != PayloadMode::Bytes
            || !p.enabled
            || !(p.fill || p.max_overwrite > 0.0)
        {
            return Ok(());
        }
        // The fill writes the footprint's pages; random overwrites then fill the
        // over-provisioned pages too (a page keeps its bytes until its block is erased), up
        // to every physical page. Each holds its data and spare, and the simulator about
        // 64 bytes of state beside them (page state, map entries, strength profile).
        let written = (capacity as f64 * p.footprint.clamp(0.0, 1.0)) as u64 / g.page_size as u64;
        let pages = if p.max_overwrite > 0.0 {
            let overwritten = (written as f64 * (1.0 + p.max_overwrite)) as u64;
            overwritten.min(g.total_pages())
        } else {
            written
        };
        let need = pages * (g.raw_page_size() as u64 + 64);
        let Some(avail) = avail else {
            return Ok(());
        };
        if need <= avail {
            return Ok(());
        }
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        Err(SimError::Memory(format!(
            "precondition: it writes up to {pages} pages of real bytes (about {:.1} GiB with their data, spare and state; [controller] mode = \"bytes\"), more than the {:.1} GiB of memory this machine has available{}. Use [controller] mode = \"digest\" (page contents kept as verifiable digests, tens of bytes a page), a smaller device{}, a smaller [precondition] footprint, or no precondition ([precondition] enabled = false, `run --no-precondition`)",
            gib(need),
            gib(avail),
            if fitted { " (the device was sized to the trace's highest address)" } else { "" },
            if fitted { " (`--wrap` folds the trace's addresses onto the configured device instead of `--fit` growing it)" } else { "" },
        )))
    }
}

/// Memory the system can give without swapping (`MemAvailable` of `/proc/meminfo`), bytes;
/// `None` where there is no such file.
fn available_memory() -> Option<u64> {
    let m = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = m.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::super::ExperimentConfig;
    use crate::SimError;
    use controller::PayloadMode;
    use std::path::Path;

    /// The built-in default (bytes mode, preconditioned 256 MiB device) against `avail`.
    fn check(cfg: ExperimentConfig, avail: u64) -> Result<(), SimError> {
        let exp = cfg.build(Path::new(".")).expect("the default builds");
        let cap = exp.engine.capacity();
        exp.config
            .check_memory_within(cap, &exp.chip.geometry, true, Some(avail))
    }

    #[test]
    fn a_bytes_mode_precondition_past_the_available_memory_is_refused() {
        let e = check(ExperimentConfig::builtin_default(), 64 << 20).unwrap_err();
        let SimError::Memory(m) = e else {
            panic!("expected a memory error, got {e:?}");
        };
        assert!(
            m.contains("mode = \"digest\"") && m.contains("--wrap"),
            "{m}"
        );
        // Enough memory, digest mode, no precondition, or a small footprint: it runs.
        check(ExperimentConfig::builtin_default(), 1 << 40).unwrap();
        let mut digest = ExperimentConfig::builtin_default();
        digest.controller.mode = PayloadMode::Digest;
        check(digest, 64 << 20).unwrap();
        let mut off = ExperimentConfig::builtin_default();
        off.precondition.enabled = false;
        check(off, 64 << 20).unwrap();
        let mut part = ExperimentConfig::builtin_default();
        part.precondition.footprint = 0.1;
        check(part, 64 << 20).unwrap();
    }
}

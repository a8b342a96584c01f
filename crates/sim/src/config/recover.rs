//! `[recovery] after_run`: a crash recovery measured on a copy of the chip the run left.

use crate::config::Experiment;
use crate::metrics::RecoveryStats;
use crate::SimError;
use controller::Controller;
use serde::{Deserialize, Serialize};

/// `[recovery]`: what happens after the measured run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RecoverySection {
    /// Copy the chip as the run left it — a crash after its last operation: no flush, no
    /// shutdown — and mount the copy with the scheme's recovery procedure; the report's
    /// `recovery.*` gives its simulated time and reads (DCR's measure). The run itself is
    /// unaffected.
    pub after_run: bool,
}

impl Experiment {
    /// Copies the chip as the run left it — a crash after the last operation — and mounts
    /// the copy with the scheme's recovery procedure at the engine's clock; the run's own
    /// device is untouched. Errors if the scheme's mount reports no recovery.
    pub fn recover_copy(&self) -> Result<RecoveryStats, SimError> {
        let vol = self.engine.volume();
        let chip = vol.controller().chip().clone();
        let ccfg = *vol.controller().config();
        let model = self.config.error_model()?;
        let mut ctl = Controller::new(chip, model, ccfg)
            .map_err(|e| SimError::Config(format!("recovery.after_run: controller: {e}")))?;
        ctl.set_crc32c(crc32c::crc32c);
        let (sector, codes) = vol.controller().built_codes();
        ctl.adopt_codes(sector, codes);
        let scheme = self.config.ftl.scheme_config();
        let mounted = scheme.mount_in(ctl, self.engine.clock(), &self.config.registry)?;
        let r = mounted.recovery_report().ok_or_else(|| {
            SimError::Config(format!(
                "recovery.after_run: scheme {} reports no recovery",
                scheme.name()
            ))
        })?;
        Ok(RecoveryStats {
            procedure: r.procedure.clone(),
            ms: r.time.0 as f64 / 1e6,
            pages_read: r.pages_read,
            checkpoint_pages: r.checkpoint_pages,
            blocks_scanned: r.blocks_scanned,
            mapped_pages: r.mapped_pages,
        })
    }
}

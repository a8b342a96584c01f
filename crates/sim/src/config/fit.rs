//! `[trace] fit`: sizing the device to a trace.

use super::ExperimentConfig;
use crate::SimError;
use nand::{ChipConfig, ErrorModel};

/// A device sized by `[trace] fit`.
pub(super) struct Fitted {
    pub ftl: crate::SimVolume,
    pub blocks_per_plane: u32,
    pub note: String,
}

impl ExperimentConfig {
    /// `[trace] fit`: the smallest `blocks_per_plane` of `chip_cfg` whose formatted volume
    /// holds `extent.data_end` bytes. Starts from a lower bound (every block a data block,
    /// nothing reserved) and grows by the shortfall, formatting each candidate (bad blocks,
    /// the checkpoint region and the GC reserve are the scheme's own business); at most 64
    /// rounds. Returns the FTL, the blocks per plane and a note saying what was chosen.
    pub(super) fn fit_device(
        &self,
        mut chip_cfg: ChipConfig,
        model: Box<dyn ErrorModel + Send>,
        scheme: &ftl::SchemeConfig,
        extent: crate::trace::TraceExtent,
        errs: &mut Vec<String>,
    ) -> Result<Fitted, SimError> {
        let g = chip_cfg.geometry;
        let page = g.page_size as u64;
        let need = extent.data_end.max(1).div_ceil(page);
        let op = self.ftl.page.over_provisioning.clamp(0.0, 0.99);
        let usable = ((g.pages_per_block as f64) * (1.0 - op)).max(1.0);
        let planes = g.total_dies() as u64 * g.planes_per_die as u64;
        let blocks_for = |pages: u64| ((pages as f64 / usable).ceil() as u64).div_ceil(planes);
        let mut bpp = blocks_for(need).max(1);
        let first = bpp;
        let mut model = Some(model);
        let mut codes = Vec::new();
        // Formats a candidate: `Ok(Some(ftl))` if it holds the trace, `Ok(None)` if not
        // (too small, or too few blocks for the scheme's reserves), `Err` past any size
        // that could be about space.
        let mut attempt = |bpp: u64| -> Result<Option<crate::SimVolume>, String> {
            chip_cfg.geometry.blocks_per_plane = bpp as u32;
            let m = match model.take() {
                Some(m) => m,
                None => self.error_model().map_err(|e| e.to_string())?,
            };
            match self.device(&chip_cfg, m, scheme, &mut codes) {
                Ok(f) if f.logical_pages() >= need => Ok(Some(f)),
                Ok(_) => Ok(None),
                // Too few blocks for the scheme's reserves (GC, checkpoint region): bigger
                // may do, up to a few times the estimate (past that the error is not about
                // size).
                Err(_) if bpp < 4 * first + 64 => Ok(None),
                Err(e) => Err(e),
            }
        };
        // Grow from the lower bound until a candidate holds the trace ...
        // The largest size known not to hold it (below the lower bound nothing does).
        let mut lo = first - 1;
        let mut found = None;
        for _ in 0..64 {
            if bpp > u32::MAX as u64 {
                break;
            }
            match attempt(bpp) {
                Ok(Some(f)) => {
                    found = Some(f);
                    break;
                }
                Ok(None) => {
                    lo = bpp;
                    bpp += (bpp / 8).max(1);
                }
                Err(e) => {
                    errs.push(format!("trace.fit: {e}"));
                    return Err(SimError::Config(errs.join("\n")));
                }
            }
        }
        let Some(mut ftl) = found else {
            errs.push(format!(
                "trace.fit: no device of chip {} holds {} bytes",
                chip_cfg.name, extent.data_end
            ));
            return Err(SimError::Config(errs.join("\n")));
        };
        // ... then bisect down to the smallest that does.
        let mut hi = bpp;
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            match attempt(mid) {
                Ok(Some(f)) => {
                    ftl = f;
                    hi = mid;
                }
                Ok(None) | Err(_) => lo = mid,
            }
        }
        let bytes = ftl.logical_pages() * page;
        let note = format!(
            "--fit: {hi} blocks per plane ({bytes} logical bytes) hold the trace's highest read/write address {}{}",
            extent.data_end,
            if extent.trim_end > bytes {
                format!("; its trims reach {} bytes and are clipped", extent.trim_end)
            } else {
                String::new()
            }
        );
        Ok(Fitted {
            ftl,
            blocks_per_plane: hi as u32,
            note,
        })
    }
}

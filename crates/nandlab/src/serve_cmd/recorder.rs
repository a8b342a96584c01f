//! `serve --record-trace`: every request as a blkparse text line.

use anyhow::{Context, Result};

/// The `--record-trace` writer: blkparse text lines, one per request.
pub(super) struct Recorder {
    out: std::io::BufWriter<std::fs::File>,
    seq: u64,
    started: std::time::Instant,
    /// The first write that failed, reported at the next flush.
    failed: Option<std::io::Error>,
}

impl Recorder {
    pub(super) fn create(path: &std::path::Path) -> Result<Self> {
        let f = std::fs::File::create(path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        Ok(Recorder {
            out: std::io::BufWriter::new(f),
            seq: 0,
            started: std::time::Instant::now(),
            failed: None,
        })
    }

    /// One request: `rwbs` and its byte range (sectors of 512 bytes, the range widened to
    /// whole sectors).
    pub(super) fn record(&mut self, rwbs: &str, offset: u64, len: u64) {
        use std::io::Write;
        self.seq += 1;
        let t = self.started.elapsed().as_secs_f64();
        let (sector, end) = (offset / 512, (offset + len).div_ceil(512));
        let r = writeln!(
            self.out,
            "43,0 0 {} {t:.9} 0 Q {rwbs} {sector} + {} [nbd]",
            self.seq,
            end - sector
        );
        if let Err(e) = r {
            self.failed.get_or_insert(e);
        }
    }

    /// Writes the buffered lines out; the first error since the last flush, if any.
    pub(super) fn flush(&mut self) -> std::io::Result<()> {
        use std::io::Write;
        match self.failed.take() {
            Some(e) => Err(e),
            None => self.out.flush(),
        }
    }
}

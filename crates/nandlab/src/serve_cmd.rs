//! `nandlab serve`: an NBD server over a page-level FTL volume on a file-backed chip image.
//!
//! One volume, shared by every connection under a lock (so `CAN_MULTI_CONN` holds: a FLUSH
//! on any connection covers writes completed on all). Sub-page and unaligned requests are
//! read-modify-write of whole FTL pages. FLUSH and FUA map to the FTL's `flush` (the
//! durability contract) followed by a sync of the image file. SIGINT/SIGTERM: stop
//! accepting, finish the request in progress, write a checkpoint (clean shutdown) and exit;
//! after SIGKILL the next start recovers. SIGUSR1 prints the volume's counters as one JSON
//! line on stderr. The image is locked: a second server on it is refused.
//!
//! Idle time: once no request has come for [`IDLE_AFTER`], the accept loop gives the FTL
//! its idle-time hook (`Ftl::tick`: FLARES's scrub and refresh rewrites, erases of
//! collected blocks, the checkpoint's own scrub) under the volume lock, at most
//! [`IDLE_TICKS`] calls at a time, so a request that arrives meanwhile waits for one call
//! at most; while the FTL reports more work it is called again every pass of the loop,
//! otherwise once a second.
//!
//! `--record-trace FILE` writes every well-formed data command, as the client sent it, as a
//! blkparse text line (device `43,0`, the nbd major; action `Q`; time in seconds since the
//! server started; `R`, `W` (also WRITE_ZEROES with NO_HOLE), `WFS` for a FUA write, `D` for
//! a trim or a zeroing trim, `FN 0 + 0` for a flush), which `nandlab run
//! --format blkparse` replays: a real host's block trace, captured on the way to the FTL.
//! Lines are buffered and written out at every flush and at shutdown (a SIGKILL loses the
//! tail since the last flush).

use crate::nbd::{self, Export};
use crate::volume_cmd::{self, RecoveryArg, Vol};
use anyhow::{Context, Result};
use clap::Args;
use ftl::FtlError;
use nand::{Lpn, Nanos};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// No request for this long, and the FTL gets idle time (see the module docs).
const IDLE_AFTER: Duration = Duration::from_millis(200);
/// Idle-time calls per pass of the accept loop (the lock is released between passes).
const IDLE_TICKS: usize = 16;
/// Between passes that found no idle-time work.
const IDLE_RECHECK: Duration = Duration::from_secs(1);

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The chip image (created and formatted first with --create).
    #[arg(long)]
    image: PathBuf,
    /// Create and format the image (chip preset name).
    #[arg(long)]
    create: Option<String>,
    /// With --create: blocks per plane.
    #[arg(long, requires = "create")]
    blocks_per_plane: Option<u32>,
    /// With --create: overwrite an existing, non-empty image (its volume is lost). Without
    /// it, --create on such an image is refused, so a repeated command line cannot
    /// reformat the disk it serves.
    #[arg(long, requires = "create")]
    force: bool,
    /// Address to listen on. Without TLS client certificates NBD has no authentication:
    /// anything but loopback is reachable by anyone who can reach the port.
    #[arg(long, default_value = "127.0.0.1:10809")]
    listen: SocketAddr,
    /// With --create: the FTL (a TOML file with an `[ftl]` section, as experiment files
    /// have; kept beside the image as `IMAGE.ftl.toml` for later starts). Without it: the
    /// combined profile (`[ftl] scheme = "combined"`: over-provisioning raised to what
    /// WAO-GC's bound needs on the chip), also kept beside the image.
    #[arg(long, requires = "create")]
    ftl: Option<PathBuf>,
    /// Recovery procedure at start (default: the image's FTL file's, else roll-forward).
    #[arg(long, value_enum)]
    recovery: Option<RecoveryArg>,
    /// The export's name (LIST and INFO report it; the empty name also selects it).
    #[arg(long, default_value = "")]
    export_name: String,
    /// Most connections served at once; more are accepted, logged and closed at once.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: u32,
    /// Seconds a client has to finish the handshake (TLS included) before it is dropped.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    handshake_timeout: u64,
    /// MiB of whole-payload buffers (simple-reply READs) shared by all connections; at
    /// least one 32 MiB payload. Streamed WRITEs and structured READs use a 256 KiB piece
    /// per connection besides.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(32..))]
    buffer_memory: u64,
    /// Seconds a reply may wait for the client to read it before that client is dropped
    /// (its buffers freed).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    stall_timeout: u64,
    /// TLS: the server's certificate chain (PEM). Enables NBD_OPT_STARTTLS.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// TLS: the server's private key (PEM).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// TLS: CA certificates (PEM); when given, clients must present a certificate it signed.
    #[arg(long, requires = "tls_cert")]
    tls_ca: Option<PathBuf>,
    /// TLS: `require` refuses to negotiate an export before STARTTLS (plaintext clients
    /// are refused); `optional` lets plaintext clients in too.
    #[arg(long, value_enum, default_value = "require", requires = "tls_cert")]
    tls: TlsMode,
    /// Record every request into this file as blkparse text (see the module docs).
    #[arg(long)]
    record_trace: Option<PathBuf>,
    /// `none` (the default): a reply goes out as soon as the host has served its request,
    /// so clients feel the host's speed (the flash's time is only booked, see SIGUSR1's
    /// statistics). `emulate`: each reply is held until the simulated device completes the
    /// request — its operations placed on the simulator's per-die, per-channel and
    /// per-decoder timelines, shared by all connections, GC and checkpoints included —
    /// anchored to the wall clock; the statistics then carry each reply's lag behind it
    /// and each request's time on the device (SIGUSR2 starts them again).
    #[arg(long, value_enum, default_value = "none")]
    timing: Timing,
}

/// `--timing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Timing {
    /// Replies as soon as served.
    None,
    /// Replies at the simulated device's completion.
    Emulate,
}

/// The `--record-trace` writer: blkparse text lines, one per request.
struct Recorder {
    out: std::io::BufWriter<std::fs::File>,
    seq: u64,
    started: std::time::Instant,
    /// The first write that failed, reported at the next flush.
    failed: Option<std::io::Error>,
}

impl Recorder {
    fn create(path: &std::path::Path) -> Result<Self> {
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
    fn record(&mut self, rwbs: &str, offset: u64, len: u64) {
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
    fn flush(&mut self) -> std::io::Result<()> {
        use std::io::Write;
        match self.failed.take() {
            Some(e) => Err(e),
            None => self.out.flush(),
        }
    }
}

/// Whether TLS is mandatory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TlsMode {
    /// No export before STARTTLS.
    Require,
    /// Plaintext clients allowed too.
    Optional,
}

/// Counts a connection while it lives.
struct Active(Arc<AtomicUsize>);

impl Drop for Active {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// An `accept` error worth waiting out (descriptor or buffer exhaustion, a client that gave
/// up before we accepted): the server logs it, backs off and keeps serving.
fn transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | OutOfMemory | TimedOut
    ) || matches!(
        e.raw_os_error(),
        Some(
            libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM | libc::EPROTO | libc::EPERM
        )
    )
}

/// What to do with a whole page: (volume, logical page, offset in the request's data).
type WholePage<'a> = dyn FnMut(&mut Volume, u64, usize) -> Result<(), u32> + 'a;
/// What to do with a partial page's image: (page buffer, bytes of the request in it,
/// offset in the request's data).
type PartialPage<'a> = dyn FnMut(&mut [u8], std::ops::Range<usize>, usize) + 'a;

/// A volume with byte addressing and a simulated clock that follows the wall clock from
/// where the image's saved clock left off (data served again a day later is a day older),
/// advancing at least 1 µs per operation.
pub struct Volume {
    vol: Vol,
    t: Nanos,
    /// Simulated time at `started`.
    base: Nanos,
    started: std::time::Instant,
    page: usize,
    size: u64,
    closed: bool,
    recorder: Option<Recorder>,
    /// The FTL's flash operations of the last call (drained after every call, so the log
    /// never grows).
    ops: Vec<ftl::FlashOp>,
    /// Simulated service time of page reads, page writes, trims (one per discard range)
    /// and flushes (index 0 to 3).
    service: [Service; 4],
    /// When the last request was served (idle time starts [`IDLE_AFTER`] later).
    last_request: Instant,
    /// Idle-time hook calls that reported work, and errors it returned.
    idle_ticks: u64,
    idle_errors: u64,
    /// `--timing emulate`: the device's timelines and the replies' lag.
    emulation: Option<Emulation>,
}

/// `--timing emulate`: the per-die, per-channel and per-decoder timelines the simulator's
/// engine uses (`ftl::timeline::Timeline`, one model), shared by every connection through
/// the volume; each call's device operations are placed on them at the simulated time of
/// the call, and the call's completion (the last operation's end) is reported back, in
/// wall-clock time, to hold the reply until then.
struct Emulation {
    timeline: ftl::timeline::Timeline,
    /// The latest completion of the operations issued since `Export::timing_start`.
    call_done: Option<Nanos>,
    /// The simulated time the current request reached the device (its header's arrival),
    /// at which its operations are placed; `None`: when they are issued.
    ready: Option<Nanos>,
    /// Each held reply's lag (reply sent − completion), µs.
    lag_us: hdrhistogram::Histogram<u64>,
    /// Each request's time on the emulated device (completion − arrival), µs: what a
    /// client would measure on a host that added nothing.
    device_us: hdrhistogram::Histogram<u64>,
    /// Replies sent later than [`LAG_WARN`] after their completion.
    behind: u64,
    /// When the last "behind" warning was printed.
    warned: Option<Instant>,
}

/// A histogram of microseconds from 1 µs to an hour (3 significant digits; a longer time
/// is counted as an hour).
fn micros() -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds")
}

/// What this server spends serving one 4 KiB request, for the warning at start: measured
/// with `--timing none` (fio, random 4 KiB reads at queue depth 32 on the page FTL: 8.2 µs
/// of server CPU per request on a 2-vCPU machine), rounded up.
const HOST_NS_PER_REQUEST: u64 = 10_000;

/// The warning `--timing emulate` gives at start when the chip, at full parallelism,
/// completes page reads faster than the host can serve requests: the queue depth from
/// which replies lag and the lag expected at queue depth 32. `None`: the host keeps up.
fn emulation_warning(vol: &Vol) -> Option<String> {
    let chip = vol.controller().chip();
    let (g, t) = (chip.geometry(), chip.config().timing);
    let read = t.read_lsb_ns.min(t.read_msb_ns).max(1)
        + t.transfer((g.page_size + g.spare_size) as usize).0;
    lag_warning(g.total_dies().max(1) as u64, read)
}

/// [`emulation_warning`] for a chip of `dies` dies whose page read (array and transfer)
/// takes `read` ns.
fn lag_warning(dies: u64, read: u64) -> Option<String> {
    // At queue depth q the device completes min(q, dies) reads per `read`; the host serves
    // one request per HOST_NS_PER_REQUEST.
    let from_qd = read / HOST_NS_PER_REQUEST + 1;
    if from_qd > dies {
        return None;
    }
    let lag_32 = (32 * HOST_NS_PER_REQUEST).saturating_sub(read) / 1000;
    Some(format!(
        "WARNING: --timing emulate: this chip ({dies} dies, a page read every {:.1} µs at full parallelism) is faster than this server (about {} µs per request): from queue depth {from_qd} on, replies will lag behind the simulated device (about {lag_32} µs at queue depth 32); the statistics report the measured lag",
        read as f64 / dies as f64 / 1e3,
        HOST_NS_PER_REQUEST / 1000
    ))
}

/// A reply this late makes the emulation say it is behind (the host does not keep up).
const LAG_WARN: Duration = Duration::from_millis(1);
/// At most one "behind" warning per this long.
const LAG_WARN_EVERY: Duration = Duration::from_secs(10);

impl Emulation {
    fn new(vol: &Vol) -> Self {
        let ctl = vol.controller();
        let g = *ctl.chip().geometry();
        Emulation {
            timeline: ftl::timeline::Timeline::new(
                g.total_dies() as usize,
                g.channels as usize,
                ctl.config().ecc_engines,
            ),
            call_done: None,
            ready: None,
            lag_us: micros(),
            device_us: micros(),
            behind: 0,
            warned: None,
        }
    }

    fn json(&self) -> serde_json::Value {
        let stats = |h: &hdrhistogram::Histogram<u64>| {
            serde_json::json!({
                "mean": if h.is_empty() { 0.0 } else { h.mean() },
                "p50": h.value_at_quantile(0.5),
                "p99": h.value_at_quantile(0.99),
                "p999": h.value_at_quantile(0.999),
                "max": h.max(),
            })
        };
        serde_json::json!({
            "replies": self.lag_us.len(),
            "device_us": stats(&self.device_us),
            "lag_us": stats(&self.lag_us),
            "behind": self.behind,
            "behind_threshold_us": LAG_WARN.as_micros() as u64,
        })
    }
}

/// Simulated service time of one kind of page operation: the operations a call issued,
/// one after another (array, transfer and decode time: what they take on one die).
#[derive(Debug, Clone, Copy, Default)]
struct Service {
    count: u64,
    total_ns: u64,
    max_ns: u64,
}

impl Service {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "count": self.count,
            "mean_us": if self.count > 0 { self.total_ns as f64 / self.count as f64 / 1e3 } else { 0.0 },
            "max_us": self.max_ns as f64 / 1e3,
        })
    }
}

impl Volume {
    fn new(vol: Vol, now: Nanos) -> Self {
        let page = vol.page_size();
        let size = vol.logical_pages() * page as u64;
        let mut v = Volume {
            vol,
            t: now,
            base: now,
            started: std::time::Instant::now(),
            page,
            size,
            closed: false,
            recorder: None,
            ops: Vec::new(),
            service: [Service::default(); 4],
            last_request: Instant::now(),
            idle_ticks: 0,
            idle_errors: 0,
            emulation: None,
        };
        // What format or mount did is not a host request's.
        v.drain(None);
        v
    }

    /// Drains the FTL's operation log; for a page read (`Some(0)`) or write (`Some(1)`)
    /// books their time. With timing emulation the operations go on the device's
    /// timelines at the current simulated time.
    fn drain(&mut self, kind: Option<usize>) {
        self.vol.take_ops(&mut self.ops);
        if let Some(em) = self.emulation.as_mut() {
            if !self.ops.is_empty() {
                let ready = em.ready.map_or(self.t, |r| r.min(self.t));
                let end = em.timeline.schedule(&self.ops, ready);
                em.call_done = Some(em.call_done.map_or(end, |d| d.max(end)));
            }
        }
        if let Some(k) = kind {
            let ns: u64 = self
                .ops
                .iter()
                .map(|o| o.array.0 + o.transfer.0 + o.ecc.0)
                .sum();
            let s = &mut self.service[k];
            s.count += 1;
            s.total_ns += ns;
            s.max_ns = s.max_ns.max(ns);
        }
        self.ops.clear();
    }

    /// The simulated time of a call: the wall clock since the start, at least a step past
    /// the last call's (1 µs; 1 ns with timing emulation, whose simulated time must not
    /// run ahead of the wall clock).
    fn tick(&mut self) -> Nanos {
        let wall = self.base + Nanos(self.started.elapsed().as_nanos() as u64);
        let step = if self.emulation.is_some() {
            Nanos(1)
        } else {
            Nanos::from_us(1)
        };
        self.t = (self.t + step).max(wall);
        self.t
    }

    /// The simulated time of wall-clock instant `at`.
    fn sim_of(&self, at: Instant) -> Nanos {
        self.base + Nanos(at.saturating_duration_since(self.started).as_nanos() as u64)
    }

    /// The wall-clock instant of simulated time `t`.
    fn wall_of(&self, t: Nanos) -> Instant {
        self.started + Duration::from_nanos(t.0.saturating_sub(self.base.0))
    }

    fn lpn(&self, l: u64) -> Result<Lpn, u32> {
        Lpn::checked(l, self.vol.logical_pages()).map_err(|_| nbd::EINVAL)
    }

    fn errno(e: FtlError) -> u32 {
        match e {
            FtlError::NoSpace => nbd::ENOSPC,
            FtlError::OutOfRange { .. } | FtlError::BufferSize { .. } => nbd::EINVAL,
            _ => nbd::EIO,
        }
    }

    /// Discards the whole pages of the byte range as one range (the FTL logs it as one
    /// record); a range past the export is refused before anything is discarded.
    fn trim_whole(&mut self, offset: u64, len: u64) -> Result<(), u32> {
        let ps = self.page as u64;
        let first = offset.div_ceil(ps);
        let end = offset.saturating_add(len) / ps;
        if end <= first {
            return Ok(());
        }
        let lpn = self.lpn(first)?;
        let t = self.tick();
        let r = self
            .vol
            .trim_range(t, lpn, end - first)
            .map_err(Self::errno);
        self.drain(Some(2));
        r
    }

    fn read_page(&mut self, l: u64, buf: &mut [u8]) -> Result<(), u32> {
        let t = self.tick();
        let lpn = self.lpn(l)?;
        let r = self.vol.read(t, lpn, buf).map_err(Self::errno);
        self.drain(Some(0));
        r
    }

    fn write_page(&mut self, l: u64, buf: &[u8]) -> Result<(), u32> {
        let t = self.tick();
        let lpn = self.lpn(l)?;
        let r = self.vol.write(t, lpn, buf).map_err(Self::errno);
        self.drain(Some(1));
        r
    }

    fn check(&self) -> Result<(), u32> {
        if self.closed {
            Err(nbd::ESHUTDOWN)
        } else {
            Ok(())
        }
    }

    /// The pieces of a byte range, page by page: (logical page, range within the page,
    /// offset of the piece within the range).
    fn spans(&self, offset: u64, len: u64) -> Vec<(u64, std::ops::Range<usize>, usize)> {
        let ps = self.page as u64;
        let (mut pos, end) = (offset, offset + len);
        let mut out = Vec::new();
        while pos < end {
            let in_page = (pos % ps) as usize;
            let n = ((ps - in_page as u64).min(end - pos)) as usize;
            out.push((pos / ps, in_page..in_page + n, (pos - offset) as usize));
            pos += n as u64;
        }
        out
    }

    /// Applies `whole` to every page the byte range covers entirely, and `partial` to the
    /// image of every page it covers in part (read-modify-write).
    fn each_page(
        &mut self,
        offset: u64,
        len: u64,
        whole: &mut WholePage<'_>,
        partial: &mut PartialPage<'_>,
    ) -> Result<(), u32> {
        let mut buf = vec![0u8; self.page];
        for (l, r, at) in self.spans(offset, len) {
            if r.len() == self.page {
                whole(self, l, at)?;
            } else {
                self.read_page(l, &mut buf)?;
                partial(&mut buf, r, at);
                self.write_page(l, &buf)?;
            }
        }
        Ok(())
    }

    fn fua(&mut self, fua: bool) -> Result<(), u32> {
        if fua {
            self.sync()
        } else {
            Ok(())
        }
    }

    /// The FTL's flush, the clock saved, the image synced, and the trace written out.
    fn sync(&mut self) -> Result<(), u32> {
        let t = self.tick();
        let r = self.vol.flush(t).map_err(Self::errno);
        self.drain(Some(3));
        r?;
        volume_cmd::save_clock(&mut self.vol, t).map_err(|_| nbd::EIO)?;
        if let Some(r) = self.recorder.as_mut() {
            if let Err(e) = r.flush() {
                eprintln!("--record-trace: {e}; recording stopped");
                self.recorder = None;
            }
        }
        self.vol
            .controller_mut()
            .chip_mut()
            .sync()
            .map_err(|_| nbd::EIO)
    }

    /// The FTL's idle-time hook, if no request came for [`IDLE_AFTER`]: at most
    /// [`IDLE_TICKS`] calls, stopping when one reports no more work. Whether more remains.
    /// An error is logged (the data path reports its own to the clients) and ends the pass.
    fn idle_work(&mut self) -> bool {
        if self.closed || self.last_request.elapsed() < IDLE_AFTER {
            return false;
        }
        for _ in 0..IDLE_TICKS {
            let t = self.tick();
            let r = self.vol.tick(t);
            self.drain(None);
            match r {
                Ok(true) => self.idle_ticks += 1,
                Ok(false) => return false,
                Err(e) => {
                    self.idle_errors += 1;
                    eprintln!("idle-time work: {e}");
                    return false;
                }
            }
        }
        true
    }

    /// Flushes and writes a checkpoint; further requests fail with `ESHUTDOWN`.
    fn close(&mut self) -> Result<()> {
        if !self.closed {
            self.closed = true;
            let t = self.tick();
            let r = self.vol.shutdown(t);
            self.drain(None);
            r?;
            volume_cmd::save_clock(&mut self.vol, t)?;
            if let Some(r) = self.recorder.as_mut() {
                r.flush().context("--record-trace")?;
            }
            self.vol.controller_mut().chip_mut().sync()?;
        }
        Ok(())
    }

    fn stats_json(&self) -> serde_json::Value {
        // Per-cause arrays as objects keyed by cause name.
        let mut counters = serde_json::to_value(self.vol.counters()).expect("serialises");
        for key in ["reads", "programs", "erases"] {
            if let Some(serde_json::Value::Array(a)) = counters.get(key).cloned() {
                let labelled: serde_json::Map<String, serde_json::Value> = ftl::Cause::ALL
                    .iter()
                    .zip(a)
                    .map(|(c, v)| (c.name().to_string(), v))
                    .collect();
                counters[key] = serde_json::Value::Object(labelled);
            }
        }
        serde_json::json!({
            "counters": counters,
            "waf": self.vol.counters().waf(),
            "page_read": self.service[0].json(),
            "page_write": self.service[1].json(),
            "trim": self.service[2].json(),
            "flush": self.service[3].json(),
            "latency_bound": self.vol.latency_bound(),
            "ecc": {
                "reads": self.vol.controller().stats().reads,
                "corrected_bits": self.vol.controller().stats().corrected_bits,
                "max_codeword_errors": self.vol.controller().stats().max_codeword_errors,
                "uncorrectable_normal": self.vol.controller().stats().uncorrectable_normal,
                "uncorrectable_critical": self.vol.controller().stats().uncorrectable_critical,
                "miscorrections_caught": self.vol.controller().stats().miscorrections_caught,
            },
            "erase_counts": {
                "max": self.vol.erase_counts().iter().max(),
                "min": self.vol.erase_counts().iter().min(),
            },
            "idle": { "calls_with_work": self.idle_ticks, "errors": self.idle_errors },
            "emulation": self.emulation.as_ref().map(Emulation::json),
        })
    }
}

impl Export for Volume {
    fn observe(&mut self, cmd: nbd::Command, offset: u64, len: u64) {
        use nbd::Command as C;
        let Some(r) = self.recorder.as_mut() else {
            return;
        };
        match cmd {
            C::Read => r.record("R", offset, len),
            C::Write { fua } | C::WriteZeroes { fua, no_hole: true } => {
                r.record(if fua { "WFS" } else { "W" }, offset, len)
            }
            C::Flush => r.record("FN", 0, 0),
            C::Trim { fua }
            | C::WriteZeroes {
                fua,
                no_hole: false,
            } => {
                r.record("D", offset, len);
                if fua {
                    r.record("FN", 0, 0);
                }
            }
        }
    }

    fn read_at(&mut self, offset: u64, out: &mut [u8]) -> Result<(), u32> {
        self.check()?;
        let mut buf = vec![0u8; self.page];
        for (l, r, at) in self.spans(offset, out.len() as u64) {
            let n = r.len();
            if n == self.page {
                self.read_page(l, &mut out[at..at + n])?;
            } else {
                self.read_page(l, &mut buf)?;
                out[at..at + n].copy_from_slice(&buf[r]);
            }
        }
        Ok(())
    }

    fn write_at(&mut self, offset: u64, data: &[u8], fua: bool) -> Result<(), u32> {
        self.check()?;
        let page = self.page;
        self.each_page(
            offset,
            data.len() as u64,
            &mut |v, l, at| v.write_page(l, &data[at..at + page]),
            &mut |buf, r, at| {
                let n = r.len();
                buf[r].copy_from_slice(&data[at..at + n]);
            },
        )?;
        self.fua(fua)
    }

    fn trim(&mut self, offset: u64, len: u64, fua: bool) -> Result<(), u32> {
        self.check()?;
        // Whole pages are discarded; the partial pages at the ends keep their data (a trim
        // is advisory).
        self.trim_whole(offset, len)?;
        self.fua(fua)
    }

    fn write_zeroes(&mut self, offset: u64, len: u64, fua: bool, no_hole: bool) -> Result<(), u32> {
        self.check()?;
        // Whole pages: a trim reads back as zeros (a hole) — one range, however long — or
        // with NO_HOLE a page of zeros written; partial pages: read-modify-write.
        let zeros = vec![0u8; self.page];
        let ps = self.page as u64;
        let (first, end) = (offset.div_ceil(ps) * ps, (offset + len) / ps * ps);
        if !no_hole && end > first {
            // The partial head and tail, then the whole pages between as one trim.
            let mut fill = |buf: &mut [u8], r: std::ops::Range<usize>, _| buf[r].fill(0);
            let mut never = |_: &mut Volume, _, _| Ok(());
            self.each_page(offset, first - offset, &mut never, &mut fill)?;
            self.each_page(end, offset + len - end, &mut never, &mut fill)?;
            self.trim_whole(first, end - first)?;
            return self.fua(fua);
        }
        self.each_page(
            offset,
            len,
            &mut |v, l, _| {
                if no_hole {
                    return v.write_page(l, &zeros);
                }
                v.trim_whole(l * ps, ps)
            },
            &mut |buf, r, _| buf[r].fill(0),
        )?;
        self.fua(fua)
    }

    fn extents(&mut self, offset: u64, len: u64, max: usize) -> Result<Vec<(u32, bool)>, u32> {
        self.check()?;
        // The FTL's map (in RAM) says which pages hold data; the rest read as zeros.
        let ps = self.page as u64;
        let end = offset + len;
        let mut runs: Vec<(u32, bool)> = Vec::new();
        let mut pos = offset;
        while pos < end {
            let l = pos / ps;
            let mapped = self.vol.mapping(l).is_some();
            let n = (ps - pos % ps).min(end - pos);
            match runs.last_mut() {
                Some((len, m)) if *m == mapped && (*len as u64 + n) <= u32::MAX as u64 => {
                    *len += n as u32
                }
                _ => {
                    if runs.len() == max {
                        break;
                    }
                    runs.push((n as u32, mapped));
                }
            }
            pos += n;
        }
        Ok(runs)
    }

    fn flush(&mut self) -> Result<(), u32> {
        self.check()?;
        self.sync()
    }

    fn timing_start(&mut self, arrival: Option<Instant>) {
        let ready = arrival.map(|a| self.sim_of(a));
        if let Some(em) = self.emulation.as_mut() {
            em.call_done = None;
            em.ready = ready;
        }
    }

    fn timing_end(&mut self) -> Option<Instant> {
        let done = self.emulation.as_mut()?.call_done.take()?;
        Some(self.wall_of(done))
    }

    fn timing_reply(&mut self, device: Duration, lag: Duration) {
        let Some(em) = self.emulation.as_mut() else {
            return;
        };
        em.device_us.saturating_record(device.as_micros() as u64);
        em.lag_us.saturating_record(lag.as_micros() as u64);
        if lag > LAG_WARN {
            em.behind += 1;
            if em.warned.is_none_or(|t| t.elapsed() >= LAG_WARN_EVERY) {
                em.warned = Some(Instant::now());
                eprintln!(
                    "WARNING: --timing emulate is behind: a reply went out {:.2} ms after the simulated device completed its request ({} of {} replies more than {} µs late so far); the host cannot serve this load in real time",
                    lag.as_secs_f64() * 1e3,
                    em.behind,
                    em.lag_us.len(),
                    LAG_WARN.as_micros()
                );
            }
        }
    }
}

/// Warns when the server listens beyond the loopback interface without authenticated
/// clients (TLS required, client certificates checked).
fn warn_if_open(a: &ServeArgs, tls: bool) {
    let authenticated = tls && a.tls_ca.is_some() && a.tls == TlsMode::Require;
    if !a.listen.ip().is_loopback() && !authenticated {
        eprintln!(
            "WARNING: listening on {} without {} — anyone who reaches this port can read and write the volume (use --tls-cert/--tls-key/--tls-ca)",
            a.listen,
            if !tls {
                "TLS"
            } else if a.tls_ca.is_none() {
                "client certificates"
            } else {
                "TLS required"
            }
        );
    }
}

/// Serves one accepted connection on a thread of its own (`guard` counts it open until
/// the thread ends); a thread that cannot start closes that client and the server goes on.
fn spawn_connection(
    stream: std::net::TcpStream,
    peer: std::net::SocketAddr,
    (volume, cfg, budget): (Arc<Mutex<Volume>>, Arc<nbd::ServerConfig>, Arc<nbd::Budget>),
    guard: Active,
) {
    let spawned = std::thread::Builder::new()
        .name(format!("nbd {peer}"))
        .spawn(move || {
            let _guard = guard;
            let r = nbd::serve_connection(stream, &cfg, &budget, |op| {
                let mut v = volume.lock().map_err(|_| nbd::EIO)?;
                v.last_request = Instant::now();
                op(&mut *v)
            });
            if let Err(e) = r {
                if e.kind() != std::io::ErrorKind::UnexpectedEof {
                    eprintln!("connection from {peer}: {e}");
                }
            }
        });
    if let Err(e) = spawned {
        // The closure (socket and count) is dropped: that client is closed.
        eprintln!("cannot start a thread for {peer} ({e}): connection closed, still serving");
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn run(a: ServeArgs) -> Result<()> {
    if a.create.is_some() {
        volume_cmd::refuse_overwrite(&a.image, a.force, "`serve --create`")?;
    }
    let tls = match (&a.tls_cert, &a.tls_key) {
        (Some(c), Some(k)) => Some(nbd::tls::server_config(c, k, a.tls_ca.as_deref())?),
        _ => None,
    };
    let (vol, now) = match &a.create {
        Some(preset) => (
            volume_cmd::create_with(&a.image, preset, a.blocks_per_plane, a.ftl.as_deref(), true)?,
            Nanos::ZERO,
        ),
        None => volume_cmd::open_at(&a.image, a.recovery.map(Into::into))?,
    };
    let recovered = vol.recovery_report().cloned();
    let mut volume = Volume::new(vol, now);
    if a.timing == Timing::Emulate {
        volume.emulation = Some(Emulation::new(&volume.vol));
        if let Some(w) = emulation_warning(&volume.vol) {
            eprintln!("{w}");
        }
    }
    if let Some(p) = &a.record_trace {
        volume.recorder = Some(Recorder::create(p)?);
    }
    let volume = Arc::new(Mutex::new(volume));
    let (size, preferred) = {
        let v = volume.lock().expect("volume lock");
        (v.size, v.page as u32)
    };
    warn_if_open(&a, tls.is_some());
    let cfg = Arc::new(nbd::ServerConfig {
        size,
        preferred,
        export_name: a.export_name.clone(),
        tls_required: tls.is_some() && a.tls == TlsMode::Require,
        tls,
        handshake_timeout: Duration::from_secs(a.handshake_timeout),
        stall_timeout: Duration::from_secs(a.stall_timeout),
        emulate: a.timing == Timing::Emulate,
    });
    let budget = Arc::new(nbd::Budget::new((a.buffer_memory << 20) as usize));
    let active = Arc::new(AtomicUsize::new(0));
    let max = a.max_connections as usize;
    let mut last_accept_error = None::<std::time::Instant>;
    let listener =
        TcpListener::bind(a.listen).with_context(|| format!("listening on {}", a.listen))?;
    listener.set_nonblocking(true)?;
    let stop = Arc::new(AtomicBool::new(false));
    let dump = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    signal_hook::flag::register(signal_hook::consts::SIGUSR1, Arc::clone(&dump))?;
    let reset = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGUSR2, Arc::clone(&reset))?;
    println!(
        "serving {} ({} bytes, {}-byte blocks) on {}{}",
        a.image.display(),
        size,
        preferred,
        listener.local_addr()?,
        recovered
            .map(|r| format!(
                "; mounted by {} ({} pages read, {:.1} ms simulated)",
                r.procedure,
                r.pages_read,
                r.time.0 as f64 / 1e6
            ))
            .unwrap_or_default()
    );
    if a.timing == Timing::Emulate {
        println!("timing: emulated (each reply held until the simulated device completes its request; SIGUSR1 prints the replies' lag)");
    }
    use std::io::Write;
    std::io::stdout().flush()?;
    let (mut idle_pass, mut idle_busy) = (Instant::now(), true);
    while !stop.load(Ordering::Relaxed) {
        if idle_busy || idle_pass.elapsed() >= IDLE_RECHECK {
            idle_pass = Instant::now();
            idle_busy = volume.lock().expect("volume lock").idle_work();
        }
        if reset.swap(false, Ordering::Relaxed) {
            // The emulation's reply statistics start again (a benchmark's measured phase).
            if let Some(em) = volume.lock().expect("volume lock").emulation.as_mut() {
                em.lag_us.reset();
                em.device_us.reset();
                em.behind = 0;
            }
        }
        if dump.swap(false, Ordering::Relaxed) {
            let v = volume.lock().expect("volume lock");
            let mut stats = v.stats_json();
            stats["server"] = serde_json::json!({
                "connections": active.load(Ordering::Relaxed),
                "buffer_bytes_in_use": budget.in_use(),
            });
            eprintln!("{stats}");
        }
        match listener.accept() {
            Ok((stream, peer)) => {
                if active.load(Ordering::Relaxed) >= max {
                    eprintln!("refused {peer}: {max} connections open (--max-connections)");
                    drop(stream);
                    continue;
                }
                if stream.set_nonblocking(false).is_err() {
                    continue;
                }
                let _ = stream.set_nodelay(true);
                active.fetch_add(1, Ordering::Relaxed);
                let guard = Active(Arc::clone(&active));
                let shared = (Arc::clone(&volume), Arc::clone(&cfg), Arc::clone(&budget));
                spawn_connection(stream, peer, shared, guard);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) if transient(&e) => {
                // Logged at most once a second; the clients already connected go on.
                let now = std::time::Instant::now();
                if last_accept_error.is_none_or(|t| now.duration_since(t) >= Duration::from_secs(1))
                {
                    eprintln!("accept: {e} (backing off, still serving)");
                    last_accept_error = Some(now);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => {
                eprintln!("accept: {e}; shutting down cleanly");
                break;
            }
        }
    }
    let mut v = volume.lock().expect("volume lock");
    v.close()?;
    eprintln!("shut down cleanly: {}", v.stats_json());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::lag_warning;

    /// A chip of few dies with slow reads keeps up with the host; one of many dies with fast
    /// reads does not, and the warning names the queue depth from which replies lag.
    #[test]
    fn the_start_warning_fires_only_when_the_chip_outruns_the_host() {
        // tiny-mlc-like: 2 dies, 300 µs reads: the device needs 30 requests in flight to
        // outrun the host, more than it has dies.
        assert_eq!(lag_warning(2, 300_000), None);
        // 64 dies, 50 µs reads: from queue depth 6 on.
        let w = lag_warning(64, 50_000).expect("a warning");
        assert!(w.contains("from queue depth 6 on"), "{w}");
        assert!(w.contains("about 270 µs at queue depth 32"), "{w}");
    }
}

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
//! Idle time: once no request has come for [`volume::IDLE_AFTER`], the accept loop gives the FTL
//! its idle-time hook (`Ftl::tick`: FLARES's scrub and refresh rewrites, erases of
//! collected blocks, the checkpoint's own scrub) under the volume lock, at most
//! [`volume::IDLE_TICKS`] calls at a time, so a request that arrives meanwhile waits for one call
//! at most (with timing emulation, one step at a time on the emulated device, as the
//! simulator gives idle time). Every pass of the loop (at most 20 ms apart) asks, so idle time starts
//! [`volume::IDLE_AFTER`] after the last request, as a replay with `--idle-after` gives it;
//! once the FTL reports no more work it is asked again after [`volume::IDLE_RECHECK`], or
//! [`volume::IDLE_AFTER`] after the next request.
//!
//! `--record-trace FILE` writes every well-formed data command, as the client sent it, as a
//! blkparse text line (device `43,0`, the nbd major; action `Q`; time in seconds since the
//! server started; `R`, `W` (also WRITE_ZEROES with NO_HOLE), `WFS` for a FUA write, `D` for
//! a trim or a zeroing trim, `FN 0 + 0` for a flush), which `nandlab run
//! --format blkparse` replays: a real host's block trace, captured on the way to the FTL.
//! Lines are buffered and written out at every flush and at shutdown (a SIGKILL loses the
//! tail since the last flush).
//!
//! `--timing emulate` holds each reply until the simulated device completes its request
//! (see `emulation`). Files: this one the command and its accept loop; `volume` the served
//! volume and its NBD export; `emulation` the device's timelines and the replies' lag;
//! `recorder` the trace writer.

mod emulation;
mod recorder;
mod volume;

use crate::nbd;
use crate::volume_cmd::{self, RecoveryArg};
use anyhow::{Context, Result};
use clap::Args;
use emulation::{emulation_warning, Emulation};
use nand::Nanos;
use recorder::Recorder;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use volume::Volume;

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
                v.requested();
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
    // The status lines in one write (a reader that takes the first line and closes the
    // pipe gets both), and a closed stdout does not stop the server.
    let mut status = format!(
        "serving {} ({} bytes, {}-byte blocks) on {}{}\n",
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
        status.push_str("timing: emulated (each reply held until the simulated device completes its request; SIGUSR1 prints the replies' lag)\n");
    }
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(status.as_bytes()).and_then(|()| out.flush());
    }
    while !stop.load(Ordering::Relaxed) {
        let next_idle = volume.lock().expect("volume lock").idle_work();
        if reset.swap(false, Ordering::Relaxed) {
            // The emulation's reply statistics start again (a benchmark's measured phase).
            if let Some(em) = volume.lock().expect("volume lock").emulation.as_mut() {
                em.reset();
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
                // Back sooner when an idle-time step completes on the emulated device.
                let pace = Duration::from_millis(20);
                let wait = next_idle.map_or(pace, |t| {
                    t.saturating_duration_since(std::time::Instant::now())
                        .min(pace)
                });
                std::thread::sleep(wait);
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

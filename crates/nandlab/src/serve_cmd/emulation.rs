//! `serve --timing emulate`: the device's timelines behind the served volume, and the
//! replies' lag and device time.

use crate::volume_cmd::Vol;
use nand::Nanos;
use std::time::{Duration, Instant};

/// `--timing emulate`: the per-die, per-channel and per-decoder timelines the simulator's
/// engine uses (`ftl::timeline::Timeline`, one model), shared by every connection through
/// the volume; each call's device operations are placed on them at the simulated time of
/// the call, and the call's completion (the last operation's end) is reported back, in
/// wall-clock time, to hold the reply until then.
pub(super) struct Emulation {
    timeline: ftl::timeline::Timeline,
    /// The latest completion of the operations issued since [`start`](Emulation::start).
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
    /// The request longest on the device: its arrival (since the server started, the
    /// clock of `--record-trace`'s times) and its device time.
    slowest: Option<(Duration, Duration)>,
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
pub(super) fn emulation_warning(vol: &Vol) -> Option<String> {
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
    pub(super) fn new(vol: &Vol) -> Self {
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
            slowest: None,
            warned: None,
        }
    }

    /// A call of a request that reached the device at `ready` starts (`None`: place its
    /// operations when they are issued).
    pub(super) fn start(&mut self, ready: Option<Nanos>) {
        self.call_done = None;
        self.ready = ready;
    }

    /// Places a call's operations, issued at `now`, on the timelines.
    pub(super) fn schedule(&mut self, ops: &[ftl::FlashOp], now: Nanos) {
        if !ops.is_empty() {
            let ready = self.ready.map_or(now, |r| r.min(now));
            let end = self.timeline.schedule(ops, ready);
            self.call_done = Some(self.call_done.map_or(end, |d| d.max(end)));
        }
    }

    /// When every die, channel and decoder of the emulated device is free.
    pub(super) fn all_free(&self) -> Nanos {
        self.timeline.all_free()
    }

    /// When the operations issued since [`start`](Emulation::start) end (`None`: none).
    pub(super) fn take_done(&mut self) -> Option<Nanos> {
        self.call_done.take()
    }

    /// Books a reply: its request's arrival (since the server started), its time on the
    /// device and how late it went out; warns (at most every [`LAG_WARN_EVERY`]) when it
    /// was more than [`LAG_WARN`] late.
    pub(super) fn reply(&mut self, arrival: Duration, device: Duration, lag: Duration) {
        self.device_us.saturating_record(device.as_micros() as u64);
        if self.slowest.is_none_or(|(_, d)| device > d) {
            self.slowest = Some((arrival, device));
        }
        self.lag_us.saturating_record(lag.as_micros() as u64);
        if lag > LAG_WARN {
            self.behind += 1;
            if self.warned.is_none_or(|t| t.elapsed() >= LAG_WARN_EVERY) {
                self.warned = Some(Instant::now());
                eprintln!(
                    "WARNING: --timing emulate is behind: a reply went out {:.2} ms after the simulated device completed its request ({} of {} replies more than {} µs late so far); the host cannot serve this load in real time",
                    lag.as_secs_f64() * 1e3,
                    self.behind,
                    self.lag_us.len(),
                    LAG_WARN.as_micros()
                );
            }
        }
    }

    /// Starts the reply statistics again (SIGUSR2: a benchmark's measured phase).
    pub(super) fn reset(&mut self) {
        self.lag_us.reset();
        self.device_us.reset();
        self.behind = 0;
        self.slowest = None;
    }

    pub(super) fn json(&self) -> serde_json::Value {
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
            "slowest": self.slowest.map(|(at, d)| serde_json::json!({
                "arrival_s": at.as_secs_f64(),
                "device_us": d.as_micros() as u64,
            })),
        })
    }
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

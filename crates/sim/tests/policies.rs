//! Schemes as configurations: policy objects named in one experiment file, write hints
//! from the workload and the experiment's critical ranges, and the bad input around them.

use sim::{ExperimentConfig, Progress};
use std::path::Path;

mod common;

use common::{config, experiment_text, run, FILE};

#[test]
fn two_schemes_from_one_file_differ_only_by_policy_objects() {
    let fg = config("\"foreground\"", "\"striped\"");
    let inc = config("{ incremental = { steps = 2 } }", "\"striped\"");
    // The same scheme and settings but for the pacing object.
    let (a, b) = (fg.ftl.scheme_config(), inc.ftl.scheme_config());
    assert_eq!(a.name(), b.name());
    let (ftl::SchemeConfig::Page(pa), ftl::SchemeConfig::Page(pb)) = (a, b) else {
        unreachable!("page-level configurations")
    };
    assert_eq!(
        ftl::PageFtlConfig {
            gc_pacing: pb.gc_pacing,
            ..pa
        },
        pb
    );
    assert_ne!(pa.gc_pacing, pb.gc_pacing);
    let ra = run(fg);
    let rb = run(inc);
    for r in [&ra, &rb] {
        assert_eq!(r.host.mismatches, 0, "{}", r.to_json());
        assert!(r.host.verified_reads > 1000);
        assert!(r.nand.counter("gc_victims") > 0);
    }
    // The same requests (same seed and workload), served by differently paced GC: the
    // write tail no longer pays for a whole victim. (The p99, not the maximum: the worst
    // write is about 1 s either way — 200 checkpoint sealing pads per checkpoint here, which
    // the pacing does not change, are the likely cause — and which side wins it moved with
    // the region's size.)
    assert_eq!(ra.host.pages_written, rb.host.pages_written);
    assert!(
        rb.latency["write"].p99_us < ra.latency["write"].p99_us,
        "incremental {} µs, foreground {} µs",
        rb.latency["write"].p99_us,
        ra.latency["write"].p99_us
    );
}

#[test]
fn hinted_streams_separate_hot_from_cold_writes() {
    let striped = run(config("\"foreground\"", "\"striped\""));
    let streams = run(config("\"foreground\"", "\"hint-streams\""));
    assert_eq!(streams.host.mismatches, 0);
    assert_eq!(striped.host.pages_written, streams.host.pages_written);
    // Cold-hinted writes share blocks with other cold data, so victims hold less live data.
    assert!(
        streams.waf < striped.waf,
        "hint-streams WAF {} vs striped {}",
        streams.waf,
        striped.waf
    );
}

#[test]
fn unknown_policy_names_and_bad_hints_are_named() {
    for (key, value, word) in [
        ("gc_pacing", "\"lazy\"", "lazy"),
        ("placement", "\"random\"", "random"),
        ("gc_pacing", "{ incremental = { stepz = 2 } }", "stepz"),
    ] {
        let text = experiment_text("policies", 21, FILE)
            .replace(
                "PACING",
                if key == "gc_pacing" {
                    value
                } else {
                    "\"foreground\""
                },
            )
            .replace(
                "PLACEMENT",
                if key == "placement" {
                    value
                } else {
                    "\"striped\""
                },
            );
        let e = ExperimentConfig::from_toml_str(&text, "policies.toml")
            .unwrap_err()
            .to_string();
        let line = text.lines().position(|l| l.starts_with(key)).unwrap() + 1;
        assert!(e.contains(&format!("policies.toml:{line}")), "{key}: {e}");
        assert!(
            (e.contains("unknown") || e.contains("unexpected")) && e.contains(word),
            "{key}: {e}"
        );
    }
    // A critical range past the volume names the key and the values.
    let cfg = config("\"foreground\"", "\"striped\"");
    let mut cfg2 = cfg.clone();
    cfg2.hints.critical[0].offset = 1 << 40;
    let e = cfg2.build(Path::new(".")).unwrap_err().to_string();
    assert!(
        e.contains("hints.critical[0]") && e.contains(&(1u64 << 40).to_string()),
        "{e}"
    );
    let mut cfg3 = cfg;
    cfg3.hints.critical[0].len = 0;
    let e = cfg3.build(Path::new(".")).unwrap_err().to_string();
    assert!(
        e.contains("hints.critical[0]") && e.contains("len = 0"),
        "{e}"
    );
}

const AGING: &str = r#"
[errors]
model = "flares"
[aging]
pe = 2500
[ftl.page]
over_provisioning = 0.25
ecc_t = 12
[precondition]
max_overwrite = 0.5
[workload]
requests = 3000
read_pct = 90
size = 4096
IDLE
[load]
mode = "closed"
queue_depth = 4
"#;

/// Host idle periods really pass simulated time with no I/O: the data ages (FLARES's
/// retention term), so reads after them correct more bits; the run's simulated time holds
/// the idle time.
#[test]
fn idle_periods_age_the_data() {
    let run_with = |idle: &str| {
        let text = experiment_text("aging", 4, AGING).replace("IDLE", idle);
        run(ExperimentConfig::from_toml_str(&text, "aging.toml").unwrap())
    };
    let busy = run_with("");
    let idle = run_with("idle = { every = 500, seconds = 2592000 }");
    assert_eq!(busy.host.mismatches, 0);
    assert_eq!(idle.host.mismatches, 0);
    assert_eq!(busy.host.pages_read, idle.host.pages_read);
    // Five idle periods of 30 days.
    assert!(idle.sim_seconds > 5.0 * 2_592_000.0, "{}", idle.sim_seconds);
    assert!(busy.sim_seconds < 1000.0, "{}", busy.sim_seconds);
    assert!(
        idle.ecc.corrected_bits > 2 * busy.ecc.corrected_bits.max(1),
        "idle {} vs busy {} corrected bits",
        idle.ecc.corrected_bits,
        busy.ecc.corrected_bits
    );
    // Bad idle periods are named with their value.
    for (idle, key, value) in [
        ("idle = { every = 5, seconds = -3.0 }", "idle.seconds", "-3"),
        ("idle = { every = 0, seconds = 3.0 }", "idle.every", "0"),
    ] {
        let text = experiment_text("aging", 4, AGING).replace("IDLE", idle);
        let e = ExperimentConfig::from_toml_str(&text, "aging.toml")
            .unwrap()
            .build(Path::new("."))
            .unwrap_err()
            .to_string();
        assert!(e.contains(key) && e.contains(value), "{e}");
    }
}

/// The scheduler hands out queued requests by predicate, out of order, leaving the rest.
#[test]
fn scheduler_takes_the_first_match() {
    use sim::{Fifo, ReqKind, Request, Scheduler};
    let mut q = Fifo::default();
    for (i, kind) in [ReqKind::Read, ReqKind::Write, ReqKind::Read, ReqKind::Write]
        .into_iter()
        .enumerate()
    {
        q.push(Request {
            arrival: nand::Nanos(i as u64),
            kind,
            offset: i as u64 * 4096,
            len: 4096,
            class: ftl::DataClass::NORMAL,
            idle_before: nand::Nanos::ZERO,
        });
    }
    let w = |r: &Request| r.kind == ReqKind::Write;
    assert_eq!(q.peek_first(&mut { w }).map(|r| r.offset), Some(4096));
    assert_eq!(q.take_first(&mut { w }).map(|r| r.offset), Some(4096));
    assert_eq!(q.take_first(&mut { w }).map(|r| r.offset), Some(12288));
    assert!(q.take_first(&mut { w }).is_none());
    assert_eq!(q.len(), 2);
    assert_eq!(q.pop().map(|r| r.offset), Some(0));
}

/// With a device queue shorter than the host's, requests really wait in the scheduler
/// (where a scheme's request feedback can find them) — in closed and in open loop — and
/// their latency includes the wait; without one, nothing waits.
#[test]
fn a_device_queue_makes_requests_wait_in_the_scheduler() {
    // The policy experiment with its load (and workload lines) replaced: the report and
    // the time requests waited in the scheduler.
    let run_with = |load: &str, workload: &str| {
        let rest = FILE
            .replace("PACING", "\"foreground\"")
            .replace("PLACEMENT", "\"striped\"")
            .replace("read_pct = 30\nsize = 4096\n", workload)
            .replace("[load]\nmode = \"closed\"\nqueue_depth = 1\n", load);
        let text = experiment_text("queue", 21, &rest);
        let mut x = ExperimentConfig::from_toml_str(&text, "queue.toml")
            .unwrap()
            .build(Path::new("."))
            .unwrap();
        let r = x.run(&mut |_: Progress| {}).unwrap();
        (r, x.engine.queue_wait())
    };
    let closed = "read_pct = 30\nsize = 4096\n";
    let (free, w0) = run_with("[load]\nmode = \"closed\"\nqueue_depth = 8\n", closed);
    let (queued, w1) = run_with(
        "[load]\nmode = \"closed\"\nqueue_depth = 8\ndevice_queue = 2\n",
        closed,
    );
    assert_eq!(w0, nand::Nanos::ZERO);
    assert!(w1 > nand::Nanos::ZERO);
    assert_eq!(free.host.pages_written, queued.host.pages_written);
    assert_eq!(queued.host.mismatches, 0);
    assert!(queued.latency["read"].mean_us > free.latency["read"].mean_us);
    // Open loop: arrivals every 50 µs, faster than one slot serves them.
    let fast = "read_pct = 30\nsize = 4096\ninterarrival_us = 50\n";
    let (o0, ow0) = run_with("[load]\nmode = \"open\"\n", fast);
    let (o1, ow1) = run_with("[load]\nmode = \"open\"\ndevice_queue = 1\n", fast);
    assert_eq!(ow0, nand::Nanos::ZERO);
    assert!(ow1 > nand::Nanos::ZERO);
    assert_eq!(o0.host.pages_written, o1.host.pages_written);
    assert_eq!(o1.host.mismatches, 0);
    // A zero-length device queue is named.
    let rest = FILE
        .replace("PACING", "\"foreground\"")
        .replace("PLACEMENT", "\"striped\"")
        .replace("queue_depth = 1\n", "queue_depth = 1\ndevice_queue = 0\n");
    let e = ExperimentConfig::from_toml_str(&experiment_text("q", 1, &rest), "q.toml")
        .unwrap()
        .build(Path::new("."))
        .unwrap_err()
        .to_string();
    assert!(e.contains("load.device_queue") && e.contains('0'), "{e}");
}

/// `background = "every-request"` (the FTL's background hook after each request) serves the
/// same requests with the same data; an unknown setting is named.
#[test]
fn background_work_after_every_request() {
    let run_with = |background: &str| {
        let rest = FILE
            .replace("PACING", "\"foreground\"")
            .replace("PLACEMENT", "\"striped\"")
            .replace(
                "queue_depth = 1\n",
                &format!("queue_depth = 1\nbackground = {background}\n"),
            );
        let text = experiment_text("background", 21, &rest);
        run(ExperimentConfig::from_toml_str(&text, "background.toml").unwrap())
    };
    let idle = run_with("\"idle\"");
    let every = run_with("\"every-request\"");
    assert_eq!(every.host.mismatches, 0);
    assert_eq!(idle.host.pages_written, every.host.pages_written);
    assert!(every.nand.counter("gc_victims") > 0);
    let e = ExperimentConfig::from_toml_str(
        &experiment_text(
            "background",
            21,
            &FILE
                .replace("PACING", "\"foreground\"")
                .replace("PLACEMENT", "\"striped\"")
                .replace(
                    "queue_depth = 1\n",
                    "queue_depth = 1\nbackground = \"sometimes\"\n",
                ),
        ),
        "background.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("sometimes"), "{e}");
}

/// AP's request feedback in the engine: with requests waiting in the device queue, a
/// critical write that would meet an LSB page lets a queued non-critical write take it
/// (counted, and fewer LSB pages padded than with no queue to draw from); bytes mode
/// verifies every read, so the writes served out of turn are the data the host wrote. The
/// Baseline has neither feedback nor placement pads.
#[test]
fn request_feedback_fills_lsb_pages_from_the_queue() {
    let text = |placement: &str, order: &str, device_queue: &str| {
        experiment_text(
            "feedback",
            23,
            &format!(
                r#"
[errors]
model = "none"
[ftl.page]
over_provisioning = 0.25
ecc_t = 8
placement = "{placement}"
copy_order = "{order}"
[precondition]
max_overwrite = 1.0
[workload]
requests = 6000
read_pct = 30
random_pct = 100
size = 4096
[hints]
critical = [{{ offset = 0, len = 262144 }}]
[load]
mode = "closed"
queue_depth = 8
{device_queue}
"#
            ),
        )
    };
    let go = |t: String| run(ExperimentConfig::from_toml_str(&t, "feedback.toml").unwrap());
    let ap = go(text("msb-critical", "asymmetric", "device_queue = 1"));
    let alone = go(text("msb-critical", "asymmetric", ""));
    let bl = go(text("striped", "ascending", "device_queue = 1"));
    for r in [&ap, &alone, &bl] {
        assert_eq!(r.host.mismatches, 0);
        assert!(r.host.verified_reads > 1000);
        assert!(r.host.critical_pages_read > 20, "{:?}", r.host);
    }
    assert!(ap.host.request_feedbacks > 20, "{:?}", ap.host);
    assert!(ap.nand.counter("pairing_lookups") > ap.host.request_feedbacks);
    // Without a device queue every request is dispatched at once: nothing waits to be
    // drawn on (the FTL still pads).
    assert_eq!(alone.host.request_feedbacks, 0);
    assert!(
        ap.nand.counter("placement_pads") < alone.nand.counter("placement_pads"),
        "{} vs {}",
        ap.nand.counter("placement_pads"),
        alone.nand.counter("placement_pads")
    );
    assert_eq!(bl.host.request_feedbacks, 0);
    assert_eq!(bl.nand.counter("placement_pads"), 0);
    assert_eq!(ap.host.requests, bl.host.requests);
}

/// A chip's departure from its error model (`[errors] scale`) must be a positive factor.
/// The error building the experiment `text` gives (parse or build).
fn refused(text: &str) -> String {
    ExperimentConfig::from_toml_str(text, "bad.toml")
        .and_then(|c| c.build(Path::new(".")))
        .expect_err("refused")
        .to_string()
}

#[test]
fn error_scale_out_of_range_names_the_key() {
    let base = experiment_text("bad", 1, "[errors]\nmodel = \"flares\"\n");
    for scale in ["0.0", "-2.0", "inf"] {
        let t = base.replace(
            "model = \"flares\"",
            &format!("model = \"flares\"\nscale = {scale}"),
        );
        let e = refused(&t);
        assert!(e.contains("errors.scale"), "{e}");
    }
}

/// The error-draw keys out of range are refused by name; `precondition.footprint` too.
#[test]
fn error_draw_and_footprint_out_of_range_name_the_key() {
    let base = experiment_text("bad", 1, "[errors]\nmodel = \"flares\"\n");
    for (key, extra) in [
        ("errors.persistent", "persistent = 1.5"),
        ("errors.page_bits", "page_bits = 0"),
        ("errors.block_sigma", "block_sigma = -1.0"),
        ("errors.step_hours", "step_hours = -3.0"),
        ("errors.step_factor", "step_hours = 3.0\nstep_factor = 0.0"),
    ] {
        let t = base.replace(
            "model = \"flares\"",
            &format!("model = \"flares\"\n{extra}"),
        );
        let e = refused(&t);
        assert!(e.contains(key), "{key}: {e}");
    }
    let t = format!("{base}[precondition]\nfootprint = 0.0\n");
    let e = refused(&t);
    assert!(e.contains("precondition.footprint"), "{e}");
}

/// AP's bad input: σ outside (0, 1], MSB placement on a single-level chip.
#[test]
fn ap_configuration_errors_name_the_key() {
    let base = experiment_text("bad", 1, "[errors]\nmodel = \"ap\"\n");
    for sigma in ["0.0", "1.5", "-0.5"] {
        let t = base.replace(
            "model = \"ap\"",
            &format!("model = \"ap\"\nmsb_ratio = {sigma}"),
        );
        let e = refused(&t);
        let shown = sigma.parse::<f64>().unwrap().to_string();
        assert!(e.contains("errors.msb_ratio") && e.contains(&shown), "{e}");
    }
    let t = "name = \"bad\"\nseed = 1\n[chip]\npreset = \"tiny-slc\"\n[ftl.page]\necc_t = 2\nplacement = \"msb-critical\"\n";
    let e = refused(t);
    assert!(
        e.contains("msb-critical") && e.contains("single-level"),
        "{e}"
    );
    // A replica count that cannot fit the device: 3 copies of half the volume.
    let mut cfg4 = config("\"foreground\"", "\"striped\"");
    cfg4.ftl.page.replicas = 3;
    let cap = cfg4
        .clone()
        .build(Path::new("."))
        .unwrap()
        .engine
        .capacity();
    cfg4.hints.critical[0].len = cap / 2;
    let e = cfg4
        .build(Path::new("."))
        .map(drop)
        .unwrap_err()
        .to_string();
    assert!(e.contains("ftl.page.replicas = 3"), "{e}");
}

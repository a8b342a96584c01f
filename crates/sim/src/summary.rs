//! The human summary of a run's report (the table `nandlab run` prints).

use crate::metrics::Report;
use std::collections::BTreeMap;
use std::fmt::Write as _;

impl Report {
    /// The human summary printed on the terminal.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let w = &mut s;
        let _ = writeln!(
            w,
            "== {} (seed {}): {} · {} FTL · {} payload",
            self.name, self.seed, self.chip, self.ftl, self.payload
        );
        self.write_setup_and_host(w);
        self.write_flash(w);
        self.write_wear_and_latency(w);
        self.write_recovery_and_ecc(w);
        s
    }

    /// The run's setup (chip, FTL, errors, workload, load), volume and host counts.
    fn write_setup_and_host(&self, w: &mut String) {
        let st = &self.setup;
        let _ = writeln!(w, "chip        {}", st.chip);
        let _ = writeln!(w, "ftl         {}", st.ftl);
        let _ = writeln!(w, "errors      {}", st.errors);
        let _ = writeln!(w, "workload    {}", st.workload);
        for n in &self.input_notes {
            let _ = writeln!(w, "input       warning: {n}");
        }
        let _ = writeln!(w, "load        {}", st.load);
        let _ = writeln!(
            w,
            "volume      {:.1} MiB logical; simulated {}; {:.0} IOPS, {:.1} MiB/s",
            self.logical_bytes as f64 / (1 << 20) as f64,
            human_time(self.sim_seconds * 1e6),
            self.iops,
            self.throughput_mib_s
        );
        if let Some(o) = self.offered_iops {
            let _ = writeln!(
                w,
                "offered     {o:.0} IOPS (arrivals); served {:.0}{}",
                self.iops,
                if o > 1.1 * self.iops {
                    " — the device is saturated: requests queue, and latencies are mostly waiting time"
                } else {
                    ""
                }
            );
        }
        let h = &self.host;
        let _ = writeln!(w, "host        {} requests: {} pages written, {} read, {} flushes; {} unreadable; {} reads verified, {} mismatches",
            h.requests, h.pages_written, h.pages_read, h.flushes, h.read_errors, h.verified_reads, h.mismatches);
        if h.critical_pages_read > 0 || h.request_feedbacks > 0 {
            let _ = writeln!(w, "critical    {} critical pages read, {} unreadable; {} request feedbacks (queued writes served ahead of a critical write)",
                h.critical_pages_read, h.critical_read_errors, h.request_feedbacks);
        }
        if h.trim_requests > 0 {
            let _ = writeln!(w, "trims       {} requests over {} bytes: {} whole pages covered, {} mapped pages dropped (distinct; pages already unmapped are not counted again)",
                h.trim_requests, h.trimmed_bytes, h.pages_trimmed, h.pages_unmapped_by_trim);
        }
    }

    /// Flash operations by cause, WAF, GC and real-time bounds, metadata, placement,
    /// replicas and retries.
    fn write_flash(&self, w: &mut String) {
        let n = &self.nand;
        let fmt = |m: &BTreeMap<&str, u64>| {
            m.iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(w, "nand reads  {}", fmt(&n.reads));
        let _ = writeln!(
            w,
            "programs    {} (total {})",
            fmt(&n.programs),
            n.total_programs
        );
        let _ = writeln!(
            w,
            "erases      {} (total {})",
            fmt(&n.erases),
            n.total_erases
        );
        let waf = if self.host.pages_written == 0 {
            "n/a (no host writes)".to_string()
        } else {
            format!(
                "{:.3} NAND page programs per host page written ({:.3} per host byte)",
                self.waf, self.waf_per_byte
            )
        };
        let _ = writeln!(w, "WAF         {waf}");
        let _ = writeln!(w, "            valid copies {}, GC victims chosen {}, WL migrations {}, retired blocks {}, lost pages {} (a victim chosen near the end of the run may be erased after it, so GC erases and victims can differ by a few)",
            n.counter("valid_copies"), n.counter("gc_victims"), n.counter("wl_migrations"), n.counter("retired_blocks"), n.counter("lost_pages"));
        if n.counter("partial_steps") > 0 || n.counter("rt_overruns") > 0 {
            let _ = writeln!(
                w,
                "real-time   {} partial GC steps, most valid pages in a victim {}, most buffer pages in use {}, bound overruns {}",
                n.counter("partial_steps"), n.counter("max_victim_valid"), n.counter("max_buffer_pages"), n.counter("rt_overruns")
            );
        }
        let rt = &self.realtime;
        if rt.write_bound_us > 0.0 {
            let split = |k: &str| {
                self.latency_split
                    .get(k)
                    .map_or("none".to_string(), |l| human_time(l.service.max_us))
            };
            let derived = |b: f64| {
                if b > 0.0 {
                    human_time(b)
                } else {
                    "not derived".to_string()
                }
            };
            let _ = writeln!(
                w,
                "bounds      derived per operation, against the worst own service measured (a write or read request is several pages): write {} per page (worst request {}; page overruns {}), read {} per page (worst request {}), trim {} + map work per page (worst {}; overruns {}), flush {} (worst {}; overruns {})",
                human_time(rt.write_bound_us),
                split("write"),
                n.counter("rt_overruns"),
                human_time(rt.read_bound_us),
                split("read"),
                derived(rt.trim_bound_us),
                split("trim"),
                rt.trim_overruns,
                derived(rt.flush_bound_us),
                split("flush"),
                rt.flush_overruns
            );
        }
        let _ = writeln!(
            w,
            "metadata    {} checkpoints, {} bytes written; {} padding pages; {} host blocks opened in SLC mode (flush buffer); {} region blocks swapped for less-worn ones",
            n.counter("checkpoints"), n.counter("meta_bytes"), n.counter("pad_pages"), n.counter("slc_blocks"), n.counter("region_swaps")
        );
        let m = &self.meta;
        if m.cpmt_hit_rate > 0.0 || m.pmt_bytes > 0 {
            let _ = writeln!(
                w,
                "map cache   {:.1} % of look-ups hit the cached map pages (a miss is a metadata read); {} bytes of map pages written back, {} copied by their partition's upkeep",
                100.0 * m.cpmt_hit_rate,
                m.pmt_bytes,
                m.pmt_gc_bytes
            );
        }
        if n.counter("pairing_lookups") > 0 || n.counter("placement_pads") > 0 {
            let _ = writeln!(
                w,
                "placement   {} padding pages for refused slots (of the {} above); {} shared-pages table look-ups; {} critical pages in LSB slots for want of a pad (lapses)",
                n.counter("placement_pads"), n.counter("pad_pages"), n.counter("pairing_lookups"), n.counter("placement_lapses")
            );
        }
        if n.counter("replica_programs") > 0 {
            let _ = writeln!(
                w,
                "replicas    {} backup copies programmed; {} read for unreadable primaries, {} rescues",
                n.counter("replica_programs"), n.counter("replica_reads"), n.counter("replica_rescues")
            );
        }
        if n.counter("read_retries") > 0 {
            let _ = writeln!(
                w,
                "retries     {} reads retried after a page did not decode (GC, metadata, recovery)",
                n.counter("read_retries")
            );
        }
    }

    /// Wear, and latency by request kind (with its queue / service split).
    fn write_wear_and_latency(&self, w: &mut String) {
        let we = &self.wear;
        let _ = writeln!(
            w,
            "wear        erases/block mean {:.2} sd {:.2} min {} max {}",
            we.mean, we.stddev, we.min, we.max
        );
        let _ = writeln!(
            w,
            "latency     {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
            "op", "count", "mean", "p50", "p99", "p99.9", "max"
        );
        for (k, l) in &self.latency {
            let _ = writeln!(
                w,
                "            {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
                k,
                l.count,
                human_time(l.mean_us),
                human_time(l.p50_us),
                human_time(l.p99_us),
                human_time(l.p999_us),
                human_time(l.max_us)
            );
        }
        if !self.latency_split.is_empty() {
            let _ = writeln!(
                w,
                "split       {:>8} {:>10} {:>10} {:>10} {:>10} | {:>10} {:>10} {:>10} {:>10}",
                "op", "queue mean", "p99", "p99.9", "max", "serv. mean", "p99", "p99.9", "max"
            );
            for (k, l) in &self.latency_split {
                let (q, s) = (&l.queue, &l.service);
                let _ = writeln!(
                    w,
                    "            {:>8} {:>10} {:>10} {:>10} {:>10} | {:>10} {:>10} {:>10} {:>10}",
                    k,
                    human_time(q.mean_us),
                    human_time(q.p99_us),
                    human_time(q.p999_us),
                    human_time(q.max_us),
                    human_time(s.mean_us),
                    human_time(s.p99_us),
                    human_time(s.p999_us),
                    human_time(s.max_us)
                );
            }
        }
    }

    /// The recovery after the run, and ECC (FLARES's windows and alarms, PPROF).
    fn write_recovery_and_ecc(&self, w: &mut String) {
        if let Some(r) = &self.recovery {
            let _ = writeln!(
                w,
                "recovery    {} after the run (a crash after its last operation): {} simulated, {} pages read ({} of the checkpoint), {} blocks scanned, {} pages mapped",
                r.procedure,
                human_time(r.ms * 1e3),
                r.pages_read,
                r.checkpoint_pages,
                r.blocks_scanned,
                r.mapped_pages
            );
        }
        let e = &self.ecc;
        let most = if e.reads > 0 {
            format!(
                " (at most {} in one codeword since format)",
                e.max_codeword_errors
            )
        } else {
            String::new()
        };
        let _ = writeln!(w, "ecc         {} pages decoded, {} bits corrected{most}, uncorrectable: {} critical, {} normal; {} miscorrections caught by CRC",
            e.reads, e.corrected_bits, e.uncorrectable_critical, e.uncorrectable_normal, e.miscorrections_caught);
        let p = &e.policy;
        if e.mean_t > 0.0 {
            let _ = writeln!(w, "strength    mean t {:.2} over the pages programmed; flash {:.4} operations/s (reads and programs)", e.mean_t, self.flash_ops_per_s);
        }
        if p.zone_fs
            + p.zone_oc
            + p.zone_cr
            + p.zone_fa
            + p.zone_sz
            + p.scrubbed_pages
            + p.refresh_writes
            > 0
        {
            let _ = writeln!(w, "flares      windows FS {} OC {} CR {} FA {} SZ {}; alarms: {} retention, {} failure, {} by scrub ({} pages checked); {} refresh writes, refresh WA {:.3}; {} copies re-encoded",
                p.zone_fs, p.zone_oc, p.zone_cr, p.zone_fa, p.zone_sz, p.retention_alarms, p.failure_alarms, p.scrub_alarms, p.scrubbed_pages, p.refresh_writes, p.refresh_wa, p.reencoded_copies);
        }
        if p.pprof_ram_bytes + p.pprof_spare_bytes > 0 {
            let _ = writeln!(w, "pprof       {} spare bytes per page (p_cur, p_next, pecycles, writestamp in a BCH GF(2^7) t = 5 codeword); {:.1} KiB controller RAM for the cached profiles; {} codewords failed to decode, {} profiles rebuilt from the model",
                p.pprof_spare_bytes, p.pprof_ram_bytes as f64 / 1024.0, p.pprof_failures, p.pprof_fallbacks);
        }
    }
}

/// A duration given in microseconds, in the unit that suits it: `812 µs`, `3.21 ms`,
/// `27.4 s`.
pub fn human_time(us: f64) -> String {
    if us < 1_000.0 {
        format!("{us:.1} µs")
    } else if us < 1_000_000.0 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

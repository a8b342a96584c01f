//! Power cuts at every operation: the durability contract holds for every cut point and
//! mode, with both recovery procedures, and with a second cut after power-on.

use ftl::RecoveryKind;
use nand::CutMode;
use sim::crash::{run_case, CaseId, CrashConfig, Outcome, Plan};

mod common;

/// Whether this is the fast test tier: sampled plans run a quarter of their cases,
/// every-cut-point plans a third (every operation, one mode in three: `Plan::Thinned`).
fn fast() -> bool {
    common::fast_tier()
}

/// `sim::crash::run_plan` with the tier's plan: a sampled plan's cases quartered in the
/// fast tier.
fn run_plan(
    cfg: &CrashConfig,
    plan: Plan,
    modes: &[CutMode],
    progress: &mut dyn FnMut(u64, u64),
) -> Result<sim::crash::Summary, String> {
    let plan = match plan {
        Plan::Linear if fast() => Plan::Thinned { step: 3 },
        Plan::Random { samples } if fast() => Plan::Random {
            samples: samples / 4,
        },
        Plan::Nested { samples } if fast() => Plan::Nested {
            samples: samples / 4,
        },
        p => p,
    };
    sim::crash::run_plan(cfg, plan, modes, progress)
}

/// The passes an every-cut-point plan of the full tier needs, in this tier.
fn linear(passed: u64) -> u64 {
    if fast() {
        passed / 3
    } else {
        passed
    }
}

/// The passes a sampled plan of the full tier needs, in this tier.
fn sampled(passed: u64) -> u64 {
    if fast() {
        passed / 4
    } else {
        passed
    }
}

fn report(name: &str, s: &sim::crash::Summary) {
    eprint!("{name}\n{s}");
}

/// Runs `plan` with every cut mode, prints the summary, and requires that no case broke
/// the contract or ran out of space and that more than `min_passed` passed.
fn holds(name: &str, cfg: &CrashConfig, plan: Plan, min_passed: u64) -> sim::crash::Summary {
    let min_passed = match plan {
        Plan::Linear => linear(min_passed),
        _ => sampled(min_passed),
    };
    let s = run_plan(cfg, plan, &CutMode::ALL, &mut |_, _| {}).unwrap();
    report(name, &s);
    assert!(s.failures.is_empty(), "first failure: {:?}", s.failures[0]);
    assert!(s.out_of_space.is_empty(), "{:?}", s.out_of_space[0]);
    assert!(s.passed > min_passed, "{s:?}");
    s
}

#[test]
fn every_cut_point_and_mode_roll_forward() {
    let mut cfg = CrashConfig::small(1);
    cfg.ops = 150;
    let s = run_plan(&cfg, Plan::Linear, &CutMode::ALL, &mut |_, _| {}).unwrap();
    report("linear roll-forward", &s);
    assert!(s.failures.is_empty(), "first failure: {:?}", s.failures[0]);
    assert!(s.out_of_space.is_empty(), "{:?}", s.out_of_space[0]);
    assert!(s.passed > linear(3000), "{s:?}");
    assert!(
        s.workload.gc_victims > 10 && s.workload.checkpoints > 2,
        "{s:?}"
    );
    // The run says what its cuts hit, and it covered the metadata paths: checkpoint body
    // and trim-log pages, padding, region erases, as well as host and GC pages.
    for class in sim::crash::CutInfo::CLASSES {
        if class == "meta" || class == "replica" {
            // No other metadata page kind exists yet; replicas are Meta-Cure's only
            // (every_cut_point_with_meta_cure requires them).
            continue;
        }
        // Every mode on every class; the fast tier's thinned plan, every class at all.
        let want = if fast() { 1 } else { CutMode::ALL.len() as u64 };
        let n = s.cut_classes.get(class).copied().unwrap_or(0);
        assert!(n >= want, "{class}: {n} cuts; {s:?}");
    }
    let hit: u64 = s.cut_classes.values().sum();
    assert_eq!(hit, s.passed, "every passed case's cut is classified");
    assert!(format!("{s}").contains("cut hit:   user "), "{s}");
}

#[test]
fn every_cut_point_and_mode_full_scan() {
    let mut cfg = CrashConfig::small(2);
    cfg.ops = 150;
    cfg.scheme.set_recovery(RecoveryKind::FullScan);
    holds("linear full scan", &cfg, Plan::Linear, 2000);
}

#[test]
fn random_sample_on_a_larger_chip() {
    // 64 blocks per plane: four times the small chip.
    let mut cfg = CrashConfig::small(5);
    cfg.chip.geometry.blocks_per_plane = 64;
    cfg.ops = 1500;
    holds(
        "random, larger chip",
        &cfg,
        Plan::Random { samples: 400 },
        350,
    );
}

#[test]
fn nested_cuts_after_power_on() {
    let cfg = CrashConfig::small(3);
    let s = run_plan(
        &cfg,
        Plan::Nested { samples: 600 },
        &CutMode::ALL,
        &mut |_, _| {},
    )
    .unwrap();
    report("nested", &s);
    assert!(s.failures.is_empty(), "first failure: {:?}", s.failures[0]);
    assert!(s.out_of_space.is_empty(), "{:?}", s.out_of_space[0]);
    // A case counts as passed only if both cuts fired; the others are counted apart.
    assert_eq!(s.passed + s.second_not_reached + s.not_reached, s.cases);
    assert!(s.passed > sampled(450), "{s:?}");
}

/// A nested case whose second cut lies past everything after power-on is not a pass.
#[test]
fn a_second_cut_that_never_fires_is_not_a_pass() {
    let cfg = CrashConfig::small(3);
    let id: CaseId = "3:200:before/999999:before".parse().unwrap();
    assert_eq!(run_case(&cfg, id), Outcome::SecondNotReached);
    let id: CaseId = "3:200:before/5:before".parse().unwrap();
    assert_eq!(run_case(&cfg, id), Outcome::Passed);
}

/// A workload with nothing to cut is refused rather than reported as all "past the end".
#[test]
fn a_workload_of_flushes_only_is_refused() {
    let mut cfg = CrashConfig::small(4);
    cfg.flush_every = 1;
    cfg.warmup = false;
    let e = run_plan(&cfg, Plan::Linear, &CutMode::ALL, &mut |_, _| {}).unwrap_err();
    assert!(e.contains("no chip operation"), "{e}");
}

#[test]
fn replay_ids_round_trip_and_replay() {
    let id: CaseId = "7:120:paired-page/33:torn-random".parse().unwrap();
    assert_eq!(id.to_string(), "7:120:paired-page/33:torn-random");
    assert!("7:x:before".parse::<CaseId>().is_err());
    assert!("7:1:sideways".parse::<CaseId>().is_err());
    let cfg = CrashConfig::small(7);
    let a = run_case(&cfg, id);
    let b = run_case(&cfg, id);
    assert_eq!(a, b);
    assert_eq!(a, Outcome::Passed);
}

/// Multi-die (2 channels × 2 dies), cost-benefit victims, wear levelling, short checkpoint
/// intervals and many trims: the configurations the CLI can now reach hold the contract too.
#[test]
fn multi_die_with_wear_levelling_and_trims() {
    let mut cfg = CrashConfig::small(21);
    cfg.chip = nand::ChipConfig::preset("tiny-mlc-4die").unwrap();
    cfg.chip.seed = 21;
    cfg.chip.reliability.wear_fail_rate = 0.0;
    cfg.chip.reliability.wear_fail_growth = 0.0;
    cfg.trim_pct = 15;
    cfg.span = 1.0;
    let ftl::SchemeConfig::Page(p) = &mut cfg.scheme else {
        unreachable!("a page-level configuration")
    };
    p.victim = ftl::VictimKind::CostBenefit;
    p.wear_leveling = Some(ftl::WearLevelConfig {
        spread: 3,
        check_every: 2,
    });
    p.checkpoint_interval = 3;
    let s = run_plan(
        &cfg,
        Plan::Random { samples: 150 },
        &CutMode::ALL,
        &mut |_, _| {},
    )
    .unwrap();
    report("multi-die", &s);
    assert!(s.failures.is_empty(), "first failure: {:?}", s.failures[0]);
    assert!(s.out_of_space.is_empty(), "{:?}", s.out_of_space[0]);
    assert!(s.passed > sampled(140), "{s:?}");
    assert!(s.workload.trims > 30 && s.workload.gc_victims > 20, "{s:?}");
}

/// Flushes every other operation on MLC: the flush buffer opens host blocks in SLC mode,
/// and every cut point and mode in and around them (including GC folding them into native
/// blocks) holds the contract, with both recoveries.
#[test]
fn every_cut_point_with_the_flush_buffer() {
    for recovery in [ftl::RecoveryKind::RollForward, ftl::RecoveryKind::FullScan] {
        let mut cfg = CrashConfig::small(41);
        cfg.ops = 150;
        cfg.flush_every = 2;
        cfg.scheme.set_recovery(recovery);
        let s = holds("flush buffer", &cfg, Plan::Linear, 1500);
        assert!(s.workload.slc_blocks >= 3, "{:?}", s.workload);
        assert!(s.workload.gc_victims > 0, "{:?}", s.workload);
    }
}

/// A region of eight blocks (two anchors) with a checkpoint at every flush: region blocks
/// wear fast and swap with free blocks; cuts all over the workload (anchor records, the
/// worn block leaving, data written into it afterwards) hold the contract, with both
/// recoveries.
#[test]
fn every_cut_point_with_region_rotation() {
    for recovery in [ftl::RecoveryKind::RollForward, ftl::RecoveryKind::FullScan] {
        let mut cfg = CrashConfig::small(43);
        cfg.ops = 1000;
        cfg.flush_every = 2;
        cfg.scheme.set_recovery(recovery);
        let ftl::SchemeConfig::Page(p) = &mut cfg.scheme else {
            unreachable!("a page-level configuration")
        };
        p.region_blocks_per_die = 8;
        p.checkpoint_interval = 1;
        let s = holds(
            "region rotation",
            &cfg,
            Plan::Random { samples: 1200 },
            1100,
        );
        assert!(s.workload.region_swaps >= 3, "{:?}", s.workload);
    }
}

/// A page that reads back an older, superseded version is named as such.
#[test]
fn a_resurrected_version_is_named() {
    use sim::crash::{apply_op, check_after_kill, HostOp};
    let cfg = CrashConfig::small(31);
    let ctl = controller::Controller::new(
        nand::Chip::ram(cfg.chip.clone()).unwrap(),
        nand::ConstantRber(0.0),
        controller::ControllerConfig::default(),
    )
    .unwrap();
    let mut dev = cfg.scheme.format(ctl, nand::Nanos(0)).unwrap();
    let done = [
        HostOp::Write(0, 1),
        HostOp::Flush,
        HostOp::Write(0, 2),
        HostOp::Flush,
    ];
    for (i, &op) in done.iter().enumerate() {
        apply_op(&mut *dev, op, nand::Nanos(i as u64), 0).unwrap();
    }
    check_after_kill(&mut *dev, &done, 4).unwrap();
    // Claim a third write was flushed too: the device's version 2 is now a resurrection.
    let claimed = [done.as_slice(), &[HostOp::Write(0, 3), HostOp::Flush]].concat();
    let e = check_after_kill(&mut *dev, &claimed, 6).unwrap_err();
    assert!(e.contains("version 2") && e.contains("resurrected"), "{e}");
}

/// Asymmetric Programming under power cuts: every third logical page is written critical,
/// the volume keeps critical pages out of LSB pages (MSB-critical placement, asymmetric
/// GC) and `verify` — run after every operation and every mount — checks that no critical
/// page sits in an LSB page, through cuts at every operation in every mode (paired-page
/// cuts included) and nested cuts, with both recoveries.
#[test]
fn every_cut_point_with_asymmetric_programming() {
    for recovery in [ftl::RecoveryKind::RollForward, ftl::RecoveryKind::FullScan] {
        let mut cfg = CrashConfig::small(47);
        cfg.ops = 90;
        cfg.critical_every = 3;
        cfg.scheme.set_recovery(recovery);
        let ftl::SchemeConfig::Page(p) = &mut cfg.scheme else {
            unreachable!("a page-level configuration")
        };
        p.placement = ftl::policy::PlacementKind::MsbCritical;
        p.copy_order = ftl::policy::CopyOrderKind::Asymmetric;
        let s = holds("asymmetric programming", &cfg, Plan::Linear, 1000);
        assert!(s.workload.placement_pads > 0, "{:?}", s.workload);
        assert!(s.workload.gc_victims > 0, "{:?}", s.workload);
        holds(
            "asymmetric programming, nested",
            &cfg,
            Plan::Nested { samples: 100 },
            60,
        );
    }
}

/// A regression (fresh-seed nested run, seed 5295): AP's GC copied a critical page into an
/// LSB slot (a lapse: its victim was too dense in critical pages to pad), a cut and mount
/// followed, and the mounted volume's invariant refused the page — lapses were rebuilt
/// from the recovered map only under a real-time pacing. They are rebuilt after every mount.
#[test]
fn ap_lapses_survive_a_mount() {
    let mut cfg = CrashConfig::small(5295);
    cfg.ops = 400;
    cfg.critical_every = 3;
    let ftl::SchemeConfig::Page(p) = &mut cfg.scheme else {
        unreachable!("a page-level configuration")
    };
    p.placement = ftl::policy::PlacementKind::MsbCritical;
    p.copy_order = ftl::policy::CopyOrderKind::Asymmetric;
    // The region the case was found with (the automatic size then: 4 blocks; it is at
    // least 6 now, which moves the cut points).
    p.region_blocks_per_die = 4;
    for id in [
        "5295:2930:paired-page/318:paired-page",
        "5295:2929:interrupted-erase/344:torn-random",
    ] {
        let id: CaseId = id.parse().unwrap();
        assert_eq!(run_case(&cfg, id), Outcome::Passed, "{id}");
    }
}

/// Meta-Cure under power cuts: every sixth logical page is written critical with one
/// replica in another block; cuts at every operation in every mode and nested cuts, both
/// recoveries: the contract holds and `verify` (after every operation and mount) finds
/// every replica set consistent — replicas of the version the map ends up with only.
#[test]
fn every_cut_point_with_meta_cure() {
    for recovery in [ftl::RecoveryKind::RollForward, ftl::RecoveryKind::FullScan] {
        let mut cfg = CrashConfig::small(53);
        cfg.ops = 90;
        cfg.critical_every = 6;
        cfg.scheme.set_recovery(recovery);
        let ftl::SchemeConfig::Page(p) = &mut cfg.scheme else {
            unreachable!("a page-level configuration")
        };
        p.replicas = 1;
        p.over_provisioning = 0.35;
        let s = holds("meta-cure", &cfg, Plan::Linear, 1000);
        assert!(s.workload.replica_programs > 20, "{:?}", s.workload);
        assert!(s.workload.gc_victims > 0, "{:?}", s.workload);
        let replica_cuts = s.cut_classes.get("replica").copied().unwrap_or(0);
        assert!(replica_cuts >= CutMode::ALL.len() as u64, "{s:?}");
        holds("meta-cure, nested", &cfg, Plan::Nested { samples: 100 }, 60);
    }
}

/// FLARES under power cuts: a per-page strength from a wear model steep enough that the
/// tiny chip's blocks need different strengths, so GC copies are re-encoded at their new
/// page's t (data clocked out of the page register, new parity) — every cut in every mode,
/// both recoveries, and nested cuts, with pages of several strengths on the chip.
#[test]
fn every_cut_point_with_flares() {
    for recovery in [ftl::RecoveryKind::RollForward, ftl::RecoveryKind::FullScan] {
        let mut cfg = CrashConfig::small(61);
        cfg.ops = 150;
        cfg.scheme.set_recovery(recovery);
        let ftl::SchemeConfig::Page(p) = &mut cfg.scheme else {
            unreachable!("a page-level configuration")
        };
        let mut f = ftl::flares::FlaresConfig {
            t_min: 1,
            t_max: 8,
            wsize: 4,
            pe_step: 1,
            // The chip here draws no bit errors: the model alone sets the strength.
            mix: 0.0,
            ..Default::default()
        };
        // RBER_wr grows ~e^(0.3·PE): the tiny chip's few cycles span several strengths.
        f.model.a = 2e-5;
        f.model.b = 0.3;
        f.model.c = -2e-5;
        p.ecc = ftl::policy::EccKind::Flares(f);
        let s = holds("flares", &cfg, Plan::Linear, 2000);
        let used = s.workload.ecc_policy.programs_by_t[1..=8]
            .iter()
            .filter(|&&n| n > 0)
            .count();
        assert!(used >= 3, "{:?}", s.workload.ecc_policy.programs_by_t);
        assert!(
            s.workload.ecc_policy.reencoded_copies > 10,
            "{:?}",
            s.workload
        );
        assert!(s.workload.gc_victims > 5, "{:?}", s.workload);
        holds("flares, nested", &cfg, Plan::Nested { samples: 150 }, 100);
    }
}

/// The block-level kernel (DCR's setting) on SLC: every cut point × every cut mode, with
/// DCR and with the version-based scan; merges, wear levelling and checkpoints get cut.
#[test]
fn block_level_every_cut_point_slc() {
    for recovery in [ftl::RecoveryKind::RollForward, ftl::RecoveryKind::FullScan] {
        let mut cfg = CrashConfig::small_block(51, "tiny-slc");
        cfg.ops = 100;
        cfg.fit_ecc().unwrap();
        cfg.scheme.set_recovery(recovery);
        let s = holds("block-level, linear, SLC", &cfg, Plan::Linear, 4000);
        assert!(
            s.workload.gc_victims > 20 && s.workload.checkpoints > 10,
            "{:?}",
            s.workload
        );
        for class in ["user", "gc-copy", "checkpoint", "data-erase"] {
            assert!(
                s.cut_classes.get(class).copied().unwrap_or(0) > 0,
                "{class}: {s}"
            );
        }
    }
}

/// GFTL and RFTL (WAO-GC's Table I) on SLC: every cut point × every cut mode, then
/// nested cuts (a second cut during the mount's merges and the work after it); jobs,
/// buffer erases and the mount's merges get cut.
#[test]
fn rt_block_every_cut_point_and_nested() {
    for kind in [ftl::RtKind::Gftl, ftl::RtKind::Rftl] {
        let mut cfg = CrashConfig::small_rt(55, "tiny-slc", kind);
        cfg.ops = 90;
        let s = holds(kind.name(), &cfg, Plan::Linear, 800);
        assert!(s.workload.gc_victims > 4, "{:?}", s.workload);
        for class in ["user", "gc-copy", "data-erase"] {
            assert!(
                s.cut_classes.get(class).copied().unwrap_or(0) > 0,
                "{class}: {s}"
            );
        }
        cfg.ops = 250;
        holds(kind.name(), &cfg, Plan::Nested { samples: 120 }, 90);
    }
}

/// The block-level kernel on MLC (paired pages, sealing, padded primaries): random and
/// nested cuts with both recoveries.
#[test]
fn block_level_random_and_nested_cuts_mlc() {
    for recovery in [ftl::RecoveryKind::RollForward, ftl::RecoveryKind::FullScan] {
        let mut cfg = CrashConfig::small_block(52, "tiny-mlc");
        cfg.ops = 250;
        cfg.scheme.set_recovery(recovery);
        let s = holds(
            "block-level, random, MLC",
            &cfg,
            Plan::Random { samples: 400 },
            380,
        );
        assert!(s.workload.pad_pages > 0, "{:?}", s.workload);
        let s = run_plan(
            &cfg,
            Plan::Nested { samples: 400 },
            &CutMode::ALL,
            &mut |_, _| {},
        )
        .unwrap();
        report("block-level, nested, MLC", &s);
        assert!(s.failures.is_empty(), "first failure: {:?}", s.failures[0]);
        assert!(s.out_of_space.is_empty(), "{:?}", s.out_of_space[0]);
        assert!(s.passed > sampled(300), "{s:?}");
    }
}

/// The block-level kernel on MLC: every cut point × every cut mode of a short workload
/// (DCR; the version-based scan has the random and nested runs above), and nested cuts on
/// SLC with both recoveries.
#[test]
fn block_level_every_cut_point_mlc_and_nested_slc() {
    let mut cfg = CrashConfig::small_block(53, "tiny-mlc");
    cfg.ops = 40;
    let s = holds("block-level, linear, MLC", &cfg, Plan::Linear, 2000);
    for class in ["user", "gc-copy", "pad", "checkpoint"] {
        assert!(
            s.cut_classes.get(class).copied().unwrap_or(0) > 0,
            "{class}: {s}"
        );
    }
    for recovery in [ftl::RecoveryKind::RollForward, ftl::RecoveryKind::FullScan] {
        let mut cfg = CrashConfig::small_block(54, "tiny-slc");
        cfg.ops = 250;
        cfg.fit_ecc().unwrap();
        cfg.scheme.set_recovery(recovery);
        let s = run_plan(
            &cfg,
            Plan::Nested { samples: 300 },
            &CutMode::ALL,
            &mut |_, _| {},
        )
        .unwrap();
        report("block-level, nested, SLC", &s);
        assert!(s.failures.is_empty(), "first failure: {:?}", s.failures[0]);
        assert!(s.out_of_space.is_empty(), "{:?}", s.out_of_space[0]);
        assert!(s.passed > sampled(250), "{s:?}");
    }
}

/// The schemes whose writes and GC copies share one destination per die (WAO-GC's partial
/// steps and the full GC on demand of its pure page-level and RTGC baselines): every cut
/// point on SLC, random and nested cuts on MLC (where a victim's erase waits for its copies
/// to be sealed), full-scan recovery (what they require).
#[test]
fn shared_destination_schemes_every_cut_point() {
    use ftl::policy::PacingKind;
    for (preset, pacing, op, seed) in [
        // (0.32: with the region's six blocks 0.3 leaves σ just over the bound.)
        ("tiny-slc", PacingKind::WaoGc, 0.32, 71),
        ("tiny-slc", PacingKind::OnDemand, 0.15, 72),
        ("tiny-mlc", PacingKind::WaoGc, 0.7, 73),
    ] {
        let mut cfg = CrashConfig::small(seed);
        cfg.chip = nand::ChipConfig::preset(preset).unwrap();
        cfg.chip.seed = seed;
        cfg.chip.reliability.wear_fail_rate = 0.0;
        cfg.chip.reliability.wear_fail_growth = 0.0;
        cfg.scheme = ftl::SchemeConfig::Page(ftl::PageFtlConfig {
            over_provisioning: op,
            gc_pacing: pacing,
            recovery: RecoveryKind::FullScan,
            wear_leveling: None,
            checkpoint_interval: 6,
            flush_buffer: false,
            ..Default::default()
        });
        cfg.fit_ecc().unwrap();
        // (On MLC the volume is small beside its over-provisioning: more writes reach GC.)
        cfg.ops = if preset == "tiny-slc" { 150 } else { 700 };
        let name = format!("{preset} {pacing:?}");
        let s = if preset == "tiny-slc" {
            holds(&format!("{name}, linear"), &cfg, Plan::Linear, 1000)
        } else {
            holds(
                &format!("{name}, random"),
                &cfg,
                Plan::Random { samples: 600 },
                500,
            )
        };
        assert!(s.workload.gc_victims > 10, "{name}: {:?}", s.workload);
        holds(
            &format!("{name}, nested"),
            &cfg,
            Plan::Nested { samples: 300 },
            250,
        );
    }
}

/// A regression: a paired-page cut while a flush padded a replacement tore the
/// replacement's lower page (its record intact, its data not); the lazy scan after the
/// mount found it torn, but only in RAM — appends then moved the write point past it, and
/// a second cut before the next checkpoint brought its record back as the newest copy of
/// its logical page, unreadable. The scan now checkpoints the torn pages it finds.
#[test]
fn block_level_torn_page_found_after_a_mount_survives_a_second_cut() {
    let mut cfg = CrashConfig::small_block(19903, "tiny-mlc");
    cfg.ops = 400;
    cfg.flush_every = 16;
    cfg.fit_ecc().unwrap();
    let id: CaseId = "19903:6607:paired-page/59:after".parse().unwrap();
    let outcome = run_case(&cfg, id);
    assert!(matches!(outcome, Outcome::Passed), "{outcome:?}");
}

/// WAO-GC's compositions of the combined profile under cuts on MLC: AP's
/// MSB-critical placement and asymmetric GC (pads within eq. 6's slack, lapses counted and
/// accepted by `verify` after every mount), FLARES's per-page strength (GC copies
/// re-encoded, PPROF codewords in the spare area) and roll-forward recovery (young blocks
/// kept from GC) on the shared destination.
#[test]
fn wao_gc_with_ap_and_flares_survives_cuts() {
    use ftl::policy::{CopyOrderKind, EccKind, PacingKind, PlacementKind};
    for (ap, flares, rf, seed) in [
        (true, false, false, 74),
        (false, true, false, 75),
        (false, false, true, 77),
        (true, true, true, 76),
    ] {
        let mut cfg = CrashConfig::small(seed);
        cfg.chip = nand::ChipConfig::preset("tiny-mlc").unwrap();
        cfg.chip.seed = seed;
        cfg.chip.reliability.wear_fail_rate = 0.0;
        cfg.chip.reliability.wear_fail_growth = 0.0;
        // Roll-forward: DCR's young blocks are left out of σ, two per die at most for a host
        // that flushes every 16 operations (a block is 16 pages here).
        let mut p = ftl::PageFtlConfig {
            over_provisioning: 0.7,
            gc_pacing: PacingKind::WaoGc,
            recovery: if rf {
                RecoveryKind::RollForward
            } else {
                RecoveryKind::FullScan
            },
            wear_leveling: None,
            checkpoint_interval: if rf { 2 } else { 6 },
            flush_buffer: false,
            ..Default::default()
        };
        if ap {
            p.placement = PlacementKind::MsbCritical;
            p.copy_order = CopyOrderKind::Asymmetric;
            cfg.critical_every = 3;
        }
        cfg.scheme = ftl::SchemeConfig::Page(p);
        cfg.fit_ecc().unwrap();
        if flares {
            // The PPROF codeword takes spare bytes too: a range below the plain maximum.
            let t_max = cfg.scheme.ecc_t().saturating_sub(2).max(2);
            p.ecc_t = t_max;
            p.ecc = EccKind::Flares(ftl::flares::FlaresConfig {
                t_min: 1,
                t_max,
                ..Default::default()
            });
            cfg.scheme = ftl::SchemeConfig::Page(p);
        }
        cfg.ops = 700;
        if rf {
            // The whole volume live and flushes rarer than two blocks: the young allowance
            // is then the budget (`Substrate::settle_young`), so checkpoints go in steps
            // beside the writes and cuts land among them.
            cfg.span = 1.0;
            cfg.flush_every = 64;
        }
        let name = format!("tiny-mlc WAO-GC ap {ap} flares {flares} roll-forward {rf}");
        let s = holds(
            &format!("{name}, random"),
            &cfg,
            Plan::Random { samples: 400 },
            350,
        );
        assert!(s.workload.gc_victims > 10, "{name}: {:?}", s.workload);
        if ap {
            assert!(s.workload.placement_pads > 0, "{name}: {:?}", s.workload);
        }
        if rf {
            // Checkpoints were written in steps beside the writes: cuts fell among them.
            assert!(s.workload.checkpoint_steps > 0, "{name}: {:?}", s.workload);
        }
        holds(
            &format!("{name}, nested"),
            &cfg,
            Plan::Nested { samples: 200 },
            // Rarer flushes with roll-forward: more second cuts fall past the short tail.
            if rf { 120 } else { 150 },
        );
    }
}

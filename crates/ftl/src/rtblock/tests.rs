//! GFTL and RFTL against a reference model (with `verify` after every operation), their
//! remounts, torn jobs recovered by the scan, and their bad-input errors.

use super::*;
use crate::testkit::{self, controller, pattern, Op};
use crate::Ftl;
use alloc::collections::BTreeMap;
use alloc::string::ToString;
use nand::{ConstantRber, CutMode, RamStorage};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

type Ftl_ = RtBlockFtl<RamStorage, ConstantRber>;

/// Sequential runs, random writes, trims, reads and flushes against a model; `verify`
/// after every operation; a clean remount reads everything back.
fn model_run(kind: RtKind, seed: u64, ops: usize, hot: bool) -> Ftl_ {
    model_run_with(kind, seed, ops, hot, RtBlockConfig::default())
}

fn model_run_with(kind: RtKind, seed: u64, ops: usize, hot: bool, cfg: RtBlockConfig) -> Ftl_ {
    let ftl = RtBlockFtl::format(controller("tiny-slc", seed), kind, cfg, Nanos::ZERO).unwrap();
    ftl.verify().unwrap();
    let n = ftl.logical_pages();
    let span = if hot { (3 * ftl.ppb as u64).min(n) } else { n };
    let verify = |f: &Ftl_| f.verify().map_err(|e| e.to_string());
    let mix: testkit::Mix = &[
        (Op::Seq, 30),
        (Op::Random, 65),
        (Op::Trim, 72),
        (Op::Flush, 76),
        (Op::Read, 100),
    ];
    let (mut ftl, model) = testkit::run(ftl, seed, ops, span, mix, verify, |f, _| f);
    let t = model.t;
    ftl.shutdown(t).unwrap();
    let c = ftl.s.counters_mut();
    assert!(c.gc_victims > 10 && c.partial_steps > 10, "GC ran: {c:?}");
    let mut m = RtBlockFtl::mount(ftl.into_controller(), kind, cfg, t).unwrap();
    m.verify().unwrap();
    testkit::read_back(&mut m, &model, "remount");
    m.verify().unwrap();
    m
}

#[test]
fn gftl_model() {
    model_run(RtKind::Gftl, 1, 4000, false);
    model_run(RtKind::Gftl, 2, 4000, true);
}

/// A logical block filled once and then only read is merged at most once: GC re-queues a
/// full block only when the buffer holds newer pages of it (it once re-queued every full
/// block after its merge, and reads alone kept copying and erasing it).
#[test]
fn gftl_does_not_merge_an_unchanged_block_again() {
    let cfg = RtBlockConfig::default();
    let mut ftl =
        RtBlockFtl::format(controller("tiny-slc", 7), RtKind::Gftl, cfg, Nanos::ZERO).unwrap();
    let n = ftl.logical_pages();
    let size = ftl.page_size();
    let ppb = ftl.ppb as u64;
    let mut t = Nanos::ZERO;
    for l in 0..ppb {
        t += Nanos(10_000);
        ftl.write(t, Lpn::checked(l, n).unwrap(), &pattern(size, l, 1))
            .unwrap();
    }
    let erases_after_fill = ftl.s.counters_mut().erases.iter().sum::<u64>();
    let mut buf = vec![0u8; size];
    for i in 0..20_000u64 {
        t += Nanos(10_000);
        let l = i % ppb;
        ftl.read(t, Lpn::checked(l, n).unwrap(), &mut buf).unwrap();
        assert!(buf == pattern(size, l, 1), "read {i}: page {l}");
    }
    ftl.verify().unwrap();
    let erases = ftl.s.counters_mut().erases.iter().sum::<u64>() - erases_after_fill;
    assert!(
        erases <= 1,
        "{erases} erases for an unchanged block under reads"
    );
    // A write to the full block still reaches the buffer and is merged.
    t += Nanos(10_000);
    ftl.write(t, Lpn::checked(0, n).unwrap(), &pattern(size, 0, 2))
        .unwrap();
    for i in 0..(4 * ppb) {
        t += Nanos(10_000);
        ftl.read(t, Lpn::checked(i % ppb, n).unwrap(), &mut buf)
            .unwrap();
    }
    ftl.read(t, Lpn::checked(0, n).unwrap(), &mut buf).unwrap();
    assert!(buf == pattern(size, 0, 2));
    ftl.verify().unwrap();
}

#[test]
fn rftl_model() {
    model_run(RtKind::Rftl, 3, 4000, false);
    model_run(RtKind::Rftl, 4, 4000, true);
}

/// A power cut at every chip operation of a write-heavy run (every cut mode): the mount
/// finds every page's newest completed write or the one in flight, and the volume's
/// invariants hold, also after a second clean remount.
fn cut_everywhere(kind: RtKind, seed: u64) {
    cut_everywhere_with(kind, seed, RtBlockConfig::default())
}

fn cut_everywhere_with(kind: RtKind, seed: u64, cfg: RtBlockConfig) {
    let ops = 700u64;
    // A run without a cut gives the operation count to cut in.
    let total = {
        let mut f =
            RtBlockFtl::format(controller("tiny-slc", seed), kind, cfg, Nanos::ZERO).unwrap();
        let start = f.s.controller().chip().ops();
        run_ops(&mut f, seed, ops, &mut BTreeMap::new(), &mut None);
        f.s.controller().chip().ops() - start
    };
    let modes = CutMode::ALL;
    let mut cases = 0;
    for k in (0..total).step_by(7) {
        let mode = modes[(k / 7) as usize % modes.len()];
        let mut f =
            RtBlockFtl::format(controller("tiny-slc", seed), kind, cfg, Nanos::ZERO).unwrap();
        f.s.controller_for_harness().chip_mut().arm_cut(k + 1, mode);
        let mut model = BTreeMap::new();
        let mut inflight = None;
        run_ops(&mut f, seed, ops, &mut model, &mut inflight);
        let mut ctl = f.into_controller();
        ctl.chip_mut().power_on();
        let mut m = RtBlockFtl::mount(ctl, kind, cfg, Nanos(1 << 40))
            .unwrap_or_else(|e| panic!("cut {k} {mode:?}: mount: {e}"));
        m.verify()
            .unwrap_or_else(|e| panic!("cut {k} {mode:?}: {e}"));
        let n = m.logical_pages();
        let size = m.page_size();
        let mut buf = vec![0u8; size];
        for l in 0..n {
            m.read(Nanos(1 << 40), Lpn::checked(l, n).unwrap(), &mut buf)
                .unwrap_or_else(|e| panic!("cut {k} {mode:?}: page {l}: {e}"));
            let ok = |v: Option<u64>| buf == v.map_or(vec![0; size], |v| pattern(size, l, v));
            let old = model.get(&l).copied();
            let fly = inflight.filter(|&(fl, _)| fl == l).map(|(_, v)| v);
            assert!(
                ok(old) || fly.is_some_and(ok),
                "cut {k} {mode:?}: page {l} reads neither its last completed write nor the one in flight"
            );
        }
        m.verify()
            .unwrap_or_else(|e| panic!("cut {k} {mode:?}: {e}"));
        cases += 1;
    }
    assert!(cases > 50, "{cases} cases");
}

/// The writes (and trims) of a cut run until the first error (the power cut): completed
/// ones into `model`, the one cut into `inflight` (version `None` for a trim).
fn run_ops(
    f: &mut Ftl_,
    seed: u64,
    ops: u64,
    model: &mut BTreeMap<u64, u64>,
    inflight: &mut Option<(u64, Option<u64>)>,
) {
    let n = f.logical_pages();
    let size = f.page_size();
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x55);
    let mut buf = vec![0u8; size];
    for i in 0..ops {
        let t = Nanos(i * 1_000_000);
        let r = rng.next_u32() % 100;
        let l = if r % 3 == 0 {
            i % n
        } else {
            rng.next_u64() % (n / 2)
        };
        let res = if r < 80 {
            *inflight = Some((l, Some(i)));
            f.write(t, Lpn::checked(l, n).unwrap(), &pattern(size, l, i))
        } else if r < 88 {
            *inflight = Some((l, None));
            f.trim(t, Lpn::checked(l, n).unwrap())
        } else {
            *inflight = None;
            f.read(t, Lpn::checked(l, n).unwrap(), &mut buf)
        };
        if res.is_err() {
            return;
        }
        match inflight.take() {
            Some((l, Some(v))) => {
                model.insert(l, v);
            }
            Some((l, None)) => {
                model.remove(&l);
            }
            None => {}
        }
    }
}

#[test]
fn gftl_survives_a_cut_anywhere() {
    cut_everywhere(RtKind::Gftl, 11);
}

/// The paper's RFTL (three blocks per logical block, offsets in OOB): the model holds,
/// every request to a logical block with a replacement pays its OOB read (more reads than
/// with the offsets in RAM), and it survives a cut anywhere.
#[test]
fn the_papers_rftl_follows_the_model_and_survives_cuts() {
    let paper = RtBlockConfig {
        rftl_blocks: 3,
        rftl_oob_offsets: true,
        ..RtBlockConfig::default()
    };
    let p = model_run_with(RtKind::Rftl, 3, 4000, false, paper);
    let d = model_run(RtKind::Rftl, 3, 4000, false);
    assert!(
        p.logical_pages() > d.logical_pages(),
        "three blocks each: more logical blocks"
    );
    // A page rewritten (its newest copy in the replacement), then read: one page read with
    // the offsets in RAM, an OOB read and the page read with them in OOB.
    let read_cost = |cfg: RtBlockConfig| {
        let mut f =
            RtBlockFtl::format(controller("tiny-slc", 2), RtKind::Rftl, cfg, Nanos::ZERO).unwrap();
        let n = f.logical_pages();
        let page = vec![1u8; f.page_size()];
        let mut buf = vec![0u8; f.page_size()];
        let l = Lpn::checked(0, n).unwrap();
        f.write(Nanos::ZERO, l, &page).unwrap();
        f.write(Nanos(1), l, &page).unwrap();
        let reads = |f: &Ftl_| f.s.counters().reads.iter().sum::<u64>();
        let before = reads(&f);
        f.read(Nanos(2), l, &mut buf).unwrap();
        assert_eq!(buf, page);
        reads(&f) - before
    };
    assert_eq!(
        (read_cost(RtBlockConfig::default()), read_cost(paper)),
        (1, 2)
    );
    let b = p.latency_bound().unwrap();
    assert!(
        b.read_ns > d.latency_bound().unwrap().read_ns,
        "t_rdoob in the read bound"
    );
    cut_everywhere_with(RtKind::Rftl, 5, paper);
}

#[test]
fn rftl_survives_a_cut_anywhere() {
    cut_everywhere(RtKind::Rftl, 12);
}

/// The error a format of `kind` on preset `preset` with `cfg` is refused with.
fn refused(preset: &str, seed: u64, kind: RtKind, cfg: RtBlockConfig) -> String {
    RtBlockFtl::format(controller(preset, seed), kind, cfg, Nanos::ZERO)
        .unwrap_err()
        .to_string()
}

#[test]
fn bad_configurations_name_the_key() {
    let cases = [
        (
            "tiny-mlc",
            1,
            RtKind::Rftl,
            RtBlockConfig::default(),
            &["one-bit-per-cell"] as &[&str],
        ),
        (
            "tiny-slc",
            1,
            RtKind::Rftl,
            RtBlockConfig {
                rftl_blocks: 2,
                ..RtBlockConfig::default()
            },
            &["rftl_blocks = 2"] as &[&str],
        ),
        (
            "tiny-slc",
            1,
            RtKind::Gftl,
            RtBlockConfig {
                bad_block_reserve: 0.7,
                ..RtBlockConfig::default()
            },
            &["bad_block_reserve = 0.7"] as &[&str],
        ),
        (
            "tiny-slc",
            1,
            RtKind::Gftl,
            RtBlockConfig {
                ecc_t: 40,
                ..RtBlockConfig::default()
            },
            &["ecc_t = 40"] as &[&str],
        ),
        (
            "tiny-slc",
            1,
            RtKind::Gftl,
            RtBlockConfig {
                buffer_pages: 10_000,
                ..RtBlockConfig::default()
            },
            &["buffer_pages = 10000", "no logical block"] as &[&str],
        ),
    ];
    for (preset, seed, kind, cfg, needles) in cases {
        let e = refused(preset, seed, kind, cfg);
        assert!(needles.iter().all(|n| e.contains(n)), "{e}");
    }
    // A mount of a page-level volume as GFTL is refused, not misread.
    let ctl = controller("tiny-slc", 2);
    let mut page = crate::PageFtl::format(
        ctl,
        crate::PageFtlConfig {
            ecc_t: 4,
            over_provisioning: 0.3,
            ..Default::default()
        },
        Nanos::ZERO,
    )
    .unwrap();
    let n = page.logical_pages();
    for l in 0..n / 2 {
        page.write(
            Nanos(l),
            Lpn::checked(l, n).unwrap(),
            &pattern(page.page_size(), l, 1),
        )
        .unwrap();
    }
    page.shutdown(Nanos(n)).unwrap();
    let e = RtBlockFtl::mount(
        page.into_controller(),
        RtKind::Gftl,
        RtBlockConfig::default(),
        Nanos(n + 1),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("not one of this scheme's"), "{e}");
}

//! GFTL's and RFTL's guarantees (WAO-GC's Table I, Ref. 003) on the paper's chip
//! (`k9k8g08u0b`, scaled down in blocks only): whatever the workload — random, one hot
//! block's worth of pages, sequential fills, hot and cold alternating, and reads between —
//! no request takes longer than its own work plus one partial step (GFTL: the read's scan
//! of the data block's records, or the write; RFTL: the write, and reads run no step), and
//! no request had to finish GC inside itself (`rt_overruns`). Latency is the sum of the
//! operations a call issued (a single die serves them one after another).

use crate::common::{healthy_chip, next_lpn, took, Shape};
use controller::{Controller, ControllerConfig};
use ftl::{Ftl, RtBlockConfig, RtBlockFtl, RtKind};
use nand::{Chip, ConstantRber, Lpn, Nanos, RamStorage};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

type Dev = RtBlockFtl<RamStorage, ConstantRber>;

fn device(kind: RtKind, blocks_per_plane: u32, seed: u64) -> Dev {
    let ctl = Controller::new(
        Chip::ram(healthy_chip("k9k8g08u0b", blocks_per_plane, seed)).unwrap(),
        ConstantRber(0.0),
        ControllerConfig {
            seed,
            ..Default::default()
        },
    )
    .unwrap();
    RtBlockFtl::format(ctl, kind, RtBlockConfig::default(), Nanos::ZERO).unwrap()
}

/// Runs `writes` writes of `shape` (a read after every fourth) and checks every request
/// against the bound; returns the worst write and read and the counters.
fn run(kind: RtKind, shape: Shape, writes: u64, seed: u64) -> (u64, u64, ftl::FtlCounters) {
    let mut dev = device(kind, 48, seed);
    let bound = dev
        .latency_bound()
        .expect("a real-time scheme reports its bound");
    let n = dev.logical_pages();
    let ppb = 64;
    let data = vec![0x5au8; dev.page_size()];
    let mut buf = vec![0u8; dev.page_size()];
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    took(&mut dev);
    let (mut worst_w, mut worst_r) = (0, 0);
    // Fill the volume first so GC works on full blocks.
    for l in 0..n {
        dev.write(Nanos(l), Lpn::checked(l, n).unwrap(), &data)
            .unwrap();
        took(&mut dev);
    }
    for i in 0..writes {
        let l = next_lpn(shape, i, n, ppb, &mut rng);
        let t = Nanos(n + i);
        dev.write(t, Lpn::checked(l, n).unwrap(), &data).unwrap();
        let w = took(&mut dev);
        assert!(
            w <= bound.write_ns,
            "{kind:?} {shape:?} write {i}: {w} ns > bound {} ns",
            bound.write_ns
        );
        worst_w = worst_w.max(w);
        if i % 4 == 0 {
            let l = rng.next_u64() % n;
            dev.read(t, Lpn::checked(l, n).unwrap(), &mut buf).unwrap();
            let r = took(&mut dev);
            assert!(
                r <= bound.read_ns,
                "{kind:?} {shape:?} read {i}: {r} ns > bound {} ns",
                bound.read_ns
            );
            worst_r = worst_r.max(r);
        }
    }
    dev.verify().unwrap();
    let c = *dev.counters();
    assert_eq!(c.rt_overruns, 0, "{kind:?} {shape:?}: {c:?}");
    (worst_w, worst_r, c)
}

#[test]
fn gftl_keeps_its_bound() {
    for shape in [
        Shape::Random,
        Shape::HotBlock,
        Shape::Sequential,
        Shape::Alternating,
    ] {
        let (w, r, c) = run(RtKind::Gftl, shape, 20_000, 7);
        assert!(
            c.partial_steps > 100 && c.gc_victims > 10,
            "{shape:?}: {c:?}"
        );
        eprintln!(
            "gftl {shape:?}: worst write {w} ns, read {r} ns, steps {}",
            c.partial_steps
        );
    }
}

#[test]
fn rftl_keeps_its_bound() {
    for shape in [
        Shape::Random,
        Shape::HotBlock,
        Shape::Sequential,
        Shape::Alternating,
    ] {
        let (w, r, c) = run(RtKind::Rftl, shape, 20_000, 8);
        assert!(
            c.partial_steps > 100 && c.gc_victims > 10,
            "{shape:?}: {c:?}"
        );
        eprintln!(
            "rftl {shape:?}: worst write {w} ns, read {r} ns, steps {}",
            c.partial_steps
        );
    }
}

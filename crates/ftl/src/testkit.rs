//! What the kernels' unit tests share: a controller on a preset with wear failures off,
//! page contents by version, random operation mixes checked against a reference model
//! (what each logical page last held), and the whole-volume read-back.

use crate::Ftl;
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use controller::{Controller, ControllerConfig};
use nand::{Chip, ChipConfig, ConstantRber, Lpn, Nanos, RamStorage};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// The tests' controller: error-free reads, a RAM chip.
pub(crate) type Ctl = Controller<RamStorage, ConstantRber>;

/// A controller on `cfg` with wear failures off and both seeds `seed`.
pub(crate) fn controller_on(mut cfg: ChipConfig, seed: u64) -> Ctl {
    cfg.reliability.wear_fail_rate = 0.0;
    cfg.reliability.wear_fail_growth = 0.0;
    cfg.seed = seed;
    let ctl = ControllerConfig {
        seed,
        ..Default::default()
    };
    Controller::new(Chip::ram(cfg).expect("chip"), ConstantRber(0.0), ctl).expect("controller")
}

/// A controller on chip preset `preset` (see [`controller_on`]).
pub(crate) fn controller(preset: &str, seed: u64) -> Ctl {
    controller_on(ChipConfig::preset(preset).expect("preset"), seed)
}

/// Page contents for logical page `l`, version `v`.
pub(crate) fn pattern(size: usize, l: u64, v: u64) -> Vec<u8> {
    nand::pattern::bytes(size, l << 24 ^ v)
}

/// One kind of operation in a [`Mix`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// The next page of a sequential run (wrapping at the volume's end).
    Seq,
    /// A random page of the hot span.
    Random,
    /// A trim of a random page of the hot span.
    Trim,
    /// A flush.
    Flush,
    /// A read of a random page, checked against the model.
    Read,
    /// What the caller does (a remount, …).
    Other,
}

/// Random operations in cumulative percentages: `(Seq, 30), (Random, 65)` rolls a
/// sequential write below 30, a random one below 65, and so on up to 100.
pub(crate) type Mix = &'static [(Op, u32)];

/// What each logical page last held (its version), and the time of the last operation.
#[derive(Debug, Default)]
pub(crate) struct Model {
    pub pages: BTreeMap<u64, u64>,
    pub t: Nanos,
}

/// Runs `ops` operations of `mix` on `ftl` (random writes and trims within the first
/// `span` logical pages), seeded by `seed`, checking reads against the model and calling
/// `verify` after every operation; `other` does what [`Op::Other`] rolls. One roll per
/// operation, then one draw of a random page where the operation takes one.
pub(crate) fn run<F: Ftl>(
    mut ftl: F,
    seed: u64,
    ops: usize,
    span: u64,
    mix: Mix,
    verify: impl Fn(&F) -> Result<(), String>,
    mut other: impl FnMut(F, Nanos) -> F,
) -> (F, Model) {
    let n = ftl.logical_pages();
    let size = ftl.page_size();
    let lpn = |l: u64| Lpn::checked(l, n).expect("in range");
    let mut model = Model::default();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut buf = vec![0u8; size];
    let mut seq = 0u64;
    for i in 0..ops {
        let t = model.t + Nanos(10_000);
        model.t = t;
        let r = rng.next_u32() % 100;
        let op = mix
            .iter()
            .find(|&&(_, upto)| r < upto)
            .map_or(Op::Other, |&(op, _)| op);
        let v = i as u64;
        match op {
            Op::Seq | Op::Random => {
                let l = if op == Op::Seq {
                    seq += 1;
                    (seq - 1) % n
                } else {
                    rng.next_u64() % span
                };
                ftl.write(t, lpn(l), &pattern(size, l, v))
                    .unwrap_or_else(|e| panic!("op {i}: write {l}: {e}"));
                model.pages.insert(l, v);
            }
            Op::Trim => {
                let l = rng.next_u64() % span;
                ftl.trim(t, lpn(l))
                    .unwrap_or_else(|e| panic!("op {i}: trim {l}: {e}"));
                model.pages.remove(&l);
            }
            Op::Flush => ftl
                .flush(t)
                .unwrap_or_else(|e| panic!("op {i}: flush: {e}")),
            Op::Read => {
                let l = rng.next_u64() % n;
                ftl.read(t, lpn(l), &mut buf)
                    .unwrap_or_else(|e| panic!("op {i}: read {l}: {e}"));
                let want = model
                    .pages
                    .get(&l)
                    .map_or(vec![0; size], |&v| pattern(size, l, v));
                assert!(buf == want, "op {i}: page {l} reads wrong data");
            }
            Op::Other => ftl = other(ftl, t),
        }
        verify(&ftl).unwrap_or_else(|e| panic!("op {i} (r {r}): {e}"));
    }
    (ftl, model)
}

/// Reads every logical page of `ftl` against `model` (`what` names the check).
pub(crate) fn read_back<F: Ftl>(ftl: &mut F, model: &Model, what: &str) {
    let n = ftl.logical_pages();
    let size = ftl.page_size();
    let mut buf = vec![0u8; size];
    for l in 0..n {
        ftl.read(model.t, Lpn::checked(l, n).expect("in range"), &mut buf)
            .unwrap_or_else(|e| panic!("{what}: page {l}: {e}"));
        let want = model
            .pages
            .get(&l)
            .map_or(vec![0; size], |&v| pattern(size, l, v));
        assert!(buf == want, "{what}: page {l} reads wrong data");
    }
}

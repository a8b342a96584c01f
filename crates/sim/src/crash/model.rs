//! The harness's reference model of what each logical page may hold after a cut, and the
//! check of a mounted volume against it (the durability contract, or a deliberately weak
//! checker for the harness's self-test).

use super::HostOp;
use ftl::Ftl;
use nand::{Lpn, Nanos};

/// How strictly the harness checks each page read after recovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Checker {
    /// The durability contract: the value at the last completed flush, or one written
    /// since.
    #[default]
    Contract,
    /// Deliberately weakened, for the harness's self-test only: any value ever written (or
    /// zeros) passes, so a lost flush or a resurrected version goes unseen. The self-test
    /// shows a known-bad FTL passing this checker, so a change that weakened the real one
    /// this far would not go unnoticed.
    AnyVersion,
}

/// Reference model: per logical page, the value at the last completed flush, the values
/// written since (`None` = zeros), and the value the device holds now (as far as known: an
/// operation cut in flight is resolved by reading the page after recovery).
pub(super) struct Model {
    pub(super) durable: Vec<Option<u64>>,
    pub(super) since: Vec<Vec<Option<u64>>>,
    pub(super) current: Vec<Option<u64>>,
    /// Every version ever written to each page (to name a resurrected one).
    pub(super) history: Vec<Vec<u64>>,
    pub(super) checker: Checker,
    /// The host operation a power loss interrupted (its index in its workload).
    pub(super) in_flight: Option<(usize, HostOp)>,
}

impl Model {
    pub(super) fn new(n: u64) -> Self {
        Model {
            durable: vec![None; n as usize],
            since: vec![Vec::new(); n as usize],
            current: vec![None; n as usize],
            history: vec![Vec::new(); n as usize],
            checker: Checker::Contract,
            in_flight: None,
        }
    }

    pub(super) fn with_checker(mut self, checker: Checker) -> Self {
        self.checker = checker;
        self
    }

    pub(super) fn flushed(&mut self) {
        self.durable.clone_from(&self.current);
        for s in self.since.iter_mut() {
            s.clear();
        }
    }

    /// A write or trim issued (a flush changes nothing until it completes).
    pub(super) fn issue(&mut self, op: HostOp) {
        let (l, v) = match op {
            HostOp::Write(l, v) => (l, Some(v)),
            HostOp::Trim(l) => (l, None),
            HostOp::TrimRange(first, count) => {
                for l in first..first + count {
                    self.issue(HostOp::Trim(l));
                }
                return;
            }
            HostOp::Flush | HostOp::Idle => return,
        };
        self.since[l as usize].push(v);
        self.current[l as usize] = v;
        if let Some(v) = v {
            self.history[l as usize].push(v);
        }
    }

    pub(super) fn accepts(&self, lpn: usize, v: Option<u64>) -> bool {
        match self.checker {
            Checker::Contract => self.durable[lpn] == v || self.since[lpn].contains(&v),
            Checker::AnyVersion => v.is_none_or(|v| self.history[lpn].contains(&v)),
        }
    }
}

/// The bytes a crash-test write of `version` to `lpn` stores.
pub fn pattern(len: usize, lpn: u64, version: u64) -> Vec<u8> {
    nand::pattern::bytes(len, lpn << 24 ^ version)
}

/// Checks a volume mounted after its writer died (killed, or the power cut): `ops` is the
/// writer's whole workload and `flushed` the number of its operations completed when its
/// last flush returned. Every page reads back as the durability contract allows (zeros if
/// never written), or an error names the first one that does not.
pub fn check_after_kill(dev: &mut dyn Ftl, ops: &[HostOp], flushed: usize) -> Result<(), String> {
    let mut model = Model::new(dev.logical_pages());
    for (i, &op) in ops.iter().enumerate() {
        model.issue(op);
        if i + 1 == flushed {
            model.flushed();
        }
    }
    verify(dev, &mut model, Nanos::ZERO)
}

/// Reads every logical page and checks it against the model; then the
/// model takes what was read as each page's current value (an operation cut in flight has
/// now either happened or not). The set of values a later cut may still expose is kept:
/// the contract promises nothing about unflushed data across a second cut.
pub(super) fn verify(dev: &mut dyn Ftl, model: &mut Model, t: Nanos) -> Result<(), String> {
    let ps = dev.page_size();
    let n = dev.logical_pages();
    let mut buf = vec![0u8; ps];
    // Every logical page, not only those the workload touches: a page never written must
    // read zeros.
    for l in 0..n {
        dev.read(t, Lpn::checked(l, n).expect("in range"), &mut buf)
            .map_err(|e| format!("read of page {l}: {e}"))?;
        let got = if buf.iter().all(|&b| b == 0) {
            Some(None)
        } else {
            let weak = model.checker == Checker::AnyVersion;
            let mut cands = std::iter::once(model.durable[l as usize])
                .chain(model.since[l as usize].iter().copied())
                .flatten()
                .chain(
                    weak.then(|| model.history[l as usize].clone())
                        .into_iter()
                        .flatten(),
                );
            cands.find(|&v| buf == pattern(ps, l, v)).map(Some)
        };
        match got {
            Some(v) if model.accepts(l as usize, v) => model.current[l as usize] = v,
            _ => {
                return Err(format!(
                    "page {l}: read {} — durable {:?}, written since {:?}",
                    match got {
                        Some(None) => "zeros".to_string(),
                        Some(Some(v)) => format!("version {v}"),
                        None => match model.history[l as usize]
                            .iter()
                            .find(|&&v| buf == pattern(ps, l, v))
                        {
                            Some(v) => format!(
                                "version {v}, superseded before the last flush (resurrected)"
                            ),
                            None => "data no write produced".to_string(),
                        },
                    },
                    model.durable[l as usize],
                    model.since[l as usize]
                ))
            }
        }
    }
    Ok(())
}

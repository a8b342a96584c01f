//! Garbage-collection victim policies.
//!
//! GC itself is a step machine inside each FTL (one page copy or one erase per step), so a
//! scheduler can run it all at once (foreground), in bounded slices between requests
//! (partial GC) or in idle time. What is pluggable here is the choice of victim.

use crate::policy::PolicyName;
use nand::Nanos;

/// A full block that GC could reclaim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// Flat block index.
    pub block: u32,
    /// Valid pages in it.
    pub valid: u32,
    /// Its P/E cycles.
    pub erase_count: u32,
    /// Time of its last program (its data's age is `now − last_write`).
    pub last_write: Nanos,
}

/// What a policy may know besides the candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SelectContext {
    /// Current time.
    pub now: Nanos,
    /// Pages per block.
    pub pages_per_block: u32,
    /// Largest erase count on the device (for normalising wear).
    pub max_erase_count: u32,
}

/// Chooses the victim block among the full blocks of one die.
pub trait VictimPolicy: Send {
    /// Short name for reports.
    fn name(&self) -> &'static str;
    /// True if the policy always picks a block with the fewest valid pages; the FTL then
    /// answers from its O(1) valid-count index instead of scanning.
    fn is_greedy(&self) -> bool {
        false
    }
    /// The chosen block, or `None` if no candidate is worth reclaiming.
    fn select(
        &self,
        ctx: &SelectContext,
        candidates: &mut dyn Iterator<Item = Candidate>,
    ) -> Option<u32>;
}

/// Greedy: the block with the fewest valid pages.
#[derive(Debug, Clone, Copy, Default)]
pub struct Greedy;

impl VictimPolicy for Greedy {
    fn name(&self) -> &'static str {
        "greedy"
    }
    fn is_greedy(&self) -> bool {
        true
    }
    fn select(&self, _: &SelectContext, c: &mut dyn Iterator<Item = Candidate>) -> Option<u32> {
        c.min_by_key(|c| (c.valid, c.block)).map(|c| c.block)
    }
}

/// Cost-benefit (Kawaguchi et al., Rosenblum & Ousterhout): maximise
/// age · (1 − u) / (2u), u = valid fraction; an empty block wins outright.
#[derive(Debug, Clone, Copy, Default)]
pub struct CostBenefit;

impl VictimPolicy for CostBenefit {
    fn name(&self) -> &'static str {
        "cost-benefit"
    }
    fn select(&self, ctx: &SelectContext, c: &mut dyn Iterator<Item = Candidate>) -> Option<u32> {
        let ppb = ctx.pages_per_block as f64;
        let mut best: Option<(f64, u32)> = None;
        for cand in c {
            let u = cand.valid as f64 / ppb;
            let score = if cand.valid == 0 {
                f64::INFINITY
            } else {
                let age = ctx.now.saturating_sub(cand.last_write).0 as f64 + 1.0;
                age * (1.0 - u) / (2.0 * u)
            };
            if best.is_none_or(|(s, b)| score > s || (score == s && cand.block < b)) {
                best = Some((score, cand.block));
            }
        }
        best.map(|(_, b)| b)
    }
}

/// AP's policy (§5, "50 % weight on the number of valid pages, 50 % on P/E cycles"):
/// minimise 0.5 · valid / ppb + 0.5 · erase_count / max_erase_count.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApWeighted;

impl VictimPolicy for ApWeighted {
    fn name(&self) -> &'static str {
        "ap-weighted"
    }
    fn select(&self, ctx: &SelectContext, c: &mut dyn Iterator<Item = Candidate>) -> Option<u32> {
        let ppb = ctx.pages_per_block as f64;
        let maxe = ctx.max_erase_count.max(1) as f64;
        let mut best: Option<(f64, u32)> = None;
        for cand in c {
            let score = 0.5 * cand.valid as f64 / ppb + 0.5 * cand.erase_count as f64 / maxe;
            if best.is_none_or(|(s, b)| score < s || (score == s && cand.block < b)) {
                best = Some((score, cand.block));
            }
        }
        best.map(|(_, b)| b)
    }
}

/// The victim policies by name, for configuration files: the built-in ones, or a name a
/// [`Registry`](crate::policy::Registry) resolves (`"greedy"`, `"cost-benefit"`,
/// `"ap-weighted"`, or any other valid name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VictimKind {
    /// [`Greedy`].
    #[default]
    Greedy,
    /// [`CostBenefit`].
    CostBenefit,
    /// [`ApWeighted`].
    ApWeighted,
    /// A policy registered under this name.
    Named(PolicyName),
}

impl VictimKind {
    const BUILTIN: [(&'static str, VictimKind); 3] = [
        ("greedy", VictimKind::Greedy),
        ("cost-benefit", VictimKind::CostBenefit),
        ("ap-weighted", VictimKind::ApWeighted),
    ];

    /// The built-in policy object (`None` for a registered name: see
    /// [`Registry::victim`](crate::policy::Registry::victim)).
    pub fn builtin(self) -> Option<alloc::boxed::Box<dyn VictimPolicy>> {
        match self {
            VictimKind::Greedy => Some(alloc::boxed::Box::new(Greedy)),
            VictimKind::CostBenefit => Some(alloc::boxed::Box::new(CostBenefit)),
            VictimKind::ApWeighted => Some(alloc::boxed::Box::new(ApWeighted)),
            VictimKind::Named(_) => None,
        }
    }
}

crate::policy::named_kind!(VictimKind);

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn ctx() -> SelectContext {
        SelectContext {
            now: Nanos(1_000_000),
            pages_per_block: 64,
            max_erase_count: 100,
        }
    }

    fn cands() -> alloc::vec::Vec<Candidate> {
        vec![
            Candidate {
                block: 1,
                valid: 10,
                erase_count: 90,
                last_write: Nanos(999_000),
            },
            Candidate {
                block: 2,
                valid: 20,
                erase_count: 5,
                last_write: Nanos(10),
            },
            Candidate {
                block: 3,
                valid: 12,
                erase_count: 50,
                last_write: Nanos(500_000),
            },
        ]
    }

    #[test]
    fn policies_choose_as_defined() {
        assert_eq!(Greedy.select(&ctx(), &mut cands().into_iter()), Some(1));
        // Block 2 is old (age ≈ 1e6) with u = 0.31: 1e6·0.69/0.62 ≈ 1.1e6, beats block 1
        // (age 1000) and block 3 (age 5e5·0.81/0.375 ≈ 1.08e6).
        assert_eq!(
            CostBenefit.select(&ctx(), &mut cands().into_iter()),
            Some(2)
        );
        // AP: block 2: 0.156 + 0.025 = 0.18; block 1: 0.078 + 0.45; block 3: 0.094 + 0.25.
        assert_eq!(ApWeighted.select(&ctx(), &mut cands().into_iter()), Some(2));
        assert_eq!(Greedy.select(&ctx(), &mut core::iter::empty()), None);
    }
}

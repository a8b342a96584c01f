//! GC pacing: how much of the job machine ([`super::gc`]) runs around each host write —
//! foreground collection to the threshold, a fixed number of steps, WAO-GC's partial step
//! on a shared destination — and the background work (relocations, wear levelling, FLARES's
//! rewrites) run in idle time.

use super::gc::{erase_dirty, gc_step, relocate, start_job, Kernel, Started};
use super::BState;
use crate::bounded::Cap;
use crate::policy::{DieSpace, GcBudget};
use crate::{Cause, FtlError};
use nand::Nanos;

/// Foreground GC: reclaim on `die` until it has `gc_threshold` free blocks (or nothing can
/// be reclaimed).
pub(crate) fn ensure_space<K: Kernel>(k: &mut K, now: Nanos, die: usize) -> Result<(), FtlError> {
    // Collecting more victims than the die has blocks without reaching the threshold means
    // GC no longer gains space (too many bad blocks): stop, let allocation decide.
    let threshold = k.sub().cfg.gc_threshold as usize;
    let mut budget = k.sub().blocks_per_die;
    while k.sub().dies[die].free.len() < threshold {
        if budget == 0 {
            return Ok(());
        }
        budget -= 1;
        if !k.sub().dies[die].dirty.is_empty() {
            // Wait for the natural sealing while there is slack; with one free block left
            // (enough for one more GC job), seal and erase now.
            let force = k.sub().dies[die].free.len() <= 1;
            erase_dirty(k, now, die, force)?;
            if k.sub().dies[die].free.len() >= threshold {
                break;
            }
        }
        match start_job(k, now, die)? {
            Started::Job => {}
            Started::Erased => continue,
            Started::Nothing => return Ok(()),
        }
        run_job(k, now, die)?;
    }
    Ok(())
}

/// At most `n` GC steps on `die`: the running job's, or a new job's while the die is below
/// its threshold; victims waiting for their erase are erased when their replacements are
/// sealed.
pub(crate) fn gc_steps<K: Kernel>(
    k: &mut K,
    now: Nanos,
    die: usize,
    n: u32,
) -> Result<(), FtlError> {
    let threshold = k.sub().cfg.gc_threshold as usize;
    if !k.sub().dies[die].dirty.is_empty() {
        erase_dirty(k, now, die, false)?;
    }
    for _ in 0..n {
        let idle = k.sub().dies[die].gc.is_none();
        if idle
            && (k.sub().dies[die].free.len() >= threshold
                || start_job(k, now, die)? != Started::Job)
        {
            return Ok(());
        }
        gc_step(k, now, die)?;
    }
    Ok(())
}

/// Runs the GC work the pacing policy asks for before (`after` false) or after a host
/// write on `die`. Before a write, a die with fewer than two free blocks is always
/// collected to its threshold (the [`GcPacing`](crate::policy::GcPacing) safety rule).
pub(crate) fn paced<K: Kernel>(
    k: &mut K,
    now: Nanos,
    die: usize,
    after: bool,
) -> Result<(), FtlError> {
    let s = k.sub_mut();
    if s.foreground {
        if !after && s.dies[die].free.len() < s.cfg.gc_threshold as usize {
            return ensure_space(k, now, die);
        }
        return Ok(());
    }
    let space = DieSpace {
        free: s.dies[die].free.len(),
        threshold: s.cfg.gc_threshold as usize,
        collecting: s.dies[die].gc.is_some(),
    };
    let mut budget = if after {
        s.pacing.after_write(&space)
    } else {
        s.pacing.before_write(&space)
    };
    if s.real_time {
        if !after && s.young_left(die) == 0 && !s.frontier_has_room(die, s.copy_stream) {
            // The write would open a block past the young blocks the bound leaves out of σ
            // (no flush or idle period wrote a checkpoint in time): checkpoint first, so
            // they become collectable again — inside the write, an overrun.
            s.log.counters.rt_overruns += 1;
            k.checkpoint(now)?;
        }
        let s = k.sub_mut();
        if !after && space.free == 0 && !s.frontier_has_room(die, s.copy_stream) {
            // The bound's premise broke (blocks went bad since it was checked): the write
            // would find no page. Collect whole victims now, and count the overrun.
            s.log.counters.rt_overruns += 1;
            return finish_now(k, now, die);
        }
    } else if !after && space.free < 2 {
        budget = GcBudget::UntilThreshold;
    }
    match budget {
        GcBudget::Nothing => Ok(()),
        GcBudget::Steps(n) => gc_steps(k, now, die, n),
        GcBudget::UntilThreshold => ensure_space(k, now, die),
        GcBudget::Partial(alpha) => partial_step(k, now, die, alpha),
        GcBudget::Victim => {
            if shared_job(k, now, die)? {
                // Every copy, then the erase.
                run_job(k, now, die)?;
            }
            Ok(())
        }
    }
}

/// Whether `die`'s running GC job still has a valid page to copy: its victim's valid count
/// (a copy or a lost page un-counts its source), no flash access.
fn job_has_copy<K: Kernel>(k: &K, die: usize) -> bool {
    let s = k.sub();
    s.dies[die]
        .gc
        .is_some_and(|job| s.valid[job.victim as usize] > 0)
}

/// Starts a job on `die` for a scheme with one shared destination, when the die is down
/// to its destination and the reserve and no job runs; a victim waiting for its erase (its
/// copies not yet sealed, multi-level chips) is erased instead if it can be — that is the
/// step. `true`: a job runs (to step on).
fn shared_job<K: Kernel>(k: &mut K, now: Nanos, die: usize) -> Result<bool, FtlError> {
    if k.sub().dies[die].gc.is_some() {
        return Ok(true);
    }
    if !k.sub().dies[die].dirty.is_empty() {
        erase_dirty(k, now, die, false)?;
        return Ok(false);
    }
    if k.sub().dies[die].free.len() > crate::policy::RESERVE {
        return Ok(false);
    }
    let Some(v) = k.sub().select_victim(die, now) else {
        return Ok(false);
    };
    let s = k.sub_mut();
    // The collection runs into the destination: a native block of π pages, as the bound
    // counts (`Substrate::opens_slc` opens an SLC-mode one only with a block to spare) —
    // unless blocks went bad since the bound was checked.
    debug_assert!(
        s.log.counters.retired_blocks > 0
            || !s.dies[die].frontier[s.copy_stream]
                .is_some_and(|f| s.slc[f.block as usize] == Some(true) && f.next < s.ppb),
        "die {die}: a GC job starts into an SLC-mode destination"
    );
    s.dies[die].gc = Some(s.claim_victim(v, Cause::Gc));
    Ok(true)
}

/// One partial GC step on `die` (WAO-GC, §IV-B): the job's start (see `shared_job`), then
/// either up to `alpha` valid-page copies or — the victim holding no valid page — its
/// erase. Never both, so a step takes at most one erase or `alpha` copies
/// (α (t_rd + t_wr) ≤ t_er). Every loop here is bounded by `alpha`.
pub(crate) fn partial_step<K: Kernel>(
    k: &mut K,
    now: Nanos,
    die: usize,
    alpha: u32,
) -> Result<(), FtlError> {
    k.sub_mut().log.counters.partial_steps += 1;
    if !shared_job(k, now, die)? {
        return Ok(());
    }
    if !job_has_copy(k, die) {
        // The erase (the job's last step: `finish_job` erases unless it must wait).
        gc_step(k, now, die)?;
        return Ok(());
    }
    for _ in 0..alpha {
        if !job_has_copy(k, die) {
            break;
        }
        gc_step(k, now, die)?;
    }
    Ok(())
}

/// Runs `die`'s GC job to its end and erases what waits (a real-time scheme's fallback
/// when its bound broke, and what a flush does before sealing: see `finish_jobs`).
pub(crate) fn finish_now<K: Kernel>(k: &mut K, now: Nanos, die: usize) -> Result<(), FtlError> {
    // A victim waiting for its erase first: erasing it needs no page.
    erase_dirty(k, now, die, true)?;
    if k.sub().dies[die].gc.is_none() && k.sub().dies[die].free.is_empty() {
        start_job(k, now, die)?;
    }
    if k.sub().dies[die].gc.is_some() {
        run_job(k, now, die)?;
    }
    erase_dirty(k, now, die, true)
}

/// Runs the job `gc_step` works on for `die` (its GC job, else its first background job)
/// to its end.
fn run_job<K: Kernel>(k: &mut K, now: Nanos, die: usize) -> Result<(), FtlError> {
    let mut cap = Cap::new(k.sub().job_steps(), "a GC job ran past its steps");
    while !gc_step(k, now, die)? {
        cap.tick()?;
    }
    Ok(())
}

/// A real-time scheme's flush or shutdown: finishes every die's running GC job first, so
/// that padding pages sealing the destination never take room the job counted on.
pub(crate) fn finish_jobs<K: Kernel>(k: &mut K, now: Nanos) -> Result<(), FtlError> {
    for die in 0..k.sub().dies.len() {
        if k.sub().dies[die].gc.is_some() {
            run_job(k, now, die)?;
        }
    }
    Ok(())
}

/// Rewrites the pages the ECC-strength policy asked for on `die` (while it has free blocks
/// to spare), at most `budget` of them: each still valid page is relocated (cause
/// `refresh`, re-encoded at its new page's strength); pages no longer valid are
/// forgotten. Under a real-time pacing (one shared destination) each rewrite is paced as
/// a host write is: the kernels call this in idle time only there.
pub(crate) fn run_refresh<K: Kernel>(
    k: &mut K,
    now: Nanos,
    die: usize,
    budget: usize,
) -> Result<usize, FtlError> {
    let threshold = k.sub().cfg.gc_threshold as usize;
    let real_time = k.sub().real_time;
    let mut done = 0;
    while done < budget && !k.sub().dies[die].refresh.is_empty() {
        if real_time {
            // A shared destination: the rewrite is paced like a host write (the bound's
            // fallback before it, one partial step after it), so the pages it takes are
            // among the k writes eq. 6 counts per victim.
            paced(k, now, die, false)?;
        } else if k.sub().dies[die].free.len() < threshold {
            // Refresh is background work of its own: collect first, as a host write would.
            ensure_space(k, now, die)?;
            if k.sub().dies[die].free.len() < threshold {
                break;
            }
        }
        let Some(phys) = k.sub_mut().dies[die].refresh.pop_front() else {
            break;
        };
        k.sub_mut().unqueue_rewrite(phys);
        let b = k.sub().block_of(phys) as usize;
        let live = matches!(k.sub().state[b], BState::Full | BState::Open);
        match k.owner(phys).filter(|_| live) {
            Some(lpn) => {
                relocate(k, now, die, phys, lpn, Cause::Refresh)?;
                done += 1;
                if real_time {
                    paced(k, now, die, true)?;
                }
            }
            None => k.sub_mut().ecc.forget(phys),
        }
    }
    Ok(done)
}

/// Runs relocation and wear-levelling jobs on `die` while it has free blocks to spare (a
/// step takes at most one block; below the GC threshold they wait for GC).
pub(crate) fn run_pending<K: Kernel>(k: &mut K, now: Nanos, die: usize) -> Result<(), FtlError> {
    let threshold = k.sub().cfg.gc_threshold as usize;
    let jobs = k.sub().dies[die].background.len() as u64;
    let mut cap = Cap::new(
        jobs * k.sub().job_steps(),
        "background jobs ran past their steps",
    );
    loop {
        let d = &k.sub().dies[die];
        if d.gc.is_some() || d.background.is_empty() || d.free.len() < threshold {
            return Ok(());
        }
        cap.tick()?;
        gc_step(k, now, die)?;
    }
}

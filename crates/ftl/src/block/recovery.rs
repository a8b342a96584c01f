//! Rebuilding the block-level kernel after a clean shutdown or a crash: DCR (Ref. 004) and
//! the version-based baseline ([15] in the paper), over one shared replay.
//!
//! Both load the newest complete checkpoint, which gives every block's role and the three
//! allocation lists (derived from it exactly as the live kernel derived them). Blocks
//! allocated since — the **updated blocks** — are found differently:
//!
//! - **DCR** follows the allocation order: phase 1 the regular list, phase 2 the spare
//!   free block list, phase 3 the hot block list, each block's header read (charged) until
//!   the first block holding nothing (no list has an erased block before its last
//!   allocated one: blocks allocated since a checkpoint are not erased before the next).
//!   A block gone bad is passed over, as the allocator passed over it.
//! - **Version-based** reads every data block's header and, for each block holding data,
//!   free at the checkpoint but flagged needs-erase, the records of its first pages up to
//!   the first that decodes: its version (sequence number). A block the checkpoint lists
//!   free and erased that holds data, or free with a version newer than the checkpoint,
//!   was updated since (a block allocated at the checkpoint cannot have been: blocks
//!   freed since one are not reused before the next).
//!
//! Every updated block's pages are read (records only; the block's role, logical block,
//! whether a merge's commit page is there), and the updated blocks are replayed in the
//! order of their first sequence number, the paper's update function:
//!
//! - a replacement (`UpdateMetadataAllocateNew`, replacement case): the logical block's
//!   replacement;
//! - a primary written by the host (`UpdateMetadataAllocateNew`, primary case): the
//!   logical block's primary; what it had before (only dead blocks: an emptied merge's)
//!   is freed;
//! - a merge or wear-levelling copy (`UpdateMetadataGC`): if its commit page is there, the
//!   primary, and the old primary and replacement are freed; else it is discarded;
//! - a block with no valid record (a torn first program): freed.
//!
//! A freed victim that still holds data is free with *needs-erase*; one found empty was
//! erased since the checkpoint: DCR counts that erase (+1, Alg. 3.1/3.2). DCR also counts
//! the erase an allocation gave a block the checkpoint had flagged needs-erase; only for
//! such a block found empty where its list stops (erased by the allocation, then the cut)
//! does it take the header's count. The version-based scan reads every header and takes
//! every count from it. Nothing is erased during recovery (freed blocks wait for their
//! allocation); the mount ends by writing a checkpoint of the recovered state, so the next
//! recovery starts from it. Both procedures recover identical state from the same chip
//! (tested: their checkpoints are byte for byte equal).
//!
//! A block header is page 0's spare (`substrate::Header`): its bad-block marker, erase
//! counter, whether the block holds anything and whether an erase was cut short — not
//! where its written pages end. Neither procedure needs that: page state inside blocks
//! (write pointers, replacement offsets, torn pages at the write point) is not part of
//! recovery; every mapped block is scanned, charged, when first touched (see the module
//! docs of `block`). After a clean shutdown with nothing written since,
//! primaries keep their checkpointed write pointers.

use super::{Blk, BlockFtl, Lists, Role, NONE};
use crate::block::rec;
use crate::block::snapshot::Snapshot;
use crate::recovery::SEQ_LIMIT;
use crate::recovery::{RecoveryKind, RecoveryReport};
use crate::substrate::BState;
use crate::substrate::{Sense, Sensed};
use crate::{Cause, FtlError, OpKind};
use alloc::vec::Vec;
use nand::{BlockStatus, ErrorModel, Nanos, Storage};

/// An updated block, as its pages say.
#[derive(Debug, Clone, Copy)]
struct Found {
    b: u32,
    /// Smallest sequence number among its records (`u64::MAX`: none decoded).
    first: u64,
    /// Largest among all its decodable records (pads too; 0: none).
    newest: u64,
    /// Logical block of its first data record.
    lbn: Option<u32>,
    repl: bool,
    merge: bool,
    /// The commit page of a merge is there.
    complete: bool,
}

/// What recovery uses of a block header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Header {
    good: bool,
    erase_count: u32,
    data: bool,
    /// Caught by a cut mid-erase.
    needs_erase: bool,
}

impl From<&crate::substrate::Header> for Header {
    fn from(h: &crate::substrate::Header) -> Self {
        Header {
            good: h.status == BlockStatus::Good,
            erase_count: h.erase_count,
            data: h.holds_data(),
            needs_erase: h.needs_erase,
        }
    }
}

/// What the procedure read, for the report.
#[derive(Default)]
struct Tally {
    /// The headers read, by block (what of them recovery uses), and how many.
    headers: Vec<Option<Header>>,
    headers_read: usize,
    blocks_scanned: u64,
    pages_scanned: u64,
}

/// Rebuilds `ftl` from its chip with `kind` (`RollForward`: DCR; `FullScan`:
/// version-based).
pub(crate) fn recover<S: Storage, M: ErrorModel>(
    ftl: &mut BlockFtl<S, M>,
    now: Nanos,
    kind: RecoveryKind,
) -> Result<RecoveryReport, FtlError> {
    let nblocks = ftl.blk.len();
    let ppb = ftl.ppb();
    let crc = ftl.s.controller().crc32c_fn();
    let loaded = ftl.region.load_versioned(
        &mut ftl.s,
        now,
        ("block-kernel checkpoint", super::snapshot::VERSION),
        |b| super::snapshot::stream_version(b, crc),
        |b| Snapshot::decode(b, nblocks, ppb, crc),
    )?;
    let checkpoint_pages = mount_reads(ftl);
    let Some((snap, _)) = loaded else {
        return Err(FtlError::Corrupt(if ftl.region.seen {
            "no complete block-level checkpoint on the chip"
        } else {
            "the chip holds no block-level volume (format it first)"
        }));
    };
    apply(ftl, &snap)?;
    let mut tally = Tally::default();
    let found = match kind {
        RecoveryKind::RollForward => dcr_candidates(ftl, now, &snap, &mut tally)?,
        RecoveryKind::FullScan => version_candidates(ftl, now, &snap, &mut tally)?,
    };
    let dcr = kind == RecoveryKind::RollForward;
    let mut found = found;
    found.sort_by_key(|f| (f.first, f.b));
    let mut max_seq = snap.seq;
    for f in &found {
        max_seq = max_seq.max(f.newest.saturating_add(1));
        replay(ftl, now, &snap, f, dcr, &mut tally)?;
    }
    if max_seq > SEQ_LIMIT {
        return Err(FtlError::Corrupt(
            "a sequence number on the chip is beyond any this FTL writes",
        ));
    }
    if !dcr {
        // Every count from its header.
        for (b, h) in tally.headers.iter().enumerate() {
            if let Some(h) = h {
                ftl.s.adopt_erase_count(b as u32, h.erase_count);
            }
        }
    }
    ftl.s.seq = max_seq.max(1);
    let clean = snap.clean && found.is_empty();
    for k in ftl.blk.iter_mut() {
        k.young = false;
        k.unresolved = matches!(k.role, Role::Replacement) || (k.role == Role::Primary && !clean);
    }
    // The region's blocks (erased by checkpoints, including the one loaded, since it was
    // written): their headers give their counts and bad marks.
    for b in ftl.region.all_blocks().collect::<Vec<_>>() {
        let h = header(ftl, now, b, &mut tally)?;
        ftl.s.adopt_erase_count(b, h.erase_count);
        if !h.good || ftl.s.state[b as usize] == BState::Bad {
            ftl.set_bad(b);
        }
    }
    let (reads, time) = ftl.s.recovery_time(&[Cause::Mount]);
    let mapped = ftl.map.iter().filter(|e| e.p != NONE).count() as u64 * ppb as u64;
    ftl.write_checkpoint(now, false)?;
    Ok(RecoveryReport {
        procedure: if dcr { "dcr" } else { "version-based" }.into(),
        checkpoint_gen: ftl.region.cp.gen,
        checkpoint_pages,
        // Blocks whose header or pages were read.
        blocks_scanned: tally.headers_read.max(tally.blocks_scanned as usize) as u64,
        pages_scanned: tally.pages_scanned,
        pages_read: reads,
        time,
        mapped_pages: mapped,
    })
}

/// Reads logged with cause `mount` so far.
fn mount_reads<S: Storage, M: ErrorModel>(ftl: &BlockFtl<S, M>) -> u64 {
    ftl.s
        .log()
        .ops
        .iter()
        .filter(|o| o.cause == Cause::Mount && o.kind == OpKind::Read)
        .count() as u64
}

/// The checkpoint's state into the kernel: block table, map, erase counts, torn pages,
/// lists, volume size.
fn apply<S: Storage, M: ErrorModel>(
    ftl: &mut BlockFtl<S, M>,
    snap: &Snapshot,
) -> Result<(), FtlError> {
    for (b, k) in snap.blk.iter().enumerate() {
        let region = ftl.blk[b].role == Role::Region;
        // The region is the configuration's: a checkpoint that disagrees is not this
        // volume's (a region block may have gone bad).
        if region != (k.role == Role::Region) && !(region && k.role == Role::Bad) {
            return Err(FtlError::Corrupt(
                "the checkpoint's region differs from the configured one",
            ));
        }
        if region {
            continue;
        }
        ftl.blk[b] = *k;
        if k.role == Role::Bad {
            ftl.s.adopt_state(b as u32, BState::Bad);
        }
    }
    for (b, &e) in snap.erase.iter().enumerate() {
        if ftl.blk[b].role != Role::Region {
            ftl.s.adopt_erase_count(b as u32, e);
        }
    }
    ftl.size_volume(Some(snap.lbns)).map_err(|_| {
        FtlError::Corrupt("the checkpoint's volume does not fit the chip's good blocks")
    })?;
    for (b, k) in ftl.blk.iter().enumerate() {
        match k.role {
            Role::Primary => ftl.map[k.lbn as usize].p = b as u32,
            Role::Replacement => ftl.map[k.lbn as usize].r = b as u32,
            _ => {}
        }
    }
    if ftl.map.len() != snap.lbns as usize
        || snap
            .blk
            .iter()
            .any(|k| matches!(k.role, Role::Primary | Role::Replacement) && k.lbn >= snap.lbns)
    {
        return Err(FtlError::Corrupt(
            "the checkpoint maps a logical block out of range",
        ));
    }
    ftl.torn = snap.torn.iter().copied().collect();
    ftl.lists = Lists::derive(&ftl.blk, &ftl.s.erase, ftl.spare_len, ftl.hot_len);
    Ok(())
}

/// Reads block `b`'s header (charged, once). What the bad-block marker, the erase counter
/// and the "holds data" state say; `needs_erase` (caught mid-erase) counts as data.
fn header<S: Storage, M: ErrorModel>(
    ftl: &mut BlockFtl<S, M>,
    now: Nanos,
    b: u32,
    tally: &mut Tally,
) -> Result<Header, FtlError> {
    if tally.headers.is_empty() {
        tally.headers = alloc::vec![None; ftl.blk.len()];
    }
    if let Some(h) = tally.headers[b as usize] {
        return Ok(h);
    }
    let h = Header::from(&ftl.s.read_header(now, b, Cause::Mount)?);
    tally.headers_read += 1;
    tally.headers[b as usize] = Some(h);
    Ok(h)
}

/// DCR's three phases: each list in allocation order up to its first empty block.
fn dcr_candidates<S: Storage, M: ErrorModel>(
    ftl: &mut BlockFtl<S, M>,
    now: Nanos,
    snap: &Snapshot,
    tally: &mut Tally,
) -> Result<Vec<Found>, FtlError> {
    let mut out = Vec::new();
    let lists = [
        ftl.lists.q.clone(),
        ftl.lists.s.clone(),
        ftl.lists.h.clone(),
    ];
    for list in lists {
        for b in list {
            if ftl.blk[b as usize].role == Role::Bad {
                continue;
            }
            let h = header(ftl, now, b, tally)?;
            if !h.good {
                ftl.set_bad(b);
                continue;
            }
            if !allocated_since(ftl, now, b, &h, snap, tally)? {
                // Where the list stops. A needs-erase block here may have been erased by
                // its allocation just before the cut (and be empty, or hold a torn first
                // program): the one count inference cannot give, so its header's.
                if snap.blk[b as usize].needs_erase {
                    ftl.s.adopt_erase_count(b, h.erase_count);
                    ftl.blk[b as usize].needs_erase = h.data;
                }
                break;
            }
            out.push(scan(ftl, now, b, tally)?);
        }
    }
    Ok(out)
}

/// The version-based scan: every data block's header, and the version of each block
/// holding data.
fn version_candidates<S: Storage, M: ErrorModel>(
    ftl: &mut BlockFtl<S, M>,
    now: Nanos,
    snap: &Snapshot,
    tally: &mut Tally,
) -> Result<Vec<Found>, FtlError> {
    let mut out = Vec::new();
    for b in 0..ftl.blk.len() as u32 {
        if matches!(ftl.blk[b as usize].role, Role::Region) {
            continue;
        }
        let h = header(ftl, now, b, tally)?;
        if !h.good {
            if ftl.blk[b as usize].role != Role::Bad {
                // Gone bad since: as DCR finds it (on use, or passed over in its list).
                let k = snap.blk[b as usize];
                if k.role == Role::Free {
                    ftl.set_bad(b);
                }
            }
            continue;
        }
        let k = snap.blk[b as usize];
        if !h.data {
            if k.role == Role::Free && k.needs_erase {
                ftl.blk[b as usize].needs_erase = false;
            }
            continue;
        }
        // Only a block free at the checkpoint can have been allocated since (a block
        // freed since is not reused before the next one).
        let updated = k.role == Role::Free && allocated_since(ftl, now, b, &h, snap, tally)?;
        if updated {
            out.push(scan(ftl, now, b, tally)?);
        }
    }
    Ok(out)
}

/// Whether block `b`, free at the checkpoint, was allocated since: erased then, it holds
/// data; flagged needs-erase then, it holds a record newer than the checkpoint.
fn allocated_since<S: Storage, M: ErrorModel>(
    ftl: &mut BlockFtl<S, M>,
    now: Nanos,
    b: u32,
    h: &Header,
    snap: &Snapshot,
    tally: &mut Tally,
) -> Result<bool, FtlError> {
    Ok(h.data
        && (!snap.blk[b as usize].needs_erase
            || version(ftl, now, b, tally)?.is_some_and(|v| v >= snap.seq)))
}

/// The first decodable record's sequence number of block `b` (its version).
fn version<S: Storage, M: ErrorModel>(
    ftl: &mut BlockFtl<S, M>,
    now: Nanos,
    b: u32,
    tally: &mut Tally,
) -> Result<Option<u64>, FtlError> {
    for page in 0..ftl.ppb() {
        tally.pages_scanned += 1;
        match record(ftl, now, b, page)? {
            Sensed::Data(r) => return Ok(Some(r.record.seq)),
            Sensed::Erased if ftl.s.window > 0 => return Ok(None),
            Sensed::Erased | Sensed::Failed => {}
        }
    }
    Ok(None)
}

/// Reads page `page` of block `b` in full (charged): whether it decodes.
fn verify_page<S: Storage, M: ErrorModel>(
    ftl: &mut BlockFtl<S, M>,
    now: Nanos,
    b: u32,
    page: u32,
) -> Result<bool, FtlError> {
    let mut buf = alloc::vec![0u8; if ftl.s.digest { 0 } else { ftl.s.geo().page_size as usize }];
    let (found, _) = ftl
        .s
        .sense_in(now, b, page, Sense::Page(&mut buf), Cause::Mount)?;
    Ok(matches!(found, Sensed::Data(_)))
}

/// A charged record read of page `page` of block `b`.
fn record<S: Storage, M: ErrorModel>(
    ftl: &mut BlockFtl<S, M>,
    now: Nanos,
    b: u32,
    page: u32,
) -> Result<Sensed, FtlError> {
    Ok(ftl.s.sense_in(now, b, page, Sense::Record, Cause::Mount)?.0)
}

/// Reads the records of updated block `b`.
fn scan<S: Storage, M: ErrorModel>(
    ftl: &mut BlockFtl<S, M>,
    now: Nanos,
    b: u32,
    tally: &mut Tally,
) -> Result<Found, FtlError> {
    tally.blocks_scanned += 1;
    let ppb = ftl.ppb();
    let lbns = ftl.lbns as u64;
    let mut f = Found {
        b,
        first: u64::MAX,
        newest: 0,
        lbn: None,
        repl: false,
        merge: false,
        complete: false,
    };
    for page in 0..ppb {
        tally.pages_scanned += 1;
        let r = match record(ftl, now, b, page)? {
            Sensed::Data(ri) => ri.record,
            Sensed::Erased if ftl.s.window > 0 => break,
            Sensed::Erased | Sensed::Failed => continue,
        };
        if r.seq <= SEQ_LIMIT {
            // Every record's number, pads' too: the counter resumes above all of them
            // (a later version check must not take this block's pads for new ones).
            f.newest = f.newest.max(r.seq);
        }
        if r.kind.data_class().is_none() {
            continue; // a pad
        }
        if r.seq > SEQ_LIMIT {
            // No volume writes 2^62 pages: a record this new is forged or corrupt, and
            // adopting it would overflow the counter.
            return Err(FtlError::Corrupt(
                "a sequence number on the chip is beyond any this FTL writes",
            ));
        }
        let l = r.lpn & rec::LPN;
        let x = l / ppb as u64;
        if x >= lbns {
            continue;
        }
        match f.lbn {
            None => {
                f.lbn = Some(x as u32);
                f.repl = r.lpn & rec::REPL != 0;
                f.merge = r.lpn & rec::MERGE != 0;
                f.first = r.seq;
            }
            Some(y) if y as u64 != x || (r.lpn & rec::REPL != 0) != f.repl => continue,
            Some(_) => f.first = f.first.min(r.seq),
        }
        if f.merge && r.lpn & rec::MERGE != 0 && r.lpn & rec::LAST != 0 && page == ppb - 1 {
            // The commit page counts only if it and its lower partners read back whole:
            // a cut tearing it may land its record, or all but a few bits of it, and
            // scramble its word line's lower pages.
            let lower: Vec<u32> = ftl
                .s
                .controller()
                .chip()
                .pairing()
                .lower_pages(page)
                .collect();
            f.complete = verify_page(ftl, now, b, page)?;
            for q in lower {
                f.complete = f.complete && verify_page(ftl, now, b, q)?;
            }
        }
    }
    Ok(f)
}

/// The update function for one updated block (see the module docs).
fn replay<S: Storage, M: ErrorModel>(
    ftl: &mut BlockFtl<S, M>,
    now: Nanos,
    snap: &Snapshot,
    f: &Found,
    dcr: bool,
    tally: &mut Tally,
) -> Result<(), FtlError> {
    let b = f.b;
    // An allocation erased a block the checkpoint flagged needs-erase.
    if dcr && snap.blk[b as usize].needs_erase {
        ftl.s.adopt_erase_count(b, snap.erase[b as usize] + 1);
    }
    let garbage = Blk {
        needs_erase: true,
        ..Blk::FREE
    };
    let Some(x) = f.lbn else {
        ftl.blk[b as usize] = garbage;
        return Ok(());
    };
    let e = ftl.map[x as usize];
    if f.repl {
        if e.p == NONE {
            // A replacement needs a primary: this one belongs to nothing live.
            ftl.blk[b as usize] = garbage;
            return Ok(());
        }
        if e.r != NONE {
            free_victim(ftl, now, e.r, dcr, tally)?;
        }
        ftl.map[x as usize].r = b;
        ftl.blk[b as usize] = Blk {
            role: Role::Replacement,
            lbn: x,
            ..Blk::FREE
        };
        return Ok(());
    }
    if f.merge && !f.complete {
        // A merge the cut interrupted: its victims still hold everything.
        ftl.blk[b as usize] = garbage;
        return Ok(());
    }
    for v in [e.p, e.r] {
        if v != NONE {
            free_victim(ftl, now, v, dcr, tally)?;
        }
    }
    ftl.map[x as usize] = super::Entry { p: b, r: NONE };
    ftl.blk[b as usize] = Blk {
        role: Role::Primary,
        lbn: x,
        ..Blk::FREE
    };
    Ok(())
}

/// A victim of a replayed merge or allocation: free; erased since the checkpoint if its
/// header shows nothing (DCR counts the erase), else needs-erase.
fn free_victim<S: Storage, M: ErrorModel>(
    ftl: &mut BlockFtl<S, M>,
    now: Nanos,
    v: u32,
    dcr: bool,
    tally: &mut Tally,
) -> Result<(), FtlError> {
    let h = header(ftl, now, v, tally)?;
    ftl.roff.remove(&v);
    if !h.good {
        ftl.set_bad(v);
        return Ok(());
    }
    if h.data {
        // Not erased, or caught by the cut mid-erase (which wore it a cycle: the header
        // says the block needs an erase).
        if dcr && h.needs_erase {
            ftl.s.adopt_erase_count(v, ftl.s.erase[v as usize] + 1);
        }
        ftl.blk[v as usize] = Blk {
            needs_erase: true,
            ..Blk::FREE
        };
    } else {
        if dcr {
            ftl.s.adopt_erase_count(v, ftl.s.erase[v as usize] + 1);
        }
        ftl.blk[v as usize] = Blk::FREE;
        ftl.clear_torn(v);
    }
    Ok(())
}

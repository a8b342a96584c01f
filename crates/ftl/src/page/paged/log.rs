//! What reaches flash besides translation pages: a TP's log (SPFTL_log's subpage of
//! changed entries) and the paged section of a checkpoint.

use super::tp_len;
use alloc::vec;
use alloc::vec::Vec;

/// Bytes before a log's entries: `count u16 | 0 u16`.
const HEAD: usize = 4;
/// Bytes of a log entry: the entry's index in its TP (u16) and its value (u32).
const ENTRY: usize = 6;

/// Entries a log unit of `unit` bytes holds.
pub(super) fn capacity(unit: usize) -> usize {
    unit.saturating_sub(HEAD) / ENTRY
}

/// Fills `unit` with a log of `entries` (ascending by index; at most `capacity`).
pub(super) fn encode(unit: &mut [u8], entries: impl Iterator<Item = (u16, u32)>) {
    unit.fill(0xFF);
    let mut n = 0u16;
    for (k, (i, v)) in entries.enumerate() {
        let o = HEAD + k * ENTRY;
        unit[o..o + 2].copy_from_slice(&i.to_le_bytes());
        unit[o + 2..o + ENTRY].copy_from_slice(&v.to_le_bytes());
        n += 1;
    }
    unit[..2].copy_from_slice(&n.to_le_bytes());
    unit[2..4].copy_from_slice(&[0, 0]);
}

/// A log unit of a TP of `len` entries parsed; `None` if it is not one (count beyond
/// `cap`, an index outside the TP or not ascending).
pub(super) fn decode(unit: &[u8], len: u32, cap: usize) -> Option<Vec<(u16, u32)>> {
    let n = u16::from_le_bytes([unit[0], unit[1]]) as usize;
    if n > cap || unit[2..4] != [0, 0] {
        return None;
    }
    let mut out: Vec<(u16, u32)> = Vec::with_capacity(n);
    for k in 0..n {
        let o = HEAD + k * ENTRY;
        let i = u16::from_le_bytes([unit[o], unit[o + 1]]);
        let v = u32::from_le_bytes(unit[o + 2..o + ENTRY].try_into().ok()?);
        if i as u32 >= len || out.last().is_some_and(|l| l.0 >= i) {
            return None;
        }
        out.push((i, v));
    }
    Some(out)
}

/// What a checkpoint holds of a paged map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PagedPart {
    /// Entries per TP.
    pub per_tp: u32,
    /// The directory: each TP's location in the map partition, or `NONE`.
    pub gtd: Vec<u32>,
    /// With logs (`map_log`): each TP's log location in the log partition, or `NONE`;
    /// empty without.
    pub lid: Vec<u32>,
    /// Dirty cached TPs: (TP, entries).
    pub dirty: Vec<(u32, Vec<u32>)>,
}

impl PagedPart {
    /// Appends the section to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.per_tp.to_le_bytes());
        out.extend_from_slice(&(self.gtd.len() as u32).to_le_bytes());
        for g in &self.gtd {
            out.extend_from_slice(&g.to_le_bytes());
        }
        out.extend_from_slice(&(self.dirty.len() as u32).to_le_bytes());
        for (tp, e) in &self.dirty {
            out.extend_from_slice(&tp.to_le_bytes());
            for x in e {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        out.extend_from_slice(&(self.lid.len() as u32).to_le_bytes());
        for g in &self.lid {
            out.extend_from_slice(&g.to_le_bytes());
        }
    }

    /// Parses the section for a volume of `logical` pages; `None` if malformed.
    pub fn decode(r: &mut crate::bytes::Reader, logical: u64) -> Option<Self> {
        let per_tp = r.u32()?;
        if per_tp == 0 {
            return None;
        }
        let ntp = r.u32()? as u64;
        if ntp != logical.div_ceil(per_tp as u64) {
            return None;
        }
        let gtd = (0..ntp).map(|_| r.u32()).collect::<Option<Vec<u32>>>()?;
        let n = r.u32()? as u64;
        if n > ntp {
            return None;
        }
        let mut dirty = Vec::with_capacity(n as usize);
        let mut seen = vec![false; ntp as usize];
        for _ in 0..n {
            let tp = r.u32()?;
            if tp as u64 >= ntp || seen[tp as usize] {
                return None;
            }
            seen[tp as usize] = true;
            let len = tp_len(per_tp, logical, tp);
            let e = (0..len).map(|_| r.u32()).collect::<Option<Vec<u32>>>()?;
            dirty.push((tp, e));
        }
        let nlid = r.u32()? as u64;
        if nlid != 0 && nlid != ntp {
            return None;
        }
        let lid = (0..nlid).map(|_| r.u32()).collect::<Option<Vec<u32>>>()?;
        Some(PagedPart {
            per_tp,
            gtd,
            lid,
            dirty,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_round_trips_and_rejects_what_is_not_one() {
        let mut unit = vec![0u8; 64];
        let cap = capacity(unit.len());
        assert_eq!(cap, 10);
        let e = [(0u16, 7u32), (3, u32::MAX), (9, 12)];
        encode(&mut unit, e.iter().copied());
        assert_eq!(decode(&unit, 16, cap).unwrap(), e);
        // An index outside a shorter TP, or a count beyond the capacity.
        assert!(decode(&unit, 9, cap).is_none());
        assert!(decode(&unit, 16, 2).is_none());
        // Not ascending.
        encode(&mut unit, [(3u16, 1u32), (3, 2)].into_iter());
        assert!(decode(&unit, 16, cap).is_none());
        // An erased unit is not a log.
        unit.fill(0xFF);
        assert!(decode(&unit, 16, cap).is_none());
    }
}

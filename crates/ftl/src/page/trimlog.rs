//! The page kernel's trim log: the records the checkpoint region's log holds, one per
//! discarded range (see `snapshot` for when they are written).
//!
//! **Record format** (little-endian, 12-byte units, so logs written before ranges existed
//! read unchanged): a record is two units — first page with bit 31 ([`RANGE_FLAG`]) set,
//! sequence number (u64); then the page count (u32) and 8 zero bytes. Logs written before
//! ranges hold single-page units (page with bit 31 clear, sequence number), still read as
//! ranges of one page. A record is never split across log pages (the log is appended in
//! whole [`TRIM_RECORD`]s): a log cut after a page and continued in a fresh block after a
//! mount must not pair one record's first unit with a later append's unit.
//! Volumes have fewer than 2^31 logical pages (checked when one is sized).

use alloc::vec::Vec;

/// Bytes of one trim-log unit: logical page (u32) and sequence number (u64); a range
/// takes two (see the module docs).
pub(crate) const TRIM_ENTRY: usize = 12;
/// Bytes of one trim record (two units), the granularity the log is appended in.
pub(crate) const TRIM_RECORD: usize = 2 * TRIM_ENTRY;
/// Bit 31 of a unit's logical page: a range record, its page count in the next unit.
pub(crate) const RANGE_FLAG: u32 = 1 << 31;
/// Volumes have fewer logical pages than this (a trim record's page field has 31 bits).
pub(crate) const MAX_LOGICAL: u64 = RANGE_FLAG as u64;

/// One trim record: logical pages `first .. first + count`, discarded by the operation
/// with sequence number `seq` (every version of those pages older than it is dead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TrimRange {
    /// First logical page.
    pub first: u32,
    /// Pages (at least one).
    pub count: u32,
    /// The trim's sequence number.
    pub seq: u64,
}

impl TrimRange {
    /// One past the last page.
    pub fn end(&self) -> u64 {
        self.first as u64 + self.count as u64
    }
}

/// Trim-log units of `trims` (see the module docs for the format).
pub(crate) fn encode_trims(trims: &[TrimRange]) -> Vec<u8> {
    let mut out = Vec::with_capacity(trims.len() * TRIM_RECORD);
    for t in trims {
        debug_assert!(t.count >= 1 && t.first < RANGE_FLAG && t.end() <= MAX_LOGICAL);
        out.extend_from_slice(&(t.first | RANGE_FLAG).to_le_bytes());
        out.extend_from_slice(&t.seq.to_le_bytes());
        out.extend_from_slice(&t.count.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
    }
    out
}

/// Trim records packed in the log's bytes. A range whose count unit is missing (a log
/// that ends after its first unit) or zero is dropped.
pub(crate) fn decode_trims(log: &[u8]) -> Vec<TrimRange> {
    let mut out = Vec::new();
    let mut units = log.chunks_exact(TRIM_ENTRY);
    while let Some(e) = units.next() {
        let page = u32::from_le_bytes(e[..4].try_into().expect("4 bytes"));
        let seq = u64::from_le_bytes(e[4..12].try_into().expect("8 bytes"));
        if page & RANGE_FLAG == 0 {
            out.push(TrimRange {
                first: page,
                count: 1,
                seq,
            });
            continue;
        }
        let Some(c) = units.next() else { break };
        let count = u32::from_le_bytes(c[..4].try_into().expect("4 bytes"));
        if count > 0 {
            out.push(TrimRange {
                first: page & !RANGE_FLAG,
                count,
                seq,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn trim_records_round_trip_and_old_logs_read() {
        let trims = vec![
            TrimRange {
                first: 5,
                count: 1,
                seq: 9,
            },
            TrimRange {
                first: 0,
                count: (MAX_LOGICAL - 1) as u32,
                seq: 10,
            },
            TrimRange {
                first: 7,
                count: 3,
                seq: 11,
            },
        ];
        let bytes = encode_trims(&trims);
        assert_eq!(bytes.len(), trims.len() * TRIM_RECORD);
        assert_eq!(decode_trims(&bytes), trims);
        // A log of single-page entries (as written before ranges) reads as ranges of one.
        let mut old = Vec::new();
        for (l, q) in [(3u32, 4u64), (8, 6)] {
            old.extend_from_slice(&l.to_le_bytes());
            old.extend_from_slice(&q.to_le_bytes());
        }
        assert_eq!(
            decode_trims(&old),
            vec![
                TrimRange {
                    first: 3,
                    count: 1,
                    seq: 4
                },
                TrimRange {
                    first: 8,
                    count: 1,
                    seq: 6
                }
            ]
        );
        // A log ending after a range's first unit drops that range only.
        let torn = &bytes[..bytes.len() - TRIM_ENTRY];
        assert_eq!(decode_trims(torn), trims[..2].to_vec());
        // Old single-page units followed by records (a volume written before ranges,
        // appended to after): each read for what it is.
        let mixed = [old.as_slice(), bytes.as_slice()].concat();
        assert_eq!(decode_trims(&mixed).len(), 2 + trims.len());
    }
}

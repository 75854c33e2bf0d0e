//! A segment's sparse indexes, as Kafka keeps them beside each `.log` file.
//!
//! Every [`INDEX_INTERVAL_BYTES`] of log, at a batch boundary, the segment notes one entry:
//!
//! - `.index` — 8 bytes: the batch's offset relative to the segment's base (u32), and its byte
//!   position in the `.log` file (u32). A read seeks to the last entry at or before the offset it
//!   wants and scans forward from there.
//! - `.timeindex` — 12 bytes: the largest timestamp of every record *before* that position (i64),
//!   and the same relative offset (u32). Looking up "the first record at or after T" starts at
//!   the last entry whose timestamp is below T: nothing before it can qualify.
//!
//! Both are rebuilt from the log's batch headers when they are missing or do not make sense, so
//! they are a cache, never the truth.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Kafka's `index.interval.bytes` default.
pub const INDEX_INTERVAL_BYTES: u64 = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexEntry {
    pub relative_offset: u32,
    pub position: u32,
    /// The largest timestamp of the records before `position` (`i64::MIN` for none).
    pub max_timestamp_before: i64,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SparseIndex {
    entries: Vec<IndexEntry>,
}

impl SparseIndex {
    pub fn push(&mut self, e: IndexEntry) {
        self.entries.push(e);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Keeps the first `n` entries (an append that failed takes its entries back).
    pub fn truncate(&mut self, n: usize) {
        self.entries.truncate(n);
    }

    pub fn last(&self) -> Option<&IndexEntry> {
        self.entries.last()
    }

    /// The entries, in order.
    pub fn entries_iter(&self) -> impl Iterator<Item = IndexEntry> + '_ {
        self.entries.iter().copied()
    }

    /// How many entries point before `position`, and the entry at it, if one does.
    pub fn before(&self, position: u32) -> (usize, Option<IndexEntry>) {
        let i = self.entries.partition_point(|e| e.position < position);
        (i, self.entries.get(i).filter(|e| e.position == position).copied())
    }

    /// The position to start scanning from for `relative_offset`.
    pub fn position_for(&self, relative_offset: u32) -> u32 {
        let i = self
            .entries
            .partition_point(|e| e.relative_offset <= relative_offset);
        if i == 0 {
            0
        } else {
            self.entries[i - 1].position
        }
    }

    /// The position to start scanning from for the first record with timestamp ≥ `timestamp`.
    pub fn position_for_timestamp(&self, timestamp: i64) -> u32 {
        let i = self
            .entries
            .partition_point(|e| e.max_timestamp_before < timestamp);
        if i == 0 {
            0
        } else {
            self.entries[i - 1].position
        }
    }

    /// The entry's bytes in the `.index` and `.timeindex` files.
    pub fn encode(e: &IndexEntry) -> ([u8; 8], [u8; 12]) {
        let mut offset = [0u8; 8];
        offset[..4].copy_from_slice(&e.relative_offset.to_be_bytes());
        offset[4..].copy_from_slice(&e.position.to_be_bytes());
        let mut time = [0u8; 12];
        time[..8].copy_from_slice(&e.max_timestamp_before.to_be_bytes());
        time[8..].copy_from_slice(&e.relative_offset.to_be_bytes());
        (offset, time)
    }

    /// Appends entry number `n` to the two files.
    pub fn write_entry(offset_file: &File, time_file: &File, n: usize, e: &IndexEntry) -> io::Result<()> {
        let (o, t) = Self::encode(e);
        offset_file.write_all_at(&o, (n * 8) as u64)?;
        time_file.write_all_at(&t, (n * 12) as u64)
    }

    /// Loads both files, or `None` when they are missing, of different lengths, or inconsistent:
    /// offsets and positions must strictly increase, timestamps must not decrease, positions must
    /// fall inside a log of `log_len` bytes.
    pub fn load(offset_path: &Path, time_path: &Path, log_len: u64) -> Option<Self> {
        let o = std::fs::read(offset_path).ok()?;
        let t = std::fs::read(time_path).ok()?;
        if o.len() % 8 != 0 || t.len() % 12 != 0 || o.len() / 8 != t.len() / 12 {
            return None;
        }
        let mut idx = Self::default();
        for (a, b) in o.chunks_exact(8).zip(t.chunks_exact(12)) {
            let rel = u32::from_be_bytes([a[0], a[1], a[2], a[3]]);
            let pos = u32::from_be_bytes([a[4], a[5], a[6], a[7]]);
            let mut ts = [0u8; 8];
            ts.copy_from_slice(&b[..8]);
            let ts = i64::from_be_bytes(ts);
            let rel_t = u32::from_be_bytes([b[8], b[9], b[10], b[11]]);
            let ok = rel_t == rel
                && u64::from(pos) < log_len.max(1)
                && idx.entries.last().is_none_or(|p| {
                    p.relative_offset < rel && p.position < pos && p.max_timestamp_before <= ts
                });
            if !ok {
                return None;
            }
            idx.entries.push(IndexEntry {
                relative_offset: rel,
                position: pos,
                max_timestamp_before: ts,
            });
        }
        Some(idx)
    }

    /// Writes the whole index to both files (after a rebuild).
    pub fn write_all(&self, offset_path: &Path, time_path: &Path) -> io::Result<()> {
        let mut o = Vec::with_capacity(self.entries.len() * 8);
        let mut t = Vec::with_capacity(self.entries.len() * 12);
        for e in &self.entries {
            let (a, b) = Self::encode(e);
            o.extend_from_slice(&a);
            t.extend_from_slice(&b);
        }
        std::fs::write(offset_path, o)?;
        std::fs::write(time_path, t)
    }

    pub fn size_in_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<IndexEntry>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idx() -> SparseIndex {
        let mut i = SparseIndex::default();
        for (rel, pos, ts) in [(0, 0, i64::MIN), (10, 4_100, 50), (20, 8_300, 90)] {
            i.push(IndexEntry {
                relative_offset: rel,
                position: pos,
                max_timestamp_before: ts,
            });
        }
        i
    }

    #[test]
    fn lookups_start_at_the_last_entry_at_or_before() {
        let i = idx();
        assert_eq!(i.position_for(0), 0);
        assert_eq!(i.position_for(15), 4_100);
        assert_eq!(i.position_for(20), 8_300);
        assert_eq!(i.position_for_timestamp(40), 0);
        assert_eq!(
            i.position_for_timestamp(60),
            4_100,
            "records before 4100 are all ≤ 50"
        );
        assert_eq!(i.position_for_timestamp(1_000), 8_300);
    }

    #[test]
    fn files_round_trip_and_nonsense_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (o, t) = (dir.path().join("a.index"), dir.path().join("a.timeindex"));
        idx().write_all(&o, &t).expect("write");
        assert_eq!(SparseIndex::load(&o, &t, 10_000), Some(idx()));
        assert_eq!(SparseIndex::load(&o, &t, 5_000), None, "a position past the log");
        let mut bytes = std::fs::read(&o).expect("read");
        bytes.truncate(13);
        std::fs::write(&o, &bytes).expect("write");
        assert_eq!(SparseIndex::load(&o, &t, 10_000), None, "a torn index");
        std::fs::remove_file(&o).expect("rm");
        assert_eq!(SparseIndex::load(&o, &t, 10_000), None, "a missing index");
    }
}

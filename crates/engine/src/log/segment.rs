//! An in-memory segment, laid out column by column.
//!
//! Keys and values of all records share one byte arena; per record the segment keeps its
//! timestamp, key length and where its bytes end — 16 bytes of bookkeeping instead of two heap
//! allocations, which is what lets a ten-million-record partition stay small and fast to scan.
//! Offsets are implicit (`base + index`) until compaction leaves gaps; only then does the
//! segment keep an explicit offset column. Columns grow by a quarter at a time rather than
//! doubling, so a full segment wastes little capacity.
//!
//! The records are not encoded, but the segment knows the batches a segment file would hold
//! (where each begins and its bytes, counted by [`super::layout`]'s rule): `segment.bytes` and
//! `retention.bytes` count those bytes, as Kafka does, and a truncation inside a batch rewrites
//! it as a file's would.

use crate::clock::Millis;
use crate::record::{NewRecord, Offset, RecordRef};

/// Marks an absent key or value in the length columns.
const ABSENT: i32 = -1;

#[derive(Debug, Clone)]
pub(super) struct Segment {
    pub base_offset: Offset,
    pub created_at: Millis,
    pub max_timestamp: Option<i64>,
    /// Explicit offsets, only once the segment has gaps (after compaction); empty while dense.
    offsets: Vec<Offset>,
    /// Offsets are `base_offset + index` (no gap yet).
    dense: bool,
    timestamps: Vec<i64>,
    /// Key length, or `ABSENT`.
    key_lens: Vec<i32>,
    /// End of each record's bytes (key then value) in `arena`; the high bit marks a null value.
    ends: Vec<u32>,
    arena: Vec<u8>,
    /// Indexes of control records (transaction markers), ascending. Sparse: a topic without
    /// transactions pays nothing for the flag.
    controls: Vec<u32>,
    /// Records' headers (as encoded), by index, ascending. Sparse too: most records have none.
    headers: Vec<(u32, Vec<u8>)>,
    /// The batches a segment file would hold: (index of the first record, byte position).
    batches: Vec<(u32, u32)>,
    /// Bytes of those batches: the segment file's size.
    bytes: usize,
}

/// Marks a record whose value is null (a tombstone) in `ends`.
const NULL_VALUE: u32 = 1 << 31;

/// Grows `v` by at least `extra` and by a quarter of its capacity when full: bounded waste.
fn grow<T>(v: &mut Vec<T>, extra: usize) {
    if v.len() + extra > v.capacity() {
        v.reserve_exact(extra.max(v.capacity() / 4).max(64));
    }
}

impl Segment {
    pub fn new(base_offset: Offset, created_at: Millis) -> Self {
        Self {
            base_offset,
            created_at,
            max_timestamp: None,
            offsets: Vec::new(),
            dense: true,
            timestamps: Vec::new(),
            key_lens: Vec::new(),
            ends: Vec::new(),
            arena: Vec::new(),
            controls: Vec::new(),
            headers: Vec::new(),
            batches: Vec::new(),
            bytes: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.timestamps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.timestamps.is_empty()
    }

    fn is_dense(&self) -> bool {
        self.dense
    }

    fn offset_at(&self, index: usize) -> Offset {
        if self.is_dense() {
            self.base_offset + index as Offset
        } else {
            self.offsets[index]
        }
    }

    /// Bytes the segment's batches take, as a segment file holds them: the figure
    /// `segment.bytes` and `retention.bytes` limit.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The next records pushed form one batch of `bytes` bytes.
    pub fn begin_batch(&mut self, bytes: usize) {
        grow(&mut self.batches, 1);
        self.batches.push((self.len() as u32, self.bytes as u32));
        self.bytes += bytes;
    }

    /// The index one past the last record of the batch that holds the record at `index`:
    /// `None` when that record is in no batch this segment began (it holds none).
    pub fn batch_end_index(&self, index: usize) -> Option<usize> {
        let after = self
            .batches
            .partition_point(|&(first, _)| first as usize <= index);
        if after == 0 || index >= self.len() {
            return None;
        }
        Some(
            self.batches
                .get(after)
                .map_or(self.len(), |&(first, _)| first as usize),
        )
    }

    /// The offset of the record at `index` (one past the last record for `len()`).
    pub fn offset_of_index(&self, index: usize) -> Option<Offset> {
        (index < self.len()).then(|| self.offset_at(index))
    }

    pub fn first_offset(&self) -> Option<Offset> {
        (!self.is_empty()).then(|| self.offset_at(0))
    }

    pub fn push(&mut self, offset: Offset, record: &NewRecord<'_>) {
        let index = self.len();
        if self.is_dense() && offset != self.base_offset + index as Offset {
            // The first gap (possibly before the first record): from now on offsets are explicit.
            self.offsets = (0..index).map(|i| self.base_offset + i as Offset).collect();
            self.dense = false;
        }
        if !self.is_dense() {
            grow(&mut self.offsets, 1);
            self.offsets.push(offset);
        }
        let bytes = record.key.map_or(0, <[u8]>::len) + record.value.map_or(0, <[u8]>::len);
        grow(&mut self.timestamps, 1);
        grow(&mut self.key_lens, 1);
        grow(&mut self.ends, 1);
        grow(&mut self.arena, bytes);
        if record.control {
            self.controls.push(index as u32);
        }
        if !record.headers.is_empty() {
            self.headers.push((index as u32, record.headers.to_vec()));
        }
        self.timestamps.push(record.timestamp);
        self.key_lens.push(record.key.map_or(ABSENT, |k| k.len() as i32));
        if let Some(k) = record.key {
            self.arena.extend_from_slice(k);
        }
        if let Some(v) = record.value {
            self.arena.extend_from_slice(v);
        }
        let null = if record.value.is_none() { NULL_VALUE } else { 0 };
        self.ends.push(self.arena.len() as u32 | null);
        self.max_timestamp = Some(
            self.max_timestamp
                .map_or(record.timestamp, |m| m.max(record.timestamp)),
        );
    }

    pub fn get(&self, index: usize) -> RecordRef<'_> {
        let start = if index == 0 {
            0
        } else {
            (self.ends[index - 1] & !NULL_VALUE) as usize
        };
        let end = (self.ends[index] & !NULL_VALUE) as usize;
        let key_len = self.key_lens[index];
        let key_end = start + key_len.max(0) as usize;
        RecordRef {
            offset: self.offset_at(index),
            timestamp: self.timestamps[index],
            key: (key_len != ABSENT).then(|| &self.arena[start..key_end]),
            value: (self.ends[index] & NULL_VALUE == 0).then(|| &self.arena[key_end..end]),
            control: !self.controls.is_empty() && self.controls.binary_search(&(index as u32)).is_ok(),
            headers: match self.headers.binary_search_by_key(&(index as u32), |(i, _)| *i) {
                Ok(at) => &self.headers[at].1,
                Err(_) => &[],
            },
        }
    }

    /// Index of the first record with offset ≥ `offset` (binary search: offsets may have gaps).
    pub fn index_of(&self, offset: Offset) -> usize {
        if self.is_dense() {
            (offset - self.base_offset).clamp(0, self.len() as Offset) as usize
        } else {
            self.offsets.partition_point(|&o| o < offset)
        }
    }

    pub fn size_in_bytes(&self) -> usize {
        self.arena.capacity()
            + self.offsets.capacity() * 8
            + self.timestamps.capacity() * 8
            + self.key_lens.capacity() * 4
            + self.ends.capacity() * 4
            + self.controls.capacity() * 4
            + self.batches.capacity() * 8
            + self.headers.iter().map(|(_, h)| h.capacity() + 32).sum::<usize>()
            + std::mem::size_of::<Self>()
    }

    /// Drops the records from `index` on. The batch it cuts through keeps its records before
    /// `index`, written again as one batch (at their offsets, timestamps from the first's), as a
    /// segment file's truncation rewrites it.
    pub fn truncate(&mut self, index: usize) {
        if index >= self.len() {
            return;
        }
        let batch = self
            .batches
            .partition_point(|&(first, _)| first as usize <= index)
            - 1;
        let (first, position) = (self.batches[batch].0 as usize, self.batches[batch].1 as usize);
        let kept_bytes = if first < index {
            let kept: Vec<(Offset, NewRecord<'_>)> = (first..index)
                .map(|i| {
                    let r = self.get(i);
                    (r.offset, r.as_new())
                })
                .collect();
            offsetlab_records::batch::encoded_len(&kept)
        } else {
            0
        };
        self.batches
            .truncate(if first < index { batch + 1 } else { batch });
        self.bytes = position + kept_bytes;
        let arena_end = if index == 0 {
            0
        } else {
            (self.ends[index - 1] & !NULL_VALUE) as usize
        };
        if !self.dense {
            self.offsets.truncate(index);
        }
        self.timestamps.truncate(index);
        self.key_lens.truncate(index);
        self.ends.truncate(index);
        self.arena.truncate(arena_end);
        self.controls.retain(|&i| (i as usize) < index);
        self.headers.retain(|(i, _)| (*i as usize) < index);
        self.max_timestamp = self.timestamps.iter().copied().max();
    }

    /// A copy holding only the records `keep` approves of (the cleaner's rewrite), in the
    /// batches the cleaner writes ([`super::layout::plan_cleaned`]); `None` when it keeps every
    /// record — the cleaner leaves such a segment as it is.
    pub fn retain(&self, keep: &mut dyn FnMut(RecordRef<'_>) -> bool) -> Option<(Segment, usize)> {
        let kept: Vec<(Offset, NewRecord<'_>)> = (0..self.len())
            .map(|i| self.get(i))
            .filter(|r| keep(*r))
            .map(|r| (r.offset, r.as_new()))
            .collect();
        if kept.len() == self.len() {
            return None;
        }
        let mut out = Segment::new(self.base_offset, self.created_at);
        let mut start = 0;
        for n in super::layout::plan_cleaned(&kept) {
            let batch = &kept[start..start + n];
            out.begin_batch(offsetlab_records::batch::encoded_len(batch));
            for (offset, r) in batch {
                out.push(*offset, r);
            }
            start += n;
        }
        // The largest timestamp of what is kept (none for a segment compacted to nothing).
        out.shrink();
        Some((out, self.len() - kept.len()))
    }

    pub fn shrink(&mut self) {
        self.offsets.shrink_to_fit();
        self.timestamps.shrink_to_fit();
        self.key_lens.shrink_to_fit();
        self.ends.shrink_to_fit();
        self.arena.shrink_to_fit();
        self.controls.shrink_to_fit();
        self.batches.shrink_to_fit();
    }
}

//! An in-memory segment, laid out column by column.
//!
//! Keys and values of all records share one byte arena; per record the segment keeps its offset,
//! timestamp, key length and where its bytes end. That is about 24 bytes of bookkeeping per
//! record instead of two heap allocations, which is what lets a ten-million-record partition
//! stay small and fast to scan.

use crate::clock::Millis;
use crate::record::{NewRecord, Offset, RecordRef};

/// Marks an absent key or value in the length columns.
const ABSENT: i32 = -1;

#[derive(Debug, Clone)]
pub(super) struct Segment {
    pub base_offset: Offset,
    pub created_at: Millis,
    pub max_timestamp: Option<i64>,
    offsets: Vec<Offset>,
    timestamps: Vec<i64>,
    key_lens: Vec<i32>,
    value_lens: Vec<i32>,
    /// End of each record's bytes (key then value) in `arena`.
    ends: Vec<u32>,
    arena: Vec<u8>,
}

impl Segment {
    pub fn new(base_offset: Offset, created_at: Millis) -> Self {
        Self {
            base_offset,
            created_at,
            max_timestamp: None,
            offsets: Vec::new(),
            timestamps: Vec::new(),
            key_lens: Vec::new(),
            value_lens: Vec::new(),
            ends: Vec::new(),
            arena: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// Bytes of record data (keys and values), the figure `segment.bytes` limits.
    pub fn data_bytes(&self) -> usize {
        self.arena.len()
    }

    pub fn first_offset(&self) -> Option<Offset> {
        self.offsets.first().copied()
    }

    pub fn push(&mut self, offset: Offset, record: &NewRecord<'_>) {
        let len_of = |b: Option<&[u8]>| b.map_or(ABSENT, |b| b.len() as i32);
        self.offsets.push(offset);
        self.timestamps.push(record.timestamp);
        self.key_lens.push(len_of(record.key));
        self.value_lens.push(len_of(record.value));
        if let Some(k) = record.key {
            self.arena.extend_from_slice(k);
        }
        if let Some(v) = record.value {
            self.arena.extend_from_slice(v);
        }
        self.ends.push(self.arena.len() as u32);
        self.max_timestamp = Some(self.max_timestamp.map_or(record.timestamp, |m| m.max(record.timestamp)));
    }

    pub fn get(&self, index: usize) -> RecordRef<'_> {
        let start = if index == 0 { 0 } else { self.ends[index - 1] as usize };
        let key_len = self.key_lens[index];
        let value_len = self.value_lens[index];
        let key_end = start + key_len.max(0) as usize;
        let value_end = key_end + value_len.max(0) as usize;
        RecordRef {
            offset: self.offsets[index],
            timestamp: self.timestamps[index],
            key: (key_len != ABSENT).then(|| &self.arena[start..key_end]),
            value: (value_len != ABSENT).then(|| &self.arena[key_end..value_end]),
        }
    }

    /// Index of the first record with offset ≥ `offset` (binary search: offsets may have gaps).
    pub fn index_of(&self, offset: Offset) -> usize {
        self.offsets.partition_point(|&o| o < offset)
    }

    /// Index of the first record with timestamp ≥ `timestamp`, scanning (timestamps are
    /// producer-assigned and need not be monotonic).
    pub fn index_of_timestamp(&self, timestamp: i64) -> Option<usize> {
        self.timestamps.iter().position(|&t| t >= timestamp)
    }

    pub fn size_in_bytes(&self) -> usize {
        self.arena.capacity()
            + self.offsets.capacity() * 8
            + self.timestamps.capacity() * 8
            + self.key_lens.capacity() * 4
            + self.value_lens.capacity() * 4
            + self.ends.capacity() * 4
            + std::mem::size_of::<Self>()
    }

    /// A copy holding only the records `keep` approves of (the cleaner's rewrite).
    pub fn retain(&self, keep: &mut dyn FnMut(RecordRef<'_>) -> bool) -> (Segment, usize) {
        let mut out = Segment::new(self.base_offset, self.created_at);
        let mut removed = 0;
        for i in 0..self.len() {
            let r = self.get(i);
            if keep(r) {
                out.push(
                    r.offset,
                    &NewRecord {
                        timestamp: r.timestamp,
                        key: r.key,
                        value: r.value,
                    },
                );
            } else {
                removed += 1;
            }
        }
        out.max_timestamp = self.max_timestamp;
        out.shrink();
        (out, removed)
    }

    pub fn shrink(&mut self) {
        self.offsets.shrink_to_fit();
        self.timestamps.shrink_to_fit();
        self.key_lens.shrink_to_fit();
        self.value_lens.shrink_to_fit();
        self.ends.shrink_to_fit();
        self.arena.shrink_to_fit();
    }
}

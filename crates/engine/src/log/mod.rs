//! Partition logs and the store that holds them.
//!
//! A partition is an append-only sequence of records. Offsets grow by one per record in a plain
//! topic; compaction (and, later, transaction markers) leave gaps, so nothing here assumes
//! `offset == index`. The log is split into segments, the unit retention deletes and compaction
//! rewrites. Reading never removes anything: consumption is a cursor over immutable records.
//!
//! [`PartitionLog`] is the storage interface. [`memory::MemoryLog`] implements it in memory for
//! the explorer and the tests; a durable segment-file store plugs in behind the same trait.

pub mod config;
pub mod layout;
pub mod memory;
pub mod partitioner;
mod segment;

pub use config::{CleanupPolicy, CompressionType, TimestampType, TopicConfig};

use crate::clock::Millis;
use crate::record::{NewRecord, Offset, RecordRef};
pub use offsetlab_records::Compression;
use offsetlab_records::ProducedBatches;
use serde::{Deserialize, Serialize};

/// What a segment looks like from outside: enough to draw it and to decide retention.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentInfo {
    pub base_offset: Offset,
    /// One past the last offset in the segment (the next segment's base, or the log end).
    pub next_offset: Offset,
    pub records: usize,
    pub bytes: usize,
    pub max_timestamp: Option<i64>,
    /// The active segment takes appends and is never deleted by retention.
    pub active: bool,
}

/// [`PartitionLog::batch_end`] for a log that keeps Kafka's wire format: the header of the
/// stored batch that holds `offset` ([`PartitionLog::read_batches`]) says where it ends.
pub fn batch_end_of_stored(log: &dyn PartitionLog, offset: Offset) -> Offset {
    let mut out = Vec::new();
    match log.read_batches(offset, log.log_end_offset(), 0, &mut out) {
        Some(_) => offsetlab_records::batch::BatchHeader::parse(&out)
            .ok()
            .filter(|h| h.base_offset <= offset && h.last_offset() >= offset)
            .map_or(offset + 1, |h| h.last_offset() + 1),
        None => offset + 1,
    }
}

/// One partition's log.
pub trait PartitionLog: Send {
    /// Appends one record at the log end and returns its offset. Rolls a new segment first
    /// when the active one is full by record count, bytes or age (`now` decides age).
    fn append(&mut self, record: NewRecord<'_>, now: Millis) -> Offset;

    /// Appends several records at the log end and returns the first one's offset. A durable log
    /// writes them as few record batches as its segments allow; the default appends one by one.
    fn append_batch(&mut self, records: &[NewRecord<'_>], now: Millis) -> Offset {
        let first = self.log_end_offset();
        for r in records {
            self.append(*r, now);
        }
        first
    }

    /// Appends `records` as one producer batch and returns the first offset. A batch is never
    /// split between segments: the active segment rolls first when it holds records and the
    /// batch would take it past its limits (a fresh segment takes the whole batch, whatever its
    /// size) — Kafka rolls a segment between batches, never inside one. What a `send` line
    /// appends, batch by batch. With [`TimestampType::LogAppendTime`] the batch is stamped
    /// with `now` over its records' timestamps, as a broker stamps it; with `CreateTime` the
    /// records keep theirs.
    fn append_whole(&mut self, records: &[NewRecord<'_>], now: Millis, stamp: TimestampType) -> Offset;

    /// [`PartitionLog::append_whole`] for a batch its producer shaped ([`BatchShape`]): a log
    /// that keeps the wire format encodes the records' timestamps against the producer's base
    /// and compresses them as it did — its very bytes when the shape has them — so the batch
    /// takes the bytes it had when the producer sent it (a replayed `send` line).
    fn append_shaped(
        &mut self,
        records: &[NewRecord<'_>],
        _shape: &BatchShape<'_>,
        now: Millis,
        stamp: TimestampType,
    ) -> Offset {
        self.append_whole(records, now, stamp)
    }

    /// Appends record batches a producer encoded ([`ProducedBatches`]) and returns the first
    /// offset they were given. With [`TimestampType::LogAppendTime`] they carry the log's time
    /// `now` as their log append time; with `CreateTime` (Kafka's default) the producer's
    /// timestamps stay. A log that keeps Kafka's wire format stores the batches as they came —
    /// base offsets (and a log append time) rewritten in place — and never decodes a record;
    /// the default appends their records one by one. Refuses (and appends nothing) when the
    /// batches are not what [`ProducedBatches`] promises.
    fn append_encoded(
        &mut self,
        batches: &mut ProducedBatches,
        now: Millis,
        stamp: TimestampType,
    ) -> Result<EncodedAppend, String> {
        let first = self.log_end_offset();
        // Stamped in place as a durable log stamps them, so a copy of the batches kept for the
        // history holds the bytes the log serves.
        if stamp == TimestampType::LogAppendTime {
            batches.stamp_log_append_time(now);
        }
        batches.for_each_batch(&mut |records| {
            let kept: Vec<NewRecord<'_>> = records
                .iter()
                .map(|r| NewRecord { control: false, ..*r })
                .collect();
            self.append_whole(&kept, now, stamp);
        });
        Ok(EncodedAppend {
            first,
            kept: Vec::new(),
        })
    }

    /// The first offset still retained.
    fn log_start_offset(&self) -> Offset;

    /// The offset the next appended record will get.
    fn log_end_offset(&self) -> Offset;

    /// Calls `visit` for up to `max_records` records with offset ≥ `from`, in offset order, and
    /// returns how many it visited.
    fn read(&self, from: Offset, max_records: usize, visit: &mut dyn FnMut(RecordRef<'_>)) -> usize;

    /// The stored record batches (v2, as the wire carries them) from the one that holds `from`
    /// on, appended to `out` whole: at least one, then as many as fit in `max_bytes`, none that
    /// reaches `upper`. Returns how many records at or after `from` they hold (control records
    /// not counted). This is how a broker serves a fetch — the bytes as they were written,
    /// never re-encoded; the client drops the records before the offset it asked for. `None`
    /// when the log does not keep its batches in the wire format (the in-memory log): the
    /// caller then encodes records from [`PartitionLog::read`].
    fn read_batches(
        &self,
        _from: Offset,
        _upper: Offset,
        _max_bytes: usize,
        _out: &mut Vec<u8>,
    ) -> Option<usize> {
        None
    }

    /// One past the last offset of the record batch that holds `offset` — the batch its producer
    /// sent, as the log stores it (after compaction, the batches the lab's cleaner packed the
    /// kept records into: Kafka's cleaner keeps each batch's bounds instead). A share
    /// fetch in Kafka's default `batch_optimized` acquire mode takes the batch of its last
    /// record whole. `offset + 1` when no retained batch holds it. A log that keeps the wire
    /// format reads the batch
    /// header with [`batch_end_of_stored`]. (No default: a log that wraps another must ask it.)
    fn batch_end(&self, offset: Offset) -> Offset;

    /// The earliest offset whose timestamp is ≥ `timestamp` (Kafka's `ListOffsets` by time),
    /// or `None` when no retained record is that recent.
    fn offset_for_timestamp(&self, timestamp: i64) -> Option<Offset>;

    fn segments(&self) -> Vec<SegmentInfo>;

    /// Deletes whole segments that end at or before `offset` (never the active one) and returns
    /// how many records went. The log start offset advances to the first remaining record.
    fn delete_segments_before(&mut self, offset: Offset) -> usize;

    /// `DeleteRecords`: moves the log start offset up to `offset` (at most the log end),
    /// deleting the segments that end at or before it. Returns how many records went.
    fn delete_records_before(&mut self, offset: Offset) -> usize;

    /// Rewrites the closed segments keeping only the records `keep` approves of; the active
    /// segment is left alone, as Kafka's cleaner does. Returns how many records were removed.
    fn compact(&mut self, keep: &mut dyn FnMut(RecordRef<'_>) -> bool) -> usize;

    /// Bytes of memory (or disk) the log occupies, for the memory-per-record figure.
    fn size_in_bytes(&self) -> usize;

    /// Records currently retained.
    fn record_count(&self) -> usize;

    /// Removes every record at or after `offset` (the log end moves back to it) and returns how
    /// many went. A restarted lab truncates its logs to what it had acknowledged, as a Kafka
    /// broker truncates to its high watermark.
    fn truncate_to(&mut self, offset: Offset) -> usize;

    /// Closes the active segment, if it holds records, so that no later append writes into its
    /// file: a restart that finds acknowledged records missing from the tail calls it, since the
    /// lab's history may name bytes of that file (kept client batches) where new records would
    /// otherwise land. Logs that keep no files ignore it.
    fn seal_active(&mut self, _now: Millis) {}

    /// A clean close: a durable log syncs and writes what lets the next open skip recovery.
    fn close(&mut self) -> Result<(), String> {
        Ok(())
    }

    /// What another thread reads this log through while the lab is busy with something else,
    /// if the log is shared: a front end wraps each log it gives the lab (the lab session's
    /// `SharedLog`) so that a Fetch reads stored bytes without waiting for the lab's lock. The
    /// engine never calls it and never reads a log from two threads; a log that is not shared
    /// (every log of the engine's own) has none.
    fn shared(&self) -> Option<&(dyn std::any::Any + Send + Sync)> {
        None
    }
}

/// How a producer shaped a batch: what a replayed `send` line tells the log so the batch takes
/// the bytes it had ([`PartitionLog::append_shaped`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchShape<'a> {
    /// The base timestamp the producer chose (some take the earliest record's, not the first's).
    pub base_timestamp: Option<i64>,
    /// The codec it compressed the records with.
    pub codec: Compression,
    /// The compressed records as its compressor wrote them (the bytes after the batch header),
    /// checked to decompress to the records ([`Lab::send_batches`](crate::Lab::send_batches)).
    pub compressed: Option<&'a [u8]>,
}

/// Where [`PartitionLog::append_encoded`] put a client's batches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedAppend {
    /// The offset the first record was given.
    pub first: Offset,
    /// Where the stored batches stay readable for as long as the lab lives — past retention,
    /// compaction, DeleteRecords and the topic's deletion — in order, one entry per segment
    /// they went to. Empty when the log keeps no such copy (the in-memory log).
    pub kept: Vec<KeptBatches>,
}

/// A byte range of a file a durable log keeps: batches as they were stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptBatches {
    /// The file's name in the store's directory of kept segments.
    pub file: String,
    pub position: u64,
    pub len: u64,
    pub records: usize,
}

/// What one pass of the log cleaner removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cleaned {
    /// Records superseded by a later record with the same key.
    pub superseded: usize,
    /// Tombstones old enough to go (`delete.retention.ms` passed since they were written).
    pub tombstones: usize,
}

/// Kafka's log cleaner over the closed segments of `log`: only the latest record per key
/// survives; a latest record that is a tombstone survives too, for `delete_retention_ms`, so
/// that a consumer reading behind still learns the key was deleted — then it goes as well.
/// Control records and records without a key are kept. With transactions (`txns`), records of
/// aborted transactions never count as a key's latest value and are removed, and nothing at or
/// past the last stable offset is cleaned: an open transaction may still abort.
pub fn clean(
    log: &mut dyn PartitionLog,
    now: Millis,
    delete_retention_ms: Millis,
    txns: Option<&crate::txn::PartitionTxns>,
) -> Cleaned {
    let stable = txns.map_or(Offset::MAX, |t| t.last_stable_offset(log.log_end_offset()));
    let aborted = |o: Offset| txns.is_some_and(|t| t.is_aborted(o));
    let mut latest: std::collections::HashMap<Vec<u8>, Offset> = std::collections::HashMap::new();
    log.read(Offset::MIN, usize::MAX, &mut |r| {
        if let (Some(k), false) = (r.key, r.control || aborted(r.offset) || r.offset >= stable) {
            latest.insert(k.to_vec(), r.offset);
        }
    });
    let mut cleaned = Cleaned::default();
    let removed = log.compact(&mut |r| {
        if r.control || r.offset >= stable {
            return true;
        }
        if aborted(r.offset) {
            cleaned.superseded += 1;
            return false;
        }
        let Some(k) = r.key else {
            return true;
        };
        if latest.get(k) != Some(&r.offset) {
            cleaned.superseded += 1;
            return false;
        }
        if r.value.is_none() && now.saturating_sub(r.timestamp) >= delete_retention_ms {
            cleaned.tombstones += 1;
            return false;
        }
        true
    });
    debug_assert_eq!(removed, cleaned.superseded + cleaned.tombstones);
    cleaned
}

/// Where partition logs come from. The lab asks the store for a log whenever a topic (or a
/// partition) is created; the store decides whether it lives in memory or in segment files.
pub trait LogStore: Send {
    /// The log of `topic`-`partition`: a new one, or — for a durable store — the one already on
    /// disk, recovered. Fails only when the store cannot read or write.
    fn open(
        &mut self,
        topic: &str,
        partition: i32,
        config: &TopicConfig,
    ) -> Result<Box<dyn PartitionLog>, String>;

    /// Deletes what the store keeps of `topic`-`partition` (DeleteTopics). Called before the
    /// lab lets go of the log; a durable store may keep the files until the deletion is saved.
    /// The in-memory store keeps nothing outside the log.
    fn remove(&mut self, _topic: &str, _partition: i32) -> Result<(), String> {
        Ok(())
    }
}

/// The in-memory store: every log lives in the process, nothing survives a restart.
#[derive(Debug, Default, Clone, Copy)]
pub struct MemoryStore;

impl LogStore for MemoryStore {
    fn open(
        &mut self,
        _topic: &str,
        _partition: i32,
        config: &TopicConfig,
    ) -> Result<Box<dyn PartitionLog>, String> {
        Ok(Box::new(memory::MemoryLog::new(config.segment_limits())))
    }
}

//! [`FileLog`]: one partition as a directory of segment files.
//!
//! ```text
//! <dir>/00000000000000000000.log        record batches (v2), back to back
//! <dir>/00000000000000000000.index      sparse offset index
//! <dir>/00000000000000000000.timeindex  sparse time index
//! <dir>/00000000000000004096.log        the next segment, named by its base offset
//! <dir>/log-start-offset                the log start offset (DeleteRecords moves it)
//! <dir>/recovery-point                  every byte before this offset was synced and checked
//! <dir>/snapshot.json                   segment metadata, written at a clean close
//! ```
//!
//! An append encodes the records as batches and writes them with one `write` per segment — into
//! the page cache, so a killed process loses nothing it acknowledged; when they reach the disk
//! is the [`Durability`] policy's business. Reads find the segment by base offset, the batch by
//! the sparse index, and validate every batch's CRC before handing out a record.

use crate::durability::Durability;
use crate::health::Health;
use crate::pool::FilePool;
use crate::segment::{FileSegment, SegmentMeta};
use offsetlab_engine::clock::Millis;
use offsetlab_engine::log::config::SegmentLimits;
use offsetlab_engine::log::layout::{self, Fill};
use offsetlab_engine::log::{
    BatchShape, EncodedAppend, KeptBatches, PartitionLog, SegmentInfo, TimestampType,
};
use offsetlab_engine::record::{NewRecord, Offset, RecordRef};
use offsetlab_records::batch::{self, BatchHeader};
use offsetlab_records::ProducedBatches;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod append;
mod cleaner;
mod recovery;

pub use append::AppendError;

/// Read chunk for fetches (grown for larger batches).
const READ_CHUNK: usize = 64 << 10;

/// What a clean close writes so the next open reads no record data.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Snapshot {
    log_start: Offset,
    log_end: Offset,
    segments: Vec<SegmentMeta>,
    /// Records of the first segment below the log start.
    #[serde(default)]
    hidden: usize,
}

/// How a log came back when it was opened.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct OpenReport {
    /// Opened from a clean-close snapshot, without reading records.
    pub clean: bool,
    /// Bytes of torn or corrupt tail cut off.
    pub truncated_bytes: u64,
    /// Segments deleted because they followed a corrupt one.
    pub dropped_segments: usize,
    /// Batches validated (CRC checked) during recovery.
    pub validated_batches: u64,
    /// Where what the recovery cut off was kept (`cut/` in the partition's directory): a
    /// segment's torn tail, or a whole segment that followed a corrupt one.
    pub kept_aside: Vec<PathBuf>,
    pub notes: Vec<String>,
}

pub struct FileLog {
    dir: PathBuf,
    limits: SegmentLimits,
    /// Oldest first; the last one is the active segment. Never empty.
    segments: Vec<FileSegment>,
    log_start: Offset,
    /// Records of the first segment below the log start (DeleteRecords inside a segment).
    hidden: usize,
    durability: Arc<Durability>,
    /// Reused encode buffer.
    scratch: Vec<u8>,
    report: OpenReport,
    /// Where segments that took client batches are kept ([`FileLog::keep_segments_in`]).
    kept_dir: Option<PathBuf>,
    /// The open files of its segments come from here.
    pool: Arc<FilePool>,
    /// Where a write the disk refused is noted ([`Health`]).
    health: Arc<Health>,
}

/// An fsync that fails stops the process, as a Kafka broker halts when a log directory fails:
/// Linux may already have dropped the pages it could not write, so what the lab holds in memory
/// no longer matches the disk, and carrying on would acknowledge records that are not there. (A
/// write the disk refuses — a full disk, no descriptors — is not this: it fails the request
/// instead, see [`Health`].)
fn storage_failure(what: &str, dir: &Path, e: &dyn std::fmt::Display) -> ! {
    tracing::error!(dir = %dir.display(), "cannot {what}: {e} — stopping the lab");
    std::process::abort()
}

fn read_offset_file(path: &Path) -> Option<Offset> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Writes a small file atomically: a temporary file, synced, renamed over the old one.
/// Replaces the file at `path` with `bytes`, synced — but not its directory: the caller syncs
/// the directory once for every file it replaced there (a clean close replaces two files per
/// partition; a directory sync each made six fsyncs a partition where four do).
fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::File::open(&tmp)?.sync_all()?;
    std::fs::rename(&tmp, path)
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

impl FileLog {
    /// Opens (or creates) the log in `dir`. After a clean close the snapshot is trusted and no
    /// record is read; otherwise every segment is scanned — batch headers only below the recovery
    /// point, every batch validated (CRC, offsets, record bounds) from it on — and the log is
    /// truncated at the first bad byte, later segments deleted, indexes rebuilt.
    pub fn open(
        dir: &Path,
        limits: SegmentLimits,
        durability: Arc<Durability>,
        clean: bool,
    ) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let mut log = Self {
            dir: dir.to_path_buf(),
            limits,
            segments: Vec::new(),
            log_start: 0,
            hidden: 0,
            durability,
            scratch: Vec::new(),
            report: OpenReport::default(),
            kept_dir: None,
            pool: FilePool::global(),
            health: Arc::new(Health::default()),
        };
        let snapshot = dir.join("snapshot.json");
        let trusted = clean
            .then(|| std::fs::read(&snapshot).ok())
            .flatten()
            .and_then(|b| serde_json::from_slice::<Snapshot>(&b).ok());
        // The snapshot describes the log at its close; once we append it is stale.
        let _ = std::fs::remove_file(&snapshot);
        let opened_clean = match trusted {
            Some(s) if !s.segments.is_empty() => match log.open_clean(s) {
                Ok(()) => true,
                Err(e) => {
                    // The snapshot does not match the files: recover as after a crash.
                    log.segments.clear();
                    log.report = OpenReport::default();
                    log.report
                        .notes
                        .push(format!("clean snapshot not usable ({e}); recovered"));
                    log.recover()?;
                    false
                }
            },
            _ => {
                log.recover()?;
                false
            }
        };
        if log.segments.is_empty() {
            let base = log.log_start.max(0);
            log.segments.push(FileSegment::create(&log.pool, dir, base, 0)?);
        }
        if !opened_clean {
            log.recompute_hidden();
        }
        Ok(log)
    }

    /// How the log came back at open.
    pub fn open_report(&self) -> &OpenReport {
        &self.report
    }

    fn log_end_offset_raw(&self) -> Offset {
        self.segments
            .last()
            .map_or(self.log_start, |s| s.meta.next_offset)
            .max(self.log_start)
    }

    fn active(&self) -> &FileSegment {
        &self.segments[self.segments.len() - 1]
    }

    /// A cursor over segment `seg` positioned for reading from `from`: by the sparse index in
    /// the first segment read — unless its entry points past `from` (or not at a batch), a
    /// wrong cache: then from the segment's start.
    fn cursor_from(&self, seg: usize, from: Offset, first: bool) -> io::Result<crate::segment::BatchCursor> {
        let s = &self.segments[seg];
        if first {
            let mut probe = s.cursor_for(from, READ_CHUNK)?;
            let trusted = match probe.next_batch() {
                Ok(Some((pos, b))) => pos == 0 || b.header.base_offset <= from,
                Ok(None) => true,
                Err(_) => false,
            };
            if !trusted {
                return s.cursor_from_start(READ_CHUNK);
            }
        }
        s.cursor_for(from, READ_CHUNK)
    }

    /// Notes a write the disk refused (see [`Health`]): the request that made it fails.
    fn fault(&self, what: &str, e: &io::Error) {
        self.health.report(what, &self.dir, e);
    }

    /// Reports this log's faults to `health` (the store's, which its owner checks).
    pub fn report_faults_to(&mut self, health: Arc<Health>) {
        self.health = health;
    }

    fn segment_for(&self, offset: Offset) -> usize {
        self.segments
            .partition_point(|s| s.meta.base_offset <= offset)
            .saturating_sub(1)
    }

    fn next_offset_of(&self, index: usize) -> Offset {
        self.segments
            .get(index + 1)
            .map_or(self.log_end_offset_raw(), |s| s.meta.base_offset)
    }

    /// Writes the snapshot that lets the next open skip recovery. The caller marks the whole
    /// store clean afterwards.
    pub fn close_files(&mut self) -> io::Result<()> {
        for s in &self.segments {
            if let Err(e) = s.log()?.sync_all() {
                storage_failure("sync", &self.dir, &e);
            }
        }
        let snap = Snapshot {
            log_start: self.log_start,
            log_end: self.log_end_offset_raw(),
            segments: self.segments.iter().map(|s| s.meta.clone()).collect(),
            hidden: self.hidden,
        };
        let bytes = serde_json::to_vec(&snap).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        write_synced(&self.dir.join("snapshot.json"), &bytes)?;
        write_synced(
            &self.dir.join("recovery-point"),
            self.log_end_offset_raw().to_string().as_bytes(),
        )?;
        sync_dir(&self.dir)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl PartitionLog for FileLog {
    fn append(&mut self, record: NewRecord<'_>, now: Millis) -> Offset {
        self.append_batch(&[record], now)
    }

    fn append_batch(&mut self, records: &[NewRecord<'_>], now: Millis) -> Offset {
        let first = self.log_end_offset_raw();
        match self.try_append_batch(records, now) {
            Ok(o) => o,
            // The engine's log interface cannot fail: the fault is noted for the store's owner,
            // which takes the whole action back (see `Health`).
            Err(e) => {
                self.fault("write to", &e);
                first
            }
        }
    }

    fn append_encoded(
        &mut self,
        batches: &mut ProducedBatches,
        now: Millis,
        stamp: TimestampType,
    ) -> Result<EncodedAppend, String> {
        // Validated whole when they were built (the type says so): the headers are read once.
        if stamp == TimestampType::LogAppendTime {
            batches.stamp_log_append_time(now);
        }
        let (bytes, headers) = batches.parts_mut();
        let (first, pieces) = match self.append_checked(bytes, headers, now) {
            Ok(appended) => appended,
            Err(e) => {
                self.fault("write to", &e);
                return Err(format!("cannot write to {}: {e}", self.dir.display()));
            }
        };
        let mut kept = Vec::new();
        if let Some(dir) = self.kept_dir.clone() {
            for p in pieces {
                let file = match self.kept_name(&dir, p.segment) {
                    Ok(name) => name,
                    Err(e) => {
                        self.fault("keep a segment of", &e);
                        return Err(format!("cannot keep a segment of {}: {e}", self.dir.display()));
                    }
                };
                kept.push(KeptBatches {
                    file,
                    position: p.position,
                    len: p.len,
                    records: p.records,
                });
            }
        }
        Ok(EncodedAppend { first, kept })
    }

    fn append_whole(&mut self, records: &[NewRecord<'_>], now: Millis, stamp: TimestampType) -> Offset {
        self.append_shaped(records, &BatchShape::default(), now, stamp)
    }

    fn append_shaped(
        &mut self,
        records: &[NewRecord<'_>],
        shape: &BatchShape<'_>,
        now: Millis,
        stamp: TimestampType,
    ) -> Offset {
        if records.is_empty() {
            return self.log_end_offset_raw();
        }
        // One batch, as a client's: the same bytes, roll rule and timestamps whether the batch
        // came from a client or a `send` line.
        let appended = layout::shaped_batch(records, shape, now, stamp)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
            .and_then(|(mut buf, h)| self.append_checked(&mut buf, &mut [h], now));
        match appended {
            Ok((first, _)) => first,
            Err(e) => {
                self.fault("write to", &e);
                self.log_end_offset_raw()
            }
        }
    }

    fn seal_active(&mut self, now: Millis) {
        if self.active().meta.records > 0 {
            if let Err(e) = self.roll(now) {
                self.fault("roll", &e);
            }
        }
    }

    fn log_start_offset(&self) -> Offset {
        self.log_start
    }

    fn log_end_offset(&self) -> Offset {
        self.log_end_offset_raw()
    }

    fn batch_end(&self, offset: Offset) -> Offset {
        offsetlab_engine::log::batch_end_of_stored(self, offset)
    }

    fn read_batches(
        &self,
        from: Offset,
        upper: Offset,
        max_bytes: usize,
        out: &mut Vec<u8>,
    ) -> Option<usize> {
        let from = from.max(self.log_start);
        let start = out.len();
        let mut records = 0usize;
        let first = self.segment_for(from);
        for seg in first..self.segments.len() {
            let Ok(mut cursor) = self.cursor_from(seg, from, seg == first) else {
                return (out.len() > start).then_some(records);
            };
            loop {
                match cursor.next_stored() {
                    Ok(Some((_, h, bytes))) => {
                        if h.last_offset() < from {
                            continue;
                        }
                        let full = out.len() > start && out.len() - start + bytes.len() > max_bytes;
                        if h.last_offset() >= upper || full {
                            return (out.len() > start).then_some(records);
                        }
                        out.extend_from_slice(bytes);
                        if !h.is_control() {
                            records +=
                                usize::try_from(h.last_offset() - h.base_offset.max(from) + 1).unwrap_or(0);
                        }
                    }
                    Ok(None) => break,
                    // Never past a batch that fails its checks (see `read`).
                    Err(_) => return (out.len() > start).then_some(records),
                }
            }
        }
        (out.len() > start).then_some(records)
    }

    fn read(&self, from: Offset, max_records: usize, visit: &mut dyn FnMut(RecordRef<'_>)) -> usize {
        let from = from.max(self.log_start);
        let mut seen = 0;
        let first = self.segment_for(from);
        for seg in first..self.segments.len() {
            if seen >= max_records {
                break;
            }
            let Ok(mut cursor) = self.cursor_from(seg, from, seg == first) else {
                return seen;
            };
            loop {
                match cursor.next_batch() {
                    Ok(Some((_, b))) => {
                        if b.header.last_offset() < from {
                            continue;
                        }
                        for r in b.records().filter(|r| r.offset >= from) {
                            if seen >= max_records {
                                return seen;
                            }
                            visit(r);
                            seen += 1;
                        }
                    }
                    Ok(None) => break,
                    // A batch that fails its checks is never served, and nothing after it is
                    // either: skipping it would hand out a gap as if it were the log.
                    Err(_) => return seen,
                }
            }
        }
        seen
    }

    fn offset_for_timestamp(&self, timestamp: i64) -> Option<Offset> {
        for s in self
            .segments
            .iter()
            .filter(|s| s.meta.max_timestamp.is_some_and(|m| m >= timestamp))
        {
            let Ok(mut cursor) = s.cursor_for_timestamp(timestamp, READ_CHUNK) else {
                return None;
            };
            while let Ok(Some((_, b))) = cursor.next_batch() {
                if b.header.max_timestamp < timestamp {
                    continue;
                }
                if let Some(r) = b
                    .records()
                    .find(|r| r.timestamp >= timestamp && r.offset >= self.log_start)
                {
                    return Some(r.offset);
                }
            }
        }
        None
    }

    fn segments(&self) -> Vec<SegmentInfo> {
        let last = self.segments.len() - 1;
        self.segments
            .iter()
            .enumerate()
            .map(|(i, s)| SegmentInfo {
                base_offset: s.meta.base_offset,
                next_offset: self.next_offset_of(i),
                records: s.meta.records - if i == 0 { self.hidden } else { 0 },
                bytes: s.meta.len as usize,
                max_timestamp: s.meta.max_timestamp,
                active: i == last,
            })
            .collect()
    }

    fn delete_segments_before(&mut self, offset: Offset) -> usize {
        let (before, start) = (self.record_count(), self.log_start);
        self.remove_segments_upto(offset);
        // The base of the first remaining segment (or wherever DeleteRecords moved it); the log
        // end when nothing is left.
        let end = self.log_end_offset_raw();
        self.log_start = self.log_start.max(self.segments[0].meta.base_offset).min(end);
        if self.segments.len() == 1 && self.segments[0].meta.records == 0 {
            self.log_start = end;
        }
        if self.log_start != start {
            self.persist_log_start();
        }
        self.recompute_hidden();
        before - self.record_count()
    }

    fn delete_records_before(&mut self, offset: Offset) -> usize {
        let before = self.record_count();
        let target = offset.clamp(self.log_start, self.log_end_offset_raw());
        // The new log start first: a crash between the two must not bring deleted records back.
        if target != self.log_start {
            self.log_start = target;
            self.persist_log_start();
        }
        self.remove_segments_upto(target);
        self.recompute_hidden();
        before - self.record_count()
    }

    fn truncate_to(&mut self, offset: Offset) -> usize {
        match self.try_truncate(offset) {
            Ok(n) => n,
            Err(e) => {
                self.fault("truncate", &e);
                0
            }
        }
    }

    fn compact(&mut self, keep: &mut dyn FnMut(RecordRef<'_>) -> bool) -> usize {
        match self.try_compact(keep) {
            Ok(n) => {
                self.advance_log_start();
                self.recompute_hidden();
                n
            }
            Err(e) => {
                self.fault("compact", &e);
                0
            }
        }
    }

    fn size_in_bytes(&self) -> usize {
        self.segments
            .iter()
            .map(|s| s.meta.len as usize + s.index.size_in_bytes())
            .sum()
    }

    fn record_count(&self) -> usize {
        self.segments.iter().map(|s| s.meta.records).sum::<usize>() - self.hidden
    }

    fn close(&mut self) -> Result<(), String> {
        self.close_files()
            .map_err(|e| format!("cannot close {}: {e}", self.dir.display()))
    }
}

/// The stem of a kept segment's name: `<partition dir>-<base offset>`, as readable as the
/// segment's own path — unless that would not be a plain name the history can carry (a topic
/// named `.hidden` makes it start with a dot) or would not fit a 255-byte file name with its
/// suffixes (a topic name near Kafka's 249 characters). Then the directory's name is cut and a
/// checksum of it added; a clash with another file is settled by the suffix the caller adds.
pub(crate) fn kept_stem(dir_name: &str, base_offset: Offset) -> String {
    /// Room for `-<20 digits>`, `.<n>` and `.log` within 255 bytes.
    const MAX_DIR_PART: usize = 200;
    if dir_name.len() <= MAX_DIR_PART && !dir_name.starts_with('.') {
        return format!("{dir_name}-{base_offset:020}");
    }
    let kept: String = dir_name
        .trim_start_matches('.')
        .chars()
        .take(MAX_DIR_PART - 10)
        .collect();
    format!(
        "t{}-{:08x}-{base_offset:020}",
        kept,
        crc32c::crc32c(dir_name.as_bytes())
    )
}

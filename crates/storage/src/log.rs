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
use offsetlab_engine::log::{EncodedAppend, KeptBatches, PartitionLog, SegmentInfo};
use offsetlab_engine::record::{NewRecord, Offset, RecordRef};
use offsetlab_records::batch::{self, BatchHeader};
use offsetlab_records::ProducedBatches;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Largest batch an append writes; larger appends are split. A fetch reads (and checks) whole
/// batches, so this is also what a fetch of a few hundred records costs at most: 64 KiB, about
/// 550 records of 100 bytes (Kafka's producers batch 16 KiB by default).
const MAX_BATCH_BYTES: usize = 64 << 10;
/// Read chunk for fetches (grown for larger batches).
const READ_CHUNK: usize = 64 << 10;

/// A record the cleaner keeps, copied out of the segment it is rewriting.
struct KeptRecord {
    offset: Offset,
    timestamp: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    control: bool,
    headers: Vec<u8>,
}

impl KeptRecord {
    fn of(r: &RecordRef<'_>) -> Self {
        Self {
            offset: r.offset,
            timestamp: r.timestamp,
            key: r.key.map(<[u8]>::to_vec),
            value: r.value.map(<[u8]>::to_vec),
            control: r.control,
            headers: r.headers.to_vec(),
        }
    }
}

/// Kept records as records to write back, at their own offsets.
fn as_new_records(kept: &[KeptRecord]) -> Vec<(Offset, NewRecord<'_>)> {
    kept.iter()
        .map(|r| {
            (
                r.offset,
                NewRecord {
                    timestamp: r.timestamp,
                    key: r.key.as_deref(),
                    value: r.value.as_deref(),
                    control: r.control,
                    headers: &r.headers,
                },
            )
        })
        .collect()
}

/// What a clean close writes so the next open reads no record data.
#[derive(Debug, Serialize, Deserialize)]
struct Snapshot {
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

/// The part of an append that went to one segment.
struct Piece {
    segment: usize,
    position: u64,
    len: u64,
    records: usize,
}

/// Why [`FileLog::append_wire`] refused or failed an append.
#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    /// A batch is corrupt or malformed (Kafka answers `CORRUPT_MESSAGE`); nothing was written.
    #[error("invalid record batch: {0}")]
    Invalid(#[from] batch::BatchError),
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// An fsync that fails stops the process, as a Kafka broker halts when a log directory fails:
/// Linux may already have dropped the pages it could not write, so what the lab holds in memory
/// no longer matches the disk, and carrying on would acknowledge records that are not there. (A
/// write the disk refuses — a full disk, no descriptors — is not this: it fails the request
/// instead, see [`Health`].)
fn storage_failure(what: &str, dir: &Path, e: &dyn std::fmt::Display) -> ! {
    eprintln!(
        "offsetlab: cannot {what} {}: {e} — stopping the lab",
        dir.display()
    );
    std::process::abort()
}

fn read_offset_file(path: &Path) -> Option<Offset> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Writes a small file atomically: a temporary file, synced, renamed over the old one.
fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    crate::write_atomically(path, bytes, true)
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

    fn open_clean(&mut self, s: Snapshot) -> io::Result<()> {
        for meta in s.segments {
            self.segments
                .push(FileSegment::open_trusted(&self.pool, &self.dir, meta)?);
        }
        self.log_start = s.log_start;
        self.hidden = s.hidden;
        self.report.clean = true;
        Ok(())
    }

    fn segment_bases(&self) -> io::Result<Vec<Offset>> {
        let mut bases: Vec<Offset> = std::fs::read_dir(&self.dir)?
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                name.strip_suffix(".log")?.parse().ok()
            })
            .collect();
        bases.sort_unstable();
        Ok(bases)
    }

    fn recover(&mut self) -> io::Result<()> {
        let recovery_point = read_offset_file(&self.dir.join("recovery-point")).unwrap_or(0);
        let bases = self.segment_bases()?;
        let mut broken = false;
        for (i, &base) in bases.iter().enumerate() {
            if broken {
                // Everything after a corrupt batch is gone, as in Kafka's recovery.
                for ext in ["log", "index", "timeindex"] {
                    let _ = std::fs::remove_file(FileSegment::path(&self.dir, base, ext));
                }
                self.report.dropped_segments += 1;
                continue;
            }
            // Only a segment wholly below the recovery point is trusted without its CRCs.
            let next_base = bases.get(i + 1).copied().unwrap_or(Offset::MAX);
            let validate = next_base > recovery_point;
            let before = std::fs::metadata(FileSegment::path(&self.dir, base, "log"))?.len();
            let (seg, scan) = FileSegment::recover(&self.pool, &self.dir, base, validate)?;
            if validate {
                self.report.validated_batches += scan.batches;
            }
            self.report.truncated_bytes += before - seg.meta.len;
            if let Some(why) = scan.stopped {
                self.report.notes.push(format!("segment {base}: {why}"));
                broken = true;
            }
            let expected = self.segments.last().map(|s| s.meta.next_offset);
            if expected.is_some_and(|e| seg.meta.base_offset < e) {
                // Overlaps the previous segment: not a log this store wrote.
                seg.delete_files()?;
                self.report.dropped_segments += 1;
                broken = true;
                continue;
            }
            self.segments.push(seg);
        }
        // A truncation into a gap left the log end past the last record: its note says where.
        if let (Some(end), Some(last)) = (
            read_offset_file(&self.dir.join("log-end-offset")),
            self.segments.last_mut(),
        ) {
            if end > last.meta.next_offset && end >= last.meta.base_offset && self.report.notes.is_empty() {
                last.meta.next_offset = end;
            }
        }
        self.log_start = read_offset_file(&self.dir.join("log-start-offset"))
            .unwrap_or_else(|| self.segments.first().map_or(0, |s| s.meta.base_offset));
        let end = self.log_end_offset_raw();
        if self.log_start > end {
            self.log_start = end;
        }
        if let Some(first) = self.segments.first() {
            self.log_start = self.log_start.max(first.meta.base_offset);
        }
        if self.report.dropped_segments > 0 || !self.report.notes.is_empty() {
            sync_dir(&self.dir)?;
        }
        Ok(())
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

    /// Moves the log start up to the first record still present (after compaction or segment
    /// deletion), never back; persists it when it moved.
    fn advance_log_start(&mut self) {
        let first = self
            .segments
            .iter()
            .filter(|s| s.meta.records > 0)
            .find_map(|s| {
                let mut head = [0u8; batch::HEADER_LEN];
                std::os::unix::fs::FileExt::read_exact_at(&*s.log().ok()?, &mut head, 0).ok()?;
                BatchHeader::parse(&head).ok().map(|h| h.base_offset)
            })
            .unwrap_or(self.log_end_offset_raw());
        if first > self.log_start {
            self.log_start = first;
            let _ = write_synced(
                &self.dir.join("log-start-offset"),
                self.log_start.to_string().as_bytes(),
            );
        }
    }

    fn recompute_hidden(&mut self) {
        let start = self.log_start;
        self.hidden = 0;
        if let Some(first) = self.segments.first() {
            if start > first.meta.base_offset {
                let mut n = 0;
                let Ok(mut cursor) = first.cursor_for(first.meta.base_offset, READ_CHUNK) else {
                    return;
                };
                while let Ok(Some((_, b))) = cursor.next_batch() {
                    n += b.records().filter(|r| r.offset < start).count();
                    if b.header.last_offset() >= start {
                        break;
                    }
                }
                self.hidden = n;
            }
        }
    }

    /// Rolls to a new segment at the log end.
    fn roll(&mut self, now: Millis) -> io::Result<()> {
        let base = self.log_end_offset_raw();
        self.segments
            .push(FileSegment::create(&self.pool, &self.dir, base, now)?);
        if self.durability.policy() != crate::FlushPolicy::Never {
            // The closed segment is complete: sync it and move the recovery point past it.
            if let Some(closed) = self.segments.len().checked_sub(2).map(|i| &self.segments[i]) {
                if let Err(e) = closed.log()?.sync_data() {
                    storage_failure("sync", &self.dir, &e);
                }
            }
            write_synced(&self.dir.join("recovery-point"), base.to_string().as_bytes())?;
            sync_dir(&self.dir)?;
        }
        Ok(())
    }

    fn should_roll(&self, incoming: usize, now: Millis) -> bool {
        let a = &self.active().meta;
        a.records > 0
            && (a.records >= self.limits.max_records
                || a.len as usize + incoming > self.limits.max_bytes
                || now - a.created_at >= self.limits.max_age_ms)
    }

    /// Appends records at the log end in as few batches as segment limits allow — one `write` per
    /// segment touched — and returns the first offset.
    pub fn try_append_batch(&mut self, records: &[NewRecord<'_>], now: Millis) -> io::Result<Offset> {
        let first = self.log_end_offset_raw();
        let mut i = 0;
        while i < records.len() {
            if self.should_roll(batch::HEADER_LEN + batch::record_size(0, 0, &records[i]), now) {
                self.roll(now)?;
            }
            self.active_mut_created(now)?;
            let active = &self.active().meta;
            let fresh = active.records == 0;
            let mut records_room = self.limits.max_records.saturating_sub(active.records).max(1);
            let mut bytes_room = self.limits.max_bytes.saturating_sub(active.len as usize);
            let mut offset = self.log_end_offset_raw();
            let mut buf = std::mem::take(&mut self.scratch);
            buf.clear();
            let mut headers = Vec::new();
            let mut taken = 0;
            // Batches of one control flag, at most 1 MiB, within the segment's room (a fresh
            // segment always takes at least one record, however large).
            'batches: while i < records.len() && records_room > 0 {
                let (control, base_ts) = (records[i].control, records[i].timestamp);
                let mut j = i;
                let mut size = batch::HEADER_LEN;
                while j < records.len() && j - i < records_room && records[j].control == control {
                    let s = batch::record_size(
                        (j - i) as i64,
                        records[j].timestamp.wrapping_sub(base_ts),
                        &records[j],
                    );
                    let first_ever = fresh && taken == 0 && j == i;
                    if !first_ever && (size + s > bytes_room || (j > i && size + s > MAX_BATCH_BYTES)) {
                        break;
                    }
                    size += s;
                    j += 1;
                }
                if j == i {
                    break 'batches;
                }
                let at = buf.len();
                batch::encode_consecutive(&mut buf, offset, &records[i..j], -1);
                headers.push(
                    BatchHeader::parse(&buf[at..])
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?,
                );
                bytes_room = bytes_room.saturating_sub(size);
                records_room -= j - i;
                taken += j - i;
                offset += (j - i) as Offset;
                i = j;
            }
            if taken == 0 {
                // Nothing fits: the segment is full by bytes; roll on the next turn.
                self.scratch = buf;
                self.roll(now)?;
                continue;
            }
            let last = self.segments.len() - 1;
            let seg = &mut self.segments[last];
            let appended = seg.append(&buf, &headers, taken).and_then(|()| seg.log());
            self.scratch = buf;
            self.durability.note_write(&appended?);
        }
        Ok(first)
    }

    /// Appends record batches exactly as a producer encoded them — a Produce request's records
    /// for this partition — and returns the first offset they were given: [`ProducedBatches::
    /// validate`], then [`FileLog::append_produced`]. If one batch is invalid nothing is written.
    pub fn append_wire(&mut self, batches: &mut [u8], now: Millis) -> Result<Offset, AppendError> {
        let mut headers = ProducedBatches::check(batches)?;
        Ok(self.append_checked(batches, &mut headers, now)?.0)
    }

    /// Appends batches validated beforehand. This is a broker's append, not a re-encoding:
    /// offsets are assigned by rewriting each batch's `baseOffset` in place — it sits before the
    /// CRC'd bytes, so the producer's CRC stays valid — and the bytes go to the segment as they
    /// came, one `write` per segment touched. Segments roll between batches only: a batch is never
    /// split, and only a fresh segment's first batch may overshoot its limits.
    pub fn append_produced(&mut self, produced: &mut ProducedBatches, now: Millis) -> io::Result<Offset> {
        let (bytes, headers) = produced.parts_mut();
        Ok(self.append_checked(bytes, headers, now)?.0)
    }

    /// Keeps every segment that client batches ([`PartitionLog::append_encoded`]) go to as a
    /// hard link in `dir`: the lab's history names those bytes instead of spelling out the
    /// records, so they must outlive the segment. Call once, right after opening.
    pub fn keep_segments_in(&mut self, dir: PathBuf) {
        self.kept_dir = Some(dir);
    }

    fn append_checked(
        &mut self,
        batches: &mut [u8],
        headers: &mut [BatchHeader],
        now: Millis,
    ) -> io::Result<(Offset, Vec<Piece>)> {
        let first = self.log_end_offset_raw();
        let mut pieces = Vec::new();
        let (mut i, mut at) = (0, 0);
        while i < headers.len() {
            if self.should_roll(headers[i].total_len, now) {
                self.roll(now)?;
            }
            self.active_mut_created(now)?;
            let active = &self.active().meta;
            let fresh = active.records == 0;
            let records_room = self.limits.max_records.saturating_sub(active.records);
            let bytes_room = self.limits.max_bytes.saturating_sub(active.len as usize);
            let mut offset = self.log_end_offset_raw();
            let (start, mut len, mut records) = (at, 0, 0);
            let mut j = i;
            while j < headers.len() {
                let h = &mut headers[j];
                let count = h.count as usize;
                let first_in_fresh = fresh && j == i;
                if !first_in_fresh && (len + h.total_len > bytes_room || records + count > records_room) {
                    break;
                }
                h.base_offset = offset;
                batches[at..at + 8].copy_from_slice(&offset.to_be_bytes());
                offset += Offset::from(h.count);
                (len, records, at, j) = (len + h.total_len, records + count, at + h.total_len, j + 1);
            }
            if j == i {
                // The next batch does not fit beside what the segment holds: roll.
                self.roll(now)?;
                continue;
            }
            let last = self.segments.len() - 1;
            let seg = &mut self.segments[last];
            pieces.push(Piece {
                segment: last,
                position: seg.meta.len,
                len: (at - start) as u64,
                records,
            });
            seg.append(&batches[start..at], &headers[i..j], records)?;
            self.durability.note_write(&seg.log()?);
            i = j;
        }
        Ok((first, pieces))
    }

    /// The name of the kept link to segment `index`'s log file, made on first use: a hard link in
    /// the kept-segments directory, so the bytes outlive the segment's own name (retention,
    /// compaction's rename over it, the topic's deletion). A name taken by another file gets a
    /// suffix; one that is already this file (a restart) is reused.
    fn kept_name(&mut self, kept_dir: &Path, index: usize) -> io::Result<String> {
        use std::os::unix::fs::MetadataExt;
        let seg = &self.segments[index];
        if let Some(name) = &seg.kept_as {
            return Ok(name.clone());
        }
        if !kept_dir.exists() {
            std::fs::create_dir_all(kept_dir)?;
            if let Some(parent) = kept_dir.parent() {
                sync_dir(parent)?;
            }
        }
        let source = FileSegment::path(&self.dir, seg.meta.base_offset, "log");
        let this = std::fs::metadata(&source)?;
        let stem = kept_stem(
            &self
                .dir
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default(),
            seg.meta.base_offset,
        );
        for n in 0u32.. {
            let name = if n == 0 {
                format!("{stem}.log")
            } else {
                format!("{stem}.{n}.log")
            };
            let link = kept_dir.join(&name);
            match std::fs::hard_link(&source, &link) {
                Ok(()) => {
                    if self.durability.policy() != crate::FlushPolicy::Never {
                        sync_dir(kept_dir)?;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let there = std::fs::metadata(&link)?;
                    if (there.dev(), there.ino()) != (this.dev(), this.ino()) {
                        continue;
                    }
                }
                Err(e) => return Err(e),
            }
            self.segments[index].kept_as = Some(name.clone());
            return Ok(name);
        }
        Err(io::Error::other("no free name for a kept segment"))
    }

    /// An empty active segment takes its first record now: it is created at this instant and
    /// based at the log end (a truncation may have left it based lower).
    fn active_mut_created(&mut self, now: Millis) -> io::Result<()> {
        let last = self.segments.len() - 1;
        let end = self.log_end_offset_raw();
        let meta = &mut self.segments[last].meta;
        if meta.records > 0 {
            return Ok(());
        }
        meta.created_at = now;
        if meta.base_offset != end {
            let fresh = FileSegment::create(&self.pool, &self.dir, end, now)?;
            let old = std::mem::replace(&mut self.segments[last], fresh);
            old.delete_files()?;
        }
        Ok(())
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

    /// Deletes whole segments that end at or before `offset`, never the active one.
    fn remove_segments_upto(&mut self, offset: Offset) {
        while self.segments.len() > 1 && self.next_offset_of(0) <= offset {
            let seg = self.segments.remove(0);
            if let Err(e) = seg.delete_files() {
                self.fault("delete a segment in", &e);
            }
        }
    }

    fn persist_log_start(&self) {
        if let Err(e) = write_synced(
            &self.dir.join("log-start-offset"),
            self.log_start.to_string().as_bytes(),
        ) {
            self.fault("record the log start in", &e);
        }
    }

    fn try_truncate(&mut self, offset: Offset) -> io::Result<usize> {
        let offset = offset.clamp(self.log_start, self.log_end_offset_raw());
        let before = self.record_count();
        while self.segments.len() > 1 && self.segments[self.segments.len() - 1].meta.base_offset >= offset {
            if let Some(seg) = self.segments.pop() {
                seg.delete_files()?;
            }
        }
        let last = self.segments.len() - 1;
        let seg = &self.segments[last];
        let (base, created_at) = (seg.meta.base_offset, seg.meta.created_at);
        // The batch holding `offset`: cut the file there, then write back its records before it.
        let mut cut: Option<(u64, Vec<KeptRecord>)> = None;
        let mut cursor = seg.cursor_for(offset, READ_CHUNK)?;
        while let Some((pos, b)) = cursor
            .next_batch()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?
        {
            if b.header.last_offset() < offset {
                continue;
            }
            let keep = b
                .records()
                .filter(|r| r.offset < offset)
                .map(|r| KeptRecord::of(&r))
                .collect();
            cut = Some((pos, keep));
            break;
        }
        if let Some((pos, keep)) = cut {
            // The kept part of a straddling batch is written over it first and the file cut
            // after it: a crash in between leaves a valid batch and a tail recovery truncates.
            let mut rewritten = Vec::new();
            let log = seg.log()?;
            if !keep.is_empty() {
                let recs = as_new_records(&keep);
                batch::encode(&mut rewritten, &recs, -1);
                std::os::unix::fs::FileExt::write_all_at(&*log, &rewritten, pos)?;
                log.sync_data()?;
            }
            log.set_len(pos + rewritten.len() as u64)?;
            log.sync_data()?;
            let (mut fresh, _) = FileSegment::recover(&self.pool, &self.dir, base, false)?;
            fresh.meta.created_at = created_at;
            self.durability.note_write(&fresh.log()?);
            self.segments[last] = fresh;
        }
        // Bytes written from here on are new: the recovery point must not vouch for them.
        let point = self.dir.join("recovery-point");
        if read_offset_file(&point).is_some_and(|p| p > offset) {
            write_synced(&point, offset.to_string().as_bytes())?;
        }
        // The log end moves back to `offset` even where no record sat at it (a compacted gap);
        // noted on disk, since no batch says so.
        let meta = &mut self.segments[last].meta;
        meta.next_offset = offset.max(meta.base_offset);
        write_synced(
            &self.dir.join("log-end-offset"),
            meta.next_offset.to_string().as_bytes(),
        )?;
        self.recompute_hidden();
        Ok(before - self.record_count())
    }

    fn try_compact(&mut self, keep: &mut dyn FnMut(RecordRef<'_>) -> bool) -> io::Result<usize> {
        let last = self.segments.len() - 1;
        let mut removed = 0;
        for i in 0..last {
            let seg = &self.segments[i];
            let (base, created_at) = (seg.meta.base_offset, seg.meta.created_at);
            // Read the kept records (owned: the segment is about to be replaced).
            let mut kept: Vec<KeptRecord> = Vec::new();
            let mut total = 0;
            let mut cursor = seg.cursor_for(base, 1 << 20)?;
            while let Some((_, b)) = cursor
                .next_batch()
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?
            {
                for r in b.records() {
                    total += 1;
                    if keep(r) {
                        kept.push(KeptRecord::of(&r));
                    }
                }
            }
            if kept.len() == total {
                continue;
            }
            removed += total - kept.len();
            // The cleaner's rewrite: a new file beside the old, synced, renamed over it.
            let cleaned_dir = self.dir.join(".cleaning");
            std::fs::create_dir_all(&cleaned_dir)?;
            let mut fresh = FileSegment::create(&self.pool, &cleaned_dir, base, created_at)?;
            let mut buf = Vec::new();
            let mut headers = Vec::new();
            let mut start = 0;
            while start < kept.len() {
                let control = kept[start].control;
                let mut end = start;
                let mut size = batch::HEADER_LEN;
                while end < kept.len()
                    && kept[end].control == control
                    && (end == start || size < MAX_BATCH_BYTES)
                {
                    size += kept[end].key.as_ref().map_or(0, Vec::len)
                        + kept[end].value.as_ref().map_or(0, Vec::len)
                        + kept[end].headers.len()
                        + 16;
                    end += 1;
                }
                let recs = as_new_records(&kept[start..end]);
                let at = buf.len();
                batch::encode(&mut buf, &recs, -1);
                headers.push(
                    BatchHeader::parse(&buf[at..])
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?,
                );
                start = end;
            }
            fresh.append(&buf, &headers, kept.len())?;
            // The segment keeps its place in the offset space even where its tail was cleaned.
            fresh.meta.next_offset = self.segments[i].meta.next_offset;
            fresh.log()?.sync_all()?;
            let fresh_meta = fresh.meta.clone();
            fresh.forget_files();
            drop(fresh);
            // What the pool holds of the old segment's files is about to be renamed over.
            self.segments[i].forget_files();
            for ext in ["log", "index", "timeindex"] {
                std::fs::rename(
                    FileSegment::path(&cleaned_dir, base, ext),
                    FileSegment::path(&self.dir, base, ext),
                )?;
            }
            sync_dir(&self.dir)?;
            let reopened = FileSegment::open_trusted(&self.pool, &self.dir, fresh_meta)?;
            self.segments[i] = reopened;
        }
        let _ = std::fs::remove_dir_all(self.dir.join(".cleaning"));
        Ok(removed)
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
    ) -> Result<EncodedAppend, String> {
        // Validated whole when they were built (the type says so): the headers are read once.
        batches.stamp_log_append_time(now);
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

    fn append_whole(&mut self, records: &[NewRecord<'_>], now: Millis) -> Offset {
        match records.first() {
            Some(first) => self.append_whole_based(records, first.timestamp, now),
            None => self.log_end_offset_raw(),
        }
    }

    fn append_whole_based(&mut self, records: &[NewRecord<'_>], base_timestamp: i64, now: Millis) -> Offset {
        if records.is_empty() {
            return self.log_end_offset_raw();
        }
        // One batch, stamped with its log append time as a broker stamps a client's: the same
        // bytes, roll rule and timestamps whether the batch came from a client or a `send` line.
        let mut buf = Vec::new();
        batch::encode_consecutive_based(&mut buf, 0, records, -1, base_timestamp);
        let appended = batch::stamp_log_append_time(&mut buf, now)
            .and_then(|()| BatchHeader::parse(&buf))
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
            .and_then(|h| self.append_checked(&mut buf, &mut [h], now));
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
                match cursor.next_batch() {
                    Ok(Some((_, b))) => {
                        let h = b.header;
                        if h.last_offset() < from {
                            continue;
                        }
                        let full = out.len() > start && out.len() - start + b.bytes().len() > max_bytes;
                        if h.last_offset() >= upper || full {
                            return (out.len() > start).then_some(records);
                        }
                        out.extend_from_slice(b.bytes());
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

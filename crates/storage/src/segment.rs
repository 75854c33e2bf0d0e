//! One segment on disk: `<base offset, 20 digits>.log` with its `.index` and `.timeindex`.

use crate::index::{IndexEntry, SparseIndex, INDEX_INTERVAL_BYTES};
use crate::pool::FilePool;
use offsetlab_engine::clock::Millis;
use offsetlab_engine::record::Offset;
use offsetlab_records::batch::{Batch, BatchError, BatchHeader, HEADER_LEN};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a segment's metadata says without reading its records: the clean-shutdown snapshot keeps
/// this per segment, so a clean start reads no record data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentMeta {
    pub base_offset: Offset,
    /// One past the last offset written to this segment.
    pub next_offset: Offset,
    pub records: usize,
    /// Valid bytes of the `.log` file.
    pub len: u64,
    pub max_timestamp: Option<i64>,
    pub created_at: Millis,
}

impl SegmentMeta {
    /// A segment with nothing in it yet, starting at `base`.
    fn empty(base: Offset, created_at: Millis) -> Self {
        Self {
            base_offset: base,
            next_offset: base,
            records: 0,
            len: 0,
            max_timestamp: None,
            created_at,
        }
    }
}

pub fn file_name(base: Offset, ext: &str) -> String {
    format!("{base:020}.{ext}")
}

/// A batch as stored: its file position, header and bytes ([`BatchCursor::next_stored`]).
pub type Stored<'a> = (u64, BatchHeader, &'a [u8]);

/// Reads batches from a file sequentially, in large chunks, handing out each batch's bytes.
pub struct BatchCursor {
    file: Arc<File>,
    /// The file's valid length: nothing past it is read.
    end: u64,
    buf: Vec<u8>,
    /// File position of `buf[0]`.
    buf_pos: u64,
    /// Index in `buf` of the next batch.
    next: usize,
    chunk: usize,
    /// The records of the last batch handed out, decompressed, when it is stored compressed.
    plain: Vec<u8>,
}

#[derive(Debug, thiserror::Error)]
pub enum CursorError {
    #[error("i/o: {0}")]
    Io(#[from] io::Error),
    #[error("at byte {position}: {error}")]
    Batch { position: u64, error: BatchError },
}

impl BatchCursor {
    pub fn new(file: Arc<File>, end: u64, from: u64, chunk: usize) -> Self {
        Self {
            file,
            end,
            buf: Vec::new(),
            buf_pos: from,
            next: 0,
            chunk: chunk.max(HEADER_LEN),
            plain: Vec::new(),
        }
    }

    fn position(&self) -> u64 {
        self.buf_pos + self.next as u64
    }

    /// Makes sure `n` bytes from the next batch are buffered (fewer only at the end of the file).
    fn fill(&mut self, n: usize) -> io::Result<()> {
        if self.buf.len() - self.next >= n {
            return Ok(());
        }
        // Move what is left to the front, then read a chunk (or the whole batch) after it.
        self.buf.drain(..self.next);
        self.buf_pos += self.next as u64;
        self.next = 0;
        let from = self.buf_pos + self.buf.len() as u64;
        let want = n.max(self.chunk) - self.buf.len().min(n.max(self.chunk));
        let want = want.min(self.end.saturating_sub(from) as usize);
        let old = self.buf.len();
        self.buf.resize(old + want, 0);
        self.file.read_exact_at(&mut self.buf[old..], from)?;
        Ok(())
    }

    /// The next batch: its file position and validated bytes, `None` at the end of the valid
    /// bytes, or the reason the bytes there are not a valid batch.
    pub fn next_batch(&mut self) -> Result<Option<(u64, Batch<'_>)>, CursorError> {
        let position = self.position();
        if position >= self.end {
            return Ok(None);
        }
        self.fill(HEADER_LEN)?;
        let header = BatchHeader::parse(&self.buf[self.next..])
            .map_err(|error| CursorError::Batch { position, error })?;
        self.fits(position, header.total_len)?;
        self.fill(header.total_len)?;
        let start = self.next;
        self.next += header.total_len;
        // The header read once: the batch is validated against it. A batch its producer
        // compressed is stored so; its records are read from their decompressed copy.
        let batch = Batch::parse_any(
            header,
            &self.buf[start..start + header.total_len],
            &mut self.plain,
            |_, _, _| Ok(()),
        )
        .map_err(|error| CursorError::Batch { position, error })?;
        Ok(Some((position, batch)))
    }

    /// The next batch as stored, for a reader that hands out bytes (a fetch) rather than records:
    /// an uncompressed batch validated whole as [`BatchCursor::next_batch`] validates it, a
    /// compressed one by its header and CRC only — its records are not inflated (up to 64 MiB a
    /// batch) for a reader that never looks at them.
    pub fn next_stored(&mut self) -> Result<Option<Stored<'_>>, CursorError> {
        let position = self.position();
        if position >= self.end {
            return Ok(None);
        }
        self.fill(HEADER_LEN)?;
        let header = BatchHeader::parse(&self.buf[self.next..])
            .map_err(|error| CursorError::Batch { position, error })?;
        if !header.is_compressed() {
            return Ok(self.next_batch()?.map(|(p, b)| (p, b.header, b.bytes())));
        }
        self.fits(position, header.total_len)?;
        self.fill(header.total_len)?;
        let start = self.next;
        self.next += header.total_len;
        let bytes = offsetlab_records::batch::checked_bytes(&header, &self.buf[start..])
            .map_err(|error| CursorError::Batch { position, error })?;
        Ok(Some((position, header, bytes)))
    }

    /// `len` bytes from `position` lie before the end of what the cursor may read.
    fn fits(&self, position: u64, len: usize) -> Result<(), CursorError> {
        if position + len as u64 > self.end {
            return Err(CursorError::Batch {
                position,
                error: BatchError::Truncated {
                    needed: len,
                    available: (self.end - position) as usize,
                },
            });
        }
        Ok(())
    }

    /// The next batch's header only, skipping its records (for a trusted prefix of the log).
    pub fn next_header(&mut self) -> Result<Option<(u64, BatchHeader)>, CursorError> {
        let position = self.position();
        if position >= self.end {
            return Ok(None);
        }
        let mut head = [0u8; HEADER_LEN];
        self.fits(position, HEADER_LEN)?;
        self.file.read_exact_at(&mut head, position)?;
        let header = BatchHeader::parse(&head).map_err(|error| CursorError::Batch { position, error })?;
        self.fits(position, header.total_len)?;
        self.buf.clear();
        self.next = 0;
        self.buf_pos = position + header.total_len as u64;
        Ok(Some((position, header)))
    }
}

/// What a scan of a segment's bytes found: how much of it is valid, and its metadata and index.
#[derive(Debug)]
pub struct Scan {
    pub meta: SegmentMeta,
    pub index: SparseIndex,
    /// Why the scan stopped before the end of the file, if it did.
    pub stopped: Option<String>,
    /// Batches scanned.
    pub batches: u64,
    /// Where the bytes after the stop were kept when the segment was cut there.
    pub aside: Option<PathBuf>,
}

/// A segment's files are named, not held: each use asks the pool for an open handle
/// ([`FilePool`]), so a log of many segments holds few descriptors.
pub struct FileSegment {
    pub meta: SegmentMeta,
    pub index: SparseIndex,
    pool: Arc<FilePool>,
    /// Log bytes written since the last index entry.
    since_index: u64,
    dir: PathBuf,
    /// The name of a hard link to this segment's log file among the store's kept segments, once
    /// client batches were appended to it ([`crate::FileLog`]'s `append_encoded`).
    pub kept_as: Option<String>,
}

impl FileSegment {
    pub fn path(dir: &Path, base: Offset, ext: &str) -> PathBuf {
        dir.join(file_name(base, ext))
    }

    /// The segment's `.log` file, open.
    pub fn log(&self) -> io::Result<Arc<File>> {
        self.pool
            .get(&Self::path(&self.dir, self.meta.base_offset, "log"), false)
    }

    /// Its `.index` and `.timeindex` files, open (created if missing).
    fn index_files(&self) -> io::Result<(Arc<File>, Arc<File>)> {
        let base = self.meta.base_offset;
        Ok((
            self.pool.get(&Self::path(&self.dir, base, "index"), true)?,
            self.pool.get(&Self::path(&self.dir, base, "timeindex"), true)?,
        ))
    }

    /// A new, empty segment. Files left at its name (a stray segment of an unacknowledged
    /// change) are unlinked, not emptied: their inode may be a kept segment's too.
    pub fn create(pool: &Arc<FilePool>, dir: &Path, base: Offset, created_at: Millis) -> io::Result<Self> {
        for ext in ["log", "index", "timeindex"] {
            let path = Self::path(dir, base, ext);
            pool.forget(&path);
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        for ext in ["log", "index", "timeindex"] {
            pool.get(&Self::path(dir, base, ext), true)?.set_len(0)?;
        }
        Ok(Self {
            meta: SegmentMeta::empty(base, created_at),
            index: SparseIndex::default(),
            pool: Arc::clone(pool),
            since_index: 0,
            kept_as: None,
            dir: dir.to_path_buf(),
        })
    }

    /// Opens a segment whose metadata is known (a clean start): reads the index files, and
    /// rebuilds them from batch headers only if they are missing or make no sense.
    pub fn open_trusted(pool: &Arc<FilePool>, dir: &Path, meta: SegmentMeta) -> io::Result<Self> {
        let log_path = Self::path(dir, meta.base_offset, "log");
        pool.forget(&log_path);
        let log = pool.get(&log_path, false)?;
        let file_len = log.metadata()?.len();
        if file_len < meta.len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "segment shorter than its snapshot",
            ));
        }
        if file_len > meta.len {
            log.set_len(meta.len)?;
        }
        let loaded = SparseIndex::load(
            &Self::path(dir, meta.base_offset, "index"),
            &Self::path(dir, meta.base_offset, "timeindex"),
            meta.len,
        );
        let mut seg = Self {
            since_index: 0,
            kept_as: None,
            index: loaded.clone().unwrap_or_default(),
            meta,
            pool: Arc::clone(pool),
            dir: dir.to_path_buf(),
        };
        if loaded.is_none() {
            let scan = scan(
                log,
                seg.meta.base_offset,
                seg.meta.len,
                seg.meta.created_at,
                false,
            )
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
            if let Some(why) = scan.stopped {
                // The bytes the snapshot vouches for are not all batches: not a clean segment.
                return Err(io::Error::new(io::ErrorKind::InvalidData, why));
            }
            seg.index = scan.index;
            seg.rewrite_index()?;
        }
        seg.since_index = seg.meta.len - seg.index.last().map_or(0, |e| u64::from(e.position));
        Ok(seg)
    }

    /// Opens a segment after an unclean stop: scans it (validating every batch when `validate`,
    /// headers only otherwise), truncates a torn or corrupt tail, and rebuilds the indexes.
    pub fn recover(
        pool: &Arc<FilePool>,
        dir: &Path,
        base: Offset,
        validate: bool,
    ) -> io::Result<(Self, Scan)> {
        let log_path = Self::path(dir, base, "log");
        pool.forget(&log_path);
        let log = pool.get(&log_path, true)?;
        let len = log.metadata()?.len();
        let s = scan(Arc::clone(&log), base, len, 0, validate)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        let mut s = s;
        if s.meta.len < len {
            // Kept aside first: a recovery never discards what it cuts.
            s.aside = Some(crate::aside::keep_tail(&log, dir, base, s.meta.len, len)?);
            log.set_len(s.meta.len)?;
            log.sync_all()?;
        }
        let mut seg = Self {
            meta: s.meta.clone(),
            index: s.index.clone(),
            pool: Arc::clone(pool),
            since_index: 0,
            kept_as: None,
            dir: dir.to_path_buf(),
        };
        seg.rewrite_index()?;
        seg.since_index = seg.meta.len - seg.index.last().map_or(0, |e| u64::from(e.position));
        Ok((seg, s))
    }

    fn rewrite_index(&mut self) -> io::Result<()> {
        self.index.write_all(
            &Self::path(&self.dir, self.meta.base_offset, "index"),
            &Self::path(&self.dir, self.meta.base_offset, "timeindex"),
        )
    }

    /// Appends encoded batches (`bytes`, whose headers are `headers`, back to back). If a write
    /// fails, the segment's files are cut back to what its metadata describes and the metadata
    /// is left as it was: the append did not happen.
    pub fn append(&mut self, bytes: &[u8], headers: &[BatchHeader], records: usize) -> io::Result<()> {
        let log = self.log()?;
        let (len, entries) = (self.meta.len, self.index.len());
        let undo = |seg: &mut Self, log: &File, e: io::Error| -> io::Error {
            let _ = log.set_len(len);
            seg.index.truncate(entries);
            if let Ok((index, time)) = seg.index_files() {
                let _ = index.set_len((entries * 8) as u64);
                let _ = time.set_len((entries * 12) as u64);
            }
            e
        };
        // The bytes first: if the write fails, the segment's metadata still describes the file.
        if let Err(e) = log.write_all_at(bytes, self.meta.len) {
            return Err(undo(self, &log, e));
        }
        let mut meta = self.meta.clone();
        let mut since_index = self.since_index;
        let mut pos = meta.len;
        for h in headers {
            if meta.len == 0 && pos == 0 || since_index >= INDEX_INTERVAL_BYTES {
                let e = IndexEntry {
                    relative_offset: (h.base_offset - meta.base_offset) as u32,
                    position: pos as u32,
                    max_timestamp_before: meta.max_timestamp.unwrap_or(i64::MIN),
                };
                let written = self
                    .index_files()
                    .and_then(|(index, time)| SparseIndex::write_entry(&index, &time, self.index.len(), &e));
                if let Err(err) = written {
                    return Err(undo(self, &log, err));
                }
                self.index.push(e);
                since_index = 0;
            }
            since_index += h.total_len as u64;
            pos += h.total_len as u64;
            meta.max_timestamp = Some(
                meta.max_timestamp
                    .map_or(h.max_timestamp, |m| m.max(h.max_timestamp)),
            );
            meta.next_offset = h.last_offset() + 1;
        }
        meta.len += bytes.len() as u64;
        meta.records += records;
        self.meta = meta;
        self.since_index = since_index;
        Ok(())
    }

    /// The records from byte `from` (where a batch starts) to the end: what a cut there
    /// takes out. Headers only.
    pub fn records_from(&self, from: u64) -> io::Result<usize> {
        let s = scan_from(self.log()?, self.meta.base_offset, from, self.meta.len, 0, false)?;
        Ok(s.meta.records)
    }

    /// The metadata and index brought to the `.log` file after it was cut at or after byte
    /// `from` — a position the index notes (or 0), where a batch starts — and perhaps written to
    /// there (what a truncation keeps of the batch it cut through). `records_from` is
    /// [`FileSegment::records_from`]`(from)` measured before the cut. Only the bytes from `from`
    /// on are read: a truncation costs what it cuts, not the segment — a full rescan of a
    /// 100 MB active segment took half a second of every undo.
    pub fn refresh_after_cut(&mut self, from: u64, records_from: usize) -> io::Result<()> {
        let log = self.log()?;
        let len = log.metadata()?.len();
        let base = self.meta.base_offset;
        let tail = scan_from(Arc::clone(&log), base, from, len, self.meta.created_at, false)?;
        if let Some(why) = tail.stopped {
            return Err(io::Error::new(io::ErrorKind::InvalidData, why));
        }
        let from32 = u32::try_from(from)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a cut past 4 GiB"))?;
        let (mut keep, at_from) = self.index.before(from32);
        // The records before `from`: their largest timestamp is what the entry at `from` says.
        let before_max = at_from.map(|e| e.max_timestamp_before).filter(|&t| t != i64::MIN);
        if from > 0 && tail.batches > 0 && at_from.is_some() {
            keep += 1; // its batch is still there (rewritten, it starts at the same offset)
        }
        self.index.truncate(keep);
        for mut e in tail.index.entries_iter() {
            e.max_timestamp_before = e.max_timestamp_before.max(before_max.unwrap_or(i64::MIN));
            self.index.push(e);
        }
        let old_records = self.meta.records;
        self.meta.records = old_records - records_from + tail.meta.records;
        self.meta.len = len;
        self.meta.max_timestamp = match (before_max, tail.meta.max_timestamp) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.meta.next_offset = if tail.batches > 0 {
            tail.meta.next_offset
        } else {
            at_from.map_or(base, |e| base + i64::from(e.relative_offset))
        };
        self.rewrite_index()?;
        self.since_index = len - self.index.last().map_or(0, |e| u64::from(e.position));
        Ok(())
    }

    /// A cursor over the batches from the one that holds `offset` (or the first after it).
    pub fn cursor_for(&self, offset: Offset, chunk: usize) -> io::Result<BatchCursor> {
        let rel = (offset - self.meta.base_offset).clamp(0, i64::from(u32::MAX)) as u32;
        Ok(BatchCursor::new(
            self.log()?,
            self.meta.len,
            u64::from(self.index.position_for(rel)),
            chunk,
        ))
    }

    /// A cursor from the segment's first batch (when the index cannot be trusted).
    pub fn cursor_from_start(&self, chunk: usize) -> io::Result<BatchCursor> {
        Ok(BatchCursor::new(self.log()?, self.meta.len, 0, chunk))
    }

    /// A cursor positioned for the first record with timestamp ≥ `timestamp`.
    pub fn cursor_for_timestamp(&self, timestamp: i64, chunk: usize) -> io::Result<BatchCursor> {
        Ok(BatchCursor::new(
            self.log()?,
            self.meta.len,
            u64::from(self.index.position_for_timestamp(timestamp)),
            chunk,
        ))
    }

    /// Forgets the pool's handles to the segment's files (before they are renamed over).
    pub fn forget_files(&self) {
        for ext in ["log", "index", "timeindex"] {
            self.pool
                .forget(&Self::path(&self.dir, self.meta.base_offset, ext));
        }
    }

    pub fn delete_files(self) -> io::Result<()> {
        self.forget_files();
        let (dir, base) = (self.dir.clone(), self.meta.base_offset);
        for ext in ["log", "index", "timeindex"] {
            match std::fs::remove_file(Self::path(&dir, base, ext)) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }
}

/// Walks a segment's batches from the start, checking each begins after the previous one and
/// (with `validate`) its CRC and records; stops at the first bad byte. `created_at` is used for
/// an empty segment; otherwise it is the first batch's base timestamp.
pub fn scan(
    log: Arc<File>,
    base: Offset,
    len: u64,
    created_at: Millis,
    validate: bool,
) -> Result<Scan, io::Error> {
    scan_from(log, base, 0, len, created_at, validate)
}

/// [`scan`] from byte `from` (where a batch starts) on: the metadata of those batches alone
/// (`records`, `max_timestamp`, `len` counted from the file's start), and index entries for
/// them after the one at `from` (whose `max_timestamp_before` counts only them).
pub fn scan_from(
    log: Arc<File>,
    base: Offset,
    from: u64,
    len: u64,
    created_at: Millis,
    validate: bool,
) -> Result<Scan, io::Error> {
    let mut cursor = BatchCursor::new(log, len, from, 1 << 20);
    let mut meta = SegmentMeta::empty(base, created_at);
    let mut index = SparseIndex::default();
    let mut since = 0u64;
    let mut stopped = None;
    let mut batches = 0u64;
    loop {
        let step = if validate {
            cursor.next_batch().map(|b| b.map(|(p, b)| (p, b.header)))
        } else {
            cursor.next_header()
        };
        let (pos, h) = match step {
            Ok(Some(x)) => x,
            Ok(None) => break,
            Err(CursorError::Io(e)) => return Err(e),
            Err(e) => {
                stopped = Some(e.to_string());
                break;
            }
        };
        if h.base_offset < meta.next_offset || h.count < 0 || h.last_offset() - base > i64::from(u32::MAX) {
            stopped = Some(format!(
                "at byte {pos}: batch offset {} goes backwards (expected ≥ {})",
                h.base_offset, meta.next_offset
            ));
            break;
        }
        if pos == 0 {
            // When the segment took its first batch: a batch stamped with its log append time
            // says so in `maxTimestamp`; the producer's own timestamps are another clock.
            meta.created_at = if h.is_log_append_time() {
                h.max_timestamp
            } else {
                h.first_timestamp()
            };
        }
        if pos == 0 || since >= INDEX_INTERVAL_BYTES {
            index.push(IndexEntry {
                relative_offset: (h.base_offset - base) as u32,
                position: pos as u32,
                max_timestamp_before: meta.max_timestamp.unwrap_or(i64::MIN),
            });
            since = 0;
        }
        since += h.total_len as u64;
        meta.records += h.count as usize;
        meta.next_offset = h.last_offset() + 1;
        meta.max_timestamp = Some(
            meta.max_timestamp
                .map_or(h.max_timestamp, |m| m.max(h.max_timestamp)),
        );
        meta.len = pos + h.total_len as u64;
        batches += 1;
    }
    Ok(Scan {
        meta,
        index,
        stopped,
        batches,
        aside: None,
    })
}

//! What a kept segment leaves once retention (or compaction, or a topic's deletion) took the
//! log's own file: its *shape*. A durable lab keeps every segment a client's batches went to as a
//! hard link, because the history's `send … stored=FILE:AT+LEN` lines replay from those bytes;
//! kept whole, they held the disk retention was meant to free. Once the log no longer holds the
//! file (its link count is one: only the kept link is left), the link is replaced by the shape:
//! the same batches, byte for byte, but for every record's value set to zeros (the CRC
//! recomputed), compressed with zstd in frames of at most [`FRAME_BYTES`] of the original file.
//!
//! A replay reads the shape exactly where it read the file — the same positions, the same batch
//! sizes, offsets, timestamps, keys and headers — so the records it appends take the same offsets
//! and bytes in the same segments, retention deletes the same segments again, consumers apply the
//! same keys (sink rows, distinct keys) and every figure comes out the same. Only the values of
//! records retention deleted are gone, as they are from the log. Compressed and control batches
//! are kept as they are (zeroing inside a compressed batch would change its size).
//!
//! A shape costs what the records' keys, headers and framing compress to. Each frame is kept in
//! columns ([`columns`]: offset deltas, timestamp deltas, keys, value lengths, each run on its
//! own) — well under a byte a record for a client's keyless records, where the same bytes one
//! record after another cost about four — so what retention deletes mostly leaves the disk; that
//! the history still names every record ever produced is the journal's to bound.

mod columns;

use offsetlab_records::batch::{Batch, BatchHeader, ATTR_COMPRESSION, ATTR_CONTROL, CRC_START, LOG_OVERHEAD};
use offsetlab_records::compression::{compress, decompress_bounded, Compression};
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The suffix of a kept segment's shape: `<kept name>.shape`.
pub const SHAPE_SUFFIX: &str = ".shape";

/// How much of the original file one compressed frame covers (a reader decompresses one frame
/// at a time). Shaping holds a few buffers of a frame's size (the batches, their columns, the
/// check that they read back): a mebibyte keeps that small beside a lab serving clients, where
/// an allocator's arenas keep what was once handed out. (Shapes written before took 8 MiB
/// frames; a frame's header says its length, so they read as before.)
pub const FRAME_BYTES: usize = 1 << 20;

/// A frame's header: the original position (8 bytes), its original length and its compressed
/// length (4 each).
const FRAME_HEADER: usize = 16;

/// Set in a frame's original length: the frame was compressed in columns ([`columns`]).
/// (Shapes written before columns never set it: their frames covered at most 8 MiB.)
const IN_COLUMNS: u32 = 1 << 31;

/// The shape's path of a kept file.
pub fn shape_path(kept: &Path) -> PathBuf {
    let mut name = kept.as_os_str().to_owned();
    name.push(SHAPE_SUFFIX);
    PathBuf::from(name)
}

/// Replaces every file in `kept_dir` the logs no longer link (a link count of one) by its shape;
/// the bytes freed. A file that cannot be read as batches is left as it is.
pub fn shape_unlinked(kept_dir: &Path) -> io::Result<u64> {
    let mut freed = 0;
    let entries = match std::fs::read_dir(kept_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut shaped = false;
    for e in entries.filter_map(Result::ok) {
        let path = e.path();
        let is_shape = path.to_string_lossy().ends_with(SHAPE_SUFFIX);
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if is_shape || !meta.is_file() || meta.nlink() != 1 {
            continue;
        }
        match keep_shape(&path) {
            Ok(shape_len) => {
                freed += meta.len().saturating_sub(shape_len);
                shaped = true;
            }
            Err(e) => {
                tracing::warn!(file = %path.display(), "a kept segment retention deleted stays whole: {e}")
            }
        }
    }
    if shaped {
        File::open(kept_dir)?.sync_all()?;
    }
    Ok(freed)
}

/// Writes `kept`'s shape beside it (synced), then removes `kept`; the shape's length.
pub fn keep_shape(kept: &Path) -> io::Result<u64> {
    let file = File::open(kept)?;
    let len = file.metadata()?.len();
    let shape = shape_path(kept);
    let tmp = shape.with_extension("tmp");
    let out = File::create(&tmp)?;
    let mut written = 0u64;
    let mut at = 0u64;
    while at < len {
        let mut frame = read_batches(&file, at, len)?;
        if frame.is_empty() {
            // A torn end that holds no whole batch: kept as it is.
            frame = vec![0; usize::try_from((len - at).min(FRAME_BYTES as u64)).unwrap_or(FRAME_BYTES)];
            file.read_exact_at(&mut frame, at)?;
        } else {
            zero_values(&mut frame);
        }
        // In columns when they read back as the frame (they always should: checked, since a
        // shape is the only copy of these bytes the history has).
        let split = columns::split(&frame);
        let fits = frame.len() < IN_COLUMNS as usize;
        let (packed, flag) = if fits && columns::join(&split, frame.len()).as_deref() == Some(&frame[..]) {
            (compress(&split, Compression::Zstd), IN_COLUMNS)
        } else {
            (compress(&frame, Compression::Zstd), 0)
        };
        let mut header = [0u8; FRAME_HEADER];
        header[..8].copy_from_slice(&at.to_be_bytes());
        header[8..12].copy_from_slice(&(frame.len() as u32 | flag).to_be_bytes());
        header[12..].copy_from_slice(&(packed.len() as u32).to_be_bytes());
        out.write_all_at(&header, written)?;
        out.write_all_at(&packed, written + FRAME_HEADER as u64)?;
        written += (FRAME_HEADER + packed.len()) as u64;
        at += frame.len() as u64;
    }
    out.sync_all()?;
    std::fs::rename(&tmp, &shape)?;
    std::fs::remove_file(kept)?;
    Ok(written)
}

/// Whole batches of `file` from `at`, up to about [`FRAME_BYTES`] (at least one).
fn read_batches(file: &File, at: u64, len: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut pos = at;
    while pos + LOG_OVERHEAD as u64 <= len && (out.is_empty() || out.len() < FRAME_BYTES) {
        let mut head = [0u8; LOG_OVERHEAD];
        file.read_exact_at(&mut head, pos)?;
        let body = i32::from_be_bytes([head[8], head[9], head[10], head[11]]);
        let Some(total) = usize::try_from(body).ok().map(|b| b + LOG_OVERHEAD) else {
            break;
        };
        if pos + total as u64 > len || (!out.is_empty() && out.len() + total > FRAME_BYTES) {
            break;
        }
        let start = out.len();
        out.resize(start + total, 0);
        file.read_exact_at(&mut out[start..], pos)?;
        pos += total as u64;
    }
    Ok(out)
}

/// Every value of every plain (uncompressed, non-control) batch in `bytes` set to zeros, and
/// the batch's CRC written again. A batch that does not parse is left as it is.
fn zero_values(bytes: &mut [u8]) {
    let mut pos = 0;
    while let Ok(header) = BatchHeader::parse(&bytes[pos..]) {
        let end = pos + header.total_len;
        if end > bytes.len() {
            return;
        }
        let plain = header.attributes & (ATTR_COMPRESSION | ATTR_CONTROL) == 0;
        let mut values = Vec::new();
        if plain {
            let batch = &bytes[pos..end];
            let base = batch.as_ptr() as usize;
            let parsed = Batch::parse_visiting(batch, |_, value, _| {
                if let Some(v) = value {
                    values.push((v.as_ptr() as usize - base, v.len()));
                }
                Ok(())
            });
            if parsed.is_err() {
                values.clear();
            }
        }
        if !values.is_empty() {
            for (at, n) in values {
                bytes[pos + at..pos + at + n].fill(0);
            }
            let crc = crc32c::crc32c(&bytes[pos + CRC_START..end]);
            bytes[pos + CRC_START - 4..pos + CRC_START].copy_from_slice(&crc.to_be_bytes());
        }
        pos = end;
    }
}

/// Bytes `at..at + len` of the file whose shape is at `shape`, as the shape keeps them.
pub fn read_shape(shape: &Path, at: u64, len: u64) -> io::Result<Vec<u8>> {
    let file = File::open(shape)?;
    let size = file.metadata()?.len();
    let end = at
        .checked_add(len)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "range past the end"))?;
    let mut out = Vec::with_capacity(usize::try_from(len).unwrap_or(0).min(1 << 30));
    let mut pos = 0u64;
    while pos + (FRAME_HEADER as u64) <= size && (out.len() as u64) < len {
        let mut header = [0u8; FRAME_HEADER];
        file.read_exact_at(&mut header, pos)?;
        let from = u64::from_be_bytes(header[..8].try_into().unwrap_or_default());
        let original = u32::from_be_bytes(header[8..12].try_into().unwrap_or_default());
        let in_columns = original & IN_COLUMNS != 0;
        let original = u64::from(original & !IN_COLUMNS);
        let packed = u32::from_be_bytes(header[12..].try_into().unwrap_or_default()) as usize;
        let next = pos + (FRAME_HEADER + packed) as u64;
        if from + original > at && from < end {
            let mut buf = vec![0u8; packed];
            file.read_exact_at(&mut buf, pos + FRAME_HEADER as u64)?;
            let damaged = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
            // Columns take a few bytes more than the frame: a length each, a record's headers'.
            let bound = FRAME_BYTES.max(original as usize).saturating_mul(2);
            let unpacked =
                decompress_bounded(&buf, Compression::Zstd, bound).map_err(|e| damaged(e.to_string()))?;
            let frame = if in_columns {
                columns::join(&unpacked, original as usize)
                    .ok_or_else(|| damaged("a frame whose columns do not read back".into()))?
            } else {
                unpacked
            };
            if frame.len() as u64 != original {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "a frame of the wrong length",
                ));
            }
            let lo = at.max(from) - from;
            let hi = end.min(from + original) - from;
            out.extend_from_slice(&frame[lo as usize..hi as usize]);
        }
        pos = next;
    }
    if out.len() as u64 != len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the shape does not cover the range",
        ));
    }
    Ok(out)
}

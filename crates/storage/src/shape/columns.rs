//! A shape's frame in columns: the same bytes, laid out so that zstd finds what repeats.
//!
//! Once values are zeroed, what is left of a record that differs from its neighbour is its
//! offset delta (one more each time) and its timestamp delta; written record after record, zstd
//! pays two or three bytes a record for them — a few megabytes a minute for a client at full
//! speed. In columns — every record's offset delta *less its index* (zeros), then every
//! timestamp delta, every key, every value length — they compress to a fraction of a byte.
//!
//! The layout is a transformation, not a re-encoding: each varint is copied as it came (or,
//! for the record length and the offset delta, rebuilt and checked to be what came), so
//! [`join`] gives back the frame byte for byte. A batch that cannot be split exactly — compressed,
//! control, a non-canonical varint, a value that is not zeros, a torn end — goes whole into the
//! raw column; the caller checks the round trip before it keeps a frame in columns.

use offsetlab_records::batch::{ATTR_COMPRESSION, ATTR_CONTROL, HEADER_LEN, LOG_OVERHEAD};
use offsetlab_records::varint::{get_varint, put_varint};

/// The columns, in the order they are written.
#[derive(Default)]
struct Columns {
    /// Per batch: 0 raw, 1 in columns.
    kinds: Vec<u8>,
    /// Raw batches (and a torn end): a 4-byte length, then the bytes.
    raw: Vec<u8>,
    /// Each batch's header, `HEADER_LEN` bytes as they came (its CRC included).
    headers: Vec<u8>,
    attributes: Vec<u8>,
    /// Timestamp deltas, as they came.
    timestamps: Vec<u8>,
    /// Offset delta less the record's index, as a varint: zeros.
    offsets: Vec<u8>,
    /// Key length as it came, then the key.
    keys: Vec<u8>,
    /// Value length as it came (the value is zeros: not kept).
    values: Vec<u8>,
    /// Each record's headers: their length as a varint, then the bytes as they came.
    headers_of_records: Vec<u8>,
}

impl Columns {
    fn all(&mut self) -> [&mut Vec<u8>; 9] {
        [
            &mut self.kinds,
            &mut self.raw,
            &mut self.headers,
            &mut self.attributes,
            &mut self.timestamps,
            &mut self.offsets,
            &mut self.keys,
            &mut self.values,
            &mut self.headers_of_records,
        ]
    }
}

/// The raw bytes of the varint at the front of `buf` (at most ten).
fn raw_varint(buf: &[u8]) -> Option<&[u8]> {
    let n = buf.iter().take(10).position(|b| b & 0x80 == 0)? + 1;
    Some(&buf[..n])
}

/// A varint that must be written the way [`put_varint`] writes it.
fn canonical_varint(buf: &[u8]) -> Option<(i32, usize)> {
    let (v, n) = get_varint(buf)?;
    let mut again = Vec::with_capacity(5);
    put_varint(&mut again, v);
    (again[..] == buf[..n]).then_some((v, n))
}

/// `frame` (whole batches, values zeroed, perhaps a torn end) in columns.
pub(crate) fn split(frame: &[u8]) -> Vec<u8> {
    let mut c = Columns::default();
    let mut pos = 0;
    while pos < frame.len() {
        let rest = &frame[pos..];
        let whole = rest
            .get(8..12)
            .and_then(|b| usize::try_from(i32::from_be_bytes([b[0], b[1], b[2], b[3]])).ok())
            .map(|body| body + LOG_OVERHEAD)
            .filter(|&n| n >= HEADER_LEN && n <= rest.len());
        let Some(len) = whole else {
            // A torn end: kept as it is.
            raw(&mut c, rest);
            break;
        };
        let batch = &rest[..len];
        if !in_columns(&mut c, batch) {
            raw(&mut c, batch);
        }
        pos += len;
    }
    let mut out = Vec::new();
    for column in c.all() {
        out.extend_from_slice(&(column.len() as u32).to_be_bytes());
        out.extend_from_slice(column);
    }
    out
}

fn raw(c: &mut Columns, bytes: &[u8]) {
    c.kinds.push(0);
    c.raw.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    c.raw.extend_from_slice(bytes);
}

/// Writes `batch` into the columns, or nothing and `false` when it cannot be split exactly.
fn in_columns(c: &mut Columns, batch: &[u8]) -> bool {
    let attributes = i16::from_be_bytes([batch[21], batch[22]]);
    if batch[16] != 2 || attributes & (ATTR_COMPRESSION | ATTR_CONTROL) != 0 {
        return false;
    }
    let Ok(count) = usize::try_from(i32::from_be_bytes([batch[57], batch[58], batch[59], batch[60]])) else {
        return false;
    };
    // Records go to scratch columns first: a batch that fails half-way leaves nothing behind.
    let mut r = Columns::default();
    let mut pos = HEADER_LEN;
    for index in 0..count {
        let Some(end) = record_in_columns(&mut r, batch, &mut pos, index) else {
            return false;
        };
        pos = end;
    }
    if pos != batch.len() {
        return false;
    }
    c.kinds.push(1);
    c.headers.extend_from_slice(&batch[..HEADER_LEN]);
    c.attributes.append(&mut r.attributes);
    c.timestamps.append(&mut r.timestamps);
    c.offsets.append(&mut r.offsets);
    c.keys.append(&mut r.keys);
    c.values.append(&mut r.values);
    c.headers_of_records.append(&mut r.headers_of_records);
    true
}

/// One record at `*pos` into the columns; where it ends.
fn record_in_columns(r: &mut Columns, batch: &[u8], pos: &mut usize, index: usize) -> Option<usize> {
    let (len, n) = canonical_varint(batch.get(*pos..)?)?;
    let start = *pos + n;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    let rec = batch.get(start..end)?;
    let mut at = 0;
    r.attributes.push(*rec.first()?);
    at += 1;
    let ts = raw_varint(rec.get(at..)?)?;
    r.timestamps.extend_from_slice(ts);
    at += ts.len();
    let (delta, n) = canonical_varint(rec.get(at..)?)?;
    put_varint(&mut r.offsets, delta.checked_sub(i32::try_from(index).ok()?)?);
    at += n;
    let key_len = raw_varint(rec.get(at..)?)?;
    let (k, _) = get_varint(key_len)?;
    r.keys.extend_from_slice(key_len);
    at += key_len.len();
    if k >= 0 {
        let key = rec.get(at..at + usize::try_from(k).ok()?)?;
        r.keys.extend_from_slice(key);
        at += key.len();
    }
    let value_len = raw_varint(rec.get(at..)?)?;
    let (v, _) = get_varint(value_len)?;
    r.values.extend_from_slice(value_len);
    at += value_len.len();
    if v >= 0 {
        let value = rec.get(at..at + usize::try_from(v).ok()?)?;
        if value.iter().any(|&b| b != 0) {
            return None;
        }
        at += value.len();
    }
    let headers = &rec[at..];
    put_varint(&mut r.headers_of_records, i32::try_from(headers.len()).ok()?);
    r.headers_of_records.extend_from_slice(headers);
    Some(end)
}

/// A reader over one column.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn varint_raw(&mut self) -> Option<&'a [u8]> {
        let n = raw_varint(self.0)?.len();
        self.take(n)
    }

    fn u32(&mut self) -> Option<usize> {
        let b = self.take(4)?;
        usize::try_from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])).ok()
    }
}

/// The frame [`split`] put in columns, `len` bytes long; `None` when the columns do not read
/// back as one (a damaged shape).
pub(crate) fn join(columns: &[u8], len: usize) -> Option<Vec<u8>> {
    let mut all = Cursor(columns);
    let mut column = || {
        let n = all.u32()?;
        all.take(n).map(Cursor)
    };
    let (mut kinds, mut raw, mut headers) = (column()?, column()?, column()?);
    let (mut attributes, mut timestamps, mut offsets) = (column()?, column()?, column()?);
    let (mut keys, mut values, mut headers_of_records) = (column()?, column()?, column()?);
    // `len` comes from the shape's file: reserved only up to a frame's size.
    let mut out = Vec::with_capacity(len.min(super::FRAME_BYTES));
    let mut record = Vec::new();
    while let Some(kind) = kinds.take(1) {
        if kind[0] == 0 {
            let n = raw.u32()?;
            out.extend_from_slice(raw.take(n)?);
            continue;
        }
        let header = headers.take(HEADER_LEN)?;
        let count = usize::try_from(i32::from_be_bytes([
            header[57], header[58], header[59], header[60],
        ]))
        .ok()?;
        out.extend_from_slice(header);
        for index in 0..count {
            record.clear();
            record.extend_from_slice(attributes.take(1)?);
            record.extend_from_slice(timestamps.varint_raw()?);
            let (less_index, _) = get_varint(offsets.varint_raw()?)?;
            put_varint(&mut record, less_index.checked_add(i32::try_from(index).ok()?)?);
            let key_len = keys.varint_raw()?;
            record.extend_from_slice(key_len);
            if let Ok(k) = usize::try_from(get_varint(key_len)?.0) {
                record.extend_from_slice(keys.take(k)?);
            }
            let value_len = values.varint_raw()?;
            record.extend_from_slice(value_len);
            if let Ok(v) = usize::try_from(get_varint(value_len)?.0) {
                // Zeros no longer than what is left of the frame (a damaged length is refused
                // before anything is allocated for it).
                if v > len.saturating_sub(out.len() + record.len()) {
                    return None;
                }
                record.resize(record.len() + v, 0);
            }
            let (h, _) = get_varint(headers_of_records.varint_raw()?)?;
            record.extend_from_slice(headers_of_records.take(usize::try_from(h).ok()?)?);
            put_varint(&mut out, i32::try_from(record.len()).ok()?);
            out.extend_from_slice(&record);
            if out.len() > len {
                return None;
            }
        }
    }
    (out.len() == len).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_end_and_garbage_stay_raw_and_come_back() {
        for frame in [
            vec![],
            vec![1, 2, 3],
            vec![0; 70],
            (0..=255u8).collect::<Vec<u8>>(),
        ] {
            let columns = split(&frame);
            assert_eq!(join(&columns, frame.len()), Some(frame));
        }
    }

    #[test]
    fn damaged_columns_are_refused_not_misread() {
        assert_eq!(join(&[0, 0, 0, 9, 1], 10), None);
        assert_eq!(join(&[], 0), None);
    }

    /// A record whose value length says 1 GiB in a frame of 4 KiB: refused before the zeros
    /// are made.
    #[test]
    fn a_damaged_length_is_refused_before_it_is_allocated() {
        // One batch header of one record, then the record: attributes, timestamp delta, offset
        // delta, a null key and a value of 2^30 bytes, no headers.
        let mut c = Columns::default();
        c.kinds.push(1);
        let mut header = vec![0u8; HEADER_LEN];
        header[57..61].copy_from_slice(&1i32.to_be_bytes());
        c.headers.extend_from_slice(&header);
        c.attributes.push(0);
        c.timestamps.push(0);
        put_varint(&mut c.offsets, 0);
        put_varint(&mut c.keys, -1);
        put_varint(&mut c.values, 1 << 30);
        put_varint(&mut c.headers_of_records, 0);
        let mut columns = Vec::new();
        for column in c.all() {
            columns.extend_from_slice(&(column.len() as u32).to_be_bytes());
            columns.extend_from_slice(column);
        }
        assert_eq!(join(&columns, 4096), None);
    }
}

//! Kafka's record batch, magic v2: the unit the log stores, the wire carries and the CRC covers.
//!
//! ```text
//! offset  size  field
//!      0     8  baseOffset            first offset of the batch
//!      8     4  batchLength           bytes after this field
//!     12     4  partitionLeaderEpoch
//!     16     1  magic                 2
//!     17     4  crc                   CRC-32C of bytes 21..end
//!     21     2  attributes            bits 0-2 compression, 3 timestamp type,
//!                                     4 transactional, 5 control
//!     23     4  lastOffsetDelta
//!     27     8  baseTimestamp
//!     35     8  maxTimestamp
//!     43     8  producerId            -1 when none
//!     51     2  producerEpoch
//!     53     4  baseSequence
//!     57     4  records count
//!     61     …  records
//!
//! record: length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
//!         keyLength varint (-1 = null), key, valueLength varint (-1 = null), value,
//!         headers count varint, headers (key length, key, value length, value)
//! ```
//!
//! The codec is pure: it reads and writes byte slices, never a file. Decoding borrows keys and
//! values from the batch's bytes, so reading a log allocates per batch buffer, not per record.
//! A batch is validated whole (magic, CRC, every record's bounds and offsets) before any of its
//! records is handed out: a corrupt batch is never served.

use crate::record::{Offset, RecordRef};

mod encode;
pub use encode::{
    encode, encode_consecutive, encode_consecutive_based, encoded_len, encoded_len_consecutive, record_size,
};

pub const HEADER_LEN: usize = 61;
/// Bytes before `batchLength` counts: baseOffset and batchLength itself.
pub const LOG_OVERHEAD: usize = 12;
pub const MAGIC: i8 = 2;
/// Where the bytes the CRC-32C covers begin (attributes on).
pub const CRC_START: usize = 21;
/// Bits 0–2: the compression codec ([`crate::compression::Compression`]).
pub const ATTR_COMPRESSION: i16 = 0b111;
/// The timestamp type: set, the batch's `maxTimestamp` is every record's timestamp — the log
/// append time the broker stamped (`message.timestamp.type=LogAppendTime`), whatever the
/// producer wrote in the records.
pub const ATTR_LOG_APPEND_TIME: i16 = 1 << 3;
pub const ATTR_TRANSACTIONAL: i16 = 1 << 4;
pub const ATTR_CONTROL: i16 = 1 << 5;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    #[error("truncated: {needed} bytes needed, {available} available")]
    Truncated { needed: usize, available: usize },
    #[error("batch length {0} is impossible")]
    BadLength(i64),
    #[error("magic byte {0}, expected 2")]
    BadMagic(i8),
    #[error("CRC-32C mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    BadCrc { stored: u32, computed: u32 },
    /// A compressed batch handed to a reader that does not decompress
    /// ([`Batch::parse_with_header`]; [`Batch::parse_any`] does), or a codec Kafka does not
    /// define (5–7).
    #[error("compressed batch (codec {0}) where only uncompressed ones are read")]
    Compressed(i16),
    /// A compressed batch whose records do not decompress, or decompress past the bound.
    #[error("{0}")]
    Decompress(crate::compression::DecompressError),
    #[error("malformed record {index}: {what}")]
    BadRecord { index: usize, what: &'static str },
    /// A caller's rule for records ([`Batch::parse_visiting`]) refused record `index`.
    #[error("record {index}: {what}")]
    Refused { index: usize, what: &'static str },
}

/// The fixed-size header of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    pub base_offset: Offset,
    /// The whole batch in bytes, `LOG_OVERHEAD` included.
    pub total_len: usize,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub count: i32,
    pub crc: u32,
    pub magic: i8,
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(a)
}

fn be_i32(b: &[u8], at: usize) -> i32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    i32::from_be_bytes(a)
}

fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}

impl BatchHeader {
    /// Parses the header at the front of `buf` (at least [`HEADER_LEN`] bytes). Checks the length
    /// is plausible and the magic is 2; the CRC is checked by [`Batch::parse`].
    pub fn parse(buf: &[u8]) -> Result<Self, BatchError> {
        if buf.len() < HEADER_LEN {
            return Err(BatchError::Truncated {
                needed: HEADER_LEN,
                available: buf.len(),
            });
        }
        let length = i64::from(be_i32(buf, 8));
        if length < (HEADER_LEN - LOG_OVERHEAD) as i64 {
            return Err(BatchError::BadLength(length));
        }
        let magic = buf[16] as i8;
        if magic != MAGIC {
            return Err(BatchError::BadMagic(magic));
        }
        // baseOffset is not under the CRC: refuse one whose last offset would overflow.
        let (base, delta) = (be_i64(buf, 0), be_i32(buf, 23));
        if base < 0 || delta < 0 || base.checked_add(i64::from(delta)).is_none() {
            return Err(BatchError::BadLength(length));
        }
        Ok(Self {
            base_offset: be_i64(buf, 0),
            total_len: length as usize + LOG_OVERHEAD,
            magic,
            crc: be_i32(buf, 17) as u32,
            attributes: be_i16(buf, 21),
            last_offset_delta: be_i32(buf, 23),
            base_timestamp: be_i64(buf, 27),
            max_timestamp: be_i64(buf, 35),
            producer_id: be_i64(buf, 43),
            producer_epoch: be_i16(buf, 51),
            base_sequence: be_i32(buf, 53),
            count: be_i32(buf, 57),
        })
    }

    pub fn last_offset(&self) -> Offset {
        self.base_offset + Offset::from(self.last_offset_delta)
    }

    pub fn is_control(&self) -> bool {
        self.attributes & ATTR_CONTROL != 0
    }

    pub fn is_transactional(&self) -> bool {
        self.attributes & ATTR_TRANSACTIONAL != 0
    }

    pub fn is_compressed(&self) -> bool {
        self.attributes & ATTR_COMPRESSION != 0
    }

    /// Stamped with its log append time: every record's timestamp is `maxTimestamp`.
    pub fn is_log_append_time(&self) -> bool {
        self.attributes & ATTR_LOG_APPEND_TIME != 0
    }

    /// The first record's timestamp as readers see it.
    pub fn first_timestamp(&self) -> i64 {
        if self.is_log_append_time() {
            self.max_timestamp
        } else {
            self.base_timestamp
        }
    }
}

/// Stamps the validated batch at the front of `batch` with its log append time, as a broker does
/// for a topic with `message.timestamp.type=LogAppendTime`: the timestamp-type bit and
/// `maxTimestamp` are set, the records are left as the producer wrote them, and the CRC — which
/// covers both — is updated for the changed header bytes ([`crate::crc_shift`]), not computed
/// over the records again. The batch must be valid ([`Batch::parse`]): its stored CRC is the
/// starting point.
pub fn stamp_log_append_time(batch: &mut [u8], now: i64) -> Result<(), BatchError> {
    let h = BatchHeader::parse(batch)?;
    rewrite_time(batch, h, h.attributes | ATTR_LOG_APPEND_TIME, now)
}

/// Marks a batch `CreateTime` with `max_timestamp` as its `maxTimestamp` — what a broker's
/// validator writes on a CreateTime topic, whatever the producer's header said — and updates the
/// CRC for the changed bytes.
pub fn set_create_time(batch: &mut [u8], max_timestamp: i64) -> Result<(), BatchError> {
    let h = BatchHeader::parse(batch)?;
    rewrite_time(batch, h, h.attributes & !ATTR_LOG_APPEND_TIME, max_timestamp)
}

/// The batch's attributes and `maxTimestamp` rewritten in place, the CRC shifted to match.
fn rewrite_time(
    batch: &mut [u8],
    h: BatchHeader,
    attributes: i16,
    max_timestamp: i64,
) -> Result<(), BatchError> {
    const STAMPED: std::ops::Range<usize> = 21..43; // attributes … maxTimestamp
    if batch.len() < h.total_len {
        return Err(BatchError::Truncated {
            needed: h.total_len,
            available: batch.len(),
        });
    }
    let bytes = &mut batch[..h.total_len];
    let mut old = [0u8; 22];
    old.copy_from_slice(&bytes[STAMPED]);
    bytes[21..23].copy_from_slice(&attributes.to_be_bytes());
    bytes[35..43].copy_from_slice(&max_timestamp.to_be_bytes());
    let after = (h.total_len - STAMPED.end) as u64;
    let crc = crate::crc_shift::crc32c_after_change(h.crc, &old, &bytes[STAMPED], after);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
    Ok(())
}

/// The batch at the front of `buf` — `header.total_len` bytes, all there — with its CRC-32C
/// checked over the bytes as stored (compressed or not).
pub fn checked_bytes<'a>(header: &BatchHeader, buf: &'a [u8]) -> Result<&'a [u8], BatchError> {
    let bytes = buf.get(..header.total_len).ok_or(BatchError::Truncated {
        needed: header.total_len,
        available: buf.len(),
    })?;
    let computed = crc32c::crc32c(&bytes[CRC_START..]);
    if computed != header.crc {
        return Err(BatchError::BadCrc {
            stored: header.crc,
            computed,
        });
    }
    Ok(bytes)
}

/// A validated batch, borrowing its bytes.
#[derive(Debug, Clone, Copy)]
pub struct Batch<'a> {
    pub header: BatchHeader,
    /// The batch as stored — compressed if it came so — header included.
    bytes: &'a [u8],
    /// Its records, uncompressed: the bytes after the header, or what they decompress to.
    records_bytes: &'a [u8],
    /// The largest of its records' own (create) timestamps, found by the validating walk; the
    /// header's `maxTimestamp` for a batch not walked. −1 for a batch without records.
    pub max_create_timestamp: i64,
}

impl<'a> Batch<'a> {
    /// Validates the batch at the front of `buf`: header, CRC-32C, and every record's bounds,
    /// offsets (strictly increasing, within `lastOffsetDelta`) and count.
    pub fn parse(buf: &'a [u8]) -> Result<Self, BatchError> {
        Self::parse_visiting(buf, |_, _, _| Ok(()))
    }

    /// [`Batch::parse`], handing every record's key and value to `visit` on the validating
    /// walk (a refusal from it fails the batch).
    pub fn parse_visiting(
        buf: &'a [u8],
        visit: impl FnMut(Option<&'a [u8]>, Option<&'a [u8]>, &'a [u8]) -> Result<(), &'static str>,
    ) -> Result<Self, BatchError> {
        Self::parse_with_header(BatchHeader::parse(buf)?, buf, visit)
    }

    /// [`Batch::parse_visiting`] for a batch whose header was already parsed from the front of
    /// `buf` (a produce validator reads each header once).
    pub fn parse_with_header(
        header: BatchHeader,
        buf: &'a [u8],
        visit: impl FnMut(Option<&'a [u8]>, Option<&'a [u8]>, &'a [u8]) -> Result<(), &'static str>,
    ) -> Result<Self, BatchError> {
        let bytes = checked_bytes(&header, buf)?;
        if header.attributes & ATTR_COMPRESSION != 0 {
            return Err(BatchError::Compressed(header.attributes & ATTR_COMPRESSION));
        }
        Self::walk(header, bytes, &bytes[HEADER_LEN..], visit)
    }

    /// [`Batch::parse_visiting`] for any batch, compressed ones too (the log keeps a producer's
    /// compression, as Kafka does with `compression.type=producer`): the CRC is checked over the
    /// bytes as stored, the records are decompressed into `scratch` — within
    /// [`crate::compression::MAX_DECOMPRESSED`] — and walked there. The batch's header and
    /// [`Batch::bytes`] stay the stored ones; [`Batch::records`] reads the decompressed records.
    pub fn parse_any(
        header: BatchHeader,
        buf: &'a [u8],
        scratch: &'a mut Vec<u8>,
        visit: impl FnMut(Option<&'a [u8]>, Option<&'a [u8]>, &'a [u8]) -> Result<(), &'static str>,
    ) -> Result<Self, BatchError> {
        if !header.is_compressed() {
            return Self::parse_with_header(header, buf, visit);
        }
        let bytes = checked_bytes(&header, buf)?;
        let codec = crate::compression::Compression::from_attributes(header.attributes)
            .ok_or(BatchError::Compressed(header.attributes & ATTR_COMPRESSION))?;
        *scratch = crate::compression::decompress_bounded(
            &bytes[HEADER_LEN..],
            codec,
            crate::compression::MAX_DECOMPRESSED,
        )
        .map_err(BatchError::Decompress)?;
        Self::walk(header, bytes, scratch, visit)
    }

    /// The validating walk over a batch's records (`records`, uncompressed), every record's
    /// bounds and offsets checked and handed to `visit`.
    fn walk(
        header: BatchHeader,
        bytes: &'a [u8],
        records: &'a [u8],
        mut visit: impl FnMut(Option<&'a [u8]>, Option<&'a [u8]>, &'a [u8]) -> Result<(), &'static str>,
    ) -> Result<Self, BatchError> {
        if header.count < 0 || header.last_offset_delta < 0 {
            return Err(BatchError::BadLength(i64::from(header.count)));
        }
        let mut batch = Self {
            header,
            bytes,
            records_bytes: records,
            max_create_timestamp: -1,
        };
        let mut n = 0usize;
        let mut last_delta = -1i64;
        let mut max_ts_delta: Option<i64> = None;
        let mut rest = records;
        while !rest.is_empty() {
            let (delta, ts_delta, key, value, headers) =
                read_record(&mut rest).map_err(|what| BatchError::BadRecord { index: n, what })?;
            if i64::from(delta) <= last_delta || delta > header.last_offset_delta {
                return Err(BatchError::BadRecord {
                    index: n,
                    what: "offset delta out of order",
                });
            }
            visit(key, value, headers).map_err(|what| BatchError::Refused { index: n, what })?;
            last_delta = i64::from(delta);
            max_ts_delta = Some(max_ts_delta.map_or(ts_delta, |m| m.max(ts_delta)));
            n += 1;
        }
        if let Some(d) = max_ts_delta {
            batch.max_create_timestamp = header.base_timestamp.wrapping_add(d);
        }
        if n != header.count as usize {
            return Err(BatchError::BadRecord {
                index: n,
                what: "record count does not match the header",
            });
        }
        Ok(batch)
    }

    /// A batch validated before (its header, the bytes it was parsed from): not checked again.
    /// An uncompressed one: a compressed batch's records must come decompressed
    /// ([`Batch::validated_with`]).
    pub(crate) fn validated(header: BatchHeader, buf: &'a [u8]) -> Self {
        let bytes = &buf[..header.total_len.min(buf.len())];
        Self::validated_with(header, bytes, bytes.get(HEADER_LEN..).unwrap_or_default())
    }

    /// A batch validated before, its records (uncompressed) in `records`.
    pub(crate) fn validated_with(header: BatchHeader, bytes: &'a [u8], records: &'a [u8]) -> Self {
        Self {
            header,
            bytes,
            records_bytes: records,
            max_create_timestamp: header.max_timestamp,
        }
    }

    /// The batch's bytes, exactly as stored (what a Fetch response would carry).
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The records, in offset order. Only call on a validated batch.
    pub fn records(&self) -> impl Iterator<Item = RecordRef<'a>> + 'a {
        let h = self.header;
        let control = h.is_control();
        let append_time = h.is_log_append_time().then_some(h.max_timestamp);
        self.raw_records().filter_map(move |r| {
            r.ok().map(|(delta, ts_delta, key, value, headers)| RecordRef {
                offset: h.base_offset + Offset::from(delta),
                timestamp: append_time.unwrap_or_else(|| h.base_timestamp.wrapping_add(ts_delta)),
                key,
                value,
                control,
                headers,
            })
        })
    }

    /// Each record's timestamp as its producer wrote it (`CreateTime`): for a batch stamped
    /// with its log append time, what [`Batch::records`] reports is the stamp instead. An
    /// export spells these out, so a replay encodes the records as they were.
    pub fn create_timestamps(&self) -> impl Iterator<Item = i64> + 'a {
        let base = self.header.base_timestamp;
        self.raw_records()
            .filter_map(move |r| r.ok().map(|(_, ts_delta, ..)| base.wrapping_add(ts_delta)))
    }

    /// Walks the records: (offset delta, timestamp delta, key, value), or the first malformation.
    fn raw_records(&self) -> RawRecords<'a> {
        RawRecords {
            rest: self.records_bytes,
            index: 0,
            failed: false,
        }
    }
}

/// (offset delta, timestamp delta, key, value, headers as encoded — empty for none).
type RawRecord<'a> = (i32, i64, Option<&'a [u8]>, Option<&'a [u8]>, &'a [u8]);

struct RawRecords<'a> {
    rest: &'a [u8],
    index: usize,
    failed: bool,
}

impl<'a> RawRecords<'a> {
    fn bad(&mut self, what: &'static str) -> Option<Result<RawRecord<'a>, BatchError>> {
        self.failed = true;
        Some(Err(BatchError::BadRecord {
            index: self.index,
            what,
        }))
    }
}

/// Reads a zig-zag varint at `*at` and moves past it. The one- and two-byte forms — nearly
/// every length and delta inside a batch — take a branch each; the rest the general decoder.
#[inline(always)]
fn varint_at(buf: &[u8], at: &mut usize) -> Option<i64> {
    let rest = buf.get(*at..)?;
    let (v, n) = match rest {
        [b0, ..] if *b0 < 0x80 => (unzigzag(u64::from(*b0)), 1),
        [b0, b1, ..] if *b1 < 0x80 => (unzigzag(u64::from(b0 & 0x7f) | u64::from(*b1) << 7), 2),
        _ => crate::varint::get_varlong(rest)?,
    };
    *at += n;
    Some(v)
}

fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// Reads a length-prefixed byte string (`-1` is null) from `buf` at `*at`.
#[inline(always)]
fn bytes_field<'a>(buf: &'a [u8], at: &mut usize) -> Result<Option<&'a [u8]>, &'static str> {
    let len = varint_at(buf, at)
        .filter(|&l| i32::try_from(l).is_ok())
        .ok_or("bad length varint")?;
    if len < 0 {
        return Ok(None);
    }
    let end = at
        .checked_add(len as usize)
        .filter(|&e| e <= buf.len())
        .ok_or("field overruns the record")?;
    let s = &buf[*at..end];
    *at = end;
    Ok(Some(s))
}

/// Reads the record at the front of `*rest` and moves past it: one record's length, fields and
/// headers checked against its bounds, in one pass with no call that is not inlined — the
/// produce validator runs this for every record a client sends.
#[inline(always)]
fn read_record<'a>(rest: &mut &'a [u8]) -> Result<RawRecord<'a>, &'static str> {
    let mut at = 0;
    let len = varint_at(rest, &mut at)
        .filter(|&l| i32::try_from(l).is_ok())
        .ok_or("bad record length")?;
    let end = at
        .checked_add(len.max(0) as usize)
        .filter(|&e| len > 0 && e <= rest.len())
        .ok_or("record overruns the batch")?;
    let rec = &rest[at..end];
    *rest = &rest[end..];
    let mut at = 1; // attributes (unused in v2)
    let ts_delta = varint_at(rec, &mut at).ok_or("bad timestamp delta")?;
    let offset_delta = varint_at(rec, &mut at)
        .and_then(|d| i32::try_from(d).ok())
        .ok_or("bad offset delta")?;
    let key = bytes_field(rec, &mut at)?;
    let value = bytes_field(rec, &mut at)?;
    let headers_at = at;
    let headers = varint_at(rec, &mut at)
        .filter(|&h| i32::try_from(h).is_ok())
        .ok_or("bad header count")?;
    for _ in 0..headers.max(0) {
        let key = bytes_field(rec, &mut at);
        let value = bytes_field(rec, &mut at);
        if key.is_err() || value.is_err() {
            return Err("malformed header");
        }
    }
    if headers < 0 || at != rec.len() {
        return Err("trailing bytes in the record");
    }
    // "No headers" is the empty slice, whoever encoded the count of zero.
    let headers_raw = if headers == 0 {
        &rec[..0]
    } else {
        &rec[headers_at..]
    };
    Ok((offset_delta, ts_delta, key, value, headers_raw))
}

impl<'a> Iterator for RawRecords<'a> {
    type Item = Result<RawRecord<'a>, BatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.rest.is_empty() {
            return None;
        }
        match read_record(&mut self.rest) {
            Ok(r) => {
                self.index += 1;
                Some(Ok(r))
            }
            Err(what) => self.bad(what),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::NewRecord;

    /// (offset, timestamp, key, value)
    type Fields<'a> = (Offset, i64, Option<&'a [u8]>, Option<&'a [u8]>);

    fn rec<'a>(ts: i64, key: Option<&'a [u8]>, value: Option<&'a [u8]>) -> NewRecord<'a> {
        NewRecord::new(ts, key, value)
    }

    #[test]
    fn round_trip_with_gaps_nulls_and_time_going_backwards() {
        let records = [
            (10, rec(1_000, Some(b"o-1"), Some(b"{\"a\":1}"))),
            (11, rec(999, None, Some(b"x"))),
            (15, rec(5_000, Some(b"o-2"), None)),
        ];
        let mut buf = Vec::new();
        let n = encode(&mut buf, &records, -1);
        assert_eq!(n, buf.len());
        let b = Batch::parse(&buf).expect("valid");
        assert_eq!(
            (b.header.base_offset, b.header.last_offset(), b.header.count),
            (10, 15, 3)
        );
        assert_eq!(b.header.max_timestamp, 5_000);
        let got: Vec<Fields<'_>> = b
            .records()
            .map(|r| (r.offset, r.timestamp, r.key, r.value))
            .collect();
        assert_eq!(
            got,
            vec![
                (10, 1_000, Some(&b"o-1"[..]), Some(&b"{\"a\":1}"[..])),
                (11, 999, None, Some(&b"x"[..])),
                (15, 5_000, Some(&b"o-2"[..]), None),
            ]
        );
        assert_eq!(
            records
                .iter()
                .map(|(o, r)| record_size(o - 10, r.timestamp - 1_000, r))
                .sum::<usize>(),
            n - HEADER_LEN
        );
    }

    #[test]
    fn control_batches_carry_the_flag() {
        let marker = NewRecord {
            timestamp: 7,
            key: Some(&[0, 0, 0, 1]),
            value: Some(&[0, 0, 0, 0, 0, 0]),
            control: true,
            headers: &[],
        };
        let mut buf = Vec::new();
        encode(&mut buf, &[(3, marker)], -1);
        let b = Batch::parse(&buf).expect("valid");
        assert!(b.header.is_control());
        assert!(b.records().all(|r| r.control));
    }

    #[test]
    fn every_single_byte_flip_or_cut_is_detected() {
        let mut buf = Vec::new();
        encode(&mut buf, &[(0, rec(1, Some(b"k"), Some(b"value")))], -1);
        // The CRC covers everything from the attributes on; the length and the magic are checked
        // on their own. (baseOffset and partitionLeaderEpoch are not covered, as in Kafka: the
        // log checks offsets against the previous batch.)
        for i in (8..12).chain(16..buf.len()) {
            let mut bad = buf.clone();
            bad[i] ^= 0x01;
            assert!(Batch::parse(&bad).is_err(), "flip at {i} went unnoticed");
        }
        for cut in 0..buf.len() {
            assert!(Batch::parse(&buf[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn a_huge_length_field_is_refused_without_allocating() {
        let mut buf = Vec::new();
        encode(&mut buf, &[(0, rec(1, None, Some(b"v")))], -1);
        buf[8..12].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(matches!(Batch::parse(&buf), Err(BatchError::Truncated { .. })));
        buf[8..12].copy_from_slice(&(-5i32).to_be_bytes());
        assert!(matches!(Batch::parse(&buf), Err(BatchError::BadLength(_))));
    }

    /// The bytes are Kafka's: the `kafka-protocol` crate (the wire codec real clients are tested
    /// against) decodes what this encoder writes, and this decoder reads what it encodes.
    #[test]
    fn interoperates_with_the_kafka_protocol_crate() {
        use kafka_protocol::records::{
            Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
        };
        let mut ours = Vec::new();
        encode(
            &mut ours,
            &[
                (5, rec(100, Some(b"o-1"), Some(b"v1"))),
                (6, rec(101, None, Some(b"v2"))),
            ],
            -1,
        );
        let mut bytes = bytes::Bytes::from(ours.clone());
        let decoded = RecordBatchDecoder::decode(&mut bytes).expect("kafka-protocol decodes ours");
        let got: Vec<(i64, i64, Option<Vec<u8>>)> = decoded
            .records
            .iter()
            .map(|r| (r.offset, r.timestamp, r.value.as_ref().map(|v| v.to_vec())))
            .collect();
        assert_eq!(
            got,
            vec![(5, 100, Some(b"v1".to_vec())), (6, 101, Some(b"v2".to_vec()))]
        );

        let theirs = [Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: 42,
            sequence: -1,
            timestamp: 1_234,
            key: Some(bytes::Bytes::from_static(b"k")),
            value: Some(bytes::Bytes::from_static(b"hello")),
            headers: Default::default(),
        }];
        let mut buf = bytes::BytesMut::new();
        RecordBatchEncoder::encode(
            &mut buf,
            &theirs,
            &RecordEncodeOptions {
                version: 2,
                compression: Compression::None,
            },
        )
        .expect("encode");
        let b = Batch::parse(&buf).expect("ours decodes theirs");
        let r: Vec<_> = b
            .records()
            .map(|r| (r.offset, r.timestamp, r.key, r.value))
            .collect();
        assert_eq!(r, vec![(42, 1_234, Some(&b"k"[..]), Some(&b"hello"[..]))]);
    }

    proptest::proptest! {
        /// What a log that keeps no batches counts a batch as is what the encoder writes: any
        /// keys, values, headers, offset gaps and timestamps (backwards and far apart included).
        #[test]
        fn the_counted_length_is_the_written_one(
            fields in proptest::collection::vec(
                (
                    0i64..1_000,
                    proptest::prelude::any::<i64>(),
                    proptest::option::of(proptest::collection::vec(0u8..255, 0..300)),
                    proptest::option::of(proptest::collection::vec(0u8..255, 0..300)),
                    proptest::collection::vec(0u8..255, 0..40),
                ),
                1..20,
            ),
            base_timestamp in proptest::prelude::any::<i64>(),
        ) {
            let mut offset = 0;
            let records: Vec<(Offset, NewRecord<'_>)> = fields
                .iter()
                .map(|(gap, ts, k, v, h)| {
                    offset += 1 + gap;
                    (offset, NewRecord { headers: h, ..NewRecord::new(*ts, k.as_deref(), v.as_deref()) })
                })
                .collect();
            let mut buf = Vec::new();
            proptest::prop_assert_eq!(encoded_len(&records), encode(&mut buf, &records, -1));
            let plain: Vec<NewRecord<'_>> = records.iter().map(|(_, r)| *r).collect();
            buf.clear();
            proptest::prop_assert_eq!(
                encoded_len_consecutive(&plain, base_timestamp),
                encode_consecutive_based(&mut buf, 7, &plain, -1, base_timestamp)
            );
        }
    }
}

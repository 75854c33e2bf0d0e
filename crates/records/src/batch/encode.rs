//! Writing batches: records in, one magic-v2 batch out, its CRC computed last. Apart from the
//! reader beside it because the two share only the layout (`super`'s constants): the reader is
//! validation over borrowed bytes, the writer is sizing and appending to a buffer, and each is
//! easier to check against Kafka's own codec (the tests do, both ways) on its own.

use super::{ATTR_CONTROL, ATTR_TRANSACTIONAL, CRC_START, HEADER_LEN, LOG_OVERHEAD, MAGIC};
use crate::record::{NewRecord, Offset};
use crate::varint::{put_varint, put_varlong, varlong_len};

/// The bytes one record takes inside a batch, its length prefix included.
pub fn record_size(offset_delta: i64, timestamp_delta: i64, record: &NewRecord<'_>) -> usize {
    let body = record_body_len(offset_delta, timestamp_delta, record);
    varlong_len(body as i64) + body
}

fn record_body_len(offset_delta: i64, timestamp_delta: i64, r: &NewRecord<'_>) -> usize {
    let field = |f: Option<&[u8]>| f.map_or(varlong_len(-1), |b| varlong_len(b.len() as i64) + b.len());
    let headers = r.headers.len().max(1);
    1 + varlong_len(timestamp_delta) + varlong_len(offset_delta) + field(r.key) + field(r.value) + headers
}

/// The bytes [`encode`] writes for `records`, counted without writing them: what a log that does
/// not keep its batches (the in-memory one) counts a rewritten batch as.
pub fn encoded_len(records: &[(Offset, NewRecord<'_>)]) -> usize {
    let Some(&(base_offset, first)) = records.first() else {
        return 0;
    };
    HEADER_LEN
        + records
            .iter()
            .map(|(o, r)| record_size(o - base_offset, r.timestamp.wrapping_sub(first.timestamp), r))
            .sum::<usize>()
}

/// The bytes [`encode_consecutive_based`] writes for `records`, counted without writing them.
pub fn encoded_len_consecutive(records: &[NewRecord<'_>], base_timestamp: i64) -> usize {
    if records.is_empty() {
        return 0;
    }
    HEADER_LEN
        + records
            .iter()
            .enumerate()
            .map(|(i, r)| record_size(i as i64, r.timestamp.wrapping_sub(base_timestamp), r))
            .sum::<usize>()
}

/// Appends one batch holding `records` (offset, record) to `buf`; every record must have the same
/// `control` flag and offsets must increase. Returns the batch's length in bytes.
pub fn encode(buf: &mut Vec<u8>, records: &[(Offset, NewRecord<'_>)], producer_id: i64) -> usize {
    let Some(&(base_offset, _)) = records.first() else {
        return 0;
    };
    encode_with(buf, base_offset, records.len(), |i| records[i], producer_id, None)
}

/// [`encode`] for records at consecutive offsets from `base_offset` (what an append writes),
/// without building the (offset, record) pairs.
pub fn encode_consecutive(
    buf: &mut Vec<u8>,
    base_offset: Offset,
    records: &[NewRecord<'_>],
    producer_id: i64,
) -> usize {
    let base_timestamp = records.first().map_or(0, |r| r.timestamp);
    encode_consecutive_based(buf, base_offset, records, producer_id, base_timestamp)
}

/// [`encode_consecutive`] with the batch's base timestamp given: the records' timestamps are
/// encoded as deltas from it, as the producer that chose it encoded them (Kafka's Java client and
/// librdkafka take the first record's timestamp, others the earliest).
pub fn encode_consecutive_based(
    buf: &mut Vec<u8>,
    base_offset: Offset,
    records: &[NewRecord<'_>],
    producer_id: i64,
    base_timestamp: i64,
) -> usize {
    encode_with(
        buf,
        base_offset,
        records.len(),
        |i| (base_offset + i as Offset, records[i]),
        producer_id,
        Some(base_timestamp),
    )
}

fn encode_with<'r>(
    buf: &mut Vec<u8>,
    base_offset: Offset,
    count: usize,
    record: impl Fn(usize) -> (Offset, NewRecord<'r>),
    producer_id: i64,
    base_timestamp: Option<i64>,
) -> usize {
    let start = buf.len();
    if count == 0 {
        return 0;
    }
    let first = record(0).1;
    let base_ts = base_timestamp.unwrap_or(first.timestamp);
    let mut max_ts = base_ts;
    let mut payload = 0;
    for i in 0..count {
        let r = record(i).1;
        max_ts = max_ts.max(r.timestamp);
        payload += 16 + r.key.map_or(0, <[u8]>::len) + r.value.map_or(0, <[u8]>::len);
    }
    let last_delta = record(count - 1).0 - base_offset;
    // One reservation for the whole batch (an upper bound: 16 bytes of framing per record).
    buf.reserve(HEADER_LEN + payload);
    let mut attributes = 0i16;
    if first.control {
        attributes |= ATTR_CONTROL | ATTR_TRANSACTIONAL;
    } else if producer_id >= 0 {
        attributes |= ATTR_TRANSACTIONAL;
    }
    buf.extend_from_slice(&base_offset.to_be_bytes());
    buf.extend_from_slice(&0i32.to_be_bytes()); // batchLength, filled below
    buf.extend_from_slice(&0i32.to_be_bytes()); // partitionLeaderEpoch
    buf.push(MAGIC as u8);
    buf.extend_from_slice(&0u32.to_be_bytes()); // crc, filled below
    buf.extend_from_slice(&attributes.to_be_bytes());
    buf.extend_from_slice(&(last_delta as i32).to_be_bytes());
    buf.extend_from_slice(&base_ts.to_be_bytes());
    buf.extend_from_slice(&max_ts.to_be_bytes());
    buf.extend_from_slice(&producer_id.to_be_bytes());
    buf.extend_from_slice(&(if producer_id >= 0 { 0i16 } else { -1i16 }).to_be_bytes());
    buf.extend_from_slice(&(-1i32).to_be_bytes()); // baseSequence
    buf.extend_from_slice(&(count as i32).to_be_bytes());
    for i in 0..count {
        let (offset, r) = record(i);
        let (od, td) = (offset - base_offset, r.timestamp.wrapping_sub(base_ts));
        put_varint(buf, record_body_len(od, td, &r) as i32);
        buf.push(0);
        put_varlong(buf, td);
        put_varint(buf, od as i32);
        for field in [r.key, r.value] {
            match field {
                Some(b) => {
                    put_varint(buf, b.len() as i32);
                    buf.extend_from_slice(b);
                }
                None => put_varint(buf, -1),
            }
        }
        if r.headers.is_empty() {
            put_varint(buf, 0); // no headers
        } else {
            buf.extend_from_slice(r.headers);
        }
    }
    let len = buf.len() - start;
    buf[start + 8..start + 12].copy_from_slice(&((len - LOG_OVERHEAD) as i32).to_be_bytes());
    let crc = crc32c::crc32c(&buf[start + CRC_START..]);
    buf[start + 17..start + 21].copy_from_slice(&crc.to_be_bytes());
    len
}

//! A producer's record batches for one partition, validated whole before any log is touched:
//! what Kafka's `LogValidator` does on the request handler thread, before the partition's lock,
//! so producers on several connections validate in parallel and the log's critical section is
//! offsets and a `write`.
//!
//! One walk per batch, its header parsed once: the header's rules (numbered from 0, not a
//! control batch, all transactional or none, one producer in sequence), the CRC, every record's
//! bounds, and a caller's own rule for keys, values and headers (the listener takes any bytes). A
//! compressed batch (gzip, snappy, lz4, zstd) is decompressed within [`MAX_DECOMPRESSED`] to be
//! walked, and kept as it came: the log stores the producer's compression, as Kafka does under
//! `compression.type=producer`. A topic that names a codec (or `uncompressed`) has its batches
//! rewritten to it at the append ([`ProducedBatches::convert`]): records byte for byte, a new
//! header length, codec bits and CRC.

use crate::batch::{
    self, Batch, BatchError, BatchHeader, ATTR_COMPRESSION, CRC_START, HEADER_LEN, LOG_OVERHEAD,
};
use crate::compression::{self, Compression, DecompressError, MAX_DECOMPRESSED};
use crate::record::NewRecord;
use bytes::{Bytes, BytesMut};

/// Validated batches, back to back, with their headers.
#[derive(Debug)]
pub struct ProducedBatches {
    /// A buffer of their own — a Produce request's frame when nothing else holds it — so the
    /// append rewrites offsets and timestamps in place, without a copy first.
    bytes: BytesMut,
    headers: Vec<BatchHeader>,
}

/// An idempotent producer's run of sequence numbers across a partition's batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerRun {
    pub producer_id: i64,
    pub epoch: i16,
    pub first_sequence: i32,
    /// Records in the run (the last sequence is `first_sequence + records - 1`).
    pub records: i32,
}

/// What a partition's share of a Produce request holds, validated.
#[derive(Debug)]
pub struct Validated {
    /// Every batch, as it came (compressed or not; a retimed header rewritten).
    pub batches: ProducedBatches,
    /// The idempotent producer's sequence run, when the batches carry one.
    pub producer: Option<ProducerRun>,
    /// Written inside a transaction (every batch's transactional bit).
    pub transactional: bool,
    /// At least one batch came compressed.
    pub compressed: bool,
    /// At least one batch came compressed with zstd (which Produce v7 introduced, KIP-110).
    pub zstd: bool,
}

/// Why a partition's batches were refused; nothing of them is kept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProduceError {
    /// Kafka's `CORRUPT_MESSAGE`.
    #[error("corrupt record batch: {0}")]
    Corrupt(BatchError),
    /// Kafka's `CORRUPT_MESSAGE`: a batch that claims more bytes than the request holds, or a
    /// request with no batch at all.
    #[error("{0}")]
    Framing(&'static str),
    /// Kafka's `CORRUPT_MESSAGE`, for compressed data that does not decompress.
    #[error("corrupt compressed record batch: {0}")]
    CorruptCompressed(DecompressError),
    /// Kafka's `MESSAGE_TOO_LARGE`: a batch larger, as sent, than the broker's
    /// `message.max.bytes` — refused before its CRC is computed or a byte is decompressed.
    #[error("a record batch of {size} bytes is larger than message.max.bytes ({limit})")]
    BatchTooLarge { size: usize, limit: usize },
    /// Kafka's `RECORD_LIST_TOO_LARGE`: a batch that decompresses past the bound.
    #[error("a batch decompresses to more than {limit} bytes")]
    TooLarge { limit: usize },
    /// Kafka's `INVALID_RECORD`: valid bytes, but not what a producer may write (or refused by
    /// the caller's rule for records).
    #[error("{0}")]
    InvalidRecord(&'static str),
}

/// A caller's rule for each record's key, value and headers (as encoded).
pub type Visit<'v> = dyn FnMut(Option<&[u8]>, Option<&[u8]>, &[u8]) -> Result<(), &'static str> + 'v;

impl ProducedBatches {
    /// Validates every batch in `bytes` (back to back, as a Produce request carries them): each
    /// batch whole ([`Batch::parse`]), uncompressed, and numbered `0, 1, 2, …` — offsets are the
    /// broker's to assign. [`validate_produce`] is the full validator.
    pub fn validate(bytes: impl Into<Bytes>) -> Result<Self, BatchError> {
        let bytes = own(bytes.into());
        let headers = Self::check(&bytes)?;
        Ok(Self { bytes, headers })
    }

    /// What [`ProducedBatches::validate`] checks, on borrowed bytes: the batches' headers.
    pub fn check(bytes: &[u8]) -> Result<Vec<BatchHeader>, BatchError> {
        let mut headers = Vec::new();
        let mut at = 0;
        let mut scratch = Vec::new();
        while at < bytes.len() {
            let header = BatchHeader::parse(&bytes[at..])?;
            Batch::parse_any(header, &bytes[at..], &mut scratch, |_, _, _| Ok(()))?;
            if !numbered_from_zero(&header) {
                return Err(BatchError::BadRecord {
                    index: headers.len(),
                    what: "a produced batch must number its records 0, 1, 2, …",
                });
            }
            headers.push(header);
            at += header.total_len;
        }
        Ok(headers)
    }

    /// The bytes and the headers together, for the log's append: it rewrites base offsets in
    /// both.
    pub fn parts_mut(&mut self) -> (&mut [u8], &mut [BatchHeader]) {
        (&mut self.bytes, &mut self.headers)
    }

    /// Records in all the batches.
    pub fn records(&self) -> usize {
        self.headers.iter().map(|h| h.count as usize).sum()
    }

    /// The batches' headers, in order, as the append will find them.
    pub fn headers(&self) -> &[BatchHeader] {
        &self.headers
    }

    /// The batches' bytes — after an append, with the offsets the log assigned.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes.into()
    }

    /// The batches' bytes as they are now.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The batches back to back, for a log that stores them: it rewrites their base offsets in
    /// place.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }

    /// Each validated batch, in order, its records readable whatever its compression (a
    /// compressed one is decompressed again, within [`MAX_DECOMPRESSED`]: validated, it cannot
    /// fail).
    pub fn each_batch(&self, visit: &mut dyn FnMut(Batch<'_>)) {
        let mut at = 0;
        for h in &self.headers {
            let bytes = &self.bytes[at..(at + h.total_len).min(self.bytes.len())];
            at += h.total_len;
            if !h.is_compressed() {
                visit(Batch::validated(*h, bytes));
                continue;
            }
            let Some(codec) = Compression::from_attributes(h.attributes) else {
                continue;
            };
            if let Ok(records) = compression::decompress_bounded(
                &bytes[HEADER_LEN.min(bytes.len())..],
                codec,
                MAX_DECOMPRESSED,
            ) {
                visit(Batch::validated_with(*h, bytes, &records));
            }
        }
    }

    /// The codec each batch is stored in, in order.
    pub fn codecs(&self) -> impl Iterator<Item = Compression> + '_ {
        self.headers
            .iter()
            .map(|h| Compression::from_attributes(h.attributes).unwrap_or(Compression::None))
    }

    /// Rewrites every batch whose codec is not `to` in `to`, as a broker does for a topic whose
    /// `compression.type` names a codec (or `uncompressed`): its records byte for byte, the
    /// header's length, codec bits and CRC new. Batches already in `to` are kept as they are.
    pub fn convert(&mut self, to: Compression) {
        if self.codecs().all(|c| c == to) {
            return;
        }
        let mut out = Vec::with_capacity(self.bytes.len());
        let mut headers = Vec::with_capacity(self.headers.len());
        let mut at = 0;
        for h in &self.headers {
            let one = &self.bytes[at..at + h.total_len];
            at += h.total_len;
            let from = Compression::from_attributes(h.attributes).unwrap_or(Compression::None);
            if from == to {
                out.extend_from_slice(one);
                headers.push(*h);
                continue;
            }
            // Validated: the records decompress within the bound.
            let Ok(records) = compression::decompress_bounded(&one[HEADER_LEN..], from, MAX_DECOMPRESSED)
            else {
                out.extend_from_slice(one);
                headers.push(*h);
                continue;
            };
            let start = out.len();
            write_batch(
                &mut out,
                &one[..HEADER_LEN],
                h.attributes,
                &compression::compress(&records, to),
                to,
            );
            match BatchHeader::parse(&out[start..]) {
                Ok(rewritten) => headers.push(rewritten),
                Err(_) => {
                    out.truncate(start);
                    out.extend_from_slice(one);
                    headers.push(*h);
                }
            }
        }
        self.bytes = BytesMut::from(&out[..]);
        self.headers = headers;
    }

    /// The records of each batch, in order (offsets and timestamps are the log's to assign),
    /// for a log that keeps records rather than batches.
    pub fn for_each_batch(&self, visit: &mut dyn FnMut(&[NewRecord<'_>])) {
        self.each_batch(&mut |b| {
            let records: Vec<NewRecord<'_>> = b
                .records()
                .map(|r| NewRecord {
                    timestamp: r.timestamp,
                    key: r.key,
                    value: r.value,
                    control: false,
                    headers: r.headers,
                })
                .collect();
            visit(&records);
        });
    }

    /// Stamps every batch with its log append time `now` (the timestamp-type attribute,
    /// `maxTimestamp`, and the CRC that covers them).
    pub fn stamp_log_append_time(&mut self, now: i64) {
        let mut at = 0;
        for h in &mut self.headers {
            // Validated whole: the stamp cannot fail.
            if batch::stamp_log_append_time(&mut self.bytes[at..], now).is_ok() {
                h.attributes |= batch::ATTR_LOG_APPEND_TIME;
                h.max_timestamp = now;
            }
            at += h.total_len;
        }
    }
}

/// The bytes as a buffer of their own: used as they are when nothing else holds them (a `Vec`,
/// or a request frame whose other views are gone), copied otherwise.
fn own(bytes: Bytes) -> BytesMut {
    bytes
        .try_into_mut()
        .unwrap_or_else(|shared| BytesMut::from(&shared[..]))
}

fn numbered_from_zero(h: &BatchHeader) -> bool {
    h.count >= 1 && h.last_offset_delta == h.count - 1
}

/// Validates a partition's share of a Produce request (see the module's documentation),
/// handing every record's key, value and headers to `visit` on the validating walk.
///
/// Generic over the rule, so a closure's check is inlined into the walk: it runs for every
/// record a client sends. A [`Visit`] trait object works too.
pub fn validate_produce<V>(bytes: Bytes, visit: &mut V) -> Result<Validated, ProduceError>
where
    V: FnMut(Option<&[u8]>, Option<&[u8]>, &[u8]) -> Result<(), &'static str> + ?Sized,
{
    validate_produce_within(bytes, usize::MAX, visit)
}

/// [`validate_produce`] with a broker's `message.max.bytes`: a larger batch is refused from
/// its header alone.
pub fn validate_produce_within<V>(
    bytes: Bytes,
    max_batch_bytes: usize,
    visit: &mut V,
) -> Result<Validated, ProduceError>
where
    V: FnMut(Option<&[u8]>, Option<&[u8]>, &[u8]) -> Result<(), &'static str> + ?Sized,
{
    let mut rules = HeaderRules::default();
    let mut headers = Vec::new();
    let mut scratch = Vec::new();
    let (mut compressed, mut zstd) = (false, false);
    // Batches whose header does not say what their records do (a `maxTimestamp` other than the
    // largest record timestamp, or the LogAppendTime bit a producer has no business setting):
    // where each starts in the kept bytes, and the timestamp it gets — as Kafka's validator
    // rewrites them on a CreateTime topic (a LogAppendTime topic stamps over them anyway).
    let mut retimed: Vec<(usize, usize, i64)> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let header = BatchHeader::parse(&bytes[at..]).map_err(ProduceError::Corrupt)?;
        let end = at
            .checked_add(header.total_len)
            .filter(|&e| e <= bytes.len())
            .ok_or(ProduceError::Framing("a record batch runs past the request"))?;
        if header.total_len > max_batch_bytes {
            return Err(ProduceError::BatchTooLarge {
                size: header.total_len,
                limit: max_batch_bytes,
            });
        }
        rules.check(&header, at == 0)?;
        let one = &bytes[at..end];
        zstd |= Compression::from_attributes(header.attributes) == Some(Compression::Zstd);
        let wrong_time = |b: &Batch<'_>| {
            b.header.count > 0
                && (b.header.is_log_append_time() || b.header.max_timestamp != b.max_create_timestamp)
        };
        compressed |= header.is_compressed();
        if header.is_compressed() && Compression::from_attributes(header.attributes).is_none() {
            return Err(ProduceError::Corrupt(BatchError::Compressed(
                header.attributes & ATTR_COMPRESSION,
            )));
        }
        let b = Batch::parse_any(header, one, &mut scratch, &mut *visit).map_err(refusal)?;
        if wrong_time(&b) {
            retimed.push((headers.len(), at, b.max_create_timestamp));
        }
        headers.push(header);
        at = end;
    }
    if at == 0 {
        return Err(ProduceError::Framing("no records in the request"));
    }
    let mut bytes = own(bytes);
    for (index, start, max) in retimed {
        crate::batch::set_create_time(&mut bytes[start..], max).map_err(ProduceError::Corrupt)?;
        headers[index] = BatchHeader::parse(&bytes[start..]).map_err(ProduceError::Corrupt)?;
    }
    Ok(Validated {
        batches: ProducedBatches { bytes, headers },
        producer: rules.producer,
        transactional: rules.transactional,
        compressed,
        zstd,
    })
}

/// A refusal from the caller's rule is the record's fault (INVALID_RECORD); anything else a
/// corrupt batch.
fn refusal(e: BatchError) -> ProduceError {
    match e {
        BatchError::Refused { what, .. } => ProduceError::InvalidRecord(what),
        BatchError::Decompress(DecompressError::TooLarge { limit }) => ProduceError::TooLarge { limit },
        BatchError::Decompress(e) => ProduceError::CorruptCompressed(e),
        e => ProduceError::Corrupt(e),
    }
}

/// The rules a partition's batch headers keep together.
#[derive(Default)]
struct HeaderRules {
    producer: Option<ProducerRun>,
    transactional: bool,
}

impl HeaderRules {
    fn check(&mut self, h: &BatchHeader, first: bool) -> Result<(), ProduceError> {
        if !numbered_from_zero(h) {
            return Err(ProduceError::InvalidRecord(
                "a produced batch numbers its records 0, 1, 2, …",
            ));
        }
        if h.is_control() {
            return Err(ProduceError::InvalidRecord(
                "a producer does not write control batches",
            ));
        }
        if !first && h.is_transactional() != self.transactional {
            return Err(ProduceError::InvalidRecord(
                "the batches for one partition are all transactional or none is",
            ));
        }
        self.transactional = h.is_transactional();
        if h.producer_id >= 0 && h.base_sequence >= 0 {
            self.producer = Some(match self.producer {
                None => ProducerRun {
                    producer_id: h.producer_id,
                    epoch: h.producer_epoch,
                    first_sequence: h.base_sequence,
                    records: h.count,
                },
                // Batches of one producer follow each other's sequence numbers.
                Some(run)
                    if run.producer_id == h.producer_id
                        && run.epoch == h.producer_epoch
                        && i64::from(run.first_sequence) + i64::from(run.records)
                            == i64::from(h.base_sequence) =>
                {
                    ProducerRun {
                        records: run.records + h.count,
                        ..run
                    }
                }
                Some(_) => {
                    return Err(ProduceError::InvalidRecord(
                        "the batches for one partition come from one producer, in sequence",
                    ))
                }
            });
        }
        Ok(())
    }
}

/// `plain` (one uncompressed batch) with its records replaced by `compressed` — the same records
/// as `codec` compressed them — its length, codec bits and CRC written for them: how a replay
/// gives a batch the bytes its producer's compressor wrote. `None` when `compressed` does not
/// decompress (within [`MAX_DECOMPRESSED`]) to exactly `plain`'s records.
pub fn with_compressed_records(plain: &[u8], codec: Compression, compressed: &[u8]) -> Option<Vec<u8>> {
    let header = BatchHeader::parse(plain).ok()?;
    if header.is_compressed() || plain.len() != header.total_len {
        return None;
    }
    let records = compression::decompress_bounded(compressed, codec, MAX_DECOMPRESSED).ok()?;
    if records != plain[HEADER_LEN..] {
        return None;
    }
    let mut out = Vec::with_capacity(HEADER_LEN + compressed.len());
    write_batch(
        &mut out,
        &plain[..HEADER_LEN],
        header.attributes,
        compressed,
        codec,
    );
    Some(out)
}

/// Appends a batch to `out`: the 61-byte `header` given, its records `records` (already in
/// `codec`), the length, codec bits and CRC written for them.
fn write_batch(out: &mut Vec<u8>, header: &[u8], attributes: i16, records: &[u8], codec: Compression) {
    let start = out.len();
    out.extend_from_slice(header);
    out.extend_from_slice(records);
    let length = (out.len() - start - LOG_OVERHEAD) as i32;
    out[start + 8..start + 12].copy_from_slice(&length.to_be_bytes());
    let attributes = (attributes & !ATTR_COMPRESSION) | codec.attribute();
    out[start + 21..start + 23].copy_from_slice(&attributes.to_be_bytes());
    let crc = crc32c::crc32c(&out[start + CRC_START..]);
    out[start + 17..start + 21].copy_from_slice(&crc.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{encode_consecutive, ATTR_TRANSACTIONAL};
    use std::io::Write;

    fn record<'a>(ts: i64, key: &'a [u8], value: &'a [u8], headers: &'a [u8]) -> NewRecord<'a> {
        NewRecord {
            timestamp: ts,
            key: Some(key),
            value: Some(value),
            control: false,
            headers,
        }
    }

    fn plain(records: &[NewRecord<'_>]) -> Vec<u8> {
        let mut buf = Vec::new();
        encode_consecutive(&mut buf, 0, records, -1);
        buf
    }

    /// `batch` with its records gzip-compressed, as a producer sends it.
    fn gzipped(batch: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&batch[HEADER_LEN..]).expect("gzip");
        let packed = e.finish().expect("gzip");
        let mut out = batch[..HEADER_LEN].to_vec();
        out.extend_from_slice(&packed);
        let len = (out.len() - LOG_OVERHEAD) as i32;
        out[8..12].copy_from_slice(&len.to_be_bytes());
        let attributes = i16::from_be_bytes([out[21], out[22]]) | 1;
        out[21..23].copy_from_slice(&attributes.to_be_bytes());
        let crc = crc32c::crc32c(&out[CRC_START..]);
        out[17..21].copy_from_slice(&crc.to_be_bytes());
        out
    }

    fn fields(v: &ProducedBatches) -> Vec<(i64, Option<Vec<u8>>, Vec<u8>)> {
        let mut out = Vec::new();
        v.each_batch(&mut |b| {
            out.extend(
                b.records()
                    .map(|r| (r.timestamp, r.key.map(<[u8]>::to_vec), r.headers.to_vec())),
            );
        });
        out
    }

    fn accept_all(_: Option<&[u8]>, _: Option<&[u8]>, _: &[u8]) -> Result<(), &'static str> {
        Ok(())
    }

    /// A compressed batch beside a plain one: both kept as they came (the producer's
    /// compression, as `compression.type=producer` keeps it), their records readable with every
    /// timestamp, key and header as the producer wrote them; converted to `uncompressed`, the
    /// compressed one is rewritten record for record, and to gzip the plain one is compressed.
    #[test]
    fn a_compressed_batch_is_kept_and_converted_record_for_record() {
        let h = crate::headers::encode([(&b"trace"[..], Some(&b"t-1"[..]))].into_iter());
        let first = plain(&[record(1_000, b"a", b"1", &[]), record(1_007, b"b", b"2", &h)]);
        let second = plain(&[record(2_000, b"c", b"3", &h)]);
        let mut request = first.clone();
        request.extend_from_slice(&gzipped(&second));
        let v = validate_produce(Bytes::from(request.clone()), &mut accept_all).expect("valid");
        assert!(v.compressed && !v.transactional);
        assert_eq!(v.batches.bytes(), &request[..], "both batches, byte for byte");
        assert_eq!(
            v.batches.codecs().collect::<Vec<_>>(),
            [Compression::None, Compression::Gzip]
        );
        let fields_sent = vec![
            (1_000, Some(b"a".to_vec()), Vec::new()),
            (1_007, Some(b"b".to_vec()), h.clone()),
            (2_000, Some(b"c".to_vec()), h),
        ];
        assert_eq!(fields(&v.batches), fields_sent);
        // What the validator kept validates again as it is.
        let mut kept = ProducedBatches::validate(v.batches.into_bytes()).expect("valid again");
        assert_eq!(fields(&kept), fields_sent);

        let mut plain_too = ProducedBatches::validate(request.clone()).expect("valid");
        plain_too.convert(Compression::None);
        let mut expected = first;
        expected.extend_from_slice(&second);
        assert_eq!(
            plain_too.bytes(),
            &expected[..],
            "uncompressed, record for record"
        );
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            kept.convert(codec);
            assert!(kept.codecs().all(|c| c == codec), "{codec}");
            let again = ProducedBatches::validate(kept.bytes().to_vec()).expect("valid after the rewrite");
            assert_eq!(fields(&again), fields_sent, "{codec}");
        }
    }

    #[test]
    fn the_header_rules_and_the_callers_rule_refuse_with_their_kind() {
        let ok = plain(&[record(1, b"k", b"v", &[])]);
        let refuse =
            |bytes: Vec<u8>, rule: &mut Visit<'_>| validate_produce(Bytes::from(bytes), rule).map(|_| ());
        assert_eq!(
            refuse(ok.clone(), &mut |_, _, _| Err("not text")),
            Err(ProduceError::InvalidRecord("not text"))
        );
        // One record whose batch says its last offset delta is 3: offsets are the broker's to
        // give, a producer numbers its records 0, 1, 2, …
        let mut renumbered = ok.clone();
        renumbered[23..27].copy_from_slice(&3i32.to_be_bytes());
        let crc = crc32c::crc32c(&renumbered[CRC_START..]);
        renumbered[17..21].copy_from_slice(&crc.to_be_bytes());
        assert_eq!(
            refuse(renumbered, &mut accept_all),
            Err(ProduceError::InvalidRecord(
                "a produced batch numbers its records 0, 1, 2, …"
            ))
        );
        // Transactional and not, in one partition.
        let mut txn = ok.clone();
        let attributes = ATTR_TRANSACTIONAL.to_be_bytes();
        txn[21..23].copy_from_slice(&attributes);
        let crc = crc32c::crc32c(&txn[CRC_START..]);
        txn[17..21].copy_from_slice(&crc.to_be_bytes());
        let mut mixed = ok.clone();
        mixed.extend_from_slice(&txn);
        assert_eq!(
            refuse(mixed, &mut accept_all),
            Err(ProduceError::InvalidRecord(
                "the batches for one partition are all transactional or none is"
            ))
        );
        // A flipped byte: corrupt.
        let mut flipped = ok.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(matches!(
            refuse(flipped, &mut accept_all),
            Err(ProduceError::Corrupt(BatchError::BadCrc { .. }))
        ));
        // A batch that claims more than the request holds, and no batch at all.
        assert!(matches!(
            refuse(ok[..ok.len() - 1].to_vec(), &mut accept_all),
            Err(ProduceError::Framing(_))
        ));
        assert_eq!(
            refuse(Vec::new(), &mut accept_all),
            Err(ProduceError::Framing("no records in the request"))
        );
    }

    /// Kilobytes that inflate past the bound are refused as too large, not decompressed whole.
    #[test]
    fn a_compression_bomb_is_too_large() {
        let zeros = vec![0u8; MAX_DECOMPRESSED + 1];
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(&zeros).expect("gzip");
        let packed = e.finish().expect("gzip");
        let template = plain(&[record(1, b"k", b"v", &[])]);
        let mut bomb = template[..HEADER_LEN].to_vec();
        bomb.extend_from_slice(&packed);
        let len = (bomb.len() - LOG_OVERHEAD) as i32;
        bomb[8..12].copy_from_slice(&len.to_be_bytes());
        bomb[21..23].copy_from_slice(&1i16.to_be_bytes());
        let crc = crc32c::crc32c(&bomb[CRC_START..]);
        bomb[17..21].copy_from_slice(&crc.to_be_bytes());
        assert_eq!(
            validate_produce(Bytes::from(bomb), &mut accept_all).map(|_| ()),
            Err(ProduceError::TooLarge {
                limit: MAX_DECOMPRESSED
            })
        );
    }

    #[test]
    fn an_idempotent_producers_run_spans_its_batches() {
        let mut request = Vec::new();
        for (sequence, n) in [(10i32, 2), (12, 3)] {
            let records: Vec<NewRecord<'_>> = (0..n).map(|_| record(1, b"k", b"v", &[])).collect();
            let start = request.len();
            encode_consecutive(&mut request, 0, &records, -1);
            let b = &mut request[start..];
            b[43..51].copy_from_slice(&7i64.to_be_bytes());
            b[51..53].copy_from_slice(&0i16.to_be_bytes());
            b[53..57].copy_from_slice(&sequence.to_be_bytes());
            let crc = crc32c::crc32c(&b[CRC_START..]);
            b[17..21].copy_from_slice(&crc.to_be_bytes());
        }
        let v = validate_produce(Bytes::from(request), &mut accept_all).expect("valid");
        assert_eq!(
            v.producer,
            Some(ProducerRun {
                producer_id: 7,
                epoch: 0,
                first_sequence: 10,
                records: 5
            })
        );
    }

    /// `message.max.bytes` bounds a batch as it was sent, from its header alone.
    #[test]
    fn a_batch_past_the_limit_is_refused_by_its_size() {
        let batch = plain(&[record(1_000, b"a", b"1", &[])]);
        let size = batch.len();
        let refused = validate_produce_within(Bytes::from(batch.clone()), size - 1, &mut accept_all);
        assert_eq!(
            refused.map(|_| ()),
            Err(ProduceError::BatchTooLarge {
                size,
                limit: size - 1
            })
        );
        assert!(validate_produce_within(Bytes::from(batch), size, &mut accept_all).is_ok());
    }
}

#[cfg(test)]
mod retime_tests {
    use super::*;
    use crate::batch::{encode_consecutive, stamp_log_append_time};

    /// A producer's header is not taken on trust: a batch that claims the LogAppendTime bit, or a
    /// `maxTimestamp` its records do not have, is kept as CreateTime with its records' largest
    /// timestamp — as Kafka's validator rewrites it — and its CRC still holds.
    #[test]
    fn a_batch_header_says_what_its_records_do() {
        let records = [
            NewRecord::new(5_000, Some(b"k"), Some(b"a")),
            NewRecord::new(9_000, Some(b"k"), Some(b"b")),
            NewRecord::new(7_000, Some(b"k"), Some(b"c")),
        ];
        let mut honest = Vec::new();
        encode_consecutive(&mut honest, 0, &records, -1);
        let mut lying = honest.clone();
        stamp_log_append_time(&mut lying, 1).expect("a producer that sets the bit itself");
        let mut two = honest.clone();
        two.extend_from_slice(&lying);
        let v = validate_produce(Bytes::from(two), &mut |_, _, _| Ok(())).expect("valid");
        for h in v.batches.headers() {
            assert!(!h.is_log_append_time());
            assert_eq!(h.max_timestamp, 9_000);
        }
        let kept = v.batches.bytes().to_vec();
        let first = Batch::parse(&kept).expect("the CRC holds");
        assert_eq!(
            &kept[..first.header.total_len],
            &honest[..],
            "an honest batch is kept as it came"
        );
        Batch::parse(&kept[first.header.total_len..]).expect("the rewritten batch's CRC holds");
    }
}

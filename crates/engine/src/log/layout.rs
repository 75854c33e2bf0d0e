//! Where records land on a log: the batches an append writes, the bytes each takes, and when the
//! active segment rolls — one rule that the in-memory log and the segment files both follow.
//!
//! `segment.bytes` and `retention.bytes` count what Kafka counts: the bytes of the record batches
//! in a segment's file, headers and varints included, not the keys and values alone. A log that
//! keeps no files (the explorer's, `offsetlab run`'s) counts the same bytes by the same rule, so a
//! lab's export replayed in memory rolls and deletes the segments its durable lab did — the log
//! start after retention, and every figure behind it, come out the same.

use super::config::SegmentLimits;
use super::{BatchShape, TimestampType};
use crate::clock::Millis;
use crate::record::{NewRecord, Offset};
use offsetlab_records::batch::{self, record_size, BatchError, BatchHeader};
use offsetlab_records::{Compression, ProducedBatches};

/// The header every v2 batch starts with.
pub const BATCH_HEADER: usize = batch::HEADER_LEN;

/// Largest batch an append writes; larger appends are split. A fetch reads (and checks) whole
/// batches, so this is also what a fetch of a few hundred records costs at most: 64 KiB, about
/// 550 records of 100 bytes (Kafka's producers batch 16 KiB by default).
pub const MAX_BATCH_BYTES: usize = 64 << 10;

/// What the active segment holds: enough to decide whether the next batch fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fill {
    pub records: usize,
    pub bytes: usize,
    pub created_at: Millis,
}

impl SegmentLimits {
    /// Whether an append of `incoming` bytes first rolls a new segment: the active one holds
    /// records and is full by count, would go past `segment.bytes`, or is older than `segment.ms`.
    /// An empty segment takes the append whatever its size — a batch is never split to fit.
    pub fn should_roll(&self, active: Fill, incoming: usize, now: Millis) -> bool {
        active.records > 0
            && (active.records >= self.max_records
                || active.bytes + incoming > self.max_bytes
                || now - active.created_at >= self.max_age_ms)
    }
}

/// One batch an append writes: how many of the records it holds and its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Planned {
    pub records: usize,
    pub bytes: usize,
}

/// The batches that records appended one after another go into the active segment as: batches
/// of one control flag, at most [`MAX_BATCH_BYTES`], within the segment's room by count and by
/// bytes (a fresh segment always takes at least one record, however large). Pushes them to
/// `out` and returns how many records they hold — zero when the segment is full and must roll.
/// The records' offsets follow one another; each batch's timestamps count from its first
/// record's.
pub fn plan_append(
    records: &[NewRecord<'_>],
    active: Fill,
    limits: &SegmentLimits,
    out: &mut Vec<Planned>,
) -> usize {
    let fresh = active.records == 0;
    let mut records_room = limits.max_records.saturating_sub(active.records).max(1);
    let mut bytes_room = limits.max_bytes.saturating_sub(active.bytes);
    let (mut i, mut taken) = (0, 0);
    while i < records.len() && records_room > 0 {
        let (control, base_ts) = (records[i].control, records[i].timestamp);
        let mut j = i;
        let mut size = BATCH_HEADER;
        while j < records.len() && j - i < records_room && records[j].control == control {
            let s = record_size(
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
            break;
        }
        out.push(Planned {
            records: j - i,
            bytes: size,
        });
        bytes_room = bytes_room.saturating_sub(size);
        records_room -= j - i;
        taken += j - i;
        i = j;
    }
    taken
}

/// How many of a producer's batches — `(bytes, records)` each, as they came — go into the active
/// segment before it must roll: batches are never split or merged; one that would take the
/// segment past its limits waits for the next one, unless it is a fresh segment's first.
pub fn fit_produced(
    batches: impl Iterator<Item = (usize, usize)>,
    active: Fill,
    limits: &SegmentLimits,
) -> usize {
    let fresh = active.records == 0;
    let records_room = limits.max_records.saturating_sub(active.records);
    let bytes_room = limits.max_bytes.saturating_sub(active.bytes);
    let (mut len, mut records, mut n) = (0, 0, 0);
    for (bytes, count) in batches {
        let first_in_fresh = fresh && n == 0;
        if !first_in_fresh && (len + bytes > bytes_room || records + count > records_room) {
            break;
        }
        (len, records, n) = (len + bytes, records + count, n + 1);
    }
    n
}

/// The batches the log cleaner writes a segment's kept records back as: runs of one control
/// flag, closed once their estimated size (keys, values, headers and 16 bytes a record) reaches
/// [`MAX_BATCH_BYTES`]. Returns each batch's number of records, in order; each is then encoded
/// at the records' own offsets ([`batch::encode`]), its timestamps from its first record's.
pub fn plan_cleaned(kept: &[(Offset, NewRecord<'_>)]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < kept.len() {
        let control = kept[start].1.control;
        let mut end = start;
        let mut size = BATCH_HEADER;
        while end < kept.len() && kept[end].1.control == control && (end == start || size < MAX_BATCH_BYTES) {
            let r = &kept[end].1;
            size += r.key.map_or(0, <[u8]>::len) + r.value.map_or(0, <[u8]>::len) + r.headers.len() + 16;
            end += 1;
        }
        out.push(end - start);
        start = end;
    }
    out
}

/// The one batch a `send` line writes (and an append of a whole batch): the records encoded
/// against the producer's base timestamp, stamped with the log append time when the topic says
/// so, and compressed as the producer compressed them — with its very bytes when the shape has
/// them (the engine checked they decompress to these records), else with the lab's compressor.
pub fn shaped_batch(
    records: &[NewRecord<'_>],
    shape: &BatchShape<'_>,
    now: Millis,
    stamp: TimestampType,
) -> Result<(Vec<u8>, BatchHeader), BatchError> {
    let mut buf = Vec::new();
    let base = shape
        .base_timestamp
        .unwrap_or_else(|| records.first().map_or(0, |r| r.timestamp));
    batch::encode_consecutive_based(&mut buf, 0, records, -1, base);
    if stamp == TimestampType::LogAppendTime {
        batch::stamp_log_append_time(&mut buf, now)?;
    }
    if shape.codec != Compression::None {
        let kept = shape
            .compressed
            .and_then(|c| offsetlab_records::produced::with_compressed_records(&buf, shape.codec, c));
        match kept {
            Some(b) => buf = b,
            None => {
                let mut one = ProducedBatches::validate(buf)?;
                one.convert(shape.codec);
                buf = one.into_bytes();
            }
        }
    }
    let header = BatchHeader::parse(&buf)?;
    Ok((buf, header))
}

/// The bytes [`shaped_batch`] writes, counted without writing them when nothing is compressed.
pub fn shaped_len(
    records: &[NewRecord<'_>],
    shape: &BatchShape<'_>,
    now: Millis,
    stamp: TimestampType,
) -> usize {
    let base = shape
        .base_timestamp
        .unwrap_or_else(|| records.first().map_or(0, |r| r.timestamp));
    let plain = batch::encoded_len_consecutive(records, base);
    if shape.codec == Compression::None {
        return plain;
    }
    shaped_batch(records, shape, now, stamp).map_or(plain, |(b, _)| b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_records: usize, max_bytes: usize) -> SegmentLimits {
        SegmentLimits {
            max_records,
            max_bytes,
            max_age_ms: 60_000,
        }
    }

    #[test]
    fn a_planned_batch_takes_the_bytes_the_encoder_writes() {
        let values: Vec<Vec<u8>> = (0..40).map(|i| vec![b'v'; i * 7]).collect();
        let records: Vec<NewRecord<'_>> = values
            .iter()
            .enumerate()
            .map(|(i, v)| NewRecord::new(1_000 + i as i64 * 13, Some(b"k"), Some(v)))
            .collect();
        let empty = Fill {
            records: 0,
            bytes: 0,
            created_at: 0,
        };
        let mut out = Vec::new();
        let taken = plan_append(&records, empty, &limits(usize::MAX, 2_000), &mut out);
        assert!(
            taken > 0 && taken < records.len(),
            "the segment's bytes stop the append"
        );
        let mut i = 0;
        for p in &out {
            let mut buf = Vec::new();
            let written = batch::encode_consecutive(&mut buf, 0, &records[i..i + p.records], -1);
            assert_eq!(p.bytes, written);
            i += p.records;
        }
        assert!(out.iter().map(|p| p.bytes).sum::<usize>() <= 2_000);
    }

    #[test]
    fn a_fresh_segment_takes_one_batch_of_any_size_and_a_full_one_none() {
        let big = vec![b'x'; 5_000];
        let records = [NewRecord::new(0, None, Some(&big))];
        let fresh = Fill {
            records: 0,
            bytes: 0,
            created_at: 0,
        };
        let mut out = Vec::new();
        assert_eq!(plan_append(&records, fresh, &limits(10, 100), &mut out), 1);
        let holding = Fill {
            records: 1,
            bytes: 50,
            created_at: 0,
        };
        assert_eq!(
            plan_append(&records, holding, &limits(10, 100), &mut Vec::new()),
            0
        );
        assert_eq!(fit_produced([(5_000, 3)].into_iter(), fresh, &limits(2, 100)), 1);
        assert_eq!(
            fit_produced([(60, 1), (60, 1)].into_iter(), holding, &limits(10, 200)),
            2
        );
        assert_eq!(
            fit_produced([(60, 1), (100, 1)].into_iter(), holding, &limits(10, 200)),
            1
        );
    }
}

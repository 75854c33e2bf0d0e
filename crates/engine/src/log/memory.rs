//! [`MemoryLog`]: a partition log held in memory, segment by segment.

use super::config::SegmentLimits;
use super::layout::{self, Fill};
use super::segment::Segment;
use super::{BatchShape, EncodedAppend, PartitionLog, SegmentInfo, TimestampType};
use crate::clock::Millis;
use crate::record::{NewRecord, Offset, RecordRef};
use offsetlab_records::ProducedBatches;

#[derive(Debug, Clone)]
pub struct MemoryLog {
    limits: SegmentLimits,
    /// Oldest first; the last one is the active segment. Never empty.
    segments: Vec<Segment>,
    log_start: Offset,
    log_end: Offset,
}

impl MemoryLog {
    pub fn new(limits: SegmentLimits) -> Self {
        Self {
            limits,
            segments: vec![Segment::new(0, 0)],
            log_start: 0,
            log_end: 0,
        }
    }

    fn active(&self) -> &Segment {
        // `segments` is never empty: the constructor adds one and deletion keeps the active one.
        &self.segments[self.segments.len() - 1]
    }

    fn fill(&self) -> Fill {
        let a = self.active();
        Fill {
            records: a.len(),
            bytes: a.bytes(),
            created_at: a.created_at,
        }
    }

    /// Makes room for one batch of `count` records and `bytes` bytes, as a segment file does
    /// for a producer's batch: a roll first when it would not fit ([`layout::fit_produced`]).
    fn place_batch(&mut self, bytes: usize, count: usize, now: Millis) {
        if self.limits.should_roll(self.fill(), bytes, now)
            || layout::fit_produced(std::iter::once((bytes, count)), self.fill(), &self.limits) == 0
        {
            self.roll(now);
        }
        self.begin_batch(bytes, now);
    }

    /// The next records pushed form one batch of `bytes` bytes in the active segment.
    fn begin_batch(&mut self, bytes: usize, now: Millis) {
        let offset = self.log_end;
        let last = self.segments.len() - 1;
        let active = &mut self.segments[last];
        if active.is_empty() {
            active.base_offset = offset;
            active.created_at = now;
        }
        active.begin_batch(bytes);
    }

    /// Appends one record to the active segment.
    fn push(&mut self, record: NewRecord<'_>, now: Millis) -> Offset {
        let offset = self.log_end;
        let last = self.segments.len() - 1;
        let active = &mut self.segments[last];
        if active.is_empty() {
            active.base_offset = offset;
            active.created_at = now;
        }
        active.push(offset, &record);
        self.log_end += 1;
        offset
    }

    /// Pushes one batch's records, stamped with its log append time as a durable log stamps the
    /// batch (readers see `now`), or with the producer's own timestamps.
    fn push_stamped(&mut self, records: &[NewRecord<'_>], now: Millis, stamp: TimestampType) {
        for r in records {
            let timestamp = match stamp {
                TimestampType::LogAppendTime => now,
                TimestampType::CreateTime => r.timestamp,
            };
            self.push(NewRecord { timestamp, ..*r }, now);
        }
    }

    fn roll(&mut self, now: Millis) {
        if let Some(last) = self.segments.last_mut() {
            last.shrink();
        }
        self.segments.push(Segment::new(self.log_end, now));
    }

    /// Index of the segment that may hold `offset`: the last one whose base is ≤ offset.
    fn segment_for(&self, offset: Offset) -> usize {
        self.segments
            .partition_point(|s| s.base_offset <= offset)
            .saturating_sub(1)
    }

    fn next_offset_of(&self, index: usize) -> Offset {
        self.segments
            .get(index + 1)
            .map_or(self.log_end, |s| s.base_offset)
    }

    /// The log start moves up to the first record still present, never back (a DeleteRecords
    /// point inside a segment stays).
    fn recompute_log_start(&mut self) {
        let first = self
            .segments
            .iter()
            .find_map(Segment::first_offset)
            .unwrap_or(self.log_end);
        self.log_start = self.log_start.max(first);
    }
}

impl PartitionLog for MemoryLog {
    fn append(&mut self, record: NewRecord<'_>, now: Millis) -> Offset {
        self.append_batch(&[record], now)
    }

    /// In the batches a segment file writes them as ([`layout::plan_append`]).
    fn append_batch(&mut self, records: &[NewRecord<'_>], now: Millis) -> Offset {
        let first = self.log_end;
        let mut i = 0;
        let mut planned = Vec::new();
        while i < records.len() {
            let incoming = layout::BATCH_HEADER + offsetlab_records::batch::record_size(0, 0, &records[i]);
            if self.limits.should_roll(self.fill(), incoming, now) {
                self.roll(now);
            }
            planned.clear();
            if layout::plan_append(&records[i..], self.fill(), &self.limits, &mut planned) == 0 {
                self.roll(now);
                continue;
            }
            for p in &planned {
                self.begin_batch(p.bytes, now);
                for r in &records[i..i + p.records] {
                    self.push(*r, now);
                }
                i += p.records;
            }
        }
        first
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
        let first = self.log_end;
        if records.is_empty() {
            return first;
        }
        self.place_batch(layout::shaped_len(records, shape, now, stamp), records.len(), now);
        self.push_stamped(records, now, stamp);
        first
    }

    /// The producer's batches, each taking the bytes it came with.
    fn append_encoded(
        &mut self,
        batches: &mut ProducedBatches,
        now: Millis,
        stamp: TimestampType,
    ) -> Result<EncodedAppend, String> {
        let first = self.log_end;
        if stamp == TimestampType::LogAppendTime {
            batches.stamp_log_append_time(now);
        }
        let mut sizes = batches.headers().iter().map(|h| h.total_len);
        batches.for_each_batch(&mut |records| {
            let kept: Vec<NewRecord<'_>> = records
                .iter()
                .map(|r| NewRecord { control: false, ..*r })
                .collect();
            let bytes = sizes.next().unwrap_or_default();
            self.place_batch(bytes, kept.len(), now);
            self.push_stamped(&kept, now, stamp);
        });
        Ok(EncodedAppend {
            first,
            kept: Vec::new(),
        })
    }

    fn log_start_offset(&self) -> Offset {
        self.log_start
    }

    fn log_end_offset(&self) -> Offset {
        self.log_end
    }

    fn read(&self, from: Offset, max_records: usize, visit: &mut dyn FnMut(RecordRef<'_>)) -> usize {
        let mut seen = 0;
        let from = from.max(self.log_start);
        let mut seg = self.segment_for(from);
        let mut idx = self.segments[seg].index_of(from);
        while seen < max_records && seg < self.segments.len() {
            let s = &self.segments[seg];
            if idx >= s.len() {
                seg += 1;
                idx = 0;
                continue;
            }
            visit(s.get(idx));
            seen += 1;
            idx += 1;
        }
        seen
    }

    fn offset_for_timestamp(&self, timestamp: i64) -> Option<Offset> {
        // Records below the log start (DeleteRecords inside a segment) are gone.
        let start = self.log_start;
        self.segments
            .iter()
            .filter(|s| s.max_timestamp.is_some_and(|m| m >= timestamp))
            .find_map(|s| {
                (s.index_of(start)..s.len())
                    .map(|i| s.get(i))
                    .find(|r| r.timestamp >= timestamp)
                    .map(|r| r.offset)
            })
    }

    fn batch_end(&self, offset: Offset) -> Offset {
        if offset < self.log_start || offset >= self.log_end {
            return offset + 1;
        }
        let index = self.segment_for(offset);
        let seg = &self.segments[index];
        let at = seg.index_of(offset);
        if seg.offset_of_index(at) != Some(offset) {
            return offset + 1;
        }
        match seg.batch_end_index(at) {
            None => offset + 1,
            Some(end) => seg
                .offset_of_index(end)
                .unwrap_or_else(|| self.next_offset_of(index)),
        }
    }

    fn segments(&self) -> Vec<SegmentInfo> {
        let last = self.segments.len() - 1;
        self.segments
            .iter()
            .enumerate()
            .map(|(i, s)| SegmentInfo {
                base_offset: s.base_offset,
                next_offset: self.next_offset_of(i),
                // Retained records: the first segment may hide some below the log start.
                records: s.len() - if i == 0 { s.index_of(self.log_start) } else { 0 },
                bytes: s.bytes(),
                max_timestamp: s.max_timestamp,
                active: i == last,
            })
            .collect()
    }

    fn delete_segments_before(&mut self, offset: Offset) -> usize {
        let before = self.record_count();
        while self.segments.len() > 1 && self.next_offset_of(0) <= offset {
            self.segments.remove(0);
        }
        // Kafka's log start offset is the base of the first remaining segment (or wherever
        // DeleteRecords moved it); never past the log end.
        self.log_start = self.log_start.max(self.segments[0].base_offset).min(self.log_end);
        if self.segments.len() == 1 && self.segments[0].is_empty() {
            self.log_start = self.log_end;
        }
        // Records below an earlier log start were gone already.
        before - self.record_count()
    }

    fn delete_records_before(&mut self, offset: Offset) -> usize {
        let target = offset.clamp(self.log_start, self.log_end);
        let before = self.record_count();
        while self.segments.len() > 1 && self.next_offset_of(0) <= target {
            self.segments.remove(0);
        }
        self.log_start = target;
        before - self.record_count()
    }

    fn compact(&mut self, keep: &mut dyn FnMut(RecordRef<'_>) -> bool) -> usize {
        let last = self.segments.len() - 1;
        let mut removed = 0;
        for seg in &mut self.segments[..last] {
            if let Some((cleaned, n)) = seg.retain(keep) {
                *seg = cleaned;
                removed += n;
            }
        }
        self.recompute_log_start();
        removed
    }

    fn truncate_to(&mut self, offset: Offset) -> usize {
        let offset = offset.clamp(self.log_start, self.log_end);
        let before = self.record_count();
        while self.segments.len() > 1 && self.segments[self.segments.len() - 1].base_offset >= offset {
            self.segments.pop();
        }
        let last = self.segments.len() - 1;
        let index = self.segments[last].index_of(offset);
        self.segments[last].truncate(index);
        self.log_end = offset;
        before - self.record_count()
    }

    fn size_in_bytes(&self) -> usize {
        self.segments.iter().map(Segment::size_in_bytes).sum::<usize>() + std::mem::size_of::<Self>()
    }

    fn record_count(&self) -> usize {
        // DeleteRecords can move the log start inside the first segment.
        let hidden = self.segments.first().map_or(0, |s| s.index_of(self.log_start));
        self.segments.iter().map(Segment::len).sum::<usize>() - hidden
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::TopicConfig;

    fn rec(ts: i64, key: &str, value: &str) -> (i64, String, String) {
        (ts, key.to_string(), value.to_string())
    }

    fn log_with(segment_records: usize, recs: &[(i64, String, String)]) -> MemoryLog {
        let cfg = TopicConfig {
            segment_records: Some(segment_records),
            ..TopicConfig::default()
        };
        let mut log = MemoryLog::new(cfg.segment_limits());
        for (ts, k, v) in recs {
            log.append(NewRecord::new(*ts, Some(k.as_bytes()), Some(v.as_bytes())), *ts);
        }
        log
    }

    fn offsets(log: &MemoryLog, from: Offset, max: usize) -> Vec<Offset> {
        let mut out = Vec::new();
        log.read(from, max, &mut |r| out.push(r.offset));
        out
    }

    #[test]
    fn offsets_are_dense_from_zero_and_reading_deletes_nothing() {
        let recs: Vec<_> = (0..10).map(|i| rec(i, &format!("k{i}"), "v")).collect();
        let log = log_with(4, &recs);
        assert_eq!(log.log_start_offset(), 0);
        assert_eq!(log.log_end_offset(), 10);
        assert_eq!(offsets(&log, 0, 100), (0..10).collect::<Vec<_>>());
        assert_eq!(offsets(&log, 0, 100), (0..10).collect::<Vec<_>>());
        assert_eq!(offsets(&log, 3, 4), vec![3, 4, 5, 6]);
        assert_eq!(log.segments().len(), 3);
        assert_eq!(log.segments()[1].base_offset, 4);
        assert!(log.segments()[2].active);
    }

    #[test]
    fn keys_values_and_tombstones_round_trip() {
        let mut log = MemoryLog::new(TopicConfig::default().segment_limits());
        log.append(NewRecord::new(1, Some(b"a"), Some(b"1")), 1);
        log.append(NewRecord::new(2, Some(b"a"), None), 2);
        log.append(NewRecord::new(3, None, Some(b"")), 3);
        let mut got = Vec::new();
        log.read(0, 10, &mut |r| got.push(r.to_owned()));
        assert_eq!(got[0].key.as_deref(), Some(&b"a"[..]));
        assert_eq!(got[0].value.as_deref(), Some(&b"1"[..]));
        assert_eq!(got[1].value, None);
        assert_eq!(got[2].key, None);
        assert_eq!(got[2].value.as_deref(), Some(&b""[..]));
    }

    #[test]
    fn retention_deletes_whole_segments_never_the_active_one() {
        let recs: Vec<_> = (0..10).map(|i| rec(i, "k", "v")).collect();
        let mut log = log_with(4, &recs);
        assert_eq!(
            log.delete_segments_before(6),
            4,
            "only segment [0,4) ends before 6"
        );
        assert_eq!(log.log_start_offset(), 4);
        assert_eq!(
            log.delete_segments_before(100),
            4,
            "the active segment [8,10) stays"
        );
        assert_eq!(log.log_start_offset(), 8);
        assert_eq!(
            offsets(&log, 0, 100),
            vec![8, 9],
            "reads below log start begin at it"
        );
    }

    #[test]
    fn delete_records_moves_the_log_start_inside_a_segment() {
        let recs: Vec<_> = (0..10).map(|i| rec(i, "k", "v")).collect();
        let mut log = log_with(4, &recs);
        assert_eq!(log.delete_records_before(6), 6);
        assert_eq!((log.log_start_offset(), log.record_count()), (6, 4));
        assert_eq!(offsets(&log, 0, 100), vec![6, 7, 8, 9]);
        assert_eq!(log.segments().len(), 2, "segment [0,4) went, [4,8) stays");
        assert_eq!(log.delete_records_before(100), 4, "clamped to the log end");
        assert_eq!((log.log_start_offset(), log.log_end_offset()), (10, 10));
    }

    #[test]
    fn timestamp_lookup_finds_the_earliest_offset_at_or_after() {
        let recs: Vec<_> = [10, 20, 20, 30, 40].iter().map(|&t| rec(t, "k", "v")).collect();
        let log = log_with(2, &recs);
        assert_eq!(log.offset_for_timestamp(0), Some(0));
        assert_eq!(log.offset_for_timestamp(20), Some(1));
        assert_eq!(log.offset_for_timestamp(21), Some(3));
        assert_eq!(log.offset_for_timestamp(41), None);
    }

    #[test]
    fn compaction_that_removes_a_segments_first_record_keeps_the_others_offsets() {
        let recs: Vec<_> = ["a", "b", "a", "c", "d"].iter().map(|k| rec(0, k, "v")).collect();
        let mut log = log_with(2, &recs);
        let removed = log.compact(&mut |r| r.offset != 0);
        assert_eq!(removed, 1);
        assert_eq!(offsets(&log, 0, 10), vec![1, 2, 3, 4]);
        assert_eq!(offsets(&log, 1, 1), vec![1]);
        assert_eq!(log.log_start_offset(), 1);
    }

    #[test]
    fn compaction_keeps_offsets_and_leaves_gaps() {
        let recs: Vec<_> = ["a", "b", "a", "b", "c"].iter().map(|k| rec(0, k, "v")).collect();
        let mut log = log_with(2, &recs);
        let latest: std::collections::HashMap<Vec<u8>, Offset> =
            [(b"a".to_vec(), 2), (b"b".to_vec(), 3), (b"c".to_vec(), 4)].into();
        let removed = log.compact(&mut |r| r.key.and_then(|k| latest.get(k)) == Some(&r.offset));
        assert_eq!(removed, 2);
        assert_eq!(offsets(&log, 0, 10), vec![2, 3, 4]);
        assert_eq!(log.log_start_offset(), 2);
        assert_eq!(log.log_end_offset(), 5);
    }

    #[test]
    fn segments_roll_by_age_and_bytes() {
        // `segment.bytes` counts a segment file's bytes: each append here is a batch of one
        // record, its 61-byte header included.
        let five = NewRecord::new(0, None, Some(b"12345"));
        let batch = layout::BATCH_HEADER + offsetlab_records::batch::record_size(0, 0, &five);
        assert_eq!(batch, 73);
        let cfg = TopicConfig {
            segment_ms: 100,
            segment_bytes: 2 * batch,
            ..TopicConfig::default()
        };
        let mut log = MemoryLog::new(cfg.segment_limits());
        log.append(five, 0);
        log.append(five, 50);
        assert_eq!(log.segments().len(), 1);
        assert_eq!(log.segments()[0].bytes, 146);
        log.append(NewRecord::new(0, None, Some(b"1")), 60);
        assert_eq!(log.segments().len(), 2, "146 bytes full");
        log.append(NewRecord::new(0, None, Some(b"1")), 200);
        assert_eq!(log.segments().len(), 3, "older than segment.ms");
    }

    #[test]
    fn a_truncation_inside_a_batch_counts_its_rewritten_records() {
        let mut log = MemoryLog::new(TopicConfig::default().segment_limits());
        let values: Vec<Vec<u8>> = (0..6).map(|i| vec![b'v'; 10 * i]).collect();
        let batch: Vec<NewRecord<'_>> = values
            .iter()
            .map(|v| NewRecord::new(5, Some(b"k"), Some(v)))
            .collect();
        log.append_batch(&batch, 0);
        log.append(NewRecord::new(9, None, Some(b"x")), 0);
        let whole = log.segments()[0].bytes;
        let written = offsetlab_records::batch::encoded_len_consecutive(&batch, 5);
        assert_eq!(whole, written + 69, "one batch of six, one of one");
        log.truncate_to(6);
        assert_eq!(
            log.segments()[0].bytes,
            written,
            "at a batch's edge: the batch before stays whole"
        );
        log.truncate_to(2);
        assert_eq!(
            log.segments()[0].bytes,
            offsetlab_records::batch::encoded_len_consecutive(&batch[..2], 5),
            "inside a batch: its first two records written again"
        );
        log.truncate_to(0);
        assert_eq!(log.segments()[0].bytes, 0);
    }
}

//! [`MemoryLog`]: a partition log held in memory, segment by segment.

use super::config::SegmentLimits;
use super::segment::Segment;
use super::{PartitionLog, SegmentInfo, TimestampType};
use crate::clock::Millis;
use crate::record::{NewRecord, Offset, RecordRef};

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

    fn should_roll(&self, record: &NewRecord<'_>, now: Millis) -> bool {
        self.should_roll_for(1, data_bytes(record), now)
    }

    /// Whether `records` records of `bytes` data bytes must go to a new segment: the active one
    /// holds records and they would take it past a limit, or it is too old.
    fn should_roll_for(&self, records: usize, bytes: usize, now: Millis) -> bool {
        let active = self.active();
        if active.is_empty() {
            return false;
        }
        active.len() + records > self.limits.max_records
            || active.data_bytes() + bytes > self.limits.max_bytes
            || now - active.created_at >= self.limits.max_age_ms
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

/// The bytes a record counts for in a segment's size: its key and value.
fn data_bytes(record: &NewRecord<'_>) -> usize {
    record.key.map_or(0, <[u8]>::len) + record.value.map_or(0, <[u8]>::len)
}

impl PartitionLog for MemoryLog {
    fn append(&mut self, record: NewRecord<'_>, now: Millis) -> Offset {
        if self.should_roll(&record, now) {
            self.roll(now);
        }
        self.push(record, now)
    }

    fn append_whole(&mut self, records: &[NewRecord<'_>], now: Millis, stamp: TimestampType) -> Offset {
        let first = self.log_end;
        let bytes = records.iter().map(data_bytes).sum();
        if self.should_roll_for(records.len(), bytes, now) {
            self.roll(now);
        }
        // Stamped with its log append time as a durable log stamps the batch (readers see
        // `now`), or with the producer's own timestamps.
        for r in records {
            let timestamp = match stamp {
                TimestampType::LogAppendTime => now,
                TimestampType::CreateTime => r.timestamp,
            };
            self.push(NewRecord { timestamp, ..*r }, now);
        }
        first
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
                bytes: s.data_bytes(),
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
            let (cleaned, n) = seg.retain(keep);
            *seg = cleaned;
            removed += n;
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
        let cfg = TopicConfig {
            segment_ms: 100,
            segment_bytes: 10,
            ..TopicConfig::default()
        };
        let mut log = MemoryLog::new(cfg.segment_limits());
        log.append(NewRecord::new(0, None, Some(b"12345")), 0);
        log.append(NewRecord::new(0, None, Some(b"12345")), 50);
        assert_eq!(log.segments().len(), 1);
        log.append(NewRecord::new(0, None, Some(b"1")), 60);
        assert_eq!(log.segments().len(), 2, "10 bytes full");
        log.append(NewRecord::new(0, None, Some(b"1")), 200);
        assert_eq!(log.segments().len(), 3, "older than segment.ms");
    }
}

//! The audit: what a group's sink received, record by record, and what that adds up to.
//!
//! Every application of a record to a group's sink is a [`Delivery`]. From the deliveries and
//! the group's committed offsets the audit derives the lab's figures, with one definition
//! everywhere (DESIGN.md, "Audit"):
//!
//! - `delivered(o)`: how many times the record at offset `o` was applied;
//! - **lost**: records the group has passed (below its committed offset, or deleted by retention
//!   before it read them), counted from where the group first started, never applied, and not
//!   deliberately skipped by a seek or an offset reset;
//! - **lost before a rewind**: records that were lost when a seek or an offset reset sent the
//!   group back over them (a rewind makes a loss stop counting as one, since the group will read
//!   them again) — kept, so the loss never vanishes from view, with how many were **replayed
//!   since**;
//! - **duplicates**: `Σ max(0, delivered(o) − 1)`, split into **redeliveries** (a crash, a
//!   restart or a rebalance made the group read the record again) and **replays** (a seek or an
//!   offset reset asked for it).
//!
//! The counters are kept incrementally; [`GroupAudit::recount`] recomputes them from the raw
//! delivery log, and the property tests check that both always agree.

use crate::clock::Millis;
use crate::delivery::DeliveryReason;
use crate::log::PartitionLog;
use crate::record::{Offset, TopicPartition};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One application of a record to a group's sink.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    pub at: Millis,
    pub tp: TopicPartition,
    pub offset: Offset,
    pub key: String,
    pub consumer: String,
    pub incarnation: u32,
    pub reason: DeliveryReason,
}

/// Delivery counts of one partition, for offsets from `base` on.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PartitionAudit {
    /// Where the group first started reading this partition: losses count from here.
    pub first_start: Offset,
    base: Offset,
    /// Times each offset from `base` was applied; saved as runs (ten million ones are one run).
    #[serde(with = "runs")]
    counts: Vec<u32>,
    /// Half-open ranges skipped on purpose (a seek or reset forward).
    skipped: Vec<(Offset, Offset)>,
    /// Half-open ranges that were lost when a rewind sent the group back over them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    rewound: Vec<(Offset, Offset)>,
}

impl PartitionAudit {
    fn new(first_start: Offset) -> Self {
        Self {
            first_start,
            base: first_start,
            counts: Vec::new(),
            skipped: Vec::new(),
            rewound: Vec::new(),
        }
    }

    pub fn delivered(&self, offset: Offset) -> u32 {
        if offset < self.base {
            return 0;
        }
        self.counts
            .get((offset - self.base) as usize)
            .copied()
            .unwrap_or(0)
    }

    fn bump(&mut self, offset: Offset) -> u32 {
        if offset < self.base {
            let mut grown = vec![0; (self.base - offset) as usize];
            grown.append(&mut self.counts);
            self.counts = grown;
            self.base = offset;
        }
        let i = (offset - self.base) as usize;
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
        self.counts[i]
    }

    /// Ranges skipped on purpose (seek or reset forward), as recorded.
    pub fn skipped_ranges(&self) -> &[(Offset, Offset)] {
        &self.skipped
    }

    /// Run-length encoded delivery counts: `[from, to_exclusive, count]` triples from the first
    /// start to the highest delivered offset.
    pub fn delivery_runs(&self) -> Vec<[i64; 3]> {
        let mut runs: Vec<[i64; 3]> = Vec::new();
        let start = self.first_start.min(self.base);
        let end = self.base + self.counts.len() as Offset;
        for o in start..end {
            let c = i64::from(self.delivered(o));
            match runs.last_mut() {
                Some(run) if run[1] == o && run[2] == c => run[1] = o + 1,
                _ => runs.push([o, o + 1, c]),
            }
        }
        runs
    }
}

/// What the audit concludes for one partition (or a whole group, summed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditFigures {
    pub lost: u64,
    pub duplicates: u64,
    pub redeliveries: u64,
    pub crash_redeliveries: u64,
    pub replays: u64,
    /// Records skipped on purpose (seek or reset forward) and never applied.
    pub skipped: u64,
    pub deliveries: u64,
    /// Records that were lost when a rewind sent the group back over them, and are not lost now.
    pub lost_before_rewind: u64,
    /// Of those, the records applied since.
    pub replayed_since_rewind: u64,
}

impl std::ops::AddAssign for AuditFigures {
    fn add_assign(&mut self, o: Self) {
        self.lost += o.lost;
        self.duplicates += o.duplicates;
        self.redeliveries += o.redeliveries;
        self.crash_redeliveries += o.crash_redeliveries;
        self.replays += o.replays;
        self.skipped += o.skipped;
        self.deliveries += o.deliveries;
        self.lost_before_rewind += o.lost_before_rewind;
        self.replayed_since_rewind += o.replayed_since_rewind;
    }
}

/// Where a group resumes a partition, and what retention left of it: the inputs of "lost".
#[derive(Clone, Copy)]
pub struct Progress<'a> {
    /// The offset the group would restart from (its committed offset, or the sink's).
    pub resume: Option<Offset>,
    pub log: &'a dyn PartitionLog,
    /// Offsets the group's application is never handed (transaction markers; with
    /// `read_committed`, aborted records): passing them loses nothing.
    pub hidden: &'a BTreeSet<Offset>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GroupAudit {
    #[serde(with = "crate::serde_pairs")]
    partitions: BTreeMap<TopicPartition, PartitionAudit>,
    /// The raw delivery log, for [`GroupAudit::recount`] (the property tests' oracle): one
    /// entry per applied record, so it is kept only when asked ([`GroupAudit::keep_log`]; a lab
    /// that runs for a week must not grow with its traffic), and never saved with a snapshot.
    #[serde(skip)]
    deliveries: Vec<Delivery>,
    #[serde(skip)]
    keep_log: bool,
    /// Records applied so far, kept as it grows: the workshop caps read it on every line. `None`
    /// in a snapshot from before it was saved — counted once from the per-offset counts then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    applied: Option<u64>,
    /// Incremental counters per partition: duplicates, redeliveries, crash redeliveries, replays.
    #[serde(with = "crate::serde_pairs")]
    counters: BTreeMap<TopicPartition, [u64; 4]>,
}

/// A `Vec<u32>` saved as `[value, run length]` pairs.
mod runs {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u32], s: S) -> Result<S::Ok, S::Error> {
        let mut runs: Vec<(u32, u64)> = Vec::new();
        for &x in v {
            match runs.last_mut() {
                Some((y, n)) if *y == x => *n += 1,
                _ => runs.push((x, 1)),
            }
        }
        s.collect_seq(runs)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u32>, D::Error> {
        let runs = Vec::<(u32, u64)>::deserialize(d)?;
        let total: u64 = runs.iter().map(|r| r.1).sum();
        if total > 1 << 34 {
            return Err(serde::de::Error::custom("delivery counts too long"));
        }
        let mut v = Vec::with_capacity(total as usize);
        for (x, n) in runs {
            v.extend(std::iter::repeat_n(x, n as usize));
        }
        Ok(v)
    }
}

impl GroupAudit {
    /// Notes where the group starts reading `tp`, if it never read it before.
    pub fn note_start(&mut self, tp: &TopicPartition, offset: Offset) {
        self.partitions
            .entry(tp.clone())
            .or_insert_with(|| PartitionAudit::new(offset));
    }

    pub fn partition(&self, tp: &TopicPartition) -> Option<&PartitionAudit> {
        self.partitions.get(tp)
    }

    pub fn partitions(&self) -> impl Iterator<Item = (&TopicPartition, &PartitionAudit)> {
        self.partitions.iter()
    }

    pub fn delivered(&self, tp: &TopicPartition, offset: Offset) -> u32 {
        self.partitions.get(tp).map_or(0, |p| p.delivered(offset))
    }

    /// The reason to record for applying `offset` now: `First` if it was never applied,
    /// otherwise `repeat` (what the consumer's position came from).
    pub fn classify(&self, tp: &TopicPartition, offset: Offset, repeat: DeliveryReason) -> DeliveryReason {
        if self.delivered(tp, offset) == 0 {
            DeliveryReason::First
        } else {
            repeat
        }
    }

    pub fn record(&mut self, d: Delivery) {
        let part = self
            .partitions
            .entry(d.tp.clone())
            .or_insert_with(|| PartitionAudit::new(d.offset));
        let n = part.bump(d.offset);
        self.applied = Some(self.applied.map_or_else(|| self.counted(), |a| a + 1));
        let c = self.counters.entry(d.tp.clone()).or_default();
        if n > 1 {
            c[0] += 1;
            if d.reason.is_redelivery() {
                c[1] += 1;
            }
            if d.reason == DeliveryReason::CrashRedelivery {
                c[2] += 1;
            }
            if d.reason == DeliveryReason::Replay {
                c[3] += 1;
            }
        }
        if self.keep_log {
            self.deliveries.push(d);
        }
    }

    /// Whether [`GroupAudit::record`] keeps each delivery in the raw log from now on.
    pub fn keep_log(&mut self, keep: bool) {
        self.keep_log = keep;
    }

    /// Records applied to the group's sink so far, redeliveries included (saved with the lab:
    /// the per-offset counts, not a log).
    pub fn applied(&self) -> u64 {
        self.applied.unwrap_or_else(|| self.counted())
    }

    /// [`GroupAudit::applied`] summed from the per-offset counts.
    fn counted(&self) -> u64 {
        self.partitions
            .values()
            .map(|p| p.counts.iter().map(|&c| u64::from(c)).sum::<u64>())
            .sum()
    }

    /// Marks `[from, to)` as skipped on purpose. The caller clamps it to the retained log.
    pub fn mark_skipped(&mut self, tp: &TopicPartition, from: Offset, to: Offset) {
        if to > from {
            if let Some(p) = self.partitions.get_mut(tp) {
                p.skipped.push((from, to));
            }
        }
    }

    /// Records `[from, to)` of `tp` were handed to the application and then committed over
    /// without being processed: whatever a seek or reset skipped there, they are now lost.
    pub fn unskip(&mut self, tp: &TopicPartition, from: Offset, to: Offset) {
        if let Some(p) = self.partitions.get_mut(tp) {
            let mut kept = Vec::with_capacity(p.skipped.len());
            for &(a, b) in &p.skipped {
                if b <= from || a >= to {
                    kept.push((a, b));
                    continue;
                }
                if a < from {
                    kept.push((a, from));
                }
                if b > to {
                    kept.push((to, b));
                }
            }
            p.skipped = kept;
        }
    }

    /// Skips reaching past `position` are cut there (a seek past the log end skipped nothing
    /// beyond it).
    pub fn clip_skipped(&mut self, tp: &TopicPartition, position: Offset) {
        if let Some(p) = self.partitions.get_mut(tp) {
            for r in &mut p.skipped {
                r.1 = r.1.min(position);
            }
            p.skipped.retain(|r| r.0 < r.1);
        }
    }

    /// Notes that `ranges` of `tp`, lost until now, are no longer lost because a rewind sent the
    /// group back over them.
    pub fn note_rewound(&mut self, tp: &TopicPartition, ranges: &[(Offset, Offset)]) {
        let Some(p) = self.partitions.get_mut(tp) else {
            return;
        };
        p.rewound.extend(ranges.iter().copied().filter(|r| r.0 < r.1));
        p.rewound.sort_unstable();
        let mut merged: Vec<(Offset, Offset)> = Vec::with_capacity(p.rewound.len());
        for &(a, b) in &p.rewound {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        p.rewound = merged;
    }

    /// The raw delivery log: empty unless [`GroupAudit::keep_log`] asked for it.
    pub fn deliveries(&self) -> &[Delivery] {
        &self.deliveries
    }

    /// Offsets of `tp` the group has silently lost, as half-open ranges.
    pub fn lost_ranges(&self, tp: &TopicPartition, progress: Progress<'_>) -> Vec<(Offset, Offset)> {
        let Some(part) = self.partitions.get(tp) else {
            return Vec::new();
        };
        let log_start = progress.log.log_start_offset();
        let passed = progress.resume.unwrap_or(part.first_start).max(log_start);
        let has_gaps = progress.log.record_count() as i64 != progress.log.log_end_offset() - log_start;
        let hides = progress.hidden.range(part.first_start..passed).next().is_some();
        let present: Option<std::collections::HashSet<Offset>> = has_gaps.then(|| {
            let mut set = std::collections::HashSet::new();
            let upto = passed.max(log_start);
            progress
                .log
                .read(log_start, (upto - log_start).max(0) as usize, &mut |r| {
                    if !progress.hidden.contains(&r.offset) {
                        set.insert(r.offset);
                    }
                });
            set
        });
        // Walk [first_start, passed) minus the skipped ranges; offsets past the delivery counts
        // were never applied, so whole stretches are decided without visiting each offset.
        let mut skipped = part.skipped.clone();
        skipped.sort_unstable();
        let mut ranges: Vec<(Offset, Offset)> = Vec::new();
        let push = |a: Offset, b: Offset, ranges: &mut Vec<(Offset, Offset)>| {
            if b <= a {
                return;
            }
            match ranges.last_mut() {
                Some(r) if r.1 == a => r.1 = b,
                _ => ranges.push((a, b)),
            }
        };
        let counted_end = part.base + part.counts.len() as Offset;
        let mut o = part.first_start;
        while o < passed {
            if let Some(&(_, b)) = skipped.iter().find(|&&(a, b)| a <= o && o < b) {
                o = b;
                continue;
            }
            let next_skip = skipped
                .iter()
                .map(|&(a, _)| a)
                .filter(|&a| a > o)
                .min()
                .unwrap_or(Offset::MAX);
            let stop = passed.min(next_skip);
            if present.is_none() && o >= counted_end {
                // Never applied: all of [o, stop) is lost, but for offsets never handed out.
                let mut from = o;
                if hides {
                    for &h in progress.hidden.range(o..stop) {
                        push(from, h, &mut ranges);
                        from = h + 1;
                    }
                }
                push(from, stop, &mut ranges);
                o = stop;
                continue;
            }
            let is_record = !progress.hidden.contains(&o)
                && (o < log_start || present.as_ref().is_none_or(|s| s.contains(&o)));
            if is_record && part.delivered(o) == 0 {
                push(o, o + 1, &mut ranges);
            }
            o += 1;
        }
        ranges
    }

    /// The figures for one partition.
    pub fn figures(&self, tp: &TopicPartition, progress: Progress<'_>) -> AuditFigures {
        let lost_ranges = self.lost_ranges(tp, progress);
        let lost = lost_ranges.iter().map(|(a, b)| (b - a) as u64).sum();
        // Lost before a rewind: what is lost again now counts as lost, not twice.
        let (lost_before_rewind, replayed_since_rewind) = self.partitions.get(tp).map_or((0, 0), |p| {
            let mut before = 0;
            let mut replayed = 0;
            for &(a, b) in &p.rewound {
                for o in a..b {
                    if !lost_ranges.iter().any(|&(x, y)| x <= o && o < y) {
                        before += 1;
                        replayed += u64::from(p.delivered(o) > 0);
                    }
                }
            }
            (before, replayed)
        });
        let c = self.counters.get(tp).copied().unwrap_or_default();
        let log_end = progress.log.log_end_offset();
        let (skipped, deliveries) = self.partitions.get(tp).map_or((0, 0), |p| {
            // Only records that exist count: a seek past the log end skips nothing yet.
            let mut ranges: Vec<(Offset, Offset)> = p
                .skipped
                .iter()
                .map(|&(a, b)| (a, b.min(log_end)))
                .filter(|r| r.0 < r.1)
                .collect();
            ranges.sort_unstable();
            let mut merged: Vec<(Offset, Offset)> = Vec::new();
            for (a, b) in ranges {
                match merged.last_mut() {
                    Some(last) if a <= last.1 => last.1 = last.1.max(b),
                    _ => merged.push((a, b)),
                }
            }
            let counted_end = p.base + p.counts.len() as Offset;
            let skipped: u64 = merged
                .iter()
                .map(|&(a, b)| {
                    let applied = (a.max(p.base)..b.min(counted_end))
                        .filter(|&o| p.delivered(o) > 0)
                        .count();
                    let hidden = progress.hidden.range(a..b).count();
                    ((b - a) as u64).saturating_sub((applied + hidden) as u64)
                })
                .sum();
            (skipped, p.counts.iter().map(|&c| u64::from(c)).sum())
        });
        AuditFigures {
            lost,
            duplicates: c[0],
            redeliveries: c[1],
            crash_redeliveries: c[2],
            replays: c[3],
            skipped,
            deliveries,
            lost_before_rewind,
            replayed_since_rewind,
        }
    }

    /// Recounts duplicates, redeliveries and replays from the raw delivery log, ignoring the
    /// incremental counters: the brute-force oracle for the property tests. `None` unless the
    /// log holds every delivery ([`GroupAudit::keep_log`] from the start, and no restore from a
    /// snapshot since) — a partial log would recount to less.
    pub fn recount(&self, tp: &TopicPartition) -> Option<AuditFigures> {
        if self.deliveries.len() as u64 != self.applied() {
            return None;
        }
        let mut seen: BTreeMap<Offset, u32> = BTreeMap::new();
        let mut f = AuditFigures::default();
        for d in self.deliveries.iter().filter(|d| &d.tp == tp) {
            f.deliveries += 1;
            let n = seen.entry(d.offset).or_default();
            *n += 1;
            if *n > 1 {
                f.duplicates += 1;
                f.redeliveries += u64::from(d.reason.is_redelivery());
                f.crash_redeliveries += u64::from(d.reason == DeliveryReason::CrashRedelivery);
                f.replays += u64::from(d.reason == DeliveryReason::Replay);
            }
        }
        Some(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::memory::MemoryLog;
    use crate::log::TopicConfig;
    use crate::record::NewRecord;

    /// Where a group without hidden offsets stands on `log`.
    fn progress(log: &MemoryLog, resume: Option<Offset>) -> Progress<'_> {
        static NONE_HIDDEN: BTreeSet<Offset> = BTreeSet::new();
        Progress {
            hidden: &NONE_HIDDEN,
            resume,
            log,
        }
    }

    fn log(n: usize) -> MemoryLog {
        let mut l = MemoryLog::new(
            TopicConfig {
                segment_records: Some(4),
                ..TopicConfig::default()
            }
            .segment_limits(),
        );
        for i in 0..n {
            l.append(NewRecord::new(i as i64, Some(b"k"), Some(b"v")), 0);
        }
        l
    }

    fn deliver(a: &mut GroupAudit, tp: &TopicPartition, o: Offset, reason: DeliveryReason) {
        let reason = a.classify(tp, o, reason);
        a.record(Delivery {
            at: 0,
            tp: tp.clone(),
            offset: o,
            key: String::new(),
            consumer: "c1".into(),
            incarnation: 1,
            reason,
        });
    }

    #[test]
    fn lost_counts_passed_records_never_applied() {
        let tp = TopicPartition::new("orders", 0);
        let l = log(12);
        let mut a = GroupAudit::default();
        a.note_start(&tp, 0);
        for o in 0..5 {
            deliver(&mut a, &tp, o, DeliveryReason::CrashRedelivery);
        }
        // The group committed 8 but applied only 0..5: 5, 6, 7 are silently lost.
        let f = a.figures(&tp, progress(&l, Some(8)));
        assert_eq!(f.lost, 3);
        assert_eq!(a.lost_ranges(&tp, progress(&l, Some(8))), vec![(5, 8)]);
        assert_eq!(f.duplicates, 0);
        // Not lost if the group will come back for them.
        assert_eq!(a.figures(&tp, progress(&l, Some(5))).lost, 0);
    }

    #[test]
    fn duplicates_split_into_redeliveries_and_replays() {
        let tp = TopicPartition::new("orders", 0);
        let l = log(4);
        let mut a = GroupAudit::default();
        a.keep_log(true);
        a.note_start(&tp, 0);
        for o in 0..4 {
            deliver(&mut a, &tp, o, DeliveryReason::CrashRedelivery);
        }
        for o in 2..4 {
            deliver(&mut a, &tp, o, DeliveryReason::CrashRedelivery);
        }
        for o in 0..4 {
            deliver(&mut a, &tp, o, DeliveryReason::Replay);
        }
        let f = a.figures(&tp, progress(&l, Some(4)));
        assert_eq!(
            (f.duplicates, f.redeliveries, f.crash_redeliveries, f.replays),
            (6, 2, 2, 4)
        );
        assert_eq!(f.deliveries, 10);
        let r = a.recount(&tp).expect("the log was kept");
        assert_eq!(
            (r.duplicates, r.redeliveries, r.replays, r.deliveries),
            (6, 2, 4, 10)
        );
        assert_eq!(a.applied(), 10);
        assert_eq!(
            a.partition(&tp).map(PartitionAudit::delivery_runs),
            Some(vec![[0, 2, 2], [2, 4, 3]])
        );
    }

    #[test]
    fn deliberate_skips_are_not_losses_and_retention_deletes_are() {
        let tp = TopicPartition::new("orders", 0);
        let mut l = log(12);
        let mut a = GroupAudit::default();
        a.note_start(&tp, 0);
        a.mark_skipped(&tp, 0, 2);
        let f = a.figures(&tp, progress(&l, Some(2)));
        assert_eq!((f.lost, f.skipped), (0, 2));
        // Retention deletes [0, 8) while the group sits at 2: 2..8 are lost though never passed.
        l.delete_segments_before(8);
        let f = a.figures(&tp, progress(&l, Some(2)));
        assert_eq!(f.lost, 6);
    }

    #[test]
    fn rewinding_below_the_first_start_grows_the_counts() {
        let tp = TopicPartition::new("orders", 0);
        let mut a = GroupAudit::default();
        a.note_start(&tp, 5);
        deliver(&mut a, &tp, 5, DeliveryReason::First);
        deliver(&mut a, &tp, 2, DeliveryReason::Replay);
        assert_eq!(a.delivered(&tp, 2), 1);
        assert_eq!(a.delivered(&tp, 5), 1);
        assert_eq!(a.delivered(&tp, 4), 0);
    }

    /// Without being asked, the audit keeps counts, not a log: its memory does not grow with
    /// every record applied (issue 29), and its figures are the same.
    #[test]
    fn the_raw_delivery_log_is_kept_only_when_asked() {
        let tp = TopicPartition::new("orders", 0);
        let l = log(4);
        let (mut counted, mut logged) = (GroupAudit::default(), GroupAudit::default());
        logged.keep_log(true);
        for a in [&mut counted, &mut logged] {
            a.note_start(&tp, 0);
            for round in 0..50 {
                for o in 0..4 {
                    let reason = if round == 0 {
                        DeliveryReason::First
                    } else {
                        DeliveryReason::Replay
                    };
                    deliver(a, &tp, o, reason);
                }
            }
        }
        assert!(counted.deliveries().is_empty());
        assert_eq!(counted.recount(&tp), None, "nothing to recount from");
        assert_eq!(logged.deliveries().len(), 200);
        let (f, g) = (
            counted.figures(&tp, progress(&l, Some(4))),
            logged.figures(&tp, progress(&l, Some(4))),
        );
        assert_eq!((f.deliveries, f.duplicates, f.replays), (200, 196, 196));
        assert_eq!(
            (f.deliveries, f.duplicates, f.replays),
            (g.deliveries, g.duplicates, g.replays)
        );
        assert_eq!((counted.applied(), logged.applied()), (200, 200));
        // Saved with a lab and read back: the counts are, the log is not (a workshop's
        // sink-writes cap reads `applied`, so a restart does not reset it).
        let json = serde_json::to_string(&logged).expect("save");
        let back: GroupAudit = serde_json::from_str(&json).expect("read back");
        assert_eq!(back.applied(), 200);
        assert!(back.deliveries().is_empty());
        assert_eq!(back.recount(&tp), None, "a partial log is not recounted");
        // A snapshot from before the total was saved: counted from the per-offset counts.
        let mut old: serde_json::Value = serde_json::from_str(&json).expect("json");
        assert!(old.as_object_mut().and_then(|o| o.remove("applied")).is_some());
        let mut back: GroupAudit = serde_json::from_value(old).expect("an older snapshot");
        assert_eq!(back.applied(), 200);
        deliver(&mut back, &tp, 0, DeliveryReason::Replay);
        assert_eq!(back.applied(), 201);
    }
}

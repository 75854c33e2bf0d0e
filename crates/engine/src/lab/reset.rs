//! `kafka-consumer-groups.sh --reset-offsets`, with a dry run that shows the blast radius.

use super::Lab;
use crate::clock::Millis;
use crate::delivery::DeliveryReason;
use crate::error::LabError;
use crate::group::Handoff;
use crate::narrative::EventKind;
use crate::offsets::{OffsetAndMetadata, OffsetKey};
use crate::record::{Offset, TopicPartition};
use crate::sink::SinkKind;
use serde::Serialize;
use std::collections::BTreeMap;

/// The metadata `kafka-consumer-groups.sh --reset-offsets` commits with.
const RESET_METADATA: &str = "kafka-consumer-groups --reset-offsets";

/// Exactly one of Kafka's reset scenarios.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetSpec {
    ToEarliest,
    ToLatest,
    ToCurrent,
    ToOffset(Offset),
    ShiftBy(i64),
    /// Epoch milliseconds.
    ToDatetime(i64),
    /// Now minus this many milliseconds.
    ByDuration(Millis),
}

/// One partition of a reset plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResetRow {
    pub topic: String,
    pub partition: i32,
    pub current: Option<Offset>,
    pub target: Offset,
    pub log_start_offset: Offset,
    pub log_end_offset: Offset,
    /// The requested offset fell outside [log start, log end] and was moved to the edge.
    pub clamped: bool,
    /// Records the group will read again (target below current).
    pub replayed: u64,
    /// Of those, records the group had already applied: what comes back as deliberate replays.
    /// (The others were never applied — passed unprocessed or lost — and come back for the first
    /// time.)
    pub reapplied: u64,
    /// Records the group will never read (target above current).
    pub skipped: u64,
    /// Timestamps of the first and last record in the replayed or skipped range.
    pub span: Option<(i64, i64)>,
    /// Rows the group's sink would gain as duplicates when the replay is processed: replayed
    /// records already applied, for a ledger; none for an upsert table.
    pub predicted_duplicate_rows: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResetPlan {
    pub group: String,
    pub executed: bool,
    pub rows: Vec<ResetRow>,
}

impl Lab {
    /// Plans (and with `execute`, applies) an offset reset for `group` on `topic`. Refused while
    /// the group has members, exactly as Kafka refuses it.
    pub fn reset_offsets(
        &mut self,
        group: &str,
        topic: &str,
        partitions: Option<&[i32]>,
        spec: ResetSpec,
        execute: bool,
    ) -> Result<ResetPlan, LabError> {
        let t = self.topic(topic)?;
        let all: Vec<i32> = (0..t.partitions.len() as i32).collect();
        let chosen: Vec<i32> = match partitions {
            Some(ps) => {
                for p in ps {
                    if !all.contains(p) {
                        return Err(LabError::UnknownPartition {
                            topic: topic.to_string(),
                            partition: *p,
                            partitions: all.len(),
                        });
                    }
                }
                ps.to_vec()
            }
            None => all,
        };
        if let Some(g) = self.groups.get(group) {
            if g.has_members() {
                return Err(LabError::GroupActive {
                    group: group.to_string(),
                    state: g.state().to_string(),
                });
            }
        }
        let mut rows = Vec::new();
        for p in chosen {
            rows.push(self.plan_row(group, &TopicPartition::new(topic, p), spec, true)?);
        }
        let plan = ResetPlan {
            group: group.to_string(),
            executed: execute,
            rows,
        };
        self.narrate_plan(&plan);
        if execute {
            self.apply_plan(&plan, &|_| RESET_METADATA.to_string(), &|_| -1)?;
        }
        Ok(plan)
    }

    /// Offsets committed from outside the group — an admin client's `alterConsumerGroupOffsets`
    /// or `resetOffsets`, any OffsetCommit with no member and generation −1 — stored **as given**,
    /// as Kafka's coordinator stores them: a negative offset (kafkajs commits −2 for earliest and
    /// −1 for latest) is no position, and the group's consumers treat it as no committed offset;
    /// one past the log end is met by OFFSET_OUT_OF_RANGE on the next fetch. Refused while the
    /// group has members; every partition is checked before anything is stored.
    pub fn alter_offsets(
        &mut self,
        group: &str,
        offsets: &[(TopicPartition, Offset)],
        metadata: &BTreeMap<TopicPartition, String>,
        leader_epochs: &BTreeMap<TopicPartition, i32>,
    ) -> Result<ResetPlan, LabError> {
        crate::names::check_group_id(group)?;
        if offsets.is_empty() {
            return Err(LabError::InvalidArgument(
                "alter-offsets names at least one partition".into(),
            ));
        }
        if let Some(g) = self.groups.get(group).filter(|g| g.has_members()) {
            return Err(LabError::GroupActive {
                group: group.to_string(),
                state: g.state().to_string(),
            });
        }
        for (tp, m) in metadata {
            crate::offsets::check_metadata(tp, m)?;
        }
        let mut rows = Vec::new();
        for (tp, offset) in offsets {
            rows.push(self.plan_row(group, tp, ResetSpec::ToOffset(*offset), false)?);
        }
        let plan = ResetPlan {
            group: group.to_string(),
            executed: true,
            rows,
        };
        for r in &plan.rows {
            let current = r.current.map_or("-".to_string(), |c| c.to_string());
            let mut text = format!(
                "offsets of group {group} altered from outside the group (OffsetCommit, generation -1): {}-{}: {current} → {}",
                r.topic, r.partition, r.target
            );
            if r.target < 0 {
                text.push_str(" — no position: the group's consumers take it for no committed offset, and auto.offset.reset decides");
            } else if r.target > r.log_end_offset || r.target < r.log_start_offset {
                text.push_str(&format!(
                    " — outside the log ({}..{}): the next fetch meets OFFSET_OUT_OF_RANGE, and auto.offset.reset decides",
                    r.log_start_offset, r.log_end_offset
                ));
            } else if r.replayed > 0 {
                text.push_str(&format!("; re-reads {} record(s)", r.replayed));
            } else if r.skipped > 0 {
                text.push_str(&format!("; skips {} record(s) for good", r.skipped));
            }
            self.say(EventKind::Seek, text);
        }
        self.apply_plan(
            &plan,
            &|tp| metadata.get(tp).cloned().unwrap_or_default(),
            &|tp| leader_epochs.get(tp).copied().unwrap_or(-1),
        )?;
        Ok(plan)
    }

    /// What resetting `group` on `tp` to `spec` would do: the target (`clamp`ed to the retained
    /// range, as `kafka-consumer-groups.sh` clamps it, or as given), and what it replays or
    /// skips — nothing, for a target outside the log: no consumer starts there.
    fn plan_row(
        &self,
        group: &str,
        tp: &TopicPartition,
        spec: ResetSpec,
        clamp: bool,
    ) -> Result<ResetRow, LabError> {
        let now = self.now();
        let tp = tp.clone();
        let p = tp.partition;
        let topic = tp.topic.as_str();
        let log = self.partition_log(&tp)?;
        let (start, end) = (log.log_start_offset(), log.log_end_offset());
        let current = self.offsets.fetch(&OffsetKey::new(group, &tp)).map(|v| v.offset);
        let wanted = match spec {
            ResetSpec::ToEarliest => start,
            ResetSpec::ToLatest => end,
            ResetSpec::ToCurrent => current.unwrap_or(end),
            ResetSpec::ToOffset(o) => o,
            ResetSpec::ShiftBy(n) => current
                .ok_or_else(|| LabError::NoCommittedOffset(tp.to_string()))?
                .saturating_add(n),
            ResetSpec::ToDatetime(ts) => log.offset_for_timestamp(ts).unwrap_or(end),
            ResetSpec::ByDuration(d) => log.offset_for_timestamp(now - d).unwrap_or(end),
        };
        let target = if clamp { wanted.clamp(start, end) } else { wanted };
        let (replayed, skipped, range) = match current.filter(|c| (start..=end).contains(c)) {
            _ if !(start..=end).contains(&target) => (0, 0, None),
            Some(c) if target < c => ((c - target) as u64, 0, Some((target, c))),
            Some(c) if target > c => (0, (target - c) as u64, Some((c.max(start), target))),
            _ => (0, 0, None),
        };
        let span = range.and_then(|(a, b)| {
            let mut first = None;
            let mut last = None;
            log.read(a, (b - a).max(0) as usize, &mut |r| {
                first.get_or_insert(r.timestamp);
                last = Some(r.timestamp);
            });
            first.zip(last)
        });
        let reapplied = match (self.groups.get(group), range) {
            (Some(g), Some((a, b))) if replayed > 0 => {
                (a..b).filter(|&o| g.audit.delivered(&tp, o) > 0).count() as u64
            }
            _ => 0,
        };
        let predicted_duplicate_rows = match self.groups.get(group) {
            // A transactional group seeks to its sink's offsets and ignores the reset.
            Some(g) if g.sink_kind == SinkKind::Append && replayed > 0 => {
                let (a, b) = range.unwrap_or((0, 0));
                (a..b).filter(|&o| g.audit.delivered(&tp, o) > 0).count() as u64
            }
            _ => 0,
        };
        Ok(ResetRow {
            topic: topic.to_string(),
            partition: p,
            current,
            target,
            log_start_offset: start,
            log_end_offset: end,
            clamped: target != wanted,
            replayed,
            reapplied,
            skipped,
            span,
            predicted_duplicate_rows,
        })
    }

    fn narrate_plan(&mut self, plan: &ResetPlan) {
        for r in &plan.rows {
            let current = r.current.map_or("-".to_string(), |c| c.to_string());
            let mut text = format!(
                "reset-offsets {} {}-{}: {current} → {}",
                if plan.executed {
                    "EXECUTED for"
                } else {
                    "dry run for"
                },
                r.topic,
                r.partition,
                r.target
            );
            if r.clamped {
                text.push_str(" (clamped to the retained range)");
            }
            if r.replayed > 0 {
                text.push_str(&format!(
                    "; re-reads {} record(s) ({} of them already applied), {} duplicate row(s) expected in the {} sink",
                    r.replayed,
                    r.reapplied,
                    r.predicted_duplicate_rows,
                    self.groups
                        .get(&plan.group)
                        .map_or("group's".to_string(), |g| g.sink_kind.to_string())
                ));
            }
            if r.skipped > 0 {
                text.push_str(&format!("; skips {} record(s) for good", r.skipped));
            }
            self.say(
                if plan.executed {
                    EventKind::Seek
                } else {
                    EventKind::Setup
                },
                text,
            );
        }
        if !plan.executed {
            self.say(
                EventKind::Setup,
                "nothing changed: add 'execute' to apply the reset",
            );
        } else if self
            .groups
            .get(&plan.group)
            .is_some_and(|g| g.sink_kind == SinkKind::Transactional)
        {
            self.say(
                EventKind::Warning,
                format!("group {} keeps its offsets in its transactional sink: on start its consumers seek to the sink's offsets, not to these", plan.group),
            );
        }
    }

    fn apply_plan(
        &mut self,
        plan: &ResetPlan,
        metadata: &dyn Fn(&TopicPartition) -> String,
        leader_epoch: &dyn Fn(&TopicPartition) -> i32,
    ) -> Result<(), LabError> {
        let now = self.now();
        let tps: Vec<TopicPartition> = plan
            .rows
            .iter()
            .map(|r| TopicPartition::new(r.topic.clone(), r.partition))
            .collect();
        let lost_before = self.lost_now(&plan.group, &tps)?;
        for r in &plan.rows {
            let tp = TopicPartition::new(r.topic.clone(), r.partition);
            self.offsets_only_group(&plan.group, &tp.topic)?;
            self.offsets.commit(
                OffsetKey::new(&plan.group, &tp),
                OffsetAndMetadata {
                    offset: r.target,
                    leader_epoch: leader_epoch(&tp),
                    metadata: metadata(&tp),
                    commit_timestamp: now,
                },
                now,
            );
            if let Some(g) = self.groups.get_mut(&plan.group) {
                g.handoffs.insert(
                    tp.clone(),
                    Handoff {
                        reason: DeliveryReason::Replay,
                        from: None,
                    },
                );
                let in_log = (r.log_start_offset..=r.log_end_offset).contains(&r.target);
                if let Some(c) = r.current.filter(|_| in_log) {
                    g.audit
                        .mark_skipped(&tp, c.clamp(r.log_start_offset, r.log_end_offset), r.target);
                }
            }
        }
        self.note_rewound(&plan.group, lost_before)
    }
}

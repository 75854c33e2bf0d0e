//! `kafka-consumer-groups.sh --reset-offsets`, with a dry run that shows the blast radius.

use super::Lab;
use crate::audit::DeliveryReason;
use crate::clock::Millis;
use crate::error::LabError;
use crate::group::Handoff;
use crate::narrative::EventKind;
use crate::offsets::{OffsetAndMetadata, OffsetKey};
use crate::record::{Offset, TopicPartition};
use crate::sink::SinkKind;
use serde::Serialize;

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
            rows.push(self.plan_row(group, &TopicPartition::new(topic, p), spec)?);
        }
        let plan = ResetPlan {
            group: group.to_string(),
            executed: execute,
            rows,
        };
        self.narrate_plan(&plan);
        if execute {
            self.apply_plan(&plan);
        }
        Ok(plan)
    }

    /// What resetting `group` on `tp` to `spec` would do: the target, clamped to the retained
    /// range, and what it replays or skips.
    fn plan_row(&self, group: &str, tp: &TopicPartition, spec: ResetSpec) -> Result<ResetRow, LabError> {
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
        let target = wanted.clamp(start, end);
        let (replayed, skipped, range) = match current {
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

    fn apply_plan(&mut self, plan: &ResetPlan) {
        let now = self.now();
        for r in &plan.rows {
            let tp = TopicPartition::new(r.topic.clone(), r.partition);
            self.offsets.commit(
                OffsetKey::new(&plan.group, &tp),
                OffsetAndMetadata {
                    offset: r.target,
                    metadata: "kafka-consumer-groups --reset-offsets".to_string(),
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
                if let Some(c) = r.current {
                    g.audit
                        .mark_skipped(&tp, c.clamp(r.log_start_offset, r.log_end_offset), r.target);
                }
            }
        }
    }
}

//! What a share group's application did with each record, in the audit's one vocabulary
//! (`docs/SCENARIOS.md`, "the one definition of every figure"), per share partition.
//!
//! - **delivered(o)**: how many times the application applied the record at `o` (a
//!   `process` line). **Duplicates**: Σ max(0, delivered(o) − 1) — a share consumer that
//!   crashes after processing and before acknowledging gets its records back once the lock
//!   times out, and they are applied again.
//! - **Lost**: records whose delivery is complete — accepted, or archived by the delivery limit
//!   or the log start — that were never applied. The group has passed them as surely as a
//!   consumer group passes a committed offset: nobody will be handed them again. An implicit
//!   acknowledgement of records handed to a worker that had not finished them loses them; a
//!   poison record archived after its last failed attempt is lost to the application.
//! - **Skipped**: records rejected on purpose and never applied (the application said they
//!   are unprocessable), as a seek past records skips them; and records an administrator
//!   moved the start offset past (AlterShareGroupOffsets) before they were delivered.
//!   Records the start offset is moved back over are delivered again on purpose: replays,
//!   not duplicates.
//!
//! Counted from where the group started reading the partition (its first SPSO).

use super::partition::{ArchiveReason, Completion};
use crate::record::Offset;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One share partition's audit. Kept per record the group reached, which is bounded by what
/// the lab's caps let a group acquire.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharePartitionAudit {
    /// delivered(o), for records applied at least once.
    #[serde(with = "crate::serde_pairs")]
    pub applied: BTreeMap<Offset, u32>,
    /// How each record's delivery ended, with its delivery count then.
    #[serde(with = "crate::serde_pairs")]
    pub completed: BTreeMap<Offset, (Completion, u16)>,
    /// Acquisitions: every time a record was handed to a member.
    pub acquisitions: u64,
    /// Deliberate replays: for each record applied again after an administrator moved the
    /// start offset back over it, how many of its applications are not duplicates.
    #[serde(
        default,
        with = "crate::serde_pairs",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub replays: BTreeMap<Offset, u32>,
    /// Records an administrator moved the start offset back over, not delivered again yet, with
    /// how their delivery had ended: the next application of one that was applied before is a
    /// deliberate replay, and a later move forward over it gives it back that ending.
    #[serde(
        default,
        with = "crate::serde_pairs",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub reopened: BTreeMap<Offset, (Completion, u16)>,
    /// The records of the window the group forgot (DeleteShareGroupOffsets, a negative start
    /// offset) whose delivery had not completed: its next read starts where
    /// `share.auto.offset.reset` says, and the audit then treats that start as a move.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forgotten: Option<Vec<Offset>>,
}

/// The figures of one share partition (or a sum of them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareFigures {
    pub deliveries: u64,
    pub duplicates: u64,
    pub lost: u64,
    pub skipped: u64,
    pub accepted: u64,
    pub archived: u64,
    pub acquisitions: u64,
}

impl SharePartitionAudit {
    pub fn applied_once_more(&mut self, offset: Offset) {
        let before = self.applied.get(&offset).copied().unwrap_or(0);
        if self.reopened.remove(&offset).is_some() && before > 0 {
            *self.replays.entry(offset).or_default() += 1;
        }
        self.applied.insert(offset, before + 1);
    }

    pub fn completed(&mut self, offset: Offset, how: Completion, delivery_count: u16) {
        self.reopened.remove(&offset);
        self.completed.insert(offset, (how, delivery_count));
    }

    /// An administrator moved the start offset to `start`; `pending` are the records of the
    /// window it left whose delivery had not completed. Those it jumps over — and records an
    /// earlier move back reopened and nobody was handed since — are skipped on purpose; records
    /// at or past `start` begin their delivery again (reopened: applied again, a deliberate
    /// replay, not a duplicate).
    pub fn start_moved(&mut self, pending: &[Offset], start: Offset) {
        for o in pending.iter().copied().filter(|&o| o < start) {
            self.completed.entry(o).or_insert((Completion::Skipped, 0));
        }
        // Reopened and passed over again before anybody was handed them: as they had ended.
        let back: Vec<Offset> = self.reopened.range(..start).map(|(o, _)| *o).collect();
        for o in back {
            if let Some(ended) = self.reopened.remove(&o) {
                self.completed.entry(o).or_insert(ended);
            }
        }
        let again: Vec<Offset> = self.completed.range(start..).map(|(o, _)| *o).collect();
        for o in again {
            if let Some(ended) = self.completed.remove(&o) {
                self.reopened.insert(o, ended);
            }
        }
    }

    pub fn figures(&self) -> ShareFigures {
        let mut f = ShareFigures {
            acquisitions: self.acquisitions,
            ..Default::default()
        };
        for (o, &n) in &self.applied {
            let replays = self.replays.get(o).copied().unwrap_or(0);
            f.deliveries += u64::from(n);
            f.duplicates += u64::from(n.saturating_sub(1).saturating_sub(replays));
        }
        for (o, (how, _)) in &self.completed {
            let applied = self.applied.contains_key(o);
            match how {
                Completion::Accepted => f.accepted += 1,
                Completion::Archived { .. } => f.archived += 1,
                Completion::Skipped => {}
            }
            match how {
                _ if applied => {}
                Completion::Archived {
                    reason: ArchiveReason::Rejected,
                }
                | Completion::Skipped => f.skipped += 1,
                _ => f.lost += 1,
            }
        }
        f
    }
}

impl std::ops::Add for ShareFigures {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        Self {
            deliveries: self.deliveries + o.deliveries,
            duplicates: self.duplicates + o.duplicates,
            lost: self.lost + o.lost,
            skipped: self.skipped + o.skipped,
            accepted: self.accepted + o.accepted,
            archived: self.archived + o.archived,
            acquisitions: self.acquisitions + o.acquisitions,
        }
    }
}

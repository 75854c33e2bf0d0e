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
//!   are unprocessable), as a seek past records skips them.
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
        *self.applied.entry(offset).or_default() += 1;
    }

    pub fn completed(&mut self, offset: Offset, how: Completion, delivery_count: u16) {
        self.completed.insert(offset, (how, delivery_count));
    }

    pub fn figures(&self) -> ShareFigures {
        let mut f = ShareFigures {
            acquisitions: self.acquisitions,
            ..Default::default()
        };
        for &n in self.applied.values() {
            f.deliveries += u64::from(n);
            f.duplicates += u64::from(n.saturating_sub(1));
        }
        for (o, (how, _)) in &self.completed {
            let applied = self.applied.contains_key(o);
            match how {
                Completion::Accepted => f.accepted += 1,
                Completion::Archived { .. } => f.archived += 1,
            }
            match how {
                _ if applied => {}
                Completion::Archived {
                    reason: ArchiveReason::Rejected,
                } => f.skipped += 1,
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

//! Consumer groups: membership, generations and partition assignment.
//!
//! The group coordinator hands out partitions to the group's members. Every change of
//! membership starts a new *generation*; a commit stamped with an older generation is rejected,
//! which is how a zombie (a member that was presumed dead) is fenced. A crashed member sends no
//! LeaveGroup: it stays a member, holding its partitions, until `session.timeout.ms` passes
//! without a heartbeat.

use crate::audit::{DeliveryReason, GroupAudit};
use crate::record::TopicPartition;
use crate::sink::{Sink, SinkKind};
use serde::Serialize;
use std::collections::BTreeMap;

/// The group states of Kafka's coordinator that the lab distinguishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum GroupState {
    /// No members: offsets can be reset.
    Empty,
    Stable,
}

impl std::fmt::Display for GroupState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Empty => "Empty",
            Self::Stable => "Stable",
        })
    }
}

/// Why a partition last changed hands: decides how a redelivery from its committed offset is
/// labelled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Handoff {
    pub reason: DeliveryReason,
    /// The consumer name that held it before.
    pub from: Option<String>,
}

pub struct Group {
    pub name: String,
    pub generation: i32,
    /// Member consumer names, in join order. A crashed consumer stays here until its session
    /// times out.
    pub members: Vec<String>,
    pub topics: Vec<String>,
    /// Which member owns which partition in the current generation.
    pub owners: BTreeMap<TopicPartition, String>,
    pub handoffs: BTreeMap<TopicPartition, Handoff>,
    pub sink_kind: SinkKind,
    pub sink: Box<dyn Sink>,
    pub audit: GroupAudit,
}

impl Group {
    pub fn new(name: &str, sink_kind: SinkKind, sink: Box<dyn Sink>) -> Self {
        Self {
            name: name.to_string(),
            generation: 0,
            members: Vec::new(),
            topics: Vec::new(),
            owners: BTreeMap::new(),
            handoffs: BTreeMap::new(),
            sink_kind,
            sink,
            audit: GroupAudit::default(),
        }
    }

    pub fn state(&self) -> GroupState {
        if self.members.is_empty() {
            GroupState::Empty
        } else {
            GroupState::Stable
        }
    }

    pub fn is_member(&self, consumer: &str) -> bool {
        self.members.iter().any(|m| m == consumer)
    }
}

/// Kafka's `RangeAssignor`: per topic, members sorted, partitions split into contiguous ranges,
/// the first `partitions % members` members taking one extra.
pub fn range_assign(members: &[String], topics: &[(String, i32)]) -> BTreeMap<TopicPartition, String> {
    let mut sorted: Vec<&String> = members.iter().collect();
    sorted.sort();
    let mut out = BTreeMap::new();
    if sorted.is_empty() {
        return out;
    }
    let m = sorted.len() as i32;
    for (topic, partitions) in topics {
        let per = partitions / m;
        let extra = partitions % m;
        let mut next = 0;
        for (i, member) in sorted.iter().enumerate() {
            let i = i as i32;
            let n = per + i32::from(i < extra);
            for p in next..next + n {
                out.insert(TopicPartition::new(topic.clone(), p), (*member).clone());
            }
            next += n;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_assignment_gives_contiguous_ranges_extra_to_the_first() {
        let members = vec!["c2".to_string(), "c1".to_string()];
        let a = range_assign(&members, &[("orders".into(), 5)]);
        let owner = |p| a.get(&TopicPartition::new("orders", p)).map(String::as_str);
        assert_eq!([owner(0), owner(1), owner(2)], [Some("c1"); 3]);
        assert_eq!([owner(3), owner(4)], [Some("c2"); 2]);
    }

    #[test]
    fn more_members_than_partitions_leaves_some_idle() {
        let members: Vec<String> = (1..=3).map(|i| format!("c{i}")).collect();
        let a = range_assign(&members, &[("orders".into(), 2)]);
        assert_eq!(a.len(), 2);
        assert!(a.values().all(|m| m != "c3"));
    }
}

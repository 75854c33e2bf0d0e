//! [`ShareGroup`]: a share group's members, its assignment, its configs, and one
//! [`SharePartition`] per partition it has started reading.
//!
//! A share group has no committed offsets and no generations fencing stale commits: what a
//! consumer group keeps in `__consumer_offsets` a share group keeps per record, on the
//! partition (Kafka persists it through the share coordinator in `__share_group_state`).
//! An acknowledgement is checked against the record's lock, not against a member epoch.

use super::audit::{ShareFigures, SharePartitionAudit};
use super::config::ShareGroupConfig;
use super::partition::SharePartition;
use crate::clock::Millis;
use crate::record::TopicPartition;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// A member of a share group: one incarnation of a share consumer (`s1#2`), or a real client's
/// `ShareConsumer` that joined through the Kafka listener (`client`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareMember {
    pub id: String,
    /// The share consumer it is an incarnation of; for a real client, its `client.id`.
    pub consumer: String,
    /// The topics it subscribes to (a lab consumer's one topic; a real client may name several).
    #[serde(alias = "topic", deserialize_with = "one_or_many")]
    pub topics: Vec<String>,
    /// A real client's member (ShareGroupHeartbeat): its liveness is the listener's to judge,
    /// its records come and go by ShareFetch and ShareAcknowledge.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub client: bool,
    /// When it crashed: a crashed member sends no heartbeat and stays in the group until
    /// `share.session.timeout.ms` has passed.
    pub crashed_at: Option<Millis>,
    pub assignment: BTreeSet<TopicPartition>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareGroup {
    pub name: String,
    pub config: ShareGroupConfig,
    /// In join order: the assignor walks them so.
    pub members: Vec<ShareMember>,
    /// Bumped on every membership change (Kafka's group epoch).
    pub epoch: i32,
    #[serde(with = "crate::serde_pairs")]
    pub partitions: BTreeMap<TopicPartition, SharePartition>,
    #[serde(with = "crate::serde_pairs")]
    pub audit: BTreeMap<TopicPartition, SharePartitionAudit>,
    /// Partitions an administrator gave a negative start offset (AlterShareGroupOffsets): Kafka
    /// stores and describes the offset as given (Apache Kafka 4.4); the lab's next read of one
    /// starts where `share.auto.offset.reset` says, as for a partition never read.
    #[serde(
        default,
        with = "crate::serde_pairs",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub unstarted: BTreeMap<TopicPartition, i64>,
    /// Deleted (DeleteGroups) while the lab's own share consumers belong to it: kept for their
    /// audit, gone to clients — not listed, not described — until a member joins again or an
    /// administrator sets its configs or offsets.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
}

impl ShareGroup {
    pub fn new(name: &str, config: ShareGroupConfig) -> Self {
        Self {
            name: name.to_string(),
            config,
            members: Vec::new(),
            epoch: 0,
            partitions: BTreeMap::new(),
            audit: BTreeMap::new(),
            unstarted: BTreeMap::new(),
            deleted: false,
        }
    }

    /// Kafka's name of the group's state: `Empty` without members, else `Stable` (the lab
    /// settles an assignment at once, so it never shows `Assigning` or `Reconciling`).
    pub fn state_name(&self) -> &'static str {
        if self.members.is_empty() {
            "Empty"
        } else {
            "Stable"
        }
    }

    pub fn member(&self, id: &str) -> Option<&ShareMember> {
        self.members.iter().find(|m| m.id == id)
    }

    /// The figures of the partitions `filter` keeps, summed.
    pub fn figures(&self, filter: impl Fn(&TopicPartition) -> bool) -> ShareFigures {
        self.audit
            .iter()
            .filter(|(tp, _)| filter(tp))
            .map(|(_, a)| a.figures())
            .fold(ShareFigures::default(), |a, b| a + b)
    }

    /// Recomputes the assignment with the share assignor, members keeping what they can.
    pub(crate) fn reassign(&mut self, partitions_of: impl Fn(&str) -> Vec<TopicPartition>) {
        let mut by_topic: BTreeMap<String, Vec<(String, BTreeSet<TopicPartition>)>> = BTreeMap::new();
        for m in &self.members {
            for topic in &m.topics {
                let held = m
                    .assignment
                    .iter()
                    .filter(|tp| &tp.topic == topic)
                    .cloned()
                    .collect();
                by_topic
                    .entry(topic.clone())
                    .or_default()
                    .push((m.id.clone(), held));
            }
        }
        let mut assigned: BTreeMap<String, BTreeSet<TopicPartition>> = BTreeMap::new();
        for (topic, members) in by_topic {
            for (id, set) in super::assignor::assign(&members, &partitions_of(&topic)) {
                assigned.entry(id).or_default().extend(set);
            }
        }
        for m in &mut self.members {
            m.assignment = assigned.remove(&m.id).unwrap_or_default();
        }
        self.epoch += 1;
    }
}

/// A member's topics as a snapshot holds them: a list, or — written before real clients could
/// subscribe to several — one topic.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Topics {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Topics::deserialize(d)? {
        Topics::One(t) => vec![t],
        Topics::Many(ts) => ts,
    })
}

//! What an administrator deletes: a topic (`DeleteTopics`), a group (`DeleteGroups`) and a
//! group's committed offsets for some partitions (`OffsetDelete`, KIP-496).
//!
//! The coordinator's rules are Kafka's: a group is deleted only when it is Empty — a group with
//! members is told `NON_EMPTY_GROUP` — and an active group's offsets may be deleted only for
//! topics it does not subscribe to, or its next commit would write them straight back. Deleting
//! writes tombstones to `__consumer_offsets`, so the deletion itself is in the log and survives
//! a coordinator restart. A deleted topic takes its logs with it, and the groups' offsets for its
//! partitions (Kafka's group coordinator removes them when it learns the partitions are gone).

use super::Lab;
use crate::error::LabError;
use crate::narrative::EventKind;
use crate::offsets::{OffsetKey, CONSUMER_OFFSETS_TOPIC};
use crate::record::TopicPartition;

impl Lab {
    /// `DeleteGroups`: an Empty group's committed offsets become tombstones and the group is
    /// gone; the next consumer to join starts it afresh, from `auto.offset.reset`. Returns how
    /// many committed offsets were deleted.
    ///
    /// A group the lab's own consumers belong to keeps what the lab knows about them (their
    /// sink and its audit) and its generation count; its offsets and assignments go.
    pub fn delete_group(&mut self, group: &str) -> Result<usize, LabError> {
        if self.share.groups.contains_key(group) {
            return self.delete_share_group(group).map(|()| 0);
        }
        if !self.coordinator_has(group) {
            return Err(LabError::UnknownGroup(group.to_string()));
        }
        if let Some(g) = self.groups.get(group) {
            if g.has_members() {
                return Err(LabError::GroupNotEmpty {
                    group: group.to_string(),
                    state: g.state().to_string(),
                });
            }
        }
        let now = self.clock.now();
        let deleted = self.offsets.delete_where(|k| k.group == group, now);
        self.remove_group(group, now);
        self.say(
            EventKind::Warning,
            format!(
                "DeleteGroups: group {group} deleted — {} committed offset(s) became tombstones in {CONSUMER_OFFSETS_TOPIC}; its next member starts from auto.offset.reset",
                deleted
            ),
        );
        Ok(deleted)
    }

    /// `OffsetDelete` (KIP-496): the group's committed offsets for `partitions` become
    /// tombstones. Refused for a topic an active member subscribes to. Partitions without a
    /// committed offset are left as they are. Returns how many offsets were deleted.
    pub fn delete_offsets(&mut self, group: &str, partitions: &[TopicPartition]) -> Result<usize, LabError> {
        if !self.coordinator_has(group) {
            return Err(LabError::UnknownGroup(group.to_string()));
        }
        if let Some(tp) = partitions.iter().find(|tp| self.subscribes(group, &tp.topic)) {
            return Err(LabError::GroupSubscribedToTopic {
                group: group.to_string(),
                topic: tp.topic.clone(),
            });
        }
        let now = self.clock.now();
        let mut deleted = Vec::new();
        for tp in partitions {
            let key = OffsetKey::new(group, tp);
            if self.offsets.fetch(&key).is_some() && !deleted.contains(tp) {
                self.offsets.delete(&key, now);
                deleted.push(tp.clone());
            }
        }
        self.say(
            EventKind::Warning,
            format!(
                "OffsetDelete: group {group}'s committed offset(s) for {} deleted (tombstones in {CONSUMER_OFFSETS_TOPIC}); a member assigned them later starts from auto.offset.reset",
                if deleted.is_empty() {
                    "no partition".to_string()
                } else {
                    deleted
                        .iter()
                        .map(|tp| format!("{}-{}", tp.topic, tp.partition))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ),
        );
        Ok(deleted.len())
    }

    /// Whether an active member of `group` reads `topic`: the lab's consumers by their
    /// subscription, real clients by the subscription they joined with (or, when the listener
    /// did not report it, by the assignment of the group's last rebalance).
    pub fn subscribes(&self, group: &str, topic: &str) -> bool {
        self.groups.get(group).is_some_and(|g| {
            g.members.iter().any(|m| m.topic == topic)
                || g.external.as_ref().is_some_and(|e| {
                    e.members.iter().any(|m| {
                        if m.topics.is_empty() {
                            m.partitions.iter().any(|tp| tp.topic == topic)
                        } else {
                            m.topics.iter().any(|t| t == topic)
                        }
                    })
                })
        })
    }

    /// Whether the group coordinator has `group`: a group it holds (members or offsets), not
    /// one it removed ([`crate::group::Group::dead`]) and the lab only keeps for its consumers.
    pub fn coordinator_has(&self, group: &str) -> bool {
        self.groups.get(group).is_some_and(|g| !g.dead) || self.offsets.has_group(group)
    }

    /// The coordinator removes an Empty group whose offsets are gone (DeleteGroups, or the
    /// cleanup that expired the last of them): a tombstone for its metadata record, and the group
    /// is `Dead`. A group the lab's own consumers belong to stays in the lab, Dead, with what the
    /// lab knows about them (their sink and audit); its generation stays too — a transactional
    /// sink fences writes from older generations, and fencing needs generations that only move
    /// forward — so a member joining later starts the next generation, where Kafka would start
    /// a new group at 1.
    pub(crate) fn remove_group(&mut self, group: &str, now: crate::clock::Millis) {
        if self.groups.get(group).is_some_and(|g| !g.offsets_only()) {
            self.offsets.delete_group(group, now);
        }
        let lab_consumers = self.consumers.values().any(|c| c.config.group == group);
        if lab_consumers {
            if let Some(g) = self.groups.get_mut(group) {
                g.owners.clear();
                g.handoffs.clear();
                g.rebalance = None;
                g.external = None;
                g.empty_since = None;
                // A consumer group's epochs go with it: whoever joins next starts a new group.
                g.consumer = None;
                g.dead = true;
            }
        } else {
            self.groups.remove(group);
        }
    }

    /// `DeleteTopics`: the topic's logs are deleted, with every group's committed offsets for
    /// its partitions. The lab refuses to delete a topic its own consumers read or write (their
    /// figures are computed from it) or one with a transaction still open on it.
    pub fn delete_topic(&mut self, topic: &str) -> Result<(), LabError> {
        if crate::names::is_internal_topic(topic) {
            return Err(LabError::internal_topic(topic, ": it cannot be deleted"));
        }
        let t = self.topic(topic)?;
        if let Some(c) = self
            .consumers
            .values()
            .find(|c| c.config.topic == topic || c.config.output.as_deref() == Some(topic))
        {
            return Err(LabError::InvalidArgument(format!(
                "the lab's consumer '{}' (group {}) uses topic '{topic}': the lab keeps the topics its own consumers' figures come from",
                c.name(),
                c.config.group
            )));
        }
        if let Some(g) = self.share.groups.values().find(|g| {
            g.partitions
                .keys()
                .chain(g.audit.keys())
                .chain(g.unstarted.keys())
                .any(|tp| tp.topic == topic)
                || g.members.iter().any(|m| m.topics.iter().any(|t| t == topic))
        }) {
            return Err(LabError::InvalidArgument(format!(
                "share group '{}' reads topic '{topic}': the lab keeps the topics its share groups' figures come from",
                g.name
            )));
        }
        if t.txns.iter().any(|p| !p.open_transactions().is_empty()) {
            return Err(LabError::InvalidArgument(format!(
                "a transaction is open on topic '{topic}': commit or abort it first"
            )));
        }
        let partitions = t.partitions.len() as i32;
        // The files first: if they cannot go, nothing has changed.
        for p in 0..partitions {
            self.store.remove(topic, p).map_err(LabError::storage)?;
        }
        let now = self.clock.now();
        let deleted = self.offsets.delete_where(|k| k.topic == topic, now);
        for g in self.groups.values_mut() {
            g.topics_read.retain(|t| t != topic);
            g.owners.retain(|tp, _| tp.topic != topic);
            g.handoffs.retain(|tp, _| tp.topic != topic);
            if let Some(e) = &mut g.external {
                for m in &mut e.members {
                    m.partitions.retain(|tp| tp.topic != topic);
                }
            }
        }
        // Offsets an open transaction would commit for the topic go too (Kafka's coordinator
        // drops pending transactional offsets of deleted partitions with the committed ones).
        for producer in self.producers.values_mut() {
            if let Some(open) = &mut producer.ongoing {
                open.offsets.retain(|(_, tp, _)| tp.topic != topic);
                open.offset_details.retain(|(_, tp, _, _)| tp.topic != topic);
            }
        }
        self.topics.remove(topic);
        self.say(
            EventKind::Warning,
            format!(
                "DeleteTopics: topic {topic} deleted — its {partitions} partition log(s) and {} committed offset(s) of groups that read it are gone",
                deleted
            ),
        );
        Ok(())
    }
}

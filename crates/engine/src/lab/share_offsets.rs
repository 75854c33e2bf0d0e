//! A share group's start offsets as an administrator sees and moves them —
//! `kafka-share-groups.sh --describe`, `--reset-offsets` and `--delete-offsets`, which send
//! DescribeShareGroupOffsets, AlterShareGroupOffsets and DeleteShareGroupOffsets (KIP-932).
//!
//! A share group has no committed offsets: what an administrator moves is each share
//! partition's start offset (SPSO). Kafka's coordinator allows it only while the group is
//! Empty, and writes a fresh state for the partition: the in-flight window and every delivery
//! count are gone, and the next consumer starts reading at the new SPSO.

use super::Lab;
use crate::error::LabError;
use crate::narrative::EventKind;
use crate::record::{Offset, TopicPartition};
use crate::share::{ShareGroup, SharePartition};

impl Lab {
    /// The share group's start offset of each partition it has started reading (an SPSO, as
    /// DescribeShareGroupOffsets answers it), in partition order. A consumer group is
    /// [`LabError::NotAShareGroup`].
    /// A partition an administrator gave a negative start offset has it, as Kafka describes it.
    pub fn share_start_offsets(&self, group: &str) -> Result<Vec<(TopicPartition, Offset)>, LabError> {
        let g = self.share_group_or_not(group)?;
        let mut starts: Vec<(TopicPartition, Offset)> = g
            .partitions
            .iter()
            .map(|(tp, p)| (tp.clone(), p.start_offset))
            .chain(g.unstarted.iter().map(|(tp, o)| (tp.clone(), *o)))
            .collect();
        starts.sort();
        Ok(starts)
    }

    /// AlterShareGroupOffsets: each partition's share state starts again at the offset given —
    /// the window empty, delivery counts forgotten. The group is created (Empty, Kafka's
    /// default configs) when it does not exist. Refused, changing nothing, when the group has
    /// members, is a consumer group, or names a partition that does not exist. An offset past
    /// the log end is kept: the group reads from there once records reach it; one below the log
    /// start follows the log start at the next read; a negative one is stored and described as
    /// given, as Apache Kafka 4.4 does (the conformance conversation `share-group`), and the
    /// next read starts where `share.auto.offset.reset` says.
    pub fn alter_share_group_offsets(
        &mut self,
        group: &str,
        offsets: &[(TopicPartition, Offset)],
    ) -> Result<(), LabError> {
        if group.is_empty() {
            return Err(LabError::InvalidGroupId(
                "a share group's id cannot be empty".into(),
            ));
        }
        if offsets.is_empty() {
            return Err(LabError::InvalidArgument(
                "name at least one partition and its new start offset".into(),
            ));
        }
        self.check_group_type(group, true)
            .map_err(|_| LabError::NotAShareGroup(group.to_string()))?;
        if let Some(g) = self.share.groups.get(group) {
            check_empty(g)?;
        }
        // One request may name a partition twice: the last offset wins.
        let mut chosen: std::collections::BTreeMap<TopicPartition, Offset> = Default::default();
        let mut log_starts: std::collections::BTreeMap<TopicPartition, Offset> = Default::default();
        for (tp, offset) in offsets {
            log_starts.insert(tp.clone(), self.partition_log(tp)?.log_start_offset());
            chosen.insert(tp.clone(), *offset);
        }
        let g = self.share_group_entry(group);
        let mut moved = Vec::new();
        for (tp, &offset) in &chosen {
            let old = g.partitions.remove(tp);
            let audit = g.audit.entry(tp.clone()).or_default();
            let mut pending = audit.forgotten.take().unwrap_or_default();
            pending.extend(old.as_ref().map(SharePartition::pending).unwrap_or_default());
            if offset < 0 {
                g.unstarted.insert(tp.clone(), offset);
                audit.forgotten = Some(pending);
                moved.push(format!(
                    "{tp}: {offset}, no start offset (share.auto.offset.reset decides)"
                ));
                continue;
            }
            // Below the log start nothing is delivered again: the next read starts there.
            let start = offset.max(log_starts.get(tp).copied().unwrap_or(0));
            audit.start_moved(&pending, start);
            g.unstarted.remove(tp);
            g.partitions.insert(tp.clone(), SharePartition::new(offset));
            match old {
                Some(old) => moved.push(format!("{tp}: {} → {offset}", old.start_offset)),
                None => moved.push(format!("{tp}: starts at {offset}")),
            }
        }
        self.say(
            EventKind::Warning,
            format!(
                "AlterShareGroupOffsets: share group {group}'s start offsets moved ({}) — each partition's in-flight window and delivery counts are gone; the log is unchanged",
                moved.join(", ")
            ),
        );
        Ok(())
    }

    /// DeleteShareGroupOffsets: the group forgets its share state for every partition of
    /// `topics`; its next read of one starts where `share.auto.offset.reset` says, as a new
    /// group's would. Refused, changing nothing, when the group does not exist, is a consumer
    /// group or has members, or when it has no state for one of the topics
    /// (UNKNOWN_TOPIC_OR_PARTITION, as Kafka answers). Returns how many partitions it forgot.
    pub fn delete_share_group_offsets(&mut self, group: &str, topics: &[String]) -> Result<usize, LabError> {
        let g = self.share_group_or_not(group)?;
        check_empty(g)?;
        if topics.is_empty() {
            return Err(LabError::InvalidArgument("name at least one topic".into()));
        }
        for topic in topics {
            self.topic(topic)?;
            if !g
                .partitions
                .keys()
                .chain(g.unstarted.keys())
                .any(|tp| &tp.topic == topic)
            {
                return Err(LabError::UnknownTopic(format!(
                    "{topic} (share group {group} has no offset information for it)"
                )));
            }
        }
        let g = self.share_group_mut(group)?;
        let gone: Vec<TopicPartition> = g
            .partitions
            .keys()
            .filter(|tp| topics.contains(&tp.topic))
            .cloned()
            .collect();
        for tp in &gone {
            if let Some(p) = g.partitions.remove(tp) {
                let audit = g.audit.entry(tp.clone()).or_default();
                let mut pending = audit.forgotten.take().unwrap_or_default();
                pending.extend(p.pending());
                audit.forgotten = Some(pending);
            }
        }
        let before = g.unstarted.len();
        g.unstarted.retain(|tp, _| !topics.contains(&tp.topic));
        let gone = gone.len() + before - g.unstarted.len();
        self.say(
            EventKind::Warning,
            format!(
                "DeleteShareGroupOffsets: share group {group} forgot its state for {} partition(s) of {}; its next read starts where share.auto.offset.reset says",
                gone,
                topics.join(", ")
            ),
        );
        Ok(gone)
    }

    /// DeleteGroups for a share group: an Empty share group and its state, gone (Kafka deletes
    /// its share-partition state too), its configs with it. A group the lab's own share
    /// consumers belong to keeps what the lab knows of them — their audit — with its state
    /// forgotten and Kafka's default configs, as a consumer group keeps its sink.
    pub(crate) fn delete_share_group(&mut self, group: &str) -> Result<(), LabError> {
        let g = self.share_group_or_not(group)?;
        check_empty(g).map_err(|_| LabError::GroupNotEmpty {
            group: group.to_string(),
            state: g.state_name().to_string(),
        })?;
        let ours = self.share.consumers.values().any(|c| c.config.group == group);
        if ours {
            if let Some(g) = self.share.groups.get_mut(group) {
                g.config = Default::default();
                for (tp, p) in std::mem::take(&mut g.partitions) {
                    let audit = g.audit.entry(tp).or_default();
                    let mut pending = audit.forgotten.take().unwrap_or_default();
                    pending.extend(p.pending());
                    audit.forgotten = Some(pending);
                }
                g.unstarted.clear();
                g.deleted = true;
            }
        } else {
            self.share.groups.remove(group);
        }
        self.say(
            EventKind::Warning,
            format!("DeleteGroups: share group {group} deleted with its share state; the log is unchanged"),
        );
        Ok(())
    }

    /// The share group `group`; a consumer group of that name is [`LabError::NotAShareGroup`],
    /// a deleted one (kept for the lab's own consumers) is gone.
    fn share_group_or_not(&self, group: &str) -> Result<&ShareGroup, LabError> {
        self.share
            .groups
            .get(group)
            .filter(|g| !g.deleted)
            .ok_or_else(|| {
                if self.groups.contains_key(group) {
                    LabError::NotAShareGroup(group.to_string())
                } else {
                    LabError::UnknownGroup(group.to_string())
                }
            })
    }
}

/// Kafka's coordinator moves a share group's offsets only while it has no member.
fn check_empty(g: &ShareGroup) -> Result<(), LabError> {
    if g.members.is_empty() {
        Ok(())
    } else {
        Err(LabError::ShareGroupNotEmpty {
            group: g.name.clone(),
            state: g.state_name().to_string(),
        })
    }
}

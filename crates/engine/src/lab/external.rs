//! Groups of real Kafka clients, as the lab's Kafka listener reports them.
//!
//! A real consumer's membership runs on wall time — heartbeats every few seconds, a session that
//! expires when they stop — in the listener's group coordinator, outside this deterministic
//! engine. What it changes in the lab arrives here as lines: each completed rebalance (the new
//! generation, its members and what each was assigned) and each offset commit a member makes.
//! The engine checks a commit against the membership it was told of — an unknown member or an
//! old generation is refused, as Kafka's coordinator refuses it — writes it to
//! `__consumer_offsets` like any commit, and narrates both; the group's committed offsets and lag
//! then show like every other group's, and an exported session replays them exactly.

use super::Lab;
use crate::error::LabError;
use crate::group::{ExternalMember, ExternalMembership, Group};
use crate::narrative::EventKind;
use crate::offsets::{OffsetAndMetadata, OffsetKey};
use crate::record::{Offset, TopicPartition};
use crate::sink::SinkKind;

impl Lab {
    /// Records a completed rebalance of a group of real clients: `generation` and its members
    /// (none: the group is now Empty). Refused for a group of the lab's own consumers, and for a
    /// generation that does not move forward.
    pub fn external_rebalance(
        &mut self,
        group: &str,
        generation: i32,
        protocol: &str,
        members: Vec<ExternalMember>,
    ) -> Result<(), LabError> {
        super::validate_name("group", group)?;
        if let Some(g) = self.groups.get(group) {
            if !g.members.is_empty() {
                return Err(LabError::InvalidArgument(format!(
                    "group {group} has the lab's own consumers: real clients cannot join it"
                )));
            }
            if generation <= g.generation {
                return Err(LabError::InvalidArgument(format!(
                    "group {group} is at generation {}: a rebalance moves it forward (got {generation})",
                    g.generation
                )));
            }
        }
        for m in &members {
            for tp in &m.partitions {
                self.partition_log(tp)?;
            }
        }
        if !self.groups.contains_key(group) {
            let sink = self.sinks.open(group, SinkKind::Append)?;
            self.groups
                .insert(group.to_string(), Group::new(group, SinkKind::Append, sink));
        }
        let now = self.clock.now();
        let g = self
            .groups
            .get_mut(group)
            .ok_or_else(|| LabError::UnknownGroup(group.to_string()))?;
        g.generation = generation;
        g.owners = members
            .iter()
            .flat_map(|m| m.partitions.iter().map(move |tp| (tp.clone(), m.id.clone())))
            .collect();
        for m in &members {
            for tp in &m.partitions {
                if !g.topics_read.contains(&tp.topic) {
                    g.topics_read.push(tp.topic.clone());
                }
            }
        }
        g.empty_since = members.is_empty().then_some(now);
        let text = if members.is_empty() {
            format!("group {group} (real Kafka clients) is now Empty (generation {generation}); its committed offsets stay")
        } else {
            let who: Vec<String> = members
                .iter()
                .map(|m| {
                    let parts: Vec<String> = m.partitions.iter().map(ToString::to_string).collect();
                    format!(
                        "{} ({}) ← {}",
                        m.id,
                        m.client_id,
                        if parts.is_empty() {
                            "nothing".to_string()
                        } else {
                            parts.join(", ")
                        }
                    )
                })
                .collect();
            format!(
                "group {group} (real Kafka clients) rebalanced: generation {generation}, {protocol} assignment — {}",
                who.join("; ")
            )
        };
        g.external = Some(ExternalMembership {
            protocol: protocol.to_string(),
            members,
        });
        self.say(EventKind::Group, text);
        Ok(())
    }

    /// An offset commit of a real client's member, checked against the group's membership: an
    /// unknown member or an old generation is refused (Kafka's UNKNOWN_MEMBER_ID and
    /// ILLEGAL_GENERATION), and nothing is written.
    pub fn external_commit(
        &mut self,
        group: &str,
        member: &str,
        generation: i32,
        offsets: &[(TopicPartition, Offset)],
    ) -> Result<(), LabError> {
        let g = self
            .groups
            .get(group)
            .ok_or_else(|| LabError::UnknownGroup(group.to_string()))?;
        let external = g.external.as_ref().ok_or_else(|| {
            LabError::InvalidArgument(format!("group {group} is not a group of real Kafka clients"))
        })?;
        if !external.members.iter().any(|m| m.id == member) {
            return Err(LabError::InvalidArgument(format!(
                "UNKNOWN_MEMBER_ID: {member} is not a member of group {group}"
            )));
        }
        if generation != g.generation {
            return Err(LabError::InvalidArgument(format!(
                "ILLEGAL_GENERATION: {member} committed with generation {generation}, group {group} is at {}",
                g.generation
            )));
        }
        if offsets.is_empty() {
            return Err(LabError::InvalidArgument(
                "a commit names at least one partition".into(),
            ));
        }
        for (tp, offset) in offsets {
            let log = self.partition_log(tp)?;
            if *offset < 0 || *offset > log.log_end_offset() {
                return Err(LabError::InvalidArgument(format!(
                    "{tp}: offset {offset} is outside 0..={}",
                    log.log_end_offset()
                )));
            }
        }
        let now = self.clock.now();
        for (tp, offset) in offsets {
            self.offsets.commit(
                OffsetKey::new(group, tp),
                OffsetAndMetadata {
                    offset: *offset,
                    metadata: String::new(),
                    commit_timestamp: now,
                },
                now,
            );
        }
        let what: Vec<String> = offsets.iter().map(|(tp, o)| format!("{tp} → {o}")).collect();
        self.say(
            EventKind::Commit,
            format!(
                "{member} (group {group}, generation {generation}) committed {}",
                what.join(", ")
            ),
        );
        Ok(())
    }
}

//! OffsetCommit: a member's commit, or an offset reset from outside the group.

use crate::broker::Broker;
use crate::{change, coordinator};
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::LabError;
use offsetlab_scenario::command::{AlterOffsets, Command};
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use offsetlab_wire::kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse};
use std::collections::{BTreeMap, BTreeSet};

/// A commit from outside the group — what `kafka-consumer-groups.sh --reset-offsets --execute`
/// and an admin client's `alterConsumerGroupOffsets` send (no member id, generation −1) —
/// becomes an `alter-offsets` line, so the lab's history, export and undo see it like any other
/// action. A group with members refuses it, as Kafka's coordinator does (UNKNOWN_MEMBER_ID). A
/// member's commit (a member id and its generation) is checked by the group coordinator and
/// becomes a `commit-offsets` line. Either way every offset is stored as given — a negative one
/// too (kafkajs's `resetOffsets` commits −2 or −1) — and a partition the lab does not have is
/// UNKNOWN_TOPIC_OR_PARTITION while the rest are stored.
pub(crate) fn handle(broker: &Broker, r: &OffsetCommitRequest) -> OffsetCommitResponse {
    let (lab, coordinator) = (&broker.lab, &broker.coordinator);
    let group = r.group_id.0.to_string();
    if group.is_empty() {
        return respond(r, &|_, _| INVALID_GROUP_ID);
    }
    let member_commit = !r.member_id.is_empty() || r.generation_id_or_member_epoch >= 0;
    // Held from the coordinator's check to the lab's command, so the two stay in one order.
    let _settle = coordinator.settle_lock();
    if member_commit {
        if let Err(code) = coordinator.check_commit(&group, &r.member_id, r.generation_id_or_member_epoch) {
            return respond(r, &|_, _| code);
        }
    }
    let s = lab.lock_for_change();
    if !member_commit
        && (s.lab().group(&group).is_ok_and(|g| g.has_members()) || coordinator.has_members(&group))
    {
        // From outside the group (an offset reset): only while nobody is in it.
        return respond(r, &|_, _| UNKNOWN_MEMBER_ID);
    }
    let mut sorted = Sorted::of(r, &s);
    let mut fenced = BTreeSet::new();
    if member_commit {
        let asked: Vec<TopicPartition> = sorted.stored.iter().map(|(tp, _)| tp.clone()).collect();
        for tp in coordinator.fenced(&group, &r.member_id, r.generation_id_or_member_epoch, &asked) {
            sorted.stored.retain(|(t, _)| *t != tp);
            sorted.metadata.remove(&tp);
            sorted.leader_epochs.remove(&tp);
            fenced.insert((tp.topic, tp.partition));
        }
    }
    let commands: Vec<Command> = if sorted.stored.is_empty() {
        Vec::new()
    } else if member_commit {
        vec![coordinator::Coordinator::commit(
            &group,
            &r.member_id,
            r.generation_id_or_member_epoch,
            sorted.stored,
            sorted.metadata,
            sorted.leader_epochs,
        )]
    } else {
        vec![Command::AlterOffsets(AlterOffsets {
            group: group.clone(),
            offsets: sorted.stored,
            metadata: sorted.metadata,
            leader_epochs: sorted.leader_epochs,
        })]
    };
    let outcome = change::apply_commands(lab, s, commands);
    respond(r, &|t, p| {
        if sorted.unknown.contains(&(t.to_string(), p)) {
            UNKNOWN_TOPIC_OR_PARTITION
        } else if fenced.contains(&(t.to_string(), p)) {
            STALE_MEMBER_EPOCH
        } else if sorted.too_large.contains(&(t.to_string(), p)) {
            OFFSET_METADATA_TOO_LARGE
        } else {
            match &outcome {
                Ok(()) => NONE,
                Err(change::Failure::Refused(LabError::InvalidArgument(_))) => INVALID_COMMIT_OFFSET_SIZE,
                Err(failure) => failure.code(),
            }
        }
    })
}

/// The request's partitions, sorted by what becomes of them.
struct Sorted {
    stored: Vec<(TopicPartition, i64)>,
    /// Partitions the lab does not have: UNKNOWN_TOPIC_OR_PARTITION.
    unknown: BTreeSet<(String, i32)>,
    /// Metadata longer than `offset.metadata.max.bytes`: OFFSET_METADATA_TOO_LARGE, not stored.
    too_large: BTreeSet<(String, i32)>,
    /// The metadata strings sent with stored offsets (a member's commit keeps them).
    metadata: BTreeMap<TopicPartition, String>,
    /// The leader epochs sent with stored offsets (v6+, KIP-320), for those that sent one.
    leader_epochs: BTreeMap<TopicPartition, i32>,
}

impl Sorted {
    fn of(r: &OffsetCommitRequest, s: &offsetlab_lab::Session) -> Self {
        let mut sorted = Self {
            stored: Vec::new(),
            unknown: BTreeSet::new(),
            too_large: BTreeSet::new(),
            metadata: BTreeMap::new(),
            leader_epochs: BTreeMap::new(),
        };
        for t in &r.topics {
            for p in &t.partitions {
                let tp = TopicPartition::new(t.name.0.to_string(), p.partition_index);
                let metadata_bytes = p.committed_metadata.as_ref().map_or(0, |m| m.len());
                if s.lab().partition_log(&tp).is_err() {
                    sorted.unknown.insert((tp.topic, tp.partition));
                } else if metadata_bytes > offsetlab_engine::offsets::MAX_METADATA_BYTES {
                    sorted.too_large.insert((tp.topic, tp.partition));
                } else {
                    if let Some(m) = p.committed_metadata.as_ref().filter(|m| !m.is_empty()) {
                        sorted.metadata.insert(tp.clone(), m.to_string());
                    }
                    if p.committed_leader_epoch >= 0 {
                        sorted.leader_epochs.insert(tp.clone(), p.committed_leader_epoch);
                    }
                    sorted.stored.push((tp, p.committed_offset));
                }
            }
        }
        sorted
    }
}

/// Every partition of the request, answered with `code(topic, partition)`.
fn respond(r: &OffsetCommitRequest, code: &dyn Fn(&str, i32) -> i16) -> OffsetCommitResponse {
    OffsetCommitResponse::default().with_topics(
        r.topics
            .iter()
            .map(|t| {
                OffsetCommitResponseTopic::default()
                    .with_name(t.name.clone())
                    .with_partitions(
                        t.partitions
                            .iter()
                            .map(|p| {
                                OffsetCommitResponsePartition::default()
                                    .with_partition_index(p.partition_index)
                                    .with_error_code(code(t.name.0.as_str(), p.partition_index))
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};
    use offsetlab_wire::kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use offsetlab_wire::kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
    use offsetlab_wire::kafka_protocol::messages::{GroupId, OffsetFetchRequest, TopicName};

    fn outside(group: &str, topic: &str, offset: i64) -> OffsetCommitRequest {
        OffsetCommitRequest::default()
            .with_group_id(GroupId(name(group)))
            .with_generation_id_or_member_epoch(-1)
            .with_topics(vec![OffsetCommitRequestTopic::default()
                .with_name(TopicName(name(topic)))
                .with_partitions(vec![OffsetCommitRequestPartition::default()
                    .with_partition_index(0)
                    .with_committed_offset(offset)])])
    }

    fn code(r: &OffsetCommitResponse) -> i16 {
        r.topics[0].partitions[0].error_code
    }

    fn committed(b: &Broker, group: &str) -> i64 {
        let r = crate::handlers::offset_fetch::handle(
            b,
            &OffsetFetchRequest::default()
                .with_group_id(GroupId(name(group)))
                .with_topics(Some(vec![OffsetFetchRequestTopic::default()
                    .with_name(TopicName(name("orders")))
                    .with_partition_indexes(vec![0])])),
            7,
        );
        r.topics[0].partitions[0].committed_offset
    }

    #[test]
    fn a_reset_from_outside_an_empty_group_is_stored_and_read_back() {
        let b = broker();
        assert_eq!(committed(&b, "tools"), -1, "never committed");
        assert_eq!(code(&handle(&b, &outside("tools", "orders", 7))), NONE);
        assert_eq!(committed(&b, "tools"), 7);
        assert!(b
            .lab
            .lock()
            .export()
            .expect("export")
            .contains("alter-offsets tools offsets=orders:0=7"));
    }

    /// kafkajs's `admin.resetOffsets` commits −2 (earliest) or −1 (latest), and an admin may
    /// commit past the log end: Kafka stores each as given, and OffsetFetch hands it back.
    #[test]
    fn offsets_from_outside_are_stored_as_given() {
        let b = broker();
        for offset in [-2, -1, 1_000] {
            assert_eq!(code(&handle(&b, &outside("tools", "orders", offset))), NONE);
            assert_eq!(committed(&b, "tools"), offset);
        }
        assert!(b
            .lab
            .lock()
            .export()
            .expect("export")
            .contains("alter-offsets tools offsets=orders:0=-2"));
        // The group is there, Empty, as Kafka lists a group that only has offsets.
        assert_eq!(
            b.lab.lock().lab().group_view("tools").expect("tools").state,
            "Empty"
        );
    }

    #[test]
    fn what_is_refused_changes_nothing() {
        let b = broker();
        // The seed's group has a member: a reset from outside is refused, as Kafka refuses it.
        assert_eq!(
            code(&handle(&b, &outside("analytics-prod", "orders", 3))),
            UNKNOWN_MEMBER_ID
        );
        assert_eq!(
            code(&handle(&b, &outside("tools", "nope", 1))),
            UNKNOWN_TOPIC_OR_PARTITION
        );
        assert_eq!(code(&handle(&b, &outside("", "orders", 1))), INVALID_GROUP_ID);
        assert_eq!(committed(&b, "tools"), -1);
        // A member id the coordinator never gave out.
        let member = outside("g", "orders", 1)
            .with_member_id(name("ghost"))
            .with_generation_id_or_member_epoch(1);
        assert_eq!(code(&handle(&b, &member)), UNKNOWN_MEMBER_ID);
    }
}

//! OffsetDelete (KIP-496): a group's offsets for some partitions, gone — not while a member reads the topic.

use crate::broker::Broker;
use crate::change::{self, Failure};
use crate::handlers::delete_groups::known_group;
use offsetlab_engine::record::TopicPartition;
use offsetlab_scenario::command::{Command, DeleteOffsets};
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use offsetlab_wire::kafka_protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse};

/// A partition's index and its answer's error code.
type PartitionCode = (i32, i16);

/// OffsetDelete (KIP-496): per partition, `GROUP_SUBSCRIBED_TO_TOPIC` while an active member
/// reads its topic, `UNKNOWN_TOPIC_OR_PARTITION` for one the lab does not have; the rest are
/// deleted (a partition without a committed offset is left as it is).
pub(crate) fn handle(broker: &Broker, r: &OffsetDeleteRequest) -> OffsetDeleteResponse {
    let (lab, coordinator) = (&broker.lab, &broker.coordinator);
    let _settle = coordinator.settle_lock();
    let s = lab.lock_for_change();
    let group = r.group_id.0.to_string();
    if group.is_empty() {
        return OffsetDeleteResponse::default().with_error_code(INVALID_GROUP_ID);
    }
    if !known_group(&s, coordinator, &group) {
        return OffsetDeleteResponse::default().with_error_code(GROUP_ID_NOT_FOUND);
    }
    let subscribed = coordinator.subscribed_topics(&group);
    let mut commands = Vec::new();
    // Per topic: the index of its line (if it has offsets to delete), and each partition's code.
    let mut plan: Vec<(Option<usize>, Vec<PartitionCode>)> = Vec::new();
    for t in &r.topics {
        let topic = t.name.0.to_string();
        let partitions = s.lab().topic(&topic).map_or(0, |t| t.partitions.len() as i32);
        let active = subscribed.contains(&topic) || s.lab().subscribes(&group, &topic);
        let mut deletable = Vec::new();
        let codes = t
            .partitions
            .iter()
            .map(|p| {
                let code = if !(0..partitions).contains(&p.partition_index) {
                    UNKNOWN_TOPIC_OR_PARTITION
                } else if active {
                    GROUP_SUBSCRIBED_TO_TOPIC
                } else {
                    deletable.push(p.partition_index);
                    NONE
                };
                (p.partition_index, code)
            })
            .collect();
        // Only offsets that exist need a tombstone.
        let committed: Vec<i32> = deletable
            .into_iter()
            .filter(|&p| {
                s.lab()
                    .offsets()
                    .fetch(&offsetlab_engine::offsets::OffsetKey::new(
                        &group,
                        &TopicPartition::new(topic.clone(), p),
                    ))
                    .is_some()
            })
            .collect();
        let line = (!committed.is_empty()).then(|| {
            commands.push(Command::DeleteOffsets(DeleteOffsets {
                group: group.clone(),
                topic: topic.clone(),
                partitions: committed,
            }));
            commands.len() - 1
        });
        plan.push((line, codes));
    }
    let results = change::apply_each(lab, s, commands);
    OffsetDeleteResponse::default().with_error_code(NONE).with_topics(
        r.topics
            .iter()
            .zip(plan)
            .map(|(t, (line, codes))| {
                // Refused by the engine: its subscription check; not saved: a server error.
                let failed = line.and_then(|i| results[i].as_ref().err()).map(Failure::code);
                OffsetDeleteResponseTopic::default()
                    .with_name(t.name.clone())
                    .with_partitions(
                        codes
                            .into_iter()
                            .map(|(index, code)| {
                                OffsetDeleteResponsePartition::default()
                                    .with_partition_index(index)
                                    .with_error_code(match failed {
                                        Some(failure) if code == NONE => failure,
                                        _ => code,
                                    })
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}

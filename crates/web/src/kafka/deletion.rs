//! What an administrator deletes through an admin client (`kafka-topics.sh --delete`,
//! `kafka-consumer-groups.sh --delete` and `--delete-offsets`, `AdminClient`): DeleteTopics,
//! DeleteGroups and OffsetDelete (KIP-496).
//!
//! Each topic or group is decided on its own, as Kafka answers them one by one: each becomes one
//! lab command (`delete-topic`, `delete-group`, `delete-offsets`) applied by itself, and the lab is
//! saved once for the request. The engine holds the rules (only an Empty group is deleted; no
//! offsets of a topic an active member reads; the lab's own consumers keep their topics); this
//! module adds what only the listener knows — the real clients in the coordinator right now —
//! and turns refusals into Kafka's error codes.

use super::change::{self, Failure, GROUP_SUBSCRIBED_TO_TOPIC, NON_EMPTY_GROUP, POLICY_VIOLATION};
use super::coordinator::Coordinator;
use super::producers::Producers;
use super::{str_bytes, INVALID_GROUP_ID, INVALID_TOPIC_EXCEPTION, NONE, UNKNOWN_TOPIC_OR_PARTITION};
use crate::api::AppState;
use offsetlab_engine::record::TopicPartition;
use offsetlab_lab::session::Session;
use offsetlab_scenario::command::{Command, DeleteGroup, DeleteOffsets, DeleteTopic};
use offsetlab_wire::kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use offsetlab_wire::kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use offsetlab_wire::kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use offsetlab_wire::kafka_protocol::messages::{
    DeleteGroupsRequest, DeleteGroupsResponse, DeleteTopicsRequest, DeleteTopicsResponse,
    OffsetDeleteRequest, OffsetDeleteResponse, TopicName,
};

/// A partition's index and its answer's error code.
type PartitionCode = (i32, i16);

const GROUP_ID_NOT_FOUND: i16 = 69;
const UNKNOWN_TOPIC_ID: i16 = 100;

/// DeleteTopics. Names only: the lab hands out no topic ids (its Metadata stops before v10), so
/// a request by id is `UNKNOWN_TOPIC_ID`.
pub(crate) fn delete_topics(
    app: &AppState,
    producers: &Producers,
    r: &DeleteTopicsRequest,
) -> DeleteTopicsResponse {
    // v0–v5 list names; v6 lists (name, id) pairs.
    let names: Vec<Option<TopicName>> = if r.topics.is_empty() {
        r.topic_names.iter().cloned().map(Some).collect()
    } else {
        r.topics.iter().map(|t| t.name.clone()).collect()
    };
    let session = app.session();
    let s = session.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut commands = Vec::new();
    // Per name: the index of its line, or its error.
    let mut plan: Vec<Result<usize, (i16, String)>> = Vec::new();
    for name in &names {
        let Some(name) = name else {
            plan.push(Err((
                UNKNOWN_TOPIC_ID,
                "the lab knows topics by name only".into(),
            )));
            continue;
        };
        let topic = name.0.to_string();
        if offsetlab_engine::names::is_internal_topic(&topic) {
            plan.push(Err((
                INVALID_TOPIC_EXCEPTION,
                format!("'{topic}' is one of Kafka's internal topics: it cannot be deleted"),
            )));
        } else if s.lab().topic(&topic).is_err() {
            plan.push(Err((
                UNKNOWN_TOPIC_OR_PARTITION,
                format!("This server does not host this topic: {topic}"),
            )));
        } else {
            plan.push(Ok(commands.len()));
            commands.push(Command::DeleteTopic(DeleteTopic { topic }));
        }
    }
    let results = change::apply_each(app, s, commands);
    DeleteTopicsResponse::default().with_responses(
        names
            .into_iter()
            .zip(plan)
            .map(|(name, planned)| {
                let outcome = planned.and_then(|i| match &results[i] {
                    Ok(()) => Ok(()),
                    // The lab's own rule: its consumers' topics and open transactions stay.
                    Err(Failure::Refused(e @ offsetlab_engine::LabError::InvalidArgument(_))) => {
                        Err((POLICY_VIOLATION, e.to_string()))
                    }
                    Err(failure) => Err((failure.code(), failure.message())),
                });
                if let (Ok(()), Some(n)) = (&outcome, &name) {
                    // Sequence numbers kept for the old partitions would refuse a producer
                    // starting afresh on a topic created again under the name.
                    producers.forget_topic(&n.0);
                }
                let base = DeletableTopicResult::default().with_name(name);
                match outcome {
                    Ok(()) => base.with_error_code(NONE),
                    Err((code, message)) => base
                        .with_error_code(code)
                        .with_error_message(Some(str_bytes(&message))),
                }
            })
            .collect(),
    )
}

/// Whether the lab or the coordinator knows `group`.
fn known_group(s: &Session, coordinator: &Coordinator, group: &str) -> bool {
    s.lab().groups().contains_key(group)
        || s.lab().offsets().groups().any(|g| g == group)
        || coordinator
            .groups
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains_key(group)
}

/// DeleteGroups: an Empty group's offsets become tombstones; a group with members (the lab's or
/// real clients) is `NON_EMPTY_GROUP`.
pub(crate) fn delete_groups(
    app: &AppState,
    coordinator: &Coordinator,
    r: &DeleteGroupsRequest,
) -> DeleteGroupsResponse {
    // The coordinator's decisions and the lab's lines stay in one order.
    let _settle = coordinator.settle_lock();
    let session = app.session();
    let s = session.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut commands = Vec::new();
    let mut plan: Vec<Result<Option<usize>, i16>> = Vec::new();
    for g in &r.groups_names {
        let group = g.0.to_string();
        let in_lab = s.lab().groups().contains_key(&group) || s.lab().offsets().groups().any(|n| n == group);
        plan.push(if group.is_empty() {
            Err(INVALID_GROUP_ID)
        } else if !known_group(&s, coordinator, &group) {
            Err(GROUP_ID_NOT_FOUND)
        } else if s.lab().groups().get(&group).is_some_and(|g| g.has_members())
            // Checked and forgotten in one step, before the lab's line: a client joining from
            // now on finds a new group, as it would in Kafka after the deletion.
            || !coordinator.forget_if_empty(&group)
        {
            Err(NON_EMPTY_GROUP)
        } else if in_lab {
            commands.push(Command::DeleteGroup(DeleteGroup { group }));
            Ok(Some(commands.len() - 1))
        } else {
            // Known only to the coordinator (joined once, never committed): nothing to tombstone.
            Ok(None)
        });
    }
    let results = change::apply_each(app, s, commands);
    DeleteGroupsResponse::default().with_results(
        r.groups_names
            .iter()
            .zip(plan)
            .map(|(g, planned)| {
                let code = match planned.map(|line| line.map(|i| &results[i])) {
                    Err(code) => code,
                    Ok(Some(Err(failure))) => failure.code(),
                    Ok(_) => NONE,
                };
                DeletableGroupResult::default()
                    .with_group_id(g.clone())
                    .with_error_code(code)
            })
            .collect(),
    )
}

/// OffsetDelete (KIP-496): per partition, `GROUP_SUBSCRIBED_TO_TOPIC` while an active member
/// reads its topic, `UNKNOWN_TOPIC_OR_PARTITION` for one the lab does not have; the rest are
/// deleted (a partition without a committed offset is left as it is).
pub(crate) fn offset_delete(
    app: &AppState,
    coordinator: &Coordinator,
    r: &OffsetDeleteRequest,
) -> OffsetDeleteResponse {
    let _settle = coordinator.settle_lock();
    let session = app.session();
    let s = session.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
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
    let results = change::apply_each(app, s, commands);
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

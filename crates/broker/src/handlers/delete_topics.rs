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

use crate::broker::Broker;
use crate::change::{self, Failure};
use crate::str_bytes;
use offsetlab_scenario::command::{Command, DeleteTopic};
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use offsetlab_wire::kafka_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse, TopicName};
use offsetlab_wire::Uuid;

/// DeleteTopics, by name or (v6, KIP-516) by topic id: an id the lab never gave out is
/// `UNKNOWN_TOPIC_ID`.
pub(crate) fn handle(broker: &Broker, r: &DeleteTopicsRequest) -> DeleteTopicsResponse {
    let (lab, producers) = (&broker.lab, &broker.producers);
    let s = lab.lock_for_change();
    // v0–v5 list names; v6 lists (name, id) pairs, either of which may name the topic.
    let names: Vec<Option<TopicName>> = if r.topics.is_empty() {
        r.topic_names.iter().cloned().map(Some).collect()
    } else {
        r.topics
            .iter()
            .map(|t| {
                t.name.clone().or_else(|| {
                    s.lab()
                        .topic_named_by_id(t.topic_id.as_bytes())
                        .map(|n| TopicName(crate::str_bytes(n)))
                })
            })
            .collect()
    };
    // Each answer carries the topic's id (v6): the one asked by, or the named topic's.
    let ids: Vec<Uuid> = names
        .iter()
        .enumerate()
        .map(
            |(i, name)| match r.topics.get(i).map(|t| t.topic_id).filter(|id| !id.is_nil()) {
                Some(id) => id,
                None => Uuid::from_bytes(
                    name.as_ref()
                        .and_then(|n| s.lab().topic_id_of(&n.0))
                        .unwrap_or_default(),
                ),
            },
        )
        .collect();
    let mut commands = Vec::new();
    // Per name: the index of its line, or its error.
    let mut plan: Vec<Result<usize, (i16, String)>> = Vec::new();
    for name in &names {
        let Some(name) = name else {
            plan.push(Err((
                UNKNOWN_TOPIC_ID,
                "the lab has no topic with this topic id".into(),
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
    let results = change::apply_each(lab, s, commands);
    DeleteTopicsResponse::default().with_responses(
        names
            .into_iter()
            .zip(plan)
            .zip(ids)
            .map(|((name, planned), id)| {
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
                let base = DeletableTopicResult::default().with_name(name).with_topic_id(id);
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

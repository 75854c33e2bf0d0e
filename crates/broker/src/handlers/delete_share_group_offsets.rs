//! DeleteShareGroupOffsets (KIP-932): `kafka-share-groups.sh --delete-offsets` and the admin
//! client's `deleteShareGroupOffsets` — the group forgets its share state for whole topics,
//! written as one `delete-share-offsets` line; its next read of them starts where
//! `share.auto.offset.reset` says.
//!
//! As Kafka's coordinator answers: an empty group id is INVALID_GROUP_ID, a group that does not
//! exist or is a consumer group GROUP_ID_NOT_FOUND, one with members NON_EMPTY_GROUP, for the
//! whole request; a topic that does not exist, or that the group has no state for, is
//! UNKNOWN_TOPIC_OR_PARTITION for that topic, and the others are deleted.

use crate::broker::Broker;
use crate::change::{self, Failure, Refusal};
use crate::str_bytes;
use offsetlab_scenario::command::{Command, DeleteShareOffsets};
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::delete_share_group_offsets_response::DeleteShareGroupOffsetsResponseTopic;
use offsetlab_wire::kafka_protocol::messages::{
    DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse, TopicName,
};
use offsetlab_wire::Uuid;

pub(crate) fn handle(broker: &Broker, r: &DeleteShareGroupOffsetsRequest) -> DeleteShareGroupOffsetsResponse {
    let group = r.group_id.to_string();
    let refused = |code: i16, message: String| {
        DeleteShareGroupOffsetsResponse::default()
            .with_error_code(code)
            .with_error_message(Some(str_bytes(&message)))
    };
    if group.is_empty() {
        return refused(INVALID_GROUP_ID, "The group id cannot be empty.".into());
    }
    let s = broker.lab.lock_for_change();
    let lab = s.lab();
    let Some(g) = lab.share_group(&group).ok().filter(|g| !g.deleted) else {
        let message = if lab.group(&group).is_ok() {
            format!("Group {group} is not a share group.")
        } else {
            format!("Group {group} not found.")
        };
        return refused(GROUP_ID_NOT_FOUND, message);
    };
    if !g.members.is_empty() {
        return refused(NON_EMPTY_GROUP, format!("Share group {group} is not empty."));
    }
    let mut answers: Vec<(String, Option<[u8; 16]>, Option<Refusal>)> = Vec::new();
    let mut topics: Vec<String> = Vec::new();
    for t in &r.topics {
        let topic = t.topic_name.to_string();
        let id = lab.topic(&topic).ok().map(|t| t.id);
        let read = g
            .partitions
            .keys()
            .chain(g.unstarted.keys())
            .any(|tp| tp.topic == topic);
        let refusal = if id.is_none() {
            Some((
                UNKNOWN_TOPIC_OR_PARTITION,
                format!("The topic {topic} does not exist."),
            ))
        } else if !read {
            Some((
                UNKNOWN_TOPIC_OR_PARTITION,
                "There is no offset information to delete.".to_string(),
            ))
        } else {
            if !topics.contains(&topic) {
                topics.push(topic.clone());
            }
            None
        };
        // Kafka names the topic by id only where it deleted something.
        let id = id.filter(|_| refusal.is_none());
        answers.push((topic, id, refusal));
    }
    let applied: Result<(), Failure> = if topics.is_empty() {
        Ok(())
    } else {
        change::apply_commands(
            &broker.lab,
            s,
            vec![Command::DeleteShareOffsets(DeleteShareOffsets { group, topics })],
        )
    };
    DeleteShareGroupOffsetsResponse::default().with_responses(
        answers
            .into_iter()
            .map(|(topic, id, refusal)| {
                let (code, message) = match (refusal, &applied) {
                    (Some((code, message)), _) => (code, Some(message)),
                    (None, Err(failure)) => (failure.code(), Some(failure.message())),
                    (None, Ok(())) => (NONE, None),
                };
                DeleteShareGroupOffsetsResponseTopic::default()
                    .with_topic_name(TopicName(str_bytes(&topic)))
                    .with_topic_id(id.map_or(Uuid::nil(), Uuid::from_bytes))
                    .with_error_code(code)
                    .with_error_message(message.map(|m| str_bytes(&m)))
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};
    use offsetlab_wire::kafka_protocol::messages::delete_share_group_offsets_request::DeleteShareGroupOffsetsRequestTopic;
    use offsetlab_wire::kafka_protocol::messages::GroupId;

    fn delete(b: &Broker, group: &str, topics: &[&str]) -> DeleteShareGroupOffsetsResponse {
        handle(
            b,
            &DeleteShareGroupOffsetsRequest::default()
                .with_group_id(GroupId(name(group)))
                .with_topics(
                    topics
                        .iter()
                        .map(|t| {
                            DeleteShareGroupOffsetsRequestTopic::default().with_topic_name(TopicName(name(t)))
                        })
                        .collect(),
                ),
        )
    }

    #[test]
    fn an_empty_share_group_forgets_a_topic_it_read_and_reads_it_again_from_the_reset() {
        let b = broker();
        let lines: Vec<String> = [
            "topic other partitions=1",
            "share-consumer s1 group=workers topic=orders ack=explicit max-poll=4",
            "share-poll s1",
            "close s1",
            "alter-share-offsets workers offsets=orders:0=6",
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        b.lab
            .lock()
            .apply_lines(&lines)
            .expect("an Empty share group reading orders");
        assert_eq!(
            delete(&b, "analytics-prod", &["orders"]).error_code,
            GROUP_ID_NOT_FOUND
        );
        assert_eq!(delete(&b, "nobody", &["orders"]).error_code, GROUP_ID_NOT_FOUND);
        let r = delete(&b, "workers", &["orders", "other", "nowhere"]);
        let codes: Vec<(&str, i16)> = r
            .responses
            .iter()
            .map(|t| (t.topic_name.as_str(), t.error_code))
            .collect();
        assert_eq!(
            codes,
            [
                ("orders", NONE),
                ("other", UNKNOWN_TOPIC_OR_PARTITION),
                ("nowhere", UNKNOWN_TOPIC_OR_PARTITION)
            ]
        );
        let s = b.lab.lock();
        assert!(s
            .lab()
            .share_start_offsets("workers")
            .expect("still a group")
            .is_empty());
        assert!(s
            .export()
            .expect("export")
            .contains("delete-share-offsets workers topics=orders"));
        drop(s);
        // Nothing left to delete.
        let again = delete(&b, "workers", &["orders"]);
        assert_eq!(again.responses[0].error_code, UNKNOWN_TOPIC_OR_PARTITION);
    }
}

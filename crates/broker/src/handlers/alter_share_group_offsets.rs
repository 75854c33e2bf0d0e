//! AlterShareGroupOffsets (KIP-932): `kafka-share-groups.sh --reset-offsets --execute` and the
//! admin client's `alterShareGroupOffsets` — each named partition's share state starts again at
//! the offset given, written as one `alter-share-offsets` line.
//!
//! As Kafka's coordinator answers: an empty group id is INVALID_GROUP_ID, a consumer group
//! GROUP_ID_NOT_FOUND and a group with members NON_EMPTY_GROUP, for the whole request; a topic
//! or partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION for that partition, and the
//! others are altered. A group that does not exist is created, Empty. A negative start offset
//! leaves the partition with none, described as −1 (Apache Kafka 4.4 stores it so).

use crate::broker::Broker;
use crate::change::{self, Failure, Refusal};
use crate::str_bytes;
use offsetlab_engine::record::{Offset, TopicPartition};
use offsetlab_engine::LabError;
use offsetlab_scenario::command::{AlterShareOffsets, Command};
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::alter_share_group_offsets_response::{
    AlterShareGroupOffsetsResponsePartition, AlterShareGroupOffsetsResponseTopic,
};
use offsetlab_wire::kafka_protocol::messages::{
    AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse, TopicName,
};
use offsetlab_wire::Uuid;

/// One topic of the answer: its name, its id when it exists, and each partition's new start
/// offset or the refusal decided before anything was applied.
type TopicAnswer = (String, Option<[u8; 16]>, Vec<(i32, Result<Offset, Refusal>)>);

pub(crate) fn handle(broker: &Broker, r: &AlterShareGroupOffsetsRequest) -> AlterShareGroupOffsetsResponse {
    let group = r.group_id.to_string();
    let refused = |code: i16, message: String| {
        AlterShareGroupOffsetsResponse::default()
            .with_error_code(code)
            .with_error_message(Some(str_bytes(&message)))
    };
    if group.is_empty() {
        return refused(INVALID_GROUP_ID, "The group id cannot be empty.".into());
    }
    let s = broker.lab.lock_for_change();
    let lab = s.lab();
    // A consumer group — the lab's, or a real client's the coordinator holds before the lab
    // has it (joined, never committed).
    if lab.group(&group).is_ok() || offsetlab_lab::lock(&broker.coordinator.groups).contains_key(&group) {
        return refused(GROUP_ID_NOT_FOUND, format!("Group {group} is not a share group."));
    }
    if let Ok(g) = lab.share_group(&group) {
        if !g.members.is_empty() {
            return refused(NON_EMPTY_GROUP, format!("Share group {group} is not empty."));
        }
    }
    // Each partition: its topic's id, and the refusal decided before anything is applied.
    let mut answers: Vec<TopicAnswer> = Vec::new();
    let mut offsets: Vec<(TopicPartition, Offset)> = Vec::new();
    for t in &r.topics {
        let topic = t.topic_name.to_string();
        let id = lab.topic(&topic).ok().map(|t| t.id);
        let partitions = t
            .partitions
            .iter()
            .map(|p| {
                let tp = TopicPartition::new(topic.clone(), p.partition_index);
                let answer = if lab.partition_log(&tp).is_err() {
                    Err((
                        UNKNOWN_TOPIC_OR_PARTITION,
                        format!("This server does not host this topic-partition: {tp}"),
                    ))
                } else {
                    offsets.push((tp, p.start_offset));
                    Ok(p.start_offset)
                };
                (p.partition_index, answer)
            })
            .collect();
        answers.push((topic, id, partitions));
    }
    let applied: Result<(), Failure> = if offsets.is_empty() {
        Ok(())
    } else {
        change::apply_commands(
            &broker.lab,
            s,
            vec![Command::AlterShareOffsets(AlterShareOffsets { group, offsets })],
        )
    };
    if let Err(
        failure @ Failure::Refused(LabError::ShareGroupNotEmpty { .. } | LabError::NotAShareGroup(_)),
    ) = &applied
    {
        return refused(failure.code(), failure.message());
    }
    AlterShareGroupOffsetsResponse::default().with_responses(
        answers
            .into_iter()
            .map(|(topic, id, partitions)| {
                AlterShareGroupOffsetsResponseTopic::default()
                    .with_topic_name(TopicName(str_bytes(&topic)))
                    .with_topic_id(id.map_or(Uuid::nil(), Uuid::from_bytes))
                    .with_partitions(
                        partitions
                            .into_iter()
                            .map(|(p, answer)| {
                                let (code, message) = match (answer, &applied) {
                                    (Err((code, message)), _) => (code, Some(message)),
                                    (Ok(_), Err(failure)) => (failure.code(), Some(failure.message())),
                                    (Ok(_), Ok(())) => (NONE, None),
                                };
                                AlterShareGroupOffsetsResponsePartition::default()
                                    .with_partition_index(p)
                                    .with_error_code(code)
                                    .with_error_message(message.map(|m| str_bytes(&m)))
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
    use offsetlab_wire::kafka_protocol::messages::alter_share_group_offsets_request::{
        AlterShareGroupOffsetsRequestPartition, AlterShareGroupOffsetsRequestTopic,
    };
    use offsetlab_wire::kafka_protocol::messages::GroupId;

    fn alter(b: &Broker, group: &str, offsets: &[(&str, i32, i64)]) -> AlterShareGroupOffsetsResponse {
        let mut topics: Vec<AlterShareGroupOffsetsRequestTopic> = Vec::new();
        for (t, p, o) in offsets {
            let partition = AlterShareGroupOffsetsRequestPartition::default()
                .with_partition_index(*p)
                .with_start_offset(*o);
            match topics.iter_mut().find(|x| x.topic_name.as_str() == *t) {
                Some(x) => x.partitions.push(partition),
                None => topics.push(
                    AlterShareGroupOffsetsRequestTopic::default()
                        .with_topic_name(TopicName(name(t)))
                        .with_partitions(vec![partition]),
                ),
            }
        }
        handle(
            b,
            &AlterShareGroupOffsetsRequest::default()
                .with_group_id(GroupId(name(group)))
                .with_topics(topics),
        )
    }

    fn codes(r: &AlterShareGroupOffsetsResponse) -> Vec<(String, i32, i16)> {
        r.responses
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(move |p| (t.topic_name.to_string(), p.partition_index, p.error_code))
            })
            .collect()
    }

    fn history(b: &Broker) -> Vec<String> {
        let text = b.lab.lock().export().expect("export");
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn an_empty_share_group_starts_again_where_it_is_told_and_the_rest_is_answered_per_partition() {
        let b = broker();
        let r = alter(
            &b,
            "workers",
            &[("orders", 0, 5), ("orders", 3, 1), ("nowhere", 0, 1)],
        );
        assert_eq!(r.error_code, NONE, "{r:?}");
        assert_eq!(
            codes(&r),
            [
                ("orders".to_string(), 0, NONE),
                ("orders".to_string(), 3, UNKNOWN_TOPIC_OR_PARTITION),
                ("nowhere".to_string(), 0, UNKNOWN_TOPIC_OR_PARTITION)
            ]
        );
        assert!(history(&b).contains(&"alter-share-offsets workers offsets=orders:0=5".to_string()));
        let s = b.lab.lock();
        let starts = s.lab().share_start_offsets("workers").expect("a share group now");
        assert_eq!(starts, [(TopicPartition::new("orders", 0), 5)]);
    }

    #[test]
    fn a_group_with_members_or_of_another_type_changes_nothing() {
        let b = broker();
        let lines = vec!["share-consumer s1 group=workers topic=orders".to_string()];
        b.lab.lock().apply_lines(&lines).expect("a member");
        let before = history(&b);
        let r = alter(&b, "workers", &[("orders", 0, 0)]);
        assert_eq!((r.error_code, r.responses.len()), (NON_EMPTY_GROUP, 0));
        let r = alter(&b, "analytics-prod", &[("orders", 0, 0)]);
        assert_eq!(r.error_code, GROUP_ID_NOT_FOUND);
        let r = alter(&b, "", &[("orders", 0, 0)]);
        assert_eq!(r.error_code, INVALID_GROUP_ID);
        let r = alter(&b, "fresh", &[("orders", 9, 3)]);
        assert_eq!(codes(&r), [("orders".to_string(), 9, UNKNOWN_TOPIC_OR_PARTITION)]);
        assert_eq!(history(&b), before, "nothing written");
        assert!(b.lab.lock().lab().share_group("fresh").is_err());
    }
}

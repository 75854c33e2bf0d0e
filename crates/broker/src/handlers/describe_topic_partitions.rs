//! DescribeTopicPartitions (API 75, KIP-966): what Kafka 3.8+'s admin client asks for instead of
//! Metadata when it describes topics — each topic's id and partitions, with the leader, the
//! replicas and the in-sync and eligible leader replicas, paged by a cursor so a topic of
//! thousands of partitions is described a page at a time.
//!
//! Request `topics` (none: every topic, `__consumer_offsets` among them), `response_partition_limit`,
//! `cursor` (the topic and partition to start from). Response: the topics sorted by name, a topic
//! the lab does not have with UNKNOWN_TOPIC_OR_PARTITION, and `next_cursor` where the page ended.
//! One broker: node 0 leads every partition, is its only replica and its only eligible leader.

use crate::broker::{Broker, NODE};
use crate::str_bytes;
use offsetlab_engine::offsets::CONSUMER_OFFSETS_TOPIC;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic,
};
use offsetlab_wire::kafka_protocol::messages::{
    BrokerId, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse, TopicName,
};
use offsetlab_wire::Uuid;

/// Kafka's `max.request.partition.size.limit`: partitions one response describes at most.
const MAX_PARTITIONS: usize = 2000;

/// Every topic's authorized operations are answered (the request has no flag for them): with
/// no authorizer, all of them ([`crate::authorized`]).
pub(crate) fn handle(broker: &Broker, r: &DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse {
    let s = broker.lab.lock();
    let lab = s.lab();
    let mut names: Vec<String> = if r.topics.is_empty() {
        lab.topics()
            .keys()
            .cloned()
            .chain([CONSUMER_OFFSETS_TOPIC.to_string()])
            .collect()
    } else {
        r.topics.iter().map(|t| t.name.0.to_string()).collect()
    };
    names.sort();
    names.dedup();
    let limit = usize::try_from(r.response_partition_limit)
        .ok()
        .filter(|&l| l > 0)
        .map_or(MAX_PARTITIONS, |l| l.min(MAX_PARTITIONS));
    // A cursor starts the page at its topic and partition; topics before it are done.
    let (start_topic, start_partition) = match &r.cursor {
        Some(c) => (Some(c.topic_name.0.to_string()), c.partition_index.max(0)),
        None => (None, 0),
    };
    let mut left = limit;
    let mut topics = Vec::new();
    let mut next_cursor = None;
    for name in names {
        if start_topic.as_ref().is_some_and(|t| name < *t) {
            continue;
        }
        let partitions = match lab.topic(&name) {
            Ok(t) => t.partitions.len() as i32,
            Err(_) if name == CONSUMER_OFFSETS_TOPIC => 1,
            Err(_) => {
                topics.push(
                    DescribeTopicPartitionsResponseTopic::default()
                        .with_name(Some(TopicName(str_bytes(&name))))
                        .with_error_code(UNKNOWN_TOPIC_OR_PARTITION)
                        .with_topic_authorized_operations(crate::authorized::TOPIC),
                );
                continue;
            }
        };
        if left == 0 {
            next_cursor = Some(Cursor::default().with_topic_name(TopicName(str_bytes(&name))));
            break;
        }
        let first = if start_topic.as_deref() == Some(name.as_str()) {
            start_partition
        } else {
            0
        };
        let mut described = Vec::new();
        for p in first..partitions {
            if left == 0 {
                next_cursor = Some(
                    Cursor::default()
                        .with_topic_name(TopicName(str_bytes(&name)))
                        .with_partition_index(p),
                );
                break;
            }
            left -= 1;
            described.push(
                DescribeTopicPartitionsResponsePartition::default()
                    .with_partition_index(p)
                    .with_leader_id(BrokerId(NODE))
                    .with_leader_epoch(crate::broker::LEADER_EPOCH)
                    .with_replica_nodes(vec![BrokerId(NODE)])
                    .with_isr_nodes(vec![BrokerId(NODE)])
                    .with_eligible_leader_replicas(Some(Vec::new()))
                    .with_last_known_elr(Some(Vec::new())),
            );
        }
        topics.push(
            DescribeTopicPartitionsResponseTopic::default()
                .with_name(Some(TopicName(str_bytes(&name))))
                .with_topic_id(Uuid::from_bytes(lab.topic_id_of(&name).unwrap_or_default()))
                .with_is_internal(name == CONSUMER_OFFSETS_TOPIC)
                .with_partitions(described)
                .with_topic_authorized_operations(crate::authorized::TOPIC),
        );
        if next_cursor.is_some() {
            break;
        }
    }
    DescribeTopicPartitionsResponse::default()
        .with_topics(topics)
        .with_next_cursor(next_cursor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};
    use offsetlab_wire::kafka_protocol::messages::describe_topic_partitions_request::{
        Cursor as AskCursor, TopicRequest,
    };

    fn ask(topics: &[&str], limit: i32, cursor: Option<(&str, i32)>) -> DescribeTopicPartitionsResponse {
        let b = broker();
        let lines = vec!["topic payments partitions=3".to_string()];
        b.lab.lock().apply_lines(&lines).expect("topic");
        handle(
            &b,
            &DescribeTopicPartitionsRequest::default()
                .with_topics(
                    topics
                        .iter()
                        .map(|t| TopicRequest::default().with_name(TopicName(name(t))))
                        .collect(),
                )
                .with_response_partition_limit(limit)
                .with_cursor(cursor.map(|(t, p)| {
                    AskCursor::default()
                        .with_topic_name(TopicName(name(t)))
                        .with_partition_index(p)
                })),
        )
    }

    fn described(r: &DescribeTopicPartitionsResponse) -> Vec<(String, i16, Vec<i32>)> {
        r.topics
            .iter()
            .map(|t| {
                (
                    t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default(),
                    t.error_code,
                    t.partitions.iter().map(|p| p.partition_index).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn every_topic_sorted_with_its_id_and_one_broker_as_every_replica() {
        let r = ask(&[], 0, None);
        assert_eq!(
            described(&r),
            [
                ("__consumer_offsets".to_string(), NONE, vec![0]),
                ("orders".to_string(), NONE, vec![0]),
                ("payments".to_string(), NONE, vec![0, 1, 2]),
            ]
        );
        assert!(r.topics[0].is_internal && !r.topics[1].is_internal);
        assert!(r.topics.iter().all(|t| !t.topic_id.is_nil()));
        let p = &r.topics[2].partitions[1];
        assert_eq!(
            (p.leader_id, p.isr_nodes.clone()),
            (BrokerId(NODE), vec![BrokerId(NODE)])
        );
        assert!(r.next_cursor.is_none());
    }

    #[test]
    fn pages_follow_the_cursor_and_unknown_topics_are_named() {
        let first = ask(&["payments", "nope", "orders"], 2, None);
        assert_eq!(
            described(&first),
            [
                ("nope".to_string(), UNKNOWN_TOPIC_OR_PARTITION, vec![]),
                ("orders".to_string(), NONE, vec![0]),
                ("payments".to_string(), NONE, vec![0]),
            ]
        );
        let cursor = first.next_cursor.expect("a next page");
        assert_eq!(
            (cursor.topic_name.0.as_str(), cursor.partition_index),
            ("payments", 1)
        );
        let second = ask(&["payments", "nope", "orders"], 2, Some(("payments", 1)));
        assert_eq!(described(&second), [("payments".to_string(), NONE, vec![1, 2])]);
        assert!(second.next_cursor.is_none());
    }
}

//! DescribeShareGroupOffsets (KIP-932): each share partition's start offset (SPSO), what
//! `kafka-share-groups.sh --describe` and the admin client's `listShareGroupOffsets` show.
//!
//! Answered as Kafka's coordinator answers it: no topics named means every partition the group
//! has started reading; a partition it has not, or a topic that does not exist, has start
//! offset −1 and no error; and neither an unknown group nor a consumer group is an error (the
//! coordinator reads share state, and finds none).

use crate::broker::Broker;
use crate::str_bytes;
use offsetlab_engine::record::{Offset, TopicPartition};
use offsetlab_lab::read_view::ReadView;
use offsetlab_wire::kafka_protocol::messages::describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestGroup;
use offsetlab_wire::kafka_protocol::messages::describe_share_group_offsets_response::{
    DescribeShareGroupOffsetsResponseGroup, DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
};
use offsetlab_wire::kafka_protocol::messages::{
    DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse, TopicName,
};
use offsetlab_wire::Uuid;
use std::collections::BTreeMap;

/// A start offset no share partition has: never read, or not there.
const NONE: Offset = -1;

pub(crate) fn handle(
    broker: &Broker,
    r: &DescribeShareGroupOffsetsRequest,
) -> DescribeShareGroupOffsetsResponse {
    let view = broker.lab.view();
    let s = broker.lab.lock();
    let groups = r
        .groups
        .iter()
        .map(|g| {
            let starts: BTreeMap<TopicPartition, Offset> = s
                .lab()
                .share_start_offsets(g.group_id.as_str())
                .map(|v| v.into_iter().collect())
                .unwrap_or_default();
            describe(&view, g, &starts)
        })
        .collect();
    DescribeShareGroupOffsetsResponse::default().with_groups(groups)
}

fn describe(
    view: &ReadView,
    g: &DescribeShareGroupOffsetsRequestGroup,
    starts: &BTreeMap<TopicPartition, Offset>,
) -> DescribeShareGroupOffsetsResponseGroup {
    let asked: Vec<(String, Vec<i32>)> = match &g.topics {
        Some(topics) => topics
            .iter()
            .map(|t| (t.topic_name.to_string(), t.partitions.clone()))
            .collect(),
        // Every partition the group reads, of topics that still exist.
        None => {
            let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
            for tp in starts.keys().filter(|tp| view.topic_id_of(&tp.topic).is_some()) {
                by_topic.entry(tp.topic.clone()).or_default().push(tp.partition);
            }
            by_topic.into_iter().collect()
        }
    };
    let topics = asked
        .into_iter()
        .map(|(topic, partitions)| {
            let id = view.topic_id_of(&topic);
            DescribeShareGroupOffsetsResponseTopic::default()
                .with_topic_name(TopicName(str_bytes(&topic)))
                .with_topic_id(id.map_or(Uuid::nil(), Uuid::from_bytes))
                .with_partitions(
                    partitions
                        .into_iter()
                        .map(|p| {
                            let start = id
                                .and_then(|_| starts.get(&TopicPartition::new(topic.clone(), p)))
                                .copied()
                                .unwrap_or(NONE);
                            DescribeShareGroupOffsetsResponsePartition::default()
                                .with_partition_index(p)
                                .with_start_offset(start)
                                .with_leader_epoch(0)
                        })
                        .collect(),
                )
        })
        .collect();
    DescribeShareGroupOffsetsResponseGroup::default()
        .with_group_id(g.group_id.clone())
        .with_topics(topics)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};
    use offsetlab_wire::kafka_protocol::messages::describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestTopic;
    use offsetlab_wire::kafka_protocol::messages::GroupId;

    fn ask(b: &Broker, group: &str, topics: Option<Vec<(&str, Vec<i32>)>>) -> Vec<(String, i32, i64)> {
        let request = DescribeShareGroupOffsetsRequest::default().with_groups(vec![
            DescribeShareGroupOffsetsRequestGroup::default()
                .with_group_id(GroupId(name(group)))
                .with_topics(topics.map(|ts| {
                    ts.into_iter()
                        .map(|(t, ps)| {
                            DescribeShareGroupOffsetsRequestTopic::default()
                                .with_topic_name(TopicName(name(t)))
                                .with_partitions(ps)
                        })
                        .collect()
                })),
        ]);
        let g = &handle(b, &request).groups[0];
        assert_eq!(g.error_code, 0);
        g.topics
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(move |p| (t.topic_name.to_string(), p.partition_index, p.start_offset))
            })
            .collect()
    }

    #[test]
    fn a_share_groups_start_offsets_are_described_as_kafka_describes_them() {
        let b = broker();
        let lines: Vec<String> = [
            "alter-share-group workers share.auto.offset.reset=earliest",
            "share-consumer s1 group=workers topic=orders ack=explicit max-poll=2 acquire-mode=record-limit",
            "share-poll s1",
            "share-ack s1 accept",
            "close s1",
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        b.lab
            .lock()
            .apply_lines(&lines)
            .expect("a share group read two records");
        assert_eq!(ask(&b, "workers", None), [("orders".to_string(), 0, 2)]);
        assert_eq!(
            ask(
                &b,
                "workers",
                Some(vec![("orders", vec![0, 7]), ("nowhere", vec![0])])
            ),
            [
                ("orders".to_string(), 0, 2),
                ("orders".to_string(), 7, -1),
                ("nowhere".to_string(), 0, -1)
            ]
        );
        // Neither an unknown group nor a consumer group is an error: there is no share state.
        assert!(ask(&b, "nobody", None).is_empty());
        assert!(ask(&b, "analytics-prod", None).is_empty());
    }
}

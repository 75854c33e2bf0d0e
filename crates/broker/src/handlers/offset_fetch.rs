//! OffsetFetch: groups' committed offsets, from the coordinator's view of `__consumer_offsets`.
//! Up to v7 a request asks for one group; from v8 (KIP-709) for several, answered group by group.
//! Read from the lab's published view ([`offsetlab_lab::read_view`]): it never waits for the
//! lab's lock.

use crate::broker::Broker;
use crate::str_bytes;
use offsetlab_lab::read_view::ReadView;
use offsetlab_wire::kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use offsetlab_wire::kafka_protocol::messages::TopicName;
use offsetlab_wire::kafka_protocol::messages::{OffsetFetchRequest, OffsetFetchResponse};
use std::collections::BTreeMap;

/// One partition's answer: its index, the committed offset (−1 when never committed), the leader
/// epoch committed with it (−1 for none) and its metadata.
type Committed = (i32, i64, i32, String);

/// `group`'s committed offsets for `topics` (every partition it committed, when `None`), by topic.
fn committed(
    lab: &ReadView,
    group: &str,
    topics: Option<Vec<(String, Vec<i32>)>>,
) -> Vec<(String, Vec<Committed>)> {
    let held: BTreeMap<(String, i32), (i64, i32, String)> = lab
        .group_offsets(group)
        .map(|(k, v)| {
            let value = (v.offset, v.leader_epoch, v.metadata.clone());
            ((k.topic.clone(), k.partition), value)
        })
        .collect();
    let wanted = topics.unwrap_or_else(|| {
        let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for (t, p) in held.keys() {
            by_topic.entry(t.clone()).or_default().push(*p);
        }
        by_topic.into_iter().collect()
    });
    wanted
        .into_iter()
        .map(|(topic, partitions)| {
            let answers = partitions
                .into_iter()
                .map(|p| match held.get(&(topic.clone(), p)) {
                    Some((offset, epoch, metadata)) => (p, *offset, *epoch, metadata.clone()),
                    None => (p, -1, -1, String::new()),
                })
                .collect();
            (topic, answers)
        })
        .collect()
}

pub(crate) fn handle(broker: &Broker, r: &OffsetFetchRequest, version: i16) -> OffsetFetchResponse {
    let view = broker.lab.view();
    let lab = &*view;
    if version >= 8 {
        let groups = r
            .groups
            .iter()
            .map(|g| {
                // v9+: a consumer-protocol member's fetch carries its id and epoch, checked first.
                let member = g.member_id.as_ref().map(|m| m.as_str());
                if let Err(code) = broker
                    .coordinator
                    .check_fetch(&g.group_id.0, member, g.member_epoch)
                {
                    return OffsetFetchResponseGroup::default()
                        .with_group_id(g.group_id.clone())
                        .with_error_code(code);
                }
                let topics = g.topics.as_ref().map(|ts| {
                    ts.iter()
                        .map(|t| (t.name.0.to_string(), t.partition_indexes.clone()))
                        .collect()
                });
                let topics = committed(lab, &g.group_id.0, topics)
                    .into_iter()
                    .map(|(topic, partitions)| {
                        OffsetFetchResponseTopics::default()
                            .with_name(TopicName(str_bytes(&topic)))
                            .with_partitions(
                                partitions
                                    .into_iter()
                                    .map(|(p, offset, epoch, metadata)| {
                                        OffsetFetchResponsePartitions::default()
                                            .with_partition_index(p)
                                            .with_committed_offset(offset)
                                            .with_committed_leader_epoch(epoch)
                                            .with_metadata(Some(str_bytes(&metadata)))
                                    })
                                    .collect(),
                            )
                    })
                    .collect();
                OffsetFetchResponseGroup::default()
                    .with_group_id(g.group_id.clone())
                    .with_topics(topics)
            })
            .collect();
        return OffsetFetchResponse::default().with_groups(groups);
    }
    let topics = r.topics.as_ref().map(|ts| {
        ts.iter()
            .map(|t| (t.name.0.to_string(), t.partition_indexes.clone()))
            .collect()
    });
    let topics = committed(lab, &r.group_id.0, topics)
        .into_iter()
        .map(|(topic, partitions)| {
            OffsetFetchResponseTopic::default()
                .with_name(TopicName(str_bytes(&topic)))
                .with_partitions(
                    partitions
                        .into_iter()
                        .map(|(p, offset, epoch, metadata)| {
                            OffsetFetchResponsePartition::default()
                                .with_partition_index(p)
                                .with_committed_offset(offset)
                                .with_committed_leader_epoch(epoch)
                                .with_metadata(Some(str_bytes(&metadata)))
                        })
                        .collect(),
                )
        })
        .collect();
    OffsetFetchResponse::default().with_topics(topics)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};
    use offsetlab_wire::kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
    use offsetlab_wire::kafka_protocol::messages::GroupId;

    /// v8 asks for several groups at once: each answered with its own offsets, a group that
    /// committed nothing with none.
    #[test]
    fn several_groups_are_answered_at_once() {
        let b = broker();
        let lines = vec!["alter-offsets audit offsets=orders:0=5".to_string()];
        b.lab.lock().apply_lines(&lines).expect("offsets");
        // Null topics: every partition the group committed.
        let every = |g: &str| {
            OffsetFetchRequestGroup::default()
                .with_group_id(GroupId(name(g)))
                .with_topics(None)
        };
        let r = handle(
            &b,
            &OffsetFetchRequest::default().with_groups(vec![
                every("analytics-prod"),
                every("audit"),
                every("nobody"),
            ]),
            8,
        );
        type Offsets = Vec<(String, i32, i64)>;
        let answers: Vec<(&str, Offsets)> = r
            .groups
            .iter()
            .map(|g| {
                let offsets = g
                    .topics
                    .iter()
                    .flat_map(|t| {
                        t.partitions
                            .iter()
                            .map(move |p| (t.name.0.to_string(), p.partition_index, p.committed_offset))
                    })
                    .collect();
                (g.group_id.0.as_str(), offsets)
            })
            .collect();
        assert_eq!(
            answers,
            [
                ("analytics-prod", vec![("orders".to_string(), 0, 0)]),
                ("audit", vec![("orders".to_string(), 0, 5)]),
                ("nobody", vec![]),
            ]
        );
    }
}

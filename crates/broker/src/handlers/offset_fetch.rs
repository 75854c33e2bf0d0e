//! OffsetFetch: a group's committed offsets, from the coordinator's view of `__consumer_offsets`.

use crate::broker::Broker;
use crate::str_bytes;
use offsetlab_wire::kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponsePartition, OffsetFetchResponseTopic,
};
use offsetlab_wire::kafka_protocol::messages::TopicName;
use offsetlab_wire::kafka_protocol::messages::{OffsetFetchRequest, OffsetFetchResponse};
use std::collections::BTreeMap;

/// A group's committed offsets, from the coordinator's view of `__consumer_offsets`; `-1` for a
/// partition asked for and never committed.
pub(crate) fn handle(broker: &Broker, r: &OffsetFetchRequest) -> OffsetFetchResponse {
    let s = broker.lab.lock();
    let lab = s.lab();
    let group = r.group_id.0.to_string();
    let committed: BTreeMap<(String, i32), (i64, String)> = lab
        .offsets()
        .view()
        .iter()
        .filter(|(k, _)| k.group == group)
        .map(|(k, v)| ((k.topic.clone(), k.partition), (v.offset, v.metadata.clone())))
        .collect();
    let wanted: Vec<(String, Vec<i32>)> = match &r.topics {
        Some(ts) => ts
            .iter()
            .map(|t| (t.name.0.to_string(), t.partition_indexes.clone()))
            .collect(),
        None => {
            let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
            for (t, p) in committed.keys() {
                by_topic.entry(t.clone()).or_default().push(*p);
            }
            by_topic.into_iter().collect()
        }
    };
    let topics = wanted
        .into_iter()
        .map(|(topic, partitions)| {
            OffsetFetchResponseTopic::default()
                .with_name(TopicName(str_bytes(&topic)))
                .with_partitions(
                    partitions
                        .into_iter()
                        .map(|p| {
                            let found = committed.get(&(topic.clone(), p));
                            OffsetFetchResponsePartition::default()
                                .with_partition_index(p)
                                .with_committed_offset(found.map_or(-1, |v| v.0))
                                .with_metadata(Some(str_bytes(found.map_or("", |v| v.1.as_str()))))
                        })
                        .collect(),
                )
        })
        .collect();
    OffsetFetchResponse::default().with_topics(topics)
}

//! Metadata: the one broker (node 0, the leader of every partition) and the topics asked for —
//! created first when the request allows it and `--auto-create-topics` is on.

use crate::broker::{Broker, NODE};
use crate::str_bytes;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use offsetlab_wire::kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse, TopicName};

pub(crate) fn handle(broker: &Broker, r: &MetadataRequest, version: i16) -> MetadataResponse {
    // Before v4 a Metadata request always allowed creation; since, the client says.
    if broker.config.auto_create_topics && (version < 4 || r.allow_auto_topic_creation) {
        let wanted: Vec<String> = r
            .topics
            .iter()
            .flatten()
            .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
            .collect();
        if !wanted.is_empty() {
            crate::auto_create::create_topics(&broker.lab, &wanted);
        }
    }
    let advertised = broker.advertised;
    let s = broker.lab.lock();
    let lab = s.lab();
    let names: Vec<String> = match &r.topics {
        // Null (or, before v1, empty) means every topic.
        None => lab.topics().keys().cloned().collect(),
        Some(ts) if ts.is_empty() => lab.topics().keys().cloned().collect(),
        Some(ts) => ts
            .iter()
            .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
            .collect(),
    };
    let topics = names
        .iter()
        .map(|name| match lab.topic(name) {
            Ok(t) => MetadataResponseTopic::default()
                .with_name(Some(TopicName(str_bytes(name))))
                .with_error_code(NONE)
                .with_partitions(
                    (0..t.partitions.len() as i32)
                        .map(|p| {
                            MetadataResponsePartition::default()
                                .with_partition_index(p)
                                .with_leader_id(BrokerId(NODE))
                                .with_replica_nodes(vec![BrokerId(NODE)])
                                .with_isr_nodes(vec![BrokerId(NODE)])
                        })
                        .collect(),
                ),
            // A name no client may use (an internal topic, illegal characters) is an error a
            // client gives up on at once; an unknown one it waits for, as topics appear.
            Err(_) => MetadataResponseTopic::default()
                .with_name(Some(TopicName(str_bytes(name))))
                .with_error_code(if crate::auto_create::creatable(name) {
                    UNKNOWN_TOPIC_OR_PARTITION
                } else {
                    INVALID_TOPIC_EXCEPTION
                }),
        })
        .collect();
    MetadataResponse::default()
        .with_brokers(vec![MetadataResponseBroker::default()
            .with_node_id(BrokerId(NODE))
            .with_host(str_bytes(&advertised.ip().to_string()))
            .with_port(i32::from(advertised.port()))])
        .with_cluster_id(Some(str_bytes("offsetlab")))
        .with_controller_id(BrokerId(NODE))
        .with_topics(topics)
}

//! Metadata: the one broker (node 0, the leader of every partition) and the topics asked for —
//! created first when the request allows it and `--auto-create-topics` is on.

use crate::broker::{Broker, NODE};
use crate::str_bytes;
use offsetlab_engine::offsets::CONSUMER_OFFSETS_TOPIC;
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
    // Every topic, `__consumer_offsets` among them: Kafka lists its internal topic (marked
    // internal), and any consumer may read it.
    let every = || {
        let mut names: Vec<String> = lab.topics().keys().cloned().collect();
        names.push(CONSUMER_OFFSETS_TOPIC.to_string());
        names
    };
    let names: Vec<String> = match &r.topics {
        // Null (or, before v1, empty) means every topic.
        None => every(),
        Some(ts) if ts.is_empty() => every(),
        Some(ts) => ts
            .iter()
            .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
            .collect(),
    };
    let topics = names
        .iter()
        .map(|name| {
            match lab.topic(name).map(|t| t.partitions.len()).or_else(|e| {
                if name == CONSUMER_OFFSETS_TOPIC {
                    Ok(1)
                } else {
                    Err(e)
                }
            }) {
                Ok(partitions) => MetadataResponseTopic::default()
                    .with_name(Some(TopicName(str_bytes(name))))
                    .with_error_code(NONE)
                    .with_is_internal(name == CONSUMER_OFFSETS_TOPIC)
                    .with_partitions(
                        (0..partitions as i32)
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
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};
    use offsetlab_wire::kafka_protocol::messages::metadata_request::MetadataRequestTopic;

    fn asking(topics: &[&str]) -> MetadataRequest {
        MetadataRequest::default().with_topics(Some(
            topics
                .iter()
                .map(|t| MetadataRequestTopic::default().with_name(Some(TopicName(name(t)))))
                .collect(),
        ))
    }

    #[test]
    fn one_broker_leads_every_partition_and_names_are_judged() {
        let mut b = broker();
        b.config.auto_create_topics = false;
        let r = handle(&b, &asking(&["orders", "later", "bad name"]), 9);
        assert_eq!(r.brokers.len(), 1);
        assert_eq!(
            (r.brokers[0].host.as_str(), r.brokers[0].port),
            ("127.0.0.1", 9092)
        );
        let codes: Vec<i16> = r.topics.iter().map(|t| t.error_code).collect();
        assert_eq!(
            codes,
            vec![NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION]
        );
        assert_eq!(r.topics[0].partitions[0].leader_id, BrokerId(NODE));
    }

    #[test]
    fn a_request_that_allows_it_creates_the_topic() {
        let b = broker();
        let r = handle(&b, &asking(&["fresh"]).with_allow_auto_topic_creation(true), 9);
        assert_eq!(r.topics[0].error_code, NONE);
        let r = handle(&b, &asking(&["other"]).with_allow_auto_topic_creation(false), 9);
        assert_eq!(
            r.topics[0].error_code, UNKNOWN_TOPIC_OR_PARTITION,
            "v4+: the client decides"
        );
    }
}

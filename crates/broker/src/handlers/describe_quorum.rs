//! DescribeQuorum (`kafka-metadata-quorum.sh describe`): the lab keeps its metadata in its own
//! history, not a KRaft log, and is the one voter of its "quorum": node 0 leads, at epoch 1,
//! its metadata log as long as the lab's history (its high watermark and the voter's log end
//! offset), caught up now. No observers.

use crate::broker::{Broker, NODE};
use crate::str_bytes;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::describe_quorum_response::{
    Listener, Node, PartitionData, ReplicaState, TopicData,
};
use offsetlab_wire::kafka_protocol::messages::{BrokerId, DescribeQuorumRequest, DescribeQuorumResponse};

/// The metadata topic every DescribeQuorum names.
const METADATA_TOPIC: &str = "__cluster_metadata";

pub(crate) fn handle(broker: &Broker, r: &DescribeQuorumRequest, version: i16) -> DescribeQuorumResponse {
    let (length, now) = {
        let s = broker.lab.lock();
        (s.history_len() as i64, s.lab().now())
    };
    let topics = r
        .topics
        .iter()
        .map(|t| {
            let ours = t.topic_name.0.as_str() == METADATA_TOPIC;
            TopicData::default()
                .with_topic_name(t.topic_name.clone())
                .with_partitions(
                    t.partitions
                        .iter()
                        .map(|p| {
                            if !ours || p.partition_index != 0 {
                                return PartitionData::default()
                                    .with_partition_index(p.partition_index)
                                    .with_error_code(UNKNOWN_TOPIC_OR_PARTITION)
                                    .with_leader_id(BrokerId(-1))
                                    .with_leader_epoch(-1)
                                    .with_high_watermark(-1);
                            }
                            let voter = ReplicaState::default()
                                .with_replica_id(BrokerId(NODE))
                                .with_log_end_offset(length)
                                .with_last_fetch_timestamp(now)
                                .with_last_caught_up_timestamp(now);
                            PartitionData::default()
                                .with_partition_index(0)
                                .with_error_code(NONE)
                                .with_leader_id(BrokerId(NODE))
                                .with_leader_epoch(1)
                                .with_high_watermark(length)
                                .with_current_voters(vec![voter])
                                .with_observers(Vec::new())
                        })
                        .collect(),
                )
        })
        .collect();
    let response = DescribeQuorumResponse::default()
        .with_error_code(NONE)
        .with_topics(topics);
    // From v2 the voters' endpoints (KIP-853).
    if version >= 2 {
        response.with_nodes(vec![Node::default().with_node_id(BrokerId(NODE)).with_listeners(
            vec![Listener::default()
                .with_name(str_bytes("PLAINTEXT"))
                .with_host(str_bytes(&broker.advertised.ip().to_string()))
                .with_port(broker.advertised.port())],
        )])
    } else {
        response
    }
}

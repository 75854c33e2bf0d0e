//! AlterPartitionReassignments (`kafka-reassign-partitions.sh --execute`): one broker, so a
//! partition's replicas can only be node 0 — a reassignment there has nothing to move and
//! completes at once; any other broker is one the cluster does not have
//! (INVALID_REPLICA_ASSIGNMENT); cancelling finds nothing in progress
//! (NO_REASSIGNMENT_IN_PROGRESS).

use crate::broker::{Broker, NODE};
use crate::str_bytes;
use offsetlab_engine::record::TopicPartition;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use offsetlab_wire::kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse,
};

pub(crate) fn handle(
    broker: &Broker,
    r: &AlterPartitionReassignmentsRequest,
) -> AlterPartitionReassignmentsResponse {
    let s = broker.lab.lock();
    let responses = r
        .topics
        .iter()
        .map(|t| {
            ReassignableTopicResponse::default()
                .with_name(t.name.clone())
                .with_partitions(
                    t.partitions
                        .iter()
                        .map(|p| {
                            let known = s
                                .lab()
                                .partition_log(&TopicPartition::new(t.name.0.to_string(), p.partition_index))
                                .is_ok();
                            let (code, message) = match &p.replicas {
                                _ if !known => (UNKNOWN_TOPIC_OR_PARTITION, None),
                                None => (NO_REASSIGNMENT_IN_PROGRESS, None),
                                Some(replicas)
                                    if replicas.iter().all(|b| b.0 == NODE) && !replicas.is_empty() =>
                                {
                                    (NONE, None)
                                }
                                Some(_) => (
                                    INVALID_REPLICA_ASSIGNMENT,
                                    Some(str_bytes(
                                        "the lab is one broker, node 0: no other can hold a replica",
                                    )),
                                ),
                            };
                            ReassignablePartitionResponse::default()
                                .with_partition_index(p.partition_index)
                                .with_error_code(code)
                                .with_error_message(message)
                        })
                        .collect(),
                )
        })
        .collect();
    AlterPartitionReassignmentsResponse::default().with_responses(responses)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};
    use offsetlab_wire::kafka_protocol::messages::alter_partition_reassignments_request::{
        ReassignablePartition, ReassignableTopic,
    };
    use offsetlab_wire::kafka_protocol::messages::{BrokerId, TopicName};

    #[test]
    fn only_node_0_holds_replicas_and_nothing_is_in_progress() {
        let b = broker();
        let codes: Vec<i16> = handle(
            &b,
            &AlterPartitionReassignmentsRequest::default().with_topics(vec![ReassignableTopic::default()
                .with_name(TopicName(name("orders")))
                .with_partitions(vec![
                    ReassignablePartition::default().with_replicas(Some(vec![BrokerId(NODE)])),
                    ReassignablePartition::default().with_replicas(Some(vec![BrokerId(4)])),
                    ReassignablePartition::default().with_replicas(None),
                    ReassignablePartition::default()
                        .with_partition_index(3)
                        .with_replicas(None),
                ])]),
        )
        .responses[0]
            .partitions
            .iter()
            .map(|p| p.error_code)
            .collect();
        assert_eq!(
            codes,
            [
                NONE,
                INVALID_REPLICA_ASSIGNMENT,
                NO_REASSIGNMENT_IN_PROGRESS,
                UNKNOWN_TOPIC_OR_PARTITION
            ]
        );
    }
}

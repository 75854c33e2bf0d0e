//! ElectLeaders (`kafka-leader-election.sh`): every partition has one replica, on this broker,
//! already its leader. A named partition is ELECTION_NOT_NEEDED (or UNKNOWN_TOPIC_OR_PARTITION);
//! asked for all partitions, Kafka lists only those it elected for — none.

use crate::broker::Broker;
use crate::str_bytes;
use offsetlab_engine::record::TopicPartition;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::elect_leaders_response::{
    PartitionResult, ReplicaElectionResult,
};
use offsetlab_wire::kafka_protocol::messages::{ElectLeadersRequest, ElectLeadersResponse};

pub(crate) fn handle(broker: &Broker, r: &ElectLeadersRequest) -> ElectLeadersResponse {
    let s = broker.lab.lock();
    let results = r
        .topic_partitions
        .iter()
        .flatten()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|&p| {
                    let exists = s
                        .lab()
                        .partition_log(&TopicPartition::new(t.topic.0.to_string(), p))
                        .is_ok();
                    let (code, message) = if exists {
                        (
                            ELECTION_NOT_NEEDED,
                            "Leader election not needed for topic partition",
                        )
                    } else {
                        (
                            UNKNOWN_TOPIC_OR_PARTITION,
                            "This server does not host this topic-partition",
                        )
                    };
                    PartitionResult::default()
                        .with_partition_id(p)
                        .with_error_code(code)
                        .with_error_message(Some(str_bytes(message)))
                })
                .collect();
            ReplicaElectionResult::default()
                .with_topic(t.topic.clone())
                .with_partition_result(partitions)
        })
        .collect();
    ElectLeadersResponse::default().with_replica_election_results(results)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};
    use offsetlab_wire::kafka_protocol::messages::elect_leaders_request::TopicPartitions;
    use offsetlab_wire::kafka_protocol::messages::TopicName;

    #[test]
    fn every_leader_is_already_the_preferred_one() {
        let b = broker();
        let all = handle(&b, &ElectLeadersRequest::default().with_topic_partitions(None));
        assert!(all.replica_election_results.is_empty(), "nothing was elected");
        let named = handle(
            &b,
            &ElectLeadersRequest::default().with_topic_partitions(Some(vec![TopicPartitions::default()
                .with_topic(TopicName(name("orders")))
                .with_partitions(vec![0, 5])])),
        );
        let codes: Vec<i16> = named.replica_election_results[0]
            .partition_result
            .iter()
            .map(|p| p.error_code)
            .collect();
        assert_eq!(codes, [ELECTION_NOT_NEEDED, UNKNOWN_TOPIC_OR_PARTITION]);
    }
}

//! DescribeProducers (`kafka-transactions.sh describe-producers`, KIP-664): the producers that
//! wrote to a partition — each idempotent or transactional producer's id, epoch, last sequence
//! and last batch's largest timestamp, as the listener keeps them (in memory: a restart forgets
//! them, where Kafka rebuilds them from its log), and for a transactional one whose transaction
//! is open on the partition, the offset it started at.

use crate::broker::Broker;
use offsetlab_engine::record::TopicPartition;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use offsetlab_wire::kafka_protocol::messages::{
    DescribeProducersRequest, DescribeProducersResponse, ProducerId,
};

pub(crate) fn handle(broker: &Broker, r: &DescribeProducersRequest) -> DescribeProducersResponse {
    let s = broker.lab.lock();
    let lab = s.lab();
    DescribeProducersResponse::default().with_topics(
        r.topics
            .iter()
            .map(|t| {
                let topic = t.name.0.to_string();
                TopicResponse::default()
                    .with_name(t.name.clone())
                    .with_partitions(
                        t.partition_indexes
                            .iter()
                            .map(|&p| {
                                let tp = TopicPartition::new(topic.clone(), p);
                                if lab.partition_log(&tp).is_err() {
                                    return PartitionResponse::default()
                                        .with_partition_index(p)
                                        .with_error_code(UNKNOWN_TOPIC_OR_PARTITION);
                                }
                                let producers = broker
                                    .producers
                                    .of_partition(&topic, p)
                                    .into_iter()
                                    .map(|(id, epoch, last_sequence, last_timestamp)| {
                                        let txn = lab
                                            .producers()
                                            .values()
                                            .find(|x| x.external && x.producer_id == id);
                                        // The offset the open transaction started at here.
                                        let start = txn
                                            .and_then(|x| x.ongoing.as_ref())
                                            .and_then(|o| {
                                                o.writes
                                                    .iter()
                                                    .filter(|w| w.output == tp)
                                                    .map(|w| w.output_offset)
                                                    .min()
                                            })
                                            .unwrap_or(-1);
                                        // A transaction marker written here carries the coordinator's epoch (0).
                                        let coordinator_epoch =
                                            if txn.is_some_and(|x| x.committed + x.aborted > 0) {
                                                0
                                            } else {
                                                -1
                                            };
                                        ProducerState::default()
                                            .with_producer_id(ProducerId(id))
                                            .with_producer_epoch(i32::from(epoch))
                                            .with_last_sequence(last_sequence)
                                            .with_last_timestamp(last_timestamp)
                                            .with_coordinator_epoch(coordinator_epoch)
                                            .with_current_txn_start_offset(start)
                                    })
                                    .collect();
                                PartitionResponse::default()
                                    .with_partition_index(p)
                                    .with_error_code(NONE)
                                    .with_active_producers(producers)
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}

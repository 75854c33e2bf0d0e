//! AddPartitionsToTxn: the partitions a transaction will write, checked against its producer.

use crate::broker::Broker;
use crate::transaction_state::current;
use offsetlab_engine::record::TopicPartition;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use offsetlab_wire::kafka_protocol::messages::{AddPartitionsToTxnRequest, AddPartitionsToTxnResponse};

/// AddPartitionsToTxn (v0–3): the partitions must exist and the producer be current; the lab
/// learns a transaction's partitions from the records written to them.
pub(crate) fn handle(broker: &Broker, r: &AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse {
    let s = broker.lab.lock();
    let txn_id = String::from(r.v3_and_below_transactional_id.as_str());
    let producer = current(
        &s,
        &txn_id,
        r.v3_and_below_producer_id.0,
        r.v3_and_below_producer_epoch,
    );
    AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(
        r.v3_and_below_topics
            .iter()
            .map(|t| {
                AddPartitionsToTxnTopicResult::default()
                    .with_name(t.name.clone())
                    .with_results_by_partition(
                        t.partitions
                            .iter()
                            .map(|&p| {
                                let tp = TopicPartition::new(t.name.0.to_string(), p);
                                let code = match producer {
                                    Err(code) => code,
                                    Ok(()) if s.lab().partition_log(&tp).is_err() => {
                                        UNKNOWN_TOPIC_OR_PARTITION
                                    }
                                    Ok(()) => NONE,
                                };
                                AddPartitionsToTxnPartitionResult::default()
                                    .with_partition_index(p)
                                    .with_partition_error_code(code)
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}

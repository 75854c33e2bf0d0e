//! AddPartitionsToTxn: the partitions a transaction will write, checked against its producer.

use crate::broker::Broker;
use crate::transaction_state::{current, fenced_code};
use offsetlab_engine::record::TopicPartition;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use offsetlab_wire::kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use offsetlab_wire::kafka_protocol::messages::{AddPartitionsToTxnRequest, AddPartitionsToTxnResponse};

/// AddPartitionsToTxn: the partitions must exist and the producer be current; the lab learns a
/// transaction's partitions from the records written to them. Up to v3 a request is one
/// transaction; from v4 (KIP-890) a list of them, answered transaction by transaction.
pub(crate) fn handle(
    broker: &Broker,
    r: &AddPartitionsToTxnRequest,
    version: i16,
) -> AddPartitionsToTxnResponse {
    let s = broker.lab.lock();
    if version >= 4 {
        return AddPartitionsToTxnResponse::default().with_results_by_transaction(
            r.transactions
                .iter()
                .map(|t| {
                    AddPartitionsToTxnResult::default()
                        .with_transactional_id(t.transactional_id.clone())
                        .with_topic_results(results(
                            broker,
                            &s,
                            (t.transactional_id.as_str(), t.producer_id.0, t.producer_epoch),
                            &t.topics,
                            version,
                        ))
                })
                .collect(),
        );
    }
    AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(results(
        broker,
        &s,
        (
            r.v3_and_below_transactional_id.as_str(),
            r.v3_and_below_producer_id.0,
            r.v3_and_below_producer_epoch,
        ),
        &r.v3_and_below_topics,
        version,
    ))
}

/// One transaction's partitions (transactional id, producer id, epoch), each with its code;
/// the ones added are noted for EndTxn and DescribeTransactions.
fn results(
    broker: &Broker,
    s: &offsetlab_lab::Session,
    (txn_id, producer_id, epoch): (&str, i64, i16),
    topics: &[AddPartitionsToTxnTopic],
    version: i16,
) -> Vec<AddPartitionsToTxnTopicResult> {
    let producer = current(s, txn_id, producer_id, epoch).map_err(|code| fenced_code(code, version));
    let mut added = offsetlab_lab::lock(&broker.txn_added);
    topics
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
                                Ok(()) if s.lab().partition_log(&tp).is_err() => UNKNOWN_TOPIC_OR_PARTITION,
                                Ok(()) => {
                                    added
                                        .entry(txn_id.to_string())
                                        .or_default()
                                        .insert((tp.topic, tp.partition));
                                    NONE
                                }
                            };
                            AddPartitionsToTxnPartitionResult::default()
                                .with_partition_index(p)
                                .with_partition_error_code(code)
                        })
                        .collect(),
                )
        })
        .collect()
}

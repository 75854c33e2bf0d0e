//! DescribeTransactions (`kafka-transactions.sh describe`, KIP-664): a real client's
//! transactional id as its coordinator knows it — producer id and epoch, timeout, and while a
//! transaction is open, when it started and the partitions it wrote; otherwise how the last one
//! ended (CompleteCommit, CompleteAbort) or Empty. An id no client initialised is
//! TRANSACTIONAL_ID_NOT_FOUND.

use crate::broker::{Broker, TxnOutcome};
use crate::str_bytes;
use offsetlab_engine::txn::TransactionalProducer;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use offsetlab_wire::kafka_protocol::messages::{
    DescribeTransactionsRequest, DescribeTransactionsResponse, ProducerId, TopicName,
};
use std::collections::BTreeMap;

/// The state Kafka's transaction coordinator would name for `p`, given how its last
/// transaction ended and whether its open one added partitions.
pub(crate) fn state_name(p: &TransactionalProducer, last: Option<TxnOutcome>, added: bool) -> &'static str {
    match (&p.ongoing, last.map(|o| o.committed)) {
        (Some(_), _) => "Ongoing",
        _ if added => "Ongoing",
        (None, Some(true)) => "CompleteCommit",
        (None, Some(false)) => "CompleteAbort",
        (None, None) => "Empty",
    }
}

/// When `p`'s current or last transaction started (−1 for none).
pub(crate) fn started_at(p: &TransactionalProducer, last: Option<TxnOutcome>) -> i64 {
    p.ongoing
        .as_ref()
        .map_or_else(|| last.map_or(-1, |o| o.started_at), |o| o.started_at)
}

pub(crate) fn handle(broker: &Broker, r: &DescribeTransactionsRequest) -> DescribeTransactionsResponse {
    let s = broker.lab.lock();
    let outcomes = offsetlab_lab::lock(&broker.txn_outcomes).clone();
    let added = offsetlab_lab::lock(&broker.txn_added).clone();
    DescribeTransactionsResponse::default().with_transaction_states(
        r.transactional_ids
            .iter()
            .map(|id| {
                let base = TransactionState::default().with_transactional_id(id.clone());
                let Some(p) = s.lab().producers().get(id.0.as_str()).filter(|p| p.external) else {
                    return base
                        .with_error_code(TRANSACTIONAL_ID_NOT_FOUND)
                        .with_transaction_state(str_bytes(""));
                };
                // The partitions added or written, and while offsets ride along,
                // `__consumer_offsets`' (the lab's has one partition).
                let mut parts: std::collections::BTreeSet<(String, i32)> =
                    added.get(id.0.as_str()).cloned().unwrap_or_default();
                for tp in p.ongoing.iter().flat_map(|o| o.partitions()) {
                    parts.insert((tp.topic, tp.partition));
                }
                if p.ongoing.as_ref().is_some_and(|o| !o.offsets.is_empty()) {
                    parts.insert((offsetlab_engine::offsets::CONSUMER_OFFSETS_TOPIC.to_string(), 0));
                }
                let mut topics: BTreeMap<String, Vec<i32>> = BTreeMap::new();
                for (t, p) in parts {
                    topics.entry(t).or_default().push(p);
                }
                let last = outcomes.get(id.0.as_str()).copied();
                base.with_error_code(NONE)
                    .with_transaction_state(str_bytes(state_name(p, last, !topics.is_empty())))
                    .with_transaction_timeout_ms(i32::try_from(p.timeout_ms).unwrap_or(i32::MAX))
                    .with_transaction_start_time_ms(started_at(p, last))
                    .with_producer_id(ProducerId(p.producer_id))
                    .with_producer_epoch(p.epoch)
                    .with_topics(
                        topics
                            .into_iter()
                            .map(|(t, parts)| {
                                TopicData::default()
                                    .with_topic(TopicName(str_bytes(&t)))
                                    .with_partitions(parts)
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}

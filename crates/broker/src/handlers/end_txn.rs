//! EndTxn: commit or abort — markers on every partition the transaction wrote.

use crate::broker::Broker;
use crate::change;
use crate::transaction_state::{current, fenced_code};
use offsetlab_scenario::command::{Command, EndTxn, InitTxn};
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::{EndTxnRequest, EndTxnResponse, ProducerId};

/// EndTxn: COMMIT or ABORT markers (and on commit, the offsets), as an `end-txn` line. From v5
/// (KIP-890's transactions v2) the coordinator also bumps the producer's epoch at each end and
/// answers with it — an `init-txn` line after the `end-txn`, which fences whatever still holds
/// the old epoch — and a retry with the epoch just ended is answered as the end was.
pub(crate) fn handle(broker: &Broker, r: &EndTxnRequest, version: i16) -> EndTxnResponse {
    let lab = &broker.lab;
    let txn_id = String::from(r.transactional_id.as_str());
    let s = lab.lock_for_change();
    let producer = s.lab().producers().get(&txn_id).filter(|p| p.external).cloned();
    let ongoing = producer.as_ref().is_some_and(|p| p.ongoing.is_some());
    let added = offsetlab_lab::lock(&broker.txn_added)
        .get(&txn_id)
        .is_some_and(|a| !a.is_empty());
    let last = offsetlab_lab::lock(&broker.txn_outcomes).get(&txn_id).copied();
    let same_end = last.is_some_and(|o| o.committed == r.committed);
    let answer = |code: i16, p: Option<(i64, i16)>| {
        let (pid, epoch) = match (version >= 5, code, p) {
            (true, NONE, Some(p)) => p,
            // From v5 a refusal names no producer.
            (true, _, _) => (-1, -1),
            (false, _, _) => (r.producer_id.0, r.producer_epoch),
        };
        EndTxnResponse::default()
            .with_error_code(code)
            .with_producer_id(ProducerId(pid))
            .with_producer_epoch(epoch)
    };
    let current_producer = producer.as_ref().map(|p| (p.producer_id, p.epoch));
    match current(&s, &txn_id, r.producer_id.0, r.producer_epoch) {
        // Transactions v2: the epoch this very end bumped from, asking again for the same end.
        Err(_)
            if version >= 5
                && !ongoing
                && same_end
                && current_producer
                    .is_some_and(|(pid, epoch)| pid == r.producer_id.0 && epoch == r.producer_epoch + 1) =>
        {
            answer(NONE, current_producer)
        }
        Err(code) => answer(fenced_code(code, version), None),
        // Before v5 (transactions v1) nothing to end: a retry of the end that completed it is
        // answered again; anything else is INVALID_TXN_STATE, as Kafka's coordinator answers.
        Ok(()) if version < 5 && !ongoing && !added => {
            answer(if same_end { NONE } else { INVALID_TXN_STATE }, None)
        }
        Ok(()) => {
            let now = s.lab().now();
            let written: Vec<(String, i32)> = producer
                .iter()
                .flat_map(|p| p.ongoing.iter().flat_map(|o| o.partitions()))
                .map(|tp| (tp.topic, tp.partition))
                .collect();
            let started_at = producer
                .as_ref()
                .and_then(|p| p.ongoing.as_ref())
                .map_or(now, |o| o.started_at);
            let mut commands = vec![Command::EndTxn(EndTxn {
                txn_id: txn_id.clone(),
                producer_id: r.producer_id.0,
                epoch: r.producer_epoch,
                commit: r.committed,
            })];
            if let (true, Some(p)) = (version >= 5, &producer) {
                commands.push(Command::InitTxn(InitTxn {
                    txn_id: txn_id.clone(),
                    timeout_ms: p.timeout_ms,
                }));
            }
            if let Err(failure) = change::apply_commands(lab, s, commands) {
                return answer(failure.code(), None);
            }
            let outcome = crate::broker::TxnOutcome {
                committed: r.committed,
                started_at,
            };
            offsetlab_lab::lock(&broker.txn_outcomes).insert(txn_id.clone(), outcome);
            offsetlab_lab::lock(&broker.txn_added).remove(&txn_id);
            let s = lab.lock();
            let bumped = s.lab().producers().get(&txn_id).map(|p| (p.producer_id, p.epoch));
            // The markers are the producer's last batches where it wrote (from v5, under the
            // epoch the end bumped to).
            broker.producers.marked(
                r.producer_id.0,
                &written,
                s.lab().now(),
                (version >= 5).then(|| bumped.map(|b| b.1)).flatten(),
            );
            answer(NONE, bumped)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};
    use offsetlab_wire::kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
    use offsetlab_wire::kafka_protocol::messages::{
        AddPartitionsToTxnRequest, InitProducerIdRequest, ProducerId, TopicName, TransactionalId,
    };

    /// initTransactions, then a transaction on `orders-0` ended with `commit`: each step's code.
    fn run(b: &Broker, commit: bool, epoch_offset: i16) -> (i16, i16) {
        let init = crate::handlers::init_producer_id::handle(
            b,
            &InitProducerIdRequest::default()
                .with_transactional_id(Some(TransactionalId(name("tx"))))
                .with_transaction_timeout_ms(60_000),
        );
        let (pid, epoch) = (init.producer_id, init.producer_epoch + epoch_offset);
        let added = crate::handlers::add_partitions_to_txn::handle(
            b,
            &AddPartitionsToTxnRequest::default()
                .with_v3_and_below_transactional_id(TransactionalId(name("tx")))
                .with_v3_and_below_producer_id(pid)
                .with_v3_and_below_producer_epoch(epoch)
                .with_v3_and_below_topics(vec![AddPartitionsToTxnTopic::default()
                    .with_name(TopicName(name("orders")))
                    .with_partitions(vec![0])]),
            3,
        );
        let added = added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code;
        let ended = handle(
            b,
            &EndTxnRequest::default()
                .with_transactional_id(TransactionalId(name("tx")))
                .with_producer_id(ProducerId(pid.0))
                .with_producer_epoch(epoch)
                .with_committed(commit),
            4,
        );
        (added, ended.error_code)
    }

    /// EndTxn v5 (transactions v2): each end bumps the epoch, and the answer carries it.
    #[test]
    fn v5_answers_with_the_next_epoch() {
        let b = broker();
        let init = crate::handlers::init_producer_id::handle(
            &b,
            &InitProducerIdRequest::default()
                .with_transactional_id(Some(TransactionalId(name("tx2"))))
                .with_transaction_timeout_ms(60_000),
        );
        let end = |epoch: i16, commit: bool| {
            handle(
                &b,
                &EndTxnRequest::default()
                    .with_transactional_id(TransactionalId(name("tx2")))
                    .with_producer_id(init.producer_id)
                    .with_producer_epoch(epoch)
                    .with_committed(commit),
                5,
            )
        };
        let first = end(init.producer_epoch, true);
        assert_eq!(
            (first.error_code, first.producer_epoch),
            (NONE, init.producer_epoch + 1)
        );
        let retry = end(init.producer_epoch, true);
        assert_eq!(
            (retry.error_code, retry.producer_epoch),
            (NONE, first.producer_epoch),
            "a retry of the same end is answered as it was"
        );
        let fenced = end(init.producer_epoch, false);
        assert_eq!(
            (fenced.error_code, fenced.producer_id.0),
            (PRODUCER_FENCED, -1),
            "the old epoch is fenced"
        );
        assert_eq!(end(first.producer_epoch, true).error_code, NONE);
    }

    #[test]
    fn the_current_epoch_ends_its_transaction_and_an_old_one_is_fenced() {
        let b = broker();
        assert_eq!(run(&b, true, 0), (NONE, NONE));
        assert_eq!(
            run(&b, false, -1),
            (PRODUCER_FENCED, PRODUCER_FENCED),
            "KIP-588: a fenced producer is told so from v2"
        );
    }
}

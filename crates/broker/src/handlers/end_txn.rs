//! EndTxn: commit or abort — markers on every partition the transaction wrote.

use crate::broker::Broker;
use crate::change;
use crate::transaction_state::current;
use offsetlab_scenario::command::{Command, EndTxn};
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::{EndTxnRequest, EndTxnResponse};

/// EndTxn: COMMIT or ABORT markers (and on commit, the offsets), as an `end-txn` line.
pub(crate) fn handle(broker: &Broker, r: &EndTxnRequest) -> EndTxnResponse {
    let lab = &broker.lab;
    let txn_id = String::from(r.transactional_id.as_str());
    let s = lab.lock_for_change();
    let code = match current(&s, &txn_id, r.producer_id.0, r.producer_epoch) {
        Err(code) => code,
        Ok(()) => {
            let end = Command::EndTxn(EndTxn {
                txn_id,
                producer_id: r.producer_id.0,
                epoch: r.producer_epoch,
                commit: r.committed,
            });
            match change::apply_commands(lab, s, vec![end]) {
                Ok(()) => NONE,
                Err(failure) => failure.code(),
            }
        }
    };
    EndTxnResponse::default()
        .with_error_code(code)
        .with_producer_id(r.producer_id)
        .with_producer_epoch(r.producer_epoch)
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
        );
        let added = added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code;
        let ended = handle(
            b,
            &EndTxnRequest::default()
                .with_transactional_id(TransactionalId(name("tx")))
                .with_producer_id(ProducerId(pid.0))
                .with_producer_epoch(epoch)
                .with_committed(commit),
        );
        (added, ended.error_code)
    }

    #[test]
    fn the_current_epoch_ends_its_transaction_and_an_old_one_is_fenced() {
        let b = broker();
        assert_eq!(run(&b, true, 0), (NONE, NONE));
        assert_eq!(
            run(&b, false, -1),
            (INVALID_PRODUCER_EPOCH, INVALID_PRODUCER_EPOCH)
        );
    }
}

//! The transaction coordinator's APIs for real transactional producers: InitProducerId with a
//! `transactional.id`, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn.
//!
//! The lab's one transaction coordinator (in the engine) keeps the producer ids, epochs, open
//! transactions, markers and last stable offsets; these handlers check a request's producer id
//! and epoch against it (an older epoch is a fenced instance: INVALID_PRODUCER_EPOCH, or
//! PRODUCER_FENCED where the version knows it; an unknown id INVALID_PRODUCER_ID_MAPPING) and write
//! what changes as commands — `init-txn`, `txn-offsets`, `end-txn` (the records themselves come
//! as `txn-send` commands from Produce). TxnOffsetCommit also passes the group coordinator's check of
//! member and generation (KIP-447), so a zombie consumer cannot commit a transaction's offsets.
//!
//! KIP-890's transactions v2 in part: EndTxn v5 bumps the epoch at each end, AddPartitionsToTxn
//! v4+ takes several transactions; the lab finalizes no `transaction.version`, so clients use
//! v1 (docs/CONFORMANCE.md).

use crate::broker::Broker;
use crate::change;
use offsetlab_lab::session::Change;
use offsetlab_scenario::command::{Command, InitTxn};
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};

/// InitProducerId with a `transactional.id`: the lab's coordinator gives a producer id (or the
/// next epoch, fencing the previous instance and aborting what it left open).
pub(crate) fn handle(broker: &Broker, r: &InitProducerIdRequest) -> InitProducerIdResponse {
    // An idempotent producer gets an id from the broker; a transactional one from the lab's
    // transaction coordinator.
    let Some(txn_id) = r.transactional_id.as_ref().map(|t| t.to_string()) else {
        let (id, epoch) = broker.producers.init();
        return InitProducerIdResponse::default()
            .with_producer_id(ProducerId(id))
            .with_producer_epoch(epoch);
    };
    let (lab, txn_id) = (&broker.lab, txn_id.as_str());
    let refuse = |code: i16| {
        InitProducerIdResponse::default()
            .with_error_code(code)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1)
    };
    // Kafka's transaction coordinator: an empty id is no transactional.id.
    if txn_id.is_empty() {
        return refuse(INVALID_REQUEST);
    }
    if r.transaction_timeout_ms <= 0 {
        return refuse(INVALID_TRANSACTION_TIMEOUT);
    }
    let init = Command::InitTxn(InitTxn {
        txn_id: txn_id.to_string(),
        timeout_ms: i64::from(r.transaction_timeout_ms),
    });
    let mut s = lab.lock_for_change();
    if let Err(e) = s.apply_changes(vec![Change::Command(init)]) {
        return refuse(match change::Failure::from(e) {
            change::Failure::Refused(_) => INVALID_TXN_STATE,
            storage => storage.code(),
        });
    }
    // Read in the same locked step that gave the epoch: a second InitProducerId for this id
    // cannot slip in between and be answered with the same one.
    let Some((producer_id, epoch)) = s.lab().producers().get(txn_id).map(|p| (p.producer_id, p.epoch)) else {
        return refuse(UNKNOWN_SERVER_ERROR);
    };
    match change::save(lab, s) {
        Ok(()) => {
            // A new epoch starts with nothing in its transaction (Kafka's state: Empty).
            offsetlab_lab::lock(&broker.txn_outcomes).remove(txn_id);
            offsetlab_lab::lock(&broker.txn_added).remove(txn_id);
            InitProducerIdResponse::default()
                .with_producer_id(ProducerId(producer_id))
                .with_producer_epoch(epoch)
        }
        Err(failure) => refuse(failure.code()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};
    use offsetlab_wire::kafka_protocol::messages::TransactionalId;

    #[test]
    fn idempotent_producers_get_ids_and_transactional_ones_the_next_epoch() {
        let b = broker();
        let idempotent = InitProducerIdRequest::default().with_transactional_id(None);
        let first = handle(&b, &idempotent);
        let second = handle(&b, &idempotent);
        assert_eq!(first.error_code, NONE);
        assert_ne!(first.producer_id, second.producer_id);
        let txn = InitProducerIdRequest::default()
            .with_transactional_id(Some(TransactionalId(name("tx a"))))
            .with_transaction_timeout_ms(60_000);
        let one = handle(&b, &txn);
        let two = handle(&b, &txn);
        assert_eq!((one.error_code, two.error_code), (NONE, NONE));
        assert_eq!(one.producer_id, two.producer_id, "one id per transactional.id");
        assert_eq!(
            two.producer_epoch,
            one.producer_epoch + 1,
            "the next epoch fences the first"
        );
        let other = handle(
            &b,
            &InitProducerIdRequest::default()
                .with_transactional_id(Some(TransactionalId(name("tx_a"))))
                .with_transaction_timeout_ms(60_000),
        );
        assert_ne!(other.producer_id, one.producer_id, "tx a and tx_a are two ids");
        let empty = InitProducerIdRequest::default()
            .with_transactional_id(Some(TransactionalId(name(""))))
            .with_transaction_timeout_ms(60_000);
        assert_eq!(handle(&b, &empty).error_code, INVALID_REQUEST);
    }
}

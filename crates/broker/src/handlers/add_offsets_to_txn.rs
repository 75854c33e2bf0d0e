//! AddOffsetsToTxn: a transaction will carry a group's offsets.

use crate::broker::Broker;
use crate::transaction_state::current;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse};

/// AddOffsetsToTxn: the group's offsets will travel with the transaction.
pub(crate) fn handle(broker: &Broker, r: &AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse {
    let s = broker.lab.lock();
    let code = current(
        &s,
        &String::from(r.transactional_id.as_str()),
        r.producer_id.0,
        r.producer_epoch,
    )
    .err()
    .unwrap_or(NONE);
    if code == NONE {
        // The group's offsets ride in the transaction: `__consumer_offsets` is one of its
        // partitions (the lab's has one).
        offsetlab_lab::lock(&broker.txn_added)
            .entry(r.transactional_id.0.to_string())
            .or_default()
            .insert((offsetlab_engine::offsets::CONSUMER_OFFSETS_TOPIC.to_string(), 0));
    }
    AddOffsetsToTxnResponse::default().with_error_code(code)
}

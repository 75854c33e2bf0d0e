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
    let s = lab.lock();
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

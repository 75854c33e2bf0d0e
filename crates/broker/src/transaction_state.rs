//! The check every transactional request starts with: is this producer id and epoch the
//! `transactional.id`'s current one in the lab's transaction coordinator?

use offsetlab_lab::session::Session;
use offsetlab_wire::error::*;

/// `Ok(())` when `txn_id` is a real client's transactional producer at (`pid`, `epoch`); an
/// older epoch is fenced (INVALID_PRODUCER_EPOCH), an id no client initialised — or another
/// producer id — INVALID_PRODUCER_ID_MAPPING, as Kafka's coordinator answers.
pub(crate) fn current(s: &Session, txn_id: &str, pid: i64, epoch: i16) -> Result<(), i16> {
    match s.lab().producers().get(txn_id) {
        Some(p) if p.external && p.producer_id == pid && p.epoch == epoch => Ok(()),
        Some(p) if p.external && p.producer_id == pid => Err(INVALID_PRODUCER_EPOCH),
        Some(p) if p.external => Err(INVALID_PRODUCER_ID_MAPPING),
        _ => Err(INVALID_PRODUCER_ID_MAPPING),
    }
}

/// The code a fenced producer gets: PRODUCER_FENCED where the API's version knows it (KIP-588:
/// AddPartitionsToTxn and EndTxn from v2), INVALID_PRODUCER_EPOCH before.
pub(crate) fn fenced_code(code: i16, version: i16) -> i16 {
    if code == INVALID_PRODUCER_EPOCH && version >= 2 {
        PRODUCER_FENCED
    } else {
        code
    }
}

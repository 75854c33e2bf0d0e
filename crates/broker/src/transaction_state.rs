//! The check every transactional request starts with: is this producer id and epoch the
//! `transactional.id`'s current one in the lab's transaction coordinator?

use offsetlab_lab::session::Session;
use offsetlab_wire::error::*;

/// `Ok(())` when `txn_id` is a real client's transactional producer at (`pid`, `epoch`).
pub(crate) fn current(s: &Session, txn_id: &str, pid: i64, epoch: i16) -> Result<(), i16> {
    match s.lab().producers().get(txn_id) {
        Some(p) if p.external && p.producer_id == pid && p.epoch == epoch => Ok(()),
        Some(p) if p.external => Err(INVALID_PRODUCER_EPOCH),
        _ => Err(INVALID_TXN_STATE),
    }
}

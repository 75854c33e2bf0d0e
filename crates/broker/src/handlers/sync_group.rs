//! SyncGroup: the leader hands out the assignment, the other members wait for it. The completed
//! generation reaches the lab as a `rebalance` line; if the lab does not take it, the leader is
//! answered REBALANCE_IN_PROGRESS and the group rebalances again.

use crate::broker::Broker;
use crate::change;
use crate::coordinator::Sync;
use offsetlab_wire::error::REBALANCE_IN_PROGRESS;
use offsetlab_wire::kafka_protocol::messages::{SyncGroupRequest, SyncGroupResponse};
use std::sync::Arc;

pub(crate) async fn handle(broker: &Arc<Broker>, r: SyncGroupRequest) -> Option<SyncGroupResponse> {
    let b = Arc::clone(broker);
    let decided = tokio::task::spawn_blocking(move || {
        let _settle = b.coordinator.settle_lock();
        match b.coordinator.sync(&r) {
            Sync::Now(mut settled) => {
                let commands = std::mem::take(&mut settled.commands);
                if change::settle(&b.lab, &b.coordinator, commands).is_err() {
                    settled.answer = SyncGroupResponse::default().with_error_code(REBALANCE_IN_PROGRESS);
                }
                Sync::Now(settled)
            }
            wait => wait,
        }
    })
    .await
    .ok()?;
    Some(match decided {
        Sync::Now(settled) => settled.answer,
        Sync::Wait(rx, timeout) => match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(response)) => response,
            _ => SyncGroupResponse::default().with_error_code(REBALANCE_IN_PROGRESS),
        },
    })
}

//! Heartbeat: keeps a member's session alive, and tells it when to rejoin
//! (REBALANCE_IN_PROGRESS).

use crate::broker::Broker;
use offsetlab_wire::kafka_protocol::messages::{HeartbeatRequest, HeartbeatResponse};

pub(crate) fn handle(broker: &Broker, r: &HeartbeatRequest) -> HeartbeatResponse {
    HeartbeatResponse::default().with_error_code(broker.coordinator.heartbeat(r))
}

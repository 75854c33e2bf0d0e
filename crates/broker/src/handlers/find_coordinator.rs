//! FindCoordinator: the lab is one broker, so it is every group's and every transaction's
//! coordinator.

use crate::broker::{Broker, NODE};
use crate::str_bytes;
use offsetlab_wire::kafka_protocol::messages::{BrokerId, FindCoordinatorResponse};

pub(crate) fn handle(broker: &Broker) -> FindCoordinatorResponse {
    FindCoordinatorResponse::default()
        .with_node_id(BrokerId(NODE))
        .with_host(str_bytes(&broker.advertised.ip().to_string()))
        .with_port(i32::from(broker.advertised.port()))
}

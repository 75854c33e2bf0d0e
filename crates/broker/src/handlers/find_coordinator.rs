//! FindCoordinator: the lab is one broker, so it is every group's and every transaction's
//! coordinator. From v4 (KIP-699) a request names several keys at once and the answer holds one
//! coordinator per key.

use crate::broker::{Broker, NODE};
use crate::str_bytes;
use offsetlab_wire::error::{COORDINATOR_NOT_AVAILABLE, INVALID_REQUEST};
use offsetlab_wire::kafka_protocol::messages::find_coordinator_response::Coordinator;
use offsetlab_wire::kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};

/// Key types: a group (0), a transactional id (1), a share-group partition (2, from v6).
const SHARE: i8 = 2;

fn known_key_type(key_type: i8, version: i16) -> bool {
    matches!(key_type, 0 | 1) || (key_type == SHARE && version >= 6)
}

pub(crate) fn handle(broker: &Broker, r: &FindCoordinatorRequest, version: i16) -> FindCoordinatorResponse {
    let host = str_bytes(&broker.advertised.ip().to_string());
    let port = i32::from(broker.advertised.port());
    if !known_key_type(r.key_type, version) {
        // Kafka refuses the request (INVALID_REQUEST), with no coordinator.
        let refused = FindCoordinatorResponse::default().with_error_code(INVALID_REQUEST);
        return if version >= 4 {
            refused.with_coordinators(
                r.coordinator_keys
                    .iter()
                    .map(|key| {
                        Coordinator::default()
                            .with_key(key.clone())
                            .with_node_id(BrokerId(-1))
                            .with_host(str_bytes(""))
                            .with_port(-1)
                            .with_error_code(INVALID_REQUEST)
                    })
                    .collect(),
            )
        } else {
            refused
                .with_node_id(BrokerId(-1))
                .with_host(str_bytes(""))
                .with_port(-1)
        };
    }
    if version >= 4 {
        return FindCoordinatorResponse::default().with_coordinators(
            r.coordinator_keys
                .iter()
                .map(|key| {
                    // No share groups here (KIP-932): no share coordinator either.
                    if r.key_type == SHARE {
                        return Coordinator::default()
                            .with_key(key.clone())
                            .with_node_id(BrokerId(-1))
                            .with_host(str_bytes(""))
                            .with_port(-1)
                            .with_error_code(COORDINATOR_NOT_AVAILABLE)
                            .with_error_message(Some(str_bytes("the lab has no share groups")));
                    }
                    Coordinator::default()
                        .with_key(key.clone())
                        .with_node_id(BrokerId(NODE))
                        .with_host(host.clone())
                        .with_port(port)
                })
                .collect(),
        );
    }
    FindCoordinatorResponse::default()
        .with_node_id(BrokerId(NODE))
        .with_host(host)
        .with_port(port)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};

    #[test]
    fn one_broker_coordinates_every_key_asked_for() {
        let b = broker();
        let old = handle(&b, &FindCoordinatorRequest::default().with_key(name("g")), 3);
        assert_eq!((old.node_id, old.port), (BrokerId(NODE), 9092));
        let batched = handle(
            &b,
            &FindCoordinatorRequest::default()
                .with_key_type(0)
                .with_coordinator_keys(vec![name("g1"), name("g2")]),
            4,
        );
        let keys: Vec<(&str, i32, i16)> = batched
            .coordinators
            .iter()
            .map(|c| (c.key.as_str(), c.node_id.0, c.error_code))
            .collect();
        assert_eq!(keys, [("g1", NODE, 0), ("g2", NODE, 0)]);
    }
}

//! DescribeCluster (`AdminClient.describeCluster`, KIP-700): the lab is a cluster of one broker,
//! node 0, which is also its controller. It is reached as a broker: asked for the controllers'
//! endpoints (type 2) it answers MISMATCHED_ENDPOINT_TYPE, for a type Kafka does not have
//! UNSUPPORTED_ENDPOINT_TYPE, naming its own type (1) either way, as Kafka's brokers do.

use crate::broker::{Broker, NODE};
use crate::str_bytes;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use offsetlab_wire::kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};

/// Endpoint types: brokers (1, the default), controllers (2).
const BROKERS: i8 = 1;
const CONTROLLERS: i8 = 2;

pub(crate) fn handle(broker: &Broker, r: &DescribeClusterRequest, version: i16) -> DescribeClusterResponse {
    let asked = if version >= 1 { r.endpoint_type } else { BROKERS };
    let base = DescribeClusterResponse::default().with_endpoint_type(BROKERS);
    if asked != BROKERS {
        let code = if asked == CONTROLLERS {
            MISMATCHED_ENDPOINT_TYPE
        } else {
            UNSUPPORTED_ENDPOINT_TYPE
        };
        return base
            .with_error_code(code)
            .with_error_message(Some(str_bytes(
                "The request was sent to an endpoint of type BROKER",
            )))
            .with_controller_id(BrokerId(-1));
    }
    base.with_error_code(NONE)
        .with_cluster_id(str_bytes(crate::broker::CLUSTER_ID))
        .with_controller_id(BrokerId(NODE))
        .with_brokers(vec![DescribeClusterBroker::default()
            .with_broker_id(BrokerId(NODE))
            .with_host(str_bytes(&broker.advertised.ip().to_string()))
            .with_port(i32::from(broker.advertised.port()))
            .with_rack(None)
            .with_is_fenced(false)])
        .with_cluster_authorized_operations(crate::authorized::if_asked(
            r.include_cluster_authorized_operations,
            crate::authorized::CLUSTER,
        ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::broker;

    #[test]
    fn one_broker_which_is_the_controller() {
        let b = broker();
        let r = handle(&b, &DescribeClusterRequest::default(), 2);
        assert_eq!(
            (r.error_code, r.controller_id, r.brokers.len()),
            (NONE, BrokerId(NODE), 1)
        );
        assert_eq!(r.cluster_authorized_operations, crate::authorized::NOT_REQUESTED);
        let controllers = handle(&b, &DescribeClusterRequest::default().with_endpoint_type(2), 2);
        assert_eq!(
            (controllers.error_code, controllers.endpoint_type),
            (MISMATCHED_ENDPOINT_TYPE, BROKERS)
        );
    }
}

//! DescribeAcls (`kafka-acls.sh --list`): the lab's broker runs no authorizer, so — as Kafka
//! answers without `authorizer.class.name` — SECURITY_DISABLED.

use crate::str_bytes;
use offsetlab_wire::error::SECURITY_DISABLED;
use offsetlab_wire::kafka_protocol::messages::DescribeAclsResponse;

pub(crate) fn handle() -> DescribeAclsResponse {
    DescribeAclsResponse::default()
        .with_error_code(SECURITY_DISABLED)
        .with_error_message(Some(str_bytes("No Authorizer is configured on the broker")))
}

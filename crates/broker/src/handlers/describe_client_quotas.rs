//! DescribeClientQuotas (`kafka-configs.sh --describe --entity-type clients`): the lab throttles
//! nobody (every `throttle_time_ms` it answers is 0), so no entity has a quota: the list is
//! empty. An entity type Kafka does not know is UNSUPPORTED_VERSION, as there.

use crate::str_bytes;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::{DescribeClientQuotasRequest, DescribeClientQuotasResponse};

/// The entity types of client quotas.
pub(crate) const ENTITY_TYPES: &[&str] = &["user", "client-id", "ip"];

pub(crate) fn handle(r: &DescribeClientQuotasRequest) -> DescribeClientQuotasResponse {
    if let Some(bad) = r
        .components
        .iter()
        .find(|c| !ENTITY_TYPES.contains(&c.entity_type.as_str()))
    {
        return DescribeClientQuotasResponse::default()
            .with_error_code(UNSUPPORTED_VERSION)
            .with_error_message(Some(str_bytes(&format!(
                "Custom entity type {} not supported",
                bad.entity_type.as_str()
            ))))
            .with_entries(None);
    }
    DescribeClientQuotasResponse::default()
        .with_error_code(NONE)
        .with_entries(Some(Vec::new()))
}

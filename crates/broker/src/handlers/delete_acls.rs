//! DeleteAcls (`kafka-acls.sh --remove`): no authorizer runs here, so — as Kafka answers
//! without `authorizer.class.name` — every filter is SECURITY_DISABLED, matching nothing.

use crate::str_bytes;
use offsetlab_wire::error::SECURITY_DISABLED;
use offsetlab_wire::kafka_protocol::messages::delete_acls_response::DeleteAclsFilterResult;
use offsetlab_wire::kafka_protocol::messages::{DeleteAclsRequest, DeleteAclsResponse};

pub(crate) fn handle(r: &DeleteAclsRequest) -> DeleteAclsResponse {
    DeleteAclsResponse::default().with_filter_results(
        r.filters
            .iter()
            .map(|_| {
                DeleteAclsFilterResult::default()
                    .with_error_code(SECURITY_DISABLED)
                    .with_error_message(Some(str_bytes("No Authorizer is configured.")))
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use offsetlab_wire::kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;

    #[test]
    fn every_filter_is_refused_without_an_authorizer() {
        let r = handle(&DeleteAclsRequest::default().with_filters(vec![DeleteAclsFilter::default()]));
        assert_eq!(r.filter_results[0].error_code, SECURITY_DISABLED);
        assert!(r.filter_results[0].matching_acls.is_empty());
    }
}

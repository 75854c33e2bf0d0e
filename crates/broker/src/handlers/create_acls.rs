//! CreateAcls (`kafka-acls.sh --add`): no authorizer runs here, so — as Kafka answers without
//! `authorizer.class.name` — every creation is SECURITY_DISABLED.

use crate::str_bytes;
use offsetlab_wire::error::SECURITY_DISABLED;
use offsetlab_wire::kafka_protocol::messages::create_acls_response::AclCreationResult;
use offsetlab_wire::kafka_protocol::messages::{CreateAclsRequest, CreateAclsResponse};

pub(crate) fn handle(r: &CreateAclsRequest) -> CreateAclsResponse {
    CreateAclsResponse::default().with_results(
        r.creations
            .iter()
            .map(|_| {
                AclCreationResult::default()
                    .with_error_code(SECURITY_DISABLED)
                    .with_error_message(Some(str_bytes("No Authorizer is configured.")))
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use offsetlab_wire::kafka_protocol::messages::create_acls_request::AclCreation;

    #[test]
    fn every_creation_is_refused_without_an_authorizer() {
        let r = handle(&CreateAclsRequest::default().with_creations(vec![AclCreation::default(); 2]));
        assert_eq!(r.results.len(), 2);
        assert!(r.results.iter().all(|c| c.error_code == SECURITY_DISABLED));
    }
}

//! DescribeUserScramCredentials (`kafka-configs.sh --describe --entity-type users`): the lab's
//! listener is PLAINTEXT with no SASL users, so all users are none, and a named one is
//! RESOURCE_NOT_FOUND, as Kafka answers for a user without credentials.

use crate::str_bytes;
use offsetlab_wire::error::RESOURCE_NOT_FOUND;
use offsetlab_wire::kafka_protocol::messages::describe_user_scram_credentials_response::DescribeUserScramCredentialsResult;
use offsetlab_wire::kafka_protocol::messages::{
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};

pub(crate) fn handle(r: &DescribeUserScramCredentialsRequest) -> DescribeUserScramCredentialsResponse {
    let named = r.users.iter().flatten().map(|u| {
        DescribeUserScramCredentialsResult::default()
            .with_user(u.name.clone())
            .with_error_code(RESOURCE_NOT_FOUND)
            .with_error_message(Some(str_bytes(
                "Attempt to describe a user credential that does not exist",
            )))
    });
    DescribeUserScramCredentialsResponse::default().with_results(named.collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::name;
    use offsetlab_wire::kafka_protocol::messages::describe_user_scram_credentials_request::UserName;

    #[test]
    fn there_are_no_users() {
        assert!(handle(&DescribeUserScramCredentialsRequest::default())
            .results
            .is_empty());
        let named = handle(
            &DescribeUserScramCredentialsRequest::default()
                .with_users(Some(vec![UserName::default().with_name(name("alice"))])),
        );
        assert_eq!(named.results[0].error_code, RESOURCE_NOT_FOUND);
    }
}

//! AlterUserScramCredentials (`kafka-configs.sh --alter --add-config 'SCRAM-SHA-256=…'`): the
//! lab authenticates with SASL/PLAIN only (`--kafka-sasl-plain-users`), so it keeps no SCRAM
//! credentials: an upsertion or deletion of a known mechanism is UNSUPPORTED_SASL_MECHANISM,
//! of an unknown one UNSUPPORTED_SASL_MECHANISM too, each naming the user.

use crate::str_bytes;
use offsetlab_wire::error::UNSUPPORTED_SASL_MECHANISM;
use offsetlab_wire::kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use offsetlab_wire::kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
};

pub(crate) fn handle(r: &AlterUserScramCredentialsRequest) -> AlterUserScramCredentialsResponse {
    let users = r
        .upsertions
        .iter()
        .map(|u| u.name.clone())
        .chain(r.deletions.iter().map(|d| d.name.clone()));
    AlterUserScramCredentialsResponse::default().with_results(
        users
            .map(|user| {
                AlterUserScramCredentialsResult::default()
                    .with_user(user)
                    .with_error_code(UNSUPPORTED_SASL_MECHANISM)
                    .with_error_message(Some(str_bytes(
                        "the lab keeps no SCRAM credentials: it authenticates with SASL/PLAIN only",
                    )))
            })
            .collect(),
    )
}

//! ApiVersions and the SASL APIs on a PLAINTEXT listener.

use super::{s, versions};
use crate::target::{Step, Target};
use bytes::Bytes;
use offsetlab_wire::kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, SaslAuthenticateRequest, SaslHandshakeRequest,
};

pub fn api_versions(t: &mut Target) -> Step<()> {
    for v in versions(ApiKey::ApiVersions) {
        t.ask(
            "api-versions",
            v,
            ApiVersionsRequest::default()
                .with_client_software_name(s("offsetlab-conformance"))
                .with_client_software_version(s("1.0")),
        )?;
    }
    Ok(())
}

/// Both SASL APIs on a listener without SASL, each on a connection of its own.
pub fn sasl(t: &mut Target) -> Step<()> {
    for v in versions(ApiKey::SaslHandshake) {
        t.fresh_connection();
        t.call(
            "handshake",
            v,
            SaslHandshakeRequest::default().with_mechanism(s("PLAIN")),
        )?;
    }
    for v in versions(ApiKey::SaslAuthenticate) {
        t.fresh_connection();
        t.call(
            "authenticate",
            v,
            SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from_static(b"\0user\0secret")),
        )?;
    }
    t.fresh_connection();
    Ok(())
}

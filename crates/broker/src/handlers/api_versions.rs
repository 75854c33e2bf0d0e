//! ApiVersions: the APIs and version ranges the listener serves (`offsetlab_wire::versions`).
//! An unserved ApiVersions version is answered too, with UNSUPPORTED_VERSION and the ranges, so
//! a client can retry with one it has — the one request Kafka answers rather than closes.

use offsetlab_wire::error::{NONE, UNSUPPORTED_VERSION};
use offsetlab_wire::kafka_protocol::messages::ApiVersionsResponse;
use offsetlab_wire::versions::api_versions_response;

pub(crate) fn handle() -> ApiVersionsResponse {
    api_versions_response(NONE)
}

/// The answer to a version of ApiVersions the listener does not decode.
pub(crate) fn unsupported() -> ApiVersionsResponse {
    api_versions_response(UNSUPPORTED_VERSION)
}

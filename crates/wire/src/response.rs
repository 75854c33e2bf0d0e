//! Encoding a response frame.
//!
//! ```text
//! size:           int32 (bytes that follow)
//! correlation_id: int32
//! tagged fields   (response header v1, flexible versions — never for ApiVersions)
//! body            (the API's response at the request's version)
//! ```

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::{ApiKey, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::Encodable;

#[derive(Debug, thiserror::Error)]
#[error("cannot encode a {api_key:?} v{version} response: {reason}")]
pub struct EncodeError {
    pub api_key: ApiKey,
    pub version: i16,
    pub reason: String,
}

/// The response frame for a request of `api_key` at `version`.
pub fn encode(
    correlation_id: i32,
    api_key: ApiKey,
    version: i16,
    body: &ResponseKind,
) -> Result<BytesMut, EncodeError> {
    let err = |reason: String| EncodeError {
        api_key,
        version,
        reason,
    };
    let mut buf = BytesMut::new();
    buf.put_i32(0); // size, filled below
                    // ApiVersions answers with header v0 whatever the version, so that a client that spoke too
                    // new a version can still read the error and the versions it should use.
    let header_version = if api_key == ApiKey::ApiVersions {
        0
    } else {
        api_key.response_header_version(version)
    };
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut buf, header_version)
        .map_err(|e| err(e.to_string()))?;
    body.encode(&mut buf, version).map_err(|e| err(e.to_string()))?;
    let size = i32::try_from(buf.len() - 4).map_err(|_| EncodeError {
        api_key,
        version,
        reason: "response larger than 2 GiB".into(),
    })?;
    buf[..4].copy_from_slice(&size.to_be_bytes());
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::ApiVersionsResponse;
    use kafka_protocol::protocol::Decodable;

    #[test]
    fn an_api_versions_response_round_trips_with_header_v0() {
        let body = crate::versions::api_versions_response(0);
        let frame = encode(
            7,
            ApiKey::ApiVersions,
            3,
            &ResponseKind::ApiVersions(body.clone()),
        )
        .expect("encodes");
        let size = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
        assert_eq!(size, frame.len() - 4);
        let mut rest = bytes::Bytes::copy_from_slice(&frame[4..]);
        let header = ResponseHeader::decode(&mut rest, 0).expect("header v0");
        assert_eq!(header.correlation_id, 7);
        let back = ApiVersionsResponse::decode(&mut rest, 3).expect("body");
        assert_eq!(back, body);
    }
}

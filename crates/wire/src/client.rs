//! The client side, for offsetlab's own tools (`offsetlab topics`): a request encoded behind its
//! header and size, a response frame decoded for the API and version it answers.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::{encode_request_header_into_buffer, Decodable, StrBytes};

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot encode the {0:?} request: {1}")]
    Encode(ApiKey, String),
    #[error("cannot decode the {0:?} response: {1}")]
    Decode(ApiKey, String),
    #[error("the response answers correlation id {got}, not {want}")]
    Correlation { want: i32, got: i32 },
}

/// A request frame: size, header (v1 or v2 as the version requires), body.
pub fn encode_request(
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    client_id: &str,
    body: &RequestKind,
) -> Result<BytesMut, ClientError> {
    let err = |e: String| ClientError::Encode(api_key, e);
    let mut buf = BytesMut::new();
    buf.put_i32(0);
    let header = RequestHeader::default()
        .with_request_api_key(api_key as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_string(client_id.to_string())));
    encode_request_header_into_buffer(&mut buf, &header).map_err(|e| err(e.to_string()))?;
    body.encode(&mut buf, version).map_err(|e| err(e.to_string()))?;
    let size = i32::try_from(buf.len() - 4).map_err(|_| err("request larger than 2 GiB".into()))?;
    buf[..4].copy_from_slice(&size.to_be_bytes());
    Ok(buf)
}

/// Decodes a response frame's body (size prefix removed) for `api_key` at `version`.
pub fn decode_response(
    frame: Bytes,
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
) -> Result<ResponseKind, ClientError> {
    let mut bytes = frame;
    let header_version = if api_key == ApiKey::ApiVersions {
        0
    } else {
        api_key.response_header_version(version)
    };
    let header = ResponseHeader::decode(&mut bytes, header_version)
        .map_err(|e| ClientError::Decode(api_key, e.to_string()))?;
    if header.correlation_id != correlation_id {
        return Err(ClientError::Correlation {
            want: correlation_id,
            got: header.correlation_id,
        });
    }
    ResponseKind::decode(api_key, &mut bytes, version)
        .map_err(|e| ClientError::Decode(api_key, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::{ApiVersionsRequest, MetadataRequest};

    /// What the client encodes, the broker side decodes; what the broker encodes, the client
    /// side decodes.
    #[test]
    fn client_and_broker_sides_agree() {
        let frame = encode_request(
            ApiKey::Metadata,
            9,
            5,
            "offsetlab",
            &RequestKind::Metadata(MetadataRequest::default()),
        )
        .expect("encode");
        let mut f = frame;
        let body = crate::frame::split_frame(&mut f, 1 << 20)
            .expect("frame")
            .expect("whole");
        let r = crate::request::decode(body.freeze()).expect("decode");
        assert_eq!(
            (r.api_key, r.version(), r.correlation_id()),
            (ApiKey::Metadata, 9, 5)
        );

        let response = crate::response::encode(
            6,
            ApiKey::ApiVersions,
            3,
            &ResponseKind::ApiVersions(crate::versions::api_versions_response(0)),
        )
        .expect("encode");
        let decoded = decode_response(Bytes::copy_from_slice(&response[4..]), ApiKey::ApiVersions, 3, 6)
            .expect("decode");
        assert!(matches!(decoded, ResponseKind::ApiVersions(v) if v.error_code == 0));
        let _ = ApiVersionsRequest::default();
    }
}

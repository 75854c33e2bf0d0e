//! Decoding a request frame.
//!
//! ```text
//! request_api_key:     int16
//! request_api_version: int16
//! correlation_id:      int32
//! client_id:           nullable string
//! tagged fields        (header v2, flexible versions only)
//! body                 (the API's request at that version)
//! ```
//!
//! The first eight bytes are read by hand, so that even a request for an unknown API or an
//! unserved version can be answered (or refused) with its correlation id.

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind};
use kafka_protocol::protocol::decode_request_header_from_buffer;

/// A decoded request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub header: RequestHeader,
    pub api_key: ApiKey,
    pub body: RequestKind,
}

impl Request {
    pub fn version(&self) -> i16 {
        self.header.request_api_version
    }

    pub fn correlation_id(&self) -> i32 {
        self.header.correlation_id
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Not a request this protocol can parse: the connection is closed, nothing else changes.
    #[error("malformed request: {0}")]
    Malformed(String),
    /// An api key Kafka does not define.
    #[error("unknown api key {api_key} (correlation id {correlation_id})")]
    UnknownApi { api_key: i16, correlation_id: i32 },
    /// An API or version the listener does not serve (see [`crate::versions`]).
    #[error("{api_key:?} v{version} is not served (correlation id {correlation_id})")]
    NotServed {
        api_key: ApiKey,
        version: i16,
        correlation_id: i32,
    },
}

/// Decodes one frame's body.
pub fn decode(frame: Bytes) -> Result<Request, DecodeError> {
    let Some(fixed) = frame.get(..8) else {
        return Err(DecodeError::Malformed(format!(
            "{} bytes cannot hold a request header",
            frame.len()
        )));
    };
    let raw_key = i16::from_be_bytes([fixed[0], fixed[1]]);
    let version = i16::from_be_bytes([fixed[2], fixed[3]]);
    let correlation_id = i32::from_be_bytes([fixed[4], fixed[5], fixed[6], fixed[7]]);
    let api_key = ApiKey::try_from(raw_key).map_err(|_| DecodeError::UnknownApi {
        api_key: raw_key,
        correlation_id,
    })?;
    if !crate::versions::is_served(api_key, version) {
        return Err(DecodeError::NotServed {
            api_key,
            version,
            correlation_id,
        });
    }
    let mut bytes = frame;
    let header =
        decode_request_header_from_buffer(&mut bytes).map_err(|e| DecodeError::Malformed(e.to_string()))?;
    let body = RequestKind::decode(api_key, &mut bytes, version)
        .map_err(|e| DecodeError::Malformed(e.to_string()))?;
    Ok(Request {
        header,
        api_key,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use kafka_protocol::messages::ApiVersionsRequest;
    use kafka_protocol::protocol::{encode_request_header_into_buffer, StrBytes};
    use proptest::prelude::*;

    fn api_versions_frame(version: i16) -> Bytes {
        let mut buf = BytesMut::new();
        let header = RequestHeader::default()
            .with_request_api_key(ApiKey::ApiVersions as i16)
            .with_request_api_version(version)
            .with_correlation_id(7)
            .with_client_id(Some(StrBytes::from_static_str("rdkafka")));
        encode_request_header_into_buffer(&mut buf, &header).expect("header");
        let body = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("librdkafka"))
            .with_client_software_version(StrBytes::from_static_str("2.12.1"));
        RequestKind::ApiVersions(body)
            .encode(&mut buf, version)
            .expect("body");
        buf.freeze()
    }

    #[test]
    fn an_api_versions_request_decodes() {
        let r = decode(api_versions_frame(3)).expect("decodes");
        assert_eq!(
            (r.api_key, r.version(), r.correlation_id()),
            (ApiKey::ApiVersions, 3, 7)
        );
        match r.body {
            RequestKind::ApiVersions(b) => assert_eq!(b.client_software_name.as_str(), "librdkafka"),
            other => panic!("{other:?}"),
        }
    }

    /// Captured from kcat 1.7.1 (librdkafka 2.0.2, Debian's package) on this machine: the first
    /// frame of `kcat -b 127.0.0.1:19092 -L` read by a plain TCP listener, size prefix removed.
    #[test]
    fn kcats_first_request_decodes() {
        const CAPTURED: &str = "0012000300000001000772646b61666b61000b6c696272646b61666b6106322e302e3200";
        let captured: Vec<u8> = (0..CAPTURED.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&CAPTURED[i..i + 2], 16).expect("hex"))
            .collect();
        let r = decode(Bytes::from(captured)).expect("decodes");
        assert_eq!(
            (r.api_key, r.version(), r.correlation_id()),
            (ApiKey::ApiVersions, 3, 1)
        );
        assert_eq!(r.header.client_id.as_deref(), Some("rdkafka"));
        match r.body {
            RequestKind::ApiVersions(b) => {
                assert_eq!(b.client_software_name.as_str(), "librdkafka");
                assert_eq!(b.client_software_version.as_str(), "2.0.2");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unknown_apis_and_unserved_versions_keep_their_correlation_id() {
        let mut f = api_versions_frame(3).to_vec();
        f[..2].copy_from_slice(&999i16.to_be_bytes());
        assert_eq!(
            decode(Bytes::from(f)),
            Err(DecodeError::UnknownApi {
                api_key: 999,
                correlation_id: 7
            })
        );
        let mut f = api_versions_frame(3).to_vec();
        f[2..4].copy_from_slice(&9i16.to_be_bytes());
        assert!(matches!(
            decode(Bytes::from(f)),
            Err(DecodeError::NotServed {
                api_key: ApiKey::ApiVersions,
                version: 9,
                correlation_id: 7
            })
        ));
    }

    #[test]
    fn truncated_requests_are_malformed_not_panics() {
        let full = api_versions_frame(3);
        for cut in 0..full.len() {
            let r = decode(full.slice(..cut));
            assert!(r.is_err(), "cut at {cut} decoded: {r:?}");
        }
    }

    /// A request header for `api_key` at `version` (v1 header: no tagged fields), then `body`.
    fn frame(api_key: ApiKey, version: i16, body: &[u8]) -> Bytes {
        let mut buf = BytesMut::new();
        let header = RequestHeader::default()
            .with_request_api_key(api_key as i16)
            .with_request_api_version(version)
            .with_correlation_id(1)
            .with_client_id(Some(StrBytes::from_static_str("x")));
        encode_request_header_into_buffer(&mut buf, &header).expect("header");
        buf.extend_from_slice(body);
        buf.freeze()
    }

    /// CVE-2022-34917's class: a count of 2³¹ − 1 topics in a 19-byte Metadata request. The
    /// codec used to reserve room for them all (about 150 GB) and the allocator's failure
    /// aborted the process; now the count is checked against the bytes left first (the
    /// vendored kafka-protocol patch, vendor/README.md). Both array encodings: v1's int32 count
    /// and v9's compact (varint) one.
    #[test]
    fn huge_array_counts_are_refused_before_allocating() {
        let r = decode(frame(ApiKey::Metadata, 1, &i32::MAX.to_be_bytes()));
        assert!(matches!(r, Err(DecodeError::Malformed(_))), "{r:?}");
        // Flexible header v2 has a tagged-fields byte after the client id.
        let mut body = vec![0u8]; // no header tagged fields
        body.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x07]); // compact count 2^31 - 1
        let r = decode(frame(ApiKey::Metadata, 9, &body));
        assert!(matches!(r, Err(DecodeError::Malformed(_))), "{r:?}");
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// Arbitrary bytes after a valid ApiVersions v0–v3 prefix: an error or a request, never a
        /// panic.
        #[test]
        fn garbage_never_panics(version in 0i16..4, tail in prop::collection::vec(any::<u8>(), 0..64)) {
            let mut f = BytesMut::new();
            f.extend_from_slice(&(ApiKey::ApiVersions as i16).to_be_bytes());
            f.extend_from_slice(&version.to_be_bytes());
            f.extend_from_slice(&1i32.to_be_bytes());
            f.extend_from_slice(&tail);
            let _ = decode(f.freeze());
        }
    }
}

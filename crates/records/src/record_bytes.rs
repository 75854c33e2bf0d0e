//! [`RecordBytes`]: a key, a value or a header as a record carries it — any bytes — and how the
//! lab writes and shows them.
//!
//! Kafka never looks inside a key or a value: most production data is Avro or Protobuf, often
//! behind the Schema Registry's five-byte framing. The lab keeps them byte-exact. Where it writes
//! them as text (a `send` line, an export, the page's JSON) it takes the shortest form that reads
//! back as the same bytes: a JSON string when they are UTF-8, `{"base64": "…"}` otherwise.

use base64::Engine as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Any bytes, written as a JSON string when they are UTF-8 and as `{"base64": "…"}` otherwise.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordBytes(Vec<u8>);

impl RecordBytes {
    pub fn new(bytes: Vec<u8>) -> Self {
        Self(bytes)
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }

    /// The bytes as text when they are UTF-8.
    pub fn as_text(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    /// How the page and the narrative show them ([`shown`]).
    pub fn shown(&self) -> Shown<'_> {
        shown(&self.0)
    }
}

impl std::ops::Deref for RecordBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl From<Vec<u8>> for RecordBytes {
    fn from(v: Vec<u8>) -> Self {
        Self(v)
    }
}

impl From<&[u8]> for RecordBytes {
    fn from(v: &[u8]) -> Self {
        Self(v.to_vec())
    }
}

impl From<String> for RecordBytes {
    fn from(s: String) -> Self {
        Self(s.into_bytes())
    }
}

impl From<&str> for RecordBytes {
    fn from(s: &str) -> Self {
        Self(s.as_bytes().to_vec())
    }
}

impl PartialEq<str> for RecordBytes {
    fn eq(&self, other: &str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<&str> for RecordBytes {
    fn eq(&self, other: &&str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl fmt::Debug for RecordBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.as_text() {
            Some(s) => fmt::Debug::fmt(s, f),
            None => write!(
                f,
                "base64:{}",
                base64::engine::general_purpose::STANDARD.encode(&self.0)
            ),
        }
    }
}

impl fmt::Display for RecordBytes {
    /// As the narrative shows it: [`Shown`]'s display.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.shown().fmt(f)
    }
}

/// The field name of the binary form.
const BASE64: &str = "base64";

impl Serialize for RecordBytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.as_text() {
            Some(text) => s.serialize_str(text),
            None => {
                use serde::ser::SerializeMap;
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry(BASE64, &base64::engine::general_purpose::STANDARD.encode(&self.0))?;
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for RecordBytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Binary {
            base64: String,
        }
        #[derive(Deserialize)]
        #[serde(
            untagged,
            expecting = "a string, or {\"base64\": \"…\"} for bytes that are not UTF-8"
        )]
        enum Form {
            Text(String),
            Binary(Binary),
        }
        match Form::deserialize(d)? {
            Form::Text(s) => Ok(Self(s.into_bytes())),
            Form::Binary(b) => base64::engine::general_purpose::STANDARD
                .decode(b.base64.as_bytes())
                .map(Self)
                .map_err(|e| serde::de::Error::custom(format!("not base64 ({e})"))),
        }
    }
}

/// How the lab shows a key or a value to a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown<'a> {
    /// UTF-8 with no control character but tab, newline and carriage return: shown as it is.
    Text(&'a str),
    /// The Schema Registry's wire format: magic byte 0, a 4-byte big-endian schema id, then the
    /// serialized payload (Avro, Protobuf or JSON Schema), shown as hex.
    Framed { schema_id: u32, payload: &'a [u8] },
    /// Anything else, shown as hex.
    Binary(&'a [u8]),
}

/// How `bytes` are shown ([`Shown`]). The framing is checked first: a framed Avro payload whose
/// bytes happen to be valid UTF-8 begins with a NUL, which text never shows.
pub fn shown(bytes: &[u8]) -> Shown<'_> {
    if let [0, a, b, c, d, payload @ ..] = bytes {
        return Shown::Framed {
            schema_id: u32::from_be_bytes([*a, *b, *c, *d]),
            payload,
        };
    }
    match std::str::from_utf8(bytes) {
        Ok(s)
            if !s
                .chars()
                .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r')) =>
        {
            Shown::Text(s)
        }
        _ => Shown::Binary(bytes),
    }
}

/// `bytes` as lower-case hex, two digits a byte.
pub fn hex(bytes: &[u8]) -> String {
    use fmt::Write;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

impl fmt::Display for Shown<'_> {
    /// Text as it is; `[schema 7] 0a1b…` for a framed payload; `0x0a1b…` for other bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shown::Text(s) => f.write_str(s),
            Shown::Framed { schema_id, payload } => write!(f, "[schema {schema_id}] {}", hex(payload)),
            Shown::Binary(b) => write!(f, "0x{}", hex(b)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn text_is_a_string_and_other_bytes_base64() {
        let text = RecordBytes::from("o-1 \"quoted\" # ü");
        assert_eq!(
            serde_json::to_string(&text).expect("json"),
            r#""o-1 \"quoted\" # ü""#
        );
        let binary = RecordBytes::from(vec![0u8, 0, 0, 0, 7, 0xff]);
        assert_eq!(
            serde_json::to_string(&binary).expect("json"),
            r#"{"base64":"AAAAAAf/"}"#
        );
    }

    #[test]
    fn a_bad_binary_form_is_refused_with_its_reason() {
        let err = serde_json::from_str::<RecordBytes>(r#"{"base64":"not base64!"}"#).expect_err("refused");
        assert!(err.to_string().contains("not base64"), "{err}");
        let err = serde_json::from_str::<RecordBytes>(r#"{"hex":"00"}"#).expect_err("refused");
        assert!(err.to_string().contains("base64"), "{err}");
        assert!(serde_json::from_str::<RecordBytes>("17").is_err());
    }

    #[test]
    fn shown_as_text_framed_or_hex() {
        assert_eq!(shown(b"o-17\tshipped\n"), Shown::Text("o-17\tshipped\n"));
        // An Avro string "abc" behind schema id 1: valid UTF-8, still shown as framed.
        let framed = [0, 0, 0, 0, 1, 6, b'a', b'b', b'c'];
        assert_eq!(
            shown(&framed),
            Shown::Framed {
                schema_id: 1,
                payload: &[6, b'a', b'b', b'c']
            }
        );
        assert_eq!(shown(&framed).to_string(), "[schema 1] 06616263");
        assert_eq!(shown(&[0xff, 0x01]).to_string(), "0xff01");
        assert_eq!(shown(b"bell\x07").to_string(), "0x62656c6c07");
        assert_eq!(shown(&[0, 1]).to_string(), "0x0001");
    }

    proptest! {
        #[test]
        fn any_bytes_read_back_as_written(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let b = RecordBytes::from(bytes);
            let json = serde_json::to_string(&b).expect("json");
            prop_assert_eq!(serde_json::from_str::<RecordBytes>(&json).expect("json"), b);
        }

        #[test]
        fn any_text_reads_back_as_written(s in any::<String>()) {
            let b = RecordBytes::from(s.as_str());
            let json = serde_json::to_string(&b).expect("json");
            prop_assert_eq!(&json, &serde_json::to_string(&s).expect("json"));
            prop_assert_eq!(serde_json::from_str::<RecordBytes>(&json).expect("json"), b);
        }
    }
}

//! Records as the log holds them: on the way in ([`NewRecord`]), borrowed from a batch
//! ([`RecordRef`]) and copied out ([`Record`]).

use serde::{Deserialize, Serialize};

/// A record's position in one partition. Kafka uses a signed 64-bit integer; so do we.
pub type Offset = i64;

/// A record on its way into a log: the log assigns the offset.
#[derive(Debug, Clone, Copy, Default)]
pub struct NewRecord<'a> {
    pub timestamp: i64,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    /// A control record (a transaction's commit or abort marker): it takes an offset but is
    /// never handed to an application. Kafka keeps this flag in the record batch's attributes.
    pub control: bool,
    /// The record's headers as a v2 record encodes them ([`crate::headers`]); empty for none.
    pub headers: &'a [u8],
}

impl<'a> NewRecord<'a> {
    /// An application's record: no headers, not a control record.
    pub fn new(timestamp: i64, key: Option<&'a [u8]>, value: Option<&'a [u8]>) -> Self {
        Self {
            timestamp,
            key,
            value,
            control: false,
            headers: &[],
        }
    }
}

/// A record as stored, borrowed from the log that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRef<'a> {
    pub offset: Offset,
    pub timestamp: i64,
    pub key: Option<&'a [u8]>,
    /// `None` is a tombstone: on a compacted topic it deletes the key.
    pub value: Option<&'a [u8]>,
    pub control: bool,
    /// Its headers as a v2 record encodes them ([`crate::headers`]); empty for none.
    pub headers: &'a [u8],
}

impl<'a> RecordRef<'a> {
    /// The record as a log appends it, borrowing the same bytes (a rewrite keeps its offset).
    pub fn as_new(&self) -> NewRecord<'a> {
        NewRecord {
            timestamp: self.timestamp,
            key: self.key,
            value: self.value,
            control: self.control,
            headers: self.headers,
        }
    }

    pub fn to_owned(&self) -> Record {
        Record {
            offset: self.offset,
            timestamp: self.timestamp,
            key: self.key.map(<[u8]>::to_vec),
            value: self.value.map(<[u8]>::to_vec),
            control: self.control,
            headers: self.headers.to_vec(),
        }
    }
}

/// A record copied out of a log, as a consumer holds it after a poll.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub offset: Offset,
    pub timestamp: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub control: bool,
    /// Its headers as a v2 record encodes them ([`crate::headers`]); empty for none (and then
    /// not written, so snapshots of records without headers read as they always did).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<u8>,
}

impl Record {
    /// The record as a log appends it (the log assigns the offset).
    pub fn as_new(&self) -> NewRecord<'_> {
        NewRecord {
            timestamp: self.timestamp,
            key: self.key.as_deref(),
            value: self.value.as_deref(),
            control: self.control,
            headers: &self.headers,
        }
    }

    /// The key as a person reads it ([`crate::record_bytes::shown`]): text, or hex for other
    /// bytes (the lab's keys are order ids); empty for a null key.
    pub fn key_text(&self) -> String {
        self.key
            .as_deref()
            .map(|k| crate::record_bytes::shown(k).to_string())
            .unwrap_or_default()
    }
}

/// Whether `bytes` are UTF-8 text. Keys and values are nearly always ASCII, checked eight bytes
/// at a time with no early exit — which the compiler turns into vector code, several times
/// faster on a 100-byte value than `str::from_utf8`'s or `is_ascii`'s byte loops — and UTF-8's
/// own check runs only for the rest.
pub fn is_text(bytes: &[u8]) -> bool {
    let (words, tail) = bytes.as_chunks::<8>();
    let high = words.iter().fold(0u64, |acc, w| acc | u64::from_ne_bytes(*w))
        | tail.iter().fold(0u64, |acc, &b| acc | u64::from(b));
    high & 0x8080_8080_8080_8080 == 0 || std::str::from_utf8(bytes).is_ok()
}

#[cfg(test)]
mod tests {
    use super::is_text;
    use proptest::prelude::*;

    #[test]
    fn ascii_utf8_and_not() {
        assert!(is_text(b""));
        assert!(is_text(b"order-17 shipped to the warehouse"));
        assert!(is_text("Zürich → 東京, 🚚".as_bytes()));
        assert!(!is_text(&[0x80]));
        assert!(!is_text(b"twelve bytes\xff"));
        assert!(!is_text(&[0, 0x00, 0xc3]));
    }

    proptest! {
        #[test]
        fn agrees_with_from_utf8(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            prop_assert_eq!(is_text(&bytes), std::str::from_utf8(&bytes).is_ok());
        }

        #[test]
        fn agrees_on_text_with_one_byte_changed(s in ".{0,40}", at in any::<usize>(), b in any::<u8>()) {
            let mut bytes = s.into_bytes();
            if !bytes.is_empty() {
                let i = at % bytes.len();
                bytes[i] = b;
            }
            prop_assert_eq!(is_text(&bytes), std::str::from_utf8(&bytes).is_ok());
        }
    }
}

//! Records and the names that locate them.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A record's position in one partition. Kafka uses a signed 64-bit integer; so do we.
pub type Offset = i64;

/// A topic and one of its partitions: the unit that owns offsets.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TopicPartition {
    pub topic: String,
    pub partition: i32,
}

impl TopicPartition {
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        Self {
            topic: topic.into(),
            partition,
        }
    }
}

impl fmt::Display for TopicPartition {
    /// `orders-0`, the way Kafka's own `TopicPartition::toString` prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// A record on its way into a log: the log assigns the offset.
#[derive(Debug, Clone, Copy, Default)]
pub struct NewRecord<'a> {
    pub timestamp: i64,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    /// A control record (a transaction's commit or abort marker): it takes an offset but is
    /// never handed to an application. Kafka keeps this flag in the record batch's attributes.
    pub control: bool,
    /// The record's headers as a v2 record encodes them ([`headers`]); empty for none.
    pub headers: &'a [u8],
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
    /// Its headers as a v2 record encodes them ([`headers`]); empty for none.
    pub headers: &'a [u8],
}

impl RecordRef<'_> {
    pub fn to_owned(&self) -> Record {
        Record {
            offset: self.offset,
            timestamp: self.timestamp,
            key: self.key.map(<[u8]>::to_vec),
            value: self.value.map(<[u8]>::to_vec),
            control: self.control,
        }
    }
}

/// Record headers in the form a v2 record carries them: a zig-zag varint count, then for each a
/// varint key length, the key, a varint value length (−1 for null) and the value. The lab keeps
/// them as these bytes — a log stores them as they came, an export spells them out — and treats
/// "no headers" as an empty slice (a count of 0 is written for it).
pub mod headers {
    use crate::varint::{get_varint, put_varint, put_varlong};

    /// One header: a string key and a nullable value.
    pub type Header<'a> = (&'a [u8], Option<&'a [u8]>);

    /// `headers` encoded; empty when there are none.
    pub fn encode<'a>(headers: impl ExactSizeIterator<Item = Header<'a>>) -> Vec<u8> {
        let mut out = Vec::new();
        if headers.len() == 0 {
            return out;
        }
        put_varint(&mut out, i32::try_from(headers.len()).unwrap_or(i32::MAX));
        for (k, v) in headers {
            put_varlong(&mut out, k.len() as i64);
            out.extend_from_slice(k);
            match v {
                Some(v) => {
                    put_varlong(&mut out, v.len() as i64);
                    out.extend_from_slice(v);
                }
                None => put_varlong(&mut out, -1),
            }
        }
        out
    }

    /// The headers `raw` holds, or `None` when it is not a whole, valid header section.
    pub fn decode(raw: &[u8]) -> Option<Vec<Header<'_>>> {
        if raw.is_empty() {
            return Some(Vec::new());
        }
        let (count, mut at) = get_varint(raw)?;
        let count = usize::try_from(count).ok()?;
        // Each header takes two bytes at least: a count can never promise more than that.
        if count > raw.len() / 2 {
            return None;
        }
        let mut out = Vec::with_capacity(count);
        let field = |at: &mut usize, nullable: bool| -> Option<Option<&[u8]>> {
            let (len, n) = get_varint(&raw[*at..])?;
            *at += n;
            if len < 0 {
                return nullable.then_some(None);
            }
            let len = usize::try_from(len).ok()?;
            let bytes = raw.get(*at..at.checked_add(len)?)?;
            *at += len;
            Some(Some(bytes))
        };
        for _ in 0..count {
            let key = field(&mut at, false)??;
            let value = field(&mut at, true)?;
            out.push((key, value));
        }
        (at == raw.len()).then_some(out)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn headers_read_back() {
            let raw = encode([(&b"k"[..], Some(&b"v"[..])), (&b""[..], None)].into_iter());
            assert_eq!(
                decode(&raw),
                Some(vec![(&b"k"[..], Some(&b"v"[..])), (&b""[..], None)])
            );
            assert_eq!(encode(std::iter::empty()), Vec::<u8>::new());
            assert_eq!(decode(&[]), Some(Vec::new()));
            assert_eq!(decode(&[0x7f]), None, "a count the bytes cannot hold");
            assert_eq!(decode(&[2, 2, b'k']), None, "cut short");
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
}

impl Record {
    /// The key as text (the lab's keys are order ids); lossy for non-UTF-8 bytes.
    pub fn key_text(&self) -> String {
        self.key
            .as_deref()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .unwrap_or_default()
    }

    pub fn value_text(&self) -> String {
        self.value
            .as_deref()
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .unwrap_or_default()
    }
}

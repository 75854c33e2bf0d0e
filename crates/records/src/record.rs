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

impl RecordRef<'_> {
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

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
#[derive(Debug, Clone, Copy)]
pub struct NewRecord<'a> {
    pub timestamp: i64,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    /// A control record (a transaction's commit or abort marker): it takes an offset but is
    /// never handed to an application. Kafka keeps this flag in the record batch's attributes.
    pub control: bool,
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

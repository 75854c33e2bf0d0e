//! Records and the names that locate them.

use serde::{Deserialize, Serialize};
use std::fmt;

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

pub use offsetlab_records::headers;
pub use offsetlab_records::record::{NewRecord, Offset, Record, RecordRef};
pub use offsetlab_records::record_bytes::{self, RecordBytes, Shown};

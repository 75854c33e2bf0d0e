//! `alter-topic TOPIC [retention.ms=DUR|-1] [retention.bytes=N|-1] [cleanup.policy=delete|compact]
//! [delete.retention.ms=DUR] [message.timestamp.type=CreateTime|LogAppendTime] [min.insync.replicas=N]
//! [compression.type=producer|uncompressed|gzip|snappy|lz4|zstd] [max.message.bytes=N]`
//!
//! Kafka's `IncrementalAlterConfigs` on a topic (what `kafka-configs.sh --alter --entity-type
//! topics --add-config …` sends; the Kafka listener writes this line for it): the named settings
//! change on a live topic, the rest stay. Retention reads them at the next tick, compaction at
//! the next `compact` — a shorter `retention.ms` on a topic a stopped group has not finished is
//! how a retention lesson makes "offset out of range" happen. Partitions (`add-partitions`) and
//! segment settings are fixed when the topic is created.

use super::topic::forever_or;
use crate::error::ParseError;
use crate::token::{Args, Quoted};
use crate::units::{count, duration_ms};
use offsetlab_engine::clock::{format_duration, Millis};
use offsetlab_engine::log::{CleanupPolicy, CompressionType, TimestampType, TopicConfig};
use offsetlab_engine::{Lab, LabError};
use std::fmt;

/// The settings a line changes; `None` leaves one as it is. Inside, `None` is `-1`, "forever".
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AlterTopic {
    pub topic: String,
    pub retention_ms: Option<Option<Millis>>,
    pub retention_bytes: Option<Option<u64>>,
    pub cleanup_policy: Option<CleanupPolicy>,
    pub delete_retention_ms: Option<Millis>,
    pub message_timestamp_type: Option<TimestampType>,
    pub min_insync_replicas: Option<u32>,
    pub compression_type: Option<CompressionType>,
    pub max_message_bytes: Option<usize>,
}

impl AlterTopic {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let alter = Self {
            topic: args.word("topic")?,
            retention_ms: args.parsed("retention.ms", |v| forever_or(v, duration_ms))?,
            retention_bytes: args.parsed("retention.bytes", |v| forever_or(v, |v| count(v, u64::MAX)))?,
            cleanup_policy: args.parsed("cleanup.policy", CleanupPolicy::from_list)?,
            delete_retention_ms: args.parsed("delete.retention.ms", duration_ms)?,
            message_timestamp_type: args.parsed("message.timestamp.type", |v| v.parse())?,
            min_insync_replicas: args.parsed("min.insync.replicas", super::topic::min_insync)?,
            compression_type: args.parsed("compression.type", |v| v.parse())?,
            max_message_bytes: args.parsed("max.message.bytes", super::topic::max_message_bytes)?,
        };
        if alter.is_empty() {
            return Err(ParseError::new(
                "alter-topic: name a setting to change (retention.ms, retention.bytes, cleanup.policy, delete.retention.ms, message.timestamp.type, min.insync.replicas, compression.type, max.message.bytes)",
            ));
        }
        Ok(alter)
    }

    fn is_empty(&self) -> bool {
        self.retention_ms.is_none()
            && self.retention_bytes.is_none()
            && self.cleanup_policy.is_none()
            && self.delete_retention_ms.is_none()
            && self.message_timestamp_type.is_none()
            && self.min_insync_replicas.is_none()
            && self.compression_type.is_none()
            && self.max_message_bytes.is_none()
    }

    /// `config` with this line's settings applied.
    pub fn changed(&self, config: &TopicConfig) -> TopicConfig {
        let mut c = config.clone();
        if let Some(v) = self.retention_ms {
            c.retention_ms = v;
        }
        if let Some(v) = self.retention_bytes {
            c.retention_bytes = v;
        }
        if let Some(v) = self.cleanup_policy {
            c.cleanup_policy = v;
        }
        if let Some(v) = self.delete_retention_ms {
            c.delete_retention_ms = v;
        }
        if let Some(v) = self.message_timestamp_type {
            c.message_timestamp_type = v;
        }
        if let Some(v) = self.min_insync_replicas {
            c.min_insync_replicas = v;
        }
        if let Some(v) = self.compression_type {
            c.compression_type = v;
        }
        if let Some(v) = self.max_message_bytes {
            c.max_message_bytes = v;
        }
        c
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        let config = self.changed(&lab.topic(&self.topic)?.config);
        lab.alter_topic_config(&self.topic, config)
    }
}

impl fmt::Display for AlterTopic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "alter-topic {}", Quoted(&self.topic))?;
        if let Some(v) = self.retention_ms {
            write!(f, " retention.ms={}", v.map_or("-1".into(), format_duration))?;
        }
        if let Some(v) = self.retention_bytes {
            write!(f, " retention.bytes={}", v.map_or("-1".into(), |b| b.to_string()))?;
        }
        if let Some(v) = self.cleanup_policy {
            write!(f, " cleanup.policy={v}")?;
        }
        if let Some(v) = self.delete_retention_ms {
            write!(f, " delete.retention.ms={}", format_duration(v))?;
        }
        if let Some(v) = self.message_timestamp_type {
            write!(f, " message.timestamp.type={v}")?;
        }
        if let Some(v) = self.min_insync_replicas {
            write!(f, " min.insync.replicas={v}")?;
        }
        if let Some(v) = self.compression_type {
            write!(f, " compression.type={v}")?;
        }
        if let Some(v) = self.max_message_bytes {
            write!(f, " max.message.bytes={v}")?;
        }
        Ok(())
    }
}

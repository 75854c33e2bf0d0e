//! Topic-level configuration, named after Kafka's topic configs.

use crate::clock::Millis;
use serde::{Deserialize, Serialize};

/// `cleanup.policy`: what the log does with old segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CleanupPolicy {
    /// Delete whole segments older or beyond the size limit (`retention.ms`, `retention.bytes`).
    #[default]
    Delete,
    /// Keep the latest record per key (the policy of `__consumer_offsets`).
    Compact,
    /// Both: compaction keeps the latest record per key, and retention deletes whole old
    /// segments (Kafka Streams' windowed changelogs).
    #[serde(rename = "compact,delete")]
    CompactDelete,
}

spelled!(CleanupPolicy, "cleanup.policy", { Delete => "delete", Compact => "compact", CompactDelete => "compact,delete" });

impl CleanupPolicy {
    /// Retention deletes whole old segments (`delete` is in the list).
    pub fn deletes(self) -> bool {
        matches!(self, Self::Delete | Self::CompactDelete)
    }

    /// The cleaner keeps the latest record per key (`compact` is in the list).
    pub fn compacts(self) -> bool {
        matches!(self, Self::Compact | Self::CompactDelete)
    }

    /// The policy a Kafka config value lists — `compact,delete` in either order, with spaces
    /// around the commas as Kafka's list parser allows.
    pub fn from_list(v: &str) -> Result<Self, String> {
        let mut names: Vec<&str> = v.split(',').map(str::trim).filter(|n| !n.is_empty()).collect();
        names.sort_unstable();
        names.dedup();
        match names.as_slice() {
            ["compact", "delete"] => Ok(Self::CompactDelete),
            [one] => one.parse(),
            _ => v.parse(),
        }
    }
}

/// `message.timestamp.type`: whose time a record carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum TimestampType {
    /// The producer's own timestamp, kept as it sent it (Kafka's default).
    #[default]
    CreateTime,
    /// The broker's time when it appended the batch, stamped over the producer's.
    LogAppendTime,
}

spelled!(TimestampType, "message.timestamp.type", { CreateTime => "CreateTime", LogAppendTime => "LogAppendTime" });

/// `compression.type`: the codec the log keeps a topic's batches in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CompressionType {
    /// Each batch as its producer compressed it (Kafka's default).
    #[default]
    Producer,
    Uncompressed,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

spelled!(CompressionType, "compression.type", {
    Producer => "producer",
    Uncompressed => "uncompressed",
    Gzip => "gzip",
    Snappy => "snappy",
    Lz4 => "lz4",
    Zstd => "zstd",
});

impl CompressionType {
    /// The codec every batch is rewritten in; `None` keeps the producer's.
    pub fn codec(self) -> Option<offsetlab_records::Compression> {
        use offsetlab_records::Compression as C;
        Some(match self {
            Self::Producer => return None,
            Self::Uncompressed => C::None,
            Self::Gzip => C::Gzip,
            Self::Snappy => C::Snappy,
            Self::Lz4 => C::Lz4,
            Self::Zstd => C::Zstd,
        })
    }
}

/// Kafka's defaults: 7 days of retention by time, none by size, 1 GiB and 7-day segments.
pub const DEFAULT_RETENTION_MS: Millis = 7 * 24 * 3_600_000;
pub const DEFAULT_SEGMENT_BYTES: usize = 1 << 30;
pub const DEFAULT_SEGMENT_MS: Millis = 7 * 24 * 3_600_000;
/// `delete.retention.ms`: a day.
pub const DEFAULT_DELETE_RETENTION_MS: Millis = 24 * 3_600_000;
/// `max.message.bytes`: 1 MiB and the 12 bytes of a batch's log overhead (Kafka's default, the
/// broker's `message.max.bytes`).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 1_048_588;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicConfig {
    pub partitions: i32,
    /// `retention.ms`; `None` is `-1`, keep forever.
    pub retention_ms: Option<Millis>,
    /// `retention.bytes` per partition; `None` is `-1`, no size limit.
    pub retention_bytes: Option<u64>,
    /// Records per segment. Not a Kafka setting (Kafka rolls by bytes and time); the lab adds
    /// it so a learner can see segments with a dozen records.
    pub segment_records: Option<usize>,
    pub segment_bytes: usize,
    pub segment_ms: Millis,
    pub cleanup_policy: CleanupPolicy,
    /// `delete.retention.ms`: how long a tombstone outlives compaction on a compacted topic.
    pub delete_retention_ms: Millis,
    /// `message.timestamp.type`: whether real clients' records keep their producer's timestamp
    /// (a lab written before this setting stamped them all with the log append time).
    #[serde(default)]
    pub message_timestamp_type: TimestampType,
    /// `min.insync.replicas`: replicas that must have a batch before an `acks=all` produce is
    /// acknowledged. The lab is one broker — every partition has one replica — so more than 1
    /// makes every `acks=all` produce NOT_ENOUGH_REPLICAS, as on a one-broker Kafka.
    #[serde(default = "one")]
    pub min_insync_replicas: u32,
    /// `compression.type`: real clients' batches kept in their producer's codec, or rewritten in
    /// the one named here. (The lab's own `produce` writes its orders uncompressed.)
    #[serde(default)]
    pub compression_type: CompressionType,
    /// `max.message.bytes`: the largest record batch a client may produce to the topic, as it is
    /// written (compressed); a larger one is MESSAGE_TOO_LARGE.
    #[serde(default = "default_max_message_bytes")]
    pub max_message_bytes: usize,
}

fn default_max_message_bytes() -> usize {
    DEFAULT_MAX_MESSAGE_BYTES
}

fn one() -> u32 {
    1
}

impl Default for TopicConfig {
    fn default() -> Self {
        Self {
            partitions: 1,
            retention_ms: Some(DEFAULT_RETENTION_MS),
            retention_bytes: None,
            segment_records: None,
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            segment_ms: DEFAULT_SEGMENT_MS,
            cleanup_policy: CleanupPolicy::Delete,
            delete_retention_ms: DEFAULT_DELETE_RETENTION_MS,
            message_timestamp_type: TimestampType::CreateTime,
            min_insync_replicas: 1,
            compression_type: CompressionType::Producer,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        }
    }
}

/// When the active segment rolls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentLimits {
    pub max_records: usize,
    pub max_bytes: usize,
    pub max_age_ms: Millis,
}

impl TopicConfig {
    /// Every config Kafka has that the lab models, by Kafka's name, with its value as Kafka
    /// writes it (a limit that is off is `-1`), in Kafka's order. `partitions` is no config,
    /// and `segment.records` is the lab's alone: neither is here.
    pub fn kafka_configs(&self) -> [(&'static str, String); 10] {
        let unlimited = |v: Option<i64>| v.map_or("-1".to_string(), |v| v.to_string());
        [
            ("cleanup.policy", self.cleanup_policy.to_string()),
            ("retention.ms", unlimited(self.retention_ms)),
            (
                "retention.bytes",
                unlimited(self.retention_bytes.map(|b| i64::try_from(b).unwrap_or(i64::MAX))),
            ),
            ("segment.bytes", self.segment_bytes.to_string()),
            ("segment.ms", self.segment_ms.to_string()),
            ("delete.retention.ms", self.delete_retention_ms.to_string()),
            ("message.timestamp.type", self.message_timestamp_type.to_string()),
            ("min.insync.replicas", self.min_insync_replicas.to_string()),
            ("compression.type", self.compression_type.to_string()),
            ("max.message.bytes", self.max_message_bytes.to_string()),
        ]
    }

    /// The configs set to other than Kafka's default, as [`Self::kafka_configs`] writes them.
    pub fn kafka_overrides(&self) -> Vec<(&'static str, String)> {
        let default = Self::default().kafka_configs();
        self.kafka_configs()
            .into_iter()
            .zip(default)
            .filter(|(own, d)| own.1 != d.1)
            .map(|(own, _)| own)
            .collect()
    }

    pub fn segment_limits(&self) -> SegmentLimits {
        SegmentLimits {
            max_records: self.segment_records.unwrap_or(usize::MAX),
            // The in-memory segment indexes its arena with u32, so a segment stays under 4 GiB.
            max_bytes: self.segment_bytes.min(u32::MAX as usize / 2),
            max_age_ms: self.segment_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_defaults_are_no_overrides_and_each_setting_is_spelled_as_kafka_writes_it() {
        assert!(TopicConfig::default().kafka_overrides().is_empty());
        let c = TopicConfig {
            partitions: 3,
            retention_ms: None,
            retention_bytes: Some(1 << 20),
            segment_records: Some(4),
            cleanup_policy: CleanupPolicy::CompactDelete,
            compression_type: CompressionType::Zstd,
            message_timestamp_type: TimestampType::LogAppendTime,
            ..TopicConfig::default()
        };
        assert_eq!(
            c.kafka_overrides(),
            vec![
                ("cleanup.policy", "compact,delete".to_string()),
                ("retention.ms", "-1".to_string()),
                ("retention.bytes", "1048576".to_string()),
                ("message.timestamp.type", "LogAppendTime".to_string()),
                ("compression.type", "zstd".to_string()),
            ]
        );
    }
}

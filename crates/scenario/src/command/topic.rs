//! `topic NAME [partitions=N] [retention.ms=DUR] [retention.bytes=N] [segment.records=N]
//! [segment.bytes=N] [segment.ms=DUR] [cleanup.policy=delete|compact] [delete.retention.ms=DUR]
//! [message.timestamp.type=CreateTime|LogAppendTime] [min.insync.replicas=N]
//! [compression.type=producer|uncompressed|gzip|snappy|lz4|zstd] [max.message.bytes=N]`
//!
//! Creates a topic. Retention settings are `-1` for "forever" as in Kafka.
//! `message.timestamp.type` decides whether real clients' records keep their producer's
//! timestamp (`CreateTime`, Kafka's default) or carry the lab's time of the append.

use crate::error::ParseError;
use crate::token::{Args, Quoted};
use crate::units::{count, duration_ms};
use offsetlab_engine::clock::format_duration;
use offsetlab_engine::log::TopicConfig;
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateTopic {
    pub name: String,
    pub config: TopicConfig,
}

/// `-1` ("forever", "no limit") as `None`, anything else parsed.
pub(crate) fn forever_or<T>(v: &str, parse: impl Fn(&str) -> Result<T, String>) -> Result<Option<T>, String> {
    if v == "-1" {
        Ok(None)
    } else {
        parse(v).map(Some)
    }
}

impl CreateTopic {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let name = args.word("topic name")?;
        let mut config = TopicConfig::default();
        if let Some(p) = args.parsed("partitions", |v| count(v, 10_000))? {
            config.partitions = p as i32;
        }
        if let Some(r) = args.parsed("retention.ms", |v| forever_or(v, duration_ms))? {
            config.retention_ms = r;
        }
        if let Some(r) = args.parsed("retention.bytes", |v| forever_or(v, |v| count(v, u64::MAX)))? {
            config.retention_bytes = r;
        }
        if let Some(n) = args.parsed("segment.records", |v| count(v, u32::MAX.into()).and_then(nonzero))? {
            config.segment_records = Some(n as usize);
        }
        if let Some(n) = args.parsed("segment.bytes", |v| count(v, 1 << 30).and_then(nonzero))? {
            config.segment_bytes = n as usize;
        }
        if let Some(n) = args.parsed("segment.ms", |v| {
            duration_ms(v).and_then(|d| nonzero(d as u64).map(|_| d))
        })? {
            config.segment_ms = n;
        }
        if let Some(p) = args.parsed("cleanup.policy", offsetlab_engine::log::CleanupPolicy::from_list)? {
            config.cleanup_policy = p;
        }
        if let Some(ms) = args.parsed("delete.retention.ms", duration_ms)? {
            config.delete_retention_ms = ms;
        }
        if let Some(t) = args.parsed("message.timestamp.type", |v| v.parse())? {
            config.message_timestamp_type = t;
        }
        if let Some(n) = args.parsed("min.insync.replicas", min_insync)? {
            config.min_insync_replicas = n;
        }
        if let Some(c) = args.parsed("compression.type", |v| v.parse())? {
            config.compression_type = c;
        }
        if let Some(n) = args.parsed("max.message.bytes", max_message_bytes)? {
            config.max_message_bytes = n;
        }
        Ok(Self { name, config })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.create_topic(&self.name, self.config.clone())
    }
}

/// `min.insync.replicas`: at least 1, as Kafka requires.
/// `max.message.bytes`: at least a batch header (61 bytes), at most `i32::MAX` as in Kafka.
pub fn max_message_bytes(v: &str) -> Result<usize, String> {
    match count(v, i32::MAX as u64)? {
        n if n >= 61 => Ok(n as usize),
        _ => Err("max.message.bytes holds a batch header at least (61 bytes)".into()),
    }
}

pub(crate) fn min_insync(v: &str) -> Result<u32, String> {
    count(v, u32::MAX.into()).and_then(nonzero).map(|n| n as u32)
}

fn nonzero(n: u64) -> Result<u64, String> {
    if n == 0 {
        Err("must be at least 1".into())
    } else {
        Ok(n)
    }
}

impl fmt::Display for CreateTopic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = TopicConfig::default();
        let c = &self.config;
        write!(f, "topic {} partitions={}", Quoted(&self.name), c.partitions)?;
        if c.retention_ms != d.retention_ms {
            write!(
                f,
                " retention.ms={}",
                c.retention_ms.map_or("-1".into(), format_duration)
            )?;
        }
        if let Some(b) = c.retention_bytes {
            write!(f, " retention.bytes={b}")?;
        }
        if let Some(n) = c.segment_records {
            write!(f, " segment.records={n}")?;
        }
        if c.segment_bytes != d.segment_bytes {
            write!(f, " segment.bytes={}", c.segment_bytes)?;
        }
        if c.segment_ms != d.segment_ms {
            write!(f, " segment.ms={}", format_duration(c.segment_ms))?;
        }
        write!(f, " cleanup.policy={}", c.cleanup_policy)?;
        if c.delete_retention_ms != d.delete_retention_ms {
            write!(
                f,
                " delete.retention.ms={}",
                format_duration(c.delete_retention_ms)
            )?;
        }
        if c.message_timestamp_type != d.message_timestamp_type {
            write!(f, " message.timestamp.type={}", c.message_timestamp_type)?;
        }
        if c.min_insync_replicas != d.min_insync_replicas {
            write!(f, " min.insync.replicas={}", c.min_insync_replicas)?;
        }
        if c.compression_type != d.compression_type {
            write!(f, " compression.type={}", c.compression_type)?;
        }
        if c.max_message_bytes != d.max_message_bytes {
            write!(f, " max.message.bytes={}", c.max_message_bytes)?;
        }
        Ok(())
    }
}

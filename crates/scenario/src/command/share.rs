//! Share groups (KIP-932):
//! - `share-consumer NAME group=G topic=T [ack=implicit|explicit] [max-poll=N]
//!   [acquire-mode=batch-optimized|record-limit]` — a `KafkaShareConsumer` subscribing
//!   (`share.acknowledgement.mode`, `max.poll.records`, `share.acquire.mode`);
//! - `share-poll NAME` — `poll()`: acquires records (and, in implicit mode, accepts the previous
//!   poll's);
//! - `share-ack NAME [partition=P] [offsets=O,O…] accept|release|reject` — `acknowledge(record,
//!   type)` for each record (all it holds without `offsets`), then `commitSync()`;
//! - `alter-share-group GROUP [share.auto.offset.reset=latest|earliest]
//!   [share.record.lock.duration.ms=DUR] [share.delivery.count.limit=N]
//!   [share.partition.max.record.locks=N] [share.session.timeout.ms=DUR]` — the group configs.
//!
//! `process`, `commit`, `crash`, `close` and `restart` work on share consumers as on consumers.

use crate::error::ParseError;
use crate::token::{Args, Quoted};
use crate::units::{count, duration_ms};
use offsetlab_engine::clock::format_duration;
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::share::config::ShareGroupConfigChange;
use offsetlab_engine::share::{AcknowledgeType, AcquireMode, ShareConsumerConfig};
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartShareConsumer {
    pub config: ShareConsumerConfig,
}

impl StartShareConsumer {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let name = args.word("consumer name")?;
        let group = args.required("group")?;
        let topic = args.required("topic")?;
        let mut c = ShareConsumerConfig::new(&name, &group, &topic);
        if let Some(mode) = args.parsed("ack", |v| v.parse())? {
            c.acknowledgement_mode = mode;
        }
        if let Some(n) = args.parsed("max-poll", |v| count(v, 1_000_000))? {
            if n == 0 {
                return Err(ParseError::new("share-consumer: max-poll must be at least 1"));
            }
            c.max_poll_records = n as usize;
        }
        if let Some(mode) = args.parsed("acquire-mode", |v| v.parse())? {
            c.acquire_mode = mode;
        }
        Ok(Self { config: c })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.add_share_consumer(self.config.clone())
    }
}

impl fmt::Display for StartShareConsumer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.config;
        write!(
            f,
            "share-consumer {} group={} topic={} ack={} max-poll={}",
            Quoted(&c.name),
            Quoted(&c.group),
            Quoted(&c.topic),
            c.acknowledgement_mode,
            c.max_poll_records
        )?;
        // Kafka's default is left unsaid, as the lines written before the lab modelled it.
        if c.acquire_mode != AcquireMode::default() {
            write!(f, " acquire-mode={}", c.acquire_mode)?;
        }
        Ok(())
    }
}

one_name_command!(
    /// `share-poll NAME`: `ShareConsumer.poll()`.
    SharePoll, "share-poll", consumer: "consumer name", |lab, name| lab.share_poll(name)
);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareAck {
    pub consumer: String,
    pub partition: Option<i32>,
    /// `None`: every record the consumer holds (of `partition`, when given).
    pub offsets: Option<Vec<i64>>,
    pub ack: AcknowledgeType,
}

impl ShareAck {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let consumer = args.word("consumer name")?;
        let partition = args.parsed("partition", |v| count(v, 10_000).map(|p| p as i32))?;
        let offsets = args.parsed("offsets", |v| {
            v.split(',')
                .map(|o| count(o, i64::MAX as u64).map(|o| o as i64))
                .collect::<Result<Vec<i64>, String>>()
        })?;
        let word = args.word("acknowledge type (accept, release or reject)")?;
        let ack = word
            .parse()
            .map_err(|e: String| ParseError::new(format!("share-ack: {e}")))?;
        Ok(Self {
            consumer,
            partition,
            offsets,
            ack,
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        let c = lab.share_consumer(&self.consumer)?;
        let held = |tp: &TopicPartition| self.partition.is_none_or(|p| tp.partition == p);
        let records: Vec<(TopicPartition, i64)> = match &self.offsets {
            None => c
                .held
                .iter()
                .filter(|h| held(&h.tp))
                .map(|h| (h.tp.clone(), h.offset))
                .collect(),
            Some(offsets) => {
                let partition = match self.partition {
                    Some(p) => p,
                    None => {
                        let parts: std::collections::BTreeSet<i32> =
                            c.held.iter().map(|h| h.tp.partition).collect();
                        match parts.len() {
                            0 | 1 => parts.into_iter().next().unwrap_or(0),
                            _ => {
                                return Err(LabError::InvalidArgument(format!(
                                    "share-ack: {} holds records of several partitions: add partition=P",
                                    self.consumer
                                )))
                            }
                        }
                    }
                };
                let tp = TopicPartition::new(c.config.topic.clone(), partition);
                offsets.iter().map(|&o| (tp.clone(), o)).collect()
            }
        };
        lab.share_acknowledge(&self.consumer, Some(&records), self.ack)
            .map(|_| ())
    }
}

impl fmt::Display for ShareAck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "share-ack {}", Quoted(&self.consumer))?;
        if let Some(p) = self.partition {
            write!(f, " partition={p}")?;
        }
        if let Some(o) = &self.offsets {
            let list: Vec<String> = o.iter().map(i64::to_string).collect();
            write!(f, " offsets={}", list.join(","))?;
        }
        write!(f, " {}", self.ack)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterShareGroup {
    pub group: String,
    pub change: ShareGroupConfigChange,
}

impl AlterShareGroup {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let group = args.word("group id")?;
        let change = ShareGroupConfigChange {
            auto_offset_reset: args.parsed("share.auto.offset.reset", |v| v.parse())?,
            record_lock_duration_ms: args.parsed("share.record.lock.duration.ms", duration_ms)?,
            delivery_count_limit: args.parsed("share.delivery.count.limit", |v| {
                count(v, u64::from(u16::MAX)).map(|n| n as u16)
            })?,
            partition_max_record_locks: args.parsed("share.partition.max.record.locks", |v| {
                count(v, u64::from(u32::MAX)).map(|n| n as u32)
            })?,
            session_timeout_ms: args.parsed("share.session.timeout.ms", duration_ms)?,
        };
        if change.is_empty() {
            return Err(ParseError::new(
                "alter-share-group: nothing to change (share.auto.offset.reset=…, share.record.lock.duration.ms=…, share.delivery.count.limit=…, share.partition.max.record.locks=…, share.session.timeout.ms=…)",
            ));
        }
        Ok(Self { group, change })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.alter_share_group(&self.group, &self.change)
    }
}

impl fmt::Display for AlterShareGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.change;
        write!(f, "alter-share-group {}", Quoted(&self.group))?;
        if let Some(r) = c.auto_offset_reset {
            write!(f, " share.auto.offset.reset={r}")?;
        }
        if let Some(ms) = c.record_lock_duration_ms {
            write!(f, " share.record.lock.duration.ms={}", format_duration(ms))?;
        }
        if let Some(n) = c.delivery_count_limit {
            write!(f, " share.delivery.count.limit={n}")?;
        }
        if let Some(n) = c.partition_max_record_locks {
            write!(f, " share.partition.max.record.locks={n}")?;
        }
        if let Some(ms) = c.session_timeout_ms {
            write!(f, " share.session.timeout.ms={}", format_duration(ms))?;
        }
        Ok(())
    }
}

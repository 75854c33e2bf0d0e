//! A share consumer: the application process behind a `KafkaShareConsumer` (or librdkafka's
//! share consumer), and what a crash wipes — the records it holds, processed or not.

use crate::consumer::ConsumerState;
use crate::record::{Offset, TopicPartition};
use serde::{Deserialize, Serialize};

/// `share.acknowledgement.mode` (a client setting, unlike the group's configs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AcknowledgementMode {
    /// The next `poll()` (or `commitSync()`) accepts every record the previous poll handed
    /// over — processed or not. Like the Java consumer's auto-commit, it is at-least-once
    /// only while each poll's records are processed before the next poll.
    #[default]
    Implicit,
    /// The application acknowledges each record (`acknowledge(record, type)`) and commits the
    /// acknowledgements.
    Explicit,
}

spelled!(AcknowledgementMode, "share.acknowledgement.mode", {
    Implicit => "implicit",
    Explicit => "explicit",
});

/// `share.acquire.mode` (KIP-1206, a client setting sent in each ShareFetch since v2): how
/// strictly a fetch keeps to `max.poll.records`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AcquireMode {
    /// Kafka's default: the fetch acquires whole producer batches — the batch its last record
    /// falls in is taken to its end, past `max.poll.records`. Eight records produced in one
    /// batch all go to the first member that fetches, whatever its `max.poll.records`.
    #[default]
    BatchOptimized,
    /// At most `max.poll.records` records per fetch, a batch split if need be.
    RecordLimit,
}

spelled!(AcquireMode, "share.acquire.mode", {
    BatchOptimized => "batch-optimized",
    RecordLimit => "record-limit",
});

/// Kafka's default `max.poll.records`, which a share consumer honours too.
pub const DEFAULT_MAX_POLL_RECORDS: usize = 500;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareConsumerConfig {
    pub name: String,
    pub group: String,
    pub topic: String,
    pub acknowledgement_mode: AcknowledgementMode,
    pub max_poll_records: usize,
    /// Absent from a history written before the lab modelled it: Kafka's default.
    #[serde(default)]
    pub acquire_mode: AcquireMode,
}

impl ShareConsumerConfig {
    pub fn new(name: &str, group: &str, topic: &str) -> Self {
        Self {
            name: name.to_string(),
            group: group.to_string(),
            topic: topic.to_string(),
            acknowledgement_mode: AcknowledgementMode::Implicit,
            max_poll_records: DEFAULT_MAX_POLL_RECORDS,
            acquire_mode: AcquireMode::BatchOptimized,
        }
    }
}

/// A record a poll handed to the application and that it has not acknowledged yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldRecord {
    pub tp: TopicPartition,
    pub offset: Offset,
    /// Its delivery count when it was handed over (`ConsumerRecord.deliveryCount()`).
    pub delivery_count: u16,
    pub processed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareConsumer {
    pub config: ShareConsumerConfig,
    pub incarnation: u32,
    pub state: ConsumerState,
    /// What its polls handed over and it has not acknowledged, in the order handed over.
    pub held: Vec<HeldRecord>,
    /// What its last poll handed over.
    pub last_poll: Vec<(TopicPartition, Offset)>,
}

impl ShareConsumer {
    pub fn new(config: ShareConsumerConfig) -> Self {
        Self {
            config,
            incarnation: 1,
            state: ConsumerState::Running,
            held: Vec::new(),
            last_poll: Vec::new(),
        }
    }

    /// Its member id now, `s1#2` for its second incarnation.
    pub fn member_id(&self) -> String {
        format!("{}#{}", self.config.name, self.incarnation)
    }

    pub fn is_running(&self) -> bool {
        self.state == ConsumerState::Running
    }
}

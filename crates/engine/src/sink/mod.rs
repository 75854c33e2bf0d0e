//! Sinks: where a group's processed records end up.
//!
//! The sink is the consumer application's database. How it writes decides what a redelivery
//! costs: an [`SinkKind::Append`] ledger turns every redelivery into an extra row, an
//! [`SinkKind::Upsert`] table keyed by order id converges, and a [`SinkKind::Transactional`]
//! sink stores the group's next offsets in the same transaction as the rows, so output and
//! progress can never disagree and a restarted consumer seeks to where the sink says.
//!
//! One trait, several implementations: [`memory::MemorySink`] here (fast, for the explorer)
//! and a SQLite sink in the `offsetlab-sqlite` crate. Both pass [`conformance`].

pub mod memory;

#[cfg(any(test, feature = "testkit"))]
pub mod conformance;

use crate::clock::Millis;
use crate::delivery::DeliveryReason;
use crate::record::{Offset, RecordBytes, TopicPartition};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SinkKind {
    Append,
    Upsert,
    Transactional,
    /// Kafka transactions: the consumer is a read-process-write application whose output goes
    /// to an output topic inside a transaction that also carries its consumed offsets. Its
    /// rows are the output as a `read_committed` reader sees it: written when a transaction
    /// commits, never for an aborted one.
    #[serde(rename = "kafka-tx")]
    KafkaTx,
}

impl SinkKind {
    /// The database sinks: what the explorer's matrix crosses with every commit strategy.
    pub const DATABASES: [SinkKind; 3] = [Self::Append, Self::Upsert, Self::Transactional];

    pub fn explanation(self) -> &'static str {
        match self {
            Self::Append => "an append-only ledger: every write is a new row, so a redelivered record becomes a duplicate row",
            Self::Upsert => "a table keyed by order id: a redelivered record rewrites its row, so replays converge",
            Self::Transactional => "rows and the group's offsets commit in one database transaction; on start the consumer seeks to the offsets in the sink",
            Self::KafkaTx => "Kafka transactions: output records and the consumed offsets commit or abort together; read_committed readers never see aborted output",
        }
    }
}

spelled!(SinkKind, "sink", {
    Append => "append",
    Upsert => "upsert",
    Transactional => "transactional",
    KafkaTx => "kafka-tx",
});

/// One processed record on its way into the sink.
#[derive(Debug, Clone, Copy)]
pub struct SinkWrite<'a> {
    pub tp: &'a TopicPartition,
    pub offset: Offset,
    /// The order id (the record key), any bytes (empty for a null key).
    pub key: &'a [u8],
    pub value: &'a [u8],
    pub consumer: &'a str,
    pub incarnation: u32,
    /// The group generation the writer belongs to: a transactional sink fences older ones.
    pub generation: i32,
    pub reason: DeliveryReason,
    pub at: Millis,
}

/// What a sink did with a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    Applied,
    /// A transactional sink refused it: it already holds progress past this offset, or
    /// progress written by a newer generation (the writer is a zombie).
    Fenced {
        next_offset: Offset,
        generation: i32,
    },
}

/// A row as the sink holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SinkRow {
    /// Insertion order, from 1.
    pub row_id: u64,
    /// Any bytes: written as text when UTF-8, base64 otherwise ([`RecordBytes`]).
    pub key: RecordBytes,
    pub topic: String,
    pub partition: i32,
    /// The source record's offset (for an upsert row: of the last write).
    pub offset: Offset,
    pub value: RecordBytes,
    pub consumer: String,
    pub incarnation: u32,
    pub reason: DeliveryReason,
    pub applied_at: Millis,
    /// How many writes this row has absorbed (1 for an append row; grows on upsert).
    pub writes: u32,
    /// True when an earlier row already holds the same source record: a duplicate row.
    pub duplicate: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SinkStats {
    pub rows: u64,
    /// Distinct order ids written.
    pub distinct_keys: u64,
    /// Rows beyond one per source record: `rows − distinct (topic, partition, offset)`.
    pub duplicate_rows: u64,
}

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SinkError {
    #[error("sink backend error: {0}")]
    Backend(String),
    /// The database could not grow: its disk is full.
    #[error("sink backend error: {0}")]
    Full(String),
}

pub trait Sink: Send {
    fn kind(&self) -> SinkKind;

    /// Applies one processed record. A transactional sink stores the row and the partition's
    /// next offset (`offset + 1`, with the writer's generation) in one transaction, and refuses
    /// a write below its stored offset or from an older generation: that is what keeps a zombie
    /// and a new owner from both applying the same record.
    fn apply(&mut self, write: &SinkWrite<'_>) -> Result<WriteOutcome, SinkError>;

    /// The next offset to read for `tp` as stored in the sink (transactional sinks only).
    fn stored_offset(&self, tp: &TopicPartition) -> Result<Option<Offset>, SinkError>;

    fn stats(&self) -> Result<SinkStats, SinkError>;

    /// Rows in insertion order, `limit` of them starting at index `from`.
    fn rows(&self, from: usize, limit: usize) -> Result<Vec<SinkRow>, SinkError>;
}

/// Opens the sink of a group. A running lab uses SQLite files; the explorer uses memory.
pub trait SinkFactory: Send {
    fn open(&mut self, group: &str, kind: SinkKind) -> Result<Box<dyn Sink>, SinkError>;

    /// Opens a group's existing sink with its rows (a lab restored after a restart). A store
    /// that keeps nothing across restarts opens an empty one.
    fn reopen(&mut self, group: &str, kind: SinkKind) -> Result<Box<dyn Sink>, SinkError> {
        self.open(group, kind)
    }

    /// A short description for the narrative ("in memory", "SQLite at ./data/sinks.db").
    fn describe(&self) -> String;
}

/// Opens [`memory::MemorySink`]s.
#[derive(Debug, Default, Clone, Copy)]
pub struct MemorySinks;

impl SinkFactory for MemorySinks {
    fn open(&mut self, _group: &str, kind: SinkKind) -> Result<Box<dyn Sink>, SinkError> {
        Ok(Box::new(memory::MemorySink::new(kind)))
    }

    fn describe(&self) -> String {
        "in memory".to_string()
    }
}

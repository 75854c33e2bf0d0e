//! Kafka transactions: the transactional producer, commit and abort markers, the last stable
//! offset, and the two isolation levels a consumer reads with.
//!
//! A transactional producer (`transactional.id`, a producer id and an epoch) writes records to
//! output partitions as part of an open transaction. Those records are in the log at once — they
//! take offsets, the log end moves — but a `read_committed` consumer may not read past the
//! *last stable offset* (LSO): the first offset of the oldest transaction still open on that
//! partition. The transaction ends with a *control record* in every partition it touched: a
//! COMMIT marker makes its records visible, an ABORT marker tells `read_committed` readers to
//! drop them. Markers take an offset too, which is why a transactional topic has offsets no
//! application ever sees. `read_uncommitted` (the Java client's default) reads up to the high watermark
//! and hands over records of open and aborted transactions alike.
//!
//! The per-partition bookkeeping lives beside the log, as Kafka keeps its producer state
//! snapshot and `.txnindex` files beside the segments: [`PartitionTxns`].

use crate::clock::Millis;
use crate::delivery::DeliveryReason;
use crate::record::{Offset, TopicPartition};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

/// The Java producer's default `transaction.timeout.ms`: one minute.
pub const DEFAULT_TRANSACTION_TIMEOUT_MS: Millis = 60_000;

/// `isolation.level`: what a consumer may read of transactional output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum IsolationLevel {
    /// The Java client's default (librdkafka defaults to `read_committed`): everything up to the
    /// high watermark, aborted records included.
    #[default]
    #[serde(rename = "read_uncommitted")]
    ReadUncommitted,
    /// Only committed records, and nothing past the last stable offset.
    #[serde(rename = "read_committed")]
    ReadCommitted,
}

impl IsolationLevel {
    pub fn name(self) -> &'static str {
        match self {
            Self::ReadUncommitted => "read_uncommitted",
            Self::ReadCommitted => "read_committed",
        }
    }
}

impl fmt::Display for IsolationLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for IsolationLevel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "read_uncommitted" | "read-uncommitted" => Ok(Self::ReadUncommitted),
            "read_committed" | "read-committed" => Ok(Self::ReadCommitted),
            other => Err(format!(
                "unknown isolation level '{other}' (expected read_committed or read_uncommitted)"
            )),
        }
    }
}

/// The type of a control record, as its key encodes it on the wire (version 0, then the type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ControlType {
    Abort,
    Commit,
}

impl ControlType {
    /// The control record key: int16 version 0, int16 type (0 = ABORT, 1 = COMMIT).
    pub fn key(self) -> [u8; 4] {
        match self {
            Self::Abort => [0, 0, 0, 0],
            Self::Commit => [0, 0, 0, 1],
        }
    }

    pub fn from_key(key: &[u8]) -> Option<Self> {
        match key {
            [0, 0, 0, 0] => Some(Self::Abort),
            [0, 0, 0, 1] => Some(Self::Commit),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Abort => "ABORT",
            Self::Commit => "COMMIT",
        }
    }
}

/// A transaction that ended in an abort, on one partition: what Kafka's `.txnindex` records and
/// what a fetch response lists so a `read_committed` client can drop the records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: Offset,
    /// The offset of the ABORT marker.
    pub marker_offset: Offset,
    /// The data records the transaction wrote here (all between the two offsets above).
    pub offsets: Vec<Offset>,
}

/// One partition's transaction state.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PartitionTxns {
    /// Open transactions: producer id → offsets of the records it wrote here, ascending.
    open: BTreeMap<i64, Vec<Offset>>,
    aborted: Vec<AbortedTxn>,
    /// Data records of aborted transactions, for constant-time lookups while fetching.
    aborted_offsets: BTreeSet<Offset>,
    /// Offsets of the control records.
    markers: BTreeMap<Offset, ControlType>,
}

/// A partition no transaction ever wrote to (`__consumer_offsets`, as the lab keeps it).
pub static NO_TRANSACTIONS: PartitionTxns = PartitionTxns {
    open: BTreeMap::new(),
    aborted: Vec::new(),
    aborted_offsets: BTreeSet::new(),
    markers: BTreeMap::new(),
};

impl PartitionTxns {
    /// The last stable offset: the first offset of the oldest open transaction, or the high
    /// watermark (here, the log end) when none is open.
    pub fn last_stable_offset(&self, high_watermark: Offset) -> Offset {
        self.open
            .values()
            .filter_map(|o| o.first().copied())
            .min()
            .map_or(high_watermark, |first| first.min(high_watermark))
    }

    pub fn record_open(&mut self, producer_id: i64, offset: Offset) {
        self.open.entry(producer_id).or_default().push(offset);
    }

    /// Ends `producer_id`'s open transaction here with a marker at `marker_offset`.
    pub fn end(&mut self, producer_id: i64, control: ControlType, marker_offset: Offset) {
        let offsets = self.open.remove(&producer_id).unwrap_or_default();
        self.markers.insert(marker_offset, control);
        if control == ControlType::Abort && !offsets.is_empty() {
            self.aborted_offsets.extend(offsets.iter().copied());
            self.aborted.push(AbortedTxn {
                producer_id,
                first_offset: offsets[0],
                marker_offset,
                offsets,
            });
        }
    }

    pub fn is_aborted(&self, offset: Offset) -> bool {
        self.aborted_offsets.contains(&offset)
    }

    pub fn is_open(&self, offset: Offset) -> bool {
        self.open.values().any(|o| o.binary_search(&offset).is_ok())
    }

    pub fn marker(&self, offset: Offset) -> Option<ControlType> {
        self.markers.get(&offset).copied()
    }

    pub fn markers(&self) -> &BTreeMap<Offset, ControlType> {
        &self.markers
    }

    pub fn aborted(&self) -> &[AbortedTxn] {
        &self.aborted
    }

    pub fn aborted_offsets(&self) -> &BTreeSet<Offset> {
        &self.aborted_offsets
    }

    /// Producer ids with a transaction open here, with their first offset.
    pub fn open_transactions(&self) -> Vec<(i64, Offset)> {
        self.open
            .iter()
            .filter_map(|(p, o)| o.first().map(|f| (*p, *f)))
            .collect()
    }

    /// Offsets an application reading with `isolation` is never handed: every marker, and with
    /// `read_committed` every aborted record. The audit leaves them out of "lost".
    pub fn hidden(&self, isolation: IsolationLevel) -> BTreeSet<Offset> {
        let mut hidden: BTreeSet<Offset> = self.markers.keys().copied().collect();
        if isolation == IsolationLevel::ReadCommitted {
            hidden.extend(self.aborted_offsets.iter().copied());
        }
        hidden
    }
}

/// A record the read-process-write application produced inside its open transaction, with the
/// input record it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnWrite {
    pub output: TopicPartition,
    pub output_offset: Offset,
    pub source: TopicPartition,
    pub source_offset: Offset,
    pub key: crate::record::RecordBytes,
    pub value: crate::record::RecordBytes,
    pub incarnation: u32,
    pub reason: DeliveryReason,
}

/// The transaction a producer has open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenTxn {
    pub started_at: Millis,
    pub writes: Vec<TxnWrite>,
    /// Offsets a real client's transaction will commit with it (TxnOffsetCommit): group,
    /// partition, offset.
    #[serde(default)]
    pub offsets: Vec<(String, TopicPartition, Offset)>,
    /// What a TxnOffsetCommit sent along with some of those offsets, committed with them as an
    /// OffsetCommit's are: group, partition, leader epoch (−1 for none), metadata.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub offset_details: Vec<(String, TopicPartition, i32, String)>,
}

impl OpenTxn {
    /// The output partitions the transaction added (AddPartitionsToTxn), in first-write order.
    pub fn partitions(&self) -> Vec<TopicPartition> {
        let mut out: Vec<TopicPartition> = Vec::new();
        for w in &self.writes {
            if !out.contains(&w.output) {
                out.push(w.output.clone());
            }
        }
        out
    }
}

/// A transactional producer as its transaction coordinator knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransactionalProducer {
    pub transactional_id: String,
    pub producer_id: i64,
    /// Bumped by every `initTransactions` and by a coordinator abort on timeout: a producer
    /// with an older epoch is fenced.
    pub epoch: i16,
    pub timeout_ms: Millis,
    pub ongoing: Option<OpenTxn>,
    /// Why the producer the application holds is fenced (its next call fails), if it is.
    pub fenced: Option<String>,
    pub committed: u64,
    pub aborted: u64,
    /// A real Kafka client's producer (through the listener), not a lab consumer's.
    #[serde(default)]
    pub external: bool,
}

impl TransactionalProducer {
    pub fn new(transactional_id: &str, producer_id: i64, timeout_ms: Millis) -> Self {
        Self {
            transactional_id: transactional_id.to_string(),
            producer_id,
            epoch: 0,
            timeout_ms,
            ongoing: None,
            fenced: None,
            committed: 0,
            aborted: 0,
            external: false,
        }
    }

    /// When the coordinator aborts the open transaction on its own.
    pub fn expires_at(&self) -> Option<Millis> {
        self.ongoing
            .as_ref()
            .map(|t| t.started_at.saturating_add(self.timeout_ms))
    }

    /// The lab's summary of the producer's state: `Ongoing` (a transaction is open), `TimedOut`
    /// (the coordinator aborted it; the producer's next call fails), `Ready` (none open).
    pub fn state(&self) -> &'static str {
        match (&self.ongoing, &self.fenced) {
            (Some(_), _) => "Ongoing",
            (None, Some(_)) => "TimedOut",
            (None, None) => "Ready",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lso_is_the_first_offset_of_the_oldest_open_transaction() {
        let mut t = PartitionTxns::default();
        assert_eq!(t.last_stable_offset(10), 10);
        t.record_open(7, 4);
        t.record_open(7, 6);
        t.record_open(9, 5);
        assert_eq!(t.last_stable_offset(10), 4);
        t.end(7, ControlType::Commit, 10);
        assert_eq!(t.last_stable_offset(11), 5);
        t.end(9, ControlType::Abort, 11);
        assert_eq!(t.last_stable_offset(12), 12);
        assert!(t.is_aborted(5) && !t.is_aborted(4));
        assert_eq!(t.aborted()[0].first_offset, 5);
        assert_eq!(
            t.hidden(IsolationLevel::ReadCommitted)
                .into_iter()
                .collect::<Vec<_>>(),
            vec![5, 10, 11]
        );
        assert_eq!(
            t.hidden(IsolationLevel::ReadUncommitted)
                .into_iter()
                .collect::<Vec<_>>(),
            vec![10, 11]
        );
    }

    #[test]
    fn control_keys_round_trip() {
        for c in [ControlType::Abort, ControlType::Commit] {
            assert_eq!(ControlType::from_key(&c.key()), Some(c));
        }
        assert_eq!(ControlType::from_key(b"x"), None);
    }
}

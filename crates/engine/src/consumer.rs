//! The consumer: client-side state that a crash wipes out.
//!
//! A consumer's *position* (the next offset poll will fetch) lives in its memory and moves with
//! every poll; the group's *committed* offset lives in `__consumer_offsets` and moves only with
//! a commit. Everything in this module is the first kind: a `crash` clears it, a `restart`
//! rebuilds it from the committed offsets (or the sink's, or `auto.offset.reset`).

use crate::clock::Millis;
use crate::delivery::DeliveryReason;
use crate::group::{GroupProtocol, ServerAssignor};
use crate::record::{Offset, Record, TopicPartition};
use crate::sink::SinkKind;
use crate::strategy::{AutoOffsetReset, CommitStrategy};
use crate::txn::{IsolationLevel, DEFAULT_TRANSACTION_TIMEOUT_MS};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

/// Kafka's defaults.
pub const DEFAULT_AUTO_COMMIT_INTERVAL_MS: Millis = 5_000;
pub const DEFAULT_MAX_POLL_RECORDS: usize = 500;
pub const DEFAULT_SESSION_TIMEOUT_MS: Millis = 45_000;
/// `max.poll.interval.ms`: a member that does not poll for this long leaves its group.
pub const DEFAULT_MAX_POLL_INTERVAL_MS: Millis = 300_000;
/// How long a `commitAsync` takes to land: one round trip to the coordinator.
pub const DEFAULT_ASYNC_COMMIT_LATENCY_MS: Millis = 100;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerConfig {
    pub name: String,
    pub group: String,
    pub topic: String,
    pub strategy: CommitStrategy,
    pub auto_commit_interval_ms: Millis,
    pub max_poll_records: usize,
    pub sink: SinkKind,
    pub auto_offset_reset: AutoOffsetReset,
    pub session_timeout_ms: Millis,
    pub max_poll_interval_ms: Millis,
    /// `group.instance.id`: static membership. A restart within the session timeout takes the
    /// member's partitions back without a rebalance; a close sends no LeaveGroup.
    pub group_instance_id: Option<String>,
    /// `partition.assignment.strategy`.
    pub assignor: Assignor,
    /// Whether the revoke hook of a manual strategy commits what was processed (the usual
    /// `onPartitionsRevoked` → `commitSync`). Auto-commit always commits in the hook.
    pub commit_on_revoke: bool,
    pub async_commit_latency_ms: Millis,
    /// `isolation.level`: whether records of open and aborted transactions are handed over.
    pub isolation: IsolationLevel,
    /// With `sink=kafka-tx`: the topic the read-process-write application produces to, inside
    /// transactions whose `transactional.id` is the consumer's name.
    pub output: Option<String>,
    /// `transaction.timeout.ms` of that producer.
    pub transaction_timeout_ms: Millis,
    /// `group.protocol`: classic (JoinGroup/SyncGroup) or Kafka 4's consumer protocol (KIP-848).
    #[serde(default)]
    pub group_protocol: GroupProtocol,
    /// `group.remote.assignor`: the coordinator's assignor a consumer-protocol member asks for.
    #[serde(default)]
    pub remote_assignor: ServerAssignor,
}

impl ConsumerConfig {
    pub fn new(name: &str, group: &str, topic: &str) -> Self {
        Self {
            name: name.to_string(),
            group: group.to_string(),
            topic: topic.to_string(),
            strategy: CommitStrategy::AutoTimer,
            auto_commit_interval_ms: DEFAULT_AUTO_COMMIT_INTERVAL_MS,
            max_poll_records: DEFAULT_MAX_POLL_RECORDS,
            sink: SinkKind::Append,
            auto_offset_reset: AutoOffsetReset::Latest,
            session_timeout_ms: DEFAULT_SESSION_TIMEOUT_MS,
            max_poll_interval_ms: DEFAULT_MAX_POLL_INTERVAL_MS,
            group_instance_id: None,
            assignor: Assignor::Range,
            commit_on_revoke: true,
            async_commit_latency_ms: DEFAULT_ASYNC_COMMIT_LATENCY_MS,
            isolation: IsolationLevel::ReadUncommitted,
            output: None,
            transaction_timeout_ms: DEFAULT_TRANSACTION_TIMEOUT_MS,
            group_protocol: GroupProtocol::Classic,
            remote_assignor: ServerAssignor::Uniform,
        }
    }

    /// Offsets of a transactional sink live in the sink; the strategy's Kafka commits are off.
    pub fn commits_to_kafka(&self) -> bool {
        self.sink != SinkKind::Transactional
    }

    /// A read-process-write application with Kafka transactions: its commits are transaction
    /// commits, with the offsets sent to the transaction.
    pub fn is_transactional_producer(&self) -> bool {
        self.sink == SinkKind::KafkaTx
    }
}

/// `partition.assignment.strategy`: how the group hands out partitions, and how it rebalances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Assignor {
    /// `RangeAssignor`, eager protocol: every rebalance revokes every partition.
    #[default]
    Range,
    /// `CooperativeStickyAssignor`, incremental protocol: members keep what they can, and only
    /// the partitions that move stop.
    CooperativeSticky,
}

spelled!(Assignor, "assignor", { Range => "range", CooperativeSticky => "cooperative-sticky" });

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum ConsumerState {
    Running,
    /// Killed without a LeaveGroup: the group still counts it as a member until its session
    /// times out.
    Crashed {
        at: Millis,
    },
    /// Left the group gracefully.
    Closed,
    /// Stopped by an error the application did not handle (`auto.offset.reset=none`).
    Failed {
        error: String,
    },
}

impl ConsumerState {
    pub fn label(&self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Crashed { .. } => "crashed",
            Self::Closed => "closed",
            Self::Failed { .. } => "failed",
        }
    }
}

/// Where a partition's fetch position came from; it decides how a repeat delivery is labelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PositionOrigin {
    /// Set when the partition was assigned (from the committed offset, the sink's, or
    /// `auto.offset.reset`); records read again from here are repeats of this kind, named by
    /// why the partition changed hands.
    Assigned(DeliveryReason),
    /// Moved by `auto.offset.reset` because the position fell out of the log's range.
    OutOfRange,
    /// From a `seek`: what it re-reads is a deliberate replay.
    Seek,
}

impl PositionOrigin {
    /// The reason a record that was applied before is applied again from this position.
    pub fn repeat_reason(self) -> DeliveryReason {
        match self {
            Self::Assigned(r) => r,
            Self::OutOfRange => DeliveryReason::RestartRedelivery,
            Self::Seek => DeliveryReason::Replay,
        }
    }
}

/// Per assigned partition: the fetch position and the offsets the strategy tracks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchState {
    pub position: Offset,
    pub origin: PositionOrigin,
    /// librdkafka's offset store: the offset after the last record handed to the application.
    pub stored: Option<Offset>,
    /// The offset after the last record the application finished processing.
    pub processed: Option<Offset>,
}

/// A record handed to the application by poll and not processed yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InFlight {
    pub tp: TopicPartition,
    pub record: Record,
    /// The last record of its poll's batch (manual-batch commits after it).
    pub last_of_batch: bool,
}

/// A `commitAsync` on its way to the coordinator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingCommit {
    pub lands_at: Millis,
    pub offsets: Vec<(TopicPartition, Offset)>,
    pub generation: i32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Consumer {
    pub config: ConsumerConfig,
    pub state: ConsumerState,
    /// 1 for the first process, +1 per restart.
    pub incarnation: u32,
    /// The group generation this incarnation last joined.
    pub generation: i32,
    #[serde(with = "crate::serde_pairs")]
    pub assignment: BTreeMap<TopicPartition, FetchState>,
    pub in_flight: VecDeque<InFlight>,
    pub pending_async: Vec<PendingCommit>,
    /// auto-timer: when the commit timer fires next. auto-poll: the deadline poll checks.
    pub next_auto_commit: Option<Millis>,
    /// Round-robin cursor over assigned partitions for fairness across polls.
    pub(crate) poll_cursor: usize,
    /// When the application last called poll (or joined): `max.poll.interval.ms` counts from here.
    pub last_poll_at: Millis,
    /// The records the last poll handed over, in the order it handed them (none when it
    /// returned nothing): what the application was given, processed since or not.
    #[serde(default)]
    pub last_poll: Vec<(TopicPartition, Offset)>,
    /// The error the next `poll()` throws: `auto.offset.reset=none` found no offset to start an
    /// assigned partition from (Java's NoOffsetForPartitionException is thrown from poll, where
    /// positions are resolved; librdkafka hands an ERR__AUTO_OFFSET_RESET event to the
    /// application with its messages).
    #[serde(default)]
    pub pending_error: Option<String>,
    /// Consumer protocol: partitions the coordinator asked this member to revoke; its next
    /// `poll()` runs the revoke callback for them and the heartbeat after acknowledges it.
    #[serde(default)]
    pub revoking: std::collections::BTreeSet<TopicPartition>,
}

impl Consumer {
    pub fn new(config: ConsumerConfig) -> Self {
        Self {
            config,
            state: ConsumerState::Running,
            incarnation: 1,
            generation: 0,
            assignment: BTreeMap::new(),
            in_flight: VecDeque::new(),
            pending_async: Vec::new(),
            next_auto_commit: None,
            poll_cursor: 0,
            last_poll_at: 0,
            last_poll: Vec::new(),
            pending_error: None,
            revoking: Default::default(),
        }
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// `c1#2`: the consumer and its incarnation.
    pub fn member_id(&self) -> String {
        format!("{}#{}", self.config.name, self.incarnation)
    }

    pub fn is_running(&self) -> bool {
        self.state == ConsumerState::Running
    }

    /// Forgets everything a process holds in memory.
    pub(crate) fn wipe_memory(&mut self) {
        self.assignment.clear();
        self.in_flight.clear();
        self.pending_async.clear();
        self.next_auto_commit = None;
        self.poll_cursor = 0;
        self.last_poll.clear();
        self.pending_error = None;
        self.revoking.clear();
    }

    /// In-flight records of `tp` below `offset`: what a commit up to `offset` would skip if the
    /// consumer died now.
    pub fn unprocessed_below(&self, tp: &TopicPartition, offset: Offset) -> usize {
        self.in_flight
            .iter()
            .filter(|f| &f.tp == tp && f.record.offset < offset)
            .count()
    }
}

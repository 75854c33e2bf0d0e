//! [`Lab`]: the whole simulated world — topics, the group coordinator, consumers, sinks, the
//! clock and the narrative — and every operation a scenario can perform on it.
//!
//! Each operation validates its input before it touches anything, so an operation that returns
//! an error has changed nothing. The operations are split by concern:
//! [`topics`](self) (create, produce), `membership` (join, rebalance, crash, restart, close),
//! `consume` (poll, process, commit, seek), `time` (tick and the timers it fires),
//! `reset` (`kafka-consumer-groups --reset-offsets`) and `view` (the figures).

mod commit;
mod consume;
mod consumer_group_view;
mod consumer_protocol;
mod deletion;
mod external;
mod external_consumer_group;
mod group_metadata;
mod lifecycle;
mod membership;
mod reset;
mod rewind;
mod share;
mod share_clients;
mod share_offsets;
mod share_timers;
mod share_view;
mod snapshot;
mod time;
mod topics;
mod transactions;
mod truncation;
mod view;

pub use consume::SeekTarget;
pub use consumer_group_view::{ConsumerGroupMemberView, ConsumerGroupView};
pub use reset::{ResetPlan, ResetRow, ResetSpec};
pub use share_view::{
    HeldRecordView, ShareAuditView, ShareConsumerView, ShareGroupView, ShareMemberView, SharePartitionView,
    ShareRecordView, MAX_VIEW_COMPLETED,
};
pub use snapshot::{LabChanges, LabSnapshot, SNAPSHOT_VERSION};
pub use topics::{
    sent_batch_matches, BatchPacking, ProduceSpec, SentHeader, SentRecord, MAX_PARTITIONS, MAX_SEND_RECORDS,
};
pub use truncation::TailLoss;
pub use view::{GroupView, LabView, PartitionView, SinkView, TopicView};

use crate::clock::{Clock, Millis};
use crate::consumer::Consumer;
use crate::error::LabError;
use crate::group::Group;
use crate::log::{LogStore, MemoryStore, PartitionLog, TopicConfig};
use crate::narrative::{EventKind, Narrative};
use crate::offsets::OffsetStore;
use crate::record::{Offset, TopicPartition};
use crate::sink::{MemorySinks, SinkFactory};
use crate::tracked::Tracked;
use crate::txn::{PartitionTxns, TransactionalProducer};
use std::collections::{BTreeMap, HashMap};

/// A topic: its config and one log per partition.
pub struct Topic {
    pub name: String,
    /// Its topic id (KIP-516): 128 bits that tell this topic from an earlier one of the same name
    /// — a client that names topics by id (Fetch v13+) is never served a recreated topic's log.
    /// Derived from the name and the lab's count of topics created, so a replay gives the same
    /// ids.
    pub id: [u8; 16],
    pub config: TopicConfig,
    pub partitions: Vec<Box<dyn PartitionLog>>,
    /// Orders created so far by `produce` without a key (`o-1`, `o-2`, …).
    pub(crate) orders_created: u64,
    /// Events produced per key, to pick the next status of an order.
    pub(crate) events_per_key: HashMap<String, u64>,
    /// Per partition: open and aborted transactions and the markers that ended them.
    pub txns: Vec<PartitionTxns>,
}

/// The topic id of `__consumer_offsets`, which the lab never creates or deletes.
fn consumer_offsets_topic_id() -> [u8; 16] {
    topics::topic_id(crate::offsets::CONSUMER_OFFSETS_TOPIC, 0)
}

/// A planned crash: the explorer's fault injection. The consumer crashes right after its
/// `after`-th observable effect (a poll returning, a sink write, a commit landing).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FaultPlan {
    pub consumer: String,
    pub after: u64,
}

pub struct Lab {
    clock: Clock,
    store: Box<dyn LogStore>,
    sinks: Box<dyn SinkFactory>,
    topics: Tracked<Topic>,
    offsets: OffsetStore,
    groups: Tracked<Group>,
    consumers: Tracked<Consumer>,
    narrative: Narrative,
    fault: Option<FaultPlan>,
    /// Observable effects per consumer so far (what a [`FaultPlan`] counts).
    effects: BTreeMap<String, u64>,
    /// `offsets.retention.minutes` (KIP-211), in milliseconds.
    offsets_retention_ms: Millis,
    /// `offsets.retention.check.interval.ms`: how often the coordinator's cleanup removes a
    /// group with no member and no committed offset left.
    offsets_retention_check_ms: Millis,
    /// The transaction coordinator's producers, by `transactional.id`.
    producers: Tracked<TransactionalProducer>,
    /// The next producer id InitProducerId hands out.
    next_producer_id: i64,
    /// Topics created so far (what a topic id is derived from).
    topics_created: u64,
    /// Share groups (KIP-932) and share consumers.
    share: crate::share::ShareState,
    /// Whether groups keep their raw delivery log ([`Lab::keep_delivery_logs`]); not saved.
    keep_delivery_logs: bool,
    /// Changes by this lab object that going back to a save cannot undo ([`Lab::irreversible`]);
    /// not saved.
    irreversible: u64,
}

/// Kafka's default `offsets.retention.minutes`: 7 days.
pub const DEFAULT_OFFSETS_RETENTION_MS: Millis = 7 * 24 * 3_600_000;

/// Kafka's default `offsets.retention.check.interval.ms`: 10 minutes.
pub const DEFAULT_OFFSETS_RETENTION_CHECK_MS: Millis = 600_000;

impl Default for Lab {
    fn default() -> Self {
        Self::new(Box::new(MemoryStore), Box::new(MemorySinks))
    }
}

impl Lab {
    /// A lab over the given stores. Panics only if the log store fails to open
    /// `__consumer_offsets`, which the in-memory store never does; use [`Lab::try_new`] with a
    /// durable store.
    pub fn new(store: Box<dyn LogStore>, sinks: Box<dyn SinkFactory>) -> Self {
        match Self::try_new(store, sinks) {
            Ok(lab) => lab,
            Err(e) => panic!("offsetlab: {e}"),
        }
    }

    /// A lab over the given stores; a durable store recovers `__consumer_offsets` from disk and
    /// the coordinator's view is rebuilt by replaying it.
    pub fn try_new(mut store: Box<dyn LogStore>, sinks: Box<dyn SinkFactory>) -> Result<Self, LabError> {
        let offsets_log = store
            .open(
                crate::offsets::CONSUMER_OFFSETS_TOPIC,
                0,
                &OffsetStore::topic_config(),
            )
            .map_err(LabError::storage)?;
        Ok(Self {
            clock: Clock::default(),
            store,
            sinks,
            topics: Tracked::default(),
            offsets: OffsetStore::new(offsets_log),
            groups: Tracked::default(),
            consumers: Tracked::default(),
            narrative: Narrative::default(),
            fault: None,
            effects: BTreeMap::new(),
            offsets_retention_ms: DEFAULT_OFFSETS_RETENTION_MS,
            offsets_retention_check_ms: DEFAULT_OFFSETS_RETENTION_CHECK_MS,
            producers: Tracked::default(),
            next_producer_id: 1000,
            topics_created: 0,
            share: crate::share::ShareState::default(),
            keep_delivery_logs: false,
            irreversible: 0,
        })
    }

    /// Closes every log cleanly (a durable store syncs them and writes what lets the next start
    /// skip recovery).
    pub fn close_logs(&mut self) -> Result<(), LabError> {
        for log in self.logs_to_close() {
            log.close().map_err(LabError::storage)?;
        }
        Ok(())
    }

    /// Every log of the lab — each topic's partitions and `__consumer_offsets` — for an adapter
    /// that closes them itself: a durable lab's close is an fsync or more per log, so the lab
    /// crate spreads them over a few threads (a 10,000-partition lab took over 20 s one by one).
    pub fn logs_to_close(&mut self) -> Vec<&mut (dyn PartitionLog + 'static)> {
        let mut logs: Vec<&mut (dyn PartitionLog + 'static)> = self
            .topics
            .values_mut()
            .flat_map(|t| t.partitions.iter_mut().map(|l| l.as_mut()))
            .collect();
        logs.push(self.offsets.log_mut());
        logs
    }

    pub fn now(&self) -> Millis {
        self.clock.now()
    }

    pub fn clock(&self) -> Clock {
        self.clock
    }

    pub fn narrative(&self) -> &Narrative {
        &self.narrative
    }

    /// The narrative, for a front end that keeps it itself (see [`Narrative::forget_before`]).
    pub fn narrative_mut(&mut self) -> &mut Narrative {
        &mut self.narrative
    }

    pub fn topics(&self) -> &BTreeMap<String, Topic> {
        &self.topics
    }

    /// The name of the topic whose topic id is `id` (`__consumer_offsets` among them).
    pub fn topic_named_by_id(&self, id: &[u8; 16]) -> Option<&str> {
        if *id == consumer_offsets_topic_id() {
            return Some(crate::offsets::CONSUMER_OFFSETS_TOPIC);
        }
        self.topics
            .values()
            .find(|t| &t.id == id)
            .map(|t| t.name.as_str())
    }

    /// The topic id of `name` (`__consumer_offsets` among them).
    pub fn topic_id_of(&self, name: &str) -> Option<[u8; 16]> {
        if name == crate::offsets::CONSUMER_OFFSETS_TOPIC {
            return Some(consumer_offsets_topic_id());
        }
        self.topics.get(name).map(|t| t.id)
    }

    pub fn topic(&self, name: &str) -> Result<&Topic, LabError> {
        self.topics
            .get(name)
            .ok_or_else(|| LabError::UnknownTopic(name.to_string()))
    }

    pub(crate) fn topic_mut(&mut self, name: &str) -> Result<&mut Topic, LabError> {
        self.topics
            .get_mut(name)
            .ok_or_else(|| LabError::UnknownTopic(name.to_string()))
    }

    pub fn partition_log(&self, tp: &TopicPartition) -> Result<&dyn PartitionLog, LabError> {
        let topic = self.topic(&tp.topic)?;
        topic
            .partitions
            .get(usize::try_from(tp.partition).unwrap_or(usize::MAX))
            .map(|b| b.as_ref())
            .ok_or_else(|| LabError::UnknownPartition {
                topic: tp.topic.clone(),
                partition: tp.partition,
                partitions: topic.partitions.len(),
            })
    }

    /// A partition as a consumer reads it, with its transaction state: a topic's, or
    /// `__consumer_offsets-0` — Kafka's internal topic is readable by any consumer (kcat, a lag
    /// monitor), though only the coordinator writes to it.
    pub fn fetchable(&self, tp: &TopicPartition) -> Result<(&dyn PartitionLog, &PartitionTxns), LabError> {
        if tp.topic == crate::offsets::CONSUMER_OFFSETS_TOPIC {
            return match tp.partition {
                0 => Ok((self.offsets.log(), &crate::txn::NO_TRANSACTIONS)),
                p => Err(LabError::UnknownPartition {
                    topic: tp.topic.clone(),
                    partition: p,
                    partitions: 1,
                }),
            };
        }
        Ok((self.partition_log(tp)?, self.partition_txns(tp)?))
    }

    /// The transaction state of one partition.
    pub fn partition_txns(&self, tp: &TopicPartition) -> Result<&PartitionTxns, LabError> {
        self.partition_log(tp)?;
        let topic = self.topic(&tp.topic)?;
        topic
            .txns
            .get(usize::try_from(tp.partition).unwrap_or(usize::MAX))
            .ok_or_else(|| LabError::UnknownPartition {
                topic: tp.topic.clone(),
                partition: tp.partition,
                partitions: topic.txns.len(),
            })
    }

    /// The last stable offset of a partition: how far a `read_committed` consumer may read.
    pub fn last_stable_offset(&self, tp: &TopicPartition) -> Result<Offset, LabError> {
        let end = self.partition_log(tp)?.log_end_offset();
        Ok(self.partition_txns(tp)?.last_stable_offset(end))
    }

    /// Transactional producers by `transactional.id`.
    pub fn producers(&self) -> &BTreeMap<String, TransactionalProducer> {
        &self.producers
    }

    pub fn offsets(&self) -> &OffsetStore {
        &self.offsets
    }

    pub fn groups(&self) -> &BTreeMap<String, Group> {
        &self.groups
    }

    pub fn group(&self, name: &str) -> Result<&Group, LabError> {
        self.groups
            .get(name)
            .ok_or_else(|| LabError::UnknownGroup(name.to_string()))
    }

    pub fn consumers(&self) -> &BTreeMap<String, Consumer> {
        &self.consumers
    }

    pub fn consumer(&self, name: &str) -> Result<&Consumer, LabError> {
        self.consumers
            .get(name)
            .ok_or_else(|| LabError::UnknownConsumer(name.to_string()))
    }

    /// The member id consumer `name` has now, as the narrative names it (empty if there is no
    /// such consumer).
    pub(crate) fn member_of(&self, name: &str) -> String {
        self.consumers
            .get(name)
            .map(|c| c.member_id())
            .unwrap_or_default()
    }

    /// Sets the broker's `offsets.retention.minutes` (as milliseconds).
    pub fn set_offsets_retention(&mut self, ms: Millis) -> Result<(), LabError> {
        if ms <= 0 {
            return Err(LabError::InvalidArgument(
                "offsets.retention must be positive".into(),
            ));
        }
        self.offsets_retention_ms = ms;
        self.say(
            EventKind::Setup,
            format!("broker: offsets.retention.minutes = {} — an empty group's committed offsets expire that long after it emptied (KIP-211)", crate::clock::format_duration(ms)),
        );
        Ok(())
    }

    pub fn offsets_retention_ms(&self) -> Millis {
        self.offsets_retention_ms
    }

    /// Sets the broker's `offsets.retention.check.interval.ms`: the coordinator's cleanup runs
    /// at every multiple of it on the lab's clock.
    pub fn set_offsets_retention_check(&mut self, ms: Millis) -> Result<(), LabError> {
        if ms <= 0 {
            return Err(LabError::InvalidArgument(
                "offsets.retention.check.interval must be positive".into(),
            ));
        }
        self.offsets_retention_check_ms = ms;
        self.say(
            EventKind::Setup,
            format!("broker: offsets.retention.check.interval.ms = {} — how often the coordinator removes a group with no member and no committed offset", crate::clock::format_duration(ms)),
        );
        Ok(())
    }

    pub fn offsets_retention_check_ms(&self) -> Millis {
        self.offsets_retention_check_ms
    }

    /// How many changes this lab object made that going back to a save cannot undo: a sink
    /// opened or written (its database keeps what it was written — a save knows nothing of it),
    /// segments retention deleted (their files are gone). A durable session compares it before
    /// and after a batch: a batch without any can be undone by going back to the lab's last
    /// save; one with some must be replayed from the history. (Compaction, DeleteRecords and a
    /// truncation save the lab before they destroy records.)
    pub fn irreversible(&self) -> u64 {
        self.irreversible
    }

    /// Every group keeps the raw log of what it applied from now on (one entry per record:
    /// [`crate::audit::GroupAudit::recount`], the property tests' oracle). Off by default: a
    /// lab's memory must not grow with its traffic.
    pub fn keep_delivery_logs(&mut self) {
        self.keep_delivery_logs = true;
        for g in self.groups.values_mut() {
            g.audit.keep_log(true);
        }
    }

    /// Arms the explorer's fault injection.
    pub fn plan_fault(&mut self, fault: Option<FaultPlan>) {
        self.fault = fault;
    }

    /// Whether the planned fault has fired.
    pub fn fault_fired(&self) -> bool {
        self.fault.as_ref().is_some_and(|f| {
            self.effects.get(&f.consumer).copied().unwrap_or(0) >= f.after
                && (self.consumers.get(&f.consumer).is_some_and(|c| !c.is_running())
                    || self
                        .share
                        .consumers
                        .get(&f.consumer)
                        .is_some_and(|c| !c.is_running()))
        })
    }

    /// Observable effects of `consumer` so far.
    pub fn effects_of(&self, consumer: &str) -> u64 {
        self.effects.get(consumer).copied().unwrap_or(0)
    }

    /// The coordinator restarts: its in-memory view of committed offsets is rebuilt by replaying
    /// `__consumer_offsets`. Nothing a learner sees should change.
    pub fn restart_coordinator(&mut self) {
        self.offsets.rebuild_view();
        self.say(
            EventKind::Group,
            format!(
                "the group coordinator restarted and rebuilt its offsets view by replaying {} record(s) of __consumer_offsets",
                self.offsets.log().record_count()
            ),
        );
    }

    /// Plans a crash of `consumer` right after its `after`-th next observable effect (a poll
    /// returning, a sink write, a commit landing): the explorer's fault, as a scenario line.
    pub fn schedule_crash(&mut self, consumer: &str, after: u64) -> Result<(), LabError> {
        if self.is_share_consumer(consumer) {
            self.running_share(consumer, "only a running consumer can be made to crash")?;
        } else {
            self.running(consumer, "only a running consumer can be made to crash")?;
        }
        if after == 0 {
            return Err(LabError::InvalidArgument(
                "after must be at least 1 (use crash to crash now)".into(),
            ));
        }
        let at = self.effects_of(consumer) + after;
        self.fault = Some(FaultPlan {
            consumer: consumer.to_string(),
            after: at,
        });
        self.say(
            EventKind::Setup,
            format!("a crash of {consumer} is armed: it dies right after its {after}th next effect (a poll returning, a record processed, a commit or acknowledgement landing)"),
        );
        Ok(())
    }

    /// Compacts a topic: in its closed segments only the latest record per key survives
    /// (offsets are kept, so gaps appear), and tombstones older than `delete.retention.ms` go.
    /// Applies to `__consumer_offsets` and to topics with `cleanup.policy=compact`. Returns how
    /// many records were removed.
    pub fn compact_topic(&mut self, name: &str) -> Result<usize, LabError> {
        if name == crate::offsets::CONSUMER_OFFSETS_TOPIC {
            return Ok(self.compact_offsets_topic());
        }
        let now = self.now();
        let topic = self.topic_mut(name)?;
        if !topic.config.cleanup_policy.compacts() {
            return Err(LabError::InvalidArgument(format!(
                "topic '{name}' has cleanup.policy=delete: only compacted topics (and __consumer_offsets) are compacted"
            )));
        }
        let mut total = crate::log::Cleaned::default();
        for (log, txns) in topic.partitions.iter_mut().zip(&topic.txns) {
            let c = crate::log::clean(log.as_mut(), now, topic.config.delete_retention_ms, Some(txns));
            total.superseded += c.superseded;
            total.tombstones += c.tombstones;
        }
        let retention = crate::clock::format_duration(topic.config.delete_retention_ms);
        self.say(
            EventKind::Setup,
            format!(
                "compacted {name}: removed {} superseded record(s) and {} tombstone(s) older than delete.retention.ms ({retention}); offsets are kept, so gaps appear",
                total.superseded, total.tombstones
            ),
        );
        Ok(total.superseded + total.tombstones)
    }

    /// Compacts `__consumer_offsets`: only the latest commit per key survives in closed segments;
    /// tombstones (expired or deleted offsets) go once `delete.retention.ms` has passed.
    pub fn compact_offsets_topic(&mut self) -> usize {
        let c = self.offsets.compact(self.now());
        self.say(
            EventKind::Group,
            format!("compacted __consumer_offsets: removed {} superseded commit record(s) and {} tombstone(s) past delete.retention.ms; the latest value per key remains", c.superseded, c.tombstones),
        );
        c.superseded + c.tombstones
    }

    /// Narrates a refusal a scenario expected (`expect-error`): the line changed nothing.
    pub fn note_refusal(&mut self, text: &str) {
        self.say(EventKind::Refused, text);
    }

    pub(crate) fn say(&mut self, kind: EventKind, text: impl Into<String>) {
        self.narrative.push(self.clock.now(), kind, text);
    }

    /// Counts one observable effect of `consumer`; if the fault plan says so, the consumer
    /// crashes right here and the caller must stop what it was doing. Returns whether it crashed.
    pub(crate) fn effect(&mut self, consumer: &str) -> bool {
        let n = self.effects.entry(consumer.to_string()).or_default();
        *n += 1;
        let n = *n;
        let crash = self
            .fault
            .as_ref()
            .is_some_and(|f| f.consumer == consumer && f.after == n);
        if crash {
            // The consumer exists and runs: effects are only counted for running consumers.
            let _ = self.crash(consumer);
        }
        crash
    }

    fn consumer_mut(&mut self, name: &str) -> Result<&mut Consumer, LabError> {
        self.consumers
            .get_mut(name)
            .ok_or_else(|| LabError::UnknownConsumer(name.to_string()))
    }

    fn running(&self, name: &str, hint: &'static str) -> Result<&Consumer, LabError> {
        let c = self.consumer(name)?;
        if c.is_running() {
            Ok(c)
        } else {
            Err(LabError::WrongState {
                name: name.to_string(),
                state: c.state.label().to_string(),
                hint,
            })
        }
    }
}

//! The lab as readers see it: a [`ReadView`] published after every change, so that a Fetch, a
//! Metadata, a ListOffsets or an OffsetFetch is answered without the session's lock — without
//! waiting for a Produce's save, a long scenario line or a page's state being built.
//!
//! A view holds what those requests ask of the lab — each partition's log start, high watermark
//! (the log end: one broker is its whole ISR), last stable offset and aborted records, the
//! topics' names, ids and partition counts, the groups' committed offsets — as values, and each
//! partition's log as a [`LogReader`] that reads the stored bytes through the log's own mutex
//! ([`crate::shared_log`]). It is built once per change by whoever holds the session, when it
//! lets the session go ([`crate::handle::SessionGuard`]), and shared by every reader until the
//! next; a topic or the committed offsets that did not change are shared with the view before
//! (an `Arc` each), so a Produce's view costs what its partitions' offsets cost.
//!
//! What a view shows is what the session held when it was let go: a change's lines applied and
//! saved — or taken back whole, when a line or the save failed — never a change half done, and
//! never the records of a change still in progress (a reader reads below the view's bounds; the
//! log may already hold more). That is the state every reader saw before the split, when it
//! waited for the lock; only the waiting is gone. The one exception is inherited, not new: under
//! `--flush always` the view (as the lock once did) shows a change before its fsync completes,
//! as a one-broker Kafka's high watermark moves before its log is flushed.
//!
//! When a log lost records since the view was published (retention, DeleteRecords, compaction,
//! truncation, its topic deleted, the lab rebuilt), its reader says so and the request is read
//! again under the session's lock ([`crate::LabHandle::read_locked`]), on a view built there.

use crate::session::Session;
use crate::shared_log::LogReader;
use offsetlab_engine::log::PartitionLog;
use offsetlab_engine::offsets::{OffsetAndMetadata, OffsetKey, CONSUMER_OFFSETS_TOPIC};
use offsetlab_engine::record::{Offset, TopicPartition};
use offsetlab_engine::txn::PartitionTxns;
use offsetlab_engine::Lab;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// One partition as a reader may see it.
#[derive(Clone)]
pub struct PartitionRead {
    start: Offset,
    end: Offset,
    lso: Offset,
    /// Data records of aborted transactions (shared with the view before while none was added).
    aborted: Arc<BTreeSet<Offset>>,
    log: LogReader,
}

impl PartitionRead {
    fn of(log: &dyn PartitionLog, txns: &PartitionTxns, before: Option<&PartitionRead>) -> Self {
        let end = log.log_end_offset();
        let reader = LogReader::of(log);
        // Aborted records only ever grow on one topic's partition, and a new log is a new topic
        // (or a new lab): the same log with as many aborted records has the same ones.
        let aborted = match before {
            Some(b) if b.log.is_log_of(&reader) && b.aborted.len() == txns.aborted_offsets().len() => {
                Arc::clone(&b.aborted)
            }
            _ => Arc::new(txns.aborted_offsets().clone()),
        };
        Self {
            start: log.log_start_offset(),
            end,
            lso: txns.last_stable_offset(end),
            aborted,
            log: reader,
        }
    }

    fn same_as(&self, other: &PartitionRead) -> bool {
        (self.start, self.end, self.lso) == (other.start, other.end, other.lso)
            && Arc::ptr_eq(&self.aborted, &other.aborted)
            && self.log.same_as(&other.log)
    }

    pub fn log_start_offset(&self) -> Offset {
        self.start
    }

    /// The high watermark: the log end when the view was published.
    pub fn high_watermark(&self) -> Offset {
        self.end
    }

    pub fn last_stable_offset(&self) -> Offset {
        self.lso
    }

    pub fn aborted_offsets(&self) -> &BTreeSet<Offset> {
        &self.aborted
    }

    pub fn is_aborted(&self, offset: Offset) -> bool {
        self.aborted.contains(&offset)
    }

    /// Runs `f` on the partition's log, if it lost no records since the view was published
    /// (`None`: read the request again under the session's lock). Only what lies below the
    /// view's bounds is the view's: `f` must not hand out anything at or past
    /// [`PartitionRead::high_watermark`] — the log may already hold a change in progress.
    pub fn read<T>(&self, f: impl FnOnce(&dyn PartitionLog) -> T) -> Option<T> {
        self.log.read(f)
    }
}

/// A topic as a reader may see it.
pub struct TopicRead {
    pub name: String,
    pub id: [u8; 16],
    /// Its `max.message.bytes`: what a Produce's batches are checked against before the lock.
    pub max_message_bytes: usize,
    partitions: Vec<PartitionRead>,
}

impl TopicRead {
    pub fn partitions(&self) -> &[PartitionRead] {
        &self.partitions
    }

    fn same_as(&self, other: &TopicRead) -> bool {
        (self.id, self.max_message_bytes) == (other.id, other.max_message_bytes)
            && self.partitions.len() == other.partitions.len()
            && self
                .partitions
                .iter()
                .zip(&other.partitions)
                .all(|(a, b)| a.same_as(b))
    }
}

/// The groups' committed offsets, and what tells whether they can have changed.
struct Committed {
    /// `__consumer_offsets`' reader, log end and the view's size: every commit and every
    /// deletion appends to the topic, and a new lab has a new log.
    key: (LogReader, Offset, usize),
    offsets: BTreeMap<OffsetKey, OffsetAndMetadata>,
}

/// The lab as readers see it between two changes: see the module's documentation.
pub struct ReadView {
    version: u64,
    stamp: (u64, u64),
    topics: BTreeMap<String, Arc<TopicRead>>,
    consumer_offsets: Arc<TopicRead>,
    committed: Arc<Committed>,
}

impl ReadView {
    /// The view of `session` as it is now; what did not change is shared with `before`.
    pub(crate) fn of(session: &Session, before: Option<&ReadView>) -> Self {
        let lab = session.lab();
        let topics = lab
            .topics()
            .iter()
            .map(|(name, t)| {
                let was = before.and_then(|b| b.topics.get(name));
                let partitions = t
                    .partitions
                    .iter()
                    .zip(&t.txns)
                    .enumerate()
                    .map(|(i, (log, txns))| {
                        PartitionRead::of(log.as_ref(), txns, was.and_then(|w| w.partitions.get(i)))
                    })
                    .collect();
                let now = TopicRead {
                    name: name.clone(),
                    id: t.id,
                    max_message_bytes: t.config.max_message_bytes,
                    partitions,
                };
                let topic = match was {
                    Some(w) if w.same_as(&now) => Arc::clone(w),
                    _ => Arc::new(now),
                };
                (name.clone(), topic)
            })
            .collect();
        Self {
            version: session.version(),
            stamp: session.stamp(),
            topics,
            consumer_offsets: Arc::new(consumer_offsets(lab, before)),
            committed: committed(lab, before),
        }
    }

    /// The session's version this view shows.
    pub fn version(&self) -> u64 {
        self.version
    }

    pub(crate) fn stamp(&self) -> (u64, u64) {
        self.stamp
    }

    /// The lab's topics, by name (`__consumer_offsets`, which the lab keeps apart, not among
    /// them: see [`ReadView::partition`]).
    pub fn topics(&self) -> impl Iterator<Item = &TopicRead> {
        self.topics.values().map(AsRef::as_ref)
    }

    pub fn topic(&self, name: &str) -> Option<&TopicRead> {
        self.topics.get(name).map(AsRef::as_ref)
    }

    /// The name of the topic whose id is `id`, `__consumer_offsets` among them.
    pub fn topic_named_by_id(&self, id: &[u8; 16]) -> Option<&str> {
        std::iter::once(&self.consumer_offsets)
            .chain(self.topics.values())
            .find(|t| &t.id == id)
            .map(|t| t.name.as_str())
    }

    /// The topic id of `name`, `__consumer_offsets` among them.
    pub fn topic_id_of(&self, name: &str) -> Option<[u8; 16]> {
        if name == CONSUMER_OFFSETS_TOPIC {
            return Some(self.consumer_offsets.id);
        }
        self.topics.get(name).map(|t| t.id)
    }

    /// A partition as a consumer reads it: a topic's, or `__consumer_offsets-0` (as
    /// [`Lab::fetchable`] finds it).
    pub fn partition(&self, tp: &TopicPartition) -> Option<&PartitionRead> {
        let topic = if tp.topic == CONSUMER_OFFSETS_TOPIC {
            &self.consumer_offsets
        } else {
            self.topics.get(&tp.topic)?
        };
        topic.partitions.get(usize::try_from(tp.partition).ok()?)
    }

    /// The committed offsets of one group, as the coordinator's view of `__consumer_offsets`
    /// holds them.
    pub fn group_offsets<'a>(
        &'a self,
        group: &'a str,
    ) -> impl Iterator<Item = (&'a OffsetKey, &'a OffsetAndMetadata)> + 'a {
        self.committed
            .offsets
            .iter()
            .filter(move |(k, _)| k.group == group)
    }
}

fn consumer_offsets(lab: &Lab, before: Option<&ReadView>) -> TopicRead {
    let was = before.and_then(|b| b.consumer_offsets.partitions.first());
    TopicRead {
        name: CONSUMER_OFFSETS_TOPIC.to_string(),
        id: lab.topic_id_of(CONSUMER_OFFSETS_TOPIC).unwrap_or_default(),
        max_message_bytes: offsetlab_engine::offsets::OffsetStore::topic_config().max_message_bytes,
        partitions: vec![PartitionRead::of(
            lab.offsets().log(),
            &offsetlab_engine::txn::NO_TRANSACTIONS,
            was,
        )],
    }
}

fn committed(lab: &Lab, before: Option<&ReadView>) -> Arc<Committed> {
    let store = lab.offsets();
    let log = store.log();
    let key = (LogReader::of(log), log.log_end_offset(), store.view().len());
    match before {
        Some(b)
            if b.committed.key.0.is_log_of(&key.0)
                && (b.committed.key.1, b.committed.key.2) == (key.1, key.2) =>
        {
            Arc::clone(&b.committed)
        }
        _ => Arc::new(Committed {
            key,
            offsets: store.view().clone(),
        }),
    }
}

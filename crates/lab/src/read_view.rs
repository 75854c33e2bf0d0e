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
//! next. What did not change is shared with the view before — a topic whose logs' counts of
//! changes did not move ([`crate::shared_log`]), the committed offsets while `__consumer_offsets`
//! did not grow — so a Produce's view costs a look at each log's count and a new entry for the
//! topics it wrote to.
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
pub use crate::shared_log::LogWait;
use offsetlab_engine::lab::Topic;
use offsetlab_engine::log::PartitionLog;
use offsetlab_engine::offsets::{OffsetAndMetadata, OffsetKey, OffsetStore, CONSUMER_OFFSETS_TOPIC};
use offsetlab_engine::record::{Offset, TopicPartition};
use offsetlab_engine::txn::{PartitionTxns, NO_TRANSACTIONS};
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
    /// How many aborted records and markers the partition's transactions counted.
    txn_marks: (usize, usize),
    log: LogReader,
}

/// What tells whether a partition's transactions moved. Every change to them also appends to
/// the log (a transactional record, a marker), which the log's count of changes shows; these
/// counts say it a second time.
fn txn_marks(txns: &PartitionTxns) -> (usize, usize) {
    (txns.aborted_offsets().len(), txns.markers().len())
}

impl PartitionRead {
    /// Whether `log` and `txns` are what this was read from, unchanged since.
    fn unchanged(&self, log: &dyn PartitionLog, txns: &PartitionTxns) -> bool {
        self.txn_marks == txn_marks(txns) && self.log.unchanged_in(log)
    }

    fn of(log: &dyn PartitionLog, txns: &PartitionTxns, before: Option<&PartitionRead>) -> Self {
        if let Some(b) = before.filter(|b| b.unchanged(log, txns)) {
            return b.clone();
        }
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
            txn_marks: txn_marks(txns),
            log: reader,
        }
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
    /// (`None`: read the request again under the session's lock) — and, with
    /// [`LogWait::Never`], if no change is writing to it now (`None`: read again where waiting
    /// is allowed). Only what lies below the view's bounds is the view's: `f` must not hand out
    /// anything at or past [`PartitionRead::high_watermark`] — the log may already hold a change
    /// in progress.
    pub fn read<T>(&self, wait: LogWait, f: impl FnOnce(&dyn PartitionLog) -> T) -> Option<T> {
        self.log.read(wait, f)
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

    /// Whether `topic` is what this was read from, unchanged since: checked without building
    /// anything, so an unchanged topic costs a view a look at each of its logs' counts.
    fn unchanged(&self, topic: &Topic) -> bool {
        (self.id, self.max_message_bytes) == (topic.id, topic.config.max_message_bytes)
            && self.partitions.len() == topic.partitions.len()
            && self
                .partitions
                .iter()
                .zip(topic.partitions.iter().zip(&topic.txns))
                .all(|(p, (log, txns))| p.unchanged(log.as_ref(), txns))
    }

    fn of(name: &str, topic: &Topic, before: Option<&TopicRead>) -> Self {
        let partitions = topic
            .partitions
            .iter()
            .zip(&topic.txns)
            .enumerate()
            .map(|(i, (log, txns))| {
                PartitionRead::of(log.as_ref(), txns, before.and_then(|b| b.partitions.get(i)))
            })
            .collect();
        Self {
            name: name.to_string(),
            id: topic.id,
            max_message_bytes: topic.config.max_message_bytes,
            partitions,
        }
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
    topics: BTreeMap<Arc<str>, Arc<TopicRead>>,
    consumer_offsets: Arc<TopicRead>,
    committed: Arc<Committed>,
}

impl ReadView {
    /// The view of `session` as it is now; what did not change is shared with `before`.
    pub(crate) fn of(session: &Session, before: Option<&ReadView>) -> Self {
        let lab = session.lab();
        // Both in name order: the view before is walked beside the lab, not searched.
        let mut was = before.map(|b| b.topics.iter().peekable());
        let topics = lab
            .topics()
            .iter()
            .map(|(name, t)| {
                let before = was.as_mut().and_then(|was| {
                    while was.peek().is_some_and(|(k, _)| k.as_ref() < name.as_str()) {
                        was.next();
                    }
                    was.next_if(|(k, _)| k.as_ref() == name.as_str())
                });
                match before {
                    Some((key, was)) if was.unchanged(t) => (Arc::clone(key), Arc::clone(was)),
                    Some((key, was)) => (Arc::clone(key), Arc::new(TopicRead::of(name, t, Some(was)))),
                    None => (Arc::from(name.as_str()), Arc::new(TopicRead::of(name, t, None))),
                }
            })
            .collect();
        Self {
            version: session.version(),
            stamp: session.stamp(),
            topics,
            consumer_offsets: consumer_offsets(lab, before),
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
            self.topics.get(tp.topic.as_str())?
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

fn consumer_offsets(lab: &Lab, before: Option<&ReadView>) -> Arc<TopicRead> {
    let log = lab.offsets().log();
    let was = before.map(|b| &b.consumer_offsets);
    let partition = was.and_then(|w| w.partitions.first());
    match (was, partition) {
        (Some(w), Some(p)) if p.unchanged(log, &NO_TRANSACTIONS) => Arc::clone(w),
        _ => Arc::new(TopicRead {
            name: CONSUMER_OFFSETS_TOPIC.to_string(),
            id: lab.topic_id_of(CONSUMER_OFFSETS_TOPIC).unwrap_or_default(),
            max_message_bytes: OffsetStore::topic_config().max_message_bytes,
            partitions: vec![PartitionRead::of(log, &NO_TRANSACTIONS, partition)],
        }),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::SinkBackend;
    use crate::LabHandle;

    fn lab(source: &str) -> LabHandle {
        LabHandle::new(Session::new(SinkBackend::Memory, source).expect("the lab builds"))
    }

    fn apply(lab: &LabHandle, lines: &[&str]) {
        let lines: Vec<String> = lines.iter().map(ToString::to_string).collect();
        lab.lock().apply_lines(&lines).expect("the lines apply");
    }

    fn hw(view: &ReadView, topic: &str, partition: i32) -> Option<Offset> {
        view.partition(&TopicPartition::new(topic, partition))
            .map(PartitionRead::high_watermark)
    }

    /// A change's view is published when the session is let go, and shares with the view before
    /// what the change did not touch: the other topic, the committed offsets.
    #[test]
    fn a_change_is_published_and_shares_what_it_did_not_touch() {
        let lab = lab("topic a partitions=2\ntopic b\nproduce a count=3 partition=1\n");
        let before = lab.view();
        assert_eq!(
            (hw(&before, "a", 1), hw(&before, "b", 0), hw(&before, "b", 1)),
            (Some(3), Some(0), None)
        );
        {
            let mut s = lab.lock();
            s.apply_lines(&["produce b count=2".to_string()])
                .expect("applies");
            assert_eq!(hw(&lab.view(), "b", 0), Some(0), "not while the session is held");
        }
        let after = lab.view();
        assert_eq!(hw(&after, "b", 0), Some(2));
        assert!(after.version() > before.version());
        assert!(
            Arc::ptr_eq(&before.topics["a"], &after.topics["a"]),
            "a did not change"
        );
        assert!(!Arc::ptr_eq(&before.topics["b"], &after.topics["b"]));
        assert!(
            Arc::ptr_eq(&before.committed, &after.committed),
            "nothing committed"
        );
        apply(&lab, &["alter-offsets g offsets=a:1=2"]);
        let committed = lab.view();
        assert!(Arc::ptr_eq(&after.topics["b"], &committed.topics["b"]));
        let offsets: Vec<(String, i32, Offset)> = committed
            .group_offsets("g")
            .map(|(k, v)| (k.topic.clone(), k.partition, v.offset))
            .collect();
        assert_eq!(offsets, vec![("a".to_string(), 1, 2)]);
    }

    /// A transaction's records are below the last stable offset only once it ends; aborted ones
    /// are listed.
    #[test]
    fn transactions_move_the_last_stable_offset_and_list_aborted_records() {
        let lab = lab("topic pay\ninit-txn w\n");
        let send =
            r#"txn-send w producer-id=1000 epoch=0 topic=pay partition=0 records=[{"key":"k","value":"v"}]"#;
        apply(&lab, &[send]);
        let open = lab.view();
        let p = open.partition(&TopicPartition::new("pay", 0)).expect("pay-0");
        assert_eq!((p.high_watermark(), p.last_stable_offset()), (1, 0));
        apply(&lab, &["end-txn w producer-id=1000 epoch=0 abort"]);
        let aborted = lab.view();
        let p = aborted.partition(&TopicPartition::new("pay", 0)).expect("pay-0");
        assert_eq!((p.high_watermark(), p.last_stable_offset()), (2, 2));
        assert!(p.is_aborted(0) && !p.is_aborted(1));
    }

    /// A log that lost records since the view is not read from it; a view built after reads it.
    #[test]
    fn a_log_that_lost_records_is_read_again_under_the_lock() {
        let lab = lab("topic a\nproduce a count=5\n");
        let before = lab.view();
        let tp = TopicPartition::new("a", 0);
        let read = |v: &ReadView| {
            v.partition(&tp)
                .and_then(|p| p.read(LogWait::ForTheLog, |log| log.log_start_offset()))
        };
        assert_eq!(read(&before), Some(0));
        apply(&lab, &["delete-records a before=3"]);
        assert_eq!(read(&before), None, "records went since that view");
        assert_eq!(read(&lab.view()), Some(3));
        assert_eq!(lab.read_locked(|v| read(v)), Some(3));
    }
}

/// What a view costs beside the change it follows, on a durable lab of 10,000 partitions (one
/// topic, or 1,000 of 10) and of 8: docs/BENCHMARKS.md ("The read view"). A measurement, not a
/// check: `cargo test --release -p offsetlab-lab view_cost -- --ignored --nocapture`.
#[cfg(test)]
mod cost {
    use super::*;
    use crate::session::SinkBackend;
    use std::time::{Duration, Instant};

    #[test]
    #[ignore]
    fn view_cost() {
        for (topics, partitions) in [(1, 10_000), (1000, 10), (8, 1)] {
            let mut source = String::new();
            for t in 0..topics {
                source.push_str(&format!(
                    "topic t{t} partitions={partitions}\nproduce t{t} count=20\n"
                ));
            }
            let dir = tempfile::tempdir().expect("dir");
            let backend = SinkBackend::Durable {
                root: dir.path().to_path_buf(),
                flush: offsetlab_storage::FlushPolicy::Never,
            };
            let mut s = Session::new(backend, &source).expect("lab");
            let mut view = ReadView::of(&s, None);
            let (mut change, mut after) = (Duration::ZERO, Duration::ZERO);
            let n = 200;
            for i in 0..n {
                let line = vec![format!("produce t0 count=1 partition={}", i % partitions)];
                let started = Instant::now();
                s.apply_lines(&line).expect("applies");
                s.save().expect("saved");
                change += started.elapsed();
                let started = Instant::now();
                view = ReadView::of(&s, Some(&view));
                after += started.elapsed();
            }
            let started = Instant::now();
            let _ = ReadView::of(&s, None);
            println!(
                "{topics} topic(s) of {partitions}: a produce applied and saved {:?}, the view after it {:?}, a view from nothing {:?}",
                change / n,
                after / n,
                started.elapsed()
            );
        }
    }
}

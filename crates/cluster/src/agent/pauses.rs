//! Which partitions the agent has paused, so that librdkafka is asked to pause or resume a
//! partition only when that changes something.
//!
//! Why it matters: every pause librdkafka is asked for, even of a partition already paused,
//! stamps the partition with a new op version, and an op of an older version that reaches the
//! partition after it is dropped as outdated. The op that starts a newly assigned partition's
//! fetcher — sent once its committed offset is known — is such an op: a pause made in the same
//! instant can overtake it, and the partition is then never fetched, with no error (librdkafka
//! #2190, #5591). The agent used to pause its whole assignment every [`super::STEP`] while it
//! waited, and right after each `assign()`; now a partition librdkafka already knows is paused
//! before it is assigned (the start then comes after the pause), and a paused one is never
//! paused again. A partition's pause outlives its assignment in librdkafka (a revoked partition
//! given back is still paused), and so does its entry here.

use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::TopicPartitionList;
use std::collections::BTreeSet;
use std::sync::Mutex;

/// The partitions paused by the agent, as librdkafka holds them.
#[derive(Default)]
pub(super) struct Pauses(Mutex<BTreeSet<(String, i32)>>);

impl Pauses {
    fn held(&self) -> std::sync::MutexGuard<'_, BTreeSet<(String, i32)>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Pauses those of `partitions` not paused yet. Returns the ones librdkafka could not pause
    /// because it does not know them yet (a consumer's first assignment, before `assign()`).
    pub(super) fn pause<C: ConsumerContext>(
        &self,
        consumer: &BaseConsumer<C>,
        partitions: impl IntoIterator<Item = (String, i32)>,
    ) -> Vec<(String, i32)> {
        let mut held = self.held();
        let mut tpl = TopicPartitionList::new();
        for (topic, p) in partitions {
            if !held.contains(&(topic.clone(), p)) {
                tpl.add_partition(&topic, p);
            }
        }
        if tpl.count() == 0 || consumer.pause(&tpl).is_err() {
            return tpl
                .elements()
                .iter()
                .map(|e| (e.topic().to_string(), e.partition()))
                .collect();
        }
        let mut unknown = Vec::new();
        for e in tpl.elements() {
            let key = (e.topic().to_string(), e.partition());
            if e.error().is_ok() {
                held.insert(key);
            } else {
                unknown.push(key);
            }
        }
        unknown
    }

    /// Resumes those of `partitions` the agent paused.
    pub(super) fn resume<C: ConsumerContext>(
        &self,
        consumer: &BaseConsumer<C>,
        partitions: impl IntoIterator<Item = (String, i32)>,
    ) {
        let mut held = self.held();
        let mut tpl = TopicPartitionList::new();
        for key in partitions {
            if held.contains(&key) {
                tpl.add_partition(&key.0, key.1);
            }
        }
        if tpl.count() == 0 || consumer.resume(&tpl).is_err() {
            return;
        }
        for e in tpl.elements() {
            if e.error().is_ok() {
                held.remove(&(e.topic().to_string(), e.partition()));
            }
        }
    }
}

/// The partitions of a list, as the keys [`Pauses`] holds.
pub(super) fn keys(tpl: &TopicPartitionList) -> Vec<(String, i32)> {
    tpl.elements()
        .iter()
        .map(|e| (e.topic().to_string(), e.partition()))
        .collect()
}

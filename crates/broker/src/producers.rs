//! Idempotent producers: producer ids, and the sequence numbers that keep a retried batch from
//! being written twice.
//!
//! Current clients are idempotent by default (the Java client since 3.0, kafka-python 3): they
//! ask `InitProducerId` for an id, number every batch per partition, and resend a batch whose
//! answer was lost with the same number. The broker remembers, per producer and partition, the
//! next sequence it expects and the last batch it wrote: the same batch again is answered with
//! the offset it got the first time and not appended; a gap is `OUT_OF_ORDER_SEQUENCE_NUMBER`.
//! That is how "the producer retried" stops being "the log holds it twice".
//!
//! The table lives beside the listener, in memory: the lab's history records only what was
//! appended, so a replay is exact. (Kafka also snapshots it to disk, so a broker restart keeps
//! deduplicating; a lab restart forgets it, and a client's next batch starts a fresh entry.)

use offsetlab_lab::lock;
use offsetlab_records::ProducerRun;
use offsetlab_wire::error::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

/// The first producer id of an idempotent (non-transactional) producer.
const IDEMPOTENT_IDS: i64 = 1 << 32;

/// Where a producer stands on one partition.
#[derive(Debug, Clone, Copy)]
struct Entry {
    epoch: i16,
    /// The sequence the next batch must carry.
    next_sequence: i32,
    /// The last batch written: its first sequence, the offset it got and its largest timestamp.
    last_sequence: i32,
    last_offset: i64,
    last_timestamp: i64,
    /// The last sequence written (−1 when none under this epoch): DescribeProducers'.
    last_written: i32,
}

/// What to do with a producer's batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// New: append them.
    Append,
    /// A resend of the last batch written: answer with its offset (and, as Kafka does, its
    /// largest timestamp as the log append time), append nothing.
    Duplicate { base_offset: i64, max_timestamp: i64 },
}

/// Producer ids handed out, and per (producer, topic, partition) the sequence state.
#[derive(Debug, Default)]
pub struct Producers {
    next_id: AtomicI64,
    table: Mutex<HashMap<(i64, String, i32), Entry>>,
}

impl Producers {
    /// A fresh producer id, epoch 0 (`InitProducerId` without a transactional id).
    pub fn init(&self) -> (i64, i16) {
        // Far above the ids the lab's transaction coordinator hands out (from 1000).
        (IDEMPOTENT_IDS + self.next_id.fetch_add(1, Ordering::Relaxed), 0)
    }

    /// Checks a partition's batches of the producer whose sequence run they carry.
    pub fn check(&self, run: ProducerRun, topic: &str, partition: i32) -> Result<Verdict, i16> {
        let (id, epoch, sequence) = (run.producer_id, run.epoch, run.first_sequence);
        let table = lock(&self.table);
        match table.get(&(id, topic.to_string(), partition)) {
            // A producer the listener does not know here (new, or from before a restart), or a
            // new epoch: its batch starts the count.
            None => Ok(Verdict::Append),
            Some(e) if epoch > e.epoch => Ok(Verdict::Append),
            Some(e) if epoch == e.epoch && sequence == e.next_sequence => Ok(Verdict::Append),
            Some(e) if epoch == e.epoch && sequence == e.last_sequence => Ok(Verdict::Duplicate {
                base_offset: e.last_offset,
                max_timestamp: e.last_timestamp,
            }),
            Some(_) => Err(OUT_OF_ORDER_SEQUENCE_NUMBER),
        }
    }

    /// A transaction of `producer_id` ended: its markers, written at `now`, are its last batches
    /// on the `partitions` it wrote (DescribeProducers' `last_timestamp`) — under `bumped`, the epoch the
    /// end bumped to (transactions v2), where its sequences start again.
    pub fn marked(&self, producer_id: i64, partitions: &[(String, i32)], now: i64, bumped: Option<i16>) {
        for ((id, topic, partition), e) in lock(&self.table).iter_mut() {
            if *id == producer_id && partitions.iter().any(|(t, p)| t == topic && p == partition) {
                e.last_timestamp = now;
                if let Some(epoch) = bumped {
                    e.epoch = epoch;
                    e.next_sequence = 0;
                    e.last_sequence = -1;
                    e.last_written = -1;
                }
            }
        }
    }

    /// Forgets the sequence numbers kept for `topic`'s partitions (DeleteTopics): a producer
    /// writing to a topic created again under that name starts afresh there.
    pub fn forget_topic(&self, topic: &str) {
        lock(&self.table).retain(|(_, t, _), _| t != topic);
    }

    /// The producers that wrote to `topic`-`partition` (DescribeProducers): (producer id, epoch,
    /// last sequence written, the last batch's largest timestamp), by producer id.
    pub fn of_partition(&self, topic: &str, partition: i32) -> Vec<(i64, i16, i32, i64)> {
        let table = lock(&self.table);
        let mut out: Vec<(i64, i16, i32, i64)> = table
            .iter()
            .filter(|((_, t, p), _)| t == topic && *p == partition)
            .map(|((id, _, _), e)| (*id, e.epoch, e.last_written, e.last_timestamp))
            .collect();
        out.sort_unstable();
        out
    }

    /// Records that the batches of `run` were appended at `base_offset`, the largest of their
    /// timestamps `max_timestamp`.
    pub fn appended(
        &self,
        run: ProducerRun,
        topic: &str,
        partition: i32,
        base_offset: i64,
        max_timestamp: i64,
    ) {
        let (id, epoch, sequence, count) = (run.producer_id, run.epoch, run.first_sequence, run.records);
        let mut table = lock(&self.table);
        // Sequences wrap at i32::MAX, as Kafka's do.
        let next_sequence = ((i64::from(sequence) + i64::from(count)) % (i64::from(i32::MAX) + 1)) as i32;
        table.insert(
            (id, topic.to_string(), partition),
            Entry {
                epoch,
                next_sequence,
                last_written: if next_sequence == 0 {
                    i32::MAX
                } else {
                    next_sequence - 1
                },
                last_sequence: sequence,
                last_offset: base_offset,
                last_timestamp: max_timestamp,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(producer_id: i64, epoch: i16, first_sequence: i32, records: i32) -> ProducerRun {
        ProducerRun {
            producer_id,
            epoch,
            first_sequence,
            records,
        }
    }

    #[test]
    fn a_resent_batch_is_answered_not_appended_and_a_gap_is_refused() {
        let p = Producers::default();
        let (id, epoch) = p.init();
        assert_eq!(p.init().0, id + 1, "ids are unique");
        let first = run(id, epoch, 0, 3);
        assert_eq!(p.check(first, "t", 0), Ok(Verdict::Append));
        p.appended(first, "t", 0, 10, 7_000);
        // The answer was lost; the client sends the same batch again.
        assert_eq!(
            p.check(first, "t", 0),
            Ok(Verdict::Duplicate {
                base_offset: 10,
                max_timestamp: 7_000
            })
        );
        assert_eq!(p.of_partition("t", 0), [(id, epoch, 2, 7_000)]);
        // The next batch continues the numbering; another partition counts on its own.
        assert_eq!(p.check(run(id, epoch, 3, 2), "t", 0), Ok(Verdict::Append));
        assert_eq!(p.check(run(id, epoch, 0, 2), "t", 1), Ok(Verdict::Append));
        // A batch went missing in between.
        assert_eq!(
            p.check(run(id, epoch, 5, 1), "t", 0),
            Err(OUT_OF_ORDER_SEQUENCE_NUMBER)
        );
        // A bumped epoch starts over.
        assert_eq!(p.check(run(id, epoch + 1, 0, 1), "t", 0), Ok(Verdict::Append));
    }
}

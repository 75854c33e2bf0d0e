//! The model's records sent to the cluster as the model appended them: the same keys, values
//! and timestamps to the same partitions, in the same order, so a topic the run created holds
//! them at the same offsets as the model's log — which is what lets the model's log stand in
//! for the cluster's in the audit.
//!
//! An idempotent producer with one request in flight per connection keeps the order through
//! retries; each of the model's batches is flushed before the next is sent, so the cluster's
//! batches are the model's (a share fetch acquires whole batches).

use crate::admin::ClusterError;
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::Lab;
use rdkafka::client::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use std::sync::Mutex;
use std::time::Duration;

/// What became of each record sent: librdkafka reports a failed delivery only here.
#[derive(Default)]
struct Deliveries {
    failed: Mutex<Vec<String>>,
    /// Per record delivered: its partition, the model's offset for it and the cluster's.
    /// Reports are matched by the model's offset each record carries, not by the order they
    /// arrive in: rdkafka may serve them from two polling threads at once (its own and a
    /// flush), so two reports can be pushed here out of order.
    offsets: Mutex<Vec<Delivered>>,
}

#[derive(Debug, Clone, Copy)]
struct Delivered {
    partition: i32,
    wanted: i64,
    got: i64,
}

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = Box<i64>;

    fn delivery(&self, result: &DeliveryResult<'_>, wanted: Box<i64>) {
        match result {
            Ok(m) => lock(&self.offsets).push(Delivered {
                partition: m.partition(),
                wanted: *wanted,
                got: m.offset(),
            }),
            Err((e, _)) => lock(&self.failed).push(e.to_string()),
        }
    }
}

/// A lock whose holder panicked is taken anyway (the lists are only appended to).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A record of the model's log, to be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRecord {
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
}

/// The model's records of `tp` from offset `from` on (transaction markers left out: only a
/// transactional producer writes them).
pub fn model_records(
    lab: &Lab,
    tp: &TopicPartition,
    from: i64,
) -> Result<Vec<ModelRecord>, offsetlab_engine::LabError> {
    let log = lab.partition_log(tp)?;
    let mut out = Vec::new();
    let end = log.log_end_offset();
    let mut at = from;
    while at < end {
        let before = out.len();
        let visited = log.read(at, 10_000, &mut |r| {
            if !r.control {
                out.push(ModelRecord {
                    offset: r.offset,
                    timestamp: r.timestamp,
                    key: r.key.map(<[u8]>::to_vec),
                    value: r.value.map(<[u8]>::to_vec),
                });
            }
            at = r.offset + 1;
        });
        if visited == 0 && out.len() == before {
            break;
        }
    }
    Ok(out)
}

/// The run's producer.
pub struct Sender {
    producer: ThreadedProducer<Deliveries>,
    timeout: Duration,
}

impl Sender {
    pub fn new(bootstrap: &str, extra: &[(String, String)], timeout: Duration) -> Result<Self, ClusterError> {
        let mut config = ClientConfig::new();
        config
            .set("bootstrap.servers", bootstrap)
            .set("enable.idempotence", "true")
            .set("max.in.flight.requests.per.connection", "1")
            // A batch's records are all queued before `flush` sends them (it ignores the
            // linger), so each model batch leaves as one batch — not its first record alone.
            .set("linger.ms", "50");
        for (k, v) in extra {
            config.set(k, v);
        }
        let producer =
            config
                .create_with_context(Deliveries::default())
                .map_err(|e| ClusterError::Unreachable {
                    bootstrap: bootstrap.to_string(),
                    why: e.to_string(),
                })?;
        Ok(Self { producer, timeout })
    }

    /// Sends `records` to partition `partition` of `topic` (the cluster's name) and waits until
    /// the cluster has them all.
    pub fn send(&self, topic: &str, partition: i32, records: &[ModelRecord]) -> Result<(), ClusterError> {
        let refused = |why: String| ClusterError::Refused {
            what: format!("records for {topic}-{partition}"),
            why,
        };
        for r in records {
            let mut record: BaseRecord<'_, [u8], [u8], Box<i64>> =
                BaseRecord::with_opaque_to(topic, Box::new(r.offset))
                    .partition(partition)
                    .timestamp(r.timestamp);
            if let Some(k) = &r.key {
                record = record.key(k.as_slice());
            }
            if let Some(v) = &r.value {
                record = record.payload(v.as_slice());
            }
            self.producer
                .send(record)
                .map_err(|(e, _)| refused(e.to_string()))?;
        }
        self.producer
            .flush(self.timeout)
            .map_err(|e| refused(e.to_string()))?;
        let context = self.producer.context();
        if let Some(first) = lock(&context.failed).drain(..).next() {
            return Err(refused(first));
        }
        // At the model's offsets, or the audit would compare other records.
        let mut delivered: Vec<Delivered> = lock(&context.offsets)
            .drain(..)
            .filter(|d| d.partition == partition)
            .collect();
        delivered.sort_by_key(|d| d.wanted);
        let got: Vec<i64> = delivered.iter().map(|d| d.got).collect();
        let wanted: Vec<i64> = records.iter().map(|r| r.offset).collect();
        let placed: Vec<i64> = delivered.iter().map(|d| d.wanted).collect();
        if got != wanted || placed != wanted {
            return Err(refused(format!(
                "the cluster put them at offsets {got:?}, not the model's {wanted:?} (was the topic written to by another client?)"
            )));
        }
        Ok(())
    }
}

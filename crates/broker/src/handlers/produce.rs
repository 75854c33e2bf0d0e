//! Produce, and topics created on first use.
//!
//! A Produce request's batches are checked whole before anything changes, by the produce
//! validator of `offsetlab_records` (each header read once; CRC-32C, every record's bounds,
//! offsets numbered from 0; a compressed batch — gzip, snappy, lz4, zstd — decompressed within a
//! bound to be walked, and kept compressed as it came, unless the topic's `compression.type`
//! names a codec to rewrite it in). Each partition's batches go to the session as
//! they are ([`Change::Produced`]; a transaction's records as `txn-send` lines) and the whole
//! request is one batch of changes, applied all-or-nothing under the session's lock: the log
//! appends the batches in place — with their producer's timestamps, or stamped with the lab's
//! clock on a `message.timestamp.type=LogAppendTime` topic — the
//! history names where the log keeps them (`send … stored=`), the export spells out exactly what
//! the client wrote, and the page shows them at once.
//!
//! Topics are created on first use, as a broker with `auto.create.topics.enable=true` (Kafka's
//! default) does, with one partition (`num.partitions=1`): by a Produce to an unknown topic, or
//! by a Metadata request that allows it. `--auto-create-topics false` turns that off.

use crate::auto_create::creations;
use crate::broker::Broker;
use crate::change;
use crate::produced::{owned_chunks, sent_records, Produced, Records, Refusal, Rules};
use crate::producers::Verdict;
use crate::str_bytes;
use offsetlab_wire::error::*;

use bytes::Bytes;
use offsetlab_engine::record::TopicPartition;
use offsetlab_lab::session::Change;
use offsetlab_lab::SessionGuard;
use offsetlab_records::ProducerRun;
use offsetlab_scenario::command::{Command, TxnSend};
use offsetlab_wire::kafka_protocol::messages::produce_response::{
    PartitionProduceResponse, TopicProduceResponse,
};
use offsetlab_wire::kafka_protocol::messages::TopicName;
use offsetlab_wire::kafka_protocol::messages::{ProduceRequest, ProduceResponse};
use offsetlab_wire::kafka_protocol::protocol::StrBytes;
use offsetlab_wire::Uuid;
use std::collections::BTreeMap;

/// A partition's index in a Produce request and its record batches.
type PartitionRecords = (i32, Option<Bytes>);

/// Per partition of the request, in its order: the base offset and the partition's log start
/// offset, or why it was refused.
/// Per partition: (base offset, log start offset, the log append time to answer with: the lab's
/// clock on a `LogAppendTime` topic, a resent batch's first answer's, or none).
/// A refusal carries the log start offset to answer with: −1, except for a sequence out of order,
/// which Kafka's log refuses after finding the partition (and answers with its log start).
type Answers = Vec<Vec<Result<(i64, i64, Option<i64>), (Refusal, i64)>>>;

/// Appends a Produce request's records: every partition's answer, with the offset its first
/// record was given.
pub(crate) fn handle(broker: &Broker, r: ProduceRequest, version: i16, client_id: &str) -> ProduceResponse {
    let checked = check(broker, r, version, client_id);
    append(broker, broker.lab.lock_for_change(), checked)
}

/// A Produce request's batches, validated, waiting for the lab's lock.
pub(crate) struct Checked {
    topics: Vec<(String, Vec<PartitionRecords>)>,
    /// Each topic's id as the request named it (v13+, KIP-516; nil before): the answer names
    /// the topic by it. An id the lab never gave out leaves the name empty.
    ids: Vec<Uuid>,
    checked: Vec<Vec<Result<Produced, Refusal>>>,
    txn_id: Option<String>,
    client_id: String,
    /// `acks`: −1 (all) waits for `min.insync.replicas` replicas.
    acks: i16,
}

/// The bytes of record batches a request carries: what its validation reads.
pub(crate) fn records_bytes(r: &ProduceRequest) -> usize {
    r.topic_data
        .iter()
        .flat_map(|t| &t.partition_data)
        .map(|p| p.records.as_ref().map_or(0, |b| b.len()))
        .sum()
}

/// Checks (and decompresses) the request's batches before the lab is locked, as a broker's
/// request handler checks them before the partition's lock: the page and other clients wait
/// only for the append.
pub(crate) fn check(broker: &Broker, r: ProduceRequest, version: i16, client_id: &str) -> Checked {
    let txn_id = r.transactional_id.as_ref().map(|t| String::from(t.as_str()));
    let acks = r.acks;
    let ids: Vec<Uuid> = r.topic_data.iter().map(|t| t.topic_id).collect();
    let mut topics = take_records(r);
    // Each topic's `max.message.bytes` (the broker's `message.max.bytes` for one it does not have
    // yet), read from the lab's published view: the walk waits for no lock. From v13 topics are
    // named by id. (The append checks the topic again under the lock.)
    let limits: Vec<usize> = {
        let view = broker.lab.view();
        if version >= 13 {
            for ((name, _), id) in topics.iter_mut().zip(&ids) {
                *name = view
                    .topic_named_by_id(id.as_bytes())
                    .map_or_else(String::new, str::to_string);
            }
        }
        topics
            .iter()
            .map(|(name, _)| {
                view.topic(name)
                    .map_or(broker.config.message_max_bytes, |t| t.max_message_bytes)
            })
            .collect()
    };
    // Taken, not cloned: a batch whose bytes have one owner is appended in place.
    let checked = topics
        .iter_mut()
        .zip(limits)
        .map(|((_, parts), message_max_bytes)| {
            let rules = Rules {
                version,
                message_max_bytes,
            };
            parts
                .iter_mut()
                .map(|(_, records)| sent_records(records.take().unwrap_or_default(), rules))
                .collect()
        })
        .collect();
    Checked {
        topics,
        ids,
        checked,
        txn_id,
        client_id: client_id.to_string(),
        acks,
    }
}

/// Appends checked batches under the lab's lock `s`, all-or-nothing, and saves the lab.
pub(crate) fn append(broker: &Broker, s: SessionGuard<'_>, c: Checked) -> ProduceResponse {
    let Checked {
        topics,
        ids,
        checked,
        txn_id,
        client_id,
        acks,
    } = c;
    let mut plan = Plan::new(broker, &s, &topics, txn_id, &client_id);
    if ids.iter().any(|id| !id.is_nil()) {
        // A topic named by an id the lab never gave out (v13).
        plan.refused.insert(String::new(), UNKNOWN_TOPIC_ID);
    }
    plan.acks_all = acks == -1;
    let answers: Answers = topics
        .iter()
        .zip(checked)
        .map(|((name, parts), checked)| {
            parts
                .iter()
                .zip(checked)
                .map(|(&(index, _), checked)| plan.partition(name, index, checked))
                .collect()
        })
        .collect();
    let Plan {
        changes, appended, ..
    } = plan;
    let outcome = change::apply(&broker.lab, s, changes);
    if outcome.is_ok() {
        for (producer, topic, partition, base, max_timestamp) in appended {
            broker
                .producers
                .appended(producer, &topic, partition, base, max_timestamp);
        }
    }
    respond(topics, &ids, answers, &outcome)
}

/// The request's names and partition indexes as plain values, its records taken out: with the
/// request gone, each partition's batches are views of the frame that nothing else holds.
fn take_records(mut r: ProduceRequest) -> Vec<(String, Vec<PartitionRecords>)> {
    r.topic_data
        .iter_mut()
        .map(|t| {
            let parts = t
                .partition_data
                .iter_mut()
                .map(|p| (p.index, p.records.take()))
                .collect();
            (t.name.0.to_string(), parts)
        })
        .collect()
}

/// The changes a request makes, built partition by partition under the lab's lock.
struct Plan<'a> {
    broker: &'a Broker,
    session: &'a offsetlab_lab::Session,
    txn_id: Option<String>,
    client: String,
    /// Topics the request creates, and names no client may create (with their code).
    created: Vec<String>,
    refused: BTreeMap<String, i16>,
    changes: Vec<Change>,
    /// Where each partition's next record goes once the planned changes are applied.
    planned: BTreeMap<(String, i32), i64>,
    /// Idempotent producers' batches in this request (with their largest timestamp), noted
    /// once they are stored.
    appended: Vec<(ProducerRun, String, i32, i64, i64)>,
    /// `acks=all`: a topic wanting more in-sync replicas than the lab's one is refused.
    acks_all: bool,
}

impl<'a> Plan<'a> {
    fn new(
        broker: &'a Broker,
        session: &'a offsetlab_lab::Session,
        topics: &[(String, Vec<PartitionRecords>)],
        txn_id: Option<String>,
        client: &str,
    ) -> Self {
        let names: Vec<String> = topics.iter().map(|(name, _)| name.clone()).collect();
        let (creating, refused) = if broker.config.auto_create_topics {
            creations(session, &names)
        } else {
            (Vec::new(), BTreeMap::new())
        };
        Self {
            broker,
            session,
            txn_id,
            client: client.to_string(),
            created: creating.iter().map(|c| c.name.clone()).collect(),
            refused,
            changes: creating
                .into_iter()
                .map(|c| Change::Command(Command::Topic(c)))
                .collect(),
            planned: BTreeMap::new(),
            appended: Vec::new(),
            acks_all: false,
        }
    }

    /// One partition's share: the offset its first record will get, the partition's log
    /// start offset (which an append does not move) and whether its topic stamps the log append
    /// time, or why it is refused.
    fn partition(
        &mut self,
        name: &str,
        index: i32,
        checked: Result<Produced, Refusal>,
    ) -> Result<(i64, i64, Option<i64>), (Refusal, i64)> {
        let log_start = self
            .session
            .lab()
            .partition_log(&TopicPartition::new(name, index))
            .map_or(0, |l| l.log_start_offset());
        let (base, duplicate_time) = self.base_offset(name, index, checked).map_err(|refusal| {
            let start = if refusal.0 == OUT_OF_ORDER_SEQUENCE_NUMBER {
                log_start
            } else {
                -1
            };
            (refusal, start)
        })?;
        let lab = self.session.lab();
        let log_append_time = lab.topic(name).is_ok_and(|t| {
            t.config.message_timestamp_type == offsetlab_engine::log::TimestampType::LogAppendTime
        });
        let now = lab.now();
        Ok((base, log_start, duplicate_time.or(log_append_time.then_some(now))))
    }

    fn base_offset(
        &mut self,
        name: &str,
        index: i32,
        checked: Result<Produced, Refusal>,
    ) -> Result<(i64, Option<i64>), Refusal> {
        if let Some(&code) = self.refused.get(name) {
            return Err((code, format!("'{name}' cannot be created by a client")));
        }
        let partitions = if self.created.iter().any(|c| c == name) {
            1
        } else {
            self.session
                .lab()
                .topic(name)
                .map_or(0, |t| t.partitions.len() as i32)
        };
        if !(0..partitions).contains(&index) {
            return Err((
                UNKNOWN_TOPIC_OR_PARTITION,
                format!("{name} has no partition {index}"),
            ));
        }
        let min_insync = self
            .session
            .lab()
            .topic(name)
            .map_or(1, |t| t.config.min_insync_replicas);
        if self.acks_all && min_insync > 1 {
            return Err((
                NOT_ENOUGH_REPLICAS,
                format!("{name}-{index} has 1 in-sync replica (the lab is one broker) and min.insync.replicas={min_insync}: acks=all cannot be met, nothing was appended"),
            ));
        }
        let mut produced = checked?;
        // A topic that names a codec has the batches rewritten in it, and the rewritten batch
        // meets `max.message.bytes` — refused here, for this partition only, as Kafka answers.
        if let (Records::Encoded(batches), Ok(t)) = (&mut produced.records, self.session.lab().topic(name)) {
            if let Some(codec) = t.config.compression_type.codec() {
                batches.convert(codec);
                let limit = t.config.max_message_bytes;
                if let Some(h) = batches.headers().iter().find(|h| h.total_len > limit) {
                    return Err((
                        MESSAGE_TOO_LARGE,
                        format!(
                            "{name}-{index}: a batch of {} bytes once written in {codec} is larger than max.message.bytes ({limit})",
                            h.total_len
                        ),
                    ));
                }
            }
        }
        let verdict = match produced.producer {
            Some(producer) => self
                .broker
                .producers
                .check(producer, name, index)
                .map_err(|code| (code, "a batch is missing before this one".to_string()))?,
            None => Verdict::Append,
        };
        // A resend: Kafka answers with the first write's offset, and as its log append time
        // the batch's largest timestamp, which it kept for it.
        if let Verdict::Duplicate {
            base_offset,
            max_timestamp,
        } = verdict
        {
            return Ok((base_offset, Some(max_timestamp)));
        }
        if produced.transactional && !self.is_current_transactional(&produced) {
            return Err((
                INVALID_PRODUCER_EPOCH,
                "this producer id and epoch are not the transactional.id's current ones (fenced)".to_string(),
            ));
        }
        Ok((self.append(name, index, produced), None))
    }

    /// A transactional batch's producer is its `transactional.id`'s current one.
    fn is_current_transactional(&self, produced: &Produced) -> bool {
        let (Some(txn_id), Some(run)) = (&self.txn_id, produced.producer) else {
            return false;
        };
        self.session
            .lab()
            .producers()
            .get(txn_id)
            .is_some_and(|p| p.external && p.producer_id == run.producer_id && p.epoch == run.epoch)
    }

    /// The change that appends `produced` to `name`-`index`, and the offset it starts at.
    fn append(&mut self, name: &str, index: i32, produced: Produced) -> i64 {
        let Produced {
            records, producer, ..
        } = produced;
        let tp = TopicPartition::new(name, index);
        let end = match self.planned.get(&(name.to_string(), index)) {
            Some(&e) => e,
            None => self
                .session
                .lab()
                .partition_log(&tp)
                .map_or(0, |l| l.log_end_offset()),
        };
        self.planned
            .insert((name.to_string(), index), end + records.len() as i64);
        if let Some(producer) = producer {
            self.appended
                .push((producer, name.to_string(), index, end, records.max_timestamp()));
        }
        match records {
            Records::Transactional {
                records,
                producer_id,
                epoch,
            } => {
                for chunk in owned_chunks(records) {
                    self.changes.push(Change::Command(Command::TxnSend(TxnSend {
                        txn_id: self.txn_id.clone().unwrap_or_default(),
                        producer_id,
                        epoch,
                        tp: tp.clone(),
                        records: chunk,
                    })));
                }
            }
            Records::Encoded(mut batches) => {
                stamp_leader_epoch(&mut batches);
                self.changes.push(Change::Produced {
                    topic: name.to_string(),
                    partition: index,
                    client: self.client.clone(),
                    batches,
                })
            }
        }
        end
    }
}

/// Writes the partition's leader epoch into each batch (`partitionLeaderEpoch`, bytes 12–15,
/// outside the CRC), as a leader does on append: producers send −1.
fn stamp_leader_epoch(batches: &mut offsetlab_records::ProducedBatches) {
    let (bytes, headers) = batches.parts_mut();
    let mut at = 0;
    for h in headers.iter() {
        if let Some(field) = bytes.get_mut(at + 12..at + 16) {
            field.copy_from_slice(&crate::broker::LEADER_EPOCH.to_be_bytes());
        }
        at += h.total_len;
    }
}

/// The response: each partition's base offset and, on a `LogAppendTime` topic, the log append
/// time its records carry (the lab's clock, `now`; −1 on a `CreateTime` topic, as Kafka
/// answers) — or its error, or the error that kept the whole request from being stored.
fn respond(
    topics: Vec<(String, Vec<PartitionRecords>)>,
    ids: &[Uuid],
    answers: Answers,
    outcome: &Result<(), change::Failure>,
) -> ProduceResponse {
    let answer = |index: i32, answer: Result<(i64, i64, Option<i64>), (Refusal, i64)>| {
        let base = PartitionProduceResponse::default()
            .with_index(index)
            .with_log_append_time_ms(-1)
            .with_log_start_offset(-1);
        let ((code, message), log_start) = match (answer, outcome) {
            (Ok((offset, log_start, log_append_time)), Ok(())) => {
                return base
                    .with_error_code(NONE)
                    .with_base_offset(offset)
                    .with_log_append_time_ms(log_append_time.unwrap_or(-1))
                    .with_log_start_offset(log_start)
            }
            (Ok(_), Err(failure)) => ((failure.code(), failure.message()), -1),
            (Err(refusal), _) => refusal,
        };
        base.with_error_code(code)
            .with_log_start_offset(log_start)
            .with_base_offset(-1)
            .with_error_message(Some(str_bytes(&message)))
    };
    ProduceResponse::default().with_responses(
        topics
            .into_iter()
            .zip(answers)
            .zip(ids)
            .map(|(((name, parts), topic_answers), id)| {
                TopicProduceResponse::default()
                    .with_name(TopicName(StrBytes::from_string(name)))
                    .with_topic_id(*id)
                    .with_partition_responses(
                        parts
                            .iter()
                            .zip(topic_answers)
                            .map(|(&(index, _), a)| answer(index, a))
                            .collect(),
                    )
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{batch, broker, log_end, name};
    use offsetlab_records::batch::encode_consecutive;
    use offsetlab_records::NewRecord;
    use offsetlab_wire::kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};

    fn request(topic: &str, records: Bytes) -> ProduceRequest {
        ProduceRequest::default()
            .with_acks(-1)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(TopicName(name(topic)))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(records))])])
    }

    fn answer(r: &ProduceResponse) -> (i16, i64) {
        let p = &r.responses[0].partition_responses[0];
        (p.error_code, p.base_offset)
    }

    /// One broker is one replica: with `min.insync.replicas=2` an `acks=all` produce is
    /// NOT_ENOUGH_REPLICAS and appends nothing, while `acks=1` is written — as on a one-broker
    /// Kafka.
    #[test]
    fn acks_all_needs_min_insync_replicas_the_lab_has() {
        let b = broker();
        let lines = vec!["alter-topic orders min.insync.replicas=2".to_string()];
        b.lab.lock().apply_lines(&lines).expect("alter");
        let r = handle(&b, request("orders", batch(&[("k", "v")])), 9, "c");
        assert_eq!(answer(&r).0, NOT_ENOUGH_REPLICAS);
        assert_eq!(log_end(&b, "orders"), 12, "nothing was appended");
        let r = handle(&b, request("orders", batch(&[("k", "v")])).with_acks(1), 9, "c");
        assert_eq!(answer(&r), (NONE, 12));
    }

    #[test]
    fn a_batch_is_appended_at_the_log_end_and_answered_with_its_offset() {
        let b = broker();
        let r = handle(
            &b,
            request("orders", batch(&[("o-1", "a"), ("o-2", "b")])),
            9,
            "kcat",
        );
        assert_eq!(answer(&r), (NONE, 12));
        assert_eq!(log_end(&b, "orders"), 14);
        assert!(b
            .lab
            .lock()
            .export()
            .expect("export")
            .contains("send orders partition=0 client=kcat"));
    }

    #[test]
    fn an_unknown_topic_is_created_on_first_use() {
        let b = broker();
        assert_eq!(
            answer(&handle(&b, request("fresh", batch(&[("k", "v")])), 9, "c")),
            (NONE, 0)
        );
        assert_eq!(log_end(&b, "fresh"), 1);
    }

    #[test]
    fn a_corrupt_batch_changes_nothing() {
        let b = broker();
        let mut bad = batch(&[("k", "v")]).to_vec();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert_eq!(
            answer(&handle(&b, request("orders", Bytes::from(bad)), 9, "c")).0,
            CORRUPT_MESSAGE
        );
        assert_eq!(log_end(&b, "orders"), 12, "nothing was appended");
    }

    /// Kafka takes any bytes: an Avro value behind the Schema Registry's framing and a key that
    /// is not UTF-8 are kept byte for byte (they were INVALID_RECORD before).
    #[test]
    fn binary_keys_and_values_are_kept_byte_for_byte() {
        let b = broker();
        let (key, value): (&[u8], &[u8]) = (&[0xff, 0x00, 0x9c], &[0, 0, 0, 0, 42, 0x02, 0xc8, 0x01]);
        let mut buf = Vec::new();
        encode_consecutive(
            &mut buf,
            0,
            &[NewRecord::new(1_767_225_600_000, Some(key), Some(value))],
            -1,
        );
        assert_eq!(
            answer(&handle(&b, request("orders", Bytes::from(buf)), 9, "c")).0,
            NONE
        );
        let lab = b.lab.lock();
        let log = lab
            .lab()
            .partition_log(&TopicPartition::new("orders", 0))
            .expect("orders-0");
        let mut read = Vec::new();
        log.read(12, 1, &mut |r| {
            read.push((r.key.map(<[u8]>::to_vec), r.value.map(<[u8]>::to_vec)))
        });
        assert_eq!(read, [(Some(key.to_vec()), Some(value.to_vec()))]);
    }

    #[test]
    fn an_internal_topic_is_refused() {
        let b = broker();
        let r = handle(&b, request("__consumer_offsets", batch(&[("k", "v")])), 9, "c");
        assert_eq!(answer(&r).0, INVALID_TOPIC_EXCEPTION);
    }

    /// `batch` with its records compressed by zstd: attributes, length and CRC as a producer
    /// writes them.
    fn zstd(batch: &[u8]) -> Bytes {
        const HEADER: usize = 61;
        let packed =
            ruzstd::encoding::compress_to_vec(&batch[HEADER..], ruzstd::encoding::CompressionLevel::Fastest);
        let mut out = batch[..HEADER].to_vec();
        out.extend_from_slice(&packed);
        let len = (out.len() - 12) as i32;
        out[8..12].copy_from_slice(&len.to_be_bytes());
        let attributes = i16::from_be_bytes([out[21], out[22]]) | 4;
        out[21..23].copy_from_slice(&attributes.to_be_bytes());
        let crc = crc32c::crc32c(&out[21..]);
        out[17..21].copy_from_slice(&crc.to_be_bytes());
        Bytes::from(out)
    }

    #[test]
    fn zstd_needs_produce_v7_as_kip_110_says() {
        let b = broker();
        let packed = zstd(&batch(&[("o-1", "a")]));
        let r = handle(&b, request("orders", packed.clone()), 6, "c");
        assert_eq!(answer(&r), (UNSUPPORTED_COMPRESSION_TYPE, -1));
        assert_eq!(log_end(&b, "orders"), 12, "nothing stored");
        assert_eq!(answer(&handle(&b, request("orders", packed), 7, "c")), (NONE, 12));
    }

    #[test]
    fn a_batch_past_message_max_bytes_is_message_too_large() {
        let b = broker();
        let big = "v".repeat(crate::broker::DEFAULT_MESSAGE_MAX_BYTES);
        let r = handle(&b, request("orders", batch(&[("o-1", &big)])), 9, "c");
        assert_eq!(answer(&r), (MESSAGE_TOO_LARGE, -1));
        assert_eq!(log_end(&b, "orders"), 12, "nothing stored");
        let fits = "v".repeat(1_000_000);
        assert_eq!(
            answer(&handle(&b, request("orders", batch(&[("o-1", &fits)])), 9, "c")).0,
            NONE
        );
    }

    /// A batch rewritten in the topic's `compression.type` is checked against its
    /// `max.message.bytes` as it would be written: small compressed, too large uncompressed.
    #[test]
    fn a_batch_too_large_once_rewritten_is_message_too_large() {
        let b = broker();
        let lines = vec!["topic plain compression.type=uncompressed max.message.bytes=500".to_string()];
        b.lab.lock().apply_lines(&lines).expect("topic");
        let packed = zstd(&batch(&[("o-1", &"v".repeat(2_000))]));
        assert!(packed.len() < 500, "{} bytes compressed", packed.len());
        let r = handle(&b, request("plain", packed), 9, "c");
        assert_eq!(answer(&r), (MESSAGE_TOO_LARGE, -1));
        assert_eq!(log_end(&b, "plain"), 0, "nothing stored");
    }

    /// A topic's `max.message.bytes` overrides the broker's `message.max.bytes`, both ways.
    #[test]
    fn a_topics_max_message_bytes_bounds_its_batches() {
        let b = broker();
        let lines = vec![
            "topic small max.message.bytes=200".to_string(),
            "topic large max.message.bytes=3000000".to_string(),
        ];
        b.lab.lock().apply_lines(&lines).expect("topics");
        let r = handle(&b, request("small", batch(&[("o-1", &"v".repeat(300))])), 9, "c");
        assert_eq!(answer(&r), (MESSAGE_TOO_LARGE, -1));
        assert_eq!(log_end(&b, "small"), 0, "nothing stored");
        let r = handle(&b, request("small", batch(&[("o-1", "v")])), 9, "c");
        assert_eq!(answer(&r), (NONE, 0));
        let two_megabytes = "v".repeat(2_000_000);
        let r = handle(&b, request("large", batch(&[("o-1", &two_megabytes)])), 9, "c");
        assert_eq!(
            answer(&r),
            (NONE, 0),
            "past message.max.bytes, within the topic's own"
        );
    }

    #[test]
    fn the_answer_carries_the_partitions_log_start_offset() {
        let b = broker();
        let lines = vec!["delete-records orders partition=0 before=5".to_string()];
        b.lab.lock().apply_lines(&lines).expect("delete-records");
        let r = handle(&b, request("orders", batch(&[("o-1", "a")])), 9, "c");
        let p = &r.responses[0].partition_responses[0];
        assert_eq!((p.error_code, p.base_offset, p.log_start_offset), (NONE, 12, 5));
    }
}

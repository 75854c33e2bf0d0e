//! Produce, and topics created on first use.
//!
//! A Produce request's batches are checked whole before anything changes, by the produce
//! validator of `offsetlab_records` (each header read once; CRC-32C, every record's bounds,
//! offsets numbered from 0; a compressed batch — gzip, snappy, lz4, zstd — decompressed within a
//! bound and rewritten uncompressed: the lab stores records uncompressed). Each partition's batches go to the session as
//! they are ([`Change::Produced`]; a transaction's records as `txn-send` lines) and the whole
//! request is one batch of changes, applied all-or-nothing under the session's lock: the log
//! appends the batches in place, stamped with the lab's clock as their log append time, the
//! history names where the log keeps them (`send … stored=`), the export spells out exactly what
//! the client wrote, and the page shows them at once.
//!
//! Topics are created on first use, as a broker with `auto.create.topics.enable=true` (Kafka's
//! default) does, with one partition (`num.partitions=1`): by a Produce to an unknown topic, or
//! by a Metadata request that allows it. `--auto-create-topics false` turns that off.

use super::change;
use super::producers::Verdict;
use super::Broker;
use super::{str_bytes, INVALID_TOPIC_EXCEPTION, NONE, UNKNOWN_SERVER_ERROR, UNKNOWN_TOPIC_OR_PARTITION};
use crate::api::AppState;
use bytes::Bytes;
use offsetlab_engine::lab::{SentHeader, SentRecord, MAX_SEND_RECORDS};
use offsetlab_engine::log::TopicConfig;
use offsetlab_lab::session::{Change, Session};
use offsetlab_records::{validate_produce, ProduceError, ProducedBatches};
use offsetlab_scenario::command::{Command, CreateTopic, TxnSend};
use offsetlab_wire::kafka_protocol::messages::produce_response::{
    PartitionProduceResponse, TopicProduceResponse,
};
use offsetlab_wire::kafka_protocol::messages::TopicName;
use offsetlab_wire::kafka_protocol::messages::{ProduceRequest, ProduceResponse};
use offsetlab_wire::kafka_protocol::protocol::StrBytes;
use std::collections::BTreeMap;

const CORRUPT_MESSAGE: i16 = 2;
const RECORD_LIST_TOO_LARGE: i16 = 18;
const INVALID_PRODUCER_EPOCH: i16 = 47;
const INVALID_RECORD: i16 = 87;

/// Why one partition's records were refused: Kafka's error code and the message a v8+ client
/// shows.
type Refusal = (i16, String);

/// The records of one partition's share of a Produce request.
pub(crate) enum Records {
    /// Uncompressed v2 batches as the client encoded them (compressed ones re-encoded
    /// uncompressed): appended to the log as they are.
    Encoded(ProducedBatches),
    /// A transaction's records, as text (`txn-send` lines), with the producer's id and epoch.
    Transactional {
        records: Vec<SentRecord>,
        producer_id: i64,
        epoch: i16,
    },
}

impl Records {
    fn len(&self) -> usize {
        match self {
            Records::Encoded(b) => b.records(),
            Records::Transactional { records, .. } => records.len(),
        }
    }
}

/// One partition's share of a Produce request, validated.
pub(crate) struct Produced {
    pub records: Records,
    /// Written inside a transaction (the batches' transactional bit).
    pub transactional: bool,
    /// An idempotent producer's (id, epoch, first sequence, records), when the batches carry one.
    pub producer: Option<(i64, i16, i32, i32)>,
}

/// The lab keeps text records (its history and exports spell them out): a key or value that is
/// not UTF-8 is refused with INVALID_RECORD.
const NOT_TEXT_KEY: &str = "the lab keeps text records: this key is not UTF-8";
const NOT_TEXT_VALUE: &str = "the lab keeps text records: this value is not UTF-8";
const NOT_TEXT_HEADER: &str = "the lab keeps text records: a header of this record is not UTF-8";

/// A record's headers (as encoded) as the export spells them: text, or INVALID_RECORD.
fn text_headers(raw: &[u8]) -> Result<Vec<SentHeader>, &'static str> {
    let headers = offsetlab_engine::record::headers::decode(raw).ok_or("malformed record headers")?;
    headers
        .into_iter()
        .map(|(k, v)| {
            let key = std::str::from_utf8(k).map_err(|_| NOT_TEXT_HEADER)?.to_string();
            let value = v
                .map(|v| std::str::from_utf8(v).map(str::to_string))
                .transpose()
                .map_err(|_| NOT_TEXT_HEADER)?;
            Ok(SentHeader { key, value })
        })
        .collect()
}

fn text(b: Option<&[u8]>, what: &str) -> Result<Option<String>, Refusal> {
    b.map(|b| {
        String::from_utf8(b.to_vec()).map_err(|_| {
            let message = if what == "key" {
                NOT_TEXT_KEY
            } else {
                NOT_TEXT_VALUE
            };
            (INVALID_RECORD, message.to_string())
        })
    })
    .transpose()
}

/// The records of one partition's batches, validated whole in one walk
/// ([`offsetlab_records::validate_produce`]); nothing is kept if one is bad. Batches outside a
/// transaction — what producers send by default — are kept as they came (a compressed one
/// rewritten uncompressed): no record is decoded into a value or copied on its own.
pub(crate) fn sent_records(bytes: Bytes) -> Result<Produced, Refusal> {
    let mut rule = |k: Option<&[u8]>, v: Option<&[u8]>, headers: &[u8]| {
        // ASCII (nearly every key and value) is checked a word at a time; UTF-8's own check
        // only for the rest.
        let is_text = |b: Option<&[u8]>| b.is_none_or(|b| b.is_ascii() || std::str::from_utf8(b).is_ok());
        match (is_text(k), is_text(v)) {
            (true, true) if headers.is_empty() => Ok(()),
            (true, true) => text_headers(headers).map(|_| ()),
            (false, _) => Err(NOT_TEXT_KEY),
            (_, false) => Err(NOT_TEXT_VALUE),
        }
    };
    let v = validate_produce(bytes, &mut rule).map_err(|e| {
        let code = match e {
            ProduceError::InvalidRecord(_) => INVALID_RECORD,
            ProduceError::TooLarge { .. } => RECORD_LIST_TOO_LARGE,
            ProduceError::Corrupt(_) | ProduceError::Framing(_) | ProduceError::CorruptCompressed(_) => {
                CORRUPT_MESSAGE
            }
        };
        (code, e.to_string())
    })?;
    let producer = v
        .producer
        .map(|p| (p.producer_id, p.epoch, p.first_sequence, p.records));
    if !v.transactional {
        return Ok(Produced {
            records: Records::Encoded(v.batches),
            transactional: false,
            producer,
        });
    }
    let Some((producer_id, epoch, _, _)) = producer else {
        return Err((
            INVALID_RECORD,
            "a transactional batch carries its producer id".into(),
        ));
    };
    // A transaction's records become `txn-send` lines, and carry the lab's time (CreateTime, as
    // it appends them).
    let mut records = Vec::with_capacity(v.batches.records());
    for r in v.batches.batches().flat_map(|b| b.records()) {
        records.push(SentRecord {
            key: text(r.key, "key")?,
            value: text(r.value, "value")?,
            timestamp: None,
            headers: text_headers(r.headers).map_err(|m| (INVALID_RECORD, m.to_string()))?,
            batch_timestamp: None,
        });
    }
    Ok(Produced {
        records: Records::Transactional {
            records,
            producer_id,
            epoch,
        },
        transactional: true,
        producer,
    })
}

/// `records` in pieces a `send` line may carry, moved, not copied.
fn owned_chunks(mut records: Vec<SentRecord>) -> Vec<Vec<SentRecord>> {
    let mut out = Vec::new();
    while records.len() > MAX_SEND_RECORDS {
        let rest = records.split_off(MAX_SEND_RECORDS);
        out.push(std::mem::replace(&mut records, rest));
    }
    out.push(records);
    out
}

/// A name a client may create a topic under: Kafka's legal topic names, but not one of its
/// internal topics.
pub(crate) fn creatable(name: &str) -> bool {
    offsetlab_engine::names::topic_name_problem(name).is_none()
        && !offsetlab_engine::names::is_internal_topic(name)
}

/// `topic NAME` commands (one partition, Kafka's defaults) for the unknown topics among
/// `names` that may be created, and the names that may not (internal or invalid), each with its
/// error code.
fn creations(s: &Session, names: &[String]) -> (Vec<CreateTopic>, BTreeMap<String, i16>) {
    let mut creating: Vec<CreateTopic> = Vec::new();
    let mut refused = BTreeMap::new();
    for name in names {
        if s.lab().topic(name).is_ok() || creating.iter().any(|c| &c.name == name) {
            continue;
        }
        if creatable(name) {
            creating.push(CreateTopic {
                name: name.clone(),
                config: TopicConfig::default(),
            });
        } else {
            refused.insert(name.clone(), INVALID_TOPIC_EXCEPTION);
        }
    }
    (creating, refused)
}

/// Creates the unknown topics among `names` (a Metadata request that allows it).
pub(crate) fn create_topics(app: &AppState, names: &[String]) {
    let session = app.session();
    let s = session.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (creating, _) = creations(&s, names);
    let _ = change::apply_commands(app, s, creating.into_iter().map(Command::Topic).collect());
}

/// A partition's index in a Produce request and its record batches.
type PartitionRecords = (i32, Option<Bytes>);

/// Appends a Produce request's records: every partition's answer, with the offset its first
/// record was given.
pub(crate) fn produce(
    app: &AppState,
    broker: &Broker,
    mut r: ProduceRequest,
    client_id: &str,
) -> ProduceResponse {
    let auto_create = broker.config.auto_create_topics;
    let client = String::from(client_id);
    let txn_id = r.transactional_id.as_ref().map(|t| String::from(t.as_str()));
    // Names and indexes as plain values and the records taken out: with the request gone, each
    // partition's batches are views of the frame that nothing else holds.
    let mut topics: Vec<(String, Vec<PartitionRecords>)> = r
        .topic_data
        .iter_mut()
        .map(|t| {
            let parts = t
                .partition_data
                .iter_mut()
                .map(|p| (p.index, p.records.take()))
                .collect();
            (t.name.0.to_string(), parts)
        })
        .collect();
    drop(r);
    // Batches are checked (and decompressed) before the lab is locked, as a broker's request
    // handler checks them before the partition's lock: the page and other clients wait only
    // for the append.
    let mut decoded: Vec<Vec<Option<Result<Produced, Refusal>>>> = topics
        .iter_mut()
        .map(|(_, parts)| {
            parts
                .iter_mut()
                .map(|(_, records)| Some(sent_records(records.take().unwrap_or_default())))
                .collect()
        })
        .collect();
    let session = app.session();
    let s = session.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let now = s.lab().now();
    let names: Vec<String> = topics.iter().map(|(name, _)| name.clone()).collect();
    let (creating, refused) = if auto_create {
        creations(&s, &names)
    } else {
        (Vec::new(), BTreeMap::new())
    };
    let created: Vec<String> = creating.iter().map(|c| c.name.clone()).collect();
    let mut changes: Vec<Change> = creating
        .into_iter()
        .map(|c| Change::Command(Command::Topic(c)))
        .collect();
    // Per (topic, partition index in the request): the base offset, or why it was refused.
    let mut answers: Vec<Vec<Result<i64, Refusal>>> = Vec::new();
    let mut planned: BTreeMap<(String, i32), i64> = BTreeMap::new();
    // Idempotent producers' batches in this request, noted once they are stored.
    let mut appended = Vec::new();
    for ((name, parts), t_decoded) in topics.iter().zip(decoded.iter_mut()) {
        let name = name.clone();
        let partitions = if created.contains(&name) {
            1
        } else {
            s.lab().topic(&name).map_or(0, |t| t.partitions.len() as i32)
        };
        let mut topic_answers = Vec::new();
        for (&(index, _), p_decoded) in parts.iter().zip(t_decoded.iter_mut()) {
            let answer = if let Some(&code) = refused.get(&name) {
                Err((code, format!("'{name}' cannot be created by a client")))
            } else if !(0..partitions).contains(&index) {
                Err((
                    UNKNOWN_TOPIC_OR_PARTITION,
                    format!("{name} has no partition {}", index),
                ))
            } else {
                let checked = p_decoded
                    .take()
                    .unwrap_or_else(|| Err((CORRUPT_MESSAGE, "no records".to_string())));
                let produced = checked.and_then(|produced| {
                    let verdict = match produced.producer {
                        Some(producer) => broker
                            .producers
                            .check(producer, &name, index)
                            .map_err(|code| (code, "a batch is missing before this one".to_string()))?,
                        None => Verdict::Append,
                    };
                    Ok((produced, verdict))
                });
                match produced {
                    Err(refusal) => Err(refusal),
                    Ok((_, Verdict::Duplicate { base_offset })) => Ok(base_offset),
                    Ok((
                        Produced {
                            transactional: true,
                            producer: Some((pid, epoch, _, _)),
                            ..
                        },
                        Verdict::Append,
                    )) if txn_id.is_none()
                        || !s
                            .lab()
                            .producers()
                            .get(txn_id.as_deref().unwrap_or_default())
                            .is_some_and(|p| p.external && p.producer_id == pid && p.epoch == epoch) =>
                    {
                        Err((
                            INVALID_PRODUCER_EPOCH,
                            "this producer id and epoch are not the transactional.id's current ones (fenced)"
                                .to_string(),
                        ))
                    }
                    Ok((
                        Produced {
                            records, producer, ..
                        },
                        Verdict::Append,
                    )) => {
                        let key = (name.clone(), index);
                        let end = match planned.get(&key) {
                            Some(&e) => e,
                            None => s
                                .lab()
                                .partition_log(&offsetlab_engine::record::TopicPartition::new(
                                    name.clone(),
                                    index,
                                ))
                                .map_or(0, |l| l.log_end_offset()),
                        };
                        planned.insert(key, end + records.len() as i64);
                        if let Some(producer) = producer {
                            appended.push((producer, name.clone(), index, end));
                        }
                        match records {
                            Records::Transactional {
                                records,
                                producer_id,
                                epoch,
                            } => {
                                for chunk in owned_chunks(records) {
                                    changes.push(Change::Command(Command::TxnSend(TxnSend {
                                        txn_id: txn_id.clone().unwrap_or_default(),
                                        producer_id,
                                        epoch,
                                        tp: offsetlab_engine::record::TopicPartition::new(
                                            name.clone(),
                                            index,
                                        ),
                                        records: chunk,
                                    })))
                                }
                            }
                            Records::Encoded(batches) => changes.push(Change::Produced {
                                topic: name.clone(),
                                partition: index,
                                client: client.clone(),
                                batches,
                            }),
                        }
                        Ok(end)
                    }
                }
            };
            topic_answers.push(answer);
        }
        answers.push(topic_answers);
    }
    let outcome = change::apply(app, s, changes);
    let stored = outcome.is_ok();
    if stored {
        for (producer, topic, partition, base) in appended {
            broker.producers.appended(producer, &topic, partition, base);
        }
    }
    ProduceResponse::default().with_responses(
        topics
            .into_iter()
            .zip(answers)
            .map(|((name, parts), topic_answers)| {
                TopicProduceResponse::default()
                    .with_name(TopicName(StrBytes::from_string(name)))
                    .with_partition_responses(
                        parts
                            .iter()
                            .zip(topic_answers)
                            .map(|(&(index, _), answer)| {
                                let base = PartitionProduceResponse::default()
                                    .with_index(index)
                                    .with_log_append_time_ms(-1)
                                    .with_log_start_offset(-1);
                                match answer {
                                    // The records carry the lab's clock: their log append time.
                                    Ok(offset) if stored => base
                                        .with_error_code(NONE)
                                        .with_base_offset(offset)
                                        .with_log_append_time_ms(now),
                                    Ok(_) => {
                                        let failure = outcome.as_ref().err();
                                        base.with_error_code(
                                            failure.map_or(UNKNOWN_SERVER_ERROR, |f| f.code()),
                                        )
                                        .with_base_offset(-1)
                                        .with_error_message(Some(
                                            str_bytes(&failure.map_or_else(
                                                || "the lab could not store the records".to_string(),
                                                change::Failure::message,
                                            )),
                                        ))
                                    }
                                    Err((code, message)) => base
                                        .with_error_code(code)
                                        .with_base_offset(-1)
                                        .with_error_message(Some(str_bytes(&message))),
                                }
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}

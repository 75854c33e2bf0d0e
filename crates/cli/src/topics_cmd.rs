//! `offsetlab topics --bootstrap-server HOST:PORT --list|--describe`: the topics of any broker —
//! the lab's Kafka listener or a real cluster — over the Kafka protocol, like
//! `kafka-topics.sh`, with each partition's log start and end offsets.

use crate::conn::{by_leader, Conn, Endpoint};
use crate::exit;
use offsetlab_wire::kafka_protocol::messages::list_offsets_request::{
    ListOffsetsPartition, ListOffsetsTopic,
};
use offsetlab_wire::kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use offsetlab_wire::kafka_protocol::messages::{ApiKey, ListOffsetsRequest, MetadataRequest, TopicName};
use offsetlab_wire::kafka_protocol::protocol::StrBytes;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Serialize)]
pub(crate) struct TopicInfo {
    pub(crate) topic: String,
    /// Its topic id as Kafka prints one (URL-safe base64, no padding); none from a broker that
    /// gives topics no id.
    pub(crate) topic_id: Option<String>,
    pub(crate) error_code: i16,
    pub(crate) partitions: Vec<PartitionInfo>,
}

#[derive(Debug, Serialize)]
pub(crate) struct PartitionInfo {
    pub(crate) partition: i32,
    leader: i32,
    replicas: Vec<i32>,
    isr: Vec<i32>,
    pub(crate) log_start_offset: Option<i64>,
    pub(crate) log_end_offset: Option<i64>,
}

pub(crate) fn describe(
    conn: &mut Conn,
    topics: Option<Vec<String>>,
    with_offsets: bool,
) -> anyhow::Result<Vec<TopicInfo>> {
    // Describing never creates a topic (kafka-topics.sh's admin client asks the same way).
    let request = MetadataRequest::default()
        .with_allow_auto_topic_creation(false)
        .with_topics(topics.map(|ts| {
            ts.into_iter()
                .map(|t| MetadataRequestTopic::default().with_name(Some(TopicName(StrBytes::from_string(t)))))
                .collect()
        }));
    let version = conn.version(ApiKey::Metadata, 12)?;
    let m = call!(conn, Metadata, version, request);
    let mut out: Vec<TopicInfo> = m
        .topics
        .iter()
        .map(|t| TopicInfo {
            topic: t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default(),
            topic_id: (!t.topic_id.is_nil()).then(|| {
                use base64::Engine as _;
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(t.topic_id.as_bytes())
            }),
            error_code: t.error_code,
            partitions: t
                .partitions
                .iter()
                .map(|p| PartitionInfo {
                    partition: p.partition_index,
                    leader: p.leader_id.0,
                    replicas: p.replica_nodes.iter().map(|b| b.0).collect(),
                    isr: p.isr_nodes.iter().map(|b| b.0).collect(),
                    log_start_offset: None,
                    log_end_offset: None,
                })
                .collect(),
        })
        .collect();
    out.sort_by(|a, b| a.topic.cmp(&b.topic));
    if with_offsets {
        let tps: BTreeMap<String, Vec<i32>> = out
            .iter()
            .filter(|t| t.error_code == 0)
            .map(|t| {
                (
                    t.topic.clone(),
                    t.partitions.iter().map(|p| p.partition).collect(),
                )
            })
            .collect();
        let starts = list_offsets(conn, &tps, -2)?;
        let ends = list_offsets(conn, &tps, -1)?;
        for t in &mut out {
            for p in &mut t.partitions {
                let key = (t.topic.clone(), p.partition);
                p.log_start_offset = starts.get(&key).copied();
                p.log_end_offset = ends.get(&key).copied();
            }
        }
    }
    Ok(out)
}

/// ListOffsets for `tps` at `spec` (−2 earliest, −1 latest, else a timestamp), each partition
/// asked of its leader: the offset of each partition a leader answered without an error (−1
/// where no record is that recent). A partition without a leader is absent.
pub(crate) fn list_offsets(
    conn: &mut Conn,
    tps: &BTreeMap<String, Vec<i32>>,
    spec: i64,
) -> anyhow::Result<BTreeMap<(String, i32), i64>> {
    let leaders = conn.leaders(&tps.keys().cloned().collect::<Vec<_>>())?;
    let mut out = BTreeMap::new();
    for (addr, tps) in by_leader(&leaders, tps) {
        let leader = conn.at(&addr)?;
        let version = leader.version(ApiKey::ListOffsets, 5)?;
        let request = ListOffsetsRequest::default()
            .with_replica_id((-1).into())
            .with_topics(
                tps.iter()
                    .map(|(t, ps)| {
                        ListOffsetsTopic::default()
                            .with_name(TopicName(StrBytes::from_string(t.clone())))
                            .with_partitions(
                                ps.iter()
                                    .map(|p| {
                                        ListOffsetsPartition::default()
                                            .with_partition_index(*p)
                                            .with_timestamp(spec)
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            );
        let r = call!(leader, ListOffsets, version, request);
        out.extend(r.topics.iter().flat_map(|t| {
            let name = t.name.0.to_string();
            t.partitions
                .iter()
                .filter(|p| p.error_code == 0)
                .map(move |p| ((name.clone(), p.partition_index), p.offset))
        }));
    }
    Ok(out)
}

pub fn run(endpoint: &Endpoint, list: bool, topic: Option<String>, json: bool) -> u8 {
    let result = endpoint
        .connect()
        .and_then(|mut c| describe(&mut c, topic.map(|t| vec![t]), !list));
    let topics = match result {
        Ok(t) => t,
        Err(e) => {
            crate::style::say_error!("{e}");
            return exit::IO_ERROR;
        }
    };
    if json {
        let v = if list {
            serde_json::json!(topics.iter().map(|t| &t.topic).collect::<Vec<_>>())
        } else {
            serde_json::json!(topics)
        };
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return exit::OK;
    }
    if list {
        for t in &topics {
            println!("{}", t.topic);
        }
        return exit::OK;
    }
    let mut missing = false;
    for t in &topics {
        if t.error_code != 0 {
            eprintln!(
                "Error: topic '{}' does not exist (error code {})",
                t.topic, t.error_code
            );
            missing = true;
            continue;
        }
        let rf = t.partitions.first().map_or(0, |p| p.replicas.len());
        let id = t
            .topic_id
            .as_ref()
            .map_or(String::new(), |id| format!("\tTopicId: {id}"));
        println!(
            "Topic: {}{id}\tPartitionCount: {}\tReplicationFactor: {rf}",
            t.topic,
            t.partitions.len()
        );
        let list = |v: &[i32]| v.iter().map(ToString::to_string).collect::<Vec<_>>().join(",");
        let dash = |o: Option<i64>| o.map_or("-".to_string(), |o| o.to_string());
        for p in &t.partitions {
            println!(
                "\tTopic: {}\tPartition: {}\tLeader: {}\tReplicas: {}\tIsr: {}\tLogStartOffset: {}\tLogEndOffset: {}",
                t.topic,
                p.partition,
                p.leader,
                list(&p.replicas),
                list(&p.isr),
                dash(p.log_start_offset),
                dash(p.log_end_offset)
            );
        }
    }
    if missing {
        exit::INVALID_SCENARIO
    } else {
        exit::OK
    }
}

/// The timestamp of the record at `offset` (or the first one after it), read with one Fetch of
/// at most 64 KiB — what a reset's dry run shows as the time span it moves over. `None` when the
/// partition holds no record there.
pub(crate) fn record_timestamp(
    conn: &mut Conn,
    topic: &str,
    partition: i32,
    offset: i64,
) -> anyhow::Result<Option<i64>> {
    use offsetlab_wire::kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use offsetlab_wire::kafka_protocol::messages::FetchRequest;
    use offsetlab_wire::kafka_protocol::records::{RecordBatchDecoder, TimestampType};
    let Some(addr) = conn
        .leaders(&[topic.to_string()])?
        .remove(&(topic.to_string(), partition))
    else {
        return Ok(None);
    };
    let conn = conn.at(&addr)?;
    let version = conn.version(ApiKey::Fetch, 11)?;
    let request = FetchRequest::default()
        .with_replica_id((-1).into())
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(64 << 10)
        .with_isolation_level(0)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(partition)
                .with_fetch_offset(offset)
                .with_partition_max_bytes(64 << 10)])]);
    let r = call!(conn, Fetch, version, request);
    let Some(mut records) = r
        .responses
        .first()
        .and_then(|t| t.partitions.first())
        .filter(|p| p.error_code == 0)
        .and_then(|p| p.records.clone())
    else {
        return Ok(None);
    };
    let raw = records.clone();
    // A fetch starts at the batch holding `offset`: skip what comes before it, and markers.
    let set = RecordBatchDecoder::decode(&mut records)
        .map_err(|e| anyhow::anyhow!("cannot decode the fetched records: {e}"))?;
    let Some(rec) = set
        .records
        .iter()
        .find(|rec| rec.offset >= offset && !rec.control)
    else {
        return Ok(None);
    };
    if rec.timestamp_type != TimestampType::LogAppend {
        return Ok(Some(rec.timestamp));
    }
    // A batch stamped with its log append time (a topic with
    // `message.timestamp.type=LogAppendTime`, and every record real clients produce to the lab):
    // its records' timestamp is the batch's maxTimestamp, which the decoder does not apply.
    Ok(Some(log_append_time(&raw, rec.offset).unwrap_or(rec.timestamp)))
}

/// The maxTimestamp of the batch among `raw` (fetched record batches, back to back) that holds
/// `offset`.
fn log_append_time(raw: &[u8], offset: i64) -> Option<i64> {
    use offsetlab_records::batch::BatchHeader;
    let mut at = 0;
    while let Some(h) = raw.get(at..).and_then(|b| BatchHeader::parse(b).ok()) {
        if (h.base_offset..=h.last_offset()).contains(&offset) {
            return Some(h.max_timestamp);
        }
        at += h.total_len;
    }
    None
}

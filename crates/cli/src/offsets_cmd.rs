//! `offsetlab offsets --bootstrap-server HOST:PORT [--group G] [--json]`: the records of
//! `__consumer_offsets`, decoded — what Kafka's `kafka-console-consumer.sh --topic
//! __consumer_offsets --formatter …OffsetsMessageFormatter --from-beginning` prints — read over
//! the Kafka protocol from any broker: the lab's listener or a real cluster. Each partition is
//! read from its log start to the log end it had when the command started, then the command
//! exits.

use crate::conn::{Conn, Endpoint};
use crate::exit;
use crate::topics_cmd::describe;
use offsetlab_engine::offsets::schema::{self, RecordKey};
use offsetlab_engine::offsets::CONSUMER_OFFSETS_TOPIC;
use offsetlab_records::batch::BatchHeader;
use offsetlab_wire::consumer_protocol;
use offsetlab_wire::kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use offsetlab_wire::kafka_protocol::messages::{ApiKey, FetchRequest, TopicName};
use offsetlab_wire::kafka_protocol::protocol::StrBytes;
use offsetlab_wire::kafka_protocol::records::RecordBatchDecoder;
use serde_json::{json, Value};

/// Bytes asked for per Fetch.
const FETCH_BYTES: i32 = 1 << 20;

/// One record of the topic: where it sits, its key and value bytes.
struct Raw {
    partition: i32,
    offset: i64,
    key: Option<bytes::Bytes>,
    value: Option<bytes::Bytes>,
}

pub fn run(endpoint: &Endpoint, group: Option<&str>, json_out: bool) -> u8 {
    let records = match read_all(endpoint) {
        Ok(r) => r,
        Err(e) => {
            crate::style::say_error!("{e}");
            return exit::IO_ERROR;
        }
    };
    for r in &records {
        let Some(key) = r.key.as_deref().and_then(schema::decode_key) else {
            // A key this schema does not know (a newer coordinator's record types).
            if json_out {
                println!(
                    "{}",
                    json!({"partition": r.partition, "offset": r.offset, "key": null})
                );
            } else {
                println!(
                    "{}@{}\t(a record type offsetlab does not decode)",
                    r.partition, r.offset
                );
            }
            continue;
        };
        if group.is_some_and(|g| g != key.group()) {
            continue;
        }
        if json_out {
            println!("{}", as_json(r, &key));
        } else {
            println!("{}", as_text(r, &key));
        }
    }
    exit::OK
}

/// Every record of every partition, from its log start to its end as of now.
fn read_all(endpoint: &Endpoint) -> anyhow::Result<Vec<Raw>> {
    let mut conn = endpoint.connect()?;
    let topics = describe(&mut conn, Some(vec![CONSUMER_OFFSETS_TOPIC.to_string()]), true)?;
    let topic = topics
        .into_iter()
        .find(|t| t.topic == CONSUMER_OFFSETS_TOPIC && t.error_code == 0)
        .ok_or_else(|| anyhow::anyhow!("the broker has no readable {CONSUMER_OFFSETS_TOPIC} topic"))?;
    // Each partition is read from its leader (on a cluster of several brokers, another says
    // NOT_LEADER_OR_FOLLOWER).
    let leaders = conn.leaders(&[CONSUMER_OFFSETS_TOPIC.to_string()])?;
    let mut out = Vec::new();
    for p in &topic.partitions {
        let (Some(start), Some(end)) = (p.log_start_offset, p.log_end_offset) else {
            continue;
        };
        let Some(addr) = leaders.get(&(CONSUMER_OFFSETS_TOPIC.to_string(), p.partition)) else {
            crate::style::say_warning!(
                "{CONSUMER_OFFSETS_TOPIC}-{} has no leader now: its records are not shown",
                p.partition
            );
            continue;
        };
        let leader = conn.at(addr)?;
        let mut next = start;
        while next < end {
            let after = fetch(leader, p.partition, next, end, &mut out)?;
            if after <= next {
                // A fetch that moved nothing forward: stop rather than ask again forever.
                break;
            }
            next = after;
        }
    }
    Ok(out)
}

/// One Fetch of `partition` from `from`: its records below `end` go to `out`; the next offset.
fn fetch(conn: &mut Conn, partition: i32, from: i64, end: i64, out: &mut Vec<Raw>) -> anyhow::Result<i64> {
    let version = conn.version(ApiKey::Fetch, 11)?;
    let request = FetchRequest::default()
        .with_replica_id((-1).into())
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(FETCH_BYTES)
        .with_isolation_level(0)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(StrBytes::from_static_str(CONSUMER_OFFSETS_TOPIC)))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(partition)
                .with_fetch_offset(from)
                .with_partition_max_bytes(FETCH_BYTES)])]);
    let r = call!(conn, Fetch, version, request);
    let p = r
        .responses
        .first()
        .and_then(|t| t.partitions.first())
        .ok_or_else(|| anyhow::anyhow!("the broker answered Fetch without the partition"))?;
    anyhow::ensure!(
        p.error_code == 0,
        "Fetch of {CONSUMER_OFFSETS_TOPIC}-{partition} at {from}: error code {}",
        p.error_code
    );
    let Some(records) = p.records.clone().filter(|r| !r.is_empty()) else {
        return Ok(end);
    };
    let mut next = from;
    let mut at = 0;
    // Batch by batch: a broker may end a response with a partial batch (the next fetch reads it
    // whole), and a compacted batch may hold no record at or past `from` — the position moves
    // past each whole batch's last offset either way.
    while let Some(header) = records.get(at..).and_then(|b| BatchHeader::parse(b).ok()) {
        let Some(whole) = records.get(at..at + header.total_len) else {
            break;
        };
        at += header.total_len;
        next = next.max(header.last_offset() + 1);
        let mut batch = records.slice_ref(whole);
        let set = RecordBatchDecoder::decode(&mut batch).map_err(|e| {
            anyhow::anyhow!("cannot decode {CONSUMER_OFFSETS_TOPIC}-{partition}'s records: {e}")
        })?;
        for rec in set.records.iter().filter(|r| r.offset >= from && r.offset < end) {
            if !rec.control {
                out.push(Raw {
                    partition,
                    offset: rec.offset,
                    key: rec.key.clone(),
                    value: rec.value.clone(),
                });
            }
        }
    }
    Ok(next)
}

/// Kafka 4.0's formatter shape: the key's type and fields, the value's version and fields.
fn as_json(r: &Raw, key: &RecordKey) -> Value {
    let (key, value) = match key {
        RecordKey::Offset(k) => (
            json!({"type": leading(r.key.as_deref()), "data": {"group": k.group, "topic": k.topic, "partition": k.partition}}),
            r.value.as_deref().map(|v| match schema::decode_offset_commit(v) {
                Some(v) => json!({"version": v.version, "data": {
                    "offset": v.offset, "leaderEpoch": v.leader_epoch, "metadata": v.metadata,
                    "commitTimestamp": v.commit_timestamp, "expireTimestamp": v.expire_timestamp,
                }}),
                None => json!({"error": "not an offset commit value"}),
            }),
        ),
        RecordKey::Group(g) => (
            json!({"type": leading(r.key.as_deref()), "data": {"group": g}}),
            r.value.as_deref().map(|v| match schema::decode_group_value(v) {
                Some(g) => json!({"version": leading(Some(v)), "data": {
                    "protocolType": g.protocol_type, "generation": g.generation,
                    "protocol": g.protocol, "leader": g.leader,
                    "currentStateTimestamp": g.current_state_timestamp,
                    "members": g.members.iter().map(|m| json!({
                        "memberId": m.member_id, "groupInstanceId": m.group_instance_id,
                        "clientId": m.client_id, "clientHost": m.client_host,
                        "rebalanceTimeout": m.rebalance_timeout, "sessionTimeout": m.session_timeout,
                        "subscription": consumer_protocol::subscribed_topics(&m.subscription.clone().into()),
                        "assignment": consumer_protocol::assigned_partitions(&m.assignment.clone().into()),
                    })).collect::<Vec<_>>(),
                }}),
                None => json!({"error": "not a group metadata value"}),
            }),
        ),
        RecordKey::Coordinator { kind, group, member } => (
            json!({"type": kind, "name": schema::coordinator_record_name(*kind),
                   "data": {"group": group, "memberId": member}}),
            // Its value is a consumer-protocol structure offsetlab does not decode: its size.
            r.value
                .as_deref()
                .map(|v| json!({"version": leading(Some(v)), "bytes": v.len()})),
        ),
    };
    json!({"partition": r.partition, "offset": r.offset, "key": key, "value": value})
}

/// The `int16` a key's type or a value's version is: its first two bytes; `null` for the lab's
/// former JSON records, which have none.
fn leading(bytes: Option<&[u8]>) -> Value {
    match bytes {
        Some([a, b, ..]) if *a != b'[' && *a != b'{' => json!(i16::from_be_bytes([*a, *b])),
        _ => Value::Null,
    }
}

/// One line a person reads: the key as the lab writes it, then what the value says.
fn as_text(r: &Raw, key: &RecordKey) -> String {
    let at = format!("{}@{}", r.partition, r.offset);
    match key {
        RecordKey::Coordinator { kind, group, member } => {
            let name = schema::coordinator_record_name(*kind)
                .map_or_else(|| format!("record type {kind}"), str::to_string);
            let key = match member {
                Some(m) => format!("{name}(\"{group}\", \"{m}\")"),
                None => format!("{name}(\"{group}\")"),
            };
            let value = match r.value.as_deref() {
                None => "tombstone".to_string(),
                Some(v) => format!("(a consumer-protocol value of {} bytes, not decoded)", v.len()),
            };
            format!("{at}\t{key}\t{value}")
        }
        RecordKey::Offset(k) => {
            let value = match r.value.as_deref().map(schema::decode_offset_commit) {
                None => "tombstone (the offset was deleted or expired)".to_string(),
                Some(None) => "(not an offset commit value)".to_string(),
                Some(Some(v)) => format!(
                    "offset={} leader_epoch={} metadata={:?} commit_timestamp={}",
                    v.offset,
                    v.leader_epoch,
                    v.metadata,
                    offsetlab_scenario::units::rfc3339(v.commit_timestamp)
                ),
            };
            format!("{at}\t{}\t{value}", k.display())
        }
        RecordKey::Group(g) => {
            let value = match r.value.as_deref().map(schema::decode_group_value) {
                None => "tombstone (the group was deleted)".to_string(),
                Some(None) => "(not a group metadata value)".to_string(),
                Some(Some(m)) => {
                    let members: Vec<String> = m
                        .members
                        .iter()
                        .map(|mm| {
                            let owned: Vec<String> =
                                consumer_protocol::assigned_partitions(&mm.assignment.clone().into())
                                    .into_iter()
                                    .map(|(t, p)| format!("{t}-{p}"))
                                    .collect();
                            format!(
                                "{} ({}, {}) ← {}",
                                mm.member_id,
                                mm.client_id,
                                mm.client_host,
                                if owned.is_empty() {
                                    "nothing".to_string()
                                } else {
                                    owned.join(", ")
                                }
                            )
                        })
                        .collect();
                    format!(
                        "generation={} protocol={} leader={} members=[{}]",
                        m.generation,
                        m.protocol.as_deref().unwrap_or("-"),
                        m.leader.as_deref().unwrap_or("-"),
                        members.join("; ")
                    )
                }
            };
            format!("{at}\tGroupMetadata({g:?})\t{value}")
        }
    }
}

/// What `offsetlab run/explore/serve --bootstrap-server` is handed to read a classic group's
/// generations ([`offsetlab_cluster::consumer_group::StoredGenerations`]): the group's
/// GroupMetadata records in `__consumer_offsets`, oldest first, none before its last tombstone.
pub(crate) fn generations_for_run(
    bootstrap: &str,
    extra: &[(String, String)],
    group: &str,
) -> Result<Vec<offsetlab_cluster::consumer_group::StoredGeneration>, String> {
    use offsetlab_cluster::consumer_group::StoredGeneration;
    let endpoint = Endpoint {
        bootstrap: bootstrap.to_string(),
        security: crate::conn::Security::from_properties(extra)?,
    };
    let mut records = read_all(&endpoint).map_err(|e| format!("{e:#}"))?;
    records.sort_by_key(|r| (r.partition, r.offset));
    let mut stored = Vec::new();
    for r in &records {
        let Some(RecordKey::Group(g)) = r.key.as_deref().and_then(schema::decode_key) else {
            continue;
        };
        if g != group {
            continue;
        }
        match r.value.as_deref().and_then(schema::decode_group_value) {
            Some(m) => stored.push(StoredGeneration {
                generation: m.generation,
                members: m.members.into_iter().map(|m| m.client_id).collect(),
            }),
            None if r.value.is_none() => stored.clear(),
            None => {
                return Err(format!(
                    "{CONSUMER_OFFSETS_TOPIC}-{}@{}: a GroupMetadata value offsetlab cannot decode",
                    r.partition, r.offset
                ))
            }
        }
    }
    Ok(stored)
}

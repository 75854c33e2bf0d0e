//! The conversations: request sequences, each run on both brokers in the same order, with the
//! values a broker generates (member ids, producer ids, topic ids) taken from its own answers.
//! Each API is sent at every version the lab advertises.

use crate::ensure;
use crate::target::{Abort, Step, Target};
use bytes::{Bytes, BytesMut};
use offsetlab_wire::kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use offsetlab_wire::kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use offsetlab_wire::kafka_protocol::messages::list_offsets_request::{
    ListOffsetsPartition, ListOffsetsTopic,
};
use offsetlab_wire::kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use offsetlab_wire::kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use offsetlab_wire::kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, GroupId, InitProducerIdRequest, ListOffsetsRequest, MetadataRequest,
    ProduceRequest, TopicName, TransactionalId,
};
use offsetlab_wire::kafka_protocol::protocol::StrBytes;
use offsetlab_wire::kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use offsetlab_wire::Uuid;
use std::ops::RangeInclusive;
use std::time::Duration;

mod admin;
mod configs;
mod consumer_groups;
mod data;
mod groups;
mod misc;
mod offsets;
mod share_groups;
mod topics;
mod txn;

pub type Conversation = fn(&mut Target) -> Step<()>;

/// Every conversation, in the order they run.
pub const ALL: &[(&str, Conversation)] = &[
    ("api-versions", misc::api_versions),
    ("sasl", misc::sasl),
    ("create-topics", topics::create_topics),
    ("metadata", topics::metadata),
    ("create-partitions", topics::create_partitions),
    ("delete-topics", topics::delete_topics),
    ("produce", data::produce),
    ("fetch", data::fetch),
    ("list-offsets", data::list_offsets),
    ("delete-records", data::delete_records),
    ("offset-for-leader-epoch", data::offset_for_leader_epoch),
    ("find-coordinator", groups::find_coordinator),
    ("classic-group", groups::classic_group),
    ("group-errors", groups::group_errors),
    ("describe-list-groups", groups::describe_and_list),
    ("consumer-group", consumer_groups::consumer_group),
    ("share-group", share_groups::share_group),
    ("offset-commit", offsets::offset_commit),
    ("offset-fetch", offsets::offset_fetch),
    ("delete-groups", offsets::delete_groups),
    ("offset-delete", offsets::offset_delete),
    ("idempotence", txn::idempotence),
    ("transactions", txn::transactions),
    ("transaction-admin", txn::transaction_admin),
    ("describe-configs", configs::describe_configs),
    ("incremental-alter-configs", configs::incremental_alter_configs),
    ("alter-configs", configs::alter_configs),
    ("log-dirs", admin::log_dirs),
    ("partitions-admin", admin::partitions_admin),
    ("acls", admin::acls),
    ("scram", admin::scram),
    ("quotas", admin::quotas),
    ("cluster", admin::cluster),
];

/// The versions of `key` the lab advertises: every one is sent (none for an API it does not
/// advertise: its conversation steps are skipped, and Kafka's answer to it is not compared).
pub fn versions(key: ApiKey) -> RangeInclusive<i16> {
    let (lo, hi) = offsetlab_wire::versions::advertised(key).unwrap_or((1, 0));
    RangeInclusive::new(lo, hi)
}

pub fn s(x: &str) -> StrBytes {
    StrBytes::from_string(x.to_string())
}

pub fn topic(x: &str) -> TopicName {
    TopicName(s(x))
}

pub fn group(x: &str) -> GroupId {
    GroupId(s(x))
}

pub fn txn_id(x: &str) -> TransactionalId {
    TransactionalId(s(x))
}

/// Both brokers ready: the group and transaction coordinators found (Kafka creates
/// `__consumer_offsets` and `__transaction_state` on first use, and answers
/// COORDINATOR_NOT_AVAILABLE until they are there).
pub fn warm_up(t: &mut Target) -> Step<()> {
    let key = t.name("warm-up");
    for key_type in [0i8, 1] {
        let key = key.clone();
        t.wait_until("found its coordinator", Duration::from_secs(60), |t| {
            let r = t.quiet(
                3,
                FindCoordinatorRequest::default()
                    .with_key(s(&key))
                    .with_key_type(key_type),
            )?;
            Ok(r.error_code == 0)
        })?;
    }
    // Producer ids come in blocks from the controller: the first may take a moment.
    t.wait_until("gave a producer id", Duration::from_secs(60), |t| {
        let r = t.quiet(
            4,
            InitProducerIdRequest::default()
                .with_transactional_id(None)
                .with_transaction_timeout_ms(i32::MAX),
        )?;
        // Retriable: COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR.
        ensure!(
            matches!(r.error_code, 0 | 14 | 15 | 16),
            "InitProducerId: error {}",
            r.error_code
        );
        Ok(r.error_code == 0)
    })?;
    Ok(())
}

/// Creates `name` with `partitions` (quietly) and waits until every partition has a leader;
/// its topic id.
pub fn create_topic(t: &mut Target, name: &str, partitions: i32, configs: &[(&str, &str)]) -> Step<Uuid> {
    let r = t.quiet(
        7,
        CreateTopicsRequest::default()
            .with_timeout_ms(30_000)
            .with_topics(vec![CreatableTopic::default()
                .with_name(topic(name))
                .with_num_partitions(partitions)
                .with_replication_factor(1)
                .with_configs(
                    configs
                        .iter()
                        .map(|(k, v)| {
                            CreatableTopicConfig::default()
                                .with_name(s(k))
                                .with_value(Some(s(v)))
                        })
                        .collect(),
                )]),
    )?;
    ensure!(
        r.topics.first().is_some_and(|c| c.error_code == 0),
        "creating {name}: {:?}",
        r.topics.first().map(|c| c.error_code)
    );
    wait_for_topic(t, name, partitions)
}

/// Waits until `name` has `partitions` partitions, each with a leader; its topic id.
pub fn wait_for_topic(t: &mut Target, name: &str, partitions: i32) -> Step<Uuid> {
    let mut id = Uuid::nil();
    let n = name.to_string();
    t.wait_until(
        &format!("had {name} with a leader for each partition"),
        Duration::from_secs(30),
        |t| {
            let m = t.quiet(
                12,
                MetadataRequest::default().with_topics(Some(vec![
                    MetadataRequestTopic::default().with_name(Some(topic(&n)))
                ])),
            )?;
            let Some(tm) = m.topics.first() else {
                return Ok(false);
            };
            id = tm.topic_id;
            Ok(tm.error_code == 0
                && tm.partitions.len() == partitions as usize
                && tm
                    .partitions
                    .iter()
                    .all(|p| p.error_code == 0 && p.leader_id.0 >= 0))
        },
    )?;
    t.ctx.register("uuid", &id.to_string(), &format!("id {name}"));
    // Kafka's metadata can name a leader before that broker leads: wait until each partition
    // answers ListOffsets.
    for p in 0..partitions {
        t.wait_until(&format!("led {name}-{p}"), Duration::from_secs(30), |t| {
            let r = t.quiet(
                7,
                ListOffsetsRequest::default().with_topics(vec![ListOffsetsTopic::default()
                    .with_name(topic(&n))
                    .with_partitions(vec![ListOffsetsPartition::default()
                        .with_partition_index(p)
                        .with_timestamp(-1)])]),
            )?;
            Ok(r.topics
                .first()
                .and_then(|t| t.partitions.first())
                .is_some_and(|p| p.error_code == 0))
        })?;
    }
    Ok(id)
}

/// Records `(key, value)` at this run's timestamps (`base_ts + 1 s × i`), one batch, no
/// producer id: what a producer without idempotence sends.
pub fn plain_batch(t: &Target, records: &[(&str, &str)]) -> Bytes {
    batch(t, -1, -1, -1, false, records)
}

/// One batch of `records` from producer (`pid`, `epoch`), sequences from `seq`.
pub fn batch(
    t: &Target,
    pid: i64,
    epoch: i16,
    seq: i32,
    transactional: bool,
    records: &[(&str, &str)],
) -> Bytes {
    let records: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, (k, v))| Record {
            transactional,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: pid,
            producer_epoch: epoch,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            // The encoder keeps records in one batch while offset − sequence stays the same.
            sequence: if seq < 0 { -1 } else { seq + i as i32 },
            timestamp: t.base_ts + 1000 * i as i64,
            key: Some(Bytes::copy_from_slice(k.as_bytes())),
            value: Some(Bytes::copy_from_slice(v.as_bytes())),
            headers: Default::default(),
        })
        .collect();
    if seq < 0 {
        // Without a producer: offsetlab's encoder, one batch, sequence −1.
        let plain: Vec<offsetlab_records::NewRecord<'_>> = records
            .iter()
            .map(|r| offsetlab_records::NewRecord::new(r.timestamp, r.key.as_deref(), r.value.as_deref()))
            .collect();
        let mut buf = Vec::new();
        offsetlab_records::batch::encode_consecutive(&mut buf, 0, &plain, -1);
        return Bytes::from(buf);
    }
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    if RecordBatchEncoder::encode(&mut buf, &records, &options).is_err() {
        return Bytes::new();
    }
    buf.freeze()
}

/// A Produce request of `records` to `name`-`partition` (by its id from v13).
pub fn produce_request(
    version: i16,
    name: &str,
    id: Uuid,
    partition: i32,
    records: Bytes,
    acks: i16,
) -> ProduceRequest {
    let t = if version >= 13 {
        TopicProduceData::default().with_topic_id(id)
    } else {
        TopicProduceData::default().with_name(topic(name))
    };
    ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![t.with_partition_data(vec![PartitionProduceData::default()
            .with_index(partition)
            .with_records(Some(records))])])
}

/// Produces `records` quietly (v9, acks=all; again while a new partition's leader settles);
/// the base offset.
pub fn produce_quietly(t: &mut Target, name: &str, partition: i32, records: Bytes) -> Step<i64> {
    let mut tries = 0;
    loop {
        let r = t.quiet(
            9,
            produce_request(9, name, Uuid::nil(), partition, records.clone(), -1),
        )?;
        let p = r
            .responses
            .first()
            .and_then(|t| t.partition_responses.first())
            .ok_or_else(|| Abort(format!("producing to {name}: an empty answer")))?;
        // NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION: not yet.
        if matches!(p.error_code, 3 | 6) && tries < 100 {
            tries += 1;
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        ensure!(
            p.error_code == 0,
            "producing to {name}-{partition}: error {}",
            p.error_code
        );
        return Ok(p.base_offset);
    }
}

//! Records: produced at every version, fetched back at every version, offsets listed by every
//! spec, deleted, and the leader epoch's end offset.

use super::{create_topic, plain_batch, produce_quietly, produce_request, topic, versions};
use crate::target::{Step, Target};
use offsetlab_wire::kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use offsetlab_wire::kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use offsetlab_wire::kafka_protocol::messages::list_offsets_request::{
    ListOffsetsPartition, ListOffsetsTopic,
};
use offsetlab_wire::kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use offsetlab_wire::kafka_protocol::messages::{
    ApiKey, DeleteRecordsRequest, FetchRequest, ListOffsetsRequest, OffsetForLeaderEpochRequest,
};
use offsetlab_wire::Uuid;

pub fn produce(t: &mut Target) -> Step<()> {
    let name = t.name("p");
    let id = create_topic(t, &name, 2, &[])?;
    for v in versions(ApiKey::Produce) {
        if v < 3 {
            // Produce v0–v2 (message sets before v2 batches): advertised by Kafka 4 so that old
            // clients keep compressing (KAFKA-18659), refused when sent. An empty request: acks
            // 1, timeout 1000, no topics.
            t.call_raw(
                "old-version",
                ApiKey::Produce,
                v,
                &[0, 1, 0, 0, 3, 232, 0, 0, 0, 0],
            )?;
            t.fresh_connection();
            continue;
        }
        let records = plain_batch(t, &[("k1", &format!("v{v}-a")), ("k2", &format!("v{v}-b"))]);
        t.ask(
            "acks-all",
            v,
            produce_request(v, &name, id, 0, records.clone(), -1),
        )?;
        t.ask(
            "acks-leader",
            v,
            produce_request(v, &name, id, 1, records.clone(), 1),
        )?;
        t.ask(
            "no-partition",
            v,
            produce_request(v, &name, id, 7, records.clone(), 1),
        )?;
        let unknown = t.name("p-unknown-id");
        if v >= 13 {
            t.ask(
                "unknown-id",
                v,
                produce_request(v, &unknown, Uuid::from_u128(9), 0, records, 1),
            )?;
        } else {
            t.ask(
                "bad-name",
                v,
                produce_request(v, "bad name!", Uuid::nil(), 0, records, 1),
            )?;
        }
    }
    // A topic nobody created: Kafka's Produce creates none (only Metadata does).
    let records = plain_batch(t, &[("k", "v")]);
    t.ask(
        "unknown topic",
        9,
        produce_request(9, &t.name("p-never"), Uuid::nil(), 0, records, 1),
    )?;
    // acks=0: nothing comes back; the records are there all the same.
    let records = plain_batch(t, &[("k0", "acks-zero")]);
    t.send_only("acks-none", 9, produce_request(9, &name, id, 0, records, 0))?;
    let records = plain_batch(t, &[("k3", "after")]);
    t.ask("after-acks-none", 9, produce_request(9, &name, id, 0, records, 1))?;
    // A batch that is not one: CORRUPT_MESSAGE.
    t.ask(
        "corrupt",
        9,
        produce_request(9, &name, id, 0, bytes::Bytes::from_static(&[0u8; 70]), 1),
    )?;
    Ok(())
}

fn fetch_request(v: i16, name: &str, id: Uuid, partition: i32, offset: i64) -> FetchRequest {
    let topic_part = FetchPartition::default()
        .with_partition(partition)
        .with_fetch_offset(offset)
        .with_partition_max_bytes(1 << 20);
    let t = if v >= 13 {
        FetchTopic::default().with_topic_id(id)
    } else {
        FetchTopic::default().with_topic(topic(name))
    };
    FetchRequest::default()
        .with_max_wait_ms(100)
        .with_min_bytes(1)
        .with_max_bytes(4 << 20)
        .with_topics(vec![t.with_partitions(vec![topic_part])])
}

pub fn fetch(t: &mut Target) -> Step<()> {
    let name = t.name("f");
    let id = create_topic(t, &name, 1, &[])?;
    for i in 0..3 {
        let records = plain_batch(t, &[("a", &format!("batch{i}-0")), ("b", &format!("batch{i}-1"))]);
        produce_quietly(t, &name, 0, records)?;
    }
    for v in versions(ApiKey::Fetch) {
        t.ask("from-start", v, fetch_request(v, &name, id, 0, 0))?;
        t.ask("mid-batch", v, fetch_request(v, &name, id, 0, 3))?;
        t.ask(
            "at-end",
            v,
            fetch_request(v, &name, id, 0, 6).with_max_wait_ms(10),
        )?;
        t.ask("out-of-range", v, fetch_request(v, &name, id, 0, 60))?;
        t.ask("no-partition", v, fetch_request(v, &name, id, 4, 0))?;
        if v >= 4 {
            t.ask(
                "read-committed",
                v,
                fetch_request(v, &name, id, 0, 0).with_isolation_level(1),
            )?;
        }
        if v >= 13 {
            t.ask(
                "unknown-id",
                v,
                fetch_request(v, &name, Uuid::from_u128(11), 0, 0),
            )?;
        }
    }
    // A fetch session (KIP-227): epoch 0 asks for one.
    t.ask(
        "session",
        12,
        fetch_request(12, &name, id, 0, 0).with_session_epoch(0),
    )?;
    Ok(())
}

fn list_offsets_request(v: i16, name: &str, specs: &[i64], isolation: i8) -> ListOffsetsRequest {
    ListOffsetsRequest::default()
        .with_isolation_level(isolation)
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(super::topic(name))
            .with_partitions(
                specs
                    .iter()
                    .map(|&ts| {
                        ListOffsetsPartition::default()
                            .with_partition_index(0)
                            .with_timestamp(ts)
                    })
                    .collect(),
            )])
        .with_replica_id(offsetlab_wire::kafka_protocol::messages::BrokerId(-1))
        .with_timeout_ms(if v >= 10 { 30_000 } else { 0 })
}

pub fn list_offsets(t: &mut Target) -> Step<()> {
    let name = t.name("lo");
    create_topic(t, &name, 1, &[])?;
    let records: Vec<(String, String)> = (0..5).map(|i| (format!("k{i}"), format!("v{i}"))).collect();
    let refs: Vec<(&str, &str)> = records.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    produce_quietly(t, &name, 0, plain_batch(t, &refs[..3]))?;
    produce_quietly(t, &name, 0, plain_batch(t, &refs[3..]))?;
    let base = t.base_ts;
    for v in versions(ApiKey::ListOffsets) {
        let mut specs = vec![-2, -1, base + 1500, base + 60_000, base - 1];
        if v >= 7 {
            specs.push(-3);
        }
        if v >= 8 {
            specs.push(-4);
        }
        if v >= 9 {
            specs.push(-5);
        }
        // One partition per request: Kafka refuses a partition asked twice.
        for spec in specs {
            t.ask(
                &format!("spec {}", spec_name(spec, base)),
                v,
                list_offsets_request(v, &name, &[spec], 0),
            )?;
        }
        if v >= 2 {
            t.ask("read-committed", v, list_offsets_request(v, &name, &[-1], 1))?;
        }
        t.ask(
            "unknown",
            v,
            list_offsets_request(v, &t.name("lo-missing"), &[-1], 0),
        )?;
    }
    Ok(())
}

fn spec_name(spec: i64, base: i64) -> String {
    match spec {
        -1 => "latest".into(),
        -2 => "earliest".into(),
        -3 => "max-timestamp".into(),
        -4 => "earliest-local".into(),
        -5 => "latest-tiered".into(),
        ts => format!("time base{:+}", ts - base),
    }
}

pub fn delete_records(t: &mut Target) -> Step<()> {
    for v in versions(ApiKey::DeleteRecords) {
        let name = t.name(&format!("dr{v}"));
        create_topic(t, &name, 1, &[])?;
        produce_quietly(
            t,
            &name,
            0,
            plain_batch(t, &[("a", "1"), ("b", "2"), ("c", "3"), ("d", "4")]),
        )?;
        let req = |offsets: &[(i32, i64)]| {
            DeleteRecordsRequest::default()
                .with_timeout_ms(30_000)
                .with_topics(vec![DeleteRecordsTopic::default()
                    .with_name(topic(&name))
                    .with_partitions(
                        offsets
                            .iter()
                            .map(|&(p, o)| {
                                DeleteRecordsPartition::default()
                                    .with_partition_index(p)
                                    .with_offset(o)
                            })
                            .collect(),
                    )])
        };
        t.ask("before-2", v, req(&[(0, 2)]))?;
        t.ask("behind-start", v, req(&[(0, 1)]))?;
        t.ask("past-end", v, req(&[(0, 9)]))?;
        t.ask("high-watermark", v, req(&[(0, -1)]))?;
        t.ask("no-partition", v, req(&[(3, 1)]))?;
        t.ask("fetch-after", 12, fetch_request(12, &name, Uuid::nil(), 0, 0))?;
    }
    Ok(())
}

pub fn offset_for_leader_epoch(t: &mut Target) -> Step<()> {
    let name = t.name("ole");
    create_topic(t, &name, 1, &[])?;
    produce_quietly(t, &name, 0, plain_batch(t, &[("a", "1"), ("b", "2")]))?;
    for v in versions(ApiKey::OffsetForLeaderEpoch) {
        for (step, epoch, current) in [
            ("epoch-0", 0, -1),
            ("epoch-5", 5, -1),
            ("fenced", 0, 3),
            ("current", 0, 0),
        ] {
            t.ask(
                step,
                v,
                OffsetForLeaderEpochRequest::default()
                    .with_replica_id(offsetlab_wire::kafka_protocol::messages::BrokerId(-1))
                    .with_topics(vec![OffsetForLeaderTopic::default()
                        .with_topic(topic(&name))
                        .with_partitions(vec![
                            OffsetForLeaderPartition::default()
                                .with_partition(0)
                                .with_leader_epoch(epoch)
                                .with_current_leader_epoch(current),
                            OffsetForLeaderPartition::default()
                                .with_partition(5)
                                .with_leader_epoch(0),
                        ])]),
            )?;
        }
    }
    Ok(())
}

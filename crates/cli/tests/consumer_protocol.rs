//! Kafka 4's consumer group protocol (KIP-848) on the lab's listener, with a client the lab did
//! not write: librdkafka (`group.protocol=consumer`, through the `rdkafka` crate) joins, consumes,
//! commits, scales out and in — and the raw protocol's fences: a heartbeat at a wrong epoch
//! (FENCED_MEMBER_EPOCH), a commit at a stale one (STALE_MEMBER_EPOCH), an unknown member.
//! The same scale-out on Apache Kafka 4.4 gives the same epochs and the same partitions moved
//! (docs/CONFORMANCE.md).

#[macro_use]
mod common;

use common::{http, offsetlab, ok_json, with_kafka};
use offsetlab_wire::kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use offsetlab_wire::kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use offsetlab_wire::kafka_protocol::messages::{
    ConsumerGroupHeartbeatRequest, GroupId, OffsetCommitRequest, TopicName,
};
use offsetlab_wire::kafka_protocol::protocol::StrBytes;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const TOPIC: &str = "kip848";

/// How many times each record (partition, offset) was handed to the application.
type Seen = BTreeMap<(i32, i64), usize>;

fn consumer(kafka: &str, group: &str, name: &str) -> BaseConsumer {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", kafka)
        .set("group.id", group)
        .set("group.protocol", "consumer")
        .set("client.id", name)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .create()
        .expect("consumer");
    c.subscribe(&[TOPIC]).expect("subscribe");
    c
}

fn owned(c: &BaseConsumer) -> BTreeSet<i32> {
    c.assignment()
        .map(|a| a.elements().iter().map(|e| e.partition()).collect())
        .unwrap_or_default()
}

/// Polls every consumer until `done` holds (or 30 s passed); each record taken is committed at
/// once (synchronously), so a partition that moves carries no record twice.
fn poll_until(consumers: &[&BaseConsumer], seen: &mut Seen, done: &dyn Fn(&Seen) -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if done(seen) {
            return true;
        }
        for c in consumers {
            if let Some(m) = c.poll(Duration::from_millis(50)) {
                let m = m.expect("a record");
                *seen.entry((m.partition(), m.offset())).or_default() += 1;
                c.commit_message(&m, CommitMode::Sync).expect("commit");
            }
        }
    }
    done(seen)
}

fn described(kafka: &str, group: &str) -> serde_json::Value {
    let out = offsetlab(&[
        "groups",
        "--bootstrap-server",
        kafka,
        "--describe",
        "--group",
        group,
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

#[test]
fn librdkafka_scales_a_consumer_protocol_group_out_and_in_without_a_record_twice() {
    let (lab, kafka) = with_kafka();
    let created = common::act(&lab, &[&format!("topic {TOPIC} partitions=6")]);
    assert!(created.starts_with("HTTP/1.1 200"), "{created}");
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", &kafka)
        .create()
        .expect("producer");
    for i in 0..600 {
        let (key, value) = (format!("k-{i}"), format!("v-{i}"));
        producer
            .send(BaseRecord::to(TOPIC).key(&key).payload(&value).partition(i % 6))
            .expect("queued");
    }
    producer.flush(Duration::from_secs(20)).expect("flushed");

    let group = "scale";
    let (c1, c2) = (consumer(&kafka, group, "c1"), consumer(&kafka, group, "c2"));
    let mut seen = BTreeMap::new();
    let all = |s: &Seen| s.len() == 600;
    assert!(
        poll_until(&[&c1, &c2], &mut seen, &all),
        "{} of 600 records",
        seen.len()
    );
    let split = |cs: &[&BaseConsumer], n: usize| cs.iter().all(|c| owned(c).len() == n);
    assert!(poll_until(&[&c1, &c2], &mut seen, &|_| split(&[&c1, &c2], 3)));
    // Two joins: the group, created at epoch 1 as Kafka 4.4 creates it, is at 3.
    let v = described(&kafka, group);
    assert_eq!(v["consumer_protocol"]["group_epoch"], 3, "{v}");

    // A third member joins: a partition moves from each of the two, and nothing else does.
    let before = (owned(&c1), owned(&c2));
    let c3 = consumer(&kafka, group, "c3");
    assert!(
        poll_until(&[&c1, &c2, &c3], &mut seen, &|_| split(&[&c1, &c2, &c3], 2)),
        "{:?} {:?} {:?}",
        owned(&c1),
        owned(&c2),
        owned(&c3)
    );
    assert!(owned(&c1).is_subset(&before.0) && owned(&c2).is_subset(&before.1));
    let v = described(&kafka, group);
    let cp = &v["consumer_protocol"];
    assert_eq!(
        (cp["group_epoch"].as_i64(), cp["assignor"].as_str()),
        (Some(4), Some("uniform")),
        "{v}"
    );
    let members = cp["members"].as_array().expect("members");
    assert_eq!(members.len(), 3, "{v}");
    assert!(members.iter().all(|m| m["member_epoch"] == 4), "{v}");
    // The page sees the same group: its epochs and members.
    let state = ok_json(&http(&lab.addr, "GET", "/api/state", "").expect("state")).expect("json");
    let page = &state["groups"][group];
    assert_eq!(page["consumer_group"]["group_epoch"], 4, "{page}");
    assert_eq!(
        page["consumer_group"]["members"].as_array().map(Vec::len),
        Some(3),
        "{page}"
    );

    // Scale in: c3 leaves (epoch 5), its partitions go back to the other two.
    c3.unsubscribe();
    drop(c3);
    assert!(poll_until(&[&c1, &c2], &mut seen, &|_| split(&[&c1, &c2], 3)));
    let v = described(&kafka, group);
    assert_eq!(v["consumer_protocol"]["group_epoch"], 5, "{v}");
    assert_eq!(seen.len(), 600);
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "records delivered twice: {twice:?}");
    drop((c1, c2));
    // Every partition's committed offset is its log end.
    let v = described(&kafka, group);
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 6, "{v}");
    assert!(
        rows.iter().all(|r| r["current_offset"] == 100 && r["lag"] == 0),
        "{v}"
    );
}

fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

fn heartbeat(member: &str, epoch: i32) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(str_bytes("fenced")))
        .with_member_id(str_bytes(member))
        .with_member_epoch(epoch)
        .with_rebalance_timeout_ms(if epoch == 0 { 30_000 } else { -1 })
        .with_subscribed_topic_names(if epoch == 0 {
            Some(vec![TopicName(str_bytes(TOPIC))])
        } else {
            None
        })
        .with_topic_partitions(if epoch == 0 {
            Some(Vec::<TopicPartitions>::new())
        } else {
            None
        })
}

fn commit(member: &str, epoch: i32) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(GroupId(str_bytes("fenced")))
        .with_member_id(str_bytes(member))
        .with_generation_id_or_member_epoch(epoch)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(TopicName(str_bytes(TOPIC)))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(1)])])
}

#[test]
fn member_epochs_fence_heartbeats_and_commits_as_kafka_does() {
    let (lab, kafka) = with_kafka();
    let created = common::act(&lab, &[&format!("topic {TOPIC} partitions=2")]);
    assert!(created.starts_with("HTTP/1.1 200"), "{created}");
    let mut s = TcpStream::connect(&kafka).expect("connect");
    let joined = ask!(&mut s, ConsumerGroupHeartbeat, 1, 1, heartbeat("m-1", 0));
    assert_eq!((joined.error_code, joined.member_epoch), (0, 2), "{joined:?}");
    assert_eq!(joined.heartbeat_interval_ms, 5_000);
    let assigned = joined.assignment.expect("an assignment on joining");
    assert_eq!(assigned.topic_partitions[0].partitions, vec![0, 1]);
    // A second member: the group moves to epoch 3, but its target assignment waits for the
    // assignment interval (a second since the last one, as on Kafka 4.4): the newcomer is at
    // epoch 2 with nothing, the group "Assigning".
    let second = ask!(&mut s, ConsumerGroupHeartbeat, 1, 2, heartbeat("m-2", 0));
    assert_eq!((second.error_code, second.member_epoch), (0, 2), "{second:?}");
    assert_eq!(
        second.assignment.map(|a| a.topic_partitions.len()),
        Some(0),
        "nothing yet"
    );
    assert_eq!(described(&kafka, "fenced")["state"], "Assigning");
    std::thread::sleep(std::time::Duration::from_millis(1_100));
    // Then the first must revoke one partition before the second gets it: m-1 heartbeats at
    // epoch 2, is told to keep one partition (its epoch stays 2 until it revokes).
    let told = ask!(&mut s, ConsumerGroupHeartbeat, 1, 3, heartbeat("m-1", 2));
    assert_eq!((told.error_code, told.member_epoch), (0, 2), "{told:?}");
    assert_eq!(
        told.assignment.expect("a new assignment").topic_partitions[0]
            .partitions
            .len(),
        1
    );
    // Its commit at epoch 2 is still good; one at epoch 1 is stale; an unknown member is refused.
    let code = |r: &offsetlab_wire::kafka_protocol::messages::OffsetCommitResponse| {
        r.topics[0].partitions[0].error_code
    };
    assert_eq!(code(&ask!(&mut s, OffsetCommit, 9, 4, commit("m-1", 2))), 0);
    assert_eq!(
        code(&ask!(&mut s, OffsetCommit, 9, 5, commit("m-1", 1))),
        113,
        "STALE_MEMBER_EPOCH"
    );
    assert_eq!(
        code(&ask!(&mut s, OffsetCommit, 9, 6, commit("ghost", 3))),
        25,
        "UNKNOWN_MEMBER_ID"
    );
    // A heartbeat ahead of the member's epoch is fenced; so is an unknown member's.
    let ahead = ask!(&mut s, ConsumerGroupHeartbeat, 1, 7, heartbeat("m-1", 9));
    assert_eq!(ahead.error_code, 110, "FENCED_MEMBER_EPOCH: {ahead:?}");
    let ghost = ask!(&mut s, ConsumerGroupHeartbeat, 1, 8, heartbeat("ghost", 3));
    assert_eq!(ghost.error_code, 25, "UNKNOWN_MEMBER_ID: {ghost:?}");
    // A member id is the client's from v1: an empty one is an invalid request.
    let anonymous = ask!(&mut s, ConsumerGroupHeartbeat, 1, 9, heartbeat("", 0));
    assert_eq!(anonymous.error_code, 42, "INVALID_REQUEST: {anonymous:?}");
    // The lab took the commit at epoch 2 and nothing else.
    let v = described(&kafka, "fenced");
    assert_eq!(v["rows"][0]["current_offset"], 1, "{v}");
    assert_eq!(v["consumer_protocol"]["group_epoch"], 3, "{v}");
}

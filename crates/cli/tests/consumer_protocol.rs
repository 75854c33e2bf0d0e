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

fn consumer(kafka: &str, group: &str, name: &str, topic: &str) -> BaseConsumer {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", kafka)
        .set("group.id", group)
        .set("group.protocol", "consumer")
        .set("client.id", name)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .create()
        .expect("consumer");
    c.subscribe(&[topic]).expect("subscribe");
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

/// Creates `topic` with six partitions and writes 100 records to each, through librdkafka.
fn topic_of_600(kafka: &str, topic: &str) {
    use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
    use rdkafka::client::DefaultClientContext;
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", kafka)
        .create()
        .expect("admin");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let made = runtime
        .block_on(admin.create_topics(
            &[NewTopic::new(topic, 6, TopicReplication::Fixed(1))],
            &AdminOptions::new().request_timeout(Some(Duration::from_secs(20))),
        ))
        .expect("create topics");
    assert!(made.iter().all(Result::is_ok), "{made:?}");
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", kafka)
        .create()
        .expect("producer");
    for i in 0..600 {
        let (key, value) = (format!("k-{i}"), format!("v-{i}"));
        let mut record = BaseRecord::to(topic).key(&key).payload(&value).partition(i % 6);
        // Kafka's leaders may take a moment to be known: a full local queue waits, a partition
        // not known yet is tried again.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((e, r)) => {
                    assert!(Instant::now() < deadline, "{e}");
                    producer.poll(Duration::from_millis(50));
                    record = r;
                }
            }
        }
    }
    producer.flush(Duration::from_secs(30)).expect("flushed");
}

/// One member of `group` in a process of its own — this test binary, run as
/// [`a_consumer_process`] — so that it can be killed with SIGKILL: no LeaveGroup, no last
/// heartbeat.
fn consumer_process(kafka: &str, group: &str, topic: &str) -> std::process::Child {
    std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", "a_consumer_process", "--ignored", "--nocapture"])
        .env("OFFSETLAB_TEST_CONSUMER", format!("{kafka} {group} {topic}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("a consumer process")
}

/// Not a test: the consumer process [`consumer_process`] starts (it polls until killed).
#[test]
#[ignore = "run by the consumer-protocol story as a process of its own"]
fn a_consumer_process() {
    let Ok(spec) = std::env::var("OFFSETLAB_TEST_CONSUMER") else {
        return;
    };
    let parts: Vec<&str> = spec.split(' ').collect();
    let [kafka, group, topic] = parts[..] else {
        panic!("OFFSETLAB_TEST_CONSUMER is 'BOOTSTRAP GROUP TOPIC', not {spec:?}");
    };
    let c = consumer(kafka, group, "c4", topic);
    loop {
        if let Some(Ok(m)) = c.poll(Duration::from_millis(100)) {
            let _ = c.commit_message(&m, CommitMode::Sync);
        }
    }
}

/// What the story saw, for one broker: the same on the lab's listener and on Apache Kafka.
#[derive(Debug, PartialEq)]
struct Figures {
    /// The group epoch after two joins, a third, its leave, a fourth member and its death.
    epochs: Vec<i64>,
    /// Partitions that changed owner when the third member joined.
    moved_on_scale_out: usize,
    records: usize,
    delivered_twice: usize,
    /// Every partition's committed offset, once all members are gone.
    committed: Vec<i64>,
    /// The killed member's partitions were the others' again 40 to 70 s after the SIGKILL:
    /// the session timeout (45 s), the assignment interval (1 s), a heartbeat interval (5 s),
    /// and room for a busy machine.
    dropped_after_the_session_timeout: bool,
}

/// Three members with `group.protocol=consumer` scaling out and in, each record committed as it
/// is taken; a fourth killed with SIGKILL and dropped after the session timeout.
fn scale_story(
    kafka: &str,
    group: &str,
    topic: &str,
    page: &dyn Fn() -> Option<serde_json::Value>,
) -> Figures {
    topic_of_600(kafka, topic);
    let epoch = || {
        described(kafka, group)["consumer_protocol"]["group_epoch"]
            .as_i64()
            .unwrap_or(-1)
    };
    let mut epochs = Vec::new();
    let (c1, c2) = (
        consumer(kafka, group, "c1", topic),
        consumer(kafka, group, "c2", topic),
    );
    let mut seen = Seen::new();
    let all = |s: &Seen| s.len() == 600;
    assert!(
        poll_until(&[&c1, &c2], &mut seen, &all),
        "{} of 600 records",
        seen.len()
    );
    let split = |cs: &[&BaseConsumer], n: usize| cs.iter().all(|c| owned(c).len() == n);
    assert!(poll_until(&[&c1, &c2], &mut seen, &|_| split(&[&c1, &c2], 3)));
    // Two joins: the group, created at epoch 1 as Kafka 4.4 creates it, is at 3.
    epochs.push(epoch());

    // A third member joins: a partition moves from each of the two, and nothing else does.
    let before = (owned(&c1), owned(&c2));
    let c3 = consumer(kafka, group, "c3", topic);
    assert!(
        poll_until(&[&c1, &c2, &c3], &mut seen, &|_| split(&[&c1, &c2, &c3], 2)),
        "{:?} {:?} {:?}",
        owned(&c1),
        owned(&c2),
        owned(&c3)
    );
    let moved_on_scale_out =
        before.0.difference(&owned(&c1)).count() + before.1.difference(&owned(&c2)).count();
    let v = described(kafka, group);
    let cp = &v["consumer_protocol"];
    assert_eq!(cp["assignor"].as_str(), Some("uniform"), "{v}");
    let members = cp["members"].as_array().expect("members");
    assert_eq!(members.len(), 3, "{v}");
    assert!(
        members.iter().all(|m| m["member_epoch"] == cp["group_epoch"]),
        "{v}"
    );
    epochs.push(epoch());
    if let Some(state) = page() {
        // The page sees the same group: its epochs and members.
        let g = &state["groups"][group]["consumer_group"];
        assert_eq!(
            (g["group_epoch"].as_i64(), g["members"].as_array().map(Vec::len)),
            (Some(4), Some(3)),
            "{g}"
        );
    }

    // Scale in: c3 leaves, its partitions go back to the other two.
    c3.unsubscribe();
    drop(c3);
    assert!(poll_until(&[&c1, &c2], &mut seen, &|_| split(&[&c1, &c2], 3)));
    epochs.push(epoch());

    // A fourth member in a process of its own, killed once it owns its share: it sends nothing
    // more, and keeps its partitions until the coordinator's session timeout (45 s) drops it.
    let mut c4 = consumer_process(kafka, group, topic);
    assert!(poll_until(&[&c1, &c2], &mut seen, &|_| split(&[&c1, &c2], 2)));
    epochs.push(epoch());
    c4.kill().expect("SIGKILL");
    let _ = c4.wait();
    let killed = Instant::now();
    let deadline = killed + Duration::from_secs(90);
    while !split(&[&c1, &c2], 3) {
        assert!(
            Instant::now() < deadline,
            "90 s after the kill: {:?} {:?}",
            owned(&c1),
            owned(&c2)
        );
        for c in [&c1, &c2] {
            c.poll(Duration::from_millis(100));
        }
    }
    let dropped_after = killed.elapsed().as_secs();
    eprintln!("the killed member's partitions were handed on {dropped_after} s after its SIGKILL");
    epochs.push(epoch());
    assert_eq!(
        described(kafka, group)["consumer_protocol"]["members"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );

    let delivered_twice = seen.values().filter(|n| **n > 1).count();
    let records = seen.len();
    drop((c1, c2));
    let v = described(kafka, group);
    let committed = v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["current_offset"].as_i64().unwrap_or(-1))
        .collect();
    Figures {
        epochs,
        moved_on_scale_out,
        records,
        delivered_twice,
        committed,
        dropped_after_the_session_timeout: (40..=70).contains(&dropped_after),
    }
}

/// What the story must see on either broker (Apache Kafka 4.4 and the lab's listener alike).
fn expected() -> Figures {
    Figures {
        // Created at 1; +1 per join (3, then 4); c3's leave (5); c4's join (6); c4 dropped (7).
        epochs: vec![3, 4, 5, 6, 7],
        moved_on_scale_out: 2,
        records: 600,
        delivered_twice: 0,
        committed: vec![100; 6],
        dropped_after_the_session_timeout: true,
    }
}

#[test]
fn librdkafka_scales_a_consumer_protocol_group_on_the_listener_as_on_kafka() {
    let (lab, kafka) = with_kafka();
    let page = || ok_json(&http(&lab.addr, "GET", "/api/state", "").ok()?);
    let figures = scale_story(&kafka, "scale", TOPIC, &page);
    assert_eq!(figures, expected());
}

/// The same story on Apache Kafka (`OFFSETLAB_APACHE_KAFKA`, a broker `scripts/apache-kafka.sh`
/// started; the test command runs it beside the conformance suite).
#[test]
#[ignore = "needs Apache Kafka: OFFSETLAB_APACHE_KAFKA=BOOTSTRAP (scripts/test.sh sets it)"]
fn librdkafka_scales_a_consumer_protocol_group_on_apache_kafka() {
    let kafka = std::env::var("OFFSETLAB_APACHE_KAFKA")
        .expect("OFFSETLAB_APACHE_KAFKA=BOOTSTRAP of an Apache Kafka 4.4");
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let run = format!("{}-{nanos}", std::process::id());
    let figures = scale_story(&kafka, &format!("scale-{run}"), &format!("kip848-{run}"), &|| {
        None
    });
    assert_eq!(figures, expected());
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

//! The Kafka listener against librdkafka itself, through the `rdkafka` crate (built from its
//! bundled librdkafka source): ten thousand records produced, consumed in a consumer group with
//! manual commits, the consumer stopped and a new member resuming exactly at the committed
//! offset; offsets looked up by timestamp; the lab's groups listed and described; a transactional
//! copy loop with an abort; an admin client deleting groups and topics.

mod common;

use common::{http, ok_json, serve, with_kafka, Lab};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};
use std::time::{Duration, Instant};

fn consumer(kafka: &str, group: &str) -> BaseConsumer {
    ClientConfig::new()
        .set("bootstrap.servers", kafka)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .create()
        .expect("consumer")
}

/// Polls until `n` messages arrived (or 20 s passed): (offset, key, value).
fn take(c: &BaseConsumer, n: usize) -> Vec<(i64, String, String)> {
    take_timed(c, n).into_iter().map(|(r, _)| r).collect()
}

/// [`take`], with each message's timestamp.
fn take_timed(c: &BaseConsumer, n: usize) -> Vec<((i64, String, String), rdkafka::Timestamp)> {
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.len() < n && Instant::now() < deadline {
        if let Some(m) = c.poll(Duration::from_millis(200)) {
            let m = m.expect("message");
            let text = |b: Option<&[u8]>| String::from_utf8_lossy(b.unwrap_or_default()).into_owned();
            got.push(((m.offset(), text(m.key()), text(m.payload())), m.timestamp()));
        }
    }
    got
}

fn events(partition_offset: Offset) -> TopicPartitionList {
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset("events", 0, partition_offset)
        .expect("tpl");
    tpl
}

#[test]
fn librdkafka_resumes_exactly_at_the_offset_it_committed() {
    let (lab, kafka) = with_kafka();
    let wall = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    };
    let produced_from = wall();
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", &kafka)
        .set("linger.ms", "5")
        .create()
        .expect("producer");
    for i in 0..10_000 {
        let (key, value) = (format!("k-{i}"), format!("v-{i}"));
        let mut record = BaseRecord::to("events").key(&key).payload(&value);
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((_, r)) => {
                    // The local queue is full: let deliveries drain, then send again.
                    producer.poll(Duration::from_millis(10));
                    record = r;
                }
            }
        }
    }
    producer
        .flush(Duration::from_secs(30))
        .expect("every record acknowledged");
    assert_eq!(producer.in_flight_count(), 0);

    // The topic was created on first use; the lab holds every record, in order.
    let state = ok_json(&http(&lab.addr, "GET", "/api/state", "").expect("state")).expect("json");
    assert!(state["topics"].to_string().contains("events"), "{state}");
    let produced_until = wall();

    // A consumer group: the member consumes 4,000 records and commits after processing them;
    // meanwhile the lab shows it as the group's member. Then the consumer stops (LeaveGroup).
    let first = consumer(&kafka, "copier");
    first.subscribe(&["events"]).expect("subscribe");
    let batch = take_timed(&first, 4_000);
    // The lab appended the client's batches as they came, with the producer's own timestamps:
    // the topic is CreateTime, Kafka's default.
    assert!(
        batch.iter().all(|(_, t)| matches!(t,
            rdkafka::Timestamp::CreateTime(ms) if (produced_from..=produced_until).contains(ms))),
        "{:?}",
        batch.first()
    );
    let batch: Vec<_> = batch.into_iter().map(|(r, _)| r).collect();
    assert_eq!(batch.len(), 4_000);
    assert!(batch
        .iter()
        .enumerate()
        .all(|(i, (o, k, v))| *o == i as i64 && *k == format!("k-{i}") && *v == format!("v-{i}")));
    first
        .commit(&events(Offset::Offset(4_000)), CommitMode::Sync)
        .expect("commit");
    let group = |lab: &Lab| {
        let state = ok_json(&http(&lab.addr, "GET", "/api/state", "").expect("state")).expect("json");
        state["groups"]["copier"].clone()
    };
    let live = group(&lab);
    assert_eq!(live["state"], "Stable", "{live}");
    assert_eq!(live["members"].as_array().map(Vec::len), Some(1), "{live}");
    assert_eq!(live["committed"]["events-0"], 4_000, "{live}");
    assert_eq!(live["lag"]["events-0"], 6_000, "{live}");
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(10);
    while group(&lab)["state"] != "Empty" && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(group(&lab)["state"], "Empty", "the member left when it closed");

    // A new consumer of the group starts from the committed offset: nothing lost, nothing again.
    let second = consumer(&kafka, "copier");
    let committed = second
        .committed_offsets(events(Offset::Invalid), Duration::from_secs(5))
        .expect("committed");
    assert_eq!(
        committed.find_partition("events", 0).map(|p| p.offset()),
        Some(Offset::Offset(4_000))
    );
    second.subscribe(&["events"]).expect("subscribe");
    let rest = take(&second, 6_000);
    assert_eq!(rest.len(), 6_000);
    assert_eq!(rest.first().map(|r| r.0), Some(4_000));
    assert_eq!(rest.last().map(|r| r.0), Some(9_999));
    second
        .commit(&events(Offset::Offset(10_000)), CommitMode::Sync)
        .expect("commit");
    assert_eq!(group(&lab)["lag"]["events-0"], 0);
    // The lab's history holds the group's rebalances and commits as lines.
    let scenario = http(&lab.addr, "GET", "/api/scenario", "").expect("scenario");
    assert!(
        scenario.contains("commit-offsets copier member=rdkafka-"),
        "{scenario}"
    );
    assert!(
        scenario.contains("generation=1 offsets=events:0=4000"),
        "{scenario}"
    );
}

#[test]
fn librdkafka_looks_offsets_up_by_time_and_lists_the_labs_groups() {
    let (lab, kafka) = with_kafka();
    // The seed's twelve orders at the lab's first instant, three more five seconds later (a
    // step ahead of the live clock: the clock never goes back).
    let seeded = common::first_timestamp(&lab.addr, "orders");
    let body = serde_json::json!({ "lines": ["tick 5s", "produce orders count=3"] }).to_string();
    assert!(ok_json(&http(&lab.addr, "POST", "/api/actions", &body).expect("actions")).is_some());
    let c = consumer(&kafka, "lookup");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset("orders", 0, Offset::Offset(seeded + 5_000))
        .expect("tpl");
    let found = c
        .offsets_for_times(tpl, Duration::from_secs(5))
        .expect("offsets for times");
    assert_eq!(
        found.find_partition("orders", 0).map(|p| p.offset()),
        Some(Offset::Offset(12))
    );
    let (low, high) = c
        .fetch_watermarks("orders", 0, Duration::from_secs(5))
        .expect("watermarks");
    assert_eq!((low, high), (0, 15));

    let groups = c.fetch_group_list(None, Duration::from_secs(5)).expect("groups");
    let g = groups
        .groups()
        .iter()
        .find(|g| g.name() == "analytics-prod")
        .expect("the seed's group");
    assert_eq!(g.state(), "Stable");
    assert_eq!(g.protocol_type(), "consumer");
    let members: Vec<&str> = g.members().iter().map(|m| m.client_id()).collect();
    assert_eq!(members, ["c1"]);
}

/// A transactional read-process-write loop, as librdkafka runs it: consume in a group, produce
/// the copies inside a transaction with the consumed offsets, commit; then a transaction that
/// aborts. A read_committed reader of the output sees the committed copies only, a
/// read_uncommitted one the aborted records too; the group's offsets moved with the commit only.
#[test]
fn librdkafka_copies_in_a_transaction_and_an_abort_stays_invisible() {
    use rdkafka::consumer::ConsumerGroupMetadata;
    let (lab, kafka) = with_kafka();
    let body = serde_json::json!({ "lines": ["close c1", "topic orders-copy"] }).to_string();
    assert!(ok_json(&http(&lab.addr, "POST", "/api/actions", &body).expect("actions")).is_some());
    let source = consumer(&kafka, "copier");
    source.subscribe(&["orders"]).expect("subscribe");
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", &kafka)
        .set("transactional.id", "copy-loop")
        .create()
        .expect("transactional producer");
    producer
        .init_transactions(Duration::from_secs(10))
        .expect("initTransactions");

    // Committed: the seed's twelve orders, copied, with the consumed offsets.
    let input = take(&source, 12);
    assert_eq!(input.len(), 12);
    producer.begin_transaction().expect("begin");
    for (_, key, value) in &input {
        producer
            .send(BaseRecord::to("orders-copy").key(key).payload(value).partition(0))
            .map_err(|(e, _)| e)
            .expect("send");
    }
    let group: ConsumerGroupMetadata = source.group_metadata().expect("group metadata");
    let mut offsets = TopicPartitionList::new();
    offsets
        .add_partition_offset("orders", 0, Offset::Offset(12))
        .expect("tpl");
    producer
        .send_offsets_to_transaction(&offsets, &group, Duration::from_secs(10))
        .expect("sendOffsetsToTransaction");
    producer
        .commit_transaction(Duration::from_secs(10))
        .expect("commit");

    // Aborted: three records nobody committed.
    producer.begin_transaction().expect("begin");
    for i in 0..3 {
        let key = format!("aborted-{i}");
        producer
            .send(BaseRecord::to("orders-copy").key(&key).payload("x").partition(0))
            .map_err(|(e, _)| e)
            .expect("send");
    }
    producer.flush(Duration::from_secs(10)).expect("flush");
    producer
        .abort_transaction(Duration::from_secs(10))
        .expect("abort");

    let reader = |isolation: &str| -> Vec<String> {
        let c: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &kafka)
            .set("group.id", format!("reader-{isolation}"))
            .set("isolation.level", isolation)
            .set("enable.partition.eof", "true")
            .create()
            .expect("reader");
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset("orders-copy", 0, Offset::Beginning)
            .expect("tpl");
        c.assign(&tpl).expect("assign");
        let mut keys = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            match c.poll(Duration::from_millis(200)) {
                Some(Ok(m)) => keys.push(String::from_utf8_lossy(m.key().unwrap_or_default()).into_owned()),
                Some(Err(rdkafka::error::KafkaError::PartitionEOF(_))) => break,
                _ => {}
            }
        }
        keys
    };
    let committed = reader("read_committed");
    assert_eq!(committed.len(), 12, "{committed:?}");
    assert!(committed.iter().all(|k| k.starts_with("o-")));
    let everything = reader("read_uncommitted");
    assert_eq!(everything.len(), 15, "{everything:?}");
    assert_eq!(&everything[12..], ["aborted-0", "aborted-1", "aborted-2"]);

    let state = ok_json(&http(&lab.addr, "GET", "/api/state", "").expect("state")).expect("json");
    assert_eq!(
        state["groups"]["copier"]["committed"]["orders-0"], 12,
        "{}",
        state["groups"]["copier"]
    );
    let scenario = http(&lab.addr, "GET", "/api/scenario", "").expect("scenario");
    for line in [
        "init-txn copy-loop",
        "txn-offsets copy-loop",
        "end-txn copy-loop",
        " commit",
        " abort",
    ] {
        assert!(scenario.contains(line), "{line} in {scenario}");
    }
}

/// librdkafka's admin client deletes what Kafka lets it delete: an Empty group and a topic
/// nobody in the lab reads; a group with a member is NON_EMPTY_GROUP, and the topic the lab's own
/// consumer reads stays (POLICY_VIOLATION, with the lab's reason).
#[test]
fn librdkafka_admin_deletes_an_empty_group_and_a_topic() {
    use rdkafka::admin::{AdminClient, AdminOptions};
    use rdkafka::client::DefaultClientContext;
    use rdkafka::types::RDKafkaErrorCode;
    let (_lab, kafka) = with_kafka();
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", &kafka)
        .create()
        .expect("producer");
    for i in 0..3 {
        let key = format!("k{i}");
        producer
            .send(BaseRecord::to("scratch").key(&key).payload("v"))
            .expect("queued");
    }
    producer.flush(Duration::from_secs(10)).expect("flushed");
    // Gone before the deletion, or its metadata refresh could create the topic again.
    drop(producer);
    let c = consumer(&kafka, "doomed");
    c.subscribe(&["scratch"]).expect("subscribe");
    assert_eq!(take(&c, 3).len(), 3);
    let mut done = TopicPartitionList::new();
    done.add_partition_offset("scratch", 0, Offset::Offset(3))
        .expect("tpl");
    c.commit(&done, CommitMode::Sync).expect("commit");
    drop(c);

    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &kafka)
        .create()
        .expect("admin");
    let opts = AdminOptions::new().request_timeout(Some(Duration::from_secs(10)));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let groups = runtime
        .block_on(admin.delete_groups(&["doomed", "analytics-prod"], &opts))
        .expect("delete groups");
    assert_eq!(
        groups,
        vec![
            Ok("doomed".to_string()),
            Err(("analytics-prod".to_string(), RDKafkaErrorCode::NonEmptyGroup))
        ]
    );
    let topics = runtime
        .block_on(admin.delete_topics(&["scratch", "orders"], &opts))
        .expect("delete topics");
    assert_eq!(
        topics,
        vec![
            Ok("scratch".to_string()),
            Err(("orders".to_string(), RDKafkaErrorCode::PolicyViolation))
        ]
    );
    let metadata = admin
        .inner()
        .fetch_metadata(None, Duration::from_secs(5))
        .expect("metadata");
    let names: Vec<&str> = metadata.topics().iter().map(|t| t.name()).collect();
    assert!(
        names.contains(&"orders") && !names.contains(&"scratch"),
        "{names:?}"
    );
}

/// A lab killed while a real client is a member of its group comes back with the group Empty
/// (the coordinator's memory of its members is gone, as after their session timeout); a new
/// member resumes at the committed offset and its commits land — the group's generations go on.
#[test]
fn after_a_restart_a_real_clients_group_goes_on_from_its_committed_offset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().display().to_string();
    let args = ["--data", &data, "--http", "127.0.0.1:0", "--kafka", "127.0.0.1:0"];
    let lab = serve(&args);
    let c = consumer(&lab.kafka(), "survivor");
    c.subscribe(&["orders"]).expect("subscribe");
    assert_eq!(take(&c, 12).len(), 12);
    let mut done = TopicPartitionList::new();
    done.add_partition_offset("orders", 0, Offset::Offset(12))
        .expect("tpl");
    c.commit(&done, CommitMode::Sync).expect("commit");
    drop(lab); // kill -9 while `c` is still a member
    drop(c);

    let lab = serve(&args);
    let kafka = lab.kafka();
    let body = serde_json::json!({ "lines": ["produce orders count=2"] }).to_string();
    assert!(ok_json(&http(&lab.addr, "POST", "/api/actions", &body).expect("actions")).is_some());
    let c = consumer(&kafka, "survivor");
    let groups = c
        .fetch_group_list(Some("survivor"), Duration::from_secs(5))
        .expect("groups");
    assert_eq!(groups.groups().first().map(|g| g.state()), Some("Empty"));
    c.subscribe(&["orders"]).expect("subscribe");
    let got = take(&c, 2);
    assert_eq!(got.iter().map(|(o, _, _)| *o).collect::<Vec<_>>(), [12, 13]);
    let mut done = TopicPartitionList::new();
    done.add_partition_offset("orders", 0, Offset::Offset(14))
        .expect("tpl");
    c.commit(&done, CommitMode::Sync)
        .expect("the new generation's commit lands");
    let committed = c.committed(Duration::from_secs(5)).expect("committed");
    assert_eq!(
        committed.find_partition("orders", 0).map(|p| p.offset()),
        Some(Offset::Offset(14))
    );
}

/// `fetch.min.bytes` larger than the topic: the lab waits `fetch.wait.max.ms` for more (the
/// fetch parked, nothing appended to wake it), then hands out what it has — the consumer gets
/// every record, a wait later, as from Kafka.
#[test]
fn a_fetch_waits_for_min_bytes_then_answers_with_what_there_is() {
    let (_lab, kafka) = with_kafka();
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &kafka)
        .set("group.id", "patient")
        .set("auto.offset.reset", "earliest")
        .set("fetch.min.bytes", "1000000")
        // Longer than joining the group takes.
        .set("fetch.wait.max.ms", "2000")
        .create()
        .expect("consumer");
    c.subscribe(&["orders"]).expect("subscribe");
    let started = Instant::now();
    assert_eq!(
        take(&c, 12).len(),
        12,
        "the seed's twelve orders, though fewer than min.bytes"
    );
    // The whole wait the client asked for; without min.bytes it would answer at once.
    assert!(started.elapsed() >= Duration::from_millis(2000), "after the wait");
}

/// Group ids are any string Kafka accepts: a group whose id has spaces, `#`, `=` and non-ASCII
/// joins, consumes, commits as a member, shows in the lab, and is there after a restart; a
/// client id with the same characters is kept as sent.
#[test]
fn a_group_with_any_id_commits_and_survives_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().display().to_string();
    let args = ["--data", &data, "--http", "127.0.0.1:0", "--kafka", "127.0.0.1:0"];
    let group = "my group #1 = ü";
    let lab = serve(&args);
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", lab.kafka())
        .set("group.id", group)
        .set("client.id", "svc a/b #2")
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .create()
        .expect("consumer");
    c.subscribe(&["orders"]).expect("subscribe");
    assert_eq!(take(&c, 12).len(), 12);
    let mut done = TopicPartitionList::new();
    done.add_partition_offset("orders", 0, Offset::Offset(9))
        .expect("tpl");
    c.commit(&done, CommitMode::Sync).expect("the commit lands");
    let state = ok_json(&http(&lab.addr, "GET", "/api/state", "").expect("state")).expect("state");
    assert_eq!(
        state["groups"][group]["committed"]["orders-0"], 9,
        "{}",
        state["groups"]
    );
    let scenario = http(&lab.addr, "GET", "/api/scenario", "").expect("scenario");
    assert!(scenario.contains(r#""client":"svc a/b #2""#), "{scenario}");
    drop(lab); // kill -9 while `c` is a member
    drop(c);
    let lab = serve(&args);
    let state = ok_json(&http(&lab.addr, "GET", "/api/state", "").expect("state")).expect("state");
    assert_eq!(
        state["groups"][group]["committed"]["orders-0"], 9,
        "{}",
        state["groups"]
    );
    let c = consumer(&lab.kafka(), group);
    let committed = c
        .committed_offsets(
            {
                let mut tpl = TopicPartitionList::new();
                tpl.add_partition("orders", 0);
                tpl
            },
            Duration::from_secs(5),
        )
        .expect("committed");
    assert_eq!(
        committed.find_partition("orders", 0).map(|p| p.offset()),
        Some(Offset::Offset(9))
    );
}

/// `__consumer_offsets` read as any consumer reads it — librdkafka assigned to the internal
/// topic — and decoded by `konsumer_offsets`, a parser of Kafka's own schema that shares no
/// code with the lab: a real client's commit (key type 1, value version 3) and its group's
/// metadata after the rebalance (key type 2), with the member and its assignment.
#[test]
fn consumer_offsets_decode_with_kafkas_schema_independently() {
    use konsumer_offsets::KonsumerOffsetsData;
    let (_lab, kafka) = with_kafka();
    let c = consumer(&kafka, "ko-readers");
    c.subscribe(&["orders"]).expect("subscribe");
    assert_eq!(take(&c, 3).len(), 3);
    let mut done = TopicPartitionList::new();
    done.add_partition_offset("orders", 0, Offset::Offset(3))
        .expect("tpl");
    c.commit(&done, CommitMode::Sync).expect("commit");
    drop(c);

    let reader: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &kafka)
        .set("group.id", "ko-tool")
        .set("enable.auto.commit", "false")
        .create()
        .expect("reader");
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset("__consumer_offsets", 0, Offset::Beginning)
        .expect("tpl");
    reader.assign(&tpl).expect("assign");
    let mut decoded = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let Some(m) = reader.poll(Duration::from_millis(200)) else {
            if !decoded.is_empty() {
                break;
            }
            continue;
        };
        let m = m.expect("message");
        decoded.push(KonsumerOffsetsData::try_from_bytes(m.key(), m.payload()).expect("Kafka's schema"));
    }
    let commit = decoded.iter().find_map(|d| match d {
        KonsumerOffsetsData::OffsetCommit(o) if o.group == "ko-readers" && !o.is_tombstone => Some(o),
        _ => None,
    });
    let commit = commit.expect("the commit of ko-readers");
    assert_eq!(
        (commit.topic.as_str(), commit.partition, commit.offset),
        ("orders", 0, 3)
    );
    assert_eq!((commit.message_version, commit.schema_version), (1, 3));
    let group = decoded
        .iter()
        .filter_map(|d| match d {
            KonsumerOffsetsData::GroupMetadata(g) if g.group == "ko-readers" && !g.is_tombstone => Some(g),
            _ => None,
        })
        .find(|g| !g.members.is_empty())
        .expect("the group's metadata after its rebalance");
    assert_eq!((group.protocol_type.as_str(), group.generation), ("consumer", 1));
    let member = &group.members[0];
    assert_eq!(group.leader, member.id);
    assert_eq!(member.subscription.subscribed_topics, ["orders"]);
    let owned: Vec<(String, Vec<i32>)> = member
        .assignment
        .assigned_topic_partitions
        .iter()
        .map(|t| (t.topic.clone(), t.partitions.clone()))
        .collect();
    assert_eq!(owned, [("orders".to_string(), vec![0])]);
    // The lab's own group's metadata is in the same topic.
    assert!(decoded.iter().any(|d| matches!(d,
        KonsumerOffsetsData::GroupMetadata(g) if g.group == "analytics-prod" && g.members.iter().any(|m| m.client_id == "c1"))));
}

/// `message.timestamp.type=LogAppendTime`: the lab stamps its own clock over the producer's
/// timestamps, and librdkafka reads that type and that time.
#[test]
fn a_log_append_time_topic_stamps_the_labs_time() {
    let (lab, kafka) = with_kafka();
    common::act_ok(
        &lab,
        &["topic stamped message.timestamp.type=LogAppendTime", "tick 5s"],
    );
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", &kafka)
        .create()
        .expect("producer");
    for i in 0..3 {
        let value = format!("v-{i}");
        producer
            .send(
                BaseRecord::<(), _>::to("stamped")
                    .payload(&value)
                    .timestamp(1_000),
            )
            .expect("queued");
    }
    producer.flush(Duration::from_secs(10)).expect("acknowledged");
    let state = ok_json(&http(&lab.addr, "GET", "/api/state", "").expect("state")).expect("json");
    let clock = state["clock_ms"].as_i64().expect("the lab's clock");
    let c = consumer(&kafka, "stamped-readers");
    c.subscribe(&["stamped"]).expect("subscribe");
    let got = take_timed(&c, 3);
    assert_eq!(got.len(), 3);
    assert!(
        got.iter()
            .all(|(_, t)| *t == rdkafka::Timestamp::LogAppendTime(clock)),
        "{got:?}"
    );
}

/// A producer compressing with `codec` (lz4 and snappy are built into the librdkafka the
/// rdkafka crate builds), waiting for nothing: linger lets each flush send one batch.
fn compressing(kafka: &str, codec: &str) -> BaseProducer {
    ClientConfig::new()
        .set("bootstrap.servers", kafka)
        .set("compression.codec", codec)
        // Each test expects one batch per producer: 50 ms once let a busy machine send the
        // first record before the others were queued (flush() then waits out the linger).
        .set("linger.ms", "1000")
        .create()
        .expect("producer")
}

/// Sends `values` to `topic` partition 0 as one batch, acknowledged.
fn send_all(producer: &BaseProducer, topic: &str, values: &[String]) {
    for (i, v) in values.iter().enumerate() {
        let key = format!("k{i}");
        producer
            .send(BaseRecord::to(topic).partition(0).key(&key).payload(v))
            .expect("queued");
    }
    producer.flush(Duration::from_secs(10)).expect("acknowledged");
}

/// Values that compress: librdkafka sends a batch uncompressed when compressing would not make
/// it smaller.
fn compressible() -> Vec<String> {
    vec!["x".repeat(400), "y".repeat(400), "short".to_string()]
}

/// A current librdkafka compressing with lz4 or snappy: the lab keeps each batch as the producer
/// compressed it (`compression.type=producer`, Kafka's default) and a Fetch hands out those
/// bytes; a topic that names a codec (or `uncompressed`) has them rewritten in it.
#[test]
fn compressed_batches_are_kept_as_the_producer_compressed_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().display().to_string();
    let args = ["--data", &data, "--http", "127.0.0.1:0", "--kafka", "127.0.0.1:0"];
    let lab = serve(&args);
    let kafka = lab.kafka();
    common::act_ok(
        &lab,
        &[
            "topic kept",
            "topic plain compression.type=uncompressed",
            "topic packed compression.type=lz4",
        ],
    );
    for (codec, topic, stored) in [
        ("lz4", "kept", "lz4"),
        ("snappy", "kept", "snappy"),
        ("lz4", "plain", "uncompressed"),
        ("snappy", "packed", "lz4"),
    ] {
        send_all(&compressing(&kafka, codec), topic, &compressible());
        let batches = common::fetched(&kafka, topic);
        assert_eq!(
            common::codecs(&batches).last().copied(),
            Some(stored),
            "{codec} into {topic}"
        );
    }
    let kept = common::fetched(&kafka, "kept");
    assert_eq!(common::codecs(&kept), ["lz4", "snappy"]);
    // kill -9 and a start that recovers the segments: the same bytes, compressed.
    drop(lab);
    let lab = serve(&args);
    let kafka = lab.kafka();
    assert_eq!(common::fetched(&kafka, "kept"), kept, "after a restart");
    // Every record reads back, whatever it is stored in.
    for (topic, batches) in [("kept", 2), ("plain", 1), ("packed", 1)] {
        let c = consumer(&kafka, &format!("readers-{topic}"));
        c.subscribe(&[topic]).expect("subscribe");
        let sent = compressible();
        let got = take(&c, sent.len() * batches);
        let values: Vec<&str> = got.iter().map(|(_, _, v)| v.as_str()).collect();
        let expected: Vec<&str> = std::iter::repeat_n(&sent, batches)
            .flatten()
            .map(String::as_str)
            .collect();
        assert_eq!(values, expected, "{topic}");
    }
}

/// A lab holding compressed batches and commits with metadata, exported and imported: the same
/// records in the same codecs, the same committed offsets and metadata, the same figures; the
/// replayed lab exports the same lines, and replaying those again gives the same bytes.
#[test]
fn an_export_of_compressed_batches_and_commit_metadata_replays_the_same() {
    let (lab, kafka) = with_kafka();
    common::act_ok(&lab, &["topic zipped"]);
    send_all(&compressing(&kafka, "lz4"), "zipped", &compressible());
    send_all(&compressing(&kafka, "snappy"), "zipped", &compressible());
    // A commit with metadata from a real member, and one from outside the group.
    let c = consumer(&kafka, "auditors");
    c.subscribe(&["zipped"]).expect("subscribe");
    assert_eq!(take(&c, 6).len(), 6);
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset("zipped", 0, Offset::Offset(4))
        .expect("tpl");
    c.commit(&tpl, rdkafka::consumer::CommitMode::Sync)
        .expect("commit");
    drop(c);
    common::act_ok(
        &lab,
        &[r#"alter-offsets billing offsets=zipped:0=1 metadata={"zipped:0":"batch 7, host a"}"#],
    );
    let before = common::fetched(&kafka, "zipped");
    assert_eq!(common::codecs(&before), ["lz4", "snappy"]);
    let body = |res: String| {
        res.split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .expect("body")
    };
    let export = body(http(&lab.addr, "GET", "/api/scenario", "").expect("export"));
    assert!(
        export.contains("compression=lz4") && export.contains("compression=snappy"),
        "{export}"
    );
    assert!(export.contains("batch 7, host a"), "{export}");
    let figures = |lab: &Lab| {
        let mut v = ok_json(&http(&lab.addr, "GET", "/api/state", "").expect("state")).expect("json");
        // What two labs with the same story may differ in: their clocks and directories, and
        // the narrative that names them.
        for k in [
            "clock_ms",
            "elapsed_ms",
            "version",
            "narrative",
            "storage",
            "history_lines",
            "clock_mode",
        ] {
            v.as_object_mut().expect("object").remove(k);
        }
        v
    };
    let (other, other_kafka) = with_kafka();
    let res = http(&other.addr, "POST", "/api/scenario", &export).expect("import");
    assert!(res.starts_with("HTTP/1.1 200"), "{res}");
    let (a, b) = (figures(&other), figures(&lab));
    for (k, v) in b.as_object().expect("object") {
        assert_eq!(&a[k], v, "the same {k}");
    }
    let replayed = common::fetched(&other_kafka, "zipped");
    assert_eq!(common::codecs(&replayed), ["lz4", "snappy"], "the same codecs");
    let again = body(http(&other.addr, "GET", "/api/scenario", "").expect("export"));
    assert_eq!(again, export, "the replayed lab exports the same lines");
    let (third, third_kafka) = with_kafka();
    let res = http(&third.addr, "POST", "/api/scenario", &again).expect("import");
    assert!(res.starts_with("HTTP/1.1 200"), "{res}");
    assert_eq!(
        common::fetched(&third_kafka, "zipped"),
        replayed,
        "a replay's batches are the same bytes"
    );
}

//! A cluster of three Apache Kafka brokers (`scripts/test.sh` starts it: see `brokers/mod.rs`
//! for how these tests are run, and skipped only outside the test command): a lesson with
//! `--compare` whose partitions are led by three different brokers, bootstrapped from a broker
//! that is not its group's coordinator; then the admin commands on what it left —
//! `topics --describe`, `groups --list` and `--describe`, `groups --reset-offsets … --execute`,
//! `offsets` — each asked of that same broker, which must route every request to the
//! partition's leader or the group's coordinator.

mod brokers;
#[macro_use]
mod common;

use brokers::{cluster, ok, text};

fn repo(path: &str) -> String {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
        .display()
        .to_string()
}

/// One row of `groups --describe`: partition, committed offset, log end offset, lag.
type Row = (i64, Option<i64>, Option<i64>, Option<i64>);

/// `offsetlab groups --describe --json` of `group`: its rows.
fn described(via: &str, group: &str) -> Vec<Row> {
    let out = ok(&[
        "groups",
        "--bootstrap-server",
        via,
        "--describe",
        "--group",
        group,
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let rows = v["rows"].as_array().unwrap_or_else(|| panic!("no rows: {out}"));
    rows.iter()
        .map(|r| {
            (
                r["partition"].as_i64().expect("partition"),
                r["current_offset"].as_i64(),
                r["log_end_offset"].as_i64(),
                r["lag"].as_i64(),
            )
        })
        .collect()
}

#[test]
fn three_brokers_a_lesson_and_the_admin_commands_across_leaders_and_a_coordinator_elsewhere() {
    let Some(k) = cluster() else { return };
    // Bootstrapped from node 1; the group is coordinated by node 2 or 3.
    let (prefix, coordinator) = k.prefix_coordinated("three", "payments", |node| node != 1);
    let via = k.addr[&1].clone();
    let (group, topic) = (format!("{prefix}payments"), format!("{prefix}orders"));
    let started = std::time::Instant::now();
    let o = brokers::offsetlab(&[
        "run",
        &repo("crates/cluster/scenarios/three-leaders.scn"),
        "--bootstrap-server",
        &via,
        "--prefix",
        &prefix,
        "--compare",
        "--keep",
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("The cluster's figures equal the model's."), "{out}");
    eprintln!(
        "three-leaders.scn on three brokers (coordinator node {coordinator}, bootstrap node 1): {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // Its three partitions, each led by another broker.
    let leaders = k.leaders(1, &topic);
    let mut nodes: Vec<i32> = leaders.values().copied().collect();
    nodes.sort_unstable();
    assert_eq!(nodes, [1, 2, 3], "{leaders:?}");
    let describe = ok(&[
        "topics",
        "--bootstrap-server",
        &via,
        "--describe",
        "--topic",
        &topic,
    ]);
    for (p, leader) in &leaders {
        assert!(
            describe.contains(&format!(
                "Partition: {p}\tLeader: {leader}\tReplicas: {leader}\tIsr: {leader}\tLogStartOffset: 0\tLogEndOffset: 4"
            )),
            "{describe}"
        );
    }

    // The group, coordinated by another broker than the one asked: listed (every broker is
    // asked) and described with the offsets its coordinator holds and each leader's log end.
    assert!(k.groups(1).contains(&group), "{:?}", k.groups(1));
    assert_eq!(
        described(&via, &group),
        [
            (0, Some(4), Some(4), Some(0)),
            (1, Some(4), Some(4), Some(0)),
            (2, Some(4), Some(4), Some(0)),
        ]
    );
    // Reset to the earliest offsets, committed at the coordinator.
    let reset = ok(&[
        "groups",
        "--bootstrap-server",
        &via,
        "--reset-offsets",
        "--group",
        &group,
        "--topic",
        &topic,
        "--to-earliest",
        "--execute",
    ]);
    assert!(!reset.contains("dry run"), "{reset}");
    assert_eq!(
        described(&via, &group),
        [
            (0, Some(0), Some(4), Some(4)),
            (1, Some(0), Some(4), Some(4)),
            (2, Some(0), Some(4), Some(4)),
        ]
    );
    // `__consumer_offsets` as the coordinator wrote it: the group's records are all in the
    // partition its id hashes to, read from that partition's leader (the coordinator).
    let partitions = k.offsets_topic_ready();
    let home = brokers::offsets_partition(&group, partitions.len());
    assert_eq!(partitions[&home], coordinator);
    let records = ok(&["offsets", "--bootstrap-server", &via, "--group", &group]);
    let lines: Vec<&str> = records.lines().collect();
    assert!(lines.len() >= 6, "{records}");
    assert!(
        lines.iter().all(|l| l.starts_with(&format!("{home}@"))),
        "{records}"
    );
    for p in 0..3 {
        assert!(
            records.contains(&format!("('{group}', '{topic}', {p})")),
            "{records}"
        );
    }
    assert!(
        records.contains(&format!("GroupMetadata(\"{group}\")")),
        "{records}"
    );
}

/// The page of `serve --bootstrap-server` follows the wall clock, and so do the records it
/// produces: Kafka takes them (it refuses a record more than an hour in its future,
/// `log.message.timestamp.after.max.ms`), and the page's log view, read from the cluster, shows
/// the instants its lab shows. Stopped with SIGTERM, it deletes its topic.
#[test]
fn three_brokers_the_page_on_a_cluster_produces_on_the_wall_clock() {
    let Some(k) = cluster() else { return };
    let via = k.addr[&1].clone();
    let page = common::serve(&[
        "--http",
        "127.0.0.1:0",
        "--bootstrap-server",
        &via,
        "--prefix",
        "page-",
    ]);
    for line in ["topic orders partitions=3", "produce orders count=6"] {
        let answer = common::act(&page, &[line]);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    let mut seen = 0;
    for p in 0..3 {
        let window = common::ok_json(
            &common::http(
                &page.addr,
                "GET",
                &format!("/api/records?topic=orders&partition={p}"),
                "",
            )
            .expect("records"),
        )
        .expect("200");
        assert_eq!(window["source"], "cluster", "{window}");
        for r in window["records"].as_array().expect("records") {
            let at = r["timestamp"].as_i64().expect("timestamp");
            assert!((now - at).abs() < 60_000, "{r} at {now}");
            seen += 1;
        }
    }
    assert_eq!(seen, 6);
    assert!(k.topics(1).contains(&"page-orders".to_string()));
    let stopped = std::process::Command::new("kill")
        .args(["-TERM", &page.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(stopped.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while k.topics(1).contains(&"page-orders".to_string()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the page's topic is still there"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// A group that speaks the consumer protocol (KIP-848: librdkafka's `group.protocol=consumer`)
/// is described, not "does not exist": DescribeGroups answers for classic groups only, so
/// `groups --describe` asks the coordinator ConsumerGroupDescribe first, as Kafka's admin client
/// does — and shows the epochs that protocol is about. Asked of a broker that is not the group's
/// coordinator.
#[test]
fn three_brokers_a_consumer_protocol_group_is_described_with_its_epochs() {
    use rdkafka::config::ClientConfig;
    use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    let Some(k) = cluster() else { return };
    let (prefix, _) = k.prefix_coordinated(&format!("kip848-{}", std::process::id()), "readers", |node| {
        node != 1
    });
    let via = k.addr[&1].clone();
    let (group, topic) = (format!("{prefix}readers"), format!("{prefix}events"));
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", &via)
        .create()
        .expect("producer");
    for i in 0..5 {
        let key = format!("k{i}");
        producer
            .send(BaseRecord::to(&topic).key(&key).payload("v").partition(0))
            .expect("queued");
    }
    producer
        .flush(std::time::Duration::from_secs(30))
        .expect("produced");
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &via)
        .set("group.id", &group)
        .set("group.protocol", "consumer")
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .create()
        .expect("consumer");
    consumer.subscribe(&[&topic]).expect("subscribed");
    let (mut read, deadline) = (0, std::time::Instant::now() + std::time::Duration::from_secs(60));
    while read < 5 {
        assert!(std::time::Instant::now() < deadline, "read {read} of 5 records");
        if let Some(Ok(_)) = consumer.poll(std::time::Duration::from_millis(200)) {
            read += 1;
        }
    }
    consumer
        .commit_consumer_state(CommitMode::Sync)
        .expect("committed");
    let described = |json: bool| {
        let mut args = vec![
            "groups",
            "--bootstrap-server",
            &via,
            "--describe",
            "--group",
            &group,
        ];
        if json {
            args.push("--json");
        }
        ok(&args)
    };
    // The member's epoch reaches the group's once it owns its target assignment.
    let (mut v, deadline) = (
        serde_json::Value::Null,
        std::time::Instant::now() + std::time::Duration::from_secs(30),
    );
    while std::time::Instant::now() < deadline {
        consumer.poll(std::time::Duration::from_millis(100));
        v = serde_json::from_str(&described(true)).expect("json");
        if v["state"] == "Stable" {
            break;
        }
    }
    assert_eq!(v["state"], "Stable", "{v}");
    let cp = &v["consumer_protocol"];
    let epoch = cp["group_epoch"].as_i64().expect("a group epoch");
    // Kafka 4.4 creates the group at epoch 1 and the first member's join bumps it once — as the
    // lab's model does (`ConsumerGroup::created`).
    assert_eq!(epoch, 2, "{v}");
    assert_eq!(cp["assignment_epoch"].as_i64(), Some(epoch), "{v}");
    let members = cp["members"].as_array().expect("members");
    assert_eq!(members.len(), 1, "{v}");
    let member = members[0]["member_id"].as_str().expect("a member id");
    assert!(!member.is_empty(), "{v}");
    assert_eq!(members[0]["member_epoch"].as_i64(), Some(epoch), "{v}");
    assert_eq!(members[0]["assigned"], serde_json::json!([[topic, 0]]), "{v}");
    assert_eq!(members[0]["target"], members[0]["assigned"], "{v}");
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 1, "{v}");
    assert_eq!(rows[0]["current_offset"].as_i64(), Some(5), "{v}");
    assert_eq!(rows[0]["lag"].as_i64(), Some(0), "{v}");
    assert_eq!(rows[0]["consumer_id"], member, "{v}");
    let shown = described(false);
    assert!(
        shown.contains("speaks the consumer protocol (KIP-848)"),
        "{shown}"
    );
    assert!(shown.contains("MEMBER-EPOCH"), "{shown}");
    // `__consumer_offsets` holds the protocol's own records of the group beside its offset
    // commit: each named, with the group (and member) its key gives.
    let records = ok(&["offsets", "--bootstrap-server", &via, "--group", &group]);
    for name in [
        "ConsumerGroupMetadata(",
        "ConsumerGroupMemberMetadata(",
        "ConsumerGroupTargetAssignmentMember(",
        "ConsumerGroupCurrentMemberAssignment(",
    ] {
        assert!(
            records.contains(&format!("{name}\"{group}\"")),
            "{name}: {records}"
        );
    }
    assert!(
        records.contains(&format!("('{group}', '{topic}', 0)\toffset=5")),
        "{records}"
    );
    assert!(!records.contains("does not decode"), "{records}");
    // Closed, the member leaves: the group is Empty and still described, its offset kept.
    drop(consumer);
    let v: serde_json::Value = serde_json::from_str(&described(true)).expect("json");
    assert_eq!(v["state"], "Empty", "{v}");
    assert_eq!(v["consumer_protocol"]["members"], serde_json::json!([]), "{v}");
    assert_eq!(v["rows"][0]["current_offset"].as_i64(), Some(5), "{v}");
    // A group nobody has is still one that does not exist (ConsumerGroupDescribe and
    // DescribeGroups both say so): exit 2.
    let none = brokers::offsetlab(&[
        "groups",
        "--bootstrap-server",
        &via,
        "--describe",
        "--group",
        &format!("{prefix}nobody"),
    ]);
    assert_eq!(none.status.code(), Some(2), "{}", text(&none));
}

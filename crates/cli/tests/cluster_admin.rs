//! offsetlab-cluster's admin connection against the lab's Kafka listener: reaching a cluster,
//! creating the run's topics and never one that exists, deleting only what the run created —
//! and the one-line errors of an unreachable cluster.

#[macro_use]
mod common;

use common::serve;
use offsetlab_cluster::admin::{Cluster, ClusterError};
use std::time::{Duration, Instant};

#[test]
fn a_run_creates_its_topics_never_one_that_exists_and_deletes_what_it_created() {
    let lab = serve(&["--ephemeral", "--http", "127.0.0.1:0", "--kafka", "127.0.0.1:0"]);
    let cluster = Cluster::connect(&lab.kafka(), &[], Duration::from_secs(10)).expect("reachable");
    // The seed's `orders` is not the run's: refused, untouched.
    assert_eq!(
        cluster.create_topic("orders", 1, &[]),
        Err(ClusterError::TopicExists("orders".into()))
    );
    let mine = "offsetlab-0000002a-orders".to_string();
    let configs = [("retention.ms".to_string(), "86400000".to_string())];
    cluster.create_topic(&mine, 2, &configs).expect("created");
    assert!(cluster.topic_exists(&mine).expect("metadata"));
    let again = cluster.create_topic(&mine, 2, &[]).expect_err("exists now");
    assert_eq!(again.exit_code(), 2);
    assert!(
        again
            .to_string()
            .contains("never writes to one it did not create"),
        "{again}"
    );
    assert_eq!(
        cluster.delete(std::slice::from_ref(&mine), &["offsetlab-0000002a-g".into()]),
        vec![]
    );
    assert!(!cluster.topic_exists(&mine).expect("metadata"));
    assert!(
        cluster.topic_exists("orders").expect("metadata"),
        "what the run did not create stays"
    );
}

#[test]
fn an_unreachable_cluster_is_one_line_and_exit_code_3() {
    // A port nobody listens on.
    let free = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = free.local_addr().expect("addr").to_string();
    drop(free);
    let started = Instant::now();
    let e = Cluster::connect(&addr, &[], Duration::from_secs(3))
        .err()
        .expect("unreachable");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(e.exit_code(), 3);
    let text = e.to_string();
    assert!(
        text.starts_with(&format!("cannot reach the cluster at {addr}")),
        "{text}"
    );
    assert!(!text.contains('\n'), "one line: {text}");
}

#[test]
fn the_models_records_land_at_the_models_offsets() {
    use offsetlab_engine::record::TopicPartition;
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::message::Message;
    use rdkafka::ClientConfig;

    let lab = serve(&["--ephemeral", "--http", "127.0.0.1:0", "--kafka", "127.0.0.1:0"]);
    let kafka = lab.kafka();
    let mut model = offsetlab_engine::Lab::default();
    let script = offsetlab_scenario::Script::parse("topic orders partitions=2\nproduce orders count=12\n")
        .expect("script");
    for line in &script.lines {
        line.command.apply(&mut model).expect("applies");
    }
    let cluster = Cluster::connect(&kafka, &[], Duration::from_secs(10)).expect("reachable");
    let topic = "offsetlab-00000007-orders";
    cluster.create_topic(topic, 2, &[]).expect("created");
    let sender =
        offsetlab_cluster::produce::Sender::new(&kafka, &[], Duration::from_secs(10)).expect("producer");
    let mut wanted = Vec::new();
    for partition in 0..2 {
        let records =
            offsetlab_cluster::produce::model_records(&model, &TopicPartition::new("orders", partition), 0)
                .expect("model");
        assert!(!records.is_empty());
        sender.send(topic, partition, &records).expect("sent");
        wanted.extend(
            records
                .into_iter()
                .map(|r| (partition, r.offset, r.key, r.value, r.timestamp)),
        );
    }
    assert_eq!(wanted.len(), 12);

    let reader: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &kafka)
        .set("group.id", "offsetlab-00000007-reader")
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .create()
        .expect("reader");
    reader.subscribe(&[topic]).expect("subscribe");
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.len() < wanted.len() && Instant::now() < deadline {
        if let Some(Ok(m)) = reader.poll(Duration::from_millis(200)) {
            got.push((
                m.partition(),
                m.offset(),
                m.key().map(<[u8]>::to_vec),
                m.payload().map(<[u8]>::to_vec),
                m.timestamp().to_millis().unwrap_or(-1),
            ));
        }
    }
    got.sort();
    wanted.sort();
    assert_eq!(
        got, wanted,
        "the same records at the same offsets, with the model's timestamps"
    );
    drop(reader);
    assert_eq!(
        cluster.delete(&[topic.to_string()], &["offsetlab-00000007-reader".into()]),
        vec![]
    );
}

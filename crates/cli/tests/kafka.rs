//! The Kafka listener against a real client nobody here wrote: kcat (librdkafka). It lists the
//! lab's topics, consumes the lab's log from any offset, looks offsets up by timestamp, honours
//! the isolation level on a transactional topic, and produces into the lab (topics created on
//! first use). A malformed or oversized frame closes that connection and nothing else.

#[macro_use]
mod common;

use common::{act_ok, http, offsetlab, ok_json, serve, with_kafka, Lab};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;

/// kcat, or a failure that says how to get it (the tests never skip).
fn kcat(args: &[&str], stdin: Option<&str>) -> (String, String) {
    let mut child = Command::new("kcat")
        // Cargo points LD_LIBRARY_PATH at build outputs, among them the librdkafka the rdkafka
        // crate builds (without zlib): kcat must load its own, Debian's.
        .env_remove("LD_LIBRARY_PATH")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("these tests need kcat (apt-get install kcat): {e}"));
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write");
    } else {
        drop(child.stdin.take());
    }
    let out = child.wait_with_output().expect("kcat");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn consume(kafka: &str, topic: &str, extra: &[&str]) -> Vec<(i64, String)> {
    let mut args = vec![
        "-b", kafka, "-C", "-t", topic, "-p", "0", "-e", "-q", "-f", "%o %k\\n",
    ];
    args.extend_from_slice(extra);
    let (out, err) = kcat(&args, None);
    out.lines()
        .map(|l| {
            let (o, k) = l.split_once(' ').unwrap_or_else(|| panic!("{l:?} ({err})"));
            (o.parse().expect("offset"), k.to_string())
        })
        .collect()
}

/// Every record of partition 0 of `topic`, as `offset key=value|`.
fn read_back(kafka: &str, topic: &str) -> String {
    read_back_with(kafka, topic, &[])
}

/// [`read_back`] with more kcat arguments (`-X` properties, say).
fn read_back_with(kafka: &str, topic: &str, extra: &[&str]) -> String {
    let base = [
        "-b",
        kafka,
        "-C",
        "-t",
        topic,
        "-p",
        "0",
        "-e",
        "-q",
        "-o",
        "beginning",
        "-f",
        "%o %k=%s|",
    ];
    let (out, err) = kcat(&[&base[..], extra].concat(), None);
    assert!(!err.contains("ERROR"), "{err}");
    out
}

#[test]
fn kcat_reads_the_labs_log() {
    let (lab, kafka) = with_kafka();
    let (meta, err) = kcat(&["-b", &kafka, "-L"], None);
    assert!(
        meta.contains(r#"topic "orders" with 1 partitions"#),
        "{meta}{err}"
    );
    // The seed: 12 orders.
    let all = consume(&kafka, "orders", &["-o", "beginning"]);
    assert_eq!(all.len(), 12);
    assert_eq!(all[0], (0, "o-1".to_string()));
    assert_eq!(all[11], (11, "o-12".to_string()));
    assert_eq!(
        consume(&kafka, "orders", &["-o", "-3"]).len(),
        3,
        "the last three"
    );
    assert_eq!(
        consume(&kafka, "orders", &["-o", "10"]).first().map(|r| r.0),
        Some(10)
    );
    // Produced in the lab five seconds later, read by kcat at once.
    act_ok(&lab, &["tick 5s", "produce orders count=3"]);
    let all = consume(&kafka, "orders", &["-o", "beginning"]);
    assert_eq!(all.last(), Some(&(14, "o-15".to_string())));
    // ListOffsets by timestamp: the first record at or after 5 s past the first one.
    let first_ts = {
        let (out, _) = kcat(
            &[
                "-b",
                &kafka,
                "-C",
                "-t",
                "orders",
                "-p",
                "0",
                "-o",
                "beginning",
                "-c",
                "1",
                "-q",
                "-f",
                "%T",
            ],
            None,
        );
        out.trim().parse::<i64>().expect("timestamp")
    };
    let (q, err) = kcat(
        &[
            "-b",
            &kafka,
            "-Q",
            "-t",
            &format!("orders:0:{}", first_ts + 5_000),
        ],
        None,
    );
    assert!(q.contains("offset 12"), "{q}{err}");
}

#[test]
fn read_committed_and_read_uncommitted_see_different_logs() {
    let (lab, kafka) = with_kafka();
    act_ok(
        &lab,
        &[
            "topic copies partitions=1",
            "close c1",
            "consumer copier group=copy topic=orders commit=manual-batch max-poll=4 sink=kafka-tx output=copies reset=earliest",
            "poll copier",
            "process copier count=all",
            "poll copier",
            "process copier count=2",
            "abort copier",
            "poll copier",
            "process copier count=all",
            "poll copier",
            "process copier count=1",
        ],
    );
    // copies: 0..3 committed, COMMIT@4, 5..6 aborted, ABORT@7, 8..11 committed, COMMIT@12,
    // 13 open. librdkafka reads with read_committed by default.
    let committed: Vec<i64> = consume(&kafka, "copies", &["-o", "beginning"])
        .iter()
        .map(|r| r.0)
        .collect();
    assert_eq!(
        committed,
        [0, 1, 2, 3, 8, 9, 10, 11],
        "no markers, no aborted, nothing past the LSO"
    );
    let everything: Vec<i64> = consume(
        &kafka,
        "copies",
        &["-o", "beginning", "-X", "isolation.level=read_uncommitted"],
    )
    .iter()
    .map(|r| r.0)
    .collect();
    assert_eq!(
        everything,
        [0, 1, 2, 3, 5, 6, 8, 9, 10, 11, 13],
        "aborted and open records too, never a marker"
    );
}

#[test]
fn kcat_produces_into_the_lab_and_the_lab_keeps_what_it_wrote() {
    let (lab, kafka) = with_kafka();
    // An unknown topic is created on first use, with one partition, as Kafka does by default.
    let (_, err) = kcat(
        &["-b", &kafka, "-P", "-t", "clicks", "-K", ":"],
        Some("u-1:home\nu-2:cart page\nu-1:checkout\n"),
    );
    assert!(!err.contains("ERROR"), "{err}");
    assert_eq!(
        read_back(&kafka, "clicks"),
        "0 u-1=home|1 u-2=cart page|2 u-1=checkout|"
    );
    // Into an existing topic: after the seed's twelve orders.
    let (_, err) = kcat(&["-b", &kafka, "-P", "-t", "orders", "-p", "0"], Some("hello\n"));
    assert!(!err.contains("ERROR"), "{err}");
    let all = consume(&kafka, "orders", &["-o", "beginning"]);
    assert_eq!(all.len(), 13);
    assert_eq!(all[12].0, 12);

    // The lab shows them, and its history holds exactly what kcat wrote.
    let state = ok_json(&http(&lab.addr, "GET", "/api/state", "").expect("state")).expect("json");
    assert!(state.to_string().contains("clicks"), "{state}");
    // Each record with its producer's timestamp: the topics are CreateTime, Kafka's default.
    let scenario = http(&lab.addr, "GET", "/api/scenario", "").expect("scenario");
    // One `send` line per produce request: librdkafka may send the three lines in one batch or
    // in several (a first record sent as soon as the new topic's metadata arrives, say).
    let line = |topic: &str| -> String {
        let prefix = format!("send {topic} partition=0 client=rdkafka records=");
        let lines: Vec<&str> = scenario.lines().filter(|l| l.starts_with(&prefix)).collect();
        assert!(!lines.is_empty(), "no send line for {topic}: {scenario}");
        lines.join("\n")
    };
    let clicks = line("clicks");
    for part in [
        r#"{"key":"u-1","value":"home","timestamp":"#,
        r#"{"key":"u-2","value":"cart page","timestamp":"#,
        r#"{"key":"u-1","value":"checkout","timestamp":"#,
    ] {
        assert!(clicks.contains(part), "{clicks}");
    }
    assert!(line("orders").contains(r#"{"key":null,"value":"hello","timestamp":"#));

    // Internal topics refuse a client's writes.
    let (_, err) = kcat(
        &["-b", &kafka, "-P", "-t", "__consumer_offsets", "-p", "0"],
        Some("x\n"),
    );
    assert!(
        err.contains("Delivery failed") && err.contains("Invalid topic"),
        "{err}"
    );
    let (meta, _) = kcat(&["-b", &kafka, "-L", "-t", "orders"], None);
    assert!(meta.contains(r#"topic "orders" with 1 partitions"#), "{meta}");
}

#[test]
fn without_auto_creation_an_unknown_topic_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.keep().display().to_string();
    let lab = serve(&[
        "--data",
        &data,
        "--http",
        "127.0.0.1:0",
        "--kafka",
        "127.0.0.1:0",
        "--auto-create-topics",
        "false",
        "--kafka-max-request-bytes",
        "4096",
    ]);
    let kafka = lab.kafka();
    // librdkafka waits topic.metadata.propagation.max.ms for a topic to appear (30 s by default).
    let (_, err) = kcat(
        &[
            "-b",
            &kafka,
            "-P",
            "-t",
            "nowhere",
            "-p",
            "0",
            "-X",
            "topic.metadata.propagation.max.ms=1000",
        ],
        Some("x\n"),
    );
    assert!(
        err.contains("Unknown topic or partition") || err.contains("UNKNOWN_TOPIC"),
        "{err}"
    );
    let state = ok_json(&http(&lab.addr, "GET", "/api/state", "").expect("state")).expect("json");
    assert!(!state.to_string().contains("nowhere"), "{state}");
    // --kafka-max-request-bytes 4096: a request announcing 5000 bytes closes its connection
    // before anything is read or allocated; smaller requests are served.
    let mut c = TcpStream::connect(&kafka).expect("connect");
    c.write_all(&5000i32.to_be_bytes()).expect("write");
    let mut buf = [0u8; 16];
    assert_eq!(c.read(&mut buf).unwrap_or(0), 0, "closed");
    let (meta, err) = kcat(&["-b", &kafka, "-L"], None);
    assert!(meta.contains(r#"topic "orders""#), "{meta}{err}");
}

#[test]
fn bad_frames_close_only_their_connection() {
    let (_lab, kafka) = with_kafka();
    // A frame announcing 2 GiB: refused before anything is allocated, the connection closed.
    let mut s = TcpStream::connect(&kafka).expect("connect");
    s.write_all(&i32::MAX.to_be_bytes()).expect("write");
    let mut buf = [0u8; 16];
    assert_eq!(s.read(&mut buf).unwrap_or(0), 0, "closed");
    // A 19-byte Metadata request declaring 2^31 - 1 topics: refused before anything is
    // allocated for them (it used to abort the whole lab; vendor/README.md).
    let mut s = TcpStream::connect(&kafka).expect("connect");
    let mut body = vec![0, 3, 0, 1, 0, 0, 0, 1, 0, 1, b'x'];
    body.extend_from_slice(&i32::MAX.to_be_bytes());
    s.write_all(&(body.len() as i32).to_be_bytes()).expect("write");
    s.write_all(&body).expect("write");
    assert_eq!(s.read(&mut buf).unwrap_or(0), 0, "closed");
    // Garbage that is no request.
    let mut s = TcpStream::connect(&kafka).expect("connect");
    s.write_all(&[0, 0, 0, 5, 0xff, 0xff, 0, 0, 1]).expect("write");
    assert_eq!(s.read(&mut buf).unwrap_or(0), 0, "closed");
    // The listener serves on.
    assert_eq!(consume(&kafka, "orders", &["-o", "beginning"]).len(), 12);
}

/// An ApiVersions v3 request frame (kcat's first request, as captured in offsetlab-wire).
fn api_versions_frame(correlation_id: i32) -> Vec<u8> {
    let mut body = vec![0x00, 0x12, 0x00, 0x03];
    body.extend_from_slice(&correlation_id.to_be_bytes());
    body.extend_from_slice(&[0x00, 0x07]);
    body.extend_from_slice(b"rdkafka");
    body.extend_from_slice(&[0x00, 0x0b]);
    body.extend_from_slice(b"librdkafka");
    body.push(0x06);
    body.extend_from_slice(b"2.0.2");
    body.push(0x00);
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    frame
}

#[test]
fn two_hundred_connections_are_served_at_once() {
    let (_lab, kafka) = with_kafka();
    let mut conns: Vec<TcpStream> = (0..200)
        .map(|_| TcpStream::connect(&kafka).expect("connect"))
        .collect();
    for (i, c) in conns.iter_mut().enumerate() {
        c.write_all(&api_versions_frame(i as i32)).expect("write");
    }
    for (i, c) in conns.iter_mut().enumerate() {
        let mut size = [0u8; 4];
        c.read_exact(&mut size).expect("size");
        let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
        c.read_exact(&mut body).expect("body");
        assert_eq!(
            &body[..4],
            &(i as i32).to_be_bytes(),
            "each answer carries its correlation id"
        );
    }
}

#[test]
fn offsetlab_topics_describes_a_broker_over_the_protocol() {
    let (lab, kafka) = with_kafka();
    act_ok(&lab, &["topic payments partitions=3", "produce payments count=9"]);
    let run = offsetlab;
    let out = run(&["topics", "--bootstrap-server", &kafka, "--list"]);
    // Kafka lists its internal topic too (kafka-topics.sh --list shows it unless told not to).
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "__consumer_offsets\norders\npayments\n"
    );
    let out = run(&[
        "topics",
        "--bootstrap-server",
        &kafka,
        "--describe",
        "--topic",
        "payments",
        "--json",
    ]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let parts = v[0]["partitions"].as_array().expect("partitions");
    assert_eq!(parts.len(), 3);
    // Its topic id, as Kafka prints one: 16 bytes in URL-safe base64 without padding.
    assert_eq!(v[0]["topic_id"].as_str().map(str::len), Some(22), "{v}");
    let total: i64 = parts
        .iter()
        .map(|p| p["log_end_offset"].as_i64().unwrap_or(0))
        .sum();
    assert_eq!(total, 9, "nine records over three partitions");
    let out = run(&[
        "topics",
        "--bootstrap-server",
        &kafka,
        "--describe",
        "--topic",
        "nope",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["topics", "--bootstrap-server", "127.0.0.1:1", "--list"]);
    assert_eq!(out.status.code(), Some(3), "no broker there");
    // A port that answers, but not as Kafka does (an HTTP server, say): one line naming what
    // came back, not an attempt to read a 1.2 GB frame.
    let web = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let web_addr = web.local_addr().expect("addr").to_string();
    // Not joined: if the command never connected, the assertions below say so, and the
    // thread ends with the test process.
    std::thread::spawn(move || {
        let Ok((mut s, _)) = web.accept() else { return };
        // The whole request (its size, then its bytes), so that closing sends no reset.
        let mut size = [0u8; 4];
        if s.read_exact(&mut size).is_ok() {
            let mut request = vec![0u8; (u32::from_be_bytes(size) as usize).min(1 << 16)];
            let _ = s.read_exact(&mut request);
        }
        let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    });
    let out = run(&["groups", "--bootstrap-server", &web_addr, "--list"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("did not answer ApiVersions as a Kafka broker does") && err.contains("begins \"HTTP\""),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn offsetlab_groups_describes_the_labs_groups_like_kafka_consumer_groups() {
    let (lab, kafka) = with_kafka();
    act_ok(
        &lab,
        &[
            "topic payments partitions=2",
            "produce payments count=10",
            "consumer p1 group=billing topic=payments commit=manual-batch reset=earliest",
            "consumer p2 group=billing topic=payments commit=manual-batch reset=earliest",
            "poll p1",
            "poll p2",
            "poll p1",
            "process p1 count=all",
        ],
    );
    let run = offsetlab;
    let out = run(&["groups", "--bootstrap-server", &kafka, "--list"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "analytics-prod\nbilling\n");
    let out = run(&[
        "groups",
        "--bootstrap-server",
        &kafka,
        "--describe",
        "--group",
        "billing",
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["state"], "Stable");
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2, "{v}");
    let owners: Vec<&str> = rows.iter().filter_map(|r| r["consumer_id"].as_str()).collect();
    assert_eq!(owners, ["p1#1", "p2#1"], "range: one partition each");
    // p1 committed what it processed of its partition; the figures are the lab's own.
    let view = ok_json(&http(&lab.addr, "GET", "/api/state", "").expect("state")).expect("200");
    for r in rows {
        let key = format!("payments-{}", r["partition"]);
        assert_eq!(
            r["current_offset"], view["groups"]["billing"]["committed"][&key],
            "{key}"
        );
        assert_eq!(
            r["log_end_offset"], view["groups"]["billing"]["log_end_offset"][&key],
            "{key}"
        );
    }
    let text = run(&[
        "groups",
        "--bootstrap-server",
        &kafka,
        "--describe",
        "--group",
        "billing",
    ]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(
            "GROUP   TOPIC    PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST       CLIENT-ID"
        ),
        "{text}"
    );
    let out = run(&[
        "groups",
        "--bootstrap-server",
        &kafka,
        "--describe",
        "--group",
        "nobody",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Consumer group 'nobody' does not exist."));
}

#[test]
fn offsetlab_groups_resets_offsets_over_the_protocol() {
    let (lab, kafka) = with_kafka();
    let run = offsetlab;
    let reset = |extra: &[&str]| {
        let mut args = vec![
            "groups",
            "--bootstrap-server",
            &kafka,
            "--reset-offsets",
            "--group",
            "analytics-prod",
            "--topic",
            "orders",
        ];
        args.extend_from_slice(extra);
        run(&args)
    };
    // c1 is a member: refused, with Kafka's words.
    let out = reset(&["--to-latest"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(
        "Error: Assignments can only be reset if the group 'analytics-prod' is inactive, but the current state is Stable."
    ));
    act_ok(&lab, &["close c1"]);
    let committed = || {
        let v = ok_json(&http(&lab.addr, "GET", "/api/state", "").expect("state")).expect("200");
        v["groups"]["analytics-prod"]["committed"]["orders-0"].as_i64()
    };
    // A dry run shows the blast radius and changes nothing.
    let out = reset(&["--to-offset", "7", "--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        (rows[0]["new_offset"].as_i64(), rows[0]["skipped"].as_i64()),
        (Some(7), Some(7))
    );
    // The seed's orders were all produced at the lab's first instant: the span is that instant.
    let seeded = common::first_timestamp(&lab.addr, "orders");
    assert_eq!(rows[0]["first_timestamp"].as_i64(), Some(seeded));
    assert_eq!(rows[0]["last_timestamp"].as_i64(), Some(seeded));
    let text = String::from_utf8_lossy(&reset(&["--to-offset", "7"]).stdout).into_owned();
    let at = humantime::format_rfc3339_seconds(
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(seeded as u64),
    );
    assert!(
        text.contains("TIME-SPAN") && text.contains(&format!("{at} … {at} (0s)")),
        "{text}"
    );
    assert_eq!(committed(), Some(0));
    // --execute commits the target it planned (clamped to the log, as Kafka's tool clamps it)
    // from outside the group, and the lab records the commit as it came: an alter-offsets line.
    let out = reset(&["--to-offset", "7", "--execute"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(committed(), Some(7));
    let export = http(&lab.addr, "GET", "/api/scenario", "").expect("export");
    assert!(
        export.contains("alter-offsets analytics-prod offsets=orders:0=7"),
        "{export}"
    );
    let out = reset(&["--shift-by", "-3", "--execute"]);
    assert!(out.status.success());
    assert_eq!(committed(), Some(4));
    let out = reset(&["--to-latest", "--execute"]);
    assert!(out.status.success());
    assert_eq!(committed(), Some(12));
}

/// An idempotent producer's retry — the same batch, same sequence — is answered with the offset it
/// got the first time and written once; a gap in the sequence is refused. The batches are
/// encoded by the kafka-protocol crate's record encoder, as a client would.
#[test]
fn an_idempotent_producers_resent_batch_is_written_once() {
    use offsetlab_wire::kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use offsetlab_wire::kafka_protocol::messages::{InitProducerIdRequest, ProduceRequest, TopicName};
    use offsetlab_wire::kafka_protocol::protocol::StrBytes;
    use offsetlab_wire::kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };
    let (_lab, kafka) = with_kafka();
    let mut s = TcpStream::connect(&kafka).expect("connect");
    let init = ask!(
        &mut s,
        InitProducerId,
        1,
        1,
        InitProducerIdRequest::default()
            .with_transactional_id(None)
            .with_transaction_timeout_ms(60_000),
    );
    assert_eq!(init.error_code, 0);
    let (id, epoch) = (init.producer_id.0, init.producer_epoch);
    assert!(id >= 0);
    let batch = |sequence: i32, n: usize| {
        let records: Vec<Record> = (0..n)
            .map(|i| Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: -1,
                producer_id: id,
                producer_epoch: epoch,
                timestamp_type: TimestampType::Creation,
                offset: i as i64,
                sequence: sequence + i as i32,
                timestamp: 0,
                key: Some(bytes::Bytes::from(format!("k-{}", sequence + i as i32))),
                value: Some(bytes::Bytes::from_static(b"v")),
                headers: Default::default(),
            })
            .collect();
        let mut out = bytes::BytesMut::new();
        RecordBatchEncoder::encode(
            &mut out,
            &records,
            &RecordEncodeOptions {
                version: 2,
                compression: Compression::None,
            },
        )
        .expect("encode");
        out.freeze()
    };
    let mut correlation = 1;
    let mut produce = |records: bytes::Bytes| -> (i16, i64) {
        correlation += 1;
        let request = ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(5_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_static_str("orders")))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(records))])]);
        let r = ask!(&mut s, Produce, 7, correlation, request);
        let p = &r.responses[0].partition_responses[0];
        (p.error_code, p.base_offset)
    };
    // The seed holds twelve orders: the first batch lands at 12.
    assert_eq!(produce(batch(0, 3)), (0, 12));
    assert_eq!(
        produce(batch(0, 3)),
        (0, 12),
        "the resend is answered, not appended"
    );
    assert_eq!(produce(batch(3, 2)), (0, 15));
    assert_eq!(produce(batch(9, 1)).0, 45, "OUT_OF_ORDER_SEQUENCE_NUMBER");
    let all = consume(&kafka, "orders", &["-o", "beginning"]);
    assert_eq!(all.len(), 17, "12 + 3 + 2: the retry was not written");
    assert_eq!(
        all[12..].iter().map(|r| r.1.as_str()).collect::<Vec<_>>(),
        ["k-0", "k-1", "k-2", "k-3", "k-4"]
    );
}

/// Admin requests map onto the lab's own lines, and what the lab does not model is refused with
/// Kafka's error codes, changing nothing.
#[test]
fn admin_requests_create_topics_and_delete_records_or_say_why_not() {
    use offsetlab_wire::kafka_protocol::messages::create_topics_request::{
        CreatableTopic, CreatableTopicConfig,
    };
    use offsetlab_wire::kafka_protocol::messages::delete_records_request::{
        DeleteRecordsPartition, DeleteRecordsTopic,
    };
    use offsetlab_wire::kafka_protocol::messages::{CreateTopicsRequest, DeleteRecordsRequest, TopicName};
    use offsetlab_wire::kafka_protocol::protocol::StrBytes;
    let (lab, kafka) = with_kafka();
    let mut s = TcpStream::connect(&kafka).expect("connect");
    let topic = |name: &'static str, partitions: i32, configs: &[(&'static str, &'static str)]| {
        CreatableTopic::default()
            .with_name(TopicName(StrBytes::from_static_str(name)))
            .with_num_partitions(partitions)
            .with_replication_factor(-1)
            .with_configs(
                configs
                    .iter()
                    .map(|(k, v)| {
                        CreatableTopicConfig::default()
                            .with_name(StrBytes::from_static_str(k))
                            .with_value(Some(StrBytes::from_static_str(v)))
                    })
                    .collect(),
            )
    };
    let create = |s: &mut TcpStream, id: i32, topics: Vec<CreatableTopic>, validate_only: bool| -> Vec<i16> {
        let request = CreateTopicsRequest::default()
            .with_topics(topics)
            .with_timeout_ms(5_000)
            .with_validate_only(validate_only);
        let r = ask!(s, CreateTopics, 5, id, request);
        r.topics.iter().map(|t| t.error_code).collect()
    };
    // A config value Kafka does not know (40), a bad partition count (37), a valid one checked only.
    assert_eq!(
        create(
            &mut s,
            1,
            vec![
                topic("a", 1, &[("compression.type", "brotli")]),
                topic("b", 0, &[]),
                topic("c", 2, &[])
            ],
            true
        ),
        vec![40, 37, 0]
    );
    let state = ok_json(&http(&lab.addr, "GET", "/api/state", "").expect("state")).expect("json");
    assert!(
        !state["topics"].to_string().contains("\"c\""),
        "validate_only creates nothing"
    );
    assert_eq!(
        create(
            &mut s,
            2,
            vec![topic("c", 2, &[("retention.ms", "3600000")])],
            false
        ),
        vec![0]
    );
    let scenario = http(&lab.addr, "GET", "/api/scenario", "").expect("scenario");
    assert!(
        scenario.contains("topic c partitions=2 retention.ms=1h"),
        "{scenario}"
    );
    // Longer than the scenario language can write (100 years): INVALID_CONFIG, not created.
    assert_eq!(
        create(
            &mut s,
            6,
            vec![topic("d", 1, &[("retention.ms", "9223372036854775807")])],
            false
        ),
        vec![40]
    );
    let scenario = http(&lab.addr, "GET", "/api/scenario", "").expect("scenario");
    assert!(!scenario.contains("topic d"), "{scenario}");

    let delete = |s: &mut TcpStream, id: i32, offset: i64| -> (i16, i64) {
        let request = DeleteRecordsRequest::default()
            .with_timeout_ms(5_000)
            .with_topics(vec![DeleteRecordsTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("orders")))
                .with_partitions(vec![DeleteRecordsPartition::default()
                    .with_partition_index(0)
                    .with_offset(offset)])]);
        let r = ask!(s, DeleteRecords, 1, id, request);
        let p = &r.topics[0].partitions[0];
        (p.error_code, p.low_watermark)
    };
    assert_eq!(delete(&mut s, 3, 99).0, 1, "OFFSET_OUT_OF_RANGE past the log end");
    assert_eq!(delete(&mut s, 4, 5), (0, 5));
    assert_eq!(delete(&mut s, 5, -1), (0, 12), "-1 is the high watermark");
    assert!(consume(&kafka, "orders", &["-o", "beginning"]).is_empty());
}

/// A real consumer killed with SIGKILL sends no LeaveGroup: the lab keeps it as the group's
/// member, holding its partition, until `session.timeout.ms` passes without a heartbeat — then
/// the group is Empty and the lab's history says so.
#[test]
fn a_killed_kcat_member_stays_until_its_session_times_out() {
    let (lab, kafka) = with_kafka();
    let mut member = Command::new("kcat")
        // Cargo points LD_LIBRARY_PATH at build outputs, among them the librdkafka the rdkafka
        // crate builds (without zlib): kcat must load its own, Debian's.
        .env_remove("LD_LIBRARY_PATH")
        .args([
            "-b",
            &kafka,
            "-G",
            "crashers",
            "orders",
            "-q",
            "-f",
            "%o\\n",
            "-X",
            "auto.offset.reset=earliest",
            "-X",
            "session.timeout.ms=6000",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("these tests need kcat (apt-get install kcat): {e}"));
    let group = || {
        let state = ok_json(&http(&lab.addr, "GET", "/api/state", "").expect("state")).expect("json");
        state["groups"]["crashers"].clone()
    };
    let wait_for = |want: &str, within: std::time::Duration| {
        let deadline = std::time::Instant::now() + within;
        while group()["state"] != want && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        group()
    };
    let joined = wait_for("Stable", std::time::Duration::from_secs(15));
    assert_eq!(joined["members"].as_array().map(Vec::len), Some(1), "{joined}");
    member.kill().expect("kill -9");
    let _ = member.wait();
    let killed_at = std::time::Instant::now();
    // Wall time passing without the member is what is tested: the coordinator keeps a silent
    // member until its session times out, so there is no event to wait for here.
    std::thread::sleep(std::time::Duration::from_millis(1_000));
    assert_eq!(
        group()["state"],
        "Stable",
        "a dead member is a member until its session expires"
    );
    let after = wait_for("Empty", std::time::Duration::from_secs(15));
    assert_eq!(after["state"], "Empty", "{after}");
    assert!(
        killed_at.elapsed() >= std::time::Duration::from_secs(5),
        "not before the session timeout"
    );
    let scenario = http(&lab.addr, "GET", "/api/scenario", "").expect("scenario");
    assert!(
        scenario.contains("rebalance crashers generation=2 protocol=range members=[]"),
        "{scenario}"
    );
}

/// Producers that compress — gzip, snappy, lz4, zstd, as librdkafka sends them — are read back
/// record for record. (Debian's kcat is built on librdkafka 2.0, which takes a broker without
/// Produce v2 — Kafka 4.0, the lab — for one without compression and sends these uncompressed;
/// `rdkafka.rs` checks with a current librdkafka that compressed batches are kept as they came.)
#[test]
fn kcat_produces_with_every_compression_codec() {
    let (_lab, kafka) = with_kafka();
    for codec in ["gzip", "snappy", "lz4", "zstd"] {
        let topic = format!("zipped-{codec}");
        let (_, err) = kcat(
            &["-b", &kafka, "-P", "-t", &topic, "-K", ":", "-z", codec],
            Some("a:1\nb:2\nc:3\n"),
        );
        assert!(!err.contains("ERROR"), "{codec}: {err}");
        assert_eq!(read_back(&kafka, &topic), "0 a=1|1 b=2|2 c=3|", "{codec}");
    }
}

/// A `send` line that names a codec has its batch compressed so; zstd goes only to a fetch that
/// can read it — v10 and later (KIP-110) — and an older one is answered
/// UNSUPPORTED_COMPRESSION_TYPE, as Kafka answers it.
#[test]
fn zstd_batches_go_only_to_fetches_that_read_zstd() {
    let (lab, kafka) = with_kafka();
    act_ok(
        &lab,
        &[
            "topic packed",
            r#"send packed partition=0 compression=zstd records=[{"key":"a","value":"1"},{"key":"b","value":"2"}]"#,
        ],
    );
    let (code, bytes) = common::fetch_at(&kafka, "packed", 11);
    assert_eq!((code, common::codecs(&bytes)), (0, vec!["zstd"]));
    assert_eq!(
        common::fetch_at(&kafka, "packed", 9),
        (76, Vec::new()),
        "UNSUPPORTED_COMPRESSION_TYPE"
    );
    assert_eq!(read_back(&kafka, "packed"), "0 a=1|1 b=2|", "kcat reads zstd");
}

/// A fetch's limits as Kafka applies them (KIP-74): whole batches, at least one even when it
/// alone passes the limits; the partition limit per partition; the response limit across them,
/// in the order asked, so a full response leaves the later partitions empty.
#[test]
fn a_fetch_keeps_to_its_byte_limits() {
    use offsetlab_wire::kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use offsetlab_wire::kafka_protocol::messages::{FetchRequest, TopicName};
    use offsetlab_wire::kafka_protocol::protocol::StrBytes;
    let (lab, kafka) = with_kafka();
    // Two partitions, each with four batches of 25 records.
    let mut lines = vec!["topic wide partitions=2".to_string()];
    for _ in 0..4 {
        lines.push("produce wide count=50".to_string());
    }
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    act_ok(&lab, &refs);
    let mut s = TcpStream::connect(&kafka).expect("connect");
    let fetch = |s: &mut TcpStream, max_bytes: i32, partition_max_bytes: i32| {
        let request = FetchRequest::default()
            .with_max_wait_ms(0)
            .with_min_bytes(1)
            .with_max_bytes(max_bytes)
            .with_isolation_level(0)
            .with_topics(vec![FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_static_str("wide")))
                .with_partitions(
                    (0..2)
                        .map(|p| {
                            FetchPartition::default()
                                .with_partition(p)
                                .with_fetch_offset(0)
                                .with_partition_max_bytes(partition_max_bytes)
                        })
                        .collect(),
                )]);
        let response = ask!(s, Fetch, 11, 1, request);
        response.responses[0]
            .partitions
            .iter()
            .map(|p| p.records.as_ref().map_or(0, bytes::Bytes::len))
            .collect::<Vec<usize>>()
    };
    let everything = fetch(&mut s, i32::MAX, i32::MAX);
    assert!(everything.iter().all(|&n| n > 0), "{everything:?}");
    // A byte per partition: one whole batch each, no more.
    let one_each = fetch(&mut s, i32::MAX, 1);
    assert!(
        one_each
            .iter()
            .zip(&everything)
            .all(|(one, all)| one < all && *one > 0),
        "{one_each:?}"
    );
    // A byte for the whole response: the first partition's first batch, nothing after it.
    let first_only = fetch(&mut s, 1, i32::MAX);
    assert_eq!(first_only, vec![one_each[0], 0]);
}

/// A lab on `data` with its Kafka listener, for tests that restart it.
fn lab_in(data: &str) -> (Lab, String) {
    let lab = serve(&["--data", data, "--http", "127.0.0.1:0", "--kafka", "127.0.0.1:0"]);
    let kafka = lab.kafka();
    (lab, kafka)
}

/// Kafka's topic names work end to end whatever they look like — a leading dot, 249 characters
/// (a partition directory of 255 bytes, and longer names for what the lab keeps beside it) — and
/// survive a restart; `.` and `..` are refused as Kafka refuses them.
#[test]
fn every_legal_topic_name_works_end_to_end_and_survives_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().display().to_string();
    let long = format!("x{}", "y".repeat(248));
    let dotted = format!(".{}", "z".repeat(248));
    let topics = [".hidden", long.as_str(), dotted.as_str(), "a.b_c-D9"];
    {
        let (_lab, kafka) = lab_in(&data);
        for topic in topics {
            let (_, err) = kcat(&["-b", &kafka, "-P", "-t", topic, "-K", ":"], Some("k:v\n"));
            assert!(!err.contains("ERROR"), "{topic}: {err}");
            assert_eq!(read_back(&kafka, topic), "0 k=v|", "{topic}");
        }
        for bad in [".", ".."] {
            let (_, err) = kcat(&["-b", &kafka, "-P", "-t", bad, "-K", ":"], Some("k:v\n"));
            // librdkafka says "Invalid topic" from the topic's own metadata, or "Unknown topic"
            // when a metadata answer of all topics (without it) came first: a race inside the
            // client. Either way the produce fails, and the topic's metadata is Kafka's
            // INVALID_TOPIC_EXCEPTION.
            assert!(
                err.contains("Invalid topic") || err.contains("invalid") || err.contains("Unknown topic"),
                "{bad}: {err}"
            );
            let (meta, _) = kcat(&["-b", &kafka, "-L", "-t", bad], None);
            assert!(
                meta.contains(&format!(
                    "topic \"{bad}\" with 0 partitions: Broker: Invalid topic"
                )),
                "{bad}: {meta}"
            );
        }
    } // kill -9
    let (lab, kafka) = lab_in(&data);
    assert!(lab.banner.contains("lab restored"), "{}", lab.banner);
    for topic in topics {
        assert_eq!(read_back(&kafka, topic), "0 k=v|", "{topic} after a restart");
        let (_, err) = kcat(&["-b", &kafka, "-P", "-t", topic, "-K", ":"], Some("k2:w\n"));
        assert!(!err.contains("ERROR"), "{topic}: {err}");
        assert_eq!(read_back(&kafka, topic), "0 k=v|1 k2=w|", "{topic}");
    }
    // An undo reads the kept batches back under their names.
    let res = http(
        &lab.addr,
        "POST",
        "/api/actions",
        r#"{"lines":["produce orders count=1","poll nobody"]}"#,
    )
    .expect("actions");
    assert!(res.starts_with("HTTP/1.1 422"), "{res}");
    for topic in topics {
        assert_eq!(read_back(&kafka, topic), "0 k=v|1 k2=w|", "{topic} after an undo");
    }
}

/// The committed offset of `group` for `topic`-0, as OffsetFetch answers it.
fn fetch_offset(s: &mut TcpStream, group: &str, topic: &str) -> i64 {
    use offsetlab_wire::kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
    use offsetlab_wire::kafka_protocol::messages::{GroupId, OffsetFetchRequest, TopicName};
    use offsetlab_wire::kafka_protocol::protocol::StrBytes;
    let request = OffsetFetchRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
        .with_topics(Some(vec![OffsetFetchRequestTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partition_indexes(vec![0])]));
    let r = ask!(s, OffsetFetch, 5, 7, request);
    r.topics[0].partitions[0].committed_offset
}

/// An OffsetCommit from outside a group, as `alterConsumerGroupOffsets` sends it.
fn commit_outside(s: &mut TcpStream, group: &str, topic: &str, offset: i64) -> i16 {
    use offsetlab_wire::kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use offsetlab_wire::kafka_protocol::messages::{GroupId, OffsetCommitRequest, TopicName};
    use offsetlab_wire::kafka_protocol::protocol::StrBytes;
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(offset)])]);
    let r = ask!(s, OffsetCommit, 5, 9, request);
    r.topics[0].partitions[0].error_code
}

/// A committed offset keeps the leader epoch its committer sent (KIP-320) beside its metadata:
/// OffsetFetch hands both back, after a restart too (they are in `__consumer_offsets`), and the
/// export writes them.
#[test]
fn a_commits_leader_epoch_and_metadata_read_back() {
    use offsetlab_wire::kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use offsetlab_wire::kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
    use offsetlab_wire::kafka_protocol::messages::{
        GroupId, OffsetCommitRequest, OffsetFetchRequest, TopicName,
    };
    use offsetlab_wire::kafka_protocol::protocol::StrBytes;
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().display().to_string();
    let args = ["--data", &data, "--http", "127.0.0.1:0", "--kafka", "127.0.0.1:0"];
    let lab = serve(&args);
    let mut s = TcpStream::connect(lab.kafka()).expect("connect");
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str("epochs")))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(TopicName(StrBytes::from_static_str("orders")))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(7)
                .with_committed_leader_epoch(5)
                .with_committed_metadata(Some(StrBytes::from_static_str("host-a")))])]);
    let r = ask!(&mut s, OffsetCommit, 9, 1, request);
    assert_eq!(r.topics[0].partitions[0].error_code, 0);
    let read = |s: &mut TcpStream| {
        let request = OffsetFetchRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str("epochs")))
            .with_topics(Some(vec![OffsetFetchRequestTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("orders")))
                .with_partition_indexes(vec![0])]));
        let r = ask!(s, OffsetFetch, 7, 2, request);
        let p = &r.topics[0].partitions[0];
        (
            p.committed_offset,
            p.committed_leader_epoch,
            p.metadata.as_ref().map(|m| m.to_string()),
        )
    };
    assert_eq!(read(&mut s), (7, 5, Some("host-a".to_string())));
    let export = http(&lab.addr, "GET", "/api/scenario", "").expect("export");
    assert!(export.contains("leader-epochs=orders:0=5"), "{export}");
    drop(s);
    drop(lab); // kill -9
    let lab = serve(&args);
    let mut s = TcpStream::connect(lab.kafka()).expect("connect");
    assert_eq!(
        read(&mut s),
        (7, 5, Some("host-a".to_string())),
        "after a restart"
    );
}

/// What a client sends is a value, never text for a line: a topic name that would read as more
/// of a `reset-offsets` line is an unknown topic and resets nothing, and group ids no plain word
/// could hold commit, read back and survive a restart.
#[test]
fn a_clients_strings_never_become_part_of_a_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().display().to_string();
    let odd = [
        "a group",
        "g#1",
        "k=v",
        "ü-gruppe",
        "\"quoted\"",
        "tab\tnew\nline",
        "x y # z = [1]",
    ];
    {
        let (lab, kafka) = lab_in(&data);
        act_ok(&lab, &["reset-offsets rg topic=orders to-offset=7 execute"]);
        let mut s = TcpStream::connect(&kafka).expect("connect");
        assert_eq!(fetch_offset(&mut s, "rg", "orders"), 7);
        let code = commit_outside(&mut s, "rg", "orders:0 to-offset=3 execute #", 5);
        assert_eq!(code, 3, "UNKNOWN_TOPIC_OR_PARTITION");
        assert_eq!(fetch_offset(&mut s, "rg", "orders"), 7, "nothing was reset");
        // A negative offset is stored as given, as Kafka stores it (kafkajs's resetOffsets
        // commits −2 and −1); it survives the restart below too.
        assert_eq!(commit_outside(&mut s, "rg", "orders", -2), 0);
        assert_eq!(fetch_offset(&mut s, "rg", "orders"), -2);
        assert_eq!(commit_outside(&mut s, "rg", "orders", 7), 0);
        for (i, group) in odd.iter().enumerate() {
            assert_eq!(
                commit_outside(&mut s, group, "orders", 2 + i as i64),
                0,
                "{group:?}"
            );
            assert_eq!(fetch_offset(&mut s, group, "orders"), 2 + i as i64, "{group:?}");
        }
        // `a group` and `a_group` are two groups.
        assert_eq!(fetch_offset(&mut s, "a_group", "orders"), -1);
    } // kill -9
    let (_lab, kafka) = lab_in(&data);
    let mut s = TcpStream::connect(&kafka).expect("connect");
    assert_eq!(fetch_offset(&mut s, "rg", "orders"), 7);
    for (i, group) in odd.iter().enumerate() {
        assert_eq!(
            fetch_offset(&mut s, group, "orders"),
            2 + i as i64,
            "{group:?} after a restart"
        );
    }
}

/// InitProducerId for one transactional id from many connections at once: each gets an epoch
/// of its own (the epoch is read in the step that allocated it), so exactly one is current.
#[test]
fn concurrent_init_producer_ids_for_one_id_get_distinct_epochs() {
    use offsetlab_wire::kafka_protocol::messages::{InitProducerIdRequest, TransactionalId};
    use offsetlab_wire::kafka_protocol::protocol::StrBytes;
    let (_lab, kafka) = with_kafka();
    let answers: Vec<(i16, i64, i16)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|i| {
                let kafka = kafka.clone();
                scope.spawn(move || {
                    let mut s = TcpStream::connect(&kafka).expect("connect");
                    let request = InitProducerIdRequest::default()
                        .with_transactional_id(Some(TransactionalId(StrBytes::from_static_str("tx a"))))
                        .with_transaction_timeout_ms(60_000);
                    let r = ask!(&mut s, InitProducerId, 1, i, request);
                    (r.error_code, r.producer_id.0, r.producer_epoch)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("thread")).collect()
    });
    assert!(answers.iter().all(|a| a.0 == 0), "{answers:?}");
    let mut epochs: Vec<i16> = answers.iter().map(|a| a.2).collect();
    epochs.sort_unstable();
    epochs.dedup();
    assert_eq!(
        epochs.len(),
        answers.len(),
        "every call its own epoch: {answers:?}"
    );
    // `tx_a` is another transactional id: its own producer, fencing nobody.
    let mut s = TcpStream::connect(&kafka).expect("connect");
    let request = InitProducerIdRequest::default()
        .with_transactional_id(Some(TransactionalId(StrBytes::from_static_str("tx_a"))))
        .with_transaction_timeout_ms(60_000);
    let r = ask!(&mut s, InitProducerId, 1, 99, request);
    assert_eq!(r.error_code, 0);
    assert_eq!(r.producer_epoch, 0, "a fresh id starts at epoch 0");
    assert!(
        answers.iter().all(|a| a.1 != r.producer_id.0),
        "a producer id of its own"
    );
}

/// Record headers travel: kcat's headers are stored as it sent them, handed back to a consumer,
/// and spelled out in the export, which replays to the same records.
#[test]
fn headers_are_kept_served_and_exported() {
    let (lab, kafka) = with_kafka();
    let (_, err) = kcat(
        &[
            "-b",
            &kafka,
            "-P",
            "-t",
            "hdr",
            "-K",
            ":",
            "-H",
            "trace=abc 1",
            "-H",
            "empty=",
        ],
        Some("k:v\n"),
    );
    assert!(!err.contains("ERROR"), "{err}");
    let (out, err) = kcat(
        &[
            "-b",
            &kafka,
            "-C",
            "-t",
            "hdr",
            "-p",
            "0",
            "-o",
            "beginning",
            "-e",
            "-q",
            "-f",
            "%k=%s %h\\n",
        ],
        None,
    );
    assert_eq!(out.trim(), "k=v trace=abc 1,empty=", "{err}");
    let scenario = http(&lab.addr, "GET", "/api/scenario", "").expect("scenario");
    assert!(
        scenario.contains(r#""headers":[{"key":"trace","value":"abc 1"},{"key":"empty","value":""}]"#),
        "{scenario}"
    );
}

/// A request version Kafka 4.0 no longer serves (KIP-896) closes the connection, as Kafka does,
/// and the log says who sent what, and what the lab serves.
#[test]
fn an_unserved_version_closes_the_connection_and_says_so_in_the_log() {
    let lab = common::serve_logging(&["--ephemeral", "--http", "127.0.0.1:0", "--kafka", "127.0.0.1:0"]);
    let mut s = TcpStream::connect(lab.kafka()).expect("connect");
    // Produce v2: API key 0, version 2, correlation id 7, client id "old-client", then a body the
    // lab never reads.
    let mut frame = Vec::new();
    frame.extend_from_slice(&0i16.to_be_bytes());
    frame.extend_from_slice(&2i16.to_be_bytes());
    frame.extend_from_slice(&7i32.to_be_bytes());
    frame.extend_from_slice(&10i16.to_be_bytes());
    frame.extend_from_slice(b"old-client");
    frame.extend_from_slice(&[0; 10]);
    let mut request = (frame.len() as i32).to_be_bytes().to_vec();
    request.extend_from_slice(&frame);
    s.write_all(&request).expect("send");
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .expect("timeout");
    let mut buf = [0u8; 16];
    assert_eq!(
        s.read(&mut buf).expect("closed, not timed out"),
        0,
        "no answer: closed"
    );
    let log = common::server_log(lab);
    assert!(
        log.contains("client=\"old-client\"")
            && log.contains("api=Produce version=2")
            && log.contains("serves v3"),
        "{log}"
    );
}

/// `__consumer_offsets` is a topic like any other to a reader: kcat lists it (internal) and
/// consumes it, and `offsetlab offsets` prints its records decoded — the commits keyed
/// (group, topic, partition) and the group's metadata after each rebalance — in text and JSON.
#[test]
fn kcat_reads_consumer_offsets_and_offsetlab_prints_it_decoded() {
    let (lab, kafka) = with_kafka();
    act_ok(&lab, &["poll c1", "process c1 count=all", "tick 6s"]);
    let (meta, _) = kcat(&["-b", &kafka, "-L", "-t", "__consumer_offsets"], None);
    assert!(
        meta.contains("topic \"__consumer_offsets\" with 1 partitions"),
        "{meta}"
    );
    let offsets = consume(&kafka, "__consumer_offsets", &[]);
    let state = ok_json(&http(&lab.addr, "GET", "/api/state", "").expect("state")).expect("json");
    let end = state["consumer_offsets"]["log_end_offset"]
        .as_i64()
        .expect("log end");
    assert_eq!(
        offsets.len() as i64,
        end,
        "every record of the topic: {offsets:?}"
    );
    assert!(
        end >= 3,
        "the seed's reset, the rebalance, the auto-commit: {end}"
    );

    let out = offsetlab(&["offsets", "--bootstrap-server", &kafka]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "('analytics-prod', 'orders', 0)\toffset=4 leader_epoch=-1 metadata=\"c1#1 auto-timer\""
        ),
        "{text}"
    );
    assert!(
        text.contains("GroupMetadata(\"analytics-prod\")\tgeneration=1 protocol=range leader=c1#1 members=[c1#1 (c1, /127.0.0.1) ← orders-0]"),
        "{text}"
    );
    assert_eq!(text.lines().count() as i64, end);

    let out = offsetlab(&[
        "offsets",
        "--bootstrap-server",
        &kafka,
        "--json",
        "--group",
        "analytics-prod",
    ]);
    let records: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    let group = records
        .iter()
        .find(|r| r["key"]["type"] == 2)
        .expect("the group's metadata");
    assert_eq!(
        group["value"]["data"]["members"][0]["assignment"],
        serde_json::json!([["orders", 0]])
    );
    assert_eq!(
        group["value"]["data"]["members"][0]["subscription"],
        serde_json::json!(["orders"])
    );
    let commit = records
        .iter()
        .rev()
        .find(|r| r["key"]["type"] == 1)
        .expect("a commit");
    assert_eq!(commit["value"]["version"], 3);
    assert_eq!(commit["value"]["data"]["offset"], 4);
}

/// `--kafka-sasl-plain-users`: the listener is SASL_PLAINTEXT. kcat with the right password
/// produces and consumes; with a wrong one it hears Kafka's reason; and a client that skips
/// authentication has its connection closed before anything is served, which the server's log
/// says.
#[test]
fn a_sasl_listener_serves_only_who_authenticates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let users = dir.path().join("users");
    std::fs::write(&users, "ada=s3cret = with spaces #1\nbob=other\n").expect("write");
    let lab = common::serve_logging(&[
        "--ephemeral",
        "--http",
        "127.0.0.1:0",
        "--kafka",
        "127.0.0.1:0",
        "--kafka-sasl-plain-users",
        &users.display().to_string(),
    ]);
    assert!(
        lab.banner.contains("SASL_PLAINTEXT with SASL/PLAIN for 2 users"),
        "{}",
        lab.banner
    );
    let kafka = lab.kafka();
    // kcat's arguments to log in as ada with `password`.
    let as_ada = |password: &str| -> Vec<String> {
        [
            "security.protocol=SASL_PLAINTEXT",
            "sasl.mechanism=PLAIN",
            "sasl.username=ada",
            &format!("sasl.password={password}"),
        ]
        .iter()
        .flat_map(|p| ["-X".to_string(), p.to_string()])
        .collect()
    };
    let right = as_ada("s3cret = with spaces #1");
    let right: Vec<&str> = right.iter().map(String::as_str).collect();
    let (_, err) = kcat(
        &[&["-b", &kafka, "-P", "-t", "secured", "-K", ":"], &right[..]].concat(),
        Some("k:authenticated\n"),
    );
    assert!(!err.contains("ERROR"), "{err}");
    assert_eq!(read_back_with(&kafka, "secured", &right), "0 k=authenticated|");

    let wrong = as_ada("s3cret");
    let wrong: Vec<&str> = wrong.iter().map(String::as_str).collect();
    let (out, err) = kcat(&[&["-b", &kafka, "-L", "-m", "5"], &wrong[..]].concat(), None);
    assert!(!out.contains("secured"), "{out}");
    assert!(
        err.contains("Authentication failed: Invalid username or password"),
        "{err}"
    );

    // By hand, byte for byte. A request: size, API key, version, correlation id, client id,
    // body; an answer: size, then the rest.
    let request = |api_key: i16, version: i16, correlation: i32, client: &str, body: &[u8]| {
        let mut frame = Vec::new();
        frame.extend_from_slice(&api_key.to_be_bytes());
        frame.extend_from_slice(&version.to_be_bytes());
        frame.extend_from_slice(&correlation.to_be_bytes());
        frame.extend_from_slice(&(client.len() as i16).to_be_bytes());
        frame.extend_from_slice(client.as_bytes());
        frame.extend_from_slice(body);
        let mut out = (frame.len() as i32).to_be_bytes().to_vec();
        out.extend_from_slice(&frame);
        out
    };
    let connect = || {
        let s = TcpStream::connect(&kafka).expect("connect");
        s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .expect("timeout");
        s
    };
    let answer = |s: &mut TcpStream| -> Vec<u8> {
        let mut size = [0u8; 4];
        s.read_exact(&mut size).expect("an answer");
        let mut rest = vec![0u8; u32::from_be_bytes(size) as usize];
        s.read_exact(&mut rest).expect("its bytes");
        rest
    };
    let closed = |s: &mut TcpStream| {
        let mut buf = [0u8; 16];
        s.read(&mut buf).expect("closed, not timed out") == 0
    };
    // Metadata v1 (all topics) with no authentication first: closed, nothing answered.
    let metadata =
        |correlation: i32, client: &str| request(3, 1, correlation, client, &(-1i32).to_be_bytes());
    let mut s = connect();
    s.write_all(&metadata(9, "no-auth")).expect("send");
    assert!(closed(&mut s));

    // A client from before KIP-152: SaslHandshake v0, then the PLAIN token as a bare frame,
    // answered by a bare empty one; then it is served.
    let mut s = connect();
    s.write_all(&request(17, 0, 1, "legacy", b"\x00\x05PLAIN"))
        .expect("handshake");
    let mut expected = 1i32.to_be_bytes().to_vec(); // correlation id
    expected.extend_from_slice(&0i16.to_be_bytes()); // no error
    expected.extend_from_slice(&1i32.to_be_bytes()); // one mechanism enabled:
    expected.extend_from_slice(b"\x00\x05PLAIN");
    assert_eq!(answer(&mut s), expected);
    let token = b"\0ada\0s3cret = with spaces #1";
    let mut bare = (token.len() as u32).to_be_bytes().to_vec();
    bare.extend_from_slice(token);
    s.write_all(&bare).expect("token");
    assert_eq!(
        answer(&mut s),
        Vec::<u8>::new(),
        "an empty bare token: authenticated"
    );
    s.write_all(&metadata(2, "legacy")).expect("metadata");
    let meta = answer(&mut s);
    assert_eq!(meta[..4], 2i32.to_be_bytes(), "served");
    assert!(meta.windows(7).any(|w| w == b"secured"), "{meta:?}");
    // The same with a wrong password: closed without a word.
    let mut s = connect();
    s.write_all(&request(17, 0, 1, "legacy", b"\x00\x05PLAIN"))
        .expect("handshake");
    answer(&mut s);
    let token = b"\0ada\0guess";
    let mut bare = (token.len() as u32).to_be_bytes().to_vec();
    bare.extend_from_slice(token);
    let sent = std::time::Instant::now();
    s.write_all(&bare).expect("token");
    assert!(closed(&mut s));
    // Not at once: after Kafka's connection.failed.authentication.delay.ms (100 ms).
    assert!(
        sent.elapsed() >= std::time::Duration::from_millis(100),
        "closed after {:?}",
        sent.elapsed()
    );
    // A password-guessing loop on 30 connections at once: each guess waits its 100 ms, and the
    // log says a few of them and then counts the rest instead of writing a line per guess.
    let guesses: Vec<_> = (0..30)
        .map(|_| {
            let mut s = connect();
            let bare = bare.clone();
            let handshake = request(17, 0, 1, "guesser", b"\x00\x05PLAIN");
            std::thread::spawn(move || {
                s.write_all(&handshake).expect("handshake");
                let mut size = [0u8; 4];
                s.read_exact(&mut size).expect("an answer");
                let mut rest = vec![0u8; u32::from_be_bytes(size) as usize];
                s.read_exact(&mut rest).expect("its bytes");
                s.write_all(&bare).expect("token");
                let mut buf = [0u8; 16];
                s.read(&mut buf).expect("closed, not timed out") == 0
            })
        })
        .collect();
    for g in guesses {
        assert!(g.join().expect("a guess"), "closed");
    }

    // Before authenticating, a frame over Kafka's sasl.server.max.receive.size (512 KiB) is
    // refused on its size alone, with nothing allocated for it.
    let mut s = connect();
    s.write_all(&(1u32 << 20).to_be_bytes()).expect("size");
    assert!(closed(&mut s));

    // offsetlab's own admin commands log in with the same properties, from a --command-config
    // file (as Kafka's tools take one) or -X: every connection they open authenticates, the
    // group coordinator's included.
    let config = dir.path().join("client.properties");
    std::fs::write(
        &config,
        "# ada's login\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n\
         sasl.username=ada\nsasl.password=s3cret = with spaces #1\n",
    )
    .expect("write");
    let config = config.display().to_string();
    // Bootstrapped by name, so the coordinator and the partition leaders (advertised as
    // 127.0.0.1) are connections of their own, each of which must log in.
    let port = kafka.rsplit_once(':').expect("host:port").1;
    let by_name = format!("localhost:{port}");
    let admin = |args: &[&str]| {
        let out = common::offsetlab(
            &[
                args,
                &["--bootstrap-server", &by_name, "--command-config", &config],
            ]
            .concat(),
        );
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let (code, out, err) = admin(&["topics", "--list"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.lines().any(|t| t == "secured"), "{out}");
    let (code, _, err) = admin(&[
        "groups",
        "--reset-offsets",
        "--group",
        "audit",
        "--topic",
        "secured",
        "--to-earliest",
        "--execute",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err) = admin(&["groups", "--describe", "--group", "audit", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let described: serde_json::Value = serde_json::from_str(&out).expect("json");
    let row = &described["rows"][0];
    assert_eq!(
        (
            &row["topic"],
            &row["current_offset"],
            &row["log_end_offset"],
            &row["lag"]
        ),
        (
            &serde_json::json!("secured"),
            &serde_json::json!(0),
            &serde_json::json!(1),
            &serde_json::json!(1)
        ),
        "{out}"
    );
    let (code, out, err) = admin(&["offsets", "--group", "audit"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.lines()
            .any(|l| l.contains("audit") && l.contains("secured") && l.contains("\toffset=0 ")),
        "{out}"
    );
    // A wrong password (-X overrides the file): one line with Kafka's reason, exit 3.
    let (code, _, err) = admin(&["topics", "--list", "-X", "sasl.password=s3cret"]);
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("authentication as 'ada' failed") && err.contains("Invalid username or password"),
        "{err}"
    );
    // No login at all: the listener closes the connection, and the error says what it wants.
    let out = common::offsetlab(&["topics", "--list", "--bootstrap-server", &kafka]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("does its listener want authentication"), "{err}");
    // What this client cannot do is refused before it connects, exit 2.
    let (code, _, err) = admin(&["topics", "--list", "-X", "security.protocol=SASL_SSL"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("do not speak TLS"), "{err}");

    let log = common::server_log(lab);
    assert!(
        log.lines().any(|l| l.contains("before authenticating")
            && l.contains("client=\"no-auth\" host=/127.0.0.1 api=Metadata")),
        "{log}"
    );
    assert!(
        log.lines().any(|l| l.contains(
            "failed SASL/PLAIN authentication: Authentication failed: Invalid username or password"
        ) && l.contains("user=\"ada\"")),
        "{log}"
    );
    assert!(!log.contains("s3cret"), "no password in the log: {log}");
    let written = log
        .lines()
        .filter(|l| l.contains("failed SASL/PLAIN authentication: "))
        .count();
    assert!(
        written < 30 && log.contains("further ones are counted"),
        "{written} failures written one by one: {log}"
    );
}

/// `offsetlab groups` on a share group, as `kafka-share-groups.sh` shows and moves one: listed
/// as a share group; described with each partition's start offset, the log end beside it and
/// the members; a reset refused while a member reads, a dry run that changes nothing, and an
/// `--execute` that moves the start offset (AlterShareGroupOffsets) — which the lab's next
/// share poll then reads from.
#[test]
fn offsetlab_groups_describes_and_resets_a_share_group() {
    let (lab, kafka) = with_kafka();
    let run = offsetlab;
    act_ok(
        &lab,
        &[
            "alter-share-group workers share.auto.offset.reset=earliest",
            "share-consumer s1 group=workers topic=orders ack=explicit max-poll=5 acquire-mode=record-limit",
            "share-poll s1",
            "share-ack s1 accept",
        ],
    );
    let out = run(&["groups", "--bootstrap-server", &kafka, "--list"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("workers (share group)"),
        "{out:?}"
    );
    let describe = || {
        let out = run(&[
            "groups",
            "--bootstrap-server",
            &kafka,
            "--describe",
            "--group",
            "workers",
            "--json",
        ]);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("json")
    };
    let d = describe();
    assert_eq!(
        (d["type"].as_str(), d["state"].as_str()),
        (Some("share"), Some("Stable"))
    );
    let row = &d["rows"][0];
    assert_eq!(
        (
            row["topic"].as_str(),
            row["start_offset"].as_i64(),
            row["log_end_offset"].as_i64()
        ),
        (Some("orders"), Some(5), Some(12))
    );
    assert_eq!(d["members"][0]["client_id"].as_str(), Some("s1"));
    let reset = |extra: &[&str]| {
        let mut args = vec![
            "groups",
            "--bootstrap-server",
            &kafka,
            "--reset-offsets",
            "--group",
            "workers",
            "--topic",
            "orders",
        ];
        args.extend_from_slice(extra);
        run(&args)
    };
    let out = reset(&["--to-earliest", "--execute"]);
    assert_eq!(out.status.code(), Some(2), "a member reads: {out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("Share group 'workers' is not empty (Stable)"));
    act_ok(&lab, &["close s1"]);
    let out = reset(&["--to-offset", "2", "--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        (rows[0]["start_offset"].as_i64(), rows[0]["new_offset"].as_i64()),
        (Some(5), Some(2))
    );
    assert_eq!(
        describe()["rows"][0]["start_offset"].as_i64(),
        Some(5),
        "a dry run changes nothing"
    );
    let out = reset(&["--to-offset", "2", "--execute"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(describe()["rows"][0]["start_offset"].as_i64(), Some(2));
    // The lab's own share consumer reads from there: offsets 2.. again, each a first delivery.
    act_ok(
        &lab,
        &[
            "restart s1",
            "share-poll s1",
            "expect share-group=workers offset=2 record-state=acquired delivery-count=1",
        ],
    );
    let scenario = http(&lab.addr, "GET", "/api/scenario", "").expect("scenario");
    assert!(
        scenario.contains("alter-share-offsets workers offsets=orders:0=2"),
        "{scenario}"
    );
}

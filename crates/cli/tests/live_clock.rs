//! `serve`'s live clock, driven as a user drives it: a new lab on wall time, timers firing while
//! nobody acts, Kafka clients' records and the lab's on one clock, pausing and going live again,
//! and the mode kept across a restart.

#[macro_use]
mod common;

use common::{act, act_ok, http, ok_json, serve, Lab};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .expect("wall clock")
}

fn state(lab: &Lab) -> serde_json::Value {
    ok_json(&http(&lab.addr, "GET", "/api/state", "").expect("state")).expect("200")
}

fn export(lab: &Lab) -> String {
    let res = http(&lab.addr, "GET", "/api/scenario", "").expect("export");
    res.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default()
}

fn set_clock(lab: &Lab, mode: &str) -> String {
    let body = serde_json::json!({ "mode": mode }).to_string();
    http(&lab.addr, "POST", "/api/clock", &body).expect("clock")
}

/// Waits up to `limit` for `done` to hold of the lab's state.
fn wait_for(lab: &Lab, limit: Duration, done: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let s = state(lab);
        if done(&s) || start.elapsed() > limit {
            return s;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_new_lab_runs_on_wall_time_and_its_timers_fire_while_nobody_acts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().display().to_string();
    let before = wall_ms();
    let lab = serve(&["--data", &data, "--http", "127.0.0.1:0"]);
    assert!(lab.banner.contains("clock live"), "{}", lab.banner);
    let s = state(&lab);
    assert_eq!(s["clock_mode"], "live");
    let seeded = common::first_timestamp(&lab.addr, "orders");
    assert!(
        seeded >= before && seeded <= wall_ms(),
        "the seed is built at wall time: {seeded} not in {before}..now"
    );
    assert!(
        export(&lab)
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("clock 20")),
        "the export starts the lab at its instant"
    );

    // c1 commits on librdkafka's 5 s timer: once it has polled, the commit lands on time with
    // nobody acting — the ticker moves the clock when the timer is due.
    act_ok(&lab, &["poll c1"]);
    let polled = wall_ms();
    let s = wait_for(&lab, Duration::from_secs(10), |s| {
        s["groups"]["analytics-prod"]["committed"]["orders-0"] == 4
    });
    assert_eq!(s["groups"]["analytics-prod"]["committed"]["orders-0"], 4, "{s}");
    let commit_at = s["consumer_offsets"]["latest"]
        .as_array()
        .and_then(|l| l.iter().find(|o| o["group"] == "analytics-prod"))
        .and_then(|o| o["commit_timestamp"].as_i64())
        .expect("the commit's timestamp");
    assert!(
        commit_at > polled - 5_000 && commit_at <= wall_ms(),
        "committed at wall time ({commit_at}, polled at {polled})"
    );

    // A change happens at the instant it is made.
    let ahead = wall_ms();
    act_ok(&lab, &["produce orders count=1"]);
    let records =
        ok_json(&http(&lab.addr, "GET", "/api/records?topic=orders&from=12&limit=1", "").expect("records"))
            .expect("200");
    let t = records["records"][0]["timestamp"].as_i64().expect("timestamp");
    assert!(t >= ahead && t <= wall_ms(), "{t} is the produce's instant");

    // A bad line is refused and changes nothing but the clock — time passed anyway: at most a
    // `clock` line, and the figures as they were.
    // (A consumer's "next auto-commit in" is relative to the clock, which moved.)
    let figures = |s: serde_json::Value| (s["groups"].clone(), s["topics"].clone());
    let before = state(&lab);
    let lines_before = before["history_lines"].as_u64().expect("lines");
    let res = act(&lab, &["poll nobody"]);
    assert!(res.starts_with("HTTP/1.1 422"), "{res}");
    let after = state(&lab);
    let lines_after = after["history_lines"].as_u64().expect("lines");
    assert!(lines_after <= lines_before + 1, "{lines_before} → {lines_after}");
    assert_eq!(figures(after), figures(before));
    assert!(
        !export(&lab).contains("nobody"),
        "the refused line is not in the history"
    );
}

/// A request refused before it reaches the lab — a line that does not read (400), or lines
/// that would step a live clock further past wall time than it could follow — changes nothing,
/// not even the clock: no `clock` line is added for it. A lesson's `tick 45s` still runs.
#[test]
fn a_refused_request_adds_no_clock_line_and_a_far_future_clock_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().display().to_string();
    let lab = serve(&["--data", &data, "--http", "127.0.0.1:0"]);
    let lines = |lab: &Lab| state(lab)["history_lines"].as_u64().expect("lines");
    let before = lines(&lab);
    let res = act(&lab, &["produce orders count=1", "this is not a line"]);
    assert!(res.starts_with("HTTP/1.1 400"), "{res}");
    assert_eq!(lines(&lab), before, "a 400 adds no line, not even the clock's");

    for far in [
        vec!["clock 9999-12-31T00:00:00Z"],
        vec!["tick 1h", "tick 1s"],
        vec!["tick 30d"],
    ] {
        let res = act(&lab, &far);
        assert!(res.starts_with("HTTP/1.1 400"), "{far:?}: {res}");
        assert!(
            res.contains("the clock is live") && res.contains("pause the clock"),
            "{res}"
        );
        assert_eq!(lines(&lab), before, "{far:?} changed the history");
    }
    let s = state(&lab);
    assert_eq!(s["clock_mode"], "live");
    assert!(!export(&lab).contains("9999"), "the far clock is nowhere");

    // What a lesson does after a crash, on a live clock: allowed.
    act_ok(&lab, &["tick 45s"]);
    // Paused, the clock may be stepped anywhere.
    set_clock(&lab, "paused");
    act_ok(&lab, &["tick 30d"]);
}

#[test]
fn pausing_loading_and_going_live_again_and_a_restart_keeps_the_mode() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().display().to_string();
    let lab = serve(&["--data", &data, "--http", "127.0.0.1:0"]);

    // A bad mode: a JSON 400, nothing changed.
    let res = set_clock(&lab, "fast");
    assert!(res.starts_with("HTTP/1.1 400"), "{res}");
    assert!(res.contains("live or paused"), "{res}");
    assert_eq!(state(&lab)["clock_mode"], "live");

    // Paused, the clock stays where it is, whatever wall time does.
    let res = set_clock(&lab, "paused");
    assert!(res.starts_with("HTTP/1.1 200"), "{res}");
    let at = state(&lab)["clock_ms"].as_i64().expect("clock");
    // Wall time passing is what this checks the paused clock ignores: the wait is the test.
    std::thread::sleep(Duration::from_millis(400));
    act_ok(&lab, &["produce orders count=1"]);
    assert_eq!(state(&lab)["clock_ms"].as_i64(), Some(at), "paused: no catch-up");

    // Loading a lesson pauses a live clock: it runs on its own instants, from the epoch.
    assert!(set_clock(&lab, "live").starts_with("HTTP/1.1 200"));
    let lesson = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../lessons/01-auto-commit-timer-loses.scn"
    ))
    .expect("lesson");
    let res = http(&lab.addr, "POST", "/api/scenario", &lesson).expect("load");
    assert!(res.starts_with("HTTP/1.1 200"), "{res}");
    let s = state(&lab);
    assert_eq!(s["clock_mode"], "paused");
    let lesson_at = s["clock_ms"].as_i64().expect("clock");
    assert!(
        lesson_at < 1_767_225_600_000 + 86_400_000,
        "on the lesson's clock: {lesson_at}"
    );

    // A restart keeps a paused lab paused: no jump of months at the first change.
    drop(lab);
    let lab = serve(&["--data", &data, "--http", "127.0.0.1:0"]);
    assert!(lab.banner.contains("clock paused"), "{}", lab.banner);
    act_ok(&lab, &["tick 1s"]);
    assert_eq!(state(&lab)["clock_ms"].as_i64(), Some(lesson_at + 1_000));

    // Going live moves the clock to now at once.
    let before = wall_ms();
    let res = set_clock(&lab, "live");
    assert!(res.starts_with("HTTP/1.1 200"), "{res}");
    let s = ok_json(&res).expect("state");
    assert_eq!(s["clock_mode"], "live");
    assert!(
        s["clock_ms"].as_i64().is_some_and(|t| t >= before),
        "{}",
        s["clock_ms"]
    );
    assert!(
        export(&lab).contains("\nclock 20"),
        "the jump is a line of the history"
    );

    // The page's reset keeps a live lab live, its seed built at now.
    let before = wall_ms();
    let res = http(&lab.addr, "POST", "/api/reset", "").expect("reset");
    assert!(res.starts_with("HTTP/1.1 200"), "{res}");
    assert_eq!(state(&lab)["clock_mode"], "live");
    let seeded = common::first_timestamp(&lab.addr, "orders");
    assert!(seeded >= before && seeded <= wall_ms(), "{seeded}");

    // `--clock paused` at start overrides what the lab kept.
    drop(lab);
    let lab = serve(&["--data", &data, "--http", "127.0.0.1:0", "--clock", "paused"]);
    assert_eq!(state(&lab)["clock_mode"], "paused");
}

/// Kafka's `offsets.retention.minutes` on wall time: an Empty group's committed offsets expire
/// once the retention has passed, with no one acting.
#[test]
fn an_empty_groups_offsets_expire_on_wall_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().display().to_string();
    let lab = serve(&["--data", &data, "--http", "127.0.0.1:0"]);
    act_ok(
        &lab,
        &[
            "broker offsets.retention=2s",
            "alter-offsets idle offsets=orders:0=5",
        ],
    );
    assert_eq!(state(&lab)["groups"]["idle"]["committed"]["orders-0"], 5);
    let s = wait_for(&lab, Duration::from_secs(8), |s| {
        s["groups"]["idle"]["committed"]["orders-0"].is_null()
    });
    assert!(s["groups"]["idle"]["committed"]["orders-0"].is_null(), "{s}");
    let expired = s["narrative"]["events"]
        .as_array()
        .expect("events")
        .iter()
        .any(|e| {
            e["text"]
                .as_str()
                .is_some_and(|t| t.contains("offsets.retention"))
        });
    assert!(expired, "the narrative says why");
}

/// kcat, its output; Debian's librdkafka, not the one cargo builds (see `kafka.rs`).
fn kcat(args: &[&str], stdin: &str) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("kcat")
        .env_remove("LD_LIBRARY_PATH")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("these tests need kcat (apt-get install kcat): {e}"));
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("kcat");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A `LogAppendTime` topic stamps a real client's records with the broker's clock — wall time,
/// as Kafka's does — and an offsets-for-times lookup on it asks in the same time.
#[test]
fn a_log_append_time_topic_stamps_wall_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().display().to_string();
    let lab = serve(&["--data", &data, "--http", "127.0.0.1:0", "--kafka", "127.0.0.1:0"]);
    let kafka = lab.kafka();
    act_ok(&lab, &["topic stamped message.timestamp.type=LogAppendTime"]);
    let before = wall_ms();
    kcat(&["-b", &kafka, "-P", "-t", "stamped", "-p", "0"], "one\ntwo\n");
    let after = wall_ms();
    let out = kcat(
        &[
            "-b", &kafka, "-C", "-t", "stamped", "-p", "0", "-e", "-q", "-f", "%T\\n",
        ],
        "",
    );
    let stamps: Vec<i64> = out.lines().map(|l| l.parse().expect("a timestamp")).collect();
    assert_eq!(stamps.len(), 2, "{out}");
    for t in &stamps {
        assert!(*t >= before && *t <= after, "{t} not in {before}..{after}");
    }

    // The Produce answer's log_append_time is the time the batch was stamped with: the live
    // clock moves before the listener plans the answer. Produced once the wall clock is past the
    // last stamp, so that its own stamp is a later one.
    while wall_ms() <= stamps[1] {
        std::thread::sleep(Duration::from_millis(1));
    }
    let (answered, base) = produce_one(&kafka, "stamped");
    assert_eq!(base, 2);
    let out = kcat(
        &[
            "-b", &kafka, "-C", "-t", "stamped", "-p", "0", "-o", "2", "-e", "-q", "-f", "%T\\n",
        ],
        "",
    );
    let stamped: i64 = out.trim().parse().expect("a timestamp");
    assert_eq!(answered, stamped, "the answer says the stamp");
    assert!(stamped > stamps[1], "stamped at its own instant");
}

/// One record produced over a plain socket (Produce v7, acks=1): the answer's log_append_time
/// and base offset.
fn produce_one(kafka: &str, topic: &str) -> (i64, i64) {
    use offsetlab_wire::kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use offsetlab_wire::kafka_protocol::messages::{ProduceRequest, TopicName};
    use offsetlab_wire::kafka_protocol::protocol::StrBytes;
    use offsetlab_wire::kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };
    let record = Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: -1,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: 0,
        timestamp: 1_000,
        key: None,
        value: Some(bytes::Bytes::from_static(b"three")),
        headers: Default::default(),
    };
    let mut batch = bytes::BytesMut::new();
    RecordBatchEncoder::encode(
        &mut batch,
        &[record],
        &RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        },
    )
    .expect("encode");
    let request = ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(batch.freeze()))])]);
    let mut s = std::net::TcpStream::connect(kafka).expect("connect");
    let r = ask!(&mut s, Produce, 7, 1, request);
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 0);
    (p.log_append_time_ms, p.base_offset)
}

//! `offsetlab run/explore --bootstrap-server` against the lab's own Kafka listener: the lessons
//! and the explorer's cells run with real librdkafka consumers in processes of their own, and
//! the cluster's figures must equal the model's. (The same runs against tansu, a broker the lab
//! did not write, are in `scripts/cluster_runs.sh`.) Also: a run touches nothing it did not
//! create, and every bad input is one line and exit code 2 or 3.

#[macro_use]
mod common;

use common::{http, offsetlab, ok_json, serve, Lab};
use std::path::PathBuf;

fn repo(path: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
        .display()
        .to_string()
}

fn listener() -> Lab {
    serve(&["--ephemeral", "--http", "127.0.0.1:0", "--kafka", "127.0.0.1:0"])
}

fn text(o: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs a lesson on a fresh listener with `--compare`: exit 0 and the figures equal.
fn lesson_on_the_listener(file: &str) {
    let lab = listener();
    let o = offsetlab(&[
        "run",
        &repo(file),
        "--bootstrap-server",
        &lab.kafka(),
        "--compare",
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("The cluster's figures equal the model's."), "{out}");
    assert!(!out.contains("DIFFERS"), "{out}");
}

#[test]
fn lesson_1_on_the_listener() {
    lesson_on_the_listener("lessons/01-auto-commit-timer-loses.scn");
}

#[test]
fn lesson_2_on_the_listener() {
    lesson_on_the_listener("lessons/02-commit-after-duplicates.scn");
}

#[test]
fn lesson_3_on_the_listener() {
    lesson_on_the_listener("lessons/03-upsert-converges.scn");
}

#[test]
fn lesson_4_on_the_listener() {
    lesson_on_the_listener("lessons/04-rewind-to-earliest.scn");
}

#[test]
fn lesson_5_on_the_listener() {
    lesson_on_the_listener("lessons/05-new-group-from-zero.scn");
}

#[test]
fn lesson_10_on_the_listener() {
    lesson_on_the_listener("lessons/10-java-vs-librdkafka-auto-commit.scn");
}

/// One explorer cell on a fresh listener, two crash points (the model's worst and the first):
/// every point's lost / duplicates / duplicate rows equal the explorer's prediction.
fn cell_on_the_listener(strategy: &str, sink: &str) {
    let lab = listener();
    let o = offsetlab(&[
        "explore",
        &repo("crates/cluster/scenarios/seed-6s-session.scn"),
        "--bootstrap-server",
        &lab.kafka(),
        "--strategy",
        strategy,
        "--sink",
        sink,
        "--sample",
        "2",
        "--json",
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["agree"], true, "{out}");
    let points = v["points"].as_array().expect("points");
    assert_eq!(points.len(), 2, "{out}");
    for p in points {
        assert_eq!(p["model"], p["cluster"], "{out}");
    }
}

#[test]
fn auto_timer_append_cell_on_the_listener() {
    cell_on_the_listener("auto-timer", "append");
}

#[test]
fn manual_batch_append_cell_on_the_listener() {
    cell_on_the_listener("manual-batch", "append");
}

/// A transactional sink keeps the offsets with its rows, and the restarted consumer starts
/// where the sink says: nothing lost, nothing duplicated, whatever the crash point.
#[test]
fn manual_batch_transactional_cell_on_the_listener() {
    cell_on_the_listener("manual-batch", "transactional");
}

/// A read-process-write application with real Kafka transactions (a transactional producer,
/// `sendOffsetsToTransaction`): exactly once, whatever the crash point.
#[test]
fn manual_batch_kafka_tx_cell_on_the_listener() {
    cell_on_the_listener("manual-batch", "kafka-tx");
}

#[test]
fn before_process_append_cell_on_the_listener() {
    cell_on_the_listener("before-process", "append");
}

fn state(lab: &Lab) -> serde_json::Value {
    ok_json(&http(&lab.addr, "GET", "/api/state", "").expect("state")).expect("200")
}

fn topic_names(lab: &Lab) -> Vec<String> {
    let mut names: Vec<String> = state(lab)["topics"]
        .as_array()
        .expect("topics")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect();
    names.sort();
    names
}

fn group_names(lab: &Lab) -> Vec<String> {
    state(lab)["groups"]
        .as_object()
        .expect("groups")
        .keys()
        .cloned()
        .collect()
}

/// What a run must leave as it was: the seed's topic byte for byte, its group's offsets and
/// figures.
fn untouched(lab: &Lab) -> (Vec<u8>, serde_json::Value) {
    let g = &state(lab)["groups"]["analytics-prod"];
    let kept = serde_json::json!({
        "committed": g["committed"],
        "log_end_offset": g["log_end_offset"],
        "sink": g["sink"],
        "audit": g["audit"],
    });
    (common::fetched(&lab.kafka(), "orders"), kept)
}

#[test]
fn a_run_never_touches_a_topic_or_group_it_did_not_create() {
    let lab = listener();
    let kafka = lab.kafka();
    let before = untouched(&lab);
    let (topics, groups) = (topic_names(&lab), group_names(&lab));
    // A run that ends well; its topics and groups are gone after it.
    let o = offsetlab(&[
        "run",
        &repo("lessons/04-rewind-to-earliest.scn"),
        "--bootstrap-server",
        &kafka,
        "--prefix",
        "t-ok-",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // A run that fails midway: an expect line the cluster does not meet.
    let lesson = std::fs::read_to_string(repo("lessons/04-rewind-to-earliest.scn")).expect("lesson");
    let broken = lesson.replacen(
        "expect group=ledger committed=0 lag=12",
        "expect group=ledger committed=5",
        1,
    );
    assert_ne!(broken, lesson);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("broken.scn");
    std::fs::write(&file, broken).expect("write");
    let o = offsetlab(&[
        "run",
        &file.display().to_string(),
        "--bootstrap-server",
        &kafka,
        "--prefix",
        "t-broken-",
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("committed expected 5, got 0"), "{out}");
    assert_eq!(
        untouched(&lab),
        before,
        "the seed's topic and group are as they were"
    );
    assert_eq!(topic_names(&lab), topics, "the runs' topics are deleted");
    assert_eq!(group_names(&lab), groups, "the runs' groups are deleted");
}

#[test]
fn a_topic_that_exists_is_refused_and_nothing_is_created() {
    let lab = listener();
    common::act_ok(&lab, &["topic pre-orders partitions=1"]);
    let (topics, groups) = (topic_names(&lab), group_names(&lab));
    let o = offsetlab(&[
        "run",
        &repo("lessons/04-rewind-to-earliest.scn"),
        "--bootstrap-server",
        &lab.kafka(),
        "--prefix",
        "pre-",
    ]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("\"pre-orders\" exists"), "{err}");
    assert_eq!(topic_names(&lab), topics);
    assert_eq!(group_names(&lab), groups);
}

#[test]
fn a_line_a_cluster_cannot_run_is_refused_with_its_number_before_anything_runs() {
    let lab = listener();
    let topics = topic_names(&lab);
    let o = offsetlab(&[
        "run",
        &repo("lessons/06-retention-out-of-range.scn"),
        "--bootstrap-server",
        &lab.kafka(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        err.contains("line 9:") && err.contains("segment.records"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&o.stdout).is_empty(), "{}", text(&o));
    assert_eq!(topic_names(&lab), topics);
}

#[test]
fn an_unreachable_cluster_a_refused_login_and_a_bad_property_are_one_line_each() {
    let lesson = repo("lessons/04-rewind-to-earliest.scn");
    // Nothing listens on port 1.
    let o = offsetlab(&["run", &lesson, "--bootstrap-server", "127.0.0.1:1"]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot reach the cluster at 127.0.0.1:1") && err.contains("Connection refused"),
        "{err}"
    );
    // SASL against a listener that has none: the client's own reason is in the line.
    let lab = listener();
    let topics = topic_names(&lab);
    let o = offsetlab(&[
        "run",
        &lesson,
        "--bootstrap-server",
        &lab.kafka(),
        "-X",
        "security.protocol=SASL_PLAINTEXT",
        "-X",
        "sasl.mechanism=PLAIN",
        "-X",
        "sasl.username=ada",
        "-X",
        "sasl.password=wrong",
    ]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("Authentication"), "{err}");
    assert_eq!(topic_names(&lab), topics);
    // A property librdkafka does not know: the user's input, exit 2.
    let o = offsetlab(&[
        "run",
        &lesson,
        "--bootstrap-server",
        &lab.kafka(),
        "-X",
        "no.such.property=1",
    ]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(err.contains("no.such.property"), "{err}");
    // A --command-config line that is no property names its file and line.
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("client.properties");
    std::fs::write(&config, "# SASL\nsecurity.protocol=PLAINTEXT\nnot a property\n").expect("write");
    let o = offsetlab(&[
        "run",
        &lesson,
        "--bootstrap-server",
        &lab.kafka(),
        "--command-config",
        &config.display().to_string(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(err.contains("client.properties:3: expected key=value"), "{err}");
}

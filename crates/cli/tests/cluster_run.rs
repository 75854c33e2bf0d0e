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

/// `offsetlab run FILE --bootstrap-server KAFKA --prefix PREFIX EXTRA…`, to its end.
fn run_on(kafka: &str, file: &str, prefix: &str, extra: &[&str]) -> std::process::Output {
    let args = [
        &["run", file, "--bootstrap-server", kafka, "--prefix", prefix][..],
        extra,
    ]
    .concat();
    offsetlab(&args)
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

/// The Python the runner starts share agents with: `OFFSETLAB_PYTHON`, or the venv
/// `scripts/setup.sh` makes (confluent-kafka 2.16). Never skipped: without it the test fails
/// and says how to get it.
fn share_python() -> String {
    let python =
        std::env::var("OFFSETLAB_PYTHON").unwrap_or_else(|_| repo("target/kafka-python-venv/bin/python"));
    let can = std::process::Command::new(&python)
        .args(["-c", "from confluent_kafka import ShareConsumer"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        can,
        "{python} cannot import confluent-kafka's ShareConsumer: run scripts/setup.sh (it makes target/kafka-python-venv), or point OFFSETLAB_PYTHON at a Python with confluent-kafka 2.16+"
    );
    python
}

/// `offsetlab run` of lesson 12 on `lab`'s listener, its share agents started with `python`.
fn lesson_12_with_python(lab: &Lab, python: &str, extra: &[&str]) -> std::process::Output {
    let lesson = repo("lessons/12-share-group-acks-keep-the-log.scn");
    let kafka = lab.kafka();
    std::process::Command::new(env!("CARGO_BIN_EXE_offsetlab"))
        .args([&["run", &lesson, "--bootstrap-server", &kafka][..], extra].concat())
        .env("OFFSETLAB_PYTHON", python)
        .output()
        .expect("run offsetlab")
}

/// Lesson 12 with real share consumers (confluent-kafka's ShareConsumer, librdkafka's, in agents
/// of their own): two members splitting a partition, a SIGKILLed member's records back, a
/// poison record alone on its last delivery and archived, a stuck member's locks running out —
/// every poll hands out what the model's acquired, and the figures equal.
#[test]
fn lesson_12_share_groups_on_the_listener() {
    let lab = listener();
    let o = lesson_12_with_python(&lab, &share_python(), &["--compare"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("The cluster's figures equal the model's."), "{out}");
    assert!(
        out.contains("SHARE GROUP"),
        "the share group's figures are compared: {out}"
    );
    assert!(!out.contains("DIFFERS"), "{out}");
}

/// Without a Python that has confluent-kafka's ShareConsumer, a run with share consumers is
/// refused before it creates anything, saying what to install.
#[test]
fn share_consumers_without_their_client_are_refused_before_anything_runs() {
    let lab = listener();
    let before = topic_names(&lab);
    let o = lesson_12_with_python(&lab, "/nonexistent/python3", &[]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(out.contains("confluent-kafka>=2.16"), "{out}");
    assert!(out.contains("OFFSETLAB_PYTHON"), "{out}");
    assert_eq!(topic_names(&lab), before, "nothing was created");
}

#[test]
fn lesson_10_on_the_listener() {
    lesson_on_the_listener("lessons/10-java-vs-librdkafka-auto-commit.scn");
}

/// A restart while the crashed incarnation is still a member: the new one's polls get nothing
/// until the coordinator drops the dead member, then it resumes at the committed offset.
#[test]
fn a_restart_into_a_dead_members_session_on_the_listener() {
    lesson_on_the_listener("crates/cluster/scenarios/restart-into-a-dead-session.scn");
}

/// seek back and forward, and a group rewound from outside (shift-by, to-current): each target
/// found on the cluster is the model's, and replays and skips are audited as the model does.
#[test]
fn seek_and_rewind_on_the_listener() {
    lesson_on_the_listener("crates/cluster/scenarios/seek-and-rewind.scn");
}

/// seek and reset-offsets by time: ListOffsets by timestamp on the cluster finds the model's
/// offsets (a run produces the model's timestamps); a consumer's position is checked too.
#[test]
fn seek_and_reset_by_time_on_the_listener() {
    lesson_on_the_listener("crates/cluster/scenarios/seek-and-reset-by-time.scn");
}

/// reset=none: the consumer stops on a partition with no committed offset and leaves; after an
/// outside reset it starts exactly there.
#[test]
fn reset_none_stops_on_the_listener() {
    lesson_on_the_listener("crates/cluster/scenarios/reset-none-stops.scn");
}

/// A topic's settings become its topic configs on the cluster: zstd and gzip batches (the
/// broker recompresses) read back by the real consumers.
#[test]
fn topic_settings_on_the_listener() {
    lesson_on_the_listener("crates/cluster/scenarios/topic-settings.scn");
}

/// A static member restarted inside its session takes its partitions straight back.
#[test]
fn a_static_member_restart_on_the_listener() {
    lesson_on_the_listener("crates/cluster/scenarios/static-member-restart.scn");
}

/// Two running members: a join (the running member rejoins inside its next poll, its revoke
/// hook first) and a crash (the survivor takes the partition after the dead member's session).
#[test]
fn a_rebalance_between_two_members_on_the_listener() {
    lesson_on_the_listener("crates/cluster/scenarios/rebalance-two-members.scn");
}

/// A transactional sink across a join and a crash: a partition given to a member starts where
/// the sink says, so nothing is delivered twice.
#[test]
fn a_rebalance_with_a_transactional_sink_on_the_listener() {
    lesson_on_the_listener("crates/cluster/scenarios/rebalance-transactional-sink.scn");
}

/// max.poll.interval.ms: the slow member's client leaves on its own, the other takes its
/// partition, and the zombie's commit is refused by the coordinator: duplicates, none lost.
#[test]
fn a_zombie_past_max_poll_interval_on_the_listener() {
    lesson_on_the_listener("crates/cluster/scenarios/max-poll-interval-zombie.scn");
}

/// Kafka 4's consumer protocol (KIP-848) with librdkafka's `group.protocol=consumer`: a
/// scale-out where only the partitions that move stop (revoked in their owner's poll, picked
/// up on the new owner's heartbeat), the group's and members' epochs read with
/// ConsumerGroupDescribe at each step, and a scale-in.
#[test]
fn a_consumer_protocol_scale_out_on_the_listener() {
    lesson_on_the_listener("crates/cluster/scenarios/consumer-protocol-scale-out.scn");
}

/// The auto-commit timer across a join and a close: every handover at a commit.
#[test]
fn a_rebalance_on_close_with_the_auto_commit_timer_on_the_listener() {
    lesson_on_the_listener("crates/cluster/scenarios/rebalance-on-close.scn");
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
        "--compare",
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
    let o = run_on(&kafka, &repo("lessons/04-rewind-to-earliest.scn"), "t-ok-", &[]);
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
    let o = run_on(&kafka, &file.display().to_string(), "t-broken-", &[]);
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

/// `--reuse-topic`: a topic an earlier run kept is read into the model and consumed, and it is
/// byte for byte as it was afterwards — never written to, never deleted; a line that would
/// write to it, a reused topic the cluster lacks, or one the scenario never declares is refused
/// before anything runs (exit 2).
#[test]
fn a_reused_topic_is_read_never_written_and_never_deleted() {
    let lab = listener();
    let kafka = lab.kafka();
    let run = |file: &str, extra: &[&str]| run_on(&kafka, &repo(file), "t-reuse-", extra);
    let o = run("crates/cluster/scenarios/reuse-1-keep.scn", &["--keep"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(topic_names(&lab).contains(&"t-reuse-orders".to_string()));
    let kept = common::fetched(&kafka, "t-reuse-orders");
    assert!(!kept.is_empty());
    let o = run(
        "crates/cluster/scenarios/reuse-2-read.scn",
        &["--reuse-topic", "orders", "--compare"],
    );
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("its 14 record(s) read into the model"), "{out}");
    assert!(out.contains("The cluster's figures equal the model's."), "{out}");
    assert!(topic_names(&lab).contains(&"t-reuse-orders".to_string()), "{out}");
    assert_eq!(common::fetched(&kafka, "t-reuse-orders"), kept);
    assert!(!group_names(&lab).contains(&"t-reuse-readers".to_string()));
    // Writing to it, reusing what is not there, reusing what the scenario lacks: refused.
    let topics = topic_names(&lab);
    let o = run(
        "crates/cluster/scenarios/reuse-1-keep.scn",
        &["--reuse-topic", "orders"],
    );
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        err.contains("line 4:") && err.contains("is reused (--reuse-topic)"),
        "{err}"
    );
    let f = repo("crates/cluster/scenarios/reuse-2-read.scn");
    let o = run_on(&kafka, &f, "t-none-", &["--reuse-topic", "orders"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no topic t-none-orders to reuse"),
        "{}",
        text(&o)
    );
    let o = run(
        "crates/cluster/scenarios/reuse-2-read.scn",
        &["--reuse-topic", "payments"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no `topic payments` line"),
        "{}",
        text(&o)
    );
    assert_eq!(topic_names(&lab), topics);
    assert_eq!(common::fetched(&kafka, "t-reuse-orders"), kept);
}

/// `serve --bootstrap-server`: the page's log view is read from the cluster (Fetch), and
/// SIGTERM (a service manager's stop, `kill`) cleans up as Ctrl-C does: its consumers closed,
/// its topics deleted from the cluster, exit 0.
#[test]
fn serve_on_a_cluster_reads_its_log_there_and_cleans_up_on_sigterm() {
    let backing = listener();
    let kafka = backing.kafka();
    let mut page = serve(&[
        "--http",
        "127.0.0.1:0",
        "--bootstrap-server",
        &kafka,
        "--prefix",
        "sig-",
    ]);
    for line in ["topic orders partitions=1", "produce orders count=3"] {
        let answer = common::act(&page, &[line]);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    assert!(topic_names(&backing).contains(&"sig-orders".to_string()));
    // The page's log view is read from the cluster, and holds what the backing broker holds.
    let window =
        ok_json(&http(&page.addr, "GET", "/api/records?topic=orders&partition=0", "").expect("records"))
            .expect("200");
    assert_eq!(window["source"], "cluster", "{window}");
    assert_eq!(window["log_end_offset"], 3, "{window}");
    let backing_window = ok_json(
        &http(
            &backing.addr,
            "GET",
            "/api/records?topic=sig-orders&partition=0",
            "",
        )
        .expect("records"),
    )
    .expect("200");
    let shown = |w: &serde_json::Value| -> Vec<(i64, String, String)> {
        w["records"]
            .as_array()
            .expect("records")
            .iter()
            .map(|r| {
                (
                    r["offset"].as_i64().unwrap_or(-1),
                    r["key"].as_str().unwrap_or_default().to_string(),
                    r["value"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    };
    assert_eq!(shown(&window).len(), 3, "{window}");
    assert_eq!(shown(&window), shown(&backing_window));
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &page.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = page.child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "serve did not stop on SIGTERM"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(status.success(), "{status:?}");
    assert!(
        !topic_names(&backing).contains(&"sig-orders".to_string()),
        "{:?}",
        topic_names(&backing)
    );
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
    assert!(err.contains("SASL"), "{err}");
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

/// Lesson 4 with `--prefix pre-` on `lab`, where `pre-NAME` exists already: refused in one line
/// naming it (exit 2), and nothing created or changed.
fn refused_as_existing(lab: &Lab, name: &str) {
    let (topics, groups) = (topic_names(lab), group_names(lab));
    let before = state(lab);
    let o = run_on(
        &lab.kafka(),
        &repo("lessons/04-rewind-to-earliest.scn"),
        "pre-",
        &[],
    );
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("\"pre-{name}\"")) && err.contains("exists"),
        "{err}"
    );
    assert_eq!(topic_names(lab), topics, "nothing created");
    assert_eq!(group_names(lab), groups, "nothing created");
    assert_eq!(state(lab)["groups"], before["groups"], "no group changed");
}

#[test]
fn a_topic_or_a_group_that_exists_is_refused_and_nothing_is_created() {
    let lab = listener();
    common::act_ok(&lab, &["topic pre-orders partitions=1"]);
    refused_as_existing(&lab, "orders");
    // A group the lab made, with a committed offset, named as the run's `ledger` would be.
    let lab = listener();
    common::act_ok(
        &lab,
        &["reset-offsets pre-ledger topic=orders to-earliest execute"],
    );
    assert!(group_names(&lab).contains(&"pre-ledger".to_string()));
    refused_as_existing(&lab, "ledger");
}

/// Polls `done` on the lab's state every 100 ms for up to 30 s.
fn wait_for_state(lab: &Lab, what: &str, done: impl Fn(&serde_json::Value) -> bool) {
    let start = std::time::Instant::now();
    while !done(&state(lab)) {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "never: {what}: {}",
            state(lab)
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// `--compare` is only worth its name if it says so when reality parts from the model: a record
/// produced into the run's topic from outside (the test, through the lab's own producer) makes
/// the cluster's log end and lag differ from the model's, and the run exits 1 naming exactly
/// those figures.
#[test]
fn compare_names_each_figure_where_the_cluster_parts_from_the_model() {
    let lab = listener();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("parted.scn");
    std::fs::write(
        &file,
        "topic orders partitions=1\n\
         produce orders count=6\n\
         consumer c1 group=g topic=orders commit=manual-batch max-poll=6 sink=append reset=earliest session-timeout=6s\n\
         poll c1\n\
         process c1 count=all\n\
         close c1\n\
         # Meanwhile, someone else produces into the topic.\n\
         tick 8s\n",
    )
    .expect("write");
    let kafka = lab.kafka();
    let runner =
        std::thread::spawn(move || run_on(&kafka, &file.display().to_string(), "cmp-", &["--compare"]));
    // Once the run's consumer has committed all six and left, one more record from outside.
    wait_for_state(&lab, "cmp-g committed 6 with no member", |s| {
        let g = &s["groups"]["cmp-g"];
        g["committed"]["cmp-orders-0"] == 6 && g["members"].as_array().is_some_and(Vec::is_empty)
    });
    common::act_ok(&lab, &["produce cmp-orders count=1"]);
    let o = runner.join().expect("the run");
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let differs: Vec<&str> = out.lines().filter(|l| l.starts_with("DIFFERS")).collect();
    assert_eq!(
        differs,
        [
            "DIFFERS  group g: log-end-offset[orders-0]: model 6, cluster 7",
            "DIFFERS  group g: lag[orders-0]: model 0, cluster 1",
        ],
        "{out}"
    );
    assert!(!out.contains("equal the model's"), "{out}");
}

/// A run that fails while its consumers are live, and one stopped by SIGTERM in the middle of a
/// tick, close those consumers and delete every topic and group they made.
#[test]
fn a_run_that_fails_or_is_stopped_with_live_consumers_leaves_nothing_behind() {
    let lab = listener();
    let kafka = lab.kafka();
    let before = untouched(&lab);
    let (topics, groups) = (topic_names(&lab), group_names(&lab));
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = |expect: &str| {
        format!(
            "topic orders partitions=1\n\
             produce orders count=6\n\
             consumer c1 group=g topic=orders commit=manual-batch max-poll=4 sink=append reset=earliest session-timeout=6s\n\
             poll c1\n\
             {expect}\n\
             tick 60s\n\
             process c1 count=all\n"
        )
    };
    // An expect line that fails right after a poll: c1 is live, with records in flight.
    let failing = dir.path().join("failing.scn");
    std::fs::write(&failing, scenario("expect in-flight=3")).expect("write");
    let o = run_on(&kafka, &failing.display().to_string(), "live-fail-", &[]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("in-flight expected 3, got 4"), "{out}");
    assert_eq!(topic_names(&lab), topics, "the run's topic is deleted");
    assert_eq!(group_names(&lab), groups, "the run's group is deleted");

    // SIGTERM in the middle of the minute's tick, c1 still live.
    let stopped = dir.path().join("stopped.scn");
    std::fs::write(&stopped, scenario("expect in-flight=4")).expect("write");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_offsetlab"))
        .args([
            "run",
            &stopped.display().to_string(),
            "--bootstrap-server",
            &kafka,
            "--prefix",
            "live-term-",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let said = lines_of(child.stderr.take().expect("stderr"));
    wait_for_state(&lab, "live-term-g with a member", |s| {
        s["groups"]["live-term-g"]["members"]
            .as_array()
            .is_some_and(|m| m.len() == 1)
    });
    // Past the poll and its expect line, into the minute's tick: the run says so before it
    // waits it out.
    let mut stderr = Vec::new();
    wait_for(&said, "the tick's wall-time notice", &mut stderr, |l| {
        l.trim_start()
            .strip_prefix("… ")
            .and_then(|l| l.strip_suffix(" s of wall time (the scenario's clock is the cluster's)"))
            .and_then(|s| s.parse::<f64>().ok())
            .is_some_and(|s| s >= 30.0)
    });
    let pid = child.id().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    let o = child.wait_with_output().expect("the run");
    stderr.extend(said.iter());
    let out = format!("{}\n{}", text(&o), stderr.join("\n"));
    assert_eq!(o.status.code(), Some(130), "{out}");
    assert!(out.contains("interrupted"), "{out}");
    assert!(!out.contains("warning: cleaning up"), "{out}");
    assert_eq!(topic_names(&lab), topics, "the stopped run's topic is deleted");
    assert_eq!(group_names(&lab), groups, "the stopped run's group is deleted");
    assert_eq!(
        untouched(&lab),
        before,
        "the seed's topic and group are as they were"
    );
}

/// A secured cluster: the lab's listener with SASL/PLAIN. A wrong password is the cluster's own
/// refusal, one line and exit 3, with nothing created; the right one, given in a
/// `--command-config` file as Kafka's tools take it, reaches every client of the run — its
/// admin, its producer and each consumer agent — and the lesson runs.
#[test]
fn a_refused_password_is_one_line_and_the_right_one_runs_the_lesson() {
    let dir = tempfile::tempdir().expect("tempdir");
    let users = dir.path().join("users");
    std::fs::write(
        &users,
        "# the cluster's users\nada=correct horse battery staple\n",
    )
    .expect("write");
    let lab = serve(&[
        "--ephemeral",
        "--http",
        "127.0.0.1:0",
        "--kafka",
        "127.0.0.1:0",
        "--kafka-sasl-plain-users",
        &users.display().to_string(),
    ]);
    assert!(lab.banner.contains("SASL_PLAINTEXT"), "{}", lab.banner);
    let (topics, groups) = (topic_names(&lab), group_names(&lab));
    let lesson = repo("lessons/04-rewind-to-earliest.scn");
    let config = |password: &str| {
        let file = dir.path().join(format!("client-{}.properties", password.len()));
        std::fs::write(
            &file,
            format!(
                "# as kafka-consumer-groups.sh --command-config takes it\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=ada\nsasl.password={password}\n"
            ),
        )
        .expect("write");
        file.display().to_string()
    };
    let o = offsetlab(&[
        "run",
        &lesson,
        "--bootstrap-server",
        &lab.kafka(),
        "--command-config",
        &config("guess"),
    ]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("Authentication failed: Invalid username or password"),
        "{err}"
    );
    assert_eq!(topic_names(&lab), topics, "nothing created");
    assert_eq!(group_names(&lab), groups, "nothing created");

    let o = offsetlab(&[
        "run",
        &lesson,
        "--bootstrap-server",
        &lab.kafka(),
        "--command-config",
        &config("correct horse battery staple"),
        "--compare",
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("The cluster's figures equal the model's."), "{out}");
    assert_eq!(topic_names(&lab), topics, "the run's topic deleted");
    assert_eq!(group_names(&lab), groups, "the run's groups deleted");
}

/// `offsetlab run` started in the background on `kafka`: its stdout's lines as they come, and
/// the child (for its exit status and stderr).
fn spawn_run(
    kafka: &str,
    file: &std::path::Path,
    prefix: &str,
) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_offsetlab"))
        .args([
            "run",
            &file.display().to_string(),
            "--bootstrap-server",
            kafka,
            "--prefix",
            prefix,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    (child, lines_of(stdout))
}

/// The lines of a child's output as they come, read on a thread of their own.
fn lines_of(output: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(output).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Reads `lines` until one equals `wanted` (60 s at most); every line read is kept in `seen`.
fn wait_for_line(lines: &std::sync::mpsc::Receiver<String>, wanted: &str, seen: &mut Vec<String>) {
    wait_for(lines, wanted, seen, |l| l == wanted);
}

/// Reads `lines` until one is `found` (60 s at most), `what` naming it; every line read is kept
/// in `seen`.
fn wait_for(
    lines: &std::sync::mpsc::Receiver<String>,
    what: &str,
    seen: &mut Vec<String>,
    found: impl Fn(&str) -> bool,
) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => {
                let hit = found(&line);
                seen.push(line);
                if hit {
                    return;
                }
            }
            Err(_) => panic!("never printed {what:?}:\n{}", seen.join("\n")),
        }
    }
}

/// Stops the process `pid` for `time` (SIGSTOP, then SIGCONT): a cluster that answers nothing
/// for a while.
fn freeze(pid: u32, time: std::time::Duration) {
    let signal = |s: &str| {
        let ok = std::process::Command::new("kill")
            .args([s, &pid.to_string()])
            .status()
            .expect("kill");
        assert!(ok.success());
    };
    signal("-STOP");
    // How long the cluster stays silent is the test: a stall of wall time.
    std::thread::sleep(time);
    signal("-CONT");
}

/// The rest of a background run: its stdout (the lines already read and the rest), stderr and
/// exit code.
fn finish_run(
    child: std::process::Child,
    lines: &std::sync::mpsc::Receiver<String>,
    mut seen: Vec<String>,
) -> (Option<i32>, String) {
    let o = child.wait_with_output().expect("the run");
    seen.extend(lines.iter());
    (
        o.status.code(),
        format!(
            "stdout:\n{}\nstderr:\n{}",
            seen.join("\n"),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

/// A cluster slower than the scenario's clock: the listener answers nothing for five seconds
/// from before t=4 s, so the line after the stalled one runs past the consumer's auto-commit
/// timer's fire at t=5 s, which the model's line comes before. Where that changes no figure —
/// the fire commits nothing new, the consumer's offsets do not move before t=5 s — the run says
/// so as a warning and the lesson holds; where the early commit would be read by an `expect`,
/// the run stops, naming that line (exit 3), and deletes what it created.
#[test]
fn a_line_late_for_the_auto_commit_timer_warns_where_no_figure_can_change_and_stops_where_one_could() {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = |stalled: &str, after: &str| {
        format!(
            "topic orders partitions=1\n\
             produce orders count=4\n\
             consumer c1 group=g topic=orders commit=auto-timer interval=5s max-poll=4 sink=append reset=earliest session-timeout=30s\n\
             poll c1\n\
             process c1 count=all\n\
             tick 4s\n\
             {stalled}\n\
             {after}\n\
             tick 2s\n\
             expect committed=4 lag=0 lost=0\n"
        )
    };
    for (name, stalled, after, harmless) in [
        // The commit lands at t=4 s (late): the fire at 5 s finds nothing new to commit.
        ("harmless", "commit c1", "expect committed=4 sink-rows=4", true),
        // The produce is stalled: the fire at 5 s commits 4 before the expect that, in the
        // model, reads 0.
        (
            "harmful",
            "produce orders count=1",
            "expect committed=0 sink-rows=4",
            false,
        ),
    ] {
        let lab = listener();
        let (topics, groups) = (topic_names(&lab), group_names(&lab));
        let file = dir.path().join(format!("{name}.scn"));
        std::fs::write(&file, scenario(stalled, after)).expect("write");
        let (child, lines) = spawn_run(&lab.kafka(), &file, &format!("late-{name}-"));
        let mut seen = Vec::new();
        // Printed once the tick's line ran, at t=0: the stalled line starts at t=4 s.
        wait_for_line(&lines, "$ tick 4s", &mut seen);
        freeze(lab.child.id(), std::time::Duration::from_secs(5));
        let (code, out) = finish_run(child, &lines, seen);
        if harmless {
            assert_eq!(code, Some(0), "{out}");
            assert!(
                out.contains("late for c1's auto-commit timer: its fire at t=5s comes before this line and commits nothing, as the model's will at t=5s"),
                "{out}"
            );
            assert!(out.contains("warning: "), "{out}");
        } else {
            assert_eq!(code, Some(3), "{out}");
            assert!(
                out.contains("too late for c1's auto-commit timer: its next fire comes before the line, where the model's comes after, and line 8 (`expect committed=0 sink-rows=4`) reads the group's figures before the model's fire commits"),
                "{out}"
            );
        }
        assert_eq!(topic_names(&lab), topics, "{name}: the run's topic is deleted");
        assert_eq!(group_names(&lab), groups, "{name}: the run's group is deleted");
    }
}

/// A poll that hands out fewer records than the model's stops the run at that line, saying
/// what the cluster holds: here another client deleted the records (DeleteRecords) the new
/// consumer was to read from its group's committed offset.
#[test]
fn a_poll_short_of_the_models_records_says_what_the_cluster_holds() {
    let lab = listener();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("cut.scn");
    std::fs::write(
        &file,
        "topic orders partitions=1\n\
         produce orders count=8\n\
         consumer c1 group=g topic=orders commit=manual-batch max-poll=4 sink=append reset=earliest session-timeout=6s\n\
         poll c1\n\
         process c1 count=all\n\
         close c1\n\
         tick 2s\n\
         consumer c2 group=g topic=orders commit=manual-batch max-poll=4 sink=append reset=earliest session-timeout=6s\n\
         poll c2\n",
    )
    .expect("write");
    let (child, lines) = spawn_run(&lab.kafka(), &file, "cut-");
    let mut seen = Vec::new();
    wait_for_line(&lines, "$ tick 2s", &mut seen);
    common::act_ok(&lab, &["delete-records cut-orders before=8"]);
    let (code, out) = finish_run(child, &lines, seen);
    assert_eq!(code, Some(3), "{out}");
    assert!(
        out.contains("line 9: `poll c2`: on the cluster: the cluster handed 0 record(s) to c2 where the model's poll handed out 4; missing orders-0 offsets 4..=7: its log on the cluster starts at offset 8"),
        "{out}"
    );
}

//! `offsetlab agent` — a real consumer (librdkafka) in its own process — against the lab's
//! Kafka listener: what a crash is when it is a real one.

#[macro_use]
mod common;

use common::{http, ok_json, serve, Lab};
use offsetlab_cluster::{ConsumerSettings, Reply, Request};
use offsetlab_engine::strategy::CommitStrategy;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

struct Agent {
    child: Child,
    to: ChildStdin,
    from: BufReader<ChildStdout>,
}

/// `offsetlab agent` with `settings` as the first line of its stdin (never an argument: `ps`
/// would show the password), and its stdin to write requests to.
fn spawn(settings: &str, stdout: Stdio, stderr: Stdio) -> (Child, ChildStdin) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_offsetlab"))
        .arg("agent")
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .expect("spawn the agent");
    let mut to = child.stdin.take().expect("stdin");
    writeln!(to, "{settings}").expect("settings");
    (child, to)
}

impl Agent {
    fn start(settings: &ConsumerSettings) -> Self {
        let json = serde_json::to_string(settings).expect("settings");
        let (mut child, to) = spawn(&json, Stdio::piped(), Stdio::null());
        let from = BufReader::new(child.stdout.take().expect("stdout"));
        let mut agent = Agent { child, to, from };
        assert!(matches!(agent.reply(), Reply::Ready { .. }));
        agent
    }

    fn reply(&mut self) -> Reply {
        let mut line = String::new();
        self.from.read_line(&mut line).expect("a reply");
        offsetlab_cluster::protocol::decode(line.trim()).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    fn ask(&mut self, request: &Request) -> Reply {
        writeln!(self.to, "{}", offsetlab_cluster::protocol::encode(request)).expect("ask");
        self.to.flush().expect("flush");
        self.reply()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn settings(kafka: &str, group: &str, strategy: CommitStrategy) -> ConsumerSettings {
    ConsumerSettings {
        bootstrap_servers: kafka.to_string(),
        group: group.to_string(),
        topic: "orders".into(),
        client_id: format!("{group}-c1"),
        strategy,
        auto_commit_interval_ms: 1000,
        reset: "earliest".into(),
        session_timeout_ms: Some(6000),
        max_poll_interval_ms: None,
        isolation: None,
        instance_id: None,
        assignor: None,
        extra: Vec::new(),
        offsets_in_sink: false,
        start_offsets: Vec::new(),
        transactional_id: None,
        transaction_timeout_ms: None,
        output_topic: None,
        joins_later: false,
        group_protocol: None,
        remote_assignor: None,
    }
}

fn group(lab: &Lab, name: &str) -> serde_json::Value {
    let s = ok_json(&http(&lab.addr, "GET", "/api/state", "").expect("state")).expect("200");
    s["groups"][name].clone()
}

/// Waits up to `limit` for `done` to hold of the group.
fn wait_for(
    lab: &Lab,
    name: &str,
    limit: Duration,
    done: impl Fn(&serde_json::Value) -> bool,
) -> (serde_json::Value, Duration) {
    let start = Instant::now();
    loop {
        let g = group(lab, name);
        if done(&g) || start.elapsed() > limit {
            return (g, start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn polled(reply: Reply) -> Vec<i64> {
    match reply {
        Reply::Records { records } => records.iter().map(|r| r.offset).collect(),
        other => panic!("not records: {other:?}"),
    }
}

fn poll(agent: &mut Agent, max: usize) -> Vec<i64> {
    polled(agent.ask(&Request::Poll {
        max,
        timeout_ms: 20_000,
        assigned: None,
        starts: Vec::new(),
        shares: None,
    }))
}

#[test]
fn a_crash_is_real_no_leave_group_the_member_stays_until_its_session_times_out_and_the_timer_commit_is_what_is_left(
) {
    let lab = common::serve_logging(&[
        "--ephemeral",
        "--http",
        "127.0.0.1:0",
        "--kafka",
        "127.0.0.1:0",
        "--clock",
        "live",
    ]);
    let kafka = lab.kafka();
    // A 3 s timer: long enough that the second batch below is handed over and the process
    // killed well before the timer's next fire.
    let mut crashing = settings(&kafka, "crash-g", CommitStrategy::AutoTimer);
    crashing.auto_commit_interval_ms = 3000;
    let mut agent = Agent::start(&crashing);
    assert_eq!(poll(&mut agent, 4), vec![0, 1, 2, 3], "a batch of four");
    // librdkafka's timer commits what poll handed over (nothing was processed).
    let (g, _) = wait_for(&lab, "crash-g", Duration::from_secs(10), |g| {
        g["committed"]["orders-0"] == 4
    });
    assert_eq!(g["committed"]["orders-0"], 4, "{g}");
    assert_eq!(g["members"].as_array().map(Vec::len), Some(1));
    // Right after that commit, a second batch: its offsets are stored (up to 8) for the timer's
    // next commit, which the kill below comes before.
    assert_eq!(poll(&mut agent, 4), vec![4, 5, 6, 7], "the next four");

    // kill -9: no close(), no LeaveGroup, no final commit of the stored offsets.
    agent.child.kill().expect("SIGKILL");
    let _ = agent.child.wait();
    let killed = Instant::now();
    // Wall time passing without the member is what is tested: the coordinator keeps a silent
    // member until its session times out, so there is no event to wait for here.
    std::thread::sleep(Duration::from_millis(1500));
    let g = group(&lab, "crash-g");
    assert_eq!(
        g["members"].as_array().map(Vec::len),
        Some(1),
        "still a member after the kill: {g}"
    );
    // Until its session.timeout.ms (6 s) runs out on the coordinator.
    let (g, _) = wait_for(&lab, "crash-g", Duration::from_secs(20), |g| {
        g["members"].as_array().is_some_and(Vec::is_empty)
    });
    let gone_after = killed.elapsed();
    assert!(g["members"].as_array().is_some_and(Vec::is_empty), "{g}");
    assert!(
        gone_after >= Duration::from_secs(5),
        "not before its session timed out: {gone_after:?}"
    );
    assert_eq!(
        g["committed"]["orders-0"], 4,
        "the timer's last commit is what is committed, not the 8 a close would have committed: {g}"
    );

    // A clean close() is the contrast: it leaves at once.
    let mut agent = Agent::start(&settings(&kafka, "close-g", CommitStrategy::ManualBatch));
    assert_eq!(poll(&mut agent, 4), vec![0, 1, 2, 3]);
    assert!(matches!(agent.ask(&Request::Commit), Reply::Committed { .. }));
    let closing = Instant::now();
    assert_eq!(agent.ask(&Request::Close), Reply::Closed);
    let (g, _) = wait_for(&lab, "close-g", Duration::from_secs(5), |g| {
        g["members"].as_array().is_some_and(Vec::is_empty)
    });
    assert!(g["members"].as_array().is_some_and(Vec::is_empty), "{g}");
    assert!(
        closing.elapsed() < Duration::from_secs(5),
        "LeaveGroup, not a session timeout"
    );
    assert_eq!(g["committed"]["orders-0"], 4);

    // The coordinator's own word on each departure: the killed member never sent a LeaveGroup
    // and was dropped for silence; the closed one left with one.
    let log = common::server_log(lab);
    let departures: Vec<&str> = log.lines().filter(|l| l.contains(" member=\"")).collect();
    let of = |client: &str| -> Vec<&str> {
        departures
            .iter()
            .copied()
            .filter(|l| l.contains(&format!(" client=\"{client}\"")))
            .collect()
    };
    let crashed = of("crash-g-c1");
    assert_eq!(crashed.len(), 1, "{log}");
    assert!(
        crashed[0].contains(" INFO ")
            && crashed[0].contains(" group=\"crash-g\"")
            && crashed[0].contains(": member removed: no heartbeat within its session.timeout.ms (6000 ms) "),
        "{log}"
    );
    let closed = of("close-g-c1");
    assert_eq!(closed.len(), 1, "{log}");
    assert!(
        closed[0].contains(": member left the group (LeaveGroup) "),
        "{log}"
    );
}

#[test]
fn an_agent_answers_a_bad_line_and_goes_on_and_bad_settings_are_exit_2() {
    let lab = serve(&["--ephemeral", "--http", "127.0.0.1:0", "--kafka", "127.0.0.1:0"]);
    let mut agent = Agent::start(&settings(&lab.kafka(), "bad-g", CommitStrategy::ManualRecord));
    writeln!(agent.to, "{{\"op\":\"frobnicate\"}}").expect("write");
    agent.to.flush().expect("flush");
    assert!(matches!(agent.reply(), Reply::Failed { .. }));
    let committed = agent.ask(&Request::CommitOffsets {
        offsets: vec![offsetlab_cluster::PartitionOffset {
            topic: "orders".into(),
            partition: 0,
            offset: 2,
        }],
    });
    assert!(matches!(committed, Reply::Committed { .. }), "{committed:?}");
    assert_eq!(group(&lab, "bad-g")["committed"]["orders-0"], 2);
    // Settings that do not read: exit 2, saying so.
    let (bad, to) = spawn("{not json", Stdio::null(), Stdio::piped());
    drop(to);
    let out = bad.wait_with_output().expect("exit");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the settings line"));
}

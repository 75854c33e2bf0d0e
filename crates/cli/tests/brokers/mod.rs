//! A cluster of three Apache Kafka brokers for the tests that need several: the one
//! `scripts/apache-kafka.sh start --brokers 3 --dir DIR` started, named by the environment
//! variable [`CLUSTER_VAR`] (its directory, whose `apache-kafka.state` says where each broker
//! listens and which process it is).
//!
//! These tests are named `three_brokers_…`. `scripts/test.sh` (which exports
//! `OFFSETLAB_TEST_COMMAND=1`) leaves them out of its `cargo test --workspace` (`--skip
//! three_brokers_`), then starts such a cluster and runs them with the variable set. So:
//!
//! - inside the test command, a test that finds the variable unset fails, naming it;
//! - outside it, a plain `cargo test` skips them (saying so on stderr): the test command is
//!   what guarantees they run.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// The environment variable naming the three brokers' directory.
pub const CLUSTER_VAR: &str = "OFFSETLAB_THREE_BROKERS";

/// A running cluster of three brokers: node 1 is also the KRaft controller.
pub struct Brokers {
    /// `host:port` of node 1, 2 and 3.
    pub addr: BTreeMap<i32, String>,
    /// The process of each node.
    #[allow(dead_code)] // only the test that kills a broker needs it
    pub pid: BTreeMap<i32, u32>,
}

/// The cluster [`CLUSTER_VAR`] names; `None` (after saying so) outside the test command when
/// it is unset. Inside the test command an unset variable fails the test.
pub fn cluster() -> Option<Brokers> {
    let Some(dir) = std::env::var_os(CLUSTER_VAR) else {
        assert!(
            std::env::var_os("OFFSETLAB_TEST_COMMAND").is_none(),
            "{CLUSTER_VAR} is unset: scripts/test.sh starts three Apache Kafka brokers (scripts/apache-kafka.sh start --brokers 3 --dir DIR) and must run this test with {CLUSTER_VAR}=DIR"
        );
        eprintln!(
            "skipped: {CLUSTER_VAR} names no cluster of three brokers (scripts/test.sh starts one and runs this test)"
        );
        return None;
    };
    let dir = PathBuf::from(dir);
    let state = std::fs::read_to_string(dir.join("apache-kafka.state"))
        .unwrap_or_else(|e| panic!("{CLUSTER_VAR}={}: no apache-kafka.state: {e}", dir.display()));
    let value = |key: &str| -> Vec<String> {
        state
            .lines()
            .filter_map(|l| l.strip_prefix(&format!("{key}=")))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(
        value("brokers"),
        ["3"],
        "{CLUSTER_VAR} must name a cluster of three brokers"
    );
    let bootstrap = value("bootstrap").concat();
    let addr: BTreeMap<i32, String> = (1..).zip(bootstrap.split(',').map(str::to_string)).collect();
    let pid: BTreeMap<i32, u32> = (1..)
        .zip(value("pid").iter().map(|p| p.parse().expect("a pid")))
        .collect();
    assert_eq!(addr.len(), 3, "{state}");
    assert_eq!(pid.len(), 3, "{state}");
    Some(Brokers { addr, pid })
}

/// `offsetlab ARGS` to its end.
pub fn offsetlab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_offsetlab"))
        .args(args)
        .output()
        .expect("run offsetlab")
}

/// What a command printed, for an assertion's message.
pub fn text(o: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `offsetlab ARGS`, which must exit 0; its stdout.
pub fn ok(args: &[&str]) -> String {
    let o = offsetlab(args);
    assert_eq!(o.status.code(), Some(0), "offsetlab {args:?}\n{}", text(&o));
    String::from_utf8_lossy(&o.stdout).to_string()
}

/// The partition of `__consumer_offsets` (of `partitions`) that holds `group`: Kafka's
/// `Utils.abs(groupId.hashCode()) % numPartitions` (GroupCoordinatorService.partitionFor), where
/// `Utils.abs(Integer.MIN_VALUE)` is 0.
pub fn offsets_partition(group: &str, partitions: usize) -> i32 {
    let h = java_hash(group);
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % i32::try_from(partitions).expect("partitions")
}

/// Java's `String.hashCode()` of an ASCII name, which Kafka's group coordinator hashes.
fn java_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

impl Brokers {
    /// A topic's partitions: (partition, leader node), from `offsetlab topics --describe`.
    pub fn leaders(&self, via: i32, topic: &str) -> BTreeMap<i32, i32> {
        let out = ok(&[
            "topics",
            "--bootstrap-server",
            &self.addr[&via],
            "--describe",
            "--topic",
            topic,
            "--json",
        ]);
        let v: serde_json::Value = serde_json::from_str(&out).expect("json");
        v[0]["partitions"]
            .as_array()
            .unwrap_or_else(|| panic!("no partitions of {topic}: {out}"))
            .iter()
            .map(|p| {
                (
                    p["partition"].as_i64().expect("partition") as i32,
                    p["leader"].as_i64().expect("leader") as i32,
                )
            })
            .collect()
    }

    /// `__consumer_offsets` exists and every partition of it has a leader: a group's first
    /// FindCoordinator makes Kafka create it (the admin command asks again while it loads).
    pub fn offsets_topic_ready(&self) -> BTreeMap<i32, i32> {
        let probe = offsetlab(&[
            "groups",
            "--bootstrap-server",
            &self.addr[&1],
            "--describe",
            "--group",
            "offsetlab-three-brokers-probe",
        ]);
        assert!(
            String::from_utf8_lossy(&probe.stderr).contains("does not exist"),
            "{}",
            text(&probe)
        );
        let start = std::time::Instant::now();
        loop {
            let leaders = self.leaders(1, "__consumer_offsets");
            if !leaders.is_empty() && leaders.values().all(|&l| l > 0) {
                return leaders;
            }
            assert!(
                start.elapsed() < std::time::Duration::from_secs(60),
                "__consumer_offsets has partitions without a leader: {leaders:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }

    /// The node that coordinates `group`: the leader of `__consumer_offsets` partition
    /// `abs(hashCode(group)) % partitions`, as Kafka's coordinator chooses it.
    pub fn coordinator(&self, group: &str) -> i32 {
        let leaders = self.offsets_topic_ready();
        leaders[&offsets_partition(group, leaders.len())]
    }

    /// The first prefix `STEM-K-` whose `group` is coordinated by a node `wanted` accepts, and
    /// that node.
    pub fn prefix_coordinated(&self, stem: &str, group: &str, wanted: impl Fn(i32) -> bool) -> (String, i32) {
        (0..200)
            .map(|k| format!("{stem}-{k}-"))
            .find_map(|p| {
                let node = self.coordinator(&format!("{p}{group}"));
                wanted(node).then_some((p, node))
            })
            .expect("a prefix whose group's coordinator is wanted")
    }

    /// Every topic name of the cluster.
    pub fn topics(&self, via: i32) -> Vec<String> {
        ok(&["topics", "--bootstrap-server", &self.addr[&via], "--list"])
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Every group name of the cluster.
    pub fn groups(&self, via: i32) -> Vec<String> {
        ok(&["groups", "--bootstrap-server", &self.addr[&via], "--list"])
            .lines()
            .map(str::to_string)
            .collect()
    }
}

#[test]
fn java_hash_is_javas() {
    // "".hashCode() == 0, "a".hashCode() == 97, "hello".hashCode() == 99162322.
    assert_eq!(java_hash(""), 0);
    assert_eq!(java_hash("a"), 97);
    assert_eq!(java_hash("hello"), 99_162_322);
    // Overflow wraps as Java's int does: "polygenelubricants".hashCode() == Integer.MIN_VALUE.
    assert_eq!(java_hash("polygenelubricants"), i32::MIN);
}

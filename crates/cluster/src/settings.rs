//! A consumer of the scenario language as a real client is configured: the one place that
//! says which librdkafka properties each commit strategy is (`docs/CLUSTER.md` prints it).
//!
//! | strategy         | librdkafka                                                     | commits                          |
//! |------------------|----------------------------------------------------------------|----------------------------------|
//! | `auto-timer`     | `enable.auto.commit=true`, `enable.auto.offset.store=true`     | the client's timer, every interval, what poll handed over |
//! | `auto-poll`      | `enable.auto.commit=false` (emulated)                          | the agent, inside a poll once the interval passed, what *earlier* polls returned (the Java client's rule) |
//! | `manual-batch`   | `enable.auto.commit=false`, `enable.auto.offset.store=false`   | `commitSync()` after the batch   |
//! | `manual-record`  | the same                                                       | `commitSync(offset + 1)` per record |
//! | `manual-async`   | the same                                                       | `commitAsync()` after the batch  |
//! | `before-process` | the same                                                       | `commitSync()` right after poll  |

use crate::names::Prefix;
use offsetlab_engine::consumer::{Assignor, ConsumerConfig};
use offsetlab_engine::group::GroupProtocol;
use offsetlab_engine::strategy::{AutoOffsetReset, CommitStrategy, CommitWhen};
use offsetlab_engine::txn::IsolationLevel;
use serde::{Deserialize, Serialize};

/// The agents' `heartbeat.interval.ms`: a third of Kafka's least session timeout, at most.
pub const HEARTBEAT_INTERVAL_MS: i64 = 500;

/// Everything an agent needs to be the consumer a scenario line describes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerSettings {
    pub bootstrap_servers: String,
    pub group: String,
    pub topic: String,
    /// `client.id`: the consumer's name in the scenario.
    pub client_id: String,
    pub strategy: CommitStrategy,
    pub auto_commit_interval_ms: i64,
    /// `auto.offset.reset`: `earliest`, `latest` or `none` (librdkafka's `error`).
    pub reset: String,
    pub session_timeout_ms: Option<i64>,
    pub max_poll_interval_ms: Option<i64>,
    /// `read_committed` or `read_uncommitted`.
    pub isolation: Option<String>,
    pub instance_id: Option<String>,
    /// `range`, `roundrobin` or `cooperative-sticky`.
    pub assignor: Option<String>,
    /// `-X key=value` and `--command-config` properties (SASL, TLS, …), applied last.
    pub extra: Vec<(String, String)>,
    /// A transactional sink keeps the group's offsets with its rows: the client commits nothing
    /// to Kafka, and starts each partition it is given where the sink says.
    #[serde(default)]
    pub offsets_in_sink: bool,
    /// Where to start a partition when it is assigned (the sink's next offsets), by partition
    /// of `topic`.
    #[serde(default)]
    pub start_offsets: Vec<(i32, i64)>,
    /// A read-process-write application (`sink=kafka-tx`): its transactional producer's
    /// `transactional.id` and `transaction.timeout.ms`.
    #[serde(default)]
    pub transactional_id: Option<String>,
    #[serde(default)]
    pub transaction_timeout_ms: Option<i64>,
    /// Its output topic's name on the cluster.
    #[serde(default)]
    pub output_topic: Option<String>,
    /// The model's group gives this consumer nothing as it starts — the group is rebalancing
    /// and waits for a dead incarnation's session to run out — so the agent does not wait for
    /// partitions before it says it is ready (its polls wait, as the model's do).
    #[serde(default)]
    pub joins_later: bool,
    /// `group.protocol`: `consumer` for Kafka 4's protocol (KIP-848), where the coordinator
    /// assigns and times the heartbeats; `None` for the classic one.
    #[serde(default)]
    pub group_protocol: Option<String>,
    /// `group.remote.assignor` (`uniform`, `range`): the coordinator's assignor the member asks
    /// for under the consumer protocol.
    #[serde(default)]
    pub remote_assignor: Option<String>,
}

impl ConsumerSettings {
    /// The consumer a scenario's `consumer` line describes, as a run starts it on the cluster:
    /// its group and topic with the run's prefix, every setting the line gave. The isolation
    /// level is always set: the lab's default is the Java client's (`read_uncommitted`),
    /// librdkafka's is `read_committed`.
    pub fn for_consumer(
        config: &ConsumerConfig,
        bootstrap: &str,
        prefix: &Prefix,
        extra: &[(String, String)],
    ) -> Self {
        let consumer_protocol = config.group_protocol == GroupProtocol::Consumer;
        Self {
            bootstrap_servers: bootstrap.to_string(),
            group: prefix.on_cluster(&config.group),
            topic: prefix.on_cluster(&config.topic),
            client_id: config.name.clone(),
            strategy: config.strategy,
            auto_commit_interval_ms: config.auto_commit_interval_ms,
            reset: match config.auto_offset_reset {
                AutoOffsetReset::Earliest => "earliest",
                AutoOffsetReset::Latest => "latest",
                AutoOffsetReset::None => "none",
            }
            .to_string(),
            // Under the consumer protocol the session and the heartbeats are the group's
            // (`consumer.session.timeout.ms`, `consumer.heartbeat.interval.ms` on the broker),
            // and librdkafka refuses the classic settings for them.
            session_timeout_ms: (!consumer_protocol).then_some(config.session_timeout_ms),
            max_poll_interval_ms: Some(config.max_poll_interval_ms),
            isolation: Some(
                match config.isolation {
                    IsolationLevel::ReadUncommitted => "read_uncommitted",
                    IsolationLevel::ReadCommitted => "read_committed",
                }
                .to_string(),
            ),
            instance_id: config.group_instance_id.clone(),
            assignor: (!consumer_protocol).then(|| {
                match config.assignor {
                    Assignor::Range => "range",
                    Assignor::CooperativeSticky => "cooperative-sticky",
                }
                .to_string()
            }),
            extra: extra.to_vec(),
            offsets_in_sink: !config.commits_to_kafka(),
            start_offsets: Vec::new(),
            // One id per scenario consumer: a restarted incarnation fences the one it replaces
            // and aborts what that left open.
            transactional_id: config
                .is_transactional_producer()
                .then(|| prefix.on_cluster(&format!("{}.{}", config.group, config.name))),
            transaction_timeout_ms: config
                .is_transactional_producer()
                .then_some(config.transaction_timeout_ms),
            output_topic: config
                .output
                .as_ref()
                .filter(|_| config.is_transactional_producer())
                .map(|o| prefix.on_cluster(o)),
            joins_later: false,
            group_protocol: consumer_protocol.then(|| "consumer".to_string()),
            remote_assignor: consumer_protocol.then(|| config.remote_assignor.to_string()),
        }
    }

    /// The librdkafka properties of this consumer, in the order they are set.
    pub fn properties(&self) -> Vec<(String, String)> {
        let mut p: Vec<(String, String)> = vec![
            ("bootstrap.servers".into(), self.bootstrap_servers.clone()),
            ("group.id".into(), self.group.clone()),
            ("client.id".into(), self.client_id.clone()),
            (
                "auto.offset.reset".into(),
                match self.reset.as_str() {
                    "none" => "error".to_string(),
                    other => other.to_string(),
                },
            ),
        ];
        // Only a strategy whose commits come from the client's own timer lets it commit; the
        // offset store that timer commits is filled by poll only for it.
        let rules = self.strategy.rules();
        let auto = rules.when == CommitWhen::Timer && !self.offsets_in_sink;
        let store = rules.stores_on_poll && !self.offsets_in_sink;
        p.push(("enable.auto.commit".into(), auto.to_string()));
        p.push(("enable.auto.offset.store".into(), store.to_string()));
        if auto {
            p.push((
                "auto.commit.interval.ms".into(),
                self.auto_commit_interval_ms.to_string(),
            ));
        }
        let optional = [
            (
                "session.timeout.ms",
                self.session_timeout_ms.map(|v| v.to_string()),
            ),
            (
                "max.poll.interval.ms",
                self.max_poll_interval_ms.map(|v| v.to_string()),
            ),
            ("isolation.level", self.isolation.clone()),
            ("group.instance.id", self.instance_id.clone()),
            ("partition.assignment.strategy", self.assignor.clone()),
            ("group.protocol", self.group_protocol.clone()),
            ("group.remote.assignor", self.remote_assignor.clone()),
        ];
        for (k, v) in optional {
            if let Some(v) = v {
                p.push((k.to_string(), v));
            }
        }
        // The model's members learn of a rebalance at their next poll; a real one learns it
        // from a heartbeat's answer, every `heartbeat.interval.ms` (3 s by default). A short
        // interval keeps a poll that rejoins from waiting seconds for it (-X can set another).
        // Under the consumer protocol the coordinator says how often to heartbeat.
        if self.group_protocol.is_none() {
            p.push(("heartbeat.interval.ms".into(), HEARTBEAT_INTERVAL_MS.to_string()));
        }
        p.extend(self.extra.iter().cloned());
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(strategy: CommitStrategy) -> ConsumerSettings {
        ConsumerSettings {
            bootstrap_servers: "127.0.0.1:9092".into(),
            group: "g".into(),
            topic: "orders".into(),
            client_id: "c1".into(),
            strategy,
            auto_commit_interval_ms: 5000,
            reset: "none".into(),
            session_timeout_ms: Some(6000),
            max_poll_interval_ms: None,
            isolation: None,
            instance_id: None,
            assignor: Some("range".into()),
            extra: vec![("security.protocol".into(), "plaintext".into())],
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

    fn get<'a>(p: &'a [(String, String)], k: &str) -> Option<&'a str> {
        p.iter().rev().find(|(key, _)| key == k).map(|(_, v)| v.as_str())
    }

    #[test]
    fn only_auto_timer_lets_the_client_commit() {
        for s in CommitStrategy::ALL {
            let p = settings(s).properties();
            let auto = s == CommitStrategy::AutoTimer;
            assert_eq!(
                get(&p, "enable.auto.commit"),
                Some(if auto { "true" } else { "false" }),
                "{s:?}"
            );
            assert_eq!(
                get(&p, "enable.auto.offset.store"),
                Some(if auto { "true" } else { "false" })
            );
            assert_eq!(get(&p, "auto.commit.interval.ms").is_some(), auto);
        }
    }

    #[test]
    fn offsets_kept_in_a_transactional_sink_are_never_committed_to_kafka() {
        let Ok(Some(offsetlab_scenario::command::Command::Consumer(c))) =
            offsetlab_scenario::command::Command::parse(
                "consumer c1 group=g topic=orders commit=auto-timer sink=transactional",
            )
        else {
            panic!("parses");
        };
        let s = ConsumerSettings::for_consumer(&c.config, "b:9092", &Prefix::for_run(1), &[]);
        assert!(s.offsets_in_sink);
        assert_eq!(get(&s.properties(), "enable.auto.commit"), Some("false"));
    }

    #[test]
    fn the_scenarios_settings_are_the_clients_and_extras_come_last() {
        let p = settings(CommitStrategy::ManualBatch).properties();
        assert_eq!(
            get(&p, "auto.offset.reset"),
            Some("error"),
            "librdkafka's name for none"
        );
        assert_eq!(get(&p, "session.timeout.ms"), Some("6000"));
        assert_eq!(get(&p, "partition.assignment.strategy"), Some("range"));
        assert_eq!(get(&p, "max.poll.interval.ms"), None);
        assert_eq!(p.last().map(|(k, _)| k.as_str()), Some("security.protocol"));
    }

    #[test]
    fn a_scenario_consumer_is_started_with_its_settings_and_the_runs_names() {
        let line = offsetlab_scenario::command::Command::parse(
            "consumer c1 group=analytics topic=orders commit=manual-async reset=earliest session-timeout=6s isolation=read_committed assignor=cooperative-sticky",
        );
        let Ok(Some(offsetlab_scenario::command::Command::Consumer(c))) = line else {
            panic!("{line:?}");
        };
        let prefix = Prefix::for_run(1);
        let s = ConsumerSettings::for_consumer(&c.config, "b:9092", &prefix, &[]);
        assert_eq!(
            (s.group.as_str(), s.topic.as_str()),
            ("offsetlab-00000001-analytics", "offsetlab-00000001-orders")
        );
        assert_eq!(s.client_id, "c1");
        assert_eq!(s.strategy, CommitStrategy::ManualAsync);
        let p = s.properties();
        assert_eq!(get(&p, "auto.offset.reset"), Some("earliest"));
        assert_eq!(get(&p, "session.timeout.ms"), Some("6000"));
        assert_eq!(get(&p, "isolation.level"), Some("read_committed"));
        assert_eq!(
            get(&p, "partition.assignment.strategy"),
            Some("cooperative-sticky")
        );
        // The lab's default isolation is the Java client's, said out loud to librdkafka.
        let Ok(Some(offsetlab_scenario::command::Command::Consumer(d))) =
            offsetlab_scenario::command::Command::parse("consumer c2 group=g topic=orders")
        else {
            panic!("parses");
        };
        let p = ConsumerSettings::for_consumer(&d.config, "b:9092", &prefix, &[]).properties();
        assert_eq!(get(&p, "isolation.level"), Some("read_uncommitted"));
    }

    #[test]
    fn a_consumer_protocol_member_leaves_its_session_and_heartbeats_to_the_group() {
        let line = offsetlab_scenario::command::Command::parse(
            "consumer k1 group=g topic=orders commit=manual-batch group-protocol=consumer assignor=range max-poll-interval=15s",
        );
        let Ok(Some(offsetlab_scenario::command::Command::Consumer(c))) = line else {
            panic!("{line:?}");
        };
        let p = ConsumerSettings::for_consumer(&c.config, "b:9092", &Prefix::for_run(1), &[]).properties();
        assert_eq!(get(&p, "group.protocol"), Some("consumer"));
        assert_eq!(get(&p, "group.remote.assignor"), Some("range"));
        assert_eq!(get(&p, "max.poll.interval.ms"), Some("15000"));
        // librdkafka refuses these with group.protocol=consumer: the broker's group configs say.
        for classic in [
            "session.timeout.ms",
            "heartbeat.interval.ms",
            "partition.assignment.strategy",
        ] {
            assert_eq!(get(&p, classic), None, "{classic}");
        }
    }

    #[test]
    fn settings_cross_to_the_agent_as_they_are() {
        let mut s = settings(CommitStrategy::ManualAsync);
        let json = serde_json::to_string(&s).expect("json");
        assert_eq!(
            serde_json::from_str::<ConsumerSettings>(&json).ok(),
            Some(s.clone())
        );
        s.group_protocol = Some("consumer".into());
        s.remote_assignor = Some("uniform".into());
        s.session_timeout_ms = None;
        let json = serde_json::to_string(&s).expect("json");
        assert_eq!(serde_json::from_str::<ConsumerSettings>(&json).ok(), Some(s));
    }
}

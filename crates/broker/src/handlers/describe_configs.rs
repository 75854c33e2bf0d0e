//! DescribeConfigs: a topic's configs (every one Kafka 4.4 has, `topic_configs`), the broker's
//! (node 0) and a group's (Kafka's defaults: the lab keeps no group configs).

use crate::broker::Broker;
use crate::str_bytes;
use crate::topic_configs::*;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use offsetlab_wire::kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};

/// DescribeConfigs resource types.
pub(crate) const RESOURCE_TOPIC: i8 = 2;
pub(crate) const RESOURCE_BROKER: i8 = 4;
pub(crate) const RESOURCE_GROUP: i8 = 32;

/// One config as described: (name, value, source, type, read-only, synonyms).
struct Config {
    name: String,
    value: Option<String>,
    source: i8,
    kind: i8,
    read_only: bool,
    synonyms: Vec<(String, i8, String)>,
}

/// A group's configs (KIP-848, KIP-932, KIP-1071): Kafka 4.4's defaults. The lab keeps no group
/// configs — its groups are classic ones, which these do not govern — so each is Kafka's
/// default, and may be set to that only (IncrementalAlterConfigs says why another is refused).
pub(crate) const GROUP_CONFIGS: &[(&str, i8, &str)] = &[
    ("consumer.assignment.interval.ms", TYPE_INT, "1000"),
    ("consumer.heartbeat.interval.ms", TYPE_INT, "5000"),
    ("consumer.session.timeout.ms", TYPE_INT, "45000"),
    ("errors.deadletterqueue.copy.record.enable", TYPE_BOOLEAN, "false"),
    ("errors.deadletterqueue.topic.name", TYPE_STRING, ""),
    ("share.assignment.interval.ms", TYPE_INT, "1000"),
    ("share.auto.offset.reset", TYPE_STRING, "latest"),
    ("share.delivery.count.limit", TYPE_INT, "5"),
    ("share.heartbeat.interval.ms", TYPE_INT, "5000"),
    ("share.isolation.level", TYPE_STRING, "read_uncommitted"),
    ("share.partition.max.record.locks", TYPE_INT, "2000"),
    ("share.record.lock.duration.ms", TYPE_INT, "30000"),
    ("share.renew.acknowledge.enable", TYPE_BOOLEAN, "true"),
    ("share.session.timeout.ms", TYPE_INT, "45000"),
    ("streams.assignment.interval.ms", TYPE_INT, "1000"),
    ("streams.assignor.name", TYPE_STRING, "sticky"),
    ("streams.heartbeat.interval.ms", TYPE_INT, "5000"),
    ("streams.initial.rebalance.delay.ms", TYPE_INT, "3000"),
    ("streams.num.standby.replicas", TYPE_INT, "0"),
    ("streams.rack.aware.assignment.tags", TYPE_LIST, ""),
    ("streams.session.timeout.ms", TYPE_INT, "45000"),
];

fn topic_configs(c: &offsetlab_engine::log::TopicConfig) -> Vec<Config> {
    describe(c)
        .into_iter()
        .map(|d| Config {
            name: d.name.to_string(),
            value: Some(d.value),
            source: d.source,
            kind: d.kind,
            read_only: false,
            synonyms: d.synonyms,
        })
        .collect()
}

fn group_configs() -> Vec<Config> {
    GROUP_CONFIGS
        .iter()
        .map(|&(name, kind, value)| Config {
            name: name.to_string(),
            value: Some(value.to_string()),
            source: SOURCE_DEFAULT,
            kind,
            read_only: false,
            synonyms: vec![(name.to_string(), SOURCE_DEFAULT, value.to_string())],
        })
        .collect()
}

/// A broker config: its name, type, the lab's value and Kafka's default.
type Row<'a> = (&'a str, i8, Option<String>, Option<String>);

/// The broker configs whose value is Kafka's, or fixed by what the lab is (one node, one
/// partition of `__consumer_offsets`, no initial rebalance delay), whatever its flags: (name,
/// type, the lab's value, Kafka's default).
const KEPT_DEFAULTS: [(&str, i8, Option<&str>, Option<&str>); 14] = [
    (
        "compression.type",
        TYPE_STRING,
        Some("producer"),
        Some("producer"),
    ),
    ("default.replication.factor", TYPE_INT, Some("1"), Some("1")),
    ("delete.topic.enable", TYPE_BOOLEAN, Some("true"), Some("true")),
    // Not modelled: a group's first rebalance completes at once.
    (
        "group.initial.rebalance.delay.ms",
        TYPE_INT,
        Some("0"),
        Some("3000"),
    ),
    ("log.cleanup.policy", TYPE_LIST, Some("delete"), Some("delete")),
    ("log.retention.bytes", TYPE_LONG, Some("-1"), Some("-1")),
    ("log.retention.hours", TYPE_INT, Some("168"), Some("168")),
    // Unset, as in Kafka: log.retention.hours stands.
    ("log.retention.ms", TYPE_LONG, None, None),
    ("num.partitions", TYPE_INT, Some("1"), Some("1")),
    // The lab's __consumer_offsets has one partition.
    ("offsets.topic.num.partitions", TYPE_INT, Some("1"), Some("50")),
    (
        "offsets.topic.replication.factor",
        TYPE_SHORT,
        Some("1"),
        Some("3"),
    ),
    ("process.roles", TYPE_LIST, Some("broker,controller"), None),
    (
        "transaction.max.timeout.ms",
        TYPE_INT,
        Some("900000"),
        Some("900000"),
    ),
    (
        "transaction.state.log.replication.factor",
        TYPE_SHORT,
        Some("1"),
        Some("3"),
    ),
];

/// The broker's configs that clients and tools look for, each with the value this one broker
/// really has: set by the lab's own flags (`--auto-create-topics`, `--kafka-max-request-bytes`,
/// the idle timeout, `broker offsets.retention=`), by the lab itself (its address, node id, data
/// directory, one partition of `__consumer_offsets`), or Kafka's default that the lab keeps. The
/// lab's broker configs are fixed while it runs (IncrementalAlterConfigs on the broker is
/// refused), so every one is read-only. Synonyms, as Kafka lists them: the value set, then
/// Kafka's own default behind it.
fn broker_configs(broker: &Broker, s: &offsetlab_lab::Session) -> Vec<Config> {
    let lab = s.lab();
    let c = &broker.config;
    let listener = format!("PLAINTEXT://{}", broker.advertised);
    let retention_minutes = (lab.offsets_retention_ms() / 60_000).to_string();
    let ms = |d: std::time::Duration| d.as_millis().to_string();
    let node = crate::broker::NODE.to_string();
    let log_dir = crate::handlers::describe_log_dirs::log_dir(s);
    let some = |v: &str| Some(v.to_string());
    // (name, type, the lab's value, Kafka's default)
    let mut rows: Vec<Row<'_>> = vec![
        ("advertised.listeners", TYPE_LIST, Some(listener.clone()), None),
        (
            "auto.create.topics.enable",
            TYPE_BOOLEAN,
            Some(c.auto_create_topics.to_string()),
            some("true"),
        ),
        ("broker.id", TYPE_INT, Some(node.clone()), some("-1")),
        (
            "connections.max.idle.ms",
            TYPE_LONG,
            Some(ms(c.limits.idle_timeout)),
            some("600000"),
        ),
        (
            "group.max.session.timeout.ms",
            TYPE_INT,
            Some(ms(crate::coordinator::MAX_SESSION)),
            some("1800000"),
        ),
        (
            "group.min.session.timeout.ms",
            TYPE_INT,
            Some(ms(crate::coordinator::MIN_SESSION)),
            some("6000"),
        ),
        ("listeners", TYPE_LIST, Some(listener), some("PLAINTEXT://:9092")),
        ("log.dirs", TYPE_LIST, Some(log_dir), None),
        (
            "log.segment.bytes",
            TYPE_INT,
            Some(offsetlab_engine::log::config::DEFAULT_SEGMENT_BYTES.to_string()),
            some("1073741824"),
        ),
        (
            "message.max.bytes",
            TYPE_INT,
            Some(c.message_max_bytes.to_string()),
            some("1048588"),
        ),
        ("node.id", TYPE_INT, Some(node), None),
        (
            "offsets.retention.check.interval.ms",
            TYPE_LONG,
            Some(lab.offsets_retention_check_ms().to_string()),
            some("600000"),
        ),
        (
            "offsets.retention.minutes",
            TYPE_INT,
            Some(retention_minutes),
            some("10080"),
        ),
        (
            "socket.request.max.bytes",
            TYPE_INT,
            Some(c.max_request_bytes.to_string()),
            some("104857600"),
        ),
    ];
    rows.extend(KEPT_DEFAULTS.iter().map(|&(name, kind, value, default)| {
        (name, kind, value.map(str::to_string), default.map(str::to_string))
    }));
    let mut configs: Vec<Config> = rows.into_iter().map(read_only_config).collect::<Vec<_>>();
    configs.extend(cluster_defaults());
    configs.sort_by(|a, b| a.name.cmp(&b.name));
    configs
}

/// A broker config the lab has fixed: read-only, set when its value is not Kafka's default,
/// with its synonyms — the value set, then the default behind it.
fn read_only_config((name, kind, value, default): Row<'_>) -> Config {
    let set = value.is_some() && value != default;
    let source = if set { SOURCE_STATIC_BROKER } else { SOURCE_DEFAULT };
    let mut synonyms = Vec::new();
    if let (true, Some(v)) = (set, &value) {
        synonyms.push((name.to_string(), SOURCE_STATIC_BROKER, v.clone()));
    }
    if let Some(d) = &default {
        synonyms.push((name.to_string(), SOURCE_DEFAULT, d.clone()));
    }
    Config {
        name: name.to_string(),
        value,
        source,
        kind,
        read_only: true,
        synonyms,
    }
}

/// The cluster's dynamic defaults (the broker resource named ""): what Kafka 4 sets when it
/// formats a cluster, `min.insync.replicas=1` (KIP-966).
fn cluster_defaults() -> Vec<Config> {
    vec![Config {
        name: "min.insync.replicas".into(),
        value: Some("1".into()),
        source: SOURCE_DYNAMIC_DEFAULT_BROKER,
        kind: TYPE_INT,
        read_only: true,
        synonyms: vec![
            (
                "min.insync.replicas".into(),
                SOURCE_DYNAMIC_DEFAULT_BROKER,
                "1".into(),
            ),
            ("min.insync.replicas".into(), SOURCE_DEFAULT, "1".into()),
        ],
    }]
}

/// DescribeConfigs for topics, the broker (node 0, or "" for the cluster's defaults) and groups.
pub(crate) fn handle(broker: &Broker, r: &DescribeConfigsRequest) -> DescribeConfigsResponse {
    let s = broker.lab.lock();
    let results = r
        .resources
        .iter()
        .map(|res| {
            let name = res.resource_name.to_string();
            let base = DescribeConfigsResult::default()
                .with_resource_type(res.resource_type)
                .with_resource_name(res.resource_name.clone());
            let configs: Vec<Config> = match res.resource_type {
                RESOURCE_TOPIC => match s.lab().topic(&name) {
                    Ok(t) => topic_configs(&t.config),
                    Err(_) => {
                        return base
                            .with_error_code(UNKNOWN_TOPIC_OR_PARTITION)
                            .with_error_message(Some(str_bytes(&format!("no topic '{name}'"))))
                    }
                },
                RESOURCE_BROKER if name == crate::broker::NODE.to_string() => broker_configs(broker, &s),
                RESOURCE_BROKER if name.is_empty() => cluster_defaults(),
                // Kafka describes any group's configs, one it has never seen too.
                RESOURCE_GROUP => group_configs(),
                _ => {
                    return base
                        .with_error_code(INVALID_REQUEST)
                        .with_error_message(Some(str_bytes(
                            "the lab describes topics, groups and its broker, node 0",
                        )))
                }
            };
            let wanted = |n: &str| {
                res.configuration_keys
                    .as_ref()
                    .is_none_or(|keys| keys.iter().any(|k| k.as_str() == n))
            };
            base.with_error_code(NONE).with_error_message(None).with_configs(
                configs
                    .into_iter()
                    .filter(|c| wanted(&c.name))
                    .map(|c| {
                        DescribeConfigsResourceResult::default()
                            .with_name(str_bytes(&c.name))
                            .with_value(c.value.as_deref().map(str_bytes))
                            .with_read_only(c.read_only)
                            .with_config_source(c.source)
                            .with_config_type(c.kind)
                            .with_is_sensitive(false)
                            .with_documentation(None)
                            .with_synonyms(if r.include_synonyms {
                                c.synonyms
                                    .iter()
                                    .map(|(n, source, v)| {
                                        DescribeConfigsSynonym::default()
                                            .with_name(str_bytes(n))
                                            .with_value(Some(str_bytes(v)))
                                            .with_source(*source)
                                    })
                                    .collect()
                            } else {
                                Vec::new()
                            })
                    })
                    .collect(),
            )
        })
        .collect();
    DescribeConfigsResponse::default().with_results(results)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};
    use offsetlab_wire::kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;

    fn describe(
        b: &Broker,
        resource_type: i8,
        resource: &str,
        keys: Option<&[&str]>,
    ) -> DescribeConfigsResult {
        let r = DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(resource_type)
            .with_resource_name(name(resource))
            .with_configuration_keys(keys.map(|k| k.iter().map(|k| name(k)).collect()))]);
        handle(b, &r).results.remove(0)
    }

    fn value<'a>(r: &'a DescribeConfigsResult, key: &str) -> Option<(&'a str, i8)> {
        r.configs
            .iter()
            .find(|c| c.name.as_str() == key)
            .map(|c| (c.value.as_ref().map_or("", |v| v.as_str()), c.config_source))
    }

    #[test]
    fn the_broker_describes_what_clients_look_for() {
        let b = broker();
        let all = describe(&b, RESOURCE_BROKER, "0", None);
        assert_eq!(all.error_code, NONE);
        assert_eq!(
            value(&all, "advertised.listeners"),
            Some(("PLAINTEXT://127.0.0.1:9092", SOURCE_STATIC_BROKER))
        );
        assert!(
            all.configs.iter().all(|c| c.read_only),
            "the lab's broker configs are fixed while it runs"
        );
        assert_eq!(
            value(&all, "message.max.bytes"),
            Some(("1048588", SOURCE_DEFAULT))
        );
        assert_eq!(value(&all, "log.retention.hours"), Some(("168", SOURCE_DEFAULT)));
        assert_eq!(
            value(&all, "offsets.retention.minutes"),
            Some(("10080", SOURCE_DEFAULT))
        );
        assert_eq!(
            value(&all, "auto.create.topics.enable"),
            Some(("true", SOURCE_DEFAULT))
        );
        let some = describe(&b, RESOURCE_BROKER, "0", Some(&["log.segment.bytes"]));
        assert_eq!(some.configs.len(), 1);
        assert_eq!(
            value(&some, "log.segment.bytes"),
            Some(("1073741824", SOURCE_DEFAULT))
        );
        assert_eq!(
            describe(&b, RESOURCE_BROKER, "7", None).error_code,
            INVALID_REQUEST
        );
        assert_eq!(
            value(&all, "log.retention.ms"),
            Some(("", SOURCE_DEFAULT)),
            "unset, as in Kafka"
        );
    }

    #[test]
    fn a_topic_describes_its_own_configs_apart_from_kafkas_defaults() {
        let b = broker();
        let lines = vec!["topic audit cleanup.policy=compact compression.type=zstd".to_string()];
        b.lab.lock().apply_lines(&lines).expect("topic");
        let audit = describe(&b, RESOURCE_TOPIC, "audit", None);
        assert_eq!(value(&audit, "cleanup.policy"), Some(("compact", SOURCE_TOPIC)));
        assert_eq!(value(&audit, "compression.type"), Some(("zstd", SOURCE_TOPIC)));
        let orders = describe(&b, RESOURCE_TOPIC, "orders", None);
        assert_eq!(
            value(&orders, "compression.type"),
            Some(("producer", SOURCE_DEFAULT))
        );
        assert_eq!(value(&audit, "retention.ms"), Some(("604800000", SOURCE_DEFAULT)));
        assert_eq!(
            describe(&b, RESOURCE_TOPIC, "nothing", None).error_code,
            UNKNOWN_TOPIC_OR_PARTITION
        );
    }
}

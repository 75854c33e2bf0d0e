//! DescribeConfigs: the topic configs the lab models, and the broker's (node 0).

use crate::broker::Broker;
use crate::str_bytes;
use offsetlab_engine::log::TopicConfig;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult,
};
use offsetlab_wire::kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};

/// DescribeConfigs resource types.
const RESOURCE_TOPIC: i8 = 2;

const RESOURCE_BROKER: i8 = 4;

/// Config sources: set on the topic, or Kafka's default.
const SOURCE_TOPIC: i8 = 1;

const SOURCE_STATIC_BROKER: i8 = 4;

const SOURCE_DEFAULT: i8 = 5;

/// Config types (Kafka's `ConfigDef.Type` as the protocol numbers it).
const TYPE_BOOLEAN: i8 = 1;

const TYPE_INT: i8 = 3;

const TYPE_LONG: i8 = 5;

const TYPE_STRING: i8 = 2;

const TYPE_LIST: i8 = 7;

/// The type Kafka describes a topic config with.
fn topic_config_type(name: &str) -> i8 {
    match name {
        "cleanup.policy" => TYPE_LIST,
        "retention.ms" | "retention.bytes" | "segment.ms" | "delete.retention.ms" => TYPE_LONG,
        "message.timestamp.type" | "compression.type" => TYPE_STRING,
        _ => TYPE_INT,
    }
}

/// (name, value, set on the topic rather than Kafka's default, type) of a topic's configs.
fn topic_configs(c: &TopicConfig) -> Vec<(&'static str, String, bool, i8)> {
    let d = TopicConfig::default().kafka_configs();
    c.kafka_configs()
        .into_iter()
        .zip(d)
        .map(|((name, v), (_, default))| {
            let own = v != default;
            (name, v, own, topic_config_type(name))
        })
        .collect()
}

/// The broker's configs that clients and tools look for, each with the value this one broker
/// really has: set by the lab's own flags (`--auto-create-topics`, `--kafka-max-request-bytes`,
/// the idle timeout, `broker offsets.retention=`) or Kafka's default that the lab keeps.
fn broker_configs(broker: &Broker, lab: &offsetlab_engine::Lab) -> Vec<(&'static str, String, bool, i8)> {
    let c = &broker.config;
    let listener = format!("PLAINTEXT://{}", broker.advertised);
    let retention_minutes = lab.offsets_retention_ms() / 60_000;
    let default_retention = offsetlab_engine::lab::DEFAULT_OFFSETS_RETENTION_MS / 60_000;
    let ms = |d: std::time::Duration| d.as_millis().to_string();
    // The retention a topic gets when it names none: the lab's default is Kafka's.
    let retention_ms = offsetlab_engine::log::config::DEFAULT_RETENTION_MS;
    vec![
        ("broker.id", "0".into(), false, TYPE_INT),
        ("node.id", "0".into(), false, TYPE_INT),
        ("listeners", listener.clone(), true, TYPE_LIST),
        ("advertised.listeners", listener, true, TYPE_LIST),
        (
            "auto.create.topics.enable",
            c.auto_create_topics.to_string(),
            !c.auto_create_topics,
            TYPE_BOOLEAN,
        ),
        ("num.partitions", "1".into(), false, TYPE_INT),
        ("default.replication.factor", "1".into(), false, TYPE_INT),
        ("min.insync.replicas", "1".into(), false, TYPE_INT),
        ("offsets.topic.replication.factor", "1".into(), true, TYPE_INT),
        (
            "transaction.state.log.replication.factor",
            "1".into(),
            true,
            TYPE_INT,
        ),
        (
            "message.max.bytes",
            c.message_max_bytes.to_string(),
            false,
            TYPE_INT,
        ),
        (
            "socket.request.max.bytes",
            c.max_request_bytes.to_string(),
            true,
            TYPE_INT,
        ),
        (
            "connections.max.idle.ms",
            ms(c.limits.idle_timeout),
            true,
            TYPE_LONG,
        ),
        (
            "log.retention.hours",
            (retention_ms / 3_600_000).to_string(),
            false,
            TYPE_INT,
        ),
        ("log.retention.ms", retention_ms.to_string(), false, TYPE_LONG),
        ("log.retention.bytes", "-1".into(), false, TYPE_LONG),
        (
            "log.segment.bytes",
            offsetlab_engine::log::config::DEFAULT_SEGMENT_BYTES.to_string(),
            false,
            TYPE_INT,
        ),
        ("log.cleanup.policy", "delete".into(), false, TYPE_LIST),
        (
            "offsets.retention.minutes",
            retention_minutes.to_string(),
            retention_minutes != default_retention,
            TYPE_INT,
        ),
        (
            "group.min.session.timeout.ms",
            ms(crate::coordinator::MIN_SESSION),
            false,
            TYPE_INT,
        ),
        (
            "group.max.session.timeout.ms",
            ms(crate::coordinator::MAX_SESSION),
            false,
            TYPE_INT,
        ),
    ]
}

/// DescribeConfigs for topics (the configs the lab models) and for the broker (node 0).
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
            let configs: Vec<(&str, String, bool, i8)> = match res.resource_type {
                RESOURCE_TOPIC => match s.lab().topic(&name) {
                    Ok(t) => topic_configs(&t.config),
                    Err(_) => {
                        return base
                            .with_error_code(UNKNOWN_TOPIC_OR_PARTITION)
                            .with_error_message(Some(str_bytes(&format!("no topic '{name}'"))))
                    }
                },
                RESOURCE_BROKER if name == "0" || name.is_empty() => broker_configs(broker, s.lab()),
                _ => {
                    return base
                        .with_error_code(INVALID_REQUEST)
                        .with_error_message(Some(str_bytes(
                            "the lab describes topics and its broker, node 0",
                        )))
                }
            };
            let wanted = |n: &str| {
                res.configuration_keys
                    .as_ref()
                    .is_none_or(|keys| keys.iter().any(|k| k.as_str() == n))
            };
            base.with_error_code(NONE).with_configs(
                configs
                    .into_iter()
                    .filter(|(n, ..)| wanted(n))
                    .map(|(n, v, set, ty)| {
                        DescribeConfigsResourceResult::default()
                            .with_name(str_bytes(n))
                            .with_value(Some(str_bytes(&v)))
                            .with_config_source(match (set, res.resource_type) {
                                (false, _) => SOURCE_DEFAULT,
                                (true, RESOURCE_BROKER) => SOURCE_STATIC_BROKER,
                                (true, _) => SOURCE_TOPIC,
                            })
                            .with_config_type(ty)
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
        assert_eq!(
            value(&all, "message.max.bytes"),
            Some(("1048588", SOURCE_DEFAULT))
        );
        assert_eq!(
            value(&all, "log.retention.ms"),
            Some(("604800000", SOURCE_DEFAULT))
        );
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

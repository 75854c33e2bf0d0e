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

const SOURCE_DEFAULT: i8 = 5;

/// Config types (Kafka's `ConfigDef.Type` as the protocol numbers it).
const TYPE_BOOLEAN: i8 = 1;

const TYPE_INT: i8 = 3;

const TYPE_LONG: i8 = 5;

const TYPE_LIST: i8 = 7;

/// A topic config's value as Kafka prints it.
type Value = fn(&TopicConfig) -> String;

/// The topic configs the lab models: name, type, value.
const TOPIC_CONFIGS: [(&str, i8, Value); 6] = [
    ("cleanup.policy", TYPE_LIST, |c| c.cleanup_policy.to_string()),
    ("retention.ms", TYPE_LONG, |c| unlimited(c.retention_ms)),
    ("retention.bytes", TYPE_LONG, |c| {
        unlimited(c.retention_bytes.map(|b| b as i64))
    }),
    ("segment.bytes", TYPE_INT, |c| c.segment_bytes.to_string()),
    ("segment.ms", TYPE_LONG, |c| c.segment_ms.to_string()),
    ("delete.retention.ms", TYPE_LONG, |c| {
        c.delete_retention_ms.to_string()
    }),
];

/// A limit that may be off: Kafka writes none as `-1`.
fn unlimited(v: Option<i64>) -> String {
    v.map_or("-1".to_string(), |v| v.to_string())
}

/// (name, value, set on the topic rather than Kafka's default, type) of a topic's configs.
fn topic_configs(c: &TopicConfig) -> Vec<(&'static str, String, bool, i8)> {
    let d = TopicConfig::default();
    TOPIC_CONFIGS
        .iter()
        .map(|&(name, kind, value)| {
            let v = value(c);
            let own = v != value(&d);
            (name, v, own, kind)
        })
        .collect()
}

/// DescribeConfigs for topics (the configs the lab models) and for the broker (node 0).
pub(crate) fn handle(broker: &Broker, r: &DescribeConfigsRequest) -> DescribeConfigsResponse {
    let (s, auto_create) = (broker.lab.lock(), broker.config.auto_create_topics);
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
                RESOURCE_BROKER if name == "0" || name.is_empty() => vec![
                    (
                        "auto.create.topics.enable",
                        auto_create.to_string(),
                        true,
                        TYPE_BOOLEAN,
                    ),
                    ("num.partitions", "1".into(), false, TYPE_INT),
                    ("default.replication.factor", "1".into(), false, TYPE_INT),
                ],
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
                            .with_config_source(if set { SOURCE_TOPIC } else { SOURCE_DEFAULT })
                            .with_config_type(ty)
                    })
                    .collect(),
            )
        })
        .collect();
    DescribeConfigsResponse::default().with_results(results)
}

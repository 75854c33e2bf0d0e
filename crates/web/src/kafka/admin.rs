//! Admin requests an admin client sends (kafka-topics.sh, kafka-delete-records.sh,
//! kafka-configs.sh, `AdminClient`): CreateTopics, DeleteRecords and DescribeConfigs.
//!
//! The writes become the lab's own commands — `topic …` and `delete-records …` — applied as one batch
//! with the same all-or-nothing and save as anything the page does, so history, export and
//! undo see them. The lab is one broker: a replication factor other than 1 (or -1, the default)
//! is refused as a one-broker Kafka refuses it, and only the topic configs the lab models are
//! accepted; anything else is `INVALID_CONFIG` with a message naming it.

use super::change;
use super::produce::creatable;
use super::{
    str_bytes, INVALID_REQUEST, INVALID_TOPIC_EXCEPTION, NONE, OFFSET_OUT_OF_RANGE, UNKNOWN_SERVER_ERROR,
    UNKNOWN_TOPIC_OR_PARTITION,
};
use crate::api::AppState;
use change::TOPIC_ALREADY_EXISTS;
use offsetlab_engine::log::config::CleanupPolicy;
use offsetlab_engine::log::TopicConfig;
use offsetlab_engine::record::TopicPartition;
use offsetlab_lab::session::Session;
use offsetlab_scenario::command::{Command, CreateTopic, DeleteRecords};
use offsetlab_scenario::units::MAX_DURATION_MS;
use offsetlab_wire::kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use offsetlab_wire::kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use offsetlab_wire::kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult,
};
use offsetlab_wire::kafka_protocol::messages::{
    CreateTopicsRequest, CreateTopicsResponse, DeleteRecordsRequest, DeleteRecordsResponse,
    DescribeConfigsRequest, DescribeConfigsResponse,
};
use std::collections::BTreeSet;

const INVALID_PARTITIONS: i16 = 37;
const INVALID_REPLICATION_FACTOR: i16 = 38;
const INVALID_REPLICA_ASSIGNMENT: i16 = 39;
const INVALID_CONFIG: i16 = 40;

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

/// A topic config as a client sends it (Kafka's units: milliseconds, bytes), applied to `c`.
fn set_config(c: &mut TopicConfig, name: &str, value: &str) -> Result<(), String> {
    let long = || {
        value
            .parse::<i64>()
            .map_err(|_| format!("{name}={value} is not a number"))
    };
    let positive = |v: i64| {
        if v > 0 {
            Ok(v)
        } else {
            Err(format!("{name} must be positive"))
        }
    };
    // The history writes durations in the scenario language, which stops at 100 years (so the
    // logical clock's arithmetic never overflows): a longer one could not be read back.
    let duration = |v: i64| {
        if v <= MAX_DURATION_MS {
            Ok(v)
        } else {
            Err(format!(
                "{name}={v} is longer than the lab models (at most {MAX_DURATION_MS} ms, 100 years)"
            ))
        }
    };
    match name {
        "cleanup.policy" => c.cleanup_policy = value.parse::<CleanupPolicy>()?,
        "retention.ms" => c.retention_ms = match long()? {
            -1 => None,
            v if v >= 0 => Some(duration(v)?),
            _ => return Err("retention.ms is -1 (forever) or a number of milliseconds".into()),
        },
        "retention.bytes" => c.retention_bytes = match long()? {
            -1 => None,
            v if v >= 0 => Some(v as u64),
            _ => return Err("retention.bytes is -1 (no limit) or a number of bytes".into()),
        },
        "segment.bytes" => c.segment_bytes = positive(long()?)?.min(1 << 30) as usize,
        "segment.ms" => c.segment_ms = duration(positive(long()?)?)?,
        "delete.retention.ms" => c.delete_retention_ms = duration(long()?.max(0))?,
        other => {
            return Err(format!(
                "the lab does not model '{other}' (it knows cleanup.policy, retention.ms, retention.bytes, segment.bytes, segment.ms, delete.retention.ms)"
            ))
        }
    }
    Ok(())
}

/// CreateTopics: each valid new topic becomes a `topic` command; one batch for the request.
pub(crate) fn create_topics(app: &AppState, r: &CreateTopicsRequest) -> CreateTopicsResponse {
    let session = app.session();
    let s = session.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut commands = Vec::new();
    let mut seen = BTreeSet::new();
    let mut results: Vec<(CreatableTopicResult, bool)> = r
        .topics
        .iter()
        .map(|t| {
            let name = t.name.0.to_string();
            let result = CreatableTopicResult::default().with_name(t.name.clone());
            let refuse = |code: i16, message: String| {
                (
                    result
                        .clone()
                        .with_error_code(code)
                        .with_error_message(Some(str_bytes(&message)))
                        .with_num_partitions(-1)
                        .with_replication_factor(-1),
                    false,
                )
            };
            if !seen.insert(name.clone()) {
                return refuse(INVALID_REQUEST, format!("'{name}' appears twice in the request"));
            }
            if !creatable(&name) {
                return refuse(
                    INVALID_TOPIC_EXCEPTION,
                    format!("'{name}' is not a name a client may create"),
                );
            }
            if s.lab().topic(&name).is_ok() {
                return refuse(TOPIC_ALREADY_EXISTS, format!("Topic '{name}' already exists."));
            }
            if !matches!(t.replication_factor, -1 | 1) {
                return refuse(
                    INVALID_REPLICATION_FACTOR,
                    format!(
                        "Replication factor: {} larger than available brokers: 1 (the lab is one broker).",
                        t.replication_factor
                    ),
                );
            }
            if !t.assignments.is_empty() {
                return refuse(
                    INVALID_REPLICA_ASSIGNMENT,
                    "the lab assigns its partitions itself".into(),
                );
            }
            let partitions = match t.num_partitions {
                -1 => 1,
                n if (1..=10_000).contains(&n) => n,
                n => {
                    return refuse(
                        INVALID_PARTITIONS,
                        format!("Number of partitions must be 1 to 10000 (got {n})."),
                    )
                }
            };
            let mut config = TopicConfig {
                partitions,
                ..TopicConfig::default()
            };
            for c in &t.configs {
                let value = c.value.as_ref().map_or("", |v| v.as_str());
                if let Err(e) = set_config(&mut config, c.name.as_str(), value) {
                    return refuse(INVALID_CONFIG, e);
                }
            }
            commands.push(Command::Topic(CreateTopic { name, config }));
            (
                result
                    .with_error_code(NONE)
                    .with_num_partitions(partitions)
                    .with_replication_factor(1),
                true,
            )
        })
        .collect();
    let outcome = if r.validate_only {
        Ok(())
    } else {
        change::apply_commands(app, s, commands)
    };
    if let Err(failure) = outcome {
        for (result, valid) in &mut results {
            if *valid {
                *result = result
                    .clone()
                    .with_error_code(failure.code())
                    .with_error_message(Some(str_bytes(&failure.message())));
            }
        }
    }
    CreateTopicsResponse::default().with_topics(results.into_iter().map(|(r, _)| r).collect())
}

/// DeleteRecords: each partition's request becomes a `delete-records` command (`-1` is the high
/// watermark, as in Kafka); the answer is the new log start offset.
pub(crate) fn delete_records(app: &AppState, r: &DeleteRecordsRequest) -> DeleteRecordsResponse {
    let session = app.session();
    let s = session.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut commands = Vec::new();
    let answers: Vec<Vec<(i32, Result<i64, i16>)>> = r
        .topics
        .iter()
        .map(|t| {
            let topic = t.name.0.to_string();
            t.partitions
                .iter()
                .map(|p| {
                    let tp = TopicPartition::new(topic.clone(), p.partition_index);
                    let Ok(log) = s.lab().partition_log(&tp) else {
                        return (p.partition_index, Err(UNKNOWN_TOPIC_OR_PARTITION));
                    };
                    let (start, end) = (log.log_start_offset(), log.log_end_offset());
                    let before = if p.offset == -1 { end } else { p.offset };
                    if !(0..=end).contains(&before) {
                        return (p.partition_index, Err(OFFSET_OUT_OF_RANGE));
                    }
                    if before > start {
                        commands.push(Command::DeleteRecords(DeleteRecords {
                            topic: topic.clone(),
                            partition: p.partition_index,
                            before,
                        }));
                    }
                    (p.partition_index, Ok(before.max(start)))
                })
                .collect()
        })
        .collect();
    let outcome = change::apply_commands(app, s, commands);
    DeleteRecordsResponse::default().with_topics(
        r.topics
            .iter()
            .zip(answers)
            .map(|(t, partitions)| {
                DeleteRecordsTopicResult::default()
                    .with_name(t.name.clone())
                    .with_partitions(
                        partitions
                            .into_iter()
                            .map(|(index, answer)| {
                                let base =
                                    DeleteRecordsPartitionResult::default().with_partition_index(index);
                                match answer {
                                    Ok(low) if outcome.is_ok() => {
                                        base.with_error_code(NONE).with_low_watermark(low)
                                    }
                                    Ok(_) => base
                                        .with_error_code(
                                            outcome
                                                .as_ref()
                                                .err()
                                                .map_or(UNKNOWN_SERVER_ERROR, change::Failure::code),
                                        )
                                        .with_low_watermark(-1),
                                    Err(code) => base.with_error_code(code).with_low_watermark(-1),
                                }
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}

/// (name, value, set on the topic rather than Kafka's default, type) of a topic's configs.
fn topic_configs(c: &TopicConfig) -> Vec<(&'static str, String, bool, i8)> {
    let d = TopicConfig::default();
    let opt = |v: Option<i64>| v.map_or("-1".to_string(), |v| v.to_string());
    vec![
        (
            "cleanup.policy",
            c.cleanup_policy.to_string(),
            c.cleanup_policy != d.cleanup_policy,
            TYPE_LIST,
        ),
        (
            "retention.ms",
            opt(c.retention_ms),
            c.retention_ms != d.retention_ms,
            TYPE_LONG,
        ),
        (
            "retention.bytes",
            opt(c.retention_bytes.map(|b| b as i64)),
            c.retention_bytes != d.retention_bytes,
            TYPE_LONG,
        ),
        (
            "segment.bytes",
            c.segment_bytes.to_string(),
            c.segment_bytes != d.segment_bytes,
            TYPE_INT,
        ),
        (
            "segment.ms",
            c.segment_ms.to_string(),
            c.segment_ms != d.segment_ms,
            TYPE_LONG,
        ),
        (
            "delete.retention.ms",
            c.delete_retention_ms.to_string(),
            c.delete_retention_ms != d.delete_retention_ms,
            TYPE_LONG,
        ),
    ]
}

/// DescribeConfigs for topics (the configs the lab models) and for the broker (node 0).
pub(crate) fn describe_configs(
    s: &Session,
    r: &DescribeConfigsRequest,
    auto_create: bool,
) -> DescribeConfigsResponse {
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

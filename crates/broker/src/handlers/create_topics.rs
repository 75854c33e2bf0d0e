//! Admin requests an admin client sends (kafka-topics.sh, kafka-delete-records.sh,
//! kafka-configs.sh, `AdminClient`): CreateTopics, DeleteRecords and DescribeConfigs.
//!
//! The writes become the lab's own commands — `topic …` and `delete-records …` — applied as one batch
//! with the same all-or-nothing and save as anything the page does, so history, export and
//! undo see them. The lab is one broker: a replication factor other than 1 (or -1, the default)
//! is refused as a one-broker Kafka refuses it, and only the topic configs the lab models are
//! accepted; anything else is `INVALID_CONFIG` with a message naming it.

use crate::auto_create::creatable;
use crate::broker::Broker;
use crate::change;
use crate::str_bytes;
use offsetlab_engine::log::config::CleanupPolicy;
use offsetlab_engine::log::TopicConfig;
use offsetlab_engine::Lab;
use offsetlab_scenario::command::{Command, CreateTopic};
use offsetlab_scenario::units::MAX_DURATION_MS;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::create_topics_request::CreatableTopic;
use offsetlab_wire::kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use offsetlab_wire::kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse};
use std::collections::BTreeSet;

/// A topic config as a client sends it (Kafka's units: milliseconds, bytes), applied to `c`.
pub(crate) fn set_config(c: &mut TopicConfig, name: &str, value: &str) -> Result<(), String> {
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
        "cleanup.policy" => c.cleanup_policy = CleanupPolicy::from_list(value)?,
        "retention.ms" => {
            c.retention_ms = match long()? {
                -1 => None,
                v if v >= 0 => Some(duration(v)?),
                _ => return Err("retention.ms is -1 (forever) or a number of milliseconds".into()),
            }
        }
        "retention.bytes" => {
            c.retention_bytes = match long()? {
                -1 => None,
                v if v >= 0 => Some(v as u64),
                _ => return Err("retention.bytes is -1 (no limit) or a number of bytes".into()),
            }
        }
        "segment.bytes" => c.segment_bytes = positive(long()?)?.min(1 << 30) as usize,
        "segment.ms" => c.segment_ms = duration(positive(long()?)?)?,
        "delete.retention.ms" => c.delete_retention_ms = duration(long()?.max(0))?,
        "message.timestamp.type" => c.message_timestamp_type = value.parse()?,
        "compression.type" => c.compression_type = value.parse()?,
        "max.message.bytes" => {
            c.max_message_bytes = offsetlab_scenario::command::topic_max_message_bytes(value)?
        }
        "min.insync.replicas" => {
            c.min_insync_replicas = match long()? {
                v if (1..=i64::from(u32::MAX)).contains(&v) => v as u32,
                _ => return Err("min.insync.replicas must be at least 1".into()),
            }
        }
        // Kafka's other topic configs: accepted at Kafka's default (what the lab does), else
        // refused, naming it.
        other => crate::topic_configs::unmodelled(other, value)?,
    }
    Ok(())
}

/// A topic id for a topic validated but not created (Kafka answers one too, never kept): fresh
/// for each answer, from the clock.
fn fleeting_topic_id(name: &str) -> offsetlab_wire::Uuid {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut h: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    for b in nanos.to_be_bytes().iter().chain(name.as_bytes()) {
        h ^= u128::from(*b);
        h = h.wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b);
    }
    offsetlab_wire::Uuid::from_u128(h.max(2))
}

/// What CreateTopics v5+ answers for a created (or validated) topic: its configs, as
/// DescribeConfigs would describe them, with no synonyms.
fn described_configs(config: &TopicConfig) -> Vec<CreatableTopicConfigs> {
    crate::topic_configs::describe(config)
        .into_iter()
        .map(|d| {
            CreatableTopicConfigs::default()
                .with_name(str_bytes(d.name))
                .with_value(Some(str_bytes(&d.value)))
                .with_read_only(false)
                .with_config_source(d.source)
                .with_is_sensitive(false)
        })
        .collect()
}

/// A topic of the request as the `topic` line that creates it, or why it cannot be created
/// (an error code and Kafka's message): its name, replication factor, assignment, partition
/// count and configs checked as Kafka checks them on one broker.
fn checked(t: &CreatableTopic, lab: &Lab) -> Result<TopicConfig, (i16, String)> {
    let name = t.name.0.as_str();
    if name == offsetlab_engine::offsets::CONSUMER_OFFSETS_TOPIC {
        return Err((TOPIC_ALREADY_EXISTS, format!("Topic '{name}' already exists.")));
    }
    if !creatable(name) {
        return Err((
            INVALID_TOPIC_EXCEPTION,
            format!("'{name}' is not a name a client may create"),
        ));
    }
    if lab.topic(name).is_ok() {
        return Err((TOPIC_ALREADY_EXISTS, format!("Topic '{name}' already exists.")));
    }
    if !matches!(t.replication_factor, -1 | 1) {
        return Err((
            INVALID_REPLICATION_FACTOR,
            format!(
                "Replication factor: {} larger than available brokers: 1 (the lab is one broker).",
                t.replication_factor
            ),
        ));
    }
    if !t.assignments.is_empty() {
        return Err((
            INVALID_REPLICA_ASSIGNMENT,
            "the lab assigns its partitions itself".into(),
        ));
    }
    let partitions = match t.num_partitions {
        -1 => 1,
        n if (1..=10_000).contains(&n) => n,
        n => {
            return Err((
                INVALID_PARTITIONS,
                format!("Number of partitions must be 1 to 10000 (got {n})."),
            ))
        }
    };
    let mut config = TopicConfig {
        partitions,
        ..TopicConfig::default()
    };
    for c in &t.configs {
        let value = c.value.as_ref().map_or("", |v| v.as_str());
        if let Err(e) = set_config(&mut config, c.name.as_str(), value) {
            return Err((INVALID_CONFIG, e));
        }
    }
    Ok(config)
}

/// CreateTopics: each valid new topic becomes a `topic` command; one batch for the request.
pub(crate) fn handle(broker: &Broker, r: &CreateTopicsRequest, version: i16) -> CreateTopicsResponse {
    let lab = &broker.lab;
    let s = lab.lock_for_change();
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
            let config = match checked(t, s.lab()) {
                Ok(config) => config,
                Err((code, message)) => return refuse(code, message),
            };
            let partitions = config.partitions;
            let result = result
                .with_error_code(NONE)
                .with_error_message(None)
                .with_num_partitions(partitions)
                .with_replication_factor(1);
            // From v5 the answer holds the new topic's configs (KIP-525).
            let result = if version >= 5 {
                result.with_configs(Some(described_configs(&config)))
            } else {
                result
            };
            commands.push(Command::Topic(CreateTopic { name, config }));
            (result, true)
        })
        .collect();
    let outcome = if r.validate_only {
        drop(s);
        Ok(())
    } else {
        change::apply_commands(lab, s, commands)
    };
    // From v7 each new topic's id (KIP-516).
    if version >= 7 && outcome.is_ok() {
        let s = lab.lock();
        for (result, valid) in &mut results {
            if *valid {
                let name = result.name.0.to_string();
                result.topic_id = match s.lab().topic_id_of(&name) {
                    Some(id) if !r.validate_only => offsetlab_wire::Uuid::from_bytes(id),
                    _ => fleeting_topic_id(&name),
                };
            }
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, log_end, name};
    use offsetlab_wire::kafka_protocol::messages::create_topics_request::{
        CreatableTopic, CreatableTopicConfig,
    };
    use offsetlab_wire::kafka_protocol::messages::TopicName;

    fn topic(n: &str, partitions: i32, configs: &[(&str, &str)]) -> CreatableTopic {
        CreatableTopic::default()
            .with_name(TopicName(name(n)))
            .with_num_partitions(partitions)
            .with_replication_factor(-1)
            .with_configs(
                configs
                    .iter()
                    .map(|(k, v)| {
                        CreatableTopicConfig::default()
                            .with_name(name(k))
                            .with_value(Some(name(v)))
                    })
                    .collect(),
            )
    }

    fn codes(b: &Broker, topics: Vec<CreatableTopic>) -> Vec<i16> {
        handle(b, &CreateTopicsRequest::default().with_topics(topics), 7)
            .topics
            .iter()
            .map(|t| t.error_code)
            .collect()
    }

    #[test]
    fn each_topic_is_judged_on_its_own() {
        let b = broker();
        let got = codes(
            &b,
            vec![
                topic("new", 3, &[("retention.ms", "3600000")]),
                topic("orders", 1, &[]),
                topic("zero", 0, &[]),
                topic("x", 1, &[("compression.type", "brotli")]),
                topic("long", 1, &[("segment.ms", "9223372036854775807")]),
                topic("new", 1, &[]),
            ],
        );
        assert_eq!(
            got,
            vec![
                NONE,
                TOPIC_ALREADY_EXISTS,
                INVALID_PARTITIONS,
                INVALID_CONFIG,
                INVALID_CONFIG,
                INVALID_REQUEST
            ]
        );
        assert_eq!(log_end(&b, "new"), 0, "created");
        assert_eq!(log_end(&b, "zero"), -1, "not created");
        assert!(b
            .lab
            .lock()
            .export()
            .expect("export")
            .contains("topic new partitions=3 retention.ms=1h"));
    }

    /// v5+ answers with the new topic's configs (every one of Kafka's, the topic's own among
    /// them) and v7 with its id; a validated topic gets an id too, and the lab stays usable.
    #[test]
    fn the_answer_describes_the_new_topic() {
        let b = broker();
        let request = |validate_only| {
            CreateTopicsRequest::default()
                .with_validate_only(validate_only)
                .with_topics(vec![topic("described", 2, &[("retention.ms", "3600000")])])
        };
        let checked = handle(&b, &request(true), 7);
        assert!(!checked.topics[0].topic_id.is_nil());
        assert_eq!(log_end(&b, "described"), -1, "validated, not created");
        let created = handle(&b, &request(false), 7);
        let t = &created.topics[0];
        assert_eq!(
            (t.error_code, t.num_partitions, t.replication_factor),
            (NONE, 2, 1)
        );
        let id = b.lab.lock().lab().topic_id_of("described").expect("an id");
        assert_eq!(t.topic_id.as_bytes(), &id);
        let configs = t.configs.as_deref().unwrap_or_default();
        assert_eq!(configs.len(), crate::topic_configs::TOPIC_CONFIGS.len());
        let retention = configs
            .iter()
            .find(|c| c.name.as_str() == "retention.ms")
            .expect("retention.ms");
        assert_eq!(
            retention.value.as_ref().map(ToString::to_string).as_deref(),
            Some("3600000")
        );
        let old = handle(&b, &request(false), 4);
        assert_eq!(old.topics[0].error_code, TOPIC_ALREADY_EXISTS);
    }
}

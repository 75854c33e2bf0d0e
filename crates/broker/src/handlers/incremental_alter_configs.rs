//! IncrementalAlterConfigs (`kafka-configs.sh --alter --entity-type topics --add-config …`,
//! `AdminClient.incrementalAlterConfigs`): a live topic's retention and cleanup settings
//! change, one `alter-topic` line per topic, each applied by itself. SET takes Kafka's raw value
//! (milliseconds, bytes, `-1` for none); DELETE goes back to Kafka's default; APPEND and
//! SUBTRACT add to and take from a list (`cleanup.policy`). A config the lab does not model may
//! be set to Kafka's default only (it is what the lab does); segment settings are fixed when
//! the lab creates the topic. The broker's configs are set when the lab starts, and it keeps no
//! group configs: those are refused (INVALID_REQUEST), a config a group does not have
//! INVALID_CONFIG first, as Kafka judges it.

use crate::broker::Broker;
use crate::change::{self, Refusal};
use crate::str_bytes;
use crate::topic_configs::{kafka_topic_config, TYPE_LIST};
use offsetlab_engine::log::TopicConfig;
use offsetlab_scenario::command::{AlterTopic, Command};
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::incremental_alter_configs_request::AlterableConfig;
use offsetlab_wire::kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use offsetlab_wire::kafka_protocol::messages::{
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
};
use std::collections::BTreeSet;

pub(crate) const RESOURCE_TOPIC: i8 = 2;
pub(crate) const RESOURCE_BROKER: i8 = 4;
pub(crate) const RESOURCE_GROUP: i8 = 32;

const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;
const OP_APPEND: i8 = 2;
const OP_SUBTRACT: i8 = 3;

/// What a resource that is not a topic gets: the broker's configs are fixed while the lab runs
/// (INVALID_REQUEST); a group's are Kafka's defaults, kept nowhere — a config a group does not
/// have is INVALID_CONFIG, as Kafka answers it, one set to its default (or deleted) changes
/// nothing, and another value is INVALID_REQUEST. Each config: (name, the value it would take;
/// `None` for Kafka's default).
pub(crate) fn other_resource(resource_type: i8, configs: &[(&str, Option<&str>)]) -> Result<(), Refusal> {
    match resource_type {
        RESOURCE_BROKER => Err((
            INVALID_REQUEST,
            "the lab's broker configs are set when it starts (its flags); it alters none while it runs"
                .into(),
        )),
        RESOURCE_GROUP => {
            for &(name, value) in configs {
                let Some(&(_, _, default)) = crate::handlers::describe_configs::GROUP_CONFIGS
                    .iter()
                    .find(|(g, _, _)| *g == name)
                else {
                    return Err((INVALID_CONFIG, format!("Unknown group config name: {name}")));
                };
                if value.is_some_and(|v| v != default) {
                    return Err((
                        INVALID_REQUEST,
                        format!("the lab keeps no group configs: {name} is Kafka's default, {default}, for every group"),
                    ));
                }
            }
            Ok(())
        }
        _ => Err((INVALID_REQUEST, "the lab alters topics' configs".into())),
    }
}

/// Refuses a resource that names a config twice, as Kafka does.
pub(crate) fn no_duplicates<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<(), Refusal> {
    let mut seen = BTreeSet::new();
    for n in names {
        if !seen.insert(n) {
            return Err((
                INVALID_REQUEST,
                format!("Error due to duplicate config keys: {n}"),
            ));
        }
    }
    Ok(())
}

pub(crate) fn handle(broker: &Broker, r: &IncrementalAlterConfigsRequest) -> IncrementalAlterConfigsResponse {
    let s = broker.lab.lock_for_change();
    let planned: Vec<Result<Option<Command>, Refusal>> = r
        .resources
        .iter()
        .map(|res| {
            let names: Vec<&str> = res.configs.iter().map(|c| c.name.as_str()).collect();
            no_duplicates(names.iter().copied())?;
            if res.resource_type == RESOURCE_GROUP && s.lab().group(res.resource_name.as_str()).is_err() {
                return share_group_configs(res);
            }
            if res.resource_type != RESOURCE_TOPIC {
                let configs: Vec<(&str, Option<&str>)> = res
                    .configs
                    .iter()
                    .map(|c| match c.config_operation {
                        OP_SET => Ok((c.name.as_str(), Some(c.value.as_ref().map_or("", |v| v.as_str())))),
                        OP_DELETE => Ok((c.name.as_str(), None)),
                        _ => Err((
                            INVALID_REQUEST,
                            format!("{}: APPEND and SUBTRACT apply to list configs", c.name.as_str()),
                        )),
                    })
                    .collect::<Result<_, Refusal>>()?;
                other_resource(res.resource_type, &configs)?;
                return Ok(None);
            }
            let topic = res.resource_name.to_string();
            if offsetlab_engine::names::is_internal_topic(&topic) {
                return Err((
                    INVALID_TOPIC_EXCEPTION,
                    format!("'{topic}' is one of Kafka's internal topics: its configs are the broker's"),
                ));
            }
            let current = match s.lab().topic(&topic) {
                Ok(t) => t.config.clone(),
                Err(_) => return Err((UNKNOWN_TOPIC_OR_PARTITION, format!("no topic '{topic}'"))),
            };
            let mut alter = AlterTopic {
                topic,
                ..AlterTopic::default()
            };
            for c in &res.configs {
                set(&mut alter, &current, c)?;
            }
            Ok(Some(alter).filter(changes_something).map(Command::AlterTopic))
        })
        .collect();
    let outcomes = change::apply_planned(&broker.lab, s, planned, r.validate_only);
    IncrementalAlterConfigsResponse::default().with_responses(
        r.resources
            .iter()
            .zip(outcomes)
            .map(|(res, outcome)| {
                let base = AlterConfigsResourceResponse::default()
                    .with_resource_type(res.resource_type)
                    .with_resource_name(res.resource_name.clone());
                match outcome {
                    Ok(()) => base.with_error_code(NONE),
                    Err((code, message)) => base
                        .with_error_code(code)
                        .with_error_message(Some(str_bytes(&message))),
                }
            })
            .collect(),
    )
}

/// A group's configs (a group that is not one of the lab's consumer groups, whose configs are
/// Kafka's defaults): the share group configs the lab models (`share.auto.offset.reset`,
/// `share.record.lock.duration.ms`, `share.delivery.count.limit`,
/// `share.partition.max.record.locks`, `share.session.timeout.ms`) become an
/// `alter-share-group` line — DELETE sets Kafka's default again — checked against the broker's
/// bounds (INVALID_CONFIG); any other group config may only be set to its default.
fn share_group_configs(
    res: &offsetlab_wire::kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource,
) -> Result<Option<Command>, Refusal> {
    use offsetlab_engine::share::config::ShareGroupConfigChange;
    let mut change = ShareGroupConfigChange::default();
    let mut others: Vec<(&str, Option<&str>)> = Vec::new();
    for c in &res.configs {
        let name = c.name.as_str();
        let value = match c.config_operation {
            OP_SET => Some(c.value.as_ref().map_or("", |v| v.as_str())),
            OP_DELETE => None,
            _ => {
                return Err((
                    INVALID_REQUEST,
                    format!("{name}: APPEND and SUBTRACT apply to list configs"),
                ))
            }
        };
        let default = crate::handlers::describe_configs::GROUP_CONFIGS
            .iter()
            .find(|(g, _, _)| *g == name)
            .map(|&(_, _, d)| d);
        let raw = value.or(default).unwrap_or("");
        let invalid = |why: &str| {
            (
                INVALID_CONFIG,
                format!("Invalid value {raw} for configuration {name}: {why}"),
            )
        };
        let number = |what: &str| raw.parse::<i64>().map_err(|_| invalid(what));
        match name {
            "share.auto.offset.reset" => {
                change.auto_offset_reset = Some(
                    raw.parse()
                        .map_err(|_| invalid("String must be one of: latest, earliest"))?,
                )
            }
            "share.record.lock.duration.ms" => {
                change.record_lock_duration_ms = Some(number("Not a number of type INT")?)
            }
            "share.session.timeout.ms" => {
                change.session_timeout_ms = Some(number("Not a number of type INT")?)
            }
            "share.delivery.count.limit" => {
                change.delivery_count_limit = Some(
                    u16::try_from(number("Not a number of type INT")?)
                        .map_err(|_| invalid("out of range"))?,
                )
            }
            "share.partition.max.record.locks" => {
                change.partition_max_record_locks = Some(
                    u32::try_from(number("Not a number of type INT")?)
                        .map_err(|_| invalid("out of range"))?,
                )
            }
            _ => others.push((name, value)),
        }
    }
    other_resource(RESOURCE_GROUP, &others)?;
    change.validate().map_err(|e| (INVALID_CONFIG, e.to_string()))?;
    if change.is_empty() {
        return Ok(None);
    }
    Ok(Some(Command::AlterShareGroup(
        offsetlab_scenario::command::AlterShareGroup {
            group: res.resource_name.to_string(),
            change,
        },
    )))
}

/// Whether an `alter-topic` line would set anything (a config set to Kafka's default that the
/// lab does not model sets nothing: the request succeeds with no line).
pub(crate) fn changes_something(a: &AlterTopic) -> bool {
    *a != AlterTopic {
        topic: a.topic.clone(),
        ..AlterTopic::default()
    }
}

/// A list config's items, as Kafka splits them.
fn items(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|i| !i.is_empty())
        .map(str::to_string)
        .collect()
}

/// The topic's current value of `name`, as described.
fn current_value(current: &TopicConfig, name: &str) -> Option<String> {
    current
        .kafka_configs()
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.clone())
        .or_else(|| kafka_topic_config(name).map(|k| k.default.to_string()))
}

/// One config operation, into the line's settings.
fn set(alter: &mut AlterTopic, current: &TopicConfig, c: &AlterableConfig) -> Result<(), Refusal> {
    let name = c.name.as_str();
    let invalid = |why: String| (INVALID_CONFIG, format!("{name}: {why}"));
    let given = c.value.as_ref().map(|v| v.as_str());
    let value: Option<String> = match c.config_operation {
        OP_SET => Some(
            given
                .ok_or_else(|| invalid("SET needs a value".into()))?
                .to_string(),
        ),
        OP_DELETE => None,
        OP_APPEND | OP_SUBTRACT => {
            if kafka_topic_config(name).is_none_or(|k| k.kind != TYPE_LIST) {
                return Err(invalid("APPEND and SUBTRACT apply to list configs only".into()));
            }
            let mut list = items(&current_value(current, name).unwrap_or_default());
            for item in items(given.unwrap_or_default()) {
                if c.config_operation == OP_APPEND {
                    if !list.contains(&item) {
                        list.push(item);
                    }
                } else {
                    list.retain(|i| *i != item);
                }
            }
            Some(list.join(","))
        }
        op => return Err((INVALID_REQUEST, format!("{name}: no config operation {op}"))),
    };
    apply(alter, current, name, value.as_deref())
}

/// `name` set to `value` (`None`: back to Kafka's default) in `alter`, read as CreateTopics
/// reads it (Kafka's raw units, the lab's bounds).
pub(crate) fn apply(
    alter: &mut AlterTopic,
    current: &TopicConfig,
    name: &str,
    value: Option<&str>,
) -> Result<(), Refusal> {
    let invalid = |why: String| (INVALID_CONFIG, format!("{name}: {why}"));
    let mut parsed = TopicConfig::default();
    if let Some(value) = value {
        crate::handlers::create_topics::set_config(&mut parsed, name, value)
            .map_err(|e| (INVALID_CONFIG, e))?;
    }
    match name {
        "retention.ms" => alter.retention_ms = Some(parsed.retention_ms),
        "retention.bytes" => alter.retention_bytes = Some(parsed.retention_bytes),
        "cleanup.policy" => alter.cleanup_policy = Some(parsed.cleanup_policy),
        "delete.retention.ms" => alter.delete_retention_ms = Some(parsed.delete_retention_ms),
        "message.timestamp.type" => alter.message_timestamp_type = Some(parsed.message_timestamp_type),
        "min.insync.replicas" => alter.min_insync_replicas = Some(parsed.min_insync_replicas),
        "compression.type" => alter.compression_type = Some(parsed.compression_type),
        "max.message.bytes" => alter.max_message_bytes = Some(parsed.max_message_bytes),
        "segment.bytes" | "segment.ms" => {
            let keeps = match name {
                "segment.bytes" => parsed.segment_bytes == current.segment_bytes,
                _ => parsed.segment_ms == current.segment_ms,
            };
            if !keeps {
                return Err(invalid(
                    "segment settings are fixed when the lab creates a topic".into(),
                ));
            }
        }
        // Another of Kafka's topic configs: accepted at Kafka's default only (set_config
        // judged the value), nothing to change.
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};
    use offsetlab_wire::kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource;

    fn alter(
        topic: &str,
        configs: &[(&str, i8, Option<&str>)],
        validate_only: bool,
    ) -> IncrementalAlterConfigsRequest {
        IncrementalAlterConfigsRequest::default()
            .with_validate_only(validate_only)
            .with_resources(vec![AlterConfigsResource::default()
                .with_resource_type(RESOURCE_TOPIC)
                .with_resource_name(name(topic))
                .with_configs(
                    configs
                        .iter()
                        .map(|(k, op, v)| {
                            AlterableConfig::default()
                                .with_name(name(k))
                                .with_config_operation(*op)
                                .with_value(v.map(name))
                        })
                        .collect(),
                )])
    }

    /// What a cluster run sends for an `alter-share-group` line
    /// (`ShareGroupConfigChange::kafka_configs`) reads back, on the listener, as that line.
    #[test]
    fn a_share_groups_configs_as_kafka_spells_them_read_back_as_the_same_change() {
        use offsetlab_engine::share::config::ShareGroupConfigChange;
        use offsetlab_engine::share::ShareAutoOffsetReset;
        let changes = [
            ShareGroupConfigChange {
                auto_offset_reset: Some(ShareAutoOffsetReset::Earliest),
                delivery_count_limit: Some(3),
                ..Default::default()
            },
            ShareGroupConfigChange {
                auto_offset_reset: Some(ShareAutoOffsetReset::Latest),
                record_lock_duration_ms: Some(15_000),
                delivery_count_limit: Some(10),
                partition_max_record_locks: Some(100),
                session_timeout_ms: Some(50_000),
            },
        ];
        for change in changes {
            let res = AlterConfigsResource::default()
                .with_resource_type(RESOURCE_GROUP)
                .with_resource_name(name("workers"))
                .with_configs(
                    change
                        .kafka_configs()
                        .iter()
                        .map(|(k, v)| {
                            AlterableConfig::default()
                                .with_name(name(k))
                                .with_config_operation(OP_SET)
                                .with_value(Some(name(v)))
                        })
                        .collect(),
                );
            match share_group_configs(&res) {
                Ok(Some(Command::AlterShareGroup(a))) => assert_eq!(a.change, change),
                other => panic!("{change:?}: {other:?}"),
            }
        }
    }

    fn retention(b: &Broker) -> Option<i64> {
        b.lab
            .lock()
            .lab()
            .topic("orders")
            .expect("orders")
            .config
            .retention_ms
    }

    #[test]
    fn a_live_topics_retention_changes_and_goes_back_to_the_default() {
        let b = broker();
        let week = retention(&b);
        let hour = alter("orders", &[("retention.ms", OP_SET, Some("3600000"))], true);
        assert_eq!(handle(&b, &hour).responses[0].error_code, NONE);
        assert_eq!(retention(&b), week, "validate_only changes nothing");
        let hour = alter("orders", &[("retention.ms", OP_SET, Some("3600000"))], false);
        assert_eq!(handle(&b, &hour).responses[0].error_code, NONE);
        assert_eq!(retention(&b), Some(3_600_000));
        let forever = alter("orders", &[("retention.ms", OP_SET, Some("-1"))], false);
        assert_eq!(handle(&b, &forever).responses[0].error_code, NONE);
        assert_eq!(retention(&b), None);
        let back = alter("orders", &[("retention.ms", OP_DELETE, None)], false);
        assert_eq!(handle(&b, &back).responses[0].error_code, NONE);
        assert_eq!(retention(&b), week);
    }

    #[test]
    fn what_the_lab_does_not_alter_is_refused_and_changes_nothing() {
        let b = broker();
        for (configs, code) in [
            (vec![("segment.bytes", OP_SET, Some("1000"))], INVALID_CONFIG),
            (vec![("compression.type", OP_SET, Some("brotli"))], INVALID_CONFIG),
            (vec![("retention.ms", 2, Some("1"))], INVALID_CONFIG),
            (
                vec![("retention.ms", 0, Some("1")), ("retention.ms", 0, Some("2"))],
                INVALID_REQUEST,
            ),
            (vec![("segment.jitter.ms", 0, Some("5"))], INVALID_CONFIG),
            (vec![("retention.ms", OP_SET, Some("soon"))], INVALID_CONFIG),
            (
                vec![("retention.ms", OP_SET, Some("9223372036854775807"))],
                INVALID_CONFIG,
            ),
            // One bad config refuses the resource's good one too.
            (
                vec![
                    ("retention.ms", OP_SET, Some("1000")),
                    ("segment.ms", OP_SET, Some("1")),
                ],
                INVALID_CONFIG,
            ),
        ] {
            assert_eq!(
                handle(&b, &alter("orders", &configs, false)).responses[0].error_code,
                code
            );
        }
        assert_eq!(retention(&b), TopicConfig::default().retention_ms);
        let unknown = alter("nothing", &[("retention.ms", OP_SET, Some("1"))], false);
        assert_eq!(
            handle(&b, &unknown).responses[0].error_code,
            UNKNOWN_TOPIC_OR_PARTITION
        );
    }

    #[test]
    fn lists_take_append_and_subtract_and_unmodelled_configs_their_default() {
        let b = broker();
        let policy = |b: &Broker| {
            b.lab
                .lock()
                .lab()
                .topic("orders")
                .expect("orders")
                .config
                .cleanup_policy
                .to_string()
        };
        let apply = |configs: &[(&str, i8, Option<&str>)]| {
            handle(&b, &alter("orders", configs, false)).responses[0].error_code
        };
        assert_eq!(apply(&[("cleanup.policy", OP_APPEND, Some("compact"))]), NONE);
        assert_eq!(policy(&b), "compact,delete");
        assert_eq!(apply(&[("cleanup.policy", OP_SUBTRACT, Some("delete"))]), NONE);
        assert_eq!(policy(&b), "compact");
        assert_eq!(
            apply(&[("segment.jitter.ms", OP_SET, Some("0"))]),
            NONE,
            "Kafka's default: what the lab does"
        );
        let group =
            IncrementalAlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
                .with_resource_type(RESOURCE_GROUP)
                .with_resource_name(name("g"))
                .with_configs(vec![AlterableConfig::default()
                    .with_name(name("consumer.session.timeout.ms"))
                    .with_value(Some(name("50000")))])]);
        assert_eq!(handle(&b, &group).responses[0].error_code, INVALID_REQUEST);
        let mut at_default = group.clone();
        at_default.resources[0].configs[0].value = Some(name("45000"));
        assert_eq!(
            handle(&b, &at_default).responses[0].error_code,
            NONE,
            "Kafka's default, kept by every group"
        );
    }
}

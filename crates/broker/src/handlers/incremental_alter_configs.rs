//! IncrementalAlterConfigs (`kafka-configs.sh --alter --entity-type topics --add-config …`,
//! `AdminClient.incrementalAlterConfigs`): a live topic's retention and cleanup settings
//! change, one `alter-topic` line per topic, each applied by itself. SET takes Kafka's raw value
//! (milliseconds, bytes, `-1` for none); DELETE goes back to Kafka's default. What the lab fixes
//! at creation (partitions, segment settings), a config it does not model, APPEND or SUBTRACT
//! (SET the whole list instead) and the broker's own configs are refused, nothing
//! changed.

use crate::broker::Broker;
use crate::change::{self, Refusal};
use crate::str_bytes;
use offsetlab_engine::log::TopicConfig;
use offsetlab_scenario::command::{AlterTopic, Command};
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::incremental_alter_configs_request::AlterableConfig;
use offsetlab_wire::kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use offsetlab_wire::kafka_protocol::messages::{
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
};

const RESOURCE_TOPIC: i8 = 2;

const OP_SET: i8 = 0;

const OP_DELETE: i8 = 1;

pub(crate) fn handle(broker: &Broker, r: &IncrementalAlterConfigsRequest) -> IncrementalAlterConfigsResponse {
    let s = broker.lab.lock_for_change();
    let planned: Vec<Result<AlterTopic, Refusal>> = r
        .resources
        .iter()
        .map(|res| {
            if res.resource_type != RESOURCE_TOPIC {
                return Err((
                    INVALID_REQUEST,
                    "the lab alters topics; its broker's configs are set when it starts".into(),
                ));
            }
            let topic = res.resource_name.to_string();
            if offsetlab_engine::names::is_internal_topic(&topic) {
                return Err((
                    INVALID_TOPIC_EXCEPTION,
                    format!("'{topic}' is one of Kafka's internal topics: its configs are the broker's"),
                ));
            }
            if s.lab().topic(&topic).is_err() {
                return Err((UNKNOWN_TOPIC_OR_PARTITION, format!("no topic '{topic}'")));
            }
            let mut alter = AlterTopic {
                topic,
                ..AlterTopic::default()
            };
            for c in &res.configs {
                set(&mut alter, c)?;
            }
            Ok(alter)
        })
        .collect();
    let planned = planned.into_iter().map(|p| p.map(Command::AlterTopic)).collect();
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

/// One config operation, into the line's settings.
fn set(alter: &mut AlterTopic, c: &AlterableConfig) -> Result<(), Refusal> {
    let name = c.name.as_str();
    let invalid = |why: String| (INVALID_CONFIG, format!("{name}: {why}"));
    let value = match c.config_operation {
        OP_SET => c
            .value
            .as_ref()
            .map(|v| v.as_str())
            .ok_or_else(|| invalid("SET needs a value".into()))?,
        OP_DELETE => "",
        _ => {
            return Err(invalid(
                "APPEND and SUBTRACT are not served: SET the whole list (cleanup.policy=compact,delete)"
                    .into(),
            ))
        }
    };
    let deleting = c.config_operation == OP_DELETE;
    if matches!(name, "segment.bytes" | "segment.ms" | "segment.records") {
        return Err(invalid(
            "segment settings are fixed when the lab creates a topic".into(),
        ));
    }
    // Read as CreateTopics reads it (Kafka's raw units, the lab's bounds); DELETE is the default.
    let mut parsed = TopicConfig::default();
    if !deleting {
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
        _ => {
            return Err(invalid(
                "not a config the lab models on a live topic (retention.ms, retention.bytes, cleanup.policy, delete.retention.ms, message.timestamp.type, compression.type, max.message.bytes, min.insync.replicas)".into(),
            ))
        }
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
            (vec![("cleanup.policy", 2, Some("compact"))], INVALID_CONFIG),
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
}

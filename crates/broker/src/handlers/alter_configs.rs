//! AlterConfigs (the legacy `AdminClient.alterConfigs`, still in Kafka 4): a topic's configs
//! replaced whole — the ones named take their values, every other one goes back to Kafka's
//! default — as one `alter-topic` line. The same rules as IncrementalAlterConfigs: a config the
//! lab does not model only at Kafka's default, segment settings fixed since creation; the
//! broker's and groups' configs are refused.

use crate::broker::Broker;
use crate::change::{self, Refusal};
use crate::handlers::incremental_alter_configs::{
    apply, changes_something, no_duplicates, other_resource, RESOURCE_TOPIC,
};
use crate::str_bytes;
use offsetlab_scenario::command::{AlterTopic, Command};
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use offsetlab_wire::kafka_protocol::messages::{AlterConfigsRequest, AlterConfigsResponse};

/// The configs a live topic's `alter-topic` line sets; replaced whole, each one not named goes
/// back to Kafka's default.
const REPLACED: &[&str] = &[
    "cleanup.policy",
    "compression.type",
    "delete.retention.ms",
    "max.message.bytes",
    "message.timestamp.type",
    "min.insync.replicas",
    "retention.bytes",
    "retention.ms",
];

pub(crate) fn handle(broker: &Broker, r: &AlterConfigsRequest) -> AlterConfigsResponse {
    let s = broker.lab.lock_for_change();
    let planned: Vec<Result<Option<Command>, Refusal>> = r
        .resources
        .iter()
        .map(|res| {
            let names: Vec<&str> = res.configs.iter().map(|c| c.name.as_str()).collect();
            no_duplicates(names.iter().copied())?;
            if res.resource_type != RESOURCE_TOPIC {
                let configs: Vec<(&str, Option<&str>)> = res
                    .configs
                    .iter()
                    .map(|c| (c.name.as_str(), Some(c.value.as_ref().map_or("", |v| v.as_str()))))
                    .collect();
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
            for name in REPLACED.iter().filter(|n| !names.contains(n)) {
                apply(&mut alter, &current, name, None)?;
            }
            for c in &res.configs {
                apply(
                    &mut alter,
                    &current,
                    c.name.as_str(),
                    Some(c.value.as_ref().map_or("", |v| v.as_str())),
                )?;
            }
            Ok(changes_something(&alter).then_some(Command::AlterTopic(alter)))
        })
        .collect();
    let outcomes = change::apply_planned(&broker.lab, s, planned, r.validate_only);
    AlterConfigsResponse::default().with_responses(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};
    use offsetlab_wire::kafka_protocol::messages::alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };

    fn replace(b: &Broker, configs: &[(&str, &str)]) -> i16 {
        handle(
            b,
            &AlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
                .with_resource_type(RESOURCE_TOPIC)
                .with_resource_name(name("orders"))
                .with_configs(
                    configs
                        .iter()
                        .map(|(k, v)| {
                            AlterableConfig::default()
                                .with_name(name(k))
                                .with_value(Some(name(v)))
                        })
                        .collect(),
                )]),
        )
        .responses[0]
            .error_code
    }

    #[test]
    fn the_named_configs_replace_every_other() {
        let b = broker();
        let config = |b: &Broker| b.lab.lock().lab().topic("orders").expect("orders").config.clone();
        assert_eq!(
            replace(&b, &[("retention.ms", "3600000"), ("cleanup.policy", "compact")]),
            NONE
        );
        assert_eq!(config(&b).retention_ms, Some(3_600_000));
        assert_eq!(replace(&b, &[("max.message.bytes", "2000000")]), NONE);
        let c = config(&b);
        assert_eq!(
            c.retention_ms,
            offsetlab_engine::log::TopicConfig::default().retention_ms,
            "back to the default"
        );
        assert_eq!(c.cleanup_policy.to_string(), "delete");
        assert_eq!(replace(&b, &[("file.delete.delay.ms", "1")]), INVALID_CONFIG);
    }
}

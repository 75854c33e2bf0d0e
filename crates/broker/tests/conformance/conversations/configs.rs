//! Configs: a topic's, the broker's and a group's described at every version, altered
//! incrementally (SET, DELETE, APPEND, SUBTRACT) and wholesale.

use super::{create_topic, group, s, versions};
use crate::target::{Step, Target};
use offsetlab_wire::kafka_protocol::messages::alter_configs_request as ac;
use offsetlab_wire::kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use offsetlab_wire::kafka_protocol::messages::incremental_alter_configs_request as iac;
use offsetlab_wire::kafka_protocol::messages::{
    AlterConfigsRequest, ApiKey, DescribeConfigsRequest, IncrementalAlterConfigsRequest, JoinGroupRequest,
};

pub const TOPIC: i8 = 2;
pub const BROKER: i8 = 4;
pub const BROKER_LOGGER: i8 = 8;
pub const GROUP: i8 = 32;

/// The broker configs a client or tool looks at most.
const BROKER_KEYS: &[&str] = &[
    "broker.id",
    "node.id",
    "process.roles",
    "listeners",
    "advertised.listeners",
    "log.dirs",
    "auto.create.topics.enable",
    "num.partitions",
    "default.replication.factor",
    "min.insync.replicas",
    "offsets.topic.replication.factor",
    "offsets.topic.num.partitions",
    "transaction.state.log.replication.factor",
    "message.max.bytes",
    "socket.request.max.bytes",
    "connections.max.idle.ms",
    "log.retention.hours",
    "log.retention.ms",
    "log.retention.bytes",
    "log.segment.bytes",
    "log.cleanup.policy",
    "offsets.retention.minutes",
    "group.min.session.timeout.ms",
    "group.max.session.timeout.ms",
    "group.initial.rebalance.delay.ms",
    "transaction.max.timeout.ms",
    "delete.topic.enable",
    "compression.type",
];

fn resource(kind: i8, name: &str, keys: Option<&[&str]>) -> DescribeConfigsResource {
    DescribeConfigsResource::default()
        .with_resource_type(kind)
        .with_resource_name(s(name))
        .with_configuration_keys(keys.map(|k| k.iter().map(|k| s(k)).collect()))
}

fn describe(_v: i16, resources: Vec<DescribeConfigsResource>, synonyms: bool) -> DescribeConfigsRequest {
    DescribeConfigsRequest::default()
        .with_resources(resources)
        .with_include_synonyms(synonyms)
        .with_include_documentation(false)
}

/// A group that exists, for its configs (KIP-848 made groups a config resource).
fn make_group(t: &mut Target, g: &str) -> Step<()> {
    let j = JoinGroupRequest::default()
        .with_group_id(group(g))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_protocol_type(s("consumer"))
        .with_member_id(s(""));
    t.quiet(9, j)?;
    Ok(())
}

pub fn describe_configs(t: &mut Target) -> Step<()> {
    let name = t.name("dc");
    create_topic(
        t,
        &name,
        1,
        &[("retention.ms", "3600000"), ("cleanup.policy", "compact,delete")],
    )?;
    let node = t.ctx.node.to_string();
    let g = t.name("dc-g");
    make_group(t, &g)?;
    for v in versions(ApiKey::DescribeConfigs) {
        t.ask(
            "topic all",
            v,
            describe(v, vec![resource(TOPIC, &name, None)], false),
        )?;
        t.ask(
            "topic all with synonyms",
            v,
            describe(v, vec![resource(TOPIC, &name, None)], true),
        )?;
        t.ask(
            "topic keys",
            v,
            describe(
                v,
                vec![resource(
                    TOPIC,
                    &name,
                    Some(&[
                        "retention.ms",
                        "cleanup.policy",
                        "file.delete.delay.ms",
                        "no.such.config",
                    ]),
                )],
                false,
            ),
        )?;
        t.ask(
            "topic missing",
            v,
            describe(v, vec![resource(TOPIC, &t.name("dc-none"), None)], false),
        )?;
        t.ask(
            "broker keys",
            v,
            describe(v, vec![resource(BROKER, &node, Some(BROKER_KEYS))], false),
        )?;
        t.ask(
            "broker keys with synonyms",
            v,
            describe(v, vec![resource(BROKER, &node, Some(BROKER_KEYS))], true),
        )?;
        t.ask(
            "broker all",
            v,
            describe(v, vec![resource(BROKER, &node, None)], false),
        )?;
        t.ask(
            "broker defaults",
            v,
            describe(v, vec![resource(BROKER, "", Some(BROKER_KEYS))], false),
        )?;
        t.ask(
            "other broker",
            v,
            describe(v, vec![resource(BROKER, "7", None)], false),
        )?;
        t.ask("group", v, describe(v, vec![resource(GROUP, &g, None)], false))?;
        t.ask(
            "group missing",
            v,
            describe(v, vec![resource(GROUP, &t.name("dc-g-none"), None)], false),
        )?;
        t.ask(
            "broker logger",
            v,
            describe(
                v,
                vec![resource(BROKER_LOGGER, &node, Some(&["kafka.server.KafkaApis"]))],
                false,
            ),
        )?;
    }
    Ok(())
}

/// One IncrementalAlterConfigs resource: (name, operation, value) — SET 0, DELETE 1, APPEND 2,
/// SUBTRACT 3.
fn alter(kind: i8, name: &str, configs: &[(&str, i8, Option<&str>)]) -> iac::AlterConfigsResource {
    iac::AlterConfigsResource::default()
        .with_resource_type(kind)
        .with_resource_name(s(name))
        .with_configs(
            configs
                .iter()
                .map(|(k, op, v)| {
                    iac::AlterableConfig::default()
                        .with_name(s(k))
                        .with_config_operation(*op)
                        .with_value(v.map(s))
                })
                .collect(),
        )
}

pub fn incremental_alter_configs(t: &mut Target) -> Step<()> {
    let node = t.node_name();
    for v in versions(ApiKey::IncrementalAlterConfigs) {
        // One topic for the steps both brokers take alike, described after each…
        let name = t.name(&format!("iac{v}"));
        create_topic(t, &name, 1, &[])?;
        let shared: Vec<(&str, Vec<iac::AlterConfigsResource>, bool)> = vec![
            (
                "set retention",
                vec![alter(TOPIC, &name, &[("retention.ms", 0, Some("7200000"))])],
                false,
            ),
            (
                "validate only",
                vec![alter(TOPIC, &name, &[("retention.bytes", 0, Some("1000"))])],
                true,
            ),
            (
                "delete retention",
                vec![alter(TOPIC, &name, &[("retention.ms", 1, None)])],
                false,
            ),
            (
                "append compact",
                vec![alter(TOPIC, &name, &[("cleanup.policy", 2, Some("compact"))])],
                false,
            ),
            (
                "subtract delete",
                vec![alter(TOPIC, &name, &[("cleanup.policy", 3, Some("delete"))])],
                false,
            ),
            (
                "append to a number",
                vec![alter(TOPIC, &name, &[("retention.ms", 2, Some("1"))])],
                false,
            ),
            (
                "set an unmodelled config to its default",
                vec![alter(TOPIC, &name, &[("segment.jitter.ms", 0, Some("0"))])],
                false,
            ),
            (
                "set unknown",
                vec![alter(TOPIC, &name, &[("no.such.config", 0, Some("1"))])],
                false,
            ),
            (
                "set bad value",
                vec![alter(TOPIC, &name, &[("retention.ms", 0, Some("soon"))])],
                false,
            ),
            (
                "set twice",
                vec![alter(
                    TOPIC,
                    &name,
                    &[("retention.ms", 0, Some("1")), ("retention.ms", 0, Some("2"))],
                )],
                false,
            ),
            (
                "unknown topic",
                vec![alter(
                    TOPIC,
                    &t.name("iac-none"),
                    &[("retention.ms", 0, Some("1"))],
                )],
                false,
            ),
        ];
        for (step, resources, validate_only) in shared {
            t.ask(
                step,
                v,
                IncrementalAlterConfigsRequest::default()
                    .with_resources(resources)
                    .with_validate_only(validate_only),
            )?;
            // Kafka's broker applies a config change from its metadata log a moment after the
            // controller answered.
            std::thread::sleep(std::time::Duration::from_millis(300));
            t.ask(
                &format!("{step}: described"),
                4,
                describe(4, vec![resource(TOPIC, &name, None)], false),
            )?;
        }
        // …and a topic of its own for each step the lab takes otherwise (docs/CONFORMANCE.md).
        let own: Vec<(&str, &str, i8, Option<&str>)> = vec![
            ("subtract the last policy", "cleanup.policy", 3, Some("delete")),
            (
                "set file.delete.delay.ms",
                "file.delete.delay.ms",
                0,
                Some("30000"),
            ),
            ("set segment.bytes", "segment.bytes", 0, Some("1048576")),
        ];
        for (i, (step, config, op, value)) in own.into_iter().enumerate() {
            let topic_name = t.name(&format!("iac{v}-{i}"));
            create_topic(t, &topic_name, 1, &[])?;
            t.ask(
                step,
                v,
                IncrementalAlterConfigsRequest::default().with_resources(vec![alter(
                    TOPIC,
                    &topic_name,
                    &[(config, op, value)],
                )]),
            )?;
        }
        // Groups' configs: a group each.
        let group_steps: Vec<(&str, &str, i8, Option<&str>)> = vec![
            (
                "group session timeout",
                "consumer.session.timeout.ms",
                0,
                Some("50000"),
            ),
            (
                "group session timeout at its default",
                "consumer.session.timeout.ms",
                0,
                Some("45000"),
            ),
            (
                "group share reset",
                "share.auto.offset.reset",
                0,
                Some("earliest"),
            ),
            ("group unknown config", "no.such.config", 0, Some("1")),
            ("group bad value", "consumer.session.timeout.ms", 0, Some("1")),
            ("group delete", "share.auto.offset.reset", 1, None),
        ];
        for (i, (step, config, op, value)) in group_steps.into_iter().enumerate() {
            let g = t.name(&format!("iac{v}-g{i}"));
            make_group(t, &g)?;
            t.ask(
                step,
                v,
                IncrementalAlterConfigsRequest::default().with_resources(vec![alter(
                    GROUP,
                    &g,
                    &[(config, op, value)],
                )]),
            )?;
        }
        for (step, config, value) in [
            ("broker dynamic", "log.cleaner.threads", "1"),
            ("broker static", "broker.id", "5"),
        ] {
            t.ask(
                step,
                v,
                IncrementalAlterConfigsRequest::default()
                    .with_validate_only(true)
                    .with_resources(vec![alter(BROKER, &node, &[(config, 0, Some(value))])]),
            )?;
        }
    }
    Ok(())
}

fn alter_all(kind: i8, name: &str, configs: &[(&str, Option<&str>)]) -> ac::AlterConfigsResource {
    ac::AlterConfigsResource::default()
        .with_resource_type(kind)
        .with_resource_name(s(name))
        .with_configs(
            configs
                .iter()
                .map(|(k, v)| {
                    ac::AlterableConfig::default()
                        .with_name(s(k))
                        .with_value(v.map(s))
                })
                .collect(),
        )
}

pub fn alter_configs(t: &mut Target) -> Step<()> {
    let node = t.node_name();
    for v in versions(ApiKey::AlterConfigs) {
        let name = t.name(&format!("ac{v}"));
        create_topic(t, &name, 1, &[("retention.ms", "3600000")])?;
        let steps: Vec<(&str, Vec<ac::AlterConfigsResource>, bool)> = vec![
            (
                "validate only",
                vec![alter_all(TOPIC, &name, &[("cleanup.policy", Some("compact"))])],
                true,
            ),
            (
                "replace",
                vec![alter_all(
                    TOPIC,
                    &name,
                    &[
                        ("cleanup.policy", Some("compact")),
                        ("max.message.bytes", Some("2000000")),
                    ],
                )],
                false,
            ),
            ("replace with nothing", vec![alter_all(TOPIC, &name, &[])], false),
            (
                "unknown config",
                vec![alter_all(TOPIC, &name, &[("no.such.config", Some("1"))])],
                false,
            ),
            (
                "bad value",
                vec![alter_all(TOPIC, &name, &[("retention.ms", Some("soon"))])],
                false,
            ),
            (
                "unknown topic",
                vec![alter_all(
                    TOPIC,
                    &t.name("ac-none"),
                    &[("retention.ms", Some("1"))],
                )],
                false,
            ),
            (
                "broker",
                vec![alter_all(BROKER, &node, &[("log.cleaner.threads", Some("1"))])],
                true,
            ),
        ];
        for (step, resources, validate_only) in steps {
            t.ask(
                step,
                v,
                AlterConfigsRequest::default()
                    .with_resources(resources)
                    .with_validate_only(validate_only),
            )?;
            std::thread::sleep(std::time::Duration::from_millis(300));
            t.ask(
                &format!("{step}: described"),
                4,
                describe(4, vec![resource(TOPIC, &name, None)], false),
            )?;
        }
    }
    Ok(())
}

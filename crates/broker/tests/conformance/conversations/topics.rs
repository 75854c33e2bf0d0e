//! Topics: created (every config and error a client meets), described, grown and deleted.

use super::{create_topic, s, topic, versions, wait_for_topic};
use crate::target::{Step, Target};
use offsetlab_wire::kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use offsetlab_wire::kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use offsetlab_wire::kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use offsetlab_wire::kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use offsetlab_wire::kafka_protocol::messages::{
    ApiKey, CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest, MetadataRequest,
    MetadataResponse,
};
use offsetlab_wire::Uuid;

fn creatable(name: &str, partitions: i32, rf: i16, configs: &[(&str, &str)]) -> CreatableTopic {
    CreatableTopic::default()
        .with_name(topic(name))
        .with_num_partitions(partitions)
        .with_replication_factor(rf)
        .with_configs(
            configs
                .iter()
                .map(|(k, v)| {
                    CreatableTopicConfig::default()
                        .with_name(s(k))
                        .with_value(Some(s(v)))
                })
                .collect(),
        )
}

pub fn create_topics(t: &mut Target) -> Step<()> {
    for v in versions(ApiKey::CreateTopics) {
        let name = t.name(&format!("ct{v}"));
        let request = |topics: Vec<CreatableTopic>, validate_only: bool| {
            CreateTopicsRequest::default()
                .with_timeout_ms(30_000)
                .with_validate_only(validate_only)
                .with_topics(topics)
        };
        t.ask(
            "create",
            v,
            request(
                vec![
                    creatable(
                        &name,
                        2,
                        1,
                        &[("retention.ms", "3600000"), ("cleanup.policy", "compact")],
                    ),
                    creatable(&t.name(&format!("ct{v}-rf3")), 1, 3, &[]),
                    creatable(&t.name(&format!("ct{v}-bad config")), 1, 1, &[]),
                    creatable(&t.name(&format!("ct{v}-cfg")), 1, 1, &[("retention.ms", "soon")]),
                    creatable(
                        &t.name(&format!("ct{v}-unknown-cfg")),
                        1,
                        1,
                        &[("no.such.config", "1")],
                    ),
                    creatable(&t.name(&format!("ct{v}-defaults")), -1, -1, &[]),
                ],
                false,
            ),
        )?;
        wait_for_topic(t, &name, 2)?;
        t.ask("again", v, request(vec![creatable(&name, 2, 1, &[])], false))?;
        t.ask(
            "validate-only",
            v,
            request(
                vec![creatable(
                    &t.name(&format!("ct{v}-validate")),
                    3,
                    1,
                    &[("segment.bytes", "1048576")],
                )],
                true,
            ),
        )?;
        t.ask(
            "zero-partitions",
            v,
            request(vec![creatable(&t.name(&format!("ct{v}-zero")), 0, 1, &[])], false),
        )?;
        t.ask(
            "internal",
            v,
            request(vec![creatable("__consumer_offsets", 1, 1, &[])], false),
        )?;
    }
    Ok(())
}

fn asking(names: &[&str]) -> MetadataRequest {
    MetadataRequest::default().with_topics(Some(
        names
            .iter()
            .map(|n| MetadataRequestTopic::default().with_name(Some(topic(n))))
            .collect(),
    ))
}

/// Only this run's topics and the internal topics both brokers have reason to hold: a real
/// Kafka holds other runs' too, and internal topics of features the lab lacks once a client
/// used them (`__share_group_state`).
fn ours(run: &str) -> impl Fn(&mut MetadataResponse) + '_ {
    move |m: &mut MetadataResponse| {
        m.topics.retain(|t| {
            t.name.as_ref().is_none_or(|n| {
                n.0.contains(run) || matches!(n.0.as_str(), "__consumer_offsets" | "__transaction_state")
            })
        })
    }
}

pub fn metadata(t: &mut Target) -> Step<()> {
    let name = t.name("md");
    let id = create_topic(t, &name, 2, &[])?;
    let missing = t.name("md-missing");
    let run = t.run.clone();
    for v in versions(ApiKey::Metadata) {
        // Before v4 a request always creates what it names; since, the client says.
        let named = if v < 4 {
            asking(&[&name])
        } else {
            asking(&[&name, &missing, "bad name!"]).with_allow_auto_topic_creation(false)
        };
        let named = if (8..=10).contains(&v) {
            named.with_include_cluster_authorized_operations(true)
        } else {
            named
        };
        let named = if v >= 8 {
            named.with_include_topic_authorized_operations(true)
        } else {
            named
        };
        t.ask("named", v, named)?;
        if v >= 1 {
            let all = MetadataRequest::default().with_topics(None);
            let all = if v >= 4 {
                all.with_allow_auto_topic_creation(false)
            } else {
                all
            };
            t.ask_keeping("all", v, all, ours(&run))?;
            t.ask(
                "none",
                v,
                MetadataRequest::default().with_topics(Some(Vec::new())),
            )?;
        }
        if v >= 10 {
            t.ask(
                "by-id",
                v,
                MetadataRequest::default().with_topics(Some(vec![
                    MetadataRequestTopic::default().with_topic_id(id),
                    MetadataRequestTopic::default().with_topic_id(Uuid::from_u128(7)),
                ])),
            )?;
        }
    }
    // Created by the asking: at v1 (always) and v9 (allowed).
    for v in [1i16, 9] {
        let auto = t.name(&format!("md-auto{v}"));
        let req = asking(&[&auto]);
        let req = if v >= 4 {
            req.with_allow_auto_topic_creation(true)
        } else {
            req
        };
        t.ask("auto-create", v, req)?;
        wait_for_topic(t, &auto, 1)?;
        t.ask("auto-created", v, asking(&[&auto]))?;
    }
    Ok(())
}

pub fn create_partitions(t: &mut Target) -> Step<()> {
    for v in versions(ApiKey::CreatePartitions) {
        let name = t.name(&format!("cp{v}"));
        create_topic(t, &name, 1, &[])?;
        let grow = |name: &str, count: i32| {
            CreatePartitionsTopic::default()
                .with_name(topic(name))
                .with_count(count)
                .with_assignments(None)
        };
        let req = |topics: Vec<CreatePartitionsTopic>, validate_only: bool| {
            CreatePartitionsRequest::default()
                .with_timeout_ms(30_000)
                .with_validate_only(validate_only)
                .with_topics(topics)
        };
        t.ask("validate-only", v, req(vec![grow(&name, 4)], true))?;
        t.ask(
            "grow",
            v,
            req(vec![grow(&name, 3), grow(&t.name("cp-missing"), 2)], false),
        )?;
        wait_for_topic(t, &name, 3)?;
        t.ask("shrink", v, req(vec![grow(&name, 2)], false))?;
        t.ask("same", v, req(vec![grow(&name, 3)], false))?;
    }
    Ok(())
}

pub fn delete_topics(t: &mut Target) -> Step<()> {
    for v in versions(ApiKey::DeleteTopics) {
        let name = t.name(&format!("dt{v}"));
        let id = create_topic(t, &name, 1, &[])?;
        let missing = t.name("dt-missing");
        let req = if v >= 6 {
            DeleteTopicsRequest::default().with_topics(vec![
                DeleteTopicState::default().with_name(Some(topic(&name))),
                DeleteTopicState::default().with_name(Some(topic(&missing))),
            ])
        } else {
            DeleteTopicsRequest::default().with_topic_names(vec![topic(&name), topic(&missing)])
        };
        t.ask("delete", v, req.with_timeout_ms(30_000))?;
        if v >= 6 {
            let by_id = t.name(&format!("dt{v}-by-id"));
            let id2 = create_topic(t, &by_id, 1, &[])?;
            t.ask(
                "delete-by-id",
                v,
                DeleteTopicsRequest::default()
                    .with_timeout_ms(30_000)
                    .with_topics(vec![
                        DeleteTopicState::default().with_topic_id(id2),
                        DeleteTopicState::default().with_topic_id(id),
                    ]),
            )?;
        }
    }
    Ok(())
}

//! Share groups (KIP-932): two members joining with ShareGroupHeartbeat, records acquired with
//! ShareFetch, acknowledged in a ShareFetch and in a ShareAcknowledge, a released record handed
//! out again with its delivery count, a record acknowledged that the member does not hold, share
//! session epochs that are not the session's, the group described, and members leaving — at
//! every version the lab advertises; then, the group Empty, its start offsets described, altered
//! and deleted as `kafka-share-groups.sh` does it, with what does not exist and bad input.

use super::{create_topic, group, plain_batch, produce_quietly, s, topic, versions};
use crate::ensure;
use crate::target::{Step, Target};
use offsetlab_wire::kafka_protocol::messages::alter_share_group_offsets_request::{
    AlterShareGroupOffsetsRequestPartition, AlterShareGroupOffsetsRequestTopic,
};
use offsetlab_wire::kafka_protocol::messages::delete_share_group_offsets_request::DeleteShareGroupOffsetsRequestTopic;
use offsetlab_wire::kafka_protocol::messages::describe_share_group_offsets_request::{
    DescribeShareGroupOffsetsRequestGroup, DescribeShareGroupOffsetsRequestTopic,
};
use offsetlab_wire::kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use offsetlab_wire::kafka_protocol::messages::share_acknowledge_request::{
    AcknowledgePartition, AcknowledgeTopic, AcknowledgementBatch as AckBatch,
};
use offsetlab_wire::kafka_protocol::messages::share_fetch_request::{
    AcknowledgementBatch, FetchPartition, FetchTopic,
};
use offsetlab_wire::kafka_protocol::messages::{
    AlterShareGroupOffsetsRequest, ApiKey, DeleteShareGroupOffsetsRequest, DescribeShareGroupOffsetsRequest,
    IncrementalAlterConfigsRequest, ShareAcknowledgeRequest, ShareFetchRequest, ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
};
use offsetlab_wire::Uuid;

fn heartbeat(g: &str, member: &str, epoch: i32, topics: Option<&str>) -> ShareGroupHeartbeatRequest {
    ShareGroupHeartbeatRequest::default()
        .with_group_id(group(g))
        .with_member_id(s(member))
        .with_member_epoch(epoch)
        .with_subscribed_topic_names(topics.map(|t| vec![topic(t)]))
}

/// A ShareFetch of partition 0 of `id` at session `epoch`, acknowledging `acks` (first, last,
/// type) there.
fn fetch(g: &str, member: &str, epoch: i32, id: Uuid, acks: &[(i64, i64, i8)]) -> ShareFetchRequest {
    ShareFetchRequest::default()
        .with_group_id(Some(group(g)))
        .with_member_id(Some(s(member)))
        .with_share_session_epoch(epoch)
        .with_max_wait_ms(500)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_max_records(2)
        .with_batch_size(2)
        .with_topics(vec![FetchTopic::default().with_topic_id(id).with_partitions(
            vec![FetchPartition::default()
                .with_partition_index(0)
                .with_acknowledgement_batches(
                    acks.iter()
                        .map(|&(first, last, kind)| {
                            AcknowledgementBatch::default()
                                .with_first_offset(first)
                                .with_last_offset(last)
                                .with_acknowledge_types(vec![kind])
                        })
                        .collect(),
                )],
        )])
}

fn acknowledge(
    g: &str,
    member: &str,
    epoch: i32,
    id: Uuid,
    acks: &[(i64, i64, i8)],
) -> ShareAcknowledgeRequest {
    ShareAcknowledgeRequest::default()
        .with_group_id(Some(group(g)))
        .with_member_id(Some(s(member)))
        .with_share_session_epoch(epoch)
        .with_topics(vec![AcknowledgeTopic::default()
            .with_topic_id(id)
            .with_partitions(vec![AcknowledgePartition::default()
                .with_partition_index(0)
                .with_acknowledgement_batches(
                    acks.iter()
                        .map(|&(first, last, kind)| {
                            AckBatch::default()
                                .with_first_offset(first)
                                .with_last_offset(last)
                                .with_acknowledge_types(vec![kind])
                        })
                        .collect(),
                )])])
}

/// IncrementalAlterConfigs setting one config of group `g`.
fn group_config(g: &str, name: &str, value: &str) -> IncrementalAlterConfigsRequest {
    IncrementalAlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
        .with_resource_type(32)
        .with_resource_name(s(g))
        .with_configs(vec![AlterableConfig::default()
            .with_name(s(name))
            .with_value(Some(s(value)))])])
}

const ACCEPT: i8 = 1;
const RELEASE: i8 = 2;

pub fn share_group(t: &mut Target) -> Step<()> {
    let st = t.name("sg-t");
    let id = create_topic(t, &st, 1, &[])?;
    // Four records, each its own batch: Kafka acquires whole batches.
    for i in 0..4 {
        produce_quietly(t, &st, 0, plain_batch(t, &[(&format!("k{i}"), &format!("v{i}"))]))?;
    }
    let fetch_v = *versions(ApiKey::ShareFetch).end();
    let ack_v = *versions(ApiKey::ShareAcknowledge).end();
    let describe_v = *versions(ApiKey::ShareGroupDescribe).end();
    for v in versions(ApiKey::ShareGroupHeartbeat) {
        let g = t.name(&format!("sg{v}"));
        t.fresh_connection();
        t.quiet(1, group_config(&g, "share.auto.offset.reset", "earliest"))?;
        // Members choose their ids (up to 36 characters).
        let (m1, m2) = (t.name(&format!("sg{v}-a")), t.name(&format!("sg{v}-b")));
        super::groups::name_member(t, &g, 1, &m1);
        super::groups::name_member(t, &g, 2, &m2);
        t.ask("join without topics", v, heartbeat(&g, &m1, 0, None))?;
        let j1 = t.ask("join", v, heartbeat(&g, &m1, 0, Some(&st)))?;
        ensure!(j1.error_code == 0, "join: error {}", j1.error_code);
        // Kafka computes a share group's target assignment at most once a second.
        std::thread::sleep(std::time::Duration::from_millis(1_500));
        let h1 = t.ask(
            "heartbeat: assigned",
            v,
            heartbeat(&g, &m1, j1.member_epoch, None),
        )?;
        let e1 = h1.member_epoch;
        t.ask("heartbeat at an epoch ahead", v, heartbeat(&g, &m1, e1 + 5, None))?;
        t.ask(
            "heartbeat of an unknown member",
            v,
            heartbeat(&g, "nobody", 3, None),
        )?;
        let f = t.ask("fetch opens the session", fetch_v, fetch(&g, &m1, 0, id, &[]))?;
        ensure!(f.error_code == 0, "fetch: error {}", f.error_code);
        t.ask(
            "fetch at a session epoch not the session's",
            fetch_v,
            fetch(&g, &m1, 7, id, &[]),
        )?;
        // Acknowledgements in a fetch: an accept frees nothing, so what the fetch acquires does
        // not depend on when Kafka applies it (a release in a fetch races the fetch's own
        // acquisition on Kafka: Apache Kafka 4.4 handed the released record out again in one
        // run and not in the next). The release goes alone, in a ShareAcknowledge.
        t.ask(
            "fetch accepting 0",
            fetch_v,
            fetch(&g, &m1, 1, id, &[(0, 0, ACCEPT)]),
        )?;
        t.ask(
            "acknowledge releasing 1",
            ack_v,
            acknowledge(&g, &m1, 2, id, &[(1, 1, RELEASE)]),
        )?;
        t.ask(
            "acknowledge a record not held",
            ack_v,
            acknowledge(&g, &m1, 3, id, &[(0, 0, ACCEPT)]),
        )?;
        // A second member, sharing the one partition.
        let j2 = t.ask("join 2", v, heartbeat(&g, &m2, 0, Some(&st)))?;
        ensure!(j2.error_code == 0, "join 2: error {}", j2.error_code);
        std::thread::sleep(std::time::Duration::from_millis(1_500));
        let h2 = t.ask(
            "heartbeat 2: assigned",
            v,
            heartbeat(&g, &m2, j2.member_epoch, None),
        )?;
        t.ask("fetch 2: what is left", fetch_v, fetch(&g, &m2, 0, id, &[]))?;
        t.ask(
            "describe",
            describe_v,
            ShareGroupDescribeRequest::default()
                .with_group_ids(vec![group(&g), group(&t.name("no-such-share-group"))]),
        )?;
        t.ask(
            "acknowledge with epoch -1 closes the session",
            ack_v,
            acknowledge(&g, &m1, -1, id, &[(2, 3, ACCEPT)]),
        )?;
        // Bad input: a delivery limit outside the broker's bounds, a fetch of a topic id nobody
        // has (in a session of its own: epoch 0).
        t.ask(
            "a delivery limit out of range",
            1,
            group_config(&g, "share.delivery.count.limit", "99"),
        )?;
        t.ask(
            "fetch of a topic that does not exist",
            fetch_v,
            fetch(
                &g,
                &m2,
                0,
                Uuid::from_u128(0x0ff5_e71a_b000_0000_0000_0000_0000_0001),
                &[],
            ),
        )?;
        t.ask("leave", v, heartbeat(&g, &m1, -1, None))?;
        // An administrator's calls while a member still reads: NON_EMPTY_GROUP.
        t.ask(
            "alter offsets with a member",
            0,
            alter_offsets(&g, &[(&st, 0, 0)]),
        )?;
        t.ask("delete offsets with a member", 0, delete_offsets(&g, &[&st]))?;
        t.ask("leave 2", v, heartbeat(&g, &m2, -1, None))?;
        let _ = h2;
        start_offsets(t, &g, &st)?;
    }
    Ok(())
}

/// `kafka-share-groups.sh --describe`, `--reset-offsets --execute` and `--delete-offsets` on an
/// Empty share group that read `st`, with what does not exist and bad input beside them.
fn start_offsets(t: &mut Target, g: &str, st: &str) -> Step<()> {
    let nowhere = t.name("no-such-topic");
    t.ask("describe offsets", 0, describe_offsets(g, None))?;
    t.ask(
        "describe offsets of named partitions",
        0,
        describe_offsets(g, Some(&[(st, &[0, 5]), (&nowhere, &[0])])),
    )?;
    t.ask(
        "describe offsets of a group that does not exist",
        0,
        describe_offsets(&t.name("no-such-share-group"), None),
    )?;
    t.ask(
        "alter offsets",
        0,
        alter_offsets(g, &[(st, 0, 3), (st, 7, 0), (&nowhere, 0, 0)]),
    )?;
    t.ask("describe offsets after the alter", 0, describe_offsets(g, None))?;
    t.ask("alter to a negative offset", 0, alter_offsets(g, &[(st, 0, -1)]))?;
    t.ask("describe offsets after a negative", 0, describe_offsets(g, None))?;
    t.ask("alter to -5", 0, alter_offsets(g, &[(st, 0, -5)]))?;
    t.ask("describe offsets after -5", 0, describe_offsets(g, None))?;
    t.ask(
        "alter offsets of an empty group id",
        0,
        alter_offsets("", &[(st, 0, 0)]),
    )?;
    t.ask("delete offsets", 0, delete_offsets(g, &[st, &nowhere]))?;
    t.ask("describe offsets after the delete", 0, describe_offsets(g, None))?;
    t.ask("delete offsets again", 0, delete_offsets(g, &[st]))?;
    t.ask(
        "delete offsets of a group that does not exist",
        0,
        delete_offsets(&t.name("no-such-share-group"), &[st]),
    )?;
    Ok(())
}

fn describe_offsets(g: &str, topics: Option<&[(&str, &[i32])]>) -> DescribeShareGroupOffsetsRequest {
    DescribeShareGroupOffsetsRequest::default().with_groups(vec![
        DescribeShareGroupOffsetsRequestGroup::default()
            .with_group_id(group(g))
            .with_topics(topics.map(|ts| {
                ts.iter()
                    .map(|(name, partitions)| {
                        DescribeShareGroupOffsetsRequestTopic::default()
                            .with_topic_name(topic(name))
                            .with_partitions(partitions.to_vec())
                    })
                    .collect()
            })),
    ])
}

fn alter_offsets(g: &str, offsets: &[(&str, i32, i64)]) -> AlterShareGroupOffsetsRequest {
    let mut topics: Vec<AlterShareGroupOffsetsRequestTopic> = Vec::new();
    for (name, p, o) in offsets {
        let partition = AlterShareGroupOffsetsRequestPartition::default()
            .with_partition_index(*p)
            .with_start_offset(*o);
        match topics.iter_mut().find(|x| x.topic_name.as_str() == *name) {
            Some(x) => x.partitions.push(partition),
            None => topics.push(
                AlterShareGroupOffsetsRequestTopic::default()
                    .with_topic_name(topic(name))
                    .with_partitions(vec![partition]),
            ),
        }
    }
    AlterShareGroupOffsetsRequest::default()
        .with_group_id(group(g))
        .with_topics(topics)
}

fn delete_offsets(g: &str, topics: &[&str]) -> DeleteShareGroupOffsetsRequest {
    DeleteShareGroupOffsetsRequest::default()
        .with_group_id(group(g))
        .with_topics(
            topics
                .iter()
                .map(|name| DeleteShareGroupOffsetsRequestTopic::default().with_topic_name(topic(name)))
                .collect(),
        )
}

//! Kafka 4's consumer group protocol (KIP-848): members joining with ConsumerGroupHeartbeat, a
//! partition revoked by its owner before the coordinator hands it to a new member, commits fenced
//! by member epoch, the errors a client meets, the group described with ConsumerGroupDescribe, and
//! members leaving — at every version the lab advertises.

use super::{create_topic, group, s, topic, versions};
use crate::ensure;
use crate::target::{Step, Target};
use offsetlab_wire::kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use offsetlab_wire::kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use offsetlab_wire::kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use offsetlab_wire::kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use offsetlab_wire::kafka_protocol::messages::{
    AddOffsetsToTxnRequest, ApiKey, ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest,
    DescribeGroupsRequest, ListGroupsRequest, ListGroupsResponse, OffsetCommitRequest, OffsetFetchRequest,
    ProducerId, TxnOffsetCommitRequest,
};
use offsetlab_wire::Uuid;

fn join(g: &str, member: &str, topic_name: &str) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(group(g))
        .with_member_id(s(member))
        .with_member_epoch(0)
        .with_rebalance_timeout_ms(30_000)
        .with_subscribed_topic_names(Some(vec![topic(topic_name)]))
        .with_topic_partitions(Some(Vec::new()))
}

/// A heartbeat at `epoch`; `owned` (topic id, partitions) when the member says what it owns.
fn beat(g: &str, member: &str, epoch: i32, owned: Option<(Uuid, Vec<i32>)>) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest::default()
        .with_group_id(group(g))
        .with_member_id(s(member))
        .with_member_epoch(epoch)
        .with_rebalance_timeout_ms(-1)
        .with_topic_partitions(owned.map(|(id, partitions)| {
            vec![TopicPartitions::default()
                .with_topic_id(id)
                .with_partitions(partitions)]
        }))
}

fn commit(g: &str, member: &str, epoch: i32, topic_name: &str, offset: i64) -> OffsetCommitRequest {
    commit_partition(g, member, epoch, topic_name, 0, offset)
}

fn commit_partition(
    g: &str,
    member: &str,
    epoch: i32,
    topic_name: &str,
    partition: i32,
    offset: i64,
) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(group(g))
        .with_member_id(s(member))
        .with_generation_id_or_member_epoch(epoch)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(topic(topic_name))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(partition)
                .with_committed_offset(offset)])])
}

/// OffsetFetch (v9+) as a member of a consumer-protocol group asks it: with its member id and
/// epoch, which the coordinator checks before answering.
fn fetch_as(g: &str, member: &str, epoch: i32, topic_name: &str) -> OffsetFetchRequest {
    OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
        .with_group_id(group(g))
        .with_member_id(Some(s(member)))
        .with_member_epoch(epoch)
        .with_topics(Some(vec![OffsetFetchRequestTopics::default()
            .with_name(topic(topic_name))
            .with_partition_indexes(vec![0, 1])]))])
}

/// TxnOffsetCommit (KIP-447: with the consumer's member id and epoch) of one partition.
fn txn_commit(
    txn: &str,
    g: &str,
    (pid, epoch): (ProducerId, i16),
    (member, member_epoch): (&str, i32),
    (topic_name, partition, offset): (&str, i32, i64),
) -> TxnOffsetCommitRequest {
    TxnOffsetCommitRequest::default()
        .with_transactional_id(super::txn_id(txn))
        .with_group_id(group(g))
        .with_producer_id(pid)
        .with_producer_epoch(epoch)
        .with_member_id(s(member))
        .with_generation_id(member_epoch)
        .with_topics(vec![TxnOffsetCommitRequestTopic::default()
            .with_name(topic(topic_name))
            .with_partitions(vec![TxnOffsetCommitRequestPartition::default()
                .with_partition_index(partition)
                .with_committed_offset(offset)])])
}

/// A transaction's offsets for a consumer-protocol group, stamped with a member's epochs: the
/// epoch it has, one it has left while it still holds the partition, one since which it gave the
/// partition away, and an unknown member's. Aborted at the end: only the answers are compared.
fn transactional_commits(
    t: &mut Target,
    g: &str,
    member: &str,
    (old, current): (i32, i32),
    ct: &str,
) -> Step<()> {
    let tx = t.name(&format!("{g}-tx"));
    let r = t.ask(
        "txn: init",
        *versions(ApiKey::InitProducerId).end(),
        super::txn::init(0, Some(&tx), 60_000),
    )?;
    ensure!(r.error_code == 0, "init: error {}", r.error_code);
    t.ctx
        .register("pid", &r.producer_id.0.to_string(), &format!("pid {tx}"));
    let producer = (r.producer_id, r.producer_epoch);
    t.ask(
        "txn: add offsets",
        *versions(ApiKey::AddOffsetsToTxn).end(),
        AddOffsetsToTxnRequest::default()
            .with_transactional_id(super::txn_id(&tx))
            .with_producer_id(producer.0)
            .with_producer_epoch(producer.1)
            .with_group_id(group(g)),
    )?;
    let tv = *versions(ApiKey::TxnOffsetCommit).end();
    let cases: [(&str, &str, i32, i32); 5] = [
        ("txn commit", member, current, 0),
        ("txn commit at an epoch ahead", member, current + 1, 0),
        ("txn commit at the old epoch, partition kept", member, old, 0),
        (
            "txn commit at the old epoch, partition given away",
            member,
            old,
            1,
        ),
        ("txn commit by an unknown member", "nobody", current, 0),
    ];
    for (what, who, epoch, partition) in cases {
        t.ask(
            what,
            tv,
            txn_commit(&tx, g, producer, (who, epoch), (ct, partition, 8)),
        )?;
    }
    let ev = *versions(ApiKey::EndTxn).end();
    t.ask(
        "txn: abort",
        ev,
        super::txn::end(&tx, producer.0, producer.1, false),
    )?;
    super::txn::settled(t, &tx)
}

pub fn consumer_group(t: &mut Target) -> Step<()> {
    let ct = t.name("cg-t");
    let id = create_topic(t, &ct, 2, &[])?;
    let commit_version = *versions(ApiKey::OffsetCommit).end();
    for v in versions(ApiKey::ConsumerGroupHeartbeat) {
        let g = t.name(&format!("cg{v}"));
        t.fresh_connection();
        // From v1 a member makes its own id; at v0 the coordinator gives it one.
        let (mine1, mine2) = if v >= 1 {
            (t.name(&format!("cg{v}-m1")), t.name(&format!("cg{v}-m2")))
        } else {
            (String::new(), String::new())
        };
        let j1 = t.ask("join", v, join(&g, &mine1, &ct))?;
        ensure!(j1.error_code == 0, "join: error {}", j1.error_code);
        let m1 = j1.member_id.as_deref().unwrap_or_default().to_string();
        super::groups::name_member(t, &g, 1, &m1);
        let e1 = j1.member_epoch;
        t.ask("heartbeat", v, beat(&g, &m1, e1, None))?;
        t.ask("commit", commit_version, commit(&g, &m1, e1, &ct, 3))?;
        // A second member: the group's epoch moves; what it is given waits until the first
        // member revoked it.
        let j2 = t.ask("join 2", v, join(&g, &mine2, &ct))?;
        ensure!(j2.error_code == 0, "join 2: error {}", j2.error_code);
        let m2 = j2.member_id.as_deref().unwrap_or_default().to_string();
        super::groups::name_member(t, &g, 2, &m2);
        // Kafka 4.4 computes a target assignment at most once a second (KIP-1263): the group is
        // "Assigning" meanwhile, and the first member keeps what it has.
        t.ask("heartbeat while assigning", v, beat(&g, &m1, e1, None))?;
        std::thread::sleep(std::time::Duration::from_millis(1_500));
        let told = t.ask("heartbeat: told to revoke", v, beat(&g, &m1, e1, None))?;
        let kept: Vec<i32> = told
            .assignment
            .as_ref()
            .and_then(|a| a.topic_partitions.first())
            .map(|tp| tp.partitions.clone())
            .unwrap_or_default();
        t.ask(
            "commit before revoking",
            commit_version,
            commit(&g, &m1, e1, &ct, 4),
        )?;
        let acked = t.ask("heartbeat: revoked", v, beat(&g, &m1, e1, Some((id, kept))))?;
        t.ask(
            "heartbeat 2: given the partition",
            v,
            beat(&g, &m2, j2.member_epoch, None),
        )?;
        // At its old epoch a member still commits a partition it had then (KIP-1251), not one
        // it gave away since.
        t.ask(
            "commit at the old epoch",
            commit_version,
            commit(&g, &m1, e1, &ct, 5),
        )?;
        t.ask(
            "stale commit",
            commit_version,
            commit_partition(&g, &m1, e1, &ct, 1, 5),
        )?;
        t.ask(
            "commit",
            commit_version,
            commit(&g, &m1, acked.member_epoch, &ct, 6),
        )?;
        t.ask(
            "unknown member's commit",
            commit_version,
            commit(&g, "nobody", acked.member_epoch, &ct, 7),
        )?;
        let fv = *versions(ApiKey::OffsetFetch).end();
        if fv >= 9 {
            t.ask(
                "offset fetch by the member",
                fv,
                fetch_as(&g, &m1, acked.member_epoch, &ct),
            )?;
            t.ask("offset fetch at an old epoch", fv, fetch_as(&g, &m1, e1, &ct))?;
            t.ask(
                "offset fetch at an epoch ahead",
                fv,
                fetch_as(&g, &m1, acked.member_epoch + 1, &ct),
            )?;
            t.ask(
                "offset fetch by an unknown member",
                fv,
                fetch_as(&g, "nobody", acked.member_epoch, &ct),
            )?;
        }
        transactional_commits(t, &g, &m1, (e1, acked.member_epoch), &ct)?;
        t.ask("heartbeat ahead", v, beat(&g, &m1, acked.member_epoch + 5, None))?;
        t.ask("unknown member", v, beat(&g, "nobody", 1, None))?;
        t.ask(
            "unsupported assignor",
            v,
            join(&g, &t.name("cg-m3"), &ct).with_server_assignor(Some(s("sticky"))),
        )?;
        if v >= 1 {
            t.ask("no member id", v, join(&g, "", &ct))?;
        }
        t.ask(
            "join without a subscription",
            v,
            join(&g, &mine2, &ct).with_subscribed_topic_names(None),
        )?;
        // The classic APIs' view of it: listed with its type and state, not a classic group.
        // (Only this group: a real Kafka holds other runs' consumer groups too.)
        let this = g.clone();
        t.ask_keeping(
            "list",
            *versions(ApiKey::ListGroups).end(),
            ListGroupsRequest::default().with_types_filter(vec![s("consumer")]),
            move |r: &mut ListGroupsResponse| r.groups.retain(|x| x.group_id.0.as_str() == this),
        )?;
        t.ask(
            "describe (classic API)",
            *versions(ApiKey::DescribeGroups).end(),
            DescribeGroupsRequest::default().with_groups(vec![group(&g)]),
        )?;
        for dv in versions(ApiKey::ConsumerGroupDescribe) {
            t.ask(
                "describe",
                dv,
                ConsumerGroupDescribeRequest::default()
                    .with_group_ids(vec![group(&g), group(&t.name("cg-none"))]),
            )?;
        }
        if v >= 1 {
            // A static member: its leave (epoch −2) keeps its partitions for its next process,
            // which takes them back at once, at the same epoch.
            let sg = t.name(&format!("cg{v}-static"));
            let (p1, p2) = (t.name(&format!("cg{v}-s1")), t.name(&format!("cg{v}-s2")));
            let sj = t.ask(
                "static join",
                v,
                join(&sg, &p1, &ct).with_instance_id(Some(s("i1"))),
            )?;
            t.ask(
                "static leave",
                v,
                beat(&sg, &p1, -2, None).with_instance_id(Some(s("i1"))),
            )?;
            let described = ConsumerGroupDescribeRequest::default().with_group_ids(vec![group(&sg)]);
            t.ask("describe after the static leave", 1, described.clone())?;
            t.ask(
                "static rejoin",
                v,
                join(&sg, &p2, &ct).with_instance_id(Some(s("i1"))),
            )?;
            t.ask("describe after the rejoin", 1, described)?;
            t.ask(
                "static leave again",
                v,
                beat(&sg, &p2, sj.member_epoch, None)
                    .with_member_epoch(-1)
                    .with_instance_id(Some(s("i1"))),
            )?;
        }
        t.ask("leave 2", v, beat(&g, &m2, -1, None))?;
        t.ask("leave", v, beat(&g, &m1, -1, None))?;
        t.ask("leave again", v, beat(&g, &m1, -1, None))?;
        t.ask(
            "describe empty",
            *versions(ApiKey::ConsumerGroupDescribe).end(),
            ConsumerGroupDescribeRequest::default().with_group_ids(vec![group(&g)]),
        )?;
    }
    Ok(())
}

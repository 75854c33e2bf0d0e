//! Committed offsets: committed from outside a group at every version (what offset resets and
//! admin clients send), fetched back at every version, groups and offsets deleted.

use super::{create_topic, group, s, topic, versions};
use crate::target::{Step, Target};
use offsetlab_wire::kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use offsetlab_wire::kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use offsetlab_wire::kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use offsetlab_wire::kafka_protocol::messages::{
    ApiKey, DeleteGroupsRequest, OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest,
};
use offsetlab_wire::Uuid;

/// (partition, offset, leader epoch, metadata).
type Commit<'a> = (i32, i64, i32, Option<&'a str>);

fn commit_request(v: i16, g: &str, name: &str, id: Uuid, commits: &[Commit<'_>]) -> OffsetCommitRequest {
    let t = if v >= 10 {
        OffsetCommitRequestTopic::default().with_topic_id(id)
    } else {
        OffsetCommitRequestTopic::default().with_name(topic(name))
    };
    OffsetCommitRequest::default()
        .with_group_id(group(g))
        .with_topics(vec![t.with_partitions(
            commits
                .iter()
                .map(|&(p, o, epoch, meta)| {
                    OffsetCommitRequestPartition::default()
                        .with_partition_index(p)
                        .with_committed_offset(o)
                        .with_committed_leader_epoch(if v >= 6 { epoch } else { -1 })
                        .with_committed_metadata(meta.map(s))
                })
                .collect(),
        )])
}

pub fn offset_commit(t: &mut Target) -> Step<()> {
    let name = t.name("oc");
    let id = create_topic(t, &name, 2, &[])?;
    let long = "x".repeat(4097);
    for v in versions(ApiKey::OffsetCommit) {
        let g = t.name(&format!("oc{v}"));
        t.ask(
            "commit",
            v,
            commit_request(v, &g, &name, id, &[(0, 5, 0, Some("meta")), (1, 7, -1, None)]),
        )?;
        t.ask(
            "commit unknown partition",
            v,
            commit_request(v, &g, &name, id, &[(0, 6, -1, Some("")), (9, 1, -1, Some(""))]),
        )?;
        t.ask(
            "commit metadata too large",
            v,
            commit_request(v, &g, &name, id, &[(0, 6, -1, Some(long.as_str()))]),
        )?;
        t.ask(
            "commit negative",
            v,
            commit_request(v, &g, &name, id, &[(1, -2, -1, Some(""))]),
        )?;
        let mut member = commit_request(v, &g, &name, id, &[(0, 8, -1, Some(""))]);
        member.member_id = s("nobody");
        member.generation_id_or_member_epoch = 3;
        t.ask("commit unknown member", v, member)?;
        t.ask(
            "commit empty group id",
            v,
            commit_request(v, "", &name, id, &[(0, 1, -1, Some(""))]),
        )?;
        if v >= 10 {
            t.ask(
                "commit unknown topic id",
                v,
                commit_request(v, &g, &name, Uuid::from_u128(5), &[(0, 1, -1, Some(""))]),
            )?;
        } else {
            t.ask(
                "commit unknown topic",
                v,
                commit_request(v, &g, &t.name("oc-missing"), id, &[(0, 1, -1, Some(""))]),
            )?;
        }
        let fv = *versions(ApiKey::OffsetFetch).end();
        t.ask(
            "read back",
            fv.min(7),
            OffsetFetchRequest::default()
                .with_group_id(group(&g))
                .with_topics(None),
        )?;
    }
    Ok(())
}

pub fn offset_fetch(t: &mut Target) -> Step<()> {
    let name = t.name("of");
    let id = create_topic(t, &name, 2, &[])?;
    let (g, missing) = (t.name("of-g"), t.name("of-missing"));
    let cv = *versions(ApiKey::OffsetCommit).end();
    t.ask(
        "commit",
        cv.min(9),
        commit_request(
            cv.min(9),
            &g,
            &name,
            id,
            &[(0, 3, 0, Some("m0")), (1, 4, -1, Some(""))],
        ),
    )?;
    for v in versions(ApiKey::OffsetFetch) {
        if v < 8 {
            let named = OffsetFetchRequest::default()
                .with_group_id(group(&g))
                .with_topics(Some(vec![
                    OffsetFetchRequestTopic::default()
                        .with_name(topic(&name))
                        .with_partition_indexes(vec![0, 1, 5]),
                    OffsetFetchRequestTopic::default()
                        .with_name(topic(&t.name("of-none")))
                        .with_partition_indexes(vec![0]),
                ]));
            let named = if v >= 7 {
                named.with_require_stable(true)
            } else {
                named
            };
            t.ask("named", v, named)?;
            if v >= 2 {
                t.ask(
                    "all",
                    v,
                    OffsetFetchRequest::default()
                        .with_group_id(group(&g))
                        .with_topics(None),
                )?;
            }
            t.ask(
                "missing group",
                v,
                OffsetFetchRequest::default()
                    .with_group_id(group(&missing))
                    .with_topics(Some(vec![OffsetFetchRequestTopic::default()
                        .with_name(topic(&name))
                        .with_partition_indexes(vec![0])])),
            )?;
        } else {
            let topics = |v: i16| {
                let t0 = if v >= 10 {
                    OffsetFetchRequestTopics::default().with_topic_id(id)
                } else {
                    OffsetFetchRequestTopics::default().with_name(topic(&name))
                };
                Some(vec![t0.with_partition_indexes(vec![0, 1, 5])])
            };
            t.ask(
                "groups",
                v,
                OffsetFetchRequest::default()
                    .with_require_stable(true)
                    .with_groups(vec![
                        OffsetFetchRequestGroup::default()
                            .with_group_id(group(&g))
                            .with_topics(topics(v)),
                        OffsetFetchRequestGroup::default()
                            .with_group_id(group(&missing))
                            .with_topics(None),
                        OffsetFetchRequestGroup::default()
                            .with_group_id(group(&t.name("of-g2")))
                            .with_topics(None),
                    ]),
            )?;
            t.ask(
                "all",
                v,
                OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
                    .with_group_id(group(&g))
                    .with_topics(None)]),
            )?;
            if v >= 9 {
                t.ask(
                    "member of a classic group",
                    v,
                    OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
                        .with_group_id(group(&g))
                        .with_member_id(Some(s("nobody")))
                        .with_member_epoch(3)
                        .with_topics(None)]),
                )?;
            }
            if v >= 10 {
                t.ask(
                    "unknown topic id",
                    v,
                    OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
                        .with_group_id(group(&g))
                        .with_topics(Some(vec![OffsetFetchRequestTopics::default()
                            .with_topic_id(Uuid::from_u128(3))
                            .with_partition_indexes(vec![0])]))]),
                )?;
            }
        }
    }
    Ok(())
}

pub fn delete_groups(t: &mut Target) -> Step<()> {
    let name = t.name("dg");
    let id = create_topic(t, &name, 1, &[])?;
    let cv = *versions(ApiKey::OffsetCommit).end();
    for v in versions(ApiKey::DeleteGroups) {
        let g = t.name(&format!("dg{v}"));
        t.quiet(
            cv.min(9),
            commit_request(cv.min(9), &g, &name, id, &[(0, 1, -1, Some(""))]),
        )?;
        t.ask(
            "delete",
            v,
            DeleteGroupsRequest::default().with_groups_names(vec![
                group(&g),
                group(&t.name("dg-missing")),
                group(""),
            ]),
        )?;
        t.ask(
            "delete again",
            v,
            DeleteGroupsRequest::default().with_groups_names(vec![group(&g)]),
        )?;
    }
    Ok(())
}

pub fn offset_delete(t: &mut Target) -> Step<()> {
    let (a, b) = (t.name("od-a"), t.name("od-b"));
    let ida = create_topic(t, &a, 2, &[])?;
    let idb = create_topic(t, &b, 1, &[])?;
    let g = t.name("od");
    let cv = 9.min(*versions(ApiKey::OffsetCommit).end());
    t.quiet(
        cv,
        commit_request(cv, &g, &a, ida, &[(0, 1, -1, Some("")), (1, 2, -1, Some(""))]),
    )?;
    t.quiet(cv, commit_request(cv, &g, &b, idb, &[(0, 3, -1, Some(""))]))?;
    let req = |g: &str, topics: &[(&str, &[i32])]| {
        OffsetDeleteRequest::default()
            .with_group_id(group(g))
            .with_topics(
                topics
                    .iter()
                    .map(|(name, parts)| {
                        OffsetDeleteRequestTopic::default()
                            .with_name(topic(name))
                            .with_partitions(
                                parts
                                    .iter()
                                    .map(|&p| OffsetDeleteRequestPartition::default().with_partition_index(p))
                                    .collect(),
                            )
                    })
                    .collect(),
            )
    };
    for v in versions(ApiKey::OffsetDelete) {
        t.ask("delete a-0", v, req(&g, &[(&a, &[0])]))?;
        t.ask(
            "delete unknown partition",
            v,
            req(&g, &[(&a, &[7]), (&t.name("od-none"), &[0])]),
        )?;
        t.ask(
            "delete unknown group",
            v,
            req(&t.name("od-missing"), &[(&a, &[0])]),
        )?;
        t.ask(
            "read back",
            7,
            OffsetFetchRequest::default()
                .with_group_id(group(&g))
                .with_topics(None),
        )?;
    }
    Ok(())
}

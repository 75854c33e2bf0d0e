//! Classic consumer groups: coordinators found, members joining, syncing, heartbeating and
//! leaving at every version, a rebalance with a second member, the errors clients meet, and
//! the groups described and listed.

use super::{create_topic, group, s, topic, versions};
use crate::ensure;
use crate::target::{Step, Target};
use offsetlab_wire::consumer_protocol::{assignment, subscription};
use offsetlab_wire::kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use offsetlab_wire::kafka_protocol::messages::leave_group_request::MemberIdentity;
use offsetlab_wire::kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use offsetlab_wire::kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use offsetlab_wire::kafka_protocol::messages::{
    ApiKey, DescribeGroupsRequest, FindCoordinatorRequest, HeartbeatRequest, JoinGroupRequest,
    JoinGroupResponse, LeaveGroupRequest, ListGroupsRequest, ListGroupsResponse, OffsetCommitRequest,
    SyncGroupRequest,
};

/// `i` brought into the versions of `key` the lab advertises.
pub fn clamp(key: ApiKey, i: i16) -> i16 {
    let r = versions(key);
    i.clamp(*r.start(), *r.end())
}

pub fn find_coordinator(t: &mut Target) -> Step<()> {
    let (g1, g2, tx) = (t.name("fc-g1"), t.name("fc-g2"), t.name("fc-tx"));
    for v in versions(ApiKey::FindCoordinator) {
        if v < 4 {
            t.ask("group", v, FindCoordinatorRequest::default().with_key(s(&g1)))?;
            if v >= 1 {
                t.ask(
                    "transaction",
                    v,
                    FindCoordinatorRequest::default()
                        .with_key(s(&tx))
                        .with_key_type(1),
                )?;
                t.ask(
                    "bad-type",
                    v,
                    FindCoordinatorRequest::default()
                        .with_key(s(&g1))
                        .with_key_type(7),
                )?;
            }
            t.ask(
                "empty-group",
                v,
                FindCoordinatorRequest::default().with_key(s("")),
            )?;
        } else {
            t.ask(
                "groups",
                v,
                FindCoordinatorRequest::default().with_coordinator_keys(vec![s(&g1), s(&g2), s("")]),
            )?;
            t.ask(
                "transactions",
                v,
                FindCoordinatorRequest::default()
                    .with_key_type(1)
                    .with_coordinator_keys(vec![s(&tx)]),
            )?;
        }
        if v >= 6 {
            // A share-group partition's coordinator (KIP-932): "group:topicId:partition". Kafka
            // creates its share-state topic on the first such request, answering
            // COORDINATOR_NOT_AVAILABLE until then: asked (quietly) until it has one.
            let share = format!("{g1}:AAAAAAAAAAAAAAAAAAAAAA:0");
            if t.side == "kafka" {
                let key = share.clone();
                t.wait_until(
                    "found a share coordinator",
                    std::time::Duration::from_secs(60),
                    |t| {
                        let r = t.quiet(
                            v,
                            FindCoordinatorRequest::default()
                                .with_key_type(2)
                                .with_coordinator_keys(vec![s(&key)]),
                        )?;
                        Ok(r.coordinators.iter().all(|c| c.error_code == 0))
                    },
                )?;
            }
            t.ask(
                "share",
                v,
                FindCoordinatorRequest::default()
                    .with_key_type(2)
                    .with_coordinator_keys(vec![s(&share)]),
            )?;
        }
    }
    Ok(())
}

fn join_request(v: i16, g: &str, member: &str, topic_name: &str) -> JoinGroupRequest {
    let req = JoinGroupRequest::default()
        .with_group_id(group(g))
        .with_session_timeout_ms(10_000)
        .with_member_id(s(member))
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(s("range"))
            .with_metadata(subscription([topic_name]))]);
    let req = if v >= 1 {
        req.with_rebalance_timeout_ms(10_000)
    } else {
        req
    };
    if v >= 8 {
        req.with_reason(Some(s("conformance")))
    } else {
        req
    }
}

/// Names the `n`th member id of group `g` for the comparison: `<member g/n>`.
pub fn name_member(t: &mut Target, g: &str, n: usize, id: &str) {
    if !id.is_empty() {
        t.ctx.register("member", id, &format!("member {g}/{n}"));
    }
}

/// Joins `g` as its `n`th member (with the MEMBER_ID_REQUIRED round from v4); the answer.
fn join_as(
    t: &mut Target,
    v: i16,
    g: &str,
    n: usize,
    topic_name: &str,
    step: &str,
) -> Step<JoinGroupResponse> {
    let first = t.call(step, v, join_request(v, g, "", topic_name))?;
    let crate::conn::Outcome::Response(first) = first else {
        return Err(crate::target::Abort(format!("{step}: no answer")));
    };
    name_member(t, g, n, first.member_id.as_str());
    if v >= 4 && first.error_code == offsetlab_wire::error::MEMBER_ID_REQUIRED {
        let member = first.member_id.to_string();
        return t.ask(
            &format!("{step} with id"),
            v,
            join_request(v, g, &member, topic_name),
        );
    }
    Ok(first)
}

fn join(t: &mut Target, v: i16, g: &str, topic_name: &str, step: &str) -> Step<JoinGroupResponse> {
    join_as(t, v, g, 1, topic_name, step)
}

/// A member's assignment: its id and its partitions by topic.
type Assigned<'a> = (&'a str, Vec<(&'a str, Vec<i32>)>);

fn sync_request(
    v: i16,
    g: &str,
    generation: i32,
    member: &str,
    assignments: &[Assigned<'_>],
) -> SyncGroupRequest {
    let req = SyncGroupRequest::default()
        .with_group_id(group(g))
        .with_generation_id(generation)
        .with_member_id(s(member))
        .with_assignments(
            assignments
                .iter()
                .map(|(m, parts)| {
                    SyncGroupRequestAssignment::default()
                        .with_member_id(s(m))
                        .with_assignment(assignment(parts.iter().map(|(t, p)| (*t, p.clone()))))
                })
                .collect(),
        );
    if v >= 5 {
        req.with_protocol_type(Some(s("consumer")))
            .with_protocol_name(Some(s("range")))
    } else {
        req
    }
}

fn heartbeat(_v: i16, g: &str, generation: i32, member: &str) -> HeartbeatRequest {
    HeartbeatRequest::default()
        .with_group_id(group(g))
        .with_generation_id(generation)
        .with_member_id(s(member))
}

fn leave(v: i16, g: &str, members: &[&str]) -> LeaveGroupRequest {
    if v >= 3 {
        LeaveGroupRequest::default().with_group_id(group(g)).with_members(
            members
                .iter()
                .map(|m| {
                    let id = MemberIdentity::default().with_member_id(s(m));
                    if v >= 5 {
                        id.with_reason(Some(s("done")))
                    } else {
                        id
                    }
                })
                .collect(),
        )
    } else {
        LeaveGroupRequest::default()
            .with_group_id(group(g))
            .with_member_id(s(members.first().copied().unwrap_or("")))
    }
}

fn commit(
    _v: i16,
    g: &str,
    generation: i32,
    member: &str,
    topic_name: &str,
    offsets: &[(i32, i64)],
) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(group(g))
        .with_generation_id_or_member_epoch(generation)
        .with_member_id(s(member))
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(topic(topic_name))
            .with_partitions(
                offsets
                    .iter()
                    .map(|&(p, o)| {
                        OffsetCommitRequestPartition::default()
                            .with_partition_index(p)
                            .with_committed_offset(o)
                            .with_committed_metadata(Some(s("m")))
                    })
                    .collect(),
            )])
}

/// A group at every JoinGroup version: join, sync, heartbeat, commit; a second member joins
/// (the first rejoins in the rebalance), both sync, the second leaves, the first leaves.
pub fn classic_group(t: &mut Target) -> Step<()> {
    let gt = t.name("gt");
    create_topic(t, &gt, 2, &[])?;
    for jv in versions(ApiKey::JoinGroup) {
        let (sv, hv, lv, cv) = (
            clamp(ApiKey::SyncGroup, jv),
            clamp(ApiKey::Heartbeat, jv),
            clamp(ApiKey::LeaveGroup, jv),
            clamp(ApiKey::OffsetCommit, jv + 2),
        );
        let g = t.name(&format!("g{jv}"));
        t.fresh_connection();
        let j = join(t, jv, &g, &gt, "join")?;
        ensure!(j.error_code == 0, "join: error {}", j.error_code);
        let (m1, gen1) = (j.member_id.to_string(), j.generation_id);
        let all = vec![(gt.as_str(), vec![0, 1])];
        t.ask("sync", sv, sync_request(sv, &g, gen1, &m1, &[(&m1, all.clone())]))?;
        t.ask("heartbeat", hv, heartbeat(hv, &g, gen1, &m1))?;
        t.ask("commit", cv, commit(cv, &g, gen1, &m1, &gt, &[(0, 1), (1, 2)]))?;
        // A second member: its join waits for the rebalance, which the first joins on its
        // heartbeat's REBALANCE_IN_PROGRESS.
        t.use_conn(1)?;
        let pending = if jv >= 4 {
            let first = t.ask("join 2", jv, join_request(jv, &g, "", &gt))?;
            let m2 = first.member_id.to_string();
            name_member(t, &g, 2, &m2);
            t.send_later("join 2 with id", jv, join_request(jv, &g, &m2, &gt))?
        } else {
            t.send_later("join 2", jv, join_request(jv, &g, "", &gt))?
        };
        t.use_conn(0)?;
        let mut rebalancing = false;
        for _ in 0..100 {
            let h = t.quiet(hv, heartbeat(hv, &g, gen1, &m1))?;
            if h.error_code == offsetlab_wire::error::REBALANCE_IN_PROGRESS {
                rebalancing = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        ensure!(rebalancing, "the first member never heard of the rebalance");
        t.ask("heartbeat in rebalance", hv, heartbeat(hv, &g, gen1, &m1))?;
        let j1 = t.ask("rejoin", jv, join_request(jv, &g, &m1, &gt))?;
        t.use_conn(1)?;
        let j2 = t.collect::<JoinGroupRequest>(pending)?;
        name_member(t, &g, 2, j2.member_id.as_str());
        ensure!(
            j1.error_code == 0 && j2.error_code == 0,
            "rejoin: {} {}",
            j1.error_code,
            j2.error_code
        );
        let m2 = j2.member_id.to_string();
        let gen2 = j1.generation_id;
        // The leader (the first member, which joined first) assigns a partition to each.
        let leader_is_1 = j1.leader.as_str() == m1;
        let (leader, follower) = if leader_is_1 {
            (m1.clone(), m2.clone())
        } else {
            (m2.clone(), m1.clone())
        };
        let plan = vec![
            (leader.as_str(), vec![(gt.as_str(), vec![0])]),
            (follower.as_str(), vec![(gt.as_str(), vec![1])]),
        ];
        // The follower syncs first (its answer waits for the leader's), on its own connection.
        let follower_conn = if leader_is_1 { 1 } else { 0 };
        t.use_conn(follower_conn)?;
        let follower_sync = t.send_later("sync follower", sv, sync_request(sv, &g, gen2, &follower, &[]))?;
        t.use_conn(1 - follower_conn)?;
        t.ask("sync leader", sv, sync_request(sv, &g, gen2, &leader, &plan))?;
        t.collect::<SyncGroupRequest>(follower_sync)?;
        t.use_conn(0)?;
        t.ask("old generation heartbeat", hv, heartbeat(hv, &g, gen1, &m1))?;
        t.ask(
            "old generation commit",
            cv,
            commit(cv, &g, gen1, &m1, &gt, &[(0, 5)]),
        )?;
        t.ask("commit", cv, commit(cv, &g, gen2, &m1, &gt, &[(0, 3)]))?;
        t.use_conn(1)?;
        t.ask("leave 2", lv, leave(lv, &g, &[&m2]))?;
        t.use_conn(0)?;
        // The first member is alone now: its heartbeat hears of the rebalance.
        t.ask("heartbeat after leave", hv, heartbeat(hv, &g, gen2, &m1))?;
        t.ask("leave", lv, leave(lv, &g, &[&m1]))?;
        t.ask("leave again", lv, leave(lv, &g, &[&m1]))?;
        t.ask(
            "describe",
            clamp(ApiKey::DescribeGroups, jv),
            DescribeGroupsRequest::default().with_groups(vec![group(&g)]),
        )?;
        if jv >= 5 {
            // A new static member (KIP-345) joins with no member id: given one at once, no
            // MEMBER_ID_REQUIRED round. (Left to its session timeout.)
            let sg = t.name(&format!("g{jv}-static"));
            let first = t.call(
                "new static member joins",
                jv,
                join_request(jv, &sg, "", &gt).with_group_instance_id(Some(s("i1"))),
            )?;
            if let crate::conn::Outcome::Response(j) = first {
                name_member(t, &sg, 1, j.member_id.as_str());
            }
        }
    }
    Ok(())
}

/// What a client meets when it gets something wrong.
pub fn group_errors(t: &mut Target) -> Step<()> {
    let gt = t.name("ge-t");
    create_topic(t, &gt, 1, &[])?;
    let g = t.name("ge");
    let jv = *versions(ApiKey::JoinGroup).end();
    let j = join(t, jv, &g, &gt, "join")?;
    let (m, generation) = (j.member_id.to_string(), j.generation_id);
    for hv in versions(ApiKey::Heartbeat) {
        t.ask("heartbeat before sync", hv, heartbeat(hv, &g, generation, &m))?;
        t.ask(
            "heartbeat unknown member",
            hv,
            heartbeat(hv, &g, generation, "nobody"),
        )?;
        t.ask(
            "heartbeat wrong generation",
            hv,
            heartbeat(hv, &g, generation + 7, &m),
        )?;
        t.ask(
            "heartbeat unknown group",
            hv,
            heartbeat(hv, &t.name("ge-none"), 1, "nobody"),
        )?;
    }
    for sv in versions(ApiKey::SyncGroup) {
        t.ask(
            "sync wrong generation",
            sv,
            sync_request(sv, &g, generation + 1, &m, &[]),
        )?;
        t.ask(
            "sync unknown member",
            sv,
            sync_request(sv, &g, generation, "nobody", &[]),
        )?;
    }
    let sv = *versions(ApiKey::SyncGroup).end();
    t.ask(
        "sync",
        sv,
        sync_request(sv, &g, generation, &m, &[(&m, vec![(gt.as_str(), vec![0])])]),
    )?;
    for jv in versions(ApiKey::JoinGroup) {
        t.ask(
            "described",
            5,
            DescribeGroupsRequest::default().with_groups(vec![group(&g)]),
        )?;
        let mut bad = join_request(jv, &g, "", &gt);
        bad.protocol_type = s("connect");
        t.ask("join other protocol type", jv, bad)?;
        let mut short = join_request(jv, &t.name("ge-short"), "", &gt);
        short.session_timeout_ms = 1;
        t.ask("join short session", jv, short)?;
        let mut long = join_request(jv, &t.name("ge-long"), "", &gt);
        long.session_timeout_ms = 86_400_000;
        t.ask("join long session", jv, long)?;
        t.ask("join empty group id", jv, join_request(jv, "", "", &gt))?;
        t.ask("join unknown member", jv, join_request(jv, &g, "nobody", &gt))?;
    }
    for lv in versions(ApiKey::LeaveGroup) {
        t.ask("leave unknown member", lv, leave(lv, &g, &["nobody"]))?;
        t.ask(
            "leave unknown group",
            lv,
            leave(lv, &t.name("ge-none"), &["nobody"]),
        )?;
    }
    let lv = *versions(ApiKey::LeaveGroup).end();
    t.ask("leave", lv, leave(lv, &g, &[&m]))?;
    Ok(())
}

/// Only this run's groups: a real Kafka holds other runs' too, and the lab its seed's.
fn ours(run: &str) -> impl Fn(&mut ListGroupsResponse) + '_ {
    move |r: &mut ListGroupsResponse| r.groups.retain(|g| g.group_id.0.contains(run))
}

pub fn describe_and_list(t: &mut Target) -> Step<()> {
    let gt = t.name("dl-t");
    create_topic(t, &gt, 1, &[])?;
    let (stable, empty) = (t.name("dl-stable"), t.name("dl-empty"));
    let jv = *versions(ApiKey::JoinGroup).end();
    let sv = *versions(ApiKey::SyncGroup).end();
    let j = join(t, jv, &stable, &gt, "join")?;
    let (m, generation) = (j.member_id.to_string(), j.generation_id);
    t.ask(
        "sync",
        sv,
        sync_request(sv, &stable, generation, &m, &[(&m, vec![(gt.as_str(), vec![0])])]),
    )?;
    // A group with offsets and nobody in it.
    let cv = *versions(ApiKey::OffsetCommit).end();
    t.ask("commit", cv, commit(cv, &empty, -1, "", &gt, &[(0, 0)]))?;
    let missing = t.name("dl-missing");
    for v in versions(ApiKey::DescribeGroups) {
        let req = DescribeGroupsRequest::default().with_groups(vec![
            group(&stable),
            group(&empty),
            group(&missing),
            group(""),
        ]);
        let req = if v >= 3 {
            req.with_include_authorized_operations(true)
        } else {
            req
        };
        t.ask("describe", v, req)?;
    }
    let run = t.run.clone();
    for v in versions(ApiKey::ListGroups) {
        t.ask_keeping("list", v, ListGroupsRequest::default(), ours(&run))?;
        if v >= 4 {
            t.ask_keeping(
                "list stable",
                v,
                ListGroupsRequest::default().with_states_filter(vec![s("Stable")]),
                ours(&run),
            )?;
            t.ask_keeping(
                "list empty",
                v,
                ListGroupsRequest::default().with_states_filter(vec![s("empty")]),
                ours(&run),
            )?;
        }
        if v >= 5 {
            t.ask_keeping(
                "list classic",
                v,
                ListGroupsRequest::default().with_types_filter(vec![s("classic")]),
                ours(&run),
            )?;
            t.ask_keeping(
                "list consumer",
                v,
                ListGroupsRequest::default().with_types_filter(vec![s("consumer")]),
                ours(&run),
            )?;
        }
    }
    let lv = *versions(ApiKey::LeaveGroup).end();
    t.ask("leave", lv, leave(lv, &stable, &[&m]))?;
    Ok(())
}

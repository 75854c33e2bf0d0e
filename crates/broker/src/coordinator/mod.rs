//! The group coordinator for real Kafka clients: JoinGroup, SyncGroup, Heartbeat, LeaveGroup
//! and their members' offset commits, as Kafka's classic (eager) group protocol runs them.
//!
//! The states, their transitions and the commit fence are the engine's
//! (`offsetlab_engine::group::GroupState` and `check_commit`), shared with the lab's own
//! consumers: this coordinator moves a group only as they allow.
//!
//! A member's liveness is wall time — heartbeats every few seconds, `session.timeout.ms` without
//! one and it is gone — so this coordinator lives beside the listener, not in the deterministic
//! engine, and a ticker task expires sessions and rebalance timeouts. What it settles reaches
//! the lab as commands, applied and saved like any action: each completed rebalance (`rebalance`:
//! the generation, its members and the partitions the leader gave each) and each member's
//! commit (`commit-offsets`, checked again by the engine against that membership). The page then
//! shows the group, its members, committed offsets and lag like every other, and an export
//! replays them. Lines are applied in the order the coordinator settled them (one lock around
//! "decide, then apply"), so generations reach the engine in order.
//!
//! Static membership (KIP-345): a static member's new process takes its old member's place in a
//! Stable group at the same generation, with no rebalance ([`Group::replace_static_member`]).
//! Kafka 4's consumer protocol (KIP-848) is [`consumer_group`]. Not modelled: Kafka's
//! `group.initial.rebalance.delay.ms` (the first rebalance of an empty group completes as soon as
//! its members have joined — Kafka's own advice for development).

use bytes::Bytes;
use offsetlab_engine::group::{check_commit, ExternalMember, Fenced, GroupState};
use offsetlab_engine::record::TopicPartition;
use offsetlab_lab::lock;
use offsetlab_scenario::command::{Command, CommitOffsets, Rebalance};
use offsetlab_wire::consumer_protocol;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use offsetlab_wire::kafka_protocol::messages::{
    HeartbeatRequest, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, SyncGroupRequest,
    SyncGroupResponse,
};
use offsetlab_wire::kafka_protocol::protocol::StrBytes;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Kafka's `group.min.session.timeout.ms` and `group.max.session.timeout.ms`.
pub(crate) const MIN_SESSION: Duration = Duration::from_secs(6);
pub(crate) const MAX_SESSION: Duration = Duration::from_secs(1_800);

mod consumer_group;
mod group;
pub(crate) use consumer_group::{Heartbeat, ModernGroup, TopicsById};
pub(crate) use group::{Departure, Group, Member};

fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// A timeout as the group metadata record holds it: milliseconds in an `int32`.
fn millis(d: Duration) -> i32 {
    i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
}

/// The rebalance that leaves a group of real clients (of `protocol_type`) Empty at `generation`.
pub(crate) fn empty_group(group: &str, generation: i32, protocol_type: &str, protocol: &str) -> Command {
    Command::Rebalance(Rebalance {
        group: group.to_string(),
        generation,
        protocol_type: if protocol_type.is_empty() {
            "consumer".into()
        } else {
            protocol_type.to_string()
        },
        protocol: if protocol.is_empty() {
            "range".into()
        } else {
            protocol.to_string()
        },
        members: Vec::new(),
    })
}

/// The partitions in a consumer protocol assignment, grouped by topic as a `rebalance` line
/// writes them (the command is the line it becomes).
pub(crate) fn assigned_partitions(bytes: &Bytes) -> Vec<TopicPartition> {
    let mut partitions: Vec<TopicPartition> = consumer_protocol::assigned_partitions(bytes)
        .into_iter()
        .map(|(t, p)| TopicPartition::new(t, p))
        .collect();
    partitions.sort_by(|a, b| a.topic.cmp(&b.topic));
    partitions
}

/// The `rebalance` line of `g` as it is now: its generation, protocol and every member with its
/// assignment — what Kafka's coordinator writes to `__consumer_offsets` as the group's metadata.
fn metadata_record(group: &str, g: &Group) -> Command {
    let consumer = g.protocol_type == "consumer";
    let members: Vec<ExternalMember> = g
        .ordered()
        .map(|(id, m)| ExternalMember {
            id: id.clone(),
            client_id: String::from(&m.client_id),
            host: m.host.clone(),
            partitions: if consumer {
                assigned_partitions(&m.assignment)
            } else {
                Vec::new()
            },
            instance_id: m.instance_id.clone(),
            topics: if consumer {
                consumer_protocol::subscribed_topics(&m.metadata(&g.protocol))
            } else {
                Vec::new()
            },
            session_timeout_ms: Some(millis(m.session_timeout)),
            rebalance_timeout_ms: Some(millis(m.rebalance_timeout)),
        })
        .collect();
    Command::Rebalance(Rebalance {
        group: group.to_string(),
        protocol_type: g.protocol_type.clone(),
        generation: g.generation,
        protocol: g.protocol.clone(),
        members,
    })
}

/// The groups of real clients, and the lock that keeps what they settle in order.
#[derive(Debug, Default)]
pub(crate) struct Coordinator {
    pub(crate) groups: Mutex<HashMap<String, Group>>,
    /// Groups that speak Kafka 4's consumer protocol (KIP-848): `ConsumerGroupHeartbeat`.
    pub(crate) modern: Mutex<HashMap<String, ModernGroup>>,
    next_member: AtomicU64,
    /// Held from "the coordinator decided" to "the lab applied what it decided".
    pub(crate) settle: Mutex<()>,
}

/// What a request settled: the answer, and commands for the lab.
pub(crate) struct Settled<T> {
    pub(crate) answer: T,
    pub(crate) commands: Vec<Command>,
}

/// A JoinGroup either answered at once or waiting for the rebalance to complete.
pub(crate) enum Join {
    Now(JoinGroupResponse),
    Wait(oneshot::Receiver<JoinGroupResponse>, Duration),
}

/// A SyncGroup answered at once (with commands for the lab) or waiting for the leader's.
pub(crate) enum Sync {
    Now(Settled<SyncGroupResponse>),
    Wait(oneshot::Receiver<SyncGroupResponse>, Duration),
}

impl Coordinator {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Group>> {
        lock(&self.groups)
    }

    pub(crate) fn settle_lock(&self) -> std::sync::MutexGuard<'_, ()> {
        lock(&self.settle)
    }

    /// Whether real clients are in `group` (so the lab's own view of it is not the whole story).
    pub(crate) fn has_members(&self, group: &str) -> bool {
        // Two statements: one lock at a time.
        let modern = lock(&self.modern)
            .get(group)
            .is_some_and(ModernGroup::has_members);
        modern || self.lock().get(group).is_some_and(|g| !g.members.is_empty())
    }

    /// DeleteGroups: forgets `group` if no real client is in it; `false` when it has members.
    /// Clients only waiting to join with the id they were handed (KIP-394) do not count, as in
    /// Kafka: their join finds a new group.
    pub(crate) fn forget_if_empty(&self, group: &str) -> bool {
        let mut modern = lock(&self.modern);
        let mut groups = self.lock();
        if modern.get(group).is_some_and(ModernGroup::has_members) {
            return false;
        }
        match groups.get(group) {
            Some(g) if !g.members.is_empty() => false,
            _ => {
                groups.remove(group);
                modern.remove(group);
                true
            }
        }
    }

    /// The topics the real clients in `group` subscribe to (their subscriptions for the
    /// group's protocol, or for their first one while it is still being chosen).
    pub(crate) fn subscribed_topics(&self, group: &str) -> std::collections::BTreeSet<String> {
        if let Some(g) = lock(&self.modern).get(group) {
            return g
                .clients
                .values()
                .flat_map(|c| c.topics.iter().cloned())
                .collect();
        }
        let groups = self.lock();
        let Some(g) = groups.get(group) else {
            return Default::default();
        };
        g.members
            .values()
            .flat_map(|m| {
                let bytes = if g.protocol.is_empty() {
                    m.protocols.first().map(|(_, b)| b.clone()).unwrap_or_default()
                } else {
                    m.metadata(&g.protocol)
                };
                consumer_protocol::subscribed_topics(&bytes)
            })
            .collect()
    }

    /// JoinGroup. `client_id` and `host` describe the connection; `lab_generation` is where the
    /// lab left the group (a coordinator that restarts goes on from its generation, as Kafka's
    /// reloads it from `__consumer_offsets`).
    pub(crate) fn join(
        &self,
        r: &JoinGroupRequest,
        version: i16,
        client_id: &str,
        host: &str,
        lab_generation: i32,
    ) -> Join {
        let now = Instant::now();
        let group = r.group_id.0.to_string();
        let refuse = |code: i16, member: &str| {
            Join::Now(
                JoinGroupResponse::default()
                    .with_error_code(code)
                    .with_generation_id(-1)
                    .with_member_id(str_bytes(member)),
            )
        };
        let session = Duration::from_millis(u64::try_from(r.session_timeout_ms).unwrap_or(0));
        if !(MIN_SESSION..=MAX_SESSION).contains(&session) {
            return refuse(INVALID_SESSION_TIMEOUT, "");
        }
        // Before v1 the rebalance timeout is the session timeout.
        let rebalance = if version >= 1 {
            Duration::from_millis(u64::try_from(r.rebalance_timeout_ms).unwrap_or(0))
                .max(Duration::from_secs(1))
        } else {
            session
        };
        // `modern`, then `groups`, both held while the group is looked at and joined: a
        // ConsumerGroupHeartbeat for the same new group cannot create it meanwhile.
        let mut modern = lock(&self.modern);
        if modern.get(&group).is_some_and(ModernGroup::has_members) {
            // Kafka would migrate the group (group.consumer.migration.policy); the lab does not.
            return refuse(INCONSISTENT_GROUP_PROTOCOL, "");
        }
        // An empty consumer-protocol group becomes a classic one.
        modern.remove(&group);
        let mut groups = self.lock();
        let g = groups.entry(group.clone()).or_insert_with(|| {
            let mut g = Group::new(r.protocol_type.as_str());
            g.generation = lab_generation;
            g
        });
        if r.protocols.is_empty() || (!g.members.is_empty() && g.protocol_type != r.protocol_type.as_str()) {
            return refuse(INCONSISTENT_GROUP_PROTOCOL, "");
        }
        if g.members.is_empty() {
            g.protocol_type = r.protocol_type.to_string();
        }
        if let Some(joined) = g.replace_static_member(r, version, client_id, host, now, || {
            self.next_member.fetch_add(1, Ordering::Relaxed) + 1
        }) {
            return Join::Now(joined);
        }
        let mut id = r.member_id.to_string();
        if id.is_empty() {
            let n = self.next_member.fetch_add(1, Ordering::Relaxed) + 1;
            match r.group_instance_id.as_ref() {
                // A new static member (KIP-345) is known by its instance id: it is given its
                // member id with this join, without the MEMBER_ID_REQUIRED round (Kafka's
                // `classicGroupJoinNewStaticMember`).
                Some(instance) => {
                    id = format!("{instance}-{n}");
                    g.fence_static_member(instance);
                }
                None => {
                    id = format!("{}-{n}", String::from(client_id));
                    if version >= 4 {
                        // KIP-394: the client learns its id first and joins again with it.
                        g.pending.insert(id.clone(), now + session);
                        return refuse(MEMBER_ID_REQUIRED, &id);
                    }
                }
            }
        } else if !g.members.contains_key(&id) && !g.pending.contains_key(&id) {
            return refuse(UNKNOWN_MEMBER_ID, &id);
        }
        g.pending.remove(&id);
        let protocols: Vec<(String, Bytes)> = r
            .protocols
            .iter()
            .map(|p| (p.name.to_string(), p.metadata.clone()))
            .collect();
        match g.members.get_mut(&id) {
            Some(m) => {
                m.protocols = protocols;
                m.session_timeout = session;
                m.rebalance_timeout = rebalance;
                m.last_seen = now;
            }
            None => {
                g.members.insert(
                    id.clone(),
                    Member {
                        client_id: client_id.to_string(),
                        host: host.to_string(),
                        instance_id: r.group_instance_id.as_ref().map(ToString::to_string),
                        session_timeout: session,
                        rebalance_timeout: rebalance,
                        protocols,
                        assignment: Bytes::new(),
                        last_seen: now,
                        joined: false,
                    },
                );
                g.order.push(id.clone());
            }
        }
        if g.state != GroupState::PreparingRebalance {
            g.prepare_rebalance(now);
        }
        if let Some(m) = g.members.get_mut(&id) {
            m.joined = true;
        }
        let (tx, rx) = oneshot::channel();
        g.join_waiters.push((id, tx));
        if g.members.values().all(|m| m.joined) {
            let _ = g.complete_join(&group);
        }
        Join::Wait(rx, rebalance + Duration::from_secs(5))
    }

    /// SyncGroup: the leader hands out the assignment, the others wait for it.
    pub(crate) fn sync(&self, r: &SyncGroupRequest) -> Sync {
        let group = r.group_id.0.to_string();
        let member = r.member_id.to_string();
        let now_answer = |code: i16| {
            Sync::Now(Settled {
                answer: SyncGroupResponse::default().with_error_code(code),
                commands: Vec::new(),
            })
        };
        let mut groups = self.lock();
        let Some(g) = groups.get_mut(&group) else {
            return now_answer(UNKNOWN_MEMBER_ID);
        };
        let Some(m) = g.members.get_mut(&member) else {
            return now_answer(UNKNOWN_MEMBER_ID);
        };
        m.last_seen = Instant::now();
        if r.generation_id != g.generation {
            return now_answer(ILLEGAL_GENERATION);
        }
        let answer = |g: &Group, member: &str| {
            SyncGroupResponse::default()
                .with_protocol_type(Some(str_bytes(&g.protocol_type)))
                .with_protocol_name(Some(str_bytes(&g.protocol)))
                .with_assignment(
                    g.members
                        .get(member)
                        .map(|m| m.assignment.clone())
                        .unwrap_or_default(),
                )
        };
        match g.state {
            GroupState::PreparingRebalance | GroupState::Empty => now_answer(REBALANCE_IN_PROGRESS),
            GroupState::Stable => Sync::Now(Settled {
                answer: answer(g, &member),
                // A static member's new process in its place: the lab learns its member id
                // (the group's metadata record changes, its generation does not).
                commands: if g.replaced.remove(&member) {
                    vec![metadata_record(&group, g)]
                } else {
                    Vec::new()
                },
            }),
            GroupState::CompletingRebalance if member == g.leader => {
                for a in &r.assignments {
                    if let Some(m) = g.members.get_mut(a.member_id.as_str()) {
                        m.assignment = a.assignment.clone();
                    }
                }
                g.enter(GroupState::Stable);
                for (id, tx) in std::mem::take(&mut g.sync_waiters) {
                    let _ = tx.send(answer(g, &id));
                }
                let rebalance = metadata_record(&group, g);
                Sync::Now(Settled {
                    answer: answer(g, &member),
                    commands: vec![rebalance],
                })
            }
            GroupState::CompletingRebalance => {
                let (tx, rx) = oneshot::channel();
                let timeout = g
                    .members
                    .get(&member)
                    .map_or(Duration::from_secs(60), |m| m.rebalance_timeout);
                g.sync_waiters.push((member, tx));
                Sync::Wait(rx, timeout + Duration::from_secs(5))
            }
        }
    }

    /// Heartbeat: keeps a member's session alive and tells it when to rejoin.
    pub(crate) fn heartbeat(&self, r: &HeartbeatRequest) -> i16 {
        let mut groups = self.lock();
        let Some(g) = groups.get_mut(r.group_id.as_str()) else {
            return UNKNOWN_MEMBER_ID;
        };
        let Some(m) = g.members.get_mut(r.member_id.as_str()) else {
            return UNKNOWN_MEMBER_ID;
        };
        m.last_seen = Instant::now();
        if r.generation_id != g.generation {
            return ILLEGAL_GENERATION;
        }
        match g.state {
            // After its JoinGroup answer a member may heartbeat while the leader computes the
            // assignment: Kafka treats that as a normal heartbeat.
            GroupState::Stable | GroupState::CompletingRebalance => 0,
            GroupState::PreparingRebalance | GroupState::Empty => REBALANCE_IN_PROGRESS,
        }
    }

    /// LeaveGroup (one member before v3, a list since): per member, 0 or UNKNOWN_MEMBER_ID.
    pub(crate) fn leave(&self, r: &LeaveGroupRequest) -> Settled<Vec<(String, i16)>> {
        let group = r.group_id.0.to_string();
        let ids: Vec<String> = if r.members.is_empty() {
            vec![r.member_id.to_string()]
        } else {
            r.members.iter().map(|m| m.member_id.to_string()).collect()
        };
        let mut groups = self.lock();
        let mut commands = Vec::new();
        let Some(g) = groups.get_mut(&group) else {
            return Settled {
                answer: ids.into_iter().map(|id| (id, UNKNOWN_MEMBER_ID)).collect(),
                commands,
            };
        };
        let mut answer = Vec::new();
        let mut left = false;
        for id in ids {
            if g.members.contains_key(&id) {
                g.depart(&group, &id, Departure::LeaveGroup);
                left = true;
                answer.push((id, 0));
            } else {
                answer.push((id, UNKNOWN_MEMBER_ID));
            }
        }
        if left {
            commands.extend(g.after_departure(&group, Instant::now()));
        }
        Settled { answer, commands }
    }

    /// A member's commit: `Ok(())` when it may be written, or Kafka's error code.
    pub(crate) fn check_commit(&self, group: &str, member: &str, generation: i32) -> Result<(), i16> {
        if let Some(g) = lock(&self.modern).get(group) {
            // Fenced by the member's own epoch (KIP-848).
            // An older epoch is checked partition by partition ([`Coordinator::fenced`]).
            return match g.model.members.get(member) {
                None => Err(UNKNOWN_MEMBER_ID),
                Some(m) if generation > m.member_epoch || (m.classic && generation != m.member_epoch) => {
                    Err(STALE_MEMBER_EPOCH)
                }
                Some(_) => Ok(()),
            };
        }
        let groups = self.lock();
        let Some(g) = groups.get(group) else {
            return Err(UNKNOWN_MEMBER_ID);
        };
        check_commit(g.state, g.members.contains_key(member), generation, g.generation).map_err(|f| match f {
            Fenced::UnknownMember => UNKNOWN_MEMBER_ID,
            Fenced::IllegalGeneration { .. } => ILLEGAL_GENERATION,
            Fenced::RebalanceInProgress => REBALANCE_IN_PROGRESS,
        })
    }

    /// An OffsetFetch from a consumer-protocol group's member (v9+, KIP-848): refused when the
    /// member is unknown (UNKNOWN_MEMBER_ID) or asks at any epoch but its own
    /// (STALE_MEMBER_EPOCH; ILLEGAL_GENERATION for a classic member of the group). A fetch with
    /// no member id and a negative epoch (an admin's, or a client outside group management) is
    /// answered; so is any fetch of a classic group, as Kafka does.
    pub(crate) fn check_fetch(&self, group: &str, member: Option<&str>, epoch: i32) -> Result<(), i16> {
        if member.is_none() && epoch < 0 {
            return Ok(());
        }
        let modern = lock(&self.modern);
        let Some(g) = modern.get(group) else {
            return Ok(());
        };
        match g.model.members.get(member.unwrap_or_default()) {
            None => Err(UNKNOWN_MEMBER_ID),
            Some(m) if m.member_epoch != epoch && m.classic => Err(ILLEGAL_GENERATION),
            Some(m) if m.member_epoch != epoch => Err(STALE_MEMBER_EPOCH),
            Some(_) => Ok(()),
        }
    }

    /// The partitions of a consumer-protocol member's commit its epoch does not cover: it was
    /// given them after `epoch` (or does not own them) — STALE_MEMBER_EPOCH for those, the rest
    /// stored (Kafka 4.4, KIP-1251). Empty for a classic group.
    pub(crate) fn fenced(
        &self,
        group: &str,
        member: &str,
        epoch: i32,
        partitions: &[TopicPartition],
    ) -> Vec<TopicPartition> {
        let modern = lock(&self.modern);
        let Some(g) = modern.get(group) else {
            return Vec::new();
        };
        partitions
            .iter()
            .filter(|tp| g.model.check_commit_partition(member, epoch, tp).is_err())
            .cloned()
            .collect()
    }

    /// What a member's accepted commit becomes.
    pub(crate) fn commit(
        group: &str,
        member: &str,
        generation: i32,
        offsets: Vec<(TopicPartition, i64)>,
        metadata: std::collections::BTreeMap<TopicPartition, String>,
        leader_epochs: std::collections::BTreeMap<TopicPartition, i32>,
    ) -> Command {
        Command::CommitOffsets(CommitOffsets {
            group: group.to_string(),
            member: member.to_string(),
            generation,
            offsets,
            metadata,
            leader_epochs,
        })
    }

    /// What this coordinator settled did not reach the lab (its disk refused the line, or —
    /// a bug — the engine did): the two must not go on disagreeing, or every commit of the
    /// group's members would be refused by the lab for a generation it never saw. A group with
    /// members rebalances again (heartbeats answer REBALANCE_IN_PROGRESS, the members rejoin,
    /// and the next generation reaches the lab whole); an empty group's line is offered again
    /// by [`Coordinator::tick`] until the lab takes it.
    pub(crate) fn unsettled(&self, commands: &[Command], now: Instant) {
        let mut modern = lock(&self.modern);
        let mut groups = self.lock();
        for c in commands {
            if let Command::ConsumerGroupState(state) = c {
                if let Some(g) = modern.get_mut(&state.group) {
                    g.unsent();
                }
                continue;
            }
            let Command::Rebalance(r) = c else {
                continue;
            };
            let g = groups.entry(r.group.clone()).or_insert_with(|| {
                // A group the lab knows from before this coordinator started.
                let mut g = Group::new("consumer");
                g.generation = r.generation;
                g.protocol = r.protocol.clone();
                g
            });
            if g.members.is_empty() {
                g.unsettled = true;
            } else if g.state != GroupState::PreparingRebalance {
                g.prepare_rebalance(now);
            }
        }
    }

    /// Expires sessions and rebalance timeouts: what the lab learns of the groups that emptied.
    pub(crate) fn tick(&self, now: Instant, topics: &TopicsById) -> Vec<Command> {
        let mut commands = self.tick_modern(now, topics);
        let mut groups = self.lock();
        for (name, g) in groups.iter_mut() {
            if std::mem::take(&mut g.unsettled) && g.state == GroupState::Empty {
                commands.push(empty_group(name, g.generation, &g.protocol_type, &g.protocol));
            }
            g.pending.retain(|_, lapses| now < *lapses);
            // A member waiting inside a JoinGroup is alive for the rebalance's sake.
            let expired: Vec<String> = g
                .members
                .iter()
                .filter(|(_, m)| !(g.state == GroupState::PreparingRebalance && m.joined))
                .filter(|(_, m)| now.duration_since(m.last_seen) > m.session_timeout)
                .map(|(id, _)| id.clone())
                .collect();
            if !expired.is_empty() {
                for id in &expired {
                    g.depart(name, id, Departure::SessionExpired);
                }
                commands.extend(g.after_departure(name, now));
            }
            if g.state == GroupState::PreparingRebalance && g.deadline.is_some_and(|d| now >= d) {
                commands.extend(g.complete_join(name));
            }
        }
        commands
    }
}

impl Coordinator {
    /// ConsumerGroupHeartbeat. `lab_epoch` is the group's epoch in the lab (a group from
    /// before this coordinator started goes on from it); `lab_own` whether the lab's own
    /// consumers are in the group.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn consumer_heartbeat(
        &self,
        r: &offsetlab_wire::kafka_protocol::messages::ConsumerGroupHeartbeatRequest,
        version: i16,
        client_id: &str,
        host: &str,
        topics: &TopicsById,
        lab_epoch: Option<i32>,
        lab_own: bool,
    ) -> Heartbeat {
        let group = r.group_id.0.to_string();
        let not_consumer = || Heartbeat {
            answer: offsetlab_wire::kafka_protocol::messages::ConsumerGroupHeartbeatResponse::default()
                .with_error_code(GROUP_ID_NOT_FOUND)
                .with_error_message(Some(str_bytes(&format!(
                    "Group {group} is not a consumer group."
                )))),
            commands: Vec::new(),
        };
        // Lock order, here as everywhere in this coordinator: `modern`, then `groups` — so a
        // JoinGroup and a ConsumerGroupHeartbeat for one new group never both create it.
        let mut modern = lock(&self.modern);
        let mut commands = Vec::new();
        {
            let mut groups = self.lock();
            if lab_own || groups.get(&group).is_some_and(|g| !g.members.is_empty()) {
                // The lab's own consumers, or a classic group of real clients with members.
                return not_consumer();
            }
            if !modern.contains_key(&group) {
                if r.member_epoch != 0 {
                    // No such group here (a lab restarted since): the member joins again.
                    return Heartbeat {
                        answer:
                            offsetlab_wire::kafka_protocol::messages::ConsumerGroupHeartbeatResponse::default(
                            )
                            .with_error_code(UNKNOWN_MEMBER_ID)
                            .with_error_message(Some(str_bytes(&format!(
                                "group {group} has no member {}",
                                r.member_id.as_str()
                            )))),
                        commands: Vec::new(),
                    };
                }
                // An empty classic group becomes a consumer-protocol one — after the lab has
                // taken the line that emptied it, if it had not yet.
                if let Some(classic) = groups.remove(&group) {
                    if classic.unsettled {
                        commands.push(empty_group(
                            &group,
                            classic.generation,
                            &classic.protocol_type,
                            &classic.protocol,
                        ));
                    }
                }
            }
        }
        let g = modern
            .entry(group.clone())
            .or_insert_with(|| consumer_group::created(lab_epoch));
        if !g.has_members() {
            // An empty group goes on from where the lab left it (its own consumers may have
            // moved it on since): an epoch never goes back.
            g.raise_epoch(lab_epoch);
        }
        let next = &self.next_member;
        let mut settled = g.heartbeat(
            &group,
            r,
            version,
            client_id,
            host,
            topics,
            || {
                // A v0 joiner is given its id (from v1 the client makes one).
                let n = next.fetch_add(1, Ordering::Relaxed) + 1;
                format!("{client_id}-{n:012}")
            },
            Instant::now(),
        );
        commands.append(&mut settled.commands);
        settled.commands = commands;
        settled
    }

    /// Expired sessions and rebalance timeouts of consumer-protocol members, and states the lab
    /// did not take: the states to send.
    fn tick_modern(&self, now: Instant, topics: &TopicsById) -> Vec<Command> {
        let mut modern = lock(&self.modern);
        let mut commands = Vec::new();
        for (name, g) in modern.iter_mut() {
            let expired = g.expired(now);
            for id in &expired {
                tracing::info!(group = %name, member = %id, "consumer-protocol member removed: its session or rebalance timeout expired");
                g.remove(id, topics, now);
            }
            g.maybe_assign(now);
            commands.extend(g.state_command(name));
        }
        commands
    }
}

#[cfg(test)]
mod tests;

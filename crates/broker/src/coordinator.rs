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
//! Not modelled: static membership (`group.instance.id` is accepted and shown, with no special
//! rejoin), the consumer protocol of KIP-848, and Kafka's `group.initial.rebalance.delay.ms` (the
//! first rebalance of an empty group completes as soon as its members have joined — Kafka's own
//! advice for development).

use bytes::Bytes;
use offsetlab_engine::group::{check_commit, ExternalMember, Fenced, GroupState};
use offsetlab_engine::record::TopicPartition;
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
const MIN_SESSION: Duration = Duration::from_secs(6);
const MAX_SESSION: Duration = Duration::from_secs(1_800);

#[derive(Debug)]
pub(crate) struct Member {
    pub(crate) client_id: String,
    pub(crate) host: String,
    pub(crate) instance_id: Option<String>,
    session_timeout: Duration,
    rebalance_timeout: Duration,
    /// (assignor name, the member's subscription bytes for it), in the member's preference.
    protocols: Vec<(String, Bytes)>,
    /// What the leader assigned it in this generation (consumer protocol bytes).
    pub(crate) assignment: Bytes,
    last_seen: Instant,
    /// Rejoined in the rebalance in progress.
    joined: bool,
}

impl Member {
    /// Its subscription bytes for `protocol`.
    pub(crate) fn metadata(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|(n, _)| n == protocol)
            .map(|(_, m)| m.clone())
            .unwrap_or_default()
    }
}

#[derive(Debug)]
pub(crate) struct Group {
    /// Moved only through [`Group::enter`], which keeps to the protocol's transitions.
    pub(crate) state: GroupState,
    pub(crate) generation: i32,
    pub(crate) protocol_type: String,
    pub(crate) protocol: String,
    leader: String,
    /// Members in join order (the first is the leader of a fresh group).
    pub(crate) members: BTreeMap<String, Member>,
    order: Vec<String>,
    /// Ids handed out with MEMBER_ID_REQUIRED, not joined yet, and when they lapse (a session
    /// timeout later, as Kafka expires pending members).
    pending: HashMap<String, Instant>,
    deadline: Option<Instant>,
    join_waiters: Vec<(String, oneshot::Sender<JoinGroupResponse>)>,
    sync_waiters: Vec<(String, oneshot::Sender<SyncGroupResponse>)>,
    /// Empty here, but the lab did not take the line that says so (its disk refused it): the
    /// ticker offers that line again.
    unsettled: bool,
}

impl Group {
    fn new(protocol_type: &str) -> Self {
        Self {
            state: GroupState::Empty,
            generation: 0,
            protocol_type: protocol_type.to_string(),
            protocol: String::new(),
            leader: String::new(),
            members: BTreeMap::new(),
            order: Vec::new(),
            pending: HashMap::new(),
            deadline: None,
            join_waiters: Vec::new(),
            sync_waiters: Vec::new(),
            unsettled: false,
        }
    }

    /// Members in join order.
    pub(crate) fn ordered(&self) -> impl Iterator<Item = (&String, &Member)> {
        self.order
            .iter()
            .filter_map(|id| self.members.get(id).map(|m| (id, m)))
    }

    /// Moves the group to `next`, as the protocol allows ([`GroupState::can_follow`]).
    fn enter(&mut self, next: GroupState) {
        debug_assert!(
            next.can_follow(self.state),
            "group state {} cannot follow {}",
            next,
            self.state
        );
        self.state = next;
    }

    /// A membership change: every member must rejoin. Members waiting for their assignment
    /// learn it from REBALANCE_IN_PROGRESS.
    fn prepare_rebalance(&mut self, now: Instant) {
        self.enter(GroupState::PreparingRebalance);
        for m in self.members.values_mut() {
            m.joined = false;
        }
        let timeout = self
            .members
            .values()
            .map(|m| m.rebalance_timeout)
            .max()
            .unwrap_or_default();
        self.deadline = Some(now + timeout);
        for (_, tx) in self.sync_waiters.drain(..) {
            let _ = tx.send(SyncGroupResponse::default().with_error_code(REBALANCE_IN_PROGRESS));
        }
    }

    fn remove(&mut self, id: &str) {
        self.pending.remove(id);
        self.members.remove(id);
        self.order.retain(|m| m != id);
        self.join_waiters.retain(|(m, _)| m != id);
        self.sync_waiters.retain(|(m, _)| m != id);
    }

    /// Closes the join phase: members that did not rejoin are dropped, a new generation starts
    /// with a protocol every member supports, and every waiting JoinGroup is answered (the
    /// leader with the members' subscriptions). `Some(line)` when the group ends up Empty.
    fn complete_join(&mut self, group: &str) -> Option<Command> {
        let gone: Vec<String> = self
            .members
            .iter()
            .filter(|(_, m)| !m.joined)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &gone {
            self.remove(id);
        }
        self.deadline = None;
        self.generation += 1;
        if self.members.is_empty() {
            self.enter(GroupState::Empty);
            return Some(empty_group(group, self.generation, &self.protocol));
        }
        if !self.members.contains_key(&self.leader) {
            self.leader = self.order.first().cloned().unwrap_or_default();
        }
        let leader_prefs: Vec<String> = self
            .members
            .get(&self.leader)
            .map(|m| m.protocols.iter().map(|(n, _)| n.clone()).collect())
            .unwrap_or_default();
        self.protocol = leader_prefs
            .iter()
            .find(|p| {
                self.members
                    .values()
                    .all(|m| m.protocols.iter().any(|(n, _)| n == *p))
            })
            .or(leader_prefs.first())
            .cloned()
            .unwrap_or_default();
        self.enter(GroupState::CompletingRebalance);
        for m in self.members.values_mut() {
            m.assignment = Bytes::new();
        }
        let everyone: Vec<JoinGroupResponseMember> = self
            .ordered()
            .map(|(id, m)| {
                JoinGroupResponseMember::default()
                    .with_member_id(str_bytes(id))
                    .with_group_instance_id(m.instance_id.as_deref().map(str_bytes))
                    .with_metadata(m.metadata(&self.protocol))
            })
            .collect();
        for (id, tx) in self.join_waiters.drain(..) {
            let members = if id == self.leader {
                everyone.clone()
            } else {
                Vec::new()
            };
            let _ = tx.send(
                JoinGroupResponse::default()
                    .with_generation_id(self.generation)
                    .with_protocol_type(Some(str_bytes(&self.protocol_type)))
                    .with_protocol_name(Some(str_bytes(&self.protocol)))
                    .with_leader(str_bytes(&self.leader))
                    .with_member_id(str_bytes(&id))
                    .with_members(members),
            );
        }
        None
    }

    /// After a member left or timed out: rebalance the rest, or become Empty (a new generation
    /// with nobody in it, as Kafka's coordinator records it).
    fn after_departure(&mut self, group: &str, now: Instant) -> Option<Command> {
        if self.members.is_empty() {
            // As Kafka's: the departure starts a rebalance, which completes at once with nobody.
            if self.state != GroupState::PreparingRebalance {
                self.enter(GroupState::PreparingRebalance);
            }
            self.deadline = None;
            self.generation += 1;
            self.enter(GroupState::Empty);
            return Some(empty_group(group, self.generation, &self.protocol));
        }
        match self.state {
            GroupState::PreparingRebalance => {
                if self.members.values().all(|m| m.joined) {
                    return self.complete_join(group);
                }
                None
            }
            _ => {
                self.prepare_rebalance(now);
                None
            }
        }
    }
}

fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// The rebalance that leaves a group of real clients Empty at `generation`.
pub(crate) fn empty_group(group: &str, generation: i32, protocol: &str) -> Command {
    Command::Rebalance(Rebalance {
        group: group.to_string(),
        generation,
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

/// The groups of real clients, and the lock that keeps what they settle in order.
#[derive(Debug, Default)]
pub(crate) struct Coordinator {
    pub(crate) groups: Mutex<HashMap<String, Group>>,
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
        self.groups
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn settle_lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.settle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether real clients are in `group` (so the lab's own view of it is not the whole story).
    pub(crate) fn has_members(&self, group: &str) -> bool {
        self.lock().get(group).is_some_and(|g| !g.members.is_empty())
    }

    /// DeleteGroups: forgets `group` if no real client is in it; `false` when it has members.
    /// Clients only waiting to join with the id they were handed (KIP-394) do not count, as in
    /// Kafka: their join finds a new group.
    pub(crate) fn forget_if_empty(&self, group: &str) -> bool {
        let mut groups = self.lock();
        match groups.get(group) {
            Some(g) if !g.members.is_empty() => false,
            _ => {
                groups.remove(group);
                true
            }
        }
    }

    /// The topics the real clients in `group` subscribe to (their subscriptions for the
    /// group's protocol, or for their first one while it is still being chosen).
    pub(crate) fn subscribed_topics(&self, group: &str) -> std::collections::BTreeSet<String> {
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
        let mut id = r.member_id.to_string();
        if id.is_empty() {
            id = format!(
                "{}-{}",
                String::from(client_id),
                self.next_member.fetch_add(1, Ordering::Relaxed) + 1
            );
            if version >= 4 {
                // KIP-394: the client learns its id first and joins again with it.
                g.pending.insert(id.clone(), now + session);
                return refuse(MEMBER_ID_REQUIRED, &id);
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
                commands: Vec::new(),
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
                    })
                    .collect();
                let rebalance = Command::Rebalance(Rebalance {
                    group: group.clone(),
                    generation: g.generation,
                    protocol: g.protocol.clone(),
                    members,
                });
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
                g.remove(&id);
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

    /// What a member's accepted commit becomes.
    pub(crate) fn commit(
        group: &str,
        member: &str,
        generation: i32,
        offsets: Vec<(TopicPartition, i64)>,
    ) -> Command {
        Command::CommitOffsets(CommitOffsets {
            group: group.to_string(),
            member: member.to_string(),
            generation,
            offsets,
        })
    }

    /// What this coordinator settled did not reach the lab (its disk refused the line, or —
    /// a bug — the engine did): the two must not go on disagreeing, or every commit of the
    /// group's members would be refused by the lab for a generation it never saw. A group with
    /// members rebalances again (heartbeats answer REBALANCE_IN_PROGRESS, the members rejoin,
    /// and the next generation reaches the lab whole); an empty group's line is offered again
    /// by [`Coordinator::tick`] until the lab takes it.
    pub(crate) fn unsettled(&self, commands: &[Command], now: Instant) {
        let mut groups = self.lock();
        for c in commands {
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
    pub(crate) fn tick(&self, now: Instant) -> Vec<Command> {
        let mut groups = self.lock();
        let mut commands = Vec::new();
        for (name, g) in groups.iter_mut() {
            if std::mem::take(&mut g.unsettled) && g.state == GroupState::Empty {
                commands.push(empty_group(name, g.generation, &g.protocol));
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
                    g.remove(id);
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

#[cfg(test)]
mod tests {
    use super::*;
    use offsetlab_wire::kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
    use offsetlab_wire::kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
    use offsetlab_wire::kafka_protocol::messages::GroupId;

    fn join_request(member: &str) -> JoinGroupRequest {
        JoinGroupRequest::default()
            .with_group_id(GroupId(str_bytes("g")))
            .with_session_timeout_ms(10_000)
            .with_rebalance_timeout_ms(30_000)
            .with_member_id(str_bytes(member))
            .with_protocol_type(str_bytes("consumer"))
            .with_protocols(vec![JoinGroupRequestProtocol::default()
                .with_name(str_bytes("range"))
                .with_metadata(Bytes::from_static(b"sub"))])
    }

    fn now_answer(j: Join) -> JoinGroupResponse {
        match j {
            Join::Now(r) => r,
            Join::Wait(mut rx, _) => rx.try_recv().expect("answered"),
        }
    }

    /// KIP-394's two-step join, a generation, the leader's assignment, a member leaving.
    #[test]
    fn a_member_joins_syncs_heartbeats_and_leaves() {
        let c = Coordinator::default();
        let first = now_answer(c.join(&join_request(""), 5, "rdkafka", "/127.0.0.1", 0));
        assert_eq!(first.error_code, MEMBER_ID_REQUIRED);
        let id = first.member_id.to_string();
        assert_eq!(id, "rdkafka-1");
        let joined = now_answer(c.join(&join_request(&id), 5, "rdkafka", "/127.0.0.1", 0));
        assert_eq!(
            (joined.error_code, joined.generation_id, joined.leader.as_str()),
            (0, 1, "rdkafka-1")
        );
        assert_eq!(joined.members.len(), 1, "the leader learns the subscriptions");
        let heartbeat = |generation| {
            c.heartbeat(
                &HeartbeatRequest::default()
                    .with_group_id(GroupId(str_bytes("g")))
                    .with_member_id(str_bytes(&id))
                    .with_generation_id(generation),
            )
        };
        assert_eq!(
            heartbeat(1),
            0,
            "waiting for the leader's assignment is no reason to rejoin"
        );
        assert_eq!(c.check_commit("g", &id, 1), Err(REBALANCE_IN_PROGRESS));
        let assignment = consumer_protocol::assignment([("orders", vec![0, 1])]);
        let sync = SyncGroupRequest::default()
            .with_group_id(GroupId(str_bytes("g")))
            .with_generation_id(1)
            .with_member_id(str_bytes(&id))
            .with_assignments(vec![SyncGroupRequestAssignment::default()
                .with_member_id(str_bytes(&id))
                .with_assignment(assignment)]);
        let Sync::Now(settled) = c.sync(&sync) else {
            panic!("the leader is answered at once")
        };
        assert_eq!(settled.answer.error_code, 0);
        assert_eq!(
            settled
                .commands
                .iter()
                .map(Command::to_string)
                .collect::<Vec<_>>(),
            vec![
                r#"rebalance g generation=1 protocol=range members=[{"id":"rdkafka-1","client":"rdkafka","host":"/127.0.0.1","partitions":{"orders":[0,1]}}]"#
            ]
        );
        assert_eq!(heartbeat(1), 0);
        assert_eq!(heartbeat(0), ILLEGAL_GENERATION);
        assert_eq!(c.check_commit("g", &id, 1), Ok(()));
        assert_eq!(c.check_commit("g", "ghost", 1), Err(UNKNOWN_MEMBER_ID));

        // A second member joins: a rebalance; the first learns it from its heartbeat.
        let second = now_answer(c.join(&join_request(""), 5, "kafka-python", "/127.0.0.1", 0));
        let Join::Wait(_, _) = c.join(
            &join_request(&second.member_id.to_string()),
            5,
            "kafka-python",
            "/127.0.0.1",
            0,
        ) else {
            panic!("waits for the first member to rejoin")
        };
        assert_eq!(heartbeat(1), REBALANCE_IN_PROGRESS);
        // The first member leaves instead: the second one's join completes, generation 2.
        let left = c.leave(
            &LeaveGroupRequest::default()
                .with_group_id(GroupId(str_bytes("g")))
                .with_member_id(str_bytes(&id)),
        );
        assert_eq!(left.answer, vec![(id.clone(), 0)]);
        let groups = c.lock();
        let g = groups.get("g").expect("group");
        assert_eq!(
            (g.generation, g.state, g.members.len()),
            (2, GroupState::CompletingRebalance, 1)
        );
    }

    #[test]
    fn a_silent_member_times_out_and_the_group_empties() {
        let c = Coordinator::default();
        let id = now_answer(c.join(&join_request(""), 5, "rdkafka", "/h", 0))
            .member_id
            .to_string();
        let _ = now_answer(c.join(&join_request(&id), 5, "rdkafka", "/h", 0));
        // The leader never syncs, never heartbeats: after its session, it is gone.
        let settled = c.tick(Instant::now() + Duration::from_secs(11));
        assert_eq!(
            settled.iter().map(Command::to_string).collect::<Vec<_>>(),
            vec!["rebalance g generation=2 protocol=range members=[]"]
        );
        assert!(!c.has_members("g"));
    }

    /// A line the lab did not take (a full disk): an empty group's is offered again until it is
    /// taken; a group with members rebalances, so its next generation reaches the lab whole.
    #[test]
    fn what_the_lab_did_not_take_is_settled_again() {
        let c = Coordinator::default();
        let id = now_answer(c.join(&join_request(""), 5, "rdkafka", "/h", 0))
            .member_id
            .to_string();
        let _ = now_answer(c.join(&join_request(&id), 5, "rdkafka", "/h", 0));
        let later = Instant::now() + Duration::from_secs(11);
        let emptied = c.tick(later);
        assert_eq!(emptied.len(), 1);
        c.unsettled(&emptied, later);
        let again = c.tick(later);
        assert_eq!(
            again.iter().map(Command::to_string).collect::<Vec<_>>(),
            vec!["rebalance g generation=2 protocol=range members=[]"],
            "offered again, as it was"
        );
        assert!(c.tick(later).is_empty(), "once taken, not again");

        // A group the lab knows from an earlier run: its line is kept until the lab takes it.
        let before = empty_group("old", 7, "range");
        c.unsettled(std::slice::from_ref(&before), later);
        assert_eq!(c.tick(later), vec![before]);

        // Members: the lab missed their generation, so they all join again.
        let id = now_answer(c.join(&join_request(""), 5, "rdkafka", "/h", 0))
            .member_id
            .to_string();
        let joined = now_answer(c.join(&join_request(&id), 5, "rdkafka", "/h", 0));
        assert_eq!(joined.generation_id, 3);
        let missed = Command::Rebalance(Rebalance {
            group: "g".into(),
            generation: 3,
            protocol: "range".into(),
            members: Vec::new(),
        });
        c.unsettled(&[missed], Instant::now());
        let heartbeat = c.heartbeat(
            &HeartbeatRequest::default()
                .with_group_id(GroupId(str_bytes("g")))
                .with_member_id(str_bytes(&id))
                .with_generation_id(3),
        );
        assert_eq!(heartbeat, REBALANCE_IN_PROGRESS);
        let rejoined = now_answer(c.join(&join_request(&id), 5, "rdkafka", "/h", 0));
        assert_eq!((rejoined.error_code, rejoined.generation_id), (0, 4));
    }
}

//! Kafka 4's consumer group protocol (KIP-848) for real clients: `ConsumerGroupHeartbeat`.
//!
//! No JoinGroup/SyncGroup barrier: each member heartbeats on its own (every
//! `group.consumer.heartbeat.interval.ms`) and says what it owns; a change of membership or of
//! a subscribed topic's partitions bumps the **group epoch** and the coordinator computes a new
//! target assignment itself (`uniform` or `range`); each member is then moved towards its target
//! on its own heartbeats — a partition that moves is first revoked by its owner and only then
//! handed to its new one. The reconciliation and the assignors are the engine's
//! ([`offsetlab_engine::group::ConsumerGroup`]), the ones the lab's own consumers run; this file
//! adds what a real client brings: wall-time sessions, rebalance timeouts, member epoch fencing
//! of heartbeats, static members, topic ids.
//!
//! What the lab learns is the group's *state*: whenever a heartbeat, a leave or an expiry
//! changed it, a `consumer-group` line (the group epoch, each member's epoch, owned, revoking and
//! target partitions), applied in the order the coordinator decided it (under the settle lock).
//! Commits are then fenced by member epoch, here and again by the engine.
//!
//! Not modelled: regular-expression subscriptions (`subscribed_topic_regex`, refused with
//! INVALID_REQUEST), rack-aware assignment, group configs set with IncrementalAlterConfigs, and a
//! classic member joining a consumer group or the reverse (Kafka's online migration: the lab
//! answers GROUP_ID_NOT_FOUND / INCONSISTENT_GROUP_PROTOCOL while the other kind has members).

use super::str_bytes;
use offsetlab_engine::group::{
    ConsumerGroup, ConsumerGroupMember, ExternalConsumerMember, ExternalMember, Member as SubscribedMember,
    ServerAssignor, CONSUMER_HEARTBEAT_INTERVAL_MS, CONSUMER_SESSION_TIMEOUT_MS,
};
use offsetlab_engine::record::TopicPartition;
use offsetlab_scenario::command::{Command, ConsumerGroupState};
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::consumer_group_heartbeat_response::{
    Assignment, TopicPartitions as AssignedTopic,
};
use offsetlab_wire::kafka_protocol::messages::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse,
};
use offsetlab_wire::Uuid;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// `group.consumer.session.timeout.ms`: the broker's, not the client's, under this protocol.
pub(crate) const SESSION_TIMEOUT: Duration = Duration::from_millis(CONSUMER_SESSION_TIMEOUT_MS as u64);
/// `group.consumer.heartbeat.interval.ms`.
const HEARTBEAT_INTERVAL_MS: i32 = CONSUMER_HEARTBEAT_INTERVAL_MS as i32;
/// `group.consumer.assignment.interval.ms` (Kafka 4.4, KIP-1263): the target assignment is
/// computed at most once an interval — a bump within it leaves the group "Assigning", its members
/// reconciling towards the last target, until the interval has passed.
const ASSIGNMENT_INTERVAL: Duration = Duration::from_millis(1_000);
/// The member epoch a member leaves with, and a static member's temporary leave (KIP-848).
const LEAVE_EPOCH: i32 = -1;
const STATIC_LEAVE_EPOCH: i32 = -2;

/// The topics a heartbeat can name: each topic's id and partition count, by name.
pub(crate) type TopicsById = BTreeMap<String, ([u8; 16], i32)>;

/// A member as only a real client has it: who it is, and its session.
#[derive(Debug, Clone)]
pub(crate) struct Client {
    pub(crate) client_id: String,
    pub(crate) host: String,
    pub(crate) instance_id: Option<String>,
    pub(crate) topics: Vec<String>,
    rebalance_timeout: Duration,
    last_seen: Instant,
    /// Since when it has had partitions to revoke (its rebalance timeout counts from here).
    revoking_since: Option<Instant>,
    /// Its epoch before the last change: a heartbeat at that epoch is accepted when the answer
    /// that moved it was lost (as Kafka accepts it).
    previous_epoch: i32,
    /// A static member that left with epoch −2: its partitions wait for its next process until
    /// its session times out.
    left_static: bool,
}

/// A consumer-protocol group as this coordinator holds it.
#[derive(Debug, Default)]
pub(crate) struct ModernGroup {
    pub(crate) model: ConsumerGroup,
    pub(crate) clients: BTreeMap<String, Client>,
    /// Members in join order.
    order: Vec<String>,
    /// The subscribed topics' partition counts the target was computed for.
    subscribed: BTreeMap<String, i32>,
    /// The state last sent to the lab (nothing is sent when it did not change).
    sent: Option<ConsumerGroupState>,
    /// When the target assignment was last computed.
    assigned_at: Option<Instant>,
}

/// What a heartbeat settled: the answer, and the group's new state for the lab (if it changed).
pub(crate) struct Heartbeat {
    pub(crate) answer: ConsumerGroupHeartbeatResponse,
    pub(crate) commands: Vec<Command>,
}

fn refuse(code: i16, message: &str) -> Heartbeat {
    tracing::debug!(code, message, "ConsumerGroupHeartbeat refused");
    Heartbeat {
        answer: ConsumerGroupHeartbeatResponse::default()
            .with_error_code(code)
            .with_error_message(Some(str_bytes(message))),
        commands: Vec::new(),
    }
}

/// The request as checked: the fields a heartbeat must or must not carry (Kafka's
/// `throwIfConsumerGroupHeartbeatRequestIsInvalid`), or INVALID_REQUEST / UNSUPPORTED_ASSIGNOR.
fn check(r: &ConsumerGroupHeartbeatRequest, version: i16) -> Result<Option<ServerAssignor>, (i16, String)> {
    let invalid = |m: &str| Err((INVALID_REQUEST, m.to_string()));
    if r.group_id.is_empty() {
        return invalid("GroupId can't be empty.");
    }
    if r.instance_id.as_ref().is_some_and(|i| i.is_empty()) {
        return invalid("InstanceId can't be empty.");
    }
    if r.rack_id.as_ref().is_some_and(|i| i.is_empty()) {
        return invalid("RackId can't be empty.");
    }
    if version >= 1 && r.member_id.is_empty() {
        return invalid("MemberId can't be empty.");
    }
    match r.member_epoch {
        0 => {
            if r.rebalance_timeout_ms == -1 {
                return invalid("RebalanceTimeoutMs must be provided in first request.");
            }
            if r.topic_partitions.as_ref().is_none_or(|t| !t.is_empty()) {
                return invalid("TopicPartitions must be empty when (re-)joining.");
            }
            if r.subscribed_topic_names.is_none()
                && r.subscribed_topic_regex.as_ref().is_none_or(|re| re.is_empty())
            {
                return invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.");
            }
        }
        e if e > 0 => {}
        LEAVE_EPOCH => {}
        STATIC_LEAVE_EPOCH if r.instance_id.is_some() => {}
        STATIC_LEAVE_EPOCH => return invalid("InstanceId can't be null when leaving with epoch -2."),
        _ => return invalid("MemberEpoch is invalid."),
    }
    if version == 0 && r.member_epoch != 0 && r.member_id.is_empty() {
        return invalid("MemberId can't be empty.");
    }
    // librdkafka sends an empty regex beside its topic names: no regex.
    if r.subscribed_topic_regex.as_ref().is_some_and(|re| !re.is_empty()) {
        return invalid("the lab's coordinator does not resolve regular-expression subscriptions (subscribe to topic names)");
    }
    match r.server_assignor.as_deref() {
        None => Ok(None),
        Some("uniform") => Ok(Some(ServerAssignor::Uniform)),
        Some("range") => Ok(Some(ServerAssignor::Range)),
        Some(other) => Err((
            UNSUPPORTED_ASSIGNOR,
            format!("ServerAssignor {other} is not supported. Supported assignors: uniform, range."),
        )),
    }
}

impl ModernGroup {
    pub(crate) fn has_members(&self) -> bool {
        !self.model.members.is_empty()
    }

    /// A heartbeat of `r`, from a connection of `client_id` at `host`; `topics` are the lab's
    /// topics (id and partition count), `member_id` the id a v0 joiner is given.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn heartbeat(
        &mut self,
        group: &str,
        r: &ConsumerGroupHeartbeatRequest,
        version: i16,
        client_id: &str,
        host: &str,
        topics: &TopicsById,
        new_member_id: impl FnOnce() -> String,
        now: Instant,
    ) -> Heartbeat {
        let assignor = match check(r, version) {
            Ok(a) => a,
            Err((code, message)) => return refuse(code, &message),
        };
        let owned: Option<BTreeSet<TopicPartition>> = r.topic_partitions.as_ref().map(|ts| {
            ts.iter()
                .filter_map(|t| {
                    let name = topics
                        .iter()
                        .find(|(_, (id, _))| Uuid::from_bytes(*id) == t.topic_id)?
                        .0;
                    Some(
                        t.partitions
                            .iter()
                            .map(move |p| TopicPartition::new(name.clone(), *p)),
                    )
                })
                .flatten()
                .collect()
        });
        let mut member_id = r.member_id.to_string();
        let before: Option<ConsumerGroupMember>;
        // A new member changes the membership; a static member's new process does not.
        let mut bump = false;
        match r.member_epoch {
            LEAVE_EPOCH | STATIC_LEAVE_EPOCH => {
                if !self.model.members.contains_key(&member_id) {
                    return refuse(
                        UNKNOWN_MEMBER_ID,
                        &format!("member {member_id} is not in group {group}"),
                    );
                }
                if r.member_epoch == STATIC_LEAVE_EPOCH {
                    let owner = self
                        .clients
                        .get(&member_id)
                        .and_then(|c| c.instance_id.as_deref());
                    if owner != r.instance_id.as_deref() {
                        return refuse(
                            FENCED_INSTANCE_ID,
                            &format!(
                                "member {member_id} is not the member of instance id {}",
                                r.instance_id.as_deref().unwrap_or_default()
                            ),
                        );
                    }
                    if let Some(c) = self.clients.get_mut(&member_id) {
                        c.left_static = true;
                        c.last_seen = now;
                    }
                } else {
                    self.remove(&member_id, topics, now);
                }
                return Heartbeat {
                    // No heartbeat interval: a member that left sends no more.
                    answer: ConsumerGroupHeartbeatResponse::default()
                        .with_member_id(Some(str_bytes(&member_id)))
                        .with_member_epoch(r.member_epoch),
                    commands: self.state_command(group),
                };
            }
            0 => {
                if member_id.is_empty() {
                    member_id = new_member_id();
                }
                // A static member's new process takes its place if it left; else the id is
                // still in use.
                let previous = r.instance_id.as_deref().and_then(|instance| {
                    self.clients
                        .iter()
                        .find(|(id, c)| c.instance_id.as_deref() == Some(instance) && **id != member_id)
                        .map(|(id, c)| (id.clone(), c.left_static))
                });
                match previous {
                    Some((_, false)) => {
                        return refuse(
                            UNRELEASED_INSTANCE_ID,
                            &format!(
                                "instance id {} is still used by another member of group {group}: it must leave first",
                                r.instance_id.as_deref().unwrap_or_default()
                            ),
                        )
                    }
                    Some((old, true)) => {
                        self.model.replace_member(&old, &member_id, 0);
                        if let Some(c) = self.clients.remove(&old) {
                            self.clients.insert(member_id.clone(), c);
                        }
                        if let Some(slot) = self.order.iter_mut().find(|id| **id == old) {
                            slot.clone_from(&member_id);
                        }
                    }
                    None => {
                        // A member that rejoins with its id (it was fenced) starts again empty:
                        // its old self goes without an epoch of its own — the join makes one.
                        if self.model.members.contains_key(&member_id) {
                            self.forget(&member_id);
                        }
                        self.model.members.insert(
                            member_id.clone(),
                            ConsumerGroupMember::new(&member_id, false, assignor.unwrap_or_default(), 0),
                        );
                        self.order.push(member_id.clone());
                        bump = true;
                    }
                }
                before = None;
            }
            epoch => {
                let Some(m) = self.model.members.get(&member_id) else {
                    return refuse(
                        UNKNOWN_MEMBER_ID,
                        &format!("member {member_id} is not in group {group}"),
                    );
                };
                let previous = self.clients.get(&member_id).map_or(-1, |c| c.previous_epoch);
                let subset = owned.as_ref().is_some_and(|o| o.is_subset(&m.assigned));
                if epoch > m.member_epoch || (epoch < m.member_epoch && (epoch != previous || !subset)) {
                    return refuse(
                        FENCED_MEMBER_EPOCH,
                        &format!(
                            "the member's epoch ({epoch}) is not the one the coordinator knows ({}): it must abandon its partitions and rejoin",
                            m.member_epoch
                        ),
                    );
                }
                before = Some(m.clone());
            }
        }
        // The member's own fields.
        let client = self.clients.entry(member_id.clone()).or_insert_with(|| Client {
            client_id: client_id.to_string(),
            host: host.to_string(),
            instance_id: None,
            topics: Vec::new(),
            rebalance_timeout: Duration::ZERO,
            last_seen: now,
            revoking_since: None,
            previous_epoch: 0,
            left_static: false,
        });
        client.client_id = client_id.to_string();
        client.host = host.to_string();
        client.last_seen = now;
        client.left_static = false;
        if let Some(i) = &r.instance_id {
            client.instance_id = Some(i.to_string());
        }
        if r.rebalance_timeout_ms >= 0 {
            client.rebalance_timeout = Duration::from_millis(r.rebalance_timeout_ms.unsigned_abs().into());
        }
        if let Some(names) = &r.subscribed_topic_names {
            let mut names: Vec<String> = names.iter().map(|t| t.to_string()).collect();
            names.sort();
            names.dedup();
            if names != client.topics {
                client.topics = names;
                bump = true;
            }
        }
        if let (Some(a), Some(m)) = (assignor, self.model.members.get_mut(&member_id)) {
            if m.assignor != a {
                m.assignor = a;
                bump = true;
            }
        }
        if bump || self.subscription_metadata(topics) != self.subscribed {
            self.bump(topics, now);
        } else {
            self.maybe_assign(now);
        }
        let owns = |tp: &TopicPartition| match &owned {
            Some(o) => o.contains(tp),
            // A heartbeat that does not list them still owns what it owned.
            None => true,
        };
        self.model.reconcile(&member_id, &owns);
        let after = self
            .model
            .members
            .get(&member_id)
            .cloned()
            .unwrap_or_else(|| ConsumerGroupMember::new(&member_id, false, ServerAssignor::default(), 0));
        if let Some(c) = self.clients.get_mut(&member_id) {
            if before.as_ref().map_or(0, |b| b.member_epoch) != after.member_epoch {
                c.previous_epoch = before.as_ref().map_or(0, |b| b.member_epoch);
            }
            c.revoking_since = if after.pending_revocation.is_empty() {
                None
            } else {
                c.revoking_since.or(Some(now))
            };
        }
        let full = r.member_epoch == 0
            || (r.rebalance_timeout_ms != -1
                && r.subscribed_topic_names.is_some()
                && r.topic_partitions.is_some());
        let changed = before.as_ref().is_none_or(|b| b.assigned != after.assigned);
        let mut answer = ConsumerGroupHeartbeatResponse::default()
            .with_member_id(Some(str_bytes(&member_id)))
            .with_member_epoch(after.member_epoch)
            .with_heartbeat_interval_ms(HEARTBEAT_INTERVAL_MS);
        if full || changed {
            answer = answer.with_assignment(Some(assignment(&after.assigned, topics)));
        }
        Heartbeat {
            answer,
            commands: self.state_command(group),
        }
    }

    /// The subscribed topics the lab has, with their partition counts.
    fn subscription_metadata(&self, topics: &TopicsById) -> BTreeMap<String, i32> {
        self.clients
            .values()
            .flat_map(|c| c.topics.iter())
            .filter_map(|t| topics.get(t).map(|(_, n)| (t.clone(), *n)))
            .collect()
    }

    /// A new group epoch for the members as they are now; its target assignment follows at
    /// once or once the assignment interval has passed.
    fn bump(&mut self, topics: &TopicsById, now: Instant) {
        self.subscribed = self.subscription_metadata(topics);
        self.model.group_epoch += 1;
        self.maybe_assign(now);
    }

    /// Computes the target assignment at the group epoch if it is behind and the assignment
    /// interval has passed since the last one; whether it did.
    pub(crate) fn maybe_assign(&mut self, now: Instant) -> bool {
        if self.model.assignment_epoch >= self.model.group_epoch
            || self.assigned_at.is_some_and(|at| now < at + ASSIGNMENT_INTERVAL)
        {
            return false;
        }
        // One entry per (member, topic): the engine's assignors work topic by topic.
        let subscriptions: Vec<SubscribedMember> = self
            .order
            .iter()
            .filter_map(|id| Some((id, self.clients.get(id)?)))
            .flat_map(|(id, c)| {
                c.topics.iter().map(move |t| SubscribedMember {
                    id: id.clone(),
                    consumer: id.clone(),
                    topic: t.clone(),
                    expires_at: None,
                    instance_id: c.instance_id.clone(),
                    cooperative: true,
                })
            })
            .collect();
        let counts: Vec<(String, i32)> = self.subscribed.iter().map(|(t, n)| (t.clone(), *n)).collect();
        self.model.assign(&subscriptions, &counts);
        self.assigned_at = Some(now);
        true
    }

    /// Removes a member (it left, or was fenced, or its session expired) and moves the group to
    /// a new epoch without it.
    pub(crate) fn remove(&mut self, member_id: &str, topics: &TopicsById, now: Instant) {
        self.forget(member_id);
        self.bump(topics, now);
        if self.model.members.is_empty() {
            // Nothing to assign: an empty group's target is empty at once (as Kafka 4.4
            // describes it right after its last member left).
            self.model.target.clear();
            self.model.assignment_epoch = self.model.group_epoch;
        }
    }

    /// Drops a member and its part of the target at once (Kafka patches the target, it does not
    /// wait for the next assignment to free what a departed member held).
    fn forget(&mut self, member_id: &str) {
        self.model.members.remove(member_id);
        self.model.target.retain(|_, owner| owner != member_id);
        self.clients.remove(member_id);
        self.order.retain(|id| id != member_id);
    }

    /// An empty group's epochs brought up to the lab's (never down).
    pub(crate) fn raise_epoch(&mut self, lab_epoch: Option<i32>) {
        if let Some(e) = lab_epoch.filter(|e| *e > self.model.group_epoch) {
            self.model.group_epoch = e;
            self.model.assignment_epoch = e;
        }
    }

    /// Members whose session expired, or who did not revoke within their rebalance timeout.
    pub(crate) fn expired(&self, now: Instant) -> Vec<String> {
        self.clients
            .iter()
            .filter(|(_, c)| {
                now.duration_since(c.last_seen) > SESSION_TIMEOUT
                    || c.revoking_since.is_some_and(|since| {
                        now.duration_since(since) > c.rebalance_timeout.max(Duration::from_secs(1))
                    })
            })
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The group's state as the lab takes it, if it changed since the last one sent.
    pub(crate) fn state_command(&mut self, group: &str) -> Vec<Command> {
        let members = self
            .order
            .iter()
            .filter_map(|id| {
                let m = self.model.members.get(id)?;
                let c = self.clients.get(id)?;
                Some(ExternalConsumerMember {
                    member: ExternalMember {
                        id: id.clone(),
                        client_id: c.client_id.clone(),
                        host: c.host.clone(),
                        partitions: m.assigned.iter().cloned().collect(),
                        instance_id: c.instance_id.clone(),
                        topics: c.topics.clone(),
                        session_timeout_ms: None,
                        rebalance_timeout_ms: i32::try_from(c.rebalance_timeout.as_millis()).ok(),
                    },
                    // A static member that left (epoch −2) is described so until it is back.
                    epoch: if c.left_static {
                        STATIC_LEAVE_EPOCH
                    } else {
                        m.member_epoch
                    },
                    state: m.state,
                    revoking: m.pending_revocation.iter().cloned().collect(),
                    target: self.model.target_of(id).into_iter().collect(),
                    assignor: m.assignor,
                    assignment_epochs: m
                        .assignment_epochs
                        .iter()
                        .filter(|(_, since)| **since < m.member_epoch)
                        .map(|(tp, since)| (tp.clone(), *since))
                        .collect(),
                })
            })
            .collect();
        let state = ConsumerGroupState {
            group: group.to_string(),
            epoch: self.model.group_epoch,
            assignment_epoch: self.model.assignment_epoch,
            members,
        };
        if self.sent.as_ref() == Some(&state) {
            return Vec::new();
        }
        self.sent = Some(state.clone());
        vec![Command::ConsumerGroupState(state)]
    }

    /// The lab did not take the last state: offer it again on the next tick.
    pub(crate) fn unsent(&mut self) {
        self.sent = None;
    }
}

/// A member's assignment as the heartbeat answer carries it: partitions by topic id.
fn assignment(assigned: &BTreeSet<TopicPartition>, topics: &TopicsById) -> Assignment {
    let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for tp in assigned {
        by_topic.entry(tp.topic.as_str()).or_default().push(tp.partition);
    }
    Assignment::default().with_topic_partitions(
        by_topic
            .into_iter()
            .filter_map(|(t, partitions)| {
                let (id, _) = topics.get(t)?;
                Some(
                    AssignedTopic::default()
                        .with_topic_id(Uuid::from_bytes(*id))
                        .with_partitions(partitions),
                )
            })
            .collect(),
    )
}

/// A new group of this kind, at the epoch Kafka 4.4 creates one with (its first member's join
/// bumps it to 2) — or, for a group the lab already has, at the epoch the lab left it: an epoch
/// never goes back, as Kafka's coordinator reloads it from `__consumer_offsets`.
pub(crate) fn created(lab_epoch: Option<i32>) -> ModernGroup {
    let mut model = ConsumerGroup::created();
    if let Some(e) = lab_epoch.filter(|e| *e > model.group_epoch) {
        model.group_epoch = e;
        model.assignment_epoch = e;
    }
    ModernGroup {
        model,
        ..ModernGroup::default()
    }
}

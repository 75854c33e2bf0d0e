//! One group of real clients as the coordinator holds it (Kafka's `ClassicGroup`): its members
//! with their protocols and sessions, the generation, the leader, and the waiters of a
//! rebalance — moved from state to state only as the shared protocol allows.

use super::*;

#[derive(Debug)]
pub(crate) struct Member {
    pub(crate) client_id: String,
    pub(crate) host: String,
    pub(crate) instance_id: Option<String>,
    pub(super) session_timeout: Duration,
    pub(super) rebalance_timeout: Duration,
    /// (assignor name, the member's subscription bytes for it), in the member's preference.
    pub(super) protocols: Vec<(String, Bytes)>,
    /// What the leader assigned it in this generation (consumer protocol bytes).
    pub(crate) assignment: Bytes,
    pub(super) last_seen: Instant,
    /// Rejoined in the rebalance in progress.
    pub(super) joined: bool,
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

/// Why the coordinator removed a member (for its log line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Departure {
    /// The client said goodbye: a graceful `close()`.
    LeaveGroup,
    /// No heartbeat within `session.timeout.ms`: a crash, a pause, a lost network.
    SessionExpired,
    /// Alive, but it did not rejoin the rebalance in time.
    NotRejoined,
}

#[derive(Debug)]
pub(crate) struct Group {
    /// Moved only through [`Group::enter`], which keeps to the protocol's transitions.
    pub(crate) state: GroupState,
    pub(crate) generation: i32,
    pub(crate) protocol_type: String,
    pub(crate) protocol: String,
    pub(super) leader: String,
    /// Members in join order (the first is the leader of a fresh group).
    pub(crate) members: BTreeMap<String, Member>,
    pub(super) order: Vec<String>,
    /// Ids handed out with MEMBER_ID_REQUIRED, not joined yet, and when they lapse (a session
    /// timeout later, as Kafka expires pending members).
    pub(super) pending: HashMap<String, Instant>,
    pub(super) deadline: Option<Instant>,
    pub(super) join_waiters: Vec<(String, oneshot::Sender<JoinGroupResponse>)>,
    pub(super) sync_waiters: Vec<(String, oneshot::Sender<SyncGroupResponse>)>,
    /// Empty here, but the lab did not take the line that says so (its disk refused it): the
    /// ticker offers that line again.
    pub(super) unsettled: bool,
    /// Static members' new processes that took an old member id's place (KIP-345) and whose
    /// SyncGroup has not yet told the lab their id.
    pub(super) replaced: std::collections::HashSet<String>,
}

impl Group {
    pub(super) fn new(protocol_type: &str) -> Self {
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
            replaced: std::collections::HashSet::new(),
        }
    }

    /// Whether a member that was given its id (KIP-394's MEMBER_ID_REQUIRED) is yet to join.
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// A new process of static member `instance` joins while the group still has its old
    /// member, where [`Group::replace_static_member`] could not simply hand it the old place (a
    /// rebalance is on, or its protocols changed): the old member is removed — a JoinGroup or
    /// SyncGroup it waits on answered FENCED_INSTANCE_ID — and the new process joins instead,
    /// as Kafka replaces a static member in every state. One instance id, one member.
    pub(super) fn fence_static_member(&mut self, instance: &str) {
        let Some(old) = self
            .members
            .iter()
            .find(|(_, m)| m.instance_id.as_deref() == Some(instance))
            .map(|(id, _)| id.clone())
        else {
            return;
        };
        let (fenced, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.join_waiters)
            .into_iter()
            .partition(|(m, _)| *m == old);
        self.join_waiters = waiting;
        for (_, tx) in fenced {
            let _ = tx.send(
                JoinGroupResponse::default()
                    .with_error_code(FENCED_INSTANCE_ID)
                    .with_generation_id(-1)
                    .with_member_id(str_bytes(&old)),
            );
        }
        let (fenced, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.sync_waiters)
            .into_iter()
            .partition(|(m, _)| *m == old);
        self.sync_waiters = waiting;
        for (_, tx) in fenced {
            let _ = tx.send(SyncGroupResponse::default().with_error_code(FENCED_INSTANCE_ID));
        }
        tracing::info!(member = ?old, instance = ?instance, "static member fenced: a new process joined with its group.instance.id");
        self.remove(&old);
    }

    /// Members in join order.
    pub(crate) fn ordered(&self) -> impl Iterator<Item = (&String, &Member)> {
        self.order
            .iter()
            .filter_map(|id| self.members.get(id).map(|m| (id, m)))
    }

    /// Static membership (KIP-345): a new process joining with no member id and the
    /// `group.instance.id` of a member of this Stable group takes that member's place — a new
    /// member id, the same assignment, the same generation — and is answered at once, with no
    /// rebalance; its SyncGroup hands it the assignment. `None` when that does not apply (no such
    /// member, a rebalance under way, or its subscription changed: Kafka rebalances then, and so
    /// does the ordinary join that follows).
    pub(super) fn replace_static_member(
        &mut self,
        r: &JoinGroupRequest,
        version: i16,
        client_id: &str,
        host: &str,
        now: Instant,
        next: impl FnOnce() -> u64,
    ) -> Option<JoinGroupResponse> {
        let instance = r.group_instance_id.as_deref()?;
        if !r.member_id.is_empty() || self.state != GroupState::Stable {
            return None;
        }
        let old = self
            .members
            .iter()
            .find(|(_, m)| m.instance_id.as_deref() == Some(instance))
            .map(|(id, _)| id.clone())?;
        let same = self.members.get(&old).is_some_and(|m| {
            m.protocols.len() == r.protocols.len()
                && m.protocols
                    .iter()
                    .zip(&r.protocols)
                    .all(|((n, b), p)| n.as_str() == p.name.as_str() && *b == p.metadata)
        });
        if !same {
            return None;
        }
        let id = format!("{instance}-{}", next());
        let mut m = self.members.remove(&old)?;
        tracing::info!(member = ?old, new = ?id, instance = ?instance, "static member replaced by its new process (KIP-345): same assignment, no rebalance");
        m.client_id = client_id.to_string();
        m.host = host.to_string();
        m.last_seen = now;
        self.members.insert(id.clone(), m);
        for slot in self.order.iter_mut().filter(|o| **o == old) {
            slot.clone_from(&id);
        }
        if self.leader == old {
            self.leader.clone_from(&id);
        }
        self.replaced.insert(id.clone());
        let members = if self.leader == id {
            self.subscriptions()
        } else {
            Vec::new()
        };
        Some(
            self.joined(&id, members)
                // The leader's assignment stands: it must not compute a new one (v9+).
                .with_skip_assignment(version >= 9 && self.leader == id),
        )
    }

    /// Every member's subscription for the group's protocol: what the leader is sent to assign.
    fn subscriptions(&self) -> Vec<JoinGroupResponseMember> {
        self.ordered()
            .map(|(id, m)| {
                JoinGroupResponseMember::default()
                    .with_member_id(str_bytes(id))
                    .with_group_instance_id(m.instance_id.as_deref().map(str_bytes))
                    .with_metadata(m.metadata(&self.protocol))
            })
            .collect()
    }

    /// The JoinGroup answer of member `id` in the current generation (`members`: the leader's).
    fn joined(&self, id: &str, members: Vec<JoinGroupResponseMember>) -> JoinGroupResponse {
        JoinGroupResponse::default()
            .with_generation_id(self.generation)
            .with_protocol_type(Some(str_bytes(&self.protocol_type)))
            .with_protocol_name(Some(str_bytes(&self.protocol)))
            .with_leader(str_bytes(&self.leader))
            .with_member_id(str_bytes(id))
            .with_members(members)
    }

    /// Moves the group to `next`, as the protocol allows ([`GroupState::can_follow`]).
    pub(super) fn enter(&mut self, next: GroupState) {
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
    pub(super) fn prepare_rebalance(&mut self, now: Instant) {
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

    /// Removes member `id` for `why`, saying so on the server's log as Kafka's coordinator does:
    /// whether a member left with a LeaveGroup or was dropped for silence is what tells a
    /// graceful `close()` from a crash, and it is seen nowhere else.
    pub(super) fn depart(&mut self, group: &str, id: &str, why: Departure) {
        if let Some(m) = self.members.get(id) {
            let reason = match why {
                Departure::LeaveGroup => "member left the group (LeaveGroup)".to_string(),
                Departure::SessionExpired => format!(
                    "member removed: no heartbeat within its session.timeout.ms ({} ms)",
                    m.session_timeout.as_millis()
                ),
                Departure::NotRejoined => format!(
                    "member removed: did not rejoin within the rebalance timeout ({} ms)",
                    m.rebalance_timeout.as_millis()
                ),
            };
            // The ids are the clients' own strings: quoted and escaped (`?`), so none can forge
            // a line of the log.
            tracing::info!(group = ?group, member = ?id, client = ?m.client_id, "{reason}");
        }
        self.remove(id);
    }

    pub(super) fn remove(&mut self, id: &str) {
        self.pending.remove(id);
        self.members.remove(id);
        self.order.retain(|m| m != id);
        self.join_waiters.retain(|(m, _)| m != id);
        self.sync_waiters.retain(|(m, _)| m != id);
    }

    /// Closes the join phase: members that did not rejoin are dropped, a new generation starts
    /// with a protocol every member supports, and every waiting JoinGroup is answered (the
    /// leader with the members' subscriptions). `Some(line)` when the group ends up Empty.
    pub(super) fn complete_join(&mut self, group: &str) -> Option<Command> {
        let gone: Vec<String> = self
            .members
            .iter()
            .filter(|(_, m)| !m.joined)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &gone {
            self.depart(group, id, Departure::NotRejoined);
        }
        self.deadline = None;
        self.generation += 1;
        if self.members.is_empty() {
            self.enter(GroupState::Empty);
            return Some(empty_group(
                group,
                self.generation,
                &self.protocol_type,
                &self.protocol,
            ));
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
        let everyone = self.subscriptions();
        for (id, tx) in std::mem::take(&mut self.join_waiters) {
            let members = if id == self.leader {
                everyone.clone()
            } else {
                Vec::new()
            };
            let _ = tx.send(self.joined(&id, members));
        }
        None
    }

    /// After a member left or timed out: rebalance the rest, or become Empty (a new generation
    /// with nobody in it, as Kafka's coordinator records it).
    pub(super) fn after_departure(&mut self, group: &str, now: Instant) -> Option<Command> {
        if self.members.is_empty() {
            // As Kafka's: the departure starts a rebalance, which completes at once with nobody.
            if self.state != GroupState::PreparingRebalance {
                self.enter(GroupState::PreparingRebalance);
            }
            self.deadline = None;
            self.generation += 1;
            self.enter(GroupState::Empty);
            return Some(empty_group(
                group,
                self.generation,
                &self.protocol_type,
                &self.protocol,
            ));
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

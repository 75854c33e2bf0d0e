//! Kafka 4's consumer group protocol (KIP-848): the coordinator's side, pure.
//!
//! Members do not rejoin in a barrier. Each sends `ConsumerGroupHeartbeat`s; a change of
//! membership bumps the **group epoch**, the coordinator recomputes the **target assignment**
//! with a server-side assignor (`uniform`, the default, or `range`), and then reconciles each
//! member towards it on that member's own heartbeats:
//!
//! 1. a member that owns partitions the target gives to someone else must revoke them first
//!    (`UnrevokedPartitions`): it keeps its **member epoch** and the rest of its partitions, and
//!    works on while its application's next `poll()` runs the revoke callback;
//! 2. once it no longer reports them (its heartbeat acknowledges the revocation), it moves to the
//!    target epoch with the partitions it keeps plus any new ones that are *free*;
//! 3. a partition another member still owns (assigned or pending revocation) is not handed out:
//!    the member waits for it (`UnreleasedPartitions`) and gets it on a later heartbeat.
//!
//! So no partition is ever owned by two members, and only the partitions that move pause. This
//! is the idea of Kafka's `CurrentAssignmentBuilder`; the rules below were written from its
//! behaviour, not its code. A commit carries the member epoch and is refused when it is not the
//! member's current one (`STALE_MEMBER_EPOCH`), or from a member the group no longer has
//! (`UNKNOWN_MEMBER_ID`).

use super::{range_assign, sticky_assign, Member};
use crate::clock::Millis;
use crate::record::TopicPartition;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// `group.consumer.session.timeout.ms`: under the consumer protocol the session timeout is the
/// broker's, not the client's.
pub const CONSUMER_SESSION_TIMEOUT_MS: Millis = 45_000;
/// `group.consumer.heartbeat.interval.ms`: how often a member heartbeats.
pub const CONSUMER_HEARTBEAT_INTERVAL_MS: Millis = 5_000;
/// `group.consumer.assignment.interval.ms` (Apache Kafka 4.4, KIP-1263): the coordinator
/// computes a group's target assignment at most once an interval. A new epoch within it leaves
/// the group "Assigning" — members reconcile towards the last target — until it has passed.
pub const CONSUMER_ASSIGNMENT_INTERVAL_MS: Millis = 1_000;

/// A consumer's `group.protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum GroupProtocol {
    /// JoinGroup / SyncGroup: every member rejoins, the leader assigns (eager or cooperative).
    #[default]
    Classic,
    /// KIP-848: heartbeats, the coordinator assigns and reconciles.
    Consumer,
}

spelled!(GroupProtocol, "group protocol", { Classic => "classic", Consumer => "consumer" });

/// `group.remote.assignor`: the coordinator-side assignor a consumer-protocol member asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ServerAssignor {
    /// Balanced and sticky: members keep what they can, only the surplus moves (Kafka's default,
    /// first in `group.consumer.assignors`).
    #[default]
    Uniform,
    /// Contiguous ranges per topic, members sorted by member id.
    Range,
}

spelled!(ServerAssignor, "server assignor", { Uniform => "uniform", Range => "range" });

/// Where a member is in its reconciliation (Kafka's `MemberState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum MemberState {
    /// It owns its target assignment at the target epoch (or waits for nothing).
    #[default]
    Stable,
    /// It must revoke partitions before it can move to the target epoch.
    UnrevokedPartitions,
    /// It is at the target epoch but waits for partitions others have not released yet.
    UnreleasedPartitions,
}

spelled!(MemberState, "member state", {
    Stable => "stable",
    UnrevokedPartitions => "unrevoked-partitions",
    UnreleasedPartitions => "unreleased-partitions",
});

/// A member as the coordinator of a consumer group keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerGroupMember {
    pub member_id: String,
    pub member_epoch: i32,
    pub state: MemberState,
    /// The partitions it owns and may fetch.
    pub assigned: BTreeSet<TopicPartition>,
    /// Partitions it still owns but was asked to revoke.
    pub pending_revocation: BTreeSet<TopicPartition>,
    /// A member that speaks the classic protocol inside a consumer group (an upgraded or mixed
    /// group): it reconciles by rejoining (JoinGroup/SyncGroup) and its commits carry its
    /// generation, fenced with ILLEGAL_GENERATION.
    pub classic: bool,
    pub assignor: ServerAssignor,
    /// When it last sent a heartbeat; the next ones follow every heartbeat interval.
    pub heartbeat_at: Millis,
    /// The member epoch at which it was given each partition it owns (KIP-1251): a commit at an
    /// older epoch than its current one is still its own for a partition it had by then.
    #[serde(
        default,
        with = "crate::serde_pairs",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub assignment_epochs: BTreeMap<TopicPartition, i32>,
}

impl ConsumerGroupMember {
    pub fn new(member_id: &str, classic: bool, assignor: ServerAssignor, now: Millis) -> Self {
        Self {
            member_id: member_id.to_string(),
            member_epoch: 0,
            state: MemberState::Stable,
            assigned: BTreeSet::new(),
            pending_revocation: BTreeSet::new(),
            classic,
            assignor,
            heartbeat_at: now,
            assignment_epochs: BTreeMap::new(),
        }
    }

    /// Its next heartbeat strictly after `now`: they come every interval from the last one
    /// sent (one due at `now` itself has been sent already, before whatever happens at `now`).
    pub fn next_heartbeat_after(&self, now: Millis) -> Millis {
        let i = CONSUMER_HEARTBEAT_INTERVAL_MS;
        let since = now.saturating_sub(self.heartbeat_at).max(0);
        self.heartbeat_at.saturating_add(i.saturating_mul(since / i + 1))
    }

    /// Its last heartbeat at or before `now`: what its session counts from when it dies.
    pub fn last_heartbeat_by(&self, now: Millis) -> Millis {
        let i = CONSUMER_HEARTBEAT_INTERVAL_MS;
        let since = now.saturating_sub(self.heartbeat_at).max(0);
        self.heartbeat_at.saturating_add(i.saturating_mul(since / i))
    }
}

/// Why a commit to a consumer group is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EpochFenced {
    /// `UNKNOWN_MEMBER_ID`: the group has no such member (left, timed out, a zombie).
    UnknownMember,
    /// `STALE_MEMBER_EPOCH`: a consumer-protocol member, but not at this epoch.
    StaleMemberEpoch { current: i32 },
    /// `ILLEGAL_GENERATION`: a classic member of the group, not at this generation.
    IllegalGeneration { current: i32 },
}

/// What one reconciliation step changed for a member.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reconciled {
    pub epoch_before: i32,
    pub epoch_after: i32,
    /// Partitions it may start fetching now.
    pub newly_assigned: Vec<TopicPartition>,
    /// Partitions it was just asked to revoke.
    pub newly_revoking: Vec<TopicPartition>,
    /// Partitions it had to revoke and no longer owns (acknowledged).
    pub released: Vec<TopicPartition>,
}

impl Reconciled {
    pub fn changed(&self) -> bool {
        self.epoch_before != self.epoch_after
            || !self.newly_assigned.is_empty()
            || !self.newly_revoking.is_empty()
            || !self.released.is_empty()
    }
}

/// A consumer group's coordinator state: epochs, target assignment, members.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ConsumerGroup {
    /// Bumped by every change of membership or subscription.
    pub group_epoch: i32,
    /// The epoch of the target assignment (the lab computes it at once: the group epoch).
    pub assignment_epoch: i32,
    /// Partition → the member id the target gives it to.
    #[serde(with = "crate::serde_pairs")]
    pub target: BTreeMap<TopicPartition, String>,
    pub members: BTreeMap<String, ConsumerGroupMember>,
    /// When the target assignment was last computed: the next one waits until
    /// [`CONSUMER_ASSIGNMENT_INTERVAL_MS`] after it.
    #[serde(default)]
    pub assigned_at: Option<Millis>,
}

impl ConsumerGroup {
    /// A new consumer group, before its first member joins: at group epoch 1, as Apache Kafka
    /// 4.4 creates one (`ModernGroup` sets its epoch to 1), so the first member's join bumps it
    /// to 2 — what `kafka-consumer-groups.sh --describe` shows there for a group's first member,
    /// with the Java client and librdkafka alike.
    pub fn created() -> Self {
        Self {
            group_epoch: 1,
            assignment_epoch: 1,
            ..Self::default()
        }
    }

    /// A classic group converted on the first consumer-protocol member's join (Kafka's online
    /// upgrade): the group epoch is its generation, each member keeps its assignment at that
    /// epoch and goes on speaking the classic protocol.
    pub fn from_classic(
        generation: i32,
        members: &[Member],
        owners: &BTreeMap<TopicPartition, String>,
        now: Millis,
    ) -> Self {
        let mut g = Self {
            group_epoch: generation,
            assignment_epoch: generation,
            target: owners.clone(),
            members: BTreeMap::new(),
            assigned_at: None,
        };
        for m in members {
            let mut cm = ConsumerGroupMember::new(&m.id, true, ServerAssignor::default(), now);
            cm.member_epoch = generation;
            cm.assigned = owners
                .iter()
                .filter(|(_, o)| **o == m.id)
                .map(|(tp, _)| tp.clone())
                .collect();
            cm.assignment_epochs = cm.assigned.iter().map(|tp| (tp.clone(), generation)).collect();
            g.members.insert(m.id.clone(), cm);
        }
        g
    }

    /// Kafka's names of a consumer group's states.
    pub fn state_name(&self) -> &'static str {
        if self.members.is_empty() {
            "Empty"
        } else if self.assignment_epoch < self.group_epoch {
            "Assigning"
        } else if self
            .members
            .values()
            .any(|m| m.member_epoch != self.assignment_epoch || m.state != MemberState::Stable)
        {
            "Reconciling"
        } else {
            "Stable"
        }
    }

    /// The member that owns `tp` now — assigned, or pending its revocation — other than
    /// `except`.
    pub fn owner_of(&self, tp: &TopicPartition, except: &str) -> Option<&str> {
        self.members
            .values()
            .filter(|m| m.member_id != except)
            .find(|m| m.assigned.contains(tp) || m.pending_revocation.contains(tp))
            .map(|m| m.member_id.as_str())
    }

    /// Who owns what now (assigned or pending revocation).
    pub fn owners(&self) -> BTreeMap<TopicPartition, String> {
        let mut out = BTreeMap::new();
        for m in self.members.values() {
            for tp in m.assigned.iter().chain(&m.pending_revocation) {
                out.insert(tp.clone(), m.member_id.clone());
            }
        }
        out
    }

    /// The partitions the target gives `member`.
    pub fn target_of(&self, member: &str) -> BTreeSet<TopicPartition> {
        self.target
            .iter()
            .filter(|(_, o)| o.as_str() == member)
            .map(|(tp, _)| tp.clone())
            .collect()
    }

    /// Partitions the target gives `member` that it does not own yet (another member has not
    /// released them).
    pub fn awaiting(&self, member: &str) -> BTreeSet<TopicPartition> {
        let Some(m) = self.members.get(member) else {
            return BTreeSet::new();
        };
        self.target_of(member)
            .into_iter()
            .filter(|tp| !m.assigned.contains(tp))
            .collect()
    }

    /// The assignor the group uses: the one most members ask for; a tie goes to the one listed
    /// first in `group.consumer.assignors` (uniform).
    pub fn assignor(&self) -> ServerAssignor {
        let ranged = self
            .members
            .values()
            .filter(|m| m.assignor == ServerAssignor::Range)
            .count();
        if ranged * 2 > self.members.len() {
            ServerAssignor::Range
        } else {
            ServerAssignor::Uniform
        }
    }

    /// A new group epoch with a new target assignment for `subscriptions` (the members with their
    /// topic) over `topics` (name, partition count).
    pub fn bump_epoch(&mut self, subscriptions: &[Member], topics: &[(String, i32)]) {
        self.group_epoch += 1;
        self.assign(subscriptions, topics);
    }

    /// When the target assignment of a group "Assigning" (its epoch ahead of its target's) is
    /// computed: at once if the interval since the last one has passed, else at its end.
    pub fn assignment_due(&self, now: Millis) -> Option<Millis> {
        (self.assignment_epoch < self.group_epoch).then(|| {
            self.assigned_at.map_or(now, |at| {
                at.saturating_add(CONSUMER_ASSIGNMENT_INTERVAL_MS).max(now)
            })
        })
    }

    /// The target assignment at the current group epoch, for `subscriptions` over `topics`.
    /// Apache Kafka 4.4 runs it at most once a `group.consumer.assignment.interval.ms` (KIP-1263),
    /// so a real group's epoch may be ahead of its assignment's for a moment ("Assigning"); the
    /// lab's own groups, on the logical clock, assign at once.
    pub fn assign(&mut self, subscriptions: &[Member], topics: &[(String, i32)]) {
        self.target = match self.assignor() {
            ServerAssignor::Uniform => sticky_assign(subscriptions, topics, &self.target),
            ServerAssignor::Range => range_assign(subscriptions, topics),
        };
        self.assignment_epoch = self.group_epoch;
    }

    /// One reconciliation step of `member` on its heartbeat; `client_owns` says which partitions
    /// its heartbeat still reports as owned. `None` for a member the group does not have.
    pub fn reconcile(
        &mut self,
        member: &str,
        client_owns: &dyn Fn(&TopicPartition) -> bool,
    ) -> Option<Reconciled> {
        let m = self.members.get(member)?.clone();
        let mut out = Reconciled {
            epoch_before: m.member_epoch,
            epoch_after: m.member_epoch,
            ..Reconciled::default()
        };
        let next = match m.state {
            MemberState::Stable if m.member_epoch == self.assignment_epoch => return Some(out),
            MemberState::Stable | MemberState::UnreleasedPartitions => {
                self.next_assignment(&m, m.member_epoch, client_owns)
            }
            MemberState::UnrevokedPartitions => {
                if m.pending_revocation.iter().any(client_owns) {
                    return Some(out);
                }
                out.released = m.pending_revocation.iter().cloned().collect();
                let epoch = (m.member_epoch + 1).min(self.assignment_epoch);
                let mut acked = m.clone();
                acked.pending_revocation.clear();
                self.next_assignment(&acked, epoch, client_owns)
            }
        };
        out.epoch_after = next.member_epoch;
        out.newly_assigned = next.assigned.difference(&m.assigned).cloned().collect();
        out.newly_revoking = next
            .pending_revocation
            .difference(&m.pending_revocation)
            .cloned()
            .collect();
        if next.state != MemberState::UnrevokedPartitions && m.state != MemberState::UnrevokedPartitions {
            // Partitions dropped without a revocation: the client no longer reported them.
            out.released
                .extend(m.assigned.difference(&next.assigned).cloned());
        }
        let mut next = next;
        next.assignment_epochs = next
            .assigned
            .iter()
            .chain(&next.pending_revocation)
            .map(|tp| {
                let since = m.assignment_epochs.get(tp).copied().unwrap_or(next.member_epoch);
                (tp.clone(), since)
            })
            .collect();
        self.members.insert(member.to_string(), next);
        Some(out)
    }

    /// Kafka's `computeNextAssignment`: keep what the target keeps, revoke what it moves away,
    /// add what it adds once nobody else owns it.
    fn next_assignment(
        &self,
        m: &ConsumerGroupMember,
        epoch: i32,
        client_owns: &dyn Fn(&TopicPartition) -> bool,
    ) -> ConsumerGroupMember {
        let target = self.target_of(&m.member_id);
        let keep: BTreeSet<TopicPartition> = m.assigned.intersection(&target).cloned().collect();
        let revoke: BTreeSet<TopicPartition> = m.assigned.difference(&keep).cloned().collect();
        let (free, unreleased): (Vec<TopicPartition>, Vec<TopicPartition>) = target
            .difference(&keep)
            .cloned()
            .partition(|tp| self.owner_of(tp, &m.member_id).is_none());
        let mut next = m.clone();
        next.pending_revocation.clear();
        if !revoke.is_empty() && revoke.iter().any(client_owns) {
            next.state = MemberState::UnrevokedPartitions;
            next.member_epoch = epoch;
            next.assigned = keep;
            next.pending_revocation = revoke;
            return next;
        }
        next.member_epoch = self.assignment_epoch;
        next.assigned = keep;
        next.assigned.extend(free);
        next.state = if unreleased.is_empty() {
            MemberState::Stable
        } else {
            MemberState::UnreleasedPartitions
        };
        next
    }

    /// The OffsetCommit fence: a member of the group, at its current member epoch (a classic
    /// member: its generation).
    pub fn check_commit(&self, member: &str, epoch: i32) -> Result<(), EpochFenced> {
        let Some(m) = self.members.get(member) else {
            return Err(EpochFenced::UnknownMember);
        };
        if epoch == m.member_epoch {
            Ok(())
        } else if m.classic {
            Err(EpochFenced::IllegalGeneration {
                current: m.member_epoch,
            })
        } else {
            Err(EpochFenced::StaleMemberEpoch {
                current: m.member_epoch,
            })
        }
    }

    /// The OffsetCommit fence of one partition under Apache Kafka 4.4 (KIP-1251): a member of
    /// the group at its current epoch, or — a consumer-protocol member — at an older epoch no
    /// older than the one it was given `tp` at (a commit still in flight when its epoch moved
    /// on). A classic member: its generation, exactly.
    pub fn check_commit_partition(
        &self,
        member: &str,
        epoch: i32,
        tp: &TopicPartition,
    ) -> Result<(), EpochFenced> {
        let Some(m) = self.members.get(member) else {
            return Err(EpochFenced::UnknownMember);
        };
        if m.classic || epoch >= m.member_epoch {
            return self.check_commit(member, epoch);
        }
        match m.assignment_epochs.get(tp) {
            Some(since) if *since <= epoch => Ok(()),
            _ => Err(EpochFenced::StaleMemberEpoch {
                current: m.member_epoch,
            }),
        }
    }

    /// Static membership: a new process with the same `group.instance.id` takes the place of
    /// `old` — its member epoch and assigned partitions. Partitions the old process was still
    /// revoking are released: the new process never owned them. Returns what it takes.
    pub fn replace_member(&mut self, old: &str, new: &str, now: Millis) -> Vec<TopicPartition> {
        let Some(mut m) = self.members.remove(old) else {
            return Vec::new();
        };
        m.member_id = new.to_string();
        m.pending_revocation.clear();
        if m.state == MemberState::UnrevokedPartitions {
            m.state = MemberState::UnreleasedPartitions;
        }
        m.heartbeat_at = now;
        for owner in self.target.values_mut() {
            if owner == old {
                *owner = new.to_string();
            }
        }
        let taken = m.assigned.iter().cloned().collect();
        self.members.insert(new.to_string(), m);
        taken
    }

    /// Every partition owned by at most one member: the invariant reconciliation keeps.
    pub fn owners_disjoint(&self) -> bool {
        let mut seen = BTreeSet::new();
        self.members
            .values()
            .flat_map(|m| m.assigned.iter().chain(&m.pending_revocation))
            .all(|tp| seen.insert(tp.clone()))
    }
}

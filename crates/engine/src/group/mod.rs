//! Consumer groups: membership, generations and partition assignment.
//!
//! The group coordinator hands out partitions to the group's members. A change of membership
//! starts a rebalance (eager protocol): every member must rejoin — a live one does so inside its
//! next `poll()`, where its revoke hook runs — and when all have, a new *generation* begins with
//! a new assignment. A commit stamped with an older generation is rejected, which is how a zombie
//! (a member presumed dead) is fenced. A crashed member sends no LeaveGroup: it stays a member,
//! holding its partitions, until `session.timeout.ms` passes without a heartbeat — and a rebalance
//! waits for it until then.

use crate::audit::GroupAudit;
use crate::clock::Millis;
use crate::delivery::DeliveryReason;
use crate::record::TopicPartition;
use crate::sink::{Sink, SinkKind};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

mod consumer_group;
mod protocol;
pub use consumer_group::{
    ConsumerGroup, ConsumerGroupMember, EpochFenced, GroupProtocol, MemberState, Reconciled, ServerAssignor,
    CONSUMER_ASSIGNMENT_INTERVAL_MS, CONSUMER_HEARTBEAT_INTERVAL_MS, CONSUMER_SESSION_TIMEOUT_MS,
};
pub use protocol::{check_commit, Fenced, GroupState};

/// A member of a group: one incarnation of a consumer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// `c1#2`: the consumer and its incarnation (Kafka assigns a fresh member id per process).
    pub id: String,
    pub consumer: String,
    /// The topic it subscribed to.
    pub topic: String,
    /// When its session times out, once it stopped heartbeating (crashed). `None` while alive.
    pub expires_at: Option<Millis>,
    /// `group.instance.id` of a static member.
    pub instance_id: Option<String>,
    /// Whether it speaks the cooperative (incremental) rebalance protocol.
    pub cooperative: bool,
}

/// A member of a group of real Kafka clients (through the lab's Kafka listener): the listener's
/// coordinator runs their JoinGroup / SyncGroup / Heartbeat on wall time and records each
/// completed rebalance here, with what every member was assigned.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ExternalMember {
    /// The member id the coordinator gave it (`rdkafka-3`).
    pub id: String,
    pub client_id: String,
    pub host: String,
    /// Its assignment in this generation.
    pub partitions: Vec<TopicPartition>,
    /// `group.instance.id` of a static member.
    #[serde(default)]
    pub instance_id: Option<String>,
    /// The topics its subscription names.
    #[serde(default)]
    pub topics: Vec<String>,
    /// Its `session.timeout.ms` and rebalance timeout (`max.poll.interval.ms`), as it joined.
    #[serde(default)]
    pub session_timeout_ms: Option<i32>,
    #[serde(default)]
    pub rebalance_timeout_ms: Option<i32>,
}

/// A member of a consumer-protocol group (KIP-848) of real clients, as the listener's
/// coordinator reports it after a heartbeat changed something: who it is, its member epoch, where
/// it is in its reconciliation, what it owns, what it must still revoke and what the target
/// assignment gives it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ExternalConsumerMember {
    /// Its id, client id, host, subscription and instance id; `partitions` are those it owns
    /// and may fetch (not those it is revoking).
    pub member: ExternalMember,
    pub epoch: i32,
    pub state: MemberState,
    /// Partitions it still owns but was asked to revoke.
    pub revoking: Vec<TopicPartition>,
    /// The partitions the target assignment gives it.
    pub target: Vec<TopicPartition>,
    /// The server-side assignor it asked for (`group.remote.assignor`).
    pub assignor: ServerAssignor,
    /// The member epoch at which it was given each partition it owns, where that is older than
    /// its current epoch (KIP-1251: a commit at that epoch is still its own).
    pub assignment_epochs: Vec<(TopicPartition, i32)>,
}

/// The last rebalance of an external group: its members and their assignment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExternalMembership {
    /// The assignor the members agreed on (`range`, `cooperative-sticky`, …).
    pub protocol: String,
    /// The group's protocol type: `consumer`, or another client's (`connect`, …).
    #[serde(default = "consumer_type")]
    pub protocol_type: String,
    pub members: Vec<ExternalMember>,
}

fn consumer_type() -> String {
    "consumer".to_string()
}

/// A rebalance in progress: the coordinator waits until every member has rejoined. A live
/// member rejoins inside its next `poll()`; a dead one never does and is waited for until its
/// session times out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingRebalance {
    pub reason: String,
    pub rejoined: BTreeSet<String>,
}

/// Why a partition last changed hands: decides how a redelivery from its committed offset is
/// labelled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handoff {
    pub reason: DeliveryReason,
    /// The member id that held it before.
    pub from: Option<String>,
}

pub struct Group {
    pub name: String,
    /// Moves on each time a rebalance completes.
    pub generation: i32,
    /// In join order. A crashed member stays here until its session times out.
    pub members: Vec<Member>,
    /// Which member id owns which partition in the current generation.
    pub owners: BTreeMap<TopicPartition, String>,
    pub handoffs: BTreeMap<TopicPartition, Handoff>,
    pub rebalance: Option<PendingRebalance>,
    /// Every topic the group ever read (its figures keep showing after members leave).
    pub topics_read: Vec<String>,
    /// When the group last became Empty (KIP-211 counts offset expiry from here).
    pub empty_since: Option<Millis>,
    pub sink_kind: SinkKind,
    pub sink: Box<dyn Sink>,
    pub audit: GroupAudit,
    /// A group of real Kafka clients, not of the lab's consumers: its members as its last
    /// rebalance left them.
    pub external: Option<ExternalMembership>,
    /// The coordinator removed the group — DeleteGroups, or the offset cleanup that expired its
    /// last committed offset while it was Empty (KIP-211) — and describes it `Dead`. The lab
    /// keeps it while its own consumers name it (their sink and audit stay); a member joining, or
    /// an offset committed for it, brings it back.
    pub dead: bool,
    /// Whether `sink` is the group's own store. A group of real clients gets an empty
    /// in-memory stand-in (they never write to a lab sink): a client that makes a thousand
    /// groups must not hold a thousand databases open. The first lab consumer opens the real one.
    pub sink_opened: bool,
    /// `Some` while the group speaks Kafka 4's consumer protocol (KIP-848): its epochs, target
    /// assignment and the reconciliation state of each member. `members` and `owners` stay the
    /// membership and who owns what (assigned or being revoked), for every figure that reads them.
    pub consumer: Option<ConsumerGroup>,
}

impl Group {
    pub fn new(name: &str, sink_kind: SinkKind, sink: Box<dyn Sink>) -> Self {
        Self {
            name: name.to_string(),
            generation: 0,
            members: Vec::new(),
            owners: BTreeMap::new(),
            handoffs: BTreeMap::new(),
            rebalance: None,
            topics_read: Vec::new(),
            empty_since: None,
            sink_kind,
            sink,
            audit: GroupAudit::default(),
            external: None,
            dead: false,
            sink_opened: true,
            consumer: None,
        }
    }

    /// Whether anyone is in the group: the lab's consumers or real clients.
    pub fn has_members(&self) -> bool {
        !self.members.is_empty() || self.external.as_ref().is_some_and(|e| !e.members.is_empty())
    }

    pub fn state(&self) -> GroupState {
        if !self.has_members() {
            GroupState::Empty
        } else if self.members.is_empty() {
            // Real clients: the listener records completed rebalances only.
            GroupState::Stable
        } else if self.rebalance.is_some() {
            GroupState::PreparingRebalance
        } else {
            GroupState::Stable
        }
    }

    /// Its state as DescribeGroups names it: [`Group::state`], or `Dead` once the coordinator
    /// removed it ([`Group::dead`]).
    /// Removed by the coordinator (DeleteGroups, or its cleanup run) and kept only for the
    /// lab's own consumers: to a client it does not exist.
    pub fn is_dead(&self) -> bool {
        self.dead && !self.has_members()
    }

    pub fn state_name(&self) -> &'static str {
        if self.is_dead() {
            "Dead"
        } else if let Some(c) = &self.consumer {
            c.state_name()
        } else {
            self.state().name()
        }
    }

    /// A group no member ever joined: it exists because offsets were committed for it from
    /// outside (an admin, an `assign()` consumer, a transaction). Kafka's coordinator lists it
    /// Empty with no protocol type.
    pub fn offsets_only(&self) -> bool {
        self.generation == 0 && self.members.is_empty() && self.external.is_none()
    }

    /// Its protocol type as ListGroups and DescribeGroups name it: `consumer`, or none for a
    /// group only offsets made ([`Group::offsets_only`]).
    pub fn protocol_type(&self) -> &str {
        match &self.external {
            Some(e) => &e.protocol_type,
            None if self.consumer.is_some() => "consumer",
            None if self.offsets_only() => "",
            None => "consumer",
        }
    }

    /// The group's protocol: `consumer` for a KIP-848 group, else `classic`.
    pub fn protocol(&self) -> GroupProtocol {
        if self.consumer.is_some() {
            GroupProtocol::Consumer
        } else {
            GroupProtocol::Classic
        }
    }

    pub fn is_member(&self, member_id: &str) -> bool {
        self.members.iter().any(|m| m.id == member_id)
    }

    /// The topics the group's members subscribe to, in first-subscribed order.
    pub fn topics(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for m in &self.members {
            if !out.contains(&m.topic) {
                out.push(m.topic.clone());
            }
        }
        out
    }

    /// Every topic the group has read or reads, for its figures.
    pub fn topics_seen(&self) -> Vec<String> {
        let mut out = self.topics_read.clone();
        for t in self.topics() {
            if !out.contains(&t) {
                out.push(t);
            }
        }
        out
    }

    /// The group rebalances cooperatively only when every member can.
    pub fn cooperative(&self) -> bool {
        !self.members.is_empty() && self.members.iter().all(|m| m.cooperative)
    }

    /// Members a rebalance is still waiting for.
    pub fn waiting_for(&self) -> Vec<&Member> {
        match &self.rebalance {
            Some(r) => self
                .members
                .iter()
                .filter(|m| !r.rejoined.contains(&m.id))
                .collect(),
            None => Vec::new(),
        }
    }
}

/// The ids of the members subscribed to `topic`.
fn subscribers<'a>(members: &'a [Member], topic: &str) -> Vec<&'a str> {
    members
        .iter()
        .filter(|m| m.topic == topic)
        .map(|m| m.id.as_str())
        .collect()
}

/// A sticky assignment (the idea of Kafka's `CooperativeStickyAssignor`): per topic, each
/// subscribed member gets ⌊n/m⌋ or ⌈n/m⌉ partitions — the extra ones to those that already own
/// the most — keeping as many of its current partitions as it can; only the rest move.
pub fn sticky_assign(
    members: &[Member],
    topics: &[(String, i32)],
    current: &BTreeMap<TopicPartition, String>,
) -> BTreeMap<TopicPartition, String> {
    let mut out = BTreeMap::new();
    for (topic, partitions) in topics {
        let mut subscribed = subscribers(members, topic);
        if subscribed.is_empty() {
            continue;
        }
        let owned = |id: &str| -> Vec<i32> {
            (0..*partitions)
                .filter(|p| {
                    current
                        .get(&TopicPartition::new(topic.clone(), *p))
                        .map(String::as_str)
                        == Some(id)
                })
                .collect()
        };
        subscribed.sort_by(|a, b| owned(b).len().cmp(&owned(a).len()).then(a.cmp(b)));
        let m = subscribed.len() as i32;
        let (per, extra) = (partitions / m, partitions % m);
        let mut pool: Vec<i32> = Vec::new();
        let mut quota = BTreeMap::new();
        for (i, id) in subscribed.iter().enumerate() {
            let q = (per + i32::from((i as i32) < extra)) as usize;
            let mine = owned(id);
            for &p in mine.iter().take(q) {
                out.insert(TopicPartition::new(topic.clone(), p), (*id).to_string());
            }
            pool.extend(mine.iter().skip(q));
            quota.insert(*id, q.saturating_sub(mine.len()));
        }
        pool.extend((0..*partitions).filter(|p| {
            current
                .get(&TopicPartition::new(topic.clone(), *p))
                .is_none_or(|o| !subscribed.contains(&o.as_str()))
        }));
        pool.sort_unstable();
        let mut pool = pool.into_iter();
        for id in &subscribed {
            for _ in 0..quota.get(id).copied().unwrap_or(0) {
                if let Some(p) = pool.next() {
                    out.insert(TopicPartition::new(topic.clone(), p), (*id).to_string());
                }
            }
        }
    }
    out
}

/// Kafka's `RangeAssignor`: per topic, the members subscribed to it sorted by member id, its
/// partitions split into contiguous ranges, the first `partitions % members` taking one extra.
pub fn range_assign(members: &[Member], topics: &[(String, i32)]) -> BTreeMap<TopicPartition, String> {
    let mut out = BTreeMap::new();
    for (topic, partitions) in topics {
        let mut subscribed = subscribers(members, topic);
        subscribed.sort_unstable();
        if subscribed.is_empty() {
            continue;
        }
        let m = subscribed.len() as i32;
        let per = partitions / m;
        let extra = partitions % m;
        let mut next = 0;
        for (i, member) in subscribed.iter().enumerate() {
            let n = per + i32::from((i as i32) < extra);
            for p in next..next + n {
                out.insert(TopicPartition::new(topic.clone(), p), (*member).to_string());
            }
            next += n;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str, topic: &str) -> Member {
        Member {
            id: id.to_string(),
            consumer: id.to_string(),
            topic: topic.to_string(),
            expires_at: None,
            instance_id: None,
            cooperative: false,
        }
    }

    #[test]
    fn range_assignment_gives_contiguous_ranges_extra_to_the_first() {
        let members = vec![member("c2#1", "orders"), member("c1#1", "orders")];
        let a = range_assign(&members, &[("orders".into(), 5)]);
        let owner = |p| a.get(&TopicPartition::new("orders", p)).map(String::as_str);
        assert_eq!([owner(0), owner(1), owner(2)], [Some("c1#1"); 3]);
        assert_eq!([owner(3), owner(4)], [Some("c2#1"); 2]);
    }

    #[test]
    fn more_members_than_partitions_leaves_some_idle() {
        let members: Vec<Member> = (1..=3).map(|i| member(&format!("c{i}#1"), "orders")).collect();
        let a = range_assign(&members, &[("orders".into(), 2)]);
        assert_eq!(a.len(), 2);
        assert!(a.values().all(|m| m != "c3#1"));
    }

    #[test]
    fn the_sticky_assignment_moves_only_what_balance_needs() {
        let members = vec![member("c1#1", "orders"), member("c2#1", "orders")];
        let current: BTreeMap<TopicPartition, String> = (0..4)
            .map(|p| (TopicPartition::new("orders", p), "c1#1".to_string()))
            .collect();
        let a = sticky_assign(&members, &[("orders".into(), 4)], &current);
        let kept = (0..4)
            .filter(|p| a.get(&TopicPartition::new("orders", *p)).map(String::as_str) == Some("c1#1"))
            .count();
        assert_eq!(kept, 2, "c1 keeps two of its four");
        assert_eq!(a.values().filter(|o| *o == "c2#1").count(), 2);
        assert_eq!(
            sticky_assign(&members, &[("orders".into(), 4)], &a),
            a,
            "a balanced assignment is stable"
        );
    }

    #[test]
    fn a_topic_is_split_only_among_its_subscribers() {
        let members = vec![member("a#1", "orders"), member("b#1", "payments")];
        let a = range_assign(&members, &[("orders".into(), 2), ("payments".into(), 1)]);
        assert_eq!(
            a.get(&TopicPartition::new("orders", 1)).map(String::as_str),
            Some("a#1")
        );
        assert_eq!(
            a.get(&TopicPartition::new("payments", 0)).map(String::as_str),
            Some("b#1")
        );
    }
}

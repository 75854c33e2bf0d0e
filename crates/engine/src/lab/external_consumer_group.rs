//! Consumer-protocol groups (KIP-848) of real Kafka clients, as the lab's Kafka listener reports
//! them.
//!
//! Under the consumer protocol there is no generation that completes: each member heartbeats on
//! its own, and the coordinator moves it one step towards the target assignment at a time. So the
//! listener's coordinator reports the group's *state* whenever a heartbeat, a leave or a session
//! timeout changed it — the group epoch, and per member its epoch, what it owns, what it must
//! still revoke and what the target gives it — and the lab takes that state as it is, after
//! checking it keeps Kafka's invariants (an epoch never goes back, no partition has two owners).
//! A member's commit is then fenced by its member epoch (`STALE_MEMBER_EPOCH`) rather than by a
//! generation. The lab's own consumers run the same reconciliation in the engine
//! ([`super::consumer_protocol`]); these groups share its figures and its drawing.

use super::Lab;
use crate::error::LabError;
use crate::group::{
    ConsumerGroup, ConsumerGroupMember, ExternalConsumerMember, ExternalMember, ExternalMembership,
};
use crate::narrative::EventKind;
use crate::record::TopicPartition;
use std::collections::{BTreeMap, BTreeSet};

impl Lab {
    /// Records the state of a consumer-protocol group of real clients at group epoch `epoch`,
    /// its target assignment computed at `assignment_epoch` (no members: the group is Empty).
    /// Refused for a group of the lab's own consumers, for a classic group that still has
    /// members, for an epoch lower than the group's, an assignment epoch past the group epoch,
    /// and for a state in which a partition has two owners.
    pub fn external_consumer_group(
        &mut self,
        group: &str,
        epoch: i32,
        assignment_epoch: i32,
        mut members: Vec<ExternalConsumerMember>,
    ) -> Result<(), LabError> {
        crate::names::check_group_id(group)?;
        if assignment_epoch > epoch {
            return Err(LabError::InvalidArgument(format!(
                "group {group}: the assignment epoch ({assignment_epoch}) cannot be past the group epoch ({epoch})"
            )));
        }
        if let Some(g) = self.groups.get(group) {
            if !g.members.is_empty() {
                return Err(LabError::InvalidArgument(format!(
                    "group {group} has the lab's own consumers: real clients cannot join it"
                )));
            }
            match (&g.consumer, &g.external) {
                (Some(cg), _) if epoch < cg.group_epoch => {
                    return Err(LabError::InvalidArgument(format!(
                        "group {group} is at group epoch {}: an epoch never goes back (got {epoch})",
                        cg.group_epoch
                    )))
                }
                (None, Some(e)) if !e.members.is_empty() => {
                    return Err(LabError::InconsistentGroupProtocol(format!(
                        "group {group} is a classic group with members: consumer-protocol members cannot join it"
                    )))
                }
                _ => {}
            }
        }
        let mut owned = BTreeSet::new();
        for m in &members {
            // −2: a static member that left, its partitions kept for its next process.
            if m.epoch < 0 && m.epoch != -2 {
                return Err(LabError::InvalidArgument(format!(
                    "member {}: a member epoch is at least 0, or −2 for a static member that left (got {})",
                    m.member.id, m.epoch
                )));
            }
            for tp in m.member.partitions.iter().chain(&m.revoking) {
                if !owned.insert(tp.clone()) {
                    return Err(LabError::InvalidArgument(format!(
                        "group {group}: partition {tp} has two owners — under the consumer protocol a partition is handed to its new owner only once the old one revoked it"
                    )));
                }
            }
        }
        // As for a classic rebalance: a partition of a topic deleted since is left out.
        let mut unknown = BTreeSet::new();
        for m in &mut members {
            for list in [&mut m.member.partitions, &mut m.revoking, &mut m.target] {
                list.retain(|tp| {
                    let known = self.partition_log(tp).is_ok();
                    if !known {
                        unknown.insert(tp.to_string());
                    }
                    known
                });
            }
        }
        if !unknown.is_empty() {
            self.say(
                EventKind::Warning,
                format!(
                    "group {group}'s assignment names partitions the lab does not have ({}): left out",
                    unknown.into_iter().collect::<Vec<_>>().join(", ")
                ),
            );
        }
        if !self.groups.contains_key(group) {
            self.groups
                .insert(group.to_string(), super::external::stand_in(group)?);
        }
        let now = self.clock.now();
        let before = self.consumer_group_view(group);
        let g = self
            .groups
            .get_mut(group)
            .ok_or_else(|| LabError::UnknownGroup(group.to_string()))?;
        let mut cg = ConsumerGroup {
            group_epoch: epoch,
            assignment_epoch,
            target: BTreeMap::new(),
            members: BTreeMap::new(),
            // The listener's coordinator times its assignments; the engine runs none for it.
            assigned_at: None,
        };
        for m in &members {
            for tp in &m.target {
                cg.target.insert(tp.clone(), m.member.id.clone());
            }
            let mut cm = ConsumerGroupMember::new(&m.member.id, false, m.assignor, now);
            cm.member_epoch = m.epoch;
            cm.state = m.state;
            cm.assigned = m.member.partitions.iter().cloned().collect();
            cm.pending_revocation = m.revoking.iter().cloned().collect();
            cm.assignment_epochs = cm
                .assigned
                .iter()
                .chain(&cm.pending_revocation)
                .map(|tp| (tp.clone(), m.epoch))
                .collect();
            for (tp, since) in &m.assignment_epochs {
                if let Some(e) = cm.assignment_epochs.get_mut(tp) {
                    *e = (*since).min(m.epoch);
                }
            }
            cg.members.insert(m.member.id.clone(), cm);
        }
        let assignor = cg.assignor();
        g.generation = epoch;
        g.owners = cg.owners();
        for tp in g.owners.keys() {
            if !g.topics_read.contains(&tp.topic) {
                g.topics_read.push(tp.topic.clone());
            }
        }
        let was_empty = !g.has_members();
        g.empty_since = if members.is_empty() {
            g.empty_since.filter(|_| was_empty).or(Some(now))
        } else {
            None
        };
        g.dead = false;
        g.rebalance = None;
        g.consumer = Some(cg);
        g.external = Some(ExternalMembership {
            protocol: assignor.to_string(),
            protocol_type: "consumer".to_string(),
            members: members
                .iter()
                .map(|m| ExternalMember {
                    // Everything it still owns, as a classic group's members list theirs.
                    partitions: m.member.partitions.iter().chain(&m.revoking).cloned().collect(),
                    ..m.member.clone()
                })
                .collect(),
        });
        let text = describe(group, epoch, &members, before.as_ref().map(|b| b.group_epoch));
        self.say(EventKind::Group, text);
        Ok(())
    }
}

fn list(tps: &[TopicPartition]) -> String {
    if tps.is_empty() {
        "nothing".to_string()
    } else {
        tps.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
    }
}

/// The narration of a group's new state: the epoch, and each member's epoch and partitions.
fn describe(group: &str, epoch: i32, members: &[ExternalConsumerMember], before: Option<i32>) -> String {
    if members.is_empty() {
        return format!(
            "group {group} (real Kafka clients, consumer protocol) is now Empty at group epoch {epoch}; its committed offsets stay"
        );
    }
    let who: Vec<String> = members
        .iter()
        .map(|m| {
            let mut s = format!(
                "{} ({}) at epoch {} owns {}",
                m.member.id,
                m.member.client_id,
                m.epoch,
                list(&m.member.partitions)
            );
            if !m.revoking.is_empty() {
                s.push_str(&format!(", revoking {}", list(&m.revoking)));
            }
            s
        })
        .collect();
    let moved = match before {
        Some(b) if b < epoch => format!("moved to group epoch {epoch}"),
        None => format!("is a consumer group at group epoch {epoch}"),
        Some(_) => format!("reconciles at group epoch {epoch}"),
    };
    format!(
        "group {group} (real Kafka clients, consumer protocol) {moved} — {}",
        who.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::MemberState;

    fn lab() -> Lab {
        let mut lab = Lab::default();
        let config = crate::log::TopicConfig {
            partitions: 4,
            ..Default::default()
        };
        lab.create_topic("orders", config).expect("topic");
        lab
    }

    fn member(id: &str, epoch: i32, owns: &[i32], revoking: &[i32]) -> ExternalConsumerMember {
        let tps = |ps: &[i32]| {
            ps.iter()
                .map(|p| TopicPartition::new("orders", *p))
                .collect::<Vec<_>>()
        };
        ExternalConsumerMember {
            member: ExternalMember {
                id: id.to_string(),
                client_id: "rdkafka".to_string(),
                partitions: tps(owns),
                topics: vec!["orders".to_string()],
                ..ExternalMember::default()
            },
            epoch,
            state: if revoking.is_empty() {
                MemberState::Stable
            } else {
                MemberState::UnrevokedPartitions
            },
            revoking: tps(revoking),
            target: tps(owns),
            assignor: Default::default(),
            assignment_epochs: Vec::new(),
        }
    }

    #[test]
    fn a_reported_state_is_the_groups_and_commits_are_fenced_by_member_epoch() {
        let mut lab = lab();
        lab.external_consumer_group("g", 2, 2, vec![member("a", 2, &[0, 1, 2, 3], &[])])
            .expect("state");
        lab.external_consumer_group(
            "g",
            3,
            3,
            vec![member("a", 2, &[0, 1], &[2, 3]), member("b", 3, &[], &[])],
        )
        .expect("state");
        let view = lab.consumer_group_view("g").expect("a consumer group");
        assert_eq!(view.group_epoch, 3);
        assert_eq!(view.members.len(), 2);
        assert_eq!(view.members[0].revoking, vec!["orders-2", "orders-3"]);
        assert_eq!(lab.group("g").expect("group").state_name(), "Reconciling");
        let offsets = [(TopicPartition::new("orders", 0), 5)];
        let none = BTreeMap::new();
        lab.external_commit("g", "a", 2, &offsets, &none, &BTreeMap::new())
            .expect("a's commit at its own epoch");
        let stale = lab.external_commit("g", "a", 1, &offsets, &none, &BTreeMap::new());
        assert!(
            matches!(stale, Err(LabError::StaleMemberEpoch { current: 2, .. })),
            "{stale:?}"
        );
        let unknown = lab.external_commit("g", "z", 3, &offsets, &none, &BTreeMap::new());
        assert!(
            matches!(unknown, Err(LabError::UnknownMember { .. })),
            "{unknown:?}"
        );
    }

    #[test]
    fn a_commit_at_an_older_epoch_is_the_members_for_a_partition_it_had_by_then() {
        let mut lab = lab();
        let mut a = member("a", 3, &[0], &[]);
        a.assignment_epochs = vec![(TopicPartition::new("orders", 0), 2)];
        lab.external_consumer_group("g", 3, 3, vec![a, member("b", 3, &[1], &[])])
            .expect("state");
        let none = BTreeMap::new();
        let at = |p: i32| [(TopicPartition::new("orders", p), 9)];
        lab.external_commit("g", "a", 2, &at(0), &none, &BTreeMap::new())
            .expect("orders-0 was a's at epoch 2 (KIP-1251)");
        let other = lab.external_commit("g", "a", 2, &at(1), &none, &BTreeMap::new());
        assert!(
            matches!(other, Err(LabError::StaleMemberEpoch { .. })),
            "{other:?}"
        );
        let before = lab.external_commit("g", "b", 2, &at(1), &none, &BTreeMap::new());
        assert!(
            matches!(before, Err(LabError::StaleMemberEpoch { .. })),
            "{before:?}"
        );
        let ahead = lab.external_commit("g", "a", 4, &at(0), &none, &BTreeMap::new());
        assert!(
            matches!(ahead, Err(LabError::StaleMemberEpoch { .. })),
            "{ahead:?}"
        );
    }

    /// KIP-345 through the listener: the same generation is taken again only when a static
    /// member's new id replaces its old one, the partitions unchanged.
    #[test]
    fn a_classic_rebalance_at_the_same_generation_is_a_static_replacement_or_refused() {
        let mut lab = lab();
        let member = |id: &str, p: i32| ExternalMember {
            id: id.into(),
            instance_id: Some("i-1".into()),
            partitions: vec![TopicPartition::new("orders", p)],
            ..ExternalMember::default()
        };
        lab.external_rebalance("c", 1, "range", vec![member("old", 0)])
            .expect("generation 1");
        let moved = lab.external_rebalance("c", 1, "range", vec![member("new", 1)]);
        assert!(
            moved.is_err(),
            "other partitions at the same generation: {moved:?}"
        );
        lab.external_rebalance("c", 1, "range", vec![member("new", 0)])
            .expect("a static replacement");
        let g = lab.group("c").expect("group");
        assert_eq!(g.generation, 1);
        assert_eq!(g.external.as_ref().map(|e| e.members[0].id.as_str()), Some("new"));
        let none = BTreeMap::new();
        lab.external_commit(
            "c",
            "new",
            1,
            &[(TopicPartition::new("orders", 0), 3)],
            &none,
            &BTreeMap::new(),
        )
        .expect("the new process commits at the generation");
        let old = lab.external_commit(
            "c",
            "old",
            1,
            &[(TopicPartition::new("orders", 0), 4)],
            &none,
            &BTreeMap::new(),
        );
        assert!(matches!(old, Err(LabError::UnknownMember { .. })), "{old:?}");
    }

    #[test]
    fn an_epoch_going_back_or_a_partition_with_two_owners_is_refused_and_changes_nothing() {
        let mut lab = lab();
        lab.external_consumer_group("g", 3, 3, vec![member("a", 3, &[0, 1, 2, 3], &[])])
            .expect("state");
        let back = lab.external_consumer_group("g", 2, 2, vec![]);
        assert!(back.is_err());
        let twice = lab.external_consumer_group(
            "g",
            4,
            4,
            vec![member("a", 3, &[0, 1], &[]), member("b", 4, &[1], &[])],
        );
        assert!(twice.is_err());
        let view = lab.consumer_group_view("g").expect("a consumer group");
        assert_eq!((view.group_epoch, view.members.len()), (3, 1));
    }

    #[test]
    fn an_empty_group_keeps_its_offsets_and_a_classic_group_with_members_is_not_taken_over() {
        let mut lab = lab();
        lab.external_rebalance(
            "c",
            1,
            "range",
            vec![ExternalMember {
                id: "m".into(),
                partitions: vec![TopicPartition::new("orders", 0)],
                ..ExternalMember::default()
            }],
        )
        .expect("classic");
        let taken = lab.external_consumer_group("c", 2, 2, vec![member("a", 2, &[0], &[])]);
        assert!(
            matches!(taken, Err(LabError::InconsistentGroupProtocol(_))),
            "{taken:?}"
        );
        lab.external_consumer_group("g", 2, 2, vec![member("a", 2, &[0], &[])])
            .expect("state");
        lab.external_commit(
            "g",
            "a",
            2,
            &[(TopicPartition::new("orders", 0), 7)],
            &BTreeMap::new(),
            &BTreeMap::new(),
        )
        .expect("commit");
        lab.external_consumer_group("g", 3, 3, vec![]).expect("empty");
        let g = lab.group("g").expect("group");
        assert_eq!(g.state_name(), "Empty");
        assert!(g.empty_since.is_some());
        let key = crate::offsets::OffsetKey::new("g", &TopicPartition::new("orders", 0));
        assert_eq!(lab.offsets().fetch(&key).map(|v| v.offset), Some(7));
    }
}

//! Kafka 4's consumer group protocol (KIP-848) on the lab's logical clock: members join and
//! heartbeat, the coordinator bumps the group epoch and computes the target assignment, and each
//! member is reconciled on its own heartbeats ([`ConsumerGroup::reconcile`]) — a partition that
//! moves is revoked by its old owner's next `poll()` (the revoke callback, then a heartbeat that
//! acknowledges it at once) before its new owner's next heartbeat hands it over. Nobody else
//! stops. Also the rules for groups that mix protocols: a classic group upgraded when a
//! consumer-protocol member joins it, downgraded when the last one leaves
//! (`group.consumer.migration.policy=bidirectional`, Kafka's default).

use super::membership::Departure;
use super::Lab;
use crate::consumer::Assignor;
use crate::delivery::DeliveryReason;
use crate::error::LabError;
use crate::group::{
    ConsumerGroup, ConsumerGroupMember, GroupProtocol, Handoff, Member, MemberState, Reconciled,
    CONSUMER_SESSION_TIMEOUT_MS,
};
use crate::narrative::EventKind;
use crate::record::TopicPartition;
use std::collections::BTreeSet;

/// `orders-0, orders-1`, or `nothing`.
pub(crate) fn list(tps: &[TopicPartition]) -> String {
    if tps.is_empty() {
        "nothing".to_string()
    } else {
        tps.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
    }
}

impl Lab {
    /// A member joins a group under the consumer protocol, or a classic member joins a group
    /// that already speaks it. An empty classic group is replaced by a consumer group; a
    /// non-empty one is upgraded (its members keep their assignment and the classic protocol).
    pub(crate) fn join_consumer_group(
        &mut self,
        name: &str,
        group: &str,
        member: Member,
        revived: bool,
    ) -> Result<(), LabError> {
        let now = self.now();
        let cfg = self.consumer(name)?.config.clone();
        let g = self
            .groups
            .get_mut(group)
            .ok_or_else(|| LabError::UnknownGroup(group.to_string()))?;
        let mut note = None;
        if g.consumer.is_none() {
            if g.members.is_empty() {
                note = Some(format!("group {group} is a consumer group (group.protocol=consumer, KIP-848): the coordinator assigns its partitions and reconciles each member on its heartbeats — no rebalance barrier"));
                let mut created = ConsumerGroup::created();
                if revived {
                    // The coordinator removed this group and a lab consumer brings it back: its
                    // epochs go on from where they were, as a classic group's generation does —
                    // the lab's transactional sink fences writes from older generations, and
                    // would refuse every write of a group started again at epoch 2.
                    created.group_epoch = created.group_epoch.max(g.generation);
                    created.assignment_epoch = created.group_epoch;
                }
                g.generation = created.group_epoch;
                g.consumer = Some(created);
            } else {
                // Kafka answers the classic members' pending JoinGroup/SyncGroup with
                // REBALANCE_IN_PROGRESS; the conversion keeps the last completed assignment.
                g.rebalance = None;
                g.consumer = Some(ConsumerGroup::from_classic(
                    g.generation,
                    &g.members,
                    &g.owners,
                    now,
                ));
                note = Some(format!("{} joins classic group {group} with group.protocol=consumer: group.consumer.migration.policy=bidirectional upgrades it to a consumer group at group epoch {} — its {} classic member(s) keep their partitions and go on rejoining with JoinGroup/SyncGroup", member.id, g.generation, g.members.len()));
            }
        }
        let id = member.id.clone();
        g.members.push(member);
        let classic = cfg.group_protocol == GroupProtocol::Classic;
        if let Some(cg) = g.consumer.as_mut() {
            cg.members.insert(
                id.clone(),
                ConsumerGroupMember::new(&id, classic, cfg.remote_assignor, now),
            );
        }
        if let Some(n) = note {
            self.say(EventKind::Group, n);
        }
        let how = if classic {
            "joins with the classic protocol (JoinGroup) and is reconciled by the coordinator's assignment"
                .to_string()
        } else {
            format!(
                "sends its first heartbeat (member epoch 0, group.remote.assignor={})",
                cfg.remote_assignor
            )
        };
        self.say(EventKind::Group, format!("{id} {how}"));
        self.bump_group_epoch(group, &format!("{id} joined"));
        self.heartbeat_member(name)
    }

    /// A new group epoch. Its target assignment is computed for the members as they are then —
    /// at once, or, within a second of the last one, once that second has passed (Kafka 4.4's
    /// `group.consumer.assignment.interval.ms`, KIP-1263): the group is "Assigning" meanwhile and
    /// its members reconcile towards the last target. The others learn of it on their next
    /// heartbeat.
    pub(crate) fn bump_group_epoch(&mut self, group: &str, why: &str) {
        let now = self.now();
        let Some(g) = self.groups.get_mut(group) else {
            return;
        };
        let Some(cg) = g.consumer.as_mut() else {
            return;
        };
        cg.group_epoch += 1;
        g.generation = cg.group_epoch;
        let (epoch, behind) = (cg.group_epoch, cg.assignment_epoch);
        match cg.assignment_due(now) {
            Some(due) if due > now => self.say(
                EventKind::Group,
                format!(
                    "group {group} moves to group epoch {epoch} ({why}); its coordinator computes a target assignment at most once a second (group.consumer.assignment.interval.ms), so the group is Assigning until {} — its members reconcile towards epoch {behind} meanwhile",
                    crate::clock::format_instant(due),
                ),
            ),
            _ => self.run_assignment(group, &format!("group {group} moves to group epoch {epoch} ({why})")),
        }
    }

    /// Computes `group`'s target assignment at its group epoch for its members as they are now,
    /// and says so after `lead`.
    fn run_assignment(&mut self, group: &str, lead: &str) {
        let now = self.now();
        let Some(g) = self.groups.get(group) else {
            return;
        };
        let topics: Vec<(String, i32)> = g
            .topics()
            .into_iter()
            .filter_map(|t| self.topics.get(&t).map(|tp| (t, tp.partitions.len() as i32)))
            .collect();
        let members = g.members.clone();
        let Some(g) = self.groups.get_mut(group) else {
            return;
        };
        let Some(cg) = g.consumer.as_mut() else {
            return;
        };
        cg.assign(&members, &topics);
        cg.assigned_at = Some(now);
        let assignor = cg.assignor();
        let lines: Vec<String> = members
            .iter()
            .map(|m| {
                let mine: Vec<TopicPartition> = cg.target_of(&m.id).into_iter().collect();
                format!("{} ← {}", m.id, list(&mine))
            })
            .collect();
        self.say(
            EventKind::Group,
            format!(
                "{lead}; the {assignor} assignor's target assignment: {}",
                if lines.is_empty() {
                    "no members".to_string()
                } else {
                    lines.join("; ")
                }
            ),
        );
    }

    /// When the next deferred target assignment of a group of the lab's own consumers is due.
    pub(crate) fn next_assignment_due(&self) -> Option<crate::clock::Millis> {
        let now = self.now();
        self.groups
            .values()
            // The listener's coordinator times its own groups' assignments.
            .filter(|g| !g.members.is_empty())
            .filter_map(|g| g.consumer.as_ref()?.assignment_due(now))
            .min()
    }

    /// Runs the target assignments due by `now`.
    pub(crate) fn run_due_assignments(&mut self, now: crate::clock::Millis) {
        let due: Vec<(String, i32)> = self
            .groups
            .iter()
            .filter(|(_, g)| !g.members.is_empty())
            .filter_map(|(name, g)| {
                let cg = g.consumer.as_ref()?;
                cg.assignment_due(now)
                    .filter(|d| *d <= now)
                    .map(|_| (name.clone(), cg.group_epoch))
            })
            .collect();
        for (group, epoch) in due {
            self.run_assignment(
                &group,
                &format!("group {group}'s coordinator computes the target assignment of group epoch {epoch}"),
            );
        }
    }

    /// One heartbeat of `name`'s member (`ConsumerGroupHeartbeat`, or a classic member's
    /// JoinGroup inside a consumer group): reconciled one step towards the target; the partitions
    /// it now owns and its client lacks are handed to it, those it must revoke are marked for its
    /// next poll. Does nothing for a consumer that is not a member of a consumer group.
    pub(crate) fn heartbeat_member(&mut self, name: &str) -> Result<(), LabError> {
        let now = self.now();
        let c = self.consumer(name)?;
        let (member, group) = (c.member_id(), c.config.group.clone());
        let owned: BTreeSet<TopicPartition> = c.assignment.keys().cloned().collect();
        let Some(g) = self.groups.get_mut(&group) else {
            return Ok(());
        };
        let Some(cg) = g.consumer.as_mut() else {
            return Ok(());
        };
        if let Some(m) = cg.members.get_mut(&member) {
            m.heartbeat_at = now;
        }
        let Some(step) = cg.reconcile(&member, &|tp| owned.contains(tp)) else {
            return Ok(());
        };
        let Some(m) = cg.members.get(&member).cloned() else {
            return Ok(());
        };
        let awaiting: Vec<TopicPartition> = cg.awaiting(&member).into_iter().collect();
        g.owners = cg.owners();
        for tp in &step.released {
            g.handoffs.insert(
                tp.clone(),
                Handoff {
                    reason: DeliveryReason::RebalanceRedelivery,
                    from: Some(member.clone()),
                },
            );
        }
        let c = self.consumer_mut(name)?;
        c.generation = m.member_epoch;
        c.revoking = m.pending_revocation.clone();
        let to_start: Vec<TopicPartition> = m.assigned.difference(&owned).cloned().collect();
        if step.changed() || !to_start.is_empty() {
            self.say_reconciled(&member, &group, &step, &m, &awaiting);
        }
        for tp in to_start {
            self.assign(name, &tp)?;
        }
        Ok(())
    }

    /// The narrative's line for a heartbeat that changed something.
    fn say_reconciled(
        &mut self,
        member: &str,
        group: &str,
        step: &Reconciled,
        m: &ConsumerGroupMember,
        awaiting: &[TopicPartition],
    ) {
        let mut parts = Vec::new();
        if !step.released.is_empty() {
            parts.push(format!("releases {}", list(&step.released)));
        }
        if step.epoch_before != step.epoch_after {
            parts.push(format!(
                "member epoch {} → {}",
                step.epoch_before, step.epoch_after
            ));
        }
        let assigned: Vec<TopicPartition> = m.assigned.iter().cloned().collect();
        parts.push(format!("owns {}", list(&assigned)));
        if !step.newly_revoking.is_empty() {
            parts.push(format!(
                "must revoke {} first (its next poll runs the revoke callback; it keeps member epoch {} until then)",
                list(&step.newly_revoking),
                m.member_epoch
            ));
        }
        if m.state == MemberState::UnreleasedPartitions && !awaiting.is_empty() {
            parts.push(format!(
                "awaits {} (its previous owner has not revoked it yet)",
                list(awaiting)
            ));
        }
        self.say(
            EventKind::Group,
            format!("{member} heartbeat to group {group}: {}", parts.join("; ")),
        );
    }

    /// Inside `poll()` of a member of a consumer group: a consumer-protocol member runs the
    /// revoke callback for the partitions the coordinator asked back and acknowledges it with a
    /// heartbeat at once; a classic member rejoins if its assignment is behind the target.
    /// Returns whether the consumer crashed (a planned fault) in the callback.
    pub(crate) fn reconcile_in_poll(&mut self, name: &str) -> Result<bool, LabError> {
        let c = self.consumer(name)?;
        let (member, group) = (c.member_id(), c.config.group.clone());
        let Some(cg) = self.groups.get(&group).and_then(|g| g.consumer.as_ref()) else {
            return Ok(false);
        };
        let Some(m) = cg.members.get(&member) else {
            return Ok(false);
        };
        if m.classic {
            let behind = m.member_epoch != cg.assignment_epoch || m.state != MemberState::Stable;
            return if behind {
                self.classic_rejoin(name)
            } else {
                Ok(false)
            };
        }
        let revoking: Vec<TopicPartition> = c
            .revoking
            .iter()
            .filter(|tp| c.assignment.contains_key(*tp))
            .cloned()
            .collect();
        if c.revoking.is_empty() {
            return Ok(false);
        }
        if !revoking.is_empty() {
            self.revoke_some(name, &revoking, "consumer protocol")?;
            if !self.consumer(name)?.is_running() {
                return Ok(true);
            }
        }
        self.consumer_mut(name)?.revoking.clear();
        self.heartbeat_member(name)?;
        Ok(false)
    }

    /// A classic member of a consumer group rejoins (JoinGroup/SyncGroup) inside its poll: an
    /// eager one gives up every partition first (its revoke hook commits), a cooperative one only
    /// those the target moves away; the coordinator's assignment then hands it what is free.
    fn classic_rejoin(&mut self, name: &str) -> Result<bool, LabError> {
        let c = self.consumer(name)?;
        let (member, group) = (c.member_id(), c.config.group.clone());
        let cooperative = c.config.assignor == Assignor::CooperativeSticky;
        let target = self
            .groups
            .get(&group)
            .and_then(|g| g.consumer.as_ref())
            .map(|cg| cg.target_of(&member))
            .unwrap_or_default();
        let give_up: Vec<TopicPartition> = c
            .assignment
            .keys()
            .filter(|tp| !cooperative || !target.contains(*tp))
            .cloned()
            .collect();
        self.say(
            EventKind::Group,
            format!(
                "{member} rejoins group {group} inside poll() (classic protocol in a consumer group){}",
                if give_up.is_empty() {
                    String::new()
                } else {
                    format!(": its revoke hook gives up {}", list(&give_up))
                }
            ),
        );
        if !give_up.is_empty() {
            self.revoke_some(name, &give_up, if cooperative { "cooperative" } else { "eager" })?;
            if !self.consumer(name)?.is_running() {
                return Ok(true);
            }
            if let Some(g) = self.groups.get_mut(&group) {
                for tp in &give_up {
                    g.handoffs.insert(
                        tp.clone(),
                        Handoff {
                            reason: DeliveryReason::RebalanceRedelivery,
                            from: Some(member.clone()),
                        },
                    );
                }
            }
        }
        self.heartbeat_member(name)?;
        Ok(false)
    }

    /// A member leaves a consumer group (a leave heartbeat, epoch -1) or is removed (its session
    /// expired): its partitions are free at once, the group epoch moves on. When only classic
    /// members remain, the group is downgraded back to a classic group, which rebalances.
    pub(crate) fn leave_consumer_group(
        &mut self,
        group: &str,
        member_id: &str,
        how: Departure,
    ) -> Result<(), LabError> {
        let now = self.now();
        let Some(g) = self.groups.get_mut(group) else {
            return Ok(());
        };
        let Some(cg) = g.consumer.as_mut() else {
            return Ok(());
        };
        g.members.retain(|m| m.id != member_id);
        let gone = cg.members.remove(member_id);
        let reason = match how {
            Departure::Closed => DeliveryReason::RestartRedelivery,
            Departure::Dead => DeliveryReason::CrashRedelivery,
        };
        for tp in gone
            .iter()
            .flat_map(|m| m.assigned.iter().chain(&m.pending_revocation))
        {
            g.handoffs.insert(
                tp.clone(),
                Handoff {
                    reason,
                    from: Some(member_id.to_string()),
                },
            );
        }
        g.owners = cg.owners();
        let downgrade = !g.members.is_empty() && cg.members.values().all(|m| m.classic);
        if g.members.is_empty() {
            cg.group_epoch += 1;
            cg.assignment_epoch = cg.group_epoch;
            cg.target.clear();
            g.generation = cg.group_epoch;
            g.empty_since = Some(now);
            let epoch = cg.group_epoch;
            self.say(
                EventKind::Group,
                format!("{member_id} left group {group}, which is now Empty (group epoch {epoch}); its committed offsets stay"),
            );
            return Ok(());
        }
        if downgrade {
            let epoch = cg.group_epoch;
            g.consumer = None;
            g.generation = epoch;
            self.say(
                EventKind::Group,
                format!("{member_id} was group {group}'s last consumer-protocol member: group.consumer.migration.policy=bidirectional downgrades it to a classic group at generation {epoch}, which rebalances"),
            );
            self.request_rebalance(group, &format!("{member_id} left; downgraded to classic"));
            return self.try_complete_rebalance(group);
        }
        self.bump_group_epoch(group, &format!("{member_id} left"));
        Ok(())
    }

    /// A classic member joins a consumer group that has no members left: the empty consumer
    /// group is replaced by a classic one (its committed offsets stay).
    pub(crate) fn classic_join_replaces_empty_consumer_group(&mut self, group: &str) {
        let Some(g) = self.groups.get_mut(group) else {
            return;
        };
        if g.consumer.is_none() || !g.members.is_empty() {
            return;
        }
        g.consumer = None;
        g.generation = 0;
        self.say(
            EventKind::Group,
            format!("a classic member joins empty consumer group {group}: the coordinator replaces it with a classic group (its committed offsets stay)"),
        );
    }

    /// When a crashed consumer-protocol member's session expires: its last heartbeat plus
    /// `group.consumer.session.timeout.ms`. `None` for a member of a classic group, or a classic
    /// member (its own `session.timeout.ms` counts).
    pub(crate) fn consumer_session_expiry(&self, group: &str, member: &str) -> Option<crate::clock::Millis> {
        let m = self.groups.get(group)?.consumer.as_ref()?.members.get(member)?;
        (!m.classic).then(|| {
            m.last_heartbeat_by(self.now())
                .saturating_add(CONSUMER_SESSION_TIMEOUT_MS)
        })
    }

    /// Static membership under the consumer protocol: a new process may take its instance's
    /// place only once the previous one sent its static leave (closed); a crashed one still holds
    /// it until its session expires (UNRELEASED_INSTANCE_ID).
    pub(crate) fn check_instance_released(&self, name: &str) -> Result<(), LabError> {
        let c = self.consumer(name)?;
        let Some(instance) = &c.config.group_instance_id else {
            return Ok(());
        };
        if c.config.group_protocol != GroupProtocol::Consumer {
            return Ok(());
        }
        let Some(g) = self.groups.get(&c.config.group).filter(|g| g.consumer.is_some()) else {
            return Ok(());
        };
        let Some(held) = g
            .members
            .iter()
            .find(|m| m.instance_id.as_deref() == Some(instance))
        else {
            return Ok(());
        };
        if matches!(c.state, crate::consumer::ConsumerState::Crashed { .. }) {
            return Err(LabError::UnreleasedInstanceId(format!(
                "group.instance.id={instance} is still held by {} in group {}: it crashed without its static leave, so the coordinator keeps it until its session expires{}",
                held.id,
                g.name,
                held.expires_at.map(|t| format!(" at {}", crate::clock::format_instant(t))).unwrap_or_default()
            )));
        }
        Ok(())
    }

    /// A restarted static member takes `old`'s place in a consumer group: its member epoch and
    /// assigned partitions, without a new group epoch. Returns the member epoch and what it takes.
    pub(crate) fn replace_static_member(
        &mut self,
        group: &str,
        old: &str,
        new: &str,
    ) -> Option<(i32, Vec<TopicPartition>)> {
        let now = self.now();
        let g = self.groups.get_mut(group)?;
        let cg = g.consumer.as_mut()?;
        let taken = cg.replace_member(old, new, now);
        let epoch = cg.members.get(new)?.member_epoch;
        g.owners = cg.owners();
        Some((epoch, taken))
    }

    /// The earliest heartbeat that would change something: a running consumer-protocol member
    /// behind its group's target, or awaiting a partition that is free now. Heartbeats that
    /// change nothing are not timers (a member's session cannot expire while it runs).
    pub(crate) fn next_useful_heartbeat(&self) -> Option<crate::clock::Millis> {
        let now = self.now();
        self.members_to_reconcile()
            .into_iter()
            .map(|(_, m)| m.next_heartbeat_after(now))
            .min()
    }

    /// (consumer, member) for each running consumer-protocol member whose next heartbeat would
    /// reconcile it further.
    fn members_to_reconcile(&self) -> Vec<(String, ConsumerGroupMember)> {
        let mut out = Vec::new();
        for (name, c) in self.consumers.iter() {
            if !c.is_running() || c.config.group_protocol != GroupProtocol::Consumer {
                continue;
            }
            let Some(cg) = self.groups.get(&c.config.group).and_then(|g| g.consumer.as_ref()) else {
                continue;
            };
            let member = c.member_id();
            let Some(m) = cg.members.get(&member) else {
                continue;
            };
            let owned: BTreeSet<&TopicPartition> = c.assignment.keys().collect();
            let mut probe = cg.clone();
            let changes = probe
                .reconcile(&member, &|tp| owned.contains(tp))
                .is_some_and(|r| r.changed());
            if changes {
                out.push((name.clone(), m.clone()));
            }
        }
        out
    }

    /// Fires the heartbeats that fall after `since` and by `now` and reconcile their member
    /// further.
    pub(crate) fn fire_heartbeats(
        &mut self,
        since: crate::clock::Millis,
        now: crate::clock::Millis,
    ) -> Result<(), LabError> {
        let due: Vec<String> = self
            .members_to_reconcile()
            .into_iter()
            .filter(|(_, m)| m.next_heartbeat_after(since) <= now)
            .map(|(name, _)| name)
            .collect();
        for name in due {
            self.heartbeat_member(&name)?;
        }
        Ok(())
    }
}

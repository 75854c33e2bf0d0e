//! Group membership: members joining and leaving, and the rebalances that follow — every
//! member rejoining, a new generation, the assignment handed out, sessions and poll intervals
//! expiring.

use super::Lab;
use crate::clock::{format_duration, Millis};
use crate::consumer::{Consumer, ConsumerState, FetchState, PositionOrigin};
use crate::delivery::DeliveryReason;
use crate::error::LabError;
use crate::group::{range_assign, sticky_assign, Group, Handoff, Member, PendingRebalance};
use crate::narrative::EventKind;
use crate::offsets::OffsetKey;
use crate::record::{Offset, TopicPartition};
use crate::sink::SinkKind;
use crate::strategy::{AutoOffsetReset, CommitSource};
use std::collections::BTreeMap;

/// A rebalance's outcome, as it is narrated and handed out.
struct Settled {
    members: Vec<Member>,
    /// Partition → member id.
    assignment: BTreeMap<TopicPartition, String>,
    /// (owner, partition) that stay where they are (cooperative protocol).
    kept: Vec<(String, TopicPartition)>,
    cooperative: bool,
}

/// Why a member left the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Departure {
    /// LeaveGroup sent by a graceful close (or by an application that stopped on an error).
    Closed,
    /// Its session timed out.
    Dead,
}

impl Lab {
    /// Adds a running consumer's new incarnation to its group and starts a rebalance.
    pub(crate) fn join(&mut self, name: &str, group: &str) -> Result<(), LabError> {
        let now = self.now();
        let c = self.consumer_mut(name)?;
        let interval = c.config.auto_commit_interval_ms;
        c.last_poll_at = now;
        c.next_auto_commit = (c.config.strategy.auto_commits() && c.config.commits_to_kafka())
            .then(|| now.saturating_add(interval));
        let member = Member {
            id: c.member_id(),
            consumer: name.to_string(),
            topic: c.config.topic.clone(),
            expires_at: None,
            instance_id: c.config.group_instance_id.clone(),
            cooperative: c.config.assignor == crate::consumer::Assignor::CooperativeSticky,
        };
        let id = member.id.clone();
        let consumer_protocol = c.config.group_protocol == crate::group::GroupProtocol::Consumer;
        if !consumer_protocol {
            self.classic_join_replaces_empty_consumer_group(group);
        }
        let g = self
            .groups
            .get_mut(group)
            .ok_or_else(|| LabError::UnknownGroup(group.to_string()))?;
        if !g.topics_read.contains(&member.topic) {
            g.topics_read.push(member.topic.clone());
        }
        g.empty_since = None;
        let revived = std::mem::replace(&mut g.dead, false);
        if consumer_protocol || g.consumer.is_some() {
            return self.join_consumer_group(name, group, member, revived);
        }
        g.members.push(member);
        self.request_rebalance(group, &format!("{id} joined"));
        if let Some(r) = self.groups.get_mut(group).and_then(|g| g.rebalance.as_mut()) {
            r.rejoined.insert(id);
        }
        self.try_complete_rebalance(group)
    }

    /// Removes a member and records why its partitions moved; the others rebalance.
    pub(crate) fn leave(&mut self, group: &str, member_id: &str, how: Departure) -> Result<(), LabError> {
        let Some(g) = self.groups.get_mut(group) else {
            return Ok(());
        };
        if !g.is_member(member_id) {
            // LeaveGroup from a member the coordinator already removed (a fenced zombie):
            // UNKNOWN_MEMBER_ID, and nothing changes.
            return Ok(());
        }
        if g.consumer.is_some() {
            return self.leave_consumer_group(group, member_id, how);
        }
        g.members.retain(|m| m.id != member_id);
        if let Some(r) = g.rebalance.as_mut() {
            r.rejoined.remove(member_id);
        }
        let owned: Vec<TopicPartition> = g
            .owners
            .iter()
            .filter(|(_, o)| o.as_str() == member_id)
            .map(|(tp, _)| tp.clone())
            .collect();
        for tp in owned {
            g.owners.remove(&tp);
            let reason = match how {
                Departure::Closed => DeliveryReason::RestartRedelivery,
                Departure::Dead => DeliveryReason::CrashRedelivery,
            };
            g.handoffs.insert(
                tp,
                Handoff {
                    reason,
                    from: Some(member_id.to_string()),
                },
            );
        }
        if g.members.is_empty() {
            g.rebalance = None;
            g.owners.clear();
            g.generation += 1;
            g.empty_since = Some(self.clock.now());
            let generation = g.generation;
            self.say(
                EventKind::Group,
                format!("group {group} is now Empty (generation {generation}); its committed offsets stay"),
            );
            self.record_group_metadata(group);
            return Ok(());
        }
        self.request_rebalance(group, &format!("{member_id} left"));
        self.try_complete_rebalance(group)
    }

    /// Starts a rebalance if none is in progress.
    pub(crate) fn request_rebalance(&mut self, group: &str, why: &str) {
        let Some(g) = self.groups.get_mut(group) else {
            return;
        };
        if g.rebalance.is_some() {
            return;
        }
        g.rebalance = Some(PendingRebalance {
            reason: why.to_string(),
            rejoined: Default::default(),
        });
        let others = g.members.len() > 1;
        if others {
            self.say(
                EventKind::Group,
                format!(
                    "group {group} starts rebalancing ({why}): every member must rejoin — a live one inside its next poll(), a dead one is waited for until its session times out"
                ),
            );
        }
    }

    /// Inside `poll()`: if the group is rebalancing and this member has not rejoined yet, run
    /// its revoke hook (the strategy's commit), give up its partitions and rejoin. Returns
    /// whether the consumer crashed (a planned fault) in the hook.
    pub(crate) fn rejoin_if_needed(&mut self, name: &str) -> Result<bool, LabError> {
        let c = self.consumer(name)?;
        let member = c.member_id();
        let group = c.config.group.clone();
        if !self.groups.get(&group).is_some_and(|g| g.is_member(&member)) {
            // Removed while it was away (max.poll.interval.ms): its partitions are lost, not
            // revoked — no commit — and it joins again.
            if self.producers.get(name).is_some_and(|p| p.ongoing.is_some()) {
                // onPartitionsLost: a transaction over lost partitions must not commit.
                let _ = self.abort_transaction(name);
            }
            let c = self.consumer_mut(name)?;
            let dropped = c.in_flight.len();
            c.assignment.clear();
            c.in_flight.clear();
            c.pending_async.clear();
            self.say(
                EventKind::Group,
                format!("{member} finds it is no longer a member of {group}: its partitions were lost (onPartitionsLost, nothing committed{}); it joins again", if dropped > 0 { format!(", {dropped} unprocessed record(s) dropped") } else { String::new() }),
            );
            self.join(name, &group)?;
            return Ok(false);
        }
        let must_rejoin = self
            .groups
            .get(&group)
            .and_then(|g| g.rebalance.as_ref())
            .is_some_and(|r| !r.rejoined.contains(&member));
        if !must_rejoin {
            return Ok(false);
        }
        let cooperative = self.groups.get(&group).is_some_and(Group::cooperative);
        if self.consumer(name)?.assignment.is_empty() {
            self.say(
                EventKind::Group,
                format!("{member} rejoins group {group} inside poll()"),
            );
        } else if cooperative {
            self.say(
                EventKind::Group,
                format!("{member} rejoins group {group} inside poll() and keeps its partitions: the cooperative protocol revokes only what must move"),
            );
        } else {
            if self.close_commit(name, true) || !self.consumer(name)?.is_running() {
                return Ok(true);
            }
            let c = self.consumer_mut(name)?;
            let dropped = c.in_flight.len();
            c.assignment.clear();
            c.in_flight.clear();
            let mut text = format!("{member} rejoins group {group} inside poll(): its revoke hook ran and it gave up its partitions");
            if dropped > 0 {
                text.push_str(&format!(
                    " ({dropped} polled record(s) still unprocessed were dropped)"
                ));
            }
            self.say(EventKind::Group, text);
        }
        if let Some(r) = self.groups.get_mut(&group).and_then(|g| g.rebalance.as_mut()) {
            r.rejoined.insert(member);
        }
        self.try_complete_rebalance(&group)?;
        Ok(false)
    }

    /// Completes the rebalance once every member has rejoined: new generation, range
    /// assignment, positions for the new owners.
    pub(crate) fn try_complete_rebalance(&mut self, group: &str) -> Result<(), LabError> {
        let Some(g) = self.groups.get(group) else {
            return Err(LabError::UnknownGroup(group.to_string()));
        };
        let Some(pending) = &g.rebalance else {
            return Ok(());
        };
        if !g.waiting_for().is_empty() {
            return Ok(());
        }
        let why = pending.reason.clone();
        let members = g.members.clone();
        let topics: Vec<(String, i32)> = g
            .topics()
            .into_iter()
            .filter_map(|t| self.topics.get(&t).map(|tp| (t, tp.partitions.len() as i32)))
            .collect();
        let cooperative = g.cooperative();
        let assignment = if cooperative {
            sticky_assign(&members, &topics, &g.owners)
        } else {
            range_assign(&members, &topics)
        };
        let kept = if cooperative {
            let previous = g.owners.clone();
            self.revoke_moving(&previous, &assignment)?
        } else {
            Vec::new()
        };
        let Some(g) = self.groups.get_mut(group) else {
            return Err(LabError::UnknownGroup(group.to_string()));
        };
        // Eager protocol: every partition was revoked, so even one that stays with its owner
        // resumes from the committed offset.
        for tp in assignment.keys() {
            if cooperative && kept.iter().any(|(_, k)| k == tp) {
                continue;
            }
            if let Some(old) = g.owners.get(tp) {
                g.handoffs.insert(
                    tp.clone(),
                    Handoff {
                        reason: DeliveryReason::RebalanceRedelivery,
                        from: Some(old.clone()),
                    },
                );
            }
        }
        g.generation += 1;
        g.owners = assignment.clone();
        g.rebalance = None;
        let generation = g.generation;
        let settled = Settled {
            members,
            assignment,
            kept,
            cooperative,
        };
        self.say_stable(group, generation, &why, &settled);
        self.record_group_metadata(group);
        self.hand_out(group, generation, &settled)
    }

    /// Cooperative protocol: a live owner revokes just the partitions that move (its hook
    /// commits them); the ones it keeps go on from where it is — returned as (owner, partition).
    /// Kafka completes this with a second, follow-up rebalance; the lab shows both as one step.
    fn revoke_moving(
        &mut self,
        previous: &BTreeMap<TopicPartition, String>,
        assignment: &BTreeMap<TopicPartition, String>,
    ) -> Result<Vec<(String, TopicPartition)>, LabError> {
        let mut kept = Vec::new();
        let mut moving: BTreeMap<String, Vec<TopicPartition>> = BTreeMap::new();
        for (tp, old) in previous {
            if assignment.get(tp) == Some(old) {
                kept.push((old.clone(), tp.clone()));
            } else {
                moving.entry(old.clone()).or_default().push(tp.clone());
            }
        }
        for (old, tps) in moving {
            let owner = old.split('#').next().unwrap_or_default().to_string();
            if self
                .consumers
                .get(&owner)
                .is_some_and(|c| c.is_running() && c.member_id() == old)
            {
                self.revoke_some(&owner, &tps, "cooperative")?;
            }
        }
        Ok(kept)
    }

    /// The narrative's line for a completed rebalance: who got what.
    fn say_stable(&mut self, group: &str, generation: i32, why: &str, s: &Settled) {
        let (members, assignment, kept, cooperative) = (&s.members, &s.assignment, &s.kept, s.cooperative);
        let lines: Vec<String> = members
            .iter()
            .map(|m| {
                let mine: Vec<String> = assignment
                    .iter()
                    .filter(|(_, o)| **o == m.id)
                    .map(|(tp, _)| tp.to_string())
                    .collect();
                format!(
                    "{} ← {}",
                    m.id,
                    if mine.is_empty() {
                        "nothing".to_string()
                    } else {
                        mine.join(", ")
                    }
                )
            })
            .collect();
        let protocol = if cooperative {
            let stay: Vec<String> = kept.iter().map(|(_, tp)| tp.to_string()).collect();
            format!(
                " [cooperative-sticky: {} kept working{}]",
                if stay.is_empty() {
                    "nothing".to_string()
                } else {
                    stay.join(", ")
                },
                if stay.is_empty() { "" } else { " without a pause" }
            )
        } else {
            String::new()
        };
        self.say(
            EventKind::Group,
            format!(
                "group {group} is Stable at generation {generation} ({why}): {}{protocol}",
                lines.join("; ")
            ),
        );
    }

    /// The new generation handed to the live members: each gets its partitions (with a fetch
    /// position), and those `auto.offset.reset=none` stopped leave the group.
    fn hand_out(&mut self, group: &str, generation: i32, s: &Settled) -> Result<(), LabError> {
        let (members, assignment, kept, cooperative) = (&s.members, &s.assignment, &s.kept, s.cooperative);
        for m in members {
            if !self
                .consumers
                .get(&m.consumer)
                .is_some_and(|c| c.is_running() && c.member_id() == m.id)
            {
                continue;
            }
            if let Some(c) = self.consumers.get_mut(&m.consumer) {
                c.generation = generation;
                if !cooperative {
                    c.assignment.clear();
                    c.pending_error = None;
                }
            }
            let tps: Vec<TopicPartition> = assignment
                .iter()
                .filter(|(_, o)| **o == m.id)
                .filter(|(tp, _)| !kept.iter().any(|(_, k)| k == *tp))
                .map(|(tp, _)| tp.clone())
                .collect();
            for tp in tps {
                self.assign(&m.consumer, &tp)?;
                if !self.consumers.get(&m.consumer).is_some_and(Consumer::is_running) {
                    break; // auto.offset.reset=none stopped it
                }
            }
        }
        // Members stopped by auto.offset.reset=none leave once the assignment is handed out.
        for m in members {
            if self
                .consumers
                .get(&m.consumer)
                .is_some_and(|c| matches!(c.state, ConsumerState::Failed { .. }))
            {
                self.leave(group, &m.id, Departure::Closed)?;
            }
        }
        Ok(())
    }

    /// The cooperative revoke: the hook commits what the strategy commits, for `tps` only, then
    /// the consumer drops those partitions and their in-flight records.
    /// `how` names the protocol in the narrative (`cooperative`, `consumer protocol`, `eager`).
    pub(crate) fn revoke_some(
        &mut self,
        name: &str,
        tps: &[TopicPartition],
        how: &str,
    ) -> Result<(), LabError> {
        let c = self.consumer(name)?;
        let source = c.config.strategy.rules().at_revoke(c.config.commit_on_revoke);
        let member = c.member_id();
        if c.config.is_transactional_producer() {
            if self.close_commit(name, true) || !self.consumer(name)?.is_running() {
                return Ok(());
            }
        } else if let Some(source) = source.filter(|_| c.config.commits_to_kafka()) {
            let offsets: Vec<(TopicPartition, Offset)> = tps
                .iter()
                .filter_map(|tp| {
                    let f = c.assignment.get(tp)?;
                    let o = match source {
                        CommitSource::Position => Some(f.position),
                        CommitSource::Stored => f.stored,
                        CommitSource::Processed => f.processed,
                    }?;
                    Some((tp.clone(), o))
                })
                .collect();
            let handed_over = source != CommitSource::Processed;
            if self.commit_offsets(name, offsets, "commit in the revoke hook", true, handed_over) {
                return Ok(()); // a planned crash
            }
        }
        let c = self.consumer_mut(name)?;
        let before = c.in_flight.len();
        for tp in tps {
            c.assignment.remove(tp);
        }
        c.in_flight.retain(|f| !tps.contains(&f.tp));
        let dropped = before - c.in_flight.len();
        let list: Vec<String> = tps.iter().map(ToString::to_string).collect();
        self.say(
            EventKind::Group,
            format!(
                "{member} revokes {} ({how}){}",
                list.join(", "),
                if dropped > 0 {
                    format!("; {dropped} polled record(s) of them dropped unprocessed")
                } else {
                    String::new()
                }
            ),
        );
        Ok(())
    }

    /// Gives `tp` to a running consumer: its position comes from the sink (transactional), the
    /// committed offset, or `auto.offset.reset`.
    pub(crate) fn assign(&mut self, name: &str, tp: &TopicPartition) -> Result<(), LabError> {
        let c = self.consumer(name)?;
        let cfg = c.config.clone();
        let member = c.member_id();
        let g = self.group(&cfg.group)?;
        let handoff = g.handoffs.get(tp).cloned();
        let repeat = match &handoff {
            Some(Handoff {
                reason: DeliveryReason::RestartRedelivery,
                from: Some(from),
            }) if from.split('#').next() != Some(name) => DeliveryReason::RebalanceRedelivery,
            Some(h) => h.reason,
            None => DeliveryReason::RestartRedelivery,
        };
        let from_sink = if cfg.sink == SinkKind::Transactional {
            g.sink.stored_offset(tp)?
        } else {
            None
        };
        let stored = self
            .offsets
            .fetch(&OffsetKey::new(&cfg.group, tp))
            .map(|v| v.offset);
        // A negative committed offset (an admin's −1 or −2) is no position: Java's client takes it
        // for no committed offset, and auto.offset.reset decides.
        let committed = stored.filter(|&o| o >= 0);
        let none = match stored {
            Some(o) if o < 0 => format!("{member}'s group holds committed offset {o} for {tp}, no position"),
            _ => format!("{member} finds no committed offset for {tp}"),
        };
        let log = self.partition_log(tp)?;
        let start = log.log_start_offset();
        // "latest" for a read_committed consumer is the last stable offset, so that it never
        // starts in the middle of an open transaction.
        let end = self.latest_offset(tp, cfg.isolation)?;
        let origin = PositionOrigin::Assigned(repeat);
        let (position, text): (Option<Offset>, String) = match (from_sink, committed) {
            (Some(o), _) => (Some(o), format!("{member} starts {tp} at offset {o}, the next offset stored in its transactional sink")),
            (None, Some(o)) => (Some(o), format!("{member} starts {tp} at committed offset {o}")),
            (None, None) => match cfg.auto_offset_reset {
                AutoOffsetReset::Earliest => (
                    Some(start),
                    format!("{none}: auto.offset.reset=earliest → {start}"),
                ),
                AutoOffsetReset::Latest => (
                    Some(end),
                    format!(
                        "{none}: auto.offset.reset=latest → {end} (the {} record(s) already there will never be read by this group)",
                        end - start
                    ),
                ),
                AutoOffsetReset::None => (
                    None,
                    format!("{none} and auto.offset.reset=none: NoOffsetForPartitionException"),
                ),
            },
        };
        let Some(position) = position else {
            // Thrown from the next poll(), where the client resolves its positions; until then
            // the consumer is a member like any other.
            self.say(
                EventKind::Warning,
                format!("{text} awaits {member}'s next poll()"),
            );
            if let Some(c) = self.consumers.get_mut(name) {
                c.pending_error.get_or_insert(text);
            }
            return Ok(());
        };
        if let Some(g) = self.groups.get_mut(&cfg.group) {
            g.audit.note_start(tp, position);
        }
        if let Some(c) = self.consumers.get_mut(name) {
            c.assignment.insert(
                tp.clone(),
                FetchState {
                    position,
                    origin,
                    stored: None,
                    processed: None,
                },
            );
        }
        self.say(EventKind::Group, text);
        Ok(())
    }

    /// Expires members whose session timed out by `now`.
    pub(crate) fn expire_sessions(&mut self, now: i64) -> Result<(), LabError> {
        let expired: Vec<(String, String, Millis)> = self
            .groups
            .values()
            .flat_map(|g| {
                g.members
                    .iter()
                    .filter(|m| m.expires_at.is_some_and(|t| t <= now))
                    .map(|m| (g.name.clone(), m.id.clone(), m.expires_at.unwrap_or(now)))
                    .collect::<Vec<_>>()
            })
            .collect();
        for (group, member, _) in expired {
            self.say(
                EventKind::Group,
                format!("no heartbeat from {member} for session.timeout.ms: the coordinator removes it from group {group}"),
            );
            self.leave(&group, &member, Departure::Dead)?;
        }
        Ok(())
    }

    /// Members whose application has not called poll within `max.poll.interval.ms` leave their
    /// group (the Java client's heartbeat thread sends LeaveGroup). The process keeps running:
    /// until its next poll it is a zombie, still holding what it thinks are its partitions.
    pub(crate) fn expire_poll_intervals(&mut self, now: i64) -> Result<(), LabError> {
        let late: Vec<(String, String, String, Millis)> = self
            .consumers
            .values()
            .filter(|c| c.is_running() && c.last_poll_at.saturating_add(c.config.max_poll_interval_ms) <= now)
            .filter(|c| {
                self.groups
                    .get(&c.config.group)
                    .is_some_and(|g| g.is_member(&c.member_id()))
            })
            .map(|c| {
                (
                    c.name().to_string(),
                    c.config.group.clone(),
                    c.member_id(),
                    c.config.max_poll_interval_ms,
                )
            })
            .collect();
        for (_, group, member, interval) in late {
            self.say(
                EventKind::Warning,
                format!("{member} has not called poll() for max.poll.interval.ms ({}): it leaves group {group}, which rebalances without it — until its next poll it is a zombie", format_duration(interval)),
            );
            self.leave(&group, &member, Departure::Closed)?;
        }
        Ok(())
    }

    /// The earliest `max.poll.interval.ms` deadline of a running member, if any.
    pub(crate) fn next_poll_deadline(&self) -> Option<Millis> {
        self.consumers
            .values()
            .filter(|c| c.is_running())
            .filter(|c| {
                self.groups
                    .get(&c.config.group)
                    .is_some_and(|g| g.is_member(&c.member_id()))
            })
            .map(|c| c.last_poll_at.saturating_add(c.config.max_poll_interval_ms))
            .min()
    }

    /// The earliest session expiry of a dead member, if any.
    pub(crate) fn next_session_expiry(&self) -> Option<Millis> {
        self.groups
            .values()
            .flat_map(|g| g.members.iter().filter_map(|m| m.expires_at))
            .min()
    }
}

//! Joining and leaving groups: consumers starting, crashing, restarting and closing, and the
//! rebalances that follow.

use super::Lab;
use crate::audit::DeliveryReason;
use crate::clock::format_duration;
use crate::consumer::{Consumer, ConsumerConfig, ConsumerState, FetchState, PositionOrigin};
use crate::error::LabError;
use crate::group::{range_assign, Group, Handoff};
use crate::narrative::EventKind;
use crate::offsets::OffsetKey;
use crate::record::{Offset, TopicPartition};
use crate::sink::SinkKind;
use crate::strategy::{AutoOffsetReset, CommitStrategy};

/// Why a member left the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Departure {
    /// LeaveGroup sent by a graceful close.
    Closed,
    /// Its session timed out, or a new incarnation replaced it.
    Dead,
}

impl Lab {
    /// Starts a consumer: it joins its group, which rebalances and hands it partitions.
    pub fn add_consumer(&mut self, config: ConsumerConfig) -> Result<(), LabError> {
        if self.consumers.contains_key(&config.name) {
            return Err(LabError::ConsumerExists(config.name.clone()));
        }
        validate_name("consumer", &config.name)?;
        validate_name("group", &config.group)?;
        self.topic(&config.topic)?;
        if config.max_poll_records == 0 || config.max_poll_records > 1_000_000 {
            return Err(LabError::InvalidArgument(format!(
                "max-poll must be between 1 and 1000000 (got {})",
                config.max_poll_records
            )));
        }
        for (what, v) in [
            ("interval", config.auto_commit_interval_ms),
            ("session-timeout", config.session_timeout_ms),
        ] {
            if v <= 0 {
                return Err(LabError::InvalidArgument(format!("{what} must be positive")));
            }
        }
        if let Some(g) = self.groups.get(&config.group) {
            if g.sink_kind != config.sink {
                return Err(LabError::SinkMismatch {
                    group: config.group.clone(),
                    existing: g.sink_kind.to_string(),
                    requested: config.sink.to_string(),
                });
            }
        } else {
            let sink = self.sinks.open(&config.group, config.sink)?;
            self.groups
                .insert(config.group.clone(), Group::new(&config.group, config.sink, sink));
            self.say(
                EventKind::Setup,
                format!(
                    "group {} writes to its {} sink ({}): {}",
                    config.group,
                    config.sink,
                    self.sinks.describe(),
                    config.sink.explanation()
                ),
            );
        }
        let name = config.name.clone();
        let group = config.group.clone();
        let topic = config.topic.clone();
        let mut summary = format!(
            "consumer {name} joins group {group} on topic {topic}: commit={}{}, max.poll.records={}, sink={}, auto.offset.reset={}",
            config.strategy,
            match config.strategy {
                CommitStrategy::AutoTimer | CommitStrategy::AutoPoll =>
                    format!(" every {}", format_duration(config.auto_commit_interval_ms)),
                _ => String::new(),
            },
            config.max_poll_records,
            config.sink,
            config.auto_offset_reset,
        );
        if !config.commits_to_kafka() {
            summary.push_str(" — offsets are stored in the sink's transactions, so nothing is committed to __consumer_offsets");
        }
        self.consumers.insert(name.clone(), Consumer::new(config));
        if let Some(g) = self.groups.get_mut(&group) {
            if !g.topics.contains(&topic) {
                g.topics.push(topic);
            }
        }
        self.say(EventKind::Setup, summary);
        self.join(&name)
    }

    /// Kill -9: the process and everything in its memory vanish; the group is not told.
    pub fn crash(&mut self, name: &str) -> Result<(), LabError> {
        self.running(name, "only a running consumer can crash")?;
        let now = self.now();
        let c = self.consumer_mut(name)?;
        let in_flight = c.in_flight.len();
        let pending = c.pending_async.len();
        let timeout = c.config.session_timeout_ms;
        let group = c.config.group.clone();
        let member = c.member_id();
        c.wipe_memory();
        c.state = ConsumerState::Crashed { at: now };
        let mut lost = vec![format!("its fetch position")];
        if in_flight > 0 {
            lost.push(format!("{in_flight} polled but unprocessed record(s)"));
        }
        if pending > 0 {
            lost.push(format!("{pending} async commit(s) still in flight"));
        }
        self.say(
            EventKind::Crash,
            format!(
                "{member} crashed (kill -9) and lost {}. It sent no LeaveGroup: group {group} keeps it as a member, its partitions stalled, until session.timeout.ms ({}) passes without a heartbeat",
                lost.join(", "),
                format_duration(timeout)
            ),
        );
        Ok(())
    }

    /// Starts a new incarnation of a crashed, closed or failed consumer.
    pub fn restart(&mut self, name: &str) -> Result<(), LabError> {
        let c = self.consumer(name)?;
        if c.is_running() {
            return Err(LabError::WrongState {
                name: name.to_string(),
                state: "running".into(),
                hint: "crash or close it before restarting",
            });
        }
        let group = c.config.group.clone();
        let was_member = self.groups.get(&group).is_some_and(|g| g.is_member(name));
        if was_member {
            // The old incarnation never left; the coordinator drops it when the new one joins.
            self.depart(&group, name, Departure::Dead);
            self.say(
                EventKind::Group,
                format!("the coordinator drops the dead incarnation of {name} as its new incarnation joins"),
            );
        }
        let c = self.consumer_mut(name)?;
        c.incarnation += 1;
        c.state = ConsumerState::Running;
        c.wipe_memory();
        let member = c.member_id();
        self.say(
            EventKind::Setup,
            format!("{member} started (a new process: empty memory)"),
        );
        self.join(name)
    }

    /// Graceful shutdown: the close-time commit of the strategy, then LeaveGroup.
    pub fn close(&mut self, name: &str) -> Result<(), LabError> {
        self.running(name, "only a running consumer can close")?;
        let c = self.consumer(name)?;
        let group = c.config.group.clone();
        let member = c.member_id();
        let dropped = c.in_flight.len();
        self.close_commit(name);
        if !self.consumer(name)?.is_running() {
            return Ok(()); // crashed by the explorer during the close-time commit
        }
        if dropped > 0 {
            self.say(
                EventKind::Warning,
                format!("{member} shuts down with {dropped} polled record(s) it never processed"),
            );
        }
        let c = self.consumer_mut(name)?;
        c.wipe_memory();
        c.state = ConsumerState::Closed;
        self.say(
            EventKind::Group,
            format!("{member} closed and sent LeaveGroup: group {group} rebalances at once"),
        );
        self.depart(&group, name, Departure::Closed);
        self.rebalance(&group, &format!("{member} left"))
    }

    /// Adds a running consumer to its group's members and rebalances.
    fn join(&mut self, name: &str) -> Result<(), LabError> {
        let now = self.now();
        let c = self.consumer_mut(name)?;
        let interval = c.config.auto_commit_interval_ms;
        c.next_auto_commit = match c.config.strategy {
            CommitStrategy::AutoTimer | CommitStrategy::AutoPoll if c.config.commits_to_kafka() => {
                Some(now + interval)
            }
            _ => None,
        };
        let group = c.config.group.clone();
        let member = c.member_id();
        if let Some(g) = self.groups.get_mut(&group) {
            g.members.push(name.to_string());
        }
        self.rebalance(&group, &format!("{member} joined"))
    }

    /// Removes a member from the group's member list and records why its partitions moved.
    pub(crate) fn depart(&mut self, group: &str, name: &str, how: Departure) {
        let Some(g) = self.groups.get_mut(group) else {
            return;
        };
        g.members.retain(|m| m != name);
        let owned: Vec<TopicPartition> = g
            .owners
            .iter()
            .filter(|(_, o)| o.as_str() == name)
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
                    from: Some(name.to_string()),
                },
            );
        }
    }

    /// An eager rebalance: every running member gives up its partitions (running its revoke
    /// hook), the generation moves on, and the partitions are handed out again by range.
    pub(crate) fn rebalance(&mut self, group: &str, why: &str) -> Result<(), LabError> {
        let Some(g) = self.groups.get(group) else {
            return Err(LabError::UnknownGroup(group.to_string()));
        };
        let members = g.members.clone();
        let topics: Vec<(String, i32)> = g
            .topics
            .iter()
            .filter_map(|t| {
                self.topics
                    .get(t)
                    .map(|tp| (t.clone(), tp.partitions.len() as i32))
            })
            .collect();
        for m in &members {
            if self
                .consumers
                .get(m)
                .is_some_and(|c| c.is_running() && !c.assignment.is_empty())
            {
                self.revoke_all(m);
            }
        }
        // The explorer may have crashed a member inside its revoke hook; it stays a member.
        let assignment = range_assign(&members, &topics);
        let Some(g) = self.groups.get_mut(group) else {
            return Err(LabError::UnknownGroup(group.to_string()));
        };
        for tp in assignment.keys() {
            // Eager protocol: even a partition that stays with its owner is revoked and its
            // position fetched again from the committed offset.
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
        let generation = g.generation;
        if members.is_empty() {
            self.say(
                EventKind::Group,
                format!(
                    "group {group} is now Empty (generation {generation}, {why}); its committed offsets stay"
                ),
            );
            return Ok(());
        }
        let mut lines = Vec::new();
        for m in &members {
            let mine: Vec<String> = assignment
                .iter()
                .filter(|(_, o)| *o == m)
                .map(|(tp, _)| tp.to_string())
                .collect();
            let status = match self.consumers.get(m) {
                Some(c) if c.is_running() => "",
                _ => " (dead, stalled)",
            };
            lines.push(format!(
                "{m}{status} ← {}",
                if mine.is_empty() {
                    "nothing".to_string()
                } else {
                    mine.join(", ")
                }
            ));
        }
        self.say(
            EventKind::Group,
            format!(
                "group {group} rebalanced to generation {generation} ({why}): {}",
                lines.join("; ")
            ),
        );
        for m in &members {
            if !self.consumers.get(m).is_some_and(Consumer::is_running) {
                continue;
            }
            let tps: Vec<TopicPartition> = assignment
                .iter()
                .filter(|(_, o)| *o == m)
                .map(|(tp, _)| tp.clone())
                .collect();
            if let Some(c) = self.consumers.get_mut(m) {
                c.generation = generation;
            }
            for tp in tps {
                self.assign(m, &tp)?;
                if !self.consumers.get(m).is_some_and(Consumer::is_running) {
                    break; // auto.offset.reset=none stopped it
                }
            }
        }
        Ok(())
    }

    /// Gives `tp` to a running consumer: its position comes from the sink (transactional), the
    /// committed offset, or `auto.offset.reset`.
    fn assign(&mut self, name: &str, tp: &TopicPartition) -> Result<(), LabError> {
        let c = self.consumer(name)?;
        let cfg = c.config.clone();
        let member = c.member_id();
        let g = self.group(&cfg.group)?;
        let handoff = g.handoffs.get(tp).cloned();
        let repeat = match &handoff {
            Some(Handoff {
                reason: DeliveryReason::RestartRedelivery,
                from: Some(from),
            }) if from != name => DeliveryReason::RebalanceRedelivery,
            Some(h) => h.reason,
            None => DeliveryReason::RestartRedelivery,
        };
        let from_sink = if cfg.sink == SinkKind::Transactional {
            g.sink.stored_offset(tp)?
        } else {
            None
        };
        let committed = self
            .offsets
            .fetch(&OffsetKey::new(&cfg.group, tp))
            .map(|v| v.offset);
        let log = self.partition_log(tp)?;
        let (start, end) = (log.log_start_offset(), log.log_end_offset());
        let (position, origin, text): (Option<Offset>, PositionOrigin, String) = match (from_sink, committed) {
            (Some(o), _) => (
                Some(o),
                PositionOrigin::Assigned(repeat),
                format!("{member} starts {tp} at offset {o}, the next offset stored in its transactional sink"),
            ),
            (None, Some(o)) => (
                Some(o),
                PositionOrigin::Assigned(repeat),
                format!("{member} starts {tp} at committed offset {o}"),
            ),
            (None, None) => match cfg.auto_offset_reset {
                AutoOffsetReset::Earliest => (
                    Some(start),
                    PositionOrigin::Assigned(repeat),
                    format!("{member} finds no committed offset for {tp}: auto.offset.reset=earliest → {start}"),
                ),
                AutoOffsetReset::Latest => (
                    Some(end),
                    PositionOrigin::Assigned(repeat),
                    format!("{member} finds no committed offset for {tp}: auto.offset.reset=latest → {end} (the {} record(s) already there will never be read by this group)", end - start),
                ),
                AutoOffsetReset::None => (
                    None,
                    PositionOrigin::Assigned(repeat),
                    format!("{member} finds no committed offset for {tp} and auto.offset.reset=none: NoOffsetForPartitionException"),
                ),
            },
        };
        let Some(position) = position else {
            self.fail(name, text);
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

    /// The consumer stops on an exception the application did not handle.
    pub(crate) fn fail(&mut self, name: &str, error: String) {
        if let Some(c) = self.consumers.get_mut(name) {
            c.wipe_memory();
            c.state = ConsumerState::Failed { error: error.clone() };
        }
        self.say(EventKind::Refused, format!("{error}; the consumer stops"));
    }

    /// The revoke hook of an eager rebalance: commit what the strategy commits on revoke, then
    /// drop the partitions and their in-flight records.
    fn revoke_all(&mut self, name: &str) {
        self.close_commit(name);
        let Some(c) = self.consumers.get_mut(name) else {
            return;
        };
        if !c.is_running() {
            return;
        }
        let dropped = c.in_flight.len();
        let member = c.member_id();
        c.assignment.clear();
        c.in_flight.clear();
        if dropped > 0 {
            self.say(
                EventKind::Warning,
                format!("{member} had its partitions revoked with {dropped} polled record(s) unprocessed; they are dropped"),
            );
        }
    }

    /// Expires crashed members whose session timed out by `now`.
    pub(crate) fn expire_sessions(&mut self, now: i64) -> Result<(), LabError> {
        let expired: Vec<(String, String, i64)> = self
            .consumers
            .values()
            .filter_map(|c| match c.state {
                ConsumerState::Crashed { at } if at + c.config.session_timeout_ms <= now => {
                    let g = self.groups.get(&c.config.group)?;
                    g.is_member(c.name()).then(|| {
                        (
                            c.name().to_string(),
                            c.config.group.clone(),
                            c.config.session_timeout_ms,
                        )
                    })
                }
                _ => None,
            })
            .collect();
        for (name, group, timeout) in expired {
            self.say(
                EventKind::Group,
                format!(
                    "no heartbeat from {name} for session.timeout.ms ({}): the coordinator removes it from group {group}",
                    format_duration(timeout)
                ),
            );
            self.depart(&group, &name, Departure::Dead);
            self.rebalance(&group, &format!("{name}'s session expired"))?;
        }
        Ok(())
    }
}

fn validate_name(what: &str, name: &str) -> Result<(), LabError> {
    if name.is_empty()
        || name.len() > 249
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        return Err(LabError::InvalidArgument(format!(
            "invalid {what} name '{name}': use 1 to 249 characters from [a-zA-Z0-9._-]"
        )));
    }
    Ok(())
}

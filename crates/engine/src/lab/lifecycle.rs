//! A consumer's life: started (joining its group), crashed, restarted, closed, or stopped by an
//! error its application does not handle.

use super::membership::Departure;
use super::Lab;
use crate::clock::{format_duration, format_instant};
use crate::consumer::{Consumer, ConsumerConfig, ConsumerState};
use crate::delivery::DeliveryReason;
use crate::error::LabError;
use crate::group::{Group, Handoff};
use crate::narrative::EventKind;
use crate::record::TopicPartition;

impl Lab {
    /// What every new consumer — of a consumer group or a share group — must be: a name no
    /// consumer of either kind has, valid names, an existing topic, a batch size in range.
    pub(crate) fn check_new_consumer(
        &self,
        name: &str,
        group: &str,
        topic: &str,
        max_poll_records: usize,
    ) -> Result<(), LabError> {
        if self.consumers.contains_key(name) || self.is_share_consumer(name) {
            return Err(LabError::ConsumerExists(name.to_string()));
        }
        crate::names::check_consumer_name(name)?;
        crate::names::check_group_id(group)?;
        self.topic(topic)?;
        if max_poll_records == 0 || max_poll_records > 1_000_000 {
            return Err(LabError::InvalidArgument(format!(
                "max-poll must be between 1 and 1000000 (got {max_poll_records})"
            )));
        }
        Ok(())
    }

    /// Starts a consumer: it joins its group, which rebalances and hands it partitions.
    pub fn add_consumer(&mut self, config: ConsumerConfig) -> Result<(), LabError> {
        self.check_new_consumer(
            &config.name,
            &config.group,
            &config.topic,
            config.max_poll_records,
        )?;
        for (what, v) in [
            ("interval", config.auto_commit_interval_ms),
            ("session-timeout", config.session_timeout_ms),
            ("max-poll-interval", config.max_poll_interval_ms),
        ] {
            if v <= 0 {
                return Err(LabError::InvalidArgument(format!("{what} must be positive")));
            }
        }
        self.validate_transactional(&config)?;
        self.check_group_type(&config.group, false)?;
        if let Some(g) = self.groups.get(&config.group) {
            if g.external.as_ref().is_some_and(|e| !e.members.is_empty()) {
                return Err(LabError::InvalidArgument(format!(
                    "group {} is in use by real Kafka clients (through the listener): give the lab's consumer another group",
                    config.group
                )));
            }
            if g.sink_opened && g.sink_kind != config.sink {
                return Err(LabError::SinkMismatch {
                    group: config.group.clone(),
                    existing: g.sink_kind.to_string(),
                    requested: config.sink.to_string(),
                });
            }
            if !g.sink_opened {
                // A group real clients used: its stand-in held nothing; the lab's consumer
                // writes to a real sink.
                self.irreversible += 1;
                let sink = self.sinks.open(&config.group, config.sink)?;
                if let Some(g) = self.groups.get_mut(&config.group) {
                    g.sink = sink;
                    g.sink_kind = config.sink;
                    g.sink_opened = true;
                }
            }
        } else {
            self.irreversible += 1;
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
        let mut summary = format!(
            "consumer {name} joins group {group} on topic {}: commit={}{}, max.poll.records={}, sink={}, auto.offset.reset={}",
            config.topic,
            config.strategy,
            if config.strategy.auto_commits() {
                format!(" every {}", format_duration(config.auto_commit_interval_ms))
            } else {
                String::new()
            },
            config.max_poll_records,
            config.sink,
            config.auto_offset_reset,
        );
        if config.isolation == crate::txn::IsolationLevel::ReadCommitted {
            summary.push_str(", isolation.level=read_committed");
        }
        if let Some(out) = &config.output {
            summary.push_str(&format!(
                " — a read-process-write application: it produces to {out} inside Kafka transactions (transactional.id={})",
                config.name
            ));
        }
        if !config.commits_to_kafka() {
            summary.push_str(" — offsets are stored in the sink's transactions, so nothing is committed to __consumer_offsets");
        }
        let transactional = config.is_transactional_producer();
        self.consumers.insert(name.clone(), Consumer::new(config));
        self.say(EventKind::Setup, summary);
        if transactional {
            self.init_transactions(&name)?;
        }
        self.join(&name, &group)
    }

    /// The settings a read-process-write application with Kafka transactions needs.
    pub(crate) fn validate_transactional(&self, config: &ConsumerConfig) -> Result<(), LabError> {
        if !config.is_transactional_producer() {
            if config.output.is_some() {
                return Err(LabError::InvalidArgument(
                    "output= is the topic of a transactional read-process-write application: it needs sink=kafka-tx".into(),
                ));
            }
            return Ok(());
        }
        let Some(output) = &config.output else {
            return Err(LabError::InvalidArgument(
                "sink=kafka-tx produces to an output topic: add output=TOPIC".into(),
            ));
        };
        self.topic(output)?;
        if output == &config.topic {
            return Err(LabError::InvalidArgument(format!(
                "output topic '{output}' is the topic the consumer reads: use another one"
            )));
        }
        if !config.strategy.fits_transactions() {
            return Err(LabError::InvalidArgument(format!(
                "sink=kafka-tx commits offsets inside its transactions: use commit=manual-batch or commit=manual-record (not {})",
                config.strategy
            )));
        }
        if config.transaction_timeout_ms <= 0 {
            return Err(LabError::InvalidArgument(
                "transaction-timeout must be positive".into(),
            ));
        }
        if self.producers.contains_key(&config.name) {
            return Err(LabError::InvalidArgument(format!(
                "transactional.id '{}' is already registered",
                config.name
            )));
        }
        Ok(())
    }

    /// Kill -9: the process and everything in its memory vanish; the group is not told.
    pub fn crash(&mut self, name: &str) -> Result<(), LabError> {
        if self.is_share_consumer(name) {
            return self.share_crash(name);
        }
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
        // Under the consumer protocol the broker's session timeout counts from the member's
        // last heartbeat (every 5 s), not from the crash.
        let (expires, setting) = match self.consumer_session_expiry(&group, &member) {
            Some(at) => (at, "group.consumer.session.timeout.ms"),
            None => (now.saturating_add(timeout), "session.timeout.ms"),
        };
        let timeout = if setting == "session.timeout.ms" {
            timeout
        } else {
            crate::group::CONSUMER_SESSION_TIMEOUT_MS
        };
        if let Some(g) = self.groups.get_mut(&group) {
            if let Some(m) = g.members.iter_mut().find(|m| m.id == member) {
                m.expires_at = Some(expires);
            }
        }
        let mut lost = vec!["its fetch position".to_string()];
        if in_flight > 0 {
            lost.push(format!("{in_flight} polled but unprocessed record(s)"));
        }
        if pending > 0 {
            lost.push(format!("{pending} async commit(s) still in flight"));
        }
        self.say(
            EventKind::Crash,
            format!(
                "{member} crashed (kill -9) and lost {}. It sent no LeaveGroup: group {group} keeps it as a member, its partitions stalled, until {setting} ({}) passes without a heartbeat, at {}",
                lost.join(", "),
                format_duration(timeout),
                format_instant(expires)
            ),
        );
        Ok(())
    }

    /// Starts a new incarnation of a crashed, closed or failed consumer: a new process, so a new
    /// member id. If the old incarnation's session has not expired yet, the group's rebalance
    /// waits for it.
    pub fn restart(&mut self, name: &str) -> Result<(), LabError> {
        if self.is_share_consumer(name) {
            return self.share_restart(name);
        }
        let c = self.consumer(name)?;
        if c.is_running() {
            return Err(LabError::WrongState {
                name: name.to_string(),
                state: "running".into(),
                hint: "crash or close it before restarting",
            });
        }
        let group = c.config.group.clone();
        self.check_instance_released(name)?;
        let c = self.consumer_mut(name)?;
        c.incarnation += 1;
        c.state = ConsumerState::Running;
        c.wipe_memory();
        let member = c.member_id();
        let instance = c.config.group_instance_id.clone();
        self.say(
            EventKind::Setup,
            format!("{member} started (a new process: empty memory, a new member id)"),
        );
        if self.consumer(name)?.config.is_transactional_producer() {
            self.init_transactions(name)?;
        }
        if let Some(instance) = instance {
            if self.static_rejoin(name, &group, &instance)? {
                return Ok(());
            }
        }
        self.join(name, &group)
    }

    /// Static membership: a new incarnation with the `group.instance.id` of a member whose
    /// session has not expired takes its place — same partitions, same generation, no rebalance.
    /// Returns false when there is no such member to replace.
    pub(crate) fn static_rejoin(
        &mut self,
        name: &str,
        group: &str,
        instance: &str,
    ) -> Result<bool, LabError> {
        let now = self.now();
        let member = self.consumer(name)?.member_id();
        let Some(g) = self.groups.get_mut(group) else {
            return Ok(false);
        };
        let Some(slot) = g
            .members
            .iter_mut()
            .find(|m| m.instance_id.as_deref() == Some(instance))
        else {
            return Ok(false);
        };
        let old = std::mem::replace(&mut slot.id, member.clone());
        slot.expires_at = None;
        let mine: Vec<TopicPartition> = g
            .owners
            .iter()
            .filter(|(_, o)| **o == old)
            .map(|(tp, _)| tp.clone())
            .collect();
        for tp in &mine {
            g.owners.insert(tp.clone(), member.clone());
            g.handoffs.insert(
                tp.clone(),
                Handoff {
                    reason: DeliveryReason::CrashRedelivery,
                    from: Some(old.clone()),
                },
            );
        }
        if let Some(r) = g.rebalance.as_mut() {
            if r.rejoined.remove(&old) {
                r.rejoined.insert(member.clone());
            }
        }
        let mut generation = g.generation;
        let mut mine = mine;
        if let Some((epoch, taken)) = self.replace_static_member(group, &old, &member) {
            // Consumer protocol: the member epoch and assignment carry over, no new group epoch.
            generation = epoch;
            mine = taken;
        }
        let c = self.consumer_mut(name)?;
        c.generation = generation;
        c.last_poll_at = now;
        let interval = c.config.auto_commit_interval_ms;
        c.next_auto_commit = (c.config.strategy.auto_commits() && c.config.commits_to_kafka())
            .then(|| now.saturating_add(interval));
        let list = if mine.is_empty() {
            "nothing".to_string()
        } else {
            mine.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        self.say(
            EventKind::Group,
            format!("{member} rejoins group {group} as group.instance.id={instance}, replacing {old} before its session expired: it takes back {list} without a rebalance (generation {generation})"),
        );
        for tp in mine {
            self.assign(name, &tp)?;
        }
        Ok(true)
    }

    /// Graceful shutdown: the strategy's close-time commit (and the revoke hook), then LeaveGroup.
    pub fn close(&mut self, name: &str) -> Result<(), LabError> {
        if self.is_share_consumer(name) {
            return self.share_close(name);
        }
        self.running(name, "only a running consumer can close")?;
        let c = self.consumer(name)?;
        let group = c.config.group.clone();
        let member = c.member_id();
        let dropped = c.in_flight.len();
        if self.close_commit(name, false) || !self.consumer(name)?.is_running() {
            // Crashed by a planned fault during the close-time commit, or its fenced
            // transactional producer made it fail.
            return Ok(());
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
        let timeout = c.config.session_timeout_ms;
        if c.config.group_instance_id.is_some() {
            // A static member's close sends no LeaveGroup: it expects to be back soon.
            let timeout = match self.groups.get(&group).and_then(|g| g.consumer.as_ref()) {
                Some(cg) if cg.members.get(&member).is_some_and(|m| !m.classic) => {
                    crate::group::CONSUMER_SESSION_TIMEOUT_MS
                }
                _ => timeout,
            };
            let expires = self.now().saturating_add(timeout);
            if let Some(m) = self
                .groups
                .get_mut(&group)
                .and_then(|g| g.members.iter_mut().find(|m| m.id == member))
            {
                m.expires_at = Some(expires);
            }
            self.say(
                EventKind::Group,
                format!("{member} closed; as a static member it sends no LeaveGroup: its partitions wait for it until {}", format_instant(expires)),
            );
            return Ok(());
        }
        self.say(
            EventKind::Group,
            format!("{member} closed and sent LeaveGroup: group {group} does not wait for a timeout"),
        );
        self.leave(&group, &member, Departure::Closed)
    }

    /// The consumer stops on an exception the application did not handle; its `close()` in a
    /// `finally` block sends LeaveGroup.
    pub(crate) fn fail(&mut self, name: &str, error: String) {
        self.stop_on_error(name, error);
        let Some(c) = self.consumers.get(name) else {
            return;
        };
        let (group, member) = (c.config.group.clone(), c.member_id());
        let _ = self.leave(&group, &member, Departure::Closed);
    }

    /// Marks the consumer failed; the caller makes it leave its group.
    pub(crate) fn stop_on_error(&mut self, name: &str, error: String) {
        let Some(c) = self.consumers.get_mut(name) else {
            return;
        };
        c.wipe_memory();
        c.state = ConsumerState::Failed { error: error.clone() };
        self.say(
            EventKind::Refused,
            format!("{error}; the application stops and its consumer leaves the group"),
        );
    }
}

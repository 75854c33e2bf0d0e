//! `tick`: the only way time moves, and the timers that fire on the way.

use super::Lab;
use crate::clock::{format_duration, format_instant, Millis};
use crate::consumer::ConsumerState;
use crate::error::LabError;
use crate::narrative::EventKind;
use crate::strategy::CommitWhen;

/// What one auto-commit timer firing would do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Firing {
    /// Nothing to commit: every stored offset is already committed.
    Nothing,
    /// A commit the coordinator refuses: nothing changes but the narrative.
    Refused,
    /// A commit is written (or an async one lands first).
    Writes,
}

impl Lab {
    /// Advances the clock by `duration`, firing every timer that falls due on the way, in time
    /// order: async commits landing, librdkafka's auto-commit timer, session timeouts.
    pub fn tick(&mut self, duration: Millis) -> Result<(), LabError> {
        if duration < 0 {
            return Err(LabError::InvalidArgument(format!(
                "cannot tick a negative duration ({duration}ms)"
            )));
        }
        let target = self.now().saturating_add(duration);
        self.say(
            EventKind::Clock,
            format!(
                "time passes: +{} → {}",
                format_duration(duration),
                format_instant(target)
            ),
        );
        self.run_timers_until(target)
    }

    /// Moves the clock to the instant `at` — what the live clock of `serve` does when wall time
    /// has moved on (a `clock` line) — firing every timer due on the way, as [`Lab::tick`]
    /// does, without a narrative line of its own: each timer that fires says what it did.
    /// Refused (nothing changes) when the clock already reads later: time never goes back.
    pub fn advance_clock_to(&mut self, at: Millis) -> Result<(), LabError> {
        if at < self.now() {
            return Err(LabError::InvalidArgument(format!(
                "the lab's clock already reads {}, later than {}: time never goes backwards",
                format_instant(self.now()),
                format_instant(at)
            )));
        }
        self.run_timers_until(at)
    }

    /// The earliest instant at which time passing would change the lab — a timer that does
    /// something, or a closed segment retention deletes — `now` when retention would already
    /// delete one (by size). `None` while nothing is pending. A steady auto-commit timer (its
    /// consumer has nothing new to commit, or it is fenced) changes nothing and is left out: a
    /// live clock catches up when this instant comes, not at every firing.
    pub fn next_deadline(&self) -> Option<Millis> {
        let auto_commits = self
            .consumers
            .iter()
            .filter(|(_, c)| {
                c.state == ConsumerState::Running && c.config.strategy.rules().when == CommitWhen::Timer
            })
            .filter(|(name, _)| self.timer_firing(name) == Firing::Writes)
            .filter_map(|(_, c)| c.next_auto_commit)
            .min();
        [auto_commits, self.next_other_timer(), self.next_retention()]
            .into_iter()
            .flatten()
            .min()
    }

    /// When [`Lab::enforce_retention`] next deletes a segment, as far as it can be known now:
    /// the oldest closed segment of a `delete` topic goes once its largest timestamp is older
    /// than `retention.ms`, at once when the partition is past `retention.bytes` or the segment
    /// is empty.
    fn next_retention(&self) -> Option<Millis> {
        let now = self.now();
        let mut next: Option<Millis> = None;
        for topic in self.topics.values() {
            if !topic.config.cleanup_policy.deletes() {
                continue;
            }
            let (by_age, by_size) = (topic.config.retention_ms, topic.config.retention_bytes);
            for log in &topic.partitions {
                let segments = log.segments();
                let total: u64 = segments.iter().map(|s| s.bytes as u64).sum();
                let Some(oldest) = segments.iter().find(|s| !s.active) else {
                    continue;
                };
                let due = if oldest.records == 0
                    || by_size.is_some_and(|b| total.saturating_sub(oldest.bytes as u64) >= b)
                {
                    Some(now)
                } else {
                    by_age.and_then(|r| {
                        oldest
                            .max_timestamp
                            .map(|t| t.saturating_add(r).saturating_add(1))
                    })
                };
                next = [next, due].into_iter().flatten().min();
            }
        }
        next
    }

    /// Fires the timers due up to `target` in time order, then moves the clock there and applies
    /// retention.
    fn run_timers_until(&mut self, target: Millis) -> Result<(), LabError> {
        while let Some(at) = self.next_timer().filter(|&t| t <= target) {
            if self.skip_steady_timer_commits(at, target) {
                continue;
            }
            let since = self.now();
            self.clock.advance_to(at);
            self.fire_due(since, at)?;
        }
        self.clock.advance_to(target);
        self.enforce_retention();
        self.share_follow_log_starts()
    }

    /// Retention, as Kafka's log cleaner applies it with `cleanup.policy=delete`: whole closed
    /// segments, oldest first, while the oldest is older than `retention.ms` (by its largest
    /// timestamp) or the partition is larger than `retention.bytes` without it. Never the
    /// active segment. The log start offset moves up.
    fn enforce_retention(&mut self) {
        let now = self.now();
        // What to delete is read first: only a topic that loses segments is changed (and saved
        // again by the journal).
        let mut deletions = Vec::new();
        for topic in self.topics.values() {
            if !topic.config.cleanup_policy.deletes() {
                continue;
            }
            let (by_age, by_size) = (topic.config.retention_ms, topic.config.retention_bytes);
            for (p, log) in topic.partitions.iter().enumerate() {
                let segments = log.segments();
                let mut total: u64 = segments.iter().map(|s| s.bytes as u64).sum();
                let mut delete_before = None;
                for s in segments.iter().filter(|s| !s.active) {
                    let too_old =
                        by_age.is_some_and(|r| s.max_timestamp.is_some_and(|t| t < now.saturating_sub(r)));
                    let too_big = by_size.is_some_and(|b| total.saturating_sub(s.bytes as u64) >= b);
                    // A closed segment compaction emptied holds nothing to keep.
                    let empty = s.records == 0;
                    if !(too_old || too_big || empty) {
                        break;
                    }
                    total -= s.bytes as u64;
                    delete_before = Some((
                        s.next_offset,
                        if too_old {
                            "retention.ms"
                        } else {
                            "retention.bytes"
                        },
                    ));
                }
                if let Some((before, why)) = delete_before {
                    deletions.push((topic.name.clone(), p, before, why));
                }
            }
        }
        let mut notes = Vec::new();
        for (name, p, before, why) in deletions {
            let Some(log) = self.topics.get_mut(&name).and_then(|t| t.partitions.get_mut(p)) else {
                continue;
            };
            self.irreversible += 1;
            let start = log.log_start_offset();
            let removed = log.delete_segments_before(before);
            if removed > 0 {
                notes.push(format!(
                    "retention ({why}) deleted {removed} record(s) of {name}-{p} in whole segments: log start offset {start} → {}",
                    log.log_start_offset()
                ));
            }
        }
        for n in notes {
            self.say(EventKind::Warning, n);
        }
    }

    /// The earliest pending timer.
    fn next_timer(&self) -> Option<Millis> {
        let timers = self
            .consumers
            .values()
            .filter(|c| {
                c.state == ConsumerState::Running && c.config.strategy.rules().when == CommitWhen::Timer
            })
            .filter_map(|c| c.next_auto_commit)
            .min();
        [timers, self.next_other_timer()].into_iter().flatten().min()
    }

    /// The earliest pending timer that is not librdkafka's auto-commit timer: async commits
    /// landing, session and poll-interval expiries, offset expiry, transaction timeouts.
    fn next_other_timer(&self) -> Option<Millis> {
        let landings = self
            .consumers
            .values()
            .filter(|c| c.state == ConsumerState::Running)
            .filter_map(|c| c.pending_async.iter().map(|p| p.lands_at).min())
            .min();
        [
            landings,
            self.next_session_expiry(),
            self.next_poll_deadline(),
            self.next_offset_expiry(),
            self.next_group_cleanup(),
            self.next_transaction_timeout(),
            self.next_share_timer(),
            self.next_useful_heartbeat(),
            self.next_assignment_due(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// A long tick jumps over auto-commit timer firings that cannot change anything. When
    /// every auto-commit timer due before the next other event (or the end of the tick) would
    /// find nothing new to commit — or would be refused, the consumer no longer being a member
    /// of its group's generation — the lab is the same after each of those firings as before
    /// it, so they are counted instead of run: a hundred years of a 1 ms timer cost what one
    /// firing costs, and the outcome is what stepping through them would give. (A run of
    /// refusals is told as one event, then the last refusal as usual.) `false` when the next
    /// timer must fire as usual.
    fn skip_steady_timer_commits(&mut self, at: Millis, target: Millis) -> bool {
        // Firings strictly before `end` may be skipped; one at the same instant as another
        // event fires with it, in the usual order.
        let end = match self.next_other_timer() {
            Some(other) if other <= target => other,
            _ => target.saturating_add(1),
        };
        if at >= end {
            return false;
        }
        let mut due = Vec::new();
        for (name, c) in self.consumers.iter() {
            if c.state != ConsumerState::Running || c.config.strategy.rules().when != CommitWhen::Timer {
                continue;
            }
            let Some(d) = c.next_auto_commit.filter(|&d| d < end) else {
                continue;
            };
            let firing = self.timer_firing(name);
            if firing == Firing::Writes {
                return false;
            }
            let interval = c.config.auto_commit_interval_ms.max(1);
            let firings = (end - 1 - d) / interval + 1;
            due.push((name.clone(), d, interval, firings, firing));
        }
        // Refused firings: a run of two or more is summed up; a single one fires as usual.
        if due
            .iter()
            .all(|(_, _, _, firings, firing)| *firing == Firing::Refused && *firings < 2)
        {
            return false;
        }
        for (name, d, interval, firings, firing) in due {
            let skipped = match firing {
                Firing::Refused if firings < 2 => continue,
                // The last refusal of the run fires as usual.
                Firing::Refused => firings - 1,
                _ => firings,
            };
            let next = d.saturating_add(skipped.saturating_mul(interval));
            let Some(c) = self.consumers.get_mut(&name) else {
                continue;
            };
            c.next_auto_commit = Some(next);
            if firing == Firing::Refused {
                let (member, group) = (c.member_id(), c.config.group.clone());
                self.say(
                    EventKind::Refused,
                    format!(
                        "auto-commit timer: {skipped} commit(s) from {member} rejected between {} and {}, every {} (it is no longer a member of {group}'s current generation: fenced)",
                        format_instant(d),
                        format_instant(next.saturating_sub(interval)),
                        format_duration(interval)
                    ),
                );
            }
        }
        true
    }

    /// What an auto-commit timer firing of `name` would do now, without doing it (the checks
    /// of `commit_offsets`, in its order).
    fn timer_firing(&self, name: &str) -> Firing {
        let Some(c) = self.consumers.get(name) else {
            return Firing::Nothing;
        };
        if !c.pending_async.is_empty() {
            return Firing::Writes;
        }
        let group = &c.config.group;
        let changed = c.assignment.iter().any(|(tp, f)| {
            f.stored.is_some_and(|o| {
                self.partition_log(tp).is_ok_and(|log| o <= log.log_end_offset())
                    && self
                        .offsets
                        .fetch(&crate::offsets::OffsetKey::new(group, tp))
                        .map(|v| v.offset)
                        != Some(o)
            })
        });
        if !changed {
            return Firing::Nothing;
        }
        match self.groups.get(group) {
            Some(g)
                if g.consumer
                    .as_ref()
                    .is_some_and(|cg| cg.check_commit(&c.member_id(), c.generation).is_ok()) =>
            {
                Firing::Writes
            }
            Some(g)
                if g.consumer.is_none() && g.is_member(&c.member_id()) && g.generation == c.generation =>
            {
                Firing::Writes
            }
            Some(_) => Firing::Refused,
            // No group to ask: the commit goes nowhere, and says nothing (as `accepts_commit`).
            None => Firing::Nothing,
        }
    }

    /// Fires what falls due at `now`; the clock read `since` before it moved there (a heartbeat
    /// at `since` itself already went, before whatever else happened at that instant).
    fn fire_due(&mut self, since: Millis, now: Millis) -> Result<(), LabError> {
        let names: Vec<String> = self.consumers.keys().cloned().collect();
        for name in &names {
            let Some(c) = self.consumers.get(name) else {
                continue;
            };
            if !c.is_running() {
                continue;
            }
            if c.pending_async.iter().any(|p| p.lands_at <= now) && self.land_async(name, now) {
                continue;
            }
            let Some(c) = self.consumers.get_mut(name) else {
                continue;
            };
            if c.is_running() && c.config.strategy.rules().when == CommitWhen::Timer {
                if let Some(due) = c.next_auto_commit.filter(|&d| d <= now) {
                    c.next_auto_commit = Some(due.saturating_add(c.config.auto_commit_interval_ms));
                    self.timer_commit(name);
                }
            }
        }
        // A target assignment due now is computed before the heartbeats of the same instant.
        self.run_due_assignments(now);
        self.fire_heartbeats(since, now)?;
        self.expire_sessions(now)?;
        self.expire_poll_intervals(now)?;
        self.expire_offsets(now);
        self.cleanup_groups(now);
        self.expire_transactions(now);
        self.fire_share_timers(now)?;
        Ok(())
    }

    /// When each committed offset expires (KIP-211; Kafka's `OffsetExpirationCondition` of a
    /// classic group), `offsets.retention.minutes` after its base:
    /// - a group that had members and is Empty: the moment it became Empty, for every offset —
    ///   one committed since (an admin's) too;
    /// - a Stable consumer group: the commit, for the topics no member subscribes to; the
    ///   topics it reads never expire while it has members (nor does anything while it
    ///   rebalances, or in a group of another protocol type);
    /// - a group no member ever joined (offsets committed from outside, Kafka's "simple"
    ///   group): the commit.
    ///
    /// An offset a transaction still holds open for the partition does not expire yet.
    /// Each committed offset that expires, and when. An iterator: the next timer asks for the
    /// earliest on every tick, and a lab with thousands of offsets must not copy their keys.
    fn offset_expiries(&self) -> impl Iterator<Item = (&crate::offsets::OffsetKey, Millis)> + '_ {
        // Offsets an open transaction holds do not expire; looked up once per call.
        let pending: Vec<(&str, &crate::record::TopicPartition)> = self
            .producers
            .values()
            .filter_map(|p| p.ongoing.as_ref())
            .flat_map(|t| t.offsets.iter().map(|(g, tp, _)| (g.as_str(), tp)))
            .collect();
        self.offsets.view().iter().filter_map(move |(k, v)| {
            let base = match self.groups.get(&k.group) {
                Some(g) if g.has_members() => {
                    let stable_consumers =
                        g.state() == crate::group::GroupState::Stable && g.protocol_type() == "consumer";
                    if !stable_consumers || self.subscribes(&k.group, &k.topic) {
                        return None;
                    }
                    v.commit_timestamp
                }
                Some(g) => match g.empty_since {
                    Some(t) if !g.offsets_only() => t,
                    _ => v.commit_timestamp,
                },
                None => v.commit_timestamp,
            };
            let held = pending
                .iter()
                .any(|(g, tp)| *g == k.group && tp.topic == k.topic && tp.partition == k.partition);
            (!held).then(|| (k, base.saturating_add(self.offsets_retention_ms)))
        })
    }

    fn next_offset_expiry(&self) -> Option<Millis> {
        self.offset_expiries().map(|(_, t)| t).min()
    }

    fn expire_offsets(&mut self, now: Millis) {
        let due: Vec<crate::offsets::OffsetKey> = self
            .offset_expiries()
            .filter(|(_, t)| *t <= now)
            .map(|(k, _)| k.clone())
            .collect();
        let mut groups: Vec<String> = Vec::new();
        for key in due {
            self.offsets.delete(&key, now);
            let empty = !self
                .groups
                .get(&key.group)
                .is_some_and(crate::group::Group::has_members);
            let why = if empty {
                format!("with group {} empty", key.group)
            } else {
                format!(
                    "since its last commit, and no member of group {} subscribes to {}",
                    key.group, key.topic
                )
            };
            self.say(
                EventKind::Warning,
                format!(
                    "offsets.retention.minutes ({}) passed {why}: its committed offset for {}-{} expired (a tombstone in __consumer_offsets); a member assigned it later starts from auto.offset.reset",
                    format_duration(self.offsets_retention_ms),
                    key.topic,
                    key.partition
                ),
            );
            if !groups.contains(&key.group) {
                groups.push(key.group);
            }
        }
        // The cleanup that expired an Empty group's last offset removes the group too (unless a
        // transaction still holds offsets for it): DescribeGroups calls it Dead.
        for group in groups {
            let empty = self.groups.get(&group).is_none_or(|g| !g.has_members());
            let offsets_left = self.offsets.has_group(&group);
            let in_transaction = self.producers.values().any(|p| {
                p.ongoing
                    .as_ref()
                    .is_some_and(|t| t.offsets.iter().any(|(g, _, _)| *g == group))
            });
            if empty && !offsets_left && !in_transaction && self.groups.contains_key(&group) {
                self.remove_group(&group, now);
                self.say(
                    EventKind::Group,
                    format!("group {group} had no member and no committed offset left: the coordinator removed it (Dead)"),
                );
            }
        }
    }

    /// The groups the coordinator's cleanup removes: no member, no committed offset, no
    /// transaction holding offsets for them (Kafka's `cleanupGroupMetadata`: a group whose
    /// offsets are all gone — expired, deleted with OffsetDelete, or never committed — and that
    /// is empty is deleted, whatever emptied it).
    fn removable_groups(&self) -> Vec<String> {
        self.removable().map(str::to_string).collect()
    }

    /// The names of [`Lab::removable_groups`], without copying them: the next timer asks
    /// whether there is one on every tick.
    fn removable(&self) -> impl Iterator<Item = &str> + '_ {
        let held: Vec<&str> = self
            .producers
            .values()
            .filter_map(|p| p.ongoing.as_ref())
            .flat_map(|t| t.offsets.iter().map(|(g, _, _)| g.as_str()))
            .collect();
        // Groups and committed offsets both come in the order of the group's name: one walk
        // through each tells which empty group has an offset left.
        let mut with_offsets = self.offsets.view().keys().map(|k| k.group.as_str()).peekable();
        self.groups
            .iter()
            .filter(|(_, g)| !g.dead && !g.has_members())
            .map(|(name, _)| name.as_str())
            .filter(move |name| {
                while with_offsets.next_if(|g| g < name).is_some() {}
                with_offsets.peek() != Some(name) && !held.contains(name)
            })
    }

    /// The next run of the cleanup, `offsets.retention.check.interval.ms` apart on the lab's
    /// clock — only while it has a group to remove (otherwise it changes nothing).
    fn next_group_cleanup(&self) -> Option<Millis> {
        self.removable().next()?;
        let interval = self.offsets_retention_check_ms.max(1);
        Some((self.now().div_euclid(interval) + 1).saturating_mul(interval))
    }

    /// The cleanup's run at `now`, when it falls on a multiple of the check interval.
    fn cleanup_groups(&mut self, now: Millis) {
        if now.rem_euclid(self.offsets_retention_check_ms.max(1)) != 0 {
            return;
        }
        for group in self.removable_groups() {
            self.remove_group(&group, now);
            self.say(
                EventKind::Group,
                format!("group {group} had no member and no committed offset: the coordinator's cleanup (every offsets.retention.check.interval.ms, {}) removed it (Dead)", format_duration(self.offsets_retention_check_ms)),
            );
        }
    }
}

//! `tick`: the only way time moves, and the timers that fire on the way.

use super::Lab;
use crate::clock::{format_duration, format_instant, Millis};
use crate::consumer::ConsumerState;
use crate::error::LabError;
use crate::narrative::EventKind;
use crate::strategy::CommitStrategy;

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
        while let Some(at) = self.next_timer().filter(|&t| t <= target) {
            self.clock.advance_to(at);
            self.fire_due(at)?;
        }
        self.clock.advance_to(target);
        self.enforce_retention();
        Ok(())
    }

    /// Retention, as Kafka's log cleaner applies it with `cleanup.policy=delete`: whole closed
    /// segments, oldest first, while the oldest is older than `retention.ms` (by its largest
    /// timestamp) or the partition is larger than `retention.bytes` without it. Never the
    /// active segment. The log start offset moves up.
    fn enforce_retention(&mut self) {
        let now = self.now();
        let mut notes = Vec::new();
        for topic in self.topics.values_mut() {
            if topic.config.cleanup_policy != crate::log::CleanupPolicy::Delete {
                continue;
            }
            let (by_age, by_size) = (topic.config.retention_ms, topic.config.retention_bytes);
            for (p, log) in topic.partitions.iter_mut().enumerate() {
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
                    let start = log.log_start_offset();
                    let removed = log.delete_segments_before(before);
                    if removed > 0 {
                        notes.push(format!(
                            "retention ({why}) deleted {removed} record(s) of {}-{p} in whole segments: log start offset {start} → {}",
                            topic.name,
                            log.log_start_offset()
                        ));
                    }
                }
            }
        }
        for n in notes {
            self.say(EventKind::Warning, n);
        }
    }

    /// The earliest pending timer.
    fn next_timer(&self) -> Option<Millis> {
        let consumer_timers = self
            .consumers
            .values()
            .filter(|c| c.state == ConsumerState::Running)
            .filter_map(|c| {
                let timer = (c.config.strategy == CommitStrategy::AutoTimer)
                    .then_some(c.next_auto_commit)
                    .flatten();
                let landing = c.pending_async.iter().map(|p| p.lands_at).min();
                [timer, landing].into_iter().flatten().min()
            })
            .min();
        [
            consumer_timers,
            self.next_session_expiry(),
            self.next_poll_deadline(),
            self.next_offset_expiry(),
            self.next_transaction_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn fire_due(&mut self, now: Millis) -> Result<(), LabError> {
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
            if c.is_running() && c.config.strategy == CommitStrategy::AutoTimer {
                if let Some(due) = c.next_auto_commit.filter(|&d| d <= now) {
                    c.next_auto_commit = Some(due.saturating_add(c.config.auto_commit_interval_ms));
                    self.timer_commit(name);
                }
            }
        }
        self.expire_sessions(now)?;
        self.expire_poll_intervals(now)?;
        self.expire_offsets(now);
        self.expire_transactions(now);
        Ok(())
    }

    /// When each committed offset of a group without members expires (KIP-211): retention after
    /// the later of its commit and the moment the group became empty.
    fn offset_expiries(&self) -> Vec<(crate::offsets::OffsetKey, Millis)> {
        self.offsets
            .view()
            .iter()
            .filter_map(|(k, v)| {
                let since = match self.groups.get(&k.group) {
                    Some(g) if g.has_members() => return None,
                    Some(g) => g
                        .empty_since
                        .unwrap_or(v.commit_timestamp)
                        .max(v.commit_timestamp),
                    None => v.commit_timestamp,
                };
                Some((k.clone(), since.saturating_add(self.offsets_retention_ms)))
            })
            .collect()
    }

    fn next_offset_expiry(&self) -> Option<Millis> {
        self.offset_expiries().into_iter().map(|(_, t)| t).min()
    }

    fn expire_offsets(&mut self, now: Millis) {
        let due: Vec<crate::offsets::OffsetKey> = self
            .offset_expiries()
            .into_iter()
            .filter(|(_, t)| *t <= now)
            .map(|(k, _)| k)
            .collect();
        for key in due {
            self.offsets.delete(&key, now);
            self.say(
                EventKind::Warning,
                format!(
                    "offsets.retention.minutes ({}) passed with group {} empty: its committed offset for {}-{} expired (a tombstone in __consumer_offsets); its next start falls to auto.offset.reset",
                    format_duration(self.offsets_retention_ms),
                    key.group,
                    key.topic,
                    key.partition
                ),
            );
        }
    }
}

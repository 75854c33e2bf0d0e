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
        let target = self.now() + duration;
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
        Ok(())
    }

    /// The earliest pending timer.
    fn next_timer(&self) -> Option<Millis> {
        self.consumers
            .values()
            .filter_map(|c| match c.state {
                ConsumerState::Running => {
                    let timer = (c.config.strategy == CommitStrategy::AutoTimer)
                        .then_some(c.next_auto_commit)
                        .flatten();
                    let landing = c.pending_async.iter().map(|p| p.lands_at).min();
                    [timer, landing].into_iter().flatten().min()
                }
                ConsumerState::Crashed { at } => self
                    .groups
                    .get(&c.config.group)
                    .filter(|g| g.is_member(c.name()))
                    .map(|_| at + c.config.session_timeout_ms),
                _ => None,
            })
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
                    c.next_auto_commit = Some(due + c.config.auto_commit_interval_ms);
                    self.timer_commit(name);
                }
            }
        }
        self.expire_sessions(now)
    }
}

//! Waiting for the scenario's clock on wall time: a line never runs before its model time, and
//! not before every running auto-commit timer has fired as often as the model's (its commit
//! given time to land). A run spends most of its life here, so it is a file of its own beside
//! the clock arithmetic in [`super::clock`].

use super::clock::Misaligned;
use super::error::RunError;
use super::{clock, interrupted, ClusterRun};
use offsetlab_scenario::command::Command;
use offsetlab_scenario::script::Line;
use std::time::{Duration, Instant};

impl ClusterRun {
    /// Waits until the first of `lines` (at model time `t`; none: the end of the script) may
    /// run, counting the real auto-commit timers' fires on the way (each an effect, which a
    /// fault plan may end in a crash). A line too late for a timer's next fire lets it happen
    /// first when that changes no figure ([`Self::early_fire`]), and says so: the warning.
    pub(super) fn wait_until(&mut self, t: i64, lines: &[Line]) -> Result<Option<String>, RunError> {
        let line = lines.first();
        let mut said = false;
        let mut warnings: Vec<String> = Vec::new();
        let fail = |why: String| RunError::Line {
            line: line.map_or(0, |l| l.number),
            text: line.map_or(String::new(), |l| l.text.clone()),
            why,
        };
        let stop = || RunError::Interrupted {
            line: line.map_or(0, |l| l.number),
            text: line.map_or(String::new(), |l| l.text.clone()),
        };
        loop {
            // Before every line, not only inside a wait: a script without ticks stops too.
            if interrupted() {
                return Err(stop());
            }
            let now = Instant::now();
            let timers: Vec<(String, clock::TimerPhase)> = self
                .app
                .consumers
                .iter()
                .filter_map(|(n, c)| c.timer.map(|t| (n.clone(), t)))
                .collect();
            let at = match self
                .clock
                .schedule(t, now, timers.iter().map(|(n, t)| (n.as_str(), t)))
            {
                Ok(at) => at,
                Err(Misaligned { consumer, late_by }) => {
                    let why_not = |why: String| {
                        fail(format!(
                            "this line runs {late_by:.1?} too late for {consumer}'s auto-commit timer: its next fire comes before the line, where the model's comes after, and {why} (the cluster took longer than the scenario's clock allows; give the consumer a longer interval)"
                        ))
                    };
                    let said = self.early_fire(&consumer, t, lines).map_err(why_not)?;
                    warnings.push(format!(
                        "{late_by:.1?} late for {consumer}'s auto-commit timer: {said}"
                    ));
                    continue;
                }
            };
            let next_fire = timers
                .iter()
                .map(|(n, tp)| (tp.landed(tp.fires_seen + 1), n))
                .filter(|(when, _)| *when <= at)
                .min();
            let until = next_fire.as_ref().map_or(at, |(when, _)| *when);
            if let Some(tell) = self.opts.progress.filter(|_| !said) {
                if until.saturating_duration_since(now) >= Duration::from_secs(1) {
                    tell(at.saturating_duration_since(now));
                    said = true;
                }
            }
            // In slices, so that a Ctrl-C stops the run within a moment.
            while Instant::now() < until {
                if interrupted() {
                    return Err(stop());
                }
                std::thread::sleep(
                    until
                        .saturating_duration_since(Instant::now())
                        .min(Duration::from_millis(100)),
                );
            }
            match next_fire {
                Some((_, name)) => {
                    let name = name.clone();
                    self.await_timer_commit(&name);
                    self.app.timer_fired(&name).map_err(|e| fail(e.to_string()))?;
                }
                None => {
                    self.clock.ran(t, at, timers.iter().map(|(_, t)| t));
                    if warnings.is_empty() {
                        return Ok(None);
                    }
                    let warning = warnings.join("; ");
                    self.warnings.push(match line {
                        Some(l) => format!("line {}: `{}`: {warning}", l.number, l.text),
                        None => format!("after the last line: {warning}"),
                    });
                    return Ok(Some(warning));
                }
            }
        }
    }

    /// A real auto-commit fire of `consumer` that commits something new has surely happened
    /// ([`clock::TimerPhase::landed`]): waits until the cluster holds what it commits — every
    /// offset the consumer has stored — so that the lines after it see the commit even when
    /// the machine or the broker is slow, for up to [`TIMER_COMMIT_WAIT`] (then the run goes on,
    /// and any figure that differs says so).
    pub(super) fn await_timer_commit(&mut self, consumer: &str) {
        if !self.app.timer_would_commit(consumer) {
            return;
        }
        let Some((group, topic, stored)) = self.app.stored(consumer) else {
            return;
        };
        let (group, topic) = (
            self.opts.prefix.on_cluster(&group),
            self.opts.prefix.on_cluster(&topic),
        );
        let partitions: Vec<i32> = stored.keys().copied().collect();
        let deadline = Instant::now() + TIMER_COMMIT_WAIT;
        while Instant::now() < deadline && !interrupted() {
            let held = self.inspector.committed(&group, &topic, &partitions);
            if held.is_ok_and(|h| {
                stored
                    .iter()
                    .all(|(p, o)| h.get(p).copied().flatten() == Some(*o))
            }) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The first of `lines` (at model time `t`) is too late for `consumer`'s auto-commit timer:
    /// its next real fire comes before the line, where the model's comes after it and after
    /// every line until the fire's model instant. Let it happen first — the timer counted one
    /// fire ahead of the model's until then — only when that changes no figure; say why it
    /// does not, or why it would.
    ///
    /// The real fire commits what the consumer holds stored now (the offsets after what poll
    /// handed over); the model's commits what it holds at the fire's instant. They are the
    /// same if no line before that instant moves its offsets: no `poll` or `seek` of it — nor
    /// did the last move come after the fire could have happened. If the fire commits nothing
    /// new (every stored offset committed already), that is all; if it does, nothing before the
    /// model's fire may see the commit early: no `expect` on its group, no `reset-offsets` of
    /// the group, no `crash` of the consumer (the model's fire would then never come), and no
    /// fault plan counting its effects (the fire is one, in another order).
    pub(super) fn early_fire(&mut self, consumer: &str, t: i64, lines: &[Line]) -> Result<String, String> {
        let Some(c) = self.app.consumers.get(consumer) else {
            return Err(format!("{consumer} is not running"));
        };
        let Some(timer) = c.timer else {
            return Err(format!("{consumer} has no timer"));
        };
        let k = timer.fires_before(t) + 1;
        let fire_at = timer.model_fire(k);
        let group = c.config.group.clone();
        if c.positions_moved.is_some_and(|moved| moved > timer.earliest(k)) {
            return Err(format!(
                "it may have fired while {consumer}'s stored offsets were still moving (a poll or a seek that ran across it), so what it committed is not known"
            ));
        }
        let commits = self.app.timer_would_commit(consumer);
        if commits && self.app.fault_armed_on(consumer) {
            return Err(format!(
                "it commits, an effect of {consumer} that the armed fault plan would count in another order"
            ));
        }
        let mut at = t;
        for l in lines {
            if at >= fire_at {
                break;
            }
            let seen = |why: &str| Err(format!("line {} (`{}`) {why}", l.number, l.text));
            match &l.command {
                Command::Tick(tick) => at = at.saturating_add(tick.duration_ms.max(0)),
                Command::Poll(p) if p.consumer == consumer => {
                    return seen("moves its stored offsets before the model's fire")
                }
                Command::Seek(s) if s.consumer == consumer => {
                    return seen("moves its stored offsets before the model's fire")
                }
                Command::Crash(x) if commits && x.consumer == consumer => {
                    return seen("crashes it before the model's fire, which then never commits")
                }
                Command::Fault(f) if commits && f.consumer == consumer => {
                    return seen("arms a fault plan that counts its commit in another order")
                }
                Command::Expect(e) if commits && e.group.as_ref().is_none_or(|g| *g == group) => {
                    return seen("reads the group's figures before the model's fire commits")
                }
                Command::ResetOffsets(r) if commits && r.group == group => {
                    return seen("reads the group's offsets before the model's fire commits")
                }
                _ => {}
            }
        }
        if let Some(c) = self.app.consumers.get_mut(consumer) {
            if let Some(timer) = c.timer.as_mut() {
                timer.ahead = k;
            }
        }
        let instant = offsetlab_engine::clock::format_instant(fire_at);
        Ok(if commits {
            format!(
                "its fire at {instant} commits before this line, as the model's will at {instant}: the same offsets ({consumer} moves none of them before then), and no line until then reads them"
            )
        } else {
            format!(
                "its fire at {instant} comes before this line and commits nothing, as the model's will at {instant} (every offset {consumer} holds is committed, and it moves none before then)"
            )
        })
    }
}

/// How long a real auto-commit fire's commit may take to appear on the cluster after the
/// instant it surely happened.
pub(super) const TIMER_COMMIT_WAIT: Duration = Duration::from_secs(3);

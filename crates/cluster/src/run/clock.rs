//! The scenario's clock laid over wall time.
//!
//! On a cluster, time is the cluster's: `tick D` waits D. Each line runs no earlier than its
//! model time after the run's origin, so every wait the scenario asks for (a session to time
//! out, an interval to pass) is at least as long for real. That alone is not enough for the one
//! clock the runner does not own: librdkafka's auto-commit timer, which fires every interval
//! from the moment the client was created. In the model it fires at exactly the interval, and
//! the lines at that instant see its commit; for real, a line run a few milliseconds before the
//! fire would see the old offset. So a line also waits until every running auto-commit timer
//! has fired as often as the model's has by the line's model time — plus a margin for the
//! commit to land. A line that would run after a timer's *next* fire ([`Misaligned`]: the
//! cluster was slower than the scenario's clock) sees that fire before it, where the model's
//! line sees it after: the runner lets it happen first only where it provably changes no figure
//! (the fire is then counted [`TimerPhase::ahead`] of the model's, and the run warns), and
//! otherwise stops — never a different result.

use std::time::{Duration, Instant};

/// Time for a commit sent by a timer to land before the line after it runs, and the distance a
/// line keeps from a timer's next fire.
pub const MARGIN: Duration = Duration::from_millis(250);

/// A running auto-commit timer: the client was created between `low` and `high` (as the agent
/// start and its `ready`), so its k-th fire happens between `low + k·interval` and
/// `high + k·interval`; in the model it fires at `model_origin + k·interval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerPhase {
    pub low: Instant,
    pub high: Instant,
    pub interval_ms: i64,
    pub model_origin: i64,
    /// Fires already accounted for (their effects counted).
    pub fires_seen: u64,
    /// Fires let happen before the lines the model's fire follows: a line that ran too late for
    /// the timer's next fire, where that changes no figure. Until the model's clock reaches
    /// them, lines see this many fires.
    pub ahead: u64,
}

impl TimerPhase {
    fn interval(&self) -> Duration {
        Duration::from_millis(u64::try_from(self.interval_ms.max(1)).unwrap_or(1))
    }

    /// How many times the model's timer has fired by model time `t` (fires at `t` included:
    /// the model runs them before the lines at that instant).
    pub fn model_fires_by(&self, t: i64) -> u64 {
        if t < self.model_origin {
            return 0;
        }
        u64::try_from((t - self.model_origin) / self.interval_ms.max(1)).unwrap_or(0)
    }

    /// The fires a line at model time `t` runs after: the model's, or more where fires were let
    /// happen ahead of it.
    pub fn fires_before(&self, t: i64) -> u64 {
        self.model_fires_by(t).max(self.ahead)
    }

    /// The model time of the k-th fire.
    pub fn model_fire(&self, k: u64) -> i64 {
        self.model_origin.saturating_add(
            self.interval_ms
                .max(1)
                .saturating_mul(i64::try_from(k).unwrap_or(i64::MAX)),
        )
    }

    /// The earliest wall instant the k-th fire can happen.
    pub fn earliest(&self, k: u64) -> Instant {
        self.low + self.interval() * u32::try_from(k).unwrap_or(u32::MAX)
    }

    /// When the real k-th fire's commit has surely landed.
    pub fn landed(&self, k: u64) -> Instant {
        self.high + self.interval() * u32::try_from(k).unwrap_or(u32::MAX) + MARGIN
    }

    /// The wall-time window in which a line at model time `t` sees exactly the fires the
    /// model's line sees: after the last one landed, before the next one can start.
    pub fn window(&self, t: i64) -> (Instant, Instant) {
        let n = self.fires_before(t);
        let next = self.earliest(n + 1);
        let lo = if n == 0 { self.high } else { self.landed(n) };
        (lo, next.checked_sub(MARGIN).unwrap_or(next))
    }
}

/// Model time to wall time.
#[derive(Debug, Clone, Copy)]
pub struct WallClock {
    /// The wall instant of model time 0, moved later whenever a line runs late, so that the
    /// waits after it are still the scenario's.
    origin: Instant,
    /// The model time the run started at (a lab's clock starts at a date, not at zero).
    epoch: i64,
}

/// A line that can no longer run where the model's does, relative to a real timer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Misaligned {
    pub consumer: String,
    pub late_by: Duration,
}

impl WallClock {
    /// Model time `epoch` is now.
    pub fn starting_now(epoch: i64) -> Self {
        Self {
            origin: Instant::now(),
            epoch,
        }
    }

    fn since_epoch(&self, t: i64) -> Duration {
        Duration::from_millis(u64::try_from(t.saturating_sub(self.epoch).max(0)).unwrap_or(0))
    }

    pub fn at(&self, t: i64) -> Instant {
        self.origin + self.since_epoch(t)
    }

    /// When a line at model time `t` may run: inside every timer's window (after the fires the
    /// model's line has seen landed, before the next can start), not before `now`, and — as far
    /// as the windows allow — not before its model time. A slow line before it (a group join, a
    /// long poll) shortens the wait that follows rather than push a line past a timer's fire.
    pub fn schedule<'a>(
        &self,
        t: i64,
        now: Instant,
        timers: impl Iterator<Item = (&'a str, &'a TimerPhase)>,
    ) -> Result<Instant, Misaligned> {
        let mut lo = now;
        let mut hi: Option<(&str, Instant)> = None;
        for (name, timer) in timers {
            let (a, b) = timer.window(t);
            lo = lo.max(a);
            if hi.is_none_or(|(_, h)| b < h) {
                hi = Some((name, b));
            }
        }
        match hi {
            Some((name, h)) if lo > h => Err(Misaligned {
                consumer: name.to_string(),
                late_by: lo - h,
            }),
            Some((_, h)) => Ok(lo.max(self.at(t).min(h))),
            None => Ok(lo.max(self.at(t))),
        }
    }

    /// The line at model time `t` ran at `at`: later lines keep their distance from it — but
    /// never drift from a running auto-commit timer, whose fires are the model's at its
    /// consumer's start plus each interval: a slow line (a group join, a long poll) is made up
    /// by the waits after it, not carried past the timer's next fire.
    pub fn ran<'a>(&mut self, t: i64, at: Instant, timers: impl Iterator<Item = &'a TimerPhase>) {
        let Some(mut origin) = at.checked_sub(self.since_epoch(t)) else {
            return;
        };
        for timer in timers {
            let anchor = timer
                .high
                .checked_sub(self.since_epoch(timer.model_origin))
                .unwrap_or(timer.high);
            origin = origin.min(anchor);
        }
        self.origin = self.origin.max(origin);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timer(origin: Instant, startup_ms: u64) -> TimerPhase {
        TimerPhase {
            low: origin,
            high: origin + Duration::from_millis(startup_ms),
            interval_ms: 5_000,
            model_origin: 0,
            fires_seen: 0,
            ahead: 0,
        }
    }

    #[test]
    fn a_line_at_a_fire_instant_waits_for_the_commit_to_land() {
        let o = Instant::now();
        let clock = WallClock { origin: o, epoch: 0 };
        let t = timer(o, 40);
        // Model time 5 s: the model's timer fired at 5 s; the real one by 5.04 s.
        let at = clock
            .schedule(5_000, o, [("c1", &t)].into_iter())
            .expect("aligned");
        assert_eq!(at, o + Duration::from_millis(5_040) + MARGIN);
        // Model time 4 s: before the first fire; the line runs at 4 s.
        let at = clock
            .schedule(4_000, o, [("c1", &t)].into_iter())
            .expect("aligned");
        assert_eq!(at, o + Duration::from_millis(4_000));
    }

    #[test]
    fn a_line_too_late_for_the_timer_is_misaligned() {
        let o = Instant::now();
        let clock = WallClock { origin: o, epoch: 0 };
        let t = timer(o, 40);
        // Model time 4 s but it is already 4.9 s: the real timer may fire before the line.
        let late = clock.schedule(4_000, o + Duration::from_millis(4_900), [("c1", &t)].into_iter());
        assert!(matches!(late, Err(Misaligned { ref consumer, .. }) if consumer == "c1"));
    }

    #[test]
    fn a_fire_let_ahead_moves_the_lines_window_past_it() {
        let o = Instant::now();
        let clock = WallClock { origin: o, epoch: 0 };
        let mut t = timer(o, 40);
        let late = o + Duration::from_millis(4_900);
        assert!(clock.schedule(4_000, late, [("c1", &t)].into_iter()).is_err());
        // The first fire let happen before the line: it runs once that fire's commit landed,
        // and before the second.
        t.ahead = 1;
        let at = clock
            .schedule(4_000, late, [("c1", &t)].into_iter())
            .expect("aligned");
        assert_eq!(at, t.landed(1));
        assert_eq!(t.fires_before(4_000), 1);
        // Once the model's clock reaches the fire, nothing is ahead any more.
        assert_eq!(t.fires_before(10_000), 2);
        assert_eq!(t.model_fire(1), 5_000);
        assert_eq!(t.earliest(2), o + Duration::from_millis(10_000));
    }

    #[test]
    fn a_slow_line_shortens_the_next_wait_rather_than_miss_a_fire() {
        let o = Instant::now();
        let mut clock = WallClock { origin: o, epoch: 0 };
        let t = timer(o, 40);
        // The consumer's join took 1.5 s: the origin moved with it, but the line at 4 s still
        // runs before the real timer's first fire (5 s after the client was created).
        clock.ran(0, o + Duration::from_millis(1_500), [&t].into_iter());
        let at = clock
            .schedule(4_000, o + Duration::from_millis(2_000), [("c1", &t)].into_iter())
            .expect("aligned");
        assert_eq!(
            at,
            o + Duration::from_millis(4_040),
            "as far from the timer as in the model"
        );
        // Two lines at that instant both run before the fire.
        clock.ran(4_000, at + Duration::from_millis(300), [&t].into_iter());
        let next = clock
            .schedule(4_000, at + Duration::from_millis(300), [("c1", &t)].into_iter())
            .expect("aligned");
        assert!(next < o + Duration::from_millis(5_000) - MARGIN);
    }

    #[test]
    fn a_late_line_moves_the_origin_so_later_waits_stay_whole() {
        let o = Instant::now();
        let mut clock = WallClock { origin: o, epoch: 0 };
        clock.ran(1_000, o + Duration::from_millis(3_000), std::iter::empty());
        assert_eq!(clock.at(7_000), o + Duration::from_millis(9_000));
        // Never earlier.
        clock.ran(1_000, o, std::iter::empty());
        assert_eq!(clock.at(7_000), o + Duration::from_millis(9_000));
    }
}

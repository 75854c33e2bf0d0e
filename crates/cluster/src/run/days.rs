//! The records' timestamps on the cluster: the model's, moved by whole days onto the cluster's
//! own day.
//!
//! The model's clock starts on 2026-01-01 (the lab's epoch) whatever the date; the cluster's
//! clock is the wall clock. Kafka judges a record's age by its timestamp against its own clock —
//! `retention.ms` deletes a segment once its newest record is older than that (the active
//! segment included: the log is rolled first), `segment.ms` rolls by it, and
//! `log.message.timestamp.before.max.ms` / `after.max.ms` refuse records too far from it. A run
//! that sent the model's timestamps as they are would, months after the epoch, have every
//! record deleted by the broker's next retention check (every five minutes by default) in the
//! middle of the run — which the model, whose records are seconds old, never does.
//!
//! So a run sends each record with the model's timestamp plus a whole number of days: the
//! same instant of the day, on the day the run started (by the wall clock, UTC). Seen from the
//! cluster, its records are then less than a day old when the run starts, as they are in the
//! model. Whatever asks the cluster by time (a seek or an offset reset to an instant, or by a
//! duration) asks for the model's instant moved the same way, and what the cluster answers
//! with a timestamp (the page's log view, a reused topic) is moved back.
//!
//! Whole days keep a reused topic's timestamps recoverable: a later run reading a topic an
//! earlier run kept moves its records back by the days between the model's start and the
//! topic's first record — the earlier run's shift, when that record was written in the first
//! day of its model clock, as every scenario does that runs on a cluster in minutes.
//!
//! The page of `serve --bootstrap-server` follows the wall clock: its model and the cluster
//! agree on the instant, and nothing is moved (the shift is taken when the first line runs,
//! from the model's clock then).

/// A day, in milliseconds.
pub const DAY_MS: i64 = 86_400_000;

/// The whole days from model time `model` to instant `wall` (rounded down: `wall` is moved to
/// the same day as `model` or the day after at most), in milliseconds. None when they are less
/// than a minute apart: the model's clock is the wall clock (the page of `serve
/// --bootstrap-server`), a moment ahead or behind.
pub fn shift(model: i64, wall: i64) -> i64 {
    let apart = wall.saturating_sub(model);
    if apart.abs() < SAME_CLOCK_MS {
        return 0;
    }
    apart.div_euclid(DAY_MS).saturating_mul(DAY_MS)
}

/// Two clocks this close are one.
const SAME_CLOCK_MS: i64 = 60_000;

/// The wall clock now, in milliseconds since the Unix epoch (0 for a clock before it).
pub fn wall_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    const EPOCH: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

    #[test]
    fn a_model_instant_lands_on_the_same_time_of_the_run_days_day() {
        // 2026-12-03T06:20:00Z: 336 days after the epoch, and a quarter of a day.
        let wall = EPOCH + 336 * DAY_MS + 22_800_000;
        let s = shift(EPOCH, wall);
        assert_eq!(s, 336 * DAY_MS);
        // A record at model time +5 s is stamped 2026-12-03T00:00:05Z: less than a day old.
        let stamped = EPOCH + 5_000 + s;
        assert!(wall - stamped < DAY_MS && wall > stamped);
    }

    #[test]
    fn a_wall_clock_before_the_model_moves_back_whole_days() {
        // A machine whose clock says 2025-12-31T12:00:00Z.
        let wall = EPOCH - DAY_MS / 2;
        assert_eq!(shift(EPOCH, wall), -DAY_MS);
        // Records are stamped the same instant a day earlier: in the past, never the future.
        assert!(EPOCH - DAY_MS <= wall);
        assert_eq!(shift(EPOCH, EPOCH), 0);
    }

    #[test]
    fn a_model_on_the_wall_clock_moves_nothing() {
        // The page's lab follows wall time: a few milliseconds either way.
        let wall = EPOCH + 336 * DAY_MS + 22_800_000;
        assert_eq!(shift(wall + 5, wall), 0);
        assert_eq!(shift(wall - 5, wall), 0);
    }

    #[test]
    fn a_kept_topics_first_record_gives_back_the_shift_it_was_written_with() {
        let written_with = shift(EPOCH, EPOCH + 40 * DAY_MS + 123_456);
        // Its first record: model time +2 s.
        let first = EPOCH + 2_000 + written_with;
        // Read a week later: the same shift, from the record itself.
        assert_eq!(shift(EPOCH, first), written_with);
    }
}

//! The logical clock.
//!
//! Kafka is full of timers: `auto.commit.interval.ms`, `session.timeout.ms`, `retention.ms`,
//! `segment.ms`. The lab runs all of them on one logical clock measured in milliseconds since the
//! Unix epoch. It starts at [`LAB_EPOCH_MS`] and moves only when a scenario says `tick`, which is
//! what makes every run reproducible.

/// 2026-01-01T00:00:00Z: where a fresh lab's clock starts. Record timestamps are real epoch
/// milliseconds, so a `to-datetime=2026-01-01T06:00:00` reset means what it says.
pub const LAB_EPOCH_MS: i64 = 1_767_225_600_000;

/// Milliseconds since the Unix epoch (Kafka's timestamp unit).
pub type Millis = i64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Clock {
    now: Millis,
}

impl Default for Clock {
    fn default() -> Self {
        Self::starting_at(LAB_EPOCH_MS)
    }
}

impl Clock {
    pub fn starting_at(now: Millis) -> Self {
        Self { now }
    }

    pub fn now(&self) -> Millis {
        self.now
    }

    /// Milliseconds since the clock's epoch, for display (`t=12.5s`).
    pub fn elapsed(&self) -> Millis {
        self.now - LAB_EPOCH_MS
    }

    /// Moves time to `to`. Time never goes backwards; a smaller value is ignored.
    pub(crate) fn advance_to(&mut self, to: Millis) {
        self.now = self.now.max(to);
    }
}

/// Formats a duration in milliseconds the way the scenario language writes it (`250ms`, `5s`,
/// `2m`, `7d`), choosing the largest unit that divides it exactly.
pub fn format_duration(ms: Millis) -> String {
    const UNITS: [(i64, &str); 5] = [
        (86_400_000, "d"),
        (3_600_000, "h"),
        (60_000, "m"),
        (1_000, "s"),
        (1, "ms"),
    ];
    if ms == 0 {
        return "0ms".to_string();
    }
    for (size, unit) in UNITS {
        if ms % size == 0 {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}

/// Instants further than this from [`LAB_EPOCH_MS`] are written as dates: a lesson's `t=…`
/// stays readable for weeks of ticks, a live lab on wall time reads `2026-12-01T17:09:34Z`.
pub const DATED_AFTER_MS: Millis = 30 * 86_400_000;

/// Formats an instant: relative to the lab epoch (`t=4.25s`) near it, where lessons and
/// scenarios live; as an RFC 3339 date in UTC beyond [`DATED_AFTER_MS`] (a live lab's wall time).
pub fn format_instant(at: Millis) -> String {
    let ms = at.saturating_sub(LAB_EPOCH_MS);
    if !(-DATED_AFTER_MS..=DATED_AFTER_MS).contains(&ms) {
        return format_date(at);
    }
    if ms % 1000 == 0 {
        format!("t={}s", ms / 1000)
    } else {
        format!("t={:.3}s", ms as f64 / 1000.0)
    }
}

/// 10000-01-01T00:00:00Z: RFC 3339 writes four-digit years, so instants from here on (a lab
/// ticked past them by hand) are written in milliseconds.
pub const LAST_DATED_MS: Millis = 253_402_300_800_000;

/// An instant as an RFC 3339 date in UTC, with milliseconds when it has any (as epoch
/// milliseconds before 1970 and from the year 10000 on, which no date spells).
pub fn format_date(at: Millis) -> String {
    let Some(ms) = u64::try_from(at).ok().filter(|_| at < LAST_DATED_MS) else {
        return format!("{at}ms");
    };
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    if ms % 1000 == 0 {
        humantime::format_rfc3339_seconds(t).to_string()
    } else {
        humantime::format_rfc3339_millis(t).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_use_the_largest_exact_unit() {
        assert_eq!(format_duration(250), "250ms");
        assert_eq!(format_duration(5_000), "5s");
        assert_eq!(format_duration(90_000), "90s");
        assert_eq!(format_duration(604_800_000), "7d");
    }

    #[test]
    fn time_never_goes_backwards() {
        let mut c = Clock::default();
        c.advance_to(LAB_EPOCH_MS + 10);
        c.advance_to(LAB_EPOCH_MS + 5);
        assert_eq!(c.elapsed(), 10);
        assert_eq!(format_instant(c.now()), "t=0.010s");
    }

    #[test]
    fn far_instants_are_dates() {
        assert_eq!(format_instant(LAB_EPOCH_MS + DATED_AFTER_MS), "t=2592000s");
        assert_eq!(
            format_instant(LAB_EPOCH_MS + DATED_AFTER_MS + 1),
            "2026-01-31T00:00:00.001Z"
        );
        assert_eq!(format_instant(1_796_144_974_000), "2026-12-01T17:09:34Z");
        assert_eq!(format_instant(-5), "-5ms");
        assert_eq!(format_instant(LAST_DATED_MS - 1_000), "9999-12-31T23:59:59Z");
        assert_eq!(format_instant(LAST_DATED_MS), "253402300800000ms");
        assert_eq!(format_instant(Millis::MAX), format!("{}ms", Millis::MAX));
    }
}

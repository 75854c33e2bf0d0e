//! The live clock of `serve`: the lab's clock *is* wall time while it runs.
//!
//! Real clients live on wall time: their records carry the producer's wall-clock timestamp, an
//! offsets-for-times lookup "one hour ago" asks in wall time, a killed producer's
//! `transaction.timeout.ms`, a group's `offsets.retention.minutes` and the coordinator's
//! cleanup run (`offsets.retention.check.interval.ms`) run out in wall time.
//! Following wall time's *rate* from the lab's epoch would leave the lab's clock months away
//! from every such timestamp, so a live lab's clock reads wall time itself. It still moves only
//! through lines of the history — a `clock INSTANT` line, written before a change and when a
//! timer falls due ([`Session::timer_due`]) — so an export replays at the instants the lab lived
//! through, and the engine stays a pure function of its lines. Between two such lines nothing
//! in the lab depends on time, which is what lets the history grow with changes and due timers,
//! not with every passing second.
//!
//! The session holds the mode and, for a durable lab, keeps it in [`CLOCK_FILE`] beside the
//! generations, so a restart does not resume a paused lab (a lesson, an imported scenario) and
//! jump it months ahead. Loading a scenario pauses the clock; the adapters read wall time
//! ([`wall_clock_ms`]) and hand it in — nothing here reads a clock of its own.

use super::*;
use offsetlab_engine::clock::Millis;
use offsetlab_scenario::command::Clock;

/// The file, in the directory of generations, that says how the lab's clock runs: `live` or
/// `paused`.
pub const CLOCK_FILE: &str = "clock";

/// How the lab's clock runs in `serve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ClockMode {
    /// The clock reads wall time: every timer fires on time.
    Live,
    /// The clock moves only when someone steps it (`tick`), as in `run`, `explore` and lessons.
    Paused,
}

impl ClockMode {
    pub fn name(self) -> &'static str {
        match self {
            Self::Live => "live",
            Self::Paused => "paused",
        }
    }
}

impl std::fmt::Display for ClockMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ClockMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "live" => Ok(Self::Live),
            "paused" => Ok(Self::Paused),
            other => Err(format!("'{other}' is not a clock mode (live or paused)")),
        }
    }
}

/// How far a line may step a live lab's clock past wall time. A lesson's `tick 45s` after a
/// crash is a live lab's normal flow (its clock runs that far ahead, and wall time catches up);
/// a `clock 9999-12-31T00:00:00Z` or a `tick 30d` would leave it unable to follow wall time
/// for that long — pausing the clock is the way to step it that far.
pub const LIVE_AHEAD_MAX_MS: Millis = 60 * 60 * 1000;

/// Wall time in epoch milliseconds, Kafka's unit (0 for a system clock set before 1970).
pub fn wall_clock_ms() -> Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| Millis::try_from(d.as_millis()).unwrap_or(Millis::MAX))
}

/// The mode kept in `root`'s [`CLOCK_FILE`]: `None` when there is none; an error naming the file
/// when it cannot be read or says something else than a mode.
pub fn read_clock_mode(root: &Path) -> Result<Option<ClockMode>, RestoreError> {
    let path = root.join(CLOCK_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => text
            .trim()
            .parse()
            .map(Some)
            .map_err(|e| RestoreError::new(&path, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(RestoreError::new(&path, e)),
    }
}

/// The `clock` line that starts a lab at `at`: a live lab's seed begins there, before anything
/// exists, so its records, commits and timers are on wall time from the first line.
pub fn starting_at(at: Millis) -> String {
    format!("{}\n", Command::Clock(Clock { at_ms: at }))
}

impl Session {
    pub fn clock_mode(&self) -> ClockMode {
        self.clock
    }

    /// Sets how the clock runs, kept in [`CLOCK_FILE`] for a durable lab. Going live does not
    /// move the clock by itself: the next [`Session::catch_up`] does, firing what falls due.
    pub fn set_clock_mode(&mut self, mode: ClockMode) -> Result<(), LabError> {
        if let SinkBackend::Durable { root, flush } = &self.backend {
            let sync = *flush != FlushPolicy::Never;
            write_atomically(&root.join(CLOCK_FILE), format!("{mode}\n").as_bytes(), sync)
                .map_err(storage)?;
        }
        if self.clock != mode {
            self.clock = mode;
            // Every open page learns of it: the mode is part of the state they show.
            self.version += 1;
        }
        Ok(())
    }

    /// Pauses the clock without writing [`CLOCK_FILE`] (when writing it failed).
    pub(crate) fn pause_in_memory(&mut self) {
        if self.clock != ClockMode::Paused {
            self.clock = ClockMode::Paused;
            self.version += 1;
        }
    }

    /// Brings a live lab's clock to `wall` with a `clock` line of its own (a batch by itself:
    /// time passes whether or not the change that follows is taken). `false` when the clock is
    /// paused or already there. The caller saves it with the change that follows, or by itself.
    pub fn catch_up(&mut self, wall: Millis) -> Result<bool, ActionError> {
        if self.clock != ClockMode::Live || wall <= self.lab.now() {
            self.caught_up_at = Some(self.version);
            return Ok(false);
        }
        // Past the year 9999 no date can be written: the clock stays (a lab that far out was
        // stepped there by hand, and is ahead of wall time anyway).
        if wall >= offsetlab_engine::clock::LAST_DATED_MS {
            return Ok(false);
        }
        self.apply_changes(vec![Change::Command(Command::Clock(Clock { at_ms: wall }))])?;
        self.caught_up_at = Some(self.version);
        Ok(true)
    }

    /// Refuses, before anything is applied, lines that would step a live lab's clock more than
    /// [`LIVE_AHEAD_MAX_MS`] past `wall` (a `clock` line or `tick`s); a paused lab takes any.
    /// Lines that do not parse are left to [`Session::apply_lines`] to refuse.
    pub fn refuse_far_ahead(&self, lines: &[String], wall: Millis) -> Result<(), ActionError> {
        if self.clock != ClockMode::Live {
            return Ok(());
        }
        let mut at = self.lab.now().max(wall);
        for (i, text) in lines.iter().enumerate() {
            match Command::parse(text) {
                Ok(Some(Command::Clock(c))) => at = at.max(c.at_ms),
                Ok(Some(Command::Tick(t))) => at = at.saturating_add(t.duration_ms),
                _ => continue,
            }
            let ahead = at.saturating_sub(wall);
            if ahead > LIVE_AHEAD_MAX_MS {
                return Err(ActionError {
                    status: 400,
                    error: format!(
                        "the clock is live: this line would put it {} ahead of wall time, and it could not follow wall time again until then (at most {} ahead); pause the clock to step it by hand",
                        offsetlab_engine::clock::format_duration(ahead),
                        offsetlab_engine::clock::format_duration(LIVE_AHEAD_MAX_MS)
                    ),
                    line: i + 1,
                    text: text.clone(),
                    cause: None,
                });
            }
        }
        Ok(())
    }

    /// A new hold of the session's lock begins ([`crate::LabHandle::lock`]): a catch-up made
    /// under an earlier hold no longer stands for now.
    pub fn new_hold(&mut self) {
        self.caught_up_at = None;
    }

    /// [`Session::catch_up`], unless the clock was brought to wall time under this same hold of
    /// the lock, at this very version — a handler that locked for a change and planned it at that
    /// instant: the change happens there, with no second `clock` line.
    pub fn catch_up_if_stale(&mut self, wall: Millis) -> Result<bool, ActionError> {
        if self.caught_up_at == Some(self.version) {
            return Ok(false);
        }
        self.catch_up(wall)
    }

    /// Back to the seed lab, in the clock's mode: a live lab's seed is built at `wall` and the
    /// clock stays live (the page's "reset"); a paused one starts at the lab's epoch, as the
    /// lessons do. A seed that does not build changes nothing.
    pub fn reset_to_seed(&mut self, wall: Millis) -> Result<(), ActionError> {
        let source = match self.clock {
            ClockMode::Live => starting_at(wall) + offsetlab_scenario::LAB_SCENARIO,
            ClockMode::Paused => offsetlab_scenario::LAB_SCENARIO.to_string(),
        };
        self.load_from(&source, None)
    }

    /// Whether a live lab has a timer due by `wall` — a session to expire, a commit to land,
    /// retention to apply — so its clock must catch up now rather than at the next change.
    pub fn timer_due(&self, wall: Millis) -> bool {
        // A session that refuses every change (closed, or broken by the disk) has no timer to
        // fire: the ticker leaves it alone rather than fail four times a second.
        if self.clock != ClockMode::Live || wall <= self.lab.now() || self.broken.is_some() {
            return false;
        }
        let key = (self.version, self.history.len(), self.lab.now());
        let deadline = match self.deadline.get() {
            Some((k, d)) if k == key => d,
            _ => {
                let d = self.lab.next_deadline();
                self.deadline.set(Some((key, d)));
                d
            }
        };
        deadline.is_some_and(|d| d <= wall)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `set_clock_mode` writes into the clock file reads back as the same mode; anything
    /// else is an error naming the words it takes.
    #[test]
    fn a_clock_mode_reads_back_as_written() {
        let dir = tempfile::tempdir().expect("dir");
        for mode in [ClockMode::Live, ClockMode::Paused] {
            write_atomically(
                &dir.path().join(CLOCK_FILE),
                format!("{mode}\n").as_bytes(),
                false,
            )
            .expect("write");
            assert_eq!(read_clock_mode(dir.path()), Ok(Some(mode)));
        }
        std::fs::write(dir.path().join(CLOCK_FILE), "fast\n").expect("write");
        let err = read_clock_mode(dir.path()).expect_err("not a mode");
        assert!(err.problem.contains("live or paused"), "{err}");
        std::fs::remove_file(dir.path().join(CLOCK_FILE)).expect("rm");
        assert_eq!(read_clock_mode(dir.path()), Ok(None));
    }
}

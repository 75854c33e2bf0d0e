//! What one lab may hold, for a server that keeps many of them (`serve --workshop`).
//!
//! A learner controls what their lab grows to; the server must not run out of memory, disk or
//! time because one of thirty produced ten million records. Every change is checked *before*
//! it runs: each line's growth (records a `produce` appends, a topic and its partitions, a
//! consumer, a history line) is added to what the lab holds now, and a batch that would pass a
//! cap is refused whole, naming the cap, with nothing applied — no work done and no undo needed.
//! The bound is conservative (a line that would fail anyway still counts), which is the side a
//! bound must err on.

use offsetlab_engine::Lab;
use offsetlab_scenario::command::Command;
use offsetlab_scenario::Script;
use std::fmt;

/// The caps on one lab. Every field is a maximum of what the lab holds after a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Records appended to all partitions together (transaction markers included).
    pub records: u64,
    pub topics: usize,
    /// Partitions of all topics together.
    pub partitions: u64,
    /// Consumers started (each restart of one is the same consumer).
    pub consumers: usize,
    /// Lines in the lab's history: what bounds the work every other line can make (a poll, a
    /// rewind, a tick) and the time a restore takes.
    pub history_lines: usize,
}

impl Default for Caps {
    /// A lab big enough for every lesson and explorer replay many times over, small enough that
    /// a room of 200 fits in a laptop's memory and disk.
    fn default() -> Self {
        Self {
            records: 100_000,
            topics: 20,
            partitions: 100,
            consumers: 20,
            history_lines: 20_000,
        }
    }
}

/// What a lab holds, in the units [`Caps`] bounds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub records: u64,
    pub topics: usize,
    pub partitions: u64,
    pub consumers: usize,
    pub history_lines: usize,
}

impl Usage {
    /// What `lab`, built by `history_lines` lines, holds now.
    pub fn of(lab: &Lab, history_lines: usize) -> Self {
        let mut usage = Usage {
            topics: lab.topics().len(),
            consumers: lab.consumers().len(),
            history_lines,
            ..Usage::default()
        };
        for topic in lab.topics().values() {
            usage.partitions += topic.partitions.len() as u64;
            for log in &topic.partitions {
                usage.records += u64::try_from(log.log_end_offset()).unwrap_or(0);
            }
        }
        usage
    }

    /// `self` after `command` runs, at most.
    fn grown_by(mut self, command: &Command, lab: &Lab) -> Self {
        self.history_lines += 1;
        match command {
            Command::Produce(p) => self.records += p.spec.count,
            Command::Send(s) => self.records += s.records.len() as u64,
            Command::SendStored(s) => self.records += s.count as u64,
            Command::TxnSend(s) => self.records += s.records.len() as u64,
            // A commit or abort writes one marker per partition of the transaction: bounded by
            // the partitions, counted as one each.
            Command::EndTxn(_) | Command::TxnTimeout(_) => self.records += self.partitions,
            Command::Topic(t) => {
                self.topics += 1;
                self.partitions += u64::try_from(t.config.partitions).unwrap_or(0);
            }
            Command::AddPartitions(a) => {
                let now = lab
                    .topics()
                    .get(&a.topic)
                    .map_or(0, |t| t.partitions.len() as u64);
                self.partitions += u64::try_from(a.count).unwrap_or(0).saturating_sub(now);
            }
            Command::Consumer(c) if !lab.consumers().contains_key(&c.config.name) => self.consumers += 1,
            _ => {}
        }
        self
    }
}

/// One change of a batch, as far as the caps are concerned.
pub(crate) enum Growth<'a> {
    Command(&'a Command),
    /// A client's produced batches: this many records.
    Records(u64),
}

/// A change refused because the lab would pass a cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapExceeded {
    /// The cap's name, as `serve --workshop`'s flags spell it (`records`, `topics`, …).
    pub cap: &'static str,
    pub limit: u64,
    /// What the lab would hold after the change.
    pub would_be: u64,
    /// The 1-based line of the batch at which the cap was passed.
    pub line: usize,
}

impl fmt::Display for CapExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "refused by the workshop's {} cap: this would make {} {} in your lab, and a lab here holds at most {} (the server's --cap-{}). Nothing changed; Reset the lab or load a lesson to start again",
            self.cap,
            self.would_be,
            self.cap.replace('-', " "),
            self.limit,
            self.cap
        )
    }
}

impl std::error::Error for CapExceeded {}

impl Caps {
    /// Whether `usage` is within every cap; the first one passed otherwise (`line` 0).
    fn check(&self, usage: &Usage, line: usize) -> Result<(), CapExceeded> {
        let checks = [
            ("records", self.records, usage.records),
            ("topics", self.topics as u64, usage.topics as u64),
            ("partitions", self.partitions, usage.partitions),
            ("consumers", self.consumers as u64, usage.consumers as u64),
            (
                "history-lines",
                self.history_lines as u64,
                usage.history_lines as u64,
            ),
        ];
        match checks.into_iter().find(|(_, limit, used)| used > limit) {
            Some((cap, limit, would_be)) => Err(CapExceeded {
                cap,
                limit,
                would_be,
                line,
            }),
            None => Ok(()),
        }
    }

    /// Whether `commands`, applied to `lab` (built by `history_lines` lines), keep it within
    /// every cap. Caps a lab is already over (lowered since it was built) refuse only lines
    /// that grow it further in that unit.
    pub fn admit<'a>(
        &self,
        lab: &Lab,
        history_lines: usize,
        commands: impl IntoIterator<Item = &'a Command>,
    ) -> Result<(), CapExceeded> {
        self.admit_changes(lab, history_lines, commands.into_iter().map(Growth::Command))
    }

    /// [`Caps::admit`] for a batch of [`crate::Change`]s: a client's produced batches count their
    /// records.
    pub(crate) fn admit_changes<'a>(
        &self,
        lab: &Lab,
        history_lines: usize,
        changes: impl IntoIterator<Item = Growth<'a>>,
    ) -> Result<(), CapExceeded> {
        let start = Usage::of(lab, history_lines);
        // A cap already passed is raised to where the lab is, for this check.
        let raised = Caps {
            records: self.records.max(start.records),
            topics: self.topics.max(start.topics),
            partitions: self.partitions.max(start.partitions),
            consumers: self.consumers.max(start.consumers),
            history_lines: self.history_lines.max(start.history_lines),
        };
        let mut usage = start;
        for (i, change) in changes.into_iter().enumerate() {
            usage = match change {
                Growth::Command(c) => usage.grown_by(c, lab),
                Growth::Records(n) => Usage {
                    records: usage.records + n,
                    history_lines: usage.history_lines + 1,
                    ..usage
                },
            };
            raised.check(&usage, i + 1)?;
        }
        Ok(())
    }

    /// Whether the lab `script` builds from nothing stays within every cap (an import, a
    /// pushed scenario).
    pub fn admit_script(&self, script: &Script) -> Result<(), CapExceeded> {
        let empty = Lab::default();
        let mut usage = Usage::default();
        for line in &script.lines {
            usage = usage.grown_by(&line.command, &empty);
            if matches!(line.command, Command::Expect(_)) {
                usage.history_lines -= 1;
            }
            self.check(&usage, line.number)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands(lines: &[&str]) -> Vec<Command> {
        lines
            .iter()
            .filter_map(|l| Command::parse(l).ok().flatten())
            .collect()
    }

    fn seeded() -> Lab {
        let mut lab = Lab::default();
        for c in commands(&["topic orders partitions=2", "produce orders count=10"]) {
            assert!(c.apply(&mut lab).is_ok(), "{c}");
        }
        lab
    }

    #[test]
    fn usage_counts_what_the_lab_holds() {
        let lab = seeded();
        let u = Usage::of(&lab, 2);
        assert_eq!((u.records, u.topics, u.partitions, u.consumers), (10, 1, 2, 0));
    }

    #[test]
    fn a_batch_that_would_pass_a_cap_is_refused_at_its_line_naming_the_cap() {
        let lab = seeded();
        let caps = Caps {
            records: 15,
            ..Caps::default()
        };
        assert!(caps
            .admit(&lab, 2, &commands(&["produce orders count=5"]))
            .is_ok());
        let e = caps
            .admit(
                &lab,
                2,
                &commands(&["produce orders count=2", "produce orders count=4"]),
            )
            .expect_err("refused");
        assert_eq!((e.cap, e.limit, e.would_be, e.line), ("records", 15, 16, 2));
        assert!(e.to_string().contains("records cap"), "{e}");
    }

    #[test]
    fn topics_partitions_and_consumers_are_capped() {
        let lab = seeded();
        let caps = Caps {
            topics: 1,
            partitions: 4,
            consumers: 1,
            ..Caps::default()
        };
        let e = caps
            .admit(&lab, 2, &commands(&["topic t2"]))
            .expect_err("refused");
        assert_eq!(e.cap, "topics");
        let e = caps
            .admit(&lab, 2, &commands(&["add-partitions orders count=5"]))
            .expect_err("refused");
        assert_eq!((e.cap, e.would_be), ("partitions", 5));
        assert!(caps
            .admit(&lab, 2, &commands(&["add-partitions orders count=4"]))
            .is_ok());
        let two = commands(&[
            "consumer a group=g topic=orders",
            "consumer b group=g topic=orders",
        ]);
        assert_eq!(caps.admit(&lab, 2, &two).expect_err("refused").cap, "consumers");
    }

    #[test]
    fn a_lab_already_over_a_lowered_cap_may_still_do_what_does_not_grow_it() {
        let lab = seeded();
        let caps = Caps {
            records: 5,
            ..Caps::default()
        };
        assert!(caps.admit(&lab, 2, &commands(&["tick 1s"])).is_ok());
        assert_eq!(
            caps.admit(&lab, 2, &commands(&["produce orders count=1"]))
                .expect_err("refused")
                .cap,
            "records"
        );
    }

    #[test]
    fn a_script_is_checked_from_nothing() {
        let caps = Caps {
            records: 100,
            history_lines: 3,
            ..Caps::default()
        };
        let ok =
            Script::parse("topic orders\nproduce orders count=100\nexpect topic=orders log-end-offset=100\n")
                .expect("ok");
        assert!(caps.admit_script(&ok).is_ok());
        let big = Script::parse("topic orders\nproduce orders count=101\n").expect("ok");
        let e = caps.admit_script(&big).expect_err("refused");
        assert_eq!((e.cap, e.line), ("records", 2));
        let long = Script::parse("topic orders\ntick 1s\ntick 1s\ntick 1s\n").expect("ok");
        assert_eq!(
            caps.admit_script(&long).expect_err("refused").cap,
            "history-lines"
        );
    }
}

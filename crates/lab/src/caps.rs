//! What one lab may hold, for a server that keeps many of them (`serve --workshop`).
//!
//! A learner controls what their lab grows to; the server must not run out of memory, disk or
//! time because one of thirty produced ten million records. Every change is checked twice:
//!
//! - *before* it runs, each line's growth — the records and bytes a `produce` or `send` appends,
//!   a topic and its partitions, a consumer, the sink writes a `process` can make (at most the
//!   records its consumer holds in flight, each also a record of a `kafka-tx` output), a
//!   history line — is added to what the lab holds now, and a batch that would pass a cap is
//!   refused whole, naming the cap, with nothing applied and no work done;
//! - *after* it ran, what the lab holds is measured again — transaction markers, a consumer's
//!   output and anything else a line appends on its own are in it — and a batch that passed a
//!   cap anyway is undone (the history replayed without it) and refused the same way.
//!
//! The work one line can make is bounded by what the lab holds (a poll hands out at most the
//! log, a process at most what was polled), so the caps bound the work too.

use offsetlab_engine::Lab;
use offsetlab_scenario::command::Command;
use offsetlab_scenario::Script;
use std::fmt;

/// The caps on one lab. Every field is a maximum of what the lab holds after a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Records appended to all partitions together (transaction markers included).
    pub records: u64,
    /// Bytes of record batches kept in all partitions together.
    pub bytes: u64,
    /// Records applied to the groups' sinks, all groups together (each rewind writes again):
    /// what the sinks' databases and the audit grow with.
    pub sink_writes: u64,
    pub topics: usize,
    /// Partitions of all topics together.
    pub partitions: u64,
    /// Consumers started (each restart of one is the same consumer).
    pub consumers: usize,
    /// Consumer groups, however made: a consumer's, an offset reset's, an outside client's.
    pub groups: usize,
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
            bytes: 64 << 20,
            sink_writes: 500_000,
            topics: 20,
            partitions: 100,
            consumers: 20,
            groups: 20,
            history_lines: 20_000,
        }
    }
}

/// What a lab holds, in the units [`Caps`] bounds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Records in every partition, `__consumer_offsets` included.
    pub records: u64,
    /// Bytes of record batches, and of the history and narrative the lab keeps as text.
    pub bytes: u64,
    pub sink_writes: u64,
    /// Records handed to consumers and not yet processed, all consumers together: each is a
    /// copy in memory (and in the lab's snapshot). Capped by [`Caps::records`].
    pub in_flight: u64,
    pub groups: usize,
    pub topics: usize,
    pub partitions: u64,
    pub consumers: usize,
    pub history_lines: usize,
}

/// A record's bytes in a batch beyond its key and value, at most (varints, attributes, the
/// batch header shared out).
const RECORD_OVERHEAD: u64 = 80;
/// A generated order event's value, at most.
const ORDER_EVENT_BYTES: u64 = 256;

impl Usage {
    /// What `lab`, built by `history_lines` lines, holds now — all but its bytes, which take a
    /// walk over every segment: what is measured after each line of a batch (`bytes` is 0).
    pub fn counted(lab: &Lab, history_lines: usize) -> Self {
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
        usage.sink_writes = lab.groups().values().map(|g| g.audit.applied()).sum();
        usage.records += u64::try_from(lab.offsets().log().log_end_offset()).unwrap_or(0);
        usage.in_flight = lab.consumers().values().map(|c| c.in_flight.len() as u64).sum();
        usage.groups = lab.groups().len();
        usage
    }

    /// What `lab`, built by `history_lines` lines, holds now (its bytes those of its record
    /// batches: the session adds the text it keeps).
    pub fn of(lab: &Lab, history_lines: usize) -> Self {
        let mut usage = Usage::counted(lab, history_lines);
        for topic in lab.topics().values() {
            for log in &topic.partitions {
                usage.bytes += log.segments().iter().map(|s| s.bytes as u64).sum::<u64>();
            }
        }
        usage.bytes += lab
            .offsets()
            .log()
            .segments()
            .iter()
            .map(|s| s.bytes as u64)
            .sum::<u64>();
        usage
    }

    /// `self` after `command` runs, at most.
    fn grown_by(mut self, command: &Command, lab: &Lab) -> Self {
        // A `clock` line (the live clock catching up) is never refused for the history's
        // length: a lab at its cap must still follow wall time.
        if matches!(command, Command::Clock(_)) {
            return self;
        }
        self.history_lines += 1;
        // The line itself, kept as text in the history.
        self.bytes += command.to_string().len() as u64 + 1;
        self.grow_records(command, lab);
        self.grow_members(command, lab);
        self
    }

    /// The records and bytes `command` appends (or has a sink write), at most.
    fn grow_records(&mut self, command: &Command, lab: &Lab) {
        match command {
            Command::Produce(p) => {
                self.records += p.spec.count;
                let key = p.spec.key.as_ref().map_or(16, |k| k.len() as u64);
                let value = p
                    .spec
                    .value
                    .as_ref()
                    .map_or(ORDER_EVENT_BYTES, |v| v.len() as u64);
                self.bytes = self
                    .bytes
                    .saturating_add(p.spec.count.saturating_mul(key + value + RECORD_OVERHEAD));
            }
            // A line's text is at least its records' bytes (base64 only grows them).
            Command::Send(s) => {
                self.records += s.records.len() as u64;
                self.bytes += command.to_string().len() as u64 + RECORD_OVERHEAD * s.records.len() as u64;
            }
            Command::SendStored(s) => {
                self.records += s.count as u64;
                self.bytes += s.len;
            }
            Command::TxnSend(s) => {
                self.records += s.records.len() as u64;
                self.bytes += command.to_string().len() as u64 + RECORD_OVERHEAD * s.records.len() as u64;
            }
            Command::Process(p) => {
                if let Some(c) = lab.consumers().get(&p.consumer) {
                    let n = p.count.unwrap_or(usize::MAX).min(c.in_flight.len()) as u64;
                    self.sink_writes += n;
                    if c.config.output.is_some() {
                        self.records += n;
                        self.bytes += n * (RECORD_OVERHEAD + ORDER_EVENT_BYTES);
                    }
                } else if let Ok(c) = lab.share_consumer(&p.consumer) {
                    // Its applications are kept in the share group's audit.
                    self.sink_writes += p.count.unwrap_or(usize::MAX).min(c.held.len()) as u64;
                }
            }
            // A commit or abort writes one marker per partition of the transaction: bounded by
            // the partitions, counted as one each.
            Command::EndTxn(_) | Command::TxnTimeout(_) => self.records += self.partitions,
            _ => {}
        }
    }

    /// The topics, partitions, consumers and groups `command` adds, the records a poll holds
    /// in flight, and the offsets a commit from outside a group writes.
    fn grow_members(&mut self, command: &Command, lab: &Lab) {
        let new_group = |g: &str| usize::from(!lab.groups().contains_key(g));
        match command {
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
            Command::Consumer(c) => {
                if !lab.consumers().contains_key(&c.config.name) {
                    self.consumers += 1;
                }
                self.groups += new_group(&c.config.group);
            }
            Command::Poll(p) => {
                if let Some(c) = lab.consumers().get(&p.consumer) {
                    self.in_flight += (c.config.max_poll_records as u64).min(self.records);
                }
            }
            // A share consumer is a consumer and its group a group; what it acquires is held in
            // flight like a poll's records.
            Command::ShareConsumer(c) => {
                if !lab.is_share_consumer(&c.config.name) {
                    self.consumers += 1;
                }
                if !lab.share().groups.contains_key(&c.config.group) {
                    self.groups += 1;
                }
            }
            Command::SharePoll(p) => {
                if let Ok(c) = lab.share_consumer(&p.consumer) {
                    // Kafka's default acquire mode takes whole batches, past max.poll.records.
                    let most = match c.config.acquire_mode {
                        offsetlab_engine::share::AcquireMode::RecordLimit => c.config.max_poll_records as u64,
                        offsetlab_engine::share::AcquireMode::BatchOptimized => self.records,
                    };
                    self.in_flight += most.min(self.records);
                }
            }
            Command::AlterShareGroup(a) if !lab.share().groups.contains_key(&a.group) => self.groups += 1,
            Command::Rebalance(r) => self.groups += new_group(&r.group),
            Command::ConsumerGroupState(c) => self.groups += new_group(&c.group),
            Command::CommitOffsets(c) => {
                self.groups += new_group(&c.group);
                self.records += c.offsets.len() as u64;
            }
            Command::TxnOffsets(t) => {
                self.groups += new_group(&t.group);
                self.records += t.offsets.len() as u64;
            }
            Command::ResetOffsets(r) => self.groups += new_group(&r.group),
            Command::AlterOffsets(a) => self.groups += new_group(&a.group),
            _ => {}
        }
    }
}

/// One change of a batch, as far as the caps are concerned.
pub(crate) enum Growth<'a> {
    Command(&'a Command),
    /// A client's produced batches: this many records, this many bytes.
    Records(u64, u64),
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
        if self.cap == "compactions" {
            return write!(
                f,
                "refused: a workshop lab takes one compact or delete-records line per request (this one has {}); send them one at a time. Nothing changed",
                self.would_be
            );
        }
        // In-flight records are bounded by the records cap: a poll hands out copies of them.
        let flag = if self.cap == "in-flight" {
            "records"
        } else {
            self.cap
        };
        write!(
            f,
            "refused by the workshop's {} cap: this would make {} {} in your lab, and a lab here holds at most {} (the server's --cap-{flag}). Nothing changed; Reset the lab or load a lesson to start again",
            self.cap,
            self.would_be,
            self.cap.replace('-', " "),
            self.limit,
        )
    }
}

impl std::error::Error for CapExceeded {}

impl Caps {
    /// Whether `usage` is within every cap; the first one passed otherwise (`line` 0).
    fn check(&self, usage: &Usage, line: usize) -> Result<(), CapExceeded> {
        let checks = [
            ("records", self.records, usage.records),
            ("in-flight", self.records, usage.in_flight),
            ("groups", self.groups as u64, usage.groups as u64),
            ("bytes", self.bytes, usage.bytes),
            ("sink-writes", self.sink_writes, usage.sink_writes),
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
        self.admit_changes(
            lab,
            Usage::of(lab, history_lines),
            commands.into_iter().map(Growth::Command),
        )
    }

    /// [`Caps::admit`] for a batch of [`crate::Change`]s: a client's produced batches count their
    /// records.
    pub(crate) fn admit_changes<'a>(
        &self,
        lab: &Lab,
        start: Usage,
        changes: impl IntoIterator<Item = Growth<'a>>,
    ) -> Result<(), CapExceeded> {
        // A cap already passed is raised to where the lab is, for this check.
        let raised = self.raised_to(&start);
        let mut usage = start;
        let mut barriers = 0;
        for (i, change) in changes.into_iter().enumerate() {
            // Each compaction, DeleteRecords or truncation saves the lab first and rewrites logs:
            // one per request, so no request is a thousand rewrites.
            if let Growth::Command(
                Command::Compact(_) | Command::DeleteRecords(_) | Command::TruncateLog(_),
            ) = change
            {
                barriers += 1;
                if barriers > 1 {
                    return Err(CapExceeded {
                        cap: "compactions",
                        limit: 1,
                        would_be: barriers,
                        line: i + 1,
                    });
                }
            }
            usage = match change {
                Growth::Command(c) => usage.grown_by(c, lab),
                Growth::Records(n, bytes) => Usage {
                    records: usage.records + n,
                    bytes: usage.bytes + bytes,
                    history_lines: usage.history_lines + 1,
                    ..usage
                },
            };
            raised.check(&usage, i + 1)?;
        }
        Ok(())
    }

    /// After a line or a batch ran on a lab that held `before`: whether what it holds now,
    /// `after`, is still within every cap (those it was over already, raised to where it was).
    /// The history's length is not judged here: the check before is exact for it, and a
    /// `clock` line is never refused for it.
    pub fn still_within(&self, before: &Usage, after: Usage, line: usize) -> Result<(), CapExceeded> {
        let after = Usage {
            history_lines: before.history_lines,
            ..after
        };
        self.raised_to(before).check(&after, line)
    }

    /// These caps, each raised to what `usage` holds already.
    fn raised_to(&self, usage: &Usage) -> Caps {
        Caps {
            records: self.records.max(usage.records),
            bytes: self.bytes.max(usage.bytes),
            sink_writes: self.sink_writes.max(usage.sink_writes),
            topics: self.topics.max(usage.topics),
            partitions: self.partitions.max(usage.partitions),
            consumers: self.consumers.max(usage.consumers),
            groups: self.groups.max(usage.groups),
            history_lines: self.history_lines.max(usage.history_lines),
        }
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

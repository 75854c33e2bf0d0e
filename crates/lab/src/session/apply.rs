//! A batch of lines (or of the listener's changes) applied all or none, and the undo of a failed one by replaying the history.

use super::*;

/// Why `command` cannot be kept in the history as text, if it cannot: its line does not parse,
/// or parses as another command.
pub(crate) fn unwritable(command: &Command) -> Option<String> {
    let line = command.to_string();
    match Command::parse(&line) {
        Ok(Some(back)) if back == *command => None,
        Ok(Some(_)) => Some(format!(
            "the lab cannot record this action: its history line `{}` reads back as another action",
            clipped_line(command)
        )),
        Ok(None) => Some("the lab cannot record this action: its history line is empty".into()),
        Err(e) => Some(format!(
            "the lab cannot record this action: its history line does not read back ({})",
            e
        )),
    }
}

/// A command's line, clipped for an error message (a client's names can be 32 KiB long).
pub(crate) fn clipped_line(command: &Command) -> String {
    offsetlab_engine::names::clipped(&command.to_string())
}

/// The partitions a `truncate-log` line of `history` cuts: where a crash may have torn the
/// bytes of earlier `send … stored=` lines ([`ProducedStore::surviving`]).
pub(crate) fn torn_partitions<'a>(history: impl IntoIterator<Item = &'a Command>) -> Torn {
    history
        .into_iter()
        .filter_map(|c| match c {
            Command::TruncateLog(t) => Some((t.topic.clone(), t.partition)),
            _ => None,
        })
        .collect()
}

/// Partitions whose tail a restart found lost, by topic and partition.
pub(crate) type Torn = std::collections::BTreeSet<(String, i32)>;

/// Applies one history line to `lab` and records it in `history`. A `send … stored=` line's
/// batches come from `from` (the store of the lab being replayed) and go to `produced`, under the
/// line's new position; without `from` such a line cannot replay. On a partition in `torn`
/// (a later `truncate-log` cuts it) the batches a crash tore are replayed as stand-ins: the
/// offsets they held are taken again, and the truncation cuts them.
pub(crate) fn replay(
    lab: &mut Lab,
    produced: &mut ProducedStore,
    history: &mut Vec<Command>,
    command: &Command,
    (from, torn): (Option<&ProducedStore>, &Torn),
) -> Result<(), ApplyError> {
    match (command, from) {
        (Command::SendStored(line), Some(from)) => {
            let (batches, missing) = if torn.contains(&(line.topic.clone(), line.partition)) {
                from.surviving(line)?
            } else {
                (Some(from.batches(line)?), 0)
            };
            if let Some(mut batches) = batches {
                let stored = append_produced(
                    lab,
                    produced,
                    &line.topic,
                    line.partition,
                    &line.client,
                    &mut batches,
                )?;
                history.extend(stored.into_iter().map(Command::SendStored));
            }
            for stand_in in stand_ins(line, missing) {
                stand_in.apply(lab)?;
                history.push(stand_in);
            }
        }
        _ => {
            command.apply(lab)?;
            if !matches!(command, Command::Expect(_)) {
                history.push(command.clone());
            }
        }
    }
    Ok(())
}

/// Appends a client's batches to the lab's log: the history lines that name where they are
/// kept (one per segment they went to; an in-memory lab keeps a copy in `produced`). A failure
/// after the log took them leaves the lab ahead of its history; the caller rebuilds.
pub(crate) fn append_produced(
    lab: &mut Lab,
    produced: &mut ProducedStore,
    topic: &str,
    partition: i32,
    client: &str,
    batches: &mut ProducedBatches,
) -> Result<Vec<SendStored>, LabError> {
    let appended = lab.send_encoded(topic, partition, batches, client)?;
    let line = |file: String, at: u64, len: u64, count: usize| SendStored {
        topic: topic.to_string(),
        partition,
        client: client.to_string(),
        file,
        at,
        len,
        count,
    };
    if appended.kept.is_empty() {
        let bytes = batches.bytes();
        let (file, at) = produced.keep(bytes)?;
        return Ok(vec![line(file, at, bytes.len() as u64, batches.records())]);
    }
    Ok(appended
        .kept
        .into_iter()
        .map(|k| line(k.file, k.position, k.len, k.records))
        .collect())
}

/// What a batch being applied keeps track of.
pub(crate) struct Batch {
    /// The history's length before the batch: what an undo goes back to.
    history_mark: usize,
    /// The line of a compaction, DeleteRecords or truncation that saved the lab in the middle
    /// of the batch.
    kept_before: Option<usize>,
    reset_plans: Vec<ResetPlan>,
    /// [`offsetlab_engine::lab::Lab::irreversible`] before the batch.
    irreversible: u64,
    /// A compaction, DeleteRecords or truncation saved the lab during the batch — its first
    /// line too (which `kept_before` leaves out: nothing before it to keep).
    saved_midway: bool,
}

impl Session {
    /// `lines` read as commands, each with its 1-based line number (blank lines and comments
    /// left out), or the first that does not read as a `400`. Nothing is locked or changed: a
    /// front end checks a request with it before it takes the lab.
    pub fn parse_lines(lines: &[String]) -> Result<Vec<(usize, Change)>, ActionError> {
        let mut commands = Vec::with_capacity(lines.len());
        for (i, text) in lines.iter().enumerate() {
            match Command::parse(text) {
                Ok(Some(c)) => commands.push((i + 1, Change::Command(c))),
                Ok(None) => {}
                Err(e) => {
                    return Err(ActionError {
                        status: 400,
                        error: e.message,
                        line: i + 1,
                        text: text.clone(),
                        cause: None,
                    })
                }
            }
        }
        Ok(commands)
    }

    /// Applies `lines` as one batch: all of them, or none.
    pub fn apply_lines(&mut self, lines: &[String]) -> Result<Applied, ActionError> {
        let commands = Self::parse_lines(lines)?;
        let canonical: Vec<String> = commands.iter().map(|(_, c)| c.to_string()).collect();
        let mut applied = self.apply_numbered(commands).map_err(|mut e| {
            // Name the line as it was written.
            if let Some(text) = e.line.checked_sub(1).and_then(|i| lines.get(i)) {
                e.text = text.clone();
            }
            e
        })?;
        applied.lines = canonical;
        Ok(applied)
    }

    /// Applies `changes` as one batch, all or none: what the Kafka listener builds. No text
    /// round trip — a Produce request's batches go from the wire to the log and the produced
    /// batches store, and the history gets a `send … stored=` line naming them.
    /// [`Applied::lines`] is left empty.
    pub fn apply_changes(&mut self, changes: Vec<Change>) -> Result<Applied, ActionError> {
        // The history keeps these commands as text. A command the listener built that would not
        // read back as itself (a value the language cannot write) is refused before anything
        // changes, rather than saved as a line a restart would read differently or not at all.
        for (i, change) in changes.iter().enumerate() {
            if let Change::Command(c) = change {
                if let Some(problem) = unwritable(c) {
                    let e = LabError::InvalidArgument(problem);
                    return Err(ActionError {
                        status: 400,
                        error: e.to_string(),
                        line: i + 1,
                        text: clipped_line(c),
                        cause: Some(Box::new(e)),
                    });
                }
            }
        }
        self.apply_numbered(changes.into_iter().enumerate().map(|(i, c)| (i + 1, c)).collect())
    }

    pub(crate) fn apply_numbered(&mut self, commands: Vec<(usize, Change)>) -> Result<Applied, ActionError> {
        self.refuse_if_broken()?;
        if commands.is_empty() {
            return Err(ActionError {
                status: 400,
                error: "no action in lines".into(),
                line: 0,
                text: String::new(),
                cause: None,
            });
        }
        self.admit(&commands)?;
        let before = self.caps.map(|_| self.usage());
        let applied = commands.len();
        let mark = self.lab.narrative().len();
        let mut batch = Batch {
            history_mark: self.history.len(),
            kept_before: None,
            reset_plans: Vec::new(),
            irreversible: self.lab.irreversible(),
            saved_midway: false,
        };
        let last = commands.last().map_or(0, |(line, _)| *line);
        for (n, (line, change)) in commands.into_iter().enumerate() {
            let text = before.is_some().then(|| change.to_string());
            match change {
                Change::Command(c) => self.apply_command(&mut batch, n, line, c)?,
                Change::Produced {
                    topic,
                    partition,
                    client,
                    mut batches,
                } => self.apply_produced(&batch, n, line, (&topic, partition, &client), &mut batches)?,
            }
            // What a line appended on its own (markers, a consumer's output) is measured too.
            if let (Some(caps), Some(before)) = (self.caps, &before) {
                let now = crate::caps::Usage {
                    bytes: before.bytes,
                    ..crate::caps::Usage::counted(&self.lab, self.history.len())
                };
                if let Err(e) = caps.still_within(before, now, line) {
                    return Err(self.refuse_past_cap(&batch, &e, line, text.unwrap_or_default()));
                }
            }
        }
        if let (Some(caps), Some(before)) = (self.caps, &before) {
            if let Err(e) = caps.still_within(before, self.usage(), last) {
                return Err(self.refuse_past_cap(&batch, &e, last, String::new()));
            }
        }
        self.version += 1;
        Ok(Applied {
            applied,
            lines: Vec::new(),
            version: self.version,
            events: self.lab.narrative().since(mark).to_vec(),
            reset_plans: batch.reset_plans,
        })
    }

    /// A batch that took the lab past a cap as it ran: undone, and refused naming the cap.
    fn refuse_past_cap(
        &mut self,
        batch: &Batch,
        e: &crate::caps::CapExceeded,
        line: usize,
        text: String,
    ) -> ActionError {
        if let Err(undo) = self.undo_to(batch) {
            return undo;
        }
        ActionError {
            status: CAP_STATUS,
            error: e.to_string(),
            line,
            text,
            cause: None,
        }
    }

    /// A client's batches appended, their `send … stored=` lines in the history.
    fn apply_produced(
        &mut self,
        batch: &Batch,
        n: usize,
        line: usize,
        (topic, partition, client): (&str, i32, &str),
        batches: &mut ProducedBatches,
    ) -> Result<(), ActionError> {
        let appended = append_produced(
            &mut self.lab,
            &mut self.produced,
            topic,
            partition,
            client,
            batches,
        );
        let text = || {
            format!(
                "send {} partition={partition} client={} …",
                Quoted(topic),
                Quoted(client)
            )
        };
        match appended {
            Ok(stored) => self.history.extend(stored.into_iter().map(Command::SendStored)),
            Err(e) => {
                if let Some(fault) = self.fault_in(&e) {
                    return Err(self.refused_by_storage(line, text(), fault, batch.kept_before));
                }
                if n > 0 {
                    self.undo_to(batch)?;
                }
                return Err(ActionError {
                    status: 422,
                    error: e.to_string(),
                    line,
                    text: text(),
                    cause: Some(Box::new(e)),
                });
            }
        }
        if let Some(fault) = self.take_fault() {
            return Err(self.refused_by_storage(line, text(), fault, batch.kept_before));
        }
        Ok(())
    }

    /// One command applied and kept in the history; a refusal undoes the batch's earlier lines.
    fn apply_command(
        &mut self,
        batch: &mut Batch,
        n: usize,
        line: usize,
        command: Command,
    ) -> Result<(), ActionError> {
        if matches!(
            command,
            Command::Compact(_) | Command::DeleteRecords(_) | Command::TruncateLog(_)
        ) {
            // Compaction, DeleteRecords and a truncation destroy records for good. Everything
            // before them is saved first, so a restart's truncation to the saved state can never
            // undo a record they superseded (a cleaner never cleans past the high watermark). (A
            // deleted topic's files are only renamed aside until the deletion is saved.)
            if let Err(e) = self.barrier() {
                let fault = self.fault_in(&e).unwrap_or(Fault {
                    kind: FaultKind::Io,
                    message: e.to_string(),
                });
                return Err(self.refused_by_storage(line, command.to_string(), fault, batch.kept_before));
            }
            batch.saved_midway = true;
            if n > 0 && batch.kept_before.is_none() {
                batch.kept_before = Some(line);
            }
        }
        if let (Command::DeleteTopic(_), Some(g)) = (&command, &self.generation) {
            g.deleted_topics.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        let applied = command.apply(&mut self.lab);
        // The disk refused a write while it ran: the action did not happen.
        let fault = match &applied {
            Err(ApplyError::Lab(e)) => self.fault_in(e),
            _ => self.take_fault(),
        };
        if let Some(fault) = fault {
            return Err(self.refused_by_storage(line, command.to_string(), fault, batch.kept_before));
        }
        match applied {
            Ok(outcome) => {
                if let Outcome::Reset(plan) = outcome {
                    batch.reset_plans.push(plan);
                }
                if !matches!(command, Command::Expect(_)) {
                    self.history.push(command);
                }
                Ok(())
            }
            Err(e) => {
                if n > 0 {
                    self.undo_to(batch)?;
                }
                let (error, cause) = match e {
                    ApplyError::Lab(e) => (e.to_string(), Some(Box::new(e))),
                    ApplyError::Expectation(f) => (format!("expectation failed: {f}"), None),
                };
                Err(ActionError {
                    status: match cause.as_deref() {
                        Some(LabError::Storage(f)) => storage_status(f.kind),
                        _ => 422,
                    },
                    error,
                    line,
                    text: command.to_string(),
                    cause,
                })
            }
        }
    }

    /// Undoes the lines of a failed batch. A durable lab saved just before the batch, which
    /// made no change a save cannot undo (a sink written, segments retention deleted), goes back
    /// to that save — the restart's procedure, which costs what the
    /// lab holds, not its past; otherwise the lab is rebuilt from the history before the batch
    /// (a replay of every line: seconds on a lab of a million). If that fails too (a stored
    /// batch that can no longer be read), the batch's applied lines stay — in the lab and in its
    /// history, which must never disagree — and the error says so.
    pub(crate) fn undo_to(&mut self, batch: &Batch) -> Result<(), ActionError> {
        let (history_mark, version) = (batch.history_mark, self.version);
        let broken = self.broken.clone();
        if let Some(events) = self.saved_just_before(batch) {
            if self.go_back_to_saved_reusing_logs().is_ok() && self.history.len() == history_mark {
                // The same lab as before the failed batch: the same version, as after a replay,
                // and the same story (the reopening told of the logs cut back to the save).
                self.version = version;
                self.lab.narrative_mut().truncate(events);
                return Ok(());
            }
        }
        let Err(e) = self.rebuild(history_mark) else {
            // A go-back that failed above marked the session broken; the replay stood in for it,
            // and the lab and its history agree again.
            self.broken = broken;
            return Ok(());
        };
        // The rebuild could not be written (a full disk): the last save is from before the
        // batch, so going back to it undoes the batch too — its sink rows aside.
        let _ = self.take_fault();
        if self.generation.is_some() && self.go_back_to_saved().is_ok() && self.history.len() == history_mark
        {
            return Ok(());
        }
        self.version += 1;
        Err(internal(&format!(
            "a line of this batch failed and the lab could not undo the lines before it ({e}); they stay applied"
        )))
    }

    /// Whether the last save holds the lab as it was when `batch` began, so that going back to
    /// it undoes the batch exactly: a durable lab, saved with the history as long as it was
    /// then (no barrier saved it midway), and nothing done since that a save cannot undo
    /// ([`offsetlab_engine::lab::Lab::irreversible`]: SQLite keeps what the batch wrote,
    /// retention's deleted segments are gone; a replay rebuilds both), and no topic deleted (a
    /// topic of the same name created after it would stand in the deleted one's place when the
    /// store is opened again).
    /// The narrative's length at that save, when it does.
    fn saved_just_before(&self, batch: &Batch) -> Option<usize> {
        let g = self.generation.as_ref()?;
        let (commands, events) = offsetlab_storage::lock(&g.saved)
            .as_ref()
            .map(|s| (s.commands, s.events))?;
        (commands == batch.history_mark
            && !batch.saved_midway
            && !g.deleted_topics.load(std::sync::atomic::Ordering::SeqCst)
            && self.lab.irreversible() == batch.irreversible)
            .then_some(events)
    }

    /// Rebuilds the lab from the history (undo of a failed batch): a fresh lab, into which the
    /// history is replayed; a durable one in a new generation. Stored batches are read from the
    /// current store and kept in the new one.
    ///
    /// Only the first `upto` lines are replayed; on success they are the history. On failure
    /// nothing changes: the lab and its history still agree.
    pub(crate) fn rebuild(&mut self, upto: usize) -> Result<(), LabError> {
        let (mut lab, generation, mut produced) = self.fresh_lab()?;
        let mut history = Vec::with_capacity(upto);
        let before = self.history.upto(upto)?;
        let torn = torn_partitions(before.iter());
        for c in before.iter() {
            if let Err(e) = replay(
                &mut lab,
                &mut produced,
                &mut history,
                c,
                (Some(&self.produced), &torn),
            ) {
                if let Some(g) = &generation {
                    forget_generation(&g.dir);
                }
                return Err(match e {
                    ApplyError::Lab(e) => e,
                    ApplyError::Expectation(f) => LabError::InvalidArgument(f),
                });
            }
        }
        // The same lab as before the failed batch: the same version.
        self.install(lab, history, produced, generation, self.version)
    }
}

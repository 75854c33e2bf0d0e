//! When the disk refuses a write: going back to the last save, and the session that refuses every change when even that fails.

use super::*;
use offsetlab_storage::lock;

impl Session {
    /// Goes back to the lab the last save wrote, after the disk refused a write: the logs are
    /// opened again and truncated to what that save acknowledged — what a restart does — and the
    /// history is cut back to it. What the refused action did is gone (but for sink rows it
    /// wrote, which SQLite keeps, as after a crash).
    pub(crate) fn go_back_to_saved(&mut self) -> Result<(), LabError> {
        self.go_back(false)
    }

    /// [`Session::go_back_to_saved`] after a batch failed for a reason of its own (no write
    /// refused): the lab's logs, as they are open, are cut back to the save ([`Lab::go_back`])
    /// instead of opened again from their files — which meant scanning them. If that fails, the
    /// files are opened as a restart opens them.
    pub(crate) fn go_back_to_saved_reusing_logs(&mut self) -> Result<(), LabError> {
        self.go_back(true)
    }

    fn go_back(&mut self, reuse_logs: bool) -> Result<(), LabError> {
        let SinkBackend::Durable { flush, .. } = self.backend else {
            return Ok(());
        };
        let Some(g) = self.generation.as_mut() else {
            return Ok(());
        };
        let started = std::time::Instant::now();
        let saved = lock(&g.saved)
            .clone()
            .ok_or_else(|| storage("no save to go back to"))?;
        // The files as that save left them: the journal cut to its entry (a save that failed
        // half-way may have written part of one), the entries still waiting for their fsync
        // (`--flush always`) written after the logs are synced, and then read back.
        let snapshot = (|| {
            let mut journal = lock(&g.journal);
            journal.finish_snapshot();
            // Only bytes past the save's entry go — a save that failed half-way may have written
            // part of one past the whole frames. Under `--flush always` the save's own entry may
            // still be queued, its position counting the queue ([`Journal::end`]).
            let (number, end) = saved.journal;
            let keep = if number == journal.number { end } else { 0 };
            let whole = journal.bytes;
            journal.cut(keep.min(whole)).map_err(io_error)?;
            if journal.has_queued() {
                g.durability.sync_all().map_err(io_error)?;
                lock(&g.history).file.sync_data().map_err(io_error)?;
                journal.write_queued(None).map_err(io_error)?;
            }
            if let Some(s) = lock(&g.saved).as_mut() {
                Arc::make_mut(s).journal = (journal.number, journal.bytes);
            }
            drop(journal);
            read_saved(&g.dir)
        })();
        let mut snapshot = match snapshot {
            Ok(s) => s,
            Err(e) => {
                self.broken = Some(format!(
                    "after a storage failure the lab could not read its last save back ({e}); it refuses every change until it is restarted, and the next start restores it from its files"
                ));
                return Err(e);
            }
        };
        {
            let mut log = lock(&g.history);
            // A save that failed half-way may have written some of its lines.
            let _ = log.file.set_len(saved.history_bytes);
            log.bytes = saved.history_bytes;
            log.commands = saved.commands;
            self.history.truncate(saved.commands);
            let mut narrative_log = lock(&g.narrative);
            let _ = narrative_log.file.set_len(saved.narrative_bytes);
            narrative_log.bytes = saved.narrative_bytes;
            narrative_log.events = saved.events;
        }
        // The narrative as it was at that save (the memory holds it: nothing since was forgotten).
        let mut narrative = self.lab.narrative().clone();
        narrative.truncate(saved.events);
        let narrative_at_save = narrative.clone();
        snapshot.set_narrative(narrative);
        // The lab opened again from its files as a restart opens them — beside the one in
        // memory, which stays until the new one stands: if this fails too, the session keeps
        // what it has and refuses every change (`broken`) rather than save an empty lab over
        // the files.
        let read = started.elapsed();
        if reuse_logs {
            let current = std::mem::take(&mut self.lab);
            let reused = SqliteSinks::new(g.dir.join("sinks"))
                .map_err(LabError::from)
                .and_then(|sinks| current.go_back(snapshot, Box::new(sinks)))
                // A cut the disk refused: the files are opened again instead.
                .and_then(|lab| match g.health.take() {
                    Some(fault) => Err(LabError::Storage(fault)),
                    None => Ok(lab),
                });
            match reused {
                Ok(lab) => {
                    remove_unknown_partitions(&lab, &g.dir.join("logs"));
                    tracing::debug!(?read, restored = ?started.elapsed(), "went back to the last save over the open logs");
                    self.lab = lab;
                    self.installs += 1;
                    self.version += 1;
                    return Ok(());
                }
                Err(e) => {
                    tracing::warn!("going back to the last save over the open logs failed ({e}); opening them again from their files");
                    // The lab in memory was given up for the attempt: the files are all there is.
                    match read_saved(&g.dir) {
                        Ok(s) => snapshot = s,
                        Err(e) => {
                            self.broken = Some(format!(
                                "the lab could not go back to its last save ({e}); it refuses every change until it is restarted, and the next start restores it from its files"
                            ));
                            return Err(e);
                        }
                    }
                    snapshot.set_narrative(narrative_at_save);
                }
            }
        }
        let reopened = (|| {
            let logs = g.dir.join("logs");
            let store = FileStore::open(&logs, flush)
                .map_err(io_error)?
                .keeping_segments_in(g.dir.join(PRODUCED_DIR));
            let opened = started.elapsed();
            let (health, durability) = (store.health(), store.durability());
            let sinks = SqliteSinks::new(g.dir.join("sinks"))?;
            let lab = Lab::restore(snapshot, Box::new(SharedStore::new(store)), Box::new(sinks))?;
            tracing::debug!(
                ?read,
                ?opened,
                restored = ?started.elapsed(),
                "went back to the last save (times since it began: the save read back, the logs opened, the lab restored)"
            );
            if let Some(fault) = health.take() {
                return Err(LabError::Storage(fault));
            }
            // Partition directories that last save does not know: topics the refused action
            // created (a retry must not find their records), or deleted ones brought back.
            remove_unknown_partitions(&lab, &logs);
            Ok((lab, health, durability))
        })();
        match reopened {
            Ok((lab, health, durability)) => {
                self.lab = lab;
                self.installs += 1;
                g.health = health;
                g.durability = durability;
                self.version += 1;
                Ok(())
            }
            Err(e) => {
                self.broken = Some(format!(
                    "after a storage failure the lab could not go back to its last save ({e}); it refuses every change until it is restarted, and the next start restores it from its files"
                ));
                Err(e)
            }
        }
    }

    /// A refusal of any change while the session is [`Session::broken`].
    pub(crate) fn refuse_if_broken(&self) -> Result<(), ActionError> {
        match &self.broken {
            None => Ok(()),
            Some(why) => Err(ActionError {
                status: 503,
                error: why.clone(),
                line: 0,
                text: String::new(),
                cause: Some(Box::new(LabError::storage(why.clone()))),
            }),
        }
    }

    /// The answer to an action the disk refused, after going back to the last save.
    ///
    /// `kept_before`: a compaction or DeleteRecords at that line of the batch saved the lab
    /// (before destroying records), so the lines before it stay applied.
    pub(crate) fn refused_by_storage(
        &mut self,
        line: usize,
        text: String,
        fault: Fault,
        kept_before: Option<usize>,
    ) -> ActionError {
        let back = self.go_back_to_saved();
        let status = storage_status(fault.kind);
        let error = match (back, kept_before) {
            (Ok(()), None) => format!("{fault}; nothing of this action was kept"),
            (Ok(()), Some(at)) => format!(
                "{fault}; the lines before line {at} stay applied (the lab was saved there, before the compaction or deletion destroyed records), nothing after them was kept"
            ),
            (Err(e), _) => format!("{fault}; and the lab could not go back to its last save: {e}"),
        };
        ActionError {
            status,
            error: error.clone(),
            line,
            text,
            cause: Some(Box::new(LabError::Storage(Fault {
                kind: fault.kind,
                message: error,
            }))),
        }
    }
}

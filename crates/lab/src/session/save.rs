//! Saving the lab after a change: the history's new lines, then the journal's entry — at once, or after the fsync under `--flush always` ([`PendingSave`]).

use super::*;
use offsetlab_engine::log::PartitionLog;
use offsetlab_storage::lock;

/// A save that must wait for the logs (`--flush always`): its journal entry, queued, written
/// once every append it covers is on disk. Run it outside the session's lock; the entries of
/// earlier saves still queued are written with it, in order (a journal never skips one).
pub struct PendingSave {
    pub(crate) durability: Arc<Durability>,
    pub(crate) history: Arc<std::fs::File>,
    pub(crate) upto: u64,
    pub(crate) version: u64,
    pub(crate) journal: Arc<std::sync::Mutex<Journal>>,
    /// The logs directory, when deleted topics' files go once this save is written.
    pub(crate) purge: Option<PathBuf>,
}

impl PendingSave {
    /// Waits for the fsync (shared with concurrent requests: group commit), then writes the
    /// queued journal entries up to this save's and syncs them.
    pub fn complete(self) -> Result<(), LabError> {
        self.durability.sync_upto(self.upto).map_err(storage)?;
        self.history.sync_data().map_err(storage)?;
        {
            let mut journal = lock(&self.journal);
            journal.write_queued(Some(self.version)).map_err(storage)?;
            journal.sync().map_err(storage)?;
        }
        if let Some(logs) = self.purge {
            FileStore::purge_deleted(&logs).map_err(storage)?;
        }
        Ok(())
    }
}

/// Writes `bytes` — a snapshot of the lab at `version`, taken under the session's lock and
/// perhaps written by a thread after it — as the newest slot, unless the slots already hold a
/// newer lab. Whether it was written.
pub(crate) fn write_slots(
    slots: &std::sync::Mutex<(SlotFile, u64)>,
    version: u64,
    bytes: &[u8],
    sync: bool,
) -> Result<bool, LabError> {
    let mut guard = lock(slots);
    let (file, newest) = &mut *guard;
    if version < *newest {
        return Ok(false);
    }
    file.write(bytes, sync).map_err(io_error)?;
    *newest = version;
    Ok(true)
}

impl Session {
    /// Saves what the next start restores (durable backend), now: the history's new lines, then
    /// the journal's entry (both synced unless `--flush never`). Entries still queued for their
    /// fsync go first: a caller under `--flush always` has synced the logs (a barrier, a close).
    pub fn persist(&self) -> Result<(), LabError> {
        let Some(g) = &self.generation else {
            return Ok(());
        };
        if let Some(why) = &self.broken {
            return Err(storage(why));
        }
        let sync = g.durability.policy() != FlushPolicy::Never;
        let (mut saved, frame, history) = entry_of(g, &self.lab, &self.history)?;
        if sync {
            history.sync_data().map_err(io_error)?;
        }
        {
            let mut journal = lock(&g.journal);
            journal.write_queued(None).map_err(io_error)?;
            journal.append(&frame).map_err(io_error)?;
            if sync {
                journal.sync().map_err(io_error)?;
            }
        }
        if g.deleted_topics.swap(false, std::sync::atomic::Ordering::SeqCst) {
            FileStore::purge_deleted(&g.dir.join("logs")).map_err(io_error)?;
        }
        self.snapshot_if_due(g, saved.history_bytes, saved.narrative_bytes);
        let journal = lock(&g.journal);
        saved.journal = (journal.number, journal.bytes);
        drop(journal);
        g.set_saved(saved);
        Ok(())
    }

    /// The disk refused a write since the last look (durable labs only).
    pub(crate) fn take_fault(&self) -> Option<Fault> {
        self.generation.as_ref().and_then(|g| g.health.take())
    }

    /// The storage fault behind `e`: one the store noted, or — for a storage or sink error the
    /// store did not see (SQLite's own "database or disk is full") — the error itself.
    pub(crate) fn fault_in(&self, e: &LabError) -> Option<Fault> {
        let noted = self.take_fault();
        match e {
            LabError::Storage(fault) => Some(noted.unwrap_or_else(|| fault.clone())),
            LabError::Sink(offsetlab_engine::sink::SinkError::Full(m)) => Some(noted.unwrap_or(Fault {
                kind: FaultKind::Full,
                message: m.clone(),
            })),
            LabError::Sink(offsetlab_engine::sink::SinkError::Backend(m)) => Some(noted.unwrap_or(Fault {
                kind: FaultKind::Io,
                message: m.clone(),
            })),
            _ => noted,
        }
    }

    /// Saves the lab after a change. Under `--flush always` the save must follow the fsync of
    /// the appends it covers, so it is returned to be completed outside the lock; otherwise it is
    /// written now.
    ///
    /// A save that cannot be written takes the change back (the lab returns to its last save):
    /// a change is never answered with an error and kept.
    pub fn save(&mut self) -> Result<Option<PendingSave>, LabError> {
        // An fsync failed (a deferred save's, outside the lock): nothing can be made durable
        // any more, and what was answered with that error must not be saved later.
        if let Some(failure) = self.generation.as_ref().and_then(|g| g.durability.failure()) {
            self.broken.get_or_insert_with(|| {
                format!("an fsync failed ({failure}): the lab refuses every change until it is restarted, and the next start restores it from its files")
            });
        }
        if let Some(why) = &self.broken {
            return Err(storage(why));
        }
        let fault = self.take_fault();
        let saved = match fault {
            Some(f) => Err(LabError::Storage(f)),
            None => self.try_save(),
        };
        let saved = saved.map_err(|e| match self.go_back_to_saved() {
            Ok(()) => e,
            Err(again) => storage(format!(
                "{e}; and the lab could not go back to its last save: {again}"
            )),
        })?;
        // The journal has them (or will, once their fsync is): the next entry starts from here.
        self.lab.forget_changes();
        // The history's file has the lines this save wrote: memory lets them go.
        if let Some(g) = &self.generation {
            if let Some(saved) = lock(&g.saved).as_ref() {
                self.history
                    .let_go(saved.commands, saved.history_bytes, &g.dir.join(HISTORY_FILE));
            }
        }
        self.shape_deleted_segments();
        // What is in the narrative's file need not stay in memory. Forgotten a thousand at a
        // time: one at a time, every save moved the two thousand kept.
        if self.generation.is_some() {
            let narrative = self.lab.narrative_mut();
            if narrative.len() - narrative.first() > NARRATIVE_IN_MEMORY + NARRATIVE_IN_MEMORY / 2 {
                let keep_from = narrative.len().saturating_sub(NARRATIVE_IN_MEMORY);
                narrative.forget_before(keep_from);
            }
        }
        Ok(saved)
    }

    /// The kept segments whose log file retention or DeleteRecords deleted, replaced by their
    /// shapes ([`offsetlab_storage::shape`]): the history still replays them — same offsets,
    /// sizes, timestamps and keys — and the disk retention was to free is freed. A file that
    /// cannot be shaped stays whole (a warning says so): it costs disk, never the history.
    fn shape_deleted_segments(&self) {
        let Some(g) = &self.generation else {
            return;
        };
        let unlinked = g.health.take_unlinked();
        if unlinked.is_empty() {
            return;
        }
        for kept in &unlinked {
            if let Err(e) = offsetlab_storage::shape::keep_shape(kept) {
                tracing::warn!(file = %kept.display(), "a kept segment retention deleted stays whole: {e}");
            }
        }
        if let Err(e) = std::fs::File::open(g.dir.join(PRODUCED_DIR)).and_then(|d| d.sync_all()) {
            tracing::warn!("syncing the kept segments' directory: {e}");
        }
    }

    pub(crate) fn try_save(&self) -> Result<Option<PendingSave>, LabError> {
        let Some(g) = &self.generation else {
            return Ok(None);
        };
        if g.durability.policy() != FlushPolicy::Always {
            self.persist()?;
            return Ok(None);
        }
        let (mut saved, frame, history) = entry_of(g, &self.lab, &self.history)?;
        lock(&g.journal).enqueue(self.version, frame);
        self.snapshot_if_due(g, saved.history_bytes, saved.narrative_bytes);
        // Under `--flush always` the save is complete once its fsync is; what the lab holds now
        // is what a refused write goes back to (a later fsync failure fails every save after it).
        let journal = lock(&g.journal);
        // Where the journal will end once this save's frame (and any before it) is written.
        saved.journal = (journal.number, journal.end());
        drop(journal);
        g.set_saved(saved);
        Ok(Some(PendingSave {
            durability: Arc::clone(&g.durability),
            history,
            upto: g.durability.written(),
            version: self.version,
            journal: Arc::clone(&g.journal),
            purge: g
                .deleted_topics
                .swap(false, std::sync::atomic::Ordering::SeqCst)
                .then(|| g.dir.join("logs")),
        }))
    }

    /// The logs synced and the lab saved, as they are now.
    pub(crate) fn barrier(&self) -> Result<(), LabError> {
        if let Some(g) = &self.generation {
            g.durability.sync_all().map_err(storage)?;
            self.persist()?;
        }
        Ok(())
    }

    /// The durable lab's sync handle: after an action, `sync_upto(written())` makes its appends
    /// durable (group commit), outside the session's lock.
    pub fn durability(&self) -> Option<Arc<Durability>> {
        self.generation.as_ref().map(|g| Arc::clone(&g.durability))
    }

    /// A clean stop: logs closed (synced, snapshots written), the lab saved, the store marked
    /// clean so the next start reads no record data.
    pub fn close(&mut self) -> Result<(), LabError> {
        let Some(g) = &self.generation else {
            return Ok(());
        };
        if let Some(why) = &self.broken {
            // Not saved, not marked clean: the next start recovers from the files.
            return Err(storage(why));
        }
        close_in_parallel(self.lab.logs_to_close())?;
        self.persist()?;
        // A snapshot still being written must be done before the lab can be opened again.
        lock(&g.journal).finish_snapshot();
        FileStore::mark_clean(&g.dir.join("logs")).map_err(storage)?;
        // Closed means closed: a request that still held the session (a server stopping with a
        // request in flight) changes nothing the clean marker would then belie.
        self.broken = Some("the lab was closed (the server is stopping, or the lab was put away)".into());
        Ok(())
    }
}

/// How many threads close a durable lab's logs.
const CLOSING_THREADS: usize = 8;

/// Closes every log, spread over [`CLOSING_THREADS`] threads: each close is an fsync or more
/// (segments, snapshot, recovery point, directory), bound by the disk's latency, not the CPU —
/// so several in flight at once take a fraction of the time one after the other does (a
/// 10,000-partition lab took over 20 s to stop). The first failure is returned; the other
/// logs are still closed.
fn close_in_parallel(logs: Vec<&mut (dyn PartitionLog + 'static)>) -> Result<(), LabError> {
    let per_thread = logs.len().div_ceil(CLOSING_THREADS).max(1);
    let mut chunks: Vec<Vec<&mut (dyn PartitionLog + 'static)>> = Vec::new();
    let mut logs = logs.into_iter().peekable();
    while logs.peek().is_some() {
        chunks.push(logs.by_ref().take(per_thread).collect());
    }
    let failures: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .into_iter()
                        .filter_map(|log| log.close().err())
                        .collect::<Vec<String>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|_| vec!["a thread closing logs panicked".to_string()])
            })
            .collect()
    });
    match failures.into_iter().next() {
        Some(why) => Err(LabError::storage(why)),
        None => Ok(()),
    }
}

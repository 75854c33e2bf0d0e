//! Restoring the durable lab a start finds: everything read and checked first ([`Found::read`],
//! which changes nothing), then the files changed as a restart changes them ([`Found::restore`]).

use super::*;

/// Removes the partition directories under `logs` that `lab` does not know — a topic created
/// by an action that crashed (or was refused) before it was acknowledged: gone, or a later topic
/// of that name would inherit its records. Their names.
pub(crate) fn remove_unknown_partitions(lab: &Lab, logs: &Path) -> Vec<String> {
    let known: std::collections::BTreeSet<String> = lab
        .topics()
        .values()
        .flat_map(|t| (0..t.partitions.len()).map(move |p| format!("{}-{p}", t.name)))
        .chain([format!("{}-0", offsetlab_engine::offsets::CONSUMER_OFFSETS_TOPIC)])
        .collect();
    let mut removed = Vec::new();
    if let Ok(entries) = std::fs::read_dir(logs) {
        for e in entries.filter_map(Result::ok).filter(|e| e.path().is_dir()) {
            let name = e.file_name().to_string_lossy().into_owned();
            if !known.contains(&name) {
                offsetlab_storage::FilePool::global().forget_under(&e.path());
                let _ = std::fs::remove_dir_all(e.path());
                removed.push(name);
            }
        }
    }
    removed
}

impl Session {
    /// The durable lab in `root` as it was when the server stopped, cleanly or not; `None` when
    /// there is none yet.
    ///
    /// Everything the restore depends on — `current`, the snapshot, the whole history — is read
    /// and checked before anything on disk is touched: a lab that cannot be restored is left
    /// exactly as it was, and the error names the file (and line) and what is wrong. Nothing is
    /// ever restored "instead": no fallback to the seed, no replay into a new generation over it.
    pub fn restore(root: &Path, flush: FlushPolicy) -> Result<Option<(Self, String)>, RestoreError> {
        let Some(found) = Found::read(root)? else {
            return Ok(None);
        };
        // From here on the lab is restored: files are changed as a restart changes them.
        found
            .restore(root, flush)
            .map(Some)
            .map_err(RestoreError::after_changes)
    }
}

/// A durable lab as a start finds it, read and checked; nothing on disk changed yet.
pub(crate) struct Found {
    number: u64,
    dir: PathBuf,
    snapshot: offsetlab_engine::lab::LabSnapshot,
    history: Vec<Command>,
    /// The history's text, up to what the snapshot covers.
    history_text: String,
    /// How much of the history file the snapshot covers (`None`: a lab saved before the
    /// history had a file of its own, upgraded by the restore).
    history_bytes: Option<u64>,
    /// The narrative file's length and events the snapshot covers (`None`: an older lab that
    /// kept the narrative in the snapshot).
    narrative_saved: Option<(u64, usize)>,
    /// Where the journals end (`None`: a lab from before journals).
    journal_end: Option<JournalEnd>,
}

impl Found {
    /// Reads `current`, the snapshot, the whole history and the narrative's tail; `None` when
    /// `root` holds no lab yet.
    pub(crate) fn read(root: &Path) -> Result<Option<Self>, RestoreError> {
        let Some((number, dir)) = current_generation(root)? else {
            return Ok(None);
        };
        let (mut file, snapshot_path) = read_snapshot(&dir)?;
        let journal_end = bring_forward(&dir, &mut file)?;
        let LabFile {
            history_bytes,
            narrative_bytes,
            history: legacy_history,
            mut snapshot,
            journal: _,
        } = file;
        let history_text = read_history(&dir, &snapshot_path, history_bytes, legacy_history)?;
        let history_path = dir.join(HISTORY_FILE);
        let history: Vec<Command> = Script::parse(&history_text)
            .map_err(|e| RestoreError {
                path: history_path.clone(),
                line: Some(e.line()),
                problem: e.reason(),
                untouched: true,
            })?
            .lines
            .into_iter()
            .map(|l| l.command)
            .collect();
        // The narrative: the snapshot says how long it is; its last events come from the file.
        if let Some(bytes) = narrative_bytes {
            let events = snapshot.narrative_len();
            snapshot.set_narrative(NarrativeLog::read_tail(&dir.join(NARRATIVE_FILE), bytes, events)?);
        }
        let narrative_saved = narrative_bytes.map(|b| (b, snapshot.narrative_len()));
        Ok(Some(Self {
            number,
            dir,
            snapshot,
            history,
            history_text,
            history_bytes,
            narrative_saved,
            journal_end,
        }))
    }

    /// The lab restored: files cut to what the snapshot acknowledged, logs recovered, sinks
    /// reopened, and a summary of what the restart did.
    pub(crate) fn restore(self, root: &Path, flush: FlushPolicy) -> Result<(Session, String), RestoreError> {
        let dir = self.dir.clone();
        let at = |e: &dyn std::fmt::Display| RestoreError::new(&dir, e.to_string());
        let history_file = self.cut_history()?;
        let (lab_file, _) = SlotFile::open(&dir, LAB_FILE).map_err(|e| at(&e))?;
        let narrative_log = self.cut_narrative()?;
        let journal = self.next_journal()?;
        self.remove_unnamed_kept_segments();
        let logs = dir.join("logs");
        let store = FileStore::open(&logs, flush)
            .map_err(|e| RestoreError::new(&logs, e))?
            .keeping_segments_in(dir.join(PRODUCED_DIR));
        let (clean, reports, durability, health) = (
            store.was_clean(),
            store.reports(),
            store.durability(),
            store.health(),
        );
        let sinks = SqliteSinks::new(dir.join("sinks")).map_err(|e| at(&e))?;
        let (lab, losses) =
            Lab::restore_reporting(self.snapshot, Box::new(SharedStore::new(store)), Box::new(sinks))
                .map_err(|e| at(&e))?;
        if let Some(fault) = health.take() {
            return Err(RestoreError::new(&logs, fault));
        }
        let mut notes: Vec<String> = remove_unknown_partitions(&lab, &logs)
            .into_iter()
            .map(|name| format!("{name}: never acknowledged, removed"))
            .collect();
        notes.extend(remove_abandoned_generations(root, self.number));
        let mut aside: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
        if let Ok(r) = reports.lock() {
            for (log, report) in r.iter() {
                if report.truncated_bytes > 0 || report.dropped_segments > 0 {
                    notes.push(format!(
                        "{log}: cut {} byte(s) of torn or corrupt tail, took {} segment(s) out (kept in {}/{})",
                        report.truncated_bytes,
                        report.dropped_segments,
                        log,
                        offsetlab_storage::CUT_DIR
                    ));
                }
                aside
                    .entry(log.clone())
                    .or_default()
                    .extend(report.kept_aside.iter().cloned());
            }
        }
        let (history_bytes, commands) = (self.history_text.len() as u64, self.history.len());
        let (narrative_bytes, narrative_events) = (narrative_log.bytes, narrative_log.events);
        let session = Session {
            lab,
            broken: None,
            backend: SinkBackend::Durable {
                root: root.to_path_buf(),
                flush,
            },
            version: 1,
            clock: ClockMode::Paused,
            caught_up_at: None,
            deadline: std::cell::Cell::new(None),
            caps: None,
            recovered: Vec::new(),
            installs: 0,
            generation: Some(Generation {
                number: self.number,
                dir: dir.clone(),
                durability,
                history: std::sync::Mutex::new(HistoryLog {
                    file: Arc::new(history_file),
                    text: String::new(),
                    commands,
                    bytes: history_bytes,
                }),
                lab_file: Arc::new(std::sync::Mutex::new((lab_file, 1))),
                deleted_topics: false.into(),
                health,
                saved: std::sync::Mutex::new(None),
                narrative: std::sync::Mutex::new(narrative_log),
                journal: Arc::new(std::sync::Mutex::new(journal)),
            }),
            history: History::from(self.history),
            produced: ProducedStore::Dir(dir.join(PRODUCED_DIR)),
        };
        let mut session = session;
        session
            .note_restored_save(history_bytes, narrative_bytes, narrative_events)
            .map_err(|e| at(&e))?;
        session.write_down_losses(losses, &aside).map_err(|e| at(&e))?;
        notes.extend(session.recovered().iter().map(|r| format!("LOST {r}")));
        Ok((session, summary(clean, &notes)))
    }

    /// The history file cut to what the snapshot covers (what a change that crashed before its
    /// snapshot appended goes), or — for a lab from before the history file — written; opened
    /// for appending.
    fn cut_history(&self) -> Result<std::fs::File, RestoreError> {
        let history_path = self.dir.join(HISTORY_FILE);
        let failed = |e: std::io::Error| RestoreError::new(&history_path, e);
        match self.history_bytes {
            Some(bytes) => std::fs::OpenOptions::new()
                .write(true)
                .open(&history_path)
                .and_then(|f| f.set_len(bytes))
                .map_err(failed)?,
            // Upgraded in place: the history file, on disk before it is used.
            None => std::fs::write(&history_path, &self.history_text)
                .and_then(|()| std::fs::File::open(&history_path))
                .and_then(|f| f.sync_all())
                .and_then(|()| std::fs::File::open(&self.dir))
                .and_then(|d| d.sync_all())
                .map_err(failed)?,
        }
        std::fs::OpenOptions::new()
            .write(true)
            .open(&history_path)
            .map_err(failed)
    }

    /// The journal the restored lab appends to: the one after the last, begun empty, with the
    /// last one's torn tail cut off for good first (a later journal must never follow a torn
    /// one). A new snapshot naming it is written once the lab is restored
    /// ([`Session::note_restored_save`]).
    fn next_journal(&self) -> Result<Journal, RestoreError> {
        let next = match self.journal_end {
            Some(end) => {
                if let Some((torn, whole)) = end.torn {
                    let path = journal_path(&self.dir, torn);
                    std::fs::OpenOptions::new()
                        .write(true)
                        .open(&path)
                        .and_then(|f| {
                            f.set_len(whole)?;
                            f.sync_all()
                        })
                        .map_err(|e| RestoreError::new(&path, e))?;
                }
                end.number + 1
            }
            None => 1,
        };
        let path = journal_path(&self.dir, next);
        let journal = Journal::create(&self.dir, next, 0).map_err(|e| RestoreError::new(&path, e))?;
        std::fs::File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| RestoreError::new(&self.dir, e))?;
        Ok(journal)
    }

    /// The narrative's file, cut to what the snapshot names (older labs write it anew).
    fn cut_narrative(&self) -> Result<NarrativeLog, RestoreError> {
        let path = self.dir.join(NARRATIVE_FILE);
        let mut log = NarrativeLog::open(&self.dir, self.narrative_saved.is_none())
            .map_err(|e| RestoreError::new(&path, e))?;
        if let Some((bytes, events)) = self.narrative_saved {
            log.file.set_len(bytes).map_err(|e| RestoreError::new(&path, e))?;
            (log.bytes, log.events) = (bytes, events);
        }
        Ok(log)
    }

    /// Kept segments no history line names — an unacknowledged change's, or segments a restart
    /// cuts — would hold their disk space for good.
    fn remove_unnamed_kept_segments(&self) {
        let named: std::collections::BTreeSet<&str> = self
            .history
            .iter()
            .filter_map(|c| match c {
                Command::SendStored(l) => Some(l.file.as_str()),
                _ => None,
            })
            .collect();
        if let Ok(entries) = std::fs::read_dir(self.dir.join(PRODUCED_DIR)) {
            for e in entries.filter_map(Result::ok) {
                let name = e.file_name().to_string_lossy().into_owned();
                // A segment retention deleted is kept as its shape.
                let of = name
                    .strip_suffix(offsetlab_storage::shape::SHAPE_SUFFIX)
                    .unwrap_or(&name);
                if !named.contains(of) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }
}

impl Session {
    /// The restored lab as a new snapshot, naming the new journal — the journals before it are
    /// deleted once it is written — and what a refused write goes back to: the lab as it was
    /// restored, without the event the restart just told, which no save holds yet.
    fn note_restored_save(
        &mut self,
        history_bytes: u64,
        narrative_bytes: u64,
        events: usize,
    ) -> Result<(), LabError> {
        let Some(g) = &self.generation else {
            return Ok(());
        };
        let mut snapshot = self.lab.snapshot_without_narrative();
        snapshot.set_narrative(offsetlab_engine::narrative::Narrative::from_events(
            events,
            Vec::new(),
        ));
        let mut journal = offsetlab_storage::lock(&g.journal);
        let lab_file = serde_json::to_vec(&LabFile {
            history_bytes: Some(history_bytes),
            narrative_bytes: Some(narrative_bytes),
            history: None,
            snapshot,
            journal: Some(journal.number),
        })
        .map_err(storage)?;
        // Synced whatever the flush policy: the journals before it are deleted next.
        write_slots(&g.lab_file, self.version, &lab_file, true)?;
        journal.snapshot_bytes = lab_file.len() as u64;
        remove_journals_before(&g.dir, journal.number);
        let number = journal.number;
        drop(journal);
        // The file holds every line read: memory lets them go.
        self.history
            .let_go(self.history.len(), history_bytes, &g.dir.join(HISTORY_FILE));
        g.set_saved(Saved {
            history_bytes,
            commands: self.history.len(),
            narrative_bytes,
            events,
            journal: (number, 0),
        });
        Ok(())
    }
}

/// The generation `current` names, and its directory; `None` without a `current`.
fn current_generation(root: &Path) -> Result<Option<(u64, PathBuf)>, RestoreError> {
    let current_path = root.join("current");
    let current = match std::fs::read_to_string(&current_path) {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(RestoreError::new(&current_path, e)),
    };
    let number: u64 = current.trim().parse().map_err(|_| {
        RestoreError::new(
            &current_path,
            format!(
                "holds {:?}, not a generation number",
                offsetlab_scenario::error::truncated(current.trim(), 40)
            ),
        )
    })?;
    let dir = Generation::dir_for(root, number);
    if !dir.is_dir() {
        return Err(RestoreError::new(
            &dir,
            "the generation `current` names is missing",
        ));
    }
    Ok(Some((number, dir)))
}

/// The newest snapshot of a generation, and the path to name in errors about it. Labs saved
/// before the slots kept one `lab.json`, replaced by renames (and a start of such a lab may have
/// made empty slots before its first save).
pub(crate) fn read_snapshot(dir: &Path) -> Result<(LabFile, PathBuf), RestoreError> {
    let slots = dir.join(format!("{LAB_FILE}.0, {LAB_FILE}.1"));
    let newest = SlotFile::read(dir, LAB_FILE).map_err(|e| RestoreError::new(&slots, e))?;
    // Only slots never written (empty files) leave the old file in charge: torn slots beside a
    // `lab.json` are not a reason to go back to that older snapshot.
    let never_written = [0, 1]
        .iter()
        .all(|n| std::fs::metadata(dir.join(format!("{LAB_FILE}.{n}"))).map_or(true, |m| m.len() == 0));
    let legacy = newest.is_none() && never_written && dir.join(LAB_FILE).exists();
    let bytes = match newest {
        Some(bytes) => bytes,
        None if legacy => {
            std::fs::read(dir.join(LAB_FILE)).map_err(|e| RestoreError::new(&dir.join(LAB_FILE), e))?
        }
        None => return Err(RestoreError::new(&slots, "neither slot holds a whole snapshot")),
    };
    let path = if legacy { dir.join(LAB_FILE) } else { slots };
    let file: LabFile = serde_json::from_slice(&bytes)
        .map_err(|e| RestoreError::new(&path, format!("not a snapshot the lab can read ({e})")))?;
    if file.snapshot.version != offsetlab_engine::lab::SNAPSHOT_VERSION {
        return Err(RestoreError::new(
            &path,
            format!(
                "a snapshot of version {}, this lab reads version {}",
                file.snapshot.version,
                offsetlab_engine::lab::SNAPSHOT_VERSION
            ),
        ));
    }
    Ok((file, path))
}

/// The history's text up to what the snapshot covers: the history file's first `history_bytes`
/// (what a change that crashed before its snapshot appended is cut later, once everything was
/// read), or the history an older snapshot held itself.
fn read_history(
    dir: &Path,
    snapshot_path: &Path,
    history_bytes: Option<u64>,
    legacy_history: Option<String>,
) -> Result<String, RestoreError> {
    let history_path = dir.join(HISTORY_FILE);
    match (history_bytes, legacy_history) {
        (Some(bytes), _) => {
            let text = std::fs::read(&history_path).map_err(|e| RestoreError::new(&history_path, e))?;
            let len = text.len() as u64;
            if len < bytes {
                return Err(RestoreError::new(
                    &history_path,
                    format!("holds {len} bytes, the snapshot names {bytes}: the history was lost"),
                ));
            }
            let kept = usize::try_from(bytes).unwrap_or(usize::MAX).min(text.len());
            String::from_utf8(text[..kept].to_vec())
                .map_err(|e| RestoreError::new(&history_path, format!("not UTF-8 text ({e})")))
        }
        (None, Some(text)) => Ok(text),
        (None, None) => Err(RestoreError::new(snapshot_path, "the snapshot names no history")),
    }
}

/// Generations other than the current one — an undo or import interrupted before its switch
/// (never acknowledged), or the one a switch replaced and did not get to delete — removed; a
/// note for each.
fn remove_abandoned_generations(root: &Path, current: u64) -> Vec<String> {
    let mut notes = Vec::new();
    let Ok(entries) = std::fs::read_dir(root) else {
        return notes;
    };
    let current = Generation::dir_for(root, current);
    for e in entries.filter_map(Result::ok) {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("gen-")
            && e.path() != current
            && e.path().is_dir()
            && std::fs::remove_dir_all(e.path()).is_ok()
        {
            notes.push(format!("{name}: an abandoned generation, removed"));
        }
    }
    notes
}

/// The banner's line about the restart.
fn summary(clean: bool, notes: &[String]) -> String {
    format!(
        "{} stop; logs {}{}",
        if clean { "clean" } else { "unclean" },
        if clean {
            "opened from their snapshots (no record read)"
        } else {
            "recovered (batches after the recovery point validated)"
        },
        if notes.is_empty() {
            String::new()
        } else {
            format!(": {}", notes.join("; "))
        }
    )
}

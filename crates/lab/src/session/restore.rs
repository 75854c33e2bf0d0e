//! Restoring the durable lab a start finds: everything read and checked first, then the files changed as a restart changes them.

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
        // Labs saved before the slots kept one `lab.json`, replaced by renames (and a start of
        // such a lab may have made empty slots before its first save).
        let slots = dir.join(format!("{LAB_FILE}.0, {LAB_FILE}.1"));
        let newest = SlotFile::read(&dir, LAB_FILE).map_err(|e| RestoreError::new(&slots, e))?;
        // Only slots never written (empty files) leave the old file in charge: torn slots beside
        // a `lab.json` are not a reason to go back to that older snapshot.
        let never_written = [0, 1]
            .iter()
            .all(|n| std::fs::metadata(dir.join(format!("{LAB_FILE}.{n}"))).map_or(true, |m| m.len() == 0));
        let legacy = newest.is_none() && never_written && dir.join(LAB_FILE).exists();
        let file = match newest {
            Some(bytes) => bytes,
            None if legacy => {
                std::fs::read(dir.join(LAB_FILE)).map_err(|e| RestoreError::new(&dir.join(LAB_FILE), e))?
            }
            None => return Err(RestoreError::new(&slots, "neither slot holds a whole snapshot")),
        };
        let snapshot_path = if legacy { dir.join(LAB_FILE) } else { slots };
        let LabFile {
            history_bytes,
            narrative_bytes,
            history: legacy_history,
            mut snapshot,
        } = serde_json::from_slice(&file).map_err(|e| {
            RestoreError::new(&snapshot_path, format!("not a snapshot the lab can read ({e})"))
        })?;
        if snapshot.version != offsetlab_engine::lab::SNAPSHOT_VERSION {
            return Err(RestoreError::new(
                &snapshot_path,
                format!(
                    "a snapshot of version {}, this lab reads version {}",
                    snapshot.version,
                    offsetlab_engine::lab::SNAPSHOT_VERSION
                ),
            ));
        }
        let history_path = dir.join(HISTORY_FILE);
        let history_text = match (history_bytes, &legacy_history) {
            (Some(bytes), _) => {
                let text = std::fs::read(&history_path).map_err(|e| RestoreError::new(&history_path, e))?;
                let len = text.len() as u64;
                if len < bytes {
                    return Err(RestoreError::new(
                        &history_path,
                        format!("holds {len} bytes, the snapshot names {bytes}: the history was lost"),
                    ));
                }
                // What a change that crashed before its snapshot appended is cut below, once
                // the rest has been read.
                let kept = usize::try_from(bytes).unwrap_or(usize::MAX).min(text.len());
                String::from_utf8(text[..kept].to_vec())
                    .map_err(|e| RestoreError::new(&history_path, format!("not UTF-8 text ({e})")))?
            }
            (None, Some(text)) => text.clone(),
            (None, None) => return Err(RestoreError::new(&snapshot_path, "the snapshot names no history")),
        };
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
        // (Older labs kept it in the snapshot.)
        if let Some(bytes) = narrative_bytes {
            let events = snapshot.narrative_len();
            snapshot.set_narrative(NarrativeLog::read_tail(&dir.join(NARRATIVE_FILE), bytes, events)?);
        }
        let narrative_saved = narrative_bytes.map(|b| (b, snapshot.narrative_len()));
        // From here on the lab is restored: files are changed as a restart changes them.
        Self::restore_checked(
            root,
            number,
            dir,
            flush,
            snapshot,
            history,
            history_text,
            history_bytes,
            narrative_saved,
        )
        .map(Some)
        .map_err(RestoreError::after_changes)
    }

    /// The second half of [`Session::restore`], once everything it reads was checked.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn restore_checked(
        root: &Path,
        number: u64,
        dir: PathBuf,
        flush: FlushPolicy,
        snapshot: offsetlab_engine::lab::LabSnapshot,
        history: Vec<Command>,
        history_text: String,
        history_bytes: Option<u64>,
        narrative_saved: Option<(u64, usize)>,
    ) -> Result<(Self, String), RestoreError> {
        let history_path = dir.join(HISTORY_FILE);
        let at = |e: &dyn std::fmt::Display| RestoreError::new(&dir, e.to_string());
        match history_bytes {
            Some(bytes) => {
                // Cut what a change that crashed before its snapshot appended.
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&history_path)
                    .and_then(|f| f.set_len(bytes))
                    .map_err(|e| RestoreError::new(&history_path, e))?;
            }
            None => {
                // Upgraded in place: the history file and the slots, on disk before they are used.
                std::fs::write(&history_path, &history_text)
                    .and_then(|()| std::fs::File::open(&history_path))
                    .and_then(|f| f.sync_all())
                    .and_then(|()| std::fs::File::open(&dir))
                    .and_then(|d| d.sync_all())
                    .map_err(|e| RestoreError::new(&history_path, e))?;
            }
        }
        let (lab_file, _) = SlotFile::open(&dir, LAB_FILE).map_err(|e| at(&e))?;
        // The narrative's file, cut to what the snapshot names (older labs write it anew).
        let narrative_path = dir.join(NARRATIVE_FILE);
        let mut narrative_log = NarrativeLog::open(&dir, narrative_saved.is_none())
            .map_err(|e| RestoreError::new(&narrative_path, e))?;
        if let Some((bytes, events)) = narrative_saved {
            narrative_log
                .file
                .set_len(bytes)
                .map_err(|e| RestoreError::new(&narrative_path, e))?;
            (narrative_log.bytes, narrative_log.events) = (bytes, events);
        }
        let (narrative_bytes, narrative_events) = (narrative_log.bytes, narrative_log.events);
        // Kept segments no history line names — an unacknowledged change's, or segments a
        // restart cuts — would hold their disk space for good.
        let named: std::collections::BTreeSet<&str> = history
            .iter()
            .filter_map(|c| match c {
                Command::SendStored(l) => Some(l.file.as_str()),
                _ => None,
            })
            .collect();
        if let Ok(entries) = std::fs::read_dir(dir.join(PRODUCED_DIR)) {
            for e in entries.filter_map(Result::ok) {
                if !named.contains(e.file_name().to_string_lossy().as_ref()) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        let history_file = std::fs::OpenOptions::new()
            .write(true)
            .open(&history_path)
            .map_err(|e| RestoreError::new(&history_path, e))?;
        let logs = dir.join("logs");
        let store = FileStore::open(&logs, flush)
            .map_err(|e| RestoreError::new(&logs, e))?
            .keeping_segments_in(dir.join(PRODUCED_DIR));
        let clean = store.was_clean();
        let reports = store.reports();
        let durability = store.durability();
        let health = store.health();
        let sinks = SqliteSinks::new(dir.join("sinks")).map_err(|e| at(&e))?;
        let lab =
            offsetlab_engine::Lab::restore(snapshot, Box::new(store), Box::new(sinks)).map_err(|e| at(&e))?;
        if let Some(fault) = health.take() {
            return Err(RestoreError::new(&logs, fault));
        }
        let mut notes: Vec<String> = remove_unknown_partitions(&lab, &logs)
            .into_iter()
            .map(|name| format!("{name}: never acknowledged, removed"))
            .collect();
        // Generations other than the current one: an undo or import interrupted before its
        // switch (never acknowledged), or the one a switch replaced and did not get to delete.
        if let Ok(entries) = std::fs::read_dir(root) {
            let current = Generation::dir_for(root, number);
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
        }
        if let Ok(r) = reports.lock() {
            for (log, report) in r.iter() {
                if report.truncated_bytes > 0 || report.dropped_segments > 0 {
                    notes.push(format!(
                        "{log}: cut {} byte(s) of torn or corrupt tail, dropped {} segment(s)",
                        report.truncated_bytes, report.dropped_segments
                    ));
                }
            }
        }
        let summary = format!(
            "{} stop; logs {}{}",
            if clean { "clean" } else { "unclean" },
            if clean {
                "opened from their snapshots (no record read)".to_string()
            } else {
                "recovered (batches after the recovery point validated)".to_string()
            },
            if notes.is_empty() {
                String::new()
            } else {
                format!(": {}", notes.join("; "))
            }
        );
        let commands = history.len();
        let session = (
            Self {
                lab,
                broken: None,
                backend: SinkBackend::Durable {
                    root: root.to_path_buf(),
                    flush,
                },
                version: 1,
                generation: Some(Generation {
                    number,
                    dir: dir.clone(),
                    durability,
                    history: std::sync::Mutex::new(HistoryLog {
                        file: Arc::new(history_file),
                        text: String::new(),
                        commands,
                        bytes: history_text.len() as u64,
                    }),
                    lab_file: Arc::new(std::sync::Mutex::new((lab_file, 1))),
                    deleted_topics: false.into(),
                    health,
                    saved: std::sync::Mutex::new(None),
                    narrative: std::sync::Mutex::new(narrative_log),
                }),
                history,
                produced: ProducedStore::Dir(dir.join(PRODUCED_DIR)),
            },
            summary,
        );
        // What a refused write goes back to: the lab as it was restored.
        if let Some(g) = &session.0.generation {
            let mut snapshot = session.0.lab.snapshot_without_narrative();
            // As saved: without the event the restart just told.
            snapshot.set_narrative(offsetlab_engine::narrative::Narrative::from_events(
                narrative_events,
                Vec::new(),
            ));
            let lab_file = serde_json::to_vec(&LabFile {
                history_bytes: Some(history_text.len() as u64),
                narrative_bytes: Some(narrative_bytes),
                history: None,
                snapshot,
            })
            .map_err(|e| at(&e))?;
            g.set_saved(Saved {
                lab_file,
                history_bytes: history_text.len() as u64,
                commands,
                narrative_bytes,
                events: narrative_events,
            });
        }
        Ok(session)
    }
}

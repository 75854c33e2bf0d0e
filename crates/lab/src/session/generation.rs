//! A durable lab's generation directory: built fresh, written whole, made current by an atomic rename, and what replaces the session's lab (an import, a reset, an undo).

use super::*;
use offsetlab_storage::lock;

/// Where the lab's logs and the groups' sinks live.
#[derive(Debug, Clone)]
pub enum SinkBackend {
    /// Logs in memory, one SQLite file per group in this directory.
    Sqlite(PathBuf),
    /// Everything in memory (tests).
    Memory,
    /// The durable lab (what `serve` uses): generations under `root`, logs as segment files
    /// synced by `flush`, sinks as SQLite files.
    Durable { root: PathBuf, flush: FlushPolicy },
}

/// One durable lab's directory.
pub(crate) struct Generation {
    pub(crate) number: u64,
    pub(crate) dir: PathBuf,
    pub(crate) durability: Arc<Durability>,
    pub(crate) history: std::sync::Mutex<HistoryLog>,
    /// `lab.json`, as two slots rewritten in turn (no rename per save), and the lab version the
    /// newest slot holds: a deferred save of an older version that finishes late is skipped.
    pub(crate) lab_file: Arc<std::sync::Mutex<(SlotFile, u64)>>,
    /// A topic was deleted since the last save: its directories, renamed aside, go once the
    /// deletion is saved.
    pub(crate) deleted_topics: std::sync::atomic::AtomicBool,
    /// Where the store's logs note a write the disk refused ([`Health`]).
    pub(crate) health: Arc<Health>,
    /// What the last save wrote: what the lab goes back to when the disk refuses a write.
    pub(crate) saved: std::sync::Mutex<Option<Arc<Saved>>>,
    /// The narrative, as a file the session appends to.
    pub(crate) narrative: std::sync::Mutex<NarrativeLog>,
    /// What each save appends ([`journal`]).
    pub(crate) journal: Arc<std::sync::Mutex<Journal>>,
}

impl Generation {
    pub(crate) fn set_saved(&self, saved: Saved) {
        *lock(&self.saved) = Some(Arc::new(saved));
    }

    pub(crate) fn dir_for(root: &Path, number: u64) -> PathBuf {
        root.join(format!("gen-{number:06}"))
    }

    pub(crate) fn new(
        number: u64,
        dir: PathBuf,
        durability: Arc<Durability>,
        health: Arc<Health>,
    ) -> Result<Self, LabError> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(dir.join(HISTORY_FILE))
            .map_err(storage)?;
        let (lab_file, _) = SlotFile::open(&dir, LAB_FILE).map_err(storage)?;
        let narrative = NarrativeLog::open(&dir, true).map_err(io_error)?;
        let journal = Journal::create(&dir, 1, 0).map_err(io_error)?;
        Ok(Self {
            journal: Arc::new(std::sync::Mutex::new(journal)),
            number,
            dir,
            durability,
            lab_file: Arc::new(std::sync::Mutex::new((lab_file, 0))),
            deleted_topics: false.into(),
            health,
            saved: std::sync::Mutex::new(None),
            narrative: std::sync::Mutex::new(narrative),
            history: std::sync::Mutex::new(HistoryLog {
                file: Arc::new(file),
                text: String::new(),
                commands: 0,
                bytes: 0,
            }),
        })
    }
}

/// A save: the history and narrative it covers, and where the journal ended after it.
#[derive(Debug, Clone)]
pub(crate) struct Saved {
    pub(crate) history_bytes: u64,
    pub(crate) commands: usize,
    pub(crate) narrative_bytes: u64,
    pub(crate) events: usize,
    /// The journal's number and length once this save's entry is in it.
    pub(crate) journal: (u64, u64),
}

/// Appends `history`'s and `lab`'s narrative's new lines to `g`'s files: the save they make,
/// its journal position left to the caller.
fn catch_up(g: &Generation, lab: &Lab, history: &History) -> Result<Saved, LabError> {
    let history_bytes = lock(&g.history).catch_up(history)?;
    let narrative_bytes = lock(&g.narrative).catch_up(lab.narrative())?;
    Ok(Saved {
        history_bytes,
        commands: history.len(),
        narrative_bytes,
        events: lab.narrative().len(),
        journal: (0, 0),
    })
}

/// [`catch_up`], and the journal's entry for `lab`'s changes as a frame, and the history file.
pub(crate) fn entry_of(
    g: &Generation,
    lab: &Lab,
    history: &History,
) -> Result<(Saved, Vec<u8>, Arc<std::fs::File>), LabError> {
    let saved = catch_up(g, lab, history)?;
    let frame = frame(&Entry {
        history_bytes: saved.history_bytes,
        narrative_bytes: saved.narrative_bytes,
        changes: lab.changes(),
    })?;
    Ok((saved, frame, Arc::clone(&lock(&g.history).file)))
}

/// [`catch_up`], and the whole snapshot, naming `g`'s journal as the one that follows it.
pub(crate) fn snapshot_of(
    g: &Generation,
    lab: &Lab,
    history: &History,
) -> Result<(Saved, Vec<u8>), LabError> {
    let mut saved = catch_up(g, lab, history)?;
    let journal = lock(&g.journal);
    let bytes = serde_json::to_vec(&LabFile {
        history_bytes: Some(saved.history_bytes),
        narrative_bytes: Some(saved.narrative_bytes),
        history: None,
        snapshot: lab.snapshot_without_narrative(),
        journal: Some(journal.number),
    })
    .map_err(storage)?;
    saved.journal = (journal.number, journal.bytes);
    Ok((saved, bytes))
}

/// Everything of a new generation on disk — its logs, its file, its directory — and then
/// `current` naming it.
pub(crate) fn write_generation(
    new: &Generation,
    lab: &Lab,
    history: &History,
    version: u64,
    backend: &SinkBackend,
) -> Result<Saved, LabError> {
    new.durability.sync_all().map_err(io_error)?;
    let (saved, snapshot) = snapshot_of(new, lab, history)?;
    lock(&new.history).file.sync_data().map_err(io_error)?;
    // The kept segments' links, which the history names.
    let kept = new.dir.join(PRODUCED_DIR);
    if kept.exists() {
        std::fs::File::open(&kept)
            .and_then(|d| d.sync_all())
            .map_err(io_error)?;
    }
    write_slots(&new.lab_file, version, &snapshot, true)?;
    std::fs::File::open(&new.dir)
        .and_then(|d| d.sync_all())
        .map_err(io_error)?;
    if let Some(fault) = new.health.take() {
        return Err(LabError::Storage(fault));
    }
    if let SinkBackend::Durable { root, .. } = backend {
        write_atomically(&root.join("current"), new.number.to_string().as_bytes(), true).map_err(io_error)?;
    }
    Ok(saved)
}

/// Removes a generation directory, and the pool's handles to its files first: an unlinked file
/// that stays open keeps its disk space.
pub(crate) fn forget_generation(dir: &Path) {
    offsetlab_storage::FilePool::global().forget_under(dir);
    let _ = std::fs::remove_dir_all(dir);
}

impl Session {
    /// Replaces the session with the lab `source` builds. If any line fails, the current session
    /// stays as it was.
    /// Loading pauses a live clock: a lesson or a scenario runs on its own instants, and would
    /// be jumped to wall time — months of timers — by the next change. A source that does not
    /// load changes nothing, the clock's mode included.
    pub fn load(&mut self, source: &str) -> Result<(), ActionError> {
        self.load_from(source, None)?;
        self.set_clock_mode(ClockMode::Paused).map_err(|e| {
            // Paused here whatever the disk says: the loaded lab never jumps to wall time.
            self.pause_in_memory();
            internal(&format!(
                "the lab was loaded, paused, but its clock's mode could not be saved: {e}"
            ))
        })
    }

    /// [`Session::load`], resolving `send … stored=` lines from `stored`.
    pub(crate) fn load_from(
        &mut self,
        source: &str,
        stored: Option<&ProducedStore>,
    ) -> Result<(), ActionError> {
        self.refuse_if_broken()?;
        let script = Script::parse(source).map_err(|e| ActionError {
            status: 400,
            error: e.reason(),
            line: e.line(),
            text: e.text().unwrap_or_default().to_string(),
            cause: None,
        })?;
        self.admit_script(&script)?;
        let (mut lab, generation, mut produced) = self.fresh_lab().map_err(|e| internal(&e))?;
        let mut history = Vec::new();
        let nothing = crate::caps::Usage::default();
        let torn = torn_partitions(script.lines.iter().map(|l| &l.command));
        for (i, line) in script.lines.iter().enumerate() {
            let replayed = replay(
                &mut lab,
                &mut produced,
                &mut history,
                &line.command,
                (stored, &torn),
            )
            .map_err(|e| {
                let error = match &e {
                    ApplyError::Lab(e) => e.to_string(),
                    ApplyError::Expectation(f) => format!("expectation failed: {f}"),
                };
                let cause = match e {
                    ApplyError::Lab(e) => Some(Box::new(e)),
                    ApplyError::Expectation(_) => None,
                };
                (422, error, cause)
            });
            // What the lab holds as it is built, against the caps (its bytes once it is built).
            let replayed = replayed.and_then(|()| {
                match self.caps {
                    Some(caps) if i + 1 == script.lines.len() => {
                        let built = crate::caps::Usage::of(&lab, history.len());
                        caps.still_within(&nothing, built, line.number)
                    }
                    Some(caps) => {
                        let built = crate::caps::Usage::counted(&lab, history.len());
                        caps.still_within(&nothing, built, line.number)
                    }
                    None => Ok(()),
                }
                .map_err(|e| (CAP_STATUS, e.to_string(), None))
            });
            if let Err((status, error, cause)) = replayed {
                drop(lab);
                if let Some(g) = generation {
                    forget_generation(&g.dir);
                } else {
                    // Put the current session's sinks back (opening the new lab's emptied them).
                    self.rebuild(self.history.len()).map_err(|e| internal(&e))?;
                }
                return Err(ActionError {
                    status,
                    error,
                    line: line.number,
                    text: line.text.clone(),
                    cause,
                });
            }
        }
        self.install(lab, history, produced, generation, self.version + 1)
            .map_err(|e| {
                let status = match &e {
                    LabError::Storage(f) => storage_status(f.kind),
                    _ => 500,
                };
                ActionError {
                    status,
                    ..internal(&format!(
                        "the new lab could not be written, and the lab is as it was: {e}"
                    ))
                }
            })
    }

    /// Makes a freshly built lab the session's: its generation written (saved, then named in
    /// `current`) before the session is touched, the old generation deleted after. If the new
    /// generation cannot be written (a full disk), it is removed and the session stays exactly as
    /// it was — lab, history and kept batches. `version` is the session's version after it.
    pub(crate) fn install(
        &mut self,
        lab: Lab,
        history: Vec<Command>,
        produced: ProducedStore,
        generation: Option<Generation>,
        version: u64,
    ) -> Result<(), LabError> {
        let mut history = History::from(history);
        let Some(g) = generation else {
            (self.lab, self.history, self.produced, self.version) = (lab, history, produced, version);
            self.installs += 1;
            return Ok(());
        };
        match write_generation(&g, &lab, &history, version, &self.backend) {
            Ok(saved) => {
                // The new generation's file holds every line: memory lets them go.
                history.let_go(saved.commands, saved.history_bytes, &g.dir.join(HISTORY_FILE));
                // The snapshot holds all of it: the journal starts from here.
                let mut lab = lab;
                lab.forget_changes();
                g.set_saved(saved);
                (self.lab, self.history, self.produced, self.version) = (lab, history, produced, version);
                self.installs += 1;
                if let Some(old) = self.generation.replace(g) {
                    lock(&old.journal).finish_snapshot();
                    forget_generation(&old.dir);
                }
                Ok(())
            }
            Err(e) => {
                drop(lab);
                forget_generation(&g.dir);
                Err(e)
            }
        }
    }

    /// An empty lab on this session's backend, with an empty store for produced batches; a
    /// durable one in a new generation directory.
    pub(crate) fn fresh_lab(&self) -> Result<(Lab, Option<Generation>, ProducedStore), LabError> {
        let memory = || ProducedStore::Memory(Vec::new());
        match &self.backend {
            SinkBackend::Memory => Ok((
                Lab::new(Box::new(SharedStore::new(MemoryStore)), Box::new(MemorySinks)),
                None,
                memory(),
            )),
            SinkBackend::Sqlite(dir) => Ok((
                Lab::new(
                    Box::new(SharedStore::new(MemoryStore)),
                    Box::new(SqliteSinks::new(dir.clone())?),
                ),
                None,
                memory(),
            )),
            SinkBackend::Durable { root, flush } => {
                let number = self.generation.as_ref().map_or(0, |g| g.number) + 1;
                let mut number = number.max(1);
                while Generation::dir_for(root, number).exists() {
                    number += 1;
                }
                let dir = Generation::dir_for(root, number);
                std::fs::create_dir_all(&dir).map_err(storage)?;
                let store = FileStore::open(&dir.join("logs"), *flush)
                    .map_err(storage)?
                    .keeping_segments_in(dir.join(PRODUCED_DIR));
                let durability = store.durability();
                let health = store.health();
                let sinks: Box<dyn SinkFactory> = Box::new(SqliteSinks::new(dir.join("sinks"))?);
                let lab = Lab::try_new(Box::new(SharedStore::new(store)), sinks)?;
                let produced = ProducedStore::Dir(dir.join(PRODUCED_DIR));
                Ok((
                    lab,
                    Some(Generation::new(number, dir, durability, health)?),
                    produced,
                ))
            }
        }
    }
}

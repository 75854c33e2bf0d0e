//! A lab session: the [`Lab`] behind the page, the history of lines that built it, and the
//! all-or-nothing application of a batch of lines.
//!
//! The engine guarantees that a rejected operation changes nothing, so a single line needs no
//! undo. A batch whose third line fails must undo the first two: the session rebuilds the lab by
//! replaying its history into a fresh one. Replay is exact because the engine is deterministic —
//! the same property that makes an exported session reproduce its figures.
//!
//! With the durable backend (what `serve` uses) a lab lives in a *generation* directory of the
//! data directory: `logs/` (segment files, [`FileStore`]), `sinks/` (SQLite), `history.scenario`
//! (the lines that built the lab, append-only) and `lab.json` (the lab's snapshot and how many
//! bytes of the history it covers, rewritten after every change). A fresh lab — an import,
//! a reset, the undo of a failed batch — is built in a new generation, synced, and switched to by
//! an atomic rename of `current`, so a kill at any moment leaves one complete lab. At start the current
//! generation is restored: logs recovered from disk, sinks reopened with their rows, the lab's
//! state from its snapshot, committed offsets replayed from `__consumer_offsets`.

use offsetlab_engine::lab::{LabView, ResetPlan};
use offsetlab_engine::lab::{SentRecord, MAX_SEND_RECORDS};
use offsetlab_engine::log::MemoryStore;
use offsetlab_engine::narrative::Event;
use offsetlab_engine::offsets::OffsetRecord;
use offsetlab_engine::sink::{MemorySinks, SinkFactory, SinkRow};
use offsetlab_engine::{Lab, LabError};
use offsetlab_records::ProducedBatches;
use offsetlab_scenario::command::{ApplyError, Command, Outcome, Send, SendStored};
use offsetlab_scenario::token::Quoted;
use offsetlab_scenario::Script;
use offsetlab_sqlite::SqliteSinks;
use offsetlab_storage::{
    write_atomically, Durability, Fault, FaultKind, FileStore, FlushPolicy, Health, SlotFile,
};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Events and rows the state carries; older ones are paged through their own endpoints.
const NARRATIVE_TAIL: usize = 300;
const SINK_TAIL: usize = 100;
const OFFSETS_TAIL: usize = 100;

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
struct Generation {
    number: u64,
    dir: PathBuf,
    durability: Arc<Durability>,
    history: std::sync::Mutex<HistoryLog>,
    /// `lab.json`, as two slots rewritten in turn (no rename per save), and the lab version the
    /// newest slot holds: a deferred save of an older version that finishes late is skipped.
    lab_file: Arc<std::sync::Mutex<(SlotFile, u64)>>,
    /// A topic was deleted since the last save: its directories, renamed aside, go once the
    /// deletion is saved.
    deleted_topics: std::sync::atomic::AtomicBool,
    /// Where the store's logs note a write the disk refused ([`Health`]).
    health: Arc<Health>,
    /// What the last save wrote: what the lab goes back to when the disk refuses a write.
    saved: std::sync::Mutex<Option<Arc<Saved>>>,
    /// The narrative, as a file the session appends to.
    narrative: std::sync::Mutex<NarrativeLog>,
}

/// A save: `lab.json`'s bytes and the history and narrative it covers.
struct Saved {
    lab_file: Vec<u8>,
    history_bytes: u64,
    commands: usize,
    narrative_bytes: u64,
    events: usize,
}

/// The narrative as a file, one event per line in JSON, appended to by every save: the snapshot
/// holds only how long it is, so a save costs the same however much the lab has told. The lab
/// keeps the last [`NARRATIVE_IN_MEMORY`] events in memory (the page shows the last few hundred).
struct NarrativeLog {
    file: Arc<std::fs::File>,
    /// Events and bytes the file holds.
    events: usize,
    bytes: u64,
}

/// The narrative's file in a generation.
const NARRATIVE_FILE: &str = "narrative.jsonl";
/// Events kept in memory once they are saved.
const NARRATIVE_IN_MEMORY: usize = 2_000;
/// The most of the narrative's file a start reads back (its last events).
const NARRATIVE_TAIL_BYTES: u64 = 8 << 20;

impl NarrativeLog {
    fn open(dir: &Path, truncate: bool) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(truncate)
            .read(true)
            .write(true)
            .open(dir.join(NARRATIVE_FILE))?;
        Ok(Self {
            file: Arc::new(file),
            events: 0,
            bytes: 0,
        })
    }

    /// Appends the events of `narrative` the file lacks; the file's length afterwards.
    fn catch_up(&mut self, narrative: &offsetlab_engine::narrative::Narrative) -> Result<u64, LabError> {
        if self.events > narrative.len() {
            // The narrative was cut (it never is without a new generation): write it whole.
            self.file.set_len(0).map_err(io_error)?;
            self.events = 0;
            self.bytes = 0;
        }
        if narrative.first() > self.events {
            return Err(storage("the narrative forgot events it had not saved"));
        }
        let new = narrative.since(self.events);
        if new.is_empty() {
            return Ok(self.bytes);
        }
        let mut text = Vec::new();
        for e in new {
            serde_json::to_writer(&mut text, e).map_err(storage)?;
            text.push(b'\n');
        }
        std::os::unix::fs::FileExt::write_all_at(&*self.file, &text, self.bytes).map_err(io_error)?;
        self.bytes += text.len() as u64;
        self.events = narrative.len();
        Ok(self.bytes)
    }

    /// The last events of a narrative file `bytes` long holding `events` events: the narrative
    /// a start goes on from (its first events stay in the file).
    fn read_tail(
        path: &Path,
        bytes: u64,
        events: usize,
    ) -> Result<offsetlab_engine::narrative::Narrative, RestoreError> {
        use std::os::unix::fs::FileExt;
        let file = std::fs::File::open(path).map_err(|e| RestoreError::new(path, e))?;
        let len = file.metadata().map_err(|e| RestoreError::new(path, e))?.len();
        if len < bytes {
            return Err(RestoreError::new(
                path,
                format!("holds {len} bytes, the snapshot names {bytes}: the narrative was lost"),
            ));
        }
        let from = bytes.saturating_sub(NARRATIVE_TAIL_BYTES);
        let mut buf = vec![0u8; usize::try_from(bytes - from).unwrap_or(0)];
        file.read_exact_at(&mut buf, from)
            .map_err(|e| RestoreError::new(path, e))?;
        // From the first whole line on (unless the file starts in the buffer).
        let start = if from == 0 {
            0
        } else {
            buf.iter().position(|&b| b == b'\n').map_or(buf.len(), |i| i + 1)
        };
        let mut tail = Vec::new();
        let mut at = from + start as u64;
        for line in buf[start..].split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let event: offsetlab_engine::narrative::Event = serde_json::from_slice(line)
                .map_err(|e| RestoreError::new(path, format!("at byte {at}: not an event ({e})")))?;
            at += line.len() as u64 + 1;
            tail.push(event);
        }
        let first = events.checked_sub(tail.len()).ok_or_else(|| {
            RestoreError::new(
                path,
                format!("holds more events than the {events} the snapshot names"),
            )
        })?;
        Ok(offsetlab_engine::narrative::Narrative::from_events(first, tail))
    }
}

impl Generation {
    fn set_saved(&self, saved: Saved) {
        *self
            .saved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::new(saved));
    }

    fn dir_for(root: &Path, number: u64) -> PathBuf {
        root.join(format!("gen-{number:06}"))
    }

    fn new(
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
        Ok(Self {
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

/// The generation's history as a file the session appends to: a save writes the lines added
/// since the last one, not the whole history — with a million records produced through the
/// Kafka listener, rewriting it after every request would make each save cost the whole past.
const HISTORY_FILE: &str = "history.scenario";
/// The lab's snapshot: slots `lab.json.0` and `lab.json.1` ([`SlotFile`]).
const LAB_FILE: &str = "lab.json";
const HISTORY_HEADER: &str = "# exported from the offsetlab web lab\n";

struct HistoryLog {
    file: Arc<std::fs::File>,
    /// The text of the lines being appended, kept between saves: an import's or a burst's lines
    /// can be large, and a fresh buffer each time is fresh pages.
    text: String,
    /// How many of the session's history commands the file holds, and its length in bytes.
    commands: usize,
    bytes: u64,
}

impl HistoryLog {
    /// Appends the commands of `history` the file lacks; the file's length afterwards.
    fn catch_up(&mut self, history: &[Command]) -> Result<u64, LabError> {
        if self.commands > history.len() {
            // The history was cut (it never is without a new generation): rewrite it whole.
            self.file.set_len(0).map_err(io_error)?;
            self.commands = 0;
            self.bytes = 0;
        }
        let text = &mut self.text;
        text.clear();
        if self.bytes == 0 {
            text.push_str(HISTORY_HEADER);
        }
        for c in &history[self.commands..] {
            std::fmt::Write::write_fmt(text, format_args!("{c}\n")).map_err(storage)?;
        }
        if !text.is_empty() {
            std::os::unix::fs::FileExt::write_all_at(&*self.file, text.as_bytes(), self.bytes)
                .map_err(io_error)?;
            self.bytes += text.len() as u64;
            self.commands = history.len();
        }
        // A burst (an import, a replay) does not keep its buffer.
        if text.capacity() > 16 << 20 {
            *text = String::new();
        }
        Ok(self.bytes)
    }
}

/// Where the record batches real clients produced stay readable for the history: a
/// `send … stored=FILE:AT+LEN` line names `LEN` bytes of `FILE` from `AT`. The listener appends a
/// client's batches to the log as they came; a durable lab's log keeps the segments they went to
/// as hard links in the generation's `produced/` directory (no second copy, and the bytes outlive
/// retention, compaction and the topic's deletion). An in-memory lab keeps a copy in the session
/// (`memory`). The history never holds those records as text and the produce path never decodes
/// one; undo and export read them back from here.
enum ProducedStore {
    /// A durable generation's kept segments.
    Dir(PathBuf),
    /// An in-memory lab's copies, the file `memory`.
    Memory(Vec<u8>),
}

/// The directory of kept segments in a generation.
const PRODUCED_DIR: &str = "produced";
const MEMORY_FILE: &str = "memory";

impl ProducedStore {
    /// Keeps `bytes` (an in-memory lab's batches, which its log keeps no file of).
    fn keep(&mut self, bytes: &[u8]) -> Result<(String, u64), LabError> {
        match self {
            Self::Memory(v) => {
                let at = v.len() as u64;
                v.extend_from_slice(bytes);
                Ok((MEMORY_FILE.to_string(), at))
            }
            Self::Dir(_) => Err(storage("the durable log kept no copy of a client's batches")),
        }
    }

    /// The batches a `send … stored=` line names, validated again: a file is outside input.
    fn batches(&self, line: &SendStored) -> Result<ProducedBatches, LabError> {
        let too_large = || storage(format!("{line}: not a byte range a produce request could fill"));
        let len = usize::try_from(line.len).map_err(|_| too_large())?;
        if len > 1 << 30 {
            return Err(too_large());
        }
        let missing = || storage(format!("{line}: the lab keeps no such batches"));
        let bytes = match self {
            Self::Dir(dir) => {
                let io = |e: std::io::Error| storage(format!("{line}: {e}"));
                let file = std::fs::File::open(dir.join(&line.file)).map_err(io)?;
                // Checked against the file before anything is allocated for it.
                let end = line.at.checked_add(line.len).ok_or_else(missing)?;
                if file.metadata().map_err(io)?.len() < end {
                    return Err(missing());
                }
                let mut bytes = vec![0; len];
                std::os::unix::fs::FileExt::read_exact_at(&file, &mut bytes, line.at).map_err(io)?;
                bytes
            }
            Self::Memory(v) => {
                let range = usize::try_from(line.at)
                    .ok()
                    .and_then(|at| Some(at..at.checked_add(len)?))
                    .filter(|r| line.file == MEMORY_FILE && r.end <= v.len())
                    .ok_or_else(missing)?;
                v[range].to_vec()
            }
        };
        let batches = ProducedBatches::validate(bytes).map_err(|e| storage(format!("{line}: {e}")))?;
        if batches.records() != line.count {
            return Err(storage(format!(
                "{line}: the stored batches hold {} records",
                batches.records()
            )));
        }
        Ok(batches)
    }

    /// The line's records, as `send … records=[…]` lines spell them out.
    /// One line for the stored line, with its batches' sizes, so a replay lays the records out
    /// in segments as the client's batches were (more than one only past `MAX_SEND_RECORDS`,
    /// cut between batches).
    fn spelled_out(&self, line: &SendStored) -> Result<Vec<Command>, LabError> {
        let text = |b: Option<&[u8]>| b.map(|b| String::from_utf8_lossy(b).into_owned());
        let stored = self.batches(line)?;
        let mut lines = Vec::new();
        let (mut records, mut sizes) = (Vec::new(), Vec::new());
        for b in stored.batches() {
            // The producer's timestamps, when they differ within the batch: a replay encodes
            // the same deltas, so the batch takes the same bytes (and the segments roll where
            // they rolled). Readers see the batch's log append time either way.
            let created: Vec<i64> = b.create_timestamps().collect();
            let base = b.header.base_timestamp;
            let moved = created.iter().any(|&t| t != base);
            // A base that is not the first record's own timestamp (some clients take the
            // earliest) is written on that record.
            let based = created.first().is_some_and(|&t| t != base).then_some(base);
            let batch: Vec<SentRecord> = b
                .records()
                .zip(created)
                .enumerate()
                .map(|(i, (r, created))| SentRecord {
                    batch_timestamp: if i == 0 { based } else { None },
                    key: text(r.key),
                    value: text(r.value),
                    timestamp: moved.then_some(created),
                    headers: offsetlab_engine::record::headers::decode(r.headers)
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(k, v)| offsetlab_engine::lab::SentHeader {
                            key: String::from_utf8_lossy(k).into_owned(),
                            value: v.map(|v| String::from_utf8_lossy(v).into_owned()),
                        })
                        .collect(),
                })
                .collect();
            for chunk in batch.chunks(MAX_SEND_RECORDS) {
                if records.len() + chunk.len() > MAX_SEND_RECORDS {
                    lines.push(spelled_send(
                        line,
                        std::mem::take(&mut records),
                        std::mem::take(&mut sizes),
                    ));
                }
                records.extend_from_slice(chunk);
                sizes.push(chunk.len());
            }
        }
        if !records.is_empty() {
            lines.push(spelled_send(line, records, sizes));
        }
        Ok(lines)
    }
}

/// A `send … records=` line for (part of) a stored line.
fn spelled_send(line: &SendStored, records: Vec<SentRecord>, batches: Vec<usize>) -> Command {
    Command::Send(Send {
        topic: line.topic.clone(),
        partition: line.partition,
        batches: if batches.len() > 1 { batches } else { Vec::new() },
        records,
        client: line.client.clone(),
    })
}

/// What `lab.json` holds: the lab's snapshot and the length of the history file it goes with.
/// The history is appended before `lab.json` is rewritten, so the file may run past
/// `history_bytes` after a crash: the excess belongs to an unacknowledged change and is cut.
#[derive(Serialize, serde::Deserialize)]
struct LabFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    history_bytes: Option<u64>,
    /// The length of `narrative.jsonl` it goes with (older labs kept the narrative in the
    /// snapshot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    narrative_bytes: Option<u64>,
    /// Older labs kept the whole history here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    history: Option<String>,
    snapshot: offsetlab_engine::lab::LabSnapshot,
}

/// A save that must wait for the logs (`--flush always`): the serialized lab, written once every
/// append it covers is on disk. Run it outside the session's lock; saves of older versions that
/// finish late are skipped.
pub struct PendingSave {
    durability: Arc<Durability>,
    history: Arc<std::fs::File>,
    upto: u64,
    version: u64,
    bytes: Vec<u8>,
    lab_file: Arc<std::sync::Mutex<(SlotFile, u64)>>,
    /// The logs directory, when deleted topics' files go once this save is written.
    purge: Option<PathBuf>,
}

impl PendingSave {
    /// Waits for the fsync (shared with concurrent requests: group commit), then writes the
    /// lab's file if no newer version was written meanwhile.
    pub fn complete(self) -> Result<(), LabError> {
        self.durability.sync_upto(self.upto).map_err(storage)?;
        self.history.sync_data().map_err(storage)?;
        write_slots(&self.lab_file, Written::Deferred(self.version), &self.bytes, true)?;
        if let Some(logs) = self.purge {
            FileStore::purge_deleted(&logs).map_err(storage)?;
        }
        Ok(())
    }
}

/// Which save writes a slot, with the lab version it holds.
enum Written {
    /// Written now, under the session's lock: the lab as it is, never older than a slot.
    Now(u64),
    /// A deferred save (`--flush always`) finishing outside the lock, perhaps after a newer
    /// one — or after a barrier that saved the lab in the middle of the next batch, still
    /// numbered with this version.
    Deferred(u64),
}

/// Writes `bytes` as the newest slot, unless the slots already hold a newer lab.
fn write_slots(
    slots: &std::sync::Mutex<(SlotFile, u64)>,
    written: Written,
    bytes: &[u8],
    sync: bool,
) -> Result<(), LabError> {
    let mut guard = slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (file, newest) = &mut *guard;
    let version = match written {
        Written::Now(v) if v >= *newest => v,
        Written::Deferred(v) if v > *newest => v,
        _ => return Ok(()),
    };
    file.write(bytes, sync).map_err(io_error)?;
    *newest = version;
    Ok(())
}

fn storage(e: impl std::fmt::Display) -> LabError {
    LabError::storage(e.to_string())
}

/// Why `command` cannot be kept in the history as text, if it cannot: its line does not parse,
/// or parses as another command.
fn unwritable(command: &Command) -> Option<String> {
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
fn clipped_line(command: &Command) -> String {
    offsetlab_engine::names::clipped(&command.to_string())
}

/// An I/O error as a storage error of its kind (a full disk, no descriptors left, …).
fn io_error(e: std::io::Error) -> LabError {
    LabError::Storage(e.into())
}

/// The HTTP status for a storage failure of `kind`.
pub fn storage_status(kind: FaultKind) -> u16 {
    match kind {
        FaultKind::Full => 507,
        FaultKind::NoDescriptors => 503,
        FaultKind::Io => 500,
    }
}

/// Why a request to change the lab was refused. Nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ActionError {
    /// 400 for a malformed line, 422 for a line the lab rejected or an expectation that failed.
    #[serde(skip)]
    pub status: u16,
    pub error: String,
    /// 1-based: the index in the request's `lines`, or the line of an imported scenario.
    pub line: usize,
    /// The offending line's text.
    pub text: String,
    /// The engine's reason, as a type: the Kafka listener picks its error code from it.
    #[serde(skip)]
    pub cause: Option<Box<LabError>>,
}

/// Why the lab in a data directory cannot be restored: which file (and line), and what is
/// wrong with it. The lab refuses to start; nothing in the data directory was changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreError {
    pub path: PathBuf,
    /// 1-based, for a line of the history.
    pub line: Option<usize>,
    pub problem: String,
    /// Found while reading, before anything on disk was changed. A later failure (the lab's
    /// logs already recovered, as a restart recovers them) is `false`.
    pub untouched: bool,
}

impl RestoreError {
    fn new(path: &Path, problem: impl std::fmt::Display) -> Self {
        Self {
            path: path.to_path_buf(),
            line: None,
            problem: problem.to_string(),
            untouched: true,
        }
    }

    /// The same error, found after the restore started changing files.
    fn after_changes(self) -> Self {
        Self {
            untouched: false,
            ..self
        }
    }
}

impl std::fmt::Display for RestoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ", line {line}")?;
        }
        write!(f, ": {}", self.problem)
    }
}

impl std::error::Error for RestoreError {}

/// One change the Kafka listener asks of the lab.
pub enum Change {
    Command(Command),
    /// A client's record batches for one partition, validated: appended to the log as they
    /// came and recorded in the history as a `send … stored=` line.
    Produced {
        topic: String,
        partition: i32,
        client: String,
        batches: ProducedBatches,
    },
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Command(c) => c.fmt(f),
            Change::Produced {
                topic,
                partition,
                client,
                batches,
            } => write!(
                f,
                "send {topic} partition={partition} client={client} ({} records as produced)",
                batches.records()
            ),
        }
    }
}

/// What a successful batch produced.
#[derive(Debug, Clone, Serialize)]
pub struct Applied {
    pub applied: usize,
    /// The lines as the lab understood them, in canonical form (what an export writes).
    pub lines: Vec<String>,
    pub version: u64,
    /// The narrative events the batch emitted.
    pub events: Vec<Event>,
    /// Offset reset plans (dry runs and executions), for the blast-radius view.
    pub reset_plans: Vec<ResetPlan>,
}

pub struct Session {
    lab: Lab,
    /// Why the session refuses every change: a storage failure it could not take back, or an
    /// fsync that failed. Nothing more is saved; a restart restores the lab from its files.
    broken: Option<String>,
    history: Vec<Command>,
    /// The batches the history's `send … stored=` lines name.
    produced: ProducedStore,
    backend: SinkBackend,
    version: u64,
    /// The durable lab's directory (durable backend only).
    generation: Option<Generation>,
}

/// The JSON of `GET /api/state`: exactly `offsetlab run --json`'s object, plus what the page needs.
#[derive(Serialize)]
pub struct State {
    #[serde(flatten)]
    pub view: LabView,
    pub version: u64,
    pub narrative: NarrativeTail,
    pub sink_rows: BTreeMap<String, SinkTail>,
    pub consumer_offsets_records: Vec<OffsetRecord>,
    pub history_lines: usize,
    pub storage: StorageInfo,
}

/// Where the lab keeps its logs, shown on the page.
#[derive(Serialize)]
pub struct StorageInfo {
    /// `memory` or `disk`.
    pub logs: &'static str,
    /// The flush policy of a durable lab (`never`, `interval=…ms`, `always`).
    pub flush: Option<String>,
    /// The generation directory of a durable lab.
    pub dir: Option<String>,
}

#[derive(Serialize)]
pub struct NarrativeTail {
    pub total: usize,
    /// The last events, their texts clipped (a client's group id may be kilobytes long).
    pub events: Vec<Event>,
}

#[derive(Serialize)]
pub struct SinkTail {
    pub total: u64,
    /// The last rows, in insertion order.
    pub rows: Vec<SinkRow>,
}

impl Session {
    /// A session built by running `source` (which must succeed).
    pub fn new(backend: SinkBackend, source: &str) -> Result<Self, ActionError> {
        Self::built(backend, source, None)
    }

    /// A session built by running `source`, resolving its `send … stored=` lines from `stored`.
    fn built(
        backend: SinkBackend,
        source: &str,
        stored: Option<&ProducedStore>,
    ) -> Result<Self, ActionError> {
        let mut s = Self {
            lab: Lab::default(),
            broken: None,
            history: Vec::new(),
            produced: ProducedStore::Memory(Vec::new()),
            backend,
            version: 0,
            generation: None,
        };
        s.load_from(source, stored)?;
        Ok(s)
    }

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
    fn restore_checked(
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

    /// Saves what the next start restores (durable backend), now: the history's new lines, then
    /// the lab's snapshot (both synced unless `--flush never`).
    pub fn persist(&self) -> Result<(), LabError> {
        let Some(g) = &self.generation else {
            return Ok(());
        };
        if let Some(why) = &self.broken {
            return Err(storage(why));
        }
        let sync = g.durability.policy() != FlushPolicy::Never;
        let (saved, history) = self.lab_file(g)?;
        if sync {
            history.sync_data().map_err(io_error)?;
        }
        write_slots(&g.lab_file, Written::Now(self.version), &saved.lab_file, sync)?;
        g.set_saved(saved);
        if g.deleted_topics.swap(false, std::sync::atomic::Ordering::SeqCst) {
            FileStore::purge_deleted(&g.dir.join("logs")).map_err(io_error)?;
        }
        Ok(())
    }

    /// Appends the history's new lines to its file; `lab.json`'s bytes, and the history file.
    fn lab_file(&self, g: &Generation) -> Result<(Saved, Arc<std::fs::File>), LabError> {
        lab_file_of(g, &self.lab, &self.history)
    }

    /// The disk refused a write since the last look (durable labs only).
    fn take_fault(&self) -> Option<Fault> {
        self.generation.as_ref().and_then(|g| g.health.take())
    }

    /// The storage fault behind `e`: one the store noted, or — for a storage or sink error the
    /// store did not see (SQLite's own "database or disk is full") — the error itself.
    fn fault_in(&self, e: &LabError) -> Option<Fault> {
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

    /// Goes back to the lab the last save wrote, after the disk refused a write: the logs are
    /// opened again and truncated to what that save acknowledged — what a restart does — and the
    /// history is cut back to it. What the refused action did is gone (but for sink rows it
    /// wrote, which SQLite keeps, as after a crash).
    fn go_back_to_saved(&mut self) -> Result<(), LabError> {
        let SinkBackend::Durable { flush, .. } = self.backend else {
            return Ok(());
        };
        let Some(g) = self.generation.as_mut() else {
            return Ok(());
        };
        let saved = g
            .saved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
            .ok_or_else(|| storage("no save to go back to"))?;
        let LabFile { mut snapshot, .. } = serde_json::from_slice(&saved.lab_file).map_err(storage)?;
        {
            let mut log = g
                .history
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // A save that failed half-way may have written some of its lines.
            let _ = log.file.set_len(saved.history_bytes);
            log.bytes = saved.history_bytes;
            log.commands = saved.commands;
            self.history.truncate(saved.commands);
            let mut narrative_log = g
                .narrative
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let _ = narrative_log.file.set_len(saved.narrative_bytes);
            narrative_log.bytes = saved.narrative_bytes;
            narrative_log.events = saved.events;
        }
        // The narrative as it was at that save (the memory holds it: nothing since was forgotten).
        let mut narrative = self.lab.narrative().clone();
        narrative.truncate(saved.events);
        snapshot.set_narrative(narrative);
        // The lab opened again from its files as a restart opens them — beside the one in
        // memory, which stays until the new one stands: if this fails too, the session keeps
        // what it has and refuses every change (`broken`) rather than save an empty lab over
        // the files.
        let reopened = (|| {
            let logs = g.dir.join("logs");
            let store = FileStore::open(&logs, flush)
                .map_err(io_error)?
                .keeping_segments_in(g.dir.join(PRODUCED_DIR));
            let (health, durability) = (store.health(), store.durability());
            let sinks = SqliteSinks::new(g.dir.join("sinks"))?;
            let lab = Lab::restore(snapshot, Box::new(store), Box::new(sinks))?;
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
    fn refuse_if_broken(&self) -> Result<(), ActionError> {
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
    fn refused_by_storage(
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
        // What is in the narrative's file need not stay in memory.
        if self.generation.is_some() {
            let narrative = self.lab.narrative_mut();
            let keep_from = narrative.len().saturating_sub(NARRATIVE_IN_MEMORY);
            narrative.forget_before(keep_from);
        }
        Ok(saved)
    }

    fn try_save(&self) -> Result<Option<PendingSave>, LabError> {
        let Some(g) = &self.generation else {
            return Ok(None);
        };
        if g.durability.policy() != FlushPolicy::Always {
            self.persist()?;
            return Ok(None);
        }
        let (saved, history) = self.lab_file(g)?;
        let bytes = saved.lab_file.clone();
        // Under `--flush always` the save is complete once its fsync is; what the lab holds now
        // is what a refused write goes back to (a later fsync failure fails every save after it).
        g.set_saved(saved);
        Ok(Some(PendingSave {
            durability: Arc::clone(&g.durability),
            history,
            upto: g.durability.written(),
            version: self.version,
            bytes,
            lab_file: Arc::clone(&g.lab_file),
            purge: g
                .deleted_topics
                .swap(false, std::sync::atomic::Ordering::SeqCst)
                .then(|| g.dir.join("logs")),
        }))
    }

    /// The logs synced and the lab saved, as they are now.
    fn barrier(&self) -> Result<(), LabError> {
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
        self.lab.close_logs()?;
        self.persist()?;
        FileStore::mark_clean(&g.dir.join("logs")).map_err(storage)
    }

    /// Where the durable lab lives, if it is durable.
    pub fn generation_dir(&self) -> Option<&Path> {
        self.generation.as_ref().map(|g| g.dir.as_path())
    }

    pub fn version(&self) -> u64 {
        self.version
    }

    /// How many lines the history holds. A storage failure takes the lab back to its last save,
    /// which can shorten it: the caller of several batches learns which of them survived.
    pub fn history_len(&self) -> usize {
        self.history.len()
    }

    pub fn lab(&self) -> &Lab {
        &self.lab
    }

    /// Applies `lines` as one batch: all of them, or none.
    pub fn apply_lines(&mut self, lines: &[String]) -> Result<Applied, ActionError> {
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

    fn apply_numbered(&mut self, commands: Vec<(usize, Change)>) -> Result<Applied, ActionError> {
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
        let applied = commands.len();
        let mark = self.lab.narrative().len();
        let history_mark = self.history.len();
        // The line of a compaction or DeleteRecords that saved the lab in the middle of the batch.
        let mut kept_before: Option<usize> = None;
        let mut reset_plans = Vec::new();
        for (n, (line, change)) in commands.into_iter().enumerate() {
            let command = match change {
                Change::Command(c) => c,
                Change::Produced {
                    topic,
                    partition,
                    client,
                    mut batches,
                } => {
                    match append_produced(
                        &mut self.lab,
                        &mut self.produced,
                        &topic,
                        partition,
                        &client,
                        &mut batches,
                    ) {
                        Ok(stored) => self.history.extend(stored.into_iter().map(Command::SendStored)),
                        Err(e) => {
                            let text = format!(
                                "send {} partition={partition} client={} …",
                                Quoted(&topic),
                                Quoted(&client)
                            );
                            if let Some(fault) = self.fault_in(&e) {
                                return Err(self.refused_by_storage(line, text, fault, kept_before));
                            }
                            if n > 0 {
                                self.undo_to(history_mark)?;
                            }
                            return Err(ActionError {
                                status: 422,
                                error: e.to_string(),
                                line,
                                text,
                                cause: Some(Box::new(e)),
                            });
                        }
                    }
                    if let Some(fault) = self.take_fault() {
                        let text = format!("send {} partition={partition} …", Quoted(&topic));
                        return Err(self.refused_by_storage(line, text, fault, kept_before));
                    }
                    continue;
                }
            };
            if matches!(command, Command::Compact(_) | Command::DeleteRecords(_)) {
                // Compaction and DeleteRecords destroy records for good. Everything before them
                // is saved first, so a restart's truncation to the saved state can never undo a
                // record they superseded (a cleaner never cleans past the high watermark).
                // (A deleted topic's files are only renamed aside until the deletion is saved.)
                if let Err(e) = self.barrier() {
                    let fault = self.fault_in(&e).unwrap_or(Fault {
                        kind: FaultKind::Io,
                        message: e.to_string(),
                    });
                    return Err(self.refused_by_storage(line, command.to_string(), fault, kept_before));
                }
                if n > 0 && kept_before.is_none() {
                    kept_before = Some(line);
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
                return Err(self.refused_by_storage(line, command.to_string(), fault, kept_before));
            }
            match applied {
                Ok(outcome) => {
                    if let Outcome::Reset(plan) = outcome {
                        reset_plans.push(plan);
                    }
                    if !matches!(command, Command::Expect(_)) {
                        self.history.push(command);
                    }
                }
                Err(e) => {
                    if n > 0 {
                        self.undo_to(history_mark)?;
                    }
                    let (error, cause) = match e {
                        ApplyError::Lab(e) => (e.to_string(), Some(Box::new(e))),
                        ApplyError::Expectation(f) => (format!("expectation failed: {f}"), None),
                    };
                    return Err(ActionError {
                        status: match cause.as_deref() {
                            Some(LabError::Storage(f)) => storage_status(f.kind),
                            _ => 422,
                        },
                        error,
                        line,
                        text: command.to_string(),
                        cause,
                    });
                }
            }
        }
        self.version += 1;
        Ok(Applied {
            applied,
            lines: Vec::new(),
            version: self.version,
            events: self.lab.narrative().since(mark).to_vec(),
            reset_plans,
        })
    }

    /// Replaces the session with the lab `source` builds. If any line fails, the current session
    /// stays as it was.
    pub fn load(&mut self, source: &str) -> Result<(), ActionError> {
        self.load_from(source, None)
    }

    /// [`Session::load`], resolving `send … stored=` lines from `stored`.
    fn load_from(&mut self, source: &str, stored: Option<&ProducedStore>) -> Result<(), ActionError> {
        self.refuse_if_broken()?;
        let script = Script::parse(source).map_err(|e| ActionError {
            status: 400,
            error: e.reason(),
            line: e.line(),
            text: e.text().unwrap_or_default().to_string(),
            cause: None,
        })?;
        let (mut lab, generation, mut produced) = self.fresh_lab().map_err(|e| internal(&e))?;
        let mut history = Vec::new();
        for line in &script.lines {
            if let Err(e) = replay(&mut lab, &mut produced, &mut history, &line.command, stored) {
                drop(lab);
                if let Some(g) = generation {
                    forget_generation(&g.dir);
                } else {
                    // Put the current session's sinks back (opening the new lab's emptied them).
                    self.rebuild(self.history.len()).map_err(|e| internal(&e))?;
                }
                return Err(ActionError {
                    status: 422,
                    error: match &e {
                        ApplyError::Lab(e) => e.to_string(),
                        ApplyError::Expectation(f) => format!("expectation failed: {f}"),
                    },
                    line: line.number,
                    text: line.text.clone(),
                    cause: match e {
                        ApplyError::Lab(e) => Some(Box::new(e)),
                        ApplyError::Expectation(_) => None,
                    },
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
    fn install(
        &mut self,
        lab: Lab,
        history: Vec<Command>,
        produced: ProducedStore,
        generation: Option<Generation>,
        version: u64,
    ) -> Result<(), LabError> {
        let Some(g) = generation else {
            (self.lab, self.history, self.produced, self.version) = (lab, history, produced, version);
            return Ok(());
        };
        match write_generation(&g, &lab, &history, version, &self.backend) {
            Ok(saved) => {
                g.set_saved(saved);
                (self.lab, self.history, self.produced, self.version) = (lab, history, produced, version);
                if let Some(old) = self.generation.replace(g) {
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

    /// The session as a scenario file that replays it exactly.
    /// Stored batches are spelled out as `send … records=[…]` lines, so the file stands on its
    /// own; batches that can no longer be read are named in a comment.
    pub fn export(&self) -> String {
        let mut out = String::from("# exported from the offsetlab web lab\n");
        for c in &self.history {
            match c {
                Command::SendStored(line) => match self.produced.spelled_out(line) {
                    Ok(sends) => {
                        for s in sends {
                            out.push_str(&s.to_string());
                            out.push('\n');
                        }
                    }
                    Err(e) => {
                        out.push_str(&format!(
                            "# the lab could not read these records back: {e}\n# {c}\n"
                        ));
                    }
                },
                c => {
                    out.push_str(&c.to_string());
                    out.push('\n');
                }
            }
        }
        out
    }

    pub fn state(&self) -> Result<State, LabError> {
        let view = self.lab.view()?;
        let mut sink_rows = BTreeMap::new();
        for (name, g) in self.lab.groups() {
            let total = g.sink.stats()?.rows;
            let from = (total as usize).saturating_sub(SINK_TAIL);
            sink_rows.insert(
                name.clone(),
                SinkTail {
                    total,
                    rows: g
                        .sink
                        .rows(from, SINK_TAIL)?
                        .into_iter()
                        .map(crate::api::clip_row)
                        .collect(),
                },
            );
        }
        let offsets = self.lab.offsets();
        let end = offsets.log().log_end_offset();
        let mut consumer_offsets_records = offsets.records((end - OFFSETS_TAIL as i64).max(0), usize::MAX);
        let skip = consumer_offsets_records.len().saturating_sub(OFFSETS_TAIL);
        consumer_offsets_records.drain(..skip);
        for r in &mut consumer_offsets_records {
            if let Some(v) = r
                .value
                .as_mut()
                .filter(|v| v.metadata.len() > crate::api::MAX_FIELD_BYTES)
            {
                v.metadata = crate::api::clip(&v.metadata, crate::api::MAX_FIELD_BYTES).into_owned();
            }
        }
        let events = self.lab.narrative().events();
        Ok(State {
            view,
            version: self.version,
            narrative: NarrativeTail {
                total: self.lab.narrative().len(),
                events: events[events.len().saturating_sub(NARRATIVE_TAIL)..]
                    .iter()
                    .map(|e| Event {
                        text: crate::api::clip(&e.text, crate::api::MAX_FIELD_BYTES).into_owned(),
                        ..e.clone()
                    })
                    .collect(),
            },
            sink_rows,
            consumer_offsets_records,
            history_lines: self.history.len(),
            storage: match &self.generation {
                Some(g) => StorageInfo {
                    logs: "disk",
                    flush: Some(g.durability.policy().to_string()),
                    dir: Some(g.dir.display().to_string()),
                },
                None => StorageInfo {
                    logs: "memory",
                    flush: None,
                    dir: None,
                },
            },
        })
    }

    /// An empty lab on this session's backend, with an empty store for produced batches; a
    /// durable one in a new generation directory.
    fn fresh_lab(&self) -> Result<(Lab, Option<Generation>, ProducedStore), LabError> {
        let memory = || ProducedStore::Memory(Vec::new());
        match &self.backend {
            SinkBackend::Memory => Ok((
                Lab::new(Box::new(MemoryStore), Box::new(MemorySinks)),
                None,
                memory(),
            )),
            SinkBackend::Sqlite(dir) => Ok((
                Lab::new(Box::new(MemoryStore), Box::new(SqliteSinks::new(dir.clone())?)),
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
                let lab = Lab::try_new(Box::new(store), sinks)?;
                let produced = ProducedStore::Dir(dir.join(PRODUCED_DIR));
                Ok((
                    lab,
                    Some(Generation::new(number, dir, durability, health)?),
                    produced,
                ))
            }
        }
    }

    /// Undoes the lines of a failed batch: the lab rebuilt from the history before them. If that
    /// fails too (a stored batch that can no longer be read), the batch's applied lines stay —
    /// in the lab and in its history, which must never disagree — and the error says so.
    fn undo_to(&mut self, history_mark: usize) -> Result<(), ActionError> {
        let Err(e) = self.rebuild(history_mark) else {
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

    /// Rebuilds the lab from the history (undo of a failed batch): a fresh lab, into which the
    /// history is replayed; a durable one in a new generation. Stored batches are read from the
    /// current store and kept in the new one.
    ///
    /// Only the first `upto` lines are replayed; on success they are the history. On failure
    /// nothing changes: the lab and its history still agree.
    fn rebuild(&mut self, upto: usize) -> Result<(), LabError> {
        let (mut lab, generation, mut produced) = self.fresh_lab()?;
        let mut history = Vec::with_capacity(upto);
        for c in &self.history[..upto] {
            if let Err(e) = replay(&mut lab, &mut produced, &mut history, c, Some(&self.produced)) {
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

/// Applies one history line to `lab` and records it in `history`. A `send … stored=` line's
/// batches come from `from` (the store of the lab being replayed) and go to `produced`, under the
/// line's new position; without `from` such a line cannot replay.
fn replay(
    lab: &mut Lab,
    produced: &mut ProducedStore,
    history: &mut Vec<Command>,
    command: &Command,
    from: Option<&ProducedStore>,
) -> Result<(), ApplyError> {
    match (command, from) {
        (Command::SendStored(line), Some(from)) => {
            let mut batches = from.batches(line)?;
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
fn append_produced(
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

/// Appends `history`'s and `lab`'s narrative's new lines to `g`'s files; `lab.json`'s bytes, and
/// the history file.
fn lab_file_of(
    g: &Generation,
    lab: &Lab,
    history: &[Command],
) -> Result<(Saved, Arc<std::fs::File>), LabError> {
    let mut log = g
        .history
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let history_bytes = log.catch_up(history)?;
    let narrative_bytes = g
        .narrative
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .catch_up(lab.narrative())?;
    let lab_file = serde_json::to_vec(&LabFile {
        history_bytes: Some(history_bytes),
        narrative_bytes: Some(narrative_bytes),
        history: None,
        snapshot: lab.snapshot_without_narrative(),
    })
    .map_err(storage)?;
    Ok((
        Saved {
            lab_file,
            history_bytes,
            commands: history.len(),
            narrative_bytes,
            events: lab.narrative().len(),
        },
        Arc::clone(&log.file),
    ))
}

/// Everything of a new generation on disk — its logs, its file, its directory — and then
/// `current` naming it.
fn write_generation(
    new: &Generation,
    lab: &Lab,
    history: &[Command],
    version: u64,
    backend: &SinkBackend,
) -> Result<Saved, LabError> {
    new.durability.sync_all().map_err(io_error)?;
    let (saved, history_file) = lab_file_of(new, lab, history)?;
    history_file.sync_data().map_err(io_error)?;
    // The kept segments' links, which the history names.
    let kept = new.dir.join(PRODUCED_DIR);
    if kept.exists() {
        std::fs::File::open(&kept)
            .and_then(|d| d.sync_all())
            .map_err(io_error)?;
    }
    write_slots(&new.lab_file, Written::Now(version), &saved.lab_file, true)?;
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
fn forget_generation(dir: &Path) {
    offsetlab_storage::FilePool::global().forget_under(dir);
    let _ = std::fs::remove_dir_all(dir);
}

/// Removes the partition directories under `logs` that `lab` does not know — a topic created
/// by an action that crashed (or was refused) before it was acknowledged: gone, or a later topic
/// of that name would inherit its records. Their names.
fn remove_unknown_partitions(lab: &Lab, logs: &Path) -> Vec<String> {
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

fn internal(e: &dyn std::fmt::Display) -> ActionError {
    ActionError {
        status: 500,
        error: e.to_string(),
        line: 0,
        text: String::new(),
        cause: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> Session {
        Session::new(SinkBackend::Memory, offsetlab_scenario::LAB_SCENARIO).expect("seed")
    }

    fn lines(ls: &[&str]) -> Vec<String> {
        ls.iter().map(|s| s.to_string()).collect()
    }

    fn state_json(s: &Session) -> serde_json::Value {
        let mut v = serde_json::to_value(s.state().expect("state")).expect("json");
        if let Some(o) = v.as_object_mut() {
            o.remove("version");
        }
        v
    }

    #[test]
    fn a_batch_applies_in_order() {
        let mut s = session();
        let out = s
            .apply_lines(&lines(&["poll c1", "process c1 count=all"]))
            .expect("applies");
        assert_eq!(out.applied, 2);
        assert!(out.events.iter().any(|e| e.text.contains("processed")));
        assert_eq!(s.lab().group_view("analytics-prod").expect("g").sink.rows, 4);
    }

    /// A command the listener builds that its history line could not bring back is refused
    /// before it changes anything (here a tick past the language's 100 years).
    #[test]
    fn a_change_the_history_cannot_hold_is_refused() {
        let mut s = session();
        let before = state_json(&s);
        let long = Command::Tick(offsetlab_scenario::command::Tick {
            duration_ms: offsetlab_scenario::units::MAX_DURATION_MS + 1,
        });
        let err = s
            .apply_changes(vec![Change::Command(long)])
            .expect_err("cannot be written");
        assert_eq!((err.status, err.line), (400, 1));
        assert!(err.error.contains("cannot record"), "{}", err.error);
        assert_eq!(state_json(&s), before);
    }

    #[test]
    fn a_failing_batch_changes_nothing() {
        let mut s = session();
        s.apply_lines(&lines(&["poll c1"])).expect("poll");
        let before = state_json(&s);
        let version = s.version();
        let err = s
            .apply_lines(&lines(&["process c1 count=all", "tick 5s", "poll ghost"]))
            .expect_err("ghost");
        assert_eq!((err.status, err.line), (422, 3));
        assert_eq!(err.error, "unknown consumer 'ghost'");
        assert_eq!(state_json(&s), before, "the first two lines were undone");
        assert_eq!(s.version(), version);
        let err = s
            .apply_lines(&lines(&["poll c1", "fly away"]))
            .expect_err("malformed");
        assert_eq!((err.status, err.line), (400, 2));
        assert_eq!(state_json(&s), before);
    }

    #[test]
    fn export_replays_to_the_same_state() {
        let mut s = session();
        s.apply_lines(&lines(&[
            "poll c1",
            "process c1",
            "tick 5s",
            "crash c1",
            "restart c1",
        ]))
        .expect("applies");
        let text = s.export();
        let replayed = Session::new(SinkBackend::Memory, &text).expect("replays");
        assert_eq!(state_json(&replayed), state_json(&s));
    }

    /// The durable lab saves by appending to its history and rewriting a slot; a restart reads
    /// the history up to the length the newest slot names, and cuts lines a crashed change
    /// appended after it.
    #[test]
    fn a_restart_keeps_the_acknowledged_history_and_cuts_the_rest() {
        let dir = tempfile::tempdir().expect("dir");
        let backend = SinkBackend::Durable {
            root: dir.path().to_path_buf(),
            flush: FlushPolicy::Never,
        };
        let mut s = Session::new(backend, offsetlab_scenario::LAB_SCENARIO).expect("seed");
        for batch in [
            &["poll c1", "process c1 count=all"][..],
            &["tick 5s"],
            &["produce orders count=2"],
        ] {
            s.apply_lines(&lines(batch)).expect("applies");
            assert!(s.save().expect("saved").is_none(), "--flush never saves at once");
        }
        let export = s.export();
        let before = state_json(&s);
        let history = s.generation_dir().expect("durable").join(HISTORY_FILE);
        assert_eq!(std::fs::read_to_string(&history).expect("history"), export);
        // A change appended its line and crashed before its snapshot was written.
        drop(s);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&history)
            .expect("history");
        std::io::Write::write_all(&mut f, b"crash c1\n").expect("append");
        let (restored, summary) = Session::restore(dir.path(), FlushPolicy::Never)
            .expect("restores")
            .expect("a lab");
        assert!(summary.starts_with("unclean stop"), "{summary}");
        assert_eq!(restored.export(), export, "the unacknowledged line is gone");
        assert_eq!(
            std::fs::read_to_string(&history).expect("history"),
            export,
            "and cut from the file"
        );
        let mut after = state_json(&restored);
        let mut expected = before;
        // The same lab, but for the narrative's note of the restart.
        for v in [&mut after, &mut expected] {
            if let Some(o) = v.as_object_mut() {
                o.remove("narrative");
            }
        }
        assert_eq!(after, expected);
        let events = restored.lab().narrative().events();
        assert!(
            events.last().is_some_and(|e| e.text.contains("restarted")),
            "{:?}",
            events.last()
        );
    }

    /// Batches as a client encodes them, each numbered from 0, CreateTime 1 (the log stamps its
    /// own time).
    fn client_batches(batches: &[&[&str]]) -> ProducedBatches {
        let mut buf = Vec::new();
        for values in batches {
            let records: Vec<offsetlab_engine::record::NewRecord<'_>> = values
                .iter()
                .map(|v| offsetlab_engine::record::NewRecord {
                    timestamp: 1,
                    key: Some(b"k"),
                    value: Some(v.as_bytes()),
                    control: false,
                    headers: &[],
                })
                .collect();
            offsetlab_records::batch::encode_consecutive(&mut buf, 0, &records, -1);
        }
        ProducedBatches::validate(buf).expect("valid batches")
    }

    fn produced(batches: &[&[&str]]) -> Change {
        Change::Produced {
            topic: "t".into(),
            partition: 0,
            client: "rdkafka".into(),
            batches: client_batches(batches),
        }
    }

    /// (offset, timestamp, value) of every record of `t-0`.
    fn records(s: &Session) -> Vec<(i64, i64, String)> {
        let tp = offsetlab_engine::record::TopicPartition::new("t".to_string(), 0);
        let mut out = Vec::new();
        s.lab()
            .partition_log(&tp)
            .expect("t-0")
            .read(0, usize::MAX, &mut |r| {
                out.push((
                    r.offset,
                    r.timestamp,
                    String::from_utf8_lossy(r.value.unwrap_or_default()).into_owned(),
                ))
            });
        out
    }

    /// Records per segment of `t-0`.
    fn layout(s: &Session) -> Vec<usize> {
        let tp = offsetlab_engine::record::TopicPartition::new("t".to_string(), 0);
        let log = s.lab().partition_log(&tp).expect("t-0");
        log.segments()
            .iter()
            .map(|g| g.records)
            .filter(|&n| n > 0)
            .collect()
    }

    /// The narrative's produce events, as text.
    fn produced_events(s: &Session) -> Vec<String> {
        s.lab()
            .narrative()
            .events()
            .iter()
            .filter(|e| e.text.contains("through the Kafka listener"))
            .map(|e| e.text.clone())
            .collect()
    }

    fn durable(dir: &Path) -> SinkBackend {
        SinkBackend::Durable {
            root: dir.to_path_buf(),
            flush: FlushPolicy::Never,
        }
    }

    /// A client's batches go to the log as they came, stamped with the lab's time; the history
    /// names where the log keeps them, one line per segment they went to; the bytes outlive
    /// retention; an export spells the records out and replays to the same log.
    #[test]
    fn client_batches_are_kept_by_reference_and_exported_as_records() {
        for durable_lab in [false, true] {
            let dir = tempfile::tempdir().expect("dir");
            let backend = if durable_lab {
                durable(dir.path())
            } else {
                SinkBackend::Memory
            };
            let mut s =
                Session::new(backend, "topic t segment.records=3 retention.ms=1h\ntick 1s\n").expect("lab");
            s.apply_changes(vec![produced(&[&["a", "b"]])]).expect("first");
            // Segments hold 3 records: `c` fills the first, `d, e` go to the next.
            s.apply_changes(vec![produced(&[&["c"], &["d", "e"]])])
                .expect("second");
            let stored: Vec<&SendStored> = s
                .history
                .iter()
                .filter_map(|c| match c {
                    Command::SendStored(l) => Some(l),
                    _ => None,
                })
                .collect();
            if durable_lab {
                // One line per segment a request's batches went to: the second request's two.
                assert_eq!(
                    stored.iter().map(|l| l.count).collect::<Vec<_>>(),
                    [2, 1, 2],
                    "{stored:?}"
                );
                assert!(stored.iter().all(|l| l.file.starts_with("t-0-")), "{stored:?}");
                assert_eq!(stored[0].file, stored[1].file);
                assert_ne!(stored[1].file, stored[2].file, "two segments, two kept files");
            } else {
                // The in-memory log keeps no file: the session keeps a copy of each request's.
                assert_eq!(stored.iter().map(|l| l.count).collect::<Vec<_>>(), [2, 3]);
                assert!(stored.iter().all(|l| l.file == "memory"));
            }
            let now = s.lab().now();
            let before = records(&s);
            assert_eq!(
                before,
                vec![
                    (0, now, "a".to_string()),
                    (1, now, "b".to_string()),
                    (2, now, "c".to_string()),
                    (3, now, "d".to_string()),
                    (4, now, "e".to_string())
                ],
                "the lab's time, not the client's"
            );
            let export = s.export();
            assert!(
                export.contains(r#"send t partition=0 client=rdkafka records=[{"key":"k","value":"a"},{"key":"k","value":"b"}]"#),
                "{export}"
            );
            assert!(!export.contains("stored="), "{export}");
            // The export replays to the same records, in the same segments, with the same story,
            // in memory and on disk: batches are appended whole, as the client's were.
            for into_durable in [false, true] {
                let other = tempfile::tempdir().expect("dir");
                let backend = if into_durable {
                    durable(other.path())
                } else {
                    SinkBackend::Memory
                };
                let replayed = Session::new(backend, &export).expect("replays");
                assert_eq!(records(&replayed), before);
                assert_eq!(layout(&replayed), [3, 2], "{export}");
                if into_durable == durable_lab {
                    assert_eq!(produced_events(&replayed), produced_events(&s), "{export}");
                }
            }
            assert_eq!(layout(&s), [3, 2]);
            // Retention deletes the first segment; the history's bytes stay.
            s.apply_lines(&lines(&["tick 2h", "produce t count=1"]))
                .expect("later");
            s.apply_lines(&lines(&["tick 2h"])).expect("retention");
            if durable_lab {
                assert!(records(&s).first().is_some_and(|r| r.0 >= 3), "{:?}", records(&s));
            }
            assert!(
                s.export().starts_with(&export),
                "the export still spells out a and b"
            );
        }
    }

    /// A batch that fails after a client's batches went in is undone by replaying the history,
    /// which reads the stored batches back; a restart restores the references.
    #[test]
    fn stored_batches_survive_an_undo_and_a_restart() {
        let dir = tempfile::tempdir().expect("dir");
        let mut s = Session::new(durable(dir.path()), "topic t\n").expect("lab");
        s.apply_changes(vec![produced(&[&["a", "b"]])]).expect("produced");
        let export = s.export();
        let before = records(&s);
        let generation = s.generation_dir().map(Path::to_path_buf);
        let err = s
            .apply_changes(vec![
                produced(&[&["x"]]),
                Change::Command(Command::parse("poll ghost").expect("p").expect("c")),
            ])
            .expect_err("ghost");
        assert_eq!(err.line, 2);
        assert_eq!(records(&s), before, "x was undone");
        assert_eq!(s.export(), export);
        assert_ne!(
            s.generation_dir().map(Path::to_path_buf),
            generation,
            "rebuilt in a new generation"
        );
        assert!(s.save().expect("saved").is_none());
        // A kept segment of a change that was never acknowledged: no line names it.
        let stray = s
            .generation_dir()
            .expect("durable")
            .join(PRODUCED_DIR)
            .join("t-0-stray.log");
        std::fs::write(&stray, b"unacknowledged").expect("stray");
        drop(s);
        let (mut restored, _) = Session::restore(dir.path(), FlushPolicy::Never)
            .expect("restores")
            .expect("a lab");
        assert!(!stray.exists(), "a kept file no line names is removed at start");
        assert_eq!(restored.export(), export);
        assert_eq!(records(&restored), before);
        // An undo after the restart reads the kept batches of the restored generation.
        restored
            .apply_lines(&lines(&["tick 1s", "poll ghost"]))
            .expect_err("ghost");
        assert_eq!(records(&restored), before);
        assert_eq!(restored.export(), export);
    }

    /// A machine crash under `--flush never` can lose records the lab acknowledged. The next
    /// appends must not land where the lost bytes were: the history still names that range of
    /// the kept file, and would read the new records in their place.
    #[test]
    fn appends_after_a_lost_tail_go_to_a_new_segment() {
        let dir = tempfile::tempdir().expect("dir");
        let mut s = Session::new(durable(dir.path()), "topic t\n").expect("lab");
        s.apply_changes(vec![produced(&[&["a", "b"]])]).expect("a, b");
        s.apply_changes(vec![produced(&[&["c"]])]).expect("c");
        assert!(s.save().expect("saved").is_none());
        let lines: Vec<SendStored> = s
            .history
            .iter()
            .filter_map(|c| match c {
                Command::SendStored(l) => Some(l.clone()),
                _ => None,
            })
            .collect();
        let segment = s
            .generation_dir()
            .expect("durable")
            .join("logs/t-0/00000000000000000000.log");
        drop(s);
        // The page cache never reached the disk for `c`.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&segment)
            .and_then(|f| f.set_len(lines[1].at))
            .expect("cut");
        let (mut restored, summary) = Session::restore(dir.path(), FlushPolicy::Never)
            .expect("restores")
            .expect("a lab");
        assert!(summary.contains("unclean"), "{summary}");
        restored.apply_changes(vec![produced(&[&["x"]])]).expect("x");
        let Some(Command::SendStored(x)) = restored.history.last() else {
            panic!("a stored line");
        };
        assert_ne!(
            x.file, lines[1].file,
            "x went to a new segment, not into c's place"
        );
        let export = restored.export();
        assert!(export.contains("could not read these records back"), "{export}");
        assert!(export.contains(r#""value":"x""#), "{export}");
    }

    /// `send … stored=` lines name bytes only the lab that wrote them has: typed into the page or
    /// imported, they are refused, and nothing changes.
    #[test]
    fn stored_lines_from_outside_are_refused() {
        let mut s = Session::new(SinkBackend::Memory, "topic t\n").expect("lab");
        let err = s
            .apply_lines(&lines(&["send t partition=0 stored=memory:0+70 count=1"]))
            .expect_err("refused");
        assert_eq!(err.status, 422);
        assert!(
            err.error.contains("replays only inside that lab"),
            "{}",
            err.error
        );
        let err = s
            .load("topic u\nsend u partition=0 stored=memory:0+70 count=1\n")
            .expect_err("refused");
        assert_eq!(err.line, 2);
        assert!(s.lab().topic("u").is_err());
    }

    /// A deleted topic's files stay (renamed aside) until the deletion is saved, then go.
    #[test]
    fn a_deleted_topics_files_go_once_the_deletion_is_saved() {
        let dir = tempfile::tempdir().expect("dir");
        let backend = SinkBackend::Durable {
            root: dir.path().to_path_buf(),
            flush: FlushPolicy::Never,
        };
        let mut s = Session::new(backend, "topic scratch\nproduce scratch count=3\n").expect("lab");
        let logs = s.generation_dir().expect("durable").join("logs");
        let entries = |logs: &Path| -> Vec<String> {
            let mut names: Vec<String> = std::fs::read_dir(logs)
                .expect("logs")
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("scratch"))
                .collect();
            names.sort();
            names
        };
        s.apply_lines(&lines(&["delete-topic scratch"])).expect("deleted");
        assert!(entries(&logs).is_empty(), "moved aside");
        assert!(
            logs.join(".deleted/1/scratch-0").is_dir(),
            "moved aside, not gone"
        );
        assert!(s.save().expect("saved").is_none());
        assert!(entries(&logs).is_empty(), "saved: gone");
        assert!(!logs.join(".deleted").exists(), "saved: gone");
        assert!(s.lab().topic("scratch").is_err());
    }

    #[test]
    fn a_failing_import_keeps_the_current_session() {
        let mut s = session();
        let before = state_json(&s);
        let err = s.load("topic orders\npoll nobody\n").expect_err("fails");
        assert_eq!((err.status, err.line), (422, 2));
        assert_eq!(state_json(&s), before);
    }

    /// Groups of real clients hold no database open (they never write to a lab sink): a client
    /// that makes two hundred groups costs no file descriptors for them, and a restart brings
    /// them back; the lab's first consumer in such a group opens a real sink.
    #[test]
    fn real_clients_groups_open_no_sink_until_the_lab_uses_one() {
        let dir = tempfile::tempdir().expect("dir");
        let mut s = Session::new(durable(dir.path()), "topic t\n").expect("lab");
        let joined: Vec<String> = (0..200)
            .map(|i| format!(r#"rebalance "client group {i}" generation=1 protocol=range members=[{{"id":"m-{i}","partitions":{{"t":[0]}}}}]"#))
            .collect();
        s.apply_lines(&joined).expect("rebalances");
        let empty: Vec<String> = (0..200)
            .map(|i| format!(r#"rebalance "client group {i}" generation=2 protocol=range members=[]"#))
            .collect();
        s.apply_lines(&empty).expect("emptied");
        assert!(s.save().expect("saved").is_none());
        let sinks = s.generation_dir().expect("durable").join("sinks");
        let files = || std::fs::read_dir(&sinks).map_or(0, |d| d.count());
        assert_eq!(files(), 0, "no database for a group of real clients");
        drop(s);
        let (mut s, _) = Session::restore(dir.path(), FlushPolicy::Never)
            .expect("restores")
            .expect("a lab");
        assert_eq!(s.lab().groups().len(), 200);
        s.apply_lines(&lines(&[
            r#"consumer c1 group="client group 7" topic=t reset=earliest"#,
        ]))
        .expect("a lab consumer joins the Empty group");
        s.apply_lines(&lines(&["produce t count=2", "poll c1", "process c1 count=all"]))
            .expect("processes");
        assert!(files() >= 1, "a real sink now");
        assert!(s.save().expect("saved").is_none());
        drop(s);
        let (s, _) = Session::restore(dir.path(), FlushPolicy::Never)
            .expect("restores")
            .expect("a lab");
        assert_eq!(
            s.lab().group_view("client group 7").expect("group").sink.rows,
            2,
            "its rows survive a restart"
        );
    }
}

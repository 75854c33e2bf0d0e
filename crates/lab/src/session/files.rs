//! The files of a generation the session appends to: the history (`history.scenario`), the narrative (`narrative.jsonl`), and what `lab.json` holds.

use super::*;

/// The narrative's file in a generation.
pub(crate) const NARRATIVE_FILE: &str = "narrative.jsonl";

/// Events kept in memory once they are saved (up to half as many again: they are forgotten in
/// bunches).
pub(crate) const NARRATIVE_IN_MEMORY: usize = 2_000;

/// The most of the narrative's file a start reads back (its last events).
pub(crate) const NARRATIVE_TAIL_BYTES: u64 = 8 << 20;

/// The narrative as a file, one event per line in JSON, appended to by every save: the snapshot
/// holds only how long it is, so a save costs the same however much the lab has told. The lab
/// keeps the last [`NARRATIVE_IN_MEMORY`] events in memory (the page shows the last few hundred).
pub(crate) struct NarrativeLog {
    pub(crate) file: Arc<std::fs::File>,
    /// Events and bytes the file holds.
    pub(crate) events: usize,
    pub(crate) bytes: u64,
}

impl NarrativeLog {
    pub(crate) fn open(dir: &Path, truncate: bool) -> std::io::Result<Self> {
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
    pub(crate) fn catch_up(
        &mut self,
        narrative: &offsetlab_engine::narrative::Narrative,
    ) -> Result<u64, LabError> {
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
    pub(crate) fn read_tail(
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

/// The generation's history as a file the session appends to: a save writes the lines added
/// since the last one, not the whole history — with a million records produced through the
/// Kafka listener, rewriting it after every request would make each save cost the whole past.
pub(crate) const HISTORY_FILE: &str = "history.scenario";

/// The lab's snapshot: slots `lab.json.0` and `lab.json.1` ([`SlotFile`]).
pub(crate) const LAB_FILE: &str = "lab.json";

pub(crate) const HISTORY_HEADER: &str = "# exported from the offsetlab web lab\n";

pub(crate) struct HistoryLog {
    pub(crate) file: Arc<std::fs::File>,
    /// The text of the lines being appended, kept between saves: an import's or a burst's lines
    /// can be large, and a fresh buffer each time is fresh pages.
    pub(crate) text: String,
    /// How many of the session's history commands the file holds, and its length in bytes.
    pub(crate) commands: usize,
    pub(crate) bytes: u64,
}

impl HistoryLog {
    /// Appends the commands of `history` the file lacks; the file's length afterwards.
    pub(crate) fn catch_up(&mut self, history: &History) -> Result<u64, LabError> {
        let whole;
        let new = if self.commands > history.len() {
            // The history was cut (it never is without a new generation): rewrite it whole.
            whole = history.all()?;
            self.file.set_len(0).map_err(io_error)?;
            self.commands = 0;
            self.bytes = 0;
            &whole[..]
        } else {
            history
                .since(self.commands)
                .ok_or_else(|| storage("the history's unsaved lines are gone from memory"))?
        };
        let text = &mut self.text;
        text.clear();
        if self.bytes == 0 {
            text.push_str(HISTORY_HEADER);
        }
        for c in new {
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

/// What `lab.json` holds: the lab's snapshot, the length of the history file it goes with, and
/// the journal that brings it forward. The history is appended before the journal's entry, so
/// the file may run past the last entry's `history_bytes` after a crash: the excess belongs to
/// an unacknowledged change and is cut.
#[derive(Serialize, serde::Deserialize)]
pub(crate) struct LabFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) history_bytes: Option<u64>,
    /// The length of `narrative.jsonl` it goes with (older labs kept the narrative in the
    /// snapshot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) narrative_bytes: Option<u64>,
    /// Older labs kept the whole history here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) history: Option<String>,
    pub(crate) snapshot: offsetlab_engine::lab::LabSnapshot,
    /// The journal that follows this snapshot ([`journal`]); labs saved before journals have
    /// none (every save rewrote the snapshot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) journal: Option<u64>,
}

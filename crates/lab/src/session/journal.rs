//! The lab's journal: after each change, only what the change touched is appended
//! (`lab.journal.NNNNNN`); the whole lab is written as a snapshot (`lab.json`'s slots) now and
//! then, in the background, and the journal it covers is then deleted.
//!
//! Why: a save used to rewrite the whole snapshot, so one Produce on a lab with a thousand
//! groups cost the thousand groups (66 times a fresh lab's). An entry is the topics, groups,
//! consumers and transactional producers the change touched ([`Lab::changes`]) and the lab's few
//! small fields, each whole — so an entry never depends on an earlier one having been applied
//! twice or not at all, and applying them in order to the snapshot they follow gives the lab
//! the last of them saved ([`LabSnapshot::apply`]).
//!
//! On disk, an entry is a frame: its length (u32, little-endian), its CRC-32C, its JSON. The
//! snapshot names the journal that follows it; a start reads the snapshot, then that journal and
//! every later one, in order. A frame cut short at the very end of the last journal is a save
//! a crash interrupted — never acknowledged — and is cut off; a damaged frame anywhere else stops
//! the start with the file and the byte (nothing is replaced to recover).
//!
//! A snapshot is due once the journal has grown past the last snapshot's size (and at least
//! [`MIN_JOURNAL_BYTES`]): the work of one is then spread over at least as many bytes of
//! changes as it writes, so what a change costs stays proportional to the change. Taking one:
//! under the session's lock, the lab's state is copied and a new journal is begun (the old one
//! synced first); a thread then writes the slot and deletes the old journal. A crash anywhere in
//! between leaves the older slot, which names the older journal, which is still there.

use super::*;
use offsetlab_engine::lab::{LabChanges, LabSnapshot};
use offsetlab_storage::lock;
use std::os::unix::fs::FileExt;

/// A generation's journals: `lab.journal.000001`, `lab.journal.000002`, …
pub(crate) const JOURNAL_FILE: &str = "lab.journal";

/// The least a journal grows before a snapshot is taken (however small the lab).
pub(crate) const MIN_JOURNAL_BYTES: u64 = 1 << 20;

/// For a whole process, a snapshot after this many bytes of journal whatever the snapshot's
/// size: the kill -9 test sets it low, so that kills land while snapshots are written and
/// journals deleted.
pub(crate) const SNAPSHOT_AFTER_ENV: &str = "OFFSETLAB_JOURNAL_SNAPSHOT_BYTES";

fn forced_snapshot_after() -> Option<u64> {
    static FORCED: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *FORCED.get_or_init(|| {
        std::env::var(SNAPSHOT_AFTER_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
    })
}

/// A frame's header: the JSON's length and its CRC-32C.
const FRAME_HEADER: usize = 8;

pub(crate) fn journal_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{JOURNAL_FILE}.{number:06}"))
}

/// One save: what changed, and how far the history and narrative files went with it.
#[derive(Serialize, serde::Deserialize)]
pub(crate) struct Entry {
    pub(crate) history_bytes: u64,
    pub(crate) narrative_bytes: u64,
    pub(crate) changes: LabChanges,
}

/// `entry` as a frame.
pub(crate) fn frame(entry: &Entry) -> Result<Vec<u8>, LabError> {
    let mut out = vec![0u8; FRAME_HEADER];
    serde_json::to_writer(&mut out, entry).map_err(storage)?;
    let json = &out[FRAME_HEADER..];
    let len = u32::try_from(json.len())
        .map_err(|_| storage(format!("a journal entry of {} bytes (at most 4 GiB)", json.len())))?;
    let crc = crc32c::crc32c(json);
    out[..4].copy_from_slice(&len.to_le_bytes());
    out[4..FRAME_HEADER].copy_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// A journal file as read back: its entries, and the length of its whole frames.
pub(crate) struct ReadBack {
    pub(crate) entries: Vec<Entry>,
    pub(crate) whole: u64,
    /// Bytes past the whole frames: a frame a crash cut short (or zeros a machine crash left).
    pub(crate) torn: u64,
}

/// Reads a journal file's frames. A frame is torn — the save a crash interrupted — only at the
/// end of the file: cut short, or damaged with nothing but zeros after it. Anything else
/// damaged is an error naming the byte.
pub(crate) fn read(bytes: &[u8]) -> Result<ReadBack, String> {
    let mut entries = Vec::new();
    let mut at = 0usize;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let header = rest.get(..FRAME_HEADER).and_then(|h| {
            let len = u32::from_le_bytes(h[..4].try_into().ok()?) as usize;
            let crc = u32::from_le_bytes(h[4..].try_into().ok()?);
            Some((len, crc))
        });
        let Some((len, crc)) = header else {
            break;
        };
        let Some(json) = rest.get(FRAME_HEADER..FRAME_HEADER + len) else {
            // Runs past the end: a frame cut short — unless a whole frame follows, and then its
            // length was damaged.
            if let Some(p) = whole_frame_within(&rest[1..]) {
                return Err(format!(
                    "a damaged entry at byte {at} (its length runs past the end, and a whole entry follows at byte {})",
                    at + 1 + p
                ));
            }
            break;
        };
        if len == 0 || crc32c::crc32c(json) != crc {
            let after = &rest[FRAME_HEADER + len..];
            if after.iter().all(|&b| b == 0) {
                break;
            }
            return Err(format!(
                "a damaged entry at byte {at}, with {} byte(s) after it",
                after.len()
            ));
        }
        let entry: Entry =
            serde_json::from_slice(json).map_err(|e| format!("at byte {at}: not a journal entry ({e})"))?;
        entries.push(entry);
        at += FRAME_HEADER + len;
    }
    Ok(ReadBack {
        entries,
        whole: at as u64,
        torn: (bytes.len() - at) as u64,
    })
}

/// The first position in `bytes` where a whole frame starts (its length fits and its CRC-32C
/// matches), if any: what tells a damaged length from a frame a crash cut short.
fn whole_frame_within(bytes: &[u8]) -> Option<usize> {
    (0..bytes.len().saturating_sub(FRAME_HEADER)).find(|&p| {
        let len = u32::from_le_bytes([bytes[p], bytes[p + 1], bytes[p + 2], bytes[p + 3]]) as usize;
        let crc = u32::from_le_bytes([bytes[p + 4], bytes[p + 5], bytes[p + 6], bytes[p + 7]]);
        len > 0
            && bytes
                .get(p + FRAME_HEADER..p + FRAME_HEADER + len)
                .is_some_and(|json| crc32c::crc32c(json) == crc)
    })
}

/// Where the files of a lab end: its last journal, and a torn tail if one was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct JournalEnd {
    pub(crate) number: u64,
    /// The journal that ends in a torn frame, and the length of its whole frames.
    pub(crate) torn: Option<(u64, u64)>,
}

/// `file`, the newest snapshot, brought forward by the journal it names and every later one:
/// the lab as its last save left it. `None` for a lab saved before journals. A torn frame may
/// end only the last journal with entries: empty journals may follow it (one begun, or made by
/// a start, before a crash), a journal with entries may not.
pub(crate) fn bring_forward(dir: &Path, file: &mut LabFile) -> Result<Option<JournalEnd>, RestoreError> {
    let Some(first) = file.journal else {
        return Ok(None);
    };
    let mut end: Option<JournalEnd> = None;
    let mut number = first;
    loop {
        let path = journal_path(dir, number);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            // The snapshot's own journal is always there (made before the snapshot is written).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && number > first => break,
            Err(e) => return Err(RestoreError::new(&path, e)),
        };
        let torn_before = end.and_then(|e| e.torn);
        if let Some((n, whole)) = torn_before.filter(|_| !bytes.is_empty()) {
            return Err(RestoreError::new(
                &journal_path(dir, n),
                format!("its frames end at byte {whole} in damaged bytes, and a later journal with entries follows it"),
            ));
        }
        let read = read(&bytes).map_err(|e| RestoreError::new(&path, e))?;
        for entry in read.entries {
            file.history_bytes = Some(entry.history_bytes);
            file.narrative_bytes = Some(entry.narrative_bytes);
            file.snapshot
                .apply(entry.changes)
                .map_err(|e| RestoreError::new(&path, e))?;
        }
        end = Some(JournalEnd {
            number,
            torn: if read.torn > 0 {
                Some((number, read.whole))
            } else {
                torn_before
            },
        });
        number += 1;
    }
    Ok(end)
}

/// The journal a generation appends to.
pub(crate) struct Journal {
    dir: PathBuf,
    pub(crate) number: u64,
    file: std::fs::File,
    /// The length of its whole frames.
    pub(crate) bytes: u64,
    /// `--flush always`: frames written once the logs' appends they cover are synced
    /// ([`PendingSave::complete`]), with the session's version each.
    queued: Vec<(u64, Vec<u8>)>,
    /// The size of the snapshot the journal follows: when the journal outgrows it, the next is due.
    pub(crate) snapshot_bytes: u64,
    /// A snapshot after this many bytes, whatever the snapshot's size ([`SNAPSHOT_AFTER_ENV`]).
    pub(crate) snapshot_after: Option<u64>,
    /// The snapshot being written in the background: its size once written.
    snapshotting: Option<std::thread::JoinHandle<Result<u64, String>>>,
}

impl Journal {
    /// A new, empty journal `number` in `dir` (one of that number is emptied).
    pub(crate) fn create(dir: &Path, number: u64, snapshot_bytes: u64) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(journal_path(dir, number))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            number,
            file,
            bytes: 0,
            queued: Vec::new(),
            snapshot_bytes,
            snapshot_after: forced_snapshot_after(),
            snapshotting: None,
        })
    }

    /// Appends a frame now. A write that fails takes back what it wrote of the frame.
    pub(crate) fn append(&mut self, frame: &[u8]) -> std::io::Result<()> {
        if let Err(e) = self.file.write_all_at(frame, self.bytes) {
            let _ = self.file.set_len(self.bytes);
            return Err(e);
        }
        self.bytes += frame.len() as u64;
        Ok(())
    }

    /// Keeps a frame until [`Journal::write_queued`] (`--flush always`).
    pub(crate) fn enqueue(&mut self, version: u64, frame: Vec<u8>) {
        self.queued.push((version, frame));
    }

    /// Writes the queued frames of versions up to `upto` (all of them: `None`), in order.
    pub(crate) fn write_queued(&mut self, upto: Option<u64>) -> std::io::Result<()> {
        let n = self
            .queued
            .iter()
            .take_while(|(v, _)| upto.is_none_or(|u| *v <= u))
            .count();
        let frames: Vec<(u64, Vec<u8>)> = self.queued.drain(..n).collect();
        for (i, (_, f)) in frames.iter().enumerate() {
            if let Err(e) = self.append(f) {
                // What was not written stays queued, in order.
                self.queued.splice(0..0, frames.into_iter().skip(i));
                return Err(e);
            }
        }
        Ok(())
    }

    pub(crate) fn has_queued(&self) -> bool {
        !self.queued.is_empty()
    }

    /// Where the journal ends once the queued frames are written: a save's position.
    pub(crate) fn end(&self) -> u64 {
        self.bytes + self.queued.iter().map(|(_, f)| f.len() as u64).sum::<u64>()
    }

    pub(crate) fn sync(&self) -> std::io::Result<()> {
        self.file.sync_data()
    }

    /// Cuts the journal back to `bytes` (a save that failed half-way may have written part of a
    /// frame). Queued frames stay: their saves came before.
    pub(crate) fn cut(&mut self, bytes: u64) -> std::io::Result<()> {
        self.file.set_len(bytes)?;
        self.bytes = bytes;
        Ok(())
    }

    /// Whether a snapshot is due and none is being written.
    fn due(&self) -> bool {
        let threshold = self
            .snapshot_after
            .unwrap_or_else(|| self.snapshot_bytes.max(MIN_JOURNAL_BYTES));
        self.bytes > threshold && self.snapshotting.as_ref().is_none_or(|h| h.is_finished())
    }

    /// Waits for the snapshot being written, if any. A failed one is only a warning: the older
    /// snapshot and the journals after it still hold everything.
    pub(crate) fn finish_snapshot(&mut self) {
        let Some(h) = self.snapshotting.take() else {
            return;
        };
        match h.join() {
            Ok(Ok(bytes)) => self.snapshot_bytes = bytes,
            Ok(Err(e)) => tracing::warn!(
                "a snapshot of the lab could not be written ({e}); the journal keeps growing until one is"
            ),
            Err(_) => tracing::warn!("the thread writing a snapshot of the lab panicked"),
        }
    }

    /// Begins journal `number + 1`, the old one synced first (its frames on disk before any of
    /// the new one's) and the directory after (the new file's name).
    fn rotate(&mut self) -> std::io::Result<u64> {
        self.sync()?;
        let next = Self::create(&self.dir, self.number + 1, self.snapshot_bytes)?;
        if let Err(e) = std::fs::File::open(&self.dir).and_then(|d| d.sync_all()) {
            // Appends go on in this journal: the one begun must not follow it.
            let _ = std::fs::remove_file(journal_path(&self.dir, self.number + 1));
            return Err(e);
        }
        let old = self.number;
        let (snapshotting, snapshot_after) = (self.snapshotting.take(), self.snapshot_after);
        *self = Self {
            snapshotting,
            snapshot_after,
            ..next
        };
        Ok(old)
    }
}

impl Session {
    /// A snapshot, if the journal has grown past the last one: the lab's state copied now, a
    /// new journal begun, the slot written and the old journal deleted by a thread. Nothing here
    /// fails a save — the journal holds everything without it.
    pub(crate) fn snapshot_if_due(&self, g: &Generation, history_bytes: u64, narrative_bytes: u64) {
        let mut journal = lock(&g.journal);
        if !journal.due() {
            return;
        }
        journal.finish_snapshot();
        let begun = (|| {
            if journal.has_queued() {
                // `--flush always`: the queued saves' appends and history lines synced, then
                // their frames written — the old journal is whole before the next begins.
                g.durability.sync_all()?;
                lock(&g.history).file.sync_data()?;
                journal.write_queued(None)?;
            }
            journal.rotate()
        })();
        let old = match begun {
            Ok(old) => old,
            Err(e) => {
                tracing::warn!("a snapshot of the lab could not be begun: {e}");
                return;
            }
        };
        let mut snapshot = self.lab.snapshot_without_narrative();
        snapshot.set_narrative(offsetlab_engine::narrative::Narrative::from_events(
            self.lab.narrative().len(),
            Vec::new(),
        ));
        let file = LabFile {
            history_bytes: Some(history_bytes),
            narrative_bytes: Some(narrative_bytes),
            history: None,
            snapshot,
            journal: Some(journal.number),
        };
        let slots = Arc::clone(&g.lab_file);
        let (version, dir) = (self.version, g.dir.clone());
        let writer = std::thread::Builder::new()
            .name("lab-snapshot".into())
            .spawn(move || {
                let bytes = serde_json::to_vec(&file).map_err(|e| e.to_string())?;
                // Synced whatever the flush policy: the old journal is deleted next, and a slot
                // lost to a machine crash would name a journal that is gone.
                if !write_slots(&slots, version, &bytes, true).map_err(|e| e.to_string())? {
                    return Err("a newer snapshot was written first; the old journal stays".into());
                }
                match std::fs::remove_file(journal_path(&dir, old)) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.to_string()),
                    _ => {}
                }
                Ok(bytes.len() as u64)
            });
        match writer {
            Ok(h) => journal.snapshotting = Some(h),
            Err(e) => tracing::warn!("a snapshot of the lab could not be begun: {e}"),
        }
    }
}

/// Deletes the journals numbered below `number` (a snapshot naming `number` holds them).
pub(crate) fn remove_journals_before(dir: &Path, number: u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let name = e.file_name();
        let n = name
            .to_str()
            .and_then(|n| n.strip_prefix(JOURNAL_FILE))
            .and_then(|n| n.strip_prefix('.'))
            .and_then(|n| n.parse::<u64>().ok());
        if n.is_some_and(|n| n < number) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// The lab's files as the newest snapshot and its journals leave them; for going back to the
/// last save.
pub(crate) fn read_saved(dir: &Path) -> Result<LabSnapshot, LabError> {
    let (mut file, _) = read_snapshot(dir).map_err(|e| storage(e.to_string()))?;
    bring_forward(dir, &mut file).map_err(|e| storage(e.to_string()))?;
    Ok(file.snapshot)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(history_bytes: u64) -> Entry {
        Entry {
            history_bytes,
            narrative_bytes: 7,
            changes: Lab::default().changes(),
        }
    }

    #[test]
    fn frames_read_back_and_a_torn_last_one_is_cut_but_damage_before_the_end_is_an_error() {
        let mut bytes = Vec::new();
        for n in 0..3 {
            bytes.extend(frame(&entry(n)).expect("frame"));
        }
        let read_all = read(&bytes).expect("read");
        assert_eq!(read_all.entries.len(), 3);
        assert_eq!(
            read_all
                .entries
                .iter()
                .map(|e| e.history_bytes)
                .collect::<Vec<_>>(),
            [0, 1, 2]
        );
        assert_eq!((read_all.whole, read_all.torn), (bytes.len() as u64, 0));

        let whole_two = frame(&entry(0)).expect("f").len() * 2;
        // Cut short anywhere in the third frame: two entries, the rest torn.
        for cut in [whole_two + 1, whole_two + FRAME_HEADER, bytes.len() - 1] {
            let r = read(&bytes[..cut]).expect("torn tail");
            assert_eq!(
                (r.entries.len(), r.whole, r.torn),
                (2, whole_two as u64, (cut - whole_two) as u64)
            );
        }
        // Zeros after the last frame (a machine crash's extended file).
        let mut zeros = bytes.clone();
        zeros.extend([0u8; 100]);
        let r = read(&zeros).expect("zeros");
        assert_eq!((r.entries.len(), r.torn), (3, 100));
        // A flipped byte in the last frame: torn; in the first, with frames after it: an error.
        let mut last = bytes.clone();
        let n = last.len();
        last[n - 2] ^= 1;
        assert_eq!(read(&last).expect("last").entries.len(), 2);
        let mut first = bytes.clone();
        first[FRAME_HEADER + 3] ^= 1;
        let e = read(&first).err().expect("damage before the end");
        assert!(e.contains("a damaged entry at byte 0"), "{e}");
        // A damaged length that runs past the end, with whole frames after it: not a torn tail.
        let mut length = bytes.clone();
        length[3] = 0x7f;
        let e = read(&length).err().expect("a damaged length");
        assert!(
            e.contains("a damaged entry at byte 0") && e.contains("a whole entry follows"),
            "{e}"
        );
    }
}

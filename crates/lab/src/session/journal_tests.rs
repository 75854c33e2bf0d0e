//! The journal: a save appends what changed and leaves the snapshot alone; snapshots are taken
//! in the background and the journals before them deleted; a start brings the snapshot forward,
//! cuts a torn last entry and refuses a damaged one before the end.

use super::tests::{durable, lines};
use super::*;

/// A lab of fifty groups, each with a commit on `orders`: a snapshot far larger than a change.
fn fifty_groups(dir: &Path) -> Session {
    let mut seed = String::from("topic orders partitions=2\nproduce orders count=20\n");
    for g in 0..50 {
        seed.push_str(&format!("alter-offsets g{g} offsets=orders:0={g}\n"));
    }
    Session::new(durable(dir), &seed).expect("lab")
}

/// The lab's state as JSON, without the narrative (a restart adds an event to it).
fn state(s: &Session) -> serde_json::Value {
    let mut v = serde_json::to_value(s.lab().snapshot_without_narrative()).expect("json");
    v.as_object_mut().expect("object").remove("narrative");
    v
}

fn slots(s: &Session) -> Vec<Vec<u8>> {
    let dir = s.generation_dir().expect("durable");
    (0..2)
        .map(|n| std::fs::read(dir.join(format!("{LAB_FILE}.{n}"))).unwrap_or_default())
        .collect()
}

fn journal_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(JOURNAL_FILE))
        .collect();
    names.sort();
    names
}

fn journal_len(s: &Session) -> u64 {
    let g = s.generation.as_ref().expect("durable");
    offsetlab_storage::lock(&g.journal).bytes
}

#[test]
fn a_save_appends_what_changed_and_leaves_the_snapshot_alone() {
    let dir = tempfile::tempdir().expect("dir");
    let mut s = fifty_groups(dir.path());
    let snapshot = slots(&s);
    let snapshot_bytes = snapshot.iter().map(Vec::len).max().unwrap_or(0);
    let before = journal_len(&s);
    s.apply_lines(&lines(&["produce orders count=1"]))
        .expect("produce");
    s.save().expect("saved");
    let entry = journal_len(&s) - before;
    assert_eq!(slots(&s), snapshot, "the snapshot is not rewritten by a save");
    assert!(
        entry * 10 < snapshot_bytes as u64,
        "one produce's entry ({entry} bytes) is a fraction of the lab ({snapshot_bytes} bytes)"
    );
    s.apply_lines(&lines(&["alter-offsets g7 offsets=orders:1=3"]))
        .expect("commit");
    s.save().expect("saved");
    let expected = state(&s);
    drop(s);
    let (s, _) = Session::restore(dir.path(), FlushPolicy::Never)
        .expect("restores")
        .expect("a lab");
    assert_eq!(
        state(&s),
        expected,
        "the snapshot and its journal give the lab back"
    );
    let tp = offsetlab_engine::record::TopicPartition::new("orders", 1);
    let committed = s
        .lab()
        .offsets()
        .fetch(&offsetlab_engine::offsets::OffsetKey::new("g7", &tp));
    assert_eq!(committed.map(|c| c.offset), Some(3));
}

#[test]
fn snapshots_are_taken_in_the_background_and_the_journals_before_them_deleted() {
    let dir = tempfile::tempdir().expect("dir");
    let mut s = fifty_groups(dir.path());
    let gen_dir = s.generation_dir().expect("durable").to_path_buf();
    {
        let g = s.generation.as_ref().expect("durable");
        offsetlab_storage::lock(&g.journal).snapshot_after = Some(1);
    }
    let first = slots(&s);
    for i in 0..30 {
        s.apply_lines(&lines(&[&format!("produce orders count=1 key=k{i}")]))
            .expect("produce");
        s.save().expect("saved");
    }
    let number = {
        let g = s.generation.as_ref().expect("durable");
        let mut journal = offsetlab_storage::lock(&g.journal);
        journal.finish_snapshot();
        journal.number
    };
    assert!(number > 1, "snapshots were taken: journal {number}");
    assert_ne!(slots(&s), first, "a slot was rewritten");
    assert_eq!(
        journal_files(&gen_dir),
        [format!("{JOURNAL_FILE}.{number:06}")],
        "only the journal after the last snapshot is left"
    );
    let expected = state(&s);
    drop(s);
    let (s, _) = Session::restore(dir.path(), FlushPolicy::Never)
        .expect("restores")
        .expect("a lab");
    assert_eq!(state(&s), expected);
    assert_eq!(
        s.lab()
            .partition_log(&offsetlab_engine::record::TopicPartition::new("orders", 0))
            .map(|l| l.log_end_offset())
            .unwrap_or_default()
            + s.lab()
                .partition_log(&offsetlab_engine::record::TopicPartition::new("orders", 1))
                .map(|l| l.log_end_offset())
                .unwrap_or_default(),
        50
    );
}

/// A lab saved three times after its start: its journal's path, and the lab's state.
fn three_entries(dir: &Path) -> (PathBuf, serde_json::Value) {
    let mut s = fifty_groups(dir);
    for i in 0..3 {
        s.apply_lines(&lines(&[&format!("alter-offsets g1 offsets=orders:1={i}")]))
            .expect("commit");
        s.save().expect("saved");
    }
    let g = s.generation.as_ref().expect("durable");
    let path = journal_path(&g.dir, offsetlab_storage::lock(&g.journal).number);
    (path, state(&s))
}

/// Where each frame of a journal starts.
fn frame_starts(bytes: &[u8]) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut at = 0usize;
    while at + 8 <= bytes.len() {
        starts.push(at);
        let len = u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
        at += 8 + len as usize;
    }
    starts
}

#[test]
fn a_torn_last_entry_is_cut_and_a_damaged_one_before_the_end_stops_the_start() {
    let dir = tempfile::tempdir().expect("dir");
    let (journal, after_three) = three_entries(dir.path());
    let bytes = std::fs::read(&journal).expect("journal");
    let starts = frame_starts(&bytes);
    assert_eq!(starts.len(), 3);
    assert_eq!(read(&bytes).expect("whole").entries.len(), 3);

    // A crash in the middle of writing a fourth entry: the first half of a copy of the third.
    let third = starts[2];
    let mut torn = bytes.clone();
    torn.extend_from_slice(&bytes[third..third + (bytes.len() - third) / 2]);
    std::fs::write(&journal, &torn).expect("torn");
    let (s, _) = Session::restore(dir.path(), FlushPolicy::Never)
        .expect("restores")
        .expect("a lab");
    assert_eq!(
        state(&s),
        after_three,
        "the torn entry was never acknowledged: cut"
    );
    // The restart's snapshot holds it all: the journal read is gone, the next one is empty.
    assert!(!journal.exists());
    let g = s.generation.as_ref().expect("durable");
    let next = offsetlab_storage::lock(&g.journal).number;
    assert_eq!(journal, journal_path(&g.dir, next - 1));
    assert_eq!(
        std::fs::metadata(journal_path(&g.dir, next))
            .map(|m| m.len())
            .ok(),
        Some(0)
    );
    drop(s);

    // A flipped byte in the first entry of a journal with entries after it: the start stops,
    // names the file and the byte, and changes nothing.
    let dir = tempfile::tempdir().expect("dir");
    let (journal, _) = three_entries(dir.path());
    let mut damaged = std::fs::read(&journal).expect("journal");
    damaged[20] ^= 0x40;
    std::fs::write(&journal, &damaged).expect("damaged");
    let listing = |d: &Path| {
        let mut all = Vec::new();
        for e in walk(d) {
            all.push((e.clone(), std::fs::read(&e).unwrap_or_default()));
        }
        all
    };
    let files_before = listing(dir.path());
    let e = Session::restore(dir.path(), FlushPolicy::Never)
        .err()
        .expect("refused");
    let message = e.to_string();
    assert!(
        message.contains(&journal.display().to_string()) && message.contains("a damaged entry at byte 0"),
        "{message}"
    );
    assert_eq!(listing(dir.path()), files_before, "nothing was changed");
}

fn walk(d: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).expect("dir").filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// `--flush always`: a save's entry waits in a queue until its fsync, and the save's position
/// counts it. A failed batch after an acknowledged save goes back to that save — its entry
/// included — not to the journal as it was before the entry was written.
#[test]
fn under_flush_always_going_back_keeps_the_acknowledged_save_before_the_failed_batch() {
    let dir = tempfile::tempdir().expect("dir");
    let backend = SinkBackend::Durable {
        root: dir.path().to_path_buf(),
        flush: FlushPolicy::Always,
    };
    let mut s = Session::new(backend, "topic t\nproduce t count=3\n").expect("lab");
    let end = |s: &Session| {
        s.lab()
            .partition_log(&offsetlab_engine::record::TopicPartition::new("t", 0))
            .map(|l| l.log_end_offset())
            .ok()
    };
    // Two saves, each acknowledged (their entries written after their fsync).
    for _ in 0..2 {
        s.apply_lines(&lines(&["produce t count=2"])).expect("produce");
        let pending = s.save().expect("saved").expect("a save that waits for its fsync");
        pending.complete().expect("acknowledged");
    }
    s.apply_lines(&lines(&["produce t count=1", "poll ghost"]))
        .expect_err("ghost");
    assert_eq!(end(&s), Some(7), "both acknowledged saves' records stay");
    // A third save whose entry is still queued (its request not answered yet), then a failure.
    s.apply_lines(&lines(&["produce t count=2"])).expect("produce");
    let _pending = s.save().expect("saved").expect("a save that waits for its fsync");
    s.apply_lines(&lines(&["produce t count=1", "poll ghost"]))
        .expect_err("ghost");
    assert_eq!(end(&s), Some(9), "the queued save is the save gone back to");
    let expected = state(&s);
    drop(s);
    let (s, _) = Session::restore(dir.path(), FlushPolicy::Always)
        .expect("restores")
        .expect("a lab");
    assert_eq!(end(&s), Some(9));
    assert_eq!(state(&s), expected);
}

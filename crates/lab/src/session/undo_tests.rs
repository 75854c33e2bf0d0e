//! Undoing a failed batch: going back to the save just before it — over the lab's open logs —
//! when the save can undo it, replaying the history (read back from its file) when it cannot.

use super::tests::{durable, lines, session, state_json};
use super::*;

/// In memory: the lines before the failing one are undone, the version stays.
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

/// A failed batch on a durable lab saved just before it goes back to that save — no replay of
/// the history, so no new generation — unless it did what a save cannot undo: wrote to a sink
/// (the save knows nothing of its rows), or let retention delete a segment (the file is gone).
/// Then the history is replayed. Either way nothing of the batch is left.
#[test]
fn a_failed_batch_goes_back_to_the_save_before_it_unless_a_save_cannot_undo_it() {
    let dir = tempfile::tempdir().expect("dir");
    let mut s = Session::new(
        durable(dir.path()),
        "topic t segment.records=2 retention.ms=1h\nconsumer c1 group=g topic=t reset=earliest commit=manual-batch\nproduce t count=3\n",
    )
    .expect("lab");
    assert!(s.save().expect("saved").is_none());
    let (generation, version, before) = (
        s.generation_dir().map(Path::to_path_buf),
        s.version(),
        state_json(&s),
    );
    let end = |s: &Session| {
        s.lab()
            .partition_log(&offsetlab_engine::record::TopicPartition::new("t", 0))
            .expect("t-0")
            .log_end_offset()
    };

    let err = s
        .apply_lines(&lines(&["produce t count=2", "tick 1s", "poll ghost"]))
        .expect_err("ghost");
    assert_eq!(err.line, 3);
    assert_eq!(state_json(&s), before, "nothing of the batch is left");
    assert_eq!((end(&s), s.version()), (3, version));
    assert_eq!(
        s.generation_dir().map(Path::to_path_buf),
        generation,
        "went back to the save: no replay"
    );

    // Records processed into the sink: the save cannot take them back, the replay does.
    let figures_before = {
        let mut v = serde_json::to_value(s.lab().view().expect("view")).expect("json");
        v.as_object_mut().map(|o| o.remove("storage"));
        v
    };
    let err = s
        .apply_lines(&lines(&["poll c1", "process c1 count=all", "poll ghost"]))
        .expect_err("ghost");
    assert_eq!(err.line, 3);
    // The same lab, in another generation's directory.
    let figures = |s: &Session| {
        let mut v = serde_json::to_value(s.lab().view().expect("view")).expect("json");
        v.as_object_mut().map(|o| o.remove("storage"));
        v
    };
    assert_eq!(figures(&s), figures_before, "nothing of the batch is left");
    assert_eq!(s.lab().group_view("g").expect("g").sink.rows, 0);
    assert_ne!(
        s.generation_dir().map(Path::to_path_buf),
        generation,
        "replayed into a new generation"
    );

    // Retention deleting a segment in the batch: the files are gone, so the replay undoes it.
    let generation = s.generation_dir().map(Path::to_path_buf);
    let figures_before = figures(&s);
    let err = s
        .apply_lines(&lines(&["tick 2h", "poll ghost"]))
        .expect_err("ghost");
    assert_eq!(err.line, 2);
    assert_eq!(
        s.lab()
            .partition_log(&offsetlab_engine::record::TopicPartition::new("t", 0))
            .expect("t-0")
            .log_start_offset(),
        0,
        "the segment retention deleted is back"
    );
    assert_eq!(figures(&s), figures_before, "nothing of the batch is left");
    assert_ne!(
        s.generation_dir().map(Path::to_path_buf),
        generation,
        "replayed into a new generation"
    );

    // What is left is what a restart finds, and it goes on from there.
    s.apply_lines(&lines(&["produce t count=1"])).expect("produce");
    assert!(s.save().expect("saved").is_none());
    let after = figures(&s);
    drop(s);
    let (restored, _) = Session::restore(dir.path(), FlushPolicy::Never)
        .expect("restores")
        .expect("a lab");
    assert_eq!(figures(&restored), after);
    assert_eq!(end(&restored), 4);
}

/// Two batches a save cannot take back although they write no sink: one whose first line
/// destroys records (saved before it, so the save is no longer from before the batch), and one
/// that deletes a topic and creates another of the same name. Both are replayed: the lab is as
/// it was.
#[test]
fn a_failed_batch_that_destroyed_records_or_replaced_a_topic_is_replayed() {
    let dir = tempfile::tempdir().expect("dir");
    let mut s = Session::new(durable(dir.path()), "topic t\nproduce t count=3\n").expect("lab");
    assert!(s.save().expect("saved").is_none());
    let log = |s: &Session| {
        let log = s
            .lab()
            .partition_log(&offsetlab_engine::record::TopicPartition::new("t", 0))
            .expect("t-0");
        (log.log_start_offset(), log.log_end_offset(), log.record_count())
    };
    assert_eq!(log(&s), (0, 3, 3));

    s.apply_lines(&lines(&["delete-records t before=2", "poll ghost"]))
        .expect_err("ghost");
    assert_eq!(log(&s), (0, 3, 3), "the deleted records are back");

    s.apply_lines(&lines(&[
        "delete-topic t",
        "topic t",
        "produce t count=1",
        "poll ghost",
    ]))
    .expect_err("ghost");
    assert_eq!(log(&s), (0, 3, 3), "the first topic t, its records");
    drop(s);
    let (restored, _) = Session::restore(dir.path(), FlushPolicy::Never)
        .expect("restores")
        .expect("a lab");
    assert_eq!(log(&restored), (0, 3, 3));
}

/// A failed batch undone over the lab's open logs (no reopening, no scan): what the batch
/// appended is cut from the files, a topic it created is gone for good — made again, it is
/// empty — and a restart finds the lab the session holds.
#[test]
fn a_failed_batch_undone_over_the_open_logs_leaves_nothing_in_the_files() {
    let dir = tempfile::tempdir().expect("dir");
    let mut s = Session::new(
        durable(dir.path()),
        "topic t segment.records=2\nproduce t count=3\n",
    )
    .expect("lab");
    assert!(s.save().expect("saved").is_none());
    let before = state_json(&s);
    let end = |s: &Session, topic: &str| {
        s.lab()
            .partition_log(&offsetlab_engine::record::TopicPartition::new(topic, 0))
            .ok()
            .map(|l| (l.log_start_offset(), l.log_end_offset(), l.record_count()))
    };
    s.apply_lines(&lines(&[
        "produce t count=5",
        "topic t2",
        "produce t2 count=4",
        "poll ghost",
    ]))
    .expect_err("ghost");
    assert_eq!(state_json(&s), before, "nothing of the batch is left");
    assert_eq!(end(&s, "t"), Some((0, 3, 3)));
    assert!(end(&s, "t2").is_none());

    s.apply_lines(&lines(&["topic t2", "produce t count=1"]))
        .expect("t2 again");
    assert!(s.save().expect("saved").is_none());
    assert_eq!(
        end(&s, "t2"),
        Some((0, 0, 0)),
        "the new t2 holds nothing of the old"
    );
    assert_eq!(end(&s, "t"), Some((0, 4, 4)));
    let expected = state_json(&s);
    drop(s);
    let (restored, _) = Session::restore(dir.path(), FlushPolicy::Never)
        .expect("restores")
        .expect("a lab");
    assert_eq!(end(&restored, "t"), Some((0, 4, 4)));
    assert_eq!(end(&restored, "t2"), Some((0, 0, 0)));
    let mut a = expected;
    let mut b = state_json(&restored);
    for v in [&mut a, &mut b] {
        v.as_object_mut().map(|o| o.remove("narrative"));
    }
    assert_eq!(a, b, "a restart finds the lab the session held");
}

/// A durable lab keeps in memory only the history lines its last save has not written; the
/// others are read back from its file when the whole history is needed — an export, an undo
/// that replays, a restart.
#[test]
fn a_durable_lab_lets_saved_history_lines_go_and_reads_them_back() {
    let dir = tempfile::tempdir().expect("dir");
    let mut s = Session::new(
        durable(dir.path()),
        "topic t\nconsumer c1 group=g topic=t reset=earliest commit=manual-batch\nproduce t count=3\n",
    )
    .expect("lab");
    s.apply_lines(&lines(&["produce t count=2"])).expect("produce");
    assert!(s.save().expect("saved").is_none());
    let n = s.history_len();
    assert_eq!(n, 4);
    assert!(
        s.history.since(0).is_none(),
        "the saved lines are only in the file"
    );
    assert_eq!(s.history.since(n).map(<[Command]>::len), Some(0));
    let export = s.export().expect("export");
    assert!(export.contains("produce t count=2"), "{export}");

    // A sink written, then a failed line: the undo replays the history, read from the file.
    s.apply_lines(&lines(&["poll c1", "process c1 count=all", "poll ghost"]))
        .expect_err("ghost");
    assert_eq!(s.history_len(), n);
    assert_eq!(s.export().expect("export"), export);
    assert_eq!(s.lab().group_view("g").expect("g").sink.rows, 0);

    s.apply_lines(&lines(&["tick 1s"])).expect("tick");
    assert!(s.save().expect("saved").is_none());
    let export = s.export().expect("export");
    drop(s);
    let (restored, _) = Session::restore(dir.path(), FlushPolicy::Never)
        .expect("restores")
        .expect("a lab");
    assert!(restored.history.since(0).is_none());
    assert_eq!(restored.export().expect("export"), export);
}

//! Retention frees the disk: a segment retention deletes leaves only its shape beside the
//! history, and the history — an undo, an export — still replays to the same figures.

use super::*;

fn durable(dir: &Path) -> SinkBackend {
    SinkBackend::Durable {
        root: dir.to_path_buf(),
        flush: FlushPolicy::Never,
    }
}

fn lines(ls: &[&str]) -> Vec<String> {
    ls.iter().map(|s| s.to_string()).collect()
}

/// A client's batch of `n` records: keys from a few, values of 2 KB.
fn produced(n: usize, round: usize) -> Change {
    let values: Vec<Vec<u8>> = (0..n)
        .map(|i| vec![b'a' + ((round + i) % 26) as u8; 2_000])
        .collect();
    let keys: Vec<Vec<u8>> = (0..n)
        .map(|i| format!("k-{}", (round * n + i) % 7).into_bytes())
        .collect();
    let records: Vec<offsetlab_engine::record::NewRecord<'_>> = keys
        .iter()
        .zip(&values)
        .map(|(k, v)| offsetlab_engine::record::NewRecord::new(1, Some(k), Some(v)))
        .collect();
    let mut buf = Vec::new();
    offsetlab_records::batch::encode_consecutive(&mut buf, 0, &records, -1);
    Change::Produced {
        topic: "t".into(),
        partition: 0,
        client: "rdkafka".into(),
        batches: ProducedBatches::validate(buf).expect("valid"),
    }
}

/// Bytes of the files under `dir`.
fn bytes_under(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => bytes_under(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

fn figures(s: &Session) -> serde_json::Value {
    serde_json::to_value(s.lab().view().expect("view")).expect("json")
}

#[test]
fn retention_frees_the_disk_and_the_history_still_replays_to_the_same_figures() {
    let dir = tempfile::tempdir().expect("dir");
    let mut s = Session::new(
        durable(dir.path()),
        "topic t segment.records=10 retention.ms=1h message.timestamp.type=LogAppendTime\n\
         consumer c1 group=g topic=t commit=manual-batch reset=earliest sink=upsert max-poll=1000\n",
    )
    .expect("lab");
    for round in 0..30 {
        s.apply_changes(vec![produced(10, round)]).expect("produced");
        s.apply_lines(&lines(&["tick 1m", "poll c1", "process c1 count=all"]))
            .expect("read");
        assert!(s.save().expect("saved").is_none());
    }
    // A restart between: the logs learn again which kept links are their segments'.
    drop(s);
    let (mut s, _) = Session::restore(dir.path(), FlushPolicy::Never)
        .expect("restores")
        .expect("a lab");
    let gen = s.generation_dir().expect("durable").to_path_buf();
    let kept_before = bytes_under(&gen.join(PRODUCED_DIR));
    assert!(kept_before > 500_000, "{kept_before}");
    // An hour later retention deletes every closed segment; the save shapes their kept links.
    s.apply_lines(&lines(&["tick 2h"])).expect("retention");
    assert!(s.save().expect("saved").is_none());
    let log = s
        .lab()
        .partition_log(&offsetlab_engine::record::TopicPartition::new("t", 0))
        .expect("t-0");
    assert_eq!(
        log.log_start_offset(),
        290,
        "retention deleted every closed segment"
    );
    let kept_after = bytes_under(&gen.join(PRODUCED_DIR));
    assert!(
        kept_after * 10 < kept_before,
        "what retention deleted left the disk: {kept_after} of {kept_before} bytes kept"
    );
    let logs = bytes_under(&gen.join("logs"));
    assert!(logs < 100_000, "the logs hold {logs} bytes");
    eprintln!(
        "kept segments: {kept_before} bytes before retention, {kept_after} after; logs {logs}; generation {}",
        bytes_under(&gen)
    );
    let before = figures(&s);

    // An undo replays the history from the shapes: the same figures.
    s.apply_lines(&lines(&["tick 1s", "poll nobody"]))
        .expect_err("refused");
    assert_eq!(figures(&s), before, "the undo's replay");
    // So does the export, and a restart.
    let export = s.export().expect("export");
    assert!(!export.contains("could not read"), "{export}");
    let other = tempfile::tempdir().expect("dir");
    let replayed = Session::new(durable(other.path()), &export).expect("the export replays");
    assert_eq!(figures(&replayed), before, "the export's replay");
    drop(s);
    let (restored, _) = Session::restore(dir.path(), FlushPolicy::Never)
        .expect("restores")
        .expect("a lab");
    assert_eq!(figures(&restored), before, "the restart");
}

//! A restart that finds a log's tail lost: reported, handled as Kafka handles it, and written
//! into the history so that no undo or export changes a record served since.

use super::*;
use offsetlab_engine::record::TopicPartition;

fn durable(dir: &Path) -> SinkBackend {
    SinkBackend::Durable {
        root: dir.to_path_buf(),
        flush: FlushPolicy::Never,
    }
}

/// (offset, key, value) of every record of `topic`-0.
fn records(s: &Session, topic: &str) -> Vec<(i64, String, String)> {
    let mut out = Vec::new();
    let text = |b: Option<&[u8]>| String::from_utf8_lossy(b.unwrap_or_default()).into_owned();
    s.lab()
        .partition_log(&TopicPartition::new(topic, 0))
        .expect("partition 0")
        .read(0, usize::MAX, &mut |r| {
            out.push((r.offset, text(r.key), text(r.value)))
        });
    out
}

/// The last segment file of `topic`-0 in the session's generation.
fn last_segment(s: &Session, topic: &str) -> PathBuf {
    let dir = s
        .generation_dir()
        .expect("durable")
        .join(format!("logs/{topic}-0"));
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("partition dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    logs.pop().expect("a segment")
}

/// What a power cut under `--flush never` leaves: the last 30 bytes of the segment never
/// reached the disk.
fn cut_30_bytes(segment: &Path) {
    let len = std::fs::metadata(segment).expect("segment").len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(segment)
        .and_then(|f| f.set_len(len - 30))
        .expect("cut");
}

/// Issue 29's story: records 300–499 acknowledged, the group committed 450, the last 30 bytes
/// of the segment lost. The restart names the partition and the offsets lost, keeps the cut
/// bytes, leaves the committed offset to meet OFFSET_OUT_OF_RANGE, and writes the loss into the
/// history: the records produced after it keep their offsets and contents through an undo, a
/// restart and an export.
#[test]
fn a_torn_tail_is_reported_handled_and_written_into_the_history() {
    let dir = tempfile::tempdir().expect("dir");
    let mut s = Session::new(
        durable(dir.path()),
        "topic orders partitions=1\nproduce orders count=300\n",
    )
    .expect("lab");
    s.apply_lines(&lines(&[
        "produce orders count=200",
        "consumer c1 group=g topic=orders commit=manual-batch reset=earliest max-poll=450",
        "poll c1",
        "process c1 count=all",
    ]))
    .expect("produced and committed");
    assert!(s.save().expect("saved").is_none());
    let segment = last_segment(&s, "orders");
    drop(s);
    cut_30_bytes(&segment);

    let (mut s, summary) = Session::restore(dir.path(), FlushPolicy::Never)
        .expect("restores")
        .expect("a lab");
    // Reported: the banner, the session (the page's state), the narrative.
    assert!(summary.contains("orders-0: offsets 300..499 lost"), "{summary}");
    let [r] = s.recovered() else {
        panic!("one loss: {:?}", s.recovered());
    };
    assert_eq!((r.loss.from, r.loss.to), (300, 500));
    assert_eq!(r.loss.committed_past_end, vec![("g".to_string(), 450)]);
    let [aside] = r.kept_aside.as_slice() else {
        panic!("the cut bytes kept: {r:?}");
    };
    let gen = s.generation_dir().expect("durable").to_path_buf();
    let kept = std::fs::metadata(gen.join(aside)).expect("kept aside").len();
    assert!(
        kept > 1_000,
        "the torn batch is kept whole but for its last 30 bytes: {kept}"
    );
    let state = serde_json::to_value(s.state().expect("state")).expect("json");
    assert_eq!(state["recovered"][0]["from"], 300, "{}", state["recovered"]);
    assert_eq!(state["recovered"][0]["to"], 500);
    assert!(matches!(s.history.last(), Some(Command::TruncateLog(t)) if t.to == 300 && t.was == Some(500)));

    // Kafka's treatment: offsets are taken again; the committed offset stays (lag < 0) until
    // the consumer's next fetch meets OFFSET_OUT_OF_RANGE and auto.offset.reset decides.
    s.apply_lines(&lines(&["produce orders count=5"]))
        .expect("produced");
    let served = records(&s, "orders")[300..].to_vec();
    assert_eq!(served.first().map(|r| r.0), Some(300));
    assert_eq!(served.first().map(|r| r.1.as_str()), Some("o-501"), "{served:?}");
    let view = s.lab().view().expect("view");
    assert_eq!(view.groups["g"].committed["orders-0"], Some(450));
    assert_eq!(view.groups["g"].lag["orders-0"], Some(305 - 450));
    s.apply_lines(&lines(&["poll c1"])).expect("polled");
    let told: Vec<String> = s
        .lab()
        .narrative()
        .events()
        .iter()
        .map(|e| e.text.clone())
        .collect();
    assert!(
        told.iter().any(|t| t.contains("450 is out of range for orders-0")
            && t.contains("auto.offset.reset=earliest → 0")),
        "{told:#?}"
    );

    // An undo (a failing batch rebuilds from the history) changes nothing served.
    let before = records(&s, "orders");
    s.apply_lines(&lines(&["produce orders count=1", "poll nobody"]))
        .expect_err("refused");
    assert_eq!(records(&s, "orders"), before, "the undo changed served records");
    assert!(s.save().expect("saved").is_none());
    // Nor does a restart, nor an export replayed.
    drop(s);
    let (s, summary) = Session::restore(dir.path(), FlushPolicy::Never)
        .expect("restores")
        .expect("a lab");
    assert!(s.recovered().is_empty(), "{summary}");
    assert_eq!(records(&s, "orders"), before);
    let replayed = Session::new(SinkBackend::Memory, &s.export().expect("export")).expect("export replays");
    assert_eq!(records(&replayed, "orders"), before);
}

/// A client's batches a crash tore: the kept segment is the log's own file, so the restart's
/// cut tore them in the history's store too. An undo and an export replay the batches that
/// survived and stand-ins for the lost records, which the `truncate-log` line cuts again.
#[test]
fn torn_client_batches_replay_as_stand_ins_the_truncation_cuts() {
    let dir = tempfile::tempdir().expect("dir");
    let mut s = Session::new(durable(dir.path()), "topic t\n").expect("lab");
    let batch = |values: &[&str]| {
        let mut buf = Vec::new();
        let records: Vec<offsetlab_engine::record::NewRecord<'_>> = values
            .iter()
            .map(|v| offsetlab_engine::record::NewRecord::new(1, Some(b"k"), Some(v.as_bytes())))
            .collect();
        offsetlab_records::batch::encode_consecutive(&mut buf, 0, &records, -1);
        Change::Produced {
            topic: "t".into(),
            partition: 0,
            client: "rdkafka".into(),
            batches: ProducedBatches::validate(buf).expect("valid"),
        }
    };
    s.apply_changes(vec![batch(&["a", "b"])]).expect("a, b");
    s.apply_changes(vec![batch(&["c", "d", "e"])]).expect("c, d, e");
    assert!(s.save().expect("saved").is_none());
    let segment = last_segment(&s, "t");
    drop(s);
    cut_30_bytes(&segment);
    let (mut s, summary) = Session::restore(dir.path(), FlushPolicy::Never)
        .expect("restores")
        .expect("a lab");
    assert!(summary.contains("t-0: offsets 2..4 lost"), "{summary}");
    s.apply_changes(vec![batch(&["x"])]).expect("x");
    let served = records(&s, "t");
    assert_eq!(
        served.iter().map(|r| r.2.as_str()).collect::<Vec<_>>(),
        ["a", "b", "x"]
    );
    s.apply_lines(&lines(&["tick 1s", "poll nobody"]))
        .expect_err("refused: undone");
    assert_eq!(records(&s, "t"), served, "the undo replayed the torn batches");
    let export = s.export().expect("export");
    assert!(!export.contains("could not read"), "{export}");
    let replayed = Session::new(SinkBackend::Memory, &export).expect("export replays");
    assert_eq!(
        records(&replayed, "t")
            .iter()
            .map(|r| (r.0, r.2.clone()))
            .collect::<Vec<_>>(),
        served.iter().map(|r| (r.0, r.2.clone())).collect::<Vec<_>>()
    );
}

fn lines(ls: &[&str]) -> Vec<String> {
    ls.iter().map(|s| s.to_string()).collect()
}

use super::*;

pub(super) fn session() -> Session {
    Session::new(SinkBackend::Memory, offsetlab_scenario::LAB_SCENARIO).expect("seed")
}

pub(super) fn lines(ls: &[&str]) -> Vec<String> {
    ls.iter().map(|s| s.to_string()).collect()
}

pub(super) fn state_json(s: &Session) -> serde_json::Value {
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
    let text = s.export().expect("export");
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
    let export = s.export().expect("export");
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
    assert_eq!(
        restored.export().expect("export"),
        export,
        "the unacknowledged line is gone"
    );
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
            .map(|v| offsetlab_engine::record::NewRecord::new(1, Some(b"k"), Some(v.as_bytes())))
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

/// Every record of `t-0`, as `each` makes it of the record.
fn each_record<T>(s: &Session, each: impl Fn(offsetlab_engine::record::RecordRef<'_>) -> T) -> Vec<T> {
    let tp = offsetlab_engine::record::TopicPartition::new("t".to_string(), 0);
    let mut out = Vec::new();
    s.lab()
        .partition_log(&tp)
        .expect("t-0")
        .read(0, usize::MAX, &mut |r| out.push(each(r)));
    out
}

/// (offset, timestamp, value) of every record of `t-0`.
fn records(s: &Session) -> Vec<(i64, i64, String)> {
    each_record(s, |r| {
        (
            r.offset,
            r.timestamp,
            String::from_utf8_lossy(r.value.unwrap_or_default()).into_owned(),
        )
    })
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

pub(super) fn durable(dir: &Path) -> SinkBackend {
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
        let mut s = Session::new(
            backend,
            "topic t segment.records=3 retention.ms=1h message.timestamp.type=LogAppendTime\ntick 1s\n",
        )
        .expect("lab");
        s.apply_changes(vec![produced(&[&["a", "b"]])]).expect("first");
        // Segments hold 3 records: `c` fills the first, `d, e` go to the next.
        s.apply_changes(vec![produced(&[&["c"], &["d", "e"]])])
            .expect("second");
        let stored: Vec<SendStored> = s
            .history
            .all()
            .expect("history")
            .iter()
            .filter_map(|c| match c {
                Command::SendStored(l) => Some(l.clone()),
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
        let export = s.export().expect("export");
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
            s.export().expect("export").starts_with(&export),
            "the export still spells out a and b"
        );
    }
}

/// A record as bytes: (key, value, headers as encoded).
type RawRecord = (Option<Vec<u8>>, Option<Vec<u8>>, Vec<u8>);

/// Every record of `t-0` as bytes.
fn raw_records(s: &Session) -> Vec<RawRecord> {
    each_record(s, |r| {
        (
            r.key.map(<[u8]>::to_vec),
            r.value.map(<[u8]>::to_vec),
            r.headers.to_vec(),
        )
    })
}

/// Records that are not text — a key that is not UTF-8, an Avro value behind the Schema
/// Registry's framing, a binary header — are kept byte for byte, exported as base64, and the
/// export replays to the same bytes, in memory and on disk.
#[test]
fn binary_client_records_export_and_replay_byte_for_byte() {
    let key: &[u8] = &[0xff, 0x00, 0x9c];
    let value: &[u8] = &[0, 0, 0, 0, 42, 0x02, 0xc8, 0x01];
    let headers =
        offsetlab_records::headers::encode([(&b"trace"[..], Some(&[0xc3u8, 0x28][..]))].into_iter());
    let mut buf = Vec::new();
    let sent = [
        offsetlab_engine::record::NewRecord {
            headers: &headers,
            ..offsetlab_engine::record::NewRecord::new(1, Some(key), Some(value))
        },
        offsetlab_engine::record::NewRecord::new(1, Some(b"p-2"), None),
    ];
    offsetlab_records::batch::encode_consecutive(&mut buf, 0, &sent, -1);
    for durable_lab in [false, true] {
        let dir = tempfile::tempdir().expect("dir");
        let backend = if durable_lab {
            durable(dir.path())
        } else {
            SinkBackend::Memory
        };
        let mut s = Session::new(backend, "topic t\n").expect("lab");
        s.apply_changes(vec![Change::Produced {
            topic: "t".into(),
            partition: 0,
            client: "avro-producer".into(),
            batches: ProducedBatches::validate(buf.clone()).expect("valid batches"),
        }])
        .expect("binary records are taken");
        let before = raw_records(&s);
        assert_eq!(
            before,
            vec![
                (Some(key.to_vec()), Some(value.to_vec()), headers.clone()),
                (Some(b"p-2".to_vec()), None, Vec::new())
            ]
        );
        let export = s.export().expect("export");
        assert!(
            export.contains(r#"records=[{"key":{"base64":"/wCc"},"value":{"base64":"AAAAACoCyAE="},"timestamp":1,"headers":[{"key":"trace","value":{"base64":"wyg="}}]},{"key":"p-2","value":null,"timestamp":1}]"#),
            "{export}"
        );
        for into_durable in [false, true] {
            let other = tempfile::tempdir().expect("dir");
            let backend = if into_durable {
                durable(other.path())
            } else {
                SinkBackend::Memory
            };
            let replayed = Session::new(backend, &export).expect("replays");
            assert_eq!(raw_records(&replayed), before, "{export}");
            // A CreateTime topic (Kafka's default): the producer's timestamps, kept and replayed.
            assert_eq!(records(&replayed), records(&s));
            assert!(records(&s).iter().all(|r| r.1 == 1), "{:?}", records(&s));
            assert_eq!(replayed.export().expect("export"), export);
        }
    }
}

/// A batch that fails after a client's batches went in is undone by replaying the history,
/// which reads the stored batches back; a restart restores the references.
#[test]
fn stored_batches_survive_an_undo_and_a_restart() {
    let dir = tempfile::tempdir().expect("dir");
    let mut s = Session::new(durable(dir.path()), "topic t\n").expect("lab");
    s.apply_changes(vec![produced(&[&["a", "b"]])]).expect("produced");
    let export = s.export().expect("export");
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
    assert_eq!(s.export().expect("export"), export);
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
    assert_eq!(restored.export().expect("export"), export);
    assert_eq!(records(&restored), before);
    // An undo after the restart reads the kept batches of the restored generation.
    restored
        .apply_lines(&lines(&["tick 1s", "poll ghost"]))
        .expect_err("ghost");
    assert_eq!(records(&restored), before);
    assert_eq!(restored.export().expect("export"), export);
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
        .all()
        .expect("history")
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
    // The loss is in the history: the export replays a stand-in for `c`, cuts it, then `x`.
    let export = restored.export().expect("export");
    assert!(
        export.contains("truncate-log t partition=0 to=2 was=3"),
        "{export}"
    );
    assert!(export.contains(r#""value":"x""#), "{export}");
    let replayed = Session::new(SinkBackend::Memory, &export).expect("the export replays");
    assert_eq!(records(&replayed), records(&restored));
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

/// A `send` line's compressed bytes are the producer's: kept verbatim only when they decompress
/// to exactly the records the line spells out; anything else is refused and changes nothing.
#[test]
fn compressed_bytes_that_are_not_the_lines_records_are_refused() {
    use base64::Engine;
    let mut s = session();
    s.apply_lines(&lines(&["topic zipped"])).expect("topic");
    let before = state_json(&s);
    let records = r#"records=[{"key":"k","value":"v","timestamp":1767225600000}]"#;
    // Bytes that are lz4 of something else.
    let other =
        offsetlab_records::compression::compress(b"not these records", offsetlab_records::Compression::Lz4);
    let b64 = base64::engine::general_purpose::STANDARD.encode(other);
    let err = s
        .apply_lines(&lines(&[&format!(
            "send zipped partition=0 compression=lz4 compressed='{b64}' {records}"
        )]))
        .expect_err("not the records");
    assert_eq!(err.status, 422, "{err:?}");
    assert!(err.error.contains("does not lz4 decompress"), "{}", err.error);
    assert_eq!(state_json(&s), before, "nothing changed");
    // Checked also where the topic stores another codec (the bytes would be dropped unseen).
    s.apply_lines(&lines(&["topic packed compression.type=zstd"]))
        .expect("topic");
    let before = state_json(&s);
    let err = s
        .apply_lines(&lines(&[&format!(
            "send packed partition=0 compression=lz4 compressed='{b64}' {records}"
        )]))
        .expect_err("not the records");
    assert_eq!(err.status, 422, "{err:?}");
    assert_eq!(state_json(&s), before, "nothing changed");
    // Compressed bytes without a codec, or for two batches: a malformed line.
    for line in [
        format!("send zipped partition=0 compressed='{b64}' {records}"),
        format!(
            "send zipped partition=0 batches=1,1 compression=lz4 compressed='{b64}' records=[{{\"key\":\"a\",\"value\":\"1\"}},{{\"key\":\"b\",\"value\":\"2\"}}]"
        ),
    ] {
        let err = s.apply_lines(&lines(&[&line])).expect_err("malformed");
        assert_eq!(err.status, 400, "{line}: {err:?}");
    }
    // The records' own lz4 bytes: taken.
    let mut plain = Vec::new();
    offsetlab_records::batch::encode_consecutive(
        &mut plain,
        0,
        &[offsetlab_records::NewRecord::new(
            1_767_225_600_000,
            Some(b"k"),
            Some(b"v"),
        )],
        -1,
    );
    let own = offsetlab_records::compression::compress(
        &plain[offsetlab_records::batch::HEADER_LEN..],
        offsetlab_records::Compression::Lz4,
    );
    let b64 = base64::engine::general_purpose::STANDARD.encode(own);
    s.apply_lines(&lines(&[&format!(
        "send zipped partition=0 compression=lz4 compressed='{b64}' {records}"
    )]))
    .expect("its own records");
}

/// An export writes a compressed batch's own bytes only when the line's records encode to them:
/// a record the lab spells differently (here a producer's non-zero record attributes byte, which
/// the v2 format leaves unused) goes out without them, and the export still imports — the lab's
/// compressor writes the batch then, with the same records.
#[test]
fn a_compressed_batch_the_lab_spells_differently_exports_without_its_bytes() {
    use offsetlab_records::batch::{encode_consecutive, HEADER_LEN};
    use offsetlab_records::compression::{compress, Compression};
    let dir = tempfile::tempdir().expect("dir");
    let mut s = Session::new(durable(dir.path()), "topic t\n").expect("lab");
    let mut plain = Vec::new();
    let value = "v".repeat(200);
    encode_consecutive(
        &mut plain,
        0,
        &[offsetlab_records::NewRecord::new(
            1_767_225_600_000,
            Some(b"k"),
            Some(value.as_bytes()),
        )],
        -1,
    );
    // The record's attributes byte, after its length varint (two bytes for ~210).
    let mut records = plain[HEADER_LEN..].to_vec();
    records[2] = 1;
    let packed = compress(&records, Compression::Gzip);
    let mut batch = plain[..HEADER_LEN].to_vec();
    batch.extend_from_slice(&packed);
    let length = (batch.len() - 12) as i32;
    batch[8..12].copy_from_slice(&length.to_be_bytes());
    let attributes = i16::from_be_bytes([batch[21], batch[22]]) | 1;
    batch[21..23].copy_from_slice(&attributes.to_be_bytes());
    let crc = crc32c::crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
    let batches = offsetlab_records::ProducedBatches::validate(batch).expect("a valid batch");
    s.apply_changes(vec![Change::Produced {
        topic: "t".into(),
        partition: 0,
        client: "odd".into(),
        batches,
    }])
    .expect("produced");
    let export = s.export().expect("export");
    assert!(export.contains("compression=gzip"), "{export}");
    assert!(!export.contains("compressed="), "{export}");
    let mut again = Session::new(SinkBackend::Memory, "").expect("empty");
    again.load(&export).expect("the export imports");
    let values = |s: &Session| each_record(s, |r| r.value.map(<[u8]>::to_vec));
    assert_eq!(values(&again), values(&s));
}

/// A closed lab stays closed: a request that still held it changes nothing the clean marker
/// would belie, and its live clock has no timer left to fire.
#[test]
fn a_closed_session_refuses_changes_and_fires_no_timer() {
    let dir = tempfile::tempdir().expect("dir");
    let seed = format!(
        "{}{}",
        starting_at(1_800_000_000_000),
        offsetlab_scenario::LAB_SCENARIO
    );
    let mut s = Session::new(durable(dir.path()), &seed).expect("seed");
    s.set_clock_mode(ClockMode::Live).expect("live");
    s.apply_lines(&lines(&["poll c1"])).expect("poll");
    s.save().expect("saved");
    let later = s.lab().now() + 10 * 60_000;
    assert!(
        s.timer_due(later),
        "the poll interval and the auto-commit are due"
    );
    s.close().expect("closed");
    assert!(!s.timer_due(later));
    let e = s.apply_lines(&lines(&["poll c1"])).expect_err("refused");
    assert!(e.error.contains("closed"), "{}", e.error);
}

/// A share group's state — its SPSO, the in-flight window with each record's state, lock and
/// delivery count, its members and audit — survives a save and restore, and the export
/// replays to the same state.
#[test]
fn share_groups_survive_a_restart_and_an_export() {
    let dir = tempfile::tempdir().expect("dir");
    let backend = SinkBackend::Durable {
        root: dir.path().to_path_buf(),
        flush: FlushPolicy::Never,
    };
    let mut s = Session::new(backend, "topic orders\nproduce orders count=6 batch=1\n").expect("lab");
    s.apply_lines(&lines(&[
        "alter-share-group sg share.auto.offset.reset=earliest share.delivery.count.limit=2",
        "share-consumer s1 group=sg topic=orders ack=explicit max-poll=3",
        "share-consumer s2 group=sg topic=orders max-poll=2",
        "share-poll s1",
        "share-poll s2",
        "process s1 count=2",
        "share-ack s1 offsets=0 accept",
        "share-ack s1 offsets=2 release",
        "crash s2",
        "tick 10s",
    ]))
    .expect("applies");
    s.save().expect("saved");
    let share = s.lab().share().clone();
    let export = s.export().expect("export");
    drop(s);
    let (restored, _) = Session::restore(dir.path(), FlushPolicy::Never)
        .expect("restores")
        .expect("a lab");
    assert_eq!(restored.lab().share(), &share, "restored");
    let replayed = Session::new(SinkBackend::Memory, &export).expect("the export replays");
    assert_eq!(replayed.lab().share(), &share, "replayed");
}

/// A clean close reaches every log — closed on several threads — so each writes what lets the
/// next start skip its recovery, and the lab restores whole.
#[test]
fn a_clean_close_closes_every_log() {
    let dir = tempfile::tempdir().expect("dir");
    let mut s = Session::new(
        durable(dir.path()),
        "topic wide partitions=40\nproduce wide count=100\n",
    )
    .expect("lab");
    s.save().expect("saved");
    let export = s.export().expect("export");
    let logs = s.generation_dir().expect("durable").join("logs");
    s.close().expect("closed");
    let mut recovery_points = 0;
    let mut dirs = vec![logs];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("read").flatten() {
            if e.path().is_dir() {
                dirs.push(e.path());
            } else if e.file_name() == "recovery-point" {
                recovery_points += 1;
            }
        }
    }
    assert_eq!(recovery_points, 41, "40 partitions and __consumer_offsets");
    drop(s);
    let (restored, _) = Session::restore(dir.path(), FlushPolicy::Never)
        .expect("restores")
        .expect("a lab");
    assert_eq!(restored.export().expect("export"), export);
}

//! The durable log behaves as the in-memory log: random operations, including closes, crashes
//! (drop without close) and reopenings, give the same observable log — segment bytes included,
//! so `segment.bytes` rolls and `retention.bytes` deletes the same segments in both.

use offsetlab_engine::log::config::SegmentLimits;
use offsetlab_engine::log::memory::MemoryLog;
use offsetlab_engine::log::PartitionLog;
use offsetlab_engine::record::{NewRecord, Offset};
use offsetlab_storage::{Durability, FileLog, FlushPolicy};
use proptest::prelude::*;
use std::path::Path;

#[derive(Debug, Clone)]
enum Op {
    /// Records: (key id or none, value length or tombstone, control).
    Append(Vec<(Option<u8>, Option<u8>, bool)>),
    Tick(i64),
    DeleteSegmentsBefore(i64),
    DeleteRecordsBefore(i64),
    /// Keep records whose offset is not a multiple of this.
    Compact(i64),
    /// Cut the log back to this offset (a restart truncating to what it acknowledged).
    Truncate(i64),
    /// Clean close and reopen.
    Reopen,
    /// Drop without closing, then reopen: a crash (the page cache survives).
    Crash,
}

fn op() -> impl Strategy<Value = Op> {
    let record = (
        prop::option::of(0u8..6),
        prop::option::weighted(0.9, 0u8..120),
        prop::bool::weighted(0.1),
    );
    prop_oneof![
        8 => prop::collection::vec(record, 1..12).prop_map(Op::Append),
        2 => prop_oneof![Just(1i64), Just(1_000), Just(60_000)].prop_map(Op::Tick),
        1 => (0i64..60).prop_map(Op::DeleteSegmentsBefore),
        1 => (0i64..60).prop_map(Op::DeleteRecordsBefore),
        1 => (2i64..5).prop_map(Op::Compact),
        1 => (0i64..60).prop_map(Op::Truncate),
        1 => Just(Op::Reopen),
        1 => Just(Op::Crash),
    ]
}

fn limits(max_bytes: usize) -> SegmentLimits {
    SegmentLimits {
        max_records: 5,
        max_bytes,
        max_age_ms: 30_000,
    }
}

fn open(dir: &Path, limits: SegmentLimits, clean: bool) -> FileLog {
    FileLog::open(dir, limits, Durability::new(FlushPolicy::Never), clean).expect("open")
}

/// Everything a reader of the log can observe.
fn observe(log: &dyn PartitionLog) -> String {
    let mut out = format!(
        "start {} end {} count {}\n",
        log.log_start_offset(),
        log.log_end_offset(),
        log.record_count()
    );
    log.read(0, usize::MAX, &mut |r| {
        out.push_str(&format!(
            "{} {} {:?} {:?} {}\n",
            r.offset, r.timestamp, r.key, r.value, r.control
        ));
    });
    for s in log.segments() {
        out.push_str(&format!(
            "seg {} {} {} {} {:?} {}\n",
            s.base_offset, s.next_offset, s.records, s.bytes, s.max_timestamp, s.active
        ));
    }
    for ts in [0, 1, 999, 1_000, 30_000, 61_000, 1_000_000] {
        out.push_str(&format!("ts {ts} {:?}\n", log.offset_for_timestamp(ts)));
    }
    for from in [0, 3, 7, 20] {
        let mut v = Vec::new();
        log.read(from, 3, &mut |r| v.push(r.offset));
        out.push_str(&format!("from {from} {v:?}\n"));
    }
    // The last record of each record's batch: what a share fetch acquires to. (A file
    // segment's batch may end past its last record after a cleaning; no record is in between.)
    let mut retained = Vec::new();
    log.read(0, usize::MAX, &mut |r| retained.push(r.offset));
    for &o in &retained {
        let end = log.batch_end(o);
        let last = retained.iter().take_while(|&&r| r < end).last();
        out.push_str(&format!("batch of {o} reaches {last:?}\n"));
    }
    out
}

fn apply(log: &mut dyn PartitionLog, op: &Op, now: &mut i64) {
    match op {
        Op::Append(recs) => {
            let keys: Vec<Option<Vec<u8>>> = recs.iter().map(|(k, _, _)| k.map(|k| vec![b'k', k])).collect();
            let values: Vec<Option<Vec<u8>>> = recs
                .iter()
                .map(|(_, v, _)| v.map(|n| vec![b'v'; n as usize]))
                .collect();
            let batch: Vec<NewRecord<'_>> = recs
                .iter()
                .enumerate()
                .map(|(i, (_, _, c))| NewRecord {
                    timestamp: *now,
                    key: keys[i].as_deref(),
                    value: values[i].as_deref(),
                    control: *c,
                    headers: &[],
                })
                .collect();
            // Control records go one by one, as markers do; data records as one batch.
            if batch.iter().any(|r| r.control) {
                for r in &batch {
                    log.append(*r, *now);
                }
            } else {
                log.append_batch(&batch, *now);
            }
        }
        Op::Tick(ms) => *now += ms,
        Op::DeleteSegmentsBefore(o) => {
            log.delete_segments_before(*o);
        }
        Op::DeleteRecordsBefore(o) => {
            let o = (*o).min(log.log_end_offset());
            log.delete_records_before(o);
        }
        Op::Compact(m) => {
            log.compact(&mut |r| r.offset % m != 0);
        }
        Op::Truncate(o) => {
            log.truncate_to(*o);
        }
        Op::Reopen | Op::Crash => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn the_file_log_is_observably_the_memory_log(
        ops in prop::collection::vec(op(), 1..40),
        max_bytes in prop_oneof![Just(usize::MAX / 4), 60usize..400],
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let limits = limits(max_bytes);
        let mut memory = MemoryLog::new(limits);
        let mut file = Some(open(dir.path(), limits, false));
        let mut now = 0i64;
        for op in &ops {
            let mut t = now;
            apply(&mut memory, op, &mut t);
            let f = file.as_mut().expect("open log");
            apply(f, op, &mut now);
            match op {
                Op::Reopen => {
                    let mut f = file.take().expect("log");
                    f.close_files().expect("close");
                    drop(f);
                    let reopened = open(dir.path(), limits, true);
                    prop_assert!(reopened.open_report().clean);
                    file = Some(reopened);
                }
                Op::Crash => {
                    drop(file.take());
                    let reopened = open(dir.path(), limits, false);
                    prop_assert_eq!(reopened.open_report().truncated_bytes, 0, "a crash with intact files truncates nothing");
                    file = Some(reopened);
                }
                _ => {}
            }
            let f = file.as_ref().expect("log");
            prop_assert_eq!(observe(&memory), observe(f), "after {:?}", op);
        }
    }
}

/// Appends `n` single-record batches of 100-byte values.
fn fill(log: &mut FileLog, n: usize) {
    let value = [b'x'; 100];
    for i in 0..n {
        let key = format!("o-{i}");
        log.append(
            NewRecord::new(i as i64, Some(key.as_bytes()), Some(&value)),
            i as i64,
        );
    }
}

fn offsets(log: &FileLog) -> Vec<Offset> {
    let mut v = Vec::new();
    log.read(0, usize::MAX, &mut |r| v.push(r.offset));
    v
}

fn segment_files(dir: &Path, ext: &str) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .expect("dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

#[test]
fn a_torn_tail_is_truncated_to_the_last_whole_batch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = open(dir.path(), limits(usize::MAX / 4), false);
    fill(&mut log, 12);
    drop(log);
    let last = segment_files(dir.path(), "log").pop().expect("a segment");
    let len = std::fs::metadata(&last).expect("meta").len();
    let f = std::fs::OpenOptions::new().write(true).open(&last).expect("open");
    f.set_len(len - 7).expect("cut");
    drop(f);
    let mut log = open(dir.path(), limits(usize::MAX / 4), false);
    assert!(log.open_report().truncated_bytes > 0);
    assert_eq!(
        offsets(&log),
        (0..11).collect::<Vec<_>>(),
        "the torn 12th record is gone"
    );
    fill(&mut log, 1);
    assert_eq!(
        log.log_end_offset(),
        12,
        "appends continue at the truncation point"
    );
}

#[test]
fn a_garbled_batch_is_never_served_and_everything_after_it_goes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = open(dir.path(), limits(usize::MAX / 4), false);
    fill(&mut log, 12); // segments of 5: 0..4, 5..9, 10..11
    drop(log);
    let segs = segment_files(dir.path(), "log");
    assert_eq!(segs.len(), 3);
    let mut bytes = std::fs::read(&segs[1]).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&segs[1], &bytes).expect("write");
    // Even before recovery, a read never hands out the corrupt batch.
    let log = open(dir.path(), limits(usize::MAX / 4), false);
    let got = offsets(&log);
    assert!(got.len() < 12 && got.iter().all(|&o| o < 10), "{got:?}");
    assert_eq!(
        log.open_report().dropped_segments,
        1,
        "the segment after the corrupt one"
    );
    assert!(!log.open_report().notes.is_empty());
    // Nothing cut is deleted: the garbled segment's tail and the whole segment after it are
    // kept aside, byte for byte.
    let aside = &log.open_report().kept_aside;
    assert_eq!(aside.len(), 2, "{aside:?}");
    let tail = std::fs::read(&aside[0]).expect("the cut tail");
    assert!(
        bytes.ends_with(&tail) && tail.len() >= bytes.len() - middle,
        "{} bytes kept",
        tail.len()
    );
    assert!(aside[1].exists(), "the segment after it");
    let mut expected: Vec<Offset> = (0..5).collect();
    expected.extend(5..(got.len() as Offset));
    assert_eq!(got, expected, "a clean prefix");
}

#[test]
fn a_deleted_or_garbled_index_is_rebuilt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(
        dir.path(),
        SegmentLimits {
            max_records: 100_000,
            max_bytes: usize::MAX / 4,
            max_age_ms: i64::MAX / 4,
        },
        Durability::new(FlushPolicy::Never),
        false,
    )
    .expect("open");
    fill(&mut log, 2_000); // ~250 kB: dozens of index entries
    log.close_files().expect("close");
    drop(log);
    let index = segment_files(dir.path(), "index").pop().expect("index");
    assert!(std::fs::metadata(&index).expect("meta").len() >= 8 * 20);
    let reopen = || {
        FileLog::open(
            dir.path(),
            SegmentLimits {
                max_records: 100_000,
                max_bytes: usize::MAX / 4,
                max_age_ms: i64::MAX / 4,
            },
            Durability::new(FlushPolicy::Never),
            true,
        )
        .expect("open")
    };
    let check = |log: &FileLog| {
        let mut v = Vec::new();
        log.read(1_234, 3, &mut |r| v.push(r.offset));
        assert_eq!(v, [1_234, 1_235, 1_236]);
        assert_eq!(log.offset_for_timestamp(1_500), Some(1_500));
        assert_eq!(offsets(log).len(), 2_000);
    };
    std::fs::remove_file(&index).expect("rm");
    let mut log = reopen();
    check(&log);
    log.close_files().expect("close");
    drop(log);
    let mut bytes = std::fs::read(&index).expect("rebuilt index");
    for b in bytes.iter_mut().skip(40).take(16) {
        *b = 0xee;
    }
    std::fs::write(&index, &bytes).expect("garble");
    let log = reopen();
    check(&log);
}

#[test]
fn a_clean_reopen_reads_no_record_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = open(dir.path(), limits(usize::MAX / 4), false);
    fill(&mut log, 40);
    log.close_files().expect("close");
    drop(log);
    // Overwrite every record byte (keeping each segment's length): a clean open must not notice.
    let originals: Vec<(std::path::PathBuf, Vec<u8>)> = segment_files(dir.path(), "log")
        .into_iter()
        .map(|p| {
            let b = std::fs::read(&p).expect("read");
            (p, b)
        })
        .collect();
    for (p, b) in &originals {
        std::fs::write(p, vec![0u8; b.len()]).expect("blank");
    }
    let log = open(dir.path(), limits(usize::MAX / 4), true);
    assert!(log.open_report().clean);
    assert_eq!(
        (log.log_start_offset(), log.log_end_offset(), log.record_count()),
        (0, 40, 40)
    );
    assert_eq!(
        offsets(&log),
        Vec::<Offset>::new(),
        "and the blanked batches are never served"
    );
    drop(log);
    for (p, b) in &originals {
        std::fs::write(p, b).expect("restore");
    }
}

#[test]
fn a_snapshot_that_no_longer_matches_its_files_falls_back_to_recovery() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = open(dir.path(), limits(usize::MAX / 4), false);
    fill(&mut log, 12);
    log.close_files().expect("close");
    drop(log);
    // The files changed after the clean close: the last segment lost its tail.
    let last = segment_files(dir.path(), "log").pop().expect("a segment");
    let len = std::fs::metadata(&last).expect("meta").len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&last)
        .expect("open")
        .set_len(len - 3)
        .expect("cut");
    let log = open(dir.path(), limits(usize::MAX / 4), true);
    assert!(!log.open_report().clean, "the snapshot was not trusted");
    assert_eq!(offsets(&log), (0..11).collect::<Vec<_>>());
}

/// Segments that never roll: every record in one segment, with index entries every 4 KiB.
fn one_segment() -> SegmentLimits {
    SegmentLimits {
        max_records: usize::MAX / 4,
        max_bytes: usize::MAX / 4,
        max_age_ms: i64::MAX / 4,
    }
}

/// [`observe`], and a read of three records from every seventh offset (each a lookup in the
/// sparse index).
fn observe_reads(log: &dyn PartitionLog) -> String {
    let mut out = observe(log);
    for from in (0..log.log_end_offset() + 2).step_by(7) {
        let mut v = Vec::new();
        log.read(from, 3, &mut |r| v.push(r.offset));
        out.push_str(&format!("from {from} {v:?}\n"));
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 60, ..ProptestConfig::default() })]

    /// A truncation reads its segment again only from the index entry before the cut
    /// (`FileSegment::refresh_after_cut`), not whole: what it leaves — records, counts, largest
    /// timestamps, the index a read seeks with — is what the memory log holds, and what a
    /// recovery of the files finds after a crash.
    #[test]
    fn a_cut_inside_a_large_segment_leaves_what_a_recovery_finds(
        batches in prop::collection::vec((1usize..8, 0u8..200, prop::bool::weighted(0.3)), 20..120),
        cuts in prop::collection::vec(0i64..500, 1..4),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut memory = MemoryLog::new(one_segment());
        let mut file = FileLog::open(dir.path(), one_segment(), Durability::new(FlushPolicy::Never), false)
            .expect("open");
        let mut now = 0i64;
        let mut ops = Vec::new();
        for (i, (n, size, tick)) in batches.iter().enumerate() {
            ops.push(Op::Append(vec![(Some((i % 6) as u8), Some(*size), false); *n]));
            if *tick {
                ops.push(Op::Tick(1_000));
            }
        }
        for cut in &cuts {
            ops.push(Op::Truncate(*cut));
            ops.push(Op::Append(vec![(Some(1), Some(150), false); 3]));
        }
        for op in &ops {
            let mut t = now;
            apply(&mut memory, op, &mut t);
            apply(&mut file, op, &mut now);
            if matches!(op, Op::Truncate(_)) {
                prop_assert_eq!(observe_reads(&memory), observe_reads(&file), "after {:?}", op);
            }
        }
        let expected = observe_reads(&file);
        drop(file);
        let recovered = FileLog::open(dir.path(), one_segment(), Durability::new(FlushPolicy::Never), false)
            .expect("reopen");
        prop_assert_eq!(recovered.open_report().truncated_bytes, 0);
        prop_assert_eq!(observe_reads(&recovered), expected);
    }
}

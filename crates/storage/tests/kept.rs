//! A client's batches appended as they came (`PartitionLog::append_encoded`): stamped with the
//! log's time as their log append time, given offsets in place, and kept — the segments they went
//! to are hard-linked into the kept directory, so the bytes the lab's history names outlive
//! retention, compaction and the partition's deletion.

use offsetlab_engine::log::config::SegmentLimits;
use offsetlab_engine::log::{KeptBatches, PartitionLog, TimestampType};
use offsetlab_engine::record::NewRecord;
use offsetlab_records::batch::{self, Batch, BatchHeader};
use offsetlab_records::ProducedBatches;
use offsetlab_storage::{Durability, FileLog, FlushPolicy};
use std::path::Path;

/// Batches as a producer encodes them: offsets from 0, its own timestamps (CreateTime 7).
fn produced(batches: &[&[&str]]) -> ProducedBatches {
    let mut buf = Vec::new();
    for values in batches {
        let records: Vec<NewRecord<'_>> = values
            .iter()
            .map(|v| NewRecord::new(7, Some(b"k"), Some(v.as_bytes())))
            .collect();
        batch::encode_consecutive(&mut buf, 0, &records, -1);
    }
    ProducedBatches::validate(buf).expect("valid")
}

fn open(dir: &Path, kept: &Path) -> FileLog {
    let mut log = FileLog::open(
        &dir.join("t-0"),
        SegmentLimits {
            max_records: 3,
            max_bytes: 1 << 20,
            max_age_ms: i64::MAX,
        },
        Durability::new(FlushPolicy::Never),
        false,
    )
    .expect("open");
    log.keep_segments_in(kept.to_path_buf());
    log
}

/// The (offset, timestamp, value) of the records in a kept range.
fn read_kept(kept: &Path, k: &KeptBatches) -> Vec<(i64, i64, String)> {
    let bytes = std::fs::read(kept.join(&k.file)).expect("kept file");
    let mut range = &bytes[k.position as usize..(k.position + k.len) as usize];
    let mut out = Vec::new();
    while !range.is_empty() {
        let b = Batch::parse(range).expect("a whole, valid batch");
        for r in b.records() {
            out.push((
                r.offset,
                r.timestamp,
                String::from_utf8_lossy(r.value.unwrap_or_default()).into_owned(),
            ));
        }
        range = &range[b.header.total_len..];
    }
    out
}

#[test]
fn appended_batches_are_stamped_numbered_and_kept_per_segment() {
    let dir = tempfile::tempdir().expect("dir");
    let kept = dir.path().join("kept");
    let mut log = open(dir.path(), &kept);
    let first = log
        .append_encoded(&mut produced(&[&["a", "b"]]), 1_000, TimestampType::LogAppendTime)
        .expect("append");
    assert_eq!(first.first, 0);
    // `c` fills the first segment (3 records); `d, e` roll to the next: two kept ranges.
    let mut second = produced(&[&["c"], &["d", "e"]]);
    assert_eq!(second.records(), 3);
    let appended = log
        .append_encoded(&mut second, 2_000, TimestampType::LogAppendTime)
        .expect("append");
    assert_eq!(appended.first, 2);
    assert_eq!(appended.kept.len(), 2, "{:?}", appended.kept);
    assert_eq!(
        appended.kept.iter().map(|k| k.records).collect::<Vec<_>>(),
        [1, 2]
    );
    assert_eq!(
        read_kept(&kept, &first.kept[0]),
        [(0, 1_000, "a".into()), (1, 1_000, "b".into())]
    );
    assert_eq!(read_kept(&kept, &appended.kept[0]), [(2, 2_000, "c".into())]);
    assert_eq!(
        read_kept(&kept, &appended.kept[1]),
        [(3, 2_000, "d".into()), (4, 2_000, "e".into())]
    );
    // The log reads them with the log append time too, and serves the stamped batches.
    let mut seen = Vec::new();
    log.read(0, usize::MAX, &mut |r| seen.push((r.offset, r.timestamp)));
    assert_eq!(seen, [(0, 1_000), (1, 1_000), (2, 2_000), (3, 2_000), (4, 2_000)]);
    let mut out = Vec::new();
    log.read_batches(0, 5, 1 << 20, &mut out).expect("served");
    let h = BatchHeader::parse(&out).expect("a batch");
    assert!(h.is_log_append_time());
    assert_eq!(
        (h.max_timestamp, h.first_timestamp(), h.base_timestamp),
        (1_000, 1_000, 7)
    );
    assert_eq!(log.offset_for_timestamp(1_500), Some(2));
}

#[test]
fn kept_bytes_outlive_retention_and_the_partitions_deletion() {
    let dir = tempfile::tempdir().expect("dir");
    let kept = dir.path().join("kept");
    let mut log = open(dir.path(), &kept);
    let a = log
        .append_encoded(
            &mut produced(&[&["a", "b", "c"]]),
            1_000,
            TimestampType::LogAppendTime,
        )
        .expect("append");
    let b = log
        .append_encoded(&mut produced(&[&["d"]]), 2_000, TimestampType::LogAppendTime)
        .expect("append");
    assert_ne!(a.kept[0].file, b.kept[0].file);
    // Retention: the first segment's files go.
    assert_eq!(log.delete_segments_before(3), 3);
    assert_eq!(
        read_kept(&kept, &a.kept[0]).len(),
        3,
        "the kept link still holds a, b, c"
    );
    drop(log);
    std::fs::remove_dir_all(dir.path().join("t-0")).expect("partition deleted");
    assert_eq!(read_kept(&kept, &b.kept[0]), [(3, 2_000, "d".into())]);
    // A new partition of the same name keeps its segments under other names.
    let mut log = open(dir.path(), &kept);
    let c = log
        .append_encoded(&mut produced(&[&["x"]]), 3_000, TimestampType::LogAppendTime)
        .expect("append");
    assert_ne!(c.kept[0].file, a.kept[0].file);
    assert_eq!(read_kept(&kept, &a.kept[0]).len(), 3);
    assert_eq!(read_kept(&kept, &c.kept[0]), [(0, 3_000, "x".into())]);
}

#[test]
fn a_reopened_log_reuses_its_kept_link() {
    let dir = tempfile::tempdir().expect("dir");
    let kept = dir.path().join("kept");
    let mut log = open(dir.path(), &kept);
    let a = log
        .append_encoded(&mut produced(&[&["a"]]), 1_000, TimestampType::LogAppendTime)
        .expect("append");
    drop(log);
    let mut log = open(dir.path(), &kept);
    let b = log
        .append_encoded(&mut produced(&[&["b"]]), 2_000, TimestampType::LogAppendTime)
        .expect("append");
    assert_eq!(a.kept[0].file, b.kept[0].file, "the same segment, the same link");
    assert_eq!(read_kept(&kept, &b.kept[0]), [(1, 2_000, "b".into())]);
    assert_eq!(std::fs::read_dir(&kept).expect("kept").count(), 1);
}

#[test]
fn a_stamp_keeps_the_batch_valid() {
    let mut p = produced(&[&["a", "b"]]);
    p.stamp_log_append_time(42);
    let b = Batch::parse(p.bytes()).expect("the CRC was computed again");
    assert!(b.header.is_log_append_time());
    assert!(b.records().all(|r| r.timestamp == 42));
    let mut garbled = p.bytes().to_vec();
    garbled[40] ^= 1; // maxTimestamp, under the CRC
    assert!(Batch::parse(&garbled).is_err());
}

/// On a CreateTime topic (Kafka's default) a client's batches keep their producer's
/// timestamps: nothing is stamped over them, and the batch is served as it came.
#[test]
fn create_time_batches_keep_their_producers_timestamps() {
    let dir = tempfile::tempdir().expect("dir");
    let kept = dir.path().join("kept");
    let mut log = open(dir.path(), &kept);
    log.append_encoded(&mut produced(&[&["a", "b"]]), 1_000, TimestampType::CreateTime)
        .expect("append");
    let mut seen = Vec::new();
    log.read(0, usize::MAX, &mut |r| seen.push((r.offset, r.timestamp)));
    assert_eq!(seen, [(0, 7), (1, 7)]);
    let mut out = Vec::new();
    log.read_batches(0, 2, 1 << 20, &mut out).expect("served");
    let h = BatchHeader::parse(&out).expect("a batch");
    assert!(!h.is_log_append_time());
    assert_eq!((h.max_timestamp, h.base_timestamp), (7, 7));
}

//! Appending batches as a producer encoded them (`FileLog::append_wire`): the broker's
//! append path that a Produce request takes. The records must come out exactly as if the log had
//! encoded them itself; an invalid batch anywhere in a request writes nothing.

use offsetlab_engine::log::config::SegmentLimits;
use offsetlab_engine::log::PartitionLog;
use offsetlab_engine::record::NewRecord;
use offsetlab_records::batch::{self, BatchError};
use offsetlab_storage::{AppendError, Durability, FileLog, FlushPolicy};
use proptest::prelude::*;
use std::path::Path;

fn limits(max_records: usize) -> SegmentLimits {
    SegmentLimits {
        max_records,
        max_bytes: 4096,
        max_age_ms: 30_000,
    }
}

fn open(dir: &Path, max_records: usize, clean: bool) -> FileLog {
    FileLog::open(
        dir,
        limits(max_records),
        Durability::new(FlushPolicy::Never),
        clean,
    )
    .expect("open")
}

/// (timestamp, key, value) of every record, with its offset.
fn records(log: &dyn PartitionLog) -> Vec<String> {
    let mut out = Vec::new();
    log.read(0, usize::MAX, &mut |r| {
        out.push(format!("{} {} {:?} {:?}", r.offset, r.timestamp, r.key, r.value));
    });
    out
}

type Fields = (i64, Option<Vec<u8>>, Option<Vec<u8>>);

fn new_records(fields: &[Fields]) -> Vec<NewRecord<'_>> {
    fields
        .iter()
        .map(|(ts, k, v)| NewRecord::new(*ts, k.as_deref(), v.as_deref()))
        .collect()
}

/// A produce request's records for one partition: batches back to back, each numbered from 0,
/// as a producer sends them (baseOffset 0: the broker assigns the real one).
fn produce_request(batches: &[Vec<Fields>]) -> Vec<u8> {
    let mut buf = Vec::new();
    for b in batches {
        batch::encode_consecutive(&mut buf, 0, &new_records(b), -1);
    }
    buf
}

fn field() -> impl Strategy<Value = Fields> {
    (
        0i64..100_000,
        prop::option::of(prop::collection::vec(any::<u8>(), 0..8)),
        prop::option::weighted(0.9, prop::collection::vec(any::<u8>(), 0..300)),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Whatever the batching, a producer's batches read back exactly as the same records appended
    /// through the log's own encoder, and survive a crash and recovery unchanged.
    #[test]
    fn produced_batches_read_back_as_the_records_they_carry(
        requests in prop::collection::vec(prop::collection::vec(prop::collection::vec(field(), 1..6), 1..4), 1..8),
        max_records in 1usize..8,
    ) {
        let (a, b) = (tempfile::tempdir().expect("tempdir"), tempfile::tempdir().expect("tempdir"));
        let request_sizes: Vec<usize> = requests.iter().flatten().map(Vec::len).collect();
        let mut produced = open(a.path(), max_records, false);
        let mut encoded = open(b.path(), max_records, false);
        for (t, request) in requests.iter().enumerate() {
            let now = t as i64 * 1_000;
            let mut bytes = produce_request(request);
            let first = produced.append_wire(&mut bytes, now).expect("valid batches");
            let all: Vec<Fields> = request.iter().flatten().cloned().collect();
            prop_assert_eq!(first, encoded.try_append_batch(&new_records(&all), now).expect("append"));
        }
        prop_assert_eq!(records(&produced), records(&encoded));
        for s in produced.segments() {
            // Segments roll between batches only; only a segment's first batch may overshoot.
            let first_batch = request_sizes.contains(&s.records);
            prop_assert!(s.records <= max_records || first_batch, "segment {:?}", s);
        }
        let before = records(&produced);
        drop(produced);
        let recovered = open(a.path(), max_records, false);
        prop_assert_eq!(recovered.open_report().truncated_bytes, 0);
        prop_assert_eq!(records(&recovered), before);
    }
}

fn sample() -> Vec<Vec<Fields>> {
    let r = |i: u8| (i64::from(i), Some(vec![b'k', i]), Some(vec![b'v'; 20]));
    vec![vec![r(0), r(1), r(2)], vec![r(3), r(4)]]
}

#[test]
fn a_corrupt_batch_anywhere_in_a_request_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = open(dir.path(), 100, false);
    let mut ok = produce_request(&sample());
    log.append_wire(&mut ok, 0).expect("valid");
    let before = records(&log);

    // Flip one value byte of the second batch: its CRC no longer matches.
    let mut bad = produce_request(&sample());
    let last = bad.len() - 3;
    bad[last] ^= 0xff;
    let err = log.append_wire(&mut bad, 1).expect_err("corrupt");
    assert!(
        matches!(err, AppendError::Invalid(BatchError::BadCrc { .. })),
        "{err}"
    );

    // A batch cut short.
    let mut cut = produce_request(&sample());
    cut.truncate(cut.len() - 1);
    let err = log.append_wire(&mut cut, 1).expect_err("truncated");
    assert!(
        matches!(err, AppendError::Invalid(BatchError::Truncated { .. })),
        "{err}"
    );

    assert_eq!(records(&log), before);
    assert_eq!(log.log_end_offset(), 5);
}

#[test]
fn a_batch_whose_offsets_skip_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = open(dir.path(), 100, false);
    let fields = sample().concat();
    let recs = new_records(&fields);
    // Offsets 0, 2, 4: a valid batch for a log (compaction leaves such gaps), not from a producer.
    let gapped: Vec<_> = recs.iter().enumerate().map(|(i, r)| (2 * i as i64, *r)).collect();
    let mut bytes = Vec::new();
    batch::encode(&mut bytes, &gapped, -1);
    let err = log.append_wire(&mut bytes, 0).expect_err("gapped");
    assert!(
        matches!(err, AppendError::Invalid(BatchError::BadRecord { .. })),
        "{err}"
    );
    assert_eq!(log.log_end_offset(), 0);
    assert!(records(&log).is_empty());
}

#[test]
fn offsets_continue_from_the_log_end_and_the_producers_crc_stays_valid() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = open(dir.path(), 100, false);
    let mut first = produce_request(&sample());
    let mut second = produce_request(&sample());
    assert_eq!(log.append_wire(&mut first, 0).expect("first"), 0);
    assert_eq!(log.append_wire(&mut second, 1).expect("second"), 5);
    // The stored batches are the producer's bytes, baseOffset aside: they validate as written.
    let mut at = 0;
    let mut bases = Vec::new();
    while at < second.len() {
        let b = batch::Batch::parse(&second[at..]).expect("valid after the rewrite");
        bases.push(b.header.base_offset);
        at += b.header.total_len;
    }
    assert_eq!(bases, vec![5, 8]);
    let offsets: Vec<_> = records(&log)
        .iter()
        .map(|l| l.split(' ').next().unwrap_or("").to_string())
        .collect();
    assert_eq!(offsets, (0..10).map(|o| o.to_string()).collect::<Vec<_>>());
}

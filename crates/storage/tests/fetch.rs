//! Serving a fetch from the stored batches (`PartitionLog::read_batches`): whole batches, as
//! they were written, from the one holding the fetch offset; at least one, then as many as fit;
//! never one that reaches the upper bound; across segment files.

use offsetlab_engine::log::config::SegmentLimits;
use offsetlab_engine::log::PartitionLog;
use offsetlab_engine::record::NewRecord;
use offsetlab_records::batch::BatchHeader;
use offsetlab_storage::{Durability, FileLog, FlushPolicy};

/// Ten batches of ten records, in segments of 40 records.
fn log(dir: &std::path::Path) -> FileLog {
    let mut log = FileLog::open(
        dir,
        SegmentLimits {
            max_records: 40,
            max_bytes: 1 << 20,
            max_age_ms: i64::MAX,
        },
        Durability::new(FlushPolicy::Never),
        false,
    )
    .expect("open");
    let values: Vec<String> = (0..100).map(|i| format!("value-{i:03}")).collect();
    for chunk in values.chunks(10) {
        let batch: Vec<NewRecord<'_>> = chunk
            .iter()
            .map(|v| NewRecord::new(1_000, None, Some(v.as_bytes())))
            .collect();
        log.append_batch(&batch, 1_000);
    }
    log
}

/// (base offset, last offset) of each batch in `bytes`.
fn batches(mut bytes: &[u8]) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let h = BatchHeader::parse(bytes).expect("a whole batch");
        out.push((h.base_offset, h.last_offset()));
        bytes = &bytes[h.total_len..];
    }
    out
}

#[test]
fn a_fetch_gets_whole_batches_from_the_one_holding_its_offset() {
    let dir = tempfile::tempdir().expect("dir");
    let log = log(dir.path());
    let mut out = Vec::new();
    // From inside the second batch: it comes whole (the client drops 10..14), and the rest fit.
    let n = log.read_batches(15, 100, 1 << 20, &mut out).expect("served");
    let got = batches(&out);
    assert_eq!(got.first(), Some(&(10, 19)));
    assert_eq!(got.last(), Some(&(90, 99)), "across segment files");
    assert_eq!(got.len(), 9);
    assert_eq!(n, 85, "records at or after the fetch offset");

    // The upper bound (the high watermark, or the LSO under read_committed): no batch reaching it.
    out.clear();
    log.read_batches(15, 45, 1 << 20, &mut out).expect("served");
    assert_eq!(batches(&out), vec![(10, 19), (20, 29), (30, 39)]);

    // A byte budget smaller than one batch still gets one (KIP-74), and no more.
    out.clear();
    log.read_batches(0, 100, 1, &mut out).expect("served");
    assert_eq!(batches(&out), vec![(0, 9)]);

    // Nothing below the bound to serve.
    out.clear();
    assert_eq!(log.read_batches(40, 45, 1 << 20, &mut out), None);
    assert!(out.is_empty());

    // The bytes are the records the log holds.
    out.clear();
    log.read_batches(0, 100, 1 << 20, &mut out).expect("served");
    let mut values = Vec::new();
    log.read(0, usize::MAX, &mut |r| values.push(r.value.map(<[u8]>::to_vec)));
    assert_eq!(values.len(), 100);
    assert!(out.windows(9).any(|w| w == b"value-099"));
}

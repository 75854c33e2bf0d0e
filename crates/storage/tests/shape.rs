//! A kept segment's shape reads back as the segment it replaced, values zeroed: every byte
//! range a history line can name, every batch valid, offsets, timestamps, keys and headers kept.

use offsetlab_records::batch::{encode_consecutive, Batch, BatchHeader};
use offsetlab_records::NewRecord;
use offsetlab_storage::shape::{keep_shape, read_shape, shape_path};
use proptest::prelude::*;

/// (timestamp, key, value length, value byte) per record, batches of them.
type Spec = Vec<Vec<(i64, Option<Vec<u8>>, Option<usize>, u8)>>;

fn spec() -> impl Strategy<Value = Spec> {
    let record = (
        0i64..1 << 40,
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..12)),
        proptest::option::of(0usize..3000),
        1u8..,
    );
    proptest::collection::vec(proptest::collection::vec(record, 1..20), 1..30)
}

/// The encoded batches, and where each batch starts.
fn encode(spec: &Spec) -> (Vec<u8>, Vec<usize>) {
    let mut buf = Vec::new();
    let mut starts = Vec::new();
    let mut offset = 0;
    for batch in spec {
        let values: Vec<Option<Vec<u8>>> = batch.iter().map(|r| r.2.map(|n| vec![r.3; n])).collect();
        let records: Vec<NewRecord<'_>> = batch
            .iter()
            .zip(&values)
            .map(|(r, v)| NewRecord::new(r.0, r.1.as_deref(), v.as_deref()))
            .collect();
        starts.push(buf.len());
        encode_consecutive(&mut buf, offset, &records, -1);
        offset += records.len() as i64;
    }
    (buf, starts)
}

/// A record read back: (offset, timestamp, key, value).
type Read = (i64, i64, Option<Vec<u8>>, Option<Vec<u8>>);

/// Every record of back-to-back batches.
fn records(mut bytes: &[u8]) -> Vec<Read> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let header = BatchHeader::parse(bytes).expect("a header");
        let batch = Batch::parse(bytes).expect("a valid batch: its CRC was written again");
        out.extend(batch.records().map(|r| {
            (
                r.offset,
                r.timestamp,
                r.key.map(<[u8]>::to_vec),
                r.value.map(<[u8]>::to_vec),
            )
        }));
        bytes = &bytes[header.total_len..];
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_shape_reads_back_as_its_segment_with_values_zeroed(spec in spec(), pick in any::<prop::sample::Index>(), span in 1usize..8) {
        let dir = tempfile::tempdir().expect("dir");
        let kept = dir.path().join("t-0-00000000000000000000.log");
        let (bytes, starts) = encode(&spec);
        std::fs::write(&kept, &bytes).expect("write");
        keep_shape(&kept).expect("shaped");
        prop_assert!(!kept.exists(), "the kept file is gone");
        let whole = read_shape(&shape_path(&kept), 0, bytes.len() as u64).expect("read whole");
        prop_assert_eq!(whole.len(), bytes.len());
        let (before, after) = (records(&bytes), records(&whole));
        prop_assert_eq!(before.len(), after.len());
        for (b, a) in before.iter().zip(&after) {
            prop_assert_eq!((b.0, b.1, &b.2), (a.0, a.1, &a.2));
            prop_assert_eq!(b.3.as_ref().map(Vec::len), a.3.as_ref().map(Vec::len));
            prop_assert!(a.3.iter().flatten().all(|&x| x == 0));
        }
        // Any run of whole batches a history line names reads back alone.
        let first = pick.index(starts.len());
        let last = (first + span).min(starts.len());
        let end = starts.get(last).copied().unwrap_or(bytes.len());
        let part = read_shape(&shape_path(&kept), starts[first] as u64, (end - starts[first]) as u64).expect("a range");
        prop_assert_eq!(&part[..], &whole[starts[first]..end]);
    }
}

/// Values compress away: a segment of 100-byte records leaves a small fraction of itself.
#[test]
fn a_shape_is_a_small_fraction_of_its_segment() {
    let spec: Spec = (0..200)
        .map(|b| {
            (0..50)
                .map(|i| {
                    (
                        1_700_000_000_000 + b * 50 + i,
                        Some(format!("k-{}", i % 7).into_bytes()),
                        Some(100),
                        7u8,
                    )
                })
                .collect()
        })
        .collect();
    let dir = tempfile::tempdir().expect("dir");
    let kept = dir.path().join("kept.log");
    let (bytes, _) = encode(&spec);
    std::fs::write(&kept, &bytes).expect("write");
    let shape = keep_shape(&kept).expect("shaped");
    assert!(
        shape * 10 < bytes.len() as u64,
        "{shape} of {} bytes",
        bytes.len()
    );
}

/// What a client at full speed leaves once retention deleted its segment: batches of 1,500
/// keyless 100-byte records a millisecond or two apart. Laid out record after record, zstd
/// pays about 3.6 bytes a record for their offset and timestamp deltas (a soak of 12 million
/// records a minute left 44 MB a minute of shapes); in columns, well under one.
#[test]
fn a_full_speed_clients_shape_costs_under_a_byte_a_record() {
    let spec: Spec = (0..30)
        .map(|b| {
            (0..1_500)
                .map(|i| (1_700_000_000_000 + b * 3 + i / 700, None, Some(100), b'v'))
                .collect()
        })
        .collect();
    let records: u64 = spec.iter().map(|b| b.len() as u64).sum();
    let dir = tempfile::tempdir().expect("dir");
    let kept = dir.path().join("kept.log");
    let (bytes, _) = encode(&spec);
    std::fs::write(&kept, &bytes).expect("write");
    let shape = keep_shape(&kept).expect("shaped");
    assert!(shape < records, "{shape} bytes for {records} records");
    let back = read_shape(&shape_path(&kept), 0, bytes.len() as u64).expect("read");
    assert_eq!(back.len(), bytes.len());
    assert_eq!(records_of(&back), records as usize);
}

fn records_of(bytes: &[u8]) -> usize {
    records(bytes).len()
}

/// A shape written before columns — one zstd frame of the batches as they lay, no flag — reads
/// back as it did.
#[test]
fn a_shape_from_before_columns_reads_back() {
    let spec: Spec = (0..40)
        .map(|b| {
            (0..25)
                .map(|i| (1_700_000_000_000 + b * 25 + i, Some(vec![b as u8]), Some(30), 0u8))
                .collect()
        })
        .collect();
    let (bytes, starts) = encode(&spec);
    let packed = offsetlab_records::compression::compress(&bytes, offsetlab_records::Compression::Zstd);
    let mut old = Vec::new();
    old.extend_from_slice(&0u64.to_be_bytes());
    old.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    old.extend_from_slice(&(packed.len() as u32).to_be_bytes());
    old.extend_from_slice(&packed);
    let dir = tempfile::tempdir().expect("dir");
    let shape = shape_path(&dir.path().join("old.log"));
    std::fs::write(&shape, &old).expect("write");
    assert_eq!(read_shape(&shape, 0, bytes.len() as u64).expect("whole"), bytes);
    let (from, to) = (starts[3], starts[9]);
    assert_eq!(
        read_shape(&shape, from as u64, (to - from) as u64).expect("a range"),
        &bytes[from..to]
    );
}

//! The produce validator under criterion: one Produce request's worth of batches (1 MB, about
//! 9,000 records of a short key and a 100-byte value, as librdkafka sends them with
//! `batch.size=1000000`), validated whole with the lab's rule for keys and values (text) — the
//! broker's own work per record before the log's append. Run with
//! `cargo bench -p offsetlab-records`; `scripts/bench_listener.sh` measures the whole broker.

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use offsetlab_records::batch::encode_consecutive;
use offsetlab_records::{is_text, validate_produce, NewRecord};

const REQUEST_BYTES: usize = 1_000_000;

/// Batches of 1,000 records, back to back, until the request holds about a megabyte.
fn request() -> (Vec<u8>, usize) {
    let value = [b'v'; 100];
    let keys: Vec<String> = (0..1_000).map(|i| format!("k{i}")).collect();
    let records: Vec<NewRecord<'_>> = keys
        .iter()
        .map(|k| NewRecord::new(1_700_000_000_000, Some(k.as_bytes()), Some(&value)))
        .collect();
    let mut buf = Vec::new();
    let mut n = 0;
    while buf.len() < REQUEST_BYTES {
        encode_consecutive(&mut buf, 0, &records, -1);
        n += records.len();
    }
    (buf, n)
}

fn validate(c: &mut Criterion) {
    let (bytes, records) = request();
    let mut group = c.benchmark_group("produce");
    group.throughput(Throughput::Elements(records as u64));
    group.bench_function("validate 1 MB of 100-byte records", |b| {
        b.iter_batched(
            || Bytes::from(bytes.clone()),
            |bytes| {
                let mut text = |k: Option<&[u8]>, v: Option<&[u8]>, _: &[u8]| {
                    let ok = |b: Option<&[u8]>| b.is_none_or(is_text);
                    if ok(k) && ok(v) {
                        Ok(())
                    } else {
                        Err("not text")
                    }
                };
                validate_produce(bytes, &mut text).expect("valid")
            },
            BatchSize::LargeInput,
        );
    });
    group.bench_function("walk only", |b| {
        b.iter_batched(
            || Bytes::from(bytes.clone()),
            |bytes| validate_produce(bytes, &mut |_, _, _| Ok(())).expect("valid"),
            BatchSize::LargeInput,
        );
    });
    group.bench_function("crc only", |b| {
        b.iter(|| crc32c::crc32c(&bytes));
    });
    group.finish();
}

criterion_group!(benches, validate);
criterion_main!(benches);

//! The durable log under criterion: appends of 100-byte records in produce-sized batches, and
//! reads back in fetches of 500. `offsetlab bench storage` measures the same at ten million
//! records beside the machine's limits; this bench is the quick loop for working on the code.
//! Run with `cargo bench -p offsetlab-storage`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use offsetlab_engine::log::{PartitionLog, TopicConfig};
use offsetlab_engine::record::NewRecord;
use offsetlab_storage::{Durability, FileLog, FlushPolicy};

const RECORDS: usize = 1_000_000;
const BATCH: usize = 4096;

fn keys() -> Vec<String> {
    (0..RECORDS).map(|i| format!("o-{i:010}")).collect()
}

fn fill(log: &mut FileLog, keys: &[String]) {
    let value = [b'v'; 100];
    for chunk in keys.chunks(BATCH) {
        let batch: Vec<NewRecord<'_>> = chunk
            .iter()
            .map(|k| NewRecord::new(0, Some(k.as_bytes()), Some(&value)))
            .collect();
        log.append_batch(&batch, 0);
    }
}

fn open(dir: &std::path::Path) -> FileLog {
    FileLog::open(
        dir,
        TopicConfig::default().segment_limits(),
        Durability::new(FlushPolicy::Never),
        false,
    )
    .expect("open")
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("file-log-1M");
    g.sample_size(10);
    g.throughput(Throughput::Elements(RECORDS as u64));
    let keys = keys();
    g.bench_function("append 1M x 100-byte records, --flush never", |b| {
        b.iter_batched(
            || tempfile::tempdir().expect("tempdir"),
            |dir| {
                let mut log = open(dir.path());
                fill(&mut log, &keys);
                dir
            },
            BatchSize::PerIteration,
        )
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = open(dir.path());
    fill(&mut log, &keys);
    g.bench_function("read 1M records in fetches of 500, warm", |b| {
        b.iter(|| {
            let mut from = 0;
            let mut n = 0;
            loop {
                let mut last = None;
                let got = log.read(from, 500, &mut |r| last = Some(r.offset));
                if got == 0 {
                    break;
                }
                n += got;
                from = last.map_or(from, |o| o + 1);
            }
            assert_eq!(n, RECORDS);
        })
    });
    g.finish();
}

criterion_group!(storage, benches);
criterion_main!(storage);

//! Engine benchmarks: the in-memory log at ten million records, and the consumer loop.
//!
//! Figures are recorded in docs/BENCHMARKS.md. Run with `cargo bench -p offsetlab-engine`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use offsetlab_engine::consumer::ConsumerConfig;
use offsetlab_engine::lab::ProduceSpec;
use offsetlab_engine::log::memory::MemoryLog;
use offsetlab_engine::log::{PartitionLog, TopicConfig};
use offsetlab_engine::record::NewRecord;
use offsetlab_engine::sink::SinkKind;
use offsetlab_engine::strategy::{AutoOffsetReset, CommitStrategy};
use offsetlab_engine::Lab;
use std::hint::black_box;

const RECORDS: usize = 10_000_000;
const VALUE: [u8; 100] = [b'x'; 100];

fn filled_log() -> MemoryLog {
    fill(MemoryLog::new(TopicConfig::default().segment_limits()))
}

/// Appends `RECORDS` 100-byte records.
fn fill(mut log: MemoryLog) -> MemoryLog {
    for i in 0..RECORDS {
        log.append(NewRecord::new(i as i64, None, Some(&VALUE)), 0);
    }
    log
}

fn log_benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("memory-log-10M");
    g.sample_size(10);
    g.throughput(Throughput::Elements(RECORDS as u64));
    g.bench_function("append 10M x 100-byte records", |b| {
        b.iter_batched(
            || MemoryLog::new(TopicConfig::default().segment_limits()),
            fill,
            BatchSize::PerIteration,
        )
    });
    let log = filled_log();
    eprintln!(
        "memory per retained 100-byte record: {:.1} bytes ({} records, {} bytes)",
        log.size_in_bytes() as f64 / log.record_count() as f64,
        log.record_count(),
        log.size_in_bytes()
    );
    g.bench_function("read back 10M records in fetches of 500", |b| {
        b.iter(|| {
            let mut next = 0;
            let mut bytes = 0usize;
            loop {
                let n = log.read(next, 500, &mut |r| {
                    bytes += r.value.map_or(0, <[u8]>::len);
                    next = r.offset + 1;
                });
                if n == 0 {
                    break;
                }
            }
            black_box(bytes)
        })
    });
    g.finish();
}

fn consumer_benches(c: &mut Criterion) {
    const N: u64 = 1_000_000;
    let mut g = c.benchmark_group("consumer-loop-1M");
    g.sample_size(10);
    g.throughput(Throughput::Elements(N));
    g.bench_function(
        "poll + process 1M orders, manual-batch, in-memory upsert sink",
        |b| {
            b.iter_batched(
                || {
                    let mut lab = Lab::default();
                    lab.create_topic("orders", TopicConfig::default()).expect("topic");
                    lab.produce(
                        "orders",
                        &ProduceSpec {
                            count: N,
                            ..ProduceSpec::default()
                        },
                    )
                    .expect("produce");
                    lab.add_consumer(ConsumerConfig {
                        strategy: CommitStrategy::ManualBatch,
                        sink: SinkKind::Upsert,
                        max_poll_records: 500,
                        auto_offset_reset: AutoOffsetReset::Earliest,
                        ..ConsumerConfig::new("c1", "g", "orders")
                    })
                    .expect("consumer");
                    lab
                },
                |mut lab| {
                    while lab.poll("c1").expect("poll") > 0 {
                        lab.process("c1", None).expect("process");
                    }
                    lab
                },
                BatchSize::PerIteration,
            )
        },
    );
    g.finish();
}

/// A rebalance storm: 100 members join a group over 1,000 partitions one by one (each join is a
/// rebalance every live member takes part in from its next poll), then crash one by one (each
/// crash a session timeout and another rebalance).
fn rebalance_storm(c: &mut Criterion) {
    const MEMBERS: usize = 100;
    let mut g = c.benchmark_group("rebalance-storm");
    g.sample_size(10);
    g.bench_function(
        "100 members join then crash over 1000 partitions (200 rebalances)",
        |b| {
            b.iter_batched(
                || {
                    let mut lab = Lab::default();
                    lab.create_topic(
                        "orders",
                        TopicConfig {
                            partitions: 1000,
                            ..TopicConfig::default()
                        },
                    )
                    .expect("topic");
                    lab
                },
                |mut lab| {
                    let names: Vec<String> = (0..MEMBERS).map(|i| format!("c{i:03}")).collect();
                    for (i, name) in names.iter().enumerate() {
                        lab.add_consumer(ConsumerConfig {
                            strategy: CommitStrategy::ManualBatch,
                            auto_offset_reset: AutoOffsetReset::Earliest,
                            ..ConsumerConfig::new(name, "g", "orders")
                        })
                        .expect("join");
                        for other in &names[..i] {
                            lab.poll(other).expect("rejoin");
                        }
                    }
                    for (i, name) in names.iter().enumerate() {
                        lab.crash(name).expect("crash");
                        lab.tick(45_000).expect("session timeout");
                        for other in &names[i + 1..] {
                            lab.poll(other).expect("rejoin");
                        }
                    }
                    assert!(lab.group("g").expect("g").members.is_empty());
                    lab
                },
                BatchSize::PerIteration,
            )
        },
    );
    g.finish();
}

criterion_group!(benches, log_benches, consumer_benches, rebalance_storm);
criterion_main!(benches);

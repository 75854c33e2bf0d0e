//! The explorer's full matrix (6 strategies × 3 sinks, every crash point) on the seed scenario.
//! Target: under 100 ms. Run with `cargo bench -p offsetlab-scenario`.

use criterion::{criterion_group, criterion_main, Criterion};
use offsetlab_scenario::explore::explore;
use offsetlab_scenario::{Script, SEED_SCENARIO};

fn bench(c: &mut Criterion) {
    let script = Script::parse(SEED_SCENARIO).expect("seed");
    c.bench_function("explore the seed: 18 cells, every crash point", |b| {
        b.iter(|| explore(&script, None).expect("explore"))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);

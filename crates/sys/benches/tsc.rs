//! Cost of one timestamp read: bare `rdtsc`, `lfence; rdtsc`, `rdtscp`, `Clock::now` and
//! `clock_gettime(CLOCK_MONOTONIC)`.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use latlab_core::units::TscRate;
use latlab_sys::{clocks, tsc};

fn reads(c: &mut Criterion) {
    let mut g = c.benchmark_group("timestamp");
    g.bench_function("rdtsc bare", |b| b.iter(|| black_box(tsc::read_bare())));
    g.bench_function("lfence+rdtsc (tsc::read)", |b| {
        b.iter(|| black_box(tsc::read()))
    });
    g.bench_function("rdtscp (tsc::read_cpu)", |b| {
        b.iter(|| black_box(tsc::read_cpu()))
    });
    // A fixed rate: the conversion is not benchmarked, only the read, so calibration is moot.
    let clock = tsc::Clock::from_tsc_rate(TscRate::from_hz(2_000_000_000).unwrap());
    g.bench_function("Clock::now (tsc)", |b| b.iter(|| black_box(clock.now())));
    g.bench_function("clock_gettime MONOTONIC", |b| {
        b.iter(|| black_box(clocks::monotonic_ns()))
    });
    g.finish();
}

criterion_group!(benches, reads);
criterion_main!(benches);

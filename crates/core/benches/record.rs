//! Hot-path cost of recording into a latency histogram, with precomputed inputs (so the
//! benchmark measures `record`, not a random-number generator).
#![allow(missing_docs)] // criterion_group! generates undocumented items

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use latlab_core::hist::LatencyHistogram;
use latlab_core::units::{Nanos, Ticks, TscRate};

fn inputs() -> Vec<u64> {
    // A latency-like mix: mostly 15-40 ns, a tail up to milliseconds (xorshift, seeded).
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match x % 1000 {
                0 => 1_000 + x % 2_000_000,
                1..=20 => 100 + x % 5_000,
                _ => 15 + x % 25,
            }
        })
        .collect()
}

fn record(c: &mut Criterion) {
    let values = inputs();
    let mut g = c.benchmark_group("histogram");
    g.throughput(Throughput::Elements(values.len() as u64));
    g.bench_function("record 4096 values", |b| {
        let mut h = LatencyHistogram::default();
        b.iter(|| {
            for &v in &values {
                h.record(Nanos(black_box(v)));
            }
        })
    });
    let conv = TscRate::from_hz(2_596_096_000).unwrap().fast();
    g.bench_function("ticks->ns + record 4096 values", |b| {
        let mut h = LatencyHistogram::default();
        b.iter(|| {
            for &v in &values {
                h.record(conv.to_nanos(Ticks(black_box(v))));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, record);
criterion_main!(benches);

//! Cost of one timestamp read: bare `rdtsc`, `lfence; rdtsc`, `rdtscp`, `Clock::now` and
//! `clock_gettime(CLOCK_MONOTONIC)`, plus the other ways of ordering `rdtsc` (benchmark-only
//! peers, to show what any ordered read costs on the machine at hand).
#![allow(missing_docs)]
#![allow(unsafe_code)] // part of latlab-sys: the fence variants below use intrinsics

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
    #[cfg(target_arch = "x86_64")]
    fence_variants(&mut g);
    g.finish();
}

#[cfg(target_arch = "x86_64")]
fn fence_variants(g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    use std::arch::x86_64::{_mm_lfence, _mm_mfence, _rdtsc};
    g.bench_function("peer: rdtsc+lfence", |b| {
        // SAFETY: rdtsc and lfence are baseline x86_64 instructions with no memory operands.
        b.iter(|| black_box(unsafe { (_rdtsc(), _mm_lfence()).0 }))
    });
    g.bench_function("peer: lfence+rdtsc+lfence", |b| {
        b.iter(|| {
            // SAFETY: as above.
            black_box(unsafe {
                _mm_lfence();
                (_rdtsc(), _mm_lfence()).0
            })
        })
    });
    g.bench_function("peer: mfence+rdtsc", |b| {
        b.iter(|| {
            // SAFETY: mfence is a baseline SSE2 instruction, always present on x86_64.
            black_box(unsafe {
                _mm_mfence();
                _rdtsc()
            })
        })
    });
}

criterion_group!(benches, reads);
criterion_main!(benches);

//! Short real runs of thread sets (root-only parts skip with a reason).

use latlab_sched::cmdline::parse;
use latlab_sched::run::{run, RunParams};

fn hz() -> u64 {
    latlab_sys::tsc::kernel_rate()
        .map(|(r, _)| r.hz())
        .unwrap_or_else(|| {
            latlab_sys::tsc::calibrate(latlab_core::units::Nanos::from_millis(20))
                .rate
                .hz()
        })
}

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_owned).collect()
}

fn params() -> RunParams {
    RunParams {
        tsc_hz: hz(),
        calibration_iterations: 20_000,
    }
}

#[test]
fn cpu_threads_record_blocks() {
    let (spec, _) = parse(&args("-n 2 -d 200ms -a -p NORMAL -t 1 -w CPU_YIELD 1ms")).unwrap();
    let out = run(&spec, params()).unwrap();
    assert_eq!(out.threads.len(), 2);
    for t in &out.threads {
        assert!(
            !t.blocks.is_empty(),
            "thread {} recorded nothing",
            t.spec.id
        );
        for b in &t.blocks {
            assert!(b.end_ns >= b.start_ns);
            assert!(b.end_ns <= 200_000_000 + 5_000_000, "{b:?}");
        }
        assert!(t.cpu_received_ns > 0);
    }
    let y = &out.threads[1];
    assert!(y.yields > 10, "yielded {} times", y.yields);
    assert!(y
        .blocks
        .iter()
        .any(|b| b.end == latlab_sched::recorder::EndReason::Yield));
    println!("{:?}", out.calibrations);
}

#[test]
fn periodic_and_lat_account_every_activation() {
    let (spec, _) = parse(&args(
        "-n 3 -d 300ms -t 0 -w PERIODIC 1ms 10ms -i HR -t 1 -w LAT 2ms -i TIMERFD -t 2 -w CPU_PERIODIC 1ms 20ms -p LOW",
    ))
    .unwrap();
    let out = run(&spec, params()).unwrap();
    let p = &out.threads[0];
    // 300 ms / 10 ms: 30 releases, each counted
    assert_eq!(p.activations.len(), 30, "{:?}", p.activations.len());
    for (k, a) in p.activations.iter().enumerate() {
        assert_eq!(a.index, k as u64);
        assert_eq!(a.release_ns, k as u64 * 10_000_000);
        assert!(a.start_ns >= a.release_ns);
    }
    let l = &out.threads[1];
    assert!(l.activations.len() > 50, "{}", l.activations.len());
    assert!(l.activations.iter().all(|a| a.start_ns >= a.release_ns));
    assert_eq!(l.timerfd_expirations, Some(l.activations.len() as u64));
    assert_eq!(
        (l.dropped, l.blocks.len()),
        (0, 0),
        "LAT records no execution map"
    );
    let c = &out.threads[2];
    assert_eq!(c.activations.len(), 15);
}

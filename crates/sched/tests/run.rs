//! Short real runs of thread sets (root-only parts print a SKIP line with the reason).

use latlab_sched::cmdline::parse;
use latlab_sched::run::{run, RunParams};
use latlab_testutil::require_root;

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
    assert!(y.yields > 0, "yielded {} times", y.yields);
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
    // 300 ms / 10 ms: at most 30 releases, numbered in order from the run's start (a
    // normal-priority thread on a loaded machine may not reach the last ones before the
    // run ends: those are never released)
    assert!(
        (1..=30).contains(&p.activations.len()),
        "{:?}",
        p.activations.len()
    );
    for (k, a) in p.activations.iter().enumerate() {
        assert_eq!(a.index, k as u64);
        assert_eq!(a.release_ns, k as u64 * 10_000_000);
        assert!(a.start_ns >= a.release_ns);
    }
    let l = &out.threads[1];
    assert!(!l.activations.is_empty());
    assert!(l.activations.iter().all(|a| a.start_ns >= a.release_ns));
    assert_eq!(l.timerfd_expirations, Some(l.activations.len() as u64));
    assert_eq!(
        (l.dropped, l.blocks.len()),
        (0, 0),
        "LAT records no execution map"
    );
    let c = &out.threads[2];
    assert!(
        (1..=15).contains(&c.activations.len()),
        "{}",
        c.activations.len()
    );
    assert!(c
        .activations
        .windows(2)
        .all(|w| w[1].index == w[0].index + 1 && w[1].release_ns > w[0].release_ns));
}

#[test]
fn offsets_placement_busy_timer_and_scanning() {
    let cpu = *latlab_sys::sched::allowed_cpus().last().unwrap();
    let (spec, _) = parse(&args(&format!(
        "-n 3 -d 300ms -t 0 -w CPU_SCAN_YIELD 16KB 2ms --cpu {cpu} -t 1 -s 100ms -f 200ms -p LOW -t 2 -w LAT 5ms -i BUSY"
    )))
    .unwrap();
    let out = run(&spec, params()).unwrap();
    let scan = &out.threads[0];
    assert_eq!(scan.cpus, vec![cpu]);
    assert_eq!(scan.migrations, 0, "pinned: no migration");
    assert!(scan.scan_passes > 0 && scan.scan_lines >= scan.scan_passes * 256);
    assert!(scan.yields > 0);
    let late = &out.threads[1];
    for b in &late.blocks {
        assert!(
            b.start_ns >= 100_000_000 && b.end_ns <= 201_000_000,
            "{b:?}"
        );
    }
    let lat = &out.threads[2];
    assert!(!lat.activations.is_empty());
    assert!(lat.activations.iter().all(|a| a.start_ns >= a.release_ns));
    // LAT semantics (the paper's): each wakeup is asked for a period after the last one
    for w in lat.activations.windows(2) {
        assert!(w[1].release_ns >= w[0].start_ns + 5_000_000, "{w:?}");
    }
}

#[test]
fn soft_reservation_and_native_periodic() {
    require_root!("SCHED_DEADLINE needs root or CAP_SYS_NICE");
    let (spec, _) = parse(&args(
        "-n 2 -d 300ms -t 0 -w PERIODIC 1ms 10ms -rs 2ms 10ms -t 1 -w PERIODIC 1ms 20ms -i NATIVE --timer-slack 1us",
    ))
    .unwrap();
    let out = run(&spec, params()).unwrap();
    assert_eq!(out.threads[0].policy, "SCHED_DEADLINE");
    assert_eq!(out.threads[0].activations.len(), 30);
    assert_eq!(out.threads[1].activations.len(), 15);
    assert_eq!(
        out.threads[1].timer_slack_ns, 1_000,
        "--timer-slack is in force"
    );
    assert!(out.threads[1]
        .activations
        .iter()
        .all(|a| a.finish_ns.is_some()));
}

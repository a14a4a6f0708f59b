//! Tests of the probe: the run end to end over loopback, the receiver fed a scripted
//! arrival order, the schedule and the lateness verdict.

use super::ring::Shared;
use super::rx::Receiver;
use super::*;
use crate::nf::{self, NfConfig};
use crate::wire::{self, ProbeRepr, WireError};
use latlab_core::hist::LatencyHistogram;
use latlab_core::parse::Percentile;
use latlab_core::units::Nanos;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::Ordering;

#[test]
fn sources_parse() {
    let s = Sources::parse("kernel").unwrap();
    assert!(s.user && s.kernel && !s.hardware);
    assert!(Sources::parse("all").unwrap().hardware);
    assert!(Sources::parse("user,nic").unwrap_err().contains("accepted"));
}

#[test]
fn lateness_verdict() {
    let mut h = LatencyHistogram::default();
    for _ in 0..100 {
        h.record(Nanos(100));
    }
    assert!(!fell_behind(&h, 0, 10_000.0));
    for _ in 0..10 {
        h.record(Nanos(20_000));
    }
    assert!(fell_behind(&h, 10, 10_000.0));
}

fn reflector() -> (nf::NfHandle, SocketAddr) {
    let nf = nf::start(
        &NfConfig::reflect("127.0.0.1:0".parse().unwrap()),
        Clock::monotonic(),
    )
    .unwrap();
    let a = nf.local[0];
    (nf, a)
}

#[test]
fn open_loop_through_a_reflector_counts_and_decomposes_every_probe() {
    let (nf, to) = reflector();
    let mut cfg = ProbeConfig::new(to);
    cfg.milli_pps = 2_000_000; // 2 kpps
    cfg.duration = Nanos::from_millis(500);
    cfg.warmup = Nanos::from_millis(100);
    cfg.flows = 3;
    let clock = Clock::monotonic();
    let out = run(&cfg.clone().validated().unwrap(), clock).unwrap();
    nf.stop();
    let c = out.counters();
    assert_eq!(c["sent"], 1200, "{c:?}");
    assert_eq!(c["sent_warmup"], 200);
    assert_eq!(c["lost"], 0, "{c:?}");
    assert_eq!(c["duplicates"], 0);
    let get = |n: &str| &out.histograms.iter().find(|(k, _)| k == n).unwrap().1;
    assert_eq!(get(series::USER_ACTUAL).count(), 1000);
    assert_eq!(get(series::USER_SCHED).count(), 1000);
    assert_eq!(get(series::LATENESS).count(), 1000);
    let per_iv: u64 = out.tx.lateness_intervals.iter().map(|h| h.count()).sum();
    assert_eq!(
        per_iv, 1000,
        "every measured probe in one lateness interval"
    );
    // the interval log holds the three series and reads back
    let log = crate::result::probe_interval_log(&out, std::time::SystemTime::now(), cfg.interval)
        .unwrap();
    let back = latlab_core::results::hlog::read(&log, cfg.hist).unwrap();
    let count = |tag: &str| -> u64 {
        back.iter()
            .filter(|i| i.tag == tag)
            .map(|i| i.hist.count())
            .sum()
    };
    assert_eq!(count(series::LATENESS), 1000);
    assert_eq!(count(series::USER_ACTUAL), 1000);
    assert_eq!(get("flow2.user.actual").count(), 334); // k = 200, 203, …, 1198
                                                       // every measured probe decomposed, none inconsistent: the segments add up
    assert_eq!(
        c["decomposed"] + c["missing_rx_kernel_timestamp"] + c["missing_tx_kernel_timestamp"],
        1000,
        "{c:?}"
    );
    assert_eq!(c["decomposition_out_of_order"], 0, "{c:?}");
    assert_eq!(c["decomposition_residence_too_long"], 0, "{c:?}");
    assert_eq!(get(series::SEG_E2E).count(), c["decomposed"]);
    assert!(c["decomposed"] >= 990, "{c:?}");
    // scheduled latency is never below actual latency
    assert!(
        get(series::USER_SCHED).value_at(Percentile::LADDER[0])
            >= get(series::USER_ACTUAL).value_at(Percentile::LADDER[0])
    );
}

#[test]
fn pingpong_through_a_reflector() {
    let (nf, to) = reflector();
    let mut cfg = ProbeConfig::new(to);
    cfg.mode = Mode::Pingpong;
    cfg.duration = Nanos::from_millis(200);
    cfg.warmup = Nanos::from_millis(50);
    let out = run(&cfg.clone().validated().unwrap(), Clock::monotonic()).unwrap();
    nf.stop();
    let c = out.counters();
    assert!(c["sent"] > 20, "{c:?}");
    // the closed loop gives up on a probe after PINGPONG_TIMEOUT (10 ms): on a loaded
    // machine the reflector can miss that now and then, and each such probe is counted
    // lost — but a reflector answers nearly all of them
    assert!(c["lost"] * 10 <= c["sent"], "{c:?}");
    let n = out
        .histograms
        .iter()
        .find(|(k, _)| k == series::USER_ACTUAL)
        .unwrap()
        .1
        .count();
    assert_eq!(n, c["received_unique"] - c["received_warmup"], "{c:?}");
}

/// The closed loop blocks without a receive timeout; when nobody answers, the
/// watchdog must wake it after PINGPONG_TIMEOUT (to 2x), so every probe is counted
/// lost and the run still ends on time.
#[test]
fn pingpong_without_answers_is_woken_and_counts_every_probe_lost() {
    // a bound socket that never answers (and so no ICMP error either)
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut cfg = ProbeConfig::new(silent.local_addr().unwrap());
    cfg.mode = Mode::Pingpong;
    cfg.sources = Sources::parse("user").unwrap();
    cfg.duration = Nanos::from_millis(300);
    cfg.warmup = Nanos::ZERO;
    let t0 = std::time::Instant::now();
    let out = run(&cfg.clone().validated().unwrap(), Clock::monotonic()).unwrap();
    let took = t0.elapsed();
    let c = out.counters();
    let per = PINGPONG_TIMEOUT.get() / 1_000_000;
    // each probe waits between one and two timeouts (plus scheduling slack)
    assert!(
        c["sent"] >= 300 / (3 * per) && c["sent"] <= 300 / per + 1,
        "{c:?}"
    );
    assert_eq!(c["lost"], c["sent"], "{c:?}");
    assert!(took < std::time::Duration::from_secs(3), "took {took:?}");
}

/// Feeds the receiver a scripted arrival order: duplicates, reordering and losses
/// must come out exactly.
#[test]
fn receiver_counts_duplicates_reordering_and_foreign_probes_exactly() {
    let mut cfg = ProbeConfig::new("127.0.0.1:9".parse().unwrap());
    cfg.flows = 2;
    cfg.sources = Sources::parse("user").unwrap();
    cfg.milli_pps = 1_000_000;
    cfg.duration = Nanos::from_millis(100);
    cfg.warmup = Nanos::ZERO;
    let clock = Clock::monotonic();
    let shared = Arc::new(Shared::new());
    let mut r = Receiver::new(&cfg, clock, shared.clone()).unwrap();
    let mut buf = [0u8; wire::HEADER_LEN];
    // sent: seq 0..10, flow = seq % 2; seq 3 and 8 are lost
    for seq in 0..10u32 {
        let slot = &shared.ring[seq as usize];
        slot.sched.store(100, Ordering::Relaxed);
        slot.sent.store(100, Ordering::Relaxed);
        slot.tag.store(u64::from(seq) + 1, Ordering::Release);
    }
    let arrivals = [0u32, 1, 2, 5, 4, 6, 6, 7, 9, 2];
    for seq in arrivals {
        ProbeRepr {
            flags: 0,
            flow: (seq % 2) as u16,
            seq,
            sent: 100,
            residence_ns: 0,
        }
        .emit(&mut buf);
        r.handle(&buf, false, Default::default(), 1_000, 0);
    }
    // a sequence number this run never sent, and garbage
    ProbeRepr {
        seq: 1 << 30,
        ..Default::default()
    }
    .emit(&mut buf);
    r.handle(&buf, false, Default::default(), 1_000, 0);
    r.handle(&[1, 2, 3], false, Default::default(), 1_000, 0);
    let c = &r.counters;
    assert_eq!(c.unique, 8); // 0 1 2 4 5 6 7 9
    assert_eq!(c.duplicates, 2); // the second 6 and the second 2
                                 // flow 0 (even): 0 2 4 6 — in order; flow 1 (odd): 1 5 7 9 — in order;
                                 // 4 after 5 is reordering only across flows, so not counted
    assert_eq!(c.reordered, 0);
    assert_eq!(c.foreign, 1);
    assert_eq!(c.malformed[WireError::TooShort.index()], 1);
    assert_eq!(10 - c.unique, 2, "seq 3 and 8 lost");
    assert_eq!(r.hists.user_actual.count(), 8);
    assert_eq!(r.hists.user_sched.count(), 8);
    // now a late probe within its flow (no ring slot: counted, no schedule join)
    ProbeRepr {
        flow: 0,
        seq: 12,
        sent: 100,
        ..Default::default()
    }
    .emit(&mut buf);
    r.handle(&buf, false, Default::default(), 1_000, 0);
    ProbeRepr {
        flow: 0,
        seq: 10,
        sent: 100,
        ..Default::default()
    }
    .emit(&mut buf);
    r.handle(&buf, false, Default::default(), 1_000, 0);
    assert_eq!(r.counters.reordered, 1, "10 after 12 in flow 0");
    assert_eq!(r.counters.unique, 10);
    assert_eq!(r.counters.beyond_ring, 2);
}

#[test]
fn poisson_run_sends_exactly_its_seeded_schedule() {
    let (nf, to) = reflector();
    let mut cfg = ProbeConfig::new(to);
    cfg.arrivals = Arrivals::Poisson;
    cfg.milli_pps = 5_000_000;
    cfg.duration = Nanos::from_millis(300);
    cfg.warmup = Nanos::from_millis(50);
    cfg.seed = 77;
    let total = cfg.duration.get() + cfg.warmup.get();
    let mut sch = Schedule::new(&cfg);
    let mut expected = 0u64;
    let mut gaps = Vec::new();
    let mut last = 0;
    while let Some(o) = Some(sch.next_offset_ns()).filter(|&o| o < total) {
        gaps.push(o - last);
        last = o;
        expected += 1;
    }
    let out = run(&cfg.clone().validated().unwrap(), Clock::monotonic()).unwrap();
    nf.stop();
    assert_eq!(out.counters()["sent"], expected);
    // exponential gaps: mean near 200 µs and a coefficient of variation near 1
    let n = gaps.len() as f64;
    let mean = gaps.iter().sum::<u64>() as f64 / n;
    let var = gaps.iter().map(|&g| (g as f64 - mean).powi(2)).sum::<f64>() / n;
    assert!((mean - 200_000.0).abs() < 30_000.0, "{mean}");
    assert!((var.sqrt() / mean - 1.0).abs() < 0.2);
    // constant: exactly rate × time
    let mut c = cfg.clone();
    c.arrivals = Arrivals::Constant;
    let mut sch = Schedule::new(&c);
    assert_eq!(sch.next_offset_ns(), 0);
    assert_eq!(sch.next_offset_ns(), 200_000);
}

#[test]
fn lost_probes_are_counted_exactly() {
    // nothing listens: every probe is lost
    let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
    let to = sink.local_addr().unwrap();
    let mut cfg = ProbeConfig::new(to);
    cfg.rx_bind = Some("127.0.0.1:0".parse().unwrap());
    cfg.milli_pps = 1_000_000;
    cfg.duration = Nanos::from_millis(100);
    cfg.warmup = Nanos::ZERO;
    cfg.drain = Nanos::from_millis(20);
    let out = run(&cfg.clone().validated().unwrap(), Clock::monotonic()).unwrap();
    let c = out.counters();
    assert_eq!(c["sent"], 100);
    assert_eq!(c["lost_measured"], 100);
}

#[test]
fn hardware_on_loopback_is_one_clear_error() {
    let (nf, to) = reflector();
    let mut cfg = ProbeConfig::new(to);
    cfg.sources = Sources::parse("hardware").unwrap();
    let e = run(&cfg.clone().validated().unwrap(), Clock::monotonic())
        .unwrap_err()
        .to_string();
    assert!(e.contains("interface lo"), "{e}");
    assert!(e.contains("software-receive"), "{e}");
    cfg.hardware_optional = true;
    cfg.duration = Nanos::from_millis(50);
    cfg.warmup = Nanos::ZERO;
    let out = run(&cfg.clone().validated().unwrap(), Clock::monotonic()).unwrap();
    assert!(out.warnings[0].contains("continuing"), "{:?}", out.warnings);
    nf.stop();
}

/// The self-checks of a run through the loopback reflector: every check gives a verdict,
/// the TX sample holds the measured sends' gaps and the RX windows their latencies.
#[test]
fn a_run_records_what_its_self_checks_need_and_judges_each() {
    let (nf, to) = reflector();
    let mut cfg = ProbeConfig::new(to);
    cfg.milli_pps = 2_000_000; // 2 kpps
    cfg.arrivals = Arrivals::Poisson;
    cfg.duration = Nanos::from_millis(600);
    cfg.warmup = Nanos::from_millis(100);
    cfg.interval = Nanos::from_millis(50);
    cfg.sources = Sources::USER;
    let out = run(&cfg.clone().validated().unwrap(), Clock::monotonic()).unwrap();
    nf.stop();
    let sent_measured = out.tx.counters.sent - out.tx.counters.sent_warmup;
    // one gap per measured send after the first (stride 1 below 2000 sends)
    assert_eq!(out.checks.gaps_ns.len() as u64, sent_measured - 1);
    assert!(out.checks.gaps_ns.iter().all(|&g| g > 0.0));
    let kept = out
        .checks
        .latencies
        .iter()
        .filter(|&&v| v != latlab_core::selfcheck::MISSING)
        .count() as u64;
    let received = out.rx.unique - out.rx.unique_warmup;
    assert!(kept > 0 && kept <= received, "{kept} of {received}");
    assert!(!out.checks.stopped_early);
    assert_eq!(out.checks.measured_ns, cfg.duration.get());
    let v = crate::result::probe_verdicts(&cfg, &out);
    let names: Vec<&str> = v.iter().map(|v| v.check.as_str()).collect();
    assert_eq!(
        names,
        [
            "throughput",
            "schedule",
            "arrivals",
            "independence",
            "stationarity"
        ]
    );
    assert!(v[2].statistic.contains("Anderson-Darling"), "{v:?}");
    // 2 kpps is within any generator's reach: the whole schedule went out by its end
    assert_eq!(out.tx.counters.unsent, 0);
    assert_eq!(out.checks.scheduled, out.tx.counters.sent);
    assert!(v[1].passed(), "{:?}", v[1]);
    // no outcome is asserted: on a loaded machine any of them may rightly fail
    assert!(v.iter().all(|v| !v.detail.is_empty()));
}

/// `--ci-width`: a target any run meets stops the run at the end of its first measured
/// interval; one no run meets lets it reach its maximum duration, and both say so.
#[test]
fn the_stop_rule_stops_early_or_says_it_reached_the_maximum() {
    let (nf, to) = reflector();
    let mut cfg = ProbeConfig::new(to);
    cfg.milli_pps = 2_000_000;
    cfg.duration = Nanos::from_secs(10);
    cfg.warmup = Nanos::from_millis(50);
    cfg.interval = Nanos::from_millis(100);
    cfg.sources = Sources::USER;
    cfg.ci_width = Some(latlab_core::selfcheck::CiTarget::parse("p50:10s").unwrap());
    let out = run(&cfg.clone().validated().unwrap(), Clock::monotonic()).unwrap();
    assert!(out.checks.stopped_early);
    assert!(out.checks.monitor.checks >= 1);
    assert!(out.checks.measured_ns < cfg.duration.get());
    let sent_measured = out.tx.counters.sent - out.tx.counters.sent_warmup;
    assert!(sent_measured < 20_000, "{sent_measured}");
    let v = crate::result::probe_verdicts(&cfg, &out);
    let ci = v.iter().find(|v| v.check == "ci_width").unwrap();
    assert!(ci.passed(), "{}", ci.line());
    assert!(
        ci.detail.contains("the rule stopped the run"),
        "{}",
        ci.detail
    );

    cfg.duration = Nanos::from_millis(300);
    cfg.ci_width = Some(latlab_core::selfcheck::CiTarget::parse("p99:1ns").unwrap());
    let out = run(&cfg.clone().validated().unwrap(), Clock::monotonic()).unwrap();
    nf.stop();
    assert!(!out.checks.stopped_early);
    assert_eq!(out.checks.measured_ns, cfg.duration.get());
    assert_eq!(out.tx.counters.sent - out.tx.counters.sent_warmup, 600);
    let v = crate::result::probe_verdicts(&cfg, &out);
    let ci = v.iter().find(|v| v.check == "ci_width").unwrap();
    assert!(!ci.passed(), "{}", ci.line());
    assert!(
        ci.detail.contains("reached its maximum duration"),
        "{}",
        ci.detail
    );
}

#[test]
fn a_stop_rule_in_a_closed_loop_is_refused() {
    let mut cfg = ProbeConfig::new("127.0.0.1:7000".parse().unwrap());
    cfg.mode = Mode::Pingpong;
    cfg.ci_width = Some(latlab_core::selfcheck::CiTarget::parse("p99:5us").unwrap());
    let e = cfg.validate().unwrap_err().to_string();
    assert!(e.contains("--ci-width needs the open loop"), "{e}");
}

/// A busy receiver sharing the sender's CPU never gets the sender's FIFO priority (it
/// would starve it); alone on a CPU, or blocking, it does.
#[test]
fn a_busy_receiver_on_the_senders_cpu_stays_normal() {
    let mut c = ProbeConfig::new("127.0.0.1:9".parse().unwrap());
    c.fifo = Some(60);
    c.tx_cpu = Some(1);
    c.rx_cpu = Some(1);
    assert_eq!(c.rx_fifo(), Some(60), "blocking receiver");
    c.rx_io = IoMode::Busy;
    assert_eq!(c.rx_fifo(), None, "busy on the sender's CPU");
    c.rx_cpu = None;
    assert_eq!(c.rx_fifo(), None, "busy and unpinned");
    c.rx_cpu = Some(2);
    assert_eq!(c.rx_fifo(), Some(60), "busy on a CPU of its own");
}

/// A FIFO sender spins at most a quarter of each gap (so real-time throttling never
/// stops it); a normal one up to 500 µs.
#[test]
fn a_fifo_sender_spins_at_most_a_quarter_of_the_gap() {
    use super::tx::fifo_max_margin_ns;
    assert_eq!(fifo_max_margin_ns(true, 200_000.0), 50_000);
    assert_eq!(fifo_max_margin_ns(true, 10_000_000.0), 500_000);
    assert_eq!(fifo_max_margin_ns(false, 200_000.0), 500_000);
}

/// A checked configuration is written and read as the plain one; reading a job file's
/// copy checks it, so a bad one never reaches a run.
#[test]
fn a_checked_config_reads_as_the_plain_one_and_a_bad_one_does_not_read() {
    let cfg = ProbeConfig::new("127.0.0.1:9".parse().unwrap());
    let checked = cfg.clone().validated().unwrap();
    let plain = serde_json::to_value(&cfg).unwrap();
    assert_eq!(serde_json::to_value(&checked).unwrap(), plain);
    assert_eq!(
        serde_json::from_value::<ValidProbeConfig>(plain).unwrap(),
        checked
    );
    assert_eq!(
        checked.starting_at(5).start_at_monotonic_ns,
        Some(5),
        "the start is no check's business"
    );
    let mut bad = cfg;
    bad.flows = 0;
    let e = serde_json::from_value::<ValidProbeConfig>(serde_json::to_value(&bad).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("--flows must be at least 1"), "{e}");
    assert!(bad.validated().is_err());
}

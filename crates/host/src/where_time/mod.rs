//! `latlab experiment where-time`: how much added network latency an application can bear
//! (*Where Has My Time Gone?* Fig. 1).
//!
//! Client ⇄ delay ⇄ server network namespaces ([`latlab_net::delay::testbed`]); latlab's
//! injector ([`latlab_net::delay::engine`]) runs pinned in the delay namespace and adds the
//! delay to every client → server frame, so a request/response round trip gains exactly
//! the added delay. Real servers run in the server namespace and real benchmark clients in
//! the client namespace, started and stopped here:
//!
//! - memcached driven by `memcaslap` (Debian `libmemcached-tools`), metric: throughput
//!   (TPS, operations per second);
//! - nginx driven by `wrk`, metric: requests per second (the paper used Apache with `ab`;
//!   nginx/wrk is the closest pair Debian packages well);
//! - PostgreSQL driven by `pgbench`'s built-in TPC-B-like transaction, metric:
//!   transactions per second (the paper used TPC-C on MySQL, `tpcc-mysql`, which Debian does
//!   not package). Each run of the experiment creates a private cluster in a scratch
//!   directory, runs it as an unprivileged account, loads it with `pgbench -i` in the server
//!   namespace, and stops and deletes it at the end.
//!
//! The experiment first verifies the injector ([`latlab_net::delay::testbed::check`]:
//! base latency and the shift at 20 µs and at every other asked delay, the idle policy
//! held as `latlab net delay --testbed` holds it; [`injector`] judges each shift), then
//! runs every (delay, application) pair
//! `repeats` times, interleaved (repeat 1 of every delay, then repeat 2, ...), so that slow
//! drifts of the host's load spread over all delays. Results are normalised to the
//! zero-delay mean of the same application ([`normalise`]).

mod config;
mod experiment;
pub mod injector;
pub mod parse;
pub mod sections;
mod session;
mod stored;

pub use config::{
    check_programs, find_programs, newest_version, pg_search_dirs, App, Programs, WhereTimeConfig,
    WhereTimeError, PAPER_DELAYS_US, RESULT_KIND,
};
pub use experiment::run;
pub use session::{run_to_file, SessionError, MAX_PEER_FRACTION};
pub use stored::{
    data, fill_result, normalise, peer_points, peer_summary, problem_totals, AppRuns, NormPoint,
    OpenLoopRun, PeerLatency, PeerPoint, PeerStatistic, RawRun, WhereTimeData, WhereTimeOutcome,
    PAPER_DROPS, PEER_TOLERANCE, UNSATURATED_SHARE,
};

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::units::Nanos;
    use latlab_sys::tsc::Clock;

    fn run(d: u64, v: f64) -> RawRun {
        RawRun {
            delay_ns: d,
            repeat: 0,
            value: v,
            completed: 1,
            errors: 0,
            injector_drops: 0,
        }
    }

    #[test]
    fn normalise_to_the_zero_delay_mean() {
        let runs = vec![
            run(0, 90.0),
            run(0, 110.0),
            run(20_000, 75.0),
            run(20_000, 75.0),
            run(100_000, 20.0),
        ];
        let n = normalise(&runs).unwrap();
        assert_eq!(n.len(), 3);
        assert_eq!(n[0].delay_ns, 0);
        assert!((n[0].mean - 1.0).abs() < 1e-12);
        assert!(
            (n[0].sd - (2.0f64 * 0.01).sqrt()).abs() < 1e-9,
            "{}",
            n[0].sd
        );
        assert!((n[1].mean - 0.75).abs() < 1e-12 && n[1].sd == 0.0);
        assert!((n[2].mean - 0.2).abs() < 1e-12 && n[2].n == 1);
        assert!(n[0].min <= n[0].mean && n[0].mean <= n[0].max);
    }

    fn open(d: u64, repeat: u32, peer: Option<PeerLatency>) -> OpenLoopRun {
        OpenLoopRun {
            delay_ns: d,
            repeat,
            offered_rps: 1_000.0,
            achieved_rps: 1_000.0,
            p50_ns: 300_000,
            p99_ns: 900_000,
            samples: 1_000,
            late: 0,
            problems: 0,
            geo_mean_ns: Some(280_000),
            actual_p50_ns: Some(260_000),
            actual_geo_mean_ns: Some(250_000),
            lateness_p50_ns: Some(40_000),
            peer,
        }
    }

    #[test]
    fn peer_points_pair_like_figures_and_judge_saturation_per_repeat() {
        let geo = |ns| {
            Some(PeerLatency {
                statistic: PeerStatistic::GeometricMean,
                ns,
            })
        };
        let mut second = run(200_000, 3_000.0);
        second.repeat = 1;
        let a = AppRuns {
            app: "memcached".into(),
            metric: "ops/s".into(),
            // repeat 0: 0 and 200 µs; repeat 1: no zero-delay run
            runs: vec![run(0, 10_000.0), run(200_000, 4_000.0), second],
            open_loop: vec![
                open(0, 0, geo(100_000)),
                open(200_000, 0, geo(250_000)),
                open(200_000, 1, geo(250_000)),
                open(200_000, 0, None),
            ],
        };
        let p = peer_points(&a);
        assert_eq!(p.len(), 3, "the run without a peer figure is left out");
        // memcaslap's geometric mean is paired with latlab's, not with its median
        assert_eq!(
            (p[1].latlab_ns, p[1].latlab_actual_ns),
            (280_000, Some(250_000))
        );
        assert!(
            !p[0].unsaturated(),
            "at zero delay the peer is at its own maximum"
        );
        assert_eq!(p[1].peer_share, Some(0.4));
        assert!(p[1].unsaturated());
        assert!((p[1].difference() - 0.12).abs() < 1e-9);
        assert_eq!(p[1].difference_actual(), Some(0.0));
        assert_eq!(p[2].peer_share, None, "repeat 1 has no baseline of its own");
        assert!(!p[2].unsaturated());
        let line = peer_summary(&a).unwrap();
        assert!(line.contains("(1 runs)"), "{line}");
        // this run offered 1000/s where the peer achieved 4000/s
        assert_eq!(p[1].load_ratio, Some(0.25));
        assert!(line.contains("at 0.25 × the peer's own rate"), "{line}");
        assert!(
            line.contains("+12.0 % to +12.0 % (within 10 % in 0 of 1)"),
            "{line}"
        );
        assert!(
            line.contains(
                "actual send, as the peer times its own: +0.0 % to +0.0 % (within 10 % in 1 of 1)"
            ),
            "{line}"
        );
        // wrk's median is paired with latlab's median
        let mut w = open(200_000, 0, None);
        w.peer = Some(PeerLatency {
            statistic: PeerStatistic::Median,
            ns: 300_000,
        });
        assert_eq!(
            (w.like_peer_ns(), w.like_peer_actual_ns()),
            (Some(300_000), Some(260_000))
        );
        // only saturated points: the summary says so instead of a range
        let sat = AppRuns {
            open_loop: vec![open(0, 0, geo(100_000))],
            ..a.clone()
        };
        assert!(peer_summary(&sat).unwrap().contains("no point"));
        let none = AppRuns {
            open_loop: vec![open(0, 0, None)],
            ..a
        };
        assert_eq!(peer_summary(&none), None);
    }

    #[test]
    fn configs_of_older_files_read_as_what_ran_then() {
        let mut v = serde_json::to_value(WhereTimeConfig::default()).unwrap();
        assert_eq!(
            v["open_loop_io"], "blocking",
            "new runs wait only in the kernel"
        );
        let m = v.as_object_mut().unwrap();
        m.remove("open_loop_io");
        m.remove("open_loop_peer_fraction");
        let old: WhereTimeConfig = serde_json::from_value(v).unwrap();
        assert_eq!(old.open_loop_io, latlab_net::rpc::LoadIo::Adaptive);
        assert_eq!(old.open_loop_peer_fraction, None);
        assert_eq!(
            old.check_idle_hold_us, None,
            "older checks held nothing of their own"
        );
        // A where-time result's data from before the per-delay check still reads.
        let old_data = r#"{"apps":[],"injector":{"median_shift_ns":60700,"p99_shift_ns":50600,"base_latency_ns":30000,"engine_excess_p50_ns":11000,"netem_median_shift_ns":null,"netem_p99_shift_ns":null}}"#;
        let d: WhereTimeData = serde_json::from_str(old_data).unwrap();
        assert_eq!(d.check_idle_held_us, None);
        assert!(d.injector.shifts.is_empty() && d.injector.distribution.is_none());
        let v = injector::shift_verdicts(&d.injector);
        assert_eq!(v.len(), 1);
        assert!(
            !v[0].passed(),
            "an old file's 60.7 µs at 20 µs is judged too"
        );
    }

    #[test]
    fn open_loop_runs_of_older_files_still_read() {
        let old = r#"{"delay_ns":0,"repeat":0,"offered_rps":5000.0,"achieved_rps":4990.0,"p50_ns":61000,"p99_ns":180000,"samples":20000,"late":0,"problems":0}"#;
        let r: OpenLoopRun = serde_json::from_str(old).unwrap();
        assert_eq!((r.geo_mean_ns, r.peer, r.actual_p50_ns), (None, None, None));
        assert_eq!(r.like_peer_ns(), None);
    }

    #[test]
    fn problem_totals_add_errors_and_drops() {
        let mut a = run(0, 1.0);
        a.errors = 2;
        a.injector_drops = 7;
        let mut b = run(20_000, 1.0);
        b.errors = 3;
        assert_eq!(problem_totals(&[a, b]), (5, 7));
        assert_eq!(problem_totals(&[]), (0, 0));
    }

    #[test]
    fn normalise_needs_a_baseline() {
        assert!(normalise(&[run(20_000, 1.0)]).is_none());
        assert!(normalise(&[run(0, 0.0)]).is_none());
    }

    #[test]
    fn programs_are_named_with_packages() {
        assert_eq!(
            App::Memcached.programs()[1],
            ("memcaslap", "libmemcached-tools")
        );
        assert_eq!(App::from_name("nginx"), Some(App::Nginx));
        assert_eq!(App::from_name("postgresql"), Some(App::Postgresql));
        assert_eq!(
            App::Postgresql.programs(),
            [
                ("postgres", "postgresql"),
                ("initdb", "postgresql"),
                ("pgbench", "postgresql")
            ]
        );
        let e = WhereTimeError::Missing {
            program: "wrk",
            package: "wrk",
        };
        assert!(e.to_string().contains("package wrk"));
    }

    /// A fresh scratch directory for one test (removed when dropped).
    struct Scratch(std::path::PathBuf);

    impl Scratch {
        fn new(tag: &str) -> Scratch {
            let d =
                std::env::temp_dir().join(format!("latlab-host-test-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).unwrap();
            Scratch(d)
        }

        fn path(&self) -> &std::path::Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn the_newest_postgresql_version_wins() {
        assert_eq!(newest_version(["13", "9.6", "15", "extension"]), Some("15"));
        assert_eq!(newest_version(["9.6", "9.10"]), Some("9.10"), "numerically");
        assert_eq!(newest_version(["x"]), None);
    }

    #[test]
    fn postgresql_is_looked_for_in_debians_directory_then_path() {
        let root = Scratch::new("pg-root");
        for v in ["13", "15"] {
            std::fs::create_dir_all(root.path().join(v).join("bin")).unwrap();
        }
        let path = vec![std::path::PathBuf::from("/usr/bin")];
        assert_eq!(
            pg_search_dirs(None, root.path(), &path),
            [root.path().join("15/bin"), "/usr/bin".into()]
        );
        let given = std::path::Path::new("/opt/pg/bin");
        assert_eq!(
            pg_search_dirs(Some(given), root.path(), &path),
            [given.to_path_buf()],
            "--pg-bin is the only place looked at"
        );
        let missing = std::path::Path::new("/latlab-no-such-dir");
        assert_eq!(
            pg_search_dirs(None, missing, &[]),
            Vec::<std::path::PathBuf>::new()
        );
    }

    #[test]
    fn missing_postgresql_programs_are_named() {
        let dir = Scratch::new("pg-bin");
        let e = find_programs(&[App::Postgresql], Some(dir.path())).unwrap_err();
        assert_eq!(
            e.to_string(),
            "'postgres' is not installed (Debian package postgresql; `make deps-demo` installs it)"
        );
        for p in ["postgres", "initdb"] {
            std::fs::write(dir.path().join(p), "").unwrap();
        }
        let e = find_programs(&[App::Postgresql], Some(dir.path())).unwrap_err();
        assert!(
            e.to_string().starts_with("'pgbench' is not installed"),
            "{e}"
        );
        std::fs::write(dir.path().join("pgbench"), "").unwrap();
        let found = find_programs(&[App::Postgresql], Some(dir.path())).unwrap();
        assert_eq!(found.get("pgbench"), dir.path().join("pgbench"));
    }

    #[test]
    fn config_needs_a_baseline() {
        let cfg = WhereTimeConfig {
            delays_ns: vec![10_000],
            ..WhereTimeConfig::quick()
        };
        let clock = Clock::monotonic();
        assert!(matches!(
            super::run(&cfg, &clock, |_| {}),
            Err(WhereTimeError::Config(_))
        ));
    }

    #[test]
    fn quick_experiment_runs_end_to_end_with_a_fifo_injector_and_the_open_loop_at_peer_rate() {
        latlab_testutil::require_root!("network namespaces and kernel.sched_rt_runtime_us");
        if let Err(e) = check_programs(&App::ALL) {
            latlab_testutil::skip!("{e}");
        }
        let before = latlab_sys::netstat::rt_runtime_us();
        let cpus = latlab_sys::sched::allowed_cpus();
        // the injector under SCHED_FIFO, and latlab's open loop at each peer's own rate
        let cfg = WhereTimeConfig {
            engine_cpu: cpus.last().copied(),
            endpoint_cpu: cpus.first().copied(),
            cpu_asked: true,
            fifo: Some(50),
            open_loop_peer_fraction: Some(1.0),
            ..WhereTimeConfig::quick()
        };
        let (clock, _) = Clock::establish(Nanos(20_000_000));
        let o = super::run(&cfg, &clock, |_| {}).unwrap();
        assert_eq!(
            latlab_sys::netstat::rt_runtime_us(),
            before,
            "real-time throttling is put back"
        );
        if before != Some(-1) {
            assert!(
                o.placement.contains("real-time throttling off"),
                "{}",
                o.placement
            );
        }
        assert_eq!(o.apps.len(), 3, "memcached, nginx and postgresql");
        let (attr, _) = o.explained.as_ref().expect("explain is on by default");
        assert!(
            attr.unavailable.is_some()
                || attr.windows as usize
                    <= o.check
                        .engine_zero
                        .iter()
                        .chain(&o.check.engine_delayed)
                        .map(|r| r.stalls.len())
                        .sum::<usize>(),
            "every window is one of the injector's recorded stalls"
        );
        for a in &o.apps {
            assert_eq!(a.runs.len(), 3, "{}", a.app);
            assert!(a.runs.iter().all(|r| r.value > 0.0 && r.completed > 0));
            let n = normalise(&a.runs).unwrap();
            assert_eq!(n.len(), 3);
            assert!((n[0].mean - 1.0).abs() < 1e-12);
            if a.app == "postgresql" {
                assert!(a.open_loop.is_empty(), "no open loop speaks PostgreSQL");
                continue;
            }
            assert_eq!(a.open_loop.len(), 3, "{}", a.app);
            for (run, ol) in a.runs.iter().zip(&a.open_loop) {
                // the open loop offered what the closed loop had just achieved
                assert_eq!(ol.delay_ns, run.delay_ns);
                assert!(
                    (ol.offered_rps - run.value).abs() <= 0.5,
                    "{} {}",
                    ol.offered_rps,
                    run.value
                );
                assert!(ol.peer.expect("the peer's own latency").ns > 0);
                assert!(ol.geo_mean_ns.is_some() && ol.actual_p50_ns.is_some());
            }
            assert_eq!(peer_points(a).len(), 3);
            assert!(peer_summary(a).is_some());
        }
    }
}

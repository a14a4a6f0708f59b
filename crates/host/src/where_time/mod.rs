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
//!   nginx/wrk is the closest pair Debian packages well).
//!
//! The experiment first verifies the injector ([`latlab_net::delay::testbed::check`]:
//! base latency and the shift at 20 µs), then runs every (delay, application) pair
//! `repeats` times, interleaved (repeat 1 of every delay, then repeat 2, ...), so that slow
//! drifts of the host's load spread over all delays. Results are normalised to the
//! zero-delay mean of the same application ([`normalise`]).

mod config;
mod experiment;
pub mod parse;
pub mod sections;
mod session;
mod stored;

pub use config::{
    check_programs, App, WhereTimeConfig, WhereTimeError, PAPER_DELAYS_US, RESULT_KIND,
};
pub use experiment::run;
pub use session::{run_to_file, SessionError};
pub use stored::{
    data, fill_result, normalise, problem_totals, AppRuns, NormPoint, RawRun, WhereTimeData,
    WhereTimeOutcome, PAPER_DROPS,
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
        let e = WhereTimeError::Missing {
            program: "wrk",
            package: "wrk",
        };
        assert!(e.to_string().contains("package wrk"));
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
    fn quick_experiment_runs_end_to_end() {
        latlab_testutil::require_root!("network namespaces");
        if let Err(e) = check_programs(&[App::Memcached, App::Nginx]) {
            latlab_testutil::skip!("{e}");
        }
        let cpus = latlab_sys::sched::allowed_cpus();
        let cfg = WhereTimeConfig {
            engine_cpu: cpus.last().copied(),
            endpoint_cpu: cpus.first().copied(),
            ..WhereTimeConfig::quick()
        };
        let (clock, _) = Clock::establish(Nanos(20_000_000));
        let o = super::run(&cfg, &clock, |_| {}).unwrap();
        for a in &o.apps {
            assert_eq!(a.runs.len(), 3, "{}", a.app);
            assert!(a.runs.iter().all(|r| r.value > 0.0 && r.completed > 0));
            let n = normalise(&a.runs).unwrap();
            assert_eq!(n.len(), 3);
            assert!((n[0].mean - 1.0).abs() < 1e-12);
        }
    }
}

//! `latlab host breakdown`: what each step a request crosses inside a host costs, from a
//! clock read up to a round trip across two network namespaces, each as a full histogram
//! and classified Good / Bad / Ugly (*Where Has My Time Gone?* §2.2 and §1; the paper's
//! text stops before its own breakdown, so the step list is latlab's, in its spirit).
//!
//! Steps ([`Step`]), cheapest first: clock read, null system call, cross-core cache-line
//! ping-pong, futex wake-up round trips (same core, other core), pipe, eventfd and UNIX
//! socket round trips, UDP and TCP loopback round trips (blocking and busy-polling), and a
//! UDP round trip across a veth pair between two network namespaces, answered by the
//! kernel's socket layer (`veth_netns`) or by latlab's user-space NF (`latlab_nf`). See
//! the `steps` module (private) for how a sample is timed, [`classify`] for the class rule and
//! [`decompose`] for the stacked UDP decomposition.
//!
//! The library measures and fills a [`ResultFile`](latlab_core::results::ResultFile); [`table`] and
//! [`decompose::decompose_udp`] turn a loaded result back into what a report shows.

pub mod classify;
mod config;
pub mod decompose;
mod measure;
pub mod sections;
mod session;
mod steps;
mod stored;

pub use config::{BreakdownConfig, BreakdownError, Step, StepOutcome, RESULT_KIND};
pub use measure::{measure, placement, unavailable};
pub use session::{run, RunError};
pub use stored::{
    data, fill_result, table, BreakdownData, ReadError, SkippedStep, StepFacts, TableRow,
};

#[cfg(test)]
mod tests {
    use super::classify::ClassRule;
    use super::*;
    use latlab_core::results::ResultFile;
    use latlab_core::units::Nanos;
    use latlab_sys::tsc::Clock;

    #[test]
    fn names_round_trip() {
        for s in Step::ALL {
            assert_eq!(Step::from_name(s.name()), Some(s));
        }
        assert_eq!(Step::from_name("nope"), None);
    }

    #[test]
    fn availability_rules() {
        let cfg = BreakdownConfig::default();
        assert!(unavailable(Step::VethNetns, &cfg, false, &[0, 1]).is_some());
        assert!(unavailable(Step::VethNetns, &cfg, true, &[0, 1]).is_none());
        assert!(unavailable(Step::Pipe, &cfg, false, &[0]).is_some());
        assert!(unavailable(Step::ClockRead, &cfg, false, &[0]).is_none());
        assert!(unavailable(Step::LatlabNf, &cfg, true, &[0, 1]).is_none());
        assert!(unavailable(Step::LatlabNf, &cfg, false, &[0, 1])
            .unwrap()
            .contains("root"));
    }

    #[test]
    fn placement_prefers_last_two_cpus() {
        let cfg = BreakdownConfig::default();
        assert_eq!(placement(&cfg, &[0, 1, 2, 3]), (Some(3), Some(2)));
        assert_eq!(placement(&cfg, &[5]), (Some(5), Some(5)));
        let cfg = BreakdownConfig {
            client_cpu: Some(0),
            server_cpu: Some(2),
            ..cfg
        };
        assert_eq!(placement(&cfg, &[0, 1, 2, 3]), (Some(0), Some(2)));
    }

    fn quick() -> BreakdownConfig {
        BreakdownConfig {
            duration: Nanos(20_000_000),
            warmup: Nanos(5_000_000),
            ..BreakdownConfig::default()
        }
    }

    #[test]
    fn single_thread_steps_record_samples() {
        let clock = Clock::monotonic();
        let cpus = latlab_sys::sched::allowed_cpus();
        for step in [Step::ClockRead, Step::NullSyscall, Step::FutexSameCore] {
            let o = measure(step, &quick(), &clock, &cpus).unwrap();
            assert_eq!(o.step, step);
            assert!(o.samples > 10, "{step}: {}", o.samples);
            assert_eq!(o.hist.count(), o.samples);
        }
    }

    #[test]
    fn round_trip_steps_end_cleanly() {
        let clock = Clock::monotonic();
        let cpus = latlab_sys::sched::allowed_cpus();
        let cfg = quick();
        // Every two-thread step that needs no namespaces (those need root).
        for step in Step::ALL
            .into_iter()
            .filter(|s| s.needs_two_cpus() && !s.needs_root())
        {
            if unavailable(step, &cfg, false, &cpus).is_some() {
                latlab_testutil::skip!("{step} needs two CPUs");
            }
            let o = measure(step, &cfg, &clock, &cpus).unwrap();
            assert!(o.samples > 0, "{step}");
        }
    }

    #[test]
    fn nf_step_round_trips_through_latlabs_reflector() {
        let cpus = latlab_sys::sched::allowed_cpus();
        let cfg = quick();
        let root = latlab_sys::netns::is_root();
        if let Some(why) = unavailable(Step::LatlabNf, &cfg, root, &cpus) {
            latlab_testutil::skip!("latlab_nf: {why}");
        }
        let clock = Clock::monotonic();
        let o = measure(Step::LatlabNf, &cfg, &clock, &cpus).unwrap();
        assert_eq!(o.step, Step::LatlabNf);
        assert!(o.samples > 0);
        assert_eq!(o.hist.count(), o.samples);
    }

    #[test]
    fn result_round_trips_into_a_table() {
        let clock = Clock::monotonic();
        let cpus = latlab_sys::sched::allowed_cpus();
        let o = measure(Step::NullSyscall, &quick(), &clock, &cpus).unwrap();
        let mut r = ResultFile::new(
            RESULT_KIND,
            vec![],
            serde_json::json!({}),
            latlab_sys::host::provenance(
                Clock::establish_monotonic("test").1,
                vec![],
                false,
                "2026-01-01T00:00:00Z".into(),
            ),
        );
        fill_result(
            &mut r,
            &[o],
            &[(Step::VethNetns, "needs root".into())],
            &ClassRule::default(),
        );
        let rows = table(&r).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].step, "null_syscall");
        assert!(rows[0].p50_ns <= rows[0].p99_ns && rows[0].p99_ns <= rows[0].max_ns);
        let d = data(&r).unwrap();
        assert_eq!(d.skipped[0].name, "veth_netns");
        assert!(r.warnings.iter().any(|w| w.contains("veth_netns")));
    }
}

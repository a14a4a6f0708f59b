//! `latlab child JOBFILE`: the receiving end of [`latlab_core::child`]. Another latlab
//! process (an experiment, an orchestrator, `mpirun`) wrote a versioned job envelope with a
//! resolved library configuration; this reads it, checks it and makes the same library
//! call the user-facing command makes. No flags are re-parsed.

use crate::args::ChildArgs;
use crate::exit::usage;
use latlab_core::child::ChildJob;

/// Reads the job file and runs the job it names.
pub fn run(a: ChildArgs) -> anyhow::Result<()> {
    let job = ChildJob::read(&a.job).map_err(|e| usage(e.to_string()))?;
    // recorded in the child's result, like any command's argv
    let argv: Vec<String> = std::env::args().collect();
    let _idle = job.dma_latency_us.map(crate::idle::hold).transpose()?;
    match job.job.as_str() {
        latlab_net::run::NF_JOB => super::net::nf_child(&job, argv),
        latlab_net::run::PROBE_JOB => super::net::probe_child(&job, argv),
        latlab_dfs::launch::RUN_JOB | latlab_dfs::launch::BENCH_JOB => super::dfs::child(&job),
        other => Err(usage(format!(
            "job file {}: unknown job '{other}'",
            a.job.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::results::ResultFile;
    use latlab_net::orchestrate::{Placement, ProbeJob};

    /// A `net.probe` job runs the same library call as `latlab net probe`: its result
    /// records the job's configuration and NF description, beside its interval log.
    #[test]
    fn a_probe_job_measures_with_the_config_it_carries() {
        let nf = latlab_net::nf::start(
            &latlab_net::nf::NfConfig::reflect("127.0.0.1:0".parse().unwrap()),
            latlab_sys::tsc::Clock::monotonic(),
        )
        .unwrap();
        let mut probe = Placement::Loopback.probe_config();
        probe.target = nf.local[0];
        probe.duration = latlab_core::units::Nanos::from_millis(100);
        probe.warmup = latlab_core::units::Nanos::ZERO;
        probe.sources = latlab_net::probe::Sources::USER;
        let job = ProbeJob {
            nf: Some(serde_json::json!({"role": "reflect"})),
            ..ProbeJob::new(probe.clone().validated().unwrap())
        };
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("probe.json");
        let path = dir.path().join("job.json");
        ChildJob::new(latlab_net::run::PROBE_JOB, &job, Some(out.clone()))
            .unwrap()
            .write(&path)
            .unwrap();
        run(ChildArgs { job: path }).unwrap();
        nf.stop();
        let r = ResultFile::load(&out).unwrap();
        assert_eq!(r.kind, latlab_net::probe::RESULT_KIND);
        assert_eq!(r.config, serde_json::to_value(&probe).unwrap());
        let data = latlab_net::result::probe_data(&r).unwrap();
        assert_eq!(data.nf, job.nf);
        assert_eq!(r.counters["lost"], 0, "{:?}", r.counters);
        assert!(dir.path().join("probe.hlog").exists());
    }

    #[test]
    fn an_unknown_job_or_a_config_of_the_wrong_shape_is_a_usage_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.json");
        ChildJob::new("net.nope", &1u32, None)
            .unwrap()
            .write(&path)
            .unwrap();
        let e = run(ChildArgs { job: path.clone() }).unwrap_err();
        assert!(e.to_string().contains("unknown job 'net.nope'"), "{e}");
        ChildJob::new(latlab_net::run::NF_JOB, &1u32, None)
            .unwrap()
            .write(&path)
            .unwrap();
        let e = run(ChildArgs { job: path }).unwrap_err();
        assert!(e.to_string().contains("net.nf"), "{e}");
        assert!(
            e.downcast_ref::<crate::exit::UsageError>().is_some(),
            "{e:?}"
        );
    }
}

//! Running the cache-cost sweep: the thread sets of each trial, and the result file of a
//! `latlab sched cache-cost` run.

use super::cost::{cost_per_switch, cost_per_switch_cpu, summarize, switches_on};
use super::cost::{CacheCostData, SizeRow, Trial, KIND};
use crate::clock::tsc_clock;
use crate::error::Error;
use crate::run::{self as srun, RunParams};
use crate::spec::{RunSpec, ThreadSpec, Workload};
use crate::trace::Trace;
use latlab_core::results::ResultFile;
use latlab_sys::{host, sched};

/// What a cache-cost sweep measures, resolved from the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheCostConfig {
    /// Working-set sizes, KiB.
    pub sizes_kb: Vec<u64>,
    /// Trials per size.
    pub trials: u32,
    /// Length of each of the two runs of a trial, ns.
    pub duration_ns: u64,
    /// Threads sharing the CPU in the second run.
    pub threads: u32,
    /// The CPU every thread is pinned to.
    pub cpu: u32,
}

impl CacheCostConfig {
    /// Checks the sizes, counts, duration and CPU; the message names the flag.
    ///
    /// # Errors
    /// [`Error::Config`] for the first thing out of range.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::Config(m));
        if self.sizes_kb.is_empty() || self.sizes_kb.iter().any(|&s| s == 0 || s > 1024 * 1024) {
            return bad(
                "--sizes: give working-set sizes in KiB, 1..1048576, e.g. 4,64,1024".into(),
            );
        }
        if self.trials == 0 || self.threads < 2 {
            return bad("--trials must be at least 1 and --threads at least 2".into());
        }
        if self.duration_ns < 10_000_000 {
            return bad("--duration must be at least 10ms, e.g. 1s".into());
        }
        if !sched::allowed_cpus().contains(&self.cpu) {
            return bad(format!(
                "--cpu {}: not available; allowed CPUs: {}",
                self.cpu,
                sched::format_cpu_list(&sched::allowed_cpus())
            ));
        }
        Ok(())
    }

    /// The `latlab sched cache-cost` command line that runs this sweep.
    pub fn argv(&self) -> Vec<String> {
        let sizes: Vec<String> = self.sizes_kb.iter().map(u64::to_string).collect();
        [
            "latlab",
            "sched",
            "cache-cost",
            "--sizes",
            &sizes.join(","),
            "--trials",
            &self.trials.to_string(),
            "--duration",
            &crate::cmdline::format_duration(self.duration_ns),
            "--threads",
            &self.threads.to_string(),
            "--cpu",
            &self.cpu.to_string(),
        ]
        .map(str::to_owned)
        .to_vec()
    }

    /// Trials in all (sizes × trials).
    pub fn steps(&self) -> u64 {
        self.sizes_kb.len() as u64 * u64::from(self.trials)
    }
}

/// Runs the sweep of `cfg` (after [`CacheCostConfig::validate`]) and returns its result
/// file (`argv` recorded as the command line) and the rows per size. `tick` is called
/// after each trial.
///
/// # Errors
/// No TSC, or a run that failed.
pub fn measure(
    cfg: &CacheCostConfig,
    argv: Vec<String>,
    tick: &dyn Fn(),
) -> Result<(ResultFile, Vec<SizeRow>), Error> {
    let started_utc = host::utc_now_rfc3339();
    let (_clock, timebase, hz) = tsc_clock()?;
    let memory_locked = sched::lock_memory().is_ok();
    let total = cfg.steps();
    let trials = sweep(
        &cfg.sizes_kb,
        cfg.trials,
        cfg.duration_ns,
        cfg.threads,
        cfg.cpu,
        hz,
        tick,
    )?;
    let rows = summarize(&trials);
    let provenance = host::provenance(timebase, Vec::new(), memory_locked, started_utc);
    let mut r = ResultFile::new(
        KIND,
        argv,
        serde_json::json!({"sizes_kb": cfg.sizes_kb, "trials": cfg.trials, "duration_ns": cfg.duration_ns,
            "threads": cfg.threads, "cpu": cfg.cpu}),
        provenance,
    );
    r.duration_ns = 2 * total * cfg.duration_ns;
    r.counters.insert("trials".into(), trials.len() as u64);
    r.counters.insert(
        "trials.without_switches".into(),
        trials.iter().filter(|t| t.cost_ns.is_none()).count() as u64,
    );
    r.data = serde_json::to_value(CacheCostData {
        cpu: cfg.cpu,
        threads: cfg.threads,
        trials,
        rows: rows.clone(),
    })?;
    Ok((r, rows))
}

/// Runs the cache-cost sweep: per size and trial, one lone CPU_SCAN thread and `threads`
/// of them, all pinned to `cpu`, for `duration_ns` each. `tick` is called after each trial.
///
/// # Errors
/// A run that failed.
pub fn sweep(
    sizes: &[u64],
    trials: u32,
    duration_ns: u64,
    threads: u32,
    cpu: u32,
    hz: u64,
    tick: &dyn Fn(),
) -> Result<Vec<Trial>, Error> {
    let params = RunParams {
        tsc_hz: hz,
        calibration_iterations: 20_000,
    };
    let spec_for = |n: u32, kb: u64| RunSpec {
        threads: (0..n)
            .map(|i| {
                let mut t = ThreadSpec::new(i);
                t.workload = Workload::CpuScan { kb };
                t.cpu = Some(cpu);
                t
            })
            .collect(),
        duration_ns,
        records: 100_000,
        raw_cycles: false,
        gap_ns: None,
        timer_slack_ns: None,
        dma_latency_us: None,
    };
    let mut out = Vec::new();
    for &kb in sizes {
        for _ in 0..trials {
            let one = srun::run(&spec_for(1, kb), params)?;
            let many = srun::run(&spec_for(threads, kb), params)?;
            let w1 = one.threads[0].scan_lines;
            let wn: u64 = many.threads.iter().map(|t| t.scan_lines).sum();
            let mut trace = Trace::default();
            for t in &many.threads {
                trace.blocks.extend(t.blocks.iter().copied());
            }
            let switches = switches_on(&trace, cpu);
            let cpu1_ns = one.threads[0].cpu_received_ns;
            let cpun_ns: u64 = many.threads.iter().map(|t| t.cpu_received_ns).sum();
            out.push(Trial {
                size_kb: kb,
                w1,
                wn,
                switches,
                kernel_involuntary: many.threads.iter().map(|t| t.involuntary_switches).sum(),
                t_ns: duration_ns,
                cpu1_ns,
                cpun_ns,
                paper_cost_ns: cost_per_switch(w1, wn, duration_ns, switches),
                cost_ns: cost_per_switch_cpu(w1, cpu1_ns, wn, cpun_ns, switches),
            });
            tick();
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_names_the_flag() {
        let ok = CacheCostConfig {
            sizes_kb: vec![4, 64],
            trials: 2,
            duration_ns: 100_000_000,
            threads: 10,
            cpu: *sched::allowed_cpus().first().unwrap(),
        };
        assert!(ok.validate().is_ok());
        assert_eq!(ok.steps(), 4);
        let bad = |f: &dyn Fn(&mut CacheCostConfig)| {
            let mut c = ok.clone();
            f(&mut c);
            c.validate().unwrap_err().to_string()
        };
        assert!(bad(&|c| c.sizes_kb = vec![0]).starts_with("--sizes"));
        assert!(bad(&|c| c.threads = 1).contains("--threads"));
        assert!(bad(&|c| c.duration_ns = 1).starts_with("--duration"));
        assert!(bad(&|c| c.cpu = 100_000).starts_with("--cpu 100000"));
    }
}

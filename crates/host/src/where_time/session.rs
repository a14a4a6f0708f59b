//! A whole where-time run: the configuration checked once, the experiment run, and the
//! versioned result written before anything is printed.

use super::config::{find_programs, WhereTimeConfig, WhereTimeError, RESULT_KIND};
use super::experiment::run;
use super::stored::fill_result;
use latlab_core::results::{ResultError, ResultFile, ThreadPlacement};
use latlab_core::units::Nanos;
use latlab_sys::{host, sched, tsc::Clock};
use std::path::Path;

/// The largest fraction of the peer's rate `--open-loop-rate peer:F` offers.
pub const MAX_PEER_FRACTION: f64 = 2.0;

impl WhereTimeConfig {
    /// Checks what a run needs: a zero-delay baseline, runs of at least 1 s, placement on
    /// CPUs this process may use (`allowed`) and the applications' programs installed
    /// (PostgreSQL's in `pg_bin` when it is set).
    ///
    /// # Errors
    /// [`WhereTimeError::Config`] naming the flag, or [`WhereTimeError::Missing`].
    pub fn validate(&self, allowed: &[u32]) -> Result<(), WhereTimeError> {
        if !self.delays_ns.contains(&0) {
            return Err(WhereTimeError::Config(
                "--delays must include 0 (the baseline), e.g. 0,20us,100us".into(),
            ));
        }
        if self.run_time.get() < 1_000_000_000 {
            return Err(WhereTimeError::Config(
                "--run-time must be at least 1s".into(),
            ));
        }
        if let Some(f) = self.open_loop_peer_fraction {
            if self.open_loop_milli_rps.is_some() {
                return Err(WhereTimeError::Config(
                    "--open-loop-rate: either a rate such as 5krps or 'peer', not both".into(),
                ));
            }
            if !(f.is_finite() && f > 0.0 && f <= MAX_PEER_FRACTION) {
                return Err(WhereTimeError::Config(format!(
                    "--open-loop-rate: peer:F takes a fraction F in (0, {MAX_PEER_FRACTION}], not {f}"
                )));
            }
        }
        if let Some(c) = self.engine_cpu {
            if !allowed.contains(&c) {
                return Err(WhereTimeError::Config(format!(
                    "--cpu: CPU {c} is not available to this process (allowed: {})",
                    sched::format_cpu_list(allowed)
                )));
            }
        }
        find_programs(&self.apps, self.pg_bin.as_deref()).map(|_| ())
    }

    /// Places the injector on `cpu` (default: the last allowed CPU) and the servers and
    /// clients on another allowed CPU (the same one on a single-CPU machine).
    pub fn place(&mut self, cpu: Option<u32>, allowed: &[u32]) {
        self.cpu_asked = cpu.is_some();
        self.engine_cpu = cpu.or(allowed.last().copied());
        self.endpoint_cpu = allowed
            .iter()
            .copied()
            .find(|c| Some(*c) != self.engine_cpu)
            .or(self.engine_cpu);
    }

    /// How many steps [`run_to_file`] reports progress for.
    pub fn progress_steps(&self) -> u64 {
        self.delays_ns.len() as u64 * u64::from(self.repeats) * self.apps.len() as u64 + 2
    }
}

/// Errors of a whole run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The experiment failed.
    #[error(transparent)]
    Run(#[from] WhereTimeError),
    /// The histograms could not be stored.
    #[error(transparent)]
    Hist(#[from] latlab_core::hist::HistError),
    /// Writing the result failed.
    #[error(transparent)]
    Write(#[from] ResultError),
}

/// Runs the experiment (progress is told each run's label) and writes its result to `out`.
///
/// # Errors
/// See [`SessionError`].
pub fn run_to_file(
    cfg: &WhereTimeConfig,
    started_utc: String,
    argv: Vec<String>,
    out: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<(), SessionError> {
    let (clock, timebase) = Clock::establish(Nanos(100_000_000));
    let t0 = clock.now();
    let outcome = run(cfg, &clock, |label| progress(label))?;
    let provenance = host::provenance(
        timebase,
        vec![
            ThreadPlacement::with_fifo("injector", cfg.engine_cpu, cfg.fifo),
            ThreadPlacement::with_fifo(
                "servers and benchmark clients (taskset)",
                cfg.endpoint_cpu,
                None,
            ),
        ],
        false,
        started_utc,
    );
    let config = serde_json::to_value(cfg).unwrap_or_default();
    let mut result = ResultFile::new(RESULT_KIND, argv, config, provenance);
    result.duration_ns = clock.delta_nanos(t0, clock.now()).get();
    fill_result(&mut result, &outcome)?;
    if let Some(vm) = &result.provenance.host.virtualization {
        result.warnings.push(format!(
            "running under a hypervisor ({vm}); servers, clients and the injector share {} CPUs",
            sched::allowed_cpus().len()
        ));
    }
    result.save(out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_the_flag() {
        let mut c = WhereTimeConfig::quick();
        c.apps.clear();
        assert!(c.validate(&[0, 1]).is_ok());
        c.delays_ns = vec![20_000];
        assert!(c
            .validate(&[0])
            .unwrap_err()
            .to_string()
            .contains("--delays"));
        let mut c = WhereTimeConfig::quick();
        c.apps.clear();
        c.run_time = Nanos(10);
        assert!(c
            .validate(&[0])
            .unwrap_err()
            .to_string()
            .contains("--run-time"));
        let mut c = WhereTimeConfig::quick();
        c.apps.clear();
        c.place(Some(9), &[0, 1]);
        assert!(c
            .validate(&[0, 1])
            .unwrap_err()
            .to_string()
            .contains("CPU 9"));
        c.place(None, &[0, 1]);
        assert_eq!((c.engine_cpu, c.endpoint_cpu), (Some(1), Some(0)));
        let mut c = WhereTimeConfig::quick();
        c.apps.clear();
        c.open_loop_peer_fraction = Some(1.0);
        assert!(c.validate(&[0, 1]).is_ok());
        for bad in [0.0, -0.5, f64::NAN, f64::INFINITY, 2.5] {
            c.open_loop_peer_fraction = Some(bad);
            assert!(c
                .validate(&[0, 1])
                .unwrap_err()
                .to_string()
                .contains("peer:F"));
        }
        c.open_loop_peer_fraction = Some(0.5);
        c.open_loop_milli_rps = Some(5_000_000);
        assert!(c
            .validate(&[0, 1])
            .unwrap_err()
            .to_string()
            .contains("--open-loop-rate"));
    }
}

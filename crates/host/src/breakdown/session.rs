//! A whole `host breakdown` run: every runnable step measured in turn (a step that cannot
//! run here, or fails, is recorded as skipped with the reason), then the versioned result
//! written before anything is printed.

use super::config::{BreakdownConfig, Step, RESULT_KIND};
use super::measure::{measure, placement, unavailable};
use super::stored::fill_result;
use latlab_core::results::{ResultError, ResultFile, ThreadPlacement};
use latlab_core::units::Nanos;
use latlab_sys::{host, sched, tsc::Clock};
use std::path::Path;

/// Errors of a whole run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The configuration cannot be measured here.
    #[error("{0}")]
    Config(String),
    /// Writing the result failed.
    #[error(transparent)]
    Write(#[from] ResultError),
}

impl BreakdownConfig {
    /// Checks what [`run`] needs: a positive duration, and pinned CPUs this process may
    /// use (`allowed`).
    ///
    /// # Errors
    /// [`RunError::Config`] naming the flag and the accepted values.
    pub fn validate(&self, allowed: &[u32]) -> Result<(), RunError> {
        if self.duration.get() == 0 {
            return Err(RunError::Config(
                "--duration must be positive, e.g. 2s".into(),
            ));
        }
        for cpu in self.client_cpu.iter().chain(&self.server_cpu) {
            if !allowed.contains(cpu) {
                return Err(RunError::Config(format!(
                    "--cpus: CPU {cpu} is not available to this process (allowed: {})",
                    sched::format_cpu_list(allowed)
                )));
            }
        }
        Ok(())
    }
}

/// Measures every step of `cfg` (progress is told each step's name first) and writes the
/// result to `out`. Locks memory first when `mlock`.
///
/// # Errors
/// [`RunError::Write`] when the result cannot be written; a step that fails is recorded
/// as skipped, not returned.
pub fn run(
    cfg: &BreakdownConfig,
    mlock: bool,
    started_utc: String,
    argv: Vec<String>,
    out: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<(), RunError> {
    let allowed = sched::allowed_cpus();
    let (clock, timebase) = Clock::establish(Nanos(100_000_000));
    let mut warnings = Vec::new();
    let memory_locked = mlock && sched::lock_memory_or_warn(&mut warnings);
    let root = latlab_sys::netns::is_root();
    let mut skipped = Vec::new();
    let runnable: Vec<Step> = cfg
        .steps
        .iter()
        .copied()
        .filter(|s| match unavailable(*s, cfg, root, &allowed) {
            Some(why) => {
                skipped.push((*s, why));
                false
            }
            None => true,
        })
        .collect();
    let run_start = clock.now();
    let mut outcomes = Vec::new();
    for s in &runnable {
        progress(s.name());
        match measure(*s, cfg, &clock, &allowed) {
            Ok(o) => outcomes.push(o),
            Err(e) => skipped.push((*s, format!("failed: {e}"))),
        }
    }
    let run_end = clock.now();

    let (client, server) = placement(cfg, &allowed);
    let (policy, priority) = sched::current_policy();
    let threads = vec![
        ThreadPlacement::pinned(
            "client (and single-thread steps)",
            client,
            policy.clone(),
            priority,
        ),
        ThreadPlacement::pinned("server", server, policy, priority),
    ];
    let provenance = host::provenance(timebase, threads, memory_locked, started_utc);
    let config = serde_json::to_value(cfg).unwrap_or_default();
    let mut result = ResultFile::new(RESULT_KIND, argv, config, provenance);
    result.duration_ns = clock.delta_nanos(run_start, run_end).get();
    fill_result(&mut result, &outcomes, &skipped, &cfg.rule);
    result.warnings.extend(warnings);
    if let Some(vm) = &result.provenance.host.virtualization {
        result.warnings.push(format!(
            "running under a hypervisor ({vm}): VM exits and steal time appear in the tails"
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
        let mut c = BreakdownConfig::default();
        assert!(c.validate(&[0, 1]).is_ok());
        c.client_cpu = Some(7);
        let e = c.validate(&[0, 1]).unwrap_err().to_string();
        assert!(e.contains("--cpus") && e.contains("CPU 7"), "{e}");
        let c = BreakdownConfig {
            duration: Nanos(0),
            ..BreakdownConfig::default()
        };
        assert!(c
            .validate(&[0])
            .unwrap_err()
            .to_string()
            .contains("--duration"));
    }
}

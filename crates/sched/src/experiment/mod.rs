//! `latlab experiment hourglass`: the Hourglass paper's Section 5 scenarios, adapted to a
//! small SMP machine running Linux 6.x. One CPU stands in for the paper's uniprocessor
//! (threads that must share it are pinned to it); every run is a normal `latlab sched`
//! run whose command line is recorded, and the summary says where Linux 6.x differs
//! from the paper's 2002 kernels and why.
//!
//! [`run`] takes an [`ExperimentConfig`] and writes every run, the summary
//! ([`ExperimentSummary`], kind [`KIND`]) and `summary.txt` into its directory; the
//! report provider of the summary is [`ExperimentSections`].

mod runs;
mod scenarios;
mod sections;
mod summary;

pub use runs::s52 as cache_cost_step;
pub use sections::{experiment_sections, ExperimentSections};
pub use summary::{summary_text, ExperimentSummary, ScenarioSummary, KIND};

use crate::clock::tsc_clock;
use crate::error::Error;
use crate::figures::Draw;
use latlab_core::results::{write_atomically, ResultFile};
use latlab_sys::{host, sched};
use std::path::PathBuf;

/// The paper's Section 5 scenarios, in order.
pub const SCENARIOS: [&str; 6] = ["5.1", "5.2", "5.3", "5.4", "5.5", "5.6"];

/// Shortest run length of a scenario's runs, ns.
pub const MIN_DURATION_NS: u64 = 100_000_000;

/// The experiment as resolved from its command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExperimentConfig {
    /// Where every result, figure and the summary go.
    pub dir: PathBuf,
    /// Length of each run, ns.
    pub duration_ns: u64,
    /// The CPU that stands in for the paper's uniprocessor.
    pub cpu: u32,
    /// Whether `--cpu` named it; otherwise [`run`] probes every allowed CPU and takes the
    /// quietest.
    pub cpu_asked: bool,
    /// Fewer sizes and trials in 5.2.
    pub quick: bool,
    /// Only these scenarios (all when empty).
    pub only: Vec<String>,
    /// The `latlab` binary that the 5.4 testbed traffic runs as.
    pub exe: PathBuf,
    /// Run every scenario with `--explain` (on unless `--no-explain`; without root or
    /// tracefs the runs say so and carry on).
    pub explain: bool,
}

impl ExperimentConfig {
    /// Resolves and checks the experiment's settings: `--only` names known scenarios, the
    /// duration is at least [`MIN_DURATION_NS`], and the CPU (by default the last allowed
    /// one) is available.
    ///
    /// # Errors
    /// [`Error::Config`] naming the flag.
    pub fn new(
        dir: PathBuf,
        duration_ns: u64,
        cpu: Option<u32>,
        quick: bool,
        only: Vec<String>,
        exe: PathBuf,
    ) -> Result<ExperimentConfig, Error> {
        for o in &only {
            if !SCENARIOS.contains(&o.as_str()) {
                return Err(Error::Config(format!(
                    "--only: unknown scenario '{o}'; accepted: {}",
                    SCENARIOS.join(", ")
                )));
            }
        }
        if duration_ns < MIN_DURATION_NS {
            return Err(Error::Config(
                "--duration must be at least 100ms, e.g. 5s".into(),
            ));
        }
        let cpu_asked = cpu.is_some();
        let cpu = cpu.unwrap_or_else(|| *sched::allowed_cpus().last().unwrap_or(&0));
        if !sched::allowed_cpus().contains(&cpu) {
            return Err(Error::Config(format!("--cpu {cpu}: not available")));
        }
        Ok(ExperimentConfig {
            dir,
            duration_ns,
            cpu,
            cpu_asked,
            quick,
            only,
            exe,
            explain: true,
        })
    }

    fn wants(&self, id: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == id)
    }
}

/// What the experiment wrote.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The scenarios run.
    pub scenarios: Vec<ScenarioSummary>,
    /// The summary result file.
    pub summary_path: PathBuf,
    /// The summary as text (also in `summary.txt`).
    pub text: String,
    /// The summary, then every run's result file: the inputs of the experiment's report.
    pub results: Vec<PathBuf>,
}

/// Runs the scenarios `cfg` asks for and writes their results and figures (drawn by
/// `draw`), the summary (`experiment.json`, with `argv` as its command line) and
/// `summary.txt` into `cfg.dir`; `progress` is told as each scenario starts.
///
/// # Errors
/// No TSC, a run refused or failed, the 5.4 traffic failed, or a file not written.
pub fn run(
    cfg: &ExperimentConfig,
    argv: Vec<String>,
    draw: &dyn Draw,
    progress: &mut dyn latlab_core::progress::Progress,
) -> Result<Outcome, Error> {
    std::fs::create_dir_all(&cfg.dir)
        .map_err(|e| Error::io(format!("creating {}", cfg.dir.display()), e))?;
    let (_clock, tb, _hz) = tsc_clock()?;
    let (cpu, placement) = place(cfg);
    let ctx = scenarios::Ctx {
        dir: cfg.dir.clone(),
        duration_ns: cfg.duration_ns,
        cpu,
        draw,
        explain: cfg.explain,
    };
    let mut done = Vec::new();
    let started = host::utc_now_rfc3339();
    let wanted = ["5.1", "5.2", "5.3", "5.4", "5.5", "5.6"]
        .into_iter()
        .filter(|s| cfg.wants(s))
        .count() as u64;
    let mut steps = latlab_core::progress::Steps::new(progress, wanted);
    if cfg.wants("5.1") {
        steps.next("scenario 5.1");
        done.push(scenarios::s51(&ctx)?);
    }
    if cfg.wants("5.2") {
        steps.next("scenario 5.2");
        done.push(scenarios::s52(&ctx, cfg.quick)?);
    }
    if cfg.wants("5.3") {
        steps.next("scenario 5.3");
        done.push(scenarios::s53(&ctx)?);
    }
    if cfg.wants("5.4") {
        steps.next("scenario 5.4");
        done.push(scenarios::s54(&ctx, &cfg.exe)?);
    }
    if cfg.wants("5.5") {
        steps.next("scenario 5.5");
        done.push(scenarios::s55(&ctx)?);
    }
    if cfg.wants("5.6") {
        steps.next("scenario 5.6");
        done.push(scenarios::s56(&ctx)?);
    }
    let mut r = ResultFile::new(
        KIND,
        argv,
        serde_json::json!({"duration_ns": cfg.duration_ns, "cpu": cpu, "quick": cfg.quick, "only": cfg.only}),
        host::provenance(tb, vec![], true, started),
    );
    let summary = ExperimentSummary {
        scenarios: done,
        placement,
    };
    r.data = serde_json::to_value(&summary)?;
    let summary_path = cfg.dir.join("experiment.json");
    r.save(&summary_path)?;
    let text = format!(
        "Placement: {}\n\n{}",
        summary.placement,
        summary_text(&summary.scenarios)
    );
    write_atomically(&cfg.dir.join("summary.txt"), text.as_bytes())?;
    let mut results = vec![summary_path.clone()];
    results.extend(
        summary
            .scenarios
            .iter()
            .flat_map(|s| s.results.iter().map(|f| cfg.dir.join(f))),
    );
    Ok(Outcome {
        scenarios: summary.scenarios,
        summary_path,
        text,
        results,
    })
}

/// The CPU standing in for the uniprocessor, and the sentence saying why: `--cpu` as
/// asked; otherwise, with several CPUs allowed, the one that lost the least time while a
/// thread spun on each for [`latlab_net::fit::QUIET_PROBE`] (another tenant's load or
/// interrupts there would show as gaps no scenario caused); with one CPU, that one.
fn place(cfg: &ExperimentConfig) -> (u32, String) {
    let allowed = sched::allowed_cpus();
    if cfg.cpu_asked || allowed.len() < 2 {
        let why = if cfg.cpu_asked {
            "as asked (--cpu)"
        } else {
            "the only CPU allowed"
        };
        return (cfg.cpu, format!("CPU {}, {why}.", cfg.cpu));
    }
    let quiet = latlab_net::fit::probe_cpus(&allowed, None);
    let probe = latlab_net::fit::probe_clause(&quiet);
    match latlab_net::fit::choose_cpus(&quiet) {
        Some((_, quietest)) => (
            quietest,
            format!(
                "CPU {quietest}, the quietest of the {} allowed; {probe}; pass --cpu to choose.",
                allowed.len(),
            ),
        ),
        None => (
            cfg.cpu,
            format!(
                "CPU {}, the last allowed, since no CPU could be probed: {probe}.",
                cfg.cpu
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(
        duration_ns: u64,
        cpu: Option<u32>,
        only: &[&str],
    ) -> Result<ExperimentConfig, Error> {
        let only = only.iter().map(|s| s.to_string()).collect();
        ExperimentConfig::new("x".into(), duration_ns, cpu, true, only, "latlab".into())
    }

    #[test]
    fn the_config_names_the_flag_at_fault_and_defaults_to_the_last_cpu() {
        let e = config(1_000_000_000, None, &["5.1", "9.9"]).unwrap_err();
        assert!(
            e.to_string().contains("--only: unknown scenario '9.9'"),
            "{e}"
        );
        let e = config(1_000, None, &[]).unwrap_err();
        assert!(e.to_string().starts_with("--duration"), "{e}");
        let e = config(1_000_000_000, Some(100_000), &[]).unwrap_err();
        assert!(e.to_string().starts_with("--cpu 100000"), "{e}");
        let c = config(1_000_000_000, None, &["5.5"]).unwrap();
        assert_eq!(Some(&c.cpu), sched::allowed_cpus().last());
        assert!(c.wants("5.5") && !c.wants("5.1"));
    }
}

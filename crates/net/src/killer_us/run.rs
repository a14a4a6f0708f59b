//! The killer-us experiment end to end: the testbed, the host's fit, the ladder's runs and
//! the summary, with the interruption that stops it between runs.

use super::assemble;
use super::config::KillerUsConfig;
use super::data::{GEN_MODES, STEPS};
use super::fit::fit_host;
use super::ladder::{Context, Ladder};
use super::outcome::{ExperimentError, Summary};
use super::rung::{mode_unavailable, rung_unavailable, RunPlan};
use crate::orchestrate::{self, Placement};
use latlab_core::doc::FigureSink;
use std::path::Path;

/// Runs the experiment, writing everything under `dir`; `progress` is told as each run
/// (configuration × receive mode) starts, and `figures` draws its CCDFs (the CLI passes
/// `latlab_report::FileFigures`; this crate never draws). Call
/// [`latlab_sys::signal::install_stop_handler`] first for Ctrl-C to stop it cleanly: it
/// stops between runs, and whatever it changed (real-time throttling, the testbed) is put
/// back on every way out (error, panic, interruption).
pub fn run(
    cfg: &KillerUsConfig,
    exe: &Path,
    dir: &Path,
    argv: Vec<String>,
    figures: &dyn FigureSink,
    progress: &mut dyn latlab_core::progress::Progress,
) -> Result<Summary, ExperimentError> {
    // Ctrl-C reaches the children too (one process group): a run that failed because its
    // probe was interrupted is the interruption, not the probe's (empty) failure.
    run_inner(cfg, exe, dir, argv, figures, progress).map_err(|e| {
        if latlab_sys::signal::stop_requested() {
            ExperimentError::Interrupted
        } else {
            e
        }
    })
}

fn run_inner(
    cfg: &KillerUsConfig,
    exe: &Path,
    dir: &Path,
    argv: Vec<String>,
    figures: &dyn FigureSink,
    progress: &mut dyn latlab_core::progress::Progress,
) -> Result<Summary, ExperimentError> {
    let placement = if cfg.loopback {
        Placement::Loopback
    } else {
        Placement::Testbed
    };
    let started = std::time::Instant::now();
    let _testbed = orchestrate::prepare(placement)?;
    std::fs::create_dir_all(dir).map_err(|source| latlab_core::results::ResultError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut files = Vec::new();
    // what this host offers: each rung's and generator mode's reason not to run, if any
    let root = latlab_sys::netns::is_root();
    let rung_why: Vec<Option<String>> = STEPS
        .iter()
        .map(|s| rung_unavailable(s, cfg.loopback, root))
        .collect();
    let mode_why: Vec<Option<&str>> = GEN_MODES
        .iter()
        .map(|(_, io)| mode_unavailable(*io, cfg.loopback, root))
        .collect();
    let planned = rung_why.iter().filter(|w| w.is_none()).count()
        * mode_why.iter().filter(|w| w.is_none()).count();
    let fit = fit_host(
        cfg,
        exe,
        dir,
        placement,
        &mut files,
        started,
        planned as u32,
    )?;
    let plan = RunPlan {
        exe,
        dir,
        placement,
        gen_cpu: fit.gen_cpu,
        nf_cpu: fit.nf_cpu,
        gen_fifo: fit.gen_fifo,
        explain: cfg.explain,
    };
    let cx = Context {
        cfg,
        plan: &plan,
        fit: &fit,
        started,
    };
    let mut ladder = Ladder::new(cfg, fit.runs);
    let modes = ladder.modes(cfg, &GEN_MODES, &mode_why);
    for (step, why) in STEPS.into_iter().zip(rung_why) {
        ladder.rung(&cx, step, why, &modes, &mut files, progress)?;
    }
    assemble::summary(cfg, dir, argv, &fit, ladder, files, figures)
}

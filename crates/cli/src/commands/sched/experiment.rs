//! `latlab experiment hourglass`: the Hourglass paper's Section 5 scenarios
//! ([`latlab_sched::experiment`]), then the experiment's report.

use crate::args::sched::HourglassExperimentArgs;
use crate::exit::sched_error;
use latlab_report::FileFigures as Figures;
use latlab_sched::experiment::{self, ExperimentConfig};

/// Runs `latlab experiment hourglass`.
pub fn hourglass(a: HourglassExperimentArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let exe = std::env::current_exe()?;
    let mut cfg = ExperimentConfig::new(a.dir, a.duration.get(), a.cpu, a.quick, a.only, exe)
        .map_err(sched_error)?;
    cfg.explain = !a.no_explain;
    let out = experiment::run(&cfg, argv, &Figures, &mut crate::output::Bar::new(a.quiet))
        .map_err(sched_error)?;
    print!("{}", out.text);
    println!(
        "written: {} (summary), results and figures in {}",
        out.summary_path.display(),
        cfg.dir.display()
    );
    // The report, from the files just written: the summary first, then every run.
    let report = crate::commands::report::experiment_report(
        &cfg.dir,
        "latlab experiment hourglass",
        &out.results,
    )?;
    println!("report: {}", report.display());
    Ok(())
}

//! `latlab host noise`: resolve the flags, run, print the summary from the file written.

use crate::args::host_noise::NoiseArgs;
use crate::exit::usage;
use latlab_core::results::ResultFile;
use latlab_host::noise::{self, NoiseError, NoiseRun};

pub fn run(a: NoiseArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let mut r = NoiseRun::from(&a);
    r.validate().map_err(|e| usage(e.to_string()))?;
    let outs = crate::output::outputs("host-noise", &a.out, None)?;
    r.started_utc = outs.started_utc;
    let quiet = a.out.quiet;
    let mut bar = crate::output::Bar::new(quiet);
    bar.0.set_prefix("host noise");
    let pb = bar.0.clone();
    let written = noise::run_with_progress(
        &r,
        argv,
        &outs.result,
        &mut |line| {
            if !quiet {
                pb.suspend(|| eprintln!("latlab: {line}"));
            }
        },
        &mut bar,
    );
    drop(bar);
    let written = written.map_err(|e| match e {
        NoiseError::Config(m) => usage(m),
        other => anyhow::Error::new(other),
    })?;
    let saved = ResultFile::load(&written.result)?;
    if !quiet {
        print!("{}", noise::summary(&saved)?);
        if let Some(a) = &saved.explain {
            if !a.worst.is_empty() {
                println!("worst gaps:");
                print!("{}", latlab_explain::render::worst_text(a));
            }
        }
        for w in &saved.warnings {
            println!("warning: {w}");
        }
        crate::output::print_idle(&saved);
        println!("result: {}", written.result.display());
    }
    Ok(())
}

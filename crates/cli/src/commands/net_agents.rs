//! `latlab net probe --agents`, under mpirun: rank 0 resolves the plan (the library
//! broadcasts it, runs the agents and gathers them) and writes the agents' results and
//! their merge.

use crate::args::net::ProbeArgs;
#[cfg(feature = "mpi")]
use crate::exit::usage;

/// Runs the agents (every rank calls it).
#[cfg(feature = "mpi")]
pub fn run(a: ProbeArgs, argv: Vec<String>) -> anyhow::Result<()> {
    use anyhow::Context as _;
    use latlab_core::results::ResultFile;
    use latlab_net::agents;
    use latlab_net::run::ProbeJob;
    let started_utc = latlab_sys::host::utc_now_rfc3339();
    let resolve = |ranks: usize| -> Result<agents::AgentsPlan, String> {
        if a.testbed {
            let st = latlab_net::testbed::status().map_err(|e| e.to_string())?;
            if !st.complete {
                return Err(format!(
                    "--testbed: the testbed is not up (missing: {}); run `sudo latlab net testbed up --generators {}` first",
                    st.missing.join(", "),
                    ranks.saturating_sub(1).max(1)
                ));
            }
        }
        let job = ProbeJob::try_from(&a).map_err(|e| e.to_string())?;
        agents::plan(&job, ranks.saturating_sub(1), a.testbed).map_err(|e| e.to_string())
    };
    // rank 0 says it, once, for every rank; every rank exits with the same code
    let say = |f: &agents::Failure| eprintln!("latlab: error: {f}");
    let gathered = match agents::run(resolve, argv, started_utc.clone(), say) {
        Ok(Some(g)) => g,
        Ok(None) => return Ok(()),
        Err(f) if f.said => std::process::exit(if f.usage { 2 } else { 1 }),
        Err(f) if f.usage => return Err(usage(f.to_string())),
        Err(f) => return Err(anyhow::anyhow!(f)),
    };
    let out = crate::output::result_path(&a.out, "net-probe", &started_utc);
    let mut runs = Vec::new();
    for (spec, rec) in gathered.plan.agents.iter().zip(gathered.records) {
        let path = agent_path(&out, spec.rank);
        rec.save(&path)
            .with_context(|| format!("writing {}", path.display()))?;
        runs.push((path.clone(), ResultFile::load(&path)?));
    }
    let merged = agents::assemble(&gathered.plan, &runs, &gathered.clocks)
        .context("merging the agents' results")?;
    merged.save(&out).context("writing the result")?;
    if !a.out.quiet {
        let saved = ResultFile::load(&out)?;
        super::net::print_probe(&saved)?;
        print_agents(&saved);
        println!("result: {}", out.display());
    }
    Ok(())
}

/// Without MPI: a usage error.
#[cfg(not(feature = "mpi"))]
pub fn run(_a: ProbeArgs, _argv: Vec<String>) -> anyhow::Result<()> {
    Err(crate::exit::usage(
        "--agents: latlab was built without MPI support (feature 'mpi'); install libopenmpi-dev and libclang-dev and rebuild",
    ))
}

/// Where agent `rank`'s own result goes: beside the merged one, `…agent{rank}.json`.
#[cfg(feature = "mpi")]
fn agent_path(out: &std::path::Path, rank: usize) -> std::path::PathBuf {
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "net-probe".into());
    out.with_file_name(format!("{stem}.agent{rank}.json"))
}

/// The agents' lines: share, achieved rate, samples and clock.
#[cfg(feature = "mpi")]
fn print_agents(r: &latlab_core::results::ResultFile) {
    use latlab_core::text::Table;
    let Some(d) = latlab_net::agents::agents_data(r) else {
        return;
    };
    let mut t = Table::new([
        "rank",
        "namespace",
        "flows",
        "pps configured",
        "pps achieved",
        "samples",
        "clock offset",
        "± uncertainty",
        "drift ppm",
    ]);
    for a in &d.agents {
        let (off, unc, drift) = a.clock.map_or(("-".into(), "-".into(), "-".into()), |c| {
            (
                format!("{:.0} ns", c.offset_ns),
                format!("{:.0} ns", c.uncertainty_ns),
                format!("{:.2}", c.drift_ppm),
            )
        });
        t.row(vec![
            a.rank.to_string(),
            a.namespace.clone().unwrap_or_else(|| "-".into()),
            a.flows.to_string(),
            format!("{:.0}", a.configured_pps),
            format!("{:.0}", a.achieved_pps),
            a.samples.to_string(),
            off,
            unc,
            drift,
        ]);
    }
    println!("agents:");
    print!("{}", t.render());
    println!("clocks: {}", d.clock_note);
}

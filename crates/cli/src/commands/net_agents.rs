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
        let agents_n = ranks.saturating_sub(1);
        // without --flows, one flow per agent
        let job = a.job(Some(agents_n)).map_err(|e| e.to_string())?;
        let mut plan = agents::plan(&job, agents_n, a.testbed).map_err(|e| e.to_string())?;
        // the clock test hook: resolved here, sent to every rank in the plan
        if let Ok(v) = std::env::var(agents::CLOCK_HOOK) {
            let hook = agents::clock::ClockHook::parse(&v)
                .map_err(|e| format!("{}={e}", agents::CLOCK_HOOK))?;
            if hook.rank >= ranks {
                return Err(format!(
                    "{}={v:?}: rank {} is not an agent of this run (ranks 1 to {})",
                    agents::CLOCK_HOOK,
                    hook.rank,
                    ranks.saturating_sub(1)
                ));
            }
            plan.clock_hook = Some(hook);
        }
        Ok(plan)
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
    let merged = agents::assemble(&gathered.plan, &runs, &gathered.clocks, gathered.one_way)
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
    if let Some(w) = &d.one_way {
        print_one_way(w);
    }
}

/// The one-way table: each stream's corrected percentiles with their uncertainty, and
/// what they were before the correction (and, under the clock test hook, in truth).
#[cfg(feature = "mpi")]
fn print_one_way(w: &latlab_net::agents::oneway::OneWayData) {
    use latlab_core::text::Table;
    use latlab_core::units::format_ns;
    let mut t = Table::new([
        "one-way",
        "samples",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "max",
        "uncorrected p50",
        "true p50 (hook)",
    ]);
    let pm = |v: i64, u: f64| format!("{} ± {}", format_ns(v as f64), format_ns(u));
    for s in &w.streams {
        let c = &s.corrected;
        t.row(vec![
            format!("rank {} → {}", s.sender_rank, s.receiver_rank),
            format!("{}/{}", s.samples, s.sent),
            pm(c.p50, s.uncertainty_ns),
            pm(c.p90, s.uncertainty_ns),
            pm(c.p99, s.uncertainty_ns),
            pm(c.p999, s.uncertainty_ns),
            pm(c.max, s.uncertainty_ns),
            format_ns(s.uncorrected.p50 as f64),
            s.truth
                .map_or("-".into(), |x| format_ns(x.delays.p50 as f64)),
        ]);
    }
    if let Some(c) = &w.all {
        let u = w.all_uncertainty_ns;
        let n: u64 = w.streams.iter().map(|s| s.samples).sum();
        t.row(vec![
            "all".into(),
            n.to_string(),
            pm(c.p50, u),
            pm(c.p90, u),
            pm(c.p99, u),
            pm(c.p999, u),
            pm(c.max, u),
            "-".into(),
            "-".into(),
        ]);
    }
    print!("{}", t.render());
    println!("{}", w.note);
}

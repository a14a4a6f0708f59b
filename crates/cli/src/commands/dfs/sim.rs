//! `latlab dfs sim`: the discrete-event simulator.

use super::common::{completion_cells, f, resolve_model, COMPLETION_MS};
use crate::args::dfs::{ModeArg, SimArgs};
use crate::exit::usage;
use crate::output::{default_result_path, unique};
use crate::table::Table;
use anyhow::Context as _;
use latlab_core::results::{Provenance, ResultFile};
use latlab_dfs::params::DEFAULT_MTS_BYTES;
use latlab_dfs::report::{compare, sim_data, sim_summary};
use latlab_dfs::sim::{self, result::to_result, NetModel, SimConfig, SIM_DEFAULT_TS_PER_INTERVAL};
use latlab_dfs::Mode;
use latlab_sys::host;
use std::path::{Path, PathBuf};

impl TryFrom<&SimArgs> for SimConfig {
    type Error = anyhow::Error;

    /// The configuration of the run (its mode is set per run); the library checks it.
    fn try_from(a: &SimArgs) -> anyhow::Result<SimConfig> {
        let (topology, params) =
            resolve_model(&a.model, DEFAULT_MTS_BYTES, SIM_DEFAULT_TS_PER_INTERVAL)?;
        let mut base = SimConfig::new(topology.inputs, topology.computes, Mode::Dfs);
        base.topology = topology;
        base.params = params;
        base.net = NetModel {
            inj_gbs: a.bandwidth,
            ej_gbs: a.bandwidth,
            latency_ns: a.latency.get() as i64,
            jitter_ns: a.jitter.get() as f64,
            max_inflight: a.max_inflight,
            processing_ns: a.processing.get() as f64,
            noise: a.noise,
            noise_period_ns: a.noise_period.get() as i64,
            max_clock_offset_ns: a.clock_offset.get() as i64,
            max_drift_ppm: a.drift_ppm,
        };
        base.seed = a.model.seed;
        if let Some(n) = a.model.time_slices {
            base.time_slices = n;
        }
        base.slow = parse_all("slow", &a.slow)?;
        base.drops = parse_all("drop", &a.drop)?;
        base.dde_replicas = a.dde_replicas;
        base.dde_faults = parse_all("kill-dde", &a.kill_dde)?;
        Ok(base)
    }
}

pub fn run(a: SimArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let base = SimConfig::try_from(&a)?;
    let modes: Vec<Mode> = match a.mode {
        ModeArg::BestEffort => vec![Mode::BestEffort],
        ModeArg::Dfs => vec![Mode::Dfs],
        ModeArg::Both => vec![Mode::BestEffort, Mode::Dfs],
    };
    let started_utc = host::utc_now_rfc3339();
    let out = a
        .out
        .output
        .clone()
        .unwrap_or_else(|| default_result_path("dfs-sim", &started_utc));
    let paths: Vec<PathBuf> = if modes.len() == 1 {
        vec![if a.out.output.is_some() {
            out.clone()
        } else {
            unique(out.clone())
        }]
    } else {
        modes
            .iter()
            .map(|m| unique(suffixed(&out, m.name())))
            .collect()
    };

    let mut saved = Vec::new();
    for (mode, path) in modes.iter().zip(&paths) {
        let cfg = SimConfig {
            mode: *mode,
            ..base.clone()
        };
        let wall = std::time::Instant::now();
        let o = sim::run(&cfg).map_err(|e| usage(format!("{e}")))?;
        let wall_s = wall.elapsed().as_secs_f64();
        let mut r = to_result(&o, argv.clone(), provenance(&started_utc));
        r.counters
            .insert("wall_ms".into(), (wall_s * 1e3).round() as u64);
        r.save(path).context("writing the result")?;
        saved.push((path.clone(), ResultFile::load(path)?));
    }

    if !a.out.quiet {
        print_summary(&saved)?;
    }
    Ok(())
}

/// Provenance of a simulation: the host that ran it, and a timebase that says no clock
/// was read (all times are simulated).
pub(crate) fn provenance(started_utc: &str) -> Provenance {
    host::provenance(
        sim::result::simulated_timebase(),
        vec![],
        false,
        started_utc.to_string(),
    )
}

fn suffixed(p: &Path, s: &str) -> PathBuf {
    let stem = p
        .file_stem()
        .map(|x| x.to_string_lossy().into_owned())
        .unwrap_or_default();
    p.with_file_name(format!("{stem}-{s}.json"))
}

pub(crate) fn print_summary(saved: &[(PathBuf, ResultFile)]) -> anyhow::Result<()> {
    let mut t = Table::new(
        ["mode", "nodes", "ts"]
            .into_iter()
            .chain(COMPLETION_MS)
            .chain(["GB/s", "% nominal", "lost", "bad"]),
    );
    let mut datas = Vec::new();
    for (p, r) in saved {
        let d = sim_data(r).with_context(|| format!("reading {}", p.display()))?;
        let s = sim_summary(&d);
        let mut row = vec![
            s.mode.name().into(),
            s.nodes.to_string(),
            s.time_slices.to_string(),
        ];
        row.extend(completion_cells(&s.completion_ms));
        row.extend([
            f(s.bandwidth_gbs, 1),
            f(s.bandwidth_pct_of_reference, 1),
            s.lost.to_string(),
            s.bad.to_string(),
        ]);
        t.row(row);
        datas.push(d);
    }
    println!("time-slice completion duration (last - first arrival), after warm-up:");
    print!("{}", t.render());
    if let [be, dfs] = &datas[..] {
        if be.config.mode == Mode::BestEffort && dfs.config.mode == Mode::Dfs {
            let c = compare(be, dfs);
            println!(
                "best effort / DFS: median {}x, p90 {}x, variance {}x; DFS / best effort bandwidth {}x",
                f(c.median_ratio, 2),
                f(c.p90_ratio, 2),
                f(c.variance_ratio, 1),
                f(c.bandwidth_ratio, 3)
            );
        }
    }
    for (p, r) in saved {
        for w in &r.warnings {
            println!("warning: {w}");
        }
        println!("result: {}", p.display());
    }
    Ok(())
}

/// Parses every `flag` value as a `T`, naming the flag and the value in the error.
fn parse_all<T: std::str::FromStr<Err = String>>(
    flag: &str,
    v: &[String],
) -> anyhow::Result<Vec<T>> {
    v.iter()
        .map(|s| s.parse().map_err(|e| usage(format!("--{flag} '{s}': {e}"))))
        .collect()
}

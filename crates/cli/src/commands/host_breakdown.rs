//! `latlab host breakdown`: the in-host latency breakdown.

use crate::args::host_breakdown::BreakdownArgs;
use crate::exit::usage;
use crate::output::{default_result_path, progress, unique};
use crate::table::{ns, Table};
use anyhow::Context as _;
use latlab_core::results::{ResultFile, ThreadPlacement};
use latlab_host::breakdown::{self, BreakdownConfig, Step};
use latlab_sys::{host, sched, tsc::Clock};
use std::path::{Path, PathBuf};

pub fn run(a: BreakdownArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let all: Vec<&str> = Step::ALL.iter().map(|s| s.name()).collect();
    let mut steps = super::pick_names(&a.steps, "--steps", "step", Step::from_name, &all)?;
    if steps.is_empty() {
        steps = Step::ALL.to_vec();
    }
    if a.duration.get() == 0 {
        return Err(usage("--duration must be positive, e.g. 2s"));
    }
    let allowed = sched::allowed_cpus();
    let (client_cpu, server_cpu) = match a.cpus.as_slice() {
        [c, s] => {
            for cpu in [c, s] {
                if !allowed.contains(cpu) {
                    return Err(usage(format!(
                        "--cpus: CPU {cpu} is not available to this process (allowed: {})",
                        sched::format_cpu_list(&allowed)
                    )));
                }
            }
            (Some(*c), Some(*s))
        }
        [] => (None, None),
        _ => {
            return Err(usage(
                "--cpus takes two CPUs, client then server, e.g. --cpus 1,0",
            ))
        }
    };
    let cfg = BreakdownConfig {
        steps: steps.clone(),
        duration: a.duration,
        warmup: a.warmup,
        client_cpu,
        server_cpu,
        payload: a.payload as usize,
        ..BreakdownConfig::default()
    };
    let started_utc = host::utc_now_rfc3339();
    let out_path = a
        .out
        .output
        .clone()
        .unwrap_or_else(|| unique(default_result_path("host-breakdown", &started_utc)));
    let plot_path = a
        .plot
        .as_ref()
        .map(|p| p.clone().unwrap_or_else(|| stacked_path(&out_path)));
    if let Some(p) = &plot_path {
        latlab_report::ImageFormat::from_path(p).map_err(|e| usage(format!("--plot: {e}")))?;
    }

    let (clock, timebase) = Clock::establish(latlab_core::units::Nanos(100_000_000));
    let mut warnings = Vec::new();
    let memory_locked = !a.no_mlock && sched::lock_memory_or_warn(&mut warnings);
    let root = latlab_sys::netns::is_root();
    let mut skipped = Vec::new();
    let runnable: Vec<Step> = steps
        .iter()
        .copied()
        .filter(|s| match breakdown::unavailable(*s, &cfg, root, &allowed) {
            Some(why) => {
                skipped.push((*s, why));
                false
            }
            None => true,
        })
        .collect();
    let per_step = (cfg.duration.get() + cfg.warmup.get()) as f64 / 1e9;
    let pb = progress(
        runnable.len() as u64,
        per_step * runnable.len() as f64,
        a.out.quiet,
    );
    let run_start = clock.now();
    let mut outcomes = Vec::new();
    for s in &runnable {
        pb.set_message(s.name());
        match breakdown::measure(*s, &cfg, &clock, &allowed) {
            Ok(o) => outcomes.push(o),
            Err(e) => skipped.push((*s, format!("failed: {e}"))),
        }
        pb.inc(1);
    }
    let run_end = clock.now();
    pb.finish_and_clear();

    let (client, server) = breakdown::placement(&cfg, &allowed);
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
    let config = serde_json::to_value(&cfg).context("encoding the configuration")?;
    let mut result = ResultFile::new(breakdown::RESULT_KIND, argv, config, provenance);
    result.duration_ns = clock.delta_nanos(run_start, run_end).get();
    breakdown::fill_result(&mut result, &outcomes, &skipped, &cfg.rule);
    result.warnings.extend(warnings);
    if let Some(vm) = &result.provenance.host.virtualization {
        result.warnings.push(format!(
            "running under a hypervisor ({vm}): VM exits and steal time appear in the tails"
        ));
    }
    result.save(&out_path).context("writing the result")?;

    let saved = ResultFile::load(&out_path)?;
    if !a.out.quiet {
        print_table(&saved)?;
        for w in &saved.warnings {
            println!("warning: {w}");
        }
        println!("result: {}", out_path.display());
    }
    if let Some(p) = plot_path {
        draw_decomposition(&saved, &p)?;
        if !a.out.quiet {
            println!("plot: {}", p.display());
        }
    }
    Ok(())
}

fn stacked_path(result: &Path) -> PathBuf {
    let stem = result
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "host-breakdown".into());
    result.with_file_name(format!("{stem}-udp.svg"))
}

/// Draws the stacked UDP decomposition of a saved breakdown result.
pub fn draw_decomposition(r: &ResultFile, path: &Path) -> anyhow::Result<()> {
    let d = breakdown::data(r)?;
    if d.decomposition.is_empty() {
        anyhow::bail!(
            "cannot draw the UDP decomposition: it needs clock_read, null_syscall, udp_loopback \
             with futex_other_core, or udp_loopback_busy with cacheline_pingpong"
        );
    }
    let fig = breakdown::sections::decomposition_figure(&d.decomposition)
        .context("nothing to draw: the decomposition has no positive step")?;
    latlab_report::write_figure(&fig, path).with_context(|| format!("drawing {}", path.display()))
}

fn print_table(r: &ResultFile) -> anyhow::Result<()> {
    let rows = breakdown::table(r)?;
    let mut t = Table::new([
        "step",
        "p50",
        "p99",
        "p99.99",
        "max",
        "samples",
        "class",
        "what one sample is",
    ]);
    for row in &rows {
        t.row(vec![
            row.step.clone(),
            ns(row.p50_ns),
            ns(row.p99_ns),
            row.p9999_ns.map(ns).unwrap_or_else(|| "unsupported".into()),
            ns(row.max_ns),
            row.samples.to_string(),
            row.class.to_string(),
            row.description.clone(),
        ]);
    }
    print!("{}", t.render());
    println!("class reasons:");
    for row in &rows {
        println!(
            "  {:<20} {:<5} {}",
            row.step,
            row.class.to_string(),
            row.reason
        );
    }
    let d = breakdown::data(r)?;
    for x in &d.decomposition {
        let parts: Vec<String> = x
            .segments
            .iter()
            .map(|s| format!("{} {}", s.label, ns(s.ns.round() as u64)))
            .collect();
        println!(
            "{} = {}: {}{}",
            x.step,
            ns(x.total_ns.round() as u64),
            parts.join(" + "),
            if x.inconsistent {
                " (components exceed the total: remainder clamped to 0)"
            } else {
                ""
            }
        );
    }
    for s in &d.skipped {
        println!("not measured: {} ({})", s.name, s.reason);
    }
    Ok(())
}

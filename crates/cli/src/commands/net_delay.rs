//! `latlab net delay`: the latency injector, or its verification in a testbed.

use crate::args::net_delay::{DelayArgs, DirectionArg};
use crate::exit::usage;
use crate::output::{default_result_path, unique};
use crate::table::{ns, Table};
use anyhow::Context as _;
use latlab_core::parse::Percentile;
use latlab_core::results::{ResultFile, ThreadPlacement};
use latlab_core::units::{format_signed_ns, Nanos, SignStyle};
use latlab_net::delay::engine::{self, Direction, EngineConfig};
use latlab_net::delay::{report, testbed, DelaySpec};
use latlab_sys::{host, sched, tsc::Clock};

pub fn run(a: DelayArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let delay = DelaySpec::parse(&a.delay).map_err(|e| usage(format!("--delay: {e}")))?;
    let allowed = sched::allowed_cpus();
    let cpu = match a.cpu {
        Some(c) if !allowed.contains(&c) => {
            return Err(usage(format!(
                "--cpu: CPU {c} is not available to this process (allowed: {})",
                sched::format_cpu_list(&allowed)
            )))
        }
        Some(c) => Some(c),
        None => allowed.last().copied(),
    };
    if !latlab_sys::netns::is_root() {
        return Err(latlab_sys::sched::SchedError::NotPermitted {
            what: "latlab net delay (AF_PACKET sockets and network namespaces)".into(),
            remedy: "run as root (CAP_NET_RAW, CAP_SYS_ADMIN)",
        }
        .into());
    }
    if a.testbed {
        return run_check(&a, delay, cpu, &allowed, argv);
    }
    if a.ifaces.len() != 2 || a.ifaces[0] == a.ifaces[1] {
        return Err(usage(
            "--ifaces takes two different interfaces, e.g. --ifaces eth1,eth2",
        ));
    }
    let started_utc = host::utc_now_rfc3339();
    let out_path = a
        .out
        .output
        .clone()
        .unwrap_or_else(|| unique(default_result_path("net-delay", &started_utc)));
    let mut cfg = EngineConfig::new(&a.ifaces[0], &a.ifaces[1], delay);
    cfg.direction = match a.direction {
        DirectionArg::Both => Direction::Both,
        DirectionArg::AToB => Direction::AToB,
        DirectionArg::BToA => Direction::BToA,
    };
    cfg.capacity = a.capacity as usize;
    cfg.slot_bytes = a.slot_bytes as usize;
    cfg.seed = a.seed;
    cfg.duration = a.duration;
    latlab_sys::signal::install_stop_handler().context("installing the Ctrl-C handler")?;
    let (clock, timebase) = Clock::establish(Nanos(100_000_000));
    let mut lock_warnings = Vec::new();
    let memory_locked = sched::lock_memory_or_warn(&mut lock_warnings);
    let netns = a.netns.clone();
    let fifo = a.fifo;
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let quiet = a.out.quiet;
    let handle = std::thread::spawn({
        let cfg = cfg.clone();
        move || -> anyhow::Result<engine::EngineReport> {
            if let Some(n) = &netns {
                latlab_sys::netns::enter(n).context("--netns")?;
            }
            if let Some(c) = cpu {
                sched::pin_current_thread(c).context("--cpu")?;
            }
            if let Some(p) = fifo {
                sched::set_fifo(p).context("--fifo")?;
            }
            Ok(engine::run(
                &cfg,
                &clock,
                latlab_sys::signal::stop_flag(),
                || {
                    let _ = tx.send(());
                },
            )?)
        }
    });
    if rx.recv().is_ok() && !quiet {
        eprintln!(
            "forwarding {} <-> {} with {} added ({:?}); Ctrl-C to stop",
            cfg.a, cfg.b, cfg.delay, cfg.direction
        );
    }
    let rep = handle
        .join()
        .map_err(|_| anyhow::anyhow!("the forwarding thread panicked"))??;
    let provenance = host::provenance(
        timebase,
        vec![placement("forwarder", cpu, fifo)],
        memory_locked,
        started_utc,
    );
    let mut config = serde_json::to_value(&cfg).context("encoding the configuration")?;
    config["netns"] = serde_json::json!(a.netns);
    let mut result = ResultFile::new(report::RUN_KIND, argv, config, provenance);
    result.duration_ns = rep.elapsed.get();
    report::fill_run(&mut result, &rep);
    result.warnings.extend(lock_warnings);
    result.save(&out_path).context("writing the result")?;
    let saved = ResultFile::load(&out_path)?;
    if !quiet {
        print_run(&saved)?;
        println!("result: {}", out_path.display());
    }
    Ok(())
}

fn print_run(r: &ResultFile) -> anyhow::Result<()> {
    let data: report::RunData = serde_json::from_value(r.data.clone()).context("reading data")?;
    let mut t = Table::new([
        "direction",
        "forwarded",
        "dropped (queue full)",
        "oversize",
        "send refused",
        "kernel rx drops",
        "max depth",
        "base p50",
        "base p99",
        "lateness p99",
    ]);
    for d in &data.directions {
        let h = |w: &str| r.histogram(&format!("{}.{w}", d.name)).transpose();
        let (ex, la) = (h("excess")?, h("lateness")?);
        let p = |h: &Option<latlab_core::hist::LatencyHistogram>, i: usize| {
            h.as_ref()
                .filter(|h| !h.is_empty())
                .map(|h| ns(h.value_at(Percentile::LADDER[i])))
                .unwrap_or_else(|| "-".into())
        };
        t.row(vec![
            d.name.clone(),
            r.counters
                .get(&format!("{}.forwarded", d.name))
                .copied()
                .unwrap_or(0)
                .to_string(),
            d.queue.dropped_full.to_string(),
            d.queue.dropped_oversize.to_string(),
            d.send_failures.to_string(),
            d.kernel_rx_drops.to_string(),
            d.queue.max_depth.to_string(),
            p(&ex, 0),
            p(&ex, 2),
            p(&la, 2),
        ]);
    }
    print!("{}", t.render());
    println!("base = the element's own latency beyond the delay (frame received -> sent), user-space part");
    for w in &r.warnings {
        println!("warning: {w}");
    }
    Ok(())
}

fn run_check(
    a: &DelayArgs,
    delay: DelaySpec,
    cpu: Option<u32>,
    allowed: &[u32],
    argv: Vec<String>,
) -> anyhow::Result<()> {
    let DelaySpec::Constant { ns: delay_ns } = delay else {
        return Err(usage("--testbed checks a constant --delay, e.g. 20us"));
    };
    let started_utc = host::utc_now_rfc3339();
    let out_path = a
        .out
        .output
        .clone()
        .unwrap_or_else(|| unique(default_result_path("net-delay-check", &started_utc)));
    let endpoint_cpu = allowed.iter().copied().find(|c| Some(*c) != cpu).or(cpu);
    let cfg = testbed::CheckConfig {
        delay_ns,
        duration: a.check_duration,
        rounds: a.rounds,
        compare_netem: a.compare_netem,
        engine_cpu: cpu,
        endpoint_cpu,
        fifo: a.fifo,
        busy_client: a.busy_client,
    };
    if a.compare_netem {
        if let Err(why) = testbed::netem_available() {
            return Err(anyhow::anyhow!(
                "--compare-netem: {why}; latlab net delay itself works without it (run without --compare-netem)"
            ));
        }
    }
    let (clock, timebase) = Clock::establish(Nanos(100_000_000));
    if !a.out.quiet {
        eprintln!(
            "verifying {} in a namespace testbed: about {:.0} s",
            latlab_core::units::format_ns(delay_ns as f64),
            a.check_duration.get() as f64 / 1e9 * if a.compare_netem { 4.0 } else { 3.0 } + 2.0
        );
    }
    let c = match testbed::check(&cfg, &clock) {
        Err(testbed::CheckError::NetemMissing(why)) => {
            return Err(anyhow::anyhow!("--compare-netem: {why}; latlab net delay itself works without it (run without --compare-netem)"))
        }
        other => other?,
    };
    let provenance = host::provenance(
        timebase,
        vec![
            placement("forwarder", cpu, a.fifo),
            placement("client and server", endpoint_cpu, a.fifo),
        ],
        false,
        started_utc,
    );
    let config = serde_json::json!({
        "delay_ns": delay_ns,
        "duration_ns": cfg.duration.get(),
        "rounds": cfg.rounds,
        "compare_netem": cfg.compare_netem,
        "engine_cpu": cpu,
        "endpoint_cpu": endpoint_cpu,
        "fifo_priority": a.fifo,
        "busy_client": a.busy_client,
        "direction": "client to server",
    });
    let mut result = ResultFile::new(report::CHECK_KIND, argv, config, provenance);
    report::fill_check(&mut result, &c, delay_ns)?;
    if let Some(vm) = &result.provenance.host.virtualization {
        result.warnings.push(format!(
            "running under a hypervisor ({vm}): the hosts' scheduling noise is in every round trip"
        ));
    }
    result.save(&out_path).context("writing the result")?;
    let saved = ResultFile::load(&out_path)?;
    if !a.out.quiet {
        let mut t = Table::new(["path", "p50", "p99", "p99.9", "max", "samples", "lost"]);
        let mut names = vec!["direct", "zero", "delayed"];
        if saved.histogram("netem").is_some() {
            names.push("netem");
        }
        for n in names {
            let h = saved.histogram(n).expect("written above")?;
            let p = |i: usize| ns(h.value_at(Percentile::LADDER[i]));
            t.row(vec![
                match n {
                    "direct" => "direct veth link".to_string(),
                    "zero" => "through latlab net delay, 0 us".to_string(),
                    "delayed" => format!("through latlab net delay, {}", ns(delay_ns)),
                    _ => format!("netem {} on a direct link", ns(delay_ns)),
                },
                p(0),
                p(2),
                p(3),
                ns(h.max()),
                h.count().to_string(),
                saved
                    .counters
                    .get(&format!("{n}.lost"))
                    .copied()
                    .unwrap_or(0)
                    .to_string(),
            ]);
        }
        print!("{}", t.render());
        let s = report::check_summary(&saved).map_err(anyhow::Error::msg)?;
        println!(
            "added {}: median shift {} (error {:+.2} us), p99 shift {} (error {:+.2} us)",
            ns(delay_ns),
            format_signed_ns(s.median_shift_ns as f64, SignStyle::AsciiMinus),
            (s.median_shift_ns - delay_ns as i64) as f64 / 1e3,
            format_signed_ns(s.p99_shift_ns as f64, SignStyle::AsciiMinus),
            (s.p99_shift_ns - delay_ns as i64) as f64 / 1e3
        );
        println!(
            "base latency: {} per round trip through the element at 0 us (vs the direct link); the element's own user-space part {} (median)",
            format_signed_ns(s.base_latency_ns as f64, SignStyle::AsciiMinus),
            ns(s.engine_excess_p50_ns)
        );
        if let (Some(m), Some(p)) = (s.netem_median_shift_ns, s.netem_p99_shift_ns) {
            println!(
                "netem: median shift {}, p99 shift {}",
                format_signed_ns(m as f64, SignStyle::AsciiMinus),
                format_signed_ns(p as f64, SignStyle::AsciiMinus)
            );
        }
        for w in &saved.warnings {
            println!("warning: {w}");
        }
        println!("result: {}", out_path.display());
    }
    Ok(())
}

/// How a thread of the injector was placed, for provenance: pinned to `cpu` (and seen
/// there), under `SCHED_FIFO` at `fifo` or else `SCHED_OTHER`.
fn placement(role: &str, cpu: Option<u32>, fifo: Option<i32>) -> ThreadPlacement {
    ThreadPlacement {
        role: role.into(),
        pinned_cpu: cpu,
        observed_cpus: cpu.into_iter().collect(),
        policy: if fifo.is_some() {
            "SCHED_FIFO"
        } else {
            "SCHED_OTHER"
        }
        .into(),
        priority: fifo.unwrap_or(0),
    }
}

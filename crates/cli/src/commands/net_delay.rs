//! `latlab net delay`: the latency injector, or its verification in a testbed.

use crate::args::net_delay::DelayArgs;
use crate::output::result_path;
use anyhow::Context as _;
use latlab_core::parse::Percentile;
use latlab_core::results::{ResultFile, ThreadPlacement};
use latlab_core::text::{ns, Table};
use latlab_core::units::{format_signed_ns, Nanos, SignStyle};
use latlab_net::delay::engine;
use latlab_net::delay::{report, testbed};
use latlab_sys::{host, sched, tsc::Clock};

pub fn run(a: DelayArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let delay = a.delay_spec()?;
    let allowed = sched::allowed_cpus();
    let cpu = a.engine_cpu(&allowed)?;
    let check = a
        .testbed
        .then(|| a.check_config(delay, cpu, &allowed))
        .transpose()?;
    if !latlab_sys::netns::is_root() {
        return Err(latlab_sys::sched::SchedError::NotPermitted {
            what: "latlab net delay (AF_PACKET sockets and network namespaces)".into(),
            remedy: "run as root (CAP_NET_RAW, CAP_SYS_ADMIN)",
        }
        .into());
    }
    if let Some(cfg) = check {
        return run_check(&a, &cfg, argv);
    }
    let cfg = a.engine_config(delay)?;
    let started_utc = host::utc_now_rfc3339();
    let out_path = result_path(&a.out, "net-delay", &started_utc);
    latlab_sys::signal::install_stop_handler().context("installing the Ctrl-C handler")?;
    let (clock, timebase) = Clock::establish(Nanos(100_000_000));
    let mut lock_warnings = Vec::new();
    let memory_locked = sched::lock_memory_or_warn(&mut lock_warnings);
    let netns = a.netns.clone();
    let fifo = a.fifo;
    let spec = a.explain.spec();
    let quiet = a.out.quiet;
    let mut notice = |line: &str| {
        if !quiet {
            eprintln!("latlab: {line}");
        }
    };
    let ks = spec.enabled.then(|| {
        latlab_explain::KernelSession::start(
            &latlab_net::explain::kernel_request(
                &clock,
                timebase.fallback_reason.as_deref(),
                &spec,
            ),
            &mut notice,
        )
    });
    let span_start = clock.now();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
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
    let rep = handle.join();
    let span_end = clock.now();
    let got = ks.map(|k| k.finish(&mut notice));
    let rep = rep.map_err(|_| anyhow::anyhow!("the forwarding thread panicked"))??;
    let provenance = host::provenance(
        timebase,
        vec![ThreadPlacement::with_fifo("forwarder", cpu, fifo)],
        memory_locked,
        started_utc,
    );
    let mut config = serde_json::to_value(&cfg).context("encoding the configuration")?;
    config["netns"] = serde_json::json!(a.netns);
    let mut result = ResultFile::new(report::RUN_KIND, argv, config, provenance);
    result.duration_ns = rep.elapsed.get();
    report::fill_run(&mut result, &rep);
    result.warnings.extend(lock_warnings);
    if let Some(got) = &got {
        let t = latlab_net::explain::ThreadStalls {
            cpu,
            gaps: &rep.stalls,
            overflow: rep.stall_overflow,
            loop_cost: rep.loop_cost,
        };
        let (attr, data) = latlab_net::explain::attribute_stalls(
            got,
            &clock,
            spec.above,
            &[t],
            (span_start, span_end),
        );
        latlab_net::explain::record(&mut result, attr, data);
    }
    result.save(&out_path).context("writing the result")?;
    let saved = ResultFile::load(&out_path)?;
    if !quiet {
        print_run(&saved)?;
        crate::output::print_idle(&saved);
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
    print!("{}", latlab_net::explain::summary(r, true));
    for w in &r.warnings {
        println!("warning: {w}");
    }
    Ok(())
}

fn run_check(a: &DelayArgs, cfg: &testbed::CheckConfig, argv: Vec<String>) -> anyhow::Result<()> {
    let (spec, cpu, endpoint_cpu) = (cfg.delay, cfg.engine_cpu, cfg.endpoint_cpu);
    let delay_ns = spec.mean_ns();
    let started_utc = host::utc_now_rfc3339();
    let out_path = result_path(&a.out, "net-delay-check", &started_utc);
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
            "verifying {spec} in a namespace testbed: about {:.0} s",
            a.check_duration.get() as f64 / 1e9 * if a.compare_netem { 4.0 } else { 3.0 } + 2.0
        );
    }
    let quiet = a.out.quiet;
    let mut notice = |line: &str| {
        if !quiet {
            eprintln!("latlab: {line}");
        }
    };
    let ks = cfg.stalls.then(|| {
        latlab_explain::KernelSession::start(
            &latlab_net::explain::kernel_request(
                &clock,
                timebase.fallback_reason.as_deref(),
                &a.explain.spec(),
            ),
            &mut notice,
        )
    });
    let span_start = clock.now();
    let c = testbed::check(cfg, &clock);
    let span_end = clock.now();
    let got = ks.map(|k| k.finish(&mut notice));
    let c = match c {
        Err(testbed::CheckError::NetemMissing(why)) => {
            return Err(anyhow::anyhow!("--compare-netem: {why}; latlab net delay itself works without it (run without --compare-netem)"))
        }
        other => other?,
    };
    let provenance = host::provenance(
        timebase,
        vec![
            ThreadPlacement::with_fifo("forwarder", cpu, a.fifo),
            ThreadPlacement::with_fifo("client and server", endpoint_cpu, a.fifo),
        ],
        false,
        started_utc,
    );
    let config = serde_json::json!({
        "delay_ns": delay_ns,
        "delay": spec,
        "seed": cfg.seed,
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
    report::fill_check(&mut result, &c, &spec)?;
    if let Some(got) = &got {
        let (attr, data) = latlab_net::explain::attribute_stalls(
            got,
            &clock,
            a.explain.spec().above,
            &c.engine_stalls(cpu),
            (span_start, span_end),
        );
        latlab_net::explain::record(&mut result, attr, data);
    }
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
                    "delayed" => format!("through latlab net delay, {spec}"),
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
        if let Some(d) = &s.distribution {
            print_distribution(d);
            if !d.passed && (a.fifo.is_none() || !a.busy_client) {
                println!(
                    "hint: a drawn delay is checked against its whole distribution, which the endpoints' own delays blur when other work shares their CPUs (a longer wait in recv is a likelier preemption); --fifo 50 --busy-client keeps the client's CPU its own"
                );
            }
        } else {
            println!(
                "added {}: median shift {} (error {:+.2} us), p99 shift {} (error {:+.2} us)",
                ns(delay_ns),
                format_signed_ns(s.median_shift_ns as f64, SignStyle::AsciiMinus),
                (s.median_shift_ns - delay_ns as i64) as f64 / 1e3,
                format_signed_ns(s.p99_shift_ns as f64, SignStyle::AsciiMinus),
                (s.p99_shift_ns - delay_ns as i64) as f64 / 1e3
            );
        }
        print!("{}", latlab_net::explain::summary(&saved, true));
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
        crate::output::print_idle(&saved);
        if let Some(idle) = saved
            .provenance
            .idle
            .as_ref()
            .filter(|i| i.halting_allowed())
        {
            let halts = idle.total_halts();
            let off = match &s.distribution {
                Some(d) => !d.passed,
                None => (s.median_shift_ns - delay_ns as i64).abs() > 1_000,
            };
            if halts > 0 && off {
                println!(
                    "hint: idle CPUs halted {halts} times: waiting the added delay longer also means waking from a deeper sleep, which the delayed round trips include; --dma-latency 0 (the default of a check as root, without --idle-as-is) keeps them polling"
                );
            }
        }
        println!("result: {}", out_path.display());
    }
    Ok(())
}

/// The delayed round trips' quantiles against the expected ones and the KS verdict.
fn print_distribution(d: &latlab_net::delay::dist::DistributionCheck) {
    let mut t = Table::new(["quantile", "measured", "expected", "measured - expected"]);
    for q in &d.quantiles {
        t.row(vec![
            q.name.clone(),
            ns(q.measured_ns),
            ns(q.expected_ns),
            format_signed_ns(
                q.measured_ns as f64 - q.expected_ns as f64,
                SignStyle::AsciiMinus,
            ),
        ]);
    }
    println!(
        "delayed round trips against expected (0 us round trips convolved with {}):",
        d.spec
    );
    print!("{}", t.render());
    println!(
        "distribution: {} - Kolmogorov-Smirnov distance {:.4}, bound {:.4} (significance {}, {} and {} round trips, shifts up to {} forgiven)",
        if d.passed { "pass" } else { "FAIL" },
        d.ks_distance,
        d.bound,
        d.alpha,
        d.measured,
        d.base,
        ns(d.slack_ns)
    );
}

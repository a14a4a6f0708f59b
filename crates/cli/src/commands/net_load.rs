//! `latlab net load`: runs the open-loop generator against a server, writes the `net.load`
//! result, then prints its table from the file.

use crate::args::net_load::LoadArgs;
use crate::exit::{usage, Refused};
use anyhow::Context as _;
use latlab_core::parse::Percentile;
use latlab_core::results::ResultFile;
use latlab_core::stats::{summarize, DEFAULT_CONFIDENCE};
use latlab_core::text::{estimate, ns, Table};
use latlab_core::units::Nanos;
use latlab_net::rpc::{self, record::series, result::Served, LoadError};
use latlab_net::serve::{self, ServeError, ServeSpec, ServerKind};
use latlab_sys::host;
use latlab_sys::tsc::Clock;

/// A load error as the CLI reports it: a bad configuration or a refusing target exits 2.
fn load_err(e: LoadError) -> anyhow::Error {
    if e.is_bad_input() {
        usage(e.to_string())
    } else {
        anyhow::Error::from(e)
    }
}

/// A server error as the CLI reports it: a program that is not installed is bad input
/// (exit 2, naming `--serve` and the package), anything else a run-time failure.
fn serve_err(e: ServeError) -> anyhow::Error {
    match e {
        ServeError::Missing { .. } => usage(format!("--serve: {e}")),
        other => anyhow::Error::from(other),
    }
}

/// The server `--serve` asks for, described and not yet started: its program is looked up
/// here, so that a missing one is reported before anything is written.
fn serve_spec(a: &LoadArgs, cfg: &rpc::LoadConfig) -> anyhow::Result<Option<ServeSpec>> {
    let Some(kind) = a.serve.map(ServerKind::from) else {
        return Ok(None);
    };
    serve::find(kind).map_err(serve_err)?;
    if let Some(ns) = &a.serve_netns {
        // entered by a thread that ends right after: the namespace exists and may be used
        let ns = ns.clone();
        std::thread::spawn(move || latlab_sys::netns::enter(&ns))
            .join()
            .expect("namespace check panicked")
            .map_err(|e| match e {
                latlab_sys::netns::NetnsError::Open { .. } => usage(format!("--serve-netns: {e}")),
                _ => Refused(format!("--serve-netns: {e}")).into(),
            })?;
    }
    let dir = std::env::temp_dir().join(format!(
        "latlab-serve-{}-{}",
        kind.name(),
        std::process::id()
    ));
    let mut spec = ServeSpec::new(kind, cfg.target.addr, &dir);
    spec.netns.clone_from(&a.serve_netns);
    spec.cpu = a.serve_cpu;
    spec.udp = cfg.target.protocol == rpc::Protocol::MemcachedUdp;
    Ok(Some(spec))
}

pub fn run(a: LoadArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let cfg = a.config()?;
    let spec = serve_spec(&a, &cfg)?;
    let out = crate::output::outputs("net-load", &a.out, None)?;
    let (clock, timebase) = Clock::establish(Nanos::from_millis(100));
    let server = match &spec {
        Some(spec) => {
            if !a.out.quiet {
                eprintln!(
                    "starting {} on {}{}{}…",
                    spec.kind.name(),
                    spec.addr,
                    spec.cpu.map(|c| format!(", CPU {c}")).unwrap_or_default(),
                    spec.netns
                        .as_deref()
                        .map(|n| format!(", namespace {n}"))
                        .unwrap_or_default()
                );
            }
            let started = serve::start(spec);
            if started.is_err() {
                let _ = std::fs::remove_dir_all(&spec.dir);
            }
            Some(started.map_err(serve_err)?)
        }
        None => None,
    };
    // The load cannot stop early: Ctrl-C or SIGTERM stops the server here and ends the
    // process, instead of leaving the server running on its port.
    let server = std::sync::Arc::new(std::sync::Mutex::new(server));
    if let Some(spec) = &spec {
        let (held, dir) = (server.clone(), spec.dir.clone());
        crate::interrupt::on_signal(move || {
            let taken = held.lock().unwrap_or_else(|e| e.into_inner()).take();
            let Some(srv) = taken else {
                return "the server was already being stopped by the run".into();
            };
            let name = srv.name();
            let said = match srv.stop() {
                Ok(()) => format!("{name} stopped"),
                Err(e) => e.to_string(),
            };
            let _ = std::fs::remove_dir_all(&dir);
            said
        })?;
    }
    let target_text = a.target_text();
    let outcome = std::thread::scope(|s| {
        s.spawn(|| -> anyhow::Result<rpc::LoadOutcome> {
            if let Some(n) = &a.netns {
                latlab_sys::netns::enter(n).map_err(|e| usage(format!("--netns: {e}")))?;
            }
            // a refusing target is one line, before any notice
            rpc::engine::connect(&cfg.target).map_err(load_err)?;
            if !a.out.quiet && cfg.warmup.get() + cfg.duration.get() > 3_000_000_000 {
                eprintln!(
                    "loading {} at {} requests/s for {} after {} warm-up…",
                    target_text,
                    cfg.rps(),
                    cfg.duration,
                    cfg.warmup
                );
            }
            rpc::run(&cfg, &clock).map_err(load_err)
        })
        .join()
        .expect("load thread panicked")
    });
    // a load that ended because a signal's undo stopped the server is no result
    crate::interrupt::settle();
    // the server stops before anything else happens, on every path
    let server = server.lock().unwrap_or_else(|e| e.into_inner()).take();
    let served = server.map(|srv| {
        let pid = srv.pid();
        let stop = srv.stop();
        let spec = spec.as_ref().expect("a server has its spec");
        let _ = std::fs::remove_dir_all(&spec.dir);
        Served {
            server: spec.kind.name().into(),
            program: serve::find(spec.kind)
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            pid,
            cpu: spec.cpu,
            netns: spec.netns.clone(),
            stop: match stop {
                Ok(()) => "stopped".into(),
                Err(e) => e.to_string(),
            },
        }
    });
    let outcome = outcome?;
    let provenance = host::provenance(timebase, Vec::new(), false, out.started_utc);
    let mut r = rpc::load_result(&cfg, &target_text, &outcome, argv, provenance);
    if let Some(s) = served {
        if s.stop != "stopped" {
            r.warnings
                .push(format!("the server latlab started: {}", s.stop));
        }
        rpc::result::set_served(&mut r, s);
    }
    r.save(&out.result).context("writing the result")?;
    if !a.out.quiet {
        let saved = ResultFile::load(&out.result)?;
        print_load(&saved)?;
        crate::output::print_idle(&saved);
        println!("result: {}", out.result.display());
    }
    Ok(())
}

/// Prints a `net.load` result: percentiles with confidence intervals, counts, self-checks.
pub fn print_load(r: &ResultFile) -> anyhow::Result<()> {
    let ladder = [
        Percentile::LADDER[0],
        Percentile::LADDER[2],
        Percentile::LADDER[3],
        Percentile::LADDER[4],
    ];
    let mut t = Table::new([
        "series", "min", "p50", "p99", "p99.9", "p99.99", "max", "samples",
    ]);
    for name in series::ALL {
        let Some(h) = r.histogram(name).transpose()? else {
            continue;
        };
        if h.count() == 0 {
            continue;
        }
        let s = summarize(&h, &ladder, DEFAULT_CONFIDENCE);
        let mut cells = vec![name.to_string(), ns(s.min_ns)];
        cells.extend(s.percentiles.iter().map(estimate));
        cells.push(ns(s.max_ns));
        cells.push(s.count.to_string());
        t.row(cells);
    }
    print!("{}", t.render());
    let c = |k: &str| r.counters.get(k).copied().unwrap_or(0);
    println!(
        "requests: scheduled {}, sent {} ({} warm-up, {} late), answered {} ({} misses), errors {}, timed out {}, lost {}, unanswered {}, unsent {}",
        c("scheduled"),
        c("sent"),
        c("sent_warmup"),
        c("late"),
        c("answered"),
        c("misses"),
        c("errors"),
        c("timed_out"),
        c("lost"),
        c("unanswered"),
        c("unsent")
    );
    if let Some(d) = rpc::result::load_data(r) {
        println!(
            "rate: offered {:.0} requests/s, achieved {:.0} requests/s",
            d.configured_rps, d.achieved_rps
        );
        if let Some(m) = d.wake_margin_max_ns {
            println!(
                "waiting: adaptive, polling up to {:.0} µs before each send (learnt from its wake-ups)",
                m as f64 / 1e3
            );
        }
        if let Some(s) = &d.served {
            println!("server: {}", s.describe());
        }
    }
    for v in &r.self_checks {
        println!("self-check {}", v.line());
    }
    for w in &r.warnings {
        println!("warning: {w}");
    }
    Ok(())
}

//! `latlab net load`: runs the open-loop generator against a server, writes the `net.load`
//! result, then prints its table from the file.

use crate::args::net_load::LoadArgs;
use crate::exit::usage;
use anyhow::Context as _;
use latlab_core::parse::Percentile;
use latlab_core::results::ResultFile;
use latlab_core::stats::{summarize, DEFAULT_CONFIDENCE};
use latlab_core::text::{estimate, ns, Table};
use latlab_core::units::Nanos;
use latlab_net::rpc::{self, record::series, LoadError};
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

pub fn run(a: LoadArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let cfg = a.config()?;
    let out = crate::output::outputs("net-load", &a.out, None)?;
    let (clock, timebase) = Clock::establish(Nanos::from_millis(100));
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
                    a.target,
                    cfg.rps(),
                    cfg.duration,
                    cfg.warmup
                );
            }
            rpc::run(&cfg, &clock).map_err(load_err)
        })
        .join()
        .expect("load thread panicked")
    })?;
    let provenance = host::provenance(timebase, Vec::new(), false, out.started_utc);
    let r = rpc::load_result(&cfg, &a.target, &outcome, argv, provenance);
    r.save(&out.result).context("writing the result")?;
    if !a.out.quiet {
        let saved = ResultFile::load(&out.result)?;
        print_load(&saved)?;
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
    }
    for v in &r.self_checks {
        println!("self-check {}", v.line());
    }
    for w in &r.warnings {
        println!("warning: {w}");
    }
    Ok(())
}

//! `latlab net …` and `latlab experiment killer-us`.

use crate::args::net::{
    ArrivalsArg, CalibrateArgs, DirectionArg, ForwardArgs, IoArg, KillerUsArgs, ModeArg,
    NetCommand, NfArgs, ProbeArgs, ReflectArgs, TestbedAction, TestbedArgs,
};
use crate::exit::usage;
use crate::output::{default_result_path, sibling, unique};
use crate::table::{estimate, ns, Table};
use anyhow::Context as _;
use latlab_core::hist::HistConfig;
use latlab_core::parse::Percentile;
use latlab_core::results::{ResultFile, StoredHistogram, ThreadPlacement};
use latlab_core::units::Nanos;
use latlab_net::nf::{self, Directions, IoMode, NfConfig, Role};
use latlab_net::probe::{self, Arrivals, Mode, ProbeConfig};
use latlab_net::testbed;
use latlab_sys::rt_throttle::Unthrottled;
use latlab_sys::sched::SchedError;
use latlab_sys::{host, sched, tsc::Clock};
use std::io::{BufRead as _, Write as _};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Environment variable set when latlab re-executes itself inside a testbed namespace.
const IN_NETNS: &str = "LATLAB_IN_NETNS";

pub fn run(cmd: NetCommand, argv: Vec<String>) -> anyhow::Result<()> {
    match cmd {
        NetCommand::Reflect(a) => reflect(a, argv),
        NetCommand::Forward(a) => forward(a, argv),
        NetCommand::Probe(a) => probe_cmd(a, argv),
        NetCommand::Testbed(a) => testbed_cmd(a),
        NetCommand::Calibrate(a) => calibrate(a, argv),
        NetCommand::Delay(a) => super::net_delay::run(a, argv),
    }
}

fn io_mode(a: IoArg) -> IoMode {
    match a {
        IoArg::Blocking => IoMode::Blocking,
        IoArg::Busy => IoMode::Busy,
    }
}

/// A testbed error as the CLI reports it (not root → exit 3).
fn testbed_err(e: testbed::TestbedError) -> anyhow::Error {
    match e {
        testbed::TestbedError::NotRoot => SchedError::NotPermitted {
            what: "building the namespace testbed".into(),
            remedy: "run as root (sudo): creating namespaces and veth pairs needs CAP_NET_ADMIN and CAP_SYS_ADMIN",
        }
        .into(),
        other => other.into(),
    }
}

fn reflect(a: ReflectArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let cfg = nf_config(Role::Reflect { bind: a.bind }, &a.nf);
    run_nf(cfg, &a.nf, argv, "reflect")
}

fn forward(a: ForwardArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let directions = match a.direction {
        DirectionArg::Both => Directions::Both,
        DirectionArg::AToB => Directions::AToB,
        DirectionArg::BToA => Directions::BToA,
    };
    let role = if a.testbed {
        let t = testbed::addresses();
        Role::Forward {
            a: t.nf_a,
            a_to: t.gen_b,
            b: t.nf_b,
            b_to: std::net::SocketAddr::new(t.gen_a.ip(), testbed::GEN_PORT),
            directions,
        }
    } else {
        let need = |v: Option<std::net::SocketAddr>, f: &str| {
            v.ok_or_else(|| usage(format!("{f} is required (or --testbed)")))
        };
        Role::Forward {
            a: need(a.a, "--a")?,
            a_to: need(a.a_to, "--a-to")?,
            b: need(a.b, "--b")?,
            b_to: need(a.b_to, "--b-to")?,
            directions,
        }
    };
    let cfg = nf_config(role, &a.nf);
    run_nf(cfg, &a.nf, argv, "forward")
}

fn nf_config(role: Role, a: &NfArgs) -> NfConfig {
    NfConfig {
        role,
        io: io_mode(a.io),
        cpus: a.cpu.clone().map(|c| c.0).unwrap_or_default(),
        fifo: a.fifo,
        delay: a.delay,
        batch: a.batch as usize,
        busy_poll_us: a.busy_poll,
    }
}

/// `--no-rt-throttle`: real-time throttling off until the guard drops, said on stderr.
fn unthrottle(on: bool, quiet: bool) -> anyhow::Result<Option<Unthrottled>> {
    if !on {
        return Ok(None);
    }
    let g = Unthrottled::engage().map_err(|e| {
        anyhow::anyhow!(
            "--no-rt-throttle: {}: {e} (writing it needs root)",
            latlab_sys::rt_throttle::RT_RUNTIME_PATH
        )
    })?;
    if !quiet {
        eprintln!(
            "real-time throttling off for this run (kernel.sched_rt_runtime_us was {}; restored at exit)",
            g.previous()
        );
    }
    Ok(Some(g))
}

/// The warning a result carries when `--no-rt-throttle` was given.
fn unthrottled_note(g: &Option<Unthrottled>) -> Option<String> {
    g.as_ref().map(|g| {
        format!(
            "real-time throttling was off for this run (--no-rt-throttle: kernel.sched_rt_runtime_us -1, {} before{})",
            g.previous(),
            if g.changed() { " and restored after" } else { ", as set outside latlab" }
        )
    })
}

fn run_nf(cfg: NfConfig, a: &NfArgs, argv: Vec<String>, what: &str) -> anyhow::Result<()> {
    let started_utc = host::utc_now_rfc3339();
    let rt_guard = unthrottle(a.no_rt_throttle, a.out.quiet)?;
    let (clock, timebase) = Clock::establish(Nanos::from_millis(100));
    let memory_locked = sched::lock_memory().is_ok();
    let udp_before = latlab_net::netinfo::udp_rcvbuf_errors();
    let handle = nf::start(&cfg, clock).with_context(|| format!("starting the {what} NF"))?;
    let t0 = clock.now();
    let locals: Vec<String> = handle.local.iter().map(|l| l.to_string()).collect();
    if !a.out.quiet {
        println!(
            "latlab net {what}: listening on {} (io {}, delay {})",
            locals.join(", "),
            cfg.io.name(),
            cfg.delay.describe()
        );
    }
    // the line orchestrators wait for
    println!("ready");
    std::io::stdout().flush().ok();
    let stop = Arc::new(AtomicBool::new(false));
    if a.until_stdin_closes {
        let s = stop.clone();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            let mut line = String::new();
            while stdin
                .lock()
                .read_line(&mut line)
                .map(|n| n > 0)
                .unwrap_or(false)
            {
                line.clear();
            }
            s.store(true, Ordering::Relaxed);
        });
    }
    let deadline = a.duration.map(|d| clock.now() + clock_raw(&clock, d));
    loop {
        if stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| clock.now() >= d) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let counters = handle.counters.clone();
    let outs = handle.stop();
    let t1 = clock.now();
    let threads: Vec<ThreadPlacement> = outs
        .iter()
        .map(|o| ThreadPlacement {
            role: format!("nf {}", o.name),
            pinned_cpu: o.cpu,
            observed_cpus: Vec::new(),
            policy: o.policy.0.clone(),
            priority: o.policy.1,
        })
        .collect();
    let provenance = host::provenance(timebase, threads, memory_locked, started_utc.clone());
    let mut r = ResultFile::new(
        nf::NF_RESULT_KIND,
        argv,
        serde_json::to_value(&cfg)?,
        provenance,
    );
    r.duration_ns = clock.delta_nanos(t0, t1).get();
    r.warnings.extend(unthrottled_note(&rt_guard));
    for o in &outs {
        r.histograms.push(
            StoredHistogram::new(format!("nf.residence.{}", o.name), &o.residence)
                .with_label("thread", o.name.clone()),
        );
    }
    for (k, v) in counters.snapshot() {
        r.counters.insert(k, v);
    }
    // drops before the NF could read: full socket buffers in its namespace
    r.counters.insert(
        "udp_rcvbuf_drops".into(),
        latlab_net::netinfo::udp_rcvbuf_errors().saturating_sub(udp_before),
    );
    r.data = serde_json::to_value(nf::NfData {
        role: what.to_string(),
        local: locals,
        threads: outs
            .iter()
            .map(|o| (o.name.clone(), o.cpu, o.policy.0.clone(), o.policy.1))
            .collect(),
    })?;
    let path = a
        .out
        .output
        .clone()
        .unwrap_or_else(|| unique(default_result_path(&format!("net-{what}"), &started_utc)));
    r.save(&path).context("writing the result")?;
    if !a.out.quiet {
        let saved = ResultFile::load(&path)?;
        let c = &saved.counters;
        println!(
            "received {}, sent {}, malformed {}, send failed {}",
            c["received"], c["sent"], c["malformed"], c["send_failed"]
        );
        println!("result: {}", path.display());
    }
    Ok(())
}

fn clock_raw(clock: &Clock, d: Nanos) -> u64 {
    match clock.timesource() {
        latlab_sys::tsc::Timesource::Tsc(rate) => rate.to_ticks(d).0,
        latlab_sys::tsc::Timesource::Monotonic => d.get(),
    }
}

/// Re-runs this command line inside `ns` and returns its exit status.
fn reexec_in(ns: &str) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("finding the latlab executable")?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let status = testbed::ns_command(ns, &exe)
        .args(&args)
        .env(IN_NETNS, ns)
        .status()
        .with_context(|| format!("running latlab inside namespace {ns}"))?;
    std::process::exit(status.code().unwrap_or(1));
}

fn probe_cmd(a: ProbeArgs, argv: Vec<String>) -> anyhow::Result<()> {
    if a.testbed && std::env::var(IN_NETNS).ok().as_deref() != Some(testbed::GEN_NS) {
        let st = testbed::status().map_err(testbed_err)?;
        if !st.complete {
            return Err(usage(
                "--testbed: the testbed is not up (missing: ".to_string()
                    + &st.missing.join(", ")
                    + "); run `sudo latlab net testbed up` first",
            ));
        }
        return reexec_in(testbed::GEN_NS);
    }
    let mut cfg = if a.testbed {
        let t = testbed::addresses();
        let mut c = ProbeConfig::new(t.nf_a);
        c.tx_bind = t.gen_a;
        c.rx_bind = Some(t.gen_b);
        c
    } else {
        let to =
            a.to.ok_or_else(|| usage("--to is required (or --testbed)"))?;
        let mut c = ProbeConfig::new(to);
        if let Some(b) = a.bind {
            c.tx_bind = b;
        }
        c.rx_bind = a.rx_bind;
        c
    };
    latlab_net::wire::payload_len(a.size).map_err(|e| usage(format!("--size: {e}")))?;
    cfg.mode = match a.mode {
        ModeArg::Open => Mode::OpenLoop,
        ModeArg::Pingpong => Mode::Pingpong,
    };
    cfg.milli_pps = a
        .rate
        .milli_pps(Some(a.size as u64 + 4))
        .map_err(|e| usage(format!("--rate: {e}")))?;
    if cfg.mode == Mode::OpenLoop && cfg.milli_pps == 0 {
        return Err(usage("--rate must be positive, e.g. 10kpps"));
    }
    cfg.arrivals = match a.arrivals {
        ArrivalsArg::Constant => Arrivals::Constant,
        ArrivalsArg::Poisson => Arrivals::Poisson,
    };
    cfg.flows = a.flows;
    cfg.frame = a.size;
    if a.duration.get() == 0 {
        return Err(usage("--duration must be positive, e.g. 5s"));
    }
    cfg.duration = a.duration;
    cfg.warmup = a.warmup;
    cfg.drain = a.drain;
    cfg.sources = a.timestamps.sources;
    // `all` means every source this host can give; naming `hardware` insists on it
    cfg.hardware_optional = a.timestamps.all;
    cfg.rx_io = io_mode(a.rx_io);
    cfg.tx_cpu = a.tx_cpu;
    cfg.rx_cpu = a.rx_cpu;
    cfg.fifo = a.fifo;
    if a.interval.get() == 0 {
        return Err(usage("--interval must be positive, e.g. 1s"));
    }
    cfg.interval = a.interval;
    cfg.seed = a.seed;
    cfg.hist = HistConfig {
        sigfig: a.sigfig,
        ..cfg.hist
    };
    let nf_json = match &a.nf_config {
        Some(s) => Some(
            serde_json::from_str::<serde_json::Value>(s)
                .map_err(|e| usage(format!("--nf-config: not JSON: {e}")))?,
        ),
        None => None,
    };
    let crate::output::Outputs {
        started_utc,
        result: out_path,
        plot: plot_path,
    } = crate::output::outputs("net-probe", &a.out, a.plot.as_ref())?;
    let rt_guard = unthrottle(a.no_rt_throttle, a.out.quiet)?;
    let (clock, timebase) = Clock::establish(Nanos::from_millis(100));
    let memory_locked = sched::lock_memory().is_ok();
    if !a.out.quiet && (a.warmup.get() + a.duration.get()) > 3_000_000_000 {
        eprintln!(
            "probing {} for {} after {} warm-up…",
            cfg.target,
            Nanos(a.duration.get()),
            Nanos(a.warmup.get())
        );
    }
    let wall_start = std::time::SystemTime::now();
    let outcome = probe::run(&cfg, clock).map_err(|e| match e {
        probe::ProbeError::Sched(s) => anyhow::Error::from(s),
        probe::ProbeError::Config(m) => usage(m),
        other => anyhow::Error::from(other),
    })?;
    let provenance = host::provenance(
        timebase,
        latlab_net::result::probe_threads(&outcome),
        memory_locked,
        started_utc,
    );
    let mut result =
        latlab_net::result::probe_result(&cfg, &outcome, argv, provenance, nf_json, cfg.duration);
    result.warnings.extend(unthrottled_note(&rt_guard));
    let hlog_path = sibling(&out_path, "hlog");
    result.interval_log = hlog_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    result.save(&out_path).context("writing the result")?;
    let log = latlab_net::result::probe_interval_log(&outcome, wall_start, cfg.interval)?;
    latlab_core::results::write_atomically(&hlog_path, &log).context("writing the interval log")?;
    let saved = ResultFile::load(&out_path)?;
    if !a.out.quiet {
        print_probe(&saved)?;
        println!("result: {}", out_path.display());
        println!("interval log: {}", hlog_path.display());
    }
    if let Some(p) = plot_path {
        let series: Vec<String> = [
            probe::series::USER_SCHED,
            probe::series::USER_ACTUAL,
            probe::series::KERNEL,
            probe::series::HARDWARE,
        ]
        .iter()
        .map(|s| s.to_string())
        .filter(|s| saved.histograms.iter().any(|h| &h.name == s && h.count > 0))
        .collect();
        latlab_report::figures::plot_files(
            &[(out_path.clone(), saved)],
            &series,
            latlab_report::PlotKind::Ccdf,
            "net probe: latency by source (CCDF)",
            &p,
        )
        .with_context(|| format!("drawing {}", p.display()))?;
        if !a.out.quiet {
            println!("plot: {}", p.display());
        }
    }
    Ok(())
}

/// Prints a probe result's table, counters and warnings.
pub fn print_probe(r: &ResultFile) -> anyhow::Result<()> {
    let ladder = [
        Percentile::LADDER[0],
        Percentile::LADDER[2],
        Percentile::LADDER[3],
        Percentile::LADDER[4],
        Percentile::LADDER[6],
    ];
    let mut t = Table::new([
        "series", "min", "p50", "p99", "p99.9", "p99.99", "p99.9999", "max", "samples",
    ]);
    for row in latlab_net::result::probe_rows(r, &ladder) {
        let s = &row.summary;
        let mut cells = vec![row.name.clone(), ns(s.min_ns)];
        cells.extend(s.percentiles.iter().map(estimate));
        cells.push(ns(s.max_ns));
        cells.push(s.count.to_string());
        t.row(cells);
    }
    print!("{}", t.render());
    let c = &r.counters;
    println!(
        "probes: sent {} ({} warm-up), received {}, lost {} (measured {}), duplicates {}, reordered {}, malformed {}",
        c["sent"],
        c["sent_warmup"],
        c["received_unique"],
        c["lost"],
        c["lost_measured"],
        c["duplicates"],
        c["reordered"],
        latlab_net::wire::WireError::ALL
            .iter()
            .map(|e| c.get(e.counter()).copied().unwrap_or(0))
            .sum::<u64>()
    );
    if let Some(d) = latlab_net::result::probe_data(r) {
        if d.mode == "open_loop" {
            println!(
                "rate: configured {:.0} pps, achieved {:.0} pps",
                d.configured_pps, d.achieved_pps
            );
        }
        if !d.segment_medians_ns.is_empty() {
            let m = |k: &str| d.segment_medians_ns.get(k).copied().unwrap_or(0);
            println!(
                "medians: TX stack {}, wire+NF {} (NF residence {}), RX stack {}; {} probes decomposed, segments add up for each",
                ns(m(probe::series::SEG_TX_STACK)),
                ns(m(probe::series::SEG_WIRE_NF)),
                ns(m(probe::series::SEG_NF)),
                ns(m(probe::series::SEG_RX_STACK)),
                c["decomposed"]
            );
        }
    }
    for w in &r.warnings {
        println!("warning: {w}");
    }
    Ok(())
}

fn testbed_cmd(a: TestbedArgs) -> anyhow::Result<()> {
    match a.action {
        TestbedAction::Up => {
            let made = testbed::up().map_err(testbed_err)?;
            let st = testbed::status().map_err(testbed_err)?;
            println!(
                "testbed {}: {}",
                if made { "built" } else { "already up" },
                st.interfaces.join("; ")
            );
        }
        TestbedAction::Down => {
            let removed = testbed::down().map_err(testbed_err)?;
            println!(
                "{}",
                if removed {
                    "testbed removed (namespaces latlab-gen, latlab-nf and their veths)"
                } else {
                    "no testbed to remove"
                }
            );
        }
        TestbedAction::Status => {
            let st = testbed::status().map_err(testbed_err)?;
            if !testbed::is_root() && !st.namespaces.is_empty() {
                println!(
                    "testbed namespaces present: {} (inspecting their interfaces needs root)",
                    st.namespaces.join(", ")
                );
            } else if st.complete {
                println!("testbed up: {}", st.interfaces.join("; "));
            } else if st.namespaces.is_empty() {
                println!("testbed down");
            } else {
                println!(
                    "testbed incomplete: present {}; missing {}",
                    st.interfaces.join("; "),
                    st.missing.join(", ")
                );
            }
        }
    }
    Ok(())
}

fn out_dir(given: Option<PathBuf>, name: &str) -> PathBuf {
    given.unwrap_or_else(|| {
        let p = default_result_path(name, &host::utc_now_rfc3339());
        unique(p.with_extension(""))
    })
}

fn calibrate(a: CalibrateArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("finding the latlab executable")?;
    let dir = out_dir(a.output.clone(), "net-calibrate");
    let milli_pps = a
        .rate
        .milli_pps(Some(68))
        .map_err(|e| usage(format!("--rate: {e}")))?;
    let cfg = latlab_net::calibrate::CalibrateConfig {
        delays: a.delays.clone(),
        duration: a.duration,
        warmup: a.warmup,
        milli_pps,
        nf_io: io_mode(a.io),
        loopback: a.loopback,
        rounds: a.rounds,
        quiet: a.quiet,
    };
    if !cfg.loopback && !testbed::is_root() {
        return Err(testbed_err(testbed::TestbedError::NotRoot));
    }
    let rt_guard = unthrottle(a.no_rt_throttle, a.quiet)?;
    let mut r = latlab_net::calibrate::run(&cfg, &exe, &dir, argv).context("calibrating")?;
    r.warnings.extend(unthrottled_note(&rt_guard));
    let path = dir.join("calibrate.json");
    r.save(&path).context("writing the result")?;
    let saved = ResultFile::load(&path)?;
    if !a.quiet {
        print!("{}", latlab_net::calibrate::render_table(&saved)?);
        for w in &saved.warnings {
            println!("warning: {w}");
        }
        println!("result: {}", path.display());
    }
    Ok(())
}

pub fn killer_us(a: KillerUsArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("finding the latlab executable")?;
    let dir = out_dir(a.output.clone(), "killer-us");
    let duration = a.duration.unwrap_or(if a.quick {
        Nanos::from_secs(5)
    } else {
        Nanos::from_secs(60)
    });
    let milli_pps = a
        .rate
        .milli_pps(Some(68))
        .map_err(|e| usage(format!("--rate: {e}")))?;
    let mut loopback = a.loopback;
    let mut notes = Vec::new();
    if !loopback && !testbed::is_root() {
        loopback = true;
        let msg = "not root: the testbed cannot be built, so this runs on loopback with a reflector. Lost: the one-way path over veth pairs between separate namespaces (the NF shares the host's loopback and stack with the generator, and latencies are round trips)".to_string();
        eprintln!("latlab: warning: {msg}");
        notes.push(msg);
    }
    let cfg = latlab_net::experiment::KillerUsConfig {
        duration,
        warmup: if a.quick {
            Nanos::from_secs(1)
        } else {
            Nanos::from_secs(10)
        },
        milli_pps,
        loopback,
        quiet: a.quiet,
        notes,
    };
    let summary = latlab_net::experiment::run(&cfg, &exe, &dir, argv).context("killer-us")?;
    for (path, fig) in &summary.figures {
        latlab_report::write_figure(fig, path)
            .with_context(|| format!("killer-us: drawing {}", path.display()))?;
    }
    let report = super::report::experiment_report(
        &dir,
        "latlab experiment killer-us",
        &[dir.join("killer-us.json")],
    )?;
    if !a.quiet {
        print!("{}", summary.table_text);
        for w in &summary.warnings {
            println!("warning: {w}");
        }
        println!("results and figures in {}", dir.display());
        println!("report: {}", report.display());
        for f in &summary.files {
            println!("  {}", f.display());
        }
    }
    Ok(())
}

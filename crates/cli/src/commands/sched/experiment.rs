//! `latlab experiment hourglass`: the Hourglass paper's Section 5 scenarios, adapted to a
//! small SMP machine running Linux 6.x. One CPU stands in for the paper's uniprocessor
//! (threads that must share it are pinned to it); every run is a normal `latlab sched`
//! run whose command line is recorded, and the summary says where Linux 6.x differs
//! from the paper's 2002 kernels and why.

use super::{cache_sweep, draw, run_and_save, tsc_clock};
use crate::args::sched::HourglassExperimentArgs;
use crate::exit::usage;
use latlab_core::results::Timebase;
use latlab_core::results::{write_atomically, ResultFile};
use latlab_core::units::format_ns;
use latlab_report::{Curve, PlotKind, PlotSpec};
use latlab_sched::analyze::{analyze, stats, switch_gaps};
use latlab_sched::result::SchedRunData;
use latlab_sched::trace::Trace;
use latlab_sys::{host, sched};
use serde::Serialize;
use std::net::UdpSocket;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The result kind of the experiment's summary.
pub const KIND: &str = latlab_sched::sections::EXPERIMENT_KIND;

/// One scenario of the summary.
#[derive(Clone, Debug, Serialize)]
pub struct Scenario {
    /// Paper section, e.g. `5.1`.
    pub id: String,
    /// Title.
    pub title: String,
    /// The command lines run (latlab syntax).
    pub commands: Vec<String>,
    /// Result files, relative to the experiment directory.
    pub results: Vec<String>,
    /// Figures, relative to the experiment directory.
    pub figures: Vec<String>,
    /// What was found, one line each.
    pub findings: Vec<String>,
    /// Where Linux 6.x on this machine differs from the paper, and why.
    pub linux_note: String,
}

struct Ctx {
    dir: PathBuf,
    d: String,
    cpu: u32,
}

impl Ctx {
    /// Runs one latlab sched command line; returns the data, trace and result name.
    fn run(
        &self,
        name: &str,
        line: &str,
        sc: &mut Scenario,
    ) -> anyhow::Result<(ResultFile, SchedRunData, Trace)> {
        let words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        let (spec, _) = latlab_sched::cmdline::parse(&words).map_err(|e| usage(e.to_string()))?;
        let mut argv = vec!["latlab".to_owned(), "sched".to_owned()];
        argv.extend(words);
        let path = self.dir.join(format!("{name}.json"));
        let svg = self.dir.join(format!("{name}.svg"));
        let (r, d, t, _) = run_and_save(&spec, argv, &path, None, Some(svg))?;
        sc.commands.push(format!("latlab sched {line}"));
        sc.results.push(format!("{name}.json"));
        sc.figures.push(format!("{name}.svg"));
        Ok((r, d, t))
    }
}

fn new(id: &str, title: &str, note: &str) -> Scenario {
    Scenario {
        id: id.into(),
        title: title.into(),
        commands: vec![],
        results: vec![],
        figures: vec![],
        findings: vec![],
        linux_note: note.into(),
    }
}

fn cdf_curve(label: &str, mut v: Vec<u64>) -> Curve {
    v.sort_unstable();
    let n = v.len() as f64;
    Curve {
        label: label.into(),
        points: v
            .iter()
            .enumerate()
            .map(|(i, &x)| (x.max(1) as f64, (i + 1) as f64 / n))
            .collect(),
    }
}

fn st(v: &[u64]) -> String {
    st_stats(&stats(&mut v.to_vec()))
}

fn st_stats(s: &latlab_sched::analyze::Stats) -> String {
    if s.n == 0 {
        return "none".into();
    }
    format!(
        "n {} min {} median {} p99 {} max {}",
        s.n,
        format_ns(s.min_ns as f64),
        format_ns(s.median_ns as f64),
        format_ns(s.p99_ns as f64),
        format_ns(s.max_ns as f64)
    )
}

fn s51(c: &Ctx) -> anyhow::Result<Scenario> {
    let mut sc = new(
        "5.1",
        "Direct cost of context switches",
        "The paper's uniprocessor is one pinned CPU here (--cpu), so that the ten threads \
         switch among themselves. Linux 6.6+ schedules SCHED_OTHER with EEVDF: CPU-bound \
         threads get slices of a few ms (base_slice 3 ms scaled by CPU count) instead of \
         2.4's 60 ms quanta; CPU_YIELD's sched_yield is only a hint to EEVDF. On a VM the \
         gaps also contain hypervisor exits.",
    );
    let (_, _, t_cpu) = c.run(
        "5.1-cpu",
        &format!(
            "-d {} -n 10 -e 1000000 -a -p NORMAL -w CPU --cpu {}",
            c.d, c.cpu
        ),
        &mut sc,
    )?;
    let (_, _, t_yield) = c.run(
        "5.1-yield",
        &format!(
            "-d {} -n 10 -e 1000000 -a -p NORMAL -w CPU_YIELD 0.9ms --cpu {}",
            c.d, c.cpu
        ),
        &mut sc,
    )?;
    let (_, invol) = switch_gaps(&t_cpu);
    let (vol, invol_y) = switch_gaps(&t_yield);
    sc.findings
        .push(format!("involuntary switches (CPU): {}", st(&invol)));
    sc.findings.push(format!(
        "voluntary switches (CPU_YIELD 0.9ms): {}",
        st(&vol)
    ));
    sc.findings.push(format!(
        "involuntary switches in the CPU_YIELD run: {}",
        st(&invol_y)
    ));
    let curves = vec![
        cdf_curve("involuntary (CPU)", invol.clone()),
        cdf_curve("voluntary (CPU_YIELD 0.9ms)", vol.clone()),
    ];
    if curves.iter().any(|c| !c.points.is_empty()) {
        let spec = PlotSpec {
            kind: PlotKind::Cdf,
            title: "5.1 context-switch gaps, 10 threads on one CPU".into(),
            ..PlotSpec::default()
        };
        latlab_report::render(&curves, &spec, &c.dir.join("5.1-switch-cdf.svg"))?;
        sc.figures.push("5.1-switch-cdf.svg".into());
    }
    Ok(sc)
}

fn s52(
    c: &Ctx,
    quick: bool,
    duration_ns: u64,
    hz: u64,
    timebase: Timebase,
) -> anyhow::Result<Scenario> {
    let mut sc = new(
        "5.2",
        "Indirect cost of context switches versus working set",
        "Work is counted in cache lines and rated per CPU-second received (from the trace), \
         because this machine is shared: on an idle CPU that is the paper's formula. Caches \
         are far larger than the Pentium III's 256 KB L2, so the knee moves to MBs; a VM's \
         neighbours add noise, hence the intervals.",
    );
    let sizes: Vec<u64> = if quick {
        vec![4, 256, 4096]
    } else {
        vec![4, 16, 64, 256, 1024, 4096]
    };
    let trials = if quick { 2 } else { 3 };
    let per = (duration_ns / 5).max(100_000_000);
    let t = cache_sweep(&sizes, trials, per, 10, c.cpu, hz, &|| {})?;
    let rows = latlab_sched::cache::summarize(&t);
    let mut r = ResultFile::new(
        latlab_sched::cache::KIND,
        vec![
            "latlab".into(),
            "sched".into(),
            "cache-cost".into(),
            "--sizes".into(),
            sizes
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(","),
            "--trials".into(),
            trials.to_string(),
            "--duration".into(),
            format_ns(per as f64).replace(".00", ""),
            "--cpu".into(),
            c.cpu.to_string(),
        ],
        serde_json::json!({"sizes_kb": sizes, "trials": trials, "duration_ns": per, "threads": 10, "cpu": c.cpu}),
        host::provenance(timebase, vec![], true, host::utc_now_rfc3339()),
    );
    r.data = serde_json::to_value(latlab_sched::cache::CacheCostData {
        cpu: c.cpu,
        threads: 10,
        trials: t,
        rows: rows.clone(),
    })?;
    r.save(&c.dir.join("5.2-cache-cost.json"))?;
    sc.commands.push(format!(
        "latlab sched cache-cost --sizes {} --trials {trials} --duration {}ms --threads 10 --cpu {}",
        sizes.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(","),
        per / 1_000_000,
        c.cpu
    ));
    sc.results.push("5.2-cache-cost.json".into());
    latlab_report::xy::render_xy(
        &[latlab_sched::cache::figure_series(&rows)],
        &latlab_sched::cache::figure_spec(10),
        &c.dir.join("5.2-cache-cost.svg"),
    )?;
    sc.figures.push("5.2-cache-cost.svg".into());
    for row in rows {
        sc.findings.push(format!(
            "{} KB: {:.1} us per switch +/- {:.1} us (95% CI, {} trials)",
            row.size_kb,
            row.mean_ns / 1e3,
            row.ci95_ns / 1e3,
            row.n
        ));
    }
    Ok(sc)
}

/// Background load for 5.3: processes reading files (page cache, syscalls) as the paper's
/// recursive greps did.
struct Load(Vec<std::process::Child>);

impl Load {
    fn start(n: usize) -> anyhow::Result<Load> {
        let mut v = Vec::new();
        for _ in 0..n {
            v.push(
                std::process::Command::new("sh")
                    .args([
                        "-c",
                        "while :; do grep -r latlab-no-such-string /usr >/dev/null 2>&1; done",
                    ])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()?,
            );
        }
        Ok(Load(v))
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn late_counts(t: &Trace, thread: u32) -> (Vec<u64>, [usize; 4]) {
    let v: Vec<u64> = t
        .activations_of(thread)
        .map(|a| a.start_ns - a.release_ns)
        .collect();
    let th = [1_000_000, 5_000_000, 10_000_000, 50_000_000];
    let mut c = [0; 4];
    for (i, &x) in th.iter().enumerate() {
        c[i] = v.iter().filter(|&&l| l > x).count();
    }
    (v, c)
}

fn s53(c: &Ctx) -> anyhow::Result<Scenario> {
    let mut sc = new(
        "5.3",
        "Dispatch latency, with and without background load",
        "The paper's RTC timer is obsolete (every sleep is an hrtimer), so -i HR is used. \
         Background load is two processes grepping /usr (page cache and syscalls) instead \
         of greps over NFS. A PREEMPT_DYNAMIC kernel in a VM: latencies include vCPU \
         scheduling by the host.",
    );
    let line = format!(
        "-d {} -n 1 -t 0 -p RTHIGH -w LAT 5.3ms -i HR --cpu {}",
        c.d, c.cpu
    );
    let (_, _, quiet) = c.run("5.3-idle", &line, &mut sc)?;
    let load = Load::start(2)?;
    let (_, _, loaded) = c.run("5.3-load", &line, &mut sc)?;
    drop(load);
    sc.commands
        .push("(background: 2 x sh -c 'while :; do grep -r … /usr; done' during 5.3-load)".into());
    for (name, t) in [("idle", &quiet), ("with load", &loaded)] {
        let (v, k) = late_counts(t, 0);
        sc.findings.push(format!(
            "{name}: {}; samples later than 1/5/10/50 ms: {}/{}/{}/{}",
            st(&v),
            k[0],
            k[1],
            k[2],
            k[3]
        ));
    }
    Ok(sc)
}

/// A UDP flood over loopback: a sender and a receiver pinned to `cpu`; returns the
/// receiver's byte count when stopped.
struct Flood {
    stop: Arc<AtomicBool>,
    bytes: Arc<AtomicU64>,
    handles: Vec<std::thread::JoinHandle<()>>,
}

impl Flood {
    fn start(cpu: u32) -> anyhow::Result<Flood> {
        let rx = UdpSocket::bind("127.0.0.1:0")?;
        rx.set_read_timeout(Some(std::time::Duration::from_millis(50)))?;
        let addr = rx.local_addr()?;
        let tx = UdpSocket::bind("127.0.0.1:0")?;
        let stop = Arc::new(AtomicBool::new(false));
        let bytes = Arc::new(AtomicU64::new(0));
        let (s1, b1) = (Arc::clone(&stop), Arc::clone(&bytes));
        let r = std::thread::spawn(move || {
            let _ = sched::pin_current_thread(cpu);
            let mut buf = [0u8; 2048];
            while !s1.load(Ordering::Relaxed) {
                if let Ok(n) = rx.recv(&mut buf) {
                    b1.fetch_add(n as u64, Ordering::Relaxed);
                }
            }
        });
        let s2 = Arc::clone(&stop);
        let t = std::thread::spawn(move || {
            let _ = sched::pin_current_thread(cpu);
            let buf = [0x5au8; 1400];
            while !s2.load(Ordering::Relaxed) {
                let _ = tx.send_to(&buf, addr);
            }
        });
        Ok(Flood {
            stop,
            bytes,
            handles: vec![r, t],
        })
    }

    fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        for h in self.handles {
            let _ = h.join();
        }
        self.bytes.load(Ordering::Relaxed)
    }
}

/// Offered load of the 5.4 testbed traffic: 64-byte probes at this rate (milli-pps).
const TRAFFIC_MILLI_PPS: u64 = 100_000_000;

/// The traffic of 5.4. As root, the `latlab net` testbed: a forwarder pinned to the RT
/// thread's CPU (its receive, forwarding and send work competes with the thread) and an
/// open-loop generator on another CPU. Without root, a UDP flood over loopback pinned to
/// the RT thread's CPU.
enum Traffic {
    Testbed {
        nf: latlab_net::orchestrate::NfChild,
        probe:
            std::thread::JoinHandle<Result<ResultFile, latlab_net::orchestrate::OrchestrateError>>,
        /// Takes the testbed down when dropped if this run brought it up.
        prepared: latlab_net::orchestrate::Prepared,
    },
    Loopback(Flood),
}

/// What the traffic achieved while it ran.
struct Delivered {
    /// Measured packets per second that made it through (testbed only).
    pps: f64,
    /// Throughput, Mbit/s (of frames on the testbed, of UDP payload on loopback).
    mbps: f64,
    /// Probes lost in the measured part (testbed only).
    lost: u64,
}

impl Traffic {
    /// Starts the traffic for `ns` (plus a short warm-up on the testbed), on the testbed
    /// when `testbed`, else over loopback; `tag` names the result files of the NF and the
    /// generator in the experiment directory.
    fn start(c: &Ctx, testbed: bool, ns: u64, tag: &str) -> anyhow::Result<Traffic> {
        use latlab_net::orchestrate::{self, Placement, ProbeJob};
        if !testbed {
            return Ok(Traffic::Loopback(Flood::start(c.cpu)?));
        }
        let prepared = orchestrate::prepare(Placement::Testbed)?;
        let exe = std::env::current_exe()?;
        let gen_cpu = traffic_gen_cpu(c.cpu);
        let mut nf_cfg = Placement::Testbed.nf_config();
        nf_cfg.cpus = vec![c.cpu];
        let nf = orchestrate::start_nf(
            &exe,
            Placement::Testbed,
            &nf_cfg,
            &c.dir.join(format!("{tag}-nf.json")),
        )?;
        let mut probe = Placement::Testbed.probe_config();
        probe.milli_pps = TRAFFIC_MILLI_PPS;
        probe.duration = latlab_core::units::Nanos(ns + 200_000_000);
        probe.warmup = latlab_core::units::Nanos(TRAFFIC_WARMUP_NS);
        probe.tx_cpu = Some(gen_cpu);
        probe.rx_cpu = Some(gen_cpu);
        probe.sources = latlab_net::probe::Sources::USER;
        let run = ProbeJob {
            nf: Some(serde_json::json!({
                "role": "forward", "io": "blocking", "cpu": c.cpu, "fifo": null,
                "purpose": "hourglass 5.4 traffic"
            })),
            ..ProbeJob::new(probe)
        };
        let path = c.dir.join(format!("{tag}-probe.json"));
        let probe = std::thread::spawn(move || {
            orchestrate::run_probe(&exe, Placement::Testbed, &run, &path)
        });
        // let the generator get past its warm-up before the RT thread starts
        std::thread::sleep(std::time::Duration::from_nanos(
            TRAFFIC_WARMUP_NS + 100_000_000,
        ));
        Ok(Traffic::Testbed {
            nf,
            probe,
            prepared,
        })
    }

    /// Stops the traffic (the testbed generator ends by itself) and says what got through
    /// in `ns` of measured time.
    fn stop(self, ns: u64) -> anyhow::Result<Delivered> {
        match self {
            Traffic::Loopback(f) => {
                let bytes = f.stop();
                Ok(Delivered {
                    pps: 0.0,
                    mbps: bytes as f64 * 8.0 / (ns as f64 / 1e9) / 1e6,
                    lost: 0,
                })
            }
            Traffic::Testbed {
                nf,
                probe,
                prepared,
            } => {
                let pr = probe
                    .join()
                    .map_err(|_| anyhow::anyhow!("the 5.4 generator thread panicked"));
                let nf_res = nf.finish();
                drop(prepared);
                let pr = pr??;
                nf_res?;
                let c = |k: &str| pr.counters.get(k).copied().unwrap_or(0);
                let measured = c("received_unique").saturating_sub(c("received_warmup"));
                let secs = pr.duration_ns.max(1) as f64 / 1e9;
                let pps = measured as f64 / secs;
                Ok(Delivered {
                    pps,
                    // the probes are 64-byte Ethernet frames
                    mbps: pps * 64.0 * 8.0 / 1e6,
                    lost: c("lost_measured"),
                })
            }
        }
    }
}

/// Warm-up of the 5.4 generator.
const TRAFFIC_WARMUP_NS: u64 = 300_000_000;

/// The CPU of the 5.4 generator: another one than the RT thread's where there is one.
fn traffic_gen_cpu(rt_cpu: u32) -> u32 {
    let (first, last) = latlab_net::orchestrate::cpus();
    if rt_cpu == first {
        last
    } else {
        first
    }
}

fn s54(c: &Ctx, duration_ns: u64) -> anyhow::Result<Scenario> {
    let testbed = latlab_net::testbed::is_root();
    let mut sc = new(
        "5.4",
        "Meeting deadlines during receive processing",
        if testbed {
            "The paper streamed 100 Mbit/s of TCP at the machine; here the `latlab net` \
             testbed does: a forwarder (blocking receive, SCHED_OTHER) is pinned to the RT \
             thread's CPU and an open-loop generator on the other CPU offers 100 kpps of \
             64-byte probes through it, so the forwarder's receive, forwarding and send work \
             (and the wake-ups that start it) compete with the RTHIGH thread. Throughput is \
             what the generator received back per second; losses are counted. -i RTC is \
             replaced by -i HR. Misses in control 1 can come from the fair deadline server \
             (6.12+: 50 ms every 1 s for starved SCHED_OTHER tasks) or from the hypervisor \
             taking the vCPU, not from the network; the findings name the fair-server \
             signature when the trace shows it."
        } else {
            "Without root the `latlab net` testbed cannot be built, so the load is a UDP \
             flood over loopback by a sender and a receiver pinned to the RT thread's CPU \
             (its packet processing competes with the RTHIGH thread on that CPU); run as \
             root for the testbed. -i RTC is replaced by -i HR. Misses in control 1 can come \
             from the fair deadline server or from the hypervisor, not from the network."
        },
    );
    let line = format!(
        "-d {} -n 1 -t 0 -p RTHIGH -w PERIODIC 4ms 5ms -i HR --cpu {}",
        c.d, c.cpu
    );
    let (r1, d1, t1) = c.run("5.4-control-rt", &line, &mut sc)?;
    let f = Traffic::start(c, testbed, duration_ns, "5.4-control-traffic")?;
    let what = if testbed {
        "testbed traffic"
    } else {
        "UDP flood over loopback"
    };
    if !testbed {
        std::thread::sleep(std::time::Duration::from_nanos(duration_ns));
    }
    let alone = f.stop(duration_ns)?;
    let f = Traffic::start(c, testbed, duration_ns, "5.4-traffic")?;
    let (r2, d2, t2) = c.run("5.4-flood", &line, &mut sc)?;
    let with_rt = f.stop(duration_ns)?;
    if testbed {
        let gen_cpu = traffic_gen_cpu(c.cpu);
        sc.commands.push(format!(
            "(control 2 and during 5.4-flood: sudo latlab net testbed up; ip netns exec latlab-nf latlab net forward --testbed --io blocking --cpu {} --direction a-to-b …; latlab net probe --testbed --rate 100kpps --tx-cpu {gen_cpu} --rx-cpu {gen_cpu} --duration {} …; results 5.4-control-traffic-*.json and 5.4-traffic-*.json)",
            c.cpu, c.d
        ));
    } else {
        sc.commands.push(format!(
            "(control 2: UDP flood over loopback alone for {}; then during 5.4-flood)",
            c.d
        ));
    }
    // the paper's Figure 6: 25 ms of each trace, one second in
    for (name, d, t) in [("5.4-control-rt", &d1, &t1), ("5.4-flood", &d2, &t2)] {
        let from = (d.spec.duration_ns / 2).min(1_000_000_000);
        let f = format!("{name}-25ms.svg");
        draw(d, t, &c.dir.join(&f), from, from + 25_000_000, false, 1200)?;
        sc.figures.push(f);
    }
    let dl = |r: &ResultFile| {
        let h = r.counters.get("deadline.hits.t0").copied().unwrap_or(0);
        let m = r.counters.get("deadline.misses.t0").copied().unwrap_or(0);
        (h, m)
    };
    let (h1, m1) = dl(&r1);
    let (h2, m2) = dl(&r2);
    let through = |x: &Delivered| {
        if testbed {
            format!(
                "{:.0} pps forwarded ({:.1} Mbit/s of 64-byte frames), {} lost",
                x.pps, x.mbps, x.lost
            )
        } else {
            format!("{:.0} Mbit/s received", x.mbps)
        }
    };
    sc.findings.push(format!(
        "control 1 (RT thread alone): missed {m1} deadlines, hit {h1}"
    ));
    sc.findings
        .push(format!("control 2 ({what} alone): {}", through(&alone)));
    sc.findings.push(format!(
        "RT thread during the {what}: missed {m2} deadlines ({:.2}%), hit {h2}; traffic {}",
        m2 as f64 * 100.0 / (h2 + m2).max(1) as f64,
        through(&with_rt)
    ));
    for (name, d, t) in [("control 1", &d1, &t1), ("flood", &d2, &t2)] {
        let an = analyze(d, t, 50_000, false);
        if let Some(dl) = an.deadlines.first() {
            sc.findings.push(format!(
                "{name}: interruptions of the RT thread while it ran: {:.0} per CPU-second, {}",
                dl.interruptions_per_cpu_second,
                st_stats(&dl.interruptions)
            ));
        }
        for n in analyze(d, t, 50_000, false)
            .notes
            .iter()
            .filter(|n| n.contains("fair deadline server"))
        {
            sc.findings.push(format!("{name}: {n}"));
        }
    }
    if let Some(Ok(h)) = r2.histogram("lateness.t0") {
        if !h.is_empty() {
            sc.findings.push(format!(
                "lateness of missed deadlines: median {} max {}",
                format_ns(
                    h.value_at(latlab_core::parse::Percentile::from_fraction(1, 2).expect("valid"))
                        as f64
                ),
                format_ns(h.max() as f64)
            ));
        }
    }
    Ok(sc)
}

fn rta_findings(sc: &mut Scenario, name: &str, d: &SchedRunData, t: &Trace) {
    let a = analyze(d, t, 50_000, false);
    for n in a
        .notes
        .iter()
        .filter(|n| n.contains("fair deadline server"))
    {
        sc.findings.push(format!("{name}: {n}"));
    }
    let mut s = format!("{name}:");
    for dl in &a.deadlines {
        s.push_str(&format!(
            " thread {}: missed {} deadlines, hit {};",
            dl.thread, dl.misses, dl.hits
        ));
    }
    for r in &a.rta {
        s.push_str(&format!(
            " thread {} RTA bound {} observed {}{};",
            r.thread,
            r.bound_ns
                .map(|b| format_ns(b as f64))
                .unwrap_or_else(|| "unbounded".into()),
            r.observed_ns
                .map(|b| format_ns(b as f64))
                .unwrap_or_else(|| "-".into()),
            if r.exceeds_bound {
                " (OBSERVED > BOUND)"
            } else {
                ""
            }
        ));
    }
    sc.findings.push(s);
}

fn s55(c: &Ctx) -> anyhow::Result<Scenario> {
    let mut sc = new(
        "5.5",
        "Concurrent periodic tasks against response-time analysis",
        "Both threads are pinned to one CPU so that the uniprocessor analysis applies. \
         NATIVE is a relative nanosleep on an hrtimer (with 0 slack for RT threads), not \
         2.4's 10 ms jiffy usleep nor its busy-wait below 2 ms, so release jitter is \
         microseconds and the NATIVE run behaves like HR. Since 6.12 a per-CPU fair \
         deadline server (50 ms every 1 s) runs starved SCHED_OTHER tasks ahead of FIFO \
         threads: on a CPU shared with other work the RT threads lose ~50 ms once a second, \
         which no fixed-priority analysis of the two tasks predicts.",
    );
    for (name, t1) in [
        ("5.5-native", "-w PERIODIC 17ms 33ms -i NATIVE"),
        ("5.5-hr", "-w PERIODIC 17ms 33ms -i HR"),
        ("5.5-12ms", "-w PERIODIC 12ms 33ms -i NATIVE"),
    ] {
        let line = format!(
            "-d {} -n 2 -t 0 -p RTMED -w PERIODIC 3ms 8ms -i HR --cpu {cpu} -t 1 -p RTLOW {t1} --cpu {cpu}",
            c.d,
            cpu = c.cpu
        );
        let (_, d, t) = c.run(name, &line, &mut sc)?;
        rta_findings(&mut sc, name, &d, &t);
    }
    Ok(sc)
}

fn s56(c: &Ctx) -> anyhow::Result<Scenario> {
    let mut sc = new(
        "5.6",
        "CPU reservations (SCHED_DEADLINE)",
        "SCHED_DEADLINE is a constant-bandwidth server under global EDF; the kernel refuses \
         DEADLINE threads pinned to part of their root domain, so these threads are free on \
         every CPU and the two reservations may run in parallel. A budget of exactly the \
         work leaves nothing for the thread's own wakeup and bookkeeping, so the server \
         throttles it before the job is done.",
    );
    for (name, a0, a1) in [
        ("5.6-exact", "3ms", "17ms"),
        ("5.6-slack", "3.1ms", "17.1ms"),
    ] {
        let line = format!(
            "-d {} -n 2 -t 0 -w PERIODIC 3ms 8ms -rh {a0} 8ms -t 1 -w PERIODIC 17ms 33ms -rh {a1} 33ms",
            c.d
        );
        let (_, d, t) = c.run(name, &line, &mut sc)?;
        rta_findings(&mut sc, name, &d, &t);
    }
    Ok(sc)
}

/// Runs `latlab experiment hourglass`.
pub fn hourglass(a: HourglassExperimentArgs, argv: Vec<String>) -> anyhow::Result<()> {
    const ALL: [&str; 6] = ["5.1", "5.2", "5.3", "5.4", "5.5", "5.6"];
    for o in &a.only {
        if !ALL.contains(&o.as_str()) {
            return Err(usage(format!(
                "--only: unknown scenario '{o}'; accepted: {}",
                ALL.join(", ")
            )));
        }
    }
    if a.duration.get() < 100_000_000 {
        return Err(usage("--duration must be at least 100ms, e.g. 5s"));
    }
    let cpu = a
        .cpu
        .unwrap_or_else(|| *sched::allowed_cpus().last().unwrap_or(&0));
    if !sched::allowed_cpus().contains(&cpu) {
        return Err(usage(format!("--cpu {cpu}: not available")));
    }
    std::fs::create_dir_all(&a.dir)?;
    let (_clock, tb, hz) = tsc_clock()?;
    let ctx = Ctx {
        dir: a.dir.clone(),
        d: format_ns(a.duration.get() as f64)
            .replace(".00", "")
            .replace(".0", ""),
        cpu,
    };
    let want = |id: &str| a.only.is_empty() || a.only.iter().any(|o| o == id);
    let mut scenarios = Vec::new();
    let started = host::utc_now_rfc3339();
    if want("5.1") {
        scenarios.push(s51(&ctx)?);
    }
    if want("5.2") {
        scenarios.push(s52(&ctx, a.quick, a.duration.get(), hz, tb.clone())?);
    }
    if want("5.3") {
        scenarios.push(s53(&ctx)?);
    }
    if want("5.4") {
        scenarios.push(s54(&ctx, a.duration.get())?);
    }
    if want("5.5") {
        scenarios.push(s55(&ctx)?);
    }
    if want("5.6") {
        scenarios.push(s56(&ctx)?);
    }
    let timebase = tb;
    let mut r = ResultFile::new(
        KIND,
        argv,
        serde_json::json!({"duration_ns": a.duration.get(), "cpu": cpu, "quick": a.quick, "only": a.only}),
        host::provenance(timebase, vec![], true, started),
    );
    r.data = serde_json::json!({ "scenarios": scenarios });
    let summary_path = a.dir.join("experiment.json");
    r.save(&summary_path)?;
    let text = summary_text(&scenarios);
    write_atomically(&a.dir.join("summary.txt"), text.as_bytes())?;
    print!("{text}");
    println!(
        "written: {} (summary), results and figures in {}",
        summary_path.display(),
        a.dir.display()
    );
    // The report, from the files just written: the summary first, then every run.
    let mut files = vec![summary_path];
    files.extend(
        scenarios
            .iter()
            .flat_map(|s| s.results.iter().map(|f| a.dir.join(f))),
    );
    let report =
        crate::commands::report::experiment_report(&a.dir, "latlab experiment hourglass", &files)?;
    println!("report: {}", report.display());
    Ok(())
}

/// The summary as text. Pure.
pub fn summary_text(scenarios: &[Scenario]) -> String {
    let mut s = String::new();
    for sc in scenarios {
        s.push_str(&format!("== {} {}\n", sc.id, sc.title));
        for c in &sc.commands {
            s.push_str(&format!("  $ {c}\n"));
        }
        for f in &sc.findings {
            s.push_str(&format!("  - {f}\n"));
        }
        s.push_str(&format!("  Linux 6.x: {}\n", sc.linux_note));
        if !sc.figures.is_empty() {
            s.push_str(&format!("  figures: {}\n", sc.figures.join(", ")));
        }
    }
    s
}

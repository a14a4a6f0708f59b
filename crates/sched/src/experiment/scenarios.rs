//! The six scenarios of the paper's Section 5, each one or more `latlab sched` runs, and
//! what each found.

use super::runs;
use super::summary::ScenarioSummary as Scenario;
use crate::analyze::{analyze, stats, switch_gaps, Stats, MERGE_GAP_NS};
use crate::cmdline::{format_duration, render, validate};
use crate::error::Error;
use crate::explain::ExplainAsk;
use crate::figures::Draw;
use crate::load::{Delivered, FsLoad, LoadSource, TestbedTraffic, UdpFlood};
use crate::result::SchedRunData;
use crate::session::{run_and_save, Saved};
use crate::spec::RunSpec;
use crate::text::{rta_bound, rta_observed, stats_line, StatsLine};
use crate::trace::Trace;
use latlab_core::results::ResultFile;
use latlab_core::units::format_ns;
use std::path::{Path, PathBuf};

/// What every scenario needs: where its files go, the run length, the CPU standing in for
/// the uniprocessor, and who draws the figures.
pub(super) struct Ctx<'a> {
    pub(super) dir: PathBuf,
    pub(super) duration_ns: u64,
    pub(super) cpu: u32,
    pub(super) draw: &'a dyn Draw,
    /// Attribute every run's tail to kernel events (`--explain` on each run).
    pub(super) explain: bool,
}

impl Ctx<'_> {
    /// Runs one `latlab sched` run, recording the command line that repeats it; returns
    /// the result, data and trace.
    fn run(
        &self,
        name: &str,
        spec: &RunSpec,
        sc: &mut Scenario,
    ) -> Result<(ResultFile, SchedRunData, Trace), Error> {
        validate(spec)?;
        let words = render(spec);
        let line = words.join(" ");
        let mut argv = vec!["latlab".to_owned(), "sched".to_owned()];
        argv.extend(words);
        let path = self.dir.join(format!("{name}.json"));
        let svg = self.dir.join(format!("{name}.svg"));
        let Saved {
            result: r,
            data: d,
            trace: t,
            ..
        } = run_and_save(
            spec,
            argv,
            &path,
            None,
            Some(svg),
            self.draw,
            self.explain.then(ExplainAsk::default).as_ref(),
            &mut |_| {},
        )?;
        if let Some(a) = &r.explain {
            // how much of this run's tail is outside the system under test (the threads
            // and the Linux scheduler): the hypervisor's share, named by the attribution
            sc.findings.push(match &a.unavailable {
                Some(why) => {
                    format!("{name}: tail not explained: kernel events unavailable ({why})")
                }
                None => format!(
                    "{name}: tail ({} windows above the p99 gap, and misses): {}",
                    a.windows,
                    latlab_explain::render::explained_line(a)
                ),
            });
        }
        sc.commands.push(format!(
            "latlab sched {line}{}",
            if self.explain { " --explain" } else { "" }
        ));
        sc.results.push(format!("{name}.json"));
        sc.figures.push(format!("{name}.svg"));
        Ok((r, d, t))
    }
}

fn st(v: &[u64]) -> String {
    st_stats(&stats(&mut v.to_vec()))
}

fn st_stats(s: &Stats) -> String {
    stats_line(s, StatsLine::Short)
}

pub(super) fn s51(c: &Ctx<'_>) -> Result<Scenario, Error> {
    let mut sc = Scenario::new(
        "5.1",
        "Direct cost of context switches",
        "The paper's uniprocessor is one pinned CPU here (--cpu), so that the ten threads \
         switch among themselves. Linux 6.6+ schedules SCHED_OTHER with EEVDF: CPU-bound \
         threads get slices of a few ms (base_slice 3 ms scaled by CPU count) instead of \
         2.4's 60 ms quanta; CPU_YIELD's sched_yield is only a hint to EEVDF. On a VM the \
         gaps also contain hypervisor exits.",
    );
    let [(cpu_name, cpu_run), (yield_name, yield_run)] = runs::s51(c.duration_ns, c.cpu);
    let (_, _, t_cpu) = c.run(cpu_name, &cpu_run, &mut sc)?;
    let (_, _, t_yield) = c.run(yield_name, &yield_run, &mut sc)?;
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
    let samples = vec![
        ("involuntary (CPU)".to_owned(), invol.clone()),
        ("voluntary (CPU_YIELD 0.9ms)".to_owned(), vol.clone()),
    ];
    if samples.iter().any(|(_, v)| !v.is_empty()) {
        c.draw
            .cdf(
                "5.1 context-switch gaps, 10 threads on one CPU",
                &samples,
                &c.dir.join("5.1-switch-cdf.svg"),
            )
            .map_err(Error::Draw)?;
        sc.figures.push("5.1-switch-cdf.svg".into());
    }
    Ok(sc)
}

pub(super) fn s52(c: &Ctx<'_>, quick: bool) -> Result<Scenario, Error> {
    let mut sc = Scenario::new(
        "5.2",
        "Indirect cost of context switches versus working set",
        "Work is counted in cache lines and rated per CPU-second received (from the trace), \
         because this machine is shared: on an idle CPU that is the paper's formula. Caches \
         are far larger than the Pentium III's 256 KB L2, so the knee moves to MBs; a VM's \
         neighbours add noise, hence the intervals.",
    );
    let cfg = runs::s52(quick, c.duration_ns, c.cpu);
    cfg.validate()?;
    let argv = cfg.argv();
    let (r, rows) = crate::cache::measure(&cfg, argv.clone(), &|| {})?;
    r.save(&c.dir.join("5.2-cache-cost.json"))?;
    sc.commands.push(argv.join(" "));
    sc.results.push("5.2-cache-cost.json".into());
    c.draw
        .cache_cost(&rows, cfg.threads, &c.dir.join("5.2-cache-cost.svg"))
        .map_err(Error::Draw)?;
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

pub(super) fn s53(c: &Ctx<'_>) -> Result<Scenario, Error> {
    let mut sc = Scenario::new(
        "5.3",
        "Dispatch latency, with and without background load",
        "The paper's RTC timer is obsolete (every sleep is an hrtimer), so -i HR is used. \
         Background load is two processes grepping /usr (page cache and syscalls) instead \
         of greps over NFS. A PREEMPT_DYNAMIC kernel in a VM: latencies include vCPU \
         scheduling by the host.",
    );
    let spec = runs::s53(c.duration_ns, c.cpu);
    let (_, _, quiet) = c.run("5.3-idle", &spec, &mut sc)?;
    let load = FsLoad {
        processes: FS_LOAD_PROCESSES,
    }
    .start()?;
    let (_, _, loaded) = c.run("5.3-load", &spec, &mut sc)?;
    load.stop(0)?;
    sc.commands
        .push("(background: 2 loops of grep -r latlab-no-such-string /usr, each grep started as the last ends, during 5.3-load)".into());
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

/// Processes of the 5.3 background load (the paper ran greps over NFS).
const FS_LOAD_PROCESSES: usize = 2;

/// Offered load of the 5.4 testbed traffic: 64-byte probes at this rate (milli-pps).
const TRAFFIC_MILLI_PPS: u64 = 100_000_000;

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

/// The traffic of 5.4, for `ns` of measured time. As root, the `latlab net` testbed: a
/// forwarder pinned to the RT thread's CPU (its receive, forwarding and send work competes
/// with the thread) and an open-loop generator on another CPU; `tag` names the result
/// files of the NF and the generator in the experiment directory. Without root, a UDP
/// flood over loopback pinned to the RT thread's CPU.
fn traffic(c: &Ctx<'_>, testbed: bool, ns: u64, exe: &Path, tag: &str) -> Box<dyn LoadSource> {
    if !testbed {
        return Box::new(UdpFlood { cpu: c.cpu });
    }
    Box::new(TestbedTraffic {
        exe: exe.to_path_buf(),
        nf_cpu: c.cpu,
        gen_cpu: traffic_gen_cpu(c.cpu),
        milli_pps: TRAFFIC_MILLI_PPS,
        duration_ns: ns + 200_000_000,
        warmup_ns: TRAFFIC_WARMUP_NS,
        nf_result: c.dir.join(format!("{tag}-nf.json")),
        probe_result: c.dir.join(format!("{tag}-probe.json")),
        purpose: "hourglass 5.4 traffic".into(),
    })
}

pub(super) fn s54(c: &Ctx<'_>, exe: &Path) -> Result<Scenario, Error> {
    let duration_ns = c.duration_ns;
    let testbed = latlab_sys::netns::is_root();
    let mut sc = Scenario::new(
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
    let spec = runs::s54(duration_ns, c.cpu);
    let (r1, d1, t1) = c.run("5.4-control-rt", &spec, &mut sc)?;
    let f = traffic(c, testbed, duration_ns, exe, "5.4-control-traffic").start()?;
    let what = if testbed {
        "testbed traffic"
    } else {
        "UDP flood over loopback"
    };
    if !testbed {
        std::thread::sleep(std::time::Duration::from_nanos(duration_ns));
    }
    let alone = f.stop(duration_ns)?;
    let f = traffic(c, testbed, duration_ns, exe, "5.4-traffic").start()?;
    let (r2, d2, t2) = c.run("5.4-flood", &spec, &mut sc)?;
    let with_rt = f.stop(duration_ns)?;
    if testbed {
        let gen_cpu = traffic_gen_cpu(c.cpu);
        sc.commands.push(format!(
            "(control 2 and during 5.4-flood: sudo latlab net testbed up; ip netns exec latlab-nf latlab net forward --testbed --io blocking --cpu {} --direction a-to-b …; latlab net probe --testbed --rate 100kpps --tx-cpu {gen_cpu} --rx-cpu {gen_cpu} --duration {} …; results 5.4-control-traffic-*.json and 5.4-traffic-*.json)",
            c.cpu, format_duration(duration_ns)
        ));
    } else {
        sc.commands.push(format!(
            "(control 2: UDP flood over loopback alone for {}; then during 5.4-flood)",
            format_duration(duration_ns)
        ));
    }
    // the paper's Figure 6: 25 ms of each trace, one second in
    for (name, d, t) in [("5.4-control-rt", &d1, &t1), ("5.4-flood", &d2, &t2)] {
        let from = (d.spec.duration_ns / 2).min(1_000_000_000);
        let f = format!("{name}-25ms.svg");
        c.draw
            .timeline(
                d,
                t,
                &c.dir.join(&f),
                (from, from + 25_000_000),
                false,
                1200,
            )
            .map_err(Error::Draw)?;
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
        let an = analyze(d, t, MERGE_GAP_NS, false);
        if let Some(dl) = an.deadlines.first() {
            sc.findings.push(format!(
                "{name}: interruptions of the RT thread while it ran: {:.0} per CPU-second, {}",
                dl.interruptions_per_cpu_second,
                st_stats(&dl.interruptions)
            ));
        }
        for n in analyze(d, t, MERGE_GAP_NS, false)
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

/// Runs each of `runs` and adds its deadline and response-time findings.
fn rta_runs<const N: usize>(
    c: &Ctx<'_>,
    sc: &mut Scenario,
    runs: [(&str, RunSpec); N],
) -> Result<(), Error> {
    for (name, spec) in runs {
        let (_, d, t) = c.run(name, &spec, sc)?;
        rta_findings(sc, name, &d, &t);
    }
    Ok(())
}

fn rta_findings(sc: &mut Scenario, name: &str, d: &SchedRunData, t: &Trace) {
    let a = analyze(d, t, MERGE_GAP_NS, false);
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
            rta_bound(r),
            rta_observed(r),
            if r.exceeds_bound {
                " (OBSERVED > BOUND)"
            } else {
                ""
            }
        ));
    }
    sc.findings.push(s);
}

pub(super) fn s55(c: &Ctx<'_>) -> Result<Scenario, Error> {
    let mut sc = Scenario::new(
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
    rta_runs(c, &mut sc, runs::s55(c.duration_ns, c.cpu))?;
    Ok(sc)
}

pub(super) fn s56(c: &Ctx<'_>) -> Result<Scenario, Error> {
    let mut sc = Scenario::new(
        "5.6",
        "CPU reservations (SCHED_DEADLINE)",
        "SCHED_DEADLINE is a constant-bandwidth server under global EDF; the kernel refuses \
         DEADLINE threads pinned to part of their root domain, so these threads are free on \
         every CPU and the two reservations may run in parallel. A budget of exactly the \
         work leaves nothing for the thread's own wakeup and bookkeeping, so the server \
         throttles it before the job is done.",
    );
    rta_runs(c, &mut sc, runs::s56(c.duration_ns))?;
    Ok(sc)
}

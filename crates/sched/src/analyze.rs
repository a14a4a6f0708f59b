//! Inference from an execution map (paper, Section 4), all pure functions of a loaded run:
//!
//! - **context switches**: on each CPU, a block of thread A followed by one of thread B;
//!   the gap between them is the direct cost, voluntary when A's block ended in a yield or
//!   sleep, involuntary otherwise (the gap then also holds the tick that preempted A);
//!   gaps of `merge_gap` or more had other work in them and are only counted;
//! - **interrupt load**: short gaps (below `merge_gap`) in the highest-priority
//!   never-blocking thread: rate, cost, and the recurring period of those of 1 µs or more
//!   (the tick when one shows);
//! - **quanta**: the lengths of a CPU-bound thread's runs, merging gaps below `merge_gap`,
//!   per priority;
//! - **dispatch latency** of LAT threads; **deadlines** of periodic threads;
//! - **response-time analysis** of the periodic threads under their fixed priorities,
//!   optionally with the measured overheads, beside the observed worst case.

use crate::recorder::EndReason;
use crate::result::{deadline_counts, SchedRunData};
use crate::rta::{response_times, Task};
use crate::spec::{Policy, Workload};
use crate::trace::Trace;
use serde::Serialize;
use std::collections::BTreeMap;

/// Gap below which a gap is an interruption rather than a deschedule: the default of
/// `latlab sched analyze --merge-gap`, so the report shows what the command prints.
pub const MERGE_GAP_NS: u64 = 50_000;

/// Order statistics of a sample, ns.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    /// Sample size.
    pub n: u64,
    /// Minimum.
    pub min_ns: u64,
    /// Median.
    pub median_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Maximum.
    pub max_ns: u64,
}

/// Order statistics of `v` (sorted in place). Pure.
pub fn stats(v: &mut [u64]) -> Stats {
    if v.is_empty() {
        return Stats::default();
    }
    v.sort_unstable();
    let q = |p: f64| v[(((p * v.len() as f64).ceil() as usize).max(1) - 1).min(v.len() - 1)];
    Stats {
        n: v.len() as u64,
        min_ns: v[0],
        median_ns: q(0.5),
        p90_ns: q(0.9),
        p99_ns: q(0.99),
        max_ns: v[v.len() - 1],
    }
}

/// Direct context-switch cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SwitchCost {
    /// After a yield or sleep.
    pub voluntary: Stats,
    /// After a preemption.
    pub involuntary: Stats,
    /// Switches per second over the run, all CPUs.
    pub per_second: f64,
    /// Switches whose gap was `merge_gap` or longer: something else ran in between
    /// (another process, the idle loop), so they are not direct costs and are left out of
    /// the statistics above.
    pub longer: u64,
}

/// Interrupt load seen by one thread.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct InterruptLoad {
    /// The thread observed.
    pub thread: u32,
    /// Its priority label.
    pub policy: String,
    /// Short gaps per second of its life.
    pub per_second: f64,
    /// Their durations.
    pub cost: Stats,
    /// Share of its time lost to them.
    pub lost_fraction: f64,
    /// Those of 1 µs or more, per second.
    pub long_per_second: f64,
    /// Median interval between those of 1 µs or more.
    pub long_interval_median_ns: Option<u64>,
    /// The kernel tick those interruptions line up with, when one does.
    pub tick: Option<TickEstimate>,
}

/// A periodic source found among interruption times (the kernel tick).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TickEstimate {
    /// The nominal rate it matches, Hz (one of 100, 250, 300, 1000).
    pub hz: u32,
    /// The period that aligned best, ns (near 1e9/hz; differs by clock-rate error).
    pub period_ns: f64,
    /// Share of the interruptions within ±10 µs of one phase of that period.
    pub aligned_fraction: f64,
    /// The share expected by chance (20 µs / period).
    pub chance_fraction: f64,
}

/// Looks for a kernel tick among interruption start times (ns): for each usual HZ, the
/// period within ±0.1% (5 ns steps) at which the most starts fall into one 20 µs phase
/// bin. Reported when that share is at least 5× chance and 20% of all. Pure.
pub fn infer_tick(starts_ns: &[u64]) -> Option<TickEstimate> {
    if starts_ns.len() < 20 {
        return None;
    }
    const BIN: f64 = 20_000.0;
    let mut best: Option<TickEstimate> = None;
    for hz in [1000u32, 300, 250, 100] {
        let nominal = 1e9 / f64::from(hz);
        let nbins = (nominal / BIN).floor().max(1.0) as usize;
        let mut counts = vec![0u32; nbins];
        let steps = (nominal * 0.001 / 5.0) as i64;
        for k in -steps..=steps {
            let p = nominal + k as f64 * 5.0;
            counts.iter_mut().for_each(|c| *c = 0);
            for &t in starts_ns {
                let ph = (t as f64 % p) / p;
                let b = ((ph * nbins as f64) as usize).min(nbins - 1);
                counts[b] += 1;
            }
            // a phase bin and its neighbour, so that a tick on a bin edge is not split
            let m = (0..nbins)
                .map(|i| counts[i] + counts[(i + 1) % nbins])
                .max()
                .unwrap_or(0);
            let frac = f64::from(m) / starts_ns.len() as f64;
            let chance = 2.0 / nbins as f64;
            let better = best.as_ref().map_or(true, |b| {
                frac - chance > b.aligned_fraction - b.chance_fraction + 1e-9
            });
            if better {
                best = Some(TickEstimate {
                    hz,
                    period_ns: p,
                    aligned_fraction: frac,
                    chance_fraction: chance,
                });
            }
        }
    }
    best.filter(|b| b.aligned_fraction >= 5.0 * b.chance_fraction && b.aligned_fraction >= 0.2)
}

/// Quantum (run length) of one CPU-bound thread.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Quantum {
    /// Thread.
    pub thread: u32,
    /// Priority name.
    pub priority: String,
    /// Run lengths (first and last run left out: they are cut by the run's edges).
    pub runs: Stats,
}

/// Deadlines of one periodic thread.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Deadlines {
    /// Thread.
    pub thread: u32,
    /// Model.
    pub model: String,
    /// Hits.
    pub hits: u64,
    /// Misses.
    pub misses: u64,
    /// Response times (finish − release) of finished jobs.
    pub response: Stats,
    /// Lateness of missed jobs that finished.
    pub lateness: Stats,
    /// CPU received by each deadline.
    pub cpu_by_deadline: Stats,
    /// Dispatch latency of jobs that slept until their release.
    pub dispatch: Stats,
    /// Interruptions while it ran (gaps below `merge_gap` after an involuntary end).
    pub interruptions: Stats,
    /// Interruptions per second of CPU it received.
    pub interruptions_per_cpu_second: f64,
}

/// One row of the response-time comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RtaRow {
    /// Thread.
    pub thread: u32,
    /// The task as analysed (C possibly inflated by overheads).
    pub task: Task,
    /// Analytic worst-case response time, ns (`None`: unbounded).
    pub bound_ns: Option<u64>,
    /// Whether the analysis says it meets its deadlines.
    pub schedulable: bool,
    /// Observed worst response time, ns (`None`: no job finished).
    pub observed_ns: Option<u64>,
    /// Observed exceeds the bound: the analysis' assumptions did not hold.
    pub exceeds_bound: bool,
}

/// Long losses of the CPU by a real-time thread while it wanted to run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RtStall {
    /// Thread.
    pub thread: u32,
    /// Gaps of 10 ms or more that did not follow a sleep, yield or the end.
    pub stalls: Stats,
    /// Median interval between their starts, ns.
    pub interval_median_ns: Option<u64>,
}

/// Everything `latlab sched analyze` infers.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Analysis {
    /// Gap below which a gap is an interruption, not a deschedule.
    pub merge_gap_ns: u64,
    /// Direct context-switch cost.
    pub switches: SwitchCost,
    /// Interrupt load, from the highest-priority never-blocking thread.
    pub interrupts: Option<InterruptLoad>,
    /// Quanta of CPU-bound threads.
    pub quanta: Vec<Quantum>,
    /// Dispatch latency per LAT thread.
    pub dispatch: Vec<(u32, Stats)>,
    /// Deadlines per periodic thread.
    pub deadlines: Vec<Deadlines>,
    /// Response-time analysis beside observation.
    pub rta: Vec<RtaRow>,
    /// Real-time threads that lost the CPU for 10 ms or more.
    pub rt_stalls: Vec<RtStall>,
    /// Caveats for the reader.
    pub notes: Vec<String>,
}

/// The gaps between a block of one thread and the next block of another on the same CPU,
/// split into voluntary (the first block ended in a yield or sleep) and involuntary ones,
/// in ns. Pure.
pub fn switch_gaps(trace: &Trace) -> (Vec<u64>, Vec<u64>) {
    let mut per_cpu: BTreeMap<u32, Vec<&crate::model::Block>> = BTreeMap::new();
    for b in &trace.blocks {
        per_cpu.entry(b.cpu).or_default().push(b);
    }
    let (mut vol, mut invol) = (Vec::new(), Vec::new());
    for blocks in per_cpu.values_mut() {
        blocks.sort_by_key(|b| b.start_ns);
        for w in blocks.windows(2) {
            let (x, y) = (w[0], w[1]);
            if x.thread != y.thread && y.start_ns >= x.end_ns && x.end != EndReason::End {
                let g = y.start_ns - x.end_ns;
                if x.end.voluntary() {
                    vol.push(g);
                } else {
                    invol.push(g);
                }
            }
        }
    }
    (vol, invol)
}

/// Analyses a run. `with_overheads` adds twice the median switch cost to each C and the
/// measured interrupt load as a highest-priority task in the response-time analysis.
pub fn analyze(
    d: &SchedRunData,
    trace: &Trace,
    merge_gap_ns: u64,
    with_overheads: bool,
) -> Analysis {
    let mut a = Analysis {
        merge_gap_ns,
        ..Analysis::default()
    };
    let (vol_all, invol_all) = switch_gaps(trace);
    let direct = |v: &[u64]| -> (Vec<u64>, u64) {
        let d: Vec<u64> = v.iter().copied().filter(|&g| g < merge_gap_ns).collect();
        let longer = (v.len() - d.len()) as u64;
        (d, longer)
    };
    let (mut vol, lv) = direct(&vol_all);
    let (mut invol, li) = direct(&invol_all);
    a.switches.longer = lv + li;
    let secs = d.spec.duration_ns as f64 / 1e9;
    a.switches.per_second = (vol_all.len() + invol_all.len()) as f64 / secs;
    a.switches.voluntary = stats(&mut vol);
    a.switches.involuntary = stats(&mut invol);

    // Interrupt load: highest-ranked never-blocking thread.
    let never: Vec<_> = d
        .threads
        .iter()
        .filter(|t| t.spec.workload.never_blocks() && t.spec.reservation.is_none())
        .collect();
    if let Some(top) = never.iter().max_by_key(|t| t.spec.priority.rank()) {
        let id = top.spec.id;
        let blocks: Vec<_> = trace.blocks_of(id).collect();
        let mut costs = Vec::new();
        let mut long_starts = Vec::new();
        for w in blocks.windows(2) {
            if w[0].end == EndReason::Gap && w[0].cpu == w[1].cpu {
                let g = w[1].start_ns.saturating_sub(w[0].end_ns);
                if g < merge_gap_ns {
                    costs.push(g);
                    if g >= 1_000 {
                        long_starts.push(w[0].end_ns);
                    }
                }
            }
        }
        let life = (top.spec.finish_ns.unwrap_or(d.spec.duration_ns) - top.spec.start_ns) as f64;
        let total: u64 = costs.iter().sum();
        let mut intervals: Vec<u64> = long_starts.windows(2).map(|w| w[1] - w[0]).collect();
        let long_n = long_starts.len();
        let tick = infer_tick(&long_starts);
        a.interrupts = Some(InterruptLoad {
            thread: id,
            policy: top.spec.policy_label(),
            per_second: costs.len() as f64 / (life / 1e9),
            lost_fraction: total as f64 / life,
            cost: stats(&mut costs),
            long_per_second: long_n as f64 / (life / 1e9),
            long_interval_median_ns: (!intervals.is_empty())
                .then(|| stats(&mut intervals).median_ns),
            tick,
        });
    }

    // Quanta.
    for t in d
        .threads
        .iter()
        .filter(|t| t.spec.workload.never_blocks() || t.spec.workload.yields())
    {
        let mut runs = Vec::new();
        let mut cur: Option<(u64, u64)> = None;
        for b in trace.blocks_of(t.spec.id) {
            cur = match cur {
                Some((s, e)) if b.start_ns.saturating_sub(e) < merge_gap_ns => Some((s, b.end_ns)),
                Some((s, e)) => {
                    runs.push(e - s);
                    Some((b.start_ns, b.end_ns))
                }
                None => Some((b.start_ns, b.end_ns)),
            };
        }
        if let Some((s, e)) = cur {
            runs.push(e - s);
        }
        // the first and last runs are cut by the thread's start and end
        if runs.len() > 2 {
            runs.pop();
            runs.remove(0);
        } else {
            runs.clear();
        }
        a.quanta.push(Quantum {
            thread: t.spec.id,
            priority: t.spec.priority.name().into(),
            runs: stats(&mut runs),
        });
    }

    // Dispatch latency and deadlines.
    for t in &d.threads {
        let id = t.spec.id;
        match t.spec.workload {
            Workload::Lat { .. } => {
                let mut v: Vec<u64> = trace
                    .activations_of(id)
                    .map(|x| x.start_ns.saturating_sub(x.release_ns))
                    .collect();
                a.dispatch.push((id, stats(&mut v)));
            }
            Workload::Periodic { .. } | Workload::CpuPeriodic { .. } => {
                let (hits, misses, _) = deadline_counts(t, trace, d.spec.duration_ns);
                let acts: Vec<_> = trace.activations_of(id).collect();
                let mut resp: Vec<u64> = acts
                    .iter()
                    .filter_map(|x| x.finish_ns.map(|f| f - x.release_ns))
                    .collect();
                let mut late: Vec<u64> = acts
                    .iter()
                    .filter_map(|x| {
                        x.finish_ns
                            .filter(|f| *f > x.deadline_ns)
                            .map(|f| f - x.deadline_ns)
                    })
                    .collect();
                let mut cpu: Vec<u64> = acts.iter().map(|x| x.cpu_by_deadline_ns).collect();
                let mut disp: Vec<u64> = acts
                    .iter()
                    .filter(|x| x.waited)
                    .map(|x| x.start_ns - x.release_ns)
                    .collect();
                let blocks: Vec<_> = trace.blocks_of(id).collect();
                let mut irq: Vec<u64> = blocks
                    .windows(2)
                    .filter(|w| w[0].end == EndReason::Gap)
                    .map(|w| w[1].start_ns.saturating_sub(w[0].end_ns))
                    .filter(|&g| g < merge_gap_ns)
                    .collect();
                let ran: u64 = blocks.iter().map(|b| b.end_ns - b.start_ns).sum();
                let irq_rate = irq.len() as f64 / (ran.max(1) as f64 / 1e9);
                a.deadlines.push(Deadlines {
                    thread: id,
                    model: t.spec.workload.describe(),
                    hits,
                    misses,
                    response: stats(&mut resp),
                    lateness: stats(&mut late),
                    cpu_by_deadline: stats(&mut cpu),
                    dispatch: stats(&mut disp),
                    interruptions: stats(&mut irq),
                    interruptions_per_cpu_second: irq_rate,
                });
            }
            _ => {}
        }
    }

    // Response-time analysis of PERIODIC threads by priority (ties: shorter period first).
    let mut periodic: Vec<_> = d
        .threads
        .iter()
        .filter_map(|t| match t.spec.workload {
            Workload::Periodic {
                amount_ns,
                period_ns,
            } => Some((t, amount_ns, period_ns)),
            _ => None,
        })
        .collect();
    if !periodic.is_empty() {
        periodic.sort_by_key(|(t, _, p)| (-t.spec.priority.rank(), *p));
        let cs = if with_overheads {
            a.switches
                .involuntary
                .median_ns
                .max(a.switches.voluntary.median_ns)
        } else {
            0
        };
        let mut tasks: Vec<Task> = Vec::new();
        let mut offset = 0;
        if with_overheads {
            if let Some(irq) = &a.interrupts {
                if let Some(period) = irq.long_interval_median_ns {
                    tasks.push(Task::new(
                        "interrupts",
                        irq.cost.median_ns.max(1),
                        period.max(1),
                    ));
                    offset = 1;
                }
            }
        }
        for (t, c, p) in &periodic {
            tasks.push(Task::new(format!("thread {}", t.spec.id), c + 2 * cs, *p));
        }
        let res = response_times(&tasks);
        for (k, (t, _, _)) in periodic.iter().enumerate() {
            let r = &res[k + offset];
            let observed = trace
                .activations_of(t.spec.id)
                .filter_map(|x| x.finish_ns.map(|f| f - x.release_ns))
                .max();
            a.rta.push(RtaRow {
                thread: t.spec.id,
                task: tasks[k + offset].clone(),
                bound_ns: r.response,
                schedulable: r.schedulable,
                observed_ns: observed,
                exceeds_bound: matches!((observed, r.response), (Some(o), Some(b)) if o > b),
            });
        }
        let fifo = periodic.iter().all(|(t, _, _)| {
            matches!(t.spec.priority.policy(), Policy::Fifo(_)) && t.spec.reservation.is_none()
        });
        if !fifo {
            a.notes.push("some periodic threads are not SCHED_FIFO: the fixed-priority analysis does not describe how they were scheduled".into());
        }
        let pinned_same = periodic
            .iter()
            .all(|(t, _, _)| t.spec.cpu.is_some() && t.spec.cpu == periodic[0].0.spec.cpu);
        if !pinned_same && d.cpus > 1 {
            a.notes.push(format!(
                "the periodic threads were not all pinned to one CPU: on {} CPUs they can run in parallel, so the uniprocessor bound is pessimistic; pin them (--cpu) to test it",
                d.cpus
            ));
        }
    }
    // Real-time threads preempted for 10 ms or more (not after their own sleep or yield).
    for t in d.threads.iter().filter(|t| {
        matches!(t.spec.priority.policy(), Policy::Fifo(_)) && t.spec.reservation.is_none()
    }) {
        let blocks: Vec<_> = trace.blocks_of(t.spec.id).collect();
        let mut gaps = Vec::new();
        let mut starts = Vec::new();
        for w in blocks.windows(2) {
            let g = w[1].start_ns.saturating_sub(w[0].end_ns);
            if w[0].end == EndReason::Gap && g >= 10_000_000 {
                gaps.push(g);
                starts.push(w[0].end_ns);
            }
        }
        if gaps.is_empty() {
            continue;
        }
        let mut iv: Vec<u64> = starts.windows(2).map(|w| w[1] - w[0]).collect();
        let stall = RtStall {
            thread: t.spec.id,
            stalls: stats(&mut gaps),
            interval_median_ns: (!iv.is_empty()).then(|| stats(&mut iv).median_ns),
        };
        let near = |x: u64, target: u64, tol: u64| x.abs_diff(target) <= tol;
        if near(stall.stalls.median_ns, 50_000_000, 10_000_000)
            && stall
                .interval_median_ns
                .map_or(true, |i| near(i, 1_000_000_000, 200_000_000))
        {
            a.notes.push(format!(
                "thread {} ({}) lost the CPU for ~{} ms {} time(s), about once a second: the \
                 signature of Linux 6.12+'s fair deadline server (50 ms every 1 s by default), \
                 which runs starved SCHED_OTHER tasks ahead of real-time ones",
                t.spec.id,
                t.spec.policy_label(),
                stall.stalls.median_ns / 1_000_000,
                stall.stalls.n
            ));
        }
        a.rt_stalls.push(stall);
    }
    if a.switches.voluntary.n + a.switches.involuntary.n == 0 {
        a.notes.push("no switch between traced threads on one CPU was seen (each had a CPU to itself?): run more threads than CPUs, or pin them together".into());
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Activation, Block};
    use crate::result::test_data;
    use crate::spec::{Priority, ThreadSpec};

    fn blk(thread: u32, start_ns: u64, end_ns: u64, end: EndReason) -> Block {
        Block {
            thread,
            cpu: 0,
            start_ns,
            end_ns,
            end,
        }
    }

    #[test]
    fn switches_interrupts_and_quanta_from_a_synthetic_map() {
        let mut hi = ThreadSpec::new(0);
        hi.priority = Priority::High;
        let mut y = ThreadSpec::new(1);
        y.workload = Workload::CpuYield {
            amount_ns: 1_000_000,
        };
        let d = test_data(vec![hi, y], 100_000_000);
        // thread 0 runs 0-10 ms with a 2 µs interrupt every 4 ms (at 4 and 8 ms) and a
        // 500 ns stall at 15 ms; it is preempted at 10 and 20 ms by thread 1, which yields
        // after 1 ms each time.
        let blocks = vec![
            blk(0, 0, 4_000_000, EndReason::Gap),
            blk(0, 4_002_000, 8_000_000, EndReason::Gap),
            blk(0, 8_002_000, 10_000_000, EndReason::Gap),
            blk(1, 10_005_000, 11_000_000, EndReason::Yield),
            blk(0, 11_003_000, 15_000_000, EndReason::Gap),
            blk(0, 15_000_500, 20_000_000, EndReason::Gap),
            blk(1, 20_004_000, 21_000_000, EndReason::Yield),
            blk(0, 21_002_000, 30_000_000, EndReason::End),
        ];
        let trace = Trace {
            blocks,
            activations: vec![],
        };
        let a = analyze(&d, &trace, 50_000, true);
        assert_eq!(a.switches.involuntary.n, 2);
        assert_eq!(a.switches.involuntary.min_ns, 4_000);
        assert_eq!(a.switches.involuntary.max_ns, 5_000);
        assert_eq!(a.switches.voluntary.n, 2);
        assert_eq!(a.switches.voluntary.min_ns, 2_000);
        let irq = a.interrupts.unwrap();
        assert_eq!(irq.thread, 0);
        assert_eq!(irq.cost.n, 3, "two 2 µs interrupts and one 500 ns stall");
        assert_eq!(irq.cost.max_ns, 2_000);
        assert_eq!(irq.long_interval_median_ns, Some(4_000_000));
        // thread 0's runs: [0, 10], [11.003, 20], [21.002, 30] ms; the edges are left out
        let q = &a.quanta[0];
        assert_eq!(q.runs.n, 1);
        assert_eq!(q.runs.median_ns, 20_000_000 - 11_003_000);
        assert!(a.rta.is_empty());
    }

    #[test]
    fn a_250_hz_tick_is_found_among_noise() {
        // ticks every 4 ms from 1.3 ms on (400 of them), plus 400 unrelated interruptions
        let mut v: Vec<u64> = (0..400u64).map(|k| 1_300_000 + k * 4_000_000).collect();
        let mut x: u64 = 12345;
        for _ in 0..400 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            v.push((x >> 33) % 1_600_000_000);
        }
        v.sort_unstable();
        let t = infer_tick(&v).unwrap();
        assert_eq!(t.hz, 250);
        // resolution: a 40 µs window over a 1.6 s span, about 100 ns of period
        assert!((t.period_ns - 4e6).abs() < 200.0, "{t:?}");
        assert!(t.aligned_fraction >= 0.5, "{t:?}");
        // pure noise: no tick
        let noise: Vec<u64> = v
            .iter()
            .copied()
            .filter(|t| (t - 1_300_000) % 4_000_000 != 0)
            .collect();
        assert_eq!(infer_tick(&noise), None);
    }

    #[test]
    fn rta_beside_observation_flags_excess() {
        let ms = 1_000_000;
        let d = test_data(crate::result::two_paper_tasks(), 66 * ms);
        let act = |index, release_ns, finish, deadline_ns| Activation {
            index,
            release_ns,
            start_ns: release_ns,
            finish_ns: Some(finish),
            deadline_ns,
            cpu_by_deadline_ns: 0,
            waited: true,
            frames: 0,
        };
        let trace = Trace {
            // thread 1 interrupted for 2 us once, then sleeping for 20 ms (not an interruption)
            blocks: vec![
                Block {
                    thread: 1,
                    cpu: 0,
                    start_ns: 0,
                    end_ns: ms,
                    end: EndReason::Gap,
                },
                Block {
                    thread: 1,
                    cpu: 0,
                    start_ns: ms + 2_000,
                    end_ns: 3 * ms,
                    end: EndReason::Sleep,
                },
                Block {
                    thread: 1,
                    cpu: 0,
                    start_ns: 23 * ms,
                    end_ns: 24 * ms,
                    end: EndReason::End,
                },
            ],
            activations: vec![
                (0, act(0, 0, 3 * ms, 8 * ms)),
                (1, act(0, 0, 31 * ms, 33 * ms)),
                (1, act(1, 33 * ms, 55 * ms, 66 * ms)),
            ],
        };
        let a = analyze(&d, &trace, 50_000, false);
        // sorted by priority: thread 0 (RTMED, 3/8) first
        assert_eq!(a.rta[0].thread, 0);
        assert_eq!(a.rta[0].bound_ns, Some(3 * ms));
        assert!(!a.rta[0].exceeds_bound);
        assert_eq!(a.rta[1].bound_ns, Some(29 * ms));
        assert_eq!(a.rta[1].observed_ns, Some(31 * ms));
        assert!(a.rta[1].exceeds_bound);
        let dl = a.deadlines.iter().find(|x| x.thread == 1).unwrap();
        assert_eq!((dl.hits, dl.misses), (2, 0));
        assert_eq!(dl.response.max_ns, 31 * ms);
        assert_eq!((dl.interruptions.n, dl.interruptions.max_ns), (1, 2_000));
        assert!(
            a.notes.iter().all(|n| !n.contains("pinned")),
            "{:?}",
            a.notes
        );
    }
}

//! `latlab sched --explain`: every execution gap above a threshold and every missed
//! deadline gets its cause from the kernel's events on the same TSC timeline.
//!
//! The threads already record their own gaps Hourglass-style ([`crate::recorder`]); this
//! module turns the recorded blocks into windows (pure: [`windows`]), hands them with each
//! thread's tid to [`latlab_explain::KernelCollected::attribute_threads`], and keeps what
//! the result needs: the windows as attributed, and the kernel's cause intervals under
//! them (the Perfetto export draws those as a track per CPU, from the result).
//!
//! Windows:
//! - a **gap**: the time between two blocks of one thread where the first ended with a gap
//!   (the thread lost the CPU), at or above the threshold, on the CPU it lost;
//! - a **miss**: a job that missed its deadline, its window from release to deadline on
//!   the thread's CPU; only the time in it the thread did not run counts (its pieces).
//!   A gap inside a missed job's window is part of the miss, not a window of its own, so
//!   no time is counted twice.

use crate::model::{Block, ThreadRun};
use crate::recorder::EndReason;
use crate::spec::Workload;
use crate::trace::Trace;
use latlab_core::results::Attribution;
use latlab_explain::{
    intervals_under, ExplainOptions, KernelCollected, ThreadWindow, ThreadsAttributed, Window,
};
use serde::{Deserialize, Serialize};

/// What `--explain` / `--explain-above` asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExplainAsk {
    /// `--explain-above`: the gap threshold, ns (None: the p99 of the run's gaps).
    pub above_ns: Option<u64>,
}

/// Most windows kept in the result (all are attributed; the rest are counted).
pub const MAX_WINDOWS: usize = 100_000;
/// Most kernel cause intervals kept in the result (the rest are counted).
pub const MAX_KERNEL_SPANS: usize = 200_000;

/// The kind of a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowKind {
    /// An execution gap at or above the threshold.
    Gap,
    /// A missed deadline (the job's window).
    Miss,
}

/// One attributed window, ns from the run's start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExplainWindow {
    /// The thread.
    pub thread: u32,
    /// The CPU it was observed on.
    pub cpu: u32,
    /// Gap or miss.
    pub kind: WindowKind,
    /// Start, ns from the run's start.
    pub start_ns: u64,
    /// End, ns.
    pub end_ns: u64,
    /// The missed job's index (misses only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<u64>,
    /// Its top cause, `class` or `class:name` (empty: no excess).
    #[serde(default)]
    pub cause: String,
}

/// A kernel cause interval under a window, ns from the run's start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelSpan {
    /// The CPU.
    pub cpu: u32,
    /// The cause class (`irq`, `preempted`, …).
    pub class: String,
    /// Its name.
    pub name: String,
    /// Start, ns from the run's start.
    pub start_ns: u64,
    /// End, ns.
    pub end_ns: u64,
}

/// What a `--explain` run keeps beside the attribution (`data.explain`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedExplain {
    /// The gap threshold used, ns.
    pub threshold_ns: u64,
    /// Where it came from: `p99 of the run's gaps` or `--explain-above`.
    pub threshold_from: String,
    /// The windows attributed, in the attribution's order (at most [`MAX_WINDOWS`]).
    pub windows: Vec<ExplainWindow>,
    /// Windows attributed but not listed.
    pub windows_unlisted: u64,
    /// The kernel's cause intervals under the windows, by CPU then time (at most
    /// [`MAX_KERNEL_SPANS`]).
    pub kernel: Vec<KernelSpan>,
    /// Intervals not kept.
    pub kernel_unlisted: u64,
    /// Kernel events decoded.
    pub kernel_events: u64,
    /// Whether this run mounted tracefs.
    pub mounted_tracefs: bool,
}

/// A window with the pieces of it that count, ns from the run's start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunWindow {
    /// The window.
    pub window: ExplainWindow,
    /// `(start, end)` pieces whose time counts (empty: all of it).
    pub pieces: Vec<(u64, u64)>,
}

/// Every execution gap of every thread, ns: `(thread, cpu, start, end)`. Pure.
pub fn gaps(threads: &[ThreadRun], trace: &Trace) -> Vec<(u32, u32, u64, u64)> {
    let mut out = Vec::new();
    for t in threads {
        let blocks: Vec<&Block> = trace.blocks_of(t.spec.id).collect();
        for p in blocks.windows(2) {
            if p[0].end == EndReason::Gap {
                out.push((
                    t.spec.id,
                    p[0].cpu,
                    p[0].end_ns,
                    p[1].start_ns.max(p[0].end_ns),
                ));
            }
        }
    }
    out
}

/// The default threshold: the p99 of all gaps' lengths (rank `ceil(0.99 n)`); None
/// without gaps. Pure.
pub fn p99_threshold(gaps: &[(u32, u32, u64, u64)]) -> Option<u64> {
    let mut l: Vec<u64> = gaps.iter().map(|g| g.3 - g.2).collect();
    if l.is_empty() {
        return None;
    }
    l.sort_unstable();
    let r = (l.len() * 99).div_ceil(100).max(1);
    Some(l[r - 1])
}

/// The windows of a run at `threshold_ns` (see the module docs). Pure.
pub fn windows(
    threads: &[ThreadRun],
    trace: &Trace,
    duration_ns: u64,
    threshold_ns: u64,
) -> Vec<RunWindow> {
    let mut out = Vec::new();
    for t in threads {
        let id = t.spec.id;
        let blocks: Vec<&Block> = trace.blocks_of(id).collect();
        let cpu_at = |ns: u64| {
            blocks
                .iter()
                .find(|b| b.end_ns >= ns)
                .or(blocks.last())
                .map(|b| b.cpu)
                .or(t.spec.cpu)
                .unwrap_or(0)
        };
        let cpu_periodic = matches!(t.spec.workload, Workload::CpuPeriodic { .. });
        let end = t.spec.finish_ns.unwrap_or(duration_ns);
        let mut misses: Vec<(u64, u64)> = Vec::new();
        if !matches!(t.spec.workload, Workload::Lat { .. }) {
            for a in trace.activations_of(id) {
                let open = !cpu_periodic && a.finish_ns.is_none() && a.deadline_ns > end;
                if a.hit(cpu_periodic) || open {
                    continue;
                }
                let (ws, we) = (a.release_ns, a.deadline_ns);
                // the time in the job's window the thread did not run
                let mut pieces = Vec::new();
                let mut at = ws;
                for b in blocks.iter().filter(|b| b.end_ns > ws && b.start_ns < we) {
                    if b.start_ns > at {
                        pieces.push((at, b.start_ns));
                    }
                    at = at.max(b.end_ns);
                }
                if at < we {
                    pieces.push((at, we));
                }
                misses.push((ws, we));
                out.push(RunWindow {
                    window: ExplainWindow {
                        thread: id,
                        cpu: cpu_at(ws),
                        kind: WindowKind::Miss,
                        start_ns: ws,
                        end_ns: we,
                        job: Some(a.index),
                        cause: String::new(),
                    },
                    pieces,
                });
            }
        }
        for p in blocks.windows(2) {
            let (s, e) = (p[0].end_ns, p[1].start_ns.max(p[0].end_ns));
            let in_miss = misses.iter().any(|&(a, b)| s < b && e > a);
            if p[0].end == EndReason::Gap && e - s >= threshold_ns && !in_miss {
                out.push(RunWindow {
                    window: ExplainWindow {
                        thread: id,
                        cpu: p[0].cpu,
                        kind: WindowKind::Gap,
                        start_ns: s,
                        end_ns: e,
                        job: None,
                        cause: String::new(),
                    },
                    pieces: Vec::new(),
                });
            }
        }
    }
    out.sort_by_key(|w| (w.window.start_ns, w.window.thread));
    out
}

/// Converts between the run's ns and raw TSC.
#[derive(Clone, Copy, Debug)]
pub struct Ticks {
    /// TSC at the run's start.
    pub t0_tsc: u64,
    /// TSC rate, Hz.
    pub hz: u64,
}

impl Ticks {
    /// ns from the start → TSC.
    pub fn tsc(&self, ns: u64) -> u64 {
        self.t0_tsc + (u128::from(ns) * u128::from(self.hz) / 1_000_000_000) as u64
    }
    /// TSC → ns from the start (0 before it).
    pub fn ns(&self, tsc: u64) -> u64 {
        (u128::from(tsc.saturating_sub(self.t0_tsc)) * 1_000_000_000 / u128::from(self.hz.max(1)))
            as u64
    }
}

/// A cause as a window list writes it: `class` or `class:name`.
fn cause_key(class: &str, name: &str) -> String {
    if name.is_empty() {
        class.to_string()
    } else {
        format!("{class}:{name}")
    }
}

/// Attributes `ws` with what the kernel session collected; returns the attribution and
/// the data the result keeps.
#[allow(clippy::too_many_arguments)]
pub fn attribute(
    threads: &[ThreadRun],
    ws: &[RunWindow],
    got: &KernelCollected,
    ticks: Ticks,
    duration_ns: u64,
    base_ticks: u64,
    threshold: (u64, &str),
    worst: usize,
) -> (Attribution, SchedExplain) {
    let tid_of = |id: u32| threads.iter().find(|t| t.spec.id == id).map(|t| t.tid);
    let tws: Vec<ThreadWindow> = ws
        .iter()
        .map(|w| ThreadWindow {
            tid: tid_of(w.window.thread),
            window: Window {
                cpu: w.window.cpu,
                start: ticks.tsc(w.window.start_ns),
                end: ticks.tsc(w.window.end_ns),
            },
            pieces: w
                .pieces
                .iter()
                .map(|&(a, b)| (ticks.tsc(a), ticks.tsc(b)))
                .collect(),
        })
        .collect();
    let got_attr: ThreadsAttributed = got.attribute_threads(
        &tws,
        &ExplainOptions {
            window: (ticks.t0_tsc, ticks.tsc(duration_ns)),
            tid: None,
            tsc_hz: ticks.hz,
            base_ticks,
            worst,
        },
    );
    let mut data = SchedExplain {
        threshold_ns: threshold.0,
        threshold_from: threshold.1.to_string(),
        kernel_events: got_attr.events,
        mounted_tracefs: got.mounted_tracefs(),
        ..SchedExplain::default()
    };
    for (i, (w, s)) in ws.iter().zip(&got_attr.splits).enumerate() {
        if data.windows.len() < MAX_WINDOWS {
            let mut ew = w.window.clone();
            ew.cause = s
                .top()
                .map_or_else(String::new, |c| cause_key(c.class.as_str(), &c.name));
            data.windows.push(ew);
        } else {
            data.windows_unlisted += 1;
        }
        if let Some(tl) = got_attr.timeline_of(i, &tws) {
            for iv in intervals_under(tl, &tws[i].window) {
                if data.kernel.len() < MAX_KERNEL_SPANS {
                    data.kernel.push(KernelSpan {
                        cpu: iv.cpu,
                        class: iv.cause.class.as_str().to_string(),
                        name: iv.cause.name.to_string(),
                        start_ns: ticks.ns(iv.start),
                        end_ns: ticks.ns(iv.end),
                    });
                } else {
                    data.kernel_unlisted += 1;
                }
            }
        }
    }
    data.kernel.sort_by_key(|k| (k.cpu, k.start_ns));
    data.kernel
        .dedup_by(|a, b| a.cpu == b.cpu && a.start_ns == b.start_ns && a.end_ns == b.end_ns);
    let mut a = got_attr.attribution;
    mark_simultaneous_stalls(&mut a, ws, ticks);
    (a, data)
}

/// For each worst window, whether a measured thread on another CPU also lost its CPU at
/// the same time (a whole-guest stall points at the hypervisor). Adds one line per other
/// CPU a thread ran on.
fn mark_simultaneous_stalls(a: &mut Attribution, ws: &[RunWindow], ticks: Ticks) {
    let mut cpus: Vec<u32> = ws.iter().map(|w| w.window.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    for w in &mut a.worst {
        let s = ticks.ns(w.start_tsc);
        let e = s + w.duration_ns;
        for &c in cpus.iter().filter(|&&c| c != w.cpu) {
            let overlap = ws
                .iter()
                .filter(|o| o.window.cpu == c && o.window.start_ns < e && o.window.end_ns > s)
                .count();
            w.events.push(if overlap > 0 {
                format!("CPU {c}: a measured thread also stalled meanwhile ({overlap} windows)")
            } else {
                format!("CPU {c}: no measured thread stalled meanwhile")
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Activation;
    use crate::spec::{ThreadSpec, Workload};

    fn run_of(id: u32, w: Workload) -> ThreadRun {
        let mut th = ThreadSpec::new(id);
        th.workload = w;
        th.cpu = Some(1);
        let mut d = crate::result::test_data(vec![th], 100_000);
        d.threads.remove(0)
    }

    fn block(thread: u32, start_ns: u64, end_ns: u64, end: EndReason) -> Block {
        Block {
            thread,
            cpu: 1,
            start_ns,
            end_ns,
            end,
        }
    }

    #[test]
    fn gaps_at_or_above_the_threshold_and_misses_are_windows_once() {
        let t0 = run_of(0, Workload::Cpu);
        let t1 = run_of(
            1,
            Workload::Periodic {
                amount_ns: 300,
                period_ns: 1000,
            },
        );
        let mut trace = Trace {
            blocks: vec![
                block(0, 0, 100, EndReason::Gap),
                block(0, 150, 300, EndReason::Gap),   // gap 50
                block(0, 310, 400, EndReason::Yield), // gap 10 (too short)
                block(0, 500, 600, EndReason::End),   // after a yield: not a gap
                // thread 1: job 0 (0..1000) ran 100 then lost the CPU 100..950, missed
                block(1, 0, 100, EndReason::Gap),
                block(1, 950, 1100, EndReason::Sleep),
                // job 1 (1000..2000) — late start; but hit
                block(1, 2000, 2300, EndReason::Sleep),
            ],
            activations: vec![],
        };
        let act = |index, release_ns, finish_ns: Option<u64>| Activation {
            index,
            release_ns,
            start_ns: release_ns,
            finish_ns,
            deadline_ns: release_ns + 1000,
            cpu_by_deadline_ns: 0,
            waited: true,
            frames: 0,
        };
        trace.activations = vec![(1, act(0, 0, Some(1100))), (1, act(1, 2000, Some(2300)))];
        let all = gaps(&[t0.clone(), t1.clone()], &trace);
        assert_eq!(all.len(), 3);
        assert_eq!(p99_threshold(&all), Some(850));
        let ws = windows(&[t0, t1], &trace, 100_000, 50);
        let got: Vec<(u32, WindowKind, u64, u64)> = ws
            .iter()
            .map(|w| {
                (
                    w.window.thread,
                    w.window.kind,
                    w.window.start_ns,
                    w.window.end_ns,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (1, WindowKind::Miss, 0, 1000),
                (0, WindowKind::Gap, 100, 150),
            ],
            "thread 1's gap 100..950 is inside its missed job, not a window of its own"
        );
        assert_eq!(ws[0].pieces, vec![(100, 950)]);
        assert_eq!(ws[0].window.job, Some(0));
        assert!(ws[1].pieces.is_empty());
    }

    #[test]
    fn a_worst_window_says_whether_threads_on_other_cpus_stalled_too() {
        let w = |cpu, start_ns, end_ns| RunWindow {
            window: ExplainWindow {
                thread: cpu,
                cpu,
                kind: WindowKind::Gap,
                start_ns,
                end_ns,
                job: None,
                cause: String::new(),
            },
            pieces: vec![],
        };
        let ws = [w(1, 1000, 2000), w(0, 1500, 1600), w(2, 5000, 6000)];
        let ticks = Ticks {
            t0_tsc: 0,
            hz: 1_000_000_000,
        };
        let mut a = Attribution {
            worst: vec![latlab_core::results::WorstWindow {
                cpu: 1,
                start_tsc: 1000,
                duration_ns: 1000,
                ..Default::default()
            }],
            ..Attribution::default()
        };
        mark_simultaneous_stalls(&mut a, &ws, ticks);
        assert_eq!(
            a.worst[0].events,
            vec![
                "CPU 0: a measured thread also stalled meanwhile (1 windows)".to_string(),
                "CPU 2: no measured thread stalled meanwhile".to_string(),
            ]
        );
    }

    #[test]
    fn ticks_round_trip() {
        let t = Ticks {
            t0_tsc: 1000,
            hz: 2_000_000_000,
        };
        assert_eq!(t.tsc(500), 2000);
        assert_eq!(t.ns(2000), 500);
        assert_eq!(t.ns(10), 0);
    }
}

//! Splitting each window's time (a gap, a slow sample) over the causes under it. Pure.
//!
//! For a window `[start, end)` on a CPU, every segment of the CPU's timeline that overlaps
//! it gives its overlap to its interval's cause (innermost wins where intervals nest). The
//! rest, less the window's baseline (what the window costs with no interruption, e.g. one
//! loop iteration), is split in two:
//!
//! - *outside the kernel*: the uncovered time before the CPU's first kernel event in the
//!   window — all of it when the CPU logged no event at all. The thread had lost the CPU
//!   and the kernel had not been entered: hypervisor, SMI, firmware. (On the Firecracker
//!   guest this is the 7–15 µs between a VM exit and the injected interrupt's entry event;
//!   see docs/explain.md.)
//! - *unexplained*: uncovered time after the first event — kernel entry/exit around the
//!   events, or a cause the recorder does not see.
//!
//! Without a timeline everything is unexplained and the attribution says why.

use crate::timeline::{Cause, Class, CpuTimeline, Timeline};
use latlab_core::results::{Attribution, CauseTime, WorstWindow};
use std::collections::BTreeMap;

/// A window to attribute, raw TSC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// The CPU it was observed on.
    pub cpu: u32,
    /// Start.
    pub start: u64,
    /// End (`>= start`).
    pub end: u64,
}

/// What one window's time went to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowSplit {
    /// The window.
    pub window: Window,
    /// Ticks per cause, largest first.
    pub parts: Vec<(Cause, u64)>,
}

impl WindowSplit {
    /// The cause with the most time, if any.
    pub fn top(&self) -> Option<&Cause> {
        self.parts.first().map(|(c, _)| c)
    }

    /// The window's excess, ticks: the sum of its parts.
    pub fn excess(&self) -> u64 {
        self.parts.iter().map(|(_, t)| t).sum()
    }
}

/// Options of [`attribute`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttributeOptions {
    /// TSC rate, Hz (ticks → ns).
    pub tsc_hz: u64,
    /// Baseline of a window, ticks (subtracted from its uncovered time).
    pub base_ticks: u64,
    /// How many worst windows to keep.
    pub worst: usize,
    /// Kernel events lost: any makes the attribution incomplete.
    pub lost_events: u64,
    /// Asked-for kernel events the kernel does not have.
    pub missing_events: Vec<String>,
    /// Why there are no kernel events at all, when there are none.
    pub unavailable: Option<String>,
}

/// Splits one window over the causes of `cpu`'s timeline (`None`: no kernel events).
pub fn split(w: Window, cpu: Option<&CpuTimeline>, base_ticks: u64) -> WindowSplit {
    let len = w.end.saturating_sub(w.start);
    let mut parts: BTreeMap<Cause, u64> = BTreeMap::new();
    let mut covered = 0u64;
    // Uncovered time before the CPU's first kernel event in the window (all of it when
    // there is none): the kernel had not been entered yet.
    let mut lead = 0u64;
    if let Some(c) = cpu {
        let first = c.first_event_in(w.start, w.end).unwrap_or(w.end);
        let mut lead_covered = 0u64;
        for s in c.segments_in(w.start, w.end) {
            let (a, b) = (s.start.max(w.start), s.end.min(w.end));
            covered += b - a;
            lead_covered += b.min(first).saturating_sub(a);
            *parts
                .entry(c.intervals[s.interval].cause.clone())
                .or_insert(0) += b - a;
        }
        lead = (first - w.start).saturating_sub(lead_covered);
    }
    let uncovered = len - covered.min(len);
    let inner = uncovered - lead.min(uncovered);
    // the baseline comes off the unexplained part first
    let unexplained = inner.saturating_sub(base_ticks);
    let outside = lead.saturating_sub(base_ticks - (inner - unexplained));
    if outside > 0 {
        *parts
            .entry(Cause::new(Class::OutsideKernel, ""))
            .or_insert(0) += outside;
    }
    if unexplained > 0 {
        *parts.entry(Cause::new(Class::Unexplained, "")).or_insert(0) += unexplained;
    }
    let mut parts: Vec<(Cause, u64)> = parts.into_iter().collect();
    parts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    WindowSplit { window: w, parts }
}

fn ns(ticks: u64, hz: u64) -> u64 {
    if hz == 0 {
        return 0;
    }
    (u128::from(ticks) * 1_000_000_000 / u128::from(hz)) as u64
}

fn cause_time(c: &Cause, count: u64, ticks: u64, hz: u64) -> CauseTime {
    CauseTime {
        class: c.class.as_str().to_string(),
        name: c.name.clone(),
        count,
        time_ns: ns(ticks, hz),
    }
}

/// Attributes every window; returns the stored attribution and each window's split (in
/// the order given).
pub fn attribute(
    windows: &[Window],
    timeline: Option<&Timeline>,
    o: &AttributeOptions,
) -> (Attribution, Vec<WindowSplit>) {
    let splits: Vec<WindowSplit> = windows
        .iter()
        .map(|w| split(*w, timeline.and_then(|t| t.cpu(w.cpu)), o.base_ticks))
        .collect();
    let mut totals: BTreeMap<&Cause, (u64, u64)> = BTreeMap::new();
    let (mut excess, mut explained) = (0u64, 0u64);
    for s in &splits {
        for (c, t) in &s.parts {
            let e = totals.entry(c).or_insert((0, 0));
            e.0 += 1;
            e.1 += t;
            excess += t;
            if c.class != Class::Unexplained {
                explained += t;
            }
        }
    }
    let mut causes: Vec<CauseTime> = totals
        .iter()
        .map(|(c, (n, t))| cause_time(c, *n, *t, o.tsc_hz))
        .collect();
    causes.sort_by(|a, b| b.time_ns.cmp(&a.time_ns).then(b.count.cmp(&a.count)));
    let mut order: Vec<usize> = (0..splits.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(windows[i].end.saturating_sub(windows[i].start)));
    let worst = order
        .into_iter()
        .take(o.worst)
        .map(|i| worst_window(&splits[i], timeline, o.tsc_hz))
        .collect();
    let a = Attribution {
        complete: o.lost_events == 0 && timeline.is_some() && o.unavailable.is_none(),
        lost_events: o.lost_events,
        windows: windows.len() as u64,
        excess_ns: ns(excess, o.tsc_hz),
        explained_ns: ns(explained, o.tsc_hz),
        causes,
        worst,
        missing_events: o.missing_events.clone(),
        unavailable: o.unavailable.clone(),
    };
    (a, splits)
}

/// Most events listed under one worst window (the rest are counted).
pub const MAX_WORST_EVENTS: usize = 24;

fn worst_window(s: &WindowSplit, timeline: Option<&Timeline>, hz: u64) -> WorstWindow {
    let w = s.window;
    let mut events = Vec::new();
    if let Some(c) = timeline.and_then(|t| t.cpu(w.cpu)) {
        let overlapping: Vec<_> = c.intervals_in(w.start, w.end).collect();
        for iv in overlapping.iter().take(MAX_WORST_EVENTS) {
            let off = iv.start as i128 - w.start as i128;
            let off_ns = (off.unsigned_abs() * 1_000_000_000 / u128::from(hz.max(1))) as u64;
            events.push(format!(
                "{}{} {} for {} ns",
                if off < 0 { "-" } else { "+" },
                latlab_core::units::format_ns(off_ns as f64),
                iv.cause,
                ns(iv.end - iv.start, hz)
            ));
        }
        if overlapping.len() > MAX_WORST_EVENTS {
            events.push(format!(
                "... and {} more",
                overlapping.len() - MAX_WORST_EVENTS
            ));
        }
        if events.is_empty() && !c.has_event_in(w.start, w.end) {
            events.push(format!("no kernel event on CPU {}", w.cpu));
        }
    }
    // Cross-check for time outside the kernel: did the other CPUs log anything meanwhile?
    // (All quiet hints at the whole guest stalling.)
    if s.parts.iter().any(|(c, _)| c.class == Class::OutsideKernel) {
        for other in timeline.iter().flat_map(|t| &t.cpus) {
            if other.cpu != w.cpu {
                let n = other.events_in(w.start, w.end);
                events.push(if n == 0 {
                    format!("CPU {}: no kernel event meanwhile", other.cpu)
                } else {
                    format!("CPU {}: {n} kernel events meanwhile", other.cpu)
                });
            }
        }
    }
    WorstWindow {
        cpu: w.cpu,
        start_tsc: w.start,
        duration_ns: ns(w.end.saturating_sub(w.start), hz),
        causes: s
            .parts
            .iter()
            .map(|(c, t)| cause_time(c, 1, *t, hz))
            .collect(),
        events,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{Event, EventKind, Task};
    use crate::timeline::{build, TimelineOptions};

    fn tl(events: Vec<(u32, u64, EventKind)>, tid: Option<i32>) -> Timeline {
        let evs: Vec<Event> = events
            .into_iter()
            .map(|(cpu, tsc, kind)| Event { cpu, tsc, kind })
            .collect();
        build(
            &evs,
            &TimelineOptions {
                window: (0, 100_000),
                tid,
                tsc_hz: 1_000_000_000,
                cpus: vec![0, 1],
            },
        )
    }
    fn opts() -> AttributeOptions {
        AttributeOptions {
            tsc_hz: 1_000_000_000,
            base_ticks: 0,
            worst: 2,
            lost_events: 0,
            missing_events: vec![],
            unavailable: None,
        }
    }
    fn w(cpu: u32, start: u64, end: u64) -> Window {
        Window { cpu, start, end }
    }

    #[test]
    fn a_gap_splits_over_nested_causes_and_the_rest_is_unexplained() {
        let t = tl(
            vec![
                (
                    1,
                    1_000,
                    EventKind::VectorEntry {
                        vector: "local_timer".into(),
                    },
                ),
                (
                    1,
                    1_100,
                    EventKind::HrtimerEntry {
                        function: "tick_nohz_handler".into(),
                    },
                ),
                (1, 1_700, EventKind::HrtimerExit),
                (
                    1,
                    1_900,
                    EventKind::VectorExit {
                        vector: "local_timer".into(),
                    },
                ),
            ],
            None,
        );
        let s = split(w(1, 950, 2_000), t.cpu(1), 10);
        assert_eq!(
            s.parts,
            vec![
                (Cause::new(Class::Timer, "tick_nohz_handler"), 600),
                (Cause::new(Class::Timer, "local_timer"), 300),
                (Cause::new(Class::Unexplained, ""), 90),
                (Cause::new(Class::OutsideKernel, ""), 50),
            ]
        );
        assert_eq!(s.excess(), 1_040, "the window less its 10-tick baseline");
        // a baseline larger than the unexplained part eats into the lead
        let s = split(w(1, 950, 2_000), t.cpu(1), 120);
        assert_eq!(s.parts[2], (Cause::new(Class::OutsideKernel, ""), 30));
        assert_eq!(s.excess(), 930);
    }

    #[test]
    fn a_gap_with_no_kernel_event_is_outside_the_kernel() {
        let t = tl(
            vec![
                (
                    1,
                    10,
                    EventKind::IrqEntry {
                        irq: 5,
                        name: "eth0".into(),
                    },
                ),
                (1, 20, EventKind::IrqExit { irq: 5 }),
                (
                    0,
                    5_000,
                    EventKind::IrqEntry {
                        irq: 6,
                        name: "disk".into(),
                    },
                ),
            ],
            None,
        );
        let s = split(w(1, 5_000, 22_000), t.cpu(1), 0);
        assert_eq!(
            s.parts,
            vec![(Cause::new(Class::OutsideKernel, ""), 17_000)]
        );
        // no timeline at all: unexplained
        let s = split(w(1, 5_000, 22_000), None, 0);
        assert_eq!(s.top(), Some(&Cause::new(Class::Unexplained, "")));
    }

    #[test]
    fn aggregates_rank_causes_and_keep_the_worst_windows() {
        let task = |c: &str, p| Task {
            comm: c.into(),
            pid: p,
            prio: 120,
        };
        let t = tl(
            vec![
                (
                    1,
                    1_000,
                    EventKind::Switch {
                        prev: task("spin", 7),
                        prev_state: "R".into(),
                        next: task("hog", 9),
                    },
                ),
                (
                    1,
                    1_100,
                    EventKind::Switch {
                        prev: task("hog", 9),
                        prev_state: "S".into(),
                        next: task("spin", 7),
                    },
                ),
                (
                    1,
                    3_000,
                    EventKind::Switch {
                        prev: task("spin", 7),
                        prev_state: "R".into(),
                        next: task("hog", 9),
                    },
                ),
                (
                    1,
                    3_300,
                    EventKind::Switch {
                        prev: task("hog", 9),
                        prev_state: "S".into(),
                        next: task("spin", 7),
                    },
                ),
                (
                    1,
                    5_000,
                    EventKind::SoftirqEntry {
                        vec: 3,
                        action: "NET_RX".into(),
                    },
                ),
                (1, 5_050, EventKind::SoftirqExit { vec: 3 }),
            ],
            Some(7),
        );
        let windows = [
            w(1, 990, 1_110),
            w(1, 2_990, 3_310),
            w(1, 5_000, 5_050),
            w(1, 9_000, 9_500),
        ];
        let (a, splits) = attribute(&windows, Some(&t), &opts());
        assert!(a.complete);
        assert_eq!(a.windows, 4);
        assert_eq!(a.excess_ns, 120 + 320 + 50 + 500);
        let hog = a.causes.iter().find(|c| c.class == "preempted").unwrap();
        assert_eq!((hog.name.as_str(), hog.count, hog.time_ns), ("hog", 2, 400));
        assert_eq!(a.causes[0].class, "outside_kernel");
        // 500 with no event at all, and 10 before the first switch of each hog window
        assert_eq!(a.causes[0].time_ns, 520);
        assert_eq!(a.class_time_ns("unexplained"), 20);
        assert_eq!(a.explained_ns, a.excess_ns - 20);
        assert_eq!(splits[1].top(), Some(&Cause::new(Class::Preempted, "hog")));
        assert_eq!(a.worst.len(), 2);
        assert_eq!(a.worst[0].duration_ns, 500);
        assert_eq!(
            a.worst[0].events,
            vec![
                "no kernel event on CPU 1",
                "CPU 0: no kernel event meanwhile"
            ]
        );
        assert_eq!(a.worst[1].duration_ns, 320);
        assert_eq!(
            a.worst[1].events,
            vec![
                "+10ns preempted by task (hog) for 300 ns",
                "CPU 0: no kernel event meanwhile"
            ]
        );
    }

    #[test]
    fn lost_events_or_no_kernel_make_it_incomplete() {
        let t = tl(vec![], None);
        let o = AttributeOptions {
            lost_events: 3,
            ..opts()
        };
        let (a, _) = attribute(&[w(0, 0, 10)], Some(&t), &o);
        assert!(!a.complete);
        assert_eq!(a.lost_events, 3);
        let o = AttributeOptions {
            unavailable: Some("not root".into()),
            ..opts()
        };
        let (a, _) = attribute(&[w(0, 0, 10)], None, &o);
        assert!(!a.complete);
        assert_eq!(a.explained_ns, 0);
        assert_eq!(a.excess_ns, 10);
        assert_eq!(a.unavailable.as_deref(), Some("not root"));
    }
}

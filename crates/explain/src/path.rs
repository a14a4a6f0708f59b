//! Windows carried by several CPUs — a probe's trip from its TX stamp to its RX stamp
//! through the generator, the softirqs of the veth path and the network function — split
//! over the causes under them. Pure.
//!
//! ## The rule (see docs/explain.md, "Windows on several CPUs")
//!
//! The window `[start, end)` is cut at every edge of every cause on any of its CPUs. For
//! each piece:
//!
//! 1. **Kernel causes.** On each of the window's CPUs, the innermost interval covering the
//!    piece (if any) is that CPU's cause: the CPU was not running the measurement's
//!    thread then. The piece's time is split equally among the distinct causes found
//!    (the same cause on two CPUs counts once); the few ticks an equal split leaves over go
//!    to the first causes in their order.
//! 2. **Outside the kernel.** Else, when a measuring thread on one of the CPUs had lost
//!    its CPU just then (a [`Stall`] its own gap recorder saw) and that CPU had logged no
//!    kernel event yet in the stall, the piece is *outside the kernel* — the single-CPU
//!    rule of [`crate::attribute`] applied to the thread's own gap.
//! 3. **Uncovered.** Else it is the path running with nothing in its way that the
//!    recorder sees (user code, system calls).
//!
//! The pieces sum to the window's length. The window's excess is its length less the
//! baseline (the run's median): the baseline comes off the uncovered time first (that is
//! where the normal path's work lies); what is left of it, when the uncovered time is
//! shorter, comes off the other causes in proportion to their time (the normal path also
//! runs the softirq of its own packets), by largest remainder so the parts sum to the
//! excess exactly. What stays uncovered is *unexplained*.
//!
//! Without a timeline (no kernel events) everything is unexplained, as in
//! [`crate::attribute`].

use crate::attribute::{assemble, ns, worst_record, AttributeOptions, Window, WindowSplit};
use crate::pieces::{pieces, sweep, Owner, PieceIndex, Tally};
pub use crate::pieces::{PathWindow, Stall};
use crate::timeline::{Cause, Class, Timeline};
use latlab_core::results::{Attribution, CauseSpan, WorstWindow};
use std::collections::BTreeMap;

/// Splits one path window (see the module docs); `base_ticks` is the baseline; `lost`:
/// kernel events were lost, so each CPU is known only from its first recorded event on.
pub fn split_path(
    w: &PathWindow,
    timeline: Option<&Timeline>,
    stalls: &[Stall],
    base_ticks: u64,
    lost: bool,
) -> WindowSplit {
    let mut t = Tally::default();
    match timeline {
        None => t.uncovered = w.end.saturating_sub(w.start),
        Some(tl) => sweep(w, tl, stalls, lost, |a, b, o| t.add(a, b, o)),
    }
    finish_split(w, t, base_ticks)
}

/// The split of `w` from its tally: the baseline comes off the uncovered time first, then
/// off the rest in proportion.
fn finish_split(w: &PathWindow, t: Tally, base_ticks: u64) -> WindowSplit {
    let window = Window {
        cpu: w.cpus.first().copied().unwrap_or(0),
        start: w.start,
        end: w.end,
    };
    let Tally { raw, uncovered } = t;
    let unexplained = uncovered.saturating_sub(base_ticks);
    let rest_base = base_ticks - (uncovered - unexplained);
    let total: u64 = raw.values().sum();
    let keep = total.saturating_sub(rest_base);
    let mut parts: Vec<(Cause, u64)> = apportion(&raw, total, keep);
    if unexplained > 0 {
        parts.push((Cause::new(Class::Unexplained, ""), unexplained));
    }
    parts.retain(|(_, t)| *t > 0);
    parts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    WindowSplit { window, parts }
}

/// Scales the times of `raw` (summing to `total`) to sum to `keep`, by largest remainder.
fn apportion(raw: &BTreeMap<Cause, u64>, total: u64, keep: u64) -> Vec<(Cause, u64)> {
    if total == 0 || keep >= total {
        return raw.iter().map(|(c, t)| (c.clone(), *t)).collect();
    }
    let mut v: Vec<(Cause, u64, u128)> = raw
        .iter()
        .map(|(c, t)| {
            let x = u128::from(*t) * u128::from(keep);
            (
                c.clone(),
                (x / u128::from(total)) as u64,
                x % u128::from(total),
            )
        })
        .collect();
    let mut left = keep - v.iter().map(|p| p.1).sum::<u64>();
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&a, &b| v[b].2.cmp(&v[a].2).then(a.cmp(&b)));
    for i in order {
        if left == 0 {
            break;
        }
        v[i].1 += 1;
        left -= 1;
    }
    v.into_iter().map(|(c, t, _)| (c, t)).collect()
}

/// Attributes every path window; returns the stored attribution and each window's split
/// (in the order given). `stalls` are the measuring threads' gaps (any order).
pub fn attribute_paths(
    windows: &[PathWindow],
    timeline: Option<&Timeline>,
    stalls: &[Stall],
    o: &AttributeOptions,
) -> (Attribution, Vec<WindowSplit>) {
    let mut stalls = stalls.to_vec();
    stalls.sort_by_key(|g| g.start);
    let longest = stalls.iter().map(|g| g.end.saturating_sub(g.start)).max();
    // only the stalls that can overlap [from, to)
    let near = |from: u64, to: u64| {
        let from = from.saturating_sub(longest.unwrap_or(0));
        let a = stalls.partition_point(|g| g.start < from);
        let b = stalls.partition_point(|g| g.start < to);
        &stalls[a..b.max(a)]
    };
    let (base, lost) = (o.base_ticks, o.lost_events > 0);
    let mut splits: Vec<Option<WindowSplit>> = vec![None; windows.len()];
    // Windows that overlap (on the same CPUs) are tallied from one cut of their union:
    // cutting each anew costs the product of their number and length.
    let mut order: Vec<usize> = (0..windows.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&windows[a], &windows[b]);
        (&x.cpus, x.start).cmp(&(&y.cpus, y.start))
    });
    let mut i = 0;
    while i < order.len() {
        let w0 = &windows[order[i]];
        let (mut end, mut j) = (w0.end, i + 1);
        while let Some(w) = order.get(j).map(|&k| &windows[k]) {
            if w.cpus != w0.cpus || w.start >= end {
                break;
            }
            end = end.max(w.end);
            j += 1;
        }
        match timeline {
            Some(tl) if j - i > 1 => {
                let ix = PieceIndex::new(&w0.cpus, (w0.start, end), tl, near(w0.start, end), lost);
                for &k in &order[i..j] {
                    let w = &windows[k];
                    splits[k] = Some(finish_split(w, ix.tally(w.start, w.end), base));
                }
            }
            _ => {
                for &k in &order[i..j] {
                    let w = &windows[k];
                    splits[k] = Some(split_path(w, timeline, near(w.start, w.end), base, lost));
                }
            }
        }
        i = j;
    }
    let splits: Vec<WindowSplit> = splits
        .into_iter()
        .map(|s| s.expect("every window split"))
        .collect();
    let a = assemble(&splits, timeline.is_some(), o, |i| {
        worst_path(&windows[i], &splits[i], timeline, &stalls, o)
    });
    (a, splits)
}

fn worst_path(
    w: &PathWindow,
    s: &WindowSplit,
    timeline: Option<&Timeline>,
    stalls: &[Stall],
    o: &AttributeOptions,
) -> WorstWindow {
    let hz = o.tsc_hz;
    let mut spans: Vec<CauseSpan> = Vec::new();
    let mut events = Vec::new();
    if let Some(tl) = timeline {
        let rel = |t: u64| ns(t - w.start, hz);
        let outside = Cause::new(Class::OutsideKernel, "");
        // the latest span of every cause, to extend when the next piece adjoins it
        let mut last: BTreeMap<Cause, usize> = BTreeMap::new();
        for (a, b, owner) in pieces(w, tl, stalls, o.lost_events > 0) {
            let causes = match owner {
                Owner::Causes(cs) => cs,
                Owner::Outside => vec![&outside],
                Owner::Uncovered => continue,
            };
            for c in causes {
                let (a, b) = (rel(a), rel(b));
                match last.get(c).map(|&i| &mut spans[i]) {
                    Some(l) if l.end_ns == a => l.end_ns = b,
                    _ => {
                        last.insert(c.clone(), spans.len());
                        spans.push(CauseSpan {
                            class: c.class.as_str().to_string(),
                            name: c.name.to_string(),
                            start_ns: a,
                            end_ns: b,
                        });
                    }
                }
            }
        }
        spans.sort_by_key(|s| (s.start_ns, s.end_ns));
        let mut n = 0usize;
        for &cpu in &w.cpus {
            let Some(c) = timeline.and_then(|t| t.cpu(cpu)) else {
                continue;
            };
            for iv in c.intervals_in(w.start, w.end) {
                n += 1;
                if n > crate::attribute::MAX_WORST_EVENTS {
                    continue;
                }
                events.push(format!(
                    "CPU {cpu}: {}",
                    crate::attribute::event_line(iv, w.start, hz)
                ));
            }
        }
        if n > crate::attribute::MAX_WORST_EVENTS {
            events.push(format!(
                "... and {} more",
                n - crate::attribute::MAX_WORST_EVENTS
            ));
        }
        if n == 0 {
            let cpus: Vec<String> = w.cpus.iter().map(u32::to_string).collect();
            events.push(format!("no kernel event on CPU {}", cpus.join(", ")));
        }
    }
    worst_record(s, events, spans, hz)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{Event, EventKind, Task};

    fn task(c: &str, p: i32) -> Task {
        Task {
            comm: c.into(),
            pid: p,
            prio: 120,
        }
    }
    fn sw(prev: Task, next: Task) -> EventKind {
        EventKind::Switch {
            prev,
            prev_state: "R".into(),
            next,
        }
    }
    fn softirq(vec: u32, action: &str) -> EventKind {
        EventKind::SoftirqEntry {
            vec,
            action: action.into(),
        }
    }
    fn tl(events: Vec<(u32, u64, EventKind)>) -> Timeline {
        let evs: Vec<Event> = events
            .into_iter()
            .map(|(cpu, tsc, kind)| Event { cpu, tsc, kind })
            .collect();
        crate::timeline::watching_latlab(&evs, 100_000)
    }
    /// The generator's loop on CPU 0 loses the CPU 3 000..3 400, the NF's on CPU 1
    /// 1 260..1 600.
    fn two_stalls() -> [Stall; 2] {
        [
            Stall {
                cpu: 0,
                start: 3_000,
                end: 3_400,
            },
            Stall {
                cpu: 1,
                start: 1_260,
                end: 1_600,
            },
        ]
    }
    fn pw(start: u64, end: u64) -> PathWindow {
        PathWindow {
            cpus: vec![0, 1],
            start,
            end,
        }
    }
    fn cause(class: Class, name: &str) -> Cause {
        Cause::new(class, name)
    }

    /// CPU 0: the generator, interrupted by a timer 1 000..1 100; CPU 1: the NF, whose
    /// NET_RX softirq runs 1 050..1 250 and which `rustc` preempts 1 300..1 800.
    fn two_cpus() -> Timeline {
        tl(vec![
            (
                0,
                1_000,
                EventKind::VectorEntry {
                    vector: "local_timer".into(),
                },
            ),
            (
                0,
                1_100,
                EventKind::VectorExit {
                    vector: "local_timer".into(),
                },
            ),
            (1, 1_050, softirq(3, "NET_RX")),
            (1, 1_250, EventKind::SoftirqExit { vec: 3 }),
            (1, 1_300, sw(task("latlab-nf-a", 50), task("rustc", 60))),
            (1, 1_800, sw(task("rustc", 60), task("latlab-nf-a", 50))),
        ])
    }

    #[test]
    fn each_instant_goes_to_the_causes_on_the_cpus_not_running_the_path() {
        let t = two_cpus();
        let s = split_path(&pw(900, 2_000), Some(&t), &[], 0, false);
        // 1 000..1 050 timer alone, 1 050..1 100 timer and NET_RX share (25 each),
        // 1 100..1 250 NET_RX alone, 1 300..1 800 rustc; 900..1 000, 1 250..1 300 and
        // 1 800..2 000 uncovered
        assert_eq!(
            s.parts,
            vec![
                (cause(Class::Preempted, "rustc"), 500),
                (cause(Class::Unexplained, ""), 350),
                (cause(Class::Softirq, "NET_RX"), 175),
                (cause(Class::Timer, "local_timer"), 75),
            ]
        );
        assert_eq!(s.excess(), 1_100, "no baseline: the whole window");
        // the same window on CPU 1 alone does not see CPU 0's timer
        let one = PathWindow {
            cpus: vec![1],
            ..pw(900, 2_000)
        };
        let s1 = split_path(&one, Some(&t), &[], 0, false);
        assert!(s1.parts.iter().all(|(c, _)| c.class != Class::Timer));
        assert!(s1.parts.contains(&(cause(Class::Softirq, "NET_RX"), 200)));
    }

    #[test]
    fn the_baseline_comes_off_the_uncovered_time_then_off_the_causes_in_proportion() {
        let t = two_cpus();
        // uncovered 350 of a 1 100 window: a baseline of 300 leaves 50 unexplained
        let s = split_path(&pw(900, 2_000), Some(&t), &[], 300, false);
        assert_eq!(s.excess(), 800);
        assert_eq!(s.parts[0], (cause(Class::Preempted, "rustc"), 500));
        assert!(s.parts.contains(&(cause(Class::Unexplained, ""), 50)));
        // a baseline of 650: all 350 uncovered, then 300 of the 750 of causes (40 %)
        let s = split_path(&pw(900, 2_000), Some(&t), &[], 650, false);
        assert_eq!(s.excess(), 450);
        assert_eq!(
            s.parts,
            vec![
                (cause(Class::Preempted, "rustc"), 300),
                (cause(Class::Softirq, "NET_RX"), 105),
                (cause(Class::Timer, "local_timer"), 45),
            ]
        );
        // a window shorter than its baseline has no excess
        assert_eq!(
            split_path(&pw(900, 1_000), Some(&t), &[], 650, false).excess(),
            0
        );
    }

    #[test]
    fn a_stall_with_no_kernel_event_is_outside_the_kernel_and_an_event_ends_its_lead() {
        let t = two_cpus();
        // the generator's loop on CPU 0 lost the CPU 3 000..3 400 with no event at all;
        // the NF on CPU 1 lost it 1 260..1 600: its first event in the stall (the switch
        // to rustc at 1 300) ends the lead, and rustc owns the rest
        let stalls = two_stalls();
        let s = split_path(&pw(2_900, 3_500), Some(&t), &stalls, 0, false);
        assert_eq!(
            s.parts,
            vec![
                (cause(Class::OutsideKernel, ""), 400),
                (cause(Class::Unexplained, ""), 200)
            ]
        );
        let s = split_path(&pw(1_200, 1_400), Some(&t), &stalls, 0, false);
        assert_eq!(
            s.parts,
            vec![
                (cause(Class::Preempted, "rustc"), 100),
                (cause(Class::Softirq, "NET_RX"), 50),
                (cause(Class::OutsideKernel, ""), 40),
                (cause(Class::Unexplained, ""), 10),
            ]
        );
        // a stall on a CPU the window does not use is not its cause
        let s = split_path(
            &PathWindow {
                cpus: vec![1],
                ..pw(2_900, 3_500)
            },
            Some(&t),
            &stalls,
            0,
            false,
        );
        assert_eq!(s.parts, vec![(cause(Class::Unexplained, ""), 600)]);
    }

    #[test]
    fn nothing_is_known_of_a_cpu_before_its_first_recorded_event() {
        // the ring kept only the end of the run (events were lost): CPU 1's first event is
        // the exit of a NET_RX whose entry was lost, so the timeline opens it at the
        // window's start
        let t = tl(vec![
            (1, 50_000, EventKind::SoftirqExit { vec: 3 }),
            (1, 60_000, softirq(3, "NET_RX")),
            (1, 60_100, EventKind::SoftirqExit { vec: 3 }),
        ]);
        let early = split_path(&pw(1_000, 2_000), Some(&t), &[], 0, true);
        assert_eq!(early.parts, vec![(cause(Class::Unexplained, ""), 1_000)]);
        let late = split_path(&pw(49_900, 50_100), Some(&t), &[], 0, true);
        assert_eq!(
            late.parts,
            vec![(cause(Class::Unexplained, ""), 200),],
            "the piece before the first event is not the fabricated interval's"
        );
        let s = split_path(&pw(59_950, 60_150), Some(&t), &[], 0, true);
        assert!(s.parts.contains(&(cause(Class::Softirq, "NET_RX"), 100)));
        // with nothing lost, the recording started before the window: the exit's
        // interval stands
        let whole = split_path(&pw(1_000, 2_000), Some(&t), &[], 0, false);
        assert_eq!(whole.parts, vec![(cause(Class::Softirq, "vec3"), 1_000)]);
    }

    #[test]
    fn the_idle_task_and_latlab_threads_are_not_preemption() {
        let t = tl(vec![
            (0, 100, sw(task("latlab-probe-rx", 7), task("swapper/0", 0))),
            (0, 200, sw(task("swapper/0", 0), task("kworker/0:1", 30))),
            (
                0,
                300,
                sw(task("kworker/0:1", 30), task("latlab-probe-tx", 8)),
            ),
            (1, 150, sw(task("cc1", 40), task("latlab-nf-a", 9))),
        ]);
        let s = split_path(&pw(0, 400), Some(&t), &[], 0, false);
        // CPU 1 ran cc1 from the window's start to 150 (its first switch), CPU 0 the
        // kworker 200..300; idle 100..200 is nobody's
        assert_eq!(
            s.parts,
            vec![
                (cause(Class::Preempted, "cc1"), 150),
                (cause(Class::Unexplained, ""), 150),
                (cause(Class::Preempted, "kworker/0:1"), 100),
            ]
        );
    }

    #[test]
    fn overlapping_windows_split_as_each_alone_does() {
        // windows that overlap one another (a generator that fell behind) are tallied from
        // one cut of their union; each split must be what the window alone gives
        let t = two_cpus();
        let stalls = two_stalls();
        let mut windows: Vec<PathWindow> = (0..40u64)
            .map(|k| pw(800 + 70 * k, 1_500 + 90 * k))
            .collect();
        windows.push(PathWindow {
            cpus: vec![1],
            ..pw(900, 2_000)
        });
        windows.push(pw(5_000, 5_000));
        let o = AttributeOptions {
            tsc_hz: 1_000_000_000,
            base_ticks: 120,
            worst: 3,
            lost_events: 0,
            missing_events: vec![],
            unavailable: None,
        };
        let (_, splits) = attribute_paths(&windows, Some(&t), &stalls, &o);
        for (w, s) in windows.iter().zip(&splits) {
            assert_eq!(*s, split_path(w, Some(&t), &stalls, 120, false), "{w:?}");
        }
        assert!(splits.iter().any(|s| s.parts.len() >= 4));
    }

    #[test]
    fn an_attribution_of_paths_sums_its_causes_to_the_excess() {
        let t = two_cpus();
        let windows = [pw(900, 2_000), pw(2_900, 3_500), pw(5_000, 5_100)];
        let stalls = [Stall {
            cpu: 0,
            start: 3_000,
            end: 3_400,
        }];
        let o = AttributeOptions {
            tsc_hz: 1_000_000_000,
            base_ticks: 100,
            worst: 2,
            lost_events: 0,
            missing_events: vec![],
            unavailable: None,
        };
        let (a, splits) = attribute_paths(&windows, Some(&t), &stalls, &o);
        assert!(a.complete);
        assert_eq!(a.windows, 3);
        assert_eq!(a.excess_ns, 1_000 + 500);
        assert_eq!(a.causes.iter().map(|c| c.time_ns).sum::<u64>(), a.excess_ns);
        assert_eq!(a.class_time_ns("outside_kernel"), 400);
        assert_eq!(splits[2].excess(), 0);
        assert_eq!(a.worst.len(), 2);
        assert_eq!(a.worst[0].duration_ns, 1_100);
        assert_eq!(a.worst[0].cpu, 0);
        assert!(a.worst[0]
            .events
            .iter()
            .any(|e| e.starts_with("CPU 1: +150ns softirq (NET_RX)")));
        assert!(a.worst[0].spans.iter().any(|s| s.class == "preempted"
            && s.name == "rustc"
            && (s.start_ns, s.end_ns) == (400, 900)));
        assert_eq!(a.worst[1].events, vec!["no kernel event on CPU 0, 1"]);
        // without kernel events: all unexplained, and it says why
        let o = AttributeOptions {
            unavailable: Some("not root".into()),
            ..o
        };
        let (a, _) = attribute_paths(&windows, None, &stalls, &o);
        assert!(!a.complete);
        assert_eq!(a.explained_ns, 0);
        assert_eq!(a.excess_ns, 1_500);
    }
}

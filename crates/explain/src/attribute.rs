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
use latlab_core::parse::Percentile;
use latlab_core::results::{Attribution, Band, CauseSpan, CauseTime, WorstWindow};
use latlab_core::stats::is_supported;
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

pub(crate) fn ns(ticks: u64, hz: u64) -> u64 {
    if hz == 0 {
        return 0;
    }
    (u128::from(ticks) * 1_000_000_000 / u128::from(hz)) as u64
}

pub(crate) fn cause_time(c: &Cause, count: u64, ticks: u64, hz: u64) -> CauseTime {
    CauseTime::new(c.class.as_str(), &*c.name, count, ns(ticks, hz))
}

/// The causes of `splits` ranked by time (largest first, then by count), each with the
/// number of windows it overlapped; and the total and explained excess, ticks. The one
/// ranking of an attribution: the whole run's causes and each band's come from here.
pub(crate) fn aggregate<'a>(
    splits: impl Iterator<Item = &'a WindowSplit>,
    hz: u64,
) -> (Vec<CauseTime>, u64, u64) {
    let mut totals: BTreeMap<&Cause, (u64, u64)> = BTreeMap::new();
    let (mut excess, mut explained) = (0u64, 0u64);
    for s in splits {
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
        .map(|(c, (n, t))| cause_time(c, *n, *t, hz))
        .collect();
    causes.sort_by(|a, b| b.time_ns.cmp(&a.time_ns).then(b.count.cmp(&a.count)));
    (causes, excess, explained)
}

/// The edges of the percentile bands: p90, p99, p99.9, p99.99 (the last band is open).
pub const BAND_EDGES: [(u64, u64); 4] = [(9, 10), (99, 100), (999, 1000), (9999, 10000)];

/// The windows by length in bands between [`BAND_EDGES`]. Windows are ranked by length
/// (ties in the order given); with `n` windows the one at 1-based rank `r` lies in the band
/// `(lo, hi]` when `rank(lo) < r <= rank(hi)`, `rank(p) = ceil(n·p)` as for every latlab
/// percentile, so each window above p90 is in exactly one band. A band is supported when
/// `n` supports both its edges (at least 10 windows beyond each).
pub fn bands(splits: &[WindowSplit], hz: u64) -> Vec<Band> {
    let n = splits.len() as u64;
    let mut order: Vec<usize> = (0..splits.len()).collect();
    order.sort_by_key(|&i| splits[i].window.end.saturating_sub(splits[i].window.start));
    let edge = |(num, den): (u64, u64)| Percentile::from_fraction(num, den).expect("a valid edge");
    let rank = |p: Percentile| if n == 0 { 0 } else { p.rank(n) };
    (0..BAND_EDGES.len())
        .map(|b| {
            let lo = edge(BAND_EDGES[b]);
            let hi = BAND_EDGES.get(b + 1).map(|&e| edge(e));
            let (from, to) = (rank(lo) as usize, hi.map_or(n, rank) as usize);
            let members: Vec<&WindowSplit> = order[from.min(to)..to]
                .iter()
                .map(|&i| &splits[i])
                .collect();
            let len = |s: &&WindowSplit| ns(s.window.end.saturating_sub(s.window.start), hz);
            let (causes, excess, _) = aggregate(members.iter().copied(), hz);
            Band {
                from: lo.to_string(),
                to: hi.map(|p| p.to_string()).unwrap_or_default(),
                supported: is_supported(lo, n) && hi.map_or(true, |p| is_supported(p, n)),
                windows: members.len() as u64,
                min_ns: members.first().map(len).unwrap_or(0),
                max_ns: members.last().map(len).unwrap_or(0),
                excess_ns: ns(excess, hz),
                causes,
            }
        })
        .collect()
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
    let a = assemble(&splits, timeline.is_some(), o, |i| {
        worst_window(&splits[i], timeline, o.tsc_hz)
    });
    (a, splits)
}

/// The stored attribution of `splits`: causes ranked, totals, bands, and the `o.worst`
/// longest windows as `worst_of` describes the one at each index (in `splits`' order on
/// ties).
pub(crate) fn assemble(
    splits: &[WindowSplit],
    has_timeline: bool,
    o: &AttributeOptions,
    worst_of: impl Fn(usize) -> WorstWindow,
) -> Attribution {
    let (causes, excess, explained) = aggregate(splits.iter(), o.tsc_hz);
    let mut order: Vec<usize> = (0..splits.len()).collect();
    let len = |s: &WindowSplit| s.window.end.saturating_sub(s.window.start);
    order.sort_by_key(|&i| std::cmp::Reverse(len(&splits[i])));
    let worst = order.into_iter().take(o.worst).map(worst_of).collect();
    Attribution {
        complete: o.lost_events == 0 && has_timeline && o.unavailable.is_none(),
        lost_events: o.lost_events,
        windows: splits.len() as u64,
        excess_ns: ns(excess, o.tsc_hz),
        explained_ns: ns(explained, o.tsc_hz),
        causes,
        worst,
        missing_events: o.missing_events.clone(),
        unavailable: o.unavailable.clone(),
        bands: bands(splits, o.tsc_hz),
        steal: Vec::new(),
        reader: None,
    }
}

/// A kernel interval under a window as one line: `+1.2us irq (eth0) for 300 ns`.
pub(crate) fn event_line(iv: &crate::timeline::Interval, start: u64, hz: u64) -> String {
    let off = iv.start as i128 - start as i128;
    let off_ns = (off.unsigned_abs() * 1_000_000_000 / u128::from(hz.max(1))) as u64;
    format!(
        "{}{} {} for {} ns",
        if off < 0 { "-" } else { "+" },
        latlab_core::units::format_ns(off_ns as f64),
        iv.cause,
        ns(iv.end - iv.start, hz)
    )
}

/// Most events listed under one worst window (the rest are counted).
pub const MAX_WORST_EVENTS: usize = 24;

pub(crate) fn worst_window(s: &WindowSplit, timeline: Option<&Timeline>, hz: u64) -> WorstWindow {
    let w = s.window;
    let mut events = Vec::new();
    let mut spans: Vec<CauseSpan> = Vec::new();
    if let Some(c) = timeline.and_then(|t| t.cpu(w.cpu)) {
        for seg in c.segments_in(w.start, w.end) {
            let cause = &c.intervals[seg.interval].cause;
            let (a, b) = (
                ns(seg.start.max(w.start) - w.start, hz),
                ns(seg.end.min(w.end) - w.start, hz),
            );
            match spans.last_mut() {
                // adjacent pieces of one cause are one span
                Some(l)
                    if l.end_ns == a
                        && l.class == cause.class.as_str()
                        && *l.name == *cause.name =>
                {
                    l.end_ns = b;
                }
                _ => spans.push(CauseSpan {
                    class: cause.class.as_str().to_string(),
                    name: cause.name.to_string(),
                    start_ns: a,
                    end_ns: b,
                }),
            }
        }
        let overlapping: Vec<_> = c.intervals_in(w.start, w.end).collect();
        for iv in overlapping.iter().take(MAX_WORST_EVENTS) {
            events.push(event_line(iv, w.start, hz));
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
    worst_record(s, events, spans, hz)
}

/// A split as a stored worst window, with the event lines and spans under it.
/// Most spans kept under one worst window. A window of a generator that fell behind is
/// hundreds of milliseconds long with tens of thousands of spans (64,000 in each of the
/// ten worst windows of a 100 kpps run: a 100-MB result and a table cell nobody reads);
/// the longest are kept, the rest counted.
pub const MAX_WORST_SPANS: usize = 200;

/// `spans` capped at [`MAX_WORST_SPANS`]: the longest (the earlier on a tie), in time
/// order; and how many were left out and their time, ns.
fn cap_spans(mut spans: Vec<CauseSpan>) -> (Vec<CauseSpan>, u64, u64) {
    if spans.len() <= MAX_WORST_SPANS {
        return (spans, 0, 0);
    }
    spans.sort_by(|a, b| {
        (b.end_ns - b.start_ns)
            .cmp(&(a.end_ns - a.start_ns))
            .then(a.start_ns.cmp(&b.start_ns))
    });
    let rest = spans.split_off(MAX_WORST_SPANS);
    spans.sort_by_key(|s| (s.start_ns, s.end_ns));
    let time = rest.iter().map(|s| s.end_ns - s.start_ns).sum();
    (spans, rest.len() as u64, time)
}

pub(crate) fn worst_record(
    s: &WindowSplit,
    events: Vec<String>,
    spans: Vec<CauseSpan>,
    hz: u64,
) -> WorstWindow {
    let w = s.window;
    let (spans, spans_omitted, spans_omitted_ns) = cap_spans(spans);
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
        spans,
        spans_omitted,
        spans_omitted_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worst_window_keeps_its_longest_spans_in_time_order_and_counts_the_rest() {
        let span = |start_ns: u64, len: u64| CauseSpan {
            class: "softirq".into(),
            name: "NET_RX".into(),
            start_ns,
            end_ns: start_ns + len,
        };
        // 1,000 spans of 1 µs, every 7th of 5 µs (143 of them), and one of 50 µs
        let mut spans: Vec<CauseSpan> = (0..1_000u64)
            .map(|k| span(k * 100_000, if k % 7 == 0 { 5_000 } else { 1_000 }))
            .collect();
        spans.push(span(200_000_000, 50_000));
        let (kept, omitted, omitted_ns) = cap_spans(spans.clone());
        assert_eq!(kept.len(), MAX_WORST_SPANS);
        assert_eq!(omitted, 1_001 - MAX_WORST_SPANS as u64);
        let total: u64 = spans.iter().map(|s| s.end_ns - s.start_ns).sum();
        let kept_ns: u64 = kept.iter().map(|s| s.end_ns - s.start_ns).sum();
        assert_eq!(kept_ns + omitted_ns, total);
        // the longest all stay: the 50-µs one, the 143 of 5 µs, then the earliest 1-µs ones
        assert!(kept.iter().any(|s| s.end_ns - s.start_ns == 50_000));
        assert_eq!(
            kept.iter()
                .filter(|s| s.end_ns - s.start_ns == 5_000)
                .count(),
            143
        );
        assert!(kept.windows(2).all(|p| p[0].start_ns <= p[1].start_ns));
        // under the cap nothing changes
        let few = spans[..10].to_vec();
        assert_eq!(cap_spans(few.clone()), (few, 0, 0));
        // and the record carries the counts
        let split = WindowSplit {
            window: Window {
                cpu: 0,
                start: 0,
                end: 300_000_000,
            },
            parts: vec![],
        };
        let w = worst_record(&split, vec![], spans, 1_000_000_000);
        assert_eq!((w.spans.len(), w.spans_omitted), (MAX_WORST_SPANS, omitted));
    }
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
                complete: true,
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
            a.worst[1].spans,
            vec![CauseSpan {
                class: "preempted".into(),
                name: "hog".into(),
                start_ns: 10,
                end_ns: 310,
            }]
        );
        assert!(a.worst[0].spans.is_empty(), "no kernel event under it");
        // four windows: every band is empty and unsupported, but listed
        assert_eq!(a.bands.len(), 4);
        assert!(a.bands.iter().all(|b| !b.supported && b.windows == 0));
        assert_eq!(
            a.worst[1].events,
            vec![
                "+10ns preempted by task (hog) for 300 ns",
                "CPU 0: no kernel event meanwhile"
            ]
        );
    }

    fn synthetic(n: u64, cause: impl Fn(u64) -> Cause) -> Vec<WindowSplit> {
        // window i (1..=n) lasts i ticks and all of it is `cause(i)`; given longest first
        (1..=n)
            .rev()
            .map(|i| WindowSplit {
                window: w(1, i * 10_000, i * 10_000 + i),
                parts: vec![(cause(i), i)],
            })
            .collect()
    }

    #[test]
    fn bands_rank_windows_by_length_between_the_percentiles() {
        let irq = Cause::new(Class::Irq, "eth0");
        let hog = Cause::new(Class::Preempted, "hog");
        let splits = synthetic(1_000, |i| if i > 990 { irq.clone() } else { hog.clone() });
        let b = bands(&splits, 1_000_000_000);
        let labels: Vec<String> = b.iter().map(Band::label).collect();
        assert_eq!(
            labels,
            ["p90–p99", "p99–p99.9", "p99.9–p99.99", "above p99.99"]
        );
        // ranks 901..=990: 90 windows, all hog
        assert_eq!((b[0].windows, b[0].min_ns, b[0].max_ns), (90, 901, 990));
        assert_eq!(b[0].excess_ns, (901..=990).sum::<u64>());
        assert_eq!(
            b[0].causes,
            vec![CauseTime::new("preempted", "hog", 90, b[0].excess_ns)]
        );
        // 991..=999, then the longest alone, then nothing above p99.99 of 1000
        assert_eq!((b[1].windows, b[1].min_ns, b[1].max_ns), (9, 991, 999));
        assert_eq!(b[1].causes[0].class, "irq");
        assert_eq!(b[1].causes[0].time_ns, (991..=999).sum::<u64>());
        assert_eq!((b[2].windows, b[2].max_ns), (1, 1_000));
        assert_eq!((b[3].windows, b[3].excess_ns), (0, 0));
        assert!(b[3].causes.is_empty());
        // 1000 windows support p90 and p99 (10 beyond each), not p99.9
        let sup: Vec<bool> = b.iter().map(|b| b.supported).collect();
        assert_eq!(sup, [true, false, false, false]);
        // each window above p90 in exactly one band
        assert_eq!(b.iter().map(|b| b.windows).sum::<u64>(), 100);
    }

    #[test]
    fn enough_windows_support_every_band_and_causes_rank_within_one() {
        let mixed = |i: u64| {
            if i % 3 == 0 {
                Cause::new(Class::Timer, "tick")
            } else {
                Cause::new(Class::OutsideKernel, "")
            }
        };
        let b = bands(&synthetic(100_000, mixed), 1_000_000_000);
        assert!(b.iter().all(|b| b.supported), "{b:?}");
        assert_eq!(
            b.iter().map(|b| b.windows).collect::<Vec<_>>(),
            [9_000, 900, 90, 10]
        );
        let top = &b[3];
        assert_eq!((top.min_ns, top.max_ns), (99_991, 100_000));
        // 99991..=100000: multiples of 3 are 99993, 99996, 99999
        let timer: u64 = 99_993 + 99_996 + 99_999;
        assert_eq!(top.causes[0].class, "outside_kernel");
        assert_eq!(top.causes[0].count, 7);
        assert_eq!(top.causes[1].time_ns, timer);
        assert_eq!(top.causes[0].time_ns + timer, top.excess_ns);
        assert!(bands(&[], 1).iter().all(|b| b.windows == 0 && !b.supported));
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

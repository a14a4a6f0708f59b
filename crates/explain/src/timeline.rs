//! Per-CPU cause intervals built from decoded kernel events. Pure.
//!
//! Entry/exit pairs (IRQ handlers, softirqs, `irq_vectors`, hrtimer expiry, work items)
//! become intervals that nest: an IRQ inside a softirq sits one level deeper, and the
//! innermost interval owns the time it covers ([`CpuTimeline::segments`]). An exit whose
//! entry came before the buffer starts from the previous event on that CPU (or the window
//! start); an entry still open at the end is clipped to the window end. An NMI is the
//! `delta_ns` before its event. For the watched thread (`tid`) a `sched_switch` away from
//! it opens "preempted by task (comm)" intervals, one per task that ran, until it is
//! switched back in; they are the outermost level, so an IRQ during a preemption counts as
//! the IRQ.

pub use crate::class::{label, Class, Watch};
use crate::decode::{Event, EventKind};
use crate::runnable::{self, Switches};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// A cause: a class and a name within it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cause {
    /// The class.
    pub class: Class,
    /// The name (empty for `outside_kernel` and `unexplained`); shared, so that the
    /// millions of intervals of a long run hold a reference each, not a copy.
    pub name: Arc<str>,
}

impl Cause {
    /// A cause of `class` named `name`.
    pub fn new(class: Class, name: impl Into<Arc<str>>) -> Cause {
        Cause {
            class,
            name: name.into(),
        }
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&label(self.class.as_str(), &self.name))
    }
}

/// One cause interval on one CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interval {
    /// Start, raw TSC.
    pub start: u64,
    /// End, raw TSC (`>= start`).
    pub end: u64,
    /// What it was.
    pub cause: Cause,
    /// Nesting level: 0 for preemption, 1 for the outermost kernel context, deeper inside.
    pub depth: u32,
}

/// A stretch of a CPU's time owned by one interval (the innermost covering it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Start, raw TSC.
    pub start: u64,
    /// End, raw TSC.
    pub end: u64,
    /// Index into [`CpuTimeline::intervals`].
    pub interval: usize,
}

/// One CPU's causes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuTimeline {
    /// The CPU.
    pub cpu: u32,
    /// Every interval, sorted by start.
    pub intervals: Vec<Interval>,
    /// Non-overlapping segments, sorted, each owned by its innermost interval.
    pub segments: Vec<Segment>,
    /// Timestamps of every event on this CPU, sorted.
    pub events: Vec<u64>,
}

impl CpuTimeline {
    /// Whether any kernel event on this CPU lies in `[start, end]`.
    pub fn has_event_in(&self, start: u64, end: u64) -> bool {
        let i = self.events.partition_point(|&t| t < start);
        self.events.get(i).is_some_and(|&t| t <= end)
    }

    /// How many events this CPU logged in `[start, end]`.
    pub fn events_in(&self, start: u64, end: u64) -> usize {
        let a = self.events.partition_point(|&t| t < start);
        let b = self.events.partition_point(|&t| t <= end);
        b - a
    }

    /// The first event on this CPU in `[start, end]`.
    pub fn first_event_in(&self, start: u64, end: u64) -> Option<u64> {
        let i = self.events.partition_point(|&t| t < start);
        self.events.get(i).copied().filter(|&t| t <= end)
    }

    /// The segments overlapping `[start, end)`.
    pub fn segments_in(&self, start: u64, end: u64) -> &[Segment] {
        // segments are sorted and disjoint, so their ends are sorted too
        let a = self.segments.partition_point(|s| s.end <= start);
        let b = self.segments.partition_point(|s| s.start < end);
        &self.segments[a..b.max(a)]
    }

    /// The intervals overlapping `[start, end)`.
    pub fn intervals_in(&self, start: u64, end: u64) -> impl Iterator<Item = &Interval> {
        let b = self.intervals.partition_point(|iv| iv.start < end);
        self.intervals[..b].iter().filter(move |iv| iv.end > start)
    }
}

/// The causes of every traced CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timeline {
    /// Per CPU, sorted by CPU.
    pub cpus: Vec<CpuTimeline>,
}

impl Timeline {
    /// The timeline of `cpu`, if it was traced.
    pub fn cpu(&self, cpu: u32) -> Option<&CpuTimeline> {
        self.cpus.iter().find(|c| c.cpu == cpu)
    }
}

/// How to build a timeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimelineOptions {
    /// The window of interest, raw TSC: open intervals are clipped to it.
    pub window: (u64, u64),
    /// The watched thread: switches away from it open preemption intervals.
    pub tid: Option<i32>,
    /// TSC rate, Hz (converts NMI durations).
    pub tsc_hz: u64,
    /// The CPUs traced (a CPU without events still gets an empty timeline).
    pub cpus: Vec<u32>,
    /// Every event on the traced CPUs was recorded: none lost, no switch filtered out in
    /// the kernel. Only then is a CPU's silence evidence ([`crate::runnable`]: a CPU
    /// that logged nothing past its tick while a task ran there was not running).
    pub complete: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Key {
    Irq(u32),
    Softirq(u32),
    Vector(String),
    Hrtimer,
    Work,
}

struct Open {
    key: Key,
    cause: Cause,
    start: u64,
}

/// The cause class of an `irq_vectors` vector kind.
pub fn vector_cause(vector: &str) -> Cause {
    Cause::new(vector_class(vector), vector)
}

fn vector_class(vector: &str) -> Class {
    match vector {
        "local_timer" => Class::Timer,
        "reschedule"
        | "call_function"
        | "call_function_single"
        | "irq_work"
        | "x86_platform_ipi" => Class::Ipi,
        _ => Class::Irq,
    }
}

/// One [`Cause`] per distinct class and name of a build, shared by its intervals (a
/// clone is a reference count, not a copy of the name).
#[derive(Default)]
struct Causes(HashMap<Class, HashMap<Box<str>, Cause>>);

impl Causes {
    fn get(&mut self, class: Class, name: &str) -> Cause {
        let m = self.0.entry(class).or_default();
        if let Some(c) = m.get(name) {
            return c.clone();
        }
        let c = Cause::new(class, name);
        m.insert(name.into(), c.clone());
        c
    }
}

/// Builds every CPU's timeline from `events` (any order).
pub fn build(events: &[Event], opts: &TimelineOptions) -> Timeline {
    build_with(events, opts, None)
}

/// Builds every CPU's timeline for a measurement of several threads (`opts.tid` is
/// ignored): on each CPU, every stretch in which a task that is neither watched nor the
/// idle task (pid 0) runs is *preempted by task (comm)* — whether or not a watched thread
/// was waiting for that CPU just then; the attribution of a window decides which CPUs
/// matter. Before a CPU's first switch, the task it switches away from is taken to have
/// run since the window's start.
pub fn build_watching(events: &[Event], opts: &TimelineOptions, watch: &Watch) -> Timeline {
    build_with(events, opts, Some(watch))
}

fn build_with(events: &[Event], opts: &TimelineOptions, watch: Option<&Watch>) -> Timeline {
    let mut cpus: Vec<u32> = events.iter().map(|e| e.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    build_per_cpu(&cpus, opts, watch, |cpu| {
        events
            .iter()
            .filter(|e| e.cpu == cpu)
            .map(|e| (e.tsc, &e.kind))
            .collect()
    })
}

/// Builds every CPU's timeline (those of `opts.cpus` and `cpus`) from the events
/// `of(cpu)` gives for each, `(timestamp, kind)` in any order (sorted here, stably).
pub(crate) fn build_per_cpu<'a>(
    cpus: &[u32],
    opts: &TimelineOptions,
    watch: Option<&Watch>,
    of: impl Fn(u32) -> Vec<(u64, &'a EventKind)>,
) -> Timeline {
    let mut all: Vec<u32> = opts.cpus.clone();
    all.extend_from_slice(cpus);
    all.sort_unstable();
    all.dedup();
    let mut causes = Causes::default();
    let sorted = |cpu: u32| {
        let mut evs = of(cpu);
        evs.sort_by_key(|e| e.0);
        evs
    };
    // Silence is evidence only where every event was recorded, and only for a
    // measurement of several threads (a single thread's own gaps already say when it lost
    // its CPU). The period takes a pass of its own over the CPUs, so that one CPU's events
    // at a time are held, as without it.
    let period = (opts.complete && watch.is_some())
        .then(|| {
            let mut d = Vec::new();
            for &cpu in &all {
                runnable::tick_spacings(&sorted(cpu), opts.tsc_hz / 10, &mut d);
            }
            runnable::tick_period(d)
        })
        .flatten();
    let cpus = all
        .into_iter()
        .map(|cpu| {
            let evs = sorted(cpu);
            let mut c = build_cpu(cpu, &evs, opts, watch, &mut causes);
            if let Some(p) = period {
                add_silence(&mut c, &evs, p, opts.window, &mut causes);
            }
            c
        })
        .collect();
    Timeline { cpus }
}

fn build_cpu(
    cpu: u32,
    evs: &[(u64, &EventKind)],
    opts: &TimelineOptions,
    watch: Option<&Watch>,
    cz: &mut Causes,
) -> CpuTimeline {
    let (w0, w1) = opts.window;
    let mut out: Vec<Interval> = Vec::new();
    let mut stack: Vec<Open> = Vec::new();
    let mut prev_tsc: Option<u64> = None;
    // a stretch in which the watched thread(s) could not run: (since, why)
    let mut away: Option<(u64, Cause)> = None;
    let mut switches = Switches::default();
    // whether the hrtimer that last ran here is the tick (which wakes nobody)
    let mut tick = false;
    // work items whose kworker was switched out mid-item: (kworker pid, the item)
    let mut suspended_work: Vec<(i32, Cause)> = Vec::new();
    let push = |out: &mut Vec<Interval>, start: u64, end: u64, cause: Cause, depth: u32| {
        let (s, e) = (start.max(w0), end.min(w1));
        if e > s {
            out.push(Interval {
                start: s,
                end: e,
                cause,
                depth,
            });
        }
    };
    for &(t, kind) in evs {
        let open = |key: Key, cause: Cause, stack: &mut Vec<Open>| {
            stack.push(Open {
                key,
                cause,
                start: t,
            })
        };
        let close = |key: Key, fallback: Cause, stack: &mut Vec<Open>, out: &mut Vec<Interval>| {
            if let Some(p) = stack.iter().rposition(|o| o.key == key) {
                // anything opened above it and never closed ends here too
                while stack.len() > p {
                    let depth = stack.len() as u32;
                    let o = stack.pop().expect("len > p");
                    push(out, o.start, t, o.cause, depth);
                }
            } else {
                // its entry predates the buffer (or was lost)
                let start = prev_tsc.unwrap_or(w0);
                push(out, start, t, fallback, stack.len() as u32 + 1);
            }
        };
        match kind {
            EventKind::IrqEntry { irq, name } => {
                open(Key::Irq(*irq), cz.get(Class::Irq, name), &mut stack)
            }
            EventKind::IrqExit { irq } => {
                close(
                    Key::Irq(*irq),
                    cz.get(Class::Irq, &format!("irq {irq}")),
                    &mut stack,
                    &mut out,
                );
                switches.context_end(t, false, false);
            }
            EventKind::SoftirqEntry { vec, action } => open(
                Key::Softirq(*vec),
                cz.get(Class::Softirq, action),
                &mut stack,
            ),
            EventKind::SoftirqExit { vec } => {
                close(
                    Key::Softirq(*vec),
                    cz.get(Class::Softirq, &format!("vec{vec}")),
                    &mut stack,
                    &mut out,
                );
                switches.context_end(t, true, false);
            }
            EventKind::VectorEntry { vector } => open(
                Key::Vector(vector.clone()),
                cz.get(vector_class(vector), vector),
                &mut stack,
            ),
            EventKind::VectorExit { vector } => {
                close(
                    Key::Vector(vector.clone()),
                    cz.get(vector_class(vector), vector),
                    &mut stack,
                    &mut out,
                );
                // the timer interrupt that ran only the tick woke nobody
                switches.context_end(t, false, vector == "local_timer" && tick);
            }
            EventKind::HrtimerEntry { function } => {
                tick = runnable::is_tick(function);
                open(Key::Hrtimer, cz.get(Class::Timer, function), &mut stack)
            }
            EventKind::HrtimerExit => {
                close(
                    Key::Hrtimer,
                    cz.get(Class::Timer, "hrtimer"),
                    &mut stack,
                    &mut out,
                );
                switches.context_end(t, false, tick);
            }
            EventKind::WorkStart { function } => {
                open(Key::Work, cz.get(Class::Workqueue, function), &mut stack)
            }
            EventKind::WorkEnd => close(
                Key::Work,
                cz.get(Class::Workqueue, "work"),
                &mut stack,
                &mut out,
            ),
            EventKind::Nmi { handler, delta_ns } => {
                let ticks =
                    (u128::from(*delta_ns) * u128::from(opts.tsc_hz) / 1_000_000_000) as u64;
                push(
                    &mut out,
                    t.saturating_sub(ticks),
                    t,
                    cz.get(Class::Nmi, handler),
                    stack.len() as u32 + 1,
                );
            }
            EventKind::Switch {
                prev,
                prev_state,
                next,
            } => {
                // A work item runs in its kworker's process context: it owns the CPU only
                // while that kworker runs. Switched out (it slept on I/O, or was
                // preempted), the item ends here and resumes when the kworker comes back;
                // an item that migrates and ends elsewhere no longer spans the CPU. (Watched
                // threads or not: before 2026-11-28 the probe's path skipped this, and a
                // writeback item whose kworker slept owned CPU 0 for the 56 s left of a run.)
                while let Some(p) = stack.iter().rposition(|o| o.key == Key::Work) {
                    let o = stack.remove(p);
                    push(&mut out, o.start, t, o.cause.clone(), p as u32 + 1);
                    suspended_work.retain(|(pid, _)| *pid != prev.pid);
                    suspended_work.push((prev.pid, o.cause));
                }
                if let Some(i) = suspended_work.iter().position(|(pid, _)| *pid == next.pid) {
                    let (_, cause) = suspended_work.remove(i);
                    open(Key::Work, cause, &mut stack);
                }
                let c = switches.switch(t, (prev, prev_state, next), watch, opts.tid);
                if let Some((since, (class, name))) = c.before {
                    push(&mut out, since.unwrap_or(w0), t, cz.get(class, &name), 0);
                }
                let now = c.now.map(|(class, name)| cz.get(class, &name));
                away = match (away.take(), now) {
                    // one cause on both sides (a throttling through several tasks): one
                    // interval
                    (Some((since, cause)), Some(n)) if cause == n => Some((since, cause)),
                    (Some((since, cause)), n) => {
                        push(&mut out, since, t, cause, 0);
                        n.map(|n| (t, n))
                    }
                    (None, n) => n.map(|n| (t, n)),
                };
            }
            EventKind::Wakeup { .. } | EventKind::NapiPoll { .. } | EventKind::Other { .. } => {}
        }
        prev_tsc = Some(t);
    }
    while let Some(o) = stack.pop() {
        let depth = stack.len() as u32 + 1;
        push(&mut out, o.start, w1, o.cause, depth);
    }
    if let Some((since, cause)) = away {
        push(&mut out, since, w1, cause, 0);
    }
    out.sort_by_key(|iv| (iv.start, iv.depth));
    let segments = flatten(&out);
    CpuTimeline {
        cpu,
        intervals: out,
        segments,
        events: evs.iter().map(|e| e.0).collect(),
    }
}

/// Adds the stretches in which `c`'s CPU was not running ([`runnable::silent_stretches`])
/// as the innermost intervals, and re-cuts its segments.
fn add_silence(
    c: &mut CpuTimeline,
    evs: &[(u64, &EventKind)],
    period: u64,
    (w0, w1): (u64, u64),
    cz: &mut Causes,
) {
    let silent = runnable::silent_stretches(evs, period);
    if silent.is_empty() {
        return;
    }
    let cause = cz.get(Class::OutsideKernel, runnable::VCPU_NOT_RUNNING);
    for (a, b) in silent {
        let (a, b) = (a.max(w0), b.min(w1));
        if b > a {
            c.intervals.push(Interval {
                start: a,
                end: b,
                cause: cause.clone(),
                depth: u32::MAX,
            });
        }
    }
    c.intervals.sort_by_key(|iv| (iv.start, iv.depth));
    c.segments = flatten(&c.intervals);
}

/// Splits possibly nested intervals into disjoint segments, each owned by the deepest
/// interval covering it (the later-starting one on a tie).
fn flatten(ivs: &[Interval]) -> Vec<Segment> {
    let mut bounds: Vec<u64> = ivs.iter().flat_map(|iv| [iv.start, iv.end]).collect();
    bounds.sort_unstable();
    bounds.dedup();
    let mut segs: Vec<Segment> = Vec::new();
    let mut active: Vec<usize> = Vec::new();
    let mut next = 0;
    for w in bounds.windows(2) {
        let (a, b) = (w[0], w[1]);
        active.retain(|&i| ivs[i].end > a);
        while next < ivs.len() && ivs[next].start <= a {
            if ivs[next].end > a {
                active.push(next);
            }
            next += 1;
        }
        let Some(&owner) = active
            .iter()
            .max_by_key(|&&i| (ivs[i].depth, ivs[i].start, i))
        else {
            continue;
        };
        match segs.last_mut() {
            Some(s) if s.interval == owner && s.end == a => s.end = b,
            _ => segs.push(Segment {
                start: a,
                end: b,
                interval: owner,
            }),
        }
    }
    segs
}

/// Tests: the timeline of CPUs 0 and 1 over `[0, end)` with latlab's threads watched by
/// name, as the probe's path builds it.
#[cfg(test)]
pub(crate) fn watching_latlab(events: &[Event], end: u64) -> Timeline {
    build_watching(
        events,
        &TimelineOptions {
            window: (0, end),
            tid: None,
            tsc_hz: 1_000_000_000,
            cpus: vec![0, 1],
            complete: true,
        },
        &Watch {
            tids: vec![],
            comm_prefixes: vec!["latlab".into()],
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::Task;

    fn ev(cpu: u32, tsc: u64, kind: EventKind) -> Event {
        Event { cpu, tsc, kind }
    }
    /// The CPU's segments as (start, end, owning cause).
    fn owners(c: &CpuTimeline) -> Vec<(u64, u64, String)> {
        c.segments
            .iter()
            .map(|s| (s.start, s.end, c.intervals[s.interval].cause.to_string()))
            .collect()
    }
    fn opts(w: (u64, u64), tid: Option<i32>) -> TimelineOptions {
        TimelineOptions {
            window: w,
            tid,
            tsc_hz: 1_000_000_000,
            cpus: vec![],
            complete: true,
        }
    }
    fn sw(prev: (&str, i32), next: (&str, i32)) -> EventKind {
        let t = |(c, p): (&str, i32)| Task {
            comm: c.into(),
            pid: p,
            prio: 120,
        };
        EventKind::Switch {
            prev: t(prev),
            prev_state: "R".into(),
            next: t(next),
        }
    }

    #[test]
    fn nested_irq_inside_softirq_owns_its_time() {
        let evs = vec![
            ev(
                1,
                100,
                EventKind::SoftirqEntry {
                    vec: 3,
                    action: "NET_RX".into(),
                },
            ),
            ev(
                1,
                120,
                EventKind::IrqEntry {
                    irq: 36,
                    name: "virtio1".into(),
                },
            ),
            ev(1, 130, EventKind::IrqExit { irq: 36 }),
            ev(1, 200, EventKind::SoftirqExit { vec: 3 }),
        ];
        let tl = build(&evs, &opts((0, 1000), None));
        let c = tl.cpu(1).unwrap();
        assert_eq!(c.intervals.len(), 2);
        assert_eq!(
            owners(c),
            vec![
                (100, 120, "softirq (NET_RX)".to_string()),
                (120, 130, "irq (virtio1)".to_string()),
                (130, 200, "softirq (NET_RX)".to_string()),
            ]
        );
        assert_eq!(c.first_event_in(101, 1000), Some(120));
        assert_eq!(c.events_in(100, 130), 3);
        assert_eq!(c.events_in(201, 1000), 0);
        assert_eq!(c.first_event_in(201, 1000), None);
        assert!(c.has_event_in(125, 130) && !c.has_event_in(121, 129) && !c.has_event_in(201, 999));
    }

    #[test]
    fn a_work_item_owns_the_cpu_only_while_its_kworker_runs() {
        let work = |f: &str| EventKind::WorkStart { function: f.into() };
        let evs = vec![
            ev(1, 100, work("wb_workfn")),
            // the kworker sleeps on I/O: the item is suspended, a compiler runs
            ev(1, 150, sw(("kworker/u4:1", 7), ("rustc", 9))),
            ev(1, 300, sw(("rustc", 9), ("kworker/u4:1", 7))),
            ev(1, 350, EventKind::WorkEnd),
            // an item that migrates away and never ends here stops at the switch
            ev(1, 400, work("other_fn")),
            ev(1, 420, sw(("kworker/u4:2", 8), ("rustc", 9))),
        ];
        let tl = build(&evs, &opts((0, 1000), None));
        let c = tl.cpu(1).unwrap();
        let got: Vec<(u64, u64, String)> = c
            .intervals
            .iter()
            .map(|i| (i.start, i.end, i.cause.to_string()))
            .collect();
        assert_eq!(
            got,
            vec![
                (100, 150, "workqueue (wb_workfn)".to_string()),
                (300, 350, "workqueue (wb_workfn)".to_string()),
                (400, 420, "workqueue (other_fn)".to_string()),
            ]
        );
    }

    #[test]
    fn with_watched_threads_too_a_work_item_owns_the_cpu_only_while_its_kworker_runs() {
        // the probe's path (threads watched by name): a writeback item whose kworker sleeps
        // and then ends on another CPU must not own this CPU for the rest of the run
        let work = |f: &str| EventKind::WorkStart { function: f.into() };
        let evs = vec![
            ev(0, 100, sw(("latlab-probe-rx", 5), ("kworker/u4:1", 7))),
            ev(0, 110, work("wb_workfn")),
            ev(0, 150, sw(("kworker/u4:1", 7), ("latlab-probe-rx", 5))),
            ev(0, 300, sw(("latlab-probe-rx", 5), ("kworker/u4:1", 7))),
            ev(0, 320, EventKind::WorkEnd),
            ev(0, 400, work("wb_workfn")),
            ev(0, 420, sw(("kworker/u4:1", 7), ("latlab-probe-rx", 5))),
        ];
        let tl = watching_latlab(&evs, 100_000);
        assert_eq!(
            owners(tl.cpu(0).unwrap()),
            vec![
                (100, 110, "preempted by task (kworker/u4:1)".to_string()),
                (110, 150, "workqueue (wb_workfn)".to_string()),
                (300, 320, "workqueue (wb_workfn)".to_string()),
                (320, 400, "preempted by task (kworker/u4:1)".to_string()),
                (400, 420, "workqueue (wb_workfn)".to_string()),
            ]
        );
    }

    #[test]
    fn unmatched_edges_are_clipped_to_the_window() {
        let evs = vec![
            ev(0, 50, EventKind::HrtimerExit),
            ev(
                0,
                900,
                EventKind::VectorEntry {
                    vector: "local_timer".into(),
                },
            ),
        ];
        let tl = build(&evs, &opts((10, 1000), None));
        let c = tl.cpu(0).unwrap();
        assert_eq!(c.intervals[0].start, 10);
        assert_eq!(c.intervals[0].end, 50);
        assert_eq!(c.intervals[0].cause, Cause::new(Class::Timer, "hrtimer"));
        assert_eq!((c.intervals[1].start, c.intervals[1].end), (900, 1000));
        assert_eq!(
            c.intervals[1].cause,
            Cause::new(Class::Timer, "local_timer")
        );
    }

    #[test]
    fn preemption_names_each_task_that_ran() {
        let evs = vec![
            ev(1, 100, sw(("spin", 7), ("hog", 9))),
            ev(
                1,
                150,
                EventKind::VectorEntry {
                    vector: "reschedule".into(),
                },
            ),
            ev(
                1,
                160,
                EventKind::VectorExit {
                    vector: "reschedule".into(),
                },
            ),
            ev(1, 300, sw(("hog", 9), ("kworker/1:0", 11))),
            ev(
                1,
                320,
                EventKind::WorkStart {
                    function: "vmstat_update".into(),
                },
            ),
            ev(1, 340, EventKind::WorkEnd),
            ev(1, 350, sw(("kworker/1:0", 11), ("spin", 7))),
            ev(1, 800, sw(("spin", 7), ("late", 12))),
        ];
        let tl = build(&evs, &opts((0, 1000), Some(7)));
        let c = tl.cpu(1).unwrap();
        assert_eq!(
            owners(c),
            vec![
                (100, 150, "preempted by task (hog)".into()),
                (150, 160, "ipi (reschedule)".into()),
                (160, 300, "preempted by task (hog)".into()),
                (300, 320, "preempted by task (kworker/1:0)".into()),
                (320, 340, "workqueue (vmstat_update)".into()),
                (340, 350, "preempted by task (kworker/1:0)".into()),
                (800, 1000, "preempted by task (late)".into()),
            ]
        );
        // without a watched thread, switches make no intervals
        let tl = build(&evs, &opts((0, 1000), None));
        assert_eq!(tl.cpu(1).unwrap().intervals.len(), 2);
    }

    #[test]
    fn a_switch_in_before_any_switch_out_starts_at_the_window() {
        let evs = vec![ev(0, 40, sw(("other", 3), ("spin", 7)))];
        let tl = build(&evs, &opts((10, 100), Some(7)));
        let iv = &tl.cpu(0).unwrap().intervals[0];
        assert_eq!((iv.start, iv.end), (10, 40));
        assert_eq!(iv.cause, Cause::new(Class::Preempted, "other"));
    }

    #[test]
    fn nmi_covers_its_reported_duration() {
        let evs = vec![ev(
            0,
            5_000,
            EventKind::Nmi {
                handler: "perf".into(),
                delta_ns: 2_000,
            },
        )];
        let mut o = opts((0, 10_000), None);
        o.tsc_hz = 2_000_000_000; // 2 ticks per ns
        o.cpus = vec![0, 1];
        let tl = build(&evs, &o);
        let iv = &tl.cpu(0).unwrap().intervals[0];
        assert_eq!((iv.start, iv.end), (1_000, 5_000));
        assert!(tl.cpu(1).unwrap().intervals.is_empty(), "traced but quiet");
    }

    #[test]
    fn segment_and_interval_queries() {
        let evs = vec![
            ev(
                0,
                10,
                EventKind::IrqEntry {
                    irq: 1,
                    name: "a".into(),
                },
            ),
            ev(0, 20, EventKind::IrqExit { irq: 1 }),
            ev(
                0,
                40,
                EventKind::IrqEntry {
                    irq: 2,
                    name: "b".into(),
                },
            ),
            ev(0, 50, EventKind::IrqExit { irq: 2 }),
        ];
        let tl = build(&evs, &opts((0, 100), None));
        let c = tl.cpu(0).unwrap();
        assert_eq!(c.segments_in(15, 45).len(), 2);
        assert_eq!(c.segments_in(20, 40).len(), 0);
        assert_eq!(c.segments_in(0, 11).len(), 1);
        assert_eq!(c.intervals_in(19, 41).count(), 2);
    }
}

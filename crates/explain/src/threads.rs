//! Windows of several watched threads attributed as one: each window is split over the
//! timeline built for *its* thread (a switch away from that thread is *preempted by task*),
//! and the splits are aggregated into one attribution. `latlab sched` runs several
//! threads, often on one CPU; a single watched tid would call the other threads' gaps
//! unexplained.

use crate::attribute::{assemble, split, worst_window, Window, WindowSplit};
use crate::session::{ExplainOptions, KernelCollected};
use crate::timeline::{Cause, Timeline, TimelineOptions};
use latlab_core::results::Attribution;

/// A window of one thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadWindow {
    /// The thread's kernel id (None: no thread to watch, e.g. a gap of an unknown one).
    pub tid: Option<i32>,
    /// The window, on the thread's CPU.
    pub window: Window,
    /// The stretches of the window whose time counts, raw TSC `(start, end)` inside it;
    /// empty: the whole window. A missed deadline's window spans the job, but only the
    /// time the thread did not have the CPU in it (its gaps) is excess; each piece is
    /// split on its own (its baseline off each) and the parts add up.
    pub pieces: Vec<(u64, u64)>,
}

impl ThreadWindow {
    /// A window whose whole length counts.
    pub fn whole(tid: Option<i32>, window: Window) -> ThreadWindow {
        ThreadWindow {
            tid,
            window,
            pieces: Vec::new(),
        }
    }
}

/// Splits `tw` over `cpu`'s timeline: the whole window, or the sum of its pieces.
fn split_pieces(
    tw: &ThreadWindow,
    cpu: Option<&crate::timeline::CpuTimeline>,
    base: u64,
) -> WindowSplit {
    if tw.pieces.is_empty() {
        return split(tw.window, cpu, base);
    }
    let mut parts: Vec<(Cause, u64)> = Vec::new();
    for &(start, end) in &tw.pieces {
        let w = Window {
            cpu: tw.window.cpu,
            start,
            end: end.max(start),
        };
        for (c, t) in split(w, cpu, base).parts {
            match parts.iter_mut().find(|(pc, _)| *pc == c) {
                Some(p) => p.1 += t,
                None => parts.push((c, t)),
            }
        }
    }
    parts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    WindowSplit {
        window: tw.window,
        parts,
    }
}

/// What [`KernelCollected::attribute_threads`] returns.
#[derive(Clone, Debug, Default)]
pub struct ThreadsAttributed {
    /// The stored attribution over all windows.
    pub attribution: Attribution,
    /// Each window's split, in the order given.
    pub splits: Vec<WindowSplit>,
    /// Per watched tid (sorted), its timeline; empty without kernel events.
    pub timelines: Vec<(Option<i32>, Timeline)>,
    /// Kernel events decoded.
    pub events: u64,
    /// Lines that did not decode.
    pub malformed: u64,
}

impl ThreadsAttributed {
    /// The timeline window `i` was split over.
    pub fn timeline_of(&self, i: usize, windows: &[ThreadWindow]) -> Option<&Timeline> {
        let tid = windows.get(i)?.tid;
        self.timelines
            .iter()
            .find(|(t, _)| *t == tid)
            .map(|(_, tl)| tl)
    }
}

/// A piece of a window owned by one cause, raw TSC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CauseInterval {
    /// The CPU.
    pub cpu: u32,
    /// The cause.
    pub cause: Cause,
    /// Start, raw TSC.
    pub start: u64,
    /// End, raw TSC.
    pub end: u64,
}

/// The timeline's pieces under window `w`, clipped to it; adjacent pieces of one cause
/// are merged.
pub fn intervals_under(timeline: &Timeline, w: &Window) -> Vec<CauseInterval> {
    let mut out: Vec<CauseInterval> = Vec::new();
    let Some(c) = timeline.cpu(w.cpu) else {
        return out;
    };
    for s in c.segments_in(w.start, w.end) {
        let cause = &c.intervals[s.interval].cause;
        let (a, b) = (s.start.max(w.start), s.end.min(w.end));
        match out.last_mut() {
            Some(l) if l.end == a && l.cause == *cause => l.end = b,
            _ => out.push(CauseInterval {
                cpu: w.cpu,
                cause: cause.clone(),
                start: a,
                end: b,
            }),
        }
    }
    out
}

impl KernelCollected {
    /// Splits every window over the timeline of its own thread and aggregates one
    /// attribution (`o.tid` is not used: each window names its thread).
    pub fn attribute_threads(
        &self,
        windows: &[ThreadWindow],
        o: &ExplainOptions,
    ) -> ThreadsAttributed {
        let mut out = ThreadsAttributed::default();
        let mut lost = 0;
        if let Some(rec) = &self.recording {
            let mut cpus = self.cpus.clone();
            cpus.extend(rec.cpus.iter().map(|c| c.cpu));
            let mut tids: Vec<Option<i32>> = windows.iter().map(|w| w.tid).collect();
            tids.sort_unstable();
            tids.dedup();
            if tids.is_empty() {
                tids.push(None);
            }
            for tid in tids {
                let topts = TimelineOptions {
                    window: o.window,
                    tid,
                    tsc_hz: o.tsc_hz,
                    cpus: cpus.clone(),
                    complete: !self.idle_switches_dropped,
                };
                let kt = crate::recording::kernel_timeline(rec, &topts);
                (out.events, out.malformed, lost) = (kt.events, kt.malformed, kt.lost);
                out.timelines.push((tid, kt.timeline));
            }
        }
        let aopts = self.attribute_options(o, lost);
        out.splits = (0..windows.len())
            .map(|i| {
                let tw = &windows[i];
                let tl = out.timeline_of(i, windows);
                split_pieces(tw, tl.and_then(|t| t.cpu(tw.window.cpu)), o.base_ticks)
            })
            .collect();
        let have = !out.timelines.is_empty();
        out.attribution = assemble(&out.splits, have, &aopts, |i| {
            worst_window(&out.splits[i], out.timeline_of(i, windows), aopts.tsc_hz)
        });
        out.attribution.reader = self.recording.as_ref().map(|r| r.reader.clone());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::Class;
    use latlab_sys::ktrace::{CpuTrace, Recording};

    /// Two threads (tids 10 and 20) share CPU 0; between them a task `other` runs.
    fn recording() -> KernelCollected {
        let text = "\
t10-10 [000] d..2. 100: sched_switch: prev_comm=t10 prev_pid=10 prev_prio=120 prev_state=R ==> next_comm=t20 next_pid=20 next_prio=120
t20-20 [000] d..2. 300: sched_switch: prev_comm=t20 prev_pid=20 prev_prio=120 prev_state=R ==> next_comm=other next_pid=30 next_prio=120
other-30 [000] d..2. 400: sched_switch: prev_comm=other prev_pid=30 prev_prio=120 prev_state=R ==> next_comm=t10 next_pid=10 next_prio=120
t10-10 [000] d..2. 600: sched_switch: prev_comm=t10 prev_pid=10 prev_prio=120 prev_state=R ==> next_comm=t20 next_pid=20 next_prio=120
";
        KernelCollected {
            recording: Some(Recording {
                cpus: vec![CpuTrace {
                    cpu: 0,
                    text: text.into(),
                    lost: 0,
                }],
                enabled: vec![],
                missing: vec![],
                mounted_tracefs: false,
                raw: None,
                reader: "text (asked for)".into(),
                record_cmd: "off".into(),
                missed: 0,
            }),
            unavailable: None,
            cpus: vec![0],
            ..KernelCollected::default()
        }
    }

    fn opts() -> ExplainOptions {
        ExplainOptions {
            window: (0, 1000),
            tid: None,
            tsc_hz: 1_000_000_000,
            base_ticks: 0,
            worst: 4,
        }
    }

    #[test]
    fn each_window_is_split_over_its_own_threads_switches() {
        let w = |tid, start, end| ThreadWindow::whole(Some(tid), Window { cpu: 0, start, end });
        // t10 is away 100..400 (t20, then other); t20 is away 300..600 (other, then t10)
        let ws = [w(10, 100, 400), w(20, 300, 600)];
        let got = recording().attribute_threads(&ws, &opts());
        assert_eq!(got.timelines.len(), 2);
        let names = |i: usize| -> Vec<(Class, String, u64)> {
            got.splits[i]
                .parts
                .iter()
                .map(|(c, t)| (c.class, c.name.to_string(), *t))
                .collect()
        };
        assert_eq!(
            names(0),
            vec![
                (Class::Preempted, "t20".into(), 200),
                (Class::Preempted, "other".into(), 100)
            ]
        );
        assert_eq!(
            names(1),
            vec![
                (Class::Preempted, "t10".into(), 200),
                (Class::Preempted, "other".into(), 100)
            ]
        );
        let a = &got.attribution;
        assert_eq!((a.windows, a.excess_ns, a.explained_ns), (2, 600, 600));
        assert!(a.complete);
        assert_eq!(a.worst.len(), 2);
        assert!(
            !a.worst[0].spans.is_empty(),
            "spans come from the window's own timeline"
        );
        let tl = got.timeline_of(1, &ws).unwrap();
        let iv = intervals_under(tl, &ws[1].window);
        assert_eq!(
            iv.iter().map(|c| (c.start, c.end)).collect::<Vec<_>>(),
            vec![(300, 400), (400, 600)]
        );
    }

    #[test]
    fn a_window_of_pieces_counts_only_its_pieces() {
        // t10's job spans 0..1000 but it lost the CPU only 100..400
        let ws = [ThreadWindow {
            tid: Some(10),
            window: Window {
                cpu: 0,
                start: 0,
                end: 1000,
            },
            pieces: vec![(100, 400)],
        }];
        let got = recording().attribute_threads(&ws, &opts());
        assert_eq!(got.attribution.excess_ns, 300);
        assert_eq!(got.attribution.explained_ns, 300);
        assert_eq!(got.splits[0].window.end, 1000);
    }

    #[test]
    fn without_a_recording_every_window_is_unexplained() {
        let k = KernelCollected {
            unavailable: Some("not root".into()),
            ..KernelCollected::default()
        };
        let ws = [ThreadWindow::whole(
            Some(1),
            Window {
                cpu: 0,
                start: 0,
                end: 50,
            },
        )];
        let got = k.attribute_threads(&ws, &opts());
        assert!(got.timelines.is_empty());
        assert_eq!(got.attribution.unavailable.as_deref(), Some("not root"));
        assert_eq!(got.attribution.explained_ns, 0);
        assert_eq!(got.attribution.excess_ns, 50);
        assert!(!got.attribution.complete);
    }
}

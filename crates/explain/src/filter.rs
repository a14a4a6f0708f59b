//! Kernel-side event filters: which recorded events a measurement can do without, said
//! once as a tracefs filter (applied in the kernel, before the event reaches the ring)
//! and once as the same rule in Rust (for the tests that prove the timeline does not
//! change). Pure.
//!
//! A blocking ping-pong logs about twelve events per round trip with the attribution's
//! set, and four of them are `sched_switch` between the idle task and a watched thread
//! (the reflector and the probe each wake from and go back to idle). With a [`Watch`]
//! those switches open and close nothing: [`crate::timeline::build_watching`] opens a
//! *preempted by task* interval only when a task that is neither idle nor watched takes
//! the CPU, and closes it at the next switch, whose `prev` is that foreign task. So a
//! switch whose two sides are idle and watched carries no information the timeline uses,
//! given the rest of the switches (no loss), and dropping it in the kernel saves a ring
//! write per event and a third of the ping-pong's recorded events.
//!
//! Not for the single-thread timeline (`sched`, `host noise`: a switch to idle while the
//! watched thread is away is a cause there) nor where a measuring thread records its own
//! stalls: a stall's time before its CPU's first kernel event counts as *outside the
//! kernel*, and a dropped switch would move that first event later.

use crate::decode::Task;
use crate::timeline::Watch;

/// Whether `prev → next` is a switch between the idle task (pid 0) and a watched thread,
/// the switches [`idle_switch_filter`] drops.
pub fn is_idle_switch(prev: &Task, next: &Task, watch: &Watch) -> bool {
    (prev.pid == 0 && watch.watches(next)) || (next.pid == 0 && watch.watches(prev))
}

/// The `events/sched/sched_switch/filter` text that keeps every switch but those of
/// [`is_idle_switch`]; `None` when `watch` watches nothing, or names a comm prefix a
/// tracefs glob cannot say exactly (one with `"`, `*`, `?`, `[`, `]` or `\`).
pub fn idle_switch_filter(watch: &Watch) -> Option<String> {
    if watch.comm_prefixes.iter().any(|p| {
        p.chars()
            .any(|c| matches!(c, '"' | '*' | '?' | '[' | ']' | '\\'))
    }) {
        return None;
    }
    let watched = |side: &str| -> Vec<String> {
        watch
            .tids
            .iter()
            .map(|t| format!("{side}_pid == {t}"))
            .chain(
                watch
                    .comm_prefixes
                    .iter()
                    .map(|p| format!("{side}_comm ~ \"{p}*\"")),
            )
            .collect()
    };
    let (next, prev) = (watched("next"), watched("prev"));
    if next.is_empty() {
        return None;
    }
    Some(format!(
        "!((prev_pid == 0 && ({})) || (next_pid == 0 && ({})))",
        next.join(" || "),
        prev.join(" || ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{Event, EventKind};
    use crate::timeline::{build_watching, TimelineOptions};

    fn task(comm: &str, pid: i32) -> Task {
        Task {
            comm: comm.into(),
            pid,
            prio: 120,
        }
    }

    fn latlab() -> Watch {
        Watch {
            tids: Vec::new(),
            comm_prefixes: vec!["latlab".into()],
        }
    }

    #[test]
    fn the_filter_names_both_sides_of_every_watched_thread() {
        assert_eq!(
            idle_switch_filter(&latlab()).unwrap(),
            "!((prev_pid == 0 && (next_comm ~ \"latlab*\")) || \
             (next_pid == 0 && (prev_comm ~ \"latlab*\")))"
        );
        let w = Watch {
            tids: vec![42],
            comm_prefixes: vec!["nf".into()],
        };
        assert_eq!(
            idle_switch_filter(&w).unwrap(),
            "!((prev_pid == 0 && (next_pid == 42 || next_comm ~ \"nf*\")) || \
             (next_pid == 0 && (prev_pid == 42 || prev_comm ~ \"nf*\")))"
        );
        assert_eq!(idle_switch_filter(&Watch::default()), None);
        let glob = Watch {
            tids: Vec::new(),
            comm_prefixes: vec!["a*b".into()],
        };
        assert_eq!(idle_switch_filter(&glob), None);
    }

    #[test]
    fn idle_switches_are_those_between_idle_and_a_watched_thread() {
        let (idle, me, cc) = (task("swapper/1", 0), task("latlab-rx", 7), task("cc1", 9));
        let w = latlab();
        assert!(is_idle_switch(&idle, &me, &w));
        assert!(is_idle_switch(&me, &idle, &w));
        assert!(!is_idle_switch(&me, &cc, &w));
        assert!(!is_idle_switch(&cc, &idle, &w));
        assert!(!is_idle_switch(&idle, &cc, &w));
        assert!(!is_idle_switch(&me, &task("latlab-ktrace", 8), &w));
    }

    /// A blocking ping-pong's CPU: the watched threads wake from idle and go back to it,
    /// a foreign task and interrupts come in between, on two CPUs. Dropping the idle
    /// switches leaves every interval and segment of the watching timeline as it was.
    #[test]
    fn dropping_idle_switches_leaves_the_watching_timeline_unchanged() {
        let (idle, me, nf, cc, kw) = (
            task("swapper", 0),
            task("latlab-pp", 7),
            task("latlab", 5),
            task("cc1", 9),
            task("kworker/1:1", 11),
        );
        let sw = |cpu: u32, tsc: u64, p: &Task, n: &Task| Event {
            cpu,
            tsc,
            kind: EventKind::Switch {
                prev: p.clone(),
                prev_state: "S".into(),
                next: n.clone(),
            },
        };
        let k = |cpu: u32, tsc: u64, kind: EventKind| Event { cpu, tsc, kind };
        let mut evs = Vec::new();
        for round in 0..4u64 {
            let t = 1_000 + round * 1_000;
            // CPU 1: the probe wakes, sends (NET_RX softirq), blocks
            evs.push(sw(1, t, &idle, &me));
            evs.push(k(
                1,
                t + 10,
                EventKind::SoftirqEntry {
                    vec: 3,
                    action: "NET_RX".into(),
                },
            ));
            evs.push(k(1, t + 40, EventKind::SoftirqExit { vec: 3 }));
            evs.push(sw(1, t + 50, &me, &idle));
            // CPU 0: a reschedule IPI wakes the reflector, which answers and blocks
            evs.push(k(
                0,
                t + 45,
                EventKind::VectorEntry {
                    vector: "reschedule".into(),
                },
            ));
            evs.push(k(
                0,
                t + 48,
                EventKind::VectorExit {
                    vector: "reschedule".into(),
                },
            ));
            evs.push(sw(0, t + 50, &idle, &nf));
            if round == 1 {
                // a compiler preempts the reflector, then a kworker runs, then back
                evs.push(sw(0, t + 60, &nf, &cc));
                evs.push(sw(0, t + 200, &cc, &kw));
                evs.push(sw(0, t + 260, &kw, &nf));
            }
            if round == 2 {
                // the reflector blocks, the compiler takes the idle CPU, then idle again
                evs.push(sw(0, t + 300, &nf, &idle));
                evs.push(sw(0, t + 310, &idle, &cc));
                evs.push(sw(0, t + 500, &cc, &idle));
                evs.push(sw(0, t + 510, &idle, &nf));
            }
            evs.push(sw(0, t + 600, &nf, &idle));
        }
        let w = latlab();
        let kept: Vec<Event> = evs
            .iter()
            .filter(|e| match &e.kind {
                EventKind::Switch { prev, next, .. } => !is_idle_switch(prev, next, &w),
                _ => true,
            })
            .cloned()
            .collect();
        assert!(
            kept.len() < evs.len() - 10,
            "the sample drops idle switches"
        );
        let opts = TimelineOptions {
            window: (0, 10_000),
            tid: None,
            tsc_hz: 1_000_000_000,
            cpus: vec![0, 1],
            complete: true,
        };
        let (all, few) = (
            build_watching(&evs, &opts, &w),
            build_watching(&kept, &opts, &w),
        );
        for (a, f) in all.cpus.iter().zip(&few.cpus) {
            assert_eq!(a.intervals, f.intervals, "cpu {}", a.cpu);
            assert_eq!(a.segments, f.segments, "cpu {}", a.cpu);
        }
        // the foreign tasks are there
        let cpu0 = all.cpu(0).unwrap();
        let names: Vec<&str> = cpu0.intervals.iter().map(|i| &*i.cause.name).collect();
        assert!(
            names.contains(&"cc1") && names.contains(&"kworker/1:1"),
            "{names:?}"
        );
    }

    /// Root only (prints why it skips): the kernel takes the filter, and a recording with
    /// it holds no switch between the idle task and a `latlab…` thread while a thread of
    /// that name sleeps and wakes (whether its CPU goes idle meanwhile depends on the
    /// load; the filter must drop those switches whenever it does). Both recorders: the
    /// tracefs filter, and the BPF program's own test of the same rule.
    #[test]
    fn the_kernel_drops_idle_switches_of_latlab_threads() {
        use latlab_sys::ktrace::{KtraceConfig, ReaderKind, Recorder, SwitchDrop};
        let w = latlab();
        for (reader, name) in [
            (ReaderKind::Stream, "trace_pipe_raw"),
            (ReaderKind::Bpf, "bpf rings"),
        ] {
            let cfg = KtraceConfig {
                cpus: (0..latlab_sys::sched::online_cpus()).collect(),
                buffer_kb: 4096,
                events: vec!["sched/sched_switch".into()],
                filters: vec![(
                    "sched/sched_switch".into(),
                    idle_switch_filter(&w).expect("a plain prefix"),
                )],
                drop_idle_switches: Some(SwitchDrop {
                    tids: w.tids.clone(),
                    comm_prefixes: w.comm_prefixes.clone(),
                }),
                reader,
            };
            let rec = match Recorder::start(&cfg) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("SKIP: {e}");
                    return;
                }
            };
            std::thread::Builder::new()
                .name("latlab-y2-sleep".into())
                .spawn(|| {
                    for _ in 0..50 {
                        std::thread::sleep(std::time::Duration::from_micros(500));
                    }
                })
                .unwrap()
                .join()
                .unwrap();
            let out = rec.stop().unwrap();
            assert_eq!(out.reader, name);
            let d = crate::recording::decode_recording(&out);
            assert_eq!(d.malformed, 0);
            let idle: Vec<_> = d
                .events
                .iter()
                .filter(|e| {
                    matches!(&e.kind, EventKind::Switch { prev, next, .. }
                        if is_idle_switch(prev, next, &w))
                })
                .collect();
            assert!(
                idle.is_empty(),
                "{name}: {} idle switches recorded: {:?}",
                idle.len(),
                idle.first()
            );
            assert!(
                d.events
                    .iter()
                    .any(|e| matches!(&e.kind, EventKind::Switch { .. })),
                "{name}: the filter dropped every switch"
            );
        }
    }
}

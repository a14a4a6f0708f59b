//! Causes told from which task could run on a CPU, beside the kernel contexts of
//! [`crate::timeline`]. Pure.
//!
//! - **rt throttling**: a real-time thread (kernel priority below 100) switched out while
//!   runnable (`prev_state` `R`/`R+`) for the idle task or a `SCHED_OTHER` task was
//!   stopped by the kernel's real-time bandwidth limit (`kernel.sched_rt_runtime_us`) or,
//!   since Linux 6.12, by the fair deadline server that lends `SCHED_OTHER` tasks 50 ms a
//!   second: nothing else takes a CPU from a runnable real-time task. Every stretch until
//!   it is switched back in in which such a task (or idle) runs is *rt throttling*, one
//!   cause whoever ran (the limit, not the task, kept the thread off its CPU).
//! - **own thread on the same CPU** (a measurement of several threads): a watched thread
//!   switched out while runnable for another watched thread waits for it until it is
//!   switched back in (or idle runs); and a watched thread that preempts another one
//!   (`prev_state` `R`) had been runnable behind it since the last kernel event on that
//!   CPU that could have woken it (an IRQ, softirq, IPI or non-tick hrtimer ending in the
//!   other's run; none: no time is claimed).
//! - **softirq deferred to ksoftirqd**: `ksoftirqd/N` switched in by preempting a task had
//!   been runnable since the last softirq on that CPU in that task's run ended (the kernel
//!   wakes it when it stops processing softirqs inline, after the last vector's exit).
//! - **vCPU not running** (*outside the kernel*; complete recordings of several threads
//!   only): a CPU running a task keeps its tick. When the tick was due (one tick period
//!   after the last one) and the CPU logged no event at all until more than a quarter
//!   period later, the CPU was not running: the whole silent stretch, from its last event
//!   to its next, is *outside the kernel (vCPU not running)* — the events cannot place the
//!   stop inside it, so it is an upper bound, cross-checked against the CPU's steal time.
//!   The tick period is the recording's own: the median spacing of consecutive tick
//!   handler runs on CPUs running a task.

use crate::class::{Class, Watch};
use crate::decode::{EventKind, Task};

/// The hrtimer callbacks of the scheduler tick (`tick_nohz_handler` since 6.7).
pub const TICK_FUNCTIONS: [&str; 3] = [
    "tick_nohz_handler",
    "tick_sched_timer",
    "tick_handle_periodic",
];

/// The name a vCPU stop gets under *outside the kernel*.
pub const VCPU_NOT_RUNNING: &str = "vCPU not running";

/// Whether `t` runs under a real-time (or deadline) policy: kernel priority below 100.
pub fn is_rt(t: &Task) -> bool {
    t.pid != 0 && t.prio < 100
}

/// Whether `prev → next` is a real-time thread stopped while runnable for the idle task
/// or a `SCHED_OTHER` one: throttled.
pub fn throttled(prev: &Task, prev_state: &str, next: &Task) -> bool {
    is_rt(prev) && prev_state.starts_with('R') && !is_rt(next)
}

/// A cause before it is interned: class and name.
pub(crate) type Named = (Class, String);

/// What the switches of one CPU say about who waits, switch by switch.
#[derive(Debug, Default)]
pub(crate) struct Switches {
    /// A switch that concerns the watched thread(s) was seen.
    seen: bool,
    /// Single-thread mode: the watched thread is off its CPU.
    away: bool,
    /// The real-time thread that is throttled.
    throttled: Option<i32>,
    /// The watched thread waiting for another one of the measurement.
    waiting: Option<i32>,
    /// When the running task was switched in.
    run_start: u64,
    /// The end of the last kernel context in this run that could have woken a task, and
    /// of the last softirq.
    wake_candidate: Option<u64>,
    softirq_end: Option<u64>,
}

/// What one switch means: the cause of a stretch that ended at it and began before
/// anything was known (`before`: from the window's start, or from `since`), and the cause
/// of the stretch that begins at it (`now`, until the next switch).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SwitchCauses {
    pub(crate) before: Option<(Option<u64>, Named)>,
    pub(crate) now: Option<Named>,
}

impl Switches {
    /// An event that ended a kernel context at `t` on this CPU (IRQ, softirq, IPI or
    /// hrtimer exit; `tick`: the scheduler's own hrtimer, which wakes nobody).
    pub(crate) fn context_end(&mut self, t: u64, softirq: bool, tick: bool) {
        if !tick {
            self.wake_candidate = Some(t);
        }
        if softirq {
            self.softirq_end = Some(t);
        }
    }

    /// A `sched_switch` at `t`: with `watch`, a measurement of several threads; else with
    /// `tid`, one thread; else nothing is watched.
    pub(crate) fn switch(
        &mut self,
        t: u64,
        (prev, prev_state, next): (&Task, &str, &Task),
        watch: Option<&Watch>,
        tid: Option<i32>,
    ) -> SwitchCauses {
        let mut out = SwitchCauses::default();
        let ran = |next: &Task, throttled: bool| -> Named {
            if throttled && !is_rt(next) {
                // one cause whoever ran: without the limit the thread would have kept its
                // CPU from idle and `SCHED_OTHER` tasks alike
                (Class::RtThrottling, String::new())
            } else {
                (Class::Preempted, next.comm.clone())
            }
        };
        // a task runnable behind `prev` since a kernel context of `prev`'s run ended
        let behind = |c: Option<u64>| c.filter(|&c| c >= self.run_start);
        if let Some(w) = watch {
            let foreign = |t: &Task| t.pid != 0 && !w.watches(t);
            let preempted = prev_state.starts_with('R') && prev.pid != 0;
            if w.watches(prev) && throttled(prev, prev_state, next) {
                self.throttled = Some(prev.pid);
            } else if preempted && w.watches(prev) && w.watches(next) && next.pid != prev.pid {
                self.waiting = Some(prev.pid);
            }
            if self.throttled == Some(next.pid) {
                self.throttled = None;
            }
            if self.waiting == Some(next.pid) || next.pid == 0 {
                self.waiting = None;
            }
            if !self.seen && foreign(prev) {
                out.before = Some((None, (Class::Preempted, prev.comm.clone())));
            } else if preempted && w.watches(next) && w.watches(prev) && next.pid != prev.pid {
                if let Some(since) = behind(self.wake_candidate) {
                    out.before = Some((Some(since), (Class::OwnThread, prev.comm.clone())));
                }
            } else if preempted && next.comm.starts_with("ksoftirqd/") {
                if let Some(since) = behind(self.softirq_end) {
                    let name = prev.comm.clone();
                    out.before = Some((Some(since), (Class::SoftirqDeferred, name)));
                }
            }
            self.seen = true;
            out.now = if self.throttled.is_some() && !is_rt(next) {
                Some(ran(next, true))
            } else if foreign(next) {
                Some((Class::Preempted, next.comm.clone()))
            } else if self.waiting.is_some() && w.watches(next) {
                Some((Class::OwnThread, next.comm.clone()))
            } else {
                None
            };
        } else if let Some(tid) = tid {
            if prev.pid == tid {
                self.away = true;
                self.throttled = throttled(prev, prev_state, next).then_some(tid);
                out.now = Some(ran(next, self.throttled.is_some()));
            } else if next.pid == tid {
                if !self.seen && !self.away {
                    out.before = Some((None, (Class::Preempted, prev.comm.clone())));
                }
                self.away = false;
                self.throttled = None;
            } else if self.away {
                out.now = Some(ran(next, self.throttled.is_some()));
            }
            self.seen |= prev.pid == tid || next.pid == tid;
        }
        self.run_start = t;
        self.wake_candidate = None;
        self.softirq_end = None;
        out
    }
}

/// Whether an hrtimer callback is the scheduler tick.
pub fn is_tick(function: &str) -> bool {
    TICK_FUNCTIONS.contains(&function)
}

/// Which task runs on a CPU through its events: before its first switch, the task that
/// switch takes the CPU from.
fn first_runner<'a>(evs: &[(u64, &'a EventKind)]) -> Option<&'a Task> {
    evs.iter().find_map(|(_, k)| match k {
        EventKind::Switch { prev, .. } => Some(prev),
        _ => None,
    })
}

/// Walks a CPU's sorted events while a task other than idle runs there: calls
/// `tick(t, last_tick)` for every tick handler run (`last_tick`: the previous one in the
/// same busy stretch), and `gap(prev_t, t, last_tick, ticks)` for every pair of
/// consecutive events (`ticks`: how many the busy stretch has had so far).
fn walk(
    evs: &[(u64, &EventKind)],
    mut tick: impl FnMut(u64, Option<u64>),
    mut gap: impl FnMut(u64, u64, Option<u64>, u32),
) {
    // a task other than idle runs; before the first switch, the task it takes the CPU from
    let mut busy = first_runner(evs).map_or(true, |p| p.pid != 0);
    // the last tick in this busy stretch, and how many ticks it has had
    let (mut last_tick, mut ticks) = (None::<u64>, 0u32);
    let mut prev_t: Option<u64> = None;
    for &(t, k) in evs {
        if let Some(p) = prev_t {
            if busy {
                gap(p, t, last_tick, ticks);
            }
        }
        match k {
            EventKind::HrtimerEntry { function } if is_tick(function) && busy => {
                tick(t, last_tick);
                last_tick = Some(t);
                ticks += 1;
            }
            EventKind::Switch { next, .. } => {
                busy = next.pid != 0;
                if !busy {
                    (last_tick, ticks) = (None, 0);
                }
            }
            _ => {}
        }
        prev_t = Some(t);
    }
}

/// Adds to `d` the spacings of consecutive tick handler runs on one CPU (its events
/// sorted) while a task ran there, of those at most `max` ticks.
pub fn tick_spacings(evs: &[(u64, &EventKind)], max: u64, d: &mut Vec<u64>) {
    walk(
        evs,
        |t, last| {
            if let Some(l) = last {
                if t - l <= max {
                    d.push(t - l);
                }
            }
        },
        |_, _, _, _| {},
    );
}

/// The tick period of a recording from the spacings of [`tick_spacings`] over its CPUs:
/// their median; `None` with fewer than 8.
pub fn tick_period(mut d: Vec<u64>) -> Option<u64> {
    if d.len() < 8 {
        return None;
    }
    d.sort_unstable();
    Some(d[d.len() / 2])
}

/// The stretches in which a CPU running a task logged nothing past its due tick (see the
/// module docs), `[last event, next event)`, in order.
pub fn silent_stretches(evs: &[(u64, &EventKind)], period: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let late = period / 4;
    walk(
        evs,
        |_, _| {},
        |a, b, last_tick, ticks| {
            let Some(l) = last_tick else { return };
            let due = l + period;
            // the tick had been running here, and nothing came near its due time
            if ticks >= 2 && a <= due + late && b > due + late {
                out.push((a, b));
            }
        },
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::Event;
    use crate::timeline::{build, build_watching, CpuTimeline, Timeline, TimelineOptions};
    use latlab_core::results::CpuSteal;

    fn task(comm: &str, pid: i32, prio: i32) -> Task {
        Task {
            comm: comm.into(),
            pid,
            prio,
        }
    }
    fn sw(cpu: u32, t: u64, prev: &Task, state: &str, next: &Task) -> Event {
        Event {
            cpu,
            tsc: t,
            kind: EventKind::Switch {
                prev: prev.clone(),
                prev_state: state.into(),
                next: next.clone(),
            },
        }
    }
    fn ev(cpu: u32, t: u64, kind: EventKind) -> Event {
        Event { cpu, tsc: t, kind }
    }
    fn tick(cpu: u32, t: u64) -> [Event; 2] {
        [
            ev(
                cpu,
                t,
                EventKind::HrtimerEntry {
                    function: "tick_nohz_handler".into(),
                },
            ),
            ev(cpu, t + 2, EventKind::HrtimerExit),
        ]
    }
    fn opts(end: u64, tid: Option<i32>, complete: bool) -> TimelineOptions {
        TimelineOptions {
            window: (0, end),
            tid,
            tsc_hz: 1_000_000_000,
            cpus: vec![0, 1],
            complete,
        }
    }
    fn latlab() -> Watch {
        Watch {
            tids: vec![],
            comm_prefixes: vec!["latlab".into()],
        }
    }
    /// The CPU's segments as (start, end, label).
    fn owners(c: &CpuTimeline) -> Vec<(u64, u64, String)> {
        c.segments
            .iter()
            .map(|s| (s.start, s.end, c.intervals[s.interval].cause.to_string()))
            .collect()
    }
    fn cpu(t: &Timeline, n: u32) -> Vec<(u64, u64, String)> {
        owners(t.cpu(n).unwrap())
    }

    #[test]
    fn a_throttled_fifo_spinner_is_rt_throttling_not_preemption_by_idle() {
        // the spinner (SCHED_FIFO 50: kernel priority 49) is stopped for 50 while
        // runnable; idle runs, then a SCHED_OTHER task the fair server lets in; a
        // preemption by a higher real-time task stays a preemption
        let spin = task("latlab-noise", 7, 49);
        let idle = task("swapper/1", 0, 120);
        let bash = task("bash", 9, 120);
        let mig = task("migration/1", 12, 0);
        let evs = vec![
            sw(1, 1_000, &spin, "R", &idle),
            sw(1, 1_040, &idle, "R", &bash),
            sw(1, 1_050, &bash, "S", &spin),
            sw(1, 2_000, &spin, "R+", &mig),
            sw(1, 2_010, &mig, "S", &spin),
            // blocking is not throttling: idle then runs as before
            sw(1, 3_000, &spin, "S", &idle),
            sw(1, 3_100, &idle, "R", &spin),
        ];
        let t = build(&evs, &opts(10_000, Some(7), true));
        assert_eq!(
            cpu(&t, 1),
            vec![
                (1_000, 1_050, "rt throttling".to_string()),
                (2_000, 2_010, "preempted by task (migration/1)".to_string()),
                (3_000, 3_100, "preempted by task (swapper/1)".to_string()),
            ]
        );
        // a SCHED_OTHER spinner switched out for idle is not throttled
        let other = task("latlab-noise", 7, 120);
        let evs = vec![
            sw(1, 1_000, &other, "R", &idle),
            sw(1, 1_040, &idle, "R", &other),
        ];
        let t = build(&evs, &opts(10_000, Some(7), true));
        assert_eq!(
            cpu(&t, 1),
            vec![(1_000, 1_040, "preempted by task (swapper/1)".to_string())]
        );
        // among several watched threads too, and until the throttled one is back
        let rx = task("latlab-probe-rx", 8, 120);
        let evs = vec![
            sw(0, 500, &spin, "R", &idle),
            sw(0, 600, &idle, "R", &rx),
            sw(0, 650, &rx, "S", &idle),
            sw(0, 700, &idle, "R", &spin),
        ];
        let t = build_watching(&evs, &opts(10_000, None, true), &latlab());
        assert_eq!(cpu(&t, 0), vec![(500, 700, "rt throttling".to_string()),]);
    }

    #[test]
    fn a_latlab_thread_waiting_behind_its_own_is_named_for_the_one_that_ran() {
        let tx = task("latlab-probe-tx", 7, 120);
        let rx = task("latlab-probe-rx", 8, 120);
        let idle = task("swapper/1", 0, 120);
        let evs = vec![
            // TX preempts RX: RX waits for TX until it is back
            sw(1, 1_000, &rx, "R+", &tx),
            sw(1, 1_300, &tx, "S", &rx),
            // TX runs; an IPI (RX's wake-up) ends at 2_100, the tick at 2_500 (it wakes
            // nobody); RX preempts TX at 2_600: it was runnable since 2_100
            sw(1, 1_500, &rx, "S", &tx),
            ev(
                1,
                2_000,
                EventKind::VectorEntry {
                    vector: "call_function_single".into(),
                },
            ),
            ev(
                1,
                2_100,
                EventKind::VectorExit {
                    vector: "call_function_single".into(),
                },
            ),
            ev(
                1,
                2_500,
                EventKind::HrtimerEntry {
                    function: "tick_nohz_handler".into(),
                },
            ),
            ev(1, 2_510, EventKind::HrtimerExit),
            sw(1, 2_600, &tx, "R", &rx),
            // now TX waits for RX until RX blocks; then RX preempts TX with no wake-up
            // event in TX's run before it: nothing is claimed before the switch
            sw(1, 3_000, &rx, "S", &tx),
            sw(1, 3_500, &tx, "R", &rx),
            sw(1, 3_600, &rx, "S", &idle),
        ];
        let t = build_watching(&evs, &opts(10_000, None, true), &latlab());
        assert_eq!(
            cpu(&t, 1),
            vec![
                (
                    1_000,
                    1_300,
                    "own thread (latlab-probe-tx) on the same CPU".to_string()
                ),
                (2_000, 2_100, "ipi (call_function_single)".to_string()),
                (
                    2_100,
                    2_500,
                    "own thread (latlab-probe-tx) on the same CPU".to_string()
                ),
                (2_500, 2_510, "timer (tick_nohz_handler)".to_string()),
                (
                    2_510,
                    2_600,
                    "own thread (latlab-probe-tx) on the same CPU".to_string()
                ),
                (
                    2_600,
                    3_000,
                    "own thread (latlab-probe-rx) on the same CPU".to_string()
                ),
                (
                    3_500,
                    3_600,
                    "own thread (latlab-probe-rx) on the same CPU".to_string()
                ),
            ]
        );
    }

    #[test]
    fn softirq_work_deferred_to_ksoftirqd_waits_behind_the_busy_thread() {
        let nf = task("latlab-nf-a", 7, 120);
        let ksoft = task("ksoftirqd/0", 15, 120);
        let evs = vec![
            ev(
                0,
                1_000,
                EventKind::SoftirqEntry {
                    vec: 3,
                    action: "NET_RX".into(),
                },
            ),
            ev(0, 1_200, EventKind::SoftirqExit { vec: 3 }),
            // the NF's slice ends at the tick; ksoftirqd had waited since 1_200
            ev(
                0,
                4_000,
                EventKind::HrtimerEntry {
                    function: "tick_nohz_handler".into(),
                },
            ),
            ev(0, 4_010, EventKind::HrtimerExit),
            sw(0, 4_020, &nf, "R+", &ksoft),
            ev(
                0,
                4_030,
                EventKind::SoftirqEntry {
                    vec: 3,
                    action: "NET_RX".into(),
                },
            ),
            ev(0, 4_300, EventKind::SoftirqExit { vec: 3 }),
            sw(0, 4_320, &ksoft, "S", &nf),
            // ksoftirqd after the NF blocks: no softirq in its run, nothing claimed
            sw(0, 6_000, &nf, "R", &ksoft),
            sw(0, 6_050, &ksoft, "S", &nf),
        ];
        let t = build_watching(&evs, &opts(10_000, None, true), &latlab());
        let deferred = "softirq deferred to ksoftirqd (behind latlab-nf-a)".to_string();
        assert_eq!(
            cpu(&t, 0),
            vec![
                (1_000, 1_200, "softirq (NET_RX)".to_string()),
                (1_200, 4_000, deferred.clone()),
                (4_000, 4_010, "timer (tick_nohz_handler)".to_string()),
                (4_010, 4_020, deferred),
                (4_020, 4_030, "preempted by task (ksoftirqd/0)".to_string()),
                (4_030, 4_300, "softirq (NET_RX)".to_string()),
                (4_300, 4_320, "preempted by task (ksoftirqd/0)".to_string()),
                (6_000, 6_050, "preempted by task (ksoftirqd/0)".to_string()),
            ]
        );
    }

    /// A busy NF on CPU 0 ticking every 4 000, with a silence 12_000..17_300 (no tick at
    /// 16_000); CPU 1 idle with a lone IRQ.
    fn silent_cpu() -> Vec<Event> {
        let nf = task("latlab-nf-a", 7, 120);
        let idle = task("swapper/0", 0, 120);
        let mut evs = vec![sw(0, 100, &idle, "R", &nf)];
        for k in 1..=3 {
            evs.extend(tick(0, 4_000 * k));
        }
        evs.push(ev(
            0,
            17_300,
            EventKind::VectorEntry {
                vector: "local_timer".into(),
            },
        ));
        evs.push(ev(
            0,
            17_310,
            EventKind::VectorExit {
                vector: "local_timer".into(),
            },
        ));
        for k in 5..=12 {
            evs.extend(tick(0, 4_000 * k));
        }
        // an idle CPU does not tick: its long silences are nobody's
        evs.push(sw(0, 48_100, &nf, "S", &idle));
        evs.push(ev(
            1,
            30_000,
            EventKind::IrqEntry {
                irq: 5,
                name: "eth0".into(),
            },
        ));
        evs.push(ev(1, 30_100, EventKind::IrqExit { irq: 5 }));
        evs
    }

    #[test]
    fn a_cpu_silent_past_its_tick_while_a_task_ran_was_not_running() {
        let evs = silent_cpu();
        let t = build_watching(&evs, &opts(100_000, None, true), &latlab());
        let c0 = t.cpu(0).unwrap();
        let vcpu: Vec<(u64, u64)> = c0
            .intervals
            .iter()
            .filter(|i| i.cause.class == Class::OutsideKernel)
            .map(|i| (i.start, i.end))
            .collect();
        assert_eq!(
            vcpu,
            vec![(12_002, 17_300)],
            "from the last event to the next"
        );
        assert_eq!(
            c0.intervals
                .iter()
                .find(|i| i.cause.class == Class::OutsideKernel)
                .unwrap()
                .cause
                .to_string(),
            "outside the kernel (vCPU not running)"
        );
        // the result keeps it per CPU beside the CPU's steal time
        let got = crate::session::KernelCollected {
            steal: vec![
                CpuSteal {
                    cpu: 0,
                    ns: 10_000_000,
                    silent_ns: 0,
                },
                CpuSteal {
                    cpu: 1,
                    ns: 0,
                    silent_ns: 0,
                },
            ],
            ..Default::default()
        };
        let steal = got.steal_beside(Some(&t), 1_000_000_000);
        assert_eq!(
            steal
                .iter()
                .map(|s| (s.cpu, s.ns, s.silent_ns))
                .collect::<Vec<_>>(),
            [(0, 10_000_000, 5_298), (1, 0, 0)]
        );
        assert!(t
            .cpu(1)
            .unwrap()
            .intervals
            .iter()
            .all(|i| i.cause.class != Class::OutsideKernel));
        // an incomplete recording (events lost, switches filtered) proves no silence
        let t = build_watching(&evs, &opts(100_000, None, false), &latlab());
        assert!(t
            .cpus
            .iter()
            .flat_map(|c| &c.intervals)
            .all(|i| i.cause.class != Class::OutsideKernel));
        // the period is the recording's own
        let per: Vec<(u64, &EventKind)> = evs
            .iter()
            .filter(|e| e.cpu == 0)
            .map(|e| (e.tsc, &e.kind))
            .collect();
        let spacings = |evs: &[(u64, &EventKind)]| {
            let mut d = Vec::new();
            tick_spacings(evs, 100_000, &mut d);
            d
        };
        assert_eq!(tick_period(spacings(&per)), Some(4_000));
        assert_eq!(tick_period(spacings(&per[..5])), None, "too few");
        // a tick merely late by less than a quarter period is not a stop
        let entry = EventKind::HrtimerEntry {
            function: "tick_nohz_handler".into(),
        };
        let mut late = per.clone();
        late.retain(|e| e.0 < 17_000 || e.0 >= 20_000);
        late.extend([(16_900, &entry), (16_902, &EventKind::HrtimerExit)]);
        late.sort_by_key(|e| e.0);
        assert!(silent_stretches(&late, 4_000).is_empty());
        assert_eq!(silent_stretches(&per, 4_000), vec![(12_002, 17_300)]);
    }
}

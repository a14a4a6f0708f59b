//! The text of a tracefs `trace` file, decoded into typed events. Pure.
//!
//! A line reads `<comm>-<pid> [<cpu>] <flags> <timestamp>: <event>: <fields>`; with the
//! `x86-tsc` trace clock the timestamp is a raw TSC value. The comm may hold spaces and
//! dashes, so the line is anchored on the `[<cpu>]` field followed by the flags and a
//! numeric timestamp. Lines that do not parse are counted, never fatal; `#` comments and
//! blank lines are skipped; `CPU:N [LOST k EVENTS]` markers add `k` to the lost count.

/// One kernel event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The CPU it happened on.
    pub cpu: u32,
    /// Its timestamp, raw TSC.
    pub tsc: u64,
    /// What happened.
    pub kind: EventKind,
}

/// The decoded event kinds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// `irq_handler_entry`.
    IrqEntry {
        /// IRQ number.
        irq: u32,
        /// Handler name (e.g. `virtio1-req.0`).
        name: String,
    },
    /// `irq_handler_exit`.
    IrqExit {
        /// IRQ number.
        irq: u32,
    },
    /// `softirq_entry`.
    SoftirqEntry {
        /// Vector number.
        vec: u32,
        /// Vector name (`TIMER`, `NET_RX`, `BLOCK`, `RCU`, `SCHED`, …).
        action: String,
    },
    /// `softirq_exit`.
    SoftirqExit {
        /// Vector number.
        vec: u32,
    },
    /// An `irq_vectors` `*_entry` (e.g. `local_timer`, `reschedule`, `call_function`).
    VectorEntry {
        /// The vector kind, the event name without `_entry`.
        vector: String,
    },
    /// An `irq_vectors` `*_exit`.
    VectorExit {
        /// The vector kind, the event name without `_exit`.
        vector: String,
    },
    /// `nmi_handler`: emitted after the handler ran, with its duration.
    Nmi {
        /// The handler function.
        handler: String,
        /// How long it ran, ns.
        delta_ns: u64,
    },
    /// `hrtimer_expire_entry`.
    HrtimerEntry {
        /// The timer's callback.
        function: String,
    },
    /// `hrtimer_expire_exit`.
    HrtimerExit,
    /// `workqueue_execute_start`.
    WorkStart {
        /// The work function.
        function: String,
    },
    /// `workqueue_execute_end`.
    WorkEnd,
    /// `sched_switch`.
    Switch {
        /// The task leaving the CPU.
        prev: Task,
        /// Its state (`R`, `R+`, `S`, `D`, …): `R` means preempted while runnable.
        prev_state: String,
        /// The task taking the CPU.
        next: Task,
    },
    /// `sched_wakeup`.
    Wakeup {
        /// The task woken.
        task: Task,
        /// The CPU it was woken onto.
        target_cpu: u32,
    },
    /// `napi_poll`.
    NapiPoll {
        /// The device polled.
        dev: String,
        /// Packets processed.
        work: u32,
    },
    /// An event this decoder does not know (kept by name so counts stay honest).
    Other {
        /// The event name.
        name: String,
    },
}

/// A task as a switch or wakeup names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    /// Its comm.
    pub comm: String,
    /// Its pid (thread id).
    pub pid: i32,
    /// Its kernel priority.
    pub prio: i32,
}

/// The events of a trace text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decoded {
    /// Events, in file order.
    pub events: Vec<Event>,
    /// Lines that did not parse.
    pub malformed: u64,
    /// Events the `[LOST k EVENTS]` markers report.
    pub lost: u64,
}

/// Decodes a whole trace text.
pub fn decode(text: &str) -> Decoded {
    let mut d = Decoded::default();
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if let Some(k) = lost_marker(t) {
            d.lost += k;
            continue;
        }
        match decode_line(line) {
            Some(e) => d.events.push(e),
            None => d.malformed += 1,
        }
    }
    d
}

/// `CPU:1 [LOST 123 EVENTS]` → 123.
fn lost_marker(t: &str) -> Option<u64> {
    let rest = t.strip_prefix("CPU:")?;
    let (_, rest) = rest.split_once("[LOST ")?;
    let (n, _) = rest.split_once(" EVENTS]")?;
    n.trim().parse().ok()
}

/// Decodes one event line; `None` when it is not one.
pub fn decode_line(line: &str) -> Option<Event> {
    let b = line.as_bytes();
    let mut from = 0;
    while let Some(off) = line[from..].find('[') {
        let i = from + off;
        from = i + 1;
        let Some(close) = line[i + 1..].find(']') else {
            break;
        };
        let cpu_s = &line[i + 1..i + 1 + close];
        if cpu_s.is_empty() || !cpu_s.bytes().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let after = &line[i + 2 + close..];
        if !after.starts_with(' ') || i == 0 || b[i - 1] != b' ' {
            continue;
        }
        let mut words = after.trim_start().splitn(2, ' ');
        let _flags = words.next()?;
        let rest = words.next()?.trim_start();
        let Some((ts, body)) = rest.split_once(": ") else {
            continue;
        };
        let Some(tsc) = parse_ts(ts) else {
            continue;
        };
        let cpu: u32 = cpu_s.parse().ok()?;
        let (name, fields) = body
            .split_once(": ")
            .unwrap_or((body.trim_end_matches(':'), ""));
        let kind = decode_body(name.trim(), fields.trim())?;
        return Some(Event { cpu, tsc, kind });
    }
    None
}

/// A raw counter timestamp (`4085433861341`); clocks printed as seconds (`123.456789`)
/// are refused, they are not on the TSC timeline.
fn parse_ts(ts: &str) -> Option<u64> {
    let ts = ts.trim();
    if ts.is_empty() || !ts.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    ts.parse().ok()
}

/// The value of `key=` in `fields`, up to the next space (or to `until` when given, for
/// values that may hold spaces, such as comms).
fn field<'a>(fields: &'a str, key: &str, until: Option<&str>) -> Option<&'a str> {
    let pat = format!("{key}=");
    let mut start = None;
    let mut from = 0;
    while let Some(off) = fields[from..].find(&pat) {
        let i = from + off;
        if i == 0 || fields.as_bytes()[i - 1] == b' ' {
            start = Some(i + pat.len());
            break;
        }
        from = i + 1;
    }
    let start = start?;
    let rest = &fields[start..];
    let end = match until {
        Some(u) => rest.find(u).unwrap_or(rest.len()),
        None => rest.find(' ').unwrap_or(rest.len()),
    };
    Some(&rest[..end])
}

fn num<T: std::str::FromStr>(s: Option<&str>) -> Option<T> {
    s?.trim().parse().ok()
}

fn decode_body(name: &str, f: &str) -> Option<EventKind> {
    Some(match name {
        "irq_handler_entry" => EventKind::IrqEntry {
            irq: num(field(f, "irq", None))?,
            name: field(f, "name", Some("\u{0}"))?.to_string(),
        },
        "irq_handler_exit" => EventKind::IrqExit {
            irq: num(field(f, "irq", None))?,
        },
        "softirq_entry" | "softirq_exit" => {
            let vec = num(field(f, "vec", None))?;
            if name == "softirq_entry" {
                let action = field(f, "[action", None)
                    .map(|a| a.trim_end_matches(']').to_string())
                    .unwrap_or_else(|| format!("vec{vec}"));
                EventKind::SoftirqEntry { vec, action }
            } else {
                EventKind::SoftirqExit { vec }
            }
        }
        "nmi_handler" => {
            let handler = f.split_whitespace().next()?.trim_end_matches("()");
            let delta = f.split_once("delta_ns:")?.1.split_whitespace().next()?;
            EventKind::Nmi {
                handler: handler.to_string(),
                delta_ns: delta.parse().ok()?,
            }
        }
        "hrtimer_expire_entry" => EventKind::HrtimerEntry {
            function: field(f, "function", None)?.to_string(),
        },
        "hrtimer_expire_exit" => EventKind::HrtimerExit,
        "workqueue_execute_start" => EventKind::WorkStart {
            function: f.rsplit_once("function ")?.1.trim().to_string(),
        },
        "workqueue_execute_end" => EventKind::WorkEnd,
        "sched_switch" => {
            let (p, n) = f.split_once(" ==> ")?;
            EventKind::Switch {
                prev: Task {
                    comm: field(p, "prev_comm", Some(" prev_pid="))?.to_string(),
                    pid: num(field(p, "prev_pid", None))?,
                    prio: num(field(p, "prev_prio", None))?,
                },
                prev_state: field(p, "prev_state", None)?.to_string(),
                next: Task {
                    comm: field(n, "next_comm", Some(" next_pid="))?.to_string(),
                    pid: num(field(n, "next_pid", None))?,
                    prio: num(field(n, "next_prio", None))?,
                },
            }
        }
        "sched_wakeup" => EventKind::Wakeup {
            task: Task {
                comm: field(f, "comm", Some(" pid="))?.to_string(),
                pid: num(field(f, "pid", None))?,
                prio: num(field(f, "prio", None))?,
            },
            target_cpu: num(field(f, "target_cpu", None))?,
        },
        "napi_poll" => {
            let dev = f.split_once("device ")?.1.split_whitespace().next()?;
            let work = f.split_once(" work ")?.1.split_whitespace().next()?;
            EventKind::NapiPoll {
                dev: dev.to_string(),
                work: work.parse().ok()?,
            }
        }
        _ => return by_name(name),
    })
}

/// An event known by its name alone: an `irq_vectors` entry or exit, else `Other`;
/// `None` for a name that cannot be one (empty, with a space).
pub(crate) fn by_name(name: &str) -> Option<EventKind> {
    Some(if let Some(v) = name.strip_suffix("_entry") {
        EventKind::VectorEntry {
            vector: v.to_string(),
        }
    } else if let Some(v) = name.strip_suffix("_exit") {
        EventKind::VectorExit {
            vector: v.to_string(),
        }
    } else {
        if name.is_empty() || name.contains(' ') {
            return None;
        }
        EventKind::Other {
            name: name.to_string(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
# tracer: nop
#
            head-24191   [001] d.h1. 4085433861341: irq_handler_entry: irq=36 name=virtio1-req.0
            head-24191   [001] d.h1. 4085433865527: irq_handler_exit: irq=36 ret=handled
            head-24191   [001] ..s1. 4085433866879: softirq_entry: vec=4 [action=BLOCK]
            head-24191   [001] .Ns1. 4085433902473: softirq_exit: vec=4 [action=BLOCK]
            head-24191   [001] d..2. 4085433942981: sched_switch: prev_comm=bash prev_pid=24191 prev_prio=120 prev_state=R ==> next_comm=grep next_pid=23134 next_prio=120
            grep-23134   [001] d.h1. 4085434056523: hrtimer_expire_entry: hrtimer=0000000021def4dd function=tick_nohz_handler now=1573564009521
            grep-23134   [001] d.h1. 4085434069003: hrtimer_expire_exit: hrtimer=0000000021def4dd
";

    #[test]
    fn the_sample_lines_decode() {
        let d = decode(SAMPLE);
        assert_eq!(d.malformed, 0);
        assert_eq!(d.events.len(), 7);
        let e = &d.events[0];
        assert_eq!((e.cpu, e.tsc), (1, 4085433861341));
        assert_eq!(
            e.kind,
            EventKind::IrqEntry {
                irq: 36,
                name: "virtio1-req.0".into()
            }
        );
        assert_eq!(d.events[1].kind, EventKind::IrqExit { irq: 36 });
        assert_eq!(
            d.events[2].kind,
            EventKind::SoftirqEntry {
                vec: 4,
                action: "BLOCK".into()
            }
        );
        assert_eq!(d.events[3].kind, EventKind::SoftirqExit { vec: 4 });
        let EventKind::Switch {
            prev,
            prev_state,
            next,
        } = &d.events[4].kind
        else {
            panic!("{:?}", d.events[4])
        };
        assert_eq!(
            (prev.comm.as_str(), prev.pid, prev.prio),
            ("bash", 24191, 120)
        );
        assert_eq!(prev_state, "R");
        assert_eq!((next.comm.as_str(), next.pid), ("grep", 23134));
        assert_eq!(
            d.events[5].kind,
            EventKind::HrtimerEntry {
                function: "tick_nohz_handler".into()
            }
        );
        assert_eq!(d.events[6].kind, EventKind::HrtimerExit);
    }

    #[test]
    fn comms_with_spaces_dashes_and_brackets() {
        let l = "  kworker/1:1H-kblockd-77 [001] d..2. 100: sched_switch: prev_comm=Web Content prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=a-b [x] next_pid=6 next_prio=98";
        let e = decode_line(l).unwrap();
        assert_eq!((e.cpu, e.tsc), (1, 100));
        let EventKind::Switch { prev, next, .. } = e.kind else {
            panic!()
        };
        assert_eq!(prev.comm, "Web Content");
        assert_eq!(next.comm, "a-b [x]");
        assert_eq!(next.prio, 98);
        let l = "<idle>-0 [000] d.h2. 55: local_timer_entry: vector=236";
        assert_eq!(
            decode_line(l).unwrap().kind,
            EventKind::VectorEntry {
                vector: "local_timer".into()
            }
        );
        let l = "x [7] foo-1 [000] d.h2. 56: reschedule_exit: vector=253";
        let e = decode_line(l).unwrap();
        assert_eq!(e.tsc, 56);
        assert_eq!(
            e.kind,
            EventKind::VectorExit {
                vector: "reschedule".into()
            }
        );
    }

    #[test]
    fn the_other_event_formats() {
        let k = |l: &str| decode_line(l).unwrap().kind;
        assert_eq!(
            k("a-1 [000] d.Z1. 9: nmi_handler: perf_event_nmi_handler() delta_ns: 2300 handled: 1"),
            EventKind::Nmi {
                handler: "perf_event_nmi_handler".into(),
                delta_ns: 2300
            }
        );
        assert_eq!(
            k("kworker/0:1-12 [000] ..... 9: workqueue_execute_start: work struct 000000008a1b2c3d: function vmstat_update"),
            EventKind::WorkStart {
                function: "vmstat_update".into()
            }
        );
        assert_eq!(
            k("kworker/0:1-12 [000] ..... 9: workqueue_execute_end: work struct 000000008a1b2c3d: function vmstat_update"),
            EventKind::WorkEnd
        );
        assert_eq!(
            k("a-1 [000] d..3. 9: sched_wakeup: comm=my hog pid=42 prio=49 target_cpu=001"),
            EventKind::Wakeup {
                task: Task {
                    comm: "my hog".into(),
                    pid: 42,
                    prio: 49
                },
                target_cpu: 1
            }
        );
        assert_eq!(
            k("a-1 [000] ..s1. 9: napi_poll: napi poll on napi struct 00000000dead for device eth0 work 3 budget 64"),
            EventKind::NapiPoll {
                dev: "eth0".into(),
                work: 3
            }
        );
        assert_eq!(
            k("a-1 [000] ..... 9: sched_migrate_task: comm=x pid=1"),
            EventKind::Other {
                name: "sched_migrate_task".into()
            }
        );
    }

    #[test]
    fn malformed_lines_are_counted_not_fatal() {
        let text = "garbage\n\
            a-1 [000] d.h1. notanumber: irq_handler_exit: irq=3 ret=handled\n\
            a-1 [000] d.h1. 12.345678: irq_handler_exit: irq=3 ret=handled\n\
            a-1 [000] d.h1. 5: irq_handler_exit: irq=x ret=handled\n\
            a-1 [000] d.h1. 6: sched_switch: prev_comm=a\n\
            CPU:1 [LOST 17 EVENTS]\n\
            a-1 [000] d.h1. 7: irq_handler_exit: irq=3 ret=handled\n";
        let d = decode(text);
        assert_eq!(d.events.len(), 1);
        assert_eq!(d.events[0].tsc, 7);
        assert_eq!(d.malformed, 5);
        assert_eq!(d.lost, 17);
    }
}

//! The streamed binary trace (`latlab_sys::ktrace::RawTrace`) decoded into the same
//! [`Event`]s as the text path ([`crate::decode`]). Pure.
//!
//! The reader has already cut the pages into records (`latlab_core::ftrace_compact`):
//! per event a timestamp and a *kind*, the payload with the fields read here kept. Each
//! kind's `common_type` names its event's format, whose fields give the values the text
//! path reads from the kernel's formatted line; a kind is decoded once, however many
//! events share it. What the kernel formats from a number is
//! formatted here the same way: a softirq vector's name (`NET_RX`), a function address
//! as its symbol (`%ps`, from `/proc/kallsyms`), `sched_switch`'s `prev_state` as its
//! letters (`R`, `S`, `D`, `R+`, …).

use crate::decode::{Decoded, Event, EventKind, Task};
use latlab_core::ftrace_raw::{common_type, EventFormat, Symbols};
use latlab_sys::ktrace::RawTrace;
use std::collections::HashMap;

/// The softirq vectors' names, as `softirq_entry`'s print format lists them.
const SOFTIRQS: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// `prev_state` as `sched_switch` prints it: the `TASK_REPORT` bits as letters (`|`
/// between several), `R` when none is set, and `+` for a preempted task
/// (`TASK_REPORT_MAX`, 0x100 since Linux 5.14).
pub fn task_state(state: i64) -> String {
    const LETTERS: [(i64, &str); 8] = [
        (0x01, "S"),
        (0x02, "D"),
        (0x04, "T"),
        (0x08, "t"),
        (0x10, "X"),
        (0x20, "Z"),
        (0x40, "P"),
        (0x80, "I"),
    ];
    let bits = state & 0xff;
    let mut s = if bits == 0 {
        "R".to_string()
    } else {
        LETTERS
            .iter()
            .filter(|(b, _)| bits & b != 0)
            .map(|(_, l)| *l)
            .collect::<Vec<_>>()
            .join("|")
    };
    if state & 0x100 != 0 {
        s.push('+');
    }
    s
}

/// Each of the recording's distinct kinds ([`RawTrace::events`]) as an event kind;
/// `None` for a kind whose format lacks a field the decoder reads.
pub fn kinds(raw: &RawTrace) -> Vec<Option<EventKind>> {
    let by_id: HashMap<u16, &EventFormat> = raw.formats.iter().map(|f| (f.id, f)).collect();
    raw.events
        .kinds
        .iter()
        .map(|p| {
            common_type(p)
                .and_then(|id| by_id.get(&id))
                .and_then(|f| kind_of(f, p, &raw.symbols))
        })
        .collect()
}

/// Events whose kind did not decode (each counts as malformed), plus the records the
/// reader already counted as malformed.
pub fn malformed(raw: &RawTrace, kinds: &[Option<EventKind>]) -> u64 {
    let bad: u64 = raw
        .events
        .cpus
        .iter()
        .map(|c| {
            c.kind
                .iter()
                .filter(|&&k| kinds[k as usize].is_none())
                .count() as u64
        })
        .sum();
    raw.events.malformed + bad
}

/// Every streamed event as an [`Event`], CPU by CPU in order; records of an unknown
/// `common_type` or missing fields count as malformed, the pages' lost-event counts as
/// lost. (The timeline is built from the compact store without this expansion:
/// [`crate::recording::kernel_timeline`].)
pub fn decode_raw(raw: &RawTrace) -> Decoded {
    let ks = kinds(raw);
    let mut d = Decoded {
        malformed: malformed(raw, &ks),
        lost: raw.events.lost,
        ..Decoded::default()
    };
    for c in &raw.events.cpus {
        for (&tsc, &k) in c.tsc.iter().zip(&c.kind) {
            if let Some(kind) = &ks[k as usize] {
                d.events.push(Event {
                    cpu: c.cpu,
                    tsc,
                    kind: kind.clone(),
                });
            }
        }
    }
    d
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// One record as the text path would have decoded its line.
pub fn kind_of(f: &EventFormat, p: &[u8], syms: &Symbols) -> Option<EventKind> {
    let int = |n: &str| f.int(p, n);
    let s = |n: &str| f.str(p, n).map(text);
    let func = |n: &str| int(n).map(|a| syms.name(a as u64));
    let task = |comm: &str, pid: &str, prio: &str| -> Option<Task> {
        Some(Task {
            comm: s(comm)?,
            pid: int(pid)? as i32,
            prio: int(prio)? as i32,
        })
    };
    let name = f.name.as_str();
    Some(match name {
        "irq_handler_entry" => EventKind::IrqEntry {
            irq: int("irq")? as u32,
            name: s("name")?,
        },
        "irq_handler_exit" => EventKind::IrqExit {
            irq: int("irq")? as u32,
        },
        "softirq_entry" => {
            let vec = int("vec")? as u32;
            EventKind::SoftirqEntry {
                vec,
                action: SOFTIRQS
                    .get(vec as usize)
                    .map_or_else(|| format!("vec{vec}"), |a| (*a).to_string()),
            }
        }
        "softirq_exit" => EventKind::SoftirqExit {
            vec: int("vec")? as u32,
        },
        "nmi_handler" => EventKind::Nmi {
            handler: func("handler")?,
            delta_ns: int("delta_ns")?.max(0) as u64,
        },
        "hrtimer_expire_entry" => EventKind::HrtimerEntry {
            function: func("function")?,
        },
        "hrtimer_expire_exit" => EventKind::HrtimerExit,
        "workqueue_execute_start" => EventKind::WorkStart {
            function: func("function")?,
        },
        "workqueue_execute_end" => EventKind::WorkEnd,
        "sched_switch" => EventKind::Switch {
            prev: task("prev_comm", "prev_pid", "prev_prio")?,
            prev_state: task_state(int("prev_state")?),
            next: task("next_comm", "next_pid", "next_prio")?,
        },
        "sched_wakeup" => EventKind::Wakeup {
            task: task("comm", "pid", "prio")?,
            target_cpu: int("target_cpu")? as u32,
        },
        "napi_poll" => EventKind::NapiPoll {
            dev: s("dev_name")?,
            work: int("work")? as u32,
        },
        _ => return crate::decode::by_name(name),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::ftrace_compact::CompactDecoder;
    use latlab_core::ftrace_raw::PageLayout;

    const COMMON: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
        \tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
        \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n";

    fn fmt(name: &str, id: u16, fields: &str) -> EventFormat {
        EventFormat::parse(&format!(
            "name: {name}\nID: {id}\nformat:\n{COMMON}\n{fields}"
        ))
        .unwrap()
    }

    /// The formats of this kernel (Linux 6.18), as its `format` files give them.
    fn formats() -> Vec<EventFormat> {
        vec![
            fmt(
                "irq_handler_entry",
                225,
                "\tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;\n\
                 \tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;\n",
            ),
            fmt(
                "softirq_entry",
                223,
                "\tfield:unsigned int vec;\toffset:8;\tsize:4;\tsigned:0;\n",
            ),
            fmt(
                "sched_switch",
                372,
                "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
                 \tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
                 \tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\
                 \tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\
                 \tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n\
                 \tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n\
                 \tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n",
            ),
            fmt(
                "hrtimer_expire_entry",
                459,
                "\tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;\n\
                 \tfield:s64 now;\toffset:16;\tsize:8;\tsigned:1;\n\
                 \tfield:void * function;\toffset:24;\tsize:8;\tsigned:0;\n",
            ),
            fmt(
                "local_timer_entry",
                165,
                "\tfield:int vector;\toffset:8;\tsize:4;\tsigned:1;\n",
            ),
            fmt(
                "nmi_handler",
                170,
                "\tfield:void * handler;\toffset:8;\tsize:8;\tsigned:0;\n\
                 \tfield:s64 delta_ns;\toffset:16;\tsize:8;\tsigned:1;\n\
                 \tfield:int handled;\toffset:24;\tsize:4;\tsigned:1;\n",
            ),
            fmt(
                "workqueue_execute_start",
                335,
                "\tfield:void * work;\toffset:8;\tsize:8;\tsigned:0;\n\
                 \tfield:void * function;\toffset:16;\tsize:8;\tsigned:0;\n",
            ),
            fmt(
                "sched_wakeup",
                374,
                "\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
                 \tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n\
                 \tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n\
                 \tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n",
            ),
            fmt(
                "napi_poll",
                2291,
                "\tfield:struct napi_struct * napi;\toffset:8;\tsize:8;\tsigned:0;\n\
                 \tfield:__data_loc char[] dev_name;\toffset:16;\tsize:4;\tsigned:0;\n\
                 \tfield:int work;\toffset:20;\tsize:4;\tsigned:1;\n\
                 \tfield:int budget;\toffset:24;\tsize:4;\tsigned:1;\n",
            ),
            fmt(
                "softirq_exit",
                222,
                "\tfield:unsigned int vec;\toffset:8;\tsize:4;\tsigned:0;\n",
            ),
            fmt(
                "irq_handler_exit",
                224,
                "\tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;\n\
                 \tfield:int ret;\toffset:12;\tsize:4;\tsigned:1;\n",
            ),
        ]
    }

    /// `pages` of CPU `cpu` as the streaming reader hands them over: through the compact
    /// decoder, in chunks of 1000 bytes.
    fn streamed(pages: &[u8], cpu: u32, kallsyms: &str) -> RawTrace {
        let formats = formats();
        let mut dec = CompactDecoder::new(PageLayout::default(), 4096, &formats, &[cpu]);
        for chunk in pages.chunks(1000) {
            dec.push(cpu, chunk);
        }
        RawTrace {
            layout: PageLayout::default(),
            formats,
            events: dec.finish(),
            symbols: Symbols::parse(kallsyms),
        }
    }

    fn payload(id: u16, len: usize, put: &[(usize, &[u8])]) -> Vec<u8> {
        let mut p = vec![0u8; len];
        p[0..2].copy_from_slice(&id.to_le_bytes());
        for (at, b) in put {
            p[*at..*at + b.len()].copy_from_slice(b);
        }
        p
    }

    /// One page of `(delta, payload)` events after `ts`, with `lost` stored when non-zero.
    fn page(ts: u64, events: &[(u32, Vec<u8>)], lost: u64) -> Vec<u8> {
        let mut b = vec![0u8; 16];
        b[0..8].copy_from_slice(&ts.to_le_bytes());
        for (delta, p) in events {
            let len = p.len().div_ceil(4) * 4;
            b.extend_from_slice(&(((len / 4) as u32) | (delta << 5)).to_le_bytes());
            let at = b.len();
            b.extend_from_slice(p);
            b.resize(at + len, 0);
        }
        let size = (b.len() - 16) as u64;
        let flags = if lost > 0 { (1 << 31) | (1 << 30) } else { 0 };
        b[8..16].copy_from_slice(&(size | flags).to_le_bytes());
        if lost > 0 {
            b.extend_from_slice(&lost.to_le_bytes());
        }
        b.resize(4096, 0);
        b
    }

    #[test]
    fn a_synthetic_recording_decodes_like_its_text() {
        let mut irq = payload(225, 16, &[(8, &36i32.to_le_bytes())]);
        irq[12..16].copy_from_slice(&(16u32 | (14 << 16)).to_le_bytes());
        irq.extend_from_slice(b"virtio1-req.0\0");
        let sw = payload(
            372,
            64,
            &[
                (8, b"bash"),
                (24, &24191i32.to_le_bytes()),
                (28, &120i32.to_le_bytes()),
                (32, &0x100i64.to_le_bytes()),
                (40, b"grep"),
                (56, &23134i32.to_le_bytes()),
                (60, &120i32.to_le_bytes()),
            ],
        );
        let hr = payload(459, 32, &[(24, &0xffff_ffff_8100_0180u64.to_le_bytes())]);
        let soft = payload(223, 12, &[(8, &3u32.to_le_bytes())]);
        let timer = payload(165, 12, &[(8, &236i32.to_le_bytes())]);
        let unknown = payload(999, 8, &[]);
        let mut pages = page(1_000, &[(5, irq), (10, sw), (1, hr)], 0);
        pages.extend(page(2_000, &[(0, soft), (3, timer), (1, unknown)], 7));
        let raw = streamed(&pages, 1, "ffffffff81000100 T tick_nohz_handler\n");
        let d = decode_raw(&raw);
        assert_eq!((d.lost, d.malformed), (7, 1));
        let want = crate::decode::decode(
            "x-1 [001] d.h1. 1005: irq_handler_entry: irq=36 name=virtio1-req.0\n\
             x-1 [001] d..2. 1015: sched_switch: prev_comm=bash prev_pid=24191 prev_prio=120 prev_state=R+ ==> next_comm=grep next_pid=23134 next_prio=120\n\
             x-1 [001] d.h1. 1016: hrtimer_expire_entry: hrtimer=00000000 function=tick_nohz_handler now=1\n\
             x-1 [001] ..s1. 2000: softirq_entry: vec=3 [action=NET_RX]\n\
             x-1 [001] d.h1. 2003: local_timer_entry: vector=236\n",
        );
        assert_eq!(want.malformed, 0);
        assert_eq!(d.events, want.events);
    }

    /// The reader keeps of a payload only the fields of `KEPT_FIELDS`: for every event
    /// of this kernel's formats, a payload full of noise (pids, pointers, `now`, a
    /// `handled` count, the padding) decodes through the compact store to exactly what
    /// the full payload decodes to, and payloads differing only in unread fields share
    /// one kind.
    #[test]
    fn the_compact_store_keeps_every_field_the_decoder_reads() {
        let syms = "ffffffff81000100 T tick_nohz_handler\nffffffff81000400 T vmstat_update\n";
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut noise = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for f in formats() {
            // 64 bytes of noise, the data_loc strings after them, some fields set to
            // values that decode (a known function, a valid vector)
            let mut base: Vec<u8> = (0..64).map(|_| noise() as u8).collect();
            base[0..2].copy_from_slice(&f.id.to_le_bytes());
            for fd in f.fields.iter().filter(|fd| fd.is_data_loc()) {
                base[fd.offset..fd.offset + 4].copy_from_slice(&(64u32 | (6 << 16)).to_le_bytes());
            }
            base.extend_from_slice(b"veth0\0");
            for (n, v) in [
                ("handler", 0xffff_ffff_8100_0180u64),
                ("function", 0xffff_ffff_8100_0410),
                ("vec", 3),
            ] {
                if let Some(fd) = f.field(n) {
                    base[fd.offset..fd.offset + fd.size]
                        .copy_from_slice(&v.to_le_bytes()[..fd.size]);
                }
            }
            let kept = latlab_core::ftrace_compact::KEPT_FIELDS
                .iter()
                .find(|(n, _)| *n == f.name)
                .map_or(&[][..], |(_, k)| *k);
            let mut evs = Vec::new();
            for round in 0..2 {
                // each round: new noise in every field the reader may drop
                let mut p = base.clone();
                for fd in &f.fields {
                    if fd.name != "common_type" && !kept.contains(&fd.name.as_str()) {
                        for b in &mut p[fd.offset..fd.offset + fd.size] {
                            *b = noise() as u8;
                        }
                    }
                }
                let want = kind_of(&f, &p, &Symbols::parse(syms));
                assert!(want.is_some(), "{}: {p:?}", f.name);
                evs.push((1 + round, p, want));
            }
            let page = page(
                10,
                &evs.iter()
                    .map(|(d, p, _)| (*d, p.clone()))
                    .collect::<Vec<_>>(),
                0,
            );
            let raw = streamed(&page, 0, syms);
            assert_eq!(raw.events.kinds.len(), 1, "{}: unread fields kept", f.name);
            let d = decode_raw(&raw);
            assert_eq!(d.malformed, 0);
            let got: Vec<_> = d.events.into_iter().map(|e| Some(e.kind)).collect();
            let want: Vec<_> = evs.into_iter().map(|e| e.2).collect();
            assert_eq!(got, want, "{}", f.name);
        }
    }

    #[test]
    fn task_states_print_as_the_kernel_prints_them() {
        assert_eq!(task_state(0), "R");
        assert_eq!(task_state(0x100), "R+");
        assert_eq!(task_state(1), "S");
        assert_eq!(task_state(2), "D");
        assert_eq!(task_state(0x80), "I");
        assert_eq!(task_state(0x03), "S|D");
    }
}

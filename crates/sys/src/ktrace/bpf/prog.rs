//! The BPF recorder's programs and records (pure: the programs are assembled here and
//! run by the assembler's interpreter in the tests; loading them is [`super`]'s job).
//!
//! One program per raw tracepoint. Each builds a record on its stack and copies it into
//! its CPU's ring ([`super::rings`], behind the record's sequence word), except
//! `softirq_entry`'s, which only stashes its time for the exit's record
//! ([`Src::Stash`]):
//!
//! ```text
//! 0   u64  bpf_ktime_get_ns()          (CLOCK_MONOTONIC, read last; mapped to the TSC)
//! 8   u16  event id                    ┐ the "payload": laid out as the tracepoint's own
//! 10  u16  CPU                         │ format file names its fields (same names, so the
//! 12  u32  0                           │ tracefs decoder reads it through [`formats`]),
//! 16  …    the fields the attribution  │ with the CPU cleared before it is stored as a
//!          reads ([`EVENTS`])          ┘ kind
//! ```
//!
//! Only the fields `latlab-explain` reads are recorded, so a record is 16–72 bytes. Task
//! fields come from the `task_struct` the tracepoint passes, at the offsets the kernel's
//! BTF gives ([`crate::btf::RecorderFields`]): loaded directly by a BTF-typed program
//! ([`ProgOptions::direct`]), else read with `bpf_probe_read_kernel`; an IRQ's name
//! through `irqaction.name`, a timer's and a work item's function through
//! `hrtimer.function` and `work_struct.func`.
//! `sched_switch`'s `prev_state` is reduced as the tracepoint's own
//! `__trace_sched_switch_state` does (one `TASK_REPORT` bit, `TASK_REPORT_MAX` when
//! preempted), so the decoder prints the same letters.
//!
//! A program first checks the CPU against the traced set, and a `sched_switch` program
//! given a [`SwitchDrop`] returns without writing for a switch between the idle task and a
//! watched thread (the rule of `latlab_explain::filter`). When the ring is full the
//! record is counted, per CPU, in the ring's `lost` instead.

use crate::bpf::asm::{Alu, Asm, AsmError, Jmp, Size};
use crate::bpf::Insn;
use crate::btf::RecorderFields;
use latlab_core::ftrace_compact::{CompactCpu, CompactTrace};
use latlab_core::ftrace_raw::{EventFormat, Field};
use std::collections::HashMap;

/// `bpf_map_lookup_elem`.
const FN_MAP_LOOKUP: i32 = 1;
/// `bpf_ktime_get_ns`.
const FN_KTIME: i32 = 5;
/// `bpf_get_smp_processor_id`.
const FN_CPU: i32 = 8;
/// `bpf_probe_read_kernel`.
const FN_PROBE_READ: i32 = 113;
/// `bpf_probe_read_kernel_str`.
const FN_PROBE_READ_STR: i32 = 115;
/// `bpf_ringbuf_output` (the doorbell only).
const FN_RINGBUF_OUTPUT: i32 = 130;

/// Bytes before the payload (the timestamp).
pub const HEADER: usize = 8;
/// Bytes of an IRQ name kept (the tracefs event keeps it whole; names are short).
pub const IRQ_NAME: usize = 32;

/// Where a field's value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    /// The tracepoint's argument `n`, stored in the field's size.
    Arg(u8),
    /// `size` bytes at `member` of the struct argument `n` points to.
    Deref(u8, Member),
    /// The NUL-terminated string the pointer at `member` of argument `n`'s struct points
    /// to, at most the field's size.
    DerefStr(u8, Member),
    /// `sched_switch`'s `prev_state` as the tracepoint reports it.
    SwitchState,
    /// The time the running softirq's `softirq_entry` stashed in this CPU's control
    /// block, when it stashed this vector (else 0); the stash is cleared.
    Stash,
}

/// The `softirq_exit` record's field holding its entry's time.
pub const ENTRY_NS: &str = "entry_ns";

/// The kernel struct members a program reads (their offsets are [`RecorderFields`]').
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Member {
    /// `task_struct.comm`.
    Comm,
    /// `task_struct.pid`.
    Pid,
    /// `task_struct.prio`.
    Prio,
    /// `irqaction.name`.
    IrqName,
    /// `hrtimer.function`.
    HrtimerFunction,
    /// `work_struct.func`.
    WorkFunc,
}

impl Member {
    fn offset(self, f: &RecorderFields) -> i32 {
        (match self {
            Member::Comm => f.task.comm.offset,
            Member::Pid => f.task.pid.offset,
            Member::Prio => f.task.prio.offset,
            Member::IrqName => f.irq_name.offset,
            Member::HrtimerFunction => f.hrtimer_function.offset,
            Member::WorkFunc => f.work_func.offset,
        }) as i32
    }
}

/// One recorded field: its name and C type as the tracepoint's format file gives them,
/// its place in the payload, and its source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldSpec {
    /// The format's name for it.
    pub name: &'static str,
    /// Its C type.
    pub ctype: &'static str,
    /// Offset in the payload.
    pub at: usize,
    /// Bytes.
    pub size: usize,
    /// Signed.
    pub signed: bool,
    /// Where it comes from.
    pub src: Src,
}

/// One traced event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventSpec {
    /// `group/name`, as the tracefs recorder names it.
    pub event: &'static str,
    /// Its fields.
    pub fields: &'static [FieldSpec],
}

impl EventSpec {
    /// The raw tracepoint's name.
    pub fn tracepoint(&self) -> &'static str {
        self.event.split_once('/').map_or(self.event, |(_, n)| n)
    }
    /// Payload bytes (a multiple of 8).
    pub fn payload_len(&self) -> usize {
        let end = self.fields.iter().map(|f| f.at + f.size).max().unwrap_or(8);
        end.max(8).next_multiple_of(8)
    }
}

const fn f(
    name: &'static str,
    ctype: &'static str,
    at: usize,
    size: usize,
    signed: bool,
    src: Src,
) -> FieldSpec {
    FieldSpec {
        name,
        ctype,
        at,
        size,
        signed,
        src,
    }
}

const VECTOR: &[FieldSpec] = &[f("vector", "int", 8, 4, true, Src::Arg(0))];

/// Every event the BPF recorder can record: the attribution's set
/// (`crate::ktrace::DEFAULT_EVENTS`).
pub const EVENTS: &[EventSpec] = &[
    EventSpec {
        event: "irq/irq_handler_entry",
        fields: &[
            f("irq", "int", 8, 4, true, Src::Arg(0)),
            f(
                "name",
                "char",
                12,
                IRQ_NAME,
                false,
                Src::DerefStr(1, Member::IrqName),
            ),
        ],
    },
    EventSpec {
        event: "irq/irq_handler_exit",
        fields: &[
            f("irq", "int", 8, 4, true, Src::Arg(0)),
            f("ret", "int", 12, 4, true, Src::Arg(2)),
        ],
    },
    EventSpec {
        event: "irq/softirq_entry",
        fields: &[f("vec", "unsigned int", 8, 4, false, Src::Arg(0))],
    },
    EventSpec {
        event: "irq/softirq_exit",
        fields: &[
            f("vec", "unsigned int", 8, 4, false, Src::Arg(0)),
            // not the tracepoint's: the entry's time, which `softirq_entry` stashed
            // instead of writing a record of its own ([`softirq_entry`]); the collector
            // makes the entry event of it and zeroes it in the exit's kind
            f(ENTRY_NS, "u64", 16, 8, false, Src::Stash),
        ],
    },
    EventSpec {
        event: "irq_vectors/local_timer_entry",
        fields: VECTOR,
    },
    EventSpec {
        event: "irq_vectors/local_timer_exit",
        fields: VECTOR,
    },
    EventSpec {
        event: "irq_vectors/reschedule_entry",
        fields: VECTOR,
    },
    EventSpec {
        event: "irq_vectors/reschedule_exit",
        fields: VECTOR,
    },
    EventSpec {
        event: "irq_vectors/call_function_entry",
        fields: VECTOR,
    },
    EventSpec {
        event: "irq_vectors/call_function_exit",
        fields: VECTOR,
    },
    EventSpec {
        event: "irq_vectors/call_function_single_entry",
        fields: VECTOR,
    },
    EventSpec {
        event: "irq_vectors/call_function_single_exit",
        fields: VECTOR,
    },
    EventSpec {
        event: "irq_vectors/irq_work_entry",
        fields: VECTOR,
    },
    EventSpec {
        event: "irq_vectors/irq_work_exit",
        fields: VECTOR,
    },
    EventSpec {
        event: "irq_vectors/x86_platform_ipi_entry",
        fields: VECTOR,
    },
    EventSpec {
        event: "irq_vectors/x86_platform_ipi_exit",
        fields: VECTOR,
    },
    EventSpec {
        event: "nmi/nmi_handler",
        fields: &[
            f("handler", "void *", 8, 8, false, Src::Arg(0)),
            f("delta_ns", "s64", 16, 8, true, Src::Arg(1)),
            f("handled", "int", 24, 4, true, Src::Arg(2)),
        ],
    },
    EventSpec {
        event: "sched/sched_switch",
        fields: &[
            f(
                "prev_comm",
                "char",
                8,
                16,
                false,
                Src::Deref(1, Member::Comm),
            ),
            f("prev_pid", "pid_t", 24, 4, true, Src::Deref(1, Member::Pid)),
            f("prev_prio", "int", 28, 4, true, Src::Deref(1, Member::Prio)),
            f("prev_state", "long", 32, 8, true, Src::SwitchState),
            f(
                "next_comm",
                "char",
                40,
                16,
                false,
                Src::Deref(2, Member::Comm),
            ),
            f("next_pid", "pid_t", 56, 4, true, Src::Deref(2, Member::Pid)),
            f("next_prio", "int", 60, 4, true, Src::Deref(2, Member::Prio)),
        ],
    },
    EventSpec {
        event: "timer/hrtimer_expire_entry",
        fields: &[f(
            "function",
            "void *",
            8,
            8,
            false,
            Src::Deref(0, Member::HrtimerFunction),
        )],
    },
    EventSpec {
        event: "timer/hrtimer_expire_exit",
        fields: &[],
    },
    EventSpec {
        event: "workqueue/workqueue_execute_start",
        fields: &[f(
            "function",
            "void *",
            8,
            8,
            false,
            Src::Deref(0, Member::WorkFunc),
        )],
    },
    EventSpec {
        event: "workqueue/workqueue_execute_end",
        fields: &[],
    },
];

/// The event of id `id` ([`event_id`]).
pub fn event_by_id(id: u16) -> Option<&'static EventSpec> {
    EVENTS.get(usize::from(id).checked_sub(1)?)
}

/// An event's id in records: its index in [`EVENTS`] plus one.
pub fn event_id(event: &str) -> Option<u16> {
    EVENTS
        .iter()
        .position(|e| e.event == event)
        .map(|i| i as u16 + 1)
}

/// Each event's payload described as a tracefs format, so `latlab-explain`'s decoder of
/// streamed tracefs events reads BPF records unchanged.
pub fn formats() -> Vec<EventFormat> {
    EVENTS
        .iter()
        .enumerate()
        .map(|(i, e)| EventFormat {
            name: e.tracepoint().to_string(),
            id: i as u16 + 1,
            fields: std::iter::once(Field {
                name: "common_type".into(),
                ctype: "unsigned short".into(),
                offset: 0,
                size: 2,
                signed: false,
            })
            .chain(e.fields.iter().map(|f| Field {
                name: f.name.into(),
                ctype: f.ctype.into(),
                offset: f.at,
                size: f.size,
                signed: f.signed,
            }))
            .collect(),
        })
        .collect()
}

/// The switches a `sched_switch` program drops: those between the idle task (pid 0) and
/// a watched thread, a thread id in `tids` or a command name starting with one of
/// `comm_prefixes`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SwitchDrop {
    /// Watched thread ids.
    pub tids: Vec<i32>,
    /// Watched command-name prefixes (each at most 15 bytes: a comm is 16 with its NUL).
    pub comm_prefixes: Vec<String>,
}

/// What a program is built for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgOptions {
    /// The index array's descriptor: per CPU, its ring's index in `rings` + 1 (0: not
    /// traced).
    pub index_fd: i32,
    /// The ring array's descriptor: an element of [`super::rings::element_bytes`] per
    /// traced CPU.
    pub rings_fd: i32,
    /// A ring's bytes (a power of two, at most 2^28).
    pub ring: u32,
    /// The doorbell's descriptor: a BPF ring buffer that takes an 8-byte record when a
    /// record takes its ring past half full ([`super::rings::Doorbell`]).
    pub doorbell_fd: i32,
    /// The CPUs recorded (a mask of CPUs 0–63); `None`: every CPU.
    pub cpu_mask: Option<u64>,
    /// For `sched_switch`: the switches to drop.
    pub drop: Option<SwitchDrop>,
    /// Load struct fields directly (a BTF-typed `tp_btf` program, whose arguments the
    /// verifier knows as kernel pointers) instead of through `bpf_probe_read_kernel` (a
    /// plain raw-tracepoint program). A helper call per field is most of a switch
    /// record's cost.
    pub direct: bool,
}

/// The largest record in a ring: its sequence word, the time, the largest payload of
/// [`EVENTS`].
pub const RECORD_MAX: usize = 8 + HEADER + max_payload();

// A record that starts at a ring's last word runs on into the slack past it.
const _: () = assert!(RECORD_MAX <= super::rings::SLACK && RECORD_MAX % 8 == 0);

const fn max_payload() -> usize {
    let mut i = 0;
    let mut m = 0;
    while i < EVENTS.len() {
        let mut j = 0;
        while j < EVENTS[i].fields.len() {
            let f = &EVENTS[i].fields[j];
            let end = (f.at + f.size).next_multiple_of(8);
            if end > m {
                m = end;
            }
            j += 1;
        }
        i += 1;
    }
    m
}

/// Why a program could not be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProgError {
    /// A command-name prefix longer than a comm holds.
    #[error("comm prefix {0:?} is longer than 15 bytes")]
    LongPrefix(String),
    /// The assembler refused the program (a bug here).
    #[error("assembling: {0}")]
    Asm(#[from] AsmError),
}

/// The stack slot (relative to r10) holding a pointer read on the way to a string.
const SCRATCH: i16 = -8;
/// The stack slot holding a map lookup's key.
const KEY: i16 = -16;

/// The program recording `e`.
///
/// # Errors
/// [`ProgError`].
pub fn program(
    e: &EventSpec,
    fields: &RecorderFields,
    o: &ProgOptions,
) -> Result<Vec<Insn>, ProgError> {
    let id = (EVENTS.iter().position(|x| x == e).unwrap_or(0) + 1) as i32;
    let total = HEADER + e.payload_len();
    // the record lies at r10 - rec .. r10 - 16
    let rec = (16 + total) as i16;
    let at = |payload: usize| -rec + (HEADER + payload) as i16;
    let mut a = Asm::new();
    let out = a.label();
    a.alu_reg(Alu::Mov, 6, 1);
    if e.event == SOFTIRQ_ENTRY {
        softirq_entry(&mut a, o, out);
        a.bind(out);
        a.alu_imm(Alu::Mov, 0, 0).exit();
        return Ok(a.finish()?);
    }
    let switch_drop = o.drop.as_ref().filter(|_| e.event == "sched/sched_switch");
    if let (Some(d), true) = (switch_drop, o.direct) {
        // first thing, from the tasks themselves: a dropped switch costs a few loads
        drop_idle_switch_direct(&mut a, d, fields, out)?;
    }
    this_cpu_traced(&mut a, o, out);
    for k in (0..total).step_by(8) {
        a.st(Size::DW, 10, -rec + k as i16, 0);
    }
    a.alu_reg(Alu::Mov, 1, 7)
        .alu_imm(Alu::Lsh, 1, 16)
        .alu_imm(Alu::Or, 1, id)
        .stx(Size::DW, 10, at(0), 1);
    // whether a field's code has already looked up this CPU's element (into r8)
    let mut element_in_r8 = false;
    for fs in e.fields {
        match fs.src {
            Src::Arg(n) => {
                let size = match fs.size {
                    1 => Size::B,
                    2 => Size::H,
                    4 => Size::W,
                    _ => Size::DW,
                };
                a.ldx(Size::DW, 1, 6, 8 * i16::from(n))
                    .stx(size, 10, at(fs.at), 1);
            }
            Src::Deref(n, m) if o.direct => {
                // byte by byte: the verifier lets a load span one element of an array
                let step = if m == Member::Comm { 1 } else { fs.size };
                let size = match step {
                    1 => Size::B,
                    4 => Size::W,
                    _ => Size::DW,
                };
                a.ldx(Size::DW, 2, 6, 8 * i16::from(n));
                let off = m.offset(fields) as i16;
                for k in (0..fs.size).step_by(step) {
                    a.ldx(size, 1, 2, off + k as i16)
                        .stx(size, 10, at(fs.at) + k as i16, 1);
                }
            }
            Src::Deref(n, m) => {
                a.alu_reg(Alu::Mov, 1, 10)
                    .alu_imm(Alu::Add, 1, i32::from(at(fs.at)))
                    .alu_imm(Alu::Mov, 2, fs.size as i32)
                    .ldx(Size::DW, 3, 6, 8 * i16::from(n))
                    .alu_imm(Alu::Add, 3, m.offset(fields))
                    .call(FN_PROBE_READ);
            }
            Src::DerefStr(n, m) => {
                if o.direct {
                    a.ldx(Size::DW, 2, 6, 8 * i16::from(n))
                        .ldx(Size::DW, 1, 2, m.offset(fields) as i16)
                        .stx(Size::DW, 10, SCRATCH, 1);
                } else {
                    a.alu_reg(Alu::Mov, 1, 10)
                        .alu_imm(Alu::Add, 1, i32::from(SCRATCH))
                        .st(Size::DW, 10, SCRATCH, 0)
                        .alu_imm(Alu::Mov, 2, 8)
                        .ldx(Size::DW, 3, 6, 8 * i16::from(n))
                        .alu_imm(Alu::Add, 3, m.offset(fields))
                        .call(FN_PROBE_READ);
                }
                a.alu_reg(Alu::Mov, 1, 10)
                    .alu_imm(Alu::Add, 1, i32::from(at(fs.at)))
                    .alu_imm(Alu::Mov, 2, fs.size as i32)
                    .ldx(Size::DW, 3, 10, SCRATCH)
                    .call(FN_PROBE_READ_STR);
            }
            Src::SwitchState => switch_state(&mut a, fields, at(fs.at), o.direct),
            Src::Stash => {
                take_stash(&mut a, o, at(fs.at), out);
                element_in_r8 = true;
            }
        }
    }
    if let (Some(d), false) = (switch_drop, o.direct) {
        drop_idle_switch(&mut a, d, &at, out)?;
    }
    // the time last, once the record is known to be kept
    a.call(FN_KTIME).stx(Size::DW, 10, -rec, 0);
    write_record(&mut a, o, rec, total, element_in_r8);
    a.bind(out);
    a.alu_imm(Alu::Mov, 0, 0).exit();
    Ok(a.finish()?)
}

/// Copies the record (`total` bytes at r10 − `rec`) into this CPU's ring
/// ([`super::rings`]): a lock-free ring of latlab's own, since a BPF ring buffer's
/// reservation (a spin lock with interrupts off, then a commit) cost ~60–90 ns a record
/// here against ~10 ns for one atomic add (docs/benchmarks.md,
/// `scripts/explain-bpf-cost.sh`).
///
/// The record's bytes are reserved by an atomic fetch-and-add on the CPU's `head` (a
/// program that interrupts another on the same CPU takes the next bytes), written, and
/// published by the sequence word (position + 1, length in words) written last; a record
/// that takes the ring past half full then rings the doorbell. A ring
/// fuller than [`stop_at`] takes no reservation and counts the record lost; so does a
/// reservation that still runs past the end (possible only when programs nested in
/// between took the whole margin), whose bytes stay unwritten for the reader to search
/// past.
fn write_record(a: &mut Asm, o: &ProgOptions, rec: i16, total: usize, element_in_r8: bool) {
    use super::rings::{DATA, HEAD, LEN_SHIFT, LOST, TAIL};
    let len = (8 + total) as i32;
    let (lost, doorbell, done) = (a.label(), a.label(), a.label());
    if !element_in_r8 {
        lookup_element(a, o, done);
        a.alu_reg(Alu::Mov, 8, 0);
    }
    a.ldx(Size::DW, 1, 8, HEAD)
        .ldx(Size::DW, 2, 8, TAIL)
        .alu_reg(Alu::Sub, 1, 2)
        .jmp_imm(Jmp::Ge, 1, stop_at(o.ring) as i32, lost)
        .alu_imm(Alu::Mov, 9, len)
        .atomic_fetch_add(8, HEAD, 9)
        // still inside the ring once reserved? (head − tail + len ≤ ring)
        .alu_reg(Alu::Mov, 1, 9)
        .alu_imm(Alu::Add, 1, len)
        .alu_reg(Alu::Sub, 1, 2)
        .jmp_imm(Jmp::Gt, 1, o.ring as i32, lost)
        .alu_reg(Alu::Mov, 7, 1)
        .alu_reg(Alu::Mov, 1, 9)
        .alu_imm(Alu::And, 1, o.ring as i32 - 1)
        .alu_reg(Alu::Mov, 3, 8)
        .alu_reg(Alu::Add, 3, 1);
    for k in (0..total).step_by(8) {
        a.ldx(Size::DW, 1, 10, -rec + k as i16)
            .stx(Size::DW, 3, DATA + 8 + k as i16, 1);
    }
    a.alu_imm(Alu::Add, 9, 1)
        .ld_imm64(1, (len as u64 / 8) << LEN_SHIFT)
        .alu_reg(Alu::Or, 9, 1)
        .stx(Size::DW, 3, DATA, 9);
    // the record took the ring past half full (r7: the fill with it): ring the doorbell
    let half = (o.ring / 2) as i32;
    a.jmp_imm(Jmp::Gt, 7, half + len, done)
        .jmp_imm(Jmp::Gt, 7, half, doorbell)
        .ja(done);
    a.bind(doorbell);
    a.st(Size::DW, 10, SCRATCH, 0)
        .ld_map(1, o.doorbell_fd)
        .alu_reg(Alu::Mov, 2, 10)
        .alu_imm(Alu::Add, 2, i32::from(SCRATCH))
        .alu_imm(Alu::Mov, 3, 8)
        .alu_imm(Alu::Mov, 4, 0)
        .call(FN_RINGBUF_OUTPUT)
        .ja(done);
    a.bind(lost);
    a.alu_imm(Alu::Mov, 1, 1).atomic_add(8, LOST, 1);
    a.bind(done);
}

/// `r0 = ` this CPU's element of the rings map (its CPU in r7), or a jump to `none` when
/// the CPU has no ring.
fn lookup_element(a: &mut Asm, o: &ProgOptions, none: crate::bpf::asm::Label) {
    lookup_this_cpu(a, o.index_fd, none);
    a.ldx(Size::W, 1, 0, 0)
        .jmp_imm(Jmp::Eq, 1, 0, none)
        .alu_imm(Alu::Add, 1, -1)
        .stx(Size::W, 10, KEY, 1)
        .ld_map(1, o.rings_fd)
        .alu_reg(Alu::Mov, 2, 10)
        .alu_imm(Alu::Add, 2, i32::from(KEY))
        .call(FN_MAP_LOOKUP)
        .jmp_imm(Jmp::Eq, 0, 0, none);
}

/// `r7 =` this CPU; a jump to `out` when it is not in the traced set.
fn this_cpu_traced(a: &mut Asm, o: &ProgOptions, out: crate::bpf::asm::Label) {
    a.call(FN_CPU).alu_reg(Alu::Mov, 7, 0);
    if let Some(mask) = o.cpu_mask {
        a.jmp_imm(Jmp::Gt, 7, 63, out)
            .ld_imm64(1, mask)
            .alu_reg(Alu::Rsh, 1, 7)
            .alu_imm(Alu::And, 1, 1)
            .jmp_imm(Jmp::Eq, 1, 0, out);
    }
}

/// `softirq_entry`'s event name.
const SOFTIRQ_ENTRY: &str = "irq/softirq_entry";
/// `softirq_exit`'s.
const SOFTIRQ_EXIT: &str = "irq/softirq_exit";

/// The `softirq_entry` program writes no record: it stashes the time and the vector in
/// its CPU's control block ([`super::rings::STASH`]), and `softirq_exit` writes one record
/// holding both times ([`Src::Stash`]). A send's NET_RX softirq runs in the sender's
/// system call, before the answer's wake-up: the entry's ring write was on every round
/// trip's critical path, the exit's is not (the receiver is already woken). Softirqs do
/// not nest on a CPU, so one stash per CPU holds the running one.
fn softirq_entry(a: &mut Asm, o: &ProgOptions, out: crate::bpf::asm::Label) {
    use super::rings::{STASH, STASH_VEC};
    this_cpu_traced(a, o, out);
    lookup_element(a, o, out);
    a.alu_reg(Alu::Mov, 8, 0)
        .call(FN_KTIME)
        .stx(Size::DW, 8, STASH, 0)
        .ldx(Size::DW, 1, 6, 0)
        .stx(Size::W, 8, STASH_VEC, 1);
}

/// Into the record at `dst`: the stashed entry time when the stash holds this exit's
/// vector (argument 0), else nothing (the record's zero); the stash is cleared either way.
/// Leaves this CPU's element in r8 for [`write_record`]; a CPU without one jumps to `out`
/// (it would have no ring to write to).
fn take_stash(a: &mut Asm, o: &ProgOptions, dst: i16, out: crate::bpf::asm::Label) {
    use super::rings::{STASH, STASH_VEC};
    let clear = a.label();
    // r7: this CPU (the program read it before the fields)
    lookup_element(a, o, out);
    a.alu_reg(Alu::Mov, 8, 0)
        .ldx(Size::W, 1, 0, STASH_VEC)
        .ldx(Size::DW, 2, 6, 0)
        .alu_imm(Alu::Lsh, 2, 32)
        .alu_imm(Alu::Rsh, 2, 32)
        .jmp_reg(Jmp::Ne, 1, 2, clear)
        .ldx(Size::DW, 1, 0, STASH)
        .stx(Size::DW, 10, dst, 1);
    a.bind(clear);
    a.st(Size::DW, 8, STASH, 0);
}

/// The fill, in bytes, at which a program stops reserving: an eighth of the ring is left
/// for programs that interrupt one between its check and its reservation.
pub fn stop_at(ring: u32) -> u32 {
    ring - ring / 8
}

/// `r0 = &map[this CPU]` (the CPU's index is in r7), or a jump to `none` when it has no
/// entry.
fn lookup_this_cpu(a: &mut Asm, map_fd: i32, none: crate::bpf::asm::Label) {
    a.stx(Size::W, 10, KEY, 7)
        .ld_map(1, map_fd)
        .alu_reg(Alu::Mov, 2, 10)
        .alu_imm(Alu::Add, 2, i32::from(KEY))
        .call(FN_MAP_LOOKUP)
        .jmp_imm(Jmp::Eq, 0, 0, none);
}

/// `prev_state` as `__trace_sched_switch_state` reports it, into the record at `dst`:
/// `TASK_REPORT_MAX` (0x100) when preempted; else the highest `TASK_REPORT` bit of the
/// state (with `exit_state` for a dead task), `TASK_IDLE` as `TASK_REPORT_IDLE` (0x80),
/// `TASK_RTLOCK_WAIT` as `TASK_UNINTERRUPTIBLE`.
fn switch_state(a: &mut Asm, fields: &RecorderFields, dst: i16, direct: bool) {
    let store = a.label();
    let not_preempted = a.label();
    a.ldx(Size::DW, 1, 6, 0)
        .alu_imm(Alu::And, 1, 0xff)
        .jmp_imm(Jmp::Eq, 1, 0, not_preempted)
        .alu_imm(Alu::Mov, 1, 0x100)
        .ja(store);
    a.bind(not_preempted);
    let (idle, rtlock, dead, bits) = (a.label(), a.label(), a.label(), a.label());
    a.ldx(Size::DW, 1, 6, 24)
        .alu_imm(Alu::Lsh, 1, 32)
        .alu_imm(Alu::Rsh, 1, 32)
        .jmp_imm(Jmp::Eq, 1, 0x402, idle)
        .jmp_imm(Jmp::Eq, 1, 0x1000, rtlock)
        .jmp_imm(Jmp::Set, 1, 0x80, dead)
        .ja(bits);
    a.bind(idle);
    a.alu_imm(Alu::Mov, 1, 0x80).ja(store);
    a.bind(rtlock);
    a.alu_imm(Alu::Mov, 1, 2).ja(store);
    a.bind(dead);
    // TASK_DEAD: the report is the exit state's (EXIT_DEAD 0x10, EXIT_ZOMBIE 0x20)
    if direct {
        a.ldx(Size::DW, 2, 6, 8)
            .ldx(Size::W, 1, 2, fields.exit_state.offset as i16);
    } else {
        a.stx(Size::DW, 10, SCRATCH, 1)
            .alu_reg(Alu::Mov, 1, 10)
            .alu_imm(Alu::Add, 1, i32::from(SCRATCH))
            .alu_imm(Alu::Mov, 2, 4)
            .ldx(Size::DW, 3, 6, 8)
            .alu_imm(Alu::Add, 3, fields.exit_state.offset as i32)
            .call(FN_PROBE_READ)
            .ldx(Size::DW, 1, 10, SCRATCH);
    }
    a.bind(bits);
    a.alu_imm(Alu::And, 1, 0x7f);
    for bit in [0x40, 0x20, 0x10, 0x08, 0x04, 0x02] {
        let next = a.label();
        a.jmp_imm(Jmp::Set, 1, bit, next);
        continue_chain(a, next, bit, store);
    }
    a.bind(store);
    a.stx(Size::DW, 10, dst, 1);
}

/// The tail of one test of [`switch_state`]'s bit chain: when the bit was not set, the
/// jump above fell through to the next test; when set, `r1 = bit` and store.
fn continue_chain(
    a: &mut Asm,
    set: crate::bpf::asm::Label,
    bit: i32,
    store: crate::bpf::asm::Label,
) {
    let skip = a.label();
    a.ja(skip);
    a.bind(set);
    a.alu_imm(Alu::Mov, 1, bit).ja(store);
    a.bind(skip);
}

/// Jumps to `drop` when the switch is idle ↔ watched, reading the two tasks (arguments 1
/// and 2) directly: their pids, and a watched side's name byte by byte.
fn drop_idle_switch_direct(
    a: &mut Asm,
    d: &SwitchDrop,
    f: &RecorderFields,
    drop: crate::bpf::asm::Label,
) -> Result<(), ProgError> {
    let (pid, comm) = (f.task.pid.offset as i16, f.task.comm.offset as i16);
    let (keep, prev_not_idle) = (a.label(), a.label());
    a.ldx(Size::DW, 2, 6, 8).ldx(Size::DW, 3, 6, 16);
    a.ldx(Size::W, 1, 2, pid)
        .jmp_imm(Jmp::Ne, 1, 0, prev_not_idle);
    watched_direct(a, d, 3, pid, comm, drop)?;
    a.ja(keep);
    a.bind(prev_not_idle);
    a.ldx(Size::W, 1, 3, pid).jmp_imm(Jmp::Ne, 1, 0, keep);
    watched_direct(a, d, 2, pid, comm, drop)?;
    a.bind(keep);
    Ok(())
}

/// Jumps to `yes` when the task register `t` points to is watched.
fn watched_direct(
    a: &mut Asm,
    d: &SwitchDrop,
    t: u8,
    pid: i16,
    comm: i16,
    yes: crate::bpf::asm::Label,
) -> Result<(), ProgError> {
    for &tid in &d.tids {
        a.ldx(Size::W, 1, t, pid).jmp_imm(Jmp::Eq, 1, tid, yes);
    }
    for p in &d.comm_prefixes {
        if p.len() > 15 {
            return Err(ProgError::LongPrefix(p.clone()));
        }
        let no = a.label();
        for (k, &b) in p.as_bytes().iter().enumerate() {
            a.ldx(Size::B, 1, t, comm + k as i16)
                .jmp_imm(Jmp::Ne, 1, i32::from(b), no);
        }
        a.ja(yes);
        a.bind(no);
    }
    Ok(())
}

/// Jumps to `drop` when the switch in the record is idle ↔ watched.
fn drop_idle_switch(
    a: &mut Asm,
    d: &SwitchDrop,
    at: &dyn Fn(usize) -> i16,
    drop: crate::bpf::asm::Label,
) -> Result<(), ProgError> {
    // prev_pid 24, prev_comm 8, next_pid 56, next_comm 40 (EVENTS' sched_switch)
    let (keep, prev_not_idle) = (a.label(), a.label());
    a.ldx(Size::W, 1, 10, at(24))
        .jmp_imm(Jmp::Ne, 1, 0, prev_not_idle);
    watched(a, d, at(56), at(40), drop)?;
    a.ja(keep);
    a.bind(prev_not_idle);
    a.ldx(Size::W, 1, 10, at(56)).jmp_imm(Jmp::Ne, 1, 0, keep);
    watched(a, d, at(24), at(8), drop)?;
    a.bind(keep);
    Ok(())
}

/// Jumps to `yes` when the task whose pid and comm are at `pid` and `comm` is watched.
fn watched(
    a: &mut Asm,
    d: &SwitchDrop,
    pid: i16,
    comm: i16,
    yes: crate::bpf::asm::Label,
) -> Result<(), ProgError> {
    for &t in &d.tids {
        a.ldx(Size::W, 1, 10, pid).jmp_imm(Jmp::Eq, 1, t, yes);
    }
    for p in &d.comm_prefixes {
        let b = p.as_bytes();
        if b.len() > 15 {
            return Err(ProgError::LongPrefix(p.clone()));
        }
        let no = a.label();
        for (w, chunk) in b.chunks(8).enumerate() {
            let mut value = [0u8; 8];
            value[..chunk.len()].copy_from_slice(chunk);
            let mask = if chunk.len() == 8 {
                u64::MAX
            } else {
                (1u64 << (8 * chunk.len())) - 1
            };
            a.ldx(Size::DW, 1, 10, comm + 8 * w as i16)
                .ld_imm64(2, mask)
                .alu_reg(Alu::And, 1, 2)
                .ld_imm64(2, u64::from_le_bytes(value))
                .jmp_reg(Jmp::Ne, 1, 2, no);
        }
        a.ja(yes);
        a.bind(no);
    }
    Ok(())
}

/// Records as the reader takes them out of the ring, kept as the tracefs reader keeps
/// its events ([`CompactTrace`]: per CPU a time and a kind, each distinct payload once).
#[derive(Debug)]
pub struct Collector {
    cpus: Vec<u32>,
    per_cpu: Vec<(Vec<u64>, Vec<u32>)>,
    index: HashMap<Vec<u8>, u32>,
    kinds: Vec<Vec<u8>>,
    malformed: u64,
    scratch: Vec<u8>,
    /// The ids of `softirq_entry` and `softirq_exit` (looked up once, not per record).
    softirq_ids: (u16, u16),
}

impl Collector {
    /// A collector for records of `cpus` (records of other CPUs count as malformed).
    pub fn new(cpus: &[u32]) -> Collector {
        Collector {
            cpus: cpus.to_vec(),
            per_cpu: vec![(Vec::new(), Vec::new()); cpus.len()],
            index: HashMap::new(),
            kinds: Vec::new(),
            malformed: 0,
            scratch: Vec::new(),
            softirq_ids: (
                event_id(SOFTIRQ_ENTRY).expect("an event of EVENTS"),
                event_id(SOFTIRQ_EXIT).expect("an event of EVENTS"),
            ),
        }
    }

    /// Records taken so far.
    pub fn events(&self) -> u64 {
        self.per_cpu.iter().map(|(t, _)| t.len() as u64).sum()
    }

    /// Takes one record (the timestamp, then the payload).
    pub fn push(&mut self, rec: &[u8]) {
        let ok = (|| {
            let ns = u64::from_le_bytes(rec.get(..8)?.try_into().ok()?);
            let p = &rec[8..];
            let id = u16::from_le_bytes(p.get(..2)?.try_into().ok()?);
            let cpu = u32::from(u16::from_le_bytes(p.get(2..4)?.try_into().ok()?));
            let len = event_by_id(id)?.payload_len();
            let at = self.cpus.iter().position(|&c| c == cpu)?;
            let mut scratch = std::mem::take(&mut self.scratch);
            scratch.clear();
            scratch.extend_from_slice(p.get(..len)?);
            scratch[2..4].fill(0);
            let (entry_id, exit_id) = self.softirq_ids;
            if id == exit_id {
                // one record for the softirq: its entry's time rides in the exit's
                // payload ([`softirq_entry`]); the entry event is made of it, and the
                // exit's kind has it zeroed
                let entry = u64::from_le_bytes(scratch.get(16..24)?.try_into().ok()?);
                scratch[16..24].fill(0);
                if entry != 0 {
                    // on the stack: this runs for every softirq the reader drains
                    let mut buf = [0u8; RECORD_MAX];
                    let e = buf.get_mut(..event_by_id(entry_id)?.payload_len())?;
                    e[..2].copy_from_slice(&entry_id.to_le_bytes());
                    e[8..12].copy_from_slice(&scratch[8..12]);
                    let k = self.kind(e);
                    self.per_cpu[at].0.push(entry);
                    self.per_cpu[at].1.push(k);
                }
            }
            let k = self.kind(&scratch);
            self.scratch = scratch;
            self.per_cpu[at].0.push(ns);
            self.per_cpu[at].1.push(k);
            Some(())
        })();
        if ok.is_none() {
            self.malformed += 1;
        }
    }

    /// The kind of `payload`, interned.
    fn kind(&mut self, payload: &[u8]) -> u32 {
        match self.index.get(payload) {
            Some(&k) => k,
            None => {
                let k = self.kinds.len() as u32;
                self.kinds.push(payload.to_vec());
                self.index.insert(payload.to_vec(), k);
                k
            }
        }
    }

    /// The events stamped within `keep` (monotonic ns, both ends included) with their
    /// times mapped by `to_tsc`, each CPU's in time order (a program interrupted between
    /// its clock read and its write lands after the interrupt's own record).
    pub fn finish(self, keep: (u64, u64), to_tsc: &dyn Fn(u64) -> u64) -> CompactTrace {
        let cpus = self
            .cpus
            .iter()
            .zip(self.per_cpu)
            .map(|(&cpu, (ns, kind))| {
                let mut ev: Vec<(u64, u32)> = ns
                    .iter()
                    .zip(kind)
                    .filter(|(&t, _)| t >= keep.0 && t <= keep.1)
                    .map(|(&t, k)| (to_tsc(t), k))
                    .collect();
                if !ev.windows(2).all(|w| w[0].0 <= w[1].0) {
                    ev.sort_by_key(|e| e.0);
                }
                let (tsc, kind) = ev.into_iter().unzip();
                CompactCpu { cpu, tsc, kind }
            })
            .collect();
        CompactTrace {
            cpus,
            kinds: self.kinds,
            lost: 0,
            malformed: self.malformed,
        }
    }
}

#[cfg(test)]
mod tests;

//! Tests of the recorder's BPF programs, run in the in-tree interpreter
//! (`crate::bpf::asm::interp`) on synthetic task and CPU memory.

use super::*;
use crate::bpf::asm::interp::{Region, Vm};
use latlab_core::btf::Member as BtfMember;

fn m(offset: u32, size: u32) -> BtfMember {
    BtfMember {
        offset,
        size,
        bitfield: false,
    }
}

/// Offsets like this kernel's (the programs must use these, not constants).
fn fields() -> RecorderFields {
    RecorderFields {
        task: crate::btf::TaskFields {
            pid: m(1264, 4),
            comm: m(1752, 16),
            prio: m(108, 4),
            state: m(24, 4),
        },
        exit_state: m(1160, 4),
        irq_name: m(80, 8),
        hrtimer_function: m(40, 8),
        work_func: m(24, 8),
    }
}

const CTX: u64 = 0x1000;
const PREV: u64 = 0x10_0000;
const NEXT: u64 = 0x20_0000;
/// The index array (a u32 per CPU).
const INDEX: u64 = 0x30_0000;
/// The ring array: two elements (CPU 0's, and any other CPU's).
const RINGS: u64 = 0x60_0000;
/// A ring's bytes in the tests.
const RING: u32 = 256;
/// Bytes in use that leave room for any record.
const ROOM: u64 = 40;

fn task(base: u64, comm: &str, pid: i32, prio: i32, exit_state: i32) -> Region {
    let f = fields();
    let mut b = vec![0u8; 2048];
    b[f.task.comm.offset as usize..][..comm.len()].copy_from_slice(comm.as_bytes());
    b[f.task.pid.offset as usize..][..4].copy_from_slice(&pid.to_le_bytes());
    b[f.task.prio.offset as usize..][..4].copy_from_slice(&prio.to_le_bytes());
    b[f.exit_state.offset as usize..][..4].copy_from_slice(&exit_state.to_le_bytes());
    Region { base, bytes: b }
}

/// What one run of a program did.
struct Run {
    records: Vec<Vec<u8>>,
    lost: u64,
    /// Doorbell rings.
    rang: u32,
    /// This CPU's softirq stash after the run (time, vector).
    stash: (u64, u32),
}

/// Runs `e`'s program on CPU `cpu` with tracepoint arguments `args` and kernel
/// memory `mem`, with `used` bytes of its ring in use ([`ROOM`]: room for any record;
/// [`stop_at`]: full). Both forms of the program (fields read through the helper,
/// and loaded directly) run, and must do the same.
fn run(e: &EventSpec, o: &ProgOptions, cpu: u64, args: &[u64], mem: Vec<Region>, used: u64) -> Run {
    run_stashed(e, o, cpu, args, mem, used, (0, 0))
}

/// [`run`] with this CPU's softirq stash holding `stash` (time, vector) before.
fn run_stashed(
    e: &EventSpec,
    o: &ProgOptions,
    cpu: u64,
    args: &[u64],
    mem: Vec<Region>,
    used: u64,
    stash: (u64, u32),
) -> Run {
    let helper = run_one(
        e,
        &ProgOptions {
            direct: false,
            ..o.clone()
        },
        cpu,
        args,
        mem.clone(),
        used,
        stash,
    );
    let direct = run_one(
        e,
        &ProgOptions {
            direct: true,
            ..o.clone()
        },
        cpu,
        args,
        mem,
        used,
        stash,
    );
    assert_eq!(
        helper.records, direct.records,
        "{}: the two forms differ",
        e.event
    );
    assert_eq!(helper.lost, direct.lost);
    assert_eq!(helper.rang, direct.rang);
    assert_eq!(helper.stash, direct.stash);
    direct
}

fn run_one(
    e: &EventSpec,
    o: &ProgOptions,
    cpu: u64,
    args: &[u64],
    mut mem: Vec<Region>,
    used: u64,
    stash: (u64, u32),
) -> Run {
    let p = program(e, &fields(), o).unwrap();
    if o.direct {
        // the direct form calls no helper to read a field
        let reads = p
            .iter()
            .filter(|i| i.code == crate::bpf::asm::CALL && i.imm == FN_PROBE_READ)
            .count();
        assert_eq!(reads, 0, "{}", e.event);
    }
    let mut ctx = vec![0u8; 64];
    for (i, a) in args.iter().enumerate() {
        ctx[8 * i..8 * i + 8].copy_from_slice(&a.to_le_bytes());
    }
    mem.push(Region {
        base: CTX,
        bytes: ctx,
    });
    // ring 0 is CPU 0's, ring 1 every other CPU's; `used` bytes in use, with ROOM
    // wrapped so that the next record goes at offset 16
    use super::super::rings::{element_bytes, DATA, HEAD, LEN_SHIFT, LOST, TAIL};
    let n_cpus = (cpu as usize + 1).max(2);
    let mut index = Vec::new();
    for c in 0..n_cpus {
        index.extend((c.min(1) as u32 + 1).to_le_bytes());
    }
    mem.push(Region {
        base: INDEX,
        bytes: index,
    });
    let elem = element_bytes(RING as usize);
    let tail = 1000u64;
    let head = tail + used;
    let mut rings = vec![0u8; 2 * elem];
    use super::super::rings::{STASH, STASH_VEC};
    for k in 0..2 {
        rings[k * elem + HEAD as usize..][..8].copy_from_slice(&head.to_le_bytes());
        rings[k * elem + TAIL as usize..][..8].copy_from_slice(&tail.to_le_bytes());
    }
    let mine = cpu.min(1) as usize * elem;
    rings[mine + STASH as usize..][..8].copy_from_slice(&stash.0.to_le_bytes());
    rings[mine + STASH_VEC as usize..][..4].copy_from_slice(&stash.1.to_le_bytes());
    mem.push(Region {
        base: RINGS,
        bytes: rings,
    });
    let mut vm = Vm::new(mem);
    vm.r[1] = CTX;
    let mut rang = 0;
    vm.run(&p, &mut |vm, f| match f {
        FN_RINGBUF_OUTPUT => {
            assert_eq!(vm.r[1], o.doorbell_fd as u64, "the doorbell");
            assert_eq!((vm.r[3], vm.r[4]), (8, 0), "8 bytes, woken");
            rang += 1;
            0
        }
        FN_CPU => cpu,
        FN_KTIME => 123_456_789,
        FN_PROBE_READ | FN_PROBE_READ_STR => {
            let (dst, n, src) = (vm.r[1], vm.r[2] as usize, vm.r[3]);
            let b = if f == FN_PROBE_READ_STR {
                // byte by byte up to the NUL, as the helper reads a string
                let mut b = vec![0u8; n];
                for (k, slot) in b.iter_mut().enumerate().take(n - 1) {
                    match vm.read(src + k as u64, 1) {
                        Some(c) if c[0] != 0 => *slot = c[0],
                        _ => break,
                    }
                }
                b
            } else {
                vm.read(src, n).unwrap_or_else(|| vec![0; n])
            };
            vm.write(dst, &b);
            0
        }
        FN_MAP_LOOKUP => {
            let key = vm.read(vm.r[2], 4).unwrap();
            let key = u64::from(u32::from_le_bytes(key.try_into().unwrap()));
            match vm.r[1] {
                r if r == o.index_fd as u64 => {
                    assert_eq!(key, cpu, "this CPU's index");
                    if key < n_cpus as u64 {
                        INDEX + 4 * key
                    } else {
                        0
                    }
                }
                r if r == o.rings_fd as u64 => {
                    assert_eq!(key, cpu.min(1), "this CPU's ring");
                    RINGS + key * elem as u64
                }
                r => panic!("lookup in map {r}"),
            }
        }
        other => panic!("helper {other}"),
    });
    let word = |k: u64, off: usize| {
        u64::from_le_bytes(
            vm.read(RINGS + k * elem as u64 + off as u64, 8)
                .unwrap()
                .try_into()
                .unwrap(),
        )
    };
    let k = cpu.min(1);
    // the other CPU's ring untouched
    assert_eq!(word(1 - k, HEAD as usize), head);
    let lost = word(k, LOST as usize);
    let mut records = Vec::new();
    let now = word(k, HEAD as usize);
    let off = DATA as usize + (head % u64::from(RING)) as usize;
    let seq = word(k, off);
    if seq == 0 {
        // nothing written (the head moved only for a reservation past the end)
        assert!(now == head || lost == 1);
    } else {
        let len = (seq >> LEN_SHIFT) * 8;
        assert_eq!(seq & ((1 << LEN_SHIFT) - 1), head + 1, "sequence word");
        assert_eq!(now, head + len, "the head moved by the record");
        let rec = vm
            .read(RINGS + k * elem as u64 + off as u64 + 8, len as usize - 8)
            .unwrap();
        let id = u16::from_le_bytes([rec[8], rec[9]]);
        assert_eq!(
            len as usize - 8,
            HEADER + event_by_id(id).unwrap().payload_len()
        );
        records.push(rec);
    }
    let stash = (word(k, STASH as usize), word(k, STASH_VEC as usize) as u32);
    Run {
        records,
        lost,
        rang,
        stash,
    }
}

fn opts() -> ProgOptions {
    ProgOptions {
        index_fd: 7,
        rings_fd: 8,
        ring: RING,
        doorbell_fd: 9,
        cpu_mask: Some(0b11),
        drop: None,
        direct: false,
    }
}

fn spec(name: &str) -> &'static EventSpec {
    EVENTS.iter().find(|e| e.event == name).unwrap()
}

/// Decodes a record through [`formats`], as `latlab-explain` does.
fn field(rec: &[u8], name: &str) -> String {
    let p = &rec[HEADER..];
    let id = u16::from_le_bytes([p[0], p[1]]);
    let f = formats().into_iter().find(|f| f.id == id).unwrap();
    let fl = f.field(name).unwrap();
    if fl.ctype == "char" {
        String::from_utf8_lossy(f.str(p, name).unwrap()).into_owned()
    } else {
        f.int(p, name).unwrap().to_string()
    }
}

#[test]
fn a_switch_record_holds_both_tasks_and_the_state_as_the_tracepoint_reports_it() {
    let sw = spec("sched/sched_switch");
    // (preempt, raw prev_state, exit_state) -> reported state
    for (preempt, state, exit, want) in [
        (1, 0x1, 0, 0x100),    // preempted: R+
        (0, 0x1, 0, 0x1),      // S
        (0, 0x2, 0, 0x2),      // D
        (0, 0x102, 0, 0x2),    // TASK_KILLABLE reports D
        (0, 0x402, 0, 0x80),   // TASK_IDLE: I
        (0, 0x1000, 0, 0x2),   // TASK_RTLOCK_WAIT: D
        (0, 0x80, 0x10, 0x10), // TASK_DEAD with EXIT_DEAD: X
        (0, 0x80, 0x20, 0x20), // and EXIT_ZOMBIE: Z
        (0, 0x0, 0, 0x0),      // R
    ] {
        let r = run(
            sw,
            &opts(),
            1,
            &[preempt, PREV, NEXT, state],
            vec![
                task(PREV, "latlab-rx", 4242, 49, exit),
                task(NEXT, "kworker/1:0", 77, 120, 0),
            ],
            ROOM,
        );
        assert_eq!(r.records.len(), 1);
        let rec = &r.records[0];
        assert_eq!(rec.len(), HEADER + sw.payload_len());
        assert_eq!(
            u64::from_le_bytes(rec[..8].try_into().unwrap()),
            123_456_789
        );
        assert_eq!(u16::from_le_bytes([rec[10], rec[11]]), 1, "the CPU");
        assert_eq!(
            field(rec, "prev_state"),
            want.to_string(),
            "state {state:#x} exit {exit:#x}"
        );
        assert_eq!(
            [
                field(rec, "prev_comm"),
                field(rec, "prev_pid"),
                field(rec, "prev_prio")
            ],
            ["latlab-rx", "4242", "49"]
        );
        assert_eq!(
            [
                field(rec, "next_comm"),
                field(rec, "next_pid"),
                field(rec, "next_prio")
            ],
            ["kworker/1:0", "77", "120"]
        );
    }
}

#[test]
fn an_irq_record_names_the_handler_through_its_irqaction() {
    const ACTION: u64 = 0x40_0000;
    const NAME: u64 = 0x50_0000;
    let mut action = vec![0u8; 128];
    action[80..88].copy_from_slice(&NAME.to_le_bytes());
    let name = b"virtio1-req.0\0".to_vec();
    let r = run(
        spec("irq/irq_handler_entry"),
        &opts(),
        0,
        &[36, ACTION],
        vec![
            Region {
                base: ACTION,
                bytes: action,
            },
            Region {
                base: NAME,
                bytes: name,
            },
        ],
        ROOM,
    );
    assert_eq!(field(&r.records[0], "irq"), "36");
    assert_eq!(field(&r.records[0], "name"), "virtio1-req.0");
}

#[test]
fn a_timer_record_holds_the_function_and_a_vector_record_its_vector() {
    const TIMER: u64 = 0x40_0000;
    let mut t = vec![0u8; 64];
    t[40..48].copy_from_slice(&0xffff_ffff_8123_4567u64.to_le_bytes());
    let r = run(
        spec("timer/hrtimer_expire_entry"),
        &opts(),
        0,
        &[TIMER, 0],
        vec![Region {
            base: TIMER,
            bytes: t,
        }],
        ROOM,
    );
    assert_eq!(
        field(&r.records[0], "function"),
        (0xffff_ffff_8123_4567u64 as i64).to_string()
    );
    let v = run(
        spec("irq_vectors/local_timer_entry"),
        &opts(),
        1,
        &[236],
        vec![],
        ROOM,
    );
    assert_eq!(field(&v.records[0], "vector"), "236");
}

#[test]
fn a_cpu_outside_the_mask_writes_nothing_and_a_full_ring_counts_a_loss() {
    let e = spec("irq_vectors/local_timer_entry");
    let r = run(
        e,
        &ProgOptions {
            cpu_mask: Some(0b01),
            ..opts()
        },
        1,
        &[3],
        vec![],
        ROOM,
    );
    assert!(r.records.is_empty());
    let r = run(
        e,
        &ProgOptions {
            cpu_mask: None,
            ..opts()
        },
        70,
        &[3],
        vec![],
        ROOM,
    );
    assert_eq!(r.records.len(), 1, "no mask: every CPU");
    let r = run(e, &opts(), 1, &[3], vec![], u64::from(stop_at(RING)));
    assert_eq!((r.records.len(), r.lost), (0, 1));
    // just below the stop, a small record still fits and is written
    let r = run(e, &opts(), 1, &[3], vec![], u64::from(stop_at(RING)) - 8);
    assert_eq!((r.records.len(), r.lost), (1, 0));
}

/// The record that takes the ring past half full rings the doorbell, and only that
/// one: not one that stays below, nor one added to a ring already past half.
#[test]
fn the_record_that_passes_half_full_rings_the_doorbell() {
    let e = spec("irq_vectors/local_timer_entry");
    let len = (8 + HEADER + e.payload_len()) as u64;
    let half = u64::from(RING / 2);
    for (used, rings) in [
        (ROOM, 0),
        (half - len, 0),
        (half - len + 8, 1),
        (half, 1),
        (half + 8, 0),
    ] {
        let r = run(e, &opts(), 0, &[3], vec![], used);
        assert_eq!((r.records.len(), r.rang), (1, rings), "{used} bytes in use");
    }
}

/// A reservation made below the stop that still runs past the ring's end (programs
/// nested between the check and the reservation took the margin: here the check
/// passes with the ring nearly full and the record is the largest) is not written,
/// and counted lost; the reader searches past its bytes ([`super::super::rings`]).
#[test]
fn a_reservation_past_the_end_is_counted_lost_and_not_written() {
    let sw = spec("sched/sched_switch");
    assert!(HEADER + sw.payload_len() + 8 > (RING - stop_at(RING)) as usize + 8);
    let r = run(
        sw,
        &opts(),
        0,
        &[0, PREV, NEXT, 1],
        vec![task(PREV, "a", 1, 120, 0), task(NEXT, "b", 2, 120, 0)],
        u64::from(stop_at(RING)) - 8,
    );
    assert_eq!((r.records.len(), r.lost), (0, 1));
}

#[test]
fn idle_switches_of_watched_threads_are_dropped_and_every_other_switch_kept() {
    let sw = spec("sched/sched_switch");
    let o = ProgOptions {
        drop: Some(SwitchDrop {
            tids: vec![9001],
            comm_prefixes: vec!["latlab".into(), "a-long-prefix12".into()],
        }),
        ..opts()
    };
    let recorded = |prev: (&str, i32), next: (&str, i32)| {
        run(
            sw,
            &o,
            0,
            &[0, PREV, NEXT, 1],
            vec![
                task(PREV, prev.0, prev.1, 120, 0),
                task(NEXT, next.0, next.1, 120, 0),
            ],
            ROOM,
        )
        .records
        .len()
            == 1
    };
    let idle = ("swapper/0", 0);
    assert!(!recorded(idle, ("latlab-rx", 5)), "idle -> watched by name");
    assert!(!recorded(("latlab-tx", 6), idle), "watched by name -> idle");
    assert!(!recorded(idle, ("other", 9001)), "idle -> watched by tid");
    assert!(
        !recorded(("a-long-prefix123", 7), idle),
        "a prefix over two words"
    );
    assert!(
        recorded(("a-long-prefiX123", 7), idle),
        "differs in the second word"
    );
    assert!(recorded(idle, ("latla", 8)), "shorter than the prefix");
    assert!(recorded(idle, ("kworker/0:1", 8)), "idle -> foreign");
    assert!(
        recorded(("latlab-rx", 5), ("kworker/0:1", 8)),
        "watched -> foreign"
    );
    assert!(
        recorded(("kworker/0:1", 8), ("latlab-rx", 5)),
        "foreign -> watched"
    );
    let long = ProgOptions {
        drop: Some(SwitchDrop {
            tids: vec![],
            comm_prefixes: vec!["sixteen-bytes-xx".into()],
        }),
        ..opts()
    };
    assert_eq!(
        program(sw, &fields(), &long),
        Err(ProgError::LongPrefix("sixteen-bytes-xx".into()))
    );
}

/// `softirq_entry` writes no record: it stashes its time and vector, and the exit of
/// that vector writes one record carrying the entry's time and clears the stash; an
/// exit with no (or another vector's) stash carries none. The collector makes the
/// two events of it, the exit's kind without the time.
#[test]
fn a_softirq_is_one_record_written_at_its_exit() {
    let (entry, exit) = (spec("irq/softirq_entry"), spec("irq/softirq_exit"));
    let r = run(entry, &opts(), 1, &[3], vec![], ROOM);
    assert!(r.records.is_empty(), "the entry writes nothing");
    assert_eq!((r.lost, r.stash), (0, (123_456_789, 3)));
    let r = run_stashed(exit, &opts(), 1, &[3], vec![], ROOM, (1_000, 3));
    assert_eq!(r.records.len(), 1);
    assert_eq!(field(&r.records[0], "vec"), "3");
    assert_eq!(field(&r.records[0], ENTRY_NS), "1000");
    assert_eq!(r.stash.0, 0, "the stash is cleared");
    for stash in [(0, 0), (1_000, 7)] {
        let r = run_stashed(exit, &opts(), 1, &[3], vec![], ROOM, stash);
        assert_eq!(field(&r.records[0], ENTRY_NS), "0", "{stash:?}");
        assert_eq!(r.stash.0, 0);
    }
    // outside the traced CPUs the entry stashes nothing
    let masked = ProgOptions {
        cpu_mask: Some(0b01),
        ..opts()
    };
    assert_eq!(run(entry, &masked, 1, &[3], vec![], ROOM).stash, (0, 0));
    // the collector: two softirqs of vector 3 on CPU 1, one exit without its entry
    let mut c = Collector::new(&[0, 1]);
    let rec = |entry_ns: u64, ns: u64| {
        let mut stash_rec = run_stashed(exit, &opts(), 1, &[3], vec![], ROOM, (entry_ns, 3))
            .records
            .remove(0);
        stash_rec[..8].copy_from_slice(&ns.to_le_bytes());
        stash_rec
    };
    c.push(&rec(100, 180));
    c.push(&rec(300, 350));
    c.push(&rec(0, 400));
    let t = c.finish((0, 1_000), &|ns| ns);
    assert_eq!(t.malformed, 0);
    assert_eq!(t.cpus[1].tsc, vec![100, 180, 300, 350, 400]);
    let names: Vec<String> = t.cpus[1]
        .kind
        .iter()
        .map(|&k| {
            let p = &t.kinds[k as usize];
            let id = u16::from_le_bytes([p[0], p[1]]);
            event_by_id(id).unwrap().tracepoint().to_string()
        })
        .collect();
    assert_eq!(
        names,
        [
            "softirq_entry",
            "softirq_exit",
            "softirq_entry",
            "softirq_exit",
            "softirq_exit"
        ]
    );
    assert_eq!(
        t.kinds.len(),
        2,
        "one entry kind, one exit kind: the times are not kinds"
    );
    let f = formats();
    let sf = f.iter().find(|x| x.name == "softirq_entry").unwrap();
    assert_eq!(sf.int(&t.kinds[t.cpus[1].kind[0] as usize], "vec"), Some(3));
}

#[test]
fn the_collector_keeps_one_kind_per_payload_drops_the_cpu_and_sorts_each_cpus_times() {
    let rec = |ns: u64, cpu: u16, vec: u32| {
        let mut r = ns.to_le_bytes().to_vec();
        let id = event_id("irq/softirq_entry").unwrap();
        r.extend(id.to_le_bytes());
        r.extend(cpu.to_le_bytes());
        r.extend([0; 4]);
        r.extend(vec.to_le_bytes());
        r.extend([0; 4]);
        r
    };
    let mut c = Collector::new(&[0, 1]);
    c.push(&rec(300, 1, 3));
    c.push(&rec(100, 1, 3)); // an interrupted program's later write
    c.push(&rec(200, 0, 3));
    c.push(&rec(250, 0, 7));
    c.push(&rec(50, 0, 7)); // before the span kept
    c.push(&rec(260, 5, 7)); // a CPU not traced
    c.push(&rec(270, 0, 7)[..12]); // cut short
    let t = c.finish((100, 1_000), &|ns| ns * 3);
    assert_eq!(t.malformed, 2);
    assert_eq!(t.kinds.len(), 2, "vec 3 and vec 7, whatever the CPU");
    assert_eq!(t.cpus[0].tsc, vec![600, 750]);
    assert_eq!(t.cpus[1].tsc, vec![300, 900]);
    assert_eq!(t.cpus[1].kind, vec![t.cpus[0].kind[0]; 2]);
    let f = formats();
    let sf = f.iter().find(|x| x.name == "softirq_entry").unwrap();
    assert_eq!(sf.int(&t.kinds[t.cpus[0].kind[1] as usize], "vec"), Some(7));
}

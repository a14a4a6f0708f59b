//! The BPF recorder: the same events as the tracefs instance, written by BPF programs on
//! the raw tracepoints into a ring per CPU ([`rings`]), read by a thread through
//! `mmap`.
//!
//! Why: on this project's guest a `sched_switch` recorded through tracefs costs the
//! switching task about 0.43 µs and one dropped by a tracefs filter 0.27 µs; the same
//! switch written into a BPF ring buffer costs under half of that, and one dropped by a
//! BPF program a third (docs/benchmarks.md, `scripts/explain-bpf-cost.sh`). The
//! programs are assembled by latlab ([`prog`]) with the kernel's own BTF for the struct
//! offsets, so nothing is compiled at build time and no BPF library is needed: the
//! recorder builds from the Rust registry alone, like the XDP steering program.
//!
//! Time: BPF can read only `CLOCK_MONOTONIC`. The reader thread reads the monotonic clock
//! and the TSC back to back when it starts, each time it wakes, and when it stops, and
//! the records' times are mapped onto the TSC through those pairs
//! ([`latlab_core::clockmap`]).
//!
//! The rings are latlab's own rather than BPF ring buffers: reserving a record in a BPF
//! ring buffer (a spin lock with interrupts off, then a commit) cost ~60–90 ns a record
//! on this project's guest, a reservation by one atomic add ~10 ns
//! (`scripts/explain-bpf-cost.sh`, docs/benchmarks.md). The reader sleeps until a
//! program rings the doorbell (a record took its ring past half full) or [`MAX_SLEEP`]
//! passes, as the tracefs reader waits for `buffer_percent` 50 or 5 s: each wake-up runs
//! on a CPU a measured thread may need (on a host whose every CPU carries a measured
//! spinning thread, a reader that woke at a quarter full or every second raised a busy
//! ping-pong's median 9–30 µs). Each CPU has its own ring, so no position moves between
//! the CPUs' caches. A record that finds its ring full is counted per CPU and shows as
//! lost.
//!
//! The programs are attached one after the other, and detached so; records stamped
//! before the last was attached or after the first was detached are dropped, so that
//! every event kind covers the same span.
//!
//! Everything is a file descriptor of this process: links, programs and maps go when the
//! recorder is dropped, or when the process dies.

pub mod prog;
pub mod rings;

use super::reader::{Reader, Stop};
use super::recording::{CpuTrace, KtraceError, RawTrace, Recording};
use crate::bpf;
use latlab_core::clockmap::ClockMap;
use latlab_core::ftrace_raw::{PageLayout, Symbols};
pub use prog::SwitchDrop;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

/// The longest the reader sleeps when no ring passes half full (the tracefs reader's
/// `stream::WAKE_AT_LEAST`): it takes a clock pair each time.
pub const MAX_SLEEP: Duration = Duration::from_secs(5);

/// What the reader thread returns.
struct Collected {
    collector: prog::Collector,
    pairs: Vec<(u64, u64)>,
    /// Per traced CPU.
    lost: Vec<u64>,
}

/// A running BPF recorder.
#[derive(Debug)]
pub struct BpfRecorder {
    links: Vec<OwnedFd>,
    progs: Vec<OwnedFd>,
    cpus: Vec<u32>,
    enabled: Vec<String>,
    missing: Vec<String>,
    /// When the last program was attached (monotonic ns): records before it are
    /// dropped, so every event kind is recorded over the same span.
    from_ns: u64,
    /// Why programs read fields through `bpf_probe_read_kernel`, when they do.
    helper_reads: Option<String>,
    /// `None` once stopped.
    reader: Option<Reader<Collected>>,
}

fn bpf_err(what: &str) -> impl FnOnce(std::io::Error) -> KtraceError + '_ {
    move |e| KtraceError::Bpf(format!("{what}: {e}"))
}

/// A (monotonic ns, TSC) pair: of five tries, the one with the narrowest TSC bracket (a
/// try the reader lost its CPU in is wide).
fn clock_pair() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..5 {
        let t0 = crate::tsc::read().0;
        let ns = crate::clocks::monotonic_ns();
        let t1 = crate::tsc::read().0;
        let w = t1.wrapping_sub(t0);
        if w < best.0 {
            best = (w, ns, t0 + w / 2);
        }
    }
    (best.1, best.2)
}

/// A CPU's ring's bytes for `per_cpu_kb`: a power of two from 1 MiB to 256 MiB (the
/// verifier bounds a variable offset into a map value below 512 MiB).
pub fn ring_bytes(per_cpu_kb: u32) -> u32 {
    (per_cpu_kb as usize * 1024)
        .clamp(1 << 20, 1 << 28)
        .next_power_of_two()
        .min(1 << 28) as u32
}

impl BpfRecorder {
    /// Loads and attaches a program for each of `events` ([`prog::EVENTS`] that this
    /// kernel has; the others are `missing`), with a ring of `buffer_kb` per CPU.
    ///
    /// # Errors
    /// [`KtraceError::Bpf`] when the kernel's BTF, a map, a program or the reader cannot
    /// be had; [`KtraceError::NoEvents`] when no tracepoint exists. Nothing is left
    /// attached.
    pub fn start(
        cpus: &[u32],
        buffer_kb: u32,
        events: &[String],
        switch_drop: Option<&SwitchDrop>,
    ) -> Result<BpfRecorder, KtraceError> {
        let blob = crate::btf::vmlinux().map_err(bpf_err(crate::btf::VMLINUX_BTF))?;
        let btf = latlab_core::btf::Btf::parse(&blob)
            .map_err(|e| KtraceError::Bpf(format!("{}: {e}", crate::btf::VMLINUX_BTF)))?;
        let fields = crate::btf::recorder_fields(&btf)
            .map_err(|m| KtraceError::Bpf(format!("the kernel's BTF has no {m}")))?;
        let ring = ring_bytes(buffer_kb);
        let max_cpu = cpus.iter().copied().max().unwrap_or(0);
        // per CPU the index of its ring + 1 (0: not traced), and the rings
        let index = bpf::create_map(bpf::MAP_ARRAY, 4, 4, max_cpu + 1)
            .map_err(bpf_err("creating the rings' index"))?;
        for (k, &cpu) in cpus.iter().enumerate() {
            bpf::update_u32(&index, cpu, k as u32 + 1)
                .map_err(bpf_err("filling the rings' index"))?;
        }
        let ring_map = bpf::create_mmapable_array(
            rings::element_bytes(ring as usize) as u32,
            cpus.len() as u32,
        )
        .map_err(bpf_err("creating the rings"))?;
        let mapped = rings::Rings::map(&ring_map, ring as usize, cpus.len())
            .map_err(bpf_err("mapping the rings"))?;
        let bell = bpf::create_map(bpf::MAP_RINGBUF, 0, 0, rings::DOORBELL_BYTES)
            .map_err(bpf_err("creating the rings' doorbell"))?;
        let doorbell = rings::Doorbell::map(&bell).map_err(bpf_err("mapping the doorbell"))?;
        let mut opts = prog::ProgOptions {
            index_fd: index.as_raw_fd(),
            rings_fd: ring_map.as_raw_fd(),
            ring,
            doorbell_fd: bell.as_raw_fd(),
            cpu_mask: (max_cpu < 64).then(|| cpus.iter().fold(0u64, |m, &c| m | 1 << c)),
            drop: switch_drop.cloned(),
            direct: true,
        };
        let collector = prog::Collector::new(cpus);
        let first = clock_pair();
        let reader = Reader::spawn(move |stop| read(mapped, &doorbell, collector, first, stop))
            .map_err(bpf_err("starting the ring reader"))?;
        let mut rec = BpfRecorder {
            links: Vec::new(),
            progs: Vec::new(),
            cpus: cpus.to_vec(),
            enabled: Vec::new(),
            missing: Vec::new(),
            reader: Some(reader),
            from_ns: 0,
            helper_reads: None,
        };
        // the maps' descriptors are held by the programs once loaded
        for ev in events {
            let Some(spec) = prog::EVENTS.iter().find(|e| e.event == *ev) else {
                rec.missing.push(ev.clone());
                continue;
            };
            let tp = spec.tracepoint();
            let typed = btf.typedef(&format!("btf_trace_{tp}"));
            if opts.direct && typed.is_none() {
                // no BTF type for it: no such tracepoint on this kernel
                rec.missing.push(ev.clone());
                continue;
            }
            let load = |opts: &prog::ProgOptions| -> Result<OwnedFd, KtraceError> {
                let insns = prog::program(spec, &fields, opts)
                    .map_err(|e| KtraceError::Bpf(format!("{ev}: {e}")))?;
                let (kind, attach, id) = if opts.direct {
                    (
                        bpf::PROG_TRACING,
                        bpf::ATTACH_TRACE_RAW_TP,
                        typed.unwrap_or(0),
                    )
                } else {
                    (bpf::PROG_RAW_TRACEPOINT, 0, 0)
                };
                bpf::load_program(kind, attach, id, "latlab_kev", &insns)
                    .map_err(|e| KtraceError::Bpf(format!("loading the {ev} program: {e}")))
            };
            let p = match load(&opts) {
                Ok(p) => p,
                Err(e) if opts.direct => {
                    // the verifier refused the direct loads: every program from here on
                    // reads fields through the helper, and the recording says why
                    rec.helper_reads = Some(e.to_string());
                    opts.direct = false;
                    load(&opts)?
                }
                Err(e) => return Err(e),
            };
            let attached = if opts.direct {
                bpf::attach_raw_tracepoint(&p, None)
            } else {
                bpf::attach_raw_tracepoint(&p, Some(tp))
            };
            match attached {
                Ok(l) => {
                    rec.links.push(l);
                    rec.progs.push(p);
                    rec.enabled.push(ev.clone());
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => rec.missing.push(ev.clone()),
                Err(e) => {
                    return Err(KtraceError::Bpf(format!(
                        "attaching to {}: {e}",
                        spec.tracepoint()
                    )))
                }
            }
        }
        drop((index, ring_map, bell));
        rec.from_ns = crate::clocks::monotonic_ns();
        if rec.enabled.is_empty() {
            return Err(KtraceError::NoEvents {
                asked: events.len(),
            });
        }
        Ok(rec)
    }

    /// Events attached.
    pub fn enabled(&self) -> &[String] {
        &self.enabled
    }

    /// Detaches every program, drains the ring, and returns the recording.
    ///
    /// # Errors
    /// [`KtraceError::Bpf`] when the reader failed or the times cannot be mapped.
    pub fn stop(mut self) -> Result<Recording, KtraceError> {
        // records after the first program is detached are dropped, as those before
        // the last was attached
        let to_ns = crate::clocks::monotonic_ns();
        self.links.clear();
        let missed = self
            .progs
            .iter()
            .map(|p| bpf::prog_stats(p).map_or(0, |s| s.recursion_misses))
            .sum();
        self.progs.clear();
        let c = self
            .reader
            .take()
            .expect("stopped once")
            .finish()
            .map_err(bpf_err("reading the rings"))?;
        let map = ClockMap::new(c.pairs)
            .map_err(|e| KtraceError::Bpf(format!("mapping BPF times onto the TSC: {e}")))?;
        let events = c.collector.finish((self.from_ns, to_ns), &|ns| map.map(ns));
        let cpus = self
            .cpus
            .iter()
            .zip(c.lost)
            .map(|(&cpu, lost)| CpuTrace {
                cpu,
                text: String::new(),
                lost,
            })
            .collect();
        Ok(Recording {
            cpus,
            enabled: std::mem::take(&mut self.enabled),
            missing: std::mem::take(&mut self.missing),
            mounted_tracefs: false,
            raw: Some(RawTrace {
                layout: PageLayout::default(),
                formats: prog::formats(),
                events,
                symbols: std::fs::read_to_string("/proc/kallsyms")
                    .map(|t| Symbols::parse(&t))
                    .unwrap_or_default(),
            }),
            reader: match &self.helper_reads {
                None => "bpf rings".into(),
                Some(why) => format!("bpf rings (fields read by helper: {why})"),
            },
            record_cmd: "off (BPF programs: no tracefs instance)".into(),
            missed,
        })
    }
}

impl Drop for BpfRecorder {
    fn drop(&mut self) {
        // detach before the reader (a field, dropped after this) is stopped and joined
        self.links.clear();
    }
}

/// The reader thread: drain, take a clock pair, sleep until a ring passes half full (the
/// doorbell), [`MAX_SLEEP`] passes or the stop byte comes, again; after the stop (the
/// programs detached), a drain, a pause for any program still finishing a record, and a
/// last drain that searches past what is still unwritten.
fn read(
    mut rings: rings::Rings,
    doorbell: &rings::Doorbell,
    mut c: prog::Collector,
    first: (u64, u64),
    stop: &Stop,
) -> std::io::Result<Collected> {
    let mut pairs = vec![first];
    loop {
        let done = stop.stopped();
        doorbell.clear();
        rings.drain(false, &mut |rec| c.push(rec));
        pairs.push(clock_pair());
        if done {
            std::thread::sleep(Duration::from_millis(2));
            rings.drain(true, &mut |rec| c.push(rec));
            return Ok(Collected {
                collector: c,
                pairs,
                lost: rings.lost(),
            });
        }
        stop.wait([doorbell.file()], MAX_SLEEP)?;
    }
}

#[cfg(test)]
mod system_tests {
    use super::*;

    /// Root only (prints why it skips): every program loads and attaches on this kernel,
    /// a thread that sleeps and wakes is seen switching out under its own name with the
    /// state the tracepoint reports (`S`: 0x01), and every record's time lies between the
    /// TSC readings around the run.
    #[test]
    fn the_programs_load_and_record_switches_with_their_fields_on_the_tsc_timeline() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            println!("SKIP the BPF recorder's system test: needs root (bpf)");
            return;
        }
        let cpus: Vec<u32> = (0..crate::sched::online_cpus()).collect();
        let events: Vec<String> = prog::EVENTS.iter().map(|e| e.event.to_string()).collect();
        let t0 = crate::tsc::read().0;
        let rec = BpfRecorder::start(&cpus, 1024, &events, None).expect("the BPF recorder starts");
        assert!(rec.enabled().contains(&"sched/sched_switch".to_string()));
        let h = std::thread::Builder::new()
            .name("bpf-rec-probe".into())
            .spawn(|| {
                for _ in 0..20 {
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
            .unwrap();
        h.join().unwrap();
        let r = rec.stop().expect("stops");
        let t1 = crate::tsc::read().0;
        let raw = r.raw.as_ref().unwrap();
        assert_eq!(r.reader, "bpf rings");
        assert_eq!(raw.events.malformed, 0);
        let sw = raw
            .formats
            .iter()
            .find(|f| f.name == "sched_switch")
            .unwrap();
        let mut sleeps = 0;
        for c in &raw.events.cpus {
            for (&t, &k) in c.tsc.iter().zip(&c.kind) {
                assert!(t > t0 && t < t1, "{t} outside {t0}..{t1}");
                let p = &raw.events.kinds[k as usize];
                if latlab_core::ftrace_raw::common_type(p) == Some(sw.id)
                    && sw.str(p, "prev_comm") == Some(b"bpf-rec-probe".as_slice())
                {
                    assert!(sw.int(p, "prev_pid").unwrap() > 0);
                    assert!((100..140).contains(&sw.int(p, "prev_prio").unwrap()));
                    if sw.int(p, "prev_state") == Some(1) {
                        sleeps += 1;
                    }
                }
            }
        }
        assert!(
            sleeps >= 15,
            "{sleeps} sleeping switches of the probe thread, 20 sleeps"
        );
        assert!(r.missing.is_empty(), "{:?}", r.missing);
    }

    /// Root only (prints why it skips): a 1 MiB ring takes twice its size in switch
    /// records within a fraction of a second without losing one, because the record that
    /// passes half full wakes the reader (sleeping on its own schedule it would wait 5 s).
    #[test]
    fn the_doorbell_wakes_the_reader_before_a_small_ring_overflows() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            println!("SKIP the BPF doorbell test: needs root (bpf)");
            return;
        }
        use std::io::{Read, Write};
        let cpu = crate::sched::online_cpus() - 1;
        let rec = BpfRecorder::start(&[cpu], 1024, &["sched/sched_switch".to_string()], None)
            .expect("the BPF recorder starts");
        let (mut a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
        let echo = std::thread::spawn(move || {
            crate::sched::pin_current_thread(cpu).unwrap();
            let mut x = [0u8; 1];
            while b.read_exact(&mut x).is_ok() && b.write_all(&x).is_ok() {}
        });
        let n = 14_000;
        let ping = std::thread::spawn(move || {
            crate::sched::pin_current_thread(cpu).unwrap();
            let mut x = [0u8; 1];
            for _ in 0..n {
                a.write_all(&x).unwrap();
                a.read_exact(&mut x).unwrap();
            }
        });
        ping.join().unwrap();
        echo.join().unwrap();
        let r = rec.stop().expect("stops");
        let events: usize = r
            .raw
            .as_ref()
            .unwrap()
            .events
            .cpus
            .iter()
            .map(|c| c.tsc.len())
            .sum();
        let sw = prog::EVENTS
            .iter()
            .find(|e| e.event == "sched/sched_switch")
            .unwrap();
        let bytes = events * (8 + prog::HEADER + sw.payload_len());
        assert!(
            bytes > 2 << 20,
            "{events} records, {bytes} bytes: more than twice the ring"
        );
        assert_eq!(r.cpus[0].lost, 0, "{events} records kept");
    }
}

//! A kernel-event recorder on a private tracefs instance, stamped with the TSC.
//!
//! [`Recorder::start`] mounts tracefs when it is not mounted (and says so), creates a
//! private instance (`instances/latlab-<pid>-<n>`: the global buffer and other users are
//! untouched), selects the `x86-tsc` trace clock (so event timestamps are raw TSC values,
//! the timebase of [`crate::tsc::read`]), sizes the per-CPU buffers, restricts tracing to
//! the CPUs of interest, enables those of the asked-for events that exist (recording the
//! missing ones) and turns tracing on. [`Recorder::stop`] turns it off, reads each CPU's
//! `trace` text and lost-event counts, and removes the instance; dropping a recorder also
//! removes it, so nothing is left behind on an error path.
//!
//! By default the recorder streams: a reader thread ([`stream`]) drains every CPU's
//! `trace_pipe_raw` (binary pages) during the run, so long high-rate runs do not overrun
//! the ring and nothing is formatted as text; the reader decodes the pages as they
//! arrive into `latlab_core::ftrace_compact`'s store (a timestamp and a kind per event),
//! returned with the event `format` files and the kernel's symbols that name the kinds. When the
//! binary path cannot be set up (a `format` or `header_page` the decoder does not
//! accept, a `trace_pipe_raw` that does not open) it falls back to reading the `trace`
//! text after the run, and [`Recording::reader`] says which was used and why.
//!
//! Only the OS access lives here: the pages and the trace text are returned as is, and
//! decoding them into events is the job of `latlab-explain`. The parsers of the control files
//! ([`parse_stats`], [`parse_trace_clock`], [`cpumask_hex`]) are pure and unit-tested.

pub mod bpf;
mod cmdline;
mod recording;
mod stream;

pub use bpf::SwitchDrop;
pub use recording::{CpuTrace, KtraceError, RawTrace, Recording, TRACEFS};

use latlab_core::ftrace_raw::{EventFormat, PageLayout, Symbols};
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// The events the attribution uses, recorded by default, as `group/name`. [`events`]
/// with `all` adds [`EXTRA_EVENTS`].
pub const DEFAULT_EVENTS: &[&str] = &[
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "irq/softirq_entry",
    "irq/softirq_exit",
    "irq_vectors/local_timer_entry",
    "irq_vectors/local_timer_exit",
    "irq_vectors/reschedule_entry",
    "irq_vectors/reschedule_exit",
    "irq_vectors/call_function_entry",
    "irq_vectors/call_function_exit",
    "irq_vectors/call_function_single_entry",
    "irq_vectors/call_function_single_exit",
    "irq_vectors/irq_work_entry",
    "irq_vectors/irq_work_exit",
    "irq_vectors/x86_platform_ipi_entry",
    "irq_vectors/x86_platform_ipi_exit",
    "nmi/nmi_handler",
    "sched/sched_switch",
    "timer/hrtimer_expire_entry",
    "timer/hrtimer_expire_exit",
    "workqueue/workqueue_execute_start",
    "workqueue/workqueue_execute_end",
];

/// The events recorded only when asked (`--explain-events all`): the attribution does
/// not use them, and they are two more tracepoint hits per wake-up and per NAPI poll,
/// the busiest events of a ping-pong.
pub const EXTRA_EVENTS: &[&str] = &["sched/sched_wakeup", "napi/napi_poll"];

/// The events to record: [`DEFAULT_EVENTS`], plus [`EXTRA_EVENTS`] when `all`.
pub fn events(all: bool) -> Vec<String> {
    let extra = if all { EXTRA_EVENTS } else { &[] };
    DEFAULT_EVENTS
        .iter()
        .chain(extra)
        .map(|e| (*e).to_string())
        .collect()
}

/// How the recorder reads the ring.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReaderKind {
    /// BPF programs on the raw tracepoints writing into a ring per CPU ([`bpf`]);
    /// falls back to [`ReaderKind::Stream`] (saying why in [`Recording::reader`]) when
    /// BPF cannot be had or an event has no BPF program.
    #[default]
    Bpf,
    /// Stream `trace_pipe_raw` during the run (falls back to [`ReaderKind::Text`]).
    Stream,
    /// Read each CPU's `trace` text after the run.
    Text,
}

/// What to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KtraceConfig {
    /// CPUs to trace (`tracing_cpumask`).
    pub cpus: Vec<u32>,
    /// Ring-buffer size per CPU, KiB (`buffer_size_kb`).
    pub buffer_kb: u32,
    /// Events as `group/name`.
    pub events: Vec<String>,
    /// How to read the ring.
    pub reader: ReaderKind,
    /// Kernel-side filters, as (`group/name`, the event's `filter` text): the kernel drops
    /// an event its filter rejects before it reaches the ring. Applied to enabled events
    /// only.
    pub filters: Vec<(String, String)>,
    /// The BPF recorder's form of `filters`: the `sched_switch`es between the idle task
    /// and these threads are dropped. With [`ReaderKind::Bpf`], `filters` other than this
    /// rule's tracefs text cannot be said in BPF, so the recorder falls back to tracefs
    /// when `filters` is not empty and this is `None`.
    pub drop_idle_switches: Option<SwitchDrop>,
}

impl Default for KtraceConfig {
    fn default() -> Self {
        KtraceConfig {
            cpus: Vec::new(),
            buffer_kb: 32768,
            events: events(false),
            reader: ReaderKind::Bpf,
            filters: Vec::new(),
            drop_idle_switches: None,
        }
    }
}

/// A running recorder; see the module docs.
#[derive(Debug)]
pub struct Recorder {
    bpf: Option<bpf::BpfRecorder>,
    dir: PathBuf,
    stream: Option<(stream::Streamer, PageLayout, Vec<EventFormat>)>,
    reader: String,
    record_cmd: String,
    cpus: Vec<u32>,
    enabled: Vec<String>,
    missing: Vec<String>,
    mounted_tracefs: bool,
    removed: bool,
}

static INSTANCE_SEQ: AtomicU32 = AtomicU32::new(0);

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> KtraceError + 'a {
    move |source| KtraceError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

fn write_file(path: &Path, value: &str) -> Result<(), KtraceError> {
    std::fs::write(path, value).map_err(io("writing", path))
}

/// Mounts tracefs at [`TRACEFS`] when its control files are absent. Returns whether it
/// mounted it.
///
/// # Errors
/// [`KtraceError::NotRoot`] or [`KtraceError::NoTracefs`].
pub fn ensure_tracefs() -> Result<bool, KtraceError> {
    if Path::new(TRACEFS).join("trace_clock").exists() {
        return Ok(false);
    }
    // SAFETY: `geteuid` takes no arguments and cannot fail.
    let uid = unsafe { libc::geteuid() };
    if uid != 0 {
        return Err(KtraceError::NotRoot { uid });
    }
    let c = |s: &str| CString::new(s).expect("no NUL in constant");
    let (src, target, fstype) = (c("nodev"), c(TRACEFS), c("tracefs"));
    // SAFETY: all three pointers are valid NUL-terminated strings that outlive the call;
    // `data` may be NULL for tracefs.
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(KtraceError::NoTracefs {
            reason: std::io::Error::last_os_error().to_string(),
        });
    }
    if !Path::new(TRACEFS).join("trace_clock").exists() {
        return Err(KtraceError::NoTracefs {
            reason: "mounted, but no trace_clock appeared".into(),
        });
    }
    Ok(true)
}

impl Recorder {
    /// Starts recording (see the module docs).
    ///
    /// # Errors
    /// [`KtraceError`] naming what is missing; nothing is left behind.
    pub fn start(cfg: &KtraceConfig) -> Result<Recorder, KtraceError> {
        if cfg.cpus.is_empty() {
            return Err(KtraceError::Config("no CPU to trace".into()));
        }
        if cfg.buffer_kb == 0 {
            return Err(KtraceError::Config("buffer_kb must be positive".into()));
        }
        // SAFETY: `geteuid` takes no arguments and cannot fail.
        let uid = unsafe { libc::geteuid() };
        if uid != 0 {
            return Err(KtraceError::NotRoot { uid });
        }
        let mut bpf_fallback = None;
        if cfg.reader == ReaderKind::Bpf {
            match Recorder::start_bpf(cfg) {
                Ok(r) => return Ok(r),
                Err(why) => bpf_fallback = Some(why),
            }
        }
        let mounted_tracefs = ensure_tracefs()?;
        let root = Path::new(TRACEFS);
        let clocks = std::fs::read_to_string(root.join("trace_clock"))
            .map_err(io("reading", &root.join("trace_clock")))?;
        let (offered, _) = parse_trace_clock(&clocks);
        if !offered.iter().any(|c| c == "x86-tsc") {
            return Err(KtraceError::NoTscClock {
                offered: offered.join(" "),
            });
        }
        let name = format!(
            "latlab-{}-{}",
            std::process::id(),
            INSTANCE_SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let dir = root.join("instances").join(&name);
        std::fs::create_dir(&dir).map_err(io("creating the tracefs instance", &dir))?;
        // From here on `Drop` removes the instance on every path.
        let mut rec = Recorder {
            bpf: None,
            dir,
            stream: None,
            reader: "text (asked for)".into(),
            record_cmd: String::new(),
            cpus: cfg.cpus.clone(),
            enabled: Vec::new(),
            missing: Vec::new(),
            mounted_tracefs,
            removed: false,
        };
        rec.configure(cfg)?;
        if let Some(why) = bpf_fallback {
            rec.reader = format!("{} (BPF recorder not used: {why})", rec.reader);
        }
        Ok(rec)
    }

    /// The BPF recorder for `cfg`, or why not (the tracefs recorder is used then).
    fn start_bpf(cfg: &KtraceConfig) -> Result<Recorder, String> {
        if let Some(e) = cfg.events.iter().find(|e| bpf::prog::event_id(e).is_none()) {
            return Err(format!("no BPF program records {e}"));
        }
        if !cfg.filters.is_empty() && cfg.drop_idle_switches.is_none() {
            return Err("a tracefs filter without its BPF form".into());
        }
        let b = bpf::BpfRecorder::start(
            &cfg.cpus,
            cfg.buffer_kb,
            &cfg.events,
            cfg.drop_idle_switches.as_ref(),
        )
        .map_err(|e| e.to_string())?;
        Ok(Recorder {
            enabled: b.enabled().to_vec(),
            bpf: Some(b),
            dir: PathBuf::new(),
            stream: None,
            reader: "bpf rings".into(),
            record_cmd: String::new(),
            cpus: cfg.cpus.clone(),
            missing: Vec::new(),
            mounted_tracefs: false,
            removed: true,
        })
    }

    fn configure(&mut self, cfg: &KtraceConfig) -> Result<(), KtraceError> {
        let d = self.dir.clone();
        write_file(&d.join("tracing_on"), "0")?;
        write_file(&d.join("trace_clock"), "x86-tsc")?;
        write_file(&d.join("buffer_size_kb"), &cfg.buffer_kb.to_string())?;
        write_file(&d.join("tracing_cpumask"), &cpumask_hex(&cfg.cpus))?;
        // `record-cmd` off before any event is enabled, under the lock every latlab
        // recorder holds until its events are enabled (see [`cmdline`]).
        let lock = cmdline::SetupLock::take();
        self.record_cmd = match &lock {
            Ok(_) => match cmdline::turn_off(Path::new(TRACEFS), &d) {
                Ok(()) => "off".into(),
                Err(why) => format!("on ({why})"),
            },
            Err(e) => format!("on (locking {}: {e})", cmdline::LOCK),
        };
        for ev in &cfg.events {
            let (group, name) = ev
                .split_once('/')
                .ok_or_else(|| KtraceError::Config(format!("event '{ev}' is not group/name")))?;
            let enable = d.join("events").join(group).join(name).join("enable");
            if enable.exists() {
                write_file(&enable, "1")?;
                self.enabled.push(ev.clone());
            } else {
                self.missing.push(ev.clone());
            }
        }
        if self.enabled.is_empty() {
            return Err(KtraceError::NoEvents {
                asked: cfg.events.len(),
            });
        }
        for (ev, filter) in cfg
            .filters
            .iter()
            .filter(|(ev, _)| self.enabled.contains(ev))
        {
            write_file(&d.join("events").join(ev).join("filter"), filter)?;
        }
        drop(lock);
        write_file(&d.join("trace"), "")?;
        if cfg.reader != ReaderKind::Text {
            match self.open_stream() {
                Ok(s) => {
                    self.stream = Some(s);
                    self.reader = "trace_pipe_raw".into();
                }
                Err(why) => self.reader = format!("text ({why})"),
            }
        }
        write_file(&d.join("tracing_on"), "1")
    }

    /// Reads and checks what the binary path needs (the page layout, every enabled
    /// event's format) and starts the reader; any failure is the fallback's reason.
    fn open_stream(&self) -> Result<(stream::Streamer, PageLayout, Vec<EventFormat>), String> {
        let events = self.dir.join("events");
        let read = |p: &Path| read_whole(p).map_err(|e| format!("{}: {e}", p.display()));
        let layout =
            PageLayout::parse(&read(&events.join("header_page"))?).map_err(|e| e.to_string())?;
        let mut formats = Vec::with_capacity(self.enabled.len());
        for ev in &self.enabled {
            let text = read(&events.join(ev).join("format"))?;
            formats.push(EventFormat::parse(&text).map_err(|e| format!("{ev}: {e}"))?);
        }
        // Wake the reader on the rings' fill level, not on a timer (see [`stream`]); a
        // kernel without `buffer_percent` gets the timer.
        let percent = self.dir.join("buffer_percent");
        let fill_wake = percent.exists()
            && std::fs::write(&percent, stream::BUFFER_PERCENT.to_string()).is_ok();
        let s = stream::Streamer::start(&self.dir, &self.cpus, layout, &formats, fill_wake)?;
        Ok((s, layout, formats))
    }

    /// The instance's directory (for diagnostics; empty for the BPF recorder).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Events enabled so far.
    pub fn enabled(&self) -> &[String] {
        &self.enabled
    }

    /// Stops tracing, reads every traced CPU's text and losses, and removes the instance.
    ///
    /// # Errors
    /// [`KtraceError::Io`]; the instance is removed either way.
    pub fn stop(mut self) -> Result<Recording, KtraceError> {
        if let Some(b) = self.bpf.take() {
            return b.stop();
        }
        write_file(&self.dir.join("tracing_on"), "0")?;
        let raw = match self.stream.take() {
            Some((s, layout, formats)) => Some(RawTrace {
                layout,
                formats,
                events: s.finish().map_err(io("streaming", &self.dir))?,
                symbols: std::fs::read_to_string("/proc/kallsyms")
                    .map(|t| Symbols::parse(&t))
                    .unwrap_or_default(),
            }),
            None => None,
        };
        let mut cpus = Vec::with_capacity(self.cpus.len());
        for &cpu in &self.cpus {
            let pc = self.dir.join("per_cpu").join(format!("cpu{cpu}"));
            let text = if raw.is_some() {
                String::new()
            } else {
                std::fs::read_to_string(pc.join("trace"))
                    .map_err(io("reading", &pc.join("trace")))?
            };
            let stats = std::fs::read_to_string(pc.join("stats"))
                .map_err(io("reading", &pc.join("stats")))?;
            let s = parse_stats(&stats);
            cpus.push(CpuTrace {
                cpu,
                text,
                lost: s.overrun + s.dropped,
            });
        }
        self.remove()?;
        Ok(Recording {
            cpus,
            enabled: std::mem::take(&mut self.enabled),
            missing: std::mem::take(&mut self.missing),
            mounted_tracefs: self.mounted_tracefs,
            raw,
            reader: std::mem::take(&mut self.reader),
            record_cmd: std::mem::take(&mut self.record_cmd),
            missed: 0,
        })
    }

    fn remove(&mut self) -> Result<(), KtraceError> {
        if self.removed {
            return Ok(());
        }
        // Tracing off first, the reader stopped (its files closed); the rmdir frees the
        // buffers.
        let _ = std::fs::write(self.dir.join("tracing_on"), "0");
        drop(self.stream.take());
        self.removed = true;
        std::fs::remove_dir(&self.dir).map_err(io("removing the tracefs instance", &self.dir))
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// Reads a tracefs file with reads of 64 KiB. `std::fs::read_to_string` starts with a
/// 32-byte probe read when the size is 0 (as tracefs reports), and `events/header_page`
/// answers a read at a non-zero offset with end of file: it would come back cut after
/// its first 32 bytes.
fn read_whole(p: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(p)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    String::from_utf8(out).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Counters of one CPU's `stats` file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// `entries:` events in the buffer.
    pub entries: u64,
    /// `overrun:` events overwritten when the ring was full.
    pub overrun: u64,
    /// `dropped events:` events dropped.
    pub dropped: u64,
}

/// Parses a `per_cpu/cpuN/stats` text. Pure; absent lines read as 0.
pub fn parse_stats(text: &str) -> Stats {
    let mut s = Stats::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim().parse::<u64>().unwrap_or(0);
        match k.trim() {
            "entries" => s.entries = v,
            "overrun" => s.overrun = v,
            "dropped events" => s.dropped = v,
            _ => {}
        }
    }
    s
}

/// Parses `trace_clock` (`[local] global … x86-tsc`): the offered clocks and the selected
/// one. Pure.
pub fn parse_trace_clock(text: &str) -> (Vec<String>, Option<String>) {
    let mut offered = Vec::new();
    let mut current = None;
    for w in text.split_whitespace() {
        if let Some(inner) = w.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
            current = Some(inner.to_string());
            offered.push(inner.to_string());
        } else {
            offered.push(w.to_string());
        }
    }
    (offered, current)
}

/// The `tracing_cpumask` text for `cpus`: hexadecimal, in comma-separated 32-bit groups,
/// most significant first (`3` for CPUs 0 and 1; `1,00000000` for CPU 32). Pure.
pub fn cpumask_hex(cpus: &[u32]) -> String {
    let max = cpus.iter().copied().max().unwrap_or(0);
    let mut words = vec![0u32; max as usize / 32 + 1];
    for &c in cpus {
        words[c as usize / 32] |= 1 << (c % 32);
    }
    let mut out = String::new();
    for (i, w) in words.iter().rev().enumerate() {
        if i == 0 {
            out.push_str(&format!("{w:x}"));
        } else {
            out.push_str(&format!(",{w:08x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_are_parsed() {
        let text = "entries: 1234\noverrun: 7\ncommit overrun: 0\nbytes: 4096\n\
            oldest event ts:  4085.433861\nnow ts:  4086.000000\ndropped events: 3\n\
            read events: 0\n";
        assert_eq!(
            parse_stats(text),
            Stats {
                entries: 1234,
                overrun: 7,
                dropped: 3
            }
        );
        assert_eq!(parse_stats(""), Stats::default());
    }

    #[test]
    fn trace_clock_lists_and_selection() {
        let (offered, cur) = parse_trace_clock("[local] global counter uptime perf mono x86-tsc\n");
        assert_eq!(cur.as_deref(), Some("local"));
        assert!(offered.contains(&"x86-tsc".to_string()));
        assert_eq!(offered.len(), 7);
        let (_, cur) = parse_trace_clock("local [x86-tsc]");
        assert_eq!(cur.as_deref(), Some("x86-tsc"));
    }

    #[test]
    fn cpumasks_are_hex_in_32_bit_groups() {
        assert_eq!(cpumask_hex(&[0, 1]), "3");
        assert_eq!(cpumask_hex(&[1]), "2");
        assert_eq!(cpumask_hex(&[4]), "10");
        assert_eq!(cpumask_hex(&[32]), "1,00000000");
        assert_eq!(cpumask_hex(&[0, 33]), "2,00000001");
    }

    #[test]
    fn bad_config_is_refused_before_any_os_access() {
        let e = Recorder::start(&KtraceConfig::default()).unwrap_err();
        assert!(e.to_string().contains("no CPU"), "{e}");
    }

    #[test]
    fn a_recording_leaves_no_instance_behind() {
        // Skips (prints why) where tracefs or root is missing.
        let cfg = KtraceConfig {
            cpus: vec![0],
            buffer_kb: 256,
            reader: ReaderKind::Stream,
            ..KtraceConfig::default()
        };
        let rec = match Recorder::start(&cfg) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("skipped: {e}");
                return;
            }
        };
        let dir = rec.dir().to_path_buf();
        assert!(dir.exists());
        assert!(rec.enabled().iter().any(|e| e == "sched/sched_switch"));
        std::thread::sleep(std::time::Duration::from_millis(20));
        let out = rec.stop().unwrap();
        assert!(!dir.exists(), "instance {} left behind", dir.display());
        assert_eq!(out.cpus.len(), 1);
        // Streamed: events, no text, the formats of what was enabled.
        assert_eq!(out.reader, "trace_pipe_raw");
        assert!(
            out.record_cmd == "off" || out.record_cmd.starts_with("on ("),
            "{}",
            out.record_cmd
        );
        let raw = out.raw.as_ref().unwrap();
        assert_eq!(raw.formats.len(), out.enabled.len());
        assert_eq!(raw.events.cpus.len(), 1);
        assert_eq!(raw.events.cpus[0].cpu, 0);
        assert_eq!(raw.events.malformed, 0);
        assert!(out.cpus[0].text.is_empty());
        // The text reader when asked for.
        let rec = Recorder::start(&KtraceConfig {
            reader: ReaderKind::Text,
            ..cfg.clone()
        })
        .unwrap();
        let out = rec.stop().unwrap();
        assert_eq!(out.reader, "text (asked for)");
        assert!(out.raw.is_none());
        // Dropping without stop removes it too.
        let rec = Recorder::start(&cfg).unwrap();
        let dir = rec.dir().to_path_buf();
        drop(rec);
        assert!(!dir.exists());
    }
}

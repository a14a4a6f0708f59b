//! The tracefs recorder: a private tracefs instance, stamped with the TSC.
//!
//! [`Instance::start`] mounts tracefs when it is not mounted (and says so), creates a
//! private instance (`instances/latlab-<pid>-<n>`: the global buffer and other users are
//! untouched), selects the `x86-tsc` trace clock (so event timestamps are raw TSC values,
//! the timebase of [`crate::tsc::read`]), sizes the per-CPU buffers, restricts tracing to
//! the CPUs of interest, enables those of the asked-for events that exist (recording the
//! missing ones) and turns tracing on. [`Instance::stop`] turns it off, reads each CPU's
//! `trace` text and lost-event counts, and removes the instance; dropping one also
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

use super::config::{KtraceConfig, ReaderKind};
use super::recording::{CpuTrace, KtraceError, RawTrace, Recording, TRACEFS};
use super::{cmdline, stream};
use latlab_core::ftrace_raw::{EventFormat, PageLayout, Symbols};
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// A running private instance.
#[derive(Debug)]
pub(super) struct Instance {
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
impl Instance {
    /// Starts a private instance for `cfg` (validated by [`super::Recorder::start`]);
    /// `bpf_fallback`: why the BPF recorder was not used, when it was asked for.
    pub(super) fn start(
        cfg: &KtraceConfig,
        bpf_fallback: Option<String>,
    ) -> Result<Instance, KtraceError> {
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
        let mut rec = Instance {
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

    fn configure(&mut self, cfg: &KtraceConfig) -> Result<(), KtraceError> {
        let d = self.dir.clone();
        write_file(&d.join("tracing_on"), "0")?;
        write_file(&d.join("trace_clock"), "x86-tsc")?;
        write_file(&d.join("buffer_size_kb"), &cfg.buffer_kb.to_string())?;
        write_file(&d.join("tracing_cpumask"), &cpumask_hex(&cfg.cpus))?;
        // `record-cmd` off before any event is enabled, under the lock every latlab
        // recorder holds until its events are enabled (see [`super::cmdline`]).
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

    /// The instance's directory.
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Events enabled so far.
    pub(super) fn enabled(&self) -> &[String] {
        &self.enabled
    }

    /// Stops tracing, reads every traced CPU's text and losses, and removes the instance.
    ///
    /// # Errors
    /// [`KtraceError::Io`]; the instance is removed either way.
    pub(super) fn stop(mut self) -> Result<Recording, KtraceError> {
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

impl Drop for Instance {
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

//! Kernel-event recorders, stamped with the TSC: the events the attribution reads, on the
//! CPUs a run involves, recorded during the run.
//!
//! [`Recorder::start`] first tries the BPF recorder ([`bpf`]: programs on the raw
//! tracepoints writing into a ring per CPU) and falls back to a private tracefs instance
//! (`instance`), saying why in [`Recording::reader`], when BPF cannot be had, an event
//! has no BPF program or a filter has no BPF form ([`ReaderKind`] picks). Either way
//! [`Recorder::stop`] returns the same [`Recording`]: per CPU the events as a compact
//! store (a timestamp and a kind per event) with the format that names the kinds, and
//! the events lost. Nothing outlives the recorder: a dropped one detaches its programs or
//! removes its instance.

pub mod bpf;
mod cmdline;
mod config;
mod instance;
mod reader;
mod recording;
mod stream;

pub use bpf::SwitchDrop;
pub use config::{events, KtraceConfig, ReaderKind, DEFAULT_EVENTS, EXTRA_EVENTS};
pub use instance::{cpumask_hex, ensure_tracefs, parse_stats, parse_trace_clock, Stats};
pub use recording::{CpuTrace, KtraceError, RawTrace, Recording, TRACEFS};

use std::path::Path;

/// A running recorder; see the module docs.
#[derive(Debug)]
pub struct Recorder(Backend);

#[derive(Debug)]
enum Backend {
    Bpf(bpf::BpfRecorder),
    Tracefs(instance::Instance),
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
                Ok(b) => return Ok(Recorder(Backend::Bpf(b))),
                Err(why) => bpf_fallback = Some(why),
            }
        }
        Ok(Recorder(Backend::Tracefs(instance::Instance::start(
            cfg,
            bpf_fallback,
        )?)))
    }

    /// The BPF recorder for `cfg`, or why not (the tracefs recorder is used then).
    fn start_bpf(cfg: &KtraceConfig) -> Result<bpf::BpfRecorder, String> {
        if let Some(e) = cfg.events.iter().find(|e| bpf::prog::event_id(e).is_none()) {
            return Err(format!("no BPF program records {e}"));
        }
        if !cfg.filters.is_empty() && cfg.drop_idle_switches.is_none() {
            return Err("a tracefs filter without its BPF form".into());
        }
        bpf::BpfRecorder::start(
            &cfg.cpus,
            cfg.buffer_kb,
            &cfg.events,
            cfg.drop_idle_switches.as_ref(),
        )
        .map_err(|e| e.to_string())
    }

    /// The tracefs instance's directory (for diagnostics; empty for the BPF recorder).
    pub fn dir(&self) -> &Path {
        match &self.0 {
            Backend::Bpf(_) => Path::new(""),
            Backend::Tracefs(i) => i.dir(),
        }
    }

    /// Events enabled so far.
    pub fn enabled(&self) -> &[String] {
        match &self.0 {
            Backend::Bpf(b) => b.enabled(),
            Backend::Tracefs(i) => i.enabled(),
        }
    }

    /// Stops recording and returns what was recorded; the programs are detached or the
    /// instance removed either way.
    ///
    /// # Errors
    /// The backend's [`KtraceError`].
    pub fn stop(self) -> Result<Recording, KtraceError> {
        match self.0 {
            Backend::Bpf(b) => b.stop(),
            Backend::Tracefs(i) => i.stop(),
        }
    }
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

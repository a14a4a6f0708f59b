//! What a recording returns and why a recorder cannot run: the types both recorders
//! (the tracefs instance of [`super`] and [`super::bpf`]) share.

use latlab_core::ftrace_compact::CompactTrace;
use latlab_core::ftrace_raw::{EventFormat, PageLayout, Symbols};
use std::path::PathBuf;

/// Where tracefs is mounted on current kernels.
pub const TRACEFS: &str = "/sys/kernel/tracing";

/// Why the recorder cannot run; each message says what is missing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KtraceError {
    /// tracefs needs root (or CAP_SYS_ADMIN for the mount, write access to tracefs).
    #[error("kernel events need root: tracefs control files are not writable as uid {uid}")]
    NotRoot {
        /// The effective uid.
        uid: u32,
    },
    /// tracefs is not mounted and could not be mounted.
    #[error("tracefs is not available at {TRACEFS} (mount -t tracefs nodev {TRACEFS}: {reason})")]
    NoTracefs {
        /// What the mount attempt said.
        reason: String,
    },
    /// The kernel offers no `x86-tsc` trace clock, so events cannot share the TSC timeline.
    #[error("the kernel's trace_clock offers no x86-tsc (offered: {offered})")]
    NoTscClock {
        /// The clocks the kernel offers.
        offered: String,
    },
    /// None of the asked-for events exists on this kernel.
    #[error("none of the {asked} asked-for kernel events exists on this kernel")]
    NoEvents {
        /// How many were asked for.
        asked: usize,
    },
    /// The configuration is unusable.
    #[error("invalid kernel-event recorder configuration: {0}")]
    Config(String),
    /// The BPF recorder could not be set up (the message says what failed).
    #[error("BPF recorder: {0}")]
    Bpf(String),
    /// A tracefs file could not be read or written.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was done.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// One CPU's recorded trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuTrace {
    /// The CPU.
    pub cpu: u32,
    /// The `per_cpu/cpuN/trace` text (one event a line; `#` lines are comments); empty
    /// when the ring was streamed ([`Recording::raw`]).
    pub text: String,
    /// Events lost on this CPU (`overrun` + `dropped events` of its `stats`).
    pub lost: u64,
}

/// What a recording returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recording {
    /// Each traced CPU's text and losses.
    pub cpus: Vec<CpuTrace>,
    /// Events enabled.
    pub enabled: Vec<String>,
    /// Asked-for events this kernel does not have.
    pub missing: Vec<String>,
    /// Whether this recorder mounted tracefs.
    pub mounted_tracefs: bool,
    /// The streamed events, when the ring was streamed.
    pub raw: Option<RawTrace>,
    /// Which reader was used: `trace_pipe_raw`, or `text` with why the binary path was
    /// not (e.g. `text (asked for)`, `text (opening …: …)`).
    pub reader: String,
    /// The instance's `record-cmd` option: `off` (the kernel's command-name recorder was
    /// not hooked to every switch and wake-up for this recording, see [`super::cmdline`]), or
    /// `on (why)`.
    pub record_cmd: String,
    /// Events the kernel did not hand to a BPF program because that program was already
    /// running on the CPU (its recursion guard; the CPU is not known); 0 for tracefs.
    pub missed: u64,
}

/// What the streaming reader returns: the events, decoded as they arrived into a compact
/// store, and what names their kinds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawTrace {
    /// The page header's layout (`events/header_page`).
    pub layout: PageLayout,
    /// The enabled events' formats (`events/<group>/<name>/format`).
    pub formats: Vec<EventFormat>,
    /// Each traced CPU's events (timestamps and kinds) and the distinct kinds.
    pub events: CompactTrace,
    /// The kernel's text symbols (`/proc/kallsyms`), for function addresses; empty when
    /// unreadable (functions then print as addresses).
    pub symbols: Symbols,
}

impl Recording {
    /// Events lost on all CPUs, and those a BPF program missed.
    pub fn lost(&self) -> u64 {
        self.cpus.iter().map(|c| c.lost).sum::<u64>() + self.missed
    }
}

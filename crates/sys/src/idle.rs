//! The CPUs' idle policy: the cpuidle driver, governor and states of each CPU, the
//! `haltpoll` parameters, and the PM QoS CPU latency target (`/dev/cpu_dma_latency`) —
//! read for every result's provenance — and [`DmaLatencyHold`], which holds that target
//! for the length of a run (`--dma-latency`, as cyclictest and rtla do).
//!
//! On a virtual machine whose idle CPUs halt (e.g. the `haltpoll` driver with
//! `guest_halt_poll_ns=0`) each wake-up costs a VM exit and entry; a blocking ping-pong's
//! median can quadruple. Holding the target at 0 keeps every CPU in the polling state.
//!
//! The text of `/sys` is parsed by pure functions tested on fixture text; the few reads
//! and the one write are thin wrappers around them.

use latlab_core::results::{CpuIdle, CpuIdleEntries, IdleRecord, IdleState};
use std::io::{Read as _, Write as _};
use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::OnceLock;

const CPU_DIR: &str = "/sys/devices/system/cpu";
const QOS_DEV: &str = "/dev/cpu_dma_latency";
const HALTPOLL_PARAMS: &str = "/sys/module/haltpoll/parameters";

/// The PM QoS value that means "no request": the kernel's default CPU latency target.
pub const QOS_NO_REQUEST_US: i32 = 2_000_000_000;

/// The texts of one `stateK` directory's files, as read.
#[derive(Clone, Copy, Debug, Default)]
pub struct StateTexts<'a> {
    /// `name`.
    pub name: &'a str,
    /// `desc`.
    pub desc: &'a str,
    /// `latency` (µs).
    pub latency: &'a str,
    /// `disable` (`0`/`1`).
    pub disable: &'a str,
    /// `usage`.
    pub usage: &'a str,
    /// `time` (µs).
    pub time: &'a str,
}

/// One state from its files' text; `None` when `latency` or `usage` is not a number (a
/// state whose figures cannot be read is left out rather than recorded as zero).
pub fn parse_state(t: &StateTexts<'_>) -> Option<IdleState> {
    let num = |s: &str| s.trim().parse::<u64>().ok();
    Some(IdleState {
        name: t.name.trim().to_string(),
        desc: t.desc.trim().to_string(),
        exit_latency_us: num(t.latency)?,
        disabled: num(t.disable).is_some_and(|d| d != 0),
        usage: num(t.usage)?,
        time_us: num(t.time).unwrap_or(0),
    })
}

/// The CPU number of a `/sys/devices/system/cpu` entry named `cpuN`.
pub fn parse_cpu_dir(name: &str) -> Option<u32> {
    name.strip_prefix("cpu")?.parse().ok()
}

/// The state index of a `cpuidle` entry named `stateK`.
pub fn parse_state_dir(name: &str) -> Option<u32> {
    name.strip_prefix("state")?.parse().ok()
}

/// The PM QoS target read from `/dev/cpu_dma_latency`: a native-endian `i32` (some old
/// kernels answered in hex text, e.g. `0x77359400`; that is read too).
pub fn parse_qos(bytes: &[u8]) -> Option<i32> {
    if let Ok(b) = <[u8; 4]>::try_from(bytes) {
        if !b.iter().all(|c| c.is_ascii_hexdigit()) {
            return Some(i32::from_ne_bytes(b));
        }
    }
    let s = std::str::from_utf8(bytes).ok()?.trim();
    let hex = s.strip_prefix("0x").unwrap_or(s);
    u32::from_str_radix(hex, 16).ok().map(|v| v as i32)
}

/// Per CPU, the entries into each state between two snapshots (`usage` at `end` minus
/// at `start`, matched by CPU and position; a counter that went backwards counts 0).
pub fn usage_delta(start: &[CpuIdle], end: &[CpuIdle]) -> Vec<CpuIdleEntries> {
    start
        .iter()
        .filter_map(|s| {
            let e = end.iter().find(|e| e.cpu == s.cpu)?;
            Some(CpuIdleEntries {
                cpu: s.cpu,
                entries: s
                    .states
                    .iter()
                    .zip(&e.states)
                    .map(|(a, b)| b.usage.saturating_sub(a.usage))
                    .collect(),
            })
        })
        .collect()
}

fn read_trim(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

fn sorted_entries<T: Ord + Clone>(
    dir: &Path,
    parse: impl Fn(&str) -> Option<T>,
) -> Vec<(T, std::path::PathBuf)> {
    let mut v: Vec<(T, std::path::PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((parse(e.file_name().to_str()?)?, e.path())))
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// Every CPU's idle states as the kernel shows them now (empty without cpuidle).
pub fn cpu_states() -> Vec<CpuIdle> {
    sorted_entries(Path::new(CPU_DIR), parse_cpu_dir)
        .into_iter()
        .filter_map(|(cpu, dir)| {
            let states: Vec<IdleState> = sorted_entries(&dir.join("cpuidle"), parse_state_dir)
                .into_iter()
                .filter_map(|(_, d)| {
                    let f = |n: &str| std::fs::read_to_string(d.join(n)).unwrap_or_default();
                    let (name, desc, latency) = (f("name"), f("desc"), f("latency"));
                    let (disable, usage, time) = (f("disable"), f("usage"), f("time"));
                    parse_state(&StateTexts {
                        name: &name,
                        desc: &desc,
                        latency: &latency,
                        disable: &disable,
                        usage: &usage,
                        time: &time,
                    })
                })
                .collect();
            (!states.is_empty()).then_some(CpuIdle { cpu, states })
        })
        .collect()
}

/// The PM QoS CPU latency target now, in µs (`None` when the device cannot be read).
pub fn qos_target_us() -> Option<i32> {
    let mut f = std::fs::File::open(QOS_DEV).ok()?;
    let mut b = Vec::new();
    f.read_to_end(&mut b).ok()?;
    parse_qos(&b)
}

/// The idle policy now: driver, governor, states, `haltpoll` parameters and QoS target;
/// `held_us` and `entries` are left empty (see [`record`]).
pub fn snapshot() -> IdleRecord {
    let dir = Path::new(CPU_DIR).join("cpuidle");
    let haltpoll = sorted_entries(Path::new(HALTPOLL_PARAMS), |n| Some(n.to_string()))
        .into_iter()
        .filter_map(|(n, p)| Some((n, read_trim(&p)?)))
        .collect();
    IdleRecord {
        driver: read_trim(&dir.join("current_driver")),
        governor: read_trim(&dir.join("current_governor"))
            .or_else(|| read_trim(&dir.join("current_governor_ro"))),
        cpus: cpu_states(),
        haltpoll,
        qos_target_us: qos_target_us(),
        held_us: None,
        entries: Vec::new(),
    }
}

static START: OnceLock<IdleRecord> = OnceLock::new();
/// The target latlab held in this process (`-1`: none yet).
static HELD: AtomicI64 = AtomicI64::new(-1);

/// Takes the start-of-run snapshot that [`record`] compares with (the first call wins).
/// The CLI calls it once, before any measuring command runs.
pub fn mark_start() {
    let _ = START.get_or_init(snapshot);
}

/// The run's idle record for its provenance: the snapshot of [`mark_start`] (taken now
/// if there was none), the target this process held (if it held one), and per CPU the
/// entries into each state since that snapshot.
pub fn record() -> Option<IdleRecord> {
    let start = START.get_or_init(snapshot);
    if start.driver.is_none() && start.cpus.is_empty() && start.qos_target_us.is_none() {
        return None;
    }
    let mut r = start.clone();
    r.entries = usage_delta(&start.cpus, &cpu_states());
    r.held_us = held_us();
    Some(r)
}

/// The target a [`DmaLatencyHold`] of this process holds or held, in µs.
pub fn held_us() -> Option<u32> {
    u32::try_from(HELD.load(Ordering::Relaxed)).ok()
}

/// Holds the PM QoS CPU latency target at a value while it lives: opens
/// `/dev/cpu_dma_latency`, writes the value as a native `i32` and keeps the file open (the
/// kernel drops the request when it is closed, also when the process dies). Dropping it
/// releases the request. The value is recorded for [`record`].
#[derive(Debug)]
pub struct DmaLatencyHold {
    file: std::fs::File,
    us: u32,
}

impl DmaLatencyHold {
    /// Requests a CPU latency of at most `us` µs system-wide (0: CPUs stay in the
    /// polling state). Needs root (write access to the device).
    pub fn new(us: u32) -> std::io::Result<DmaLatencyHold> {
        let hold = DmaLatencyHold::for_part(us)?;
        HELD.store(i64::from(us), Ordering::Relaxed);
        Ok(hold)
    }

    /// Holds the target as [`DmaLatencyHold::new`] does, for one part of a run (such as
    /// the injector check that opens an experiment), without recording it as the run's
    /// hold in [`record`]: the caller says in its own result which part was held.
    pub fn for_part(us: u32) -> std::io::Result<DmaLatencyHold> {
        let v = i32::try_from(us).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "above i32::MAX µs")
        })?;
        let mut file = std::fs::OpenOptions::new().write(true).open(QOS_DEV)?;
        file.write_all(&v.to_ne_bytes())?;
        Ok(DmaLatencyHold { file, us })
    }

    /// The held target, in µs.
    pub fn us(&self) -> u32 {
        self.us
    }
}

impl Drop for DmaLatencyHold {
    fn drop(&mut self) {
        // Closing the file (when `file` is dropped right after this) ends the request;
        // nothing else to undo. The record keeps saying the run held it.
        let _ = self.file.flush();
    }
}

/// Runs `program` with `args` (inheriting standard streams and environment) while the
/// PM QoS target is held at `us`, and returns its exit code: its own, or 128 + the signal
/// that ended it, as a shell reports it. The hold ends when the program has exited.
///
/// # Errors
/// The hold cannot be taken (see [`DmaLatencyHold::new`]) or the program cannot start.
pub fn run_held(
    us: u32,
    program: &std::ffi::OsStr,
    args: &[std::ffi::OsString],
) -> Result<i32, HeldRunError> {
    use std::os::unix::process::ExitStatusExt as _;
    let hold = DmaLatencyHold::new(us).map_err(HeldRunError::Hold)?;
    let status = std::process::Command::new(program)
        .args(args)
        .status()
        .map_err(|source| HeldRunError::Start {
            program: program.to_string_lossy().into_owned(),
            source,
        })?;
    drop(hold);
    Ok(status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1))
}

/// Why [`run_held`] could not run its program.
#[derive(Debug, thiserror::Error)]
pub enum HeldRunError {
    /// `/dev/cpu_dma_latency` could not be opened or written.
    #[error("/dev/cpu_dma_latency: {0}")]
    Hold(#[source] std::io::Error),
    /// The program could not be started.
    #[error("{program}: {source}")]
    Start {
        /// The program as given.
        program: String,
        /// Why it did not start.
        #[source]
        source: std::io::Error,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(name: &str, latency: &str, usage: &str) -> Option<IdleState> {
        parse_state(&StateTexts {
            name,
            desc: "default architecture idle\n",
            latency,
            disable: "0\n",
            usage,
            time: "7942359273\n",
        })
    }

    #[test]
    fn states_parse_from_sysfs_text() {
        let s = state("haltpoll idle\n", "1\n", "23684487\n").unwrap();
        assert_eq!(s.name, "haltpoll idle");
        assert_eq!(s.desc, "default architecture idle");
        assert_eq!(s.exit_latency_us, 1);
        assert_eq!(s.usage, 23_684_487);
        assert_eq!(s.time_us, 7_942_359_273);
        assert!(!s.disabled);
        let d = parse_state(&StateTexts {
            name: "C6",
            disable: "1",
            latency: "133",
            usage: "5",
            ..StateTexts::default()
        })
        .unwrap();
        assert!(d.disabled);
        assert_eq!(d.time_us, 0);
        assert!(state("POLL", "x", "1").is_none());
        assert!(state("POLL", "0", "").is_none());
    }

    #[test]
    fn directory_names_give_numbers() {
        assert_eq!(parse_cpu_dir("cpu12"), Some(12));
        assert_eq!(parse_cpu_dir("cpufreq"), None);
        assert_eq!(parse_cpu_dir("cpuidle"), None);
        assert_eq!(parse_state_dir("state1"), Some(1));
        assert_eq!(parse_state_dir("driver"), None);
    }

    #[test]
    fn qos_reads_binary_and_hex_text() {
        assert_eq!(parse_qos(&0i32.to_ne_bytes()), Some(0));
        assert_eq!(
            parse_qos(&2_000_000_000i32.to_ne_bytes()),
            Some(2_000_000_000)
        );
        assert_eq!(parse_qos(b"0x77359400\n"), Some(2_000_000_000));
        assert_eq!(parse_qos(b""), None);
        assert_eq!(parse_qos(b"zz"), None);
    }

    #[test]
    fn usage_delta_matches_cpus_and_never_goes_negative() {
        let cpu = |cpu, u: &[u64]| cpu_with(cpu, u);
        let start = [cpu(0, &[10, 100]), cpu(1, &[5, 50])];
        let end = [cpu(1, &[7, 381]), cpu(0, &[10, 252])];
        let d = usage_delta(&start, &end);
        assert_eq!(d.len(), 2);
        assert_eq!((d[0].cpu, d[0].entries.clone()), (0, vec![0, 152]));
        assert_eq!((d[1].cpu, d[1].entries.clone()), (1, vec![2, 331]));
        assert_eq!(
            usage_delta(&[cpu(0, &[9])], &[cpu(0, &[3])])[0].entries,
            [0]
        );
        assert!(usage_delta(&[cpu(2, &[1])], &[cpu(0, &[3])]).is_empty());
    }

    #[test]
    fn the_summary_counts_halting_states_only() {
        let st = |lat, usage| IdleState {
            exit_latency_us: lat,
            usage,
            ..IdleState::default()
        };
        let mut r = IdleRecord {
            driver: Some("haltpoll".into()),
            cpus: (0..2)
                .map(|cpu| CpuIdle {
                    cpu,
                    states: vec![st(0, 0), st(1, 0)],
                })
                .collect(),
            qos_target_us: Some(QOS_NO_REQUEST_US),
            entries: usage_delta(
                &[cpu_with(0, &[10, 100]), cpu_with(1, &[5, 50])],
                &[cpu_with(0, &[99, 252]), cpu_with(1, &[7, 381])],
            ),
            ..IdleRecord::default()
        };
        assert_eq!(
            r.summary(),
            "idle: haltpoll, CPUs 0,1 halted 152,331 times during the run; not held"
        );
        assert_eq!(r.total_halts(), 152 + 331);
        assert!(r.halting_allowed());
        r.held_us = Some(0);
        assert!(r.summary().ends_with("; held at 0 µs"));
        assert!(!r.halting_allowed());
        r.held_us = None;
        r.qos_target_us = Some(0);
        assert!(!r.halting_allowed(), "another process holds 0");
        assert!(r.summary().contains("QoS target 0 µs"));
    }

    /// A CPU whose states have these usage counts and nothing else.
    fn cpu_with(cpu: u32, u: &[u64]) -> CpuIdle {
        CpuIdle {
            cpu,
            states: u
                .iter()
                .map(|&usage| IdleState {
                    usage,
                    ..IdleState::default()
                })
                .collect(),
        }
    }

    #[test]
    fn the_live_snapshot_is_consistent() {
        // whatever this machine has: every CPU listed once, states in order
        let s = snapshot();
        let mut cpus: Vec<u32> = s.cpus.iter().map(|c| c.cpu).collect();
        cpus.dedup();
        assert_eq!(cpus.len(), s.cpus.len());
        assert!(s.entries.is_empty() && s.held_us.is_none());
    }
}

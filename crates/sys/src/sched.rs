//! CPU placement and scheduling of the calling thread: pinning (`sched_setaffinity`),
//! `SCHED_FIFO`, `mlockall`, and what the thread currently runs under.
//!
//! Errors say what to do about them ([`SchedError`]'s `Display` names the remedy).

use std::fmt::Write as _;
use std::io;

/// Why a scheduling or placement request failed; the message names a remedy.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchedError {
    /// The kernel refused for lack of privilege.
    #[error("{what} not permitted: {remedy}")]
    NotPermitted {
        /// What was asked, e.g. `SCHED_FIFO priority 50`.
        what: String,
        /// How to get the privilege.
        remedy: &'static str,
    },
    /// A real-time priority outside the policy's range.
    #[error("SCHED_FIFO priority {prio} out of range {min}..={max}")]
    InvalidPriority {
        /// The priority asked for.
        prio: i32,
        /// The lowest valid priority.
        min: i32,
        /// The highest valid priority.
        max: i32,
    },
    /// The CPU is offline, nonexistent, or outside this thread's allowed set (cpuset,
    /// `taskset`).
    #[error("CPU {cpu} is not available; allowed CPUs: {}", format_cpu_list(.allowed))]
    NoSuchCpu {
        /// The CPU asked for.
        cpu: u32,
        /// The CPUs this thread may run on.
        allowed: Vec<u32>,
    },
    /// Any other failure of the system call.
    #[error("{what}: {source}")]
    Os {
        /// The call and its arguments.
        what: String,
        /// The OS error.
        source: io::Error,
    },
}

/// Remedy for `SCHED_FIFO` refusals.
const RT_REMEDY: &str = "run as root or grant CAP_SYS_NICE (or raise RLIMIT_RTPRIO)";
/// Remedy for `mlockall` refusals.
const MLOCK_REMEDY: &str =
    "run as root or grant CAP_IPC_LOCK (or raise RLIMIT_MEMLOCK, e.g. `ulimit -l unlimited`)";

/// Formats CPU numbers as the kernel writes CPU lists: sorted, ranges collapsed,
/// e.g. `0-3,5,8-9`; `(none)` when empty. Pure.
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    if v.is_empty() {
        return "(none)".to_owned();
    }
    let mut out = String::new();
    let mut i = 0;
    while i < v.len() {
        let start = v[i];
        let mut end = start;
        while i + 1 < v.len() && v[i + 1] == end + 1 {
            i += 1;
            end = v[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if end == start {
            let _ = write!(out, "{start}");
        } else {
            let _ = write!(out, "{start}-{end}");
        }
        i += 1;
    }
    out
}

fn empty_cpu_set() -> libc::cpu_set_t {
    // SAFETY: `cpu_set_t` is a plain bit array; all-zero is the valid empty set.
    unsafe { std::mem::zeroed() }
}

/// The highest CPU number a `cpu_set_t` can hold, plus one.
const CPU_SET_CAPACITY: usize = 8 * std::mem::size_of::<libc::cpu_set_t>();

/// The CPUs the calling thread may run on (`sched_getaffinity`); empty if the call fails.
/// Only CPUs below 1024 (the size of `cpu_set_t`) are seen.
pub fn allowed_cpus() -> Vec<u32> {
    let mut set = empty_cpu_set();
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `set` is a valid, writable `cpu_set_t` and `size` is its size;
    // pid 0 means the calling thread.
    let rc = unsafe { libc::sched_getaffinity(0, size, &mut set) };
    if rc != 0 {
        return Vec::new();
    }
    (0..CPU_SET_CAPACITY)
        // SAFETY: `c` < CPU_SET_CAPACITY, the number of bits in `set`.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .map(|c| c as u32)
        .collect()
}

/// The CPUs task `tid` may run on (`sched_getaffinity`; 0: the calling thread). Only CPUs
/// below 1024 (the size of `cpu_set_t`) are seen.
///
/// # Errors
/// No such task (`ESRCH`).
pub fn task_affinity(tid: i32) -> io::Result<Vec<u32>> {
    let mut set = empty_cpu_set();
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `set` is a valid, writable `cpu_set_t` and `size` is its size.
    let rc = unsafe { libc::sched_getaffinity(tid, size, &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((0..CPU_SET_CAPACITY)
        // SAFETY: `c` < CPU_SET_CAPACITY, the number of bits in `set`.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .map(|c| c as u32)
        .collect())
}

/// Sets the CPUs task `tid` may run on (`sched_setaffinity`). The kernel refuses per-CPU
/// kernel threads (`EINVAL`) and CPUs outside the task's cpuset.
///
/// # Errors
/// The kernel's refusal, or a CPU number beyond `cpu_set_t`.
pub fn set_task_affinity(tid: i32, cpus: &[u32]) -> io::Result<()> {
    let mut set = empty_cpu_set();
    for &c in cpus {
        if c as usize >= CPU_SET_CAPACITY {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {c} is beyond the affinity mask"),
            ));
        }
        // SAFETY: `c` < CPU_SET_CAPACITY (checked above), the number of bits in `set`.
        unsafe { libc::CPU_SET(c as usize, &mut set) };
    }
    // SAFETY: `set` is a valid, initialised `cpu_set_t` and the size passed is its size.
    let rc = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Pins the calling thread to `cpu` (`sched_setaffinity` on the calling thread only).
///
/// Fails with [`SchedError::NoSuchCpu`] when `cpu` is not in [`allowed_cpus`].
pub fn pin_current_thread(cpu: u32) -> Result<(), SchedError> {
    let allowed = allowed_cpus();
    if !allowed.contains(&cpu) || cpu as usize >= CPU_SET_CAPACITY {
        return Err(SchedError::NoSuchCpu { cpu, allowed });
    }
    let mut set = empty_cpu_set();
    // SAFETY: `cpu` < CPU_SET_CAPACITY (checked above), the number of bits in `set`.
    unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    // SAFETY: `set` is a valid, initialised `cpu_set_t` and the size passed is its size;
    // pid 0 means the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EINVAL) => Err(SchedError::NoSuchCpu { cpu, allowed }),
        Some(libc::EPERM) => Err(SchedError::NotPermitted {
            what: format!("pinning to CPU {cpu}"),
            remedy: "run as root or grant CAP_SYS_NICE",
        }),
        _ => Err(SchedError::Os {
            what: format!("sched_setaffinity(CPU {cpu})"),
            source: err,
        }),
    }
}

/// The number of online CPUs (`sysconf(_SC_NPROCESSORS_ONLN)`), at least 1.
pub fn online_cpus() -> u32 {
    // SAFETY: `sysconf` only reads system configuration; any name is allowed.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u32::try_from(n).unwrap_or(1).max(1)
}

/// The CPU the calling thread is running on now (`sched_getcpu`; 0 if it fails). It may
/// have moved by the time the caller looks, unless pinned.
pub fn current_cpu() -> u32 {
    // SAFETY: `sched_getcpu` takes no arguments and only reads the current CPU number.
    let c = unsafe { libc::sched_getcpu() };
    u32::try_from(c).unwrap_or(0)
}

/// The valid `SCHED_FIFO` priority range.
fn fifo_range() -> (i32, i32) {
    // SAFETY: both calls only return constants for a valid policy.
    unsafe {
        (
            libc::sched_get_priority_min(libc::SCHED_FIFO),
            libc::sched_get_priority_max(libc::SCHED_FIFO),
        )
    }
}

/// Places the calling thread: pins it to `cpu` and puts it under `SCHED_FIFO` at `fifo`,
/// each when given, in that order (the one way a measuring thread is placed).
///
/// # Errors
/// The first refusal of [`pin_current_thread`] or [`set_fifo`].
pub fn place_current_thread(cpu: Option<u32>, fifo: Option<i32>) -> Result<(), SchedError> {
    if let Some(c) = cpu {
        pin_current_thread(c)?;
    }
    if let Some(p) = fifo {
        set_fifo(p)?;
    }
    Ok(())
}

/// Puts the calling thread under `SCHED_FIFO` at `priority` (1..=99 on Linux).
///
/// The range is checked first ([`SchedError::InvalidPriority`]); without the privilege the
/// error is [`SchedError::NotPermitted`]. Note that a spinning FIFO thread can starve its
/// CPU: the kernel's RT throttling (`sched_rt_runtime_us`) is the only safety net.
pub fn set_fifo(priority: i32) -> Result<(), SchedError> {
    let (min, max) = fifo_range();
    if priority < min || priority > max {
        return Err(SchedError::InvalidPriority {
            prio: priority,
            min,
            max,
        });
    }
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `pthread_self()` is the calling thread, alive for the call; `param` is a valid
    // `sched_param` read by the call only.
    let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) };
    match rc {
        0 => Ok(()),
        libc::EPERM => Err(SchedError::NotPermitted {
            what: format!("SCHED_FIFO priority {priority}"),
            remedy: RT_REMEDY,
        }),
        e => Err(SchedError::Os {
            what: format!("pthread_setschedparam(SCHED_FIFO, {priority})"),
            source: io::Error::from_raw_os_error(e),
        }),
    }
}

/// The name of a scheduling policy, e.g. `SCHED_FIFO`. Pure.
pub fn policy_name(policy: i32) -> String {
    match policy & !libc::SCHED_RESET_ON_FORK {
        libc::SCHED_OTHER => "SCHED_OTHER".to_owned(),
        libc::SCHED_FIFO => "SCHED_FIFO".to_owned(),
        libc::SCHED_RR => "SCHED_RR".to_owned(),
        libc::SCHED_BATCH => "SCHED_BATCH".to_owned(),
        libc::SCHED_IDLE => "SCHED_IDLE".to_owned(),
        6 => "SCHED_DEADLINE".to_owned(),
        p => format!("policy {p}"),
    }
}

/// The calling thread's nice value (`getpriority` on the thread; 0 if it fails).
fn thread_nice() -> i32 {
    // SAFETY: `gettid` takes no arguments and cannot fail.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    let Ok(tid) = libc::id_t::try_from(tid) else {
        return 0;
    };
    // SAFETY: `__errno_location` returns the calling thread's errno slot, valid for the
    // thread's lifetime; clearing it lets -1 (a valid nice value) be told from an error.
    unsafe { *libc::__errno_location() = 0 };
    // SAFETY: `getpriority` only reads scheduling data of the thread `tid` (PRIO_PROCESS
    // with a thread id addresses that thread on Linux).
    let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, tid) };
    if nice == -1 && io::Error::last_os_error().raw_os_error().unwrap_or(0) != 0 {
        return 0;
    }
    nice
}

/// The calling thread's policy and priority: e.g. `("SCHED_FIFO", 50)` (real-time
/// priority), or `("SCHED_OTHER", 0)` (the nice value, also for BATCH/IDLE).
pub fn current_policy() -> (String, i32) {
    let mut policy = 0;
    let mut param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `pthread_self()` is the calling thread; `policy` and `param` are valid,
    // writable locals.
    let rc = unsafe { libc::pthread_getschedparam(libc::pthread_self(), &mut policy, &mut param) };
    if rc != 0 {
        return ("SCHED_OTHER".to_owned(), thread_nice());
    }
    let base = policy & !libc::SCHED_RESET_ON_FORK;
    let prio = if base == libc::SCHED_FIFO || base == libc::SCHED_RR {
        param.sched_priority
    } else {
        thread_nice()
    };
    (policy_name(policy), prio)
}

/// [`lock_memory`], with a failure turned into a warning for the result: returns whether
/// memory is locked, and on failure pushes "memory not locked (…); page faults may appear
/// as gaps" onto `warnings`. Every measuring command locks memory through this, so the
/// wording and the decision to carry on are the same everywhere.
pub fn lock_memory_or_warn(warnings: &mut Vec<String>) -> bool {
    match lock_memory() {
        Ok(()) => true,
        Err(e) => {
            warnings.push(format!(
                "memory not locked ({e}); page faults may appear as gaps"
            ));
            false
        }
    }
}

/// Locks all current and future pages of the process in RAM (`mlockall(MCL_CURRENT |
/// MCL_FUTURE)`), so that no page fault lands in a measurement.
///
/// With `MCL_FUTURE`, later allocations beyond `RLIMIT_MEMLOCK` fail for unprivileged users.
pub fn lock_memory() -> Result<(), SchedError> {
    // SAFETY: `mlockall` takes only flags and affects no Rust-visible memory.
    let rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EPERM) => Err(SchedError::NotPermitted {
            what: "locking memory (mlockall)".to_owned(),
            remedy: MLOCK_REMEDY,
        }),
        Some(libc::ENOMEM) => Err(SchedError::Os {
            what: format!(
                "mlockall(MCL_CURRENT|MCL_FUTURE) (RLIMIT_MEMLOCK too low? {MLOCK_REMEDY})"
            ),
            source: err,
        }),
        _ => Err(SchedError::Os {
            what: "mlockall(MCL_CURRENT|MCL_FUTURE)".to_owned(),
            source: err,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_format() {
        assert_eq!(format_cpu_list(&[]), "(none)");
        assert_eq!(format_cpu_list(&[0, 1]), "0-1");
        assert_eq!(format_cpu_list(&[5, 0, 1, 2, 3, 9, 8, 3]), "0-3,5,8-9");
        assert_eq!(format_cpu_list(&[7]), "7");
    }

    #[test]
    fn messages_name_a_remedy() {
        let e = SchedError::NotPermitted {
            what: "SCHED_FIFO priority 50".into(),
            remedy: RT_REMEDY,
        };
        assert_eq!(
            e.to_string(),
            "SCHED_FIFO priority 50 not permitted: run as root or grant CAP_SYS_NICE (or raise RLIMIT_RTPRIO)"
        );
        let e = SchedError::InvalidPriority {
            prio: 120,
            min: 1,
            max: 99,
        };
        assert_eq!(e.to_string(), "SCHED_FIFO priority 120 out of range 1..=99");
        let e = SchedError::NoSuchCpu {
            cpu: 7,
            allowed: vec![0, 1],
        };
        assert_eq!(e.to_string(), "CPU 7 is not available; allowed CPUs: 0-1");
    }

    #[test]
    fn fifo_priority_range_checked() {
        for p in [0, 100, -1] {
            match set_fifo(p) {
                Err(SchedError::InvalidPriority { prio, min, max }) => {
                    assert_eq!((prio, min, max), (p, 1, 99));
                }
                other => panic!("set_fifo({p}) gave {other:?}"),
            }
        }
    }

    #[test]
    fn pin_outside_allowed_set_fails() {
        let allowed = allowed_cpus();
        assert!(!allowed.is_empty());
        let outside = (0..4096).find(|c| !allowed.contains(c)).unwrap();
        match pin_current_thread(outside) {
            Err(SchedError::NoSuchCpu { cpu, allowed: a }) => {
                assert_eq!(cpu, outside);
                assert_eq!(a, allowed);
            }
            other => panic!("pin to {outside} gave {other:?}"),
        }
    }

    #[test]
    fn pin_to_allowed_cpu_in_a_thread() {
        // in a thread of its own, so the test harness's threads keep their affinity
        std::thread::spawn(|| {
            let cpu = *allowed_cpus().last().unwrap();
            pin_current_thread(cpu).unwrap();
            assert_eq!(allowed_cpus(), vec![cpu]);
            assert_eq!(current_cpu(), cpu);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn cpu_queries_are_consistent() {
        let online = online_cpus();
        assert!(online >= 1);
        assert!(current_cpu() < online);
        assert!(allowed_cpus().iter().all(|&c| c < CPU_SET_CAPACITY as u32));
    }

    #[test]
    fn policy_of_a_normal_thread() {
        let (name, prio) = current_policy();
        assert!(name.starts_with("SCHED_"), "{name}");
        if name == "SCHED_OTHER" {
            assert!((-20..=19).contains(&prio));
        }
        assert_eq!(policy_name(libc::SCHED_FIFO), "SCHED_FIFO");
        assert_eq!(
            policy_name(libc::SCHED_RR | libc::SCHED_RESET_ON_FORK),
            "SCHED_RR"
        );
    }
}

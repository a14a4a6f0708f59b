//! Real-time scheduling of the calling thread beyond `SCHED_FIFO`: `SCHED_IDLE`, nice
//! levels, `SCHED_DEADLINE` reservations (with or without `SCHED_FLAG_RECLAIM`), timer
//! slack, `sched_yield`, `gettid`, and locking one buffer in RAM.
//!
//! Every refusal is an [`RtError`] whose message says why the kernel refused and what would
//! work, e.g. an admission-control rejection of a `SCHED_DEADLINE` reservation names the
//! bandwidth limit (`/proc/sys/kernel/sched_rt_runtime_us`).

use std::io;

/// Why a scheduling request was refused; the message names the reason and a remedy.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RtError {
    /// The kernel refused for lack of privilege or because of a placement rule.
    #[error("{what} refused: {reason}")]
    Refused {
        /// What was asked, e.g. `SCHED_DEADLINE 3ms/8ms`.
        what: String,
        /// Why and what would work.
        reason: String,
    },
    /// Admission control rejected a `SCHED_DEADLINE` reservation (EBUSY).
    #[error("{what} rejected by admission control: {reason}")]
    Rejected {
        /// The reservation asked for.
        what: String,
        /// The bandwidth limit and what would fit.
        reason: String,
    },
    /// The parameters are invalid for the kernel (EINVAL).
    #[error("{what} invalid: {reason}")]
    Invalid {
        /// What was asked.
        what: String,
        /// The rule broken.
        reason: String,
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

/// `SCHED_DEADLINE` (not in every libc crate version).
pub const SCHED_DEADLINE: u32 = 6;
/// `SCHED_FLAG_RECLAIM`: GRUB reclaiming of unused bandwidth (Linux 4.13).
pub const SCHED_FLAG_RECLAIM: u64 = 0x02;

/// The kernel's `struct sched_attr`, first version (48 bytes, `SCHED_ATTR_SIZE_VER0`).
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
}

/// The calling thread's kernel thread id.
pub fn gettid() -> i32 {
    // SAFETY: `gettid` takes no arguments and cannot fail.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    tid as i32
}

/// Gives up the CPU (`sched_yield`).
#[inline]
pub fn yield_now() {
    // SAFETY: `sched_yield` takes no arguments; it cannot fail on Linux.
    unsafe {
        libc::sched_yield();
    }
}

fn remedy_priv() -> String {
    "run as root or grant CAP_SYS_NICE (or raise RLIMIT_RTPRIO / RLIMIT_NICE)".to_owned()
}

fn setattr(attr: &mut SchedAttr) -> Result<(), io::Error> {
    attr.size = std::mem::size_of::<SchedAttr>() as u32;
    // SAFETY: `attr` points to a valid, initialised `sched_attr` of the size it declares;
    // pid 0 is the calling thread; flags 0.
    let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, attr as *mut SchedAttr, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Puts the calling thread under `SCHED_IDLE` (runs only when nothing else wants the CPU).
pub fn set_idle() -> Result<(), RtError> {
    let mut attr = SchedAttr {
        sched_policy: libc::SCHED_IDLE as u32,
        ..SchedAttr::default()
    };
    setattr(&mut attr).map_err(|e| os_or_refused("SCHED_IDLE", e))
}

/// Puts the calling thread under `SCHED_OTHER` with nice value `nice` (-20..=19; below the
/// current value needs CAP_SYS_NICE or RLIMIT_NICE).
pub fn set_nice(nice: i32) -> Result<(), RtError> {
    let what = format!("nice {nice}");
    if !(-20..=19).contains(&nice) {
        return Err(RtError::Invalid {
            what,
            reason: "nice values are -20..=19".into(),
        });
    }
    let mut attr = SchedAttr {
        sched_policy: libc::SCHED_OTHER as u32,
        sched_nice: nice,
        ..SchedAttr::default()
    };
    setattr(&mut attr).map_err(|e| os_or_refused(&what, e))
}

/// Puts the calling thread under `SCHED_RR` at `priority` (1..=99).
pub fn set_rr(priority: u32) -> Result<(), RtError> {
    let what = format!("SCHED_RR priority {priority}");
    let mut attr = SchedAttr {
        sched_policy: libc::SCHED_RR as u32,
        sched_priority: priority,
        ..SchedAttr::default()
    };
    setattr(&mut attr).map_err(|e| os_or_refused(&what, e))
}

fn os_or_refused(what: &str, e: io::Error) -> RtError {
    match e.raw_os_error() {
        Some(libc::EPERM) => RtError::Refused {
            what: what.to_owned(),
            reason: remedy_priv(),
        },
        Some(libc::EINVAL) => RtError::Invalid {
            what: what.to_owned(),
            reason: "the kernel rejected the parameters (EINVAL)".into(),
        },
        _ => RtError::Os {
            what: what.to_owned(),
            source: e,
        },
    }
}

/// A `SCHED_DEADLINE` reservation: `runtime` ns of CPU within `deadline` ns of each
/// activation, every `period` ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadline {
    /// Budget per period, ns (at least 1024).
    pub runtime_ns: u64,
    /// Relative deadline, ns (runtime <= deadline <= period).
    pub deadline_ns: u64,
    /// Period, ns.
    pub period_ns: u64,
    /// `SCHED_FLAG_RECLAIM`: a soft reservation that may use reclaimed idle bandwidth.
    pub reclaim: bool,
}

impl Deadline {
    /// Checks the kernel's parameter rules (`__checkparam_dl`) without a system call; the
    /// error names the broken rule. Pure.
    pub fn check(&self) -> Result<(), String> {
        if self.runtime_ns < 1024 {
            return Err(format!(
                "runtime {} ns is below the kernel minimum of 1024 ns",
                self.runtime_ns
            ));
        }
        if self.deadline_ns == 0 || self.period_ns == 0 {
            return Err("deadline and period must be positive".into());
        }
        if self.runtime_ns > self.deadline_ns || self.deadline_ns > self.period_ns {
            return Err(format!(
                "need runtime <= deadline <= period, got {} / {} / {} ns",
                self.runtime_ns, self.deadline_ns, self.period_ns
            ));
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "SCHED_DEADLINE{} runtime {} ns every {} ns",
            if self.reclaim { " (reclaim)" } else { "" },
            self.runtime_ns,
            self.period_ns
        )
    }
}

/// Reads a `/proc/sys/kernel` integer, if present.
fn read_sysctl(name: &str) -> Option<i64> {
    std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// Puts the calling thread under `SCHED_DEADLINE` with `dl`.
///
/// Errors: [`RtError::Invalid`] for parameters the kernel cannot accept (checked first),
/// [`RtError::Rejected`] when admission control finds no bandwidth left (EBUSY),
/// [`RtError::Refused`] without privilege, or when the thread's affinity is narrower than
/// its root domain (the kernel refuses DEADLINE tasks pinned to a subset of CPUs).
pub fn set_deadline(dl: &Deadline) -> Result<(), RtError> {
    let what = dl.describe();
    if let Err(reason) = dl.check() {
        return Err(RtError::Invalid { what, reason });
    }
    let mut attr = SchedAttr {
        sched_policy: SCHED_DEADLINE,
        sched_flags: if dl.reclaim { SCHED_FLAG_RECLAIM } else { 0 },
        sched_runtime: dl.runtime_ns,
        sched_deadline: dl.deadline_ns,
        sched_period: dl.period_ns,
        ..SchedAttr::default()
    };
    match setattr(&mut attr) {
        Ok(()) => Ok(()),
        Err(e) => Err(match e.raw_os_error() {
            Some(libc::EBUSY) => {
                let rt = read_sysctl("sched_rt_runtime_us").unwrap_or(950_000);
                let per = read_sysctl("sched_rt_period_us").unwrap_or(1_000_000);
                let cpus = crate::sched::online_cpus();
                RtError::Rejected {
                    what,
                    reason: format!(
                        "the DEADLINE tasks of the root domain would need more than \
                         {cpus} CPU(s) x {rt}/{per} of bandwidth; ask for less runtime per \
                         period or fewer reservations (limit: kernel.sched_rt_runtime_us)"
                    ),
                }
            }
            Some(libc::EPERM) => {
                let allowed = crate::sched::allowed_cpus().len() as u32;
                let online = crate::sched::online_cpus();
                let reason = if allowed < online {
                    format!(
                        "the thread may run on only {allowed} of {online} CPUs; the kernel \
                         admits DEADLINE tasks only with an affinity spanning their root \
                         domain (drop --cpu, or make an exclusive cpuset partition)"
                    )
                } else {
                    remedy_priv()
                };
                RtError::Refused { what, reason }
            }
            Some(libc::EINVAL) => RtError::Invalid {
                what,
                reason: "the kernel rejected the parameters (period outside \
                         kernel.sched_deadline_period_{min,max}_us?)"
                    .into(),
            },
            _ => RtError::Os { what, source: e },
        }),
    }
}

/// The calling thread's timer slack in ns (`PR_GET_TIMERSLACK`). RT and DEADLINE threads
/// get no slack whatever this says.
pub fn timer_slack_ns() -> u64 {
    // SAFETY: `PR_GET_TIMERSLACK` takes no pointer arguments and returns the value.
    let v = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    v.max(0) as u64
}

/// Sets the calling thread's timer slack (`PR_SET_TIMERSLACK`); 0 restores the default.
pub fn set_timer_slack_ns(ns: u64) -> Result<(), RtError> {
    // SAFETY: `PR_SET_TIMERSLACK` takes the value by value; no memory is passed.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(RtError::Os {
            what: format!("prctl(PR_SET_TIMERSLACK, {ns})"),
            source: io::Error::last_os_error(),
        })
    }
}

/// Locks the pages of `buf` in RAM (`mlock`, which also faults them in), so that writing to it in
/// a measured loop takes no page fault.
pub fn lock_slice<T: Copy>(buf: &mut [T]) -> Result<(), RtError> {
    let bytes = std::mem::size_of_val(buf);
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: the range is exactly the memory of `buf`, valid and owned by the caller for
    // the duration of the call; `mlock` does not read or write it.
    let rc = unsafe { libc::mlock(buf.as_ptr().cast(), bytes) };
    if rc != 0 {
        let e = io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::EPERM) | Some(libc::ENOMEM) => RtError::Refused {
                what: format!("locking a {bytes}-byte trace buffer (mlock)"),
                reason: "run as root or grant CAP_IPC_LOCK (or raise RLIMIT_MEMLOCK)".into(),
            },
            _ => RtError::Os {
                what: "mlock".into(),
                source: e,
            },
        });
    }
    Ok(())
}

/// The calling thread's voluntary and involuntary context switches so far
/// (`getrusage(RUSAGE_THREAD)`).
pub fn thread_context_switches() -> (u64, u64) {
    // SAFETY: `rusage` is plain data; all-zero is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable `rusage`.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    if rc != 0 {
        return (0, 0);
    }
    (ru.ru_nvcsw.max(0) as u64, ru.ru_nivcsw.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_parameters_checked_before_the_kernel() {
        let ok = Deadline {
            runtime_ns: 3_000_000,
            deadline_ns: 8_000_000,
            period_ns: 8_000_000,
            reclaim: false,
        };
        assert!(ok.check().is_ok());
        let small = Deadline {
            runtime_ns: 100,
            ..ok
        };
        assert!(small.check().unwrap_err().contains("1024"));
        let inverted = Deadline {
            runtime_ns: 9_000_000,
            ..ok
        };
        assert!(inverted
            .check()
            .unwrap_err()
            .contains("runtime <= deadline"));
        match set_deadline(&inverted) {
            Err(RtError::Invalid { reason, .. }) => assert!(reason.contains("<= period")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn timer_slack_round_trips_in_a_thread() {
        std::thread::spawn(|| {
            set_timer_slack_ns(1_000).unwrap();
            assert_eq!(timer_slack_ns(), 1_000);
            assert!(gettid() > 0);
            yield_now();
            let (v, i) = thread_context_switches();
            assert!(v + i < u64::MAX);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn nice_range_checked() {
        assert!(matches!(set_nice(40), Err(RtError::Invalid { .. })));
        std::thread::spawn(|| {
            set_nice(5).unwrap();
            assert_eq!(
                crate::sched::current_policy(),
                ("SCHED_OTHER".to_owned(), 5)
            );
        })
        .join()
        .unwrap();
    }

    #[test]
    fn lock_slice_locks() {
        let mut v = vec![0u64; 4096];
        match lock_slice(&mut v) {
            Ok(()) => {}
            Err(RtError::Refused { .. }) => latlab_testutil::skip!("mlock not permitted here"),
            Err(e) => panic!("{e}"),
        }
    }
}

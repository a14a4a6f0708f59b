//! Sleeping until a time: relative `nanosleep`, absolute `clock_nanosleep` on
//! `CLOCK_MONOTONIC`, and `timerfd` with its exact expiration count.
//!
//! Times are `CLOCK_MONOTONIC` nanoseconds ([`crate::clocks::monotonic_ns`]). Signals
//! interrupting a sleep are retried, so a call returns only at or after its time.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// Sleeps for `ns` nanoseconds with `nanosleep` (relative; the remaining time is slept
/// again after a signal).
pub fn sleep_relative(ns: u64) {
    let mut req = timespec(ns);
    loop {
        let mut rem = timespec(0);
        // SAFETY: `req` and `rem` are valid timespecs owned by this frame.
        let rc = unsafe { libc::nanosleep(&req, &mut rem) };
        if rc == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
        req = rem;
    }
}

/// Sleeps until `CLOCK_MONOTONIC` reads `deadline_ns` (`clock_nanosleep` with
/// `TIMER_ABSTIME`: no drift from the time spent computing the deadline).
pub fn sleep_until(deadline_ns: u64) {
    let t = timespec(deadline_ns);
    loop {
        // SAFETY: `t` is a valid timespec; the remaining-time pointer may be null with
        // TIMER_ABSTIME.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &t,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR {
            return;
        }
    }
}

/// A `timerfd` on `CLOCK_MONOTONIC`. [`TimerFd::wait`] returns the number of expirations
/// since the last wait, so overruns are counted exactly.
#[derive(Debug)]
pub struct TimerFd {
    fd: OwnedFd,
}

impl TimerFd {
    /// Creates a timer (`timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC)`).
    pub fn new() -> io::Result<TimerFd> {
        // SAFETY: plain system call with constant arguments.
        let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor that nothing else owns.
        Ok(TimerFd {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Arms the timer to expire first at `first_ns` (absolute `CLOCK_MONOTONIC`) and then
    /// every `period_ns` (0: once).
    pub fn arm(&self, first_ns: u64, period_ns: u64) -> io::Result<()> {
        let spec = libc::itimerspec {
            it_interval: timespec(period_ns),
            it_value: timespec(first_ns.max(1)),
        };
        // SAFETY: `spec` is valid; the old-value pointer may be null.
        let rc = unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Blocks until the timer has expired at least once and returns how many times it
    /// expired since the previous call.
    pub fn wait(&self) -> io::Result<u64> {
        loop {
            let mut n = 0u64;
            // SAFETY: reads exactly 8 bytes into `n`, a valid, writable u64.
            let rc = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    (&mut n as *mut u64).cast(),
                    std::mem::size_of::<u64>(),
                )
            };
            if rc == 8 {
                return Ok(n);
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clocks::monotonic_ns;

    #[test]
    fn absolute_sleep_returns_at_or_after_the_time() {
        let t = monotonic_ns() + 2_000_000;
        sleep_until(t);
        assert!(monotonic_ns() >= t);
        let t0 = monotonic_ns();
        sleep_relative(1_000_000);
        assert!(monotonic_ns() - t0 >= 1_000_000);
    }

    #[test]
    fn timerfd_counts_every_expiration() {
        // Expirations at start, start+1ms, ..., start+10ms: by start+10.5ms there have
        // been 11, whenever this thread got the CPU. Two reads must account for all of
        // them, so at least one read reports several: the count does not depend on how
        // late the first wait returned (a guest can lose the CPU for milliseconds).
        let tfd = TimerFd::new().unwrap();
        let start = monotonic_ns() + 1_000_000;
        tfd.arm(start, 1_000_000).unwrap();
        let first = tfd.wait().unwrap();
        assert!(first >= 1);
        sleep_until(start + 10_500_000);
        let second = tfd.wait().unwrap();
        assert!(
            first + second >= 11,
            "expected every expiration to be counted, got {first} + {second}"
        );
    }
}

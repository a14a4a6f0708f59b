//! POSIX clocks as `u64` nanosecond readings: `clock_gettime` for `CLOCK_MONOTONIC`,
//! `CLOCK_MONOTONIC_RAW` and `CLOCK_REALTIME`, `gettimeofday`, and clock resolutions.
//!
//! These go through the vDSO on Linux (no system call), but each still costs tens of
//! nanoseconds; the measuring loops use [`crate::tsc::Clock`] instead.

/// A clock whose resolution [`clock_resolution_ns`] can report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClockId {
    /// `CLOCK_MONOTONIC`: NTP-slewed, never steps back.
    Monotonic,
    /// `CLOCK_MONOTONIC_RAW`: the hardware clocksource, not slewed.
    MonotonicRaw,
    /// `CLOCK_REALTIME`: wall-clock time, can step.
    Realtime,
}

impl ClockId {
    fn raw(self) -> libc::clockid_t {
        match self {
            ClockId::Monotonic => libc::CLOCK_MONOTONIC,
            ClockId::MonotonicRaw => libc::CLOCK_MONOTONIC_RAW,
            ClockId::Realtime => libc::CLOCK_REALTIME,
        }
    }

    /// The C name, e.g. `CLOCK_MONOTONIC_RAW`.
    pub fn name(self) -> &'static str {
        match self {
            ClockId::Monotonic => "CLOCK_MONOTONIC",
            ClockId::MonotonicRaw => "CLOCK_MONOTONIC_RAW",
            ClockId::Realtime => "CLOCK_REALTIME",
        }
    }
}

#[inline(always)]
fn timespec_ns(ts: &libc::timespec) -> u64 {
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

#[inline(always)]
fn gettime(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `timespec` for the duration of the call and `id` is
    // one of the clock ids Linux always supports, so the call cannot fail or write elsewhere.
    unsafe {
        libc::clock_gettime(id, &mut ts);
    }
    timespec_ns(&ts)
}

/// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds.
#[inline(always)]
pub fn monotonic_ns() -> u64 {
    gettime(libc::CLOCK_MONOTONIC)
}

/// `clock_gettime(CLOCK_MONOTONIC_RAW)` in nanoseconds.
#[inline(always)]
pub fn monotonic_raw_ns() -> u64 {
    gettime(libc::CLOCK_MONOTONIC_RAW)
}

/// `clock_gettime(CLOCK_REALTIME)` in nanoseconds since the Unix epoch.
#[inline(always)]
pub fn realtime_ns() -> u64 {
    gettime(libc::CLOCK_REALTIME)
}

/// `gettimeofday` in nanoseconds since the Unix epoch (microsecond resolution, times 1000).
#[inline(always)]
pub fn gettimeofday_ns() -> u64 {
    let mut tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    // SAFETY: `tv` is a valid, writable `timeval`; a null timezone pointer is allowed.
    unsafe {
        libc::gettimeofday(&mut tv, std::ptr::null_mut());
    }
    (tv.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(tv.tv_usec as u64 * 1_000)
}

/// The resolution `clock_getres` reports for `id`, in nanoseconds (1 for high-resolution
/// clocks; a coarse clock reports its tick).
pub fn clock_resolution_ns(id: ClockId) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `timespec`; the clock id is always supported.
    unsafe {
        libc::clock_getres(id.raw(), &mut ts);
    }
    timespec_ns(&ts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_clocks_do_not_go_back() {
        for f in [monotonic_ns, monotonic_raw_ns] {
            let mut last = f();
            for _ in 0..1000 {
                let now = f();
                assert!(now >= last);
                last = now;
            }
        }
    }

    #[test]
    fn wall_clocks_agree_roughly() {
        let a = realtime_ns();
        let b = gettimeofday_ns();
        // after 2020, and the two within a minute of each other (no timing claim)
        assert!(a > 1_577_836_800 * 1_000_000_000);
        assert!(a.abs_diff(b) < 60 * 1_000_000_000);
    }

    #[test]
    fn resolutions_are_sane() {
        for id in [ClockId::Monotonic, ClockId::MonotonicRaw, ClockId::Realtime] {
            let r = clock_resolution_ns(id);
            assert!((1..=10_000_000).contains(&r), "{}: {r}", id.name());
        }
    }
}

//! The time-stamp counter: reading it, what the CPU says about it, its rate, and
//! [`Clock`], the timebase the measuring loops read.
//!
//! On x86_64 [`read`] is `lfence; rdtsc` (about 10–20 ns, no system call). The rate comes
//! first from what the kernel or CPU states ([`kernel_rate`]) and is always cross-checked by
//! a calibration against `CLOCK_MONOTONIC_RAW` ([`calibrate`]). Where the TSC is absent or
//! not invariant, [`Clock::establish`] falls back to `CLOCK_MONOTONIC` and records why.
//!
//! On other architectures the readers fall back to `CLOCK_MONOTONIC` nanoseconds so that
//! the workspace builds anywhere; [`Clock::establish`] then always picks the fallback.

use crate::clocks;
use latlab_core::results::provenance::{Timebase, TscFacts};
use latlab_core::units::{FastConv, Nanos, Ticks, TscInstant, TscRate};

#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::{__rdtscp, _mm_lfence, _rdtsc};

/// Reads the TSC after all earlier instructions have completed (`lfence; rdtsc`).
///
/// The fence keeps the read from being hoisted above the code being timed; later
/// instructions may still start before it. Off x86_64: `CLOCK_MONOTONIC` in nanoseconds.
#[inline(always)]
pub fn read() -> TscInstant {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `lfence` (SSE2, baseline on x86_64) and `rdtsc` exist on every x86_64 CPU,
        // touch no memory and cannot fault in user mode (Linux leaves CR4.TSD clear).
        unsafe {
            _mm_lfence();
            TscInstant(_rdtsc())
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        TscInstant(clocks::monotonic_ns())
    }
}

/// Reads the TSC with a bare `rdtsc`, no fence: the CPU may execute it out of order with
/// the surrounding code. **For benchmarks of the reading cost only**; measure with [`read`].
#[inline(always)]
pub fn read_bare() -> TscInstant {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` exists on every x86_64 CPU, touches no memory and cannot fault in
        // user mode (Linux leaves CR4.TSD clear).
        unsafe { TscInstant(_rdtsc()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        TscInstant(clocks::monotonic_ns())
    }
}

/// Reads the TSC and the CPU it was read on, atomically, with `rdtscp`.
///
/// Linux stores `(node << 12) | cpu` in `TSC_AUX`; the CPU number is its low 12 bits.
/// `rdtscp` waits for earlier instructions to complete. Requires the `rdtscp` feature (see
/// [`facts`]); off x86_64: `CLOCK_MONOTONIC` nanoseconds and `sched_getcpu`.
#[inline(always)]
pub fn read_cpu() -> (TscInstant, u32) {
    #[cfg(target_arch = "x86_64")]
    {
        let mut aux = 0u32;
        // SAFETY: `rdtscp` writes only to `aux`, a valid local `u32`; it exists on every
        // x86_64 CPU that Linux runs on in practice (AMD K8+, Intel Nehalem+) and cannot
        // fault in user mode.
        let t = unsafe { __rdtscp(&mut aux) };
        (TscInstant(t), aux & 0xfff)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        (
            TscInstant(clocks::monotonic_ns()),
            crate::sched::current_cpu(),
        )
    }
}

/// The TSC capabilities named by the `flags` line of `/proc/cpuinfo` (the first one; all
/// CPUs report the same). Rate fields are left `None`. Pure: takes the file's text.
pub fn parse_cpu_flags(cpuinfo: &str) -> TscFacts {
    let flags = cpuinfo
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "flags").then_some(v)
        })
        .unwrap_or("");
    let has = |f: &str| flags.split_whitespace().any(|x| x == f);
    let constant_tsc = has("constant_tsc");
    let nonstop_tsc = has("nonstop_tsc");
    TscFacts {
        present: has("tsc"),
        rdtscp: has("rdtscp"),
        constant_tsc,
        nonstop_tsc,
        known_freq: has("tsc_known_freq"),
        invariant: constant_tsc && nonstop_tsc,
        ..TscFacts::default()
    }
}

/// The TSC's capabilities: `/proc/cpuinfo` flags, completed by CPUID.
///
/// CPUID can only add: leaf 1 EDX bit 4 (TSC), leaf 0x80000001 EDX bit 27 (`rdtscp`) and
/// leaf 0x80000007 EDX bit 8 (invariant TSC, from which the kernel itself derives both
/// `constant_tsc` and `nonstop_tsc`). Rate fields are `None`; [`Clock::establish`] fills them.
pub fn facts() -> TscFacts {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    with_cpuid(parse_cpu_flags(&cpuinfo))
}

#[cfg(target_arch = "x86_64")]
fn with_cpuid(mut f: TscFacts) -> TscFacts {
    use crate::cpuid::{cpuid, max_basic_leaf, max_extended_leaf};
    if max_basic_leaf() >= 1 && cpuid(1).edx & (1 << 4) != 0 {
        f.present = true;
    }
    let ext = max_extended_leaf();
    if ext >= 0x8000_0001 && cpuid(0x8000_0001).edx & (1 << 27) != 0 {
        f.rdtscp = true;
    }
    if ext >= 0x8000_0007 && cpuid(0x8000_0007).edx & (1 << 8) != 0 {
        f.constant_tsc = true;
        f.nonstop_tsc = true;
        f.invariant = true;
    }
    f
}

/// Whatever `/proc/cpuinfo` says, there is no user-space TSC to read off x86_64.
#[cfg(not(target_arch = "x86_64"))]
fn with_cpuid(_: TscFacts) -> TscFacts {
    TscFacts::default()
}

/// Parses a decimal MHz figure such as `2596.096` into Hz exactly (integer arithmetic;
/// digits beyond the sixth decimal, i.e. below 1 Hz, are rounded half up). `None` if it is
/// not a plain non-negative decimal number.
pub fn parse_mhz_to_hz(s: &str) -> Option<u64> {
    let (int, frac) = match s.split_once('.') {
        Some((i, f)) => (i, f),
        None => (s, ""),
    };
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !digits(int) || !digits(frac) {
        return None;
    }
    let mut hz = int.parse::<u64>().ok()?.checked_mul(1_000_000)?;
    let fb = frac.as_bytes();
    let mut scale = 100_000u64;
    for &b in fb.iter().take(6) {
        hz = hz.checked_add(u64::from(b - b'0') * scale)?;
        scale /= 10;
    }
    if fb.len() > 6 && fb[6] >= b'5' {
        hz = hz.checked_add(1)?;
    }
    Some(hz)
}

/// The TSC rate in Hz stated in a kernel log: the last
/// `tsc: Refined TSC clocksource calibration: 2596.095 MHz` if any, else the last
/// `tsc: Detected 2596.096 MHz processor`. Pure: takes the log's text (as `dmesg` prints it
/// or `klogctl` returns it, with or without `<6>[   0.000000]` prefixes).
pub fn parse_kernel_log_tsc(log: &str) -> Option<u64> {
    const REFINED: &str = "tsc: Refined TSC clocksource calibration: ";
    const DETECTED: &str = "tsc: Detected ";
    fn mhz_at(rest: &str) -> Option<u64> {
        let (num, after) = rest.split_once(' ')?;
        if !after.starts_with("MHz") {
            return None;
        }
        parse_mhz_to_hz(num.trim())
    }
    let mut refined = None;
    let mut detected = None;
    for line in log.lines() {
        if let Some(i) = line.find(REFINED) {
            if let Some(hz) = mhz_at(&line[i + REFINED.len()..]) {
                refined = Some(hz);
            }
        } else if let Some(i) = line.find(DETECTED) {
            if let Some(hz) = mhz_at(&line[i + DETECTED.len()..]) {
                detected = Some(hz);
            }
        }
    }
    refined.or(detected)
}

/// Reads the kernel ring buffer with `klogctl(SYSLOG_ACTION_READ_ALL)`. `None` if not
/// permitted (needs `CAP_SYSLOG` when `kernel.dmesg_restrict=1`) or empty.
fn read_kernel_log() -> Option<String> {
    const SYSLOG_ACTION_READ_ALL: libc::c_int = 3;
    const SYSLOG_ACTION_SIZE_BUFFER: libc::c_int = 10;
    // SAFETY: SIZE_BUFFER ignores the buffer arguments; a null pointer with length 0 is
    // what klogctl(2) documents for it.
    let size = unsafe { libc::klogctl(SYSLOG_ACTION_SIZE_BUFFER, std::ptr::null_mut(), 0) };
    let size = usize::try_from(size).ok().filter(|&n| n > 0)?.min(64 << 20);
    let mut buf = vec![0u8; size];
    let len = libc::c_int::try_from(buf.len()).ok()?;
    // SAFETY: `buf` is a live, writable allocation of exactly `len` bytes; READ_ALL writes
    // at most `len` bytes into it and returns how many it wrote.
    let n = unsafe { libc::klogctl(SYSLOG_ACTION_READ_ALL, buf.as_mut_ptr().cast(), len) };
    let n = usize::try_from(n).ok().filter(|&n| n > 0)?;
    buf.truncate(n);
    Some(String::from_utf8_lossy(&buf).into_owned())
}

fn sysfs_rate_hz() -> Option<u64> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/tsc_freq_khz").ok()?;
    s.trim().parse::<u64>().ok()?.checked_mul(1_000)
}

#[cfg(target_arch = "x86_64")]
fn cpuid_15_hz() -> Option<u64> {
    use crate::cpuid::{cpuid, max_basic_leaf};
    if max_basic_leaf() < 0x15 {
        return None;
    }
    let r = cpuid(0x15);
    if r.ecx == 0 || r.ebx == 0 || r.eax == 0 {
        return None;
    }
    Some(u64::from(r.ecx) * u64::from(r.ebx) / u64::from(r.eax))
}

#[cfg(target_arch = "x86_64")]
fn cpuid_hypervisor_hz() -> Option<u64> {
    use crate::cpuid::{cpuid, max_hypervisor_leaf};
    if max_hypervisor_leaf()? < 0x4000_0010 {
        return None;
    }
    let khz = cpuid(0x4000_0010).eax;
    (khz != 0).then(|| u64::from(khz) * 1_000)
}

/// The TSC rate the kernel or CPU states, and where it came from. Tried in order:
/// `"sysfs tsc_freq_khz"` (`/sys/devices/system/cpu/cpu0/tsc_freq_khz`), `"cpuid 0x15"`
/// (crystal × ratio, when fully enumerated), `"cpuid 0x40000010"` (hypervisor timing leaf,
/// kHz), `"kernel log"` (see [`parse_kernel_log_tsc`]). `None` if none of them says.
pub fn kernel_rate() -> Option<(TscRate, &'static str)> {
    let ok = |hz: u64, src: &'static str| TscRate::from_hz(hz).ok().map(|r| (r, src));
    if let Some(r) = sysfs_rate_hz().and_then(|hz| ok(hz, "sysfs tsc_freq_khz")) {
        return Some(r);
    }
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(r) = cpuid_15_hz().and_then(|hz| ok(hz, "cpuid 0x15")) {
            return Some(r);
        }
        if let Some(r) = cpuid_hypervisor_hz().and_then(|hz| ok(hz, "cpuid 0x40000010")) {
            return Some(r);
        }
    }
    read_kernel_log()
        .and_then(|log| parse_kernel_log_tsc(&log))
        .and_then(|hz| ok(hz, "kernel log"))
}

/// The default calibration window of [`calibrate`]/[`Clock::establish`]: 100 ms, which with
/// brackets of ~50 ns bounds the calibration error near 1 ppm.
pub const DEFAULT_CALIBRATION_WINDOW: Nanos = Nanos::from_millis(100);

/// How many bracketed samples [`calibrate`] takes at each end of its window.
const CALIBRATION_SAMPLES: usize = 16;

/// The result of [`calibrate`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    /// The measured TSC rate.
    pub rate: TscRate,
    /// The window actually measured on `CLOCK_MONOTONIC_RAW` (at least the one requested).
    pub window: Nanos,
    /// Bound on the error from the bracketing reads, in ppm: the half-widths of the start
    /// and end brackets, in ns, over the window.
    pub error_ppm: f64,
}

#[derive(Clone, Copy)]
struct Bracket {
    before: u64,
    ns: u64,
    after: u64,
}

impl Bracket {
    fn width(&self) -> u64 {
        self.after.saturating_sub(self.before)
    }
}

/// The tightest of `n` (tsc, CLOCK_MONOTONIC_RAW, tsc) brackets.
fn tightest_bracket(n: usize) -> Bracket {
    let take = || {
        let before = read().0;
        let ns = clocks::monotonic_raw_ns();
        let after = read().0;
        Bracket { before, ns, after }
    };
    let mut best = take();
    for _ in 1..n {
        let b = take();
        if b.width() < best.width() {
            best = b;
        }
    }
    best
}

/// Measures the TSC rate against `CLOCK_MONOTONIC_RAW` over `window` (sleeping, not
/// spinning, in between; [`DEFAULT_CALIBRATION_WINDOW`] is the usual choice).
///
/// At each end it takes 16 brackets `(tsc, raw ns, tsc)` and keeps the narrowest; the rate
/// is the change of the bracket midpoints over the change in ns. `CLOCK_MONOTONIC_RAW` is
/// itself derived from the kernel's clocksource rate, so this checks consistency with the
/// kernel rather than against an independent reference.
pub fn calibrate(window: Nanos) -> Calibration {
    let s0 = tightest_bracket(CALIBRATION_SAMPLES);
    std::thread::sleep(window.to_std());
    let s1 = tightest_bracket(CALIBRATION_SAMPLES);
    // Twice the midpoint change, to keep the half tick.
    let dtsc2 = (u128::from(s1.before) + u128::from(s1.after))
        .saturating_sub(u128::from(s0.before) + u128::from(s0.after));
    let dns = s1.ns.saturating_sub(s0.ns).max(1);
    let hz = (dtsc2 * 1_000_000_000 + u128::from(dns)) / (2 * u128::from(dns));
    let hz = u64::try_from(hz).unwrap_or(u64::MAX).max(1);
    let rate = TscRate::from_hz(hz).unwrap_or_else(|_| unreachable!("hz is at least 1"));
    let half_widths_ticks = (s0.width() + s1.width()) as f64 / 2.0;
    let half_widths_ns = half_widths_ticks * 1e9 / hz as f64;
    Calibration {
        rate,
        window: Nanos(dns),
        error_ppm: half_widths_ns / dns as f64 * 1e6,
    }
}

/// Signed difference of `rate` from `reference`, in ppm.
fn disagreement_ppm(rate: TscRate, reference: TscRate) -> f64 {
    (rate.hz() as f64 - reference.hz() as f64) / reference.hz() as f64 * 1e6
}

/// Where a [`Clock`]'s readings come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timesource {
    /// The TSC, converted at this rate.
    Tsc(TscRate),
    /// `CLOCK_MONOTONIC`, already in nanoseconds (the fallback).
    Monotonic,
}

/// The timebase of the measuring loops: a raw reading ([`Clock::now`]) and its conversion
/// of differences to nanoseconds ([`Clock::delta_nanos`]), cheap enough for the hot path.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    source: Timesource,
    /// Ticks→ns for the TSC; the exact identity (multiplier 2^32, shift 32) for the fallback,
    /// so that `delta_nanos` has no branch.
    conv: FastConv,
}

/// The identity conversion: a "1 GHz" rate makes `FastConv` multiply by 2^32 and shift 32.
fn identity_conv() -> FastConv {
    TscRate::from_hz(1_000_000_000)
        .unwrap_or_else(|_| unreachable!("nonzero"))
        .fast()
}

impl Clock {
    /// Picks the timebase for this host and records how.
    ///
    /// With a present, invariant TSC (on x86_64): the TSC, at the [`kernel_rate`] when there
    /// is one and otherwise at the calibrated rate. The calibration over
    /// `calibration_window` ([`DEFAULT_CALIBRATION_WINDOW`] is the usual choice) runs either
    /// way and is recorded in [`TscFacts`] with the disagreement between the two rates.
    /// Otherwise: `CLOCK_MONOTONIC`, with the reason in [`Timebase::fallback_reason`].
    pub fn establish(calibration_window: Nanos) -> (Clock, Timebase) {
        let mut tsc = facts();
        if !cfg!(target_arch = "x86_64") {
            return Clock::monotonic_timebase("not x86_64", tsc);
        }
        if !tsc.present {
            return Clock::monotonic_timebase("the CPU has no TSC", tsc);
        }
        if !tsc.invariant {
            let reason = format!(
                "TSC is not invariant (constant_tsc={}, nonstop_tsc={})",
                tsc.constant_tsc, tsc.nonstop_tsc
            );
            return Clock::monotonic_timebase(reason, tsc);
        }
        let cal = calibrate(calibration_window);
        let (rate, source) = kernel_rate().unwrap_or((cal.rate, "calibration"));
        tsc.rate_hz = Some(rate.hz());
        tsc.rate_source = Some(source.to_owned());
        tsc.calibrated_hz = Some(cal.rate.hz());
        tsc.calibration_window_ns = Some(cal.window.get());
        tsc.calibration_error_ppm = Some(cal.error_ppm);
        tsc.rate_disagreement_ppm =
            (source != "calibration").then(|| disagreement_ppm(rate, cal.rate));
        let timebase = Timebase {
            source: "tsc".to_owned(),
            fallback_reason: None,
            tsc,
        };
        (Clock::from_tsc_rate(rate), timebase)
    }

    /// Forces the `CLOCK_MONOTONIC` fallback (e.g. for a `--clock monotonic` flag) and
    /// returns the [`Timebase`] that records it, with `reason` as the fallback reason and
    /// the TSC's capabilities (no calibration is run).
    pub fn establish_monotonic(reason: impl Into<String>) -> (Clock, Timebase) {
        Clock::monotonic_timebase(reason, facts())
    }

    fn monotonic_timebase(reason: impl Into<String>, tsc: TscFacts) -> (Clock, Timebase) {
        let timebase = Timebase {
            source: "clock_monotonic".to_owned(),
            fallback_reason: Some(reason.into()),
            tsc,
        };
        (Clock::monotonic(), timebase)
    }

    /// A clock reading `CLOCK_MONOTONIC` (the fallback, forced).
    pub fn monotonic() -> Clock {
        Clock {
            source: Timesource::Monotonic,
            conv: identity_conv(),
        }
    }

    /// A clock reading the TSC at a rate the caller already knows (no checks: the caller
    /// vouches that the TSC is present and invariant).
    pub fn from_tsc_rate(rate: TscRate) -> Clock {
        Clock {
            source: Timesource::Tsc(rate),
            conv: rate.fast(),
        }
    }

    /// A raw reading: TSC ticks ([`read`]), or `CLOCK_MONOTONIC` ns in the fallback. Only
    /// differences of readings of the same clock mean anything.
    #[inline(always)]
    pub fn now(&self) -> u64 {
        match self.source {
            Timesource::Tsc(_) => read().0,
            Timesource::Monotonic => clocks::monotonic_ns(),
        }
    }

    /// Nanoseconds from reading `earlier` to reading `later` (hot-path multiply-and-shift,
    /// see [`FastConv`]). Saturates to zero if `later` is before `earlier` (which can happen
    /// across CPUs whose TSCs are not perfectly synchronised).
    #[inline(always)]
    pub fn delta_nanos(&self, earlier: u64, later: u64) -> Nanos {
        self.conv.to_nanos(Ticks(later.saturating_sub(earlier)))
    }

    /// Converts a raw duration (a difference of two [`Clock::now`] readings) to nanoseconds.
    #[inline(always)]
    pub fn raw_to_nanos(&self, raw: u64) -> Nanos {
        self.conv.to_nanos(Ticks(raw))
    }

    /// Where the readings come from.
    pub fn timesource(&self) -> Timesource {
        self.source
    }

    /// Whether the readings are TSC ticks.
    pub fn is_tsc(&self) -> bool {
        matches!(self.source, Timesource::Tsc(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CPUINFO: &str = "processor\t: 0\nvendor_id\t: AuthenticAMD\n\
        model name\t: AMD EPYC 9R14 96-Core Processor\n\
        flags\t\t: fpu vme de pse tsc msr pae rdtscp lm constant_tsc rep_good nopl \
        nonstop_tsc cpuid tsc_known_freq pni\nbugs\t\t: sysret_ss_attrs\n\n\
        processor\t: 1\nflags\t\t: fpu\n";

    #[test]
    fn cpu_flags_parsed() {
        let f = parse_cpu_flags(CPUINFO);
        assert!(f.present && f.rdtscp && f.constant_tsc && f.nonstop_tsc && f.known_freq);
        assert!(f.invariant);
        assert_eq!(f.rate_hz, None);

        let f = parse_cpu_flags("flags\t: tsc constant_tsc tsc_deadline_timer\n");
        assert!(f.present && f.constant_tsc);
        assert!(!f.nonstop_tsc && !f.invariant && !f.rdtscp && !f.known_freq);

        // no substring matches: `tsc_adjust` is not `tsc`
        let f = parse_cpu_flags("flags: tsc_adjust tsc_deadline_timer\n");
        assert!(!f.present);
        assert_eq!(parse_cpu_flags(""), TscFacts::default());
    }

    #[test]
    fn mhz_parsed_exactly() {
        assert_eq!(parse_mhz_to_hz("2596.096"), Some(2_596_096_000));
        assert_eq!(parse_mhz_to_hz("2596.095"), Some(2_596_095_000));
        assert_eq!(parse_mhz_to_hz("2596"), Some(2_596_000_000));
        assert_eq!(parse_mhz_to_hz("2596.0955"), Some(2_596_095_500));
        assert_eq!(parse_mhz_to_hz("3000.000001"), Some(3_000_000_001));
        assert_eq!(parse_mhz_to_hz("1.0000005"), Some(1_000_001));
        assert_eq!(parse_mhz_to_hz("1.0000004"), Some(1_000_000));
        // 0.1 + 0.2 style float traps do not apply
        assert_eq!(parse_mhz_to_hz("2893.299"), Some(2_893_299_000));
        for bad in ["", ".5", "abc", "1.2.3", "-5", "12a", "1e3"] {
            assert_eq!(parse_mhz_to_hz(bad), None, "{bad}");
        }
    }

    #[test]
    fn kernel_log_detected() {
        let log = "<6>[    0.000000] Linux version 6.8.0\n\
                   <6>[    0.000060] tsc: Detected 2596.096 MHz processor\n\
                   <6>[    0.385665] clocksource: Switched to clocksource tsc\n";
        assert_eq!(parse_kernel_log_tsc(log), Some(2_596_096_000));
        // dmesg form, no prefix
        assert_eq!(
            parse_kernel_log_tsc("tsc: Detected 3600.000 MHz processor"),
            Some(3_600_000_000)
        );
        // older "MHz TSC" wording
        assert_eq!(
            parse_kernel_log_tsc("[0.0] tsc: Detected 2000.5 MHz TSC\n"),
            Some(2_000_500_000)
        );
    }

    #[test]
    fn kernel_log_refined_wins_and_last_wins() {
        let log = "[    0.000000] tsc: Detected 2596.096 MHz processor\n\
                   [    1.500000] tsc: Refined TSC clocksource calibration: 2596.000 MHz\n\
                   [    2.000000] tsc: Refined TSC clocksource calibration: 2596.095 MHz\n\
                   [    9.000000] tsc: Detected 9999.999 MHz processor\n";
        assert_eq!(parse_kernel_log_tsc(log), Some(2_596_095_000));
    }

    #[test]
    fn kernel_log_without_rate() {
        assert_eq!(parse_kernel_log_tsc(""), None);
        assert_eq!(
            parse_kernel_log_tsc("tsc: Marking TSC unstable due to clocksource watchdog"),
            None
        );
        assert_eq!(
            parse_kernel_log_tsc("tsc: Detected garbage MHz processor"),
            None
        );
        assert_eq!(
            parse_kernel_log_tsc("tsc: Detected 2596.096 GHz processor"),
            None
        );
    }

    #[test]
    fn read_is_non_decreasing() {
        let mut last = read();
        for _ in 0..1000 {
            let now = read();
            assert!(now >= last, "{now:?} < {last:?}");
            last = now;
        }
        assert!(read_bare().0 > 0);
    }

    #[test]
    fn read_cpu_names_an_online_cpu() {
        let online = crate::sched::online_cpus();
        for _ in 0..100 {
            let (t, cpu) = read_cpu();
            assert!(t.0 > 0);
            assert!(cpu < online, "cpu {cpu} >= online {online}");
        }
    }

    #[test]
    fn calibration_agrees_with_kernel_rate() {
        let cal = calibrate(Nanos::from_millis(50));
        assert!(cal.window >= Nanos::from_millis(50));
        assert!(cal.error_ppm >= 0.0 && cal.error_ppm.is_finite());
        if let Some((rate, src)) = kernel_rate() {
            let ppm = disagreement_ppm(rate, cal.rate).abs();
            assert!(
                ppm <= 2000.0 + cal.error_ppm,
                "{src} {rate} vs calibrated {} ({ppm:.1} ppm)",
                cal.rate
            );
        }
    }

    #[test]
    fn establish_picks_tsc_when_invariant() {
        let (clock, tb) = Clock::establish(Nanos::from_millis(20));
        eprintln!("{tb:?}");
        if cfg!(target_arch = "x86_64") && facts().present && facts().invariant {
            assert_eq!(tb.source, "tsc");
            assert!(clock.is_tsc());
            assert_eq!(tb.fallback_reason, None);
            assert!(tb.tsc.rate_hz.is_some() && tb.tsc.calibrated_hz.is_some());
            assert!(tb.tsc.rate_source.is_some());
            assert_eq!(
                clock.timesource(),
                Timesource::Tsc(TscRate::from_hz(tb.tsc.rate_hz.unwrap()).unwrap())
            );
        } else {
            assert_eq!(tb.source, "clock_monotonic");
            assert!(tb.fallback_reason.is_some());
            assert!(!clock.is_tsc());
        }
        let a = clock.now();
        let b = clock.now();
        assert!(clock.delta_nanos(a, b) < Nanos::SECOND);
        assert_eq!(clock.delta_nanos(b, a.saturating_sub(1)), Nanos::ZERO);
    }

    #[test]
    fn monotonic_clock_is_identity() {
        let c = Clock::monotonic();
        assert!(!c.is_tsc());
        assert_eq!(c.timesource(), Timesource::Monotonic);
        for d in [0u64, 1, 999, 1_000_000_007, u64::MAX / 3] {
            assert_eq!(c.delta_nanos(5, 5 + d), Nanos(d));
        }
        let (c, tb) = Clock::establish_monotonic("forced by --clock monotonic");
        assert!(!c.is_tsc());
        assert_eq!(tb.source, "clock_monotonic");
        assert_eq!(
            tb.fallback_reason.as_deref(),
            Some("forced by --clock monotonic")
        );
    }

    #[test]
    fn tsc_clock_converts() {
        let rate = TscRate::from_hz(2_596_096_000).unwrap();
        let c = Clock::from_tsc_rate(rate);
        assert!(c.is_tsc());
        let d = c.delta_nanos(1_000, 1_000 + 2_596_096_000).get();
        assert!(d.abs_diff(1_000_000_000) <= 2, "{d}");
        assert_eq!(c.raw_to_nanos(2_596_096).get().abs_diff(1_000_000), 0);
    }
}

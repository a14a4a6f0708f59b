//! Integer time units: TSC ticks, nanoseconds and the TSC rate that converts between them.
//!
//! Instants and durations are separate types so that adding two instants, or mixing ticks
//! with nanoseconds, does not compile. Everything is an integer: the hot path never touches
//! `f64`. Conversions between ticks and nanoseconds are exact (`u128` intermediate, rounded
//! to nearest) on the cold path; [`TscRate::fast`] gives a multiply-and-shift converter for
//! the hot path whose error is bounded and tested.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A duration in TSC ticks.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Ticks(pub u64);

/// A point in time read from the TSC (ticks since the counter's reset).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct TscInstant(pub u64);

/// A duration in nanoseconds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Nanos(pub u64);

/// A point in time in nanoseconds on some monotonic clock (which one is the caller's
/// business; instants of different clocks must not be mixed).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct NanoInstant(pub u64);

impl Ticks {
    /// Zero ticks.
    pub const ZERO: Ticks = Ticks(0);
}

impl Nanos {
    /// Zero nanoseconds.
    pub const ZERO: Nanos = Nanos(0);
    /// One microsecond.
    pub const MICROSECOND: Nanos = Nanos(1_000);
    /// One millisecond.
    pub const MILLISECOND: Nanos = Nanos(1_000_000);
    /// One second.
    pub const SECOND: Nanos = Nanos(1_000_000_000);

    /// Whole nanoseconds from a count of seconds.
    pub const fn from_secs(s: u64) -> Nanos {
        Nanos(s * 1_000_000_000)
    }
    /// Whole nanoseconds from a count of milliseconds.
    pub const fn from_millis(ms: u64) -> Nanos {
        Nanos(ms * 1_000_000)
    }
    /// Whole nanoseconds from a count of microseconds.
    pub const fn from_micros(us: u64) -> Nanos {
        Nanos(us * 1_000)
    }
    /// The raw count.
    pub const fn get(self) -> u64 {
        self.0
    }
    /// As a `std::time::Duration` (for sleeping, never for measuring).
    pub const fn to_std(self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.0)
    }
    /// Saturating subtraction.
    pub const fn saturating_sub(self, other: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(other.0))
    }
}

impl From<std::time::Duration> for Nanos {
    fn from(d: std::time::Duration) -> Nanos {
        Nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

macro_rules! duration_ops {
    ($d:ty) => {
        impl Add for $d {
            type Output = $d;
            fn add(self, o: $d) -> $d {
                Self(self.0 + o.0)
            }
        }
        impl AddAssign for $d {
            fn add_assign(&mut self, o: $d) {
                self.0 += o.0;
            }
        }
        impl Sub for $d {
            type Output = $d;
            fn sub(self, o: $d) -> $d {
                Self(self.0 - o.0)
            }
        }
    };
}
duration_ops!(Ticks);
duration_ops!(Nanos);

macro_rules! instant_ops {
    ($i:ty, $d:ty) => {
        impl Sub for $i {
            type Output = $d;
            /// Elapsed time from `o` to `self`; wraps rather than panics if `o` is later
            /// (callers that care check order first, see [`Self::since`]).
            fn sub(self, o: $i) -> $d {
                <$d>::from_raw(self.0.wrapping_sub(o.0))
            }
        }
        impl Add<$d> for $i {
            type Output = $i;
            fn add(self, d: $d) -> $i {
                Self(self.0 + d.0)
            }
        }
        impl $i {
            /// Elapsed time since `earlier`, or `None` if `earlier` is after `self`.
            pub fn since(self, earlier: $i) -> Option<$d> {
                self.0.checked_sub(earlier.0).map(<$d>::from_raw)
            }
        }
    };
}
impl Ticks {
    const fn from_raw(v: u64) -> Ticks {
        Ticks(v)
    }
}
impl Nanos {
    const fn from_raw(v: u64) -> Nanos {
        Nanos(v)
    }
}
instant_ops!(TscInstant, Ticks);
instant_ops!(NanoInstant, Nanos);

impl fmt::Display for Nanos {
    /// Human form with an automatically chosen unit: `850ns`, `12.3us`, `4.56ms`, `1.234s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_ns(self.0 as f64))
    }
}

/// Formats a nanosecond value (possibly fractional, e.g. a mean) with an automatic unit
/// and about four significant digits.
pub fn format_ns(ns: f64) -> String {
    let (v, unit) = if ns.abs() < 1e3 {
        (ns, "ns")
    } else if ns.abs() < 1e6 {
        (ns / 1e3, "us")
    } else if ns.abs() < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let digits = if v.abs() >= 100.0 || (unit == "ns" && v.fract() == 0.0) {
        0
    } else if v.abs() >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$}{unit}")
}

/// How [`format_signed_ns`] marks the sign of a difference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignStyle {
    /// `-1.50us` / `1.50us`: ASCII minus, nothing before positive values (terminal tables).
    AsciiMinus,
    /// `-1.50us` / `+1.50us`: ASCII minus and an explicit plus.
    AsciiBoth,
    /// `−1.50us` / `1.50us`: typographic minus (U+2212), nothing before positive values.
    Minus,
    /// `−1.50us` / `+1.50us`: typographic minus and an explicit plus.
    Both,
}

/// A signed nanosecond difference in [`format_ns`]'s units, its sign marked as `style` says.
pub fn format_signed_ns(ns: f64, style: SignStyle) -> String {
    let (minus, plus) = match style {
        SignStyle::AsciiMinus => ("-", ""),
        SignStyle::AsciiBoth => ("-", "+"),
        SignStyle::Minus => ("\u{2212}", ""),
        SignStyle::Both => ("\u{2212}", "+"),
    };
    if ns < 0.0 {
        format!("{minus}{}", format_ns(-ns))
    } else {
        format!("{plus}{}", format_ns(ns))
    }
}

/// `v` with at most `max_decimals` decimals and no trailing zeros (nor a trailing point):
/// `format_decimal(99.900, 6)` is `"99.9"`, `format_decimal(95.0, 6)` is `"95"`. Used for
/// labels, where `95.000000% CI` or a tick of `0.0100` would only be noise.
pub fn format_decimal(v: f64, max_decimals: usize) -> String {
    let mut s = format!("{v:.max_decimals$}");
    if s.contains('.') {
        let kept = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(kept);
    }
    if s == "-0" {
        s = "0".into();
    }
    s
}

/// The TSC frequency in ticks per second (Hz), an integer.
///
/// Stored as an integer number of Hz: at 1–5 GHz that is a resolution better than 0.001 ppm,
/// far below any calibration error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TscRate(u64);

/// Error for a TSC rate of zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a TSC rate must be at least 1 Hz")]
pub struct ZeroRate;

impl TscRate {
    /// A rate in Hz; zero is rejected.
    pub const fn from_hz(hz: u64) -> Result<TscRate, ZeroRate> {
        if hz == 0 {
            Err(ZeroRate)
        } else {
            Ok(TscRate(hz))
        }
    }
    /// The rate in Hz.
    pub const fn hz(self) -> u64 {
        self.0
    }
    /// Ticks to nanoseconds, exact, rounded to nearest.
    pub const fn to_nanos(self, t: Ticks) -> Nanos {
        let n = (t.0 as u128 * 1_000_000_000 + self.0 as u128 / 2) / self.0 as u128;
        Nanos(if n > u64::MAX as u128 {
            u64::MAX
        } else {
            n as u64
        })
    }
    /// Nanoseconds to ticks, exact, rounded to nearest.
    pub const fn to_ticks(self, n: Nanos) -> Ticks {
        let t = (n.0 as u128 * self.0 as u128 + 500_000_000) / 1_000_000_000;
        Ticks(if t > u64::MAX as u128 {
            u64::MAX
        } else {
            t as u64
        })
    }
    /// A multiply-and-shift converter for the hot path (see [`FastConv`]).
    pub const fn fast(self) -> FastConv {
        // ns = ticks * 1e9 / hz  ==  (ticks * mult) >> SHIFT with mult = round(1e9 << SHIFT / hz).
        let mult = (((1_000_000_000u128) << FastConv::SHIFT) + self.0 as u128 / 2) / self.0 as u128;
        FastConv { mult: mult as u64 }
    }
}

impl fmt::Display for TscRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:06} MHz", self.0 / 1_000_000, self.0 % 1_000_000)
    }
}

/// Hot-path ticks→nanoseconds conversion: one 128-bit multiply and a shift, no division.
///
/// With `SHIFT = 32` the multiplier carries at least 31 significant bits for any rate up to
/// 2 GHz·2, so the relative error is below 1e-9 (1 ns per second of ticks) — tested
/// against [`TscRate::to_nanos`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FastConv {
    mult: u64,
}

impl FastConv {
    const SHIFT: u32 = 32;
    /// Converts ticks to nanoseconds (truncating).
    #[inline(always)]
    pub fn to_nanos(self, t: Ticks) -> Nanos {
        Nanos(((t.0 as u128 * self.mult as u128) >> Self::SHIFT) as u64)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn signed_differences_keep_each_style() {
        assert_eq!(format_signed_ns(-1500.0, SignStyle::AsciiMinus), "-1.50us");
        assert_eq!(format_signed_ns(1500.0, SignStyle::AsciiMinus), "1.50us");
        assert_eq!(format_signed_ns(1500.0, SignStyle::AsciiBoth), "+1.50us");
        assert_eq!(format_signed_ns(-20.0, SignStyle::Minus), "\u{2212}20ns");
        assert_eq!(format_signed_ns(0.0, SignStyle::Both), "+0ns");
    }

    use super::*;

    #[test]
    fn zero_rate_rejected() {
        assert_eq!(TscRate::from_hz(0), Err(ZeroRate));
    }

    #[test]
    fn exact_conversions() {
        let r = TscRate::from_hz(2_596_096_000).unwrap();
        assert_eq!(r.to_nanos(Ticks(2_596_096_000)), Nanos::SECOND);
        assert_eq!(r.to_ticks(Nanos::SECOND), Ticks(2_596_096_000));
        // 52 ticks at 2.596 GHz = 20.03 ns -> 20
        assert_eq!(r.to_nanos(Ticks(52)), Nanos(20));
        // rounding to nearest: 1 tick at 1.5 Hz... use a 3 Hz clock: 1 tick = 333333333.3 ns
        let slow = TscRate::from_hz(3).unwrap();
        assert_eq!(slow.to_nanos(Ticks(1)), Nanos(333_333_333));
        assert_eq!(slow.to_nanos(Ticks(2)), Nanos(666_666_667));
        // no overflow: u64::MAX ticks at 1 Hz saturates
        let one = TscRate::from_hz(1).unwrap();
        assert_eq!(one.to_nanos(Ticks(u64::MAX)), Nanos(u64::MAX));
    }

    #[test]
    fn round_trip_is_within_half_a_tick() {
        let r = TscRate::from_hz(3_000_000_007).unwrap();
        for n in [0u64, 1, 7, 999, 1_000_000, 123_456_789_012] {
            let back = r.to_nanos(r.to_ticks(Nanos(n)));
            assert!(back.0.abs_diff(n) <= 1, "{n} -> {back:?}");
        }
    }

    #[test]
    fn fast_conversion_matches_exact() {
        for hz in [1_000_000_000u64, 2_596_096_000, 3_999_999_999, 25_000_000] {
            let r = TscRate::from_hz(hz).unwrap();
            let f = r.fast();
            for t in [0u64, 1, 52, 1_000, 123_456, 10_000_000_000, 3_600 * hz] {
                let exact = r.to_nanos(Ticks(t)).0;
                let fast = f.to_nanos(Ticks(t)).0;
                // truncation plus <1e-9 relative multiplier error
                let tol = 1 + exact / 1_000_000_000;
                assert!(
                    exact.abs_diff(fast) <= tol,
                    "hz {hz} t {t}: {exact} vs {fast}"
                );
            }
        }
    }

    #[test]
    fn instant_and_duration_algebra() {
        let a = TscInstant(100);
        let b = a + Ticks(50);
        assert_eq!(b - a, Ticks(50));
        assert_eq!(a.since(b), None);
        assert_eq!(b.since(a), Some(Ticks(50)));
        assert_eq!(NanoInstant(10) + Nanos(5), NanoInstant(15));
    }

    #[test]
    fn display_picks_unit() {
        assert_eq!(Nanos(850).to_string(), "850ns");
        assert_eq!(Nanos(12_345).to_string(), "12.3us");
        assert_eq!(Nanos(4_560_000).to_string(), "4.56ms");
        assert_eq!(Nanos(1_234_000_000).to_string(), "1.23s");
        assert_eq!(format_ns(20.5), "20.5ns");
        assert_eq!(format_ns(2.25), "2.25ns");
        assert_eq!(format_decimal(99.9, 6), "99.9");
        assert_eq!(format_decimal(95.0, 6), "95");
        assert_eq!(format_decimal(1000.0, 0), "1000");
        assert_eq!(format_decimal(0.0100, 4), "0.01");
        assert_eq!(format_decimal(-0.00001, 2), "0");
        assert_eq!(
            TscRate::from_hz(2_596_096_000).unwrap().to_string(),
            "2596.096000 MHz"
        );
    }
}

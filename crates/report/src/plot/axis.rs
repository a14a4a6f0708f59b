//! Axis geometry: ranges, explicit tick positions and tick label text.
//!
//! plotters' own logarithmic coordinate picks tick positions from a label
//! budget, which can yield odd light-line patterns; [`Axis`] instead carries
//! the exact major (labelled) and minor (grid-only) positions we want.

use latlab_core::units::format_decimal;
use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use std::ops::Range;

/// `10^e`, exactly as the decimal literal `1e{e}` parses (so `pow10(-3)` is
/// the same `f64` as `1e-3`, which `10f64.powi(-3)` does not guarantee).
pub(crate) fn pow10(e: i32) -> f64 {
    format!("1e{e}").parse().unwrap_or(f64::NAN)
}

/// Exponent of the largest power of ten `<= v`. `v` must be finite and > 0.
pub(crate) fn decade_exp(v: f64) -> i32 {
    let mut e = v.log10().floor() as i32;
    // log10 may be off by one ulp right at powers of ten.
    if pow10(e) > v {
        e -= 1;
    } else if pow10(e + 1) <= v {
        e += 1;
    }
    e
}

/// The largest power of ten `<= v` (`v` finite and > 0).
pub(crate) fn decade_floor(v: f64) -> f64 {
    pow10(decade_exp(v))
}

/// The smallest power of ten `>= v` (`v` finite and > 0).
pub(crate) fn decade_ceil(v: f64) -> f64 {
    let e = decade_exp(v);
    if pow10(e) == v {
        v
    } else {
        pow10(e + 1)
    }
}

/// One plot axis: value range, scale, and the tick positions to draw.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Axis {
    /// Lower end of the axis (value units).
    pub lo: f64,
    /// Upper end of the axis (value units).
    pub hi: f64,
    /// Logarithmic (base 10) rather than linear.
    pub log: bool,
    /// Labelled tick positions (also drawn as stronger grid lines).
    pub major: Vec<f64>,
    /// Unlabelled fine grid positions.
    pub minor: Vec<f64>,
}

impl Axis {
    /// A log axis between two powers of ten, labelled at every decade (every
    /// n-th decade if more than `max_labels` would be needed) and with minor
    /// grid lines at 2..9 × each decade. Narrow ranges (<= 2 decades) also
    /// get labels at 2× and 5×.
    pub(crate) fn log(lo: f64, hi: f64, max_labels: usize) -> Axis {
        let e0 = decade_exp(lo);
        let mut e1 = decade_exp(hi);
        if e1 <= e0 {
            e1 = e0 + 1;
        }
        let decades = (e1 - e0) as usize;
        let step = (decades + 1).div_ceil(max_labels.max(2)).max(1);
        let mut major = Vec::new();
        let mut minor = Vec::new();
        for (i, e) in (e0..=e1).enumerate() {
            let d = pow10(e);
            if i % step == 0 {
                major.push(d);
            } else {
                minor.push(d);
            }
            if e == e1 {
                break;
            }
            for m in 2..=9 {
                let v = m as f64 * d;
                if decades <= 2 && (m == 2 || m == 5) {
                    major.push(v);
                } else if decades <= 12 {
                    minor.push(v);
                }
            }
        }
        Axis {
            lo: pow10(e0),
            hi: pow10(e1),
            log: true,
            major,
            minor,
        }
    }

    /// A linear axis over `lo..hi` with "nice" (1/2/5 × 10^k) ticks, about
    /// `target_labels` of them.
    pub(crate) fn linear(lo: f64, hi: f64, target_labels: usize) -> Axis {
        let span = hi - lo;
        let raw = span / target_labels.max(2) as f64;
        let base = decade_floor(raw);
        let (mult, sub) = match raw / base {
            m if m <= 1.0 => (1.0, 5.0),
            m if m <= 2.0 => (2.0, 4.0),
            m if m <= 5.0 => (5.0, 5.0),
            _ => (10.0, 5.0),
        };
        let step = mult * base;
        let ticks = |step: f64| -> Vec<f64> {
            let eps = step * 1e-9;
            let first = ((lo - eps) / step).ceil() as i64;
            let last = ((hi + eps) / step).floor() as i64;
            (first..=last).map(|i| i as f64 * step).collect()
        };
        let major = ticks(step);
        let minor = ticks(step / sub)
            .into_iter()
            .filter(|v| !major.iter().any(|m| (m - v).abs() < step * 1e-6))
            .collect();
        Axis {
            lo,
            hi,
            log: false,
            major,
            minor,
        }
    }

    /// Position of `v` along the axis as a fraction of its length.
    pub(crate) fn fraction(&self, v: f64) -> f64 {
        if self.log {
            (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }
}

impl Ranged for Axis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let t = self.fraction(*value);
        let px = f64::from(limit.0) + f64::from(limit.1 - limit.0) * t;
        if px.is_nan() {
            limit.0
        } else {
            // Keep off-scale values (e.g. log(0)) far away but representable.
            px.clamp(-1e6, 1e6).round() as i32
        }
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.minor.clone()
        } else {
            self.major.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

impl ValueFormatter<f64> for Axis {
    fn format(value: &f64) -> String {
        fmt_num(*value)
    }
}

/// A tick value as short decimal text: about four significant digits,
/// trailing zeros removed (`0.30000000000000004` → `"0.3"`, `1000` → `"1000"`).
pub(crate) fn fmt_num(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_finite() {
            "0".into()
        } else {
            v.to_string()
        };
    }
    let mag = v.abs().log10().floor() as i32;
    format_decimal(v, (3 - mag).clamp(0, 15) as usize)
}

/// `e` written with Unicode superscript characters (`-3` → `"⁻³"`).
pub(crate) fn superscript(e: i32) -> String {
    e.to_string()
        .chars()
        .map(|c| match c {
            '-' => '⁻',
            '0' => '⁰',
            '1' => '¹',
            '2' => '²',
            '3' => '³',
            '4' => '⁴',
            '5' => '⁵',
            '6' => '⁶',
            '7' => '⁷',
            '8' => '⁸',
            '9' => '⁹',
            other => other,
        })
        .collect()
}

/// The percentile whose tail fraction is `frac`, as text without the `p`
/// (`1e-3` → `"99.9"`, `0.5` → `"50"`, `1e-6` → `"99.9999"`).
pub(crate) fn percentile_text(frac: f64) -> String {
    let q = 100.0 * (1.0 - frac);
    // Enough decimals to show the first non-nine digit of the tail.
    let decimals = ((-(frac * 100.0).log10()).ceil().max(0.0) as usize + 1).min(12);
    format_decimal(q, decimals)
}

/// `v` in powers-of-ten notation: `1e-3` → `"10⁻³"`, `2e-3` → `"2×10⁻³"`,
/// `1` → `"1"`.
pub(crate) fn pow10_label(v: f64) -> String {
    if v <= 0.0 || !v.is_finite() {
        return fmt_num(v);
    }
    let e = decade_exp(v * (1.0 + 1e-12));
    let mantissa = (v / pow10(e) * 1e6).round() / 1e6;
    let power = if e == 0 {
        String::new()
    } else {
        format!("10{}", superscript(e))
    };
    match (power.is_empty(), (mantissa - 1.0).abs() < 1e-9) {
        (true, _) => fmt_num(mantissa),
        (false, true) => power,
        (false, false) => format!("{}×{power}", fmt_num(mantissa)),
    }
}

/// CCDF y tick label: the tail fraction in powers-of-ten notation plus the
/// percentile it marks, e.g. `1e-3` → `"10⁻³ (p99.9)"`, `2e-3` →
/// `"2×10⁻³ (p99.8)"`. `1` is labelled just `"1"`.
pub(crate) fn ccdf_tick_label(v: f64) -> String {
    if v <= 0.0 || !v.is_finite() {
        return fmt_num(v);
    }
    if (v - 1.0).abs() < 1e-12 {
        return "1".into();
    }
    format!("{} (p{})", pow10_label(v), percentile_text(v))
}

/// Log-axis tick label: plain decimals while every major tick lies in
/// `[0.001, 10000]`, powers-of-ten notation otherwise (so a 20 ns .. 2 ms
/// axis in ms reads `10⁻⁵ … 10` rather than `0.00001 … 10`).
pub(crate) fn log_tick_label(v: f64, plain: bool) -> String {
    if plain {
        fmt_num(v)
    } else {
        pow10_label(v)
    }
}

/// Whether all of `ticks` read well as plain decimals (see [`log_tick_label`]).
pub(crate) fn plain_decimals(ticks: &[f64]) -> bool {
    ticks.iter().all(|v| (1e-3..=1e4).contains(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decades() {
        assert_eq!(decade_floor(1.0), 1.0);
        assert_eq!(decade_floor(9.99), 1.0);
        assert_eq!(decade_floor(10.0), 10.0);
        assert_eq!(decade_floor(20.0), 10.0);
        assert_eq!(decade_floor(0.0015), 1e-3);
        assert_eq!(decade_floor(1e-3), 1e-3);
        assert_eq!(decade_floor(1e-6), 1e-6);
        assert_eq!(decade_floor(9.9e-7), 1e-7);
        assert_eq!(decade_ceil(1.0), 1.0);
        assert_eq!(decade_ceil(1.01), 10.0);
        assert_eq!(decade_ceil(5000.0), 1e4);
        assert_eq!(decade_ceil(1e4), 1e4);
        assert_eq!(decade_ceil(0.02), 0.1);
        assert_eq!(decade_ceil(1e-6), 1e-6);
        for e in -12..=12 {
            assert_eq!(decade_exp(pow10(e)), e, "e={e}");
            assert_eq!(decade_floor(pow10(e) * 3.0), pow10(e));
            assert_eq!(decade_ceil(pow10(e) * 3.0), pow10(e + 1));
        }
    }

    #[test]
    fn log_axis_ticks() {
        let a = Axis::log(1e-6, 1.0, 12);
        assert_eq!(a.major, vec![1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0]);
        assert!(a.minor.contains(&2e-6) && a.minor.contains(&9e-1));
        assert_eq!(a.minor.len(), 6 * 8);

        // Too many decades for the label budget: every other decade.
        let b = Axis::log(1e-12, 1.0, 7);
        assert_eq!(b.major.len(), 7);
        assert!(b.minor.contains(&1e-11));

        // Narrow ranges get 2× and 5× labels.
        let c = Axis::log(10.0, 100.0, 10);
        assert_eq!(c.major, vec![10.0, 20.0, 50.0, 100.0]);
    }

    #[test]
    fn linear_axis_ticks() {
        let a = Axis::linear(0.0, 1.0, 10);
        assert_eq!(a.major.len(), 11);
        let labels: Vec<String> = a.major.iter().map(|v| fmt_num(*v)).collect();
        assert_eq!(labels[3], "0.3");
        assert_eq!(labels[10], "1");
        let b = Axis::linear(12.0, 487.0, 8);
        assert_eq!(b.major.first().map(|v| fmt_num(*v)).as_deref(), Some("100"));
        assert!(b.major.iter().all(|v| (12.0..=487.0).contains(v)));
    }

    #[test]
    fn mapping() {
        let a = Axis::log(1.0, 1000.0, 10);
        assert_eq!(a.map(&1.0, (0, 300)), 0);
        assert_eq!(a.map(&10.0, (0, 300)), 100);
        assert_eq!(a.map(&1000.0, (0, 300)), 300);
        assert_eq!(a.map(&0.0, (0, 300)), -1_000_000);
        let l = Axis::linear(0.0, 1.0, 10);
        assert_eq!(l.map(&0.5, (400, 0)), 200);
    }

    #[test]
    fn number_formatting() {
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(fmt_num(0.1 + 0.2), "0.3");
        assert_eq!(fmt_num(0.01), "0.01");
        assert_eq!(fmt_num(1000.0), "1000");
        assert_eq!(fmt_num(2.5), "2.5");
        assert_eq!(superscript(-12), "⁻¹²");
    }

    #[test]
    fn percentile_labels() {
        assert_eq!(percentile_text(0.1), "90");
        assert_eq!(percentile_text(0.01), "99");
        assert_eq!(percentile_text(1e-3), "99.9");
        assert_eq!(percentile_text(1e-6), "99.9999");
        assert_eq!(percentile_text(0.5), "50");
        assert_eq!(percentile_text(2e-3), "99.8");
        assert_eq!(ccdf_tick_label(1.0), "1");
        assert_eq!(ccdf_tick_label(1e-3), "10⁻³ (p99.9)");
        assert_eq!(ccdf_tick_label(1e-6), "10⁻⁶ (p99.9999)");
        assert_eq!(ccdf_tick_label(0.1), "10⁻¹ (p90)");
        assert_eq!(ccdf_tick_label(2e-3), "2×10⁻³ (p99.8)");
        assert_eq!(pow10_label(1e4), "10⁴");
        assert_eq!(pow10_label(5.0), "5");
        assert_eq!(pow10_label(1e-5), "10⁻⁵");
        assert!(plain_decimals(&[0.001, 1.0, 10_000.0]));
        assert!(!plain_decimals(&[1e-5, 1.0]));
        assert_eq!(log_tick_label(1e-5, false), "10⁻⁵");
        assert_eq!(log_tick_label(0.01, true), "0.01");
    }
}

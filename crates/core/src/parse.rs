//! Parsing the values users type: durations (`250ns`, `87.0us`, `5.3ms`, `1.5s`, `3m`),
//! rates (`100kpps`, `1.5Mpps`, `1Gbps`) and percentiles (`99.99`, `p99.9999`).
//!
//! All parsing is exact decimal arithmetic on integers: `87.0us` is 87 000 ns, `1.5Mpps` is
//! 1 500 000 packets/s, `p99.9999` is the fraction 999 999 / 1 000 000. A value that cannot be
//! represented exactly (a duration finer than 1 ns) is rejected rather than rounded.

use crate::units::Nanos;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The accepted duration forms, quoted in errors.
pub const DURATION_FORMS: &str =
    "a number with a unit ns, us (or µs), ms, s, m or h, e.g. 250ns, 87.0us, 5.3ms, 1.5s, 3m";
/// The accepted rate forms, quoted in errors.
pub const RATE_FORMS: &str =
    "a number with a unit pps, kpps, Mpps, Gpps or bps, kbps, Mbps, Gbps, e.g. 100kpps, 1.5Mpps, 1Gbps";
/// The accepted percentile forms, quoted in errors.
pub const PERCENTILE_FORMS: &str =
    "a percentile in (0, 100], optionally prefixed with p, e.g. 50, 99.9, p99.9999";

/// A value that could not be parsed; `Display` is one line naming the input and the accepted forms.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("'{input}' is not valid ({reason}); expected {accepted}")]
pub struct ParseError {
    /// The offending text.
    pub input: String,
    /// What is wrong with it.
    pub reason: String,
    /// The accepted forms.
    pub accepted: &'static str,
}

impl ParseError {
    /// The errors of parsing `input` as one of the `accepted` forms, by reason.
    fn maker<'a>(input: &'a str, accepted: &'static str) -> impl Fn(&str) -> ParseError + 'a {
        move |reason| ParseError {
            input: input.to_string(),
            reason: reason.to_string(),
            accepted,
        }
    }
}

/// A non-negative decimal as an integer mantissa and a count of fraction digits:
/// `87.05` is `(8705, 2)`.
fn split_decimal(num: &str) -> Option<(u128, u32)> {
    let (int, frac) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if int.len() + frac.len() > 30 {
        return None;
    }
    let digits: String = format!("{int}{frac}");
    let mantissa = if digits.is_empty() {
        0
    } else {
        digits.parse::<u128>().ok()?
    };
    Some((mantissa, frac.len() as u32))
}

/// Splits `"87.0us"` into `("87.0", "us")`.
fn split_unit(s: &str) -> (&str, &str) {
    let idx = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    (&s[..idx], s[idx..].trim())
}

/// `mantissa / 10^frac * scale`, exactly, or an error reason.
fn scale_exact(mantissa: u128, frac: u32, scale: u128, what: &str) -> Result<u64, String> {
    let pow = 10u128.pow(frac);
    let prod = mantissa
        .checked_mul(scale)
        .ok_or_else(|| "too large".to_string())?;
    if prod % pow != 0 {
        return Err(format!("finer than one {what}"));
    }
    u64::try_from(prod / pow).map_err(|_| "too large".to_string())
}

/// Parses a duration such as `250ns`, `87.0us`, `5.3ms`, `1.5s`, `3m` or `1h`.
///
/// A unit is required (a bare `5` is ambiguous). The result must be a whole number of
/// nanoseconds.
pub fn parse_duration(s: &str) -> Result<Nanos, ParseError> {
    let err = ParseError::maker(s, DURATION_FORMS);
    let t = s.trim();
    let (num, unit) = split_unit(t);
    let (mantissa, frac) = split_decimal(num).ok_or_else(|| err("no number"))?;
    let scale: u128 = match unit {
        "ns" => 1,
        "us" | "µs" | "μs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "" => return Err(err("missing unit")),
        _ => return Err(err(&format!("unknown unit '{unit}'"))),
    };
    scale_exact(mantissa, frac, scale, "nanosecond")
        .map(Nanos)
        .map_err(|r| err(&r))
}

/// A rate as given by the user: in packets or in bits per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rate {
    /// Packets per second, in thousandths (so `2.5pps` is exact).
    MilliPps(u64),
    /// Bits per second on the wire.
    Bps(u64),
}

/// Ethernet per-frame overhead on the wire that a frame size excludes: preamble and start
/// delimiter (8 bytes) plus the minimum inter-frame gap (12 bytes).
pub const ETHERNET_WIRE_OVERHEAD_BYTES: u64 = 20;

impl Rate {
    /// The packet rate in thousandths of a packet per second. A bit rate needs the frame
    /// size in bytes (Ethernet frame incl. FCS); each frame then occupies
    /// `(frame + 20) * 8` bits on the wire ([`ETHERNET_WIRE_OVERHEAD_BYTES`]).
    pub fn milli_pps(self, frame_bytes: Option<u64>) -> Result<u64, String> {
        match self {
            Rate::MilliPps(m) => Ok(m),
            Rate::Bps(bps) => {
                let frame = frame_bytes.ok_or("a bit rate needs a packet size")?;
                let wire_bits = (frame + ETHERNET_WIRE_OVERHEAD_BYTES) * 8;
                Ok(((bps as u128 * 1000) / wire_bits as u128) as u64)
            }
        }
    }

    /// The send time of packet `k` relative to the start for this rate, exact to the
    /// nanosecond (no accumulated drift): `k / pps` seconds.
    pub fn offset_of(milli_pps: u64, k: u64) -> Nanos {
        Nanos(((k as u128 * 1_000_000_000_000) / milli_pps.max(1) as u128) as u64)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Rate::MilliPps(m) if m % 1000 == 0 => write!(f, "{}pps", m / 1000),
            Rate::MilliPps(m) => write!(f, "{}.{:03}pps", m / 1000, m % 1000),
            Rate::Bps(b) => write!(f, "{b}bps"),
        }
    }
}

/// Parses a rate such as `100kpps`, `1.5Mpps`, `2.5pps`, `1Gbps` or `400Mbps`.
pub fn parse_rate(s: &str) -> Result<Rate, ParseError> {
    let err = ParseError::maker(s, RATE_FORMS);
    let (num, unit) = split_unit(s.trim());
    let (mantissa, frac) = split_decimal(num).ok_or_else(|| err("no number"))?;
    let (scale, pkts): (u128, bool) = match unit {
        "pps" => (1_000, true),
        "kpps" => (1_000_000, true),
        "Mpps" | "mpps" => (1_000_000_000, true),
        "Gpps" => (1_000_000_000_000, true),
        "bps" => (1, false),
        "kbps" => (1_000, false),
        "Mbps" => (1_000_000, false),
        "Gbps" => (1_000_000_000, false),
        "Tbps" => (1_000_000_000_000, false),
        "" => return Err(err("missing unit")),
        _ => return Err(err(&format!("unknown unit '{unit}'"))),
    };
    let v = scale_exact(
        mantissa,
        frac,
        scale,
        if pkts { "millipacket/s" } else { "bit/s" },
    )
    .map_err(|r| err(&r))?;
    if v == 0 {
        return Err(err("must be positive"));
    }
    Ok(if pkts {
        Rate::MilliPps(v)
    } else {
        Rate::Bps(v)
    })
}

/// A percentile as an exact, reduced fraction `num / den` of the samples (`p99.99` = 9999/10000).
///
/// Exactness matters at the tail: the rank of p99.9999 among 10^7 samples must be exactly
/// 9 999 990, not one off from floating-point rounding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Percentile {
    num: u64,
    den: u64,
}

impl Percentile {
    /// The standard ladder every latlab table shows.
    pub const LADDER: [Percentile; 7] = [
        Percentile { num: 1, den: 2 },
        Percentile { num: 9, den: 10 },
        Percentile { num: 99, den: 100 },
        Percentile {
            num: 999,
            den: 1_000,
        },
        Percentile {
            num: 9_999,
            den: 10_000,
        },
        Percentile {
            num: 99_999,
            den: 100_000,
        },
        Percentile {
            num: 999_999,
            den: 1_000_000,
        },
    ];

    /// A percentile from a fraction of samples; `None` unless `0 < num <= den`.
    pub fn from_fraction(num: u64, den: u64) -> Option<Percentile> {
        (num > 0 && num <= den).then(|| {
            let g = gcd(u128::from(num), u128::from(den)) as u64;
            Percentile {
                num: num / g,
                den: den / g,
            }
        })
    }

    /// The fraction's numerator.
    pub fn num(self) -> u64 {
        self.num
    }
    /// The fraction's denominator.
    pub fn den(self) -> u64 {
        self.den
    }
    /// As a quantile in (0, 1] — for plotting and display only.
    pub fn quantile(self) -> f64 {
        self.num as f64 / self.den as f64
    }

    /// The 1-based rank of this percentile among `n` samples: `ceil(n * num / den)`,
    /// clamped to `[1, n]` (the nearest-rank definition).
    pub fn rank(self, n: u64) -> u64 {
        let r = (n as u128 * self.num as u128).div_ceil(self.den as u128) as u64;
        r.clamp(1, n.max(1))
    }

    /// Expected count of samples strictly beyond this percentile: `n * (1 - p)`, exact as a
    /// fraction `(n * (den - num)) / den`. Returned as a (numerator, denominator) pair.
    pub fn tail_count(self, n: u64) -> (u128, u128) {
        (n as u128 * (self.den - self.num) as u128, self.den as u128)
    }
}

impl fmt::Display for Percentile {
    /// `p50`, `p99.9`, `p99.9999`, `p100`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // value in percent = num * 100 / den; print the shortest exact decimal
        let mut num = self.num as u128 * 100;
        let den = self.den as u128;
        let int = num / den;
        num %= den;
        write!(f, "p{int}")?;
        if num != 0 {
            f.write_str(".")?;
            let mut digits = 0;
            while num != 0 && digits < 12 {
                num *= 10;
                write!(f, "{}", num / den)?;
                num %= den;
                digits += 1;
            }
        }
        Ok(())
    }
}

/// Parses `99.99`, `p99.99` or `P50` into an exact [`Percentile`].
pub fn parse_percentile(s: &str) -> Result<Percentile, ParseError> {
    let err = ParseError::maker(s, PERCENTILE_FORMS);
    let t = s.trim();
    let t = t.strip_prefix(['p', 'P']).unwrap_or(t);
    let (mantissa, frac) = split_decimal(t).ok_or_else(|| err("not a number"))?;
    if frac > 15 {
        return Err(err("too many digits"));
    }
    // value = mantissa / 10^frac percent = mantissa / (100 * 10^frac)
    let den = 100u128 * 10u128.pow(frac);
    if mantissa == 0 || mantissa > den {
        return Err(err("out of range"));
    }
    // reduce the fraction
    let g = gcd(mantissa, den);
    Ok(Percentile {
        num: (mantissa / g) as u64,
        den: (den / g) as u64,
    })
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_users_write_them() {
        assert_eq!(parse_duration("250ns").unwrap(), Nanos(250));
        assert_eq!(parse_duration("87.0us").unwrap(), Nanos(87_000));
        assert_eq!(parse_duration("87.5µs").unwrap(), Nanos(87_500));
        assert_eq!(parse_duration("5.3ms").unwrap(), Nanos(5_300_000));
        assert_eq!(parse_duration("1.5s").unwrap(), Nanos(1_500_000_000));
        assert_eq!(parse_duration("3m").unwrap(), Nanos(180_000_000_000));
        assert_eq!(parse_duration("1020ms").unwrap(), Nanos(1_020_000_000));
        assert_eq!(parse_duration("2h").unwrap(), Nanos(7_200_000_000_000));
        assert_eq!(parse_duration(".5s").unwrap(), Nanos(500_000_000));
        assert_eq!(parse_duration("0ns").unwrap(), Nanos(0));
    }

    #[test]
    fn bad_durations_name_the_forms() {
        for bad in [
            "5xs",
            "5",
            "",
            "ms",
            "1.5ns",
            "-1s",
            "1e3ns",
            "1..2s",
            "99999999999999999999h",
        ] {
            let e = parse_duration(bad).unwrap_err();
            let line = e.to_string();
            assert!(line.contains("250ns, 87.0us"), "{line}");
            assert!(!line.contains('\n'));
        }
        assert!(parse_duration("5xs")
            .unwrap_err()
            .reason
            .contains("unknown unit 'xs'"));
        assert!(parse_duration("1.5ns")
            .unwrap_err()
            .reason
            .contains("finer than"));
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("100kpps").unwrap(), Rate::MilliPps(100_000_000));
        assert_eq!(
            parse_rate("1.5Mpps").unwrap(),
            Rate::MilliPps(1_500_000_000)
        );
        assert_eq!(parse_rate("2.5pps").unwrap(), Rate::MilliPps(2_500));
        assert_eq!(parse_rate("1Gbps").unwrap(), Rate::Bps(1_000_000_000));
        // 64-byte frames at 1 Gb/s: 84 bytes on the wire -> 1488095.238 pps
        assert_eq!(
            Rate::Bps(1_000_000_000).milli_pps(Some(64)).unwrap(),
            1_488_095_238
        );
        assert!(Rate::Bps(1).milli_pps(None).is_err());
        assert!(parse_rate("0pps").is_err());
        assert!(parse_rate("10").is_err());
        assert!(parse_rate("10 furlongs").is_err());
        assert_eq!(Rate::MilliPps(100_000_000).to_string(), "100000pps");
    }

    #[test]
    fn schedule_offsets_do_not_drift() {
        // 3 pps: packet 3 is at exactly 1 s, packet 1 at 333333333 ns
        assert_eq!(Rate::offset_of(3_000, 3), Nanos::SECOND);
        assert_eq!(Rate::offset_of(3_000, 1), Nanos(333_333_333));
        assert_eq!(
            Rate::offset_of(100_000_000, 100_000 * 120),
            Nanos::from_secs(120)
        );
    }

    #[test]
    fn percentiles_are_exact_fractions() {
        let p = parse_percentile("p99.9999").unwrap();
        assert_eq!((p.num(), p.den()), (999_999, 1_000_000));
        assert_eq!(parse_percentile("50").unwrap(), Percentile::LADDER[0]);
        assert_eq!(parse_percentile("99.90").unwrap(), Percentile::LADDER[3]);
        assert_eq!(parse_percentile("100").unwrap().to_string(), "p100");
        assert_eq!(p.to_string(), "p99.9999");
        assert_eq!(parse_percentile("99.5").unwrap().to_string(), "p99.5");
        assert_eq!(p.rank(10_000_000), 9_999_990);
        assert_eq!(p.rank(1), 1);
        assert_eq!(Percentile::LADDER[0].rank(3), 2);
        for bad in ["0", "100.1", "abc", "p", "-5"] {
            assert!(parse_percentile(bad).is_err(), "{bad}");
        }
        let ladder: Vec<String> = Percentile::LADDER.iter().map(|p| p.to_string()).collect();
        assert_eq!(
            ladder,
            ["p50", "p90", "p99", "p99.9", "p99.99", "p99.999", "p99.9999"]
        );
    }
}

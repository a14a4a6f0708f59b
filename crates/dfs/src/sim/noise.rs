//! Node noise from measurement: a recorded gap trace ([`NoiseTrace`], the gap lengths a
//! spinning thread saw and how often) turned into a per-node stall process ([`Stalls`]).
//!
//! A trace is read from a latlab result file (`latlab host noise`'s `gap` histogram, or the
//! first `gap…` histogram of a `latlab sched` result, with the run's duration) or from a
//! small text histogram (format in [`NoiseTrace::parse_text`]). In the simulation every
//! node stalls independently: stall starts form a Poisson process with the trace's rate,
//! and each stall's length is drawn from the trace's histogram (a bin by its count, then
//! log-uniformly inside the bin), from a generator seeded per node.

use super::rng::Rng;
use latlab_core::hist::LatencyHistogram;
use latlab_core::results::ResultFile;
use serde::{Deserialize, Serialize};

/// One bin of gap lengths: `count` gaps with lengths in `[lo_ns, hi_ns]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GapBin {
    /// Shortest gap of the bin, ns.
    pub lo_ns: u64,
    /// Longest gap of the bin, ns.
    pub hi_ns: u64,
    /// Gaps seen in the bin.
    pub count: u64,
}

/// A measured gap trace: how long it ran and the histogram of the gaps it saw.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoiseTrace {
    /// Where it came from (a file name, or `default`).
    pub source: String,
    /// How long the measurement ran, ns.
    pub duration_ns: u64,
    /// Gap lengths.
    pub bins: Vec<GapBin>,
}

/// Why a trace is rejected.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum NoiseError {
    /// A line of a text histogram that does not parse.
    #[error("--noise-trace {file}: line {line}: {why} (expected `duration_ns N` then lines `LO_NS HI_NS COUNT`)")]
    Line {
        /// The file.
        file: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// The trace as a whole is unusable.
    #[error("--noise-trace {file}: {why}")]
    Invalid {
        /// The file.
        file: String,
        /// What is wrong.
        why: String,
    },
}

/// Longest gap a trace may hold, ns (10 s): longer is a suspended machine, not noise, and
/// simulated times near `i64::MAX` would overflow.
pub const MAX_STALL_NS: u64 = 10_000_000_000;

/// Most stalls per second a trace may ask for (one per µs): the simulation's cost grows
/// with the rate, and a thread stalled that often is not running.
pub const MAX_STALL_RATE: f64 = 1e6;

/// The default trace: measured on the development machine with `latlab host noise` (see
/// docs/dfs.md for where, when and the exact command).
const DEFAULT_TRACE: &str = include_str!("../../data/noise-default.txt");

impl NoiseTrace {
    /// The trace shipped with latlab (docs/dfs.md says how it was measured).
    pub fn measured_default() -> NoiseTrace {
        NoiseTrace::parse_text(DEFAULT_TRACE, "default").expect("the shipped trace parses")
    }

    /// Reads a trace file: a latlab result (JSON, see [`NoiseTrace::from_result`]) or a
    /// text histogram ([`NoiseTrace::parse_text`]).
    ///
    /// # Errors
    /// [`NoiseError`] naming the file and what is wrong with it (one line).
    pub fn load(path: &std::path::Path) -> Result<NoiseTrace, NoiseError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| NoiseError::Invalid {
            file: name.clone(),
            why: format!("cannot read it: {e}"),
        })?;
        if text.trim_start().starts_with('{') {
            let r = ResultFile::from_json(&text, path).map_err(|e| NoiseError::Invalid {
                file: name.clone(),
                why: e.to_string().replace('\n', " "),
            })?;
            NoiseTrace::from_result(&r, &name)
        } else {
            NoiseTrace::parse_text(&text, &name)
        }
    }

    /// Parses the text histogram format: `#` comments and blank lines are skipped; one line
    /// `duration_ns N` (how long the measurement ran, > 0), then one line per bin
    /// `LO_NS HI_NS COUNT` (integers, 0 < LO ≤ HI, bins ascending and not overlapping).
    ///
    /// # Errors
    /// [`NoiseError`] naming the line and what is wrong.
    pub fn parse_text(text: &str, source: &str) -> Result<NoiseTrace, NoiseError> {
        let mut duration = None;
        let mut bins: Vec<GapBin> = Vec::new();
        for (k, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |why: String| NoiseError::Line {
                file: source.into(),
                line: k + 1,
                why,
            };
            let words: Vec<&str> = line.split_whitespace().collect();
            let int = |w: &str| {
                w.parse::<u64>()
                    .map_err(|_| bad(format!("'{w}' is not a whole number")))
            };
            match words.as_slice() {
                ["duration_ns", n] => {
                    if duration.is_some() {
                        return Err(bad("duration_ns given twice".into()));
                    }
                    duration = Some(int(n)?);
                }
                [lo, hi, count] => {
                    let b = GapBin {
                        lo_ns: int(lo)?,
                        hi_ns: int(hi)?,
                        count: int(count)?,
                    };
                    if b.lo_ns == 0 || b.lo_ns > b.hi_ns {
                        return Err(bad(format!("need 0 < LO_NS <= HI_NS, got {lo} {hi}")));
                    }
                    if bins.last().is_some_and(|p| p.hi_ns >= b.lo_ns) {
                        return Err(bad("bins must ascend without overlapping".into()));
                    }
                    bins.push(b);
                }
                _ => return Err(bad(format!("cannot read '{line}'"))),
            }
        }
        let t = NoiseTrace {
            source: source.into(),
            duration_ns: duration.ok_or_else(|| NoiseError::Invalid {
                file: source.into(),
                why: "no `duration_ns N` line".into(),
            })?,
            bins,
        };
        t.validate()?;
        Ok(t)
    }

    /// Reads the gap histogram of a latlab result: `host noise`'s `gap`, or the first
    /// histogram whose name starts with `gap` (a `sched` result), over the run's duration.
    ///
    /// # Errors
    /// [`NoiseError::Invalid`] when there is no gap histogram, it does not decode, or the
    /// duration is missing.
    pub fn from_result(r: &ResultFile, source: &str) -> Result<NoiseTrace, NoiseError> {
        let bad = |why: String| NoiseError::Invalid {
            file: source.into(),
            why,
        };
        let stored = r
            .histograms
            .iter()
            .find(|h| h.name == "gap")
            .or_else(|| r.histograms.iter().find(|h| h.name.starts_with("gap")))
            .ok_or_else(|| {
                bad(format!(
                    "a {} result without a `gap` histogram (use a `latlab host noise` or `latlab sched` result)",
                    r.kind
                ))
            })?;
        let h = stored
            .decode()
            .map_err(|e| bad(format!("histogram {}: {e}", stored.name)))?;
        let t = NoiseTrace::from_histogram(&h, r.duration_ns, source);
        t.validate()?;
        Ok(t)
    }

    /// Bins a gap histogram into power-of-two bins of gap length.
    pub fn from_histogram(h: &LatencyHistogram, duration_ns: u64, source: &str) -> NoiseTrace {
        let mut bins: Vec<GapBin> = Vec::new();
        for (v, count) in h.buckets() {
            let v = v.max(1);
            let lo = 1u64 << (63 - v.leading_zeros());
            let hi = lo.saturating_mul(2) - 1;
            match bins.last_mut() {
                Some(b) if b.lo_ns == lo => b.count += count,
                _ => bins.push(GapBin {
                    lo_ns: lo,
                    hi_ns: hi,
                    count,
                }),
            }
        }
        NoiseTrace {
            source: source.into(),
            duration_ns,
            bins,
        }
    }

    /// The text histogram of this trace (what [`NoiseTrace::parse_text`] reads).
    pub fn to_text(&self) -> String {
        let mut s = format!("duration_ns {}\n# lo_ns hi_ns count\n", self.duration_ns);
        for b in &self.bins {
            s.push_str(&format!("{} {} {}\n", b.lo_ns, b.hi_ns, b.count));
        }
        s
    }

    /// Checks that the trace can drive a stall process.
    ///
    /// # Errors
    /// [`NoiseError::Invalid`] saying what is wrong.
    pub fn validate(&self) -> Result<(), NoiseError> {
        let bad = |why: &str| {
            Err(NoiseError::Invalid {
                file: self.source.clone(),
                why: why.into(),
            })
        };
        if self.duration_ns == 0 {
            return bad("duration_ns must be at least 1");
        }
        if self.gaps() == 0 {
            return bad("no gaps in the trace (every bin count is 0)");
        }
        if self.bins.iter().any(|b| b.lo_ns == 0 || b.lo_ns > b.hi_ns) {
            return bad("a bin needs 0 < lo <= hi");
        }
        if self.bins.iter().any(|b| b.hi_ns > MAX_STALL_NS) {
            return bad("a gap longer than 10 s is not OS noise (a stalled clock or a suspended machine): at most 10000000000 ns");
        }
        if self.stalled_fraction() >= 0.5 {
            return bad("the gaps cover half the measurement or more: not noise, a machine that hardly ran the thread");
        }
        if self.rate_per_s() > MAX_STALL_RATE {
            return bad("more than 1000000 stalls per second: not a gap trace of a running thread (is duration_ns in ns?)");
        }
        Ok(())
    }

    /// Gaps in the trace.
    pub fn gaps(&self) -> u64 {
        self.bins
            .iter()
            .fold(0u64, |a, b| a.saturating_add(b.count))
    }

    /// Stalls per second.
    pub fn rate_per_s(&self) -> f64 {
        self.gaps() as f64 / (self.duration_ns as f64 / 1e9)
    }

    /// Share of the time stalled (each bin counted at its geometric mid-length).
    pub fn stalled_fraction(&self) -> f64 {
        let t: f64 = self
            .bins
            .iter()
            .map(|b| b.count as f64 * mid(b))
            .sum::<f64>();
        t / self.duration_ns as f64
    }
}

fn mid(b: &GapBin) -> f64 {
    (b.lo_ns as f64 * b.hi_ns as f64).sqrt()
}

/// One node's stall process, generated lazily as simulated time passes.
#[derive(Clone, Debug)]
pub(crate) struct Stalls {
    rng: Rng,
    mean_gap_ns: f64,
    cum: Vec<u64>,
    bins: Vec<GapBin>,
    start: i64,
    end: i64,
    /// Draws the next stall when one ends (false: a single stall, then none).
    repeat: bool,
}

impl Stalls {
    /// A node that stalls once, over `[start, end)`, and never again.
    #[cfg(test)]
    pub(crate) fn once(start: i64, end: i64) -> Stalls {
        Stalls {
            rng: Rng::new(0),
            mean_gap_ns: 1.0,
            cum: Vec::new(),
            bins: Vec::new(),
            start,
            end,
            repeat: false,
        }
    }

    /// The stall process of one node, seeded from the run's seed and the node.
    pub(crate) fn new(trace: &NoiseTrace, seed: u64, node: usize) -> Stalls {
        let mut cum = Vec::with_capacity(trace.bins.len());
        let mut acc = 0;
        for b in &trace.bins {
            acc += b.count;
            cum.push(acc);
        }
        let mut s = Stalls {
            rng: Rng::new(seed ^ 0x5741_4C4C_0000_0000 ^ (node as u64).wrapping_mul(0x9E37_79B9)),
            mean_gap_ns: 1e9 / trace.rate_per_s(),
            cum,
            bins: trace.bins.clone(),
            start: 0,
            end: 0,
            repeat: true,
        };
        s.draw_next(0);
        s
    }

    fn draw_next(&mut self, after: i64) {
        if !self.repeat {
            (self.start, self.end) = (i64::MAX, i64::MAX);
            return;
        }
        let start = after + self.rng.exp(self.mean_gap_ns).round() as i64;
        let total = *self.cum.last().expect("validated: gaps > 0");
        let pick = self.rng.next_u64() % total;
        let k = self.cum.partition_point(|&c| c <= pick);
        let b = self.bins[k];
        let (lo, hi) = (b.lo_ns as f64, b.hi_ns as f64);
        let len = (lo * (hi / lo).powf(self.rng.unit())).round().max(1.0) as i64;
        self.start = start;
        self.end = start + len;
    }

    /// The end of the stall `now` falls in, or `None` when the node runs at `now`. Times
    /// must not decrease between calls.
    pub(crate) fn stalled_until(&mut self, now: i64) -> Option<i64> {
        loop {
            if now < self.start {
                return None;
            }
            if now < self.end {
                return Some(self.end);
            }
            self.draw_next(self.end);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trip_and_rates() {
        let t = NoiseTrace::parse_text(
            "# comment\nduration_ns 1000000000\n10000 19999 300\n\n1000000 1999999 2\n",
            "t",
        )
        .unwrap();
        assert_eq!(t.gaps(), 302);
        assert_eq!(t.rate_per_s(), 302.0);
        let again = NoiseTrace::parse_text(&t.to_text(), "t").unwrap();
        assert_eq!(again, t);
        let f = t.stalled_fraction();
        // 300 × ~14.1 µs + 2 × ~1.41 ms ≈ 7.1 ms of 1 s
        assert!((0.006..0.008).contains(&f), "{f}");
    }

    #[test]
    fn malformed_text_names_the_line() {
        let cases = [
            ("duration_ns 10\n5 x 3\n", "line 2"),
            ("duration_ns 10\n9 5 3\n", "line 2"),
            ("duration_ns 10\n0 5 3\n", "line 2"),
            ("duration_ns 10\n5 9 1\n8 20 1\n", "line 3"),
            ("10 20 3\n", "no `duration_ns"),
            ("duration_ns 0\n10 20 3\n", "duration_ns must be"),
            ("duration_ns 1000\n10 20 0\n", "no gaps"),
            ("duration_ns 100\n10 200 3\n", "half the measurement"),
            ("duration_ns -4\n", "line 1"),
            ("hello\n", "line 1"),
            (
                "duration_ns 100000000000000000\n1000000000 99000000000 1\n",
                "longer than 10 s",
            ),
            ("duration_ns 1000000000\n1 1 2000000\n", "stalls per second"),
            (
                "duration_ns 1000\n1 1 18446744073709551615\n2 2 18446744073709551615\n",
                "half the measurement",
            ),
        ];
        for (text, want) in cases {
            let e = NoiseTrace::parse_text(text, "f.txt")
                .unwrap_err()
                .to_string();
            assert!(e.contains(want) && e.contains("f.txt"), "{text:?}: {e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }

    #[test]
    fn the_default_trace_parses() {
        let t = NoiseTrace::measured_default();
        assert!(t.gaps() > 0 && t.rate_per_s() > 0.0);
    }

    #[test]
    fn stalls_follow_the_trace() {
        // 1,000 stalls per second of exactly 10 µs (a one-value bin): 1 % of the time
        let t = NoiseTrace::parse_text("duration_ns 1000000000\n10000 10000 1000\n", "t").unwrap();
        let mut s = Stalls::new(&t, 3, 0);
        let mut stalled = 0i64;
        let mut starts = 0;
        let mut now = 0;
        let step = 1_000;
        let mut was = false;
        while now < 10_000_000_000 {
            let st = s.stalled_until(now);
            if let Some(end) = st {
                assert!(end > now && end - now <= 10_000);
                stalled += step;
                if !was {
                    starts += 1;
                }
            }
            was = st.is_some();
            now += step;
        }
        // 10 s: ~10,000 stalls, ~1 % stalled; Poisson spread of 10,000 is ±100 (1 σ)
        assert!((9_000..11_000).contains(&starts), "{starts}");
        let frac = stalled as f64 / now as f64;
        assert!((0.008..0.012).contains(&frac), "{frac}");
        // another node draws another sequence, the same node the same
        let mut a = Stalls::new(&t, 3, 1);
        let mut b = Stalls::new(&t, 3, 1);
        let mut c = Stalls::new(&t, 3, 0);
        assert_eq!(a.start, b.start);
        assert_ne!(a.start, c.start);
        assert_eq!(a.stalled_until(a.start), b.stalled_until(b.start));
        let _ = c.stalled_until(0);
    }
}

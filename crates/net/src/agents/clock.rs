//! Mapping an agent's clock onto rank 0's: offset and drift from min-RTT filtered
//! ping-pong exchanges (pure; the exchanges themselves run over MPI, feature `mpi`).
//!
//! One exchange: rank 0 sends at `t0` (its clock), the agent stamps `t1` when the message
//! arrives and `t2` when it answers (its clock), rank 0 stamps `t3` when the answer arrives.
//! With the agent's clock at `ref + θ`, the NTP estimate `((t1 − t0) + (t2 − t3)) / 2` is
//! off from `θ` by half the difference of the two one-way delays, so by at most half the
//! round trip `δ = (t3 − t0) − (t2 − t1)`. Exchanges with a long round trip (a descheduled
//! rank, a busy bus) carry a loose bound; in each round only the one with the shortest
//! round trip is kept (the min-RTT filter).
//!
//! Rounds are repeated through the run. Offset and drift are a least-squares line through
//! the rounds' kept estimates against rank 0's time, each weighted by the inverse square
//! of its bound (half its round trip), so a round taken while a rank was descheduled barely
//! moves the line. The reported uncertainty is the largest, over the rounds, of a round's
//! half round trip plus its estimate's distance from the line: a bound on the error at
//! every round's time, whatever split of each round trip between the two directions
//! happened, and between two rounds too (the true offset and the line are both straight
//! there, so their distance is largest at one of the two rounds).

use serde::{Deserialize, Serialize};

/// One ping-pong exchange, ns: `t0`, `t3` on rank 0's clock, `t1`, `t2` on the agent's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exchange {
    /// Rank 0 sends.
    pub t0: i64,
    /// The agent receives.
    pub t1: i64,
    /// The agent answers.
    pub t2: i64,
    /// Rank 0 receives the answer.
    pub t3: i64,
}

impl Exchange {
    /// Round trip without the agent's turnaround, ns (never negative).
    pub fn rtt(&self) -> i64 {
        ((self.t3 - self.t0) - (self.t2 - self.t1)).max(0)
    }

    /// The agent's offset (agent − rank 0) this exchange says, ns.
    pub fn offset(&self) -> f64 {
        ((self.t1 - self.t0) as f64 + (self.t2 - self.t3) as f64) / 2.0
    }

    /// Rank 0's time at the middle of the exchange, ns.
    pub fn midpoint(&self) -> f64 {
        (self.t0 as f64 + self.t3 as f64) / 2.0
    }
}

/// An agent's clock relative to rank 0's: `agent(t) = t + offset + drift·(t − epoch)`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClockEstimate {
    /// Rank 0's time the offset refers to, ns (the first kept exchange).
    pub epoch_ns: i64,
    /// Offset at `epoch_ns` (agent − rank 0), ns.
    pub offset_ns: f64,
    /// Drift, parts per million (the agent's clock gains this much per rank-0 second).
    pub drift_ppm: f64,
    /// Bound on the error of [`ClockEstimate::to_reference`] at the rounds' times, ns.
    pub uncertainty_ns: f64,
    /// The shortest round trip seen, ns.
    pub min_rtt_ns: i64,
    /// Rounds the estimate rests on.
    pub rounds: usize,
}

impl ClockEstimate {
    /// The offset (agent − rank 0) at rank 0's time `ref_ns`.
    pub fn offset_at(&self, ref_ns: i64) -> f64 {
        self.offset_ns + self.drift_ppm * 1e-6 * (ref_ns - self.epoch_ns) as f64
    }

    /// The agent's clock reading at rank 0's time `ref_ns`.
    pub fn to_local(&self, ref_ns: i64) -> i64 {
        ref_ns + self.offset_at(ref_ns).round() as i64
    }

    /// Rank 0's time at the agent's clock reading `local_ns`.
    pub fn to_reference(&self, local_ns: i64) -> i64 {
        // local = r + o + d(r − e)  ⇒  r = (local − o + d·e) / (1 + d)
        let d = self.drift_ppm * 1e-6;
        let r = (local_ns as f64 - self.offset_ns + d * self.epoch_ns as f64) / (1.0 + d);
        r.round() as i64
    }
}

/// A one-way delay from a send stamped on one agent's clock to a receive stamped on
/// another's, both mapped onto rank 0's clock; with the bound on its error (the sum of
/// the two estimates' uncertainties).
pub fn one_way(
    sent_local: i64,
    sender: &ClockEstimate,
    received_local: i64,
    receiver: &ClockEstimate,
) -> (i64, f64) {
    (
        receiver.to_reference(received_local) - sender.to_reference(sent_local),
        sender.uncertainty_ns + receiver.uncertainty_ns,
    )
}

/// The estimate from rounds of exchanges (`None` when no round has an exchange). One
/// round gives an offset and no drift.
pub fn estimate(rounds: &[Vec<Exchange>]) -> Option<ClockEstimate> {
    let kept: Vec<Exchange> = rounds
        .iter()
        .filter_map(|r| r.iter().min_by_key(|e| e.rtt()).copied())
        .collect();
    let first = *kept.first()?;
    let epoch = first.midpoint().round() as i64;
    let xs: Vec<f64> = kept.iter().map(|e| e.midpoint() - epoch as f64).collect();
    let ys: Vec<f64> = kept.iter().map(Exchange::offset).collect();
    // weight 1/bound², the bound floored at 50 ns (a round trip MPI cannot beat)
    let ws: Vec<f64> = kept
        .iter()
        .map(|e| 1.0 / (e.rtt() as f64 / 2.0).max(50.0).powi(2))
        .collect();
    let n: f64 = ws.iter().sum();
    let mx = xs.iter().zip(&ws).map(|(x, w)| w * x).sum::<f64>() / n;
    let my = ys.iter().zip(&ws).map(|(y, w)| w * y).sum::<f64>() / n;
    let sxx: f64 = xs
        .iter()
        .zip(&ws)
        .map(|(x, w)| w * (x - mx) * (x - mx))
        .sum();
    let sxy: f64 = xs
        .iter()
        .zip(&ys)
        .zip(&ws)
        .map(|((x, y), w)| w * (x - mx) * (y - my))
        .sum();
    // rounds closer together than 1 ms cannot tell drift from the rounds' own error
    let slope = if sxx > 0.0 && xs.iter().cloned().fold(0.0, f64::max) >= 1e6 {
        sxy / sxx
    } else {
        0.0
    };
    let intercept = my - slope * mx;
    let bound = xs
        .iter()
        .zip(&ys)
        .zip(&kept)
        .map(|((x, y), e)| (y - (intercept + slope * x)).abs() + e.rtt() as f64 / 2.0)
        .fold(0.0, f64::max);
    Some(ClockEstimate {
        epoch_ns: epoch,
        offset_ns: intercept,
        drift_ppm: slope * 1e6,
        uncertainty_ns: bound,
        min_rtt_ns: kept.iter().map(Exchange::rtt).min().unwrap_or(0),
        rounds: kept.len(),
    })
}

/// A clock that reads `CLOCK_MONOTONIC` plus an injected offset and drift: how an agent's
/// clock is made to disagree with rank 0's on one host (the test hook
/// `LATLAB_TEST_AGENT_CLOCK`), so that the estimator has something to recover.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SkewedClock {
    /// `CLOCK_MONOTONIC` reading where the drift starts, ns.
    pub base_ns: i64,
    /// Added offset, ns.
    pub offset_ns: i64,
    /// Added drift, ppm.
    pub drift_ppm: f64,
}

impl SkewedClock {
    /// The skewed reading at monotonic time `mono_ns`.
    pub fn local(&self, mono_ns: i64) -> i64 {
        mono_ns
            + self.offset_ns
            + (self.drift_ppm * 1e-6 * (mono_ns - self.base_ns) as f64).round() as i64
    }

    /// The monotonic time at the skewed reading `local_ns`.
    pub fn monotonic(&self, local_ns: i64) -> i64 {
        let d = self.drift_ppm * 1e-6;
        ((local_ns - self.offset_ns) as f64 + d * self.base_ns as f64).div_euclid(1.0 + d) as i64
    }
}

/// The clock test hook, resolved on rank 0 and sent to every rank in the plan: rank
/// `rank`'s clock reads `CLOCK_MONOTONIC` plus `offset_ns` and `drift_ppm` (from the
/// moment that rank reads it first). Set with `LATLAB_TEST_AGENT_CLOCK=RANK:OFFSET_NS:DRIFT_PPM`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClockHook {
    /// The rank whose clock is skewed.
    pub rank: usize,
    /// Added offset, ns.
    pub offset_ns: i64,
    /// Added drift, ppm.
    pub drift_ppm: f64,
}

impl ClockHook {
    /// Parses `RANK:OFFSET_NS:DRIFT_PPM` (rank ≥ 1, |offset| ≤ 1 s, |drift| ≤ 1000 ppm).
    ///
    /// # Errors
    /// A message naming the accepted form.
    pub fn parse(value: &str) -> Result<ClockHook, String> {
        let bad = || {
            format!(
                "{value:?}: give RANK:OFFSET_NS:DRIFT_PPM (an agent's rank >= 1, |offset| <= 1000000000 ns, |drift| <= 1000 ppm), e.g. 2:5000000:20"
            )
        };
        let mut it = value.split(':');
        let mut next = || it.next().map(str::trim).ok_or_else(bad);
        let rank: usize = next()?.parse().map_err(|_| bad())?;
        let offset_ns: i64 = next()?.parse().map_err(|_| bad())?;
        let drift_ppm: f64 = next()?.parse().map_err(|_| bad())?;
        if it.next().is_some()
            || rank == 0
            || offset_ns.abs() > 1_000_000_000
            || !drift_ppm.is_finite()
            || drift_ppm.abs() > 1_000.0
        {
            return Err(bad());
        }
        Ok(ClockHook {
            rank,
            offset_ns,
            drift_ppm,
        })
    }

    /// The skewed clock of `rank` starting at monotonic `base_ns` (the plain clock for
    /// every other rank).
    pub fn clock_of(hook: Option<&ClockHook>, rank: usize, base_ns: i64) -> SkewedClock {
        match hook {
            Some(h) if h.rank == rank => SkewedClock {
                base_ns,
                offset_ns: h.offset_ns,
                drift_ppm: h.drift_ppm,
            },
            _ => SkewedClock::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::rng::Rng;

    /// Exchanges against an agent clock `t + off + drift(t − 0)`, with one-way delays of
    /// 5–45 µs drawn independently per direction (asymmetric on purpose) and a turnaround
    /// of 2 µs; every round starts `period` after the last.
    fn synth(
        off: f64,
        drift_ppm: f64,
        rounds: usize,
        per: usize,
        period: i64,
    ) -> Vec<Vec<Exchange>> {
        let mut rng = Rng::new(7);
        let agent = |t: f64| (t + off + drift_ppm * 1e-6 * t).round() as i64;
        let mut t = 1_000_000_000f64;
        let mut out = Vec::new();
        for _ in 0..rounds {
            let mut r = Vec::new();
            for _ in 0..per {
                let up = 5_000.0 + 40_000.0 * rng.unit_open0();
                let down = 5_000.0 + 40_000.0 * rng.unit_open0();
                let t0 = t;
                let t1 = t0 + up;
                let t2 = t1 + 2_000.0;
                let t3 = t2 + down;
                r.push(Exchange {
                    t0: t0.round() as i64,
                    t1: agent(t1),
                    t2: agent(t2),
                    t3: t3.round() as i64,
                });
                t = t3 + 10_000.0;
            }
            out.push(r);
            t += period as f64;
        }
        out
    }

    fn true_offset(off: f64, drift_ppm: f64, t: i64) -> f64 {
        off + drift_ppm * 1e-6 * t as f64
    }

    #[test]
    fn recovers_offset_and_drift_and_the_uncertainty_covers_the_error() {
        let (off, drift) = (5_000_000.0, 20.0);
        let rounds = synth(off, drift, 10, 16, 500_000_000);
        let e = estimate(&rounds).unwrap();
        assert_eq!(e.rounds, 10);
        assert!((e.drift_ppm - drift).abs() < 1.0, "drift {}", e.drift_ppm);
        assert!(e.uncertainty_ns > 0.0 && e.uncertainty_ns < 50_000.0);
        for r in &rounds {
            for x in r {
                let t = x.midpoint() as i64;
                let err = (e.offset_at(t) - true_offset(off, drift, t)).abs();
                assert!(
                    err <= e.uncertainty_ns,
                    "error {err} > {}",
                    e.uncertainty_ns
                );
            }
        }
    }

    #[test]
    fn a_round_with_a_long_round_trip_barely_moves_the_line() {
        // exact rounds (1 µs round trips, symmetric) but one with a 2 ms round trip whose
        // delay was all on the way out: its estimate is 1 ms off
        let mut rounds: Vec<Vec<Exchange>> = (0..6i64)
            .map(|k| {
                let t0 = k * 1_000_000_000;
                vec![Exchange {
                    t0,
                    t1: t0 + 500 + 4_000,
                    t2: t0 + 600 + 4_000,
                    t3: t0 + 1_100,
                }]
            })
            .collect();
        let t0 = 6_000_000_000i64;
        rounds.push(vec![Exchange {
            t0,
            t1: t0 + 2_000_000 + 4_000,
            t2: t0 + 2_000_100 + 4_000,
            t3: t0 + 2_000_200,
        }]);
        let e = estimate(&rounds).unwrap();
        assert!((e.offset_ns - 4_000.0).abs() < 10.0, "{e:?}");
        assert!(e.drift_ppm.abs() < 0.01, "{e:?}");
        // the bound still covers the bad round (its half round trip)
        assert!(e.uncertainty_ns >= 1_000_000.0);
    }

    #[test]
    fn the_min_rtt_filter_tightens_the_bound() {
        let rounds = synth(-3_000.0, 0.0, 4, 32, 100_000_000);
        let filtered = estimate(&rounds).unwrap();
        // every exchange as its own round: no filter
        let each: Vec<Vec<Exchange>> = rounds.iter().flatten().map(|x| vec![*x]).collect();
        let unfiltered = estimate(&each).unwrap();
        assert!(filtered.uncertainty_ns < unfiltered.uncertainty_ns);
        assert!((filtered.offset_ns + 3_000.0).abs() <= filtered.uncertainty_ns);
    }

    #[test]
    fn one_round_gives_an_offset_and_no_drift() {
        let rounds = synth(1_234.0, 0.0, 1, 8, 0);
        let e = estimate(&rounds).unwrap();
        assert_eq!(e.drift_ppm, 0.0);
        assert!((e.offset_ns - 1_234.0).abs() <= e.uncertainty_ns);
        assert!(estimate(&[]).is_none());
        assert!(estimate(&[vec![]]).is_none());
    }

    #[test]
    fn corrected_one_way_delays_match_the_true_ones_within_the_bound() {
        // sender on rank 0's clock, receiver skewed by 7 ms and 50 ppm
        let (off, drift) = (7_000_000.0, 50.0);
        let recv = estimate(&synth(off, drift, 8, 16, 250_000_000)).unwrap();
        let send = ClockEstimate {
            epoch_ns: 0,
            offset_ns: 0.0,
            drift_ppm: 0.0,
            uncertainty_ns: 0.0,
            min_rtt_ns: 0,
            rounds: 1,
        };
        for (t, true_delay) in [(1_200_000_000i64, 30_000i64), (2_500_000_000, 12_345)] {
            let rx_ref = t + true_delay;
            let rx_local = (rx_ref as f64 + true_offset(off, drift, rx_ref)).round() as i64;
            let uncorrected = rx_local - t;
            let (corrected, bound) = one_way(t, &send, rx_local, &recv);
            assert!((uncorrected - true_delay).abs() > 1_000_000);
            assert!(
                ((corrected - true_delay) as f64).abs() <= bound + 1.0,
                "{corrected} vs {true_delay} ± {bound}"
            );
        }
    }

    #[test]
    fn to_local_and_to_reference_invert_each_other() {
        let e = ClockEstimate {
            epoch_ns: 10_000,
            offset_ns: -2_500.0,
            drift_ppm: 80.0,
            uncertainty_ns: 1.0,
            min_rtt_ns: 1,
            rounds: 2,
        };
        for r in [0i64, 1_000_000, 5_000_000_000] {
            assert!((e.to_reference(e.to_local(r)) - r).abs() <= 1);
        }
        let s = SkewedClock {
            base_ns: 1_000,
            offset_ns: 5_000_000,
            drift_ppm: 20.0,
        };
        for m in [1_000i64, 2_000_000_000] {
            assert!((s.monotonic(s.local(m)) - m).abs() <= 1);
        }
    }

    #[test]
    fn the_hook_names_one_rank() {
        let h = ClockHook::parse("2:5000000:20").unwrap();
        assert_eq!((h.rank, h.offset_ns, h.drift_ppm), (2, 5_000_000, 20.0));
        assert_eq!(ClockHook::clock_of(Some(&h), 2, 7).offset_ns, 5_000_000);
        assert_eq!(ClockHook::clock_of(Some(&h), 7, 7), SkewedClock::default());
        assert_eq!(ClockHook::clock_of(None, 2, 7), SkewedClock::default());
        for bad in [
            "2:x:20",
            "2:1:NaN",
            "0:1:1",
            "2:1",
            "2:1:1:1",
            "2:2000000000:1",
            "2:1:5000",
        ] {
            assert!(
                ClockHook::parse(bad)
                    .unwrap_err()
                    .contains("RANK:OFFSET_NS"),
                "{bad}"
            );
        }
    }
}

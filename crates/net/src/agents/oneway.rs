//! One-way latency across agents' clocks (pure part; the streams run in `oneway_run`,
//! feature `mpi`).
//!
//! Beside its round-trip probe (sent and received by the same agent, on one clock), each
//! agent on the testbed sends a small stream of stamped probes in the testbed's unused
//! B→A direction: from its generator's port B through its forwarder to its generator's
//! port A, where *another* rank receives them (the next agent: a thread of that rank
//! enters the sender's namespace and binds port A's receiver). The sender stamps each
//! probe with its clock (ns) in the probe header's sender-timestamp field; the receiver
//! stamps its arrival with its own clock. Neither stamp means anything on the other's
//! clock, so rank 0 maps both onto its own clock with the agents' estimates
//! ([`super::clock::one_way`]) and reports the corrected percentiles with the bound on
//! their error: the sum of the two estimates' uncertainties.
//!
//! Under the clock test hook ([`super::clock::ClockHook`]) the agents' clocks are
//! `CLOCK_MONOTONIC` plus a known offset and drift, so on one host the true one-way delay
//! of every probe is known too, and the result shows the estimator's actual error beside
//! its bound.

use super::clock::{one_way, ClockEstimate, SkewedClock};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// Flow id of the one-way probes (the round-trip probes' flows count from 0 up).
pub const ONE_WAY_FLOW: u16 = 0xFFFF;
/// Rate of each one-way stream, probes per second (light: a stamp stream, not load).
pub const ONE_WAY_PPS: u32 = 1_000;

/// One one-way stream: who sends from where, who receives where.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamSpec {
    /// The sending agent's rank (it sends from its own namespace).
    pub sender_rank: usize,
    /// The receiving rank (a thread of it enters `namespace` to receive).
    pub receiver_rank: usize,
    /// The namespace both ends are in.
    pub namespace: Option<String>,
    /// The sender's address (port 0: any).
    pub send_bind: SocketAddr,
    /// Where the sender sends (the forwarder's port B).
    pub to: SocketAddr,
    /// Where the receiver listens (the generator's port A receiver).
    pub recv_bind: SocketAddr,
    /// Probes per second.
    pub pps: u32,
}

/// The one-way streams of `agents` agents on the testbed: agent `i` (rank `i + 1`, in
/// generator namespace `i`) sends through its forwarder's B→A direction to the next
/// agent (rank `(i + 1) mod agents + 1`), so every stream crosses two clocks (with one
/// agent, it is its own receiver).
pub fn testbed_streams(agents: usize) -> Vec<StreamSpec> {
    (0..agents)
        .map(|i| {
            let t = crate::testbed::addresses_of(i);
            StreamSpec {
                sender_rank: i + 1,
                receiver_rank: (i + 1) % agents + 1,
                namespace: Some(crate::testbed::gen_ns(i)),
                send_bind: SocketAddr::new(t.gen_b.ip(), 0),
                to: t.nf_b,
                recv_bind: SocketAddr::new(t.gen_a.ip(), crate::testbed::GEN_PORT),
                pps: ONE_WAY_PPS,
            }
        })
        .collect()
}

/// What a receiving rank recorded of one stream: each measured probe's send stamp (the
/// sender's clock) and receive stamp (the receiver's), ns.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stamps {
    /// The sending rank.
    pub sender_rank: usize,
    /// The receiving rank.
    pub receiver_rank: usize,
    /// (sent, received) per measured probe.
    pub pairs: Vec<(i64, i64)>,
    /// Warm-up probes received (not measured).
    pub warmup: u64,
    /// Measured probes the preallocated buffer had no room for.
    pub overflow: u64,
    /// Probes the sender sent (measured ones), as the sender counted them.
    pub sent: u64,
}

/// The exact percentiles of a set of one-way delays, ns (nearest rank).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    /// Median.
    pub p50: i64,
    /// 90th percentile.
    pub p90: i64,
    /// 99th percentile.
    pub p99: i64,
    /// 99.9th percentile.
    pub p999: i64,
    /// Largest.
    pub max: i64,
}

impl Percentiles {
    /// Of `v` (sorted in place); `None` when empty.
    pub fn of(v: &mut [i64]) -> Option<Percentiles> {
        if v.is_empty() {
            return None;
        }
        v.sort_unstable();
        let at = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Some(Percentiles {
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            p999: at(0.999),
            max: v[v.len() - 1],
        })
    }

    /// (label, value) in order.
    pub fn labelled(&self) -> [(&'static str, i64); 5] {
        [
            ("p50", self.p50),
            ("p90", self.p90),
            ("p99", self.p99),
            ("p99.9", self.p999),
            ("max", self.max),
        ]
    }
}

/// One stream's one-way delays in the merged result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamStats {
    /// The sending rank.
    pub sender_rank: usize,
    /// The receiving rank.
    pub receiver_rank: usize,
    /// Measured probes received.
    pub samples: u64,
    /// Measured probes sent.
    pub sent: u64,
    /// One-way delays mapped onto rank 0's clock.
    pub corrected: Percentiles,
    /// Bound on the error of every corrected delay, ns (the two clocks' uncertainties).
    pub uncertainty_ns: f64,
    /// Receive stamp minus send stamp on the two agents' own clocks, uncorrected: what
    /// the figures would be without the mapping.
    pub uncorrected: Percentiles,
    /// With the clock test hook on one host: the true delays (both stamps taken back to
    /// `CLOCK_MONOTONIC`), and the largest error of a corrected delay against its true one.
    pub truth: Option<Truth>,
}

/// The test hook's view of the truth.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Truth {
    /// The true one-way delays.
    pub delays: Percentiles,
    /// The largest |corrected − true| over the stream's probes, ns.
    pub max_error_ns: i64,
}

/// `data.agents.one_way` of the merged result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OneWayData {
    /// Per stream.
    pub streams: Vec<StreamStats>,
    /// Every stream's corrected delays together.
    pub all: Option<Percentiles>,
    /// Bound on the error of the pooled figures (the largest stream's), ns.
    pub all_uncertainty_ns: f64,
    /// What the figures are.
    pub note: String,
}

/// What the one-way figures are.
pub const ONE_WAY_NOTE: &str = "one-way: a 1 kpps stamp stream per agent through its forwarder's B→A direction to the next agent's receiver, sent and received on two agents' clocks, both mapped onto rank 0's clock; each percentile is off by at most ± the uncertainty beside it (the two clocks' uncertainties added). Round-trip figures are timed on one agent's clock and need no correction";

/// One stream's figures from its stamps and the two clocks' estimates (`None` without
/// an estimate for either end or without a sample). `truth` holds the two ranks' skewed
/// clocks when the test hook was set (sender, receiver).
pub fn stream_stats(
    s: &Stamps,
    sender: &ClockEstimate,
    receiver: &ClockEstimate,
    truth: Option<(SkewedClock, SkewedClock)>,
) -> Option<(StreamStats, Vec<i64>)> {
    let mut corrected = Vec::with_capacity(s.pairs.len());
    let mut raw = Vec::with_capacity(s.pairs.len());
    let mut real = Vec::new();
    let mut max_error = 0i64;
    let mut bound = 0.0;
    for &(tx, rx) in &s.pairs {
        let (c, b) = one_way(tx, sender, rx, receiver);
        bound = b;
        corrected.push(c);
        raw.push(rx - tx);
        if let Some((st, rt)) = truth {
            let t = rt.monotonic(rx) - st.monotonic(tx);
            max_error = max_error.max((c - t).abs());
            real.push(t);
        }
    }
    let keep = corrected.clone();
    let stats = StreamStats {
        sender_rank: s.sender_rank,
        receiver_rank: s.receiver_rank,
        samples: s.pairs.len() as u64,
        sent: s.sent,
        corrected: Percentiles::of(&mut corrected)?,
        uncertainty_ns: bound,
        uncorrected: Percentiles::of(&mut raw)?,
        truth: Percentiles::of(&mut real).map(|delays| Truth {
            delays,
            max_error_ns: max_error,
        }),
    };
    Some((stats, keep))
}

/// `data.agents.one_way` from every stream's stamps (streams by sender rank);
/// `clocks[r - 1]` is rank `r`'s
/// estimate, `skews[r]` rank `r`'s skewed clock under the test hook.
pub fn one_way_data(
    stamps: &[Stamps],
    clocks: &[Option<ClockEstimate>],
    skews: Option<&[SkewedClock]>,
) -> OneWayData {
    let est = |r: usize| {
        r.checked_sub(1)
            .and_then(|i| clocks.get(i).copied().flatten())
    };
    let mut streams = Vec::new();
    let mut pooled = Vec::new();
    let mut all_unc: f64 = 0.0;
    let mut order: Vec<&Stamps> = stamps.iter().collect();
    order.sort_by_key(|s| (s.sender_rank, s.receiver_rank));
    for s in order {
        let (Some(a), Some(b)) = (est(s.sender_rank), est(s.receiver_rank)) else {
            continue;
        };
        let truth = skews.and_then(|k| Some((*k.get(s.sender_rank)?, *k.get(s.receiver_rank)?)));
        if let Some((st, v)) = stream_stats(s, &a, &b, truth) {
            all_unc = all_unc.max(st.uncertainty_ns);
            pooled.extend(v);
            streams.push(st);
        }
    }
    OneWayData {
        streams,
        all: Percentiles::of(&mut pooled),
        all_uncertainty_ns: all_unc,
        note: ONE_WAY_NOTE.into(),
    }
}

/// Send times of a constant stream of `pps` from `start` for `run_ns`, ns on the sender's
/// clock: the `k`-th probe's, `None` past the end.
pub fn send_time(start: i64, pps: u32, run_ns: i64, k: u64) -> Option<i64> {
    let t = (k as f64 * 1e9 / f64::from(pps.max(1))) as i64;
    (t < run_ns).then_some(start + t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(offset_ns: f64, drift_ppm: f64, uncertainty_ns: f64) -> ClockEstimate {
        ClockEstimate {
            epoch_ns: 0,
            offset_ns,
            drift_ppm,
            uncertainty_ns,
            min_rtt_ns: 1_000,
            rounds: 3,
        }
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut v: Vec<i64> = (1..=1000).rev().collect();
        let p = Percentiles::of(&mut v).unwrap();
        assert_eq!(
            (p.p50, p.p90, p.p99, p.p999, p.max),
            (500, 900, 990, 999, 1000)
        );
        assert_eq!(Percentiles::of(&mut []), None);
        assert_eq!(Percentiles::of(&mut [7]).unwrap().p50, 7);
    }

    #[test]
    fn a_skewed_receiver_is_corrected_and_the_truth_is_within_the_bound() {
        // the receiver's clock runs 5 ms ahead and 20 ppm fast from t = 0; its estimate
        // is off by 300 ns (within its 1 µs bound); true delays 20–29 µs
        let skew = SkewedClock {
            base_ns: 0,
            offset_ns: 5_000_000,
            drift_ppm: 20.0,
        };
        let sender = est(0.0, 0.0, 500.0);
        let receiver = est(5_000_300.0, 20.0, 1_000.0);
        let pairs: Vec<(i64, i64)> = (0..100)
            .map(|k| {
                let tx = 1_000_000_000 + k * 10_000_000;
                (tx, skew.local(tx + 20_000 + (k % 10) * 1_000))
            })
            .collect();
        let s = Stamps {
            sender_rank: 1,
            receiver_rank: 2,
            pairs,
            ..Stamps::default()
        };
        let d = one_way_data(
            &[s],
            &[Some(sender), Some(receiver)],
            Some(&[SkewedClock::default(), SkewedClock::default(), skew]),
        );
        let st = &d.streams[0];
        assert_eq!(st.uncertainty_ns, 1_500.0);
        assert!(st.uncorrected.p50 > 5_000_000);
        let t = st.truth.unwrap();
        assert!((t.delays.p50 - 24_000).abs() <= 1, "{t:?}");
        assert!((st.corrected.p50 - t.delays.p50).abs() <= 300);
        assert!(t.max_error_ns as f64 <= st.uncertainty_ns);
        assert_eq!(d.all.unwrap().p50, st.corrected.p50);
        assert_eq!(d.all_uncertainty_ns, 1_500.0);
    }

    #[test]
    fn a_stream_without_a_clock_estimate_is_left_out() {
        let s = Stamps {
            sender_rank: 1,
            receiver_rank: 2,
            pairs: vec![(0, 10)],
            ..Stamps::default()
        };
        let d = one_way_data(&[s], &[Some(est(0.0, 0.0, 1.0)), None], None);
        assert!(d.streams.is_empty() && d.all.is_none());
    }

    #[test]
    fn testbed_streams_cross_to_the_next_agent() {
        let s = testbed_streams(2);
        assert_eq!(
            s.iter()
                .map(|x| (x.sender_rank, x.receiver_rank))
                .collect::<Vec<_>>(),
            [(1, 2), (2, 1)]
        );
        assert_eq!(s[1].namespace.as_deref(), Some("latlab-gen1"));
        assert_eq!(s[0].to, crate::testbed::addresses_of(0).nf_b);
        assert_eq!(testbed_streams(1)[0].receiver_rank, 1);
    }

    #[test]
    fn the_send_schedule_ends_with_the_run() {
        assert_eq!(send_time(100, 1_000, 3_000_000, 0), Some(100));
        assert_eq!(send_time(100, 1_000, 3_000_000, 2), Some(2_000_100));
        assert_eq!(send_time(100, 1_000, 3_000_000, 3), None);
    }
}

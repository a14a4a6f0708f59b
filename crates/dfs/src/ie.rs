//! The DFS Input Engine (§III-C), one per input node.
//!
//! The engine cuts the stream into intervals of `rounds` rounds (C time-slices each) and
//! sends interval `j` according to the proposal it holds for `j`:
//!
//! - it starts the interval at the proposed start time `tp_j` (or as soon as it can when it
//!   is late), records its local time as `tm_j`, and paces the rounds by Eq. 4:
//!   `durr_j = durp_j / rounds(j)`, `tr_{j,y} = tm_j + durr_j · y`; within a round the
//!   `C` contributions are spread evenly (`tr_{j,y} + m · durr_j / C` for the `m`-th
//!   compute node in its offset round-robin order);
//! - a compute node without credits is skipped, the others proceed (no head-of-line
//!   blocking across compute nodes);
//! - once the proposed end `tp_j + durp_j` has passed, the rest of the interval is sent best
//!   effort (no pacing) so a slow node catches up;
//! - after sending the whole interval it waits for θ of its acknowledgements before it
//!   starts the next one;
//! - with the last acknowledgement it reports the actual meta-data (start `tm_j`, duration
//!   `durm_j`, the median acknowledgement latency) to every DDE and requests the proposal for
//!   interval `j + 2`;
//! - it keeps the first proposal it receives per interval (replicas propose the same) and
//!   when none has arrived for the next interval it keeps going on the last one: start at the
//!   previous proposed start plus the previous proposed duration, same duration. Intervals
//!   without any proposal (0 and 1) are sent best effort. The engine never blocks on a DDE.

use crate::model;
use crate::params::DfsParams;
use crate::stats::median_i64;
use crate::{Dur, Time};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

/// Proposed meta-data of one interval, in the clock of the input that receives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    /// Interval index.
    pub index: u64,
    /// Proposed start time tp_j (receiver's clock).
    pub start: Time,
    /// Proposed duration durp_j.
    pub duration: Dur,
}

/// Actual meta-data of an interval as measured by one input (its own clock).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActualMeta {
    /// Interval index.
    pub index: u64,
    /// First time-slice of the interval.
    pub start_ts: u64,
    /// Rounds in the interval.
    pub rounds: u64,
    /// Measured start tm_{i,j}.
    pub start: Time,
    /// Measured duration durm_{i,j} (start to last acknowledgement).
    pub duration: Dur,
    /// Proposed duration the input followed (None: best effort).
    pub proposed_duration: Option<Dur>,
    /// Proposed start the input followed (None: best effort).
    pub proposed_start: Option<Time>,
    /// Median latency of the interval's acknowledgements (lat_i of Eq. 2).
    pub median_latency: Dur,
}

impl ActualMeta {
    /// End of the interval tmend = tm + durm (Eq. 2).
    pub fn end(&self) -> Time {
        self.start + self.duration
    }
}

/// A status message from an input to the DDEs: the actual meta-data of one finished
/// interval and the interval whose proposal it asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// Reporting input.
    pub input: usize,
    /// Actual meta-data.
    pub actual: ActualMeta,
    /// The interval whose proposal the input requests (`actual.index + 2`).
    pub request: u64,
}

/// What the runtime should do next for this input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Poll {
    /// Send the contribution to this time-slice now (then call [`InputEngine::sent`]).
    Send(u64),
    /// Nothing is due before this local time; poll again then (or on any event).
    WaitUntil(Time),
    /// Waiting for an event: acknowledgements, credits or a proposal.
    Idle,
    /// Everything sent and acknowledged.
    Done,
}

#[derive(Clone, Debug)]
struct Current {
    index: u64,
    start_ts: u64,
    n_ts: u64,
    rounds: u64,
    tm: Time,
    plan: Option<(Time, Dur)>,
    /// next round to send per compute node
    next_round: Vec<u64>,
    sent: u64,
}

#[derive(Clone, Debug)]
struct Pending {
    start_ts: u64,
    rounds: u64,
    n_ts: u64,
    sent: u64,
    acked: u64,
    tm: Time,
    plan: Option<(Time, Dur)>,
    sent_at: Vec<Time>,
    latencies: Vec<Dur>,
}

counters! {
    /// Counters of one Input Engine.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub struct IeCounters {
        /// Proposals used.
        pub proposals_used: u64,
        /// Later copies of a proposal already held (other replicas): ignored.
        pub proposals_ignored: u64,
        /// Proposals that arrived after their interval had started: ignored.
        pub proposals_late: u64,
        /// Intervals started on the fallback rule (no proposal arrived in time).
        pub fallbacks: u64,
        /// Intervals sent fully best effort (no proposal ever).
        pub best_effort_intervals: u64,
        /// Contributions sent unpaced because the proposed end had passed.
        pub catch_up_sends: u64,
        /// Acknowledgements for unknown or already acknowledged contributions.
        pub stray_acks: u64,
    }
}

/// The Input Engine of one input.
#[derive(Clone, Debug)]
pub struct InputEngine {
    input: usize,
    computes: usize,
    params: DfsParams,
    total_ts: u64,
    len: u64,
    next_interval: u64,
    cur: Option<Current>,
    pending: BTreeMap<u64, Pending>,
    proposals: BTreeMap<u64, Proposal>,
    last_plan: Option<(Time, Dur)>,
    outbox: VecDeque<Report>,
    counters: IeCounters,
}

impl InputEngine {
    /// Engine of input `input` sending time-slices `0..total_ts` to `computes` compute
    /// nodes. `total_ts` is rounded up to whole rounds.
    pub fn new(input: usize, computes: usize, params: DfsParams, total_ts: u64) -> InputEngine {
        let c = computes as u64;
        InputEngine {
            input,
            computes,
            params,
            total_ts: total_ts.div_ceil(c) * c,
            len: params.interval_len(computes),
            next_interval: 0,
            cur: None,
            pending: BTreeMap::new(),
            proposals: BTreeMap::new(),
            last_plan: None,
            outbox: VecDeque::new(),
            counters: IeCounters::default(),
        }
    }

    /// Time-slices per (full) interval.
    pub fn interval_len(&self) -> u64 {
        self.len
    }

    /// The interval time-slice `ts` belongs to.
    pub fn interval_of(&self, ts: u64) -> u64 {
        ts / self.len
    }

    /// Counters so far.
    pub fn counters(&self) -> IeCounters {
        self.counters
    }

    /// Index of the interval being sent, if any.
    pub fn current_interval(&self) -> Option<u64> {
        self.cur.as_ref().map(|c| c.index)
    }

    /// Takes the next report to send to the DDEs.
    pub fn take_report(&mut self) -> Option<Report> {
        self.outbox.pop_front()
    }

    /// A proposal arrived (from any DDE replica): the first one per interval wins.
    pub fn on_proposal(&mut self, p: Proposal) {
        let started = self
            .cur
            .as_ref()
            .map_or(self.next_interval, |c| c.index + 1);
        if p.index < started {
            self.counters.proposals_late += 1;
            return;
        }
        match self.proposals.entry(p.index) {
            std::collections::btree_map::Entry::Occupied(_) => {
                self.counters.proposals_ignored += 1;
            }
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(p);
            }
        }
    }

    /// Decides what to do at local time `now`. `can_send(ts)` tells whether the contribution
    /// to `ts` may be written now (credits at its compute node, writes in flight).
    pub fn poll(&mut self, now: Time, can_send: &mut dyn FnMut(u64) -> bool) -> Poll {
        loop {
            if self.cur.is_none() {
                match self.try_start(now) {
                    Start::Started => {}
                    Start::Wait(t) => return Poll::WaitUntil(t),
                    Start::Idle => return Poll::Idle,
                    Start::Finished => {
                        return if self.pending.is_empty() {
                            Poll::Done
                        } else {
                            Poll::Idle
                        };
                    }
                }
            }
            let cur = self.cur.as_ref().expect("started above");
            if cur.sent == cur.n_ts {
                self.cur = None;
                continue;
            }
            return self.pick(now, can_send);
        }
    }

    fn pick(&mut self, now: Time, can_send: &mut dyn FnMut(u64) -> bool) -> Poll {
        let c = self.computes as u64;
        let cur = self.cur.as_mut().expect("caller checked");
        let paced = match cur.plan {
            Some((tp, d)) if now < tp + d => Some(d),
            _ => None,
        };
        let mut best: Option<(u64, usize)> = None; // (position, cn)
        let mut next_due: Option<Time> = None;
        for cn in 0..self.computes {
            let y = cur.next_round[cn];
            if y >= cur.rounds {
                continue;
            }
            let m = model::position_in_round(self.input, cn, self.computes) as u64;
            let pos = y * c + m;
            if best.is_some_and(|(bp, _)| bp < pos) {
                continue;
            }
            if let Some(d) = paced {
                let due = cur.tm + scale_div(d, pos, cur.n_ts);
                if due > now {
                    next_due = Some(next_due.map_or(due, |t: Time| t.min(due)));
                    continue;
                }
            }
            let ts = cur.start_ts + y * c + cn as u64;
            if can_send(ts) {
                best = Some((pos, cn));
            }
        }
        match best {
            Some((_, cn)) => {
                let ts = cur.start_ts + cur.next_round[cn] * c + cn as u64;
                if cur.plan.is_some() && paced.is_none() {
                    self.counters.catch_up_sends += 1;
                }
                Poll::Send(ts)
            }
            None => match (next_due, paced, cur.plan) {
                (Some(t), Some(_), Some((tp, d))) => Poll::WaitUntil(t.min(tp + d)),
                _ => Poll::Idle,
            },
        }
    }

    /// Records that the contribution to `ts` (returned by [`Self::poll`]) was posted at `now`.
    pub fn sent(&mut self, ts: u64, now: Time) {
        let c = self.computes as u64;
        let Some(cur) = self.cur.as_mut() else { return };
        let cn = model::compute_of(ts, self.computes);
        debug_assert_eq!(cur.start_ts + cur.next_round[cn] * c + cn as u64, ts);
        cur.next_round[cn] += 1;
        cur.sent += 1;
        if let Some(p) = self.pending.get_mut(&cur.index) {
            p.sent += 1;
            p.sent_at[(ts - cur.start_ts) as usize] = now;
        }
    }

    /// The contribution to `ts` was acknowledged (it reached its compute node) at `now`.
    pub fn on_ack(&mut self, ts: u64, now: Time) {
        let j = self.interval_of(ts);
        let Some(p) = self.pending.get_mut(&j) else {
            self.counters.stray_acks += 1;
            return;
        };
        let pos = (ts - p.start_ts) as usize;
        if pos >= p.sent_at.len() || p.sent_at[pos] == Time::MIN {
            self.counters.stray_acks += 1;
            return;
        }
        p.latencies.push(now - p.sent_at[pos]);
        p.sent_at[pos] = Time::MIN;
        p.acked += 1;
        if p.acked == p.n_ts {
            let mut p = self.pending.remove(&j).expect("present");
            let actual = ActualMeta {
                index: j,
                start_ts: p.start_ts,
                rounds: p.rounds,
                start: p.tm,
                duration: now - p.tm,
                proposed_duration: p.plan.map(|(_, d)| d),
                proposed_start: p.plan.map(|(t, _)| t),
                median_latency: median_i64(&mut p.latencies).unwrap_or(0),
            };
            self.outbox.push_back(Report {
                input: self.input,
                actual,
                request: j + 2,
            });
        }
    }

    fn try_start(&mut self, now: Time) -> Start {
        let j = self.next_interval;
        let start_ts = j * self.len;
        if start_ts >= self.total_ts {
            return Start::Finished;
        }
        // θ: the previous interval must be acknowledged far enough
        if let Some(prev) = j.checked_sub(1).and_then(|p| self.pending.get(&p)) {
            if prev.sent < prev.n_ts || prev.acked < self.params.theta_count(prev.n_ts) {
                return Start::Idle;
            }
        }
        let plan = if let Some(p) = self.proposals.get(&j) {
            Some((p.start, p.duration, true))
        } else {
            self.last_plan.map(|(t, d)| (t + d, d, false))
        };
        if let Some((t, _, _)) = plan {
            if t > now {
                return Start::Wait(t);
            }
        }
        match plan {
            Some((_, _, true)) => self.counters.proposals_used += 1,
            Some((_, _, false)) => self.counters.fallbacks += 1,
            None => self.counters.best_effort_intervals += 1,
        }
        let plan = plan.map(|(t, d, _)| (t, d));
        self.proposals.remove(&j);
        self.last_plan = plan.or(self.last_plan);
        let c = self.computes as u64;
        let n_ts = (self.total_ts - start_ts).min(self.len);
        let rounds = n_ts / c;
        // a final, shorter interval gets its share of the proposed duration (Eq. 4 paces
        // rounds at durp / rounds of a full interval)
        let plan = plan.map(|(t, d)| (t, ((d as i128 * n_ts as i128) / self.len as i128) as Dur));
        self.cur = Some(Current {
            index: j,
            start_ts,
            n_ts,
            rounds,
            tm: now,
            plan,
            next_round: vec![0; self.computes],
            sent: 0,
        });
        self.pending.insert(
            j,
            Pending {
                start_ts,
                rounds,
                n_ts,
                sent: 0,
                acked: 0,
                tm: now,
                plan,
                sent_at: vec![Time::MIN; n_ts as usize],
                latencies: Vec::with_capacity(n_ts as usize),
            },
        );
        self.next_interval += 1;
        Start::Started
    }
}

enum Start {
    Started,
    Wait(Time),
    Idle,
    Finished,
}

/// `d × pos / n` truncated toward zero, as `i128` arithmetic gives it, but in `i64` when the
/// product fits (always, for real interval lengths): the `i128` division is a software
/// routine that was a third of a DFS simulation's CPU time (called for every compute node
/// on every poll).
fn scale_div(d: Dur, pos: u64, n: u64) -> Dur {
    match (i64::try_from(pos), i64::try_from(n)) {
        (Ok(p), Ok(n)) if n > 0 => match d.checked_mul(p) {
            Some(x) => x / n,
            None => ((d as i128 * p as i128) / n as i128) as i64,
        },
        _ => ((d as i128 * pos as i128) / n as i128) as i64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(ts_per_intvl: u64) -> DfsParams {
        DfsParams {
            ts_per_intvl,
            theta_pct: 50.0,
            ..DfsParams::default()
        }
    }

    /// Sends everything that is due at `now` (credits unlimited) and returns the ts sent.
    fn drain(ie: &mut InputEngine, now: Time) -> (Vec<u64>, Poll) {
        let mut out = vec![];
        loop {
            match ie.poll(now, &mut |_| true) {
                Poll::Send(ts) => {
                    ie.sent(ts, now);
                    out.push(ts);
                }
                other => return (out, other),
            }
        }
    }

    #[test]
    fn best_effort_intervals_then_paced_by_eq4() {
        // input 1, 2 compute nodes, 2 rounds per interval (4 ts), 12 ts = 3 intervals
        let mut ie = InputEngine::new(1, 2, params(4), 12);
        // interval 0 has no proposal: everything at once, offset order 1,0,3,2
        let (sent, p) = drain(&mut ie, 0);
        assert_eq!(sent, vec![1, 0, 3, 2]);
        assert_eq!(p, Poll::Idle); // θ = 50 %: needs 2 acks
        ie.on_ack(1, 10);
        ie.on_ack(0, 20);
        // interval 1 starts (still best effort)
        let (sent, _) = drain(&mut ie, 20);
        assert_eq!(sent, vec![5, 4, 7, 6]);
        ie.on_ack(3, 30);
        ie.on_ack(2, 40);
        let r = ie.take_report().unwrap();
        assert_eq!(r.request, 2);
        assert_eq!(
            (r.actual.index, r.actual.start, r.actual.duration),
            (0, 0, 40)
        );
        // latencies 10, 20, 30, 40 -> median (20+30)/2
        assert_eq!(r.actual.median_latency, 25);
        assert_eq!(r.actual.proposed_duration, None);
        // proposal for interval 2: start 1000, duration 400 -> durr = 200 per round,
        // the 4 contributions due at 1000, 1100, 1200, 1300 (Eq. 4 plus even spread)
        ie.on_proposal(Proposal {
            index: 2,
            start: 1000,
            duration: 400,
        });
        for ts in 4..8 {
            ie.on_ack(ts, 50);
        }
        assert_eq!(ie.poll(500, &mut |_| true), Poll::WaitUntil(1000));
        assert_eq!(drain(&mut ie, 1000), (vec![9], Poll::WaitUntil(1100)));
        assert_eq!(drain(&mut ie, 1150), (vec![8], Poll::WaitUntil(1200)));
        assert_eq!(drain(&mut ie, 1200), (vec![11], Poll::WaitUntil(1300)));
        assert_eq!(drain(&mut ie, 1300).0, vec![10]);
        assert_eq!(ie.counters().proposals_used, 1);
    }

    #[test]
    fn late_start_paces_from_actual_start_and_falls_back_after_proposed_end() {
        let mut ie = InputEngine::new(0, 2, params(4), 8);
        ie.on_proposal(Proposal {
            index: 0,
            start: 100,
            duration: 400,
        });
        // starts late at 300: tm = 300, due times 300, 400, 500, 600; proposed end 500
        assert_eq!(drain(&mut ie, 300), (vec![0], Poll::WaitUntil(400)));
        assert_eq!(drain(&mut ie, 400).0, vec![1]);
        // at 500 the proposed end has passed: the rest goes out at once (catch-up)
        assert_eq!(drain(&mut ie, 500).0, vec![2, 3]);
        assert_eq!(ie.counters().catch_up_sends, 2); // both sent after the proposed end
    }

    #[test]
    fn skips_compute_nodes_without_credit() {
        let mut ie = InputEngine::new(0, 3, params(3), 3);
        // node 0 has no credit: 1 and 2 go, 0 waits
        let mut blocked = |ts: u64| ts % 3 != 0;
        assert_eq!(ie.poll(0, &mut blocked), Poll::Send(1));
        ie.sent(1, 0);
        assert_eq!(ie.poll(0, &mut blocked), Poll::Send(2));
        ie.sent(2, 0);
        assert_eq!(ie.poll(0, &mut blocked), Poll::Idle);
        assert_eq!(ie.poll(1, &mut |_| true), Poll::Send(0));
    }

    #[test]
    fn first_proposal_wins_and_fallback_keeps_going() {
        let mut ie = InputEngine::new(0, 1, params(1), 3);
        ie.on_proposal(Proposal {
            index: 0,
            start: 0,
            duration: 10,
        });
        ie.on_proposal(Proposal {
            index: 0,
            start: 5,
            duration: 99,
        });
        assert_eq!(ie.counters().proposals_ignored, 1);
        assert_eq!(drain(&mut ie, 0).0, vec![0]);
        ie.on_ack(0, 3);
        // no proposal for interval 1: previous start + previous duration = 10, same duration
        assert_eq!(ie.poll(4, &mut |_| true), Poll::WaitUntil(10));
        assert_eq!(drain(&mut ie, 10).0, vec![1]);
        assert_eq!(ie.counters().fallbacks, 1);
        ie.on_ack(1, 12);
        let r0 = ie.take_report().unwrap();
        let r1 = ie.take_report().unwrap();
        assert_eq!(
            (r0.actual.proposed_duration, r0.actual.duration),
            (Some(10), 3)
        );
        assert_eq!((r1.actual.proposed_start, r1.actual.start), (Some(10), 10));
        // a proposal for an interval already started is ignored
        ie.on_proposal(Proposal {
            index: 1,
            start: 0,
            duration: 1,
        });
        assert_eq!(ie.counters().proposals_late, 1);
        assert_eq!(drain(&mut ie, 20).0, vec![2]);
        ie.on_ack(2, 21);
        assert_eq!(ie.poll(22, &mut |_| true), Poll::Done);
        ie.on_ack(2, 22);
        assert_eq!(ie.counters().stray_acks, 1);
    }

    #[test]
    fn a_short_final_interval_gets_its_share_of_the_proposed_duration() {
        // 2 compute nodes, intervals of 4 time-slices, 6 in total: interval 1 has 2
        let mut ie = InputEngine::new(0, 2, params(4), 6);
        assert_eq!(drain(&mut ie, 0).0, vec![0, 1, 2, 3]);
        for ts in 0..4 {
            ie.on_ack(ts, 10);
        }
        ie.on_proposal(Proposal {
            index: 1,
            start: 100,
            duration: 400,
        });
        // 2 of 4 time-slices: duration 200, contributions due at 100 and 200
        assert_eq!(drain(&mut ie, 100), (vec![4], Poll::WaitUntil(200)));
        assert_eq!(drain(&mut ie, 200).0, vec![5]);
        ie.on_ack(4, 210);
        ie.on_ack(5, 220);
        let _ = ie.take_report();
        let r = ie.take_report().unwrap();
        assert_eq!(r.actual.proposed_duration, Some(200));
    }

    #[test]
    fn scale_div_equals_the_i128_form() {
        let wide = |d: i64, p: u64, n: u64| ((d as i128 * p as i128) / n as i128) as i64;
        for &(d, p, n) in &[
            (0, 0, 1),
            (20_000_000, 9_999, 10_000),
            (-7, 3, 2),
            (i64::MAX, 3, 7),
            (i64::MIN + 1, 2, 3),
            (123_456_789, u64::MAX / 2, u64::MAX),
        ] {
            assert_eq!(super::scale_div(d, p, n), wide(d, p, n), "{d} {p} {n}");
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (d, p, n) = ((x >> 20) as i64 - (1 << 42), x % 1_000_003, x % 999_983 + 1);
            assert_eq!(super::scale_div(d, p, n), wide(d, p, n));
        }
    }
}

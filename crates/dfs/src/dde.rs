//! The Distributed Deterministic Engine (§III-B), one replica per compute node that runs
//! one: history manager, proposer with staged speed-up, clock synchroniser.
//!
//! - **Clock synchroniser** (Eqs. 2–3): when input `i` reports interval `j` with start
//!   `tm_j`, duration `durm_j` and median latency `lat_i`, received at local time `lt`:
//!   `tmend_j = tm_j + durm_j`, `toffset_{i,j} = lt − tmend_j − lat_i`;
//!   `drift_{i,x} = (toffset_{i,x} − toffset_{i,x−1}) / (tmend_x − tmend_{x−1})` and
//!   `drift_i` is the median of the last `hist_cnt` of them. An input time `τ` maps to local
//!   time `τ + toffset + drift · (τ − tmend)` (latest offset), and back.
//! - **History manager**: stores each input's actual meta-data in local time and, once all
//!   inputs reported interval `j`, its unified meta-data: the average start `avg_tm_j` and the
//!   median duration `med_durm_j`.
//! - **Proposer**: the proposal for interval `r` is computed from the history up to
//!   `w = r − 2` (inputs request `j + 2` when reporting `j`), so every replica with the same
//!   history computes the same proposal whatever else it has seen:
//!   `med_dur_hist` = median of `med_durm` over the last `hist_cnt` completed intervals,
//!   `tp_r = (avg_tm_w + med_durm_w) + (r − w − 1) · med_dur_hist`,
//!   `durp_r = SSU(med_dur_hist)`.
//! - **Staged speed-up** (Eq. 1): over the `hist_cnt` intervals ending at `w`, each
//!   deviation `|durm − durp|` in percent of `durp`; `μ` their mean and `VAR` their variance
//!   (divided by `hist_cnt`). If the variance between proposed and measured,
//!   `VAR + μ²` (the mean squared deviation from the proposal), is ≤ ssu_TH (or `VAR`, or
//!   `μ`, see [`SsuCriterion`]) the duration shrinks by `ssu_pct` percent. Intervals sent without a
//!   proposal (best effort) make the window ineligible.
//! - **Fault tolerance** (§III-D): replicas do not talk to each other; an input keeps the
//!   first proposal it receives. A replica proposes only when it holds every interval of the
//!   proposer's window; a restarted replica ([`Dde::restarted`]) additionally waits until it
//!   has collected `hist_cnt` complete intervals, so it never proposes from a shorter history
//!   than the running replicas.

use crate::ie::{Proposal, Report};
use crate::params::{DfsParams, SsuCriterion};
use crate::stats::{mean_i64, median_f64, median_i64};
use crate::{Dur, Time};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

/// Eq. 2: the clock offset of an input from one report.
pub fn eq2_offset(lt: Time, tm: Time, durm: Dur, lat: Dur) -> i64 {
    let tmend = tm + durm;
    lt - tmend - lat
}

/// Eq. 3 (one term): drift between two consecutive offset samples `(tmend, toffset)`.
/// `None` when the two samples are at the same time.
pub fn eq3_drift(prev: (Time, i64), cur: (Time, i64)) -> Option<f64> {
    let dt = cur.0 - prev.0;
    (dt != 0).then(|| (cur.1 - prev.1) as f64 / dt as f64)
}

/// Result of the staged speed-up decision (Eq. 1).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SsuDecision {
    /// μ_j: mean deviation in percent (None when the window is not eligible).
    pub mu: Option<f64>,
    /// VAR_j: variance of the deviations in %².
    pub var: Option<f64>,
    /// Whether the duration was reduced.
    pub speedup: bool,
    /// The proposed duration after the decision.
    pub duration: Dur,
}

/// Eq. 1. `window` holds `(durm, durp)` of the last `hist_cnt` completed intervals
/// (`durp` None for best-effort intervals); `med` is `med_dur_hist`.
pub fn eq1_ssu(window: &[(Dur, Option<Dur>)], med: Dur, params: &DfsParams) -> SsuDecision {
    let n = params.hist_cnt;
    let mut devs = Vec::with_capacity(n);
    if window.len() == n {
        for &(m, p) in window {
            match p {
                Some(p) if p > 0 => devs.push((m - p).abs() as f64 * 100.0 / p as f64),
                _ => break,
            }
        }
    }
    if devs.len() != n || n == 0 {
        return SsuDecision {
            mu: None,
            var: None,
            speedup: false,
            duration: med,
        };
    }
    let mu = devs.iter().sum::<f64>() / n as f64;
    let var = devs.iter().map(|d| (d - mu) * (d - mu)).sum::<f64>() / n as f64;
    let stat = match params.ssu_criterion {
        SsuCriterion::MeanSquare => var + mu * mu,
        SsuCriterion::Variance => var,
        SsuCriterion::MeanDeviation => mu,
    };
    let speedup = stat <= params.ssu_th;
    let duration = if speedup {
        (med as f64 * (100.0 - params.ssu_pct) / 100.0).round() as Dur
    } else {
        med
    };
    SsuDecision {
        mu: Some(mu),
        var: Some(var),
        speedup,
        duration,
    }
}

/// Proposer start time: `tp_j = (tm_w + durm_w) + (j − w − 1) · med_dur_hist`.
pub fn proposed_start(tm_w: Time, durm_w: Dur, j: u64, w: u64, med_hist: Dur) -> Time {
    tm_w + durm_w + (j - w - 1) as i64 * med_hist
}

/// Per-input clock model of the synchroniser.
#[derive(Clone, Debug, Default)]
struct InputClock {
    /// (tmend, toffset) samples, newest last
    samples: VecDeque<(Time, i64)>,
    drifts: VecDeque<f64>,
    drift: f64,
    /// (interval, tmend, toffset, drift) after each report, for deterministic conversion
    snapshots: VecDeque<(u64, Time, i64, f64)>,
}

/// The clock synchroniser: offset and drift of every input relative to this node.
#[derive(Clone, Debug)]
pub struct ClockSync {
    hist_cnt: usize,
    inputs: Vec<InputClock>,
}

impl ClockSync {
    /// No samples yet (offset 0, drift 0).
    pub fn new(inputs: usize, hist_cnt: usize) -> ClockSync {
        ClockSync {
            hist_cnt: hist_cnt.max(1),
            inputs: vec![InputClock::default(); inputs],
        }
    }

    /// Seeds input `input`'s offset from the start barrier: `local_begin − input_begin`
    /// (both taken right after the same barrier, §IV).
    pub fn seed(&mut self, input: usize, input_begin: Time, local_begin: Time) {
        let c = &mut self.inputs[input];
        c.samples.clear();
        c.samples
            .push_back((input_begin, local_begin - input_begin));
    }

    /// Adds the Eq. 2 sample of a report received at local time `lt`; updates the drift
    /// (Eq. 3).
    pub fn on_report(&mut self, input: usize, tm: Time, durm: Dur, lat: Dur, lt: Time) {
        self.on_interval_report(input, u64::MAX, tm, durm, lat, lt);
    }

    /// [`Self::on_report`] for interval `j`, remembering the clock state after it so that
    /// [`Self::to_input_as_of`] can convert deterministically.
    pub fn on_interval_report(
        &mut self,
        input: usize,
        j: u64,
        tm: Time,
        durm: Dur,
        lat: Dur,
        lt: Time,
    ) {
        let hist_cnt = self.hist_cnt;
        let c = &mut self.inputs[input];
        let sample = (tm + durm, eq2_offset(lt, tm, durm, lat));
        if let Some(&prev) = c.samples.back() {
            if let Some(d) = eq3_drift(prev, sample) {
                c.drifts.push_back(d);
                if c.drifts.len() > self.hist_cnt {
                    c.drifts.pop_front();
                }
                let mut v: Vec<f64> = c.drifts.iter().copied().collect();
                c.drift = median_f64(&mut v).unwrap_or(0.0);
            }
        }
        c.samples.push_back(sample);
        if c.samples.len() > hist_cnt + 1 {
            c.samples.pop_front();
        }
        if j != u64::MAX {
            c.snapshots.push_back((j, sample.0, sample.1, c.drift));
        }
    }

    /// Forgets the clock states remembered for intervals before `j`.
    pub fn forget_before(&mut self, j: u64) {
        for c in &mut self.inputs {
            while c.snapshots.front().is_some_and(|s| s.0 < j) {
                c.snapshots.pop_front();
            }
        }
    }

    /// Maps local time `t` into input time with the clock state right after the input's
    /// report of interval `j` (falls back to the latest state when not remembered).
    /// Replicas that saw the same reports convert identically, whatever arrived since.
    pub fn to_input_as_of(&self, input: usize, j: u64, t: Time) -> Time {
        let c = &self.inputs[input];
        match c.snapshots.iter().rev().find(|s| s.0 == j) {
            Some(&(_, tmend, off, drift)) => {
                let x = t - off - tmend;
                tmend + (x as f64 / (1.0 + drift)).round() as i64
            }
            None => self.to_input(input, t),
        }
    }

    /// Latest offset of `input` (None before any sample).
    pub fn offset(&self, input: usize) -> Option<i64> {
        self.inputs[input].samples.back().map(|s| s.1)
    }

    /// Drift estimate of `input` (Eq. 3 median).
    pub fn drift(&self, input: usize) -> f64 {
        self.inputs[input].drift
    }

    /// Maps input time `tau` into local time.
    pub fn to_local(&self, input: usize, tau: Time) -> Time {
        let c = &self.inputs[input];
        match c.samples.back() {
            None => tau,
            Some(&(tmend, off)) => tau + off + (c.drift * (tau - tmend) as f64).round() as i64,
        }
    }

    /// Maps local time `t` into input time (inverse of [`Self::to_local`]).
    pub fn to_input(&self, input: usize, t: Time) -> Time {
        let c = &self.inputs[input];
        match c.samples.back() {
            None => t,
            Some(&(tmend, off)) => {
                let x = t - off - tmend;
                tmend + (x as f64 / (1.0 + c.drift)).round() as i64
            }
        }
    }
}

/// Unified meta-data of a completed interval (all inputs reported), in local time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unified {
    /// Interval index.
    pub index: u64,
    /// avg_tm_j: average of the inputs' (clock-corrected) start times.
    pub avg_start: Time,
    /// med_durm_j: median of the inputs' durations.
    pub med_duration: Dur,
    /// Median of the proposed durations the inputs followed (None if any sent it best effort).
    pub proposed_duration: Option<Dur>,
    /// Earliest corrected start.
    pub min_start: Time,
    /// Latest corrected start.
    pub max_start: Time,
}

/// A proposal in the DDE's own clock (what replicas must agree on).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LocalProposal {
    /// Interval index j.
    pub index: u64,
    /// tp_j in local time.
    pub start: Time,
    /// durp_j.
    pub duration: Dur,
    /// med_dur_hist it was derived from.
    pub median_history: Dur,
    /// The speed-up decision.
    pub ssu: SsuDecision,
}

#[derive(Clone, Debug)]
struct Partial {
    starts: Vec<Option<Time>>,
    durations: Vec<Dur>,
    proposed: Vec<Option<Dur>>,
    count: usize,
}

counters! {
    /// Counters of one replica.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub struct DdeCounters {
        /// Reports received.
        pub reports: u64,
        /// Duplicate reports (same input, same interval) ignored.
        pub duplicate_reports: u64,
        /// Intervals unified.
        pub unified: u64,
        /// Proposals computed.
        pub proposals: u64,
        /// Proposals sent to inputs.
        pub sent: u64,
        /// Intervals with a speed-up.
        pub speedups: u64,
    }
}

/// One DDE replica.
#[derive(Clone, Debug)]
pub struct Dde {
    inputs: usize,
    params: DfsParams,
    clock: ClockSync,
    partial: BTreeMap<u64, Partial>,
    unified: BTreeMap<u64, Unified>,
    proposals: BTreeMap<u64, LocalProposal>,
    requests: BTreeMap<u64, Vec<usize>>,
    need_full_history: bool,
    counters: DdeCounters,
}

impl Dde {
    /// A replica present from the start of the run.
    pub fn new(inputs: usize, params: DfsParams) -> Dde {
        Dde {
            inputs,
            params,
            clock: ClockSync::new(inputs, params.hist_cnt),
            partial: BTreeMap::new(),
            unified: BTreeMap::new(),
            proposals: BTreeMap::new(),
            requests: BTreeMap::new(),
            need_full_history: false,
            counters: DdeCounters::default(),
        }
    }

    /// A replica (re)started in the middle of a run: it proposes only after collecting
    /// `hist_cnt` complete intervals (§III-D).
    pub fn restarted(inputs: usize, params: DfsParams) -> Dde {
        Dde {
            need_full_history: true,
            ..Dde::new(inputs, params)
        }
    }

    /// The clock synchroniser (e.g. to seed it from the start barrier).
    pub fn clock_mut(&mut self) -> &mut ClockSync {
        &mut self.clock
    }

    /// The clock synchroniser.
    pub fn clock(&self) -> &ClockSync {
        &self.clock
    }

    /// Counters so far.
    pub fn counters(&self) -> DdeCounters {
        self.counters
    }

    /// Unified meta-data of interval `j`, if complete.
    pub fn unified(&self, j: u64) -> Option<&Unified> {
        self.unified.get(&j)
    }

    /// All proposals this replica computed, by interval (its own clock).
    pub fn proposals(&self) -> &BTreeMap<u64, LocalProposal> {
        &self.proposals
    }

    /// Handles a report received at local time `lt`; returns the proposals to send, each
    /// addressed to an input and already in that input's clock.
    pub fn on_report(&mut self, r: &Report, lt: Time) -> Vec<(usize, Proposal)> {
        let mut out = Vec::new();
        let i = r.input;
        if i >= self.inputs {
            return out;
        }
        self.counters.reports += 1;
        let a = r.actual;
        let n = self.inputs;
        let p = self.partial.entry(a.index).or_insert_with(|| Partial {
            starts: vec![None; n],
            durations: vec![0; n],
            proposed: vec![None; n],
            count: 0,
        });
        if p.starts[i].is_some() || self.unified.contains_key(&a.index) {
            self.counters.duplicate_reports += 1;
        } else {
            self.clock
                .on_interval_report(i, a.index, a.start, a.duration, a.median_latency, lt);
            p.starts[i] = Some(self.clock.to_local(i, a.start));
            p.durations[i] = a.duration;
            p.proposed[i] = a.proposed_duration;
            p.count += 1;
            if p.count == n {
                let p = self.partial.remove(&a.index).expect("present");
                self.unify(a.index, p);
                if let Some(lp) = self.propose(a.index + 2) {
                    for inp in self.requests.remove(&lp.index).unwrap_or_default() {
                        out.push((inp, self.for_input(inp, &lp)));
                    }
                }
            }
        }
        // the request itself
        if let Some(lp) = self.proposals.get(&r.request).copied() {
            out.push((i, self.for_input(i, &lp)));
        } else {
            self.requests.entry(r.request).or_default().push(i);
        }
        self.counters.sent += out.len() as u64;
        out
    }

    fn for_input(&self, input: usize, lp: &LocalProposal) -> Proposal {
        let w = lp.index.saturating_sub(2);
        let start = self.clock.to_input_as_of(input, w, lp.start);
        let end = self.clock.to_input_as_of(input, w, lp.start + lp.duration);
        Proposal {
            index: lp.index,
            start,
            duration: end - start,
        }
    }

    fn unify(&mut self, j: u64, mut p: Partial) {
        let starts: Vec<Time> = p.starts.iter().map(|s| s.expect("all reported")).collect();
        let proposed = if p.proposed.iter().all(Option::is_some) {
            let mut v: Vec<Dur> = p.proposed.iter().map(|d| d.expect("checked")).collect();
            median_i64(&mut v)
        } else {
            None
        };
        let u = Unified {
            index: j,
            avg_start: mean_i64(&starts).expect("inputs > 0"),
            med_duration: median_i64(&mut p.durations).expect("inputs > 0"),
            proposed_duration: proposed,
            min_start: *starts.iter().min().expect("inputs > 0"),
            max_start: *starts.iter().max().expect("inputs > 0"),
        };
        self.unified.insert(j, u);
        self.counters.unified += 1;
        // keep a bounded history
        let keep = self.params.hist_cnt as u64 + 4;
        while self.unified.len() as u64 > keep {
            self.unified.pop_first();
        }
        while self
            .partial
            .first_key_value()
            .is_some_and(|(&k, _)| k + keep < j)
        {
            self.partial.pop_first();
        }
        while self.proposals.len() as u64 > 4 * keep {
            self.proposals.pop_first();
        }
        // proposals still to be sent convert with the clock state of w = r - 2 >= j - 1
        self.clock.forget_before(j.saturating_sub(1));
    }

    /// Computes (or returns the cached) proposal for interval `r` from the history up to
    /// `w = r − 2`; None while this replica cannot propose deterministically.
    fn propose(&mut self, r: u64) -> Option<LocalProposal> {
        if let Some(p) = self.proposals.get(&r) {
            return Some(*p);
        }
        let w = r.checked_sub(2)?;
        let last = *self.unified.get(&w)?;
        let h = self.params.hist_cnt as u64;
        let lo = (w + 1).saturating_sub(h);
        let window: Vec<Unified> = (lo..=w)
            .map(|k| self.unified.get(&k).copied())
            .collect::<Option<Vec<_>>>()?;
        if self.need_full_history && (window.len() as u64) < h {
            return None;
        }
        let mut durs: Vec<Dur> = window.iter().map(|u| u.med_duration).collect();
        let med = median_i64(&mut durs).expect("window not empty");
        let pairs: Vec<(Dur, Option<Dur>)> = window
            .iter()
            .map(|u| (u.med_duration, u.proposed_duration))
            .collect();
        let ssu = eq1_ssu(&pairs, med, &self.params);
        let lp = LocalProposal {
            index: r,
            start: proposed_start(last.avg_start, last.med_duration, r, w, med),
            duration: ssu.duration,
            median_history: med,
            ssu,
        };
        self.counters.proposals += 1;
        if ssu.speedup {
            self.counters.speedups += 1;
        }
        self.proposals.insert(r, lp);
        Some(lp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ie::ActualMeta;

    #[test]
    fn eq2_offset_by_hand() {
        // interval started at 1,000 and lasted 500 on the input's clock, report received at
        // 10,700 on the DDE's clock, median latency 200: 10,700 - 1,500 - 200 = 9,000
        assert_eq!(eq2_offset(10_700, 1_000, 500, 200), 9_000);
    }

    #[test]
    fn eq3_drift_and_median_by_hand() {
        // offset grew by 10 ns over 1,000,000 ns: 1e-5
        assert_eq!(eq3_drift((1_000, 5), (1_001_000, 15)), Some(1e-5));
        assert_eq!(eq3_drift((7, 1), (7, 2)), None);
        let mut cs = ClockSync::new(1, 3);
        // offsets 100, 110, 130, 130, 140 at tmend 0, 1000, 2000, 3000, 4000:
        // drifts 0.01, 0.02, 0.0, 0.01; median of the last 3 (0.02, 0.0, 0.01) = 0.01
        for (k, off) in [100, 110, 130, 130, 140].into_iter().enumerate() {
            let tmend = 1000 * k as i64;
            cs.on_report(0, tmend, 0, 0, tmend + off);
        }
        assert_eq!(cs.offset(0), Some(140));
        assert!((cs.drift(0) - 0.01).abs() < 1e-12);
        // input time 5,000 -> 5,000 + 140 + 0.01*(5,000 - 4,000) = 5,150, and back
        assert_eq!(cs.to_local(0, 5_000), 5_150);
        assert_eq!(cs.to_input(0, 5_150), 5_000);
    }

    #[test]
    fn clock_sync_recovers_injected_offset_and_drift() {
        // input clock = true time; DDE clock = 7,000 + true * (1 + 2e-5); latency 300
        let mut cs = ClockSync::new(1, 10);
        for k in 1..=20i64 {
            let tmend = k * 1_000_000;
            let arrive_true = tmend + 300;
            let lt = 7_000 + arrive_true + (arrive_true as f64 * 2e-5).round() as i64;
            cs.on_report(0, tmend - 500_000, 500_000, 300, lt);
        }
        assert!((cs.drift(0) - 2e-5).abs() < 1e-8, "{}", cs.drift(0));
        let t = 25_000_000;
        let expect = 7_000 + t + (t as f64 * 2e-5).round() as i64;
        assert!((cs.to_local(0, t) - expect).abs() <= 2);
    }

    #[test]
    fn a_steady_overrun_is_not_taken_for_convergence() {
        let p = DfsParams {
            hist_cnt: 4,
            ..DfsParams::default()
        };
        // every interval 5.3 % over its proposal (what one speed-up step of 5 % leaves
        // when the network delivers no more): deviations all 5.3, VAR 0
        let steady = [(1053, Some(1000)); 4];
        let v = DfsParams {
            ssu_criterion: SsuCriterion::Variance,
            ..p
        };
        let printed = eq1_ssu(&steady, 1000, &v);
        assert_eq!(printed.var, Some(0.0));
        assert!(printed.speedup, "Eq. 1 as printed accepts it");
        let d = eq1_ssu(&steady, 1000, &p);
        assert_eq!(p.ssu_criterion, SsuCriterion::MeanSquare);
        assert!(!d.speedup, "{d:?}");
        assert_eq!(d.duration, 1000);
        // on time within ±2 %: 4 %² on average, accepted
        let on_time = [
            (1020, Some(1000)),
            (980, Some(1000)),
            (1020, Some(1000)),
            (980, Some(1000)),
        ];
        assert!(eq1_ssu(&on_time, 1000, &p).speedup);
    }

    #[test]
    fn eq1_by_hand() {
        let p = DfsParams {
            hist_cnt: 4,
            ssu_criterion: SsuCriterion::Variance,
            ..DfsParams::default()
        };
        // Actual durations of a window whose proposed duration was 100 each time.
        let window = |actual: [i64; 4]| actual.map(|a| (a, Some(100)));
        for (actual, want) in [
            // deviations 2 %, 4 %, 2 %, 4 % -> mu 3, VAR 1 <= 10: speed up by 5 %
            ([102, 96, 98, 104], (Some(3.0), Some(1.0), true, 950)),
            // deviations 0, 0, 0, 20 -> mu 5, VAR (3*25 + 225)/4 = 75 > 10: no speed-up
            ([100, 100, 100, 120], (Some(5.0), Some(75.0), false, 1000)),
        ] {
            let d = eq1_ssu(&window(actual), 1000, &p);
            assert_eq!((d.mu, d.var, d.speedup, d.duration), want, "{actual:?}");
        }
        let w = window([100, 100, 100, 120]);
        // the mean criterion accepts it: mu 5 <= 10
        let pm = DfsParams {
            ssu_criterion: SsuCriterion::MeanDeviation,
            ..p
        };
        assert!(eq1_ssu(&w, 1000, &pm).speedup);
        // a best-effort interval in the window, or a short window: not eligible
        let w2 = [
            (100, Some(100)),
            (100, None),
            (100, Some(100)),
            (100, Some(100)),
        ];
        assert!(!eq1_ssu(&w2, 1000, &p).speedup);
        assert!(!eq1_ssu(&w[..3], 1000, &p).speedup);
    }

    #[test]
    fn proposer_start_by_hand() {
        // last completed interval w = 5 started at 1,000 and took 300; median 250; j = 7:
        // (1,000 + 300) + (7 - 5 - 1) * 250 = 1,550
        assert_eq!(proposed_start(1_000, 300, 7, 5, 250), 1_550);
        assert_eq!(proposed_start(1_000, 300, 6, 5, 250), 1_300);
    }

    fn report(input: usize, j: u64, start: Time, dur: Dur, pd: Option<Dur>) -> Report {
        Report {
            input,
            actual: ActualMeta {
                index: j,
                start_ts: 0,
                rounds: 1,
                start,
                duration: dur,
                proposed_duration: pd,
                proposed_start: None,
                median_latency: 0,
            },
            request: j + 2,
        }
    }

    #[test]
    fn unified_is_average_start_and_median_duration_and_proposal_follows() {
        let p = DfsParams {
            hist_cnt: 3,
            ..DfsParams::default()
        };
        let mut d = Dde::new(3, p);
        // zero latency and receive time == interval end: offset 0 for every input
        let mut out = vec![];
        for (i, (s, dur)) in [(0, 100), (30, 90), (60, 130)].into_iter().enumerate() {
            out = d.on_report(&report(i, 0, s, dur, None), s + dur);
        }
        let u = *d.unified(0).unwrap();
        assert_eq!((u.avg_start, u.med_duration), (30, 100));
        // requests for interval 2 answered with tp_2 = 30 + 100 + (2 - 0 - 1) * 100 = 230
        assert_eq!(out.len(), 3);
        for (_, pr) in &out {
            assert_eq!((pr.index, pr.start, pr.duration), (2, 230, 100));
        }
        // a restarted replica with the same single interval does not propose
        let mut r = Dde::restarted(3, p);
        let mut out = vec![];
        for (i, (s, dur)) in [(0, 100), (30, 90), (60, 130)].into_iter().enumerate() {
            out = r.on_report(&report(i, 0, s, dur, None), s + dur);
        }
        assert!(out.is_empty());
        assert!(r.proposals().is_empty());
    }

    #[test]
    fn restarted_replica_waits_hist_cnt_intervals_then_agrees() {
        let p = DfsParams {
            hist_cnt: 3,
            ..DfsParams::default()
        };
        let mut running = Dde::new(2, p);
        let mut restarted: Option<Dde> = None;
        let mut first_restarted_proposal = None;
        for j in 0..10u64 {
            if j == 4 {
                // replica restarts before interval 4 is reported
                restarted = Some(Dde::restarted(2, p));
            }
            for i in 0..2 {
                let start = j as i64 * 1_000 + i as i64 * 10;
                let dur = 900 + (j as i64 % 3) * 20 + i as i64;
                let r = report(i, j, start, dur, (j >= 2).then_some(900));
                let lt = start + dur + 5;
                running.on_report(&r, lt);
                if let Some(d) = restarted.as_mut() {
                    let out = d.on_report(&r, lt);
                    if first_restarted_proposal.is_none() && !out.is_empty() {
                        first_restarted_proposal = Some(out[0].1.index);
                    }
                }
            }
        }
        let restarted = restarted.unwrap();
        // it saw intervals 4.. complete; it proposes once 4, 5, 6 are unified: for 6 + 2 = 8
        assert_eq!(first_restarted_proposal, Some(8));
        assert!(restarted.proposals().keys().all(|&r| r >= 8));
        for (r, lp) in restarted.proposals() {
            let rp = running.proposals()[r];
            assert_eq!(
                (lp.start, lp.duration),
                (rp.start, rp.duration),
                "interval {r}"
            );
        }
        assert_eq!(restarted.proposals().len(), 4); // 8, 9, 10, 11
    }
}

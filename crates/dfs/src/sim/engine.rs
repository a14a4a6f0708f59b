//! The event loop: node clocks, the event queue, and [`Sim`], which runs the inputs',
//! compute nodes' and DDE replicas' state machines on the modelled network ([`super::net`]).

mod finish;
mod fles;

use super::backend::Net;
use super::config::{DropWindow, Role, SimConfig, SimError};
use super::data::{FillSample, FiveNum, SimOutcome};
use super::net::Reschedule;
use super::noise::Stalls;
use super::rng::Rng;
use super::timers::Timers;
use crate::compute::{Arrival, ArrivalOutcome, ComputeNode};
use crate::dde::Dde;
use crate::ie::{InputEngine, Poll, Proposal, Report};
use crate::model;
use crate::params::Mode;
use crate::sender::{BestEffortSender, Credits};
use latlab_core::hist::{HistConfig, LatencyHistogram};
use latlab_core::units::Nanos;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

#[derive(Clone, Copy, Debug)]
struct NodeClock {
    offset: i64,
    drift: f64,
}

impl NodeClock {
    fn local(&self, t: i64) -> i64 {
        t + self.offset + (self.drift * t as f64).round() as i64
    }
    fn true_of(&self, local: i64) -> i64 {
        ((local - self.offset) as f64 / (1.0 + self.drift)).ceil() as i64
    }
}

#[derive(Clone, Debug)]
enum Ev {
    Wake(u32),
    FlowDone(u32, u32),
    Arrive(u32, u64),
    Ack(u32, u64),
    Release(u32, u64),
    Credit(u32, u32, u64),
    Report(u32, Box<Report>),
    Proposal(u32, Proposal),
    Sample,
    Noise,
    Scale(f64),
    Kill(u32),
    Restart(u32),
    /// FLESnet: the detector produced the next time-slice.
    Produce,
    /// FLESnet: input `.0` learns that time-slice `.1` goes to builder `.2`.
    Assigned(u32, u64, u32),
    /// FLESnet: builder `.0` releases a built time-slice.
    FlesRelease(u32),
    /// FLESnet: the manager learns that builder `.0` has room again.
    TsmFree(u32),
}

struct Entry {
    t: i64,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.t == o.t && self.seq == o.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> Ordering {
        // min-heap on (t, seq)
        (o.t, o.seq).cmp(&(self.t, self.seq))
    }
}

struct InputNode {
    be: BestEffortSender,
    ie: InputEngine,
    credits: Credits,
    inflight: u32,
    /// Since when `inflight` has had its present value (for the cap's occupancy).
    inflight_since: i64,
    clock: NodeClock,
    wake_at: i64,
    /// When it starts (0, or its draw of a warm start).
    start_at: i64,
    idle: bool,
    done: bool,
}

struct ComputeSide {
    node: ComputeNode,
    clock: NodeClock,
}

struct IntervalAcc {
    proposed: Vec<i64>,
    actual: Vec<i64>,
    starts: Vec<i64>,
    dropped: bool,
}

pub(super) struct Sim<'a> {
    cfg: &'a SimConfig,
    now: i64,
    seq: u64,
    heap: BinaryHeap<Entry>,
    /// Flow completions and fabric wake-ups: one pending event per flow, moved in place on
    /// every reschedule instead of queueing a stale event ([`Timers`]).
    timers: Timers,
    rng: Rng,
    net: Net,
    inputs: Vec<InputNode>,
    computes: Vec<ComputeSide>,
    ddes: Vec<Option<Dde>>,
    resched: Vec<Reschedule>,
    completion: LatencyHistogram,
    completion_all: LatencyHistogram,
    warmup_ts: u64,
    delivered: u64,
    first_send: Option<i64>,
    last_arrival: i64,
    warm_time: Option<i64>,
    sent: u64,
    events: u64,
    intervals: Vec<IntervalAcc>,
    fill: Vec<FillSample>,
    rank_counts: Vec<Vec<u64>>,
    scale_interval: f64,
    scale_time: f64,
    input0_interval: Option<u64>,
    sample_ns: i64,
    scratch: Vec<u32>,
    /// Per node (inputs, then computes): its stall process; empty without a noise trace.
    stalls: Vec<Stalls>,
    /// Per node: its persistent bandwidth factor.
    speed: Vec<f64>,
    /// Completion durations after warm-up, first and second half of the time-slices.
    halves: [LatencyHistogram; 2],
    half_ts: u64,
    /// Completions by block of one interval's time-slices (the trend over the run).
    blocks: Vec<BlockAcc>,
    block_len: u64,
    fles: Option<super::builders::Fles>,
    /// Input time spent with k writes in flight, ns, k = 0..=max_inflight (summed over
    /// inputs).
    inflight_ns: Vec<i64>,
    /// Due contributions refused for want of credits (ring slots at their compute node).
    credit_refusals: u64,
    /// Scratch: the contributions an input engine was refused in one poll.
    refused: Vec<u64>,
    /// (sample, compute node) pairs after the warm-up with k concurrent senders,
    /// k = 0..=inputs.
    senders: Vec<u64>,
    sender_scratch: Vec<usize>,
}

/// Completions of one block of time-slices: count, sum and largest duration, and the
/// time of the last.
#[derive(Clone, Copy, Default)]
pub(super) struct BlockAcc {
    pub(super) count: u64,
    pub(super) sum_ns: f64,
    pub(super) max_ns: u64,
    pub(super) last: i64,
}

const GB: f64 = 1e9;

impl<'a> Sim<'a> {
    pub(super) fn new(cfg: &'a SimConfig) -> Sim<'a> {
        let t = cfg.topology;
        let (ni, nc) = (t.inputs, t.computes);
        let mut rng = Rng::new(cfg.seed);
        let inj = cfg.net.inj_gbs; // GB/s == bytes/ns
        let ej = cfg.net.ej_gbs;
        // persistent speed differences come from their own generator, so a run without them
        // draws exactly what it drew before they existed
        let mut srng = Rng::new(cfg.seed ^ 0x5350_4545_4400_0000);
        let speed: Vec<f64> = (0..ni + nc)
            .map(|_| match cfg.speed_spread {
                s if s > 0.0 => 1.0 - s * srng.unit(),
                _ => 1.0,
            })
            .collect();
        let mut inj_v: Vec<f64> = speed.iter().map(|f| inj * f).collect();
        let mut ej_v: Vec<f64> = speed.iter().map(|f| ej * f).collect();
        for s in &cfg.slow {
            match s.role {
                Role::Input => inj_v[s.index] *= s.factor,
                Role::Compute => ej_v[ni + s.index] *= s.factor,
            }
        }
        let total = cfg.total_ts();
        let clock = |rng: &mut Rng| NodeClock {
            offset: rng
                .range(
                    -(cfg.net.max_clock_offset_ns as f64),
                    cfg.net.max_clock_offset_ns as f64,
                )
                .round() as i64,
            drift: rng.range(-cfg.net.max_drift_ppm, cfg.net.max_drift_ppm) * 1e-6,
        };
        // a warm start's start times come from their own generator too
        let mut wrng = Rng::new(cfg.seed ^ 0x5354_4152_5400_0000);
        let inputs: Vec<InputNode> = (0..ni)
            .map(|i| {
                let start_at = match cfg.start_spread_ns {
                    0 => 0,
                    s => (wrng.unit() * s as f64).round() as i64,
                };
                InputNode {
                    be: BestEffortSender::new(i, nc, total),
                    ie: InputEngine::new(i, nc, cfg.params, total),
                    credits: Credits::new(nc, t.slots_per_input),
                    inflight: 0,
                    inflight_since: start_at,
                    clock: clock(&mut rng),
                    wake_at: i64::MAX,
                    start_at,
                    idle: false,
                    done: false,
                }
            })
            .collect();
        let computes: Vec<ComputeSide> = (0..nc)
            .map(|c| ComputeSide {
                node: ComputeNode::new(c, ni, nc, t.slots_per_input),
                clock: clock(&mut rng),
            })
            .collect();
        let ddes = (0..cfg.replicas())
            .map(|_| Some(Dde::new(ni, cfg.params)))
            .collect();
        let len = cfg.params.interval_len(nc);
        let warmup_ts = if total > 3 * len { 2 * len } else { 0 };
        let hc = HistConfig {
            lowest_ns: 1,
            highest_ns: 3_600 * 1_000_000_000,
            sigfig: 3,
        };
        let expected_ns = (total as f64 * t.mts_bytes as f64 / inj).max(1.0);
        let sample_ns = if cfg.sample_ns > 0 {
            cfg.sample_ns
        } else {
            ((expected_ns / 400.0) as i64).max(1_000)
        };
        let mut s = Sim {
            cfg,
            now: 0,
            seq: 0,
            heap: BinaryHeap::new(),
            timers: Timers::default(),
            rng,
            net: Net::for_config(cfg, inj_v, ej_v),
            inputs,
            computes,
            ddes,
            resched: Vec::new(),
            completion: LatencyHistogram::new(hc).expect("valid config"),
            completion_all: LatencyHistogram::new(hc).expect("valid config"),
            warmup_ts,
            delivered: 0,
            first_send: None,
            last_arrival: 0,
            warm_time: None,
            sent: 0,
            events: 0,
            intervals: Vec::new(),
            fill: Vec::new(),
            rank_counts: vec![vec![0; t.slots_per_input as usize + 1]; ni],
            scale_interval: 1.0,
            scale_time: 1.0,
            input0_interval: None,
            sample_ns,
            scratch: Vec::new(),
            stalls: match &cfg.stalls {
                Some(tr) => (0..ni + nc).map(|n| Stalls::new(tr, cfg.seed, n)).collect(),
                None => Vec::new(),
            },
            speed,
            halves: [
                LatencyHistogram::new(hc).expect("valid config"),
                LatencyHistogram::new(hc).expect("valid config"),
            ],
            half_ts: warmup_ts + (total - warmup_ts) / 2,
            blocks: Vec::new(),
            block_len: len.max(1),
            fles: (cfg.mode == Mode::Flesnet).then(|| super::builders::Fles::new(cfg)),
            inflight_ns: vec![0; cfg.net.max_inflight as usize + 1],
            credit_refusals: 0,
            refused: Vec::new(),
            senders: vec![0; ni + 1],
            sender_scratch: Vec::new(),
        };
        // seed every DDE's clock synchroniser from the start barrier (all leave it at t = 0)
        for (r, d) in s.ddes.iter_mut().enumerate() {
            let d = d.as_mut().expect("fresh");
            let cl = s.computes[r].clock;
            for (i, inp) in s.inputs.iter().enumerate() {
                d.clock_mut().seed(i, inp.clock.local(0), cl.local(0));
            }
        }
        s
    }

    fn push(&mut self, t: i64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Entry {
            t,
            seq: self.seq,
            ev,
        });
    }

    fn msg_delay(&mut self) -> i64 {
        self.cfg.net.latency_ns + self.rng.exp(self.cfg.net.jitter_ns).round() as i64
    }

    /// Moves every rescheduled flow's one pending completion event (a fresh sequence
    /// number each, exactly as the push of a new event did).
    fn flush_resched(&mut self) {
        for &(id, t, v) in &self.resched {
            self.seq += 1;
            // the fabric's reserved id u32::MAX takes slot 0, flow ids the slots after it
            self.timers.set(id.wrapping_add(1), t, self.seq, v);
        }
        self.resched.clear();
    }

    /// The next event by `(time, seq)` from the main queue or the timers.
    fn next_event(&mut self) -> Option<(i64, Ev)> {
        let main = self.heap.peek().map(|e| (e.t, e.seq));
        match (main, self.timers.peek()) {
            (None, None) => None,
            (Some(_), None) => self.heap.pop().map(|e| (e.t, e.ev)),
            (Some(m), Some(f)) if m < f => self.heap.pop().map(|e| (e.t, e.ev)),
            (_, Some(_)) => {
                let (t, _, slot, v) = self.timers.pop().expect("peeked");
                Some((t, Ev::FlowDone(slot.wrapping_sub(1), v)))
            }
        }
    }

    /// Queues the events that start a run: every input's first wake-up, the first sample
    /// and noise redraw, the time-window drops, the DDE faults and FLESnet's producer.
    fn start_events(&mut self) {
        for i in 0..self.inputs.len() {
            let t = self.inputs[i].start_at;
            self.push(t, Ev::Wake(i as u32));
            self.inputs[i].wake_at = t;
        }
        self.push(0, Ev::Sample);
        if self.cfg.net.noise > 0.0 && self.cfg.net.noise_period_ns > 0 {
            self.push(0, Ev::Noise);
        }
        for d in &self.cfg.drops {
            if let DropWindow::Time { from_ns, to_ns } = d.window {
                self.push(from_ns, Ev::Scale(d.factor));
                self.push(to_ns, Ev::Scale(1.0 / d.factor));
            }
        }
        for f in &self.cfg.dde_faults {
            if f.replica < self.ddes.len() {
                self.push(f.kill_ns, Ev::Kill(f.replica as u32));
                if let Some(r) = f.restart_ns {
                    self.push(r, Ev::Restart(f.replica as u32));
                }
            }
        }
        if self.fles.is_some() {
            self.push(0, Ev::Produce);
        }
    }

    pub(super) fn run(
        mut self,
        progress: &mut dyn latlab_core::progress::Progress,
    ) -> Result<SimOutcome, SimError> {
        self.start_events();
        let mut percent = 0;
        progress.step("simulating", 0, 100);
        while let Some((t, ev)) = self.next_event() {
            let sample = matches!(ev, Ev::Sample);
            self.handle(t, ev);
            if sample {
                let now = self.percent_done();
                if now > percent {
                    percent = now.min(100);
                    progress.step("simulating", percent, 100);
                }
            }
        }
        Ok(self.finish())
    }

    /// Handles one event at time `t`.
    fn handle(&mut self, t: i64, ev: Ev) {
        self.now = t;
        self.events += 1;
        match ev {
            Ev::Wake(i) => {
                let inp = &mut self.inputs[i as usize];
                if inp.wake_at == t {
                    inp.wake_at = i64::MAX;
                    self.poll(i as usize);
                }
            }
            Ev::FlowDone(id, v) => {
                if self.net.is_current(id, v) {
                    self.net.finish(id, self.now, &mut self.resched);
                    self.flush_resched();
                    while let Some((i, ts)) = self.net.take_done() {
                        let d = self.msg_delay() - self.net.latency_included();
                        self.push(self.now + d, Ev::Arrive(i as u32, ts));
                        // the write completes at the sender's NIC when the target
                        // NIC's acknowledgement is back: the target's CPU has no part
                        // in it, so a stalled compute node does not hold it
                        let back = self.msg_delay();
                        self.push(self.now + d + back, Ev::Ack(i as u32, ts));
                    }
                }
            }
            Ev::Arrive(i, ts) => self.arrive(i as usize, ts),
            Ev::Ack(i, ts) => self.ack(i as usize, ts),
            Ev::Release(c, local) => {
                if let Some(end) = self.stalled(self.inputs.len() + c as usize) {
                    self.push(end, Ev::Release(c, local));
                    return;
                }
                if let Some(ack) = self.computes[c as usize].node.release(local) {
                    for i in 0..self.inputs.len() {
                        let d = self.msg_delay();
                        self.push(self.now + d, Ev::Credit(i as u32, c, ack));
                    }
                }
            }
            Ev::Credit(i, c, ack) => {
                let inp = &mut self.inputs[i as usize];
                inp.credits.on_ack_pointer(c as usize, ack);
                if inp.idle {
                    self.poll(i as usize);
                }
            }
            Ev::Report(r, rep) => {
                if let Some(end) = self.stalled(self.inputs.len() + r as usize) {
                    self.push(end, Ev::Report(r, rep));
                    return;
                }
                self.report(r as usize, &rep)
            }
            Ev::Proposal(i, p) => {
                self.inputs[i as usize].ie.on_proposal(p);
                self.poll(i as usize);
            }
            Ev::Sample => {
                self.sample_senders();
                self.sample();
                if self.unfinished() {
                    self.push(self.now + self.sample_ns, Ev::Sample);
                }
            }
            Ev::Noise => {
                self.noise();
                if self.unfinished() {
                    self.push(self.now + self.cfg.net.noise_period_ns, Ev::Noise);
                }
            }
            Ev::Scale(f) => {
                self.scale_time *= f;
                self.apply_scale();
            }
            Ev::Kill(r) => self.ddes[r as usize] = None,
            Ev::Restart(r) => {
                self.ddes[r as usize] = Some(Dde::restarted(self.inputs.len(), self.cfg.params))
            }
            Ev::Produce => self.produce(),
            Ev::Assigned(i, ts, b) => self.assigned(i as usize, ts, b as usize),
            Ev::FlesRelease(b) => self.fles_release(b),
            Ev::TsmFree(b) => self.fles_mut().tsm.release(b as usize),
        }
    }

    /// The end of the stall node `node` (inputs, then computes) is in now, if any.
    fn stalled(&mut self, node: usize) -> Option<i64> {
        let now = self.now;
        self.stalls.get_mut(node)?.stalled_until(now)
    }

    /// Whether work remains (the periodic events keep going while it does).
    fn unfinished(&self) -> bool {
        match &self.fles {
            Some(f) => f.unfinished(self.cfg.total_ts()),
            None => self.delivered < self.cfg.total_ts() * self.inputs.len() as u64,
        }
    }

    /// Share of the run done, percent.
    fn percent_done(&self) -> u64 {
        let total = self.cfg.total_ts();
        match &self.fles {
            Some(f) => (f.settled() * 100).checked_div(total).unwrap_or(100),
            None => (self.delivered * 100)
                .checked_div(total * self.inputs.len() as u64)
                .unwrap_or(100),
        }
    }

    /// Records a completed time-slice's duration (all, after warm-up, and by half).
    fn record_completion(&mut self, ts: u64, d: u64) {
        self.completion_all.record(Nanos(d));
        if ts >= self.warmup_ts {
            self.completion.record(Nanos(d));
            self.halves[usize::from(ts >= self.half_ts)].record(Nanos(d));
        }
        // grown as time-slices complete (in about their order), not sized up front
        let k = (ts / self.block_len) as usize;
        if self.blocks.len() <= k {
            self.blocks.resize(k + 1, BlockAcc::default());
        }
        let b = &mut self.blocks[k];
        b.count += 1;
        b.sum_ns += d as f64;
        b.max_ns = b.max_ns.max(d);
        b.last = b.last.max(self.now);
    }

    /// Counts one delivered contribution (and the end of the warm-up).
    fn count_delivery(&mut self) {
        self.delivered += 1;
        self.last_arrival = self.now;
        if self.warm_time.is_none() && self.delivered >= self.warmup_ts * self.inputs.len() as u64 {
            self.warm_time = Some(self.now);
        }
    }

    fn apply_scale(&mut self) {
        let s = self.scale_time * self.scale_interval;
        self.net.set_scale(s, self.now, &mut self.resched);
        self.flush_resched();
    }

    fn noise(&mut self) {
        let ni = self.inputs.len();
        let nc = self.computes.len();
        let base_inj = self.cfg.net.inj_gbs;
        let base_ej = self.cfg.net.ej_gbs;
        let lo = 1.0 - self.cfg.net.noise;
        for n in 0..ni + nc {
            let speed = self.speed[n];
            let slow = |role, idx| {
                speed
                    * self
                        .cfg
                        .slow
                        .iter()
                        .filter(|s| s.role == role && s.index == idx)
                        .map(|s| s.factor)
                        .product::<f64>()
            };
            if n < ni {
                let f = self.rng.range(lo, 1.0) * slow(Role::Input, n);
                self.net
                    .set_inj(n, base_inj * f, self.now, &mut self.resched);
            } else {
                let f = self.rng.range(lo, 1.0) * slow(Role::Compute, n - ni);
                self.net.set_ej(n, base_ej * f, self.now, &mut self.resched);
            }
        }
        self.flush_resched();
    }

    fn poll(&mut self, i: usize) {
        let nc = self.computes.len();
        let ni = self.inputs.len();
        let max_inflight = self.cfg.net.max_inflight;
        let bytes = self.cfg.topology.mts_bytes;
        loop {
            let inp = &mut self.inputs[i];
            if inp.done {
                return;
            }
            if inp.inflight >= max_inflight {
                inp.idle = true;
                return;
            }
            if self.now < inp.start_at {
                // not started yet (a warm start): its first wake-up is queued
                inp.idle = true;
                return;
            }
            if let Some(end) = self.stalled(i) {
                let inp = &mut self.inputs[i];
                inp.idle = true;
                if end < inp.wake_at {
                    inp.wake_at = end;
                    self.push(end, Ev::Wake(i as u32));
                }
                return;
            }
            let inp = &mut self.inputs[i];
            let local = inp.clock.local(self.now);
            let (ts, cn) = match self.cfg.mode {
                Mode::Flesnet => match self.fles.as_mut().and_then(|f| f.queues[i].pop_front()) {
                    Some((ts, b)) => (ts, b as usize),
                    None => {
                        inp.idle = true;
                        return;
                    }
                },
                Mode::BestEffort => match inp.be.next(&inp.credits) {
                    Some(ts) => {
                        inp.be.sent();
                        (ts, model::compute_of(ts, nc))
                    }
                    None => {
                        inp.idle = !inp.be.finished();
                        if inp.idle {
                            // the next contribution in sequence has no credit (HOL)
                            self.credit_refusals += 1;
                        }
                        return;
                    }
                },
                Mode::Dfs => {
                    let credits = &inp.credits;
                    let refused = &mut self.refused;
                    refused.clear();
                    let p = inp.ie.poll(local, &mut |ts| {
                        let ok = credits.allows(ts);
                        if !ok {
                            refused.push(ts);
                        }
                        ok
                    });
                    // a refusal binds when the refused contribution came before the one
                    // sent in the input's order (or nothing was sent); the input engine asks
                    // about later ones as well
                    let order = |ts: u64| {
                        (
                            ts / nc as u64,
                            model::position_in_round(i, model::compute_of(ts, nc), nc),
                        )
                    };
                    self.credit_refusals += match p {
                        Poll::Send(sent) => {
                            refused.iter().filter(|&&r| order(r) < order(sent)).count()
                        }
                        _ => refused.len(),
                    } as u64;
                    if i == 0 {
                        self.check_interval_drop();
                    }
                    let inp = &mut self.inputs[i];
                    match p {
                        Poll::Send(ts) => {
                            inp.ie.sent(ts, local);
                            (ts, model::compute_of(ts, nc))
                        }
                        Poll::WaitUntil(tl) => {
                            inp.idle = true;
                            let t = inp.clock.true_of(tl).max(self.now + 1);
                            if t < inp.wake_at {
                                inp.wake_at = t;
                                self.push(t, Ev::Wake(i as u32));
                            }
                            return;
                        }
                        Poll::Idle => {
                            inp.idle = true;
                            return;
                        }
                        Poll::Done => {
                            inp.done = true;
                            return;
                        }
                    }
                }
            };
            self.inflight_step(i, true);
            self.inputs[i].idle = false;
            self.sent += 1;
            self.first_send.get_or_insert(self.now);
            self.net
                .start(i, ni + cn, bytes, (i, ts), self.now, &mut self.resched);
            self.flush_resched();
        }
    }

    fn check_interval_drop(&mut self) {
        let cur = self.inputs[0].ie.current_interval();
        if cur == self.input0_interval {
            return;
        }
        self.input0_interval = cur;
        let Some(j) = cur else { return };
        let mut f = 1.0;
        for d in &self.cfg.drops {
            if let DropWindow::Intervals { first, last } = d.window {
                if (first..=last).contains(&j) {
                    f *= d.factor;
                }
            }
        }
        if f != self.scale_interval {
            self.scale_interval = f;
            self.apply_scale();
        }
        let acc = self.interval_acc(j);
        acc.dropped = f < 1.0;
    }

    fn interval_acc(&mut self, j: u64) -> &mut IntervalAcc {
        while self.intervals.len() as u64 <= j {
            self.intervals.push(IntervalAcc {
                proposed: Vec::new(),
                actual: Vec::new(),
                starts: Vec::new(),
                dropped: false,
            });
        }
        &mut self.intervals[j as usize]
    }

    fn arrive(&mut self, i: usize, ts: u64) {
        let nc = self.computes.len();
        let c = match &self.fles {
            Some(f) => f.builder_of(ts),
            None => model::compute_of(ts, nc),
        };
        // the data is in the compute node's memory (the sender's NIC completes the write
        // without it), but a stalled compute node sees the SYNC only when the stall ends
        if let Some(end) = self.stalled(self.inputs.len() + c) {
            self.push(end, Ev::Arrive(i as u32, ts));
            return;
        }
        if self.fles.is_some() {
            return self.fles_arrive(ts, c);
        }
        let bytes = self.cfg.topology.mts_bytes;
        let cs = &mut self.computes[c];
        let local = cs.clock.local(self.now);
        let sum = model::descriptor_checksum(i as u32, ts, bytes);
        let out = cs.node.on_arrival(
            Arrival {
                input: i,
                ts,
                carried_checksum: sum,
                computed_checksum: sum,
            },
            local,
        );
        if matches!(out, ArrivalOutcome::Stored | ArrivalOutcome::Completed(_)) {
            self.count_delivery();
        }
        if let ArrivalOutcome::Completed(comp) = out {
            let d = comp.duration().max(0) as u64;
            self.record_completion(ts, d);
            let p = self.rng.exp(self.cfg.net.processing_ns).round() as i64;
            self.push(self.now + p, Ev::Release(c as u32, comp.local));
        }
    }

    /// One more (`up`) or one fewer write in flight at input `i`, accounting the time it
    /// spent at the previous count.
    fn inflight_step(&mut self, i: usize, up: bool) {
        let inp = &mut self.inputs[i];
        self.inflight_ns[inp.inflight as usize] += self.now - inp.inflight_since;
        inp.inflight_since = self.now;
        if up {
            inp.inflight += 1;
        } else {
            inp.inflight -= 1;
        }
    }

    fn ack(&mut self, i: usize, ts: u64) {
        self.inflight_step(i, false);
        let inp = &mut self.inputs[i];
        if self.cfg.mode == Mode::Dfs {
            let local = inp.clock.local(self.now);
            inp.ie.on_ack(ts, local);
            while let Some(r) = self.inputs[i].ie.take_report() {
                let cl = self.inputs[i].clock;
                let a = r.actual;
                let start_true = cl.true_of(a.start);
                let end_true = cl.true_of(a.start + a.duration);
                let acc = self.interval_acc(a.index);
                acc.actual.push(end_true - start_true);
                acc.starts.push(start_true);
                if let Some(pd) = a.proposed_duration {
                    acc.proposed.push(pd);
                }
                for r_idx in 0..self.ddes.len() {
                    if self.ddes[r_idx].is_some() {
                        let d = self.msg_delay();
                        self.push(self.now + d, Ev::Report(r_idx as u32, Box::new(r)));
                    }
                }
            }
        }
        self.poll(i);
    }

    fn report(&mut self, r: usize, rep: &Report) {
        let local = self.computes[r].clock.local(self.now);
        let Some(d) = self.ddes[r].as_mut() else {
            return;
        };
        let out = d.on_report(rep, local);
        for (i, p) in out {
            let d = self.msg_delay();
            self.push(self.now + d, Ev::Proposal(i as u32, p));
        }
    }

    /// Counts, after the warm-up, how many inputs are writing into each compute node.
    fn sample_senders(&mut self) {
        if self.warm_time.is_none() {
            return;
        }
        let ni = self.inputs.len();
        for c in 0..self.computes.len() {
            match self.net.senders_into(ni + c, &mut self.sender_scratch) {
                Some(k) => self.senders[k] += 1,
                None => return,
            }
        }
    }

    fn sample(&mut self) {
        if self.fles.is_some() {
            return; // the builders' buffers are the manager's counts, not rings per input
        }
        let slots = self.cfg.topology.slots_per_input as usize;
        let mut counts = vec![0u64; slots + 1];
        let mut sum = 0u64;
        let mut n = 0u64;
        for c in &self.computes {
            self.scratch.clear();
            for i in 0..self.inputs.len() {
                let f = c.node.fill(i).min(slots as u32);
                self.scratch.push(f);
                counts[f as usize] += 1;
                sum += f as u64;
                n += 1;
            }
            self.scratch.sort_unstable_by(|a, b| b.cmp(a));
            for (rank, &f) in self.scratch.iter().enumerate() {
                self.rank_counts[rank][f as usize] += 1;
            }
        }
        let scale = 100.0 / slots as f64;
        self.fill.push(FillSample {
            t_ms: self.now as f64 / 1e6,
            fill: FiveNum::from_counts(&counts, scale),
            mean: sum as f64 * scale / n.max(1) as f64,
        });
    }
}

#[cfg(test)]
mod tests;

//! The FLESnet policy in the event loop: the detector produces time-slices at a fixed rate,
//! the time-slice manager ([`crate::tsm::TsManager`]) assigns each to a builder with room or
//! discards it, the inputs send their contributions to the assigned builder in assignment
//! order, and a builder that has every contribution builds, releases and tells the
//! manager (each message takes the model's latency).

use super::{Ev, Sim};
use crate::sim::config::SimConfig;
use crate::tsm::TsManager;
use std::collections::{HashMap, VecDeque};

/// A time-slice being built.
struct Building {
    builder: usize,
    arrived: usize,
    first_local: i64,
}

pub(super) struct Fles {
    pub(super) tsm: TsManager,
    /// Per input: assigned (time-slice, builder) not yet sent, in assignment order.
    pub(super) queues: Vec<VecDeque<(u64, u32)>>,
    building: HashMap<u64, Building>,
    produced: u64,
    built: u64,
    period_ns: f64,
}

impl Fles {
    pub(super) fn new(cfg: &SimConfig) -> Fles {
        let t = cfg.topology;
        let ts_bytes = t.mts_bytes * t.inputs as u64;
        // a builder has the memory a DFS compute node has: `slots` contributions per input
        let buffer = ts_bytes * u64::from(t.slots_per_input);
        Fles {
            tsm: TsManager::new(t.computes, buffer, ts_bytes, cfg.tsm.max_in_flight),
            queues: vec![VecDeque::new(); t.inputs],
            building: HashMap::new(),
            produced: 0,
            built: 0,
            // one input's contribution takes mts / bandwidth at nominal speed
            period_ns: t.mts_bytes as f64 / (cfg.net.inj_gbs * cfg.tsm.offered_load),
        }
    }

    /// The builder time-slice `ts` was assigned to.
    pub(super) fn builder_of(&self, ts: u64) -> usize {
        self.building[&ts].builder
    }

    /// Time-slices built or discarded.
    pub(super) fn settled(&self) -> u64 {
        self.built + self.tsm.discarded()
    }

    pub(super) fn unfinished(&self, total: u64) -> bool {
        self.settled() < total
    }

    pub(super) fn built(&self) -> u64 {
        self.built
    }
}

impl Sim<'_> {
    pub(super) fn fles_mut(&mut self) -> &mut Fles {
        self.fles.as_mut().expect("FLESnet mode")
    }

    pub(super) fn produce(&mut self) {
        let total = self.cfg.total_ts();
        let f = self.fles_mut();
        let ts = f.produced;
        f.produced += 1;
        let next = (f.produced as f64 * f.period_ns).round() as i64;
        if let Some(b) = f.tsm.assign() {
            f.building.insert(
                ts,
                Building {
                    builder: b,
                    arrived: 0,
                    first_local: 0,
                },
            );
            for i in 0..self.inputs.len() {
                let d = self.msg_delay();
                self.push(self.now + d, Ev::Assigned(i as u32, ts, b as u32));
            }
        }
        if ts + 1 < total {
            self.push(next, Ev::Produce);
        }
    }

    pub(super) fn assigned(&mut self, i: usize, ts: u64, b: usize) {
        self.fles_mut().queues[i].push_back((ts, b as u32));
        self.poll(i);
    }

    pub(super) fn fles_arrive(&mut self, i: usize, ts: u64, b: usize) {
        let local = self.computes[b].clock.local(self.now);
        let ni = self.inputs.len();
        self.count_delivery();
        let f = self.fles_mut();
        let e = f.building.get_mut(&ts).expect("assigned");
        if e.arrived == 0 {
            e.first_local = local;
        }
        e.arrived += 1;
        if e.arrived == ni {
            let d = (local - e.first_local).max(0) as u64;
            f.building.remove(&ts);
            f.built += 1;
            self.record_completion(ts, d);
            let p = self.rng.exp(self.cfg.net.processing_ns).round() as i64;
            self.push(self.now + p, Ev::FlesRelease(b as u32));
        }
        let d = self.msg_delay();
        self.push(self.now + d, Ev::Ack(i as u32, ts));
    }

    pub(super) fn fles_release(&mut self, b: u32) {
        if let Some(end) = self.stalled(self.inputs.len() + b as usize) {
            self.push(end, Ev::FlesRelease(b));
            return;
        }
        let d = self.msg_delay();
        self.push(self.now + d, Ev::TsmFree(b));
    }
}

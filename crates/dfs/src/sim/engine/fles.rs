//! The FLESnet policy in the event loop: the detector produces time-slices at a fixed rate,
//! the time-slice manager ([`crate::tsm::TsManager`]) assigns each to a builder with room or
//! discards it, the inputs send their contributions to the assigned builder in assignment
//! order, and a builder that has every contribution builds, releases and tells the
//! manager (each message takes the model's latency).

use super::{Ev, Sim};
use crate::sim::builders::{Building, Fles};

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

    pub(super) fn fles_arrive(&mut self, ts: u64, b: usize) {
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

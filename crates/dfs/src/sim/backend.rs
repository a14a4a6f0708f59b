//! The network the engine drives: the fluid [`Network`] or the packet-level [`Fabric`],
//! behind the fluid model's calls (start, completion events to (re)schedule, finish, port
//! bandwidth changes). The fabric keeps its own event queue; it asks the engine for one
//! wake-up at its next event time, as a completion event with a reserved id.

use super::fabric::{Completion, Fabric};
use super::net::{Network, Reschedule};
use std::collections::VecDeque;

/// The reserved flow id of the fabric's wake-up events.
const FABRIC_WAKE: u32 = u32::MAX;

pub(crate) enum Net {
    Fluid {
        net: Network,
        done: Option<(usize, u64)>,
    },
    Fabric {
        fab: Box<Fabric>,
        /// Version of the current wake-up event and its time.
        wake: u32,
        armed: Option<i64>,
        done: VecDeque<(usize, u64)>,
        scratch: Vec<Completion>,
        latency_ns: i64,
        /// Fabric node of every engine node.
        place: Vec<usize>,
    },
}

impl Net {
    pub(crate) fn fluid(net: Network) -> Net {
        Net::Fluid { net, done: None }
    }

    /// `latency_ns`: the engine's one-way latency, which the fabric's delivery already
    /// contains (see [`Net::latency_included`]); `place`: the fabric node of every engine
    /// node.
    pub(crate) fn fabric(fab: Fabric, latency_ns: i64, place: Vec<usize>) -> Net {
        Net::Fabric {
            fab: Box::new(fab),
            wake: 0,
            armed: None,
            done: VecDeque::new(),
            scratch: Vec::new(),
            latency_ns,
            place,
        }
    }

    fn arm(&mut self, out: &mut Vec<Reschedule>) {
        if let Net::Fabric {
            fab, wake, armed, ..
        } = self
        {
            if let Some(t) = fab.next_time().filter(|&t| Some(t) != *armed) {
                *wake = wake.wrapping_add(1);
                *armed = Some(t);
                out.push((FABRIC_WAKE, t, *wake));
            }
        }
    }

    pub(crate) fn start(
        &mut self,
        src: usize,
        dst: usize,
        bytes: u64,
        tag: (usize, u64),
        now: i64,
        out: &mut Vec<Reschedule>,
    ) {
        match self {
            Net::Fluid { net, .. } => {
                net.start(src, dst, bytes, tag, now, out);
            }
            Net::Fabric { fab, place, .. } => fab.start(place[src], place[dst], bytes, tag, now),
        }
        self.arm(out);
    }

    pub(crate) fn is_current(&self, id: u32, version: u32) -> bool {
        match self {
            Net::Fluid { net, .. } => id != FABRIC_WAKE && net.is_current(id, version),
            Net::Fabric { wake, .. } => id == FABRIC_WAKE && version == *wake,
        }
    }

    /// Handles a current completion event: ends the fluid flow, or advances the fabric to
    /// `now`; the completed transfers come out of [`Net::take_done`].
    pub(crate) fn finish(&mut self, id: u32, now: i64, out: &mut Vec<Reschedule>) {
        match self {
            Net::Fluid { net, done } => *done = Some(net.finish(id, now, out)),
            Net::Fabric {
                fab,
                armed,
                done,
                scratch,
                ..
            } => {
                *armed = None;
                fab.advance(now, scratch);
                done.extend(scratch.drain(..).map(|c| c.tag));
            }
        }
        self.arm(out);
    }

    pub(crate) fn take_done(&mut self) -> Option<(usize, u64)> {
        match self {
            Net::Fluid { done, .. } => done.take(),
            Net::Fabric { done, .. } => done.pop_front(),
        }
    }

    /// The part of the engine's message latency that a completed transfer has already
    /// spent in the network (the fabric delivers the last packet through its links).
    pub(crate) fn latency_included(&self) -> i64 {
        match self {
            Net::Fluid { .. } => 0,
            Net::Fabric { latency_ns, .. } => *latency_ns,
        }
    }

    pub(crate) fn set_scale(&mut self, scale: f64, now: i64, out: &mut Vec<Reschedule>) {
        match self {
            Net::Fluid { net, .. } => net.set_scale(scale, now, out),
            Net::Fabric { fab, .. } => fab.set_scale(scale),
        }
    }

    pub(crate) fn set_inj(&mut self, node: usize, bw: f64, now: i64, out: &mut Vec<Reschedule>) {
        match self {
            Net::Fluid { net, .. } => net.set_inj(node, bw, now, out),
            Net::Fabric { fab, place, .. } => fab.set_inj(place[node], bw),
        }
    }

    pub(crate) fn set_ej(&mut self, node: usize, bw: f64, now: i64, out: &mut Vec<Reschedule>) {
        match self {
            Net::Fluid { net, .. } => net.set_ej(node, bw, now, out),
            Net::Fabric { fab, place, .. } => fab.set_ej(place[node], bw),
        }
    }

    /// Distinct senders with a transfer into node `dst` now (None: the fabric, whose
    /// transfers are packets in its queues).
    pub(crate) fn senders_into(&self, dst: usize, scratch: &mut Vec<usize>) -> Option<usize> {
        match self {
            Net::Fluid { net, .. } => Some(net.senders_into(dst, scratch)),
            Net::Fabric { .. } => None,
        }
    }

    /// Events the network processed on its own (the fabric's), beside the engine's.
    pub(crate) fn internal_events(&self) -> u64 {
        match self {
            Net::Fluid { .. } => 0,
            Net::Fabric { fab, .. } => fab.events(),
        }
    }
}

impl Net {
    /// The network a validated configuration asks for. In the fabric, inputs and compute
    /// nodes are interleaved (input 0, compute 0, input 1, …; the rest in order), so every
    /// router holds both kinds, as a rank-ordered job of alternating roles would.
    pub(crate) fn for_config(cfg: &super::config::SimConfig, inj: Vec<f64>, ej: Vec<f64>) -> Net {
        let Some(p) = cfg.fabric else {
            return Net::fluid(Network::new(inj, ej));
        };
        let place = interleaved(cfg.topology.inputs, cfg.topology.computes);
        let mut finj = vec![0.0; inj.len()];
        let mut fej = vec![0.0; ej.len()];
        for (n, &f) in place.iter().enumerate() {
            finj[f] = inj[n];
            fej[f] = ej[n];
        }
        let fab = Fabric::new(p, finj, fej, cfg.seed).expect("validated configuration");
        Net::fabric(fab, cfg.net.latency_ns, place)
    }
}

/// The fabric node of every engine node (inputs 0..ni, then computes): roles alternate.
fn interleaved(ni: usize, nc: usize) -> Vec<usize> {
    let mut order: Vec<usize> = Vec::with_capacity(ni + nc);
    for k in 0..ni.max(nc) {
        if k < ni {
            order.push(k);
        }
        if k < nc {
            order.push(ni + k);
        }
    }
    let mut place = vec![0; ni + nc];
    for (f, &n) in order.iter().enumerate() {
        place[n] = f;
    }
    place
}

#[cfg(test)]
mod tests {
    #[test]
    fn roles_alternate_on_the_fabric() {
        assert_eq!(super::interleaved(2, 2), vec![0, 2, 1, 3]);
        assert_eq!(super::interleaved(3, 1), vec![0, 2, 3, 1]);
    }
}

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
    },
}

impl Net {
    pub(crate) fn fluid(net: Network) -> Net {
        Net::Fluid { net, done: None }
    }

    /// `latency_ns`: the engine's one-way latency, which the fabric's delivery already
    /// contains (see [`Net::latency_included`]).
    pub(crate) fn fabric(fab: Fabric, latency_ns: i64) -> Net {
        Net::Fabric {
            fab: Box::new(fab),
            wake: 0,
            armed: None,
            done: VecDeque::new(),
            scratch: Vec::new(),
            latency_ns,
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
            Net::Fabric { fab, .. } => fab.start(src, dst, bytes, tag, now),
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
            Net::Fabric { fab, .. } => fab.set_inj(node, bw),
        }
    }

    pub(crate) fn set_ej(&mut self, node: usize, bw: f64, now: i64, out: &mut Vec<Reschedule>) {
        match self {
            Net::Fluid { net, .. } => net.set_ej(node, bw, now, out),
            Net::Fabric { fab, .. } => fab.set_ej(node, bw),
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
    /// The network a validated configuration asks for.
    pub(crate) fn for_config(cfg: &super::SimConfig, inj: Vec<f64>, ej: Vec<f64>) -> Net {
        match cfg.fabric {
            None => Net::fluid(Network::new(inj, ej)),
            Some(p) => Net::fabric(
                Fabric::new(p, inj, ej, cfg.seed).expect("validated configuration"),
                cfg.net.latency_ns,
            ),
        }
    }
}

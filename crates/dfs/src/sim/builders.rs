//! The FLESnet policy's state in the simulator: the time-slice manager, the inputs'
//! assignment queues and the time-slices being built (the event handling is in the
//! engine's `fles` module).

use crate::sim::config::SimConfig;
use crate::tsm::TsManager;
use std::collections::{HashMap, VecDeque};

/// A time-slice being built.
pub(crate) struct Building {
    pub(crate) builder: usize,
    pub(crate) arrived: usize,
    pub(crate) first_local: i64,
}

pub(crate) struct Fles {
    pub(crate) tsm: TsManager,
    /// Per input: assigned (time-slice, builder) not yet sent, in assignment order.
    pub(crate) queues: Vec<VecDeque<(u64, u32)>>,
    pub(crate) building: HashMap<u64, Building>,
    pub(crate) produced: u64,
    pub(crate) built: u64,
    pub(crate) period_ns: f64,
}

impl Fles {
    pub(crate) fn new(cfg: &SimConfig) -> Fles {
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
    pub(crate) fn builder_of(&self, ts: u64) -> usize {
        self.building[&ts].builder
    }

    /// Time-slices built or discarded.
    pub(crate) fn settled(&self) -> u64 {
        self.built + self.tsm.discarded()
    }

    pub(crate) fn unfinished(&self, total: u64) -> bool {
        self.settled() < total
    }

    pub(crate) fn built(&self) -> u64 {
        self.built
    }
}

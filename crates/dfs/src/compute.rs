//! A compute node: one ring buffer per input connection, completion detection and credits.
//!
//! Each input owns `slots` ring slots at every compute node. The contribution of input `i`
//! to the time-slice with local index `k` (see [`crate::model::local_index`]) lands in slot
//! `k mod slots` of ring `i`. The node grants credits by publishing its *ack pointer*: the
//! first local index it has not released yet. An input may send local index `k` only while
//! `k < ack + slots` (FLESnet's `check_for_buffer_space`; the paper's tickets). A time-slice
//! is complete when the contributions of all inputs have arrived; its *completion duration*
//! is the time between its first and its last arrival (the paper's Fig. 6). Released
//! time-slices free their slots in order (ring semantics), which advances the ack pointer.

use crate::model;
use crate::Time;

/// A contribution as it reaches the compute node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// Sending input.
    pub input: usize,
    /// Time-slice number.
    pub ts: u64,
    /// Checksum the contribution carries in its header.
    pub carried_checksum: u64,
    /// Checksum the receiver computed over what it received.
    pub computed_checksum: u64,
}

/// A time-slice whose contributions have all arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// Time-slice number.
    pub ts: u64,
    /// Local index at this compute node.
    pub local: u64,
    /// Arrival time of the first contribution (this node's clock).
    pub first: Time,
    /// Arrival time of the last contribution.
    pub last: Time,
}

impl Completion {
    /// Completion duration: last minus first arrival.
    pub fn duration(&self) -> i64 {
        self.last - self.first
    }
}

/// What the node made of an arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrivalOutcome {
    /// Stored; the time-slice still misses contributions.
    Stored,
    /// Stored and the time-slice is now complete.
    Completed(Completion),
    /// A second copy of a contribution already received (or already released): dropped.
    Duplicate,
    /// Beyond the input's credits (`k ≥ ack + slots`): the sender overran the ring; dropped.
    Overrun,
    /// The time-slice does not belong to this compute node, or the input index is invalid.
    Misrouted,
}

counters! {
    /// Counters a compute node keeps; every dropped or corrupt contribution is counted here.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
    pub struct ComputeCounters {
        /// Contributions stored.
        pub stored: u64,
        /// Contributions whose carried and computed checksums differ (still stored).
        pub checksum_failures: u64,
        /// Duplicates dropped.
        pub duplicates: u64,
        /// Overruns dropped.
        pub overruns: u64,
        /// Misrouted contributions dropped.
        pub misrouted: u64,
        /// Time-slices completed.
        pub completed: u64,
        /// Time-slices released (slots freed).
        pub released: u64,
    }
}

impl ComputeCounters {
    /// The counters both runtimes publish in a result file's `counters`, under their
    /// names there.
    pub fn result_counters(&self) -> [(&'static str, u64); 6] {
        [
            ("contributions_stored", self.stored),
            ("checksum_failures", self.checksum_failures),
            ("duplicates", self.duplicates),
            ("overruns", self.overruns),
            ("misrouted", self.misrouted),
            ("completed", self.completed),
        ]
    }
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    local: u64,
    count: u32,
    first: Time,
    last: Time,
    complete: bool,
    processed: bool,
}

const EMPTY: Entry = Entry {
    local: u64::MAX,
    count: 0,
    first: 0,
    last: 0,
    complete: false,
    processed: false,
};

/// The receive side of one compute node.
#[derive(Clone, Debug)]
pub struct ComputeNode {
    index: usize,
    inputs: usize,
    computes: usize,
    slots: u64,
    ack: u64,
    entries: Vec<Entry>,
    got: Vec<bool>,
    in_ring: Vec<u32>,
    counters: ComputeCounters,
}

impl ComputeNode {
    /// Compute node `index` of `computes`, with `inputs` inputs and `slots` slots per input.
    pub fn new(index: usize, inputs: usize, computes: usize, slots: u32) -> ComputeNode {
        let slots = slots.max(1) as u64;
        ComputeNode {
            index,
            inputs,
            computes,
            slots,
            ack: 0,
            entries: vec![EMPTY; slots as usize],
            got: vec![false; slots as usize * inputs],
            in_ring: vec![0; inputs],
            counters: ComputeCounters::default(),
        }
    }

    /// This node's index.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The ack pointer: the first local index not yet released. Input `i` may send local
    /// index `k` while `k < ack_pointer() + slots`.
    pub fn ack_pointer(&self) -> u64 {
        self.ack
    }

    /// Counters so far.
    pub fn counters(&self) -> ComputeCounters {
        self.counters
    }

    /// Slots in use in input `input`'s ring (received, not yet released).
    pub fn fill(&self, input: usize) -> u32 {
        self.in_ring[input]
    }

    /// Slots per input ring.
    pub fn slots(&self) -> u64 {
        self.slots
    }

    /// Handles the arrival of a contribution at local time `now`.
    pub fn on_arrival(&mut self, a: Arrival, now: Time) -> ArrivalOutcome {
        if a.input >= self.inputs || model::compute_of(a.ts, self.computes) != self.index {
            self.counters.misrouted += 1;
            return ArrivalOutcome::Misrouted;
        }
        let k = model::local_index(a.ts, self.computes);
        if k < self.ack {
            self.counters.duplicates += 1;
            return ArrivalOutcome::Duplicate;
        }
        if k >= self.ack + self.slots {
            self.counters.overruns += 1;
            return ArrivalOutcome::Overrun;
        }
        let slot = (k % self.slots) as usize;
        let e = &mut self.entries[slot];
        if e.local != k {
            // the slot's previous occupant was released (k - slots < ack), so it is free
            *e = Entry {
                local: k,
                first: now,
                last: now,
                ..EMPTY
            };
            self.got[slot * self.inputs..(slot + 1) * self.inputs].fill(false);
        }
        let g = &mut self.got[slot * self.inputs + a.input];
        if *g {
            self.counters.duplicates += 1;
            return ArrivalOutcome::Duplicate;
        }
        *g = true;
        if a.carried_checksum != a.computed_checksum {
            self.counters.checksum_failures += 1;
        }
        self.counters.stored += 1;
        self.in_ring[a.input] += 1;
        e.count += 1;
        e.first = e.first.min(now);
        e.last = e.last.max(now);
        if e.count as usize == self.inputs {
            e.complete = true;
            self.counters.completed += 1;
            ArrivalOutcome::Completed(Completion {
                ts: a.ts,
                local: k,
                first: e.first,
                last: e.last,
            })
        } else {
            ArrivalOutcome::Stored
        }
    }

    /// Marks the completed time-slice with local index `local` as processed and frees
    /// every slot that can now be freed in order. Returns the new ack pointer when it
    /// moved (the runtime then sends credits to every input).
    pub fn release(&mut self, local: u64) -> Option<u64> {
        if local < self.ack || local >= self.ack + self.slots {
            return None;
        }
        let slot = (local % self.slots) as usize;
        let e = &mut self.entries[slot];
        if e.local != local || !e.complete {
            return None;
        }
        e.processed = true;
        let before = self.ack;
        loop {
            let slot = (self.ack % self.slots) as usize;
            let e = self.entries[slot];
            if e.local == self.ack && e.processed {
                for f in &mut self.in_ring {
                    *f -= 1;
                }
                self.ack += 1;
                self.counters.released += 1;
            } else {
                break;
            }
        }
        (self.ack != before).then_some(self.ack)
    }

    /// Contributions received for time-slices that are not complete yet (a lost
    /// contribution shows up here at the end of a run).
    pub fn incomplete(&self) -> u64 {
        self.entries
            .iter()
            .filter(|e| e.local != u64::MAX && e.local >= self.ack && !e.complete)
            .count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arr(input: usize, ts: u64) -> Arrival {
        Arrival {
            input,
            ts,
            carried_checksum: 1,
            computed_checksum: 1,
        }
    }

    #[test]
    fn completes_when_all_inputs_arrived_and_measures_spread() {
        // compute node 1 of 2, 3 inputs, 2 slots
        let mut cn = ComputeNode::new(1, 3, 2, 2);
        assert_eq!(cn.on_arrival(arr(0, 1), 100), ArrivalOutcome::Stored);
        assert_eq!(cn.on_arrival(arr(2, 1), 150), ArrivalOutcome::Stored);
        let out = cn.on_arrival(arr(1, 1), 400);
        let ArrivalOutcome::Completed(c) = out else {
            panic!("expected completion, got {out:?}")
        };
        assert_eq!(
            (c.ts, c.local, c.first, c.last, c.duration()),
            (1, 0, 100, 400, 300)
        );
        assert_eq!(cn.fill(0), 1);
        assert_eq!(cn.release(0), Some(1));
        assert_eq!(cn.fill(0), 0);
        assert_eq!(cn.counters().completed, 1);
    }

    #[test]
    fn duplicates_overruns_misroutes_and_checksums_are_counted() {
        let mut cn = ComputeNode::new(0, 2, 2, 2);
        assert_eq!(cn.on_arrival(arr(0, 0), 0), ArrivalOutcome::Stored);
        assert_eq!(cn.on_arrival(arr(0, 0), 1), ArrivalOutcome::Duplicate);
        assert_eq!(cn.on_arrival(arr(0, 1), 1), ArrivalOutcome::Misrouted);
        // slots 2: local 0 and 1 (ts 0, 2) fit, local 2 (ts 4) overruns
        assert_eq!(cn.on_arrival(arr(0, 2), 2), ArrivalOutcome::Stored);
        assert_eq!(cn.on_arrival(arr(0, 4), 3), ArrivalOutcome::Overrun);
        let bad = Arrival {
            computed_checksum: 2,
            ..arr(1, 0)
        };
        assert!(matches!(
            cn.on_arrival(bad, 4),
            ArrivalOutcome::Completed(_)
        ));
        let c = cn.counters();
        assert_eq!(
            (
                c.stored,
                c.duplicates,
                c.misrouted,
                c.overruns,
                c.checksum_failures
            ),
            (3, 1, 1, 1, 1)
        );
        assert_eq!(cn.incomplete(), 1); // ts 2 waits for input 1
    }

    #[test]
    fn releases_in_order_only() {
        let mut cn = ComputeNode::new(0, 1, 1, 4);
        for ts in 0..3 {
            cn.on_arrival(arr(0, ts), ts as i64);
        }
        // releasing local 1 first does not move the ack pointer past the unreleased 0
        assert_eq!(cn.release(1), None);
        assert_eq!(cn.ack_pointer(), 0);
        assert_eq!(cn.release(0), Some(2));
        assert_eq!(cn.release(2), Some(3));
        // a released slot is reused for local index 4 (slot 0) and late copies of 0 are duplicates
        assert_eq!(cn.on_arrival(arr(0, 0), 9), ArrivalOutcome::Duplicate);
        assert!(matches!(
            cn.on_arrival(arr(0, 4), 10),
            ArrivalOutcome::Completed(_)
        ));
    }
}

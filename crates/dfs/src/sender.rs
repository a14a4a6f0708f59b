//! The sender side shared by both modes: credits an input holds towards each compute node,
//! and the best-effort sender (FLESnet without DFS).
//!
//! Best effort sends its contributions in one fixed sequence — offset-based round-robin,
//! round after round — whenever the credits of the next contribution's compute node allow.
//! Like FLESnet's `fles_libfabric_original` it advances only when the current contribution
//! is sent, so one compute node without credits stalls the whole input (head-of-line
//! blocking), and it has no notion of time.

use crate::model;

/// Credits of one input towards every compute node: the last ack pointer each compute node
/// published and the next local index this input will send there.
#[derive(Clone, Debug)]
pub struct Credits {
    computes: usize,
    slots: u64,
    ack: Vec<u64>,
}

impl Credits {
    /// No time-slice released yet anywhere; `slots` per compute node.
    pub fn new(computes: usize, slots: u32) -> Credits {
        Credits {
            computes,
            slots: slots.max(1) as u64,
            ack: vec![0; computes],
        }
    }

    /// Records compute node `cn`'s ack pointer (stale, reordered updates are ignored).
    pub fn on_ack_pointer(&mut self, cn: usize, ack: u64) {
        if ack > self.ack[cn] {
            self.ack[cn] = ack;
        }
    }

    /// Whether time-slice `ts` may be written into its compute node's ring now.
    pub fn allows(&self, ts: u64) -> bool {
        let cn = model::compute_of(ts, self.computes);
        model::local_index(ts, self.computes) < self.ack[cn] + self.slots
    }

    /// Compute node `cn`'s last published ack pointer.
    pub fn ack_pointer(&self, cn: usize) -> u64 {
        self.ack[cn]
    }
}

/// The best-effort sender of one input.
#[derive(Clone, Debug)]
pub struct BestEffortSender {
    input: usize,
    computes: usize,
    total_ts: u64,
    next_n: u64,
}

impl BestEffortSender {
    /// Input `input` sending time-slices `0..total_ts` (`total_ts` a multiple of C) to
    /// `computes` compute nodes.
    pub fn new(input: usize, computes: usize, total_ts: u64) -> BestEffortSender {
        BestEffortSender {
            input,
            computes,
            total_ts,
            next_n: 0,
        }
    }

    /// The next time-slice in sequence, if any is left.
    pub fn peek(&self) -> Option<u64> {
        (self.next_n < self.total_ts)
            .then(|| model::nth_in_offset_order(self.input, 0, self.next_n, self.computes))
    }

    /// The next time-slice to send now, if its compute node has granted credit for it.
    /// `None` when finished or blocked (head-of-line: nothing after it is tried).
    pub fn next(&self, credits: &Credits) -> Option<u64> {
        self.peek().filter(|&ts| credits.allows(ts))
    }

    /// Marks the contribution returned by [`Self::next`] as sent.
    pub fn sent(&mut self) {
        self.next_n += 1;
    }

    /// Whether every contribution has been sent.
    pub fn finished(&self) -> bool {
        self.next_n >= self.total_ts
    }

    /// Contributions sent so far.
    pub fn sent_count(&self) -> u64 {
        self.next_n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credits_bound_each_ring() {
        let mut c = Credits::new(2, 2);
        // node 0 gets ts 0 (k0), 2 (k1); ts 4 (k2) needs the ack pointer at 1
        assert!(c.allows(0) && c.allows(2) && !c.allows(4));
        c.on_ack_pointer(0, 1);
        assert!(c.allows(4));
        c.on_ack_pointer(0, 0); // stale update ignored
        assert!(c.allows(4));
        assert!(c.allows(3) && !c.allows(5));
    }

    #[test]
    fn best_effort_blocks_head_of_line() {
        // input 1, 2 compute nodes, 1 slot: sequence 1, 0, 3, 2, ...
        let credits = Credits::new(2, 1);
        let mut s = BestEffortSender::new(1, 2, 4);
        assert_eq!(s.next(&credits), Some(1));
        s.sent();
        assert_eq!(s.next(&credits), Some(0));
        s.sent();
        // ts 3 is local index 1 at node 1: blocked, and ts 2 (node 0) is not tried
        assert_eq!(s.peek(), Some(3));
        assert_eq!(s.next(&credits), None);
        let mut credits = credits;
        credits.on_ack_pointer(1, 1);
        assert_eq!(s.next(&credits), Some(3));
        s.sent();
        assert!(!s.finished());
        assert_eq!(s.next(&credits), None); // ts 2 still blocked on node 0
        credits.on_ack_pointer(0, 1);
        assert_eq!(s.next(&credits), Some(2));
        s.sent();
        assert!(s.finished());
        assert_eq!(s.next(&credits), None);
    }
}

//! FLESnet today (2026): a central time-slice manager. DFS was removed from FLESnet for it.
//! Each time-slice, when the detector has produced it, goes to the next builder in
//! round-robin order that has room — fewer than `max_in_flight` time-slices pending and
//! enough free bytes for it — and is **discarded** when no builder has room ("avoid
//! overload by admission" rather than DFS's "by synchronised pacing"). A builder frees
//! its room when it has built and released a time-slice (FLESnet's `bytes_free` event).
//!
//! Pure: no clock, no I/O; the simulator drives it ([`crate::sim`]).

use serde::{Deserialize, Serialize};

/// Parameters of the FLESnet policy.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TsmParams {
    /// Rate at which the detector produces time-slices, as a fraction of what the inputs'
    /// nominal injection bandwidth can carry (1.0: one time-slice per `mts / bandwidth`).
    pub offered_load: f64,
    /// Time-slices a builder may have pending (assigned, not yet released).
    pub max_in_flight: u32,
}

impl Default for TsmParams {
    /// 80 % of nominal (DFS's best result in the paper) and 16 pending time-slices per
    /// builder, the same buffer a DFS compute node has (16 slots per input).
    fn default() -> Self {
        TsmParams {
            offered_load: 0.8,
            max_in_flight: 16,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Builder {
    pending: u32,
    free_bytes: u64,
}

/// The manager's view of the builders.
#[derive(Clone, Debug)]
pub struct TsManager {
    builders: Vec<Builder>,
    next: usize,
    max_in_flight: u32,
    ts_bytes: u64,
    assigned: u64,
    discarded: u64,
}

impl TsManager {
    /// `builders` builders, each with `buffer_bytes` of memory, for time-slices of
    /// `ts_bytes` bytes.
    pub fn new(builders: usize, buffer_bytes: u64, ts_bytes: u64, max_in_flight: u32) -> Self {
        TsManager {
            builders: vec![
                Builder {
                    pending: 0,
                    free_bytes: buffer_bytes,
                };
                builders
            ],
            next: 0,
            max_in_flight,
            ts_bytes,
            assigned: 0,
            discarded: 0,
        }
    }

    /// A new time-slice: the builder it goes to, or `None` when it is discarded.
    pub fn assign(&mut self) -> Option<usize> {
        let n = self.builders.len();
        for k in 0..n {
            let b = (self.next + k) % n;
            let room = &mut self.builders[b];
            if room.pending < self.max_in_flight && room.free_bytes >= self.ts_bytes {
                room.pending += 1;
                room.free_bytes -= self.ts_bytes;
                self.next = (b + 1) % n;
                self.assigned += 1;
                return Some(b);
            }
        }
        self.discarded += 1;
        None
    }

    /// Builder `b` released one time-slice.
    pub fn release(&mut self, b: usize) {
        let room = &mut self.builders[b];
        assert!(room.pending > 0, "release without a pending time-slice");
        room.pending -= 1;
        room.free_bytes += self.ts_bytes;
    }

    /// Time-slices assigned so far.
    pub fn assigned(&self) -> u64 {
        self.assigned
    }

    /// Time-slices discarded so far.
    pub fn discarded(&self) -> u64 {
        self.discarded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_over_builders_with_room_then_discard() {
        // 3 builders, room for 2 pending each (by count), memory for 3 time-slices
        let mut m = TsManager::new(3, 300, 100, 2);
        let got: Vec<_> = (0..6).map(|_| m.assign()).collect();
        assert_eq!(got, [Some(0), Some(1), Some(2), Some(0), Some(1), Some(2)]);
        // everyone is full by count: discarded
        assert_eq!(m.assign(), None);
        assert_eq!(m.discarded(), 1);
        // builder 1 frees room: the next goes there, skipping the full ones
        m.release(1);
        assert_eq!(m.assign(), Some(1));
        assert_eq!(m.assign(), None);
        assert_eq!((m.assigned(), m.discarded()), (7, 2));
    }

    #[test]
    fn free_bytes_limit_room_too() {
        // room by count (4) but memory for one time-slice only
        let mut m = TsManager::new(2, 150, 100, 4);
        assert_eq!(m.assign(), Some(0));
        assert_eq!(m.assign(), Some(1));
        assert_eq!(m.assign(), None);
        m.release(0);
        assert_eq!(m.assign(), Some(0));
    }
}

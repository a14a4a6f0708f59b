//! What the ranks of an MPI run share: message tags and their encoding, receiving and
//! sending, the per-rank statistics sent to rank 0, the node-local clock, idling.

use crate::compute::ComputeCounters;
use crate::dde::DdeCounters;
use crate::ie::{ActualMeta, IeCounters};
use crate::Time;
use mpi::traits::*;
use serde::{Deserialize, Serialize};

pub(super) const TAG_WRITTEN: i32 = 1;
pub(super) const TAG_ACK: i32 = 2;
pub(super) const TAG_CREDIT: i32 = 3;
pub(super) const TAG_REPORT: i32 = 4;
pub(super) const TAG_PROPOSAL: i32 = 5;
pub(super) const TAG_FINISHED: i32 = 6;
pub(super) const TAG_STATS: i32 = 7;

pub(super) fn u64s(b: &[u8]) -> impl Iterator<Item = u64> + '_ {
    b.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
}

pub(super) fn enc(v: &[u64], out: &mut Vec<u8>) {
    out.clear();
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

/// Statistics each rank sends to rank 0 at the end.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(super) struct RankStats {
    pub(super) rank: usize,
    /// input: contributions sent
    pub(super) sent: u64,
    /// input: first send / last ack (shared monotonic clock, ns)
    pub(super) start_ns: u64,
    pub(super) end_ns: u64,
    pub(super) ie: IeCounters,
    pub(super) reports: Vec<ActualMeta>,
    /// local clock minus monotonic at start (to convert report times)
    pub(super) clock_offset_ns: i64,
    pub(super) clock_drift: f64,
    pub(super) compute: ComputeCounters,
    pub(super) incomplete: u64,
    pub(super) completion_b64: Option<String>,
    pub(super) completion_all_b64: Option<String>,
    pub(super) first_arrival_ns: u64,
    pub(super) last_arrival_ns: u64,
    pub(super) fill: Vec<(u64, Vec<u32>)>,
    pub(super) dde: Option<DdeCounters>,
    pub(super) dde_killed: bool,
    pub(super) speedups: Vec<u64>,
}

/// A node-local clock: monotonic time plus injected offset and drift.
#[derive(Clone, Copy, Debug)]
pub(super) struct LocalClock {
    pub(super) t0: u64,
    pub(super) offset: i64,
    pub(super) drift: f64,
}

impl LocalClock {
    pub(super) fn now(&self) -> Time {
        let m = latlab_sys::clocks::monotonic_ns();
        let since = (m - self.t0) as i64;
        self.t0 as i64 + since + self.offset + (self.drift * since as f64) as i64
    }
    pub(super) fn mono_of(&self, local: Time) -> u64 {
        let since = ((local - self.offset - self.t0 as i64) as f64 / (1.0 + self.drift)) as i64;
        (self.t0 as i64 + since).max(0) as u64
    }
}

pub(super) fn idle_wait(idle: &mut u32) {
    *idle += 1;
    if *idle > 200 {
        std::thread::sleep(std::time::Duration::from_micros(50));
    } else {
        std::thread::yield_now();
    }
}

/// Receives the next pending message, if any, into `rx` (grown as needed): its length and
/// status.
pub(super) fn receive_pending(
    world: &impl Communicator,
    rx: &mut Vec<u8>,
) -> Option<(usize, mpi::point_to_point::Status)> {
    let (m, st) = world.any_process().immediate_matched_probe()?;
    let n = st.count(u8::equivalent_datatype()) as usize;
    if rx.len() < n {
        rx.resize(n, 0);
    }
    m.matched_receive_into(&mut rx[..n]);
    Some((n, st))
}

pub(super) fn send(world: &impl Communicator, to: usize, tag: i32, b: &[u8]) {
    world.process_at_rank(to as i32).send_with_tag(b, tag);
}

pub(super) fn warmup(total: u64, len: u64) -> u64 {
    if total > 3 * len {
        2 * len
    } else {
        0
    }
}

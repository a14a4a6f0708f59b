//! The ring the TX thread publishes each probe's schedule, send time and kernel TX
//! timestamps into, and the RX thread joins received probes with.

use std::sync::atomic::{AtomicBool, AtomicU64};

/// Slots of the TX→RX ring; a probe answered later than this many sends is still
/// counted but has no schedule/kernel join.
pub const RING: usize = 1 << 17;

/// One ring slot, written by the TX thread, read by the RX thread.
#[derive(Default)]
pub(super) struct Slot {
    /// seq + 1 once `sched`, `sent`, `user_rt` are written.
    pub(super) tag: AtomicU64,
    pub(super) sched: AtomicU64,
    pub(super) sent: AtomicU64,
    pub(super) user_rt: AtomicU64,
    /// (seq + 1) << 3 | bits: 1 = SCHED, 2 = SND software, 4 = SND hardware.
    pub(super) ktag: AtomicU64,
    pub(super) k_sched: AtomicU64,
    pub(super) k_snd: AtomicU64,
    pub(super) k_hw: AtomicU64,
}

pub(super) const K_SCHED: u64 = 1;
pub(super) const K_SND: u64 = 2;
pub(super) const K_HW: u64 = 4;

/// State shared by the TX and RX threads.
pub(super) struct Shared {
    pub(super) ring: Vec<Slot>,
    pub(super) tx_done: AtomicBool,
    /// Clock reading at which the RX side stops waiting (set when TX is done).
    pub(super) rx_deadline: AtomicU64,
    pub(super) sent: AtomicU64,
    /// Closed loop: clock reading of the send whose answer the ping-pong thread is waiting
    /// for (0: not waiting), for the watchdog that wakes it when the answer is overdue.
    pub(super) pp_waiting_since: AtomicU64,
    /// Offset (ns from the start) from which the TX thread sends nothing more: set by the
    /// stop rule (`--ci-width`); `u64::MAX` while it has not fired.
    pub(super) stop_offset_ns: AtomicU64,
}

impl Shared {
    /// A fresh ring and flags: nothing sent, no deadline.
    pub(super) fn new() -> Shared {
        Shared {
            ring: (0..RING).map(|_| Slot::default()).collect(),
            tx_done: AtomicBool::new(false),
            rx_deadline: AtomicU64::new(u64::MAX),
            sent: AtomicU64::new(0),
            pp_waiting_since: AtomicU64::new(0),
            stop_offset_ns: AtomicU64::new(u64::MAX),
        }
    }
}

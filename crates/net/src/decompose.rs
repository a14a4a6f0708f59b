//! Per-probe decomposition of the latency into segments, from the timestamps of several
//! sources taken on one clock (`CLOCK_REALTIME`, the clock of kernel software timestamps):
//!
//! ```text
//! user TX ──tx_user_to_qdisc──▶ TX_SCHED ──tx_qdisc_to_driver──▶ TX_SOFTWARE
//!   ──wire (+ NF residence = wire_nf)──▶ RX_SOFTWARE ──rx_stack──▶ user RX
//! ```
//! The segments of a probe add up to its end-to-end latency (user TX → user RX) exactly;
//! a probe whose timestamps are out of order (which a clock step or a timestamp from the
//! wrong packet would cause) is rejected as a whole rather than recorded with a clamped
//! segment, and counted.

use serde::{Deserialize, Serialize};

/// The timestamps of one probe, in ns of one clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stamps {
    /// User space, just before the send call.
    pub user_tx: u64,
    /// Entering the packet scheduler (`SCM_TSTAMP_SCHED`), when reported.
    pub tx_sched: Option<u64>,
    /// Handed to the device by the driver (`SCM_TSTAMP_SND`, software).
    pub tx_driver: u64,
    /// Received by the stack (RX software timestamp).
    pub rx_driver: u64,
    /// User space, just after the receive call returned.
    pub user_rx: u64,
    /// Residence time the NF wrote into the probe (0 when none).
    pub nf_residence: u64,
}

/// The segments of one probe, in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segments {
    /// User send call → qdisc (0 when no TX_SCHED stamp; then all TX time is in
    /// `tx_qdisc_to_driver`).
    pub tx_user_to_qdisc: u64,
    /// Qdisc → driver.
    pub tx_qdisc_to_driver: u64,
    /// Driver → driver minus the NF residence: wires, the NF's stack, and the time the
    /// probe waited in the NF's socket before the NF read it.
    pub wire: u64,
    /// The NF's residence (receive call returned → send call).
    pub nf_residence: u64,
    /// Receiving driver → user space.
    pub rx_stack: u64,
    /// User TX → user RX on this clock.
    pub end_to_end: u64,
}

impl Segments {
    /// TX stack: user → driver.
    pub fn tx_stack(&self) -> u64 {
        self.tx_user_to_qdisc + self.tx_qdisc_to_driver
    }

    /// Wire plus NF: driver → driver.
    pub fn wire_nf(&self) -> u64 {
        self.wire + self.nf_residence
    }

    /// The sum of the disjoint segments.
    pub fn sum(&self) -> u64 {
        self.tx_user_to_qdisc
            + self.tx_qdisc_to_driver
            + self.wire
            + self.nf_residence
            + self.rx_stack
    }
}

/// Why a probe could not be decomposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inconsistent {
    /// Timestamps out of order along the path.
    OutOfOrder,
    /// The NF claims a residence longer than driver → driver.
    ResidenceTooLong,
}

/// Splits one probe's latency into segments; `Err` when its timestamps are inconsistent.
/// On `Ok`, `sum() == end_to_end` always holds.
pub fn decompose(s: &Stamps) -> Result<Segments, Inconsistent> {
    let sched = s.tx_sched.unwrap_or(s.user_tx);
    let ordered = s.user_tx <= sched
        && sched <= s.tx_driver
        && s.tx_driver <= s.rx_driver
        && s.rx_driver <= s.user_rx;
    if !ordered {
        return Err(Inconsistent::OutOfOrder);
    }
    let wire_nf = s.rx_driver - s.tx_driver;
    if s.nf_residence > wire_nf {
        return Err(Inconsistent::ResidenceTooLong);
    }
    let seg = Segments {
        tx_user_to_qdisc: sched - s.user_tx,
        tx_qdisc_to_driver: s.tx_driver - sched,
        wire: wire_nf - s.nf_residence,
        nf_residence: s.nf_residence,
        rx_stack: s.user_rx - s.rx_driver,
        end_to_end: s.user_rx - s.user_tx,
    };
    debug_assert_eq!(seg.sum(), seg.end_to_end);
    Ok(seg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_probe() {
        let s = Stamps {
            user_tx: 1000,
            tx_sched: Some(1400),
            tx_driver: 2000,
            rx_driver: 9000,
            user_rx: 11000,
            nf_residence: 3000,
        };
        let g = decompose(&s).unwrap();
        assert_eq!(g.tx_stack(), 1000);
        assert_eq!(g.wire_nf(), 7000);
        assert_eq!(g.wire, 4000);
        assert_eq!(g.rx_stack, 2000);
        assert_eq!(g.end_to_end, 10_000);
        let bad = Stamps {
            nf_residence: 8000,
            ..s
        };
        assert_eq!(decompose(&bad), Err(Inconsistent::ResidenceTooLong));
        let bad = Stamps {
            rx_driver: 1500,
            ..s
        };
        assert_eq!(decompose(&bad), Err(Inconsistent::OutOfOrder));
    }

    proptest! {
        #[test]
        fn segments_always_add_up(t in proptest::collection::vec(0u64..1_000_000_000, 5),
                                  sched: bool, res in 0u64..2_000_000_000) {
            let s = Stamps { user_tx: t[0], tx_sched: sched.then_some(t[1]), tx_driver: t[2],
                             rx_driver: t[3], user_rx: t[4], nf_residence: res };
            match decompose(&s) {
                Ok(g) => {
                    prop_assert_eq!(g.sum(), g.end_to_end);
                    prop_assert_eq!(g.end_to_end, t[4] - t[0]);
                }
                Err(_) => {
                    let mut v = t.clone();
                    if !sched { v.remove(1); }
                    let sorted = v.windows(2).all(|w| w[0] <= w[1]);
                    prop_assert!(!sorted || res > t[3] - t[2]);
                }
            }
        }
    }
}

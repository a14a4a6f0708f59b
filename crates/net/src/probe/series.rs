//! The named histograms of a run.

/// Latency from the scheduled send time (user TSC).
pub const USER_SCHED: &str = "user.sched";
/// Latency from the actual send (user TSC).
pub const USER_ACTUAL: &str = "user.actual";
/// Generator lateness: actual − scheduled send.
pub const LATENESS: &str = "generator.lateness";
/// Driver → driver (software TX SND → software RX).
pub const KERNEL: &str = "kernel.driver_to_driver";
/// NIC → NIC (hardware TX → hardware RX).
pub const HARDWARE: &str = "hardware.nic_to_nic";
/// Segment: user → qdisc.
pub const SEG_TX_QDISC: &str = "segment.tx_user_to_qdisc";
/// Segment: qdisc → driver.
pub const SEG_TX_DRIVER: &str = "segment.tx_qdisc_to_driver";
/// Segment: user → driver (TX stack).
pub const SEG_TX_STACK: &str = "segment.tx_stack";
/// Segment: driver → driver (wire + NF).
pub const SEG_WIRE_NF: &str = "segment.wire_nf";
/// Segment: wire without the NF residence.
pub const SEG_WIRE: &str = "segment.wire";
/// Segment: NF residence.
pub const SEG_NF: &str = "segment.nf_residence";
/// Segment: driver → user (RX stack).
pub const SEG_RX_STACK: &str = "segment.rx_stack";
/// User → user on the realtime clock (the sum of the segments).
pub const SEG_E2E: &str = "segment.end_to_end";

/// The latency sources, in the order tables and plots show them.
pub const SOURCES: [&str; 4] = [USER_SCHED, USER_ACTUAL, KERNEL, HARDWARE];

/// The segments of a decomposed probe, in path order (the end-to-end sum last).
pub const SEGMENTS: [&str; 8] = [
    SEG_TX_QDISC,
    SEG_TX_DRIVER,
    SEG_TX_STACK,
    SEG_WIRE_NF,
    SEG_WIRE,
    SEG_NF,
    SEG_RX_STACK,
    SEG_E2E,
];

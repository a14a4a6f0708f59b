//! The fabric's parameters, their check, and its errors.

use serde::{Deserialize, Serialize};

/// Routing algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Routing {
    /// Minimal: source group → one global link → destination group.
    Minimal,
    /// UGAL-L: at the source router, minimal unless the minimal first hop's queue is more
    /// than twice a random non-minimal (Valiant) path's first hop queue plus a threshold.
    Ugal,
}

/// Fabric parameters (defaults and their sources: docs/dfs.md, "Dragonfly fabric").
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FabricParams {
    /// Nodes (NICs) per router (Aries: 4).
    pub nodes_per_router: usize,
    /// Routers per chassis, linked all-to-all by rank-1 links (Aries: 16).
    pub chassis_routers: usize,
    /// Chassis per group, linked all-to-all by rank-2 links (Aries: 6).
    pub group_chassis: usize,
    /// Global (rank-3) links per router (Aries: 10 ports).
    pub global_per_router: usize,
    /// Rank-1 link bandwidth per direction, GB/s.
    pub rank1_gbs: f64,
    /// Rank-2 bandwidth per direction between two routers (3 cables), GB/s.
    pub rank2_gbs: f64,
    /// Global link bandwidth per direction, GB/s.
    pub global_gbs: f64,
    /// Wire + router pipeline latency of a local hop, ns.
    pub local_latency_ns: i64,
    /// Wire + router pipeline latency of a global hop, ns.
    pub global_latency_ns: i64,
    /// Packet (flit bundle) size, bytes.
    pub packet_bytes: u32,
    /// Input buffer per port and virtual channel, in packets.
    pub buffer_packets: u32,
    /// How many packets from the head of an input VC buffer the switch allocator may
    /// consider (1: a strict FIFO with full head-of-line blocking; `buffer_packets`: any
    /// buffered packet, like Aries's tiled crossbar with row and column buffers).
    pub alloc_window: u32,
    /// Routing algorithm.
    pub routing: Routing,
}

impl Default for FabricParams {
    fn default() -> Self {
        FabricParams {
            nodes_per_router: 4,
            chassis_routers: 16,
            group_chassis: 6,
            global_per_router: 10,
            rank1_gbs: 5.25,
            rank2_gbs: 15.75,
            global_gbs: 4.7,
            local_latency_ns: 100,
            global_latency_ns: 150,
            packet_bytes: 4096,
            buffer_packets: 4,
            alloc_window: 4,
            routing: Routing::Minimal,
        }
    }
}

/// Virtual channels: one per global hop taken (0, 1, 2 under Valiant/UGAL).
pub const VCS: usize = 3;

/// Why a fabric cannot be built.
#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum FabricError {
    /// A size parameter is zero or a bandwidth/latency is not positive and finite.
    #[error("--dragonfly-shape: {0}")]
    Invalid(String),
    /// The Dragonfly cannot connect enough groups for the node count.
    #[error(
        "--dragonfly-shape: {nodes} nodes need {groups} groups of {per_group} nodes, but a \
         group has only {ports} global links (at most {} groups); give more global links per \
         router or larger groups, e.g. 4:16x6:10", ports + 1
    )]
    TooSmall {
        /// Nodes asked for.
        nodes: usize,
        /// Groups they need.
        groups: usize,
        /// Nodes per group.
        per_group: usize,
        /// Global links per group.
        ports: usize,
    },
}

impl FabricParams {
    /// Checks sizes, bandwidths and latencies.
    pub fn validate(&self) -> Result<(), FabricError> {
        let sizes = [
            ("nodes per router", self.nodes_per_router),
            ("routers per chassis", self.chassis_routers),
            ("chassis per group", self.group_chassis),
            ("packet bytes", self.packet_bytes as usize),
            ("buffer packets", self.buffer_packets as usize),
            ("allocation window", self.alloc_window as usize),
        ];
        for (name, v) in sizes {
            if v == 0 {
                return Err(FabricError::Invalid(format!("{name} must be at least 1")));
            }
        }
        for (name, v) in [
            ("rank-1 bandwidth", self.rank1_gbs),
            ("rank-2 bandwidth", self.rank2_gbs),
            ("global bandwidth", self.global_gbs),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(FabricError::Invalid(format!(
                    "{name} must be positive and finite"
                )));
            }
        }
        if self.local_latency_ns < 0 || self.global_latency_ns < 0 {
            return Err(FabricError::Invalid("latencies must be ≥ 0".into()));
        }
        Ok(())
    }
}

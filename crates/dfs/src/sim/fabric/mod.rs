//! A packet-level Dragonfly fabric with credit-based link-level flow control, the
//! `--network dragonfly` alternative to the fluid [`super::net`] model.
//!
//! Pure, deterministic and seeded: the same configuration, seed and calls give the same
//! events. Messages are cut into packets of `packet_bytes` (flit bundles, see docs/dfs.md);
//! a message completes when its last packet reaches the destination node.
//!
//! - [`topology`]: an Aries-like Dragonfly (nodes per router, routers per group arranged
//!   as chassis slots × chassis with rank-1 and rank-2 all-to-all links, global links per
//!   router, the group count derived from the node count).
//! - [`fabric`](self::Fabric): input-queued routers with finite per-VC FIFO buffers,
//!   per-link credits, virtual cut-through at packet granularity, minimal and UGAL-L
//!   routing, one virtual channel per global hop taken (deadlock freedom).
//!
//! Backpressure, congestion trees and head-of-line blocking are not scripted: a full
//! downstream buffer withholds credits, the packet at the head of an input FIFO waits for
//! them, and every packet behind it waits too, whatever its own output.

mod core;
mod knobs;
#[cfg(test)]
mod tests;
pub mod topology;
pub mod traffic;

pub use self::core::{Completion, Fabric};
pub use knobs::{FabricError, FabricParams, Routing, VCS};
pub use topology::Dragonfly;

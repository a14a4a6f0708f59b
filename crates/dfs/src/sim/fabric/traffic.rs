//! Synthetic open-loop traffic for validating the fabric (and measuring its speed):
//! every node offers messages at a share of its injection bandwidth, destinations by
//! pattern; the accepted throughput is what reaches the nodes after a warm-up.

use super::core::{Completion, Fabric};
use super::knobs::{FabricError, FabricParams};
use crate::sim::rng::Rng;

/// Where messages go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// A uniformly random other node.
    UniformRandom,
    /// Each node cycles through every other node in turn (shifted by its index).
    AllToAll,
    /// A random node of the next group (worst case for minimal routing).
    NextGroup,
}

/// An open-loop load point.
#[derive(Clone, Copy, Debug)]
pub struct Load {
    /// Nodes.
    pub nodes: usize,
    /// NIC bandwidth per node, GB/s (injection and ejection).
    pub node_gbs: f64,
    /// Offered load as a share of the injection bandwidth (0..=1).
    pub offered: f64,
    /// Message size, bytes.
    pub msg_bytes: u64,
    /// Simulated time, ns (the first quarter is warm-up).
    pub duration_ns: i64,
    /// Pattern.
    pub pattern: Pattern,
    /// Seed.
    pub seed: u64,
}

/// What a load point gave.
#[derive(Clone, Copy, Debug)]
pub struct Accepted {
    /// Accepted throughput after warm-up as a share of the offered injection bandwidth
    /// of all nodes at load 1.
    pub accepted: f64,
    /// Mean message latency (offer to completion) of messages completed after warm-up, ns.
    pub mean_latency_ns: f64,
    /// Fabric events processed.
    pub events: u64,
}

/// Runs one load point.
pub fn run(p: FabricParams, l: &Load) -> Result<Accepted, FabricError> {
    let n = l.nodes;
    let mut f = Fabric::new(p, vec![l.node_gbs; n], vec![l.node_gbs; n], l.seed)?;
    let per_group = f.topology().per_group * p.nodes_per_router;
    let groups = f.topology().groups;
    let mut rng = Rng::new(l.seed);
    let gap = l.msg_bytes as f64 / (l.offered * l.node_gbs);
    let mut next: Vec<f64> = (0..n).map(|_| rng.exp(gap)).collect();
    let mut a2a = vec![1usize; n];
    let mut born = std::collections::HashMap::new();
    let warm = l.duration_ns / 4;
    let (mut warm_bytes, mut lat_sum, mut lat_n) = (None, 0.0, 0u64);
    let mut done: Vec<Completion> = Vec::new();
    let mut seq = 0u64;
    loop {
        let (src, t) = next
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(i, t)| (i, *t as i64))
            .expect("nodes");
        let t_fab = f.next_time().unwrap_or(i64::MAX);
        let t_next = t.min(t_fab);
        if t_next > l.duration_ns {
            break;
        }
        if warm_bytes.is_none() && t_next >= warm {
            f.advance(warm - 1, &mut done);
            warm_bytes = Some(f.delivered_bytes());
        }
        if t_fab <= t {
            f.advance(t_fab, &mut done);
        } else {
            let dst = match l.pattern {
                Pattern::UniformRandom => (src + 1 + rng.next_u64() as usize % (n - 1)) % n,
                Pattern::AllToAll => {
                    let d = (src + a2a[src]) % n;
                    a2a[src] = a2a[src] % (n - 1) + 1;
                    d
                }
                Pattern::NextGroup => {
                    let g = (src / per_group + 1) % groups;
                    let lo = g * per_group;
                    let hi = ((g + 1) * per_group).min(n);
                    lo + rng.next_u64() as usize % (hi - lo)
                }
            };
            seq += 1;
            born.insert(seq, t);
            f.start(src, dst, l.msg_bytes, (src, seq), t);
            next[src] += rng.exp(gap);
        }
        for c in done.drain(..) {
            let b = born.remove(&c.tag.1).expect("offered");
            if b >= warm {
                lat_sum += (c.t - b) as f64;
                lat_n += 1;
            }
        }
    }
    f.advance(l.duration_ns, &mut done);
    let window = (l.duration_ns - warm) as f64;
    let bytes = f.delivered_bytes() - warm_bytes.unwrap_or(0);
    Ok(Accepted {
        accepted: bytes as f64 / window / (n as f64 * l.node_gbs),
        mean_latency_ns: if lat_n > 0 {
            lat_sum / lat_n as f64
        } else {
            f64::NAN
        },
        events: f.events(),
    })
}

//! The Dragonfly: routers in groups, a group as `chassis_routers` × `group_chassis`
//! routers with all-to-all rank-1 links inside a chassis and all-to-all rank-2 links
//! between the same slot of every chassis (Aries), and global links spread evenly over
//! every pair of groups. Ports, links and minimal next hops; no state.

use super::knobs::{FabricError, FabricParams};

/// The far end of an output port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// A node (ejection).
    Node(usize),
    /// Input port `port` of router `router`.
    Router {
        /// Router index.
        router: usize,
        /// Its port index.
        port: usize,
    },
    /// An unconnected global port.
    None,
}

/// Kind of link (for bandwidth and latency).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkKind {
    /// Router to node.
    Terminal,
    /// Inside a chassis.
    Rank1,
    /// Between chassis of a group.
    Rank2,
    /// Between groups.
    Global,
}

/// The Dragonfly for a node count.
#[derive(Clone, Debug)]
pub struct Dragonfly {
    /// Parameters it was built from.
    pub p: FabricParams,
    /// Nodes.
    pub nodes: usize,
    /// Groups.
    pub groups: usize,
    /// Routers per group.
    pub per_group: usize,
    /// Global links between each pair of groups.
    pub links_per_pair: usize,
}

impl Dragonfly {
    /// The smallest Dragonfly of these parameters holding `nodes` nodes: groups derived
    /// from the node count; an error when a group has too few global links to reach every
    /// other group.
    pub fn new(p: FabricParams, nodes: usize) -> Result<Dragonfly, FabricError> {
        p.validate()?;
        if nodes == 0 {
            return Err(FabricError::Invalid("needs at least one node".into()));
        }
        let per_group = p.chassis_routers * p.group_chassis;
        let group_nodes = per_group * p.nodes_per_router;
        let groups = nodes.div_ceil(group_nodes);
        let ports = per_group * p.global_per_router;
        let links_per_pair = if groups > 1 { ports / (groups - 1) } else { 0 };
        if groups > 1 && links_per_pair == 0 {
            return Err(FabricError::TooSmall {
                nodes,
                groups,
                per_group: group_nodes,
                ports,
            });
        }
        Ok(Dragonfly {
            p,
            nodes,
            groups,
            per_group,
            links_per_pair,
        })
    }

    /// Routers (whole groups).
    pub fn routers(&self) -> usize {
        self.groups * self.per_group
    }

    /// Ports per router.
    pub fn ports(&self) -> usize {
        self.global_base() + self.p.global_per_router
    }

    fn rank1_base(&self) -> usize {
        self.p.nodes_per_router
    }
    fn rank2_base(&self) -> usize {
        self.rank1_base() + self.p.chassis_routers - 1
    }
    fn global_base(&self) -> usize {
        self.rank2_base() + self.p.group_chassis - 1
    }

    /// Router of a node.
    pub fn router_of(&self, node: usize) -> usize {
        node / self.p.nodes_per_router
    }

    /// Group of a router.
    pub fn group_of(&self, router: usize) -> usize {
        router / self.per_group
    }

    fn xy(&self, router: usize) -> (usize, usize) {
        let l = router % self.per_group;
        (l % self.p.chassis_routers, l / self.p.chassis_routers)
    }

    fn router_at(&self, group: usize, x: usize, y: usize) -> usize {
        group * self.per_group + y * self.p.chassis_routers + x
    }

    /// What kind of link port `port` is.
    pub fn kind(&self, port: usize) -> LinkKind {
        if port < self.rank1_base() {
            LinkKind::Terminal
        } else if port < self.rank2_base() {
            LinkKind::Rank1
        } else if port < self.global_base() {
            LinkKind::Rank2
        } else {
            LinkKind::Global
        }
    }

    /// Bandwidth (bytes per ns) and latency (ns) of a network link kind; terminal links
    /// take their bandwidth from the node's NIC.
    pub fn link(&self, kind: LinkKind) -> (f64, i64) {
        match kind {
            LinkKind::Terminal => (0.0, self.p.local_latency_ns),
            LinkKind::Rank1 => (self.p.rank1_gbs, self.p.local_latency_ns),
            LinkKind::Rank2 => (self.p.rank2_gbs, self.p.local_latency_ns),
            LinkKind::Global => (self.p.global_gbs, self.p.global_latency_ns),
        }
    }

    fn skip(i: usize, me: usize) -> usize {
        if i < me {
            i
        } else {
            i - 1
        }
    }
    fn unskip(k: usize, me: usize) -> usize {
        if k < me {
            k
        } else {
            k + 1
        }
    }

    /// Global port index (within the group: router-local × per router + slot) that group
    /// `from` uses for link `m` to group `to`.
    fn global_index(&self, from: usize, to: usize, m: usize) -> usize {
        Self::skip(to, from) * self.links_per_pair + m
    }

    /// The far end of port `port` of router `router`; links are symmetric (port `q` of the
    /// peer leads back).
    pub fn peer(&self, router: usize, port: usize) -> Peer {
        let g = self.group_of(router);
        let (x, y) = self.xy(router);
        match self.kind(port) {
            LinkKind::Terminal => {
                let n = router * self.p.nodes_per_router + port;
                if n < self.nodes {
                    Peer::Node(n)
                } else {
                    Peer::None
                }
            }
            LinkKind::Rank1 => {
                let x2 = Self::unskip(port - self.rank1_base(), x);
                Peer::Router {
                    router: self.router_at(g, x2, y),
                    port: self.rank1_base() + Self::skip(x, x2),
                }
            }
            LinkKind::Rank2 => {
                let y2 = Self::unskip(port - self.rank2_base(), y);
                Peer::Router {
                    router: self.router_at(g, x, y2),
                    port: self.rank2_base() + Self::skip(y, y2),
                }
            }
            LinkKind::Global => {
                let h = self.p.global_per_router;
                let k = (router % self.per_group) * h + (port - self.global_base());
                let other = k / self.links_per_pair.max(1);
                if self.groups < 2 || other >= self.groups - 1 {
                    return Peer::None;
                }
                let m = k % self.links_per_pair;
                let g2 = Self::unskip(other, g);
                let kk = self.global_index(g2, g, m);
                Peer::Router {
                    router: g2 * self.per_group + kk / h,
                    port: self.global_base() + kk % h,
                }
            }
        }
    }

    /// The output port of router `cur` on the minimal path towards router `target` via
    /// global link `m` (taken modulo the links per pair) if the groups differ: inside a
    /// group first along the chassis (rank 1), then across chassis (rank 2); to another
    /// group first to the router holding the global link.
    pub fn next_port(&self, cur: usize, target: usize, m: usize) -> usize {
        let (gc, gt) = (self.group_of(cur), self.group_of(target));
        let goal = if gc == gt {
            target
        } else {
            let k = self.global_index(gc, gt, m % self.links_per_pair);
            let h = self.p.global_per_router;
            let gw = gc * self.per_group + k / h;
            if gw == cur {
                return self.global_base() + k % h;
            }
            gw
        };
        let ((x, y), (x2, y2)) = (self.xy(cur), self.xy(goal));
        if x != x2 {
            self.rank1_base() + Self::skip(x2, x)
        } else if y != y2 {
            self.rank2_base() + Self::skip(y2, y)
        } else {
            debug_assert_eq!(cur, goal);
            usize::MAX
        }
    }

    /// The minimal next port towards node `dst` (its terminal port when `cur` is its router).
    pub fn port_to_node(&self, cur: usize, dst: usize, m: usize) -> usize {
        let r = self.router_of(dst);
        if r == cur {
            dst % self.p.nodes_per_router
        } else {
            self.next_port(cur, r, m)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> FabricParams {
        FabricParams {
            nodes_per_router: 2,
            chassis_routers: 4,
            group_chassis: 2,
            global_per_router: 2,
            ..FabricParams::default()
        }
    }

    #[test]
    fn aries_groups_and_the_limit() {
        let d = Dragonfly::new(FabricParams::default(), 384).unwrap();
        assert_eq!((d.groups, d.per_group, d.ports()), (1, 96, 4 + 15 + 5 + 10));
        let d = Dragonfly::new(FabricParams::default(), 1000).unwrap();
        assert_eq!((d.groups, d.links_per_pair), (3, 480));
        // small: 16 nodes per group, 16 global ports per group -> at most 17 groups
        assert!(Dragonfly::new(small(), 17 * 16).is_ok());
        let e = Dragonfly::new(small(), 17 * 16 + 1).unwrap_err();
        assert!(matches!(e, FabricError::TooSmall { groups: 18, .. }), "{e}");
        assert!(Dragonfly::new(small(), 0).is_err());
        let bad = FabricParams {
            global_gbs: f64::NAN,
            ..small()
        };
        assert!(Dragonfly::new(bad, 4).is_err());
    }

    #[test]
    fn every_link_leads_back() {
        let d = Dragonfly::new(small(), 5 * 16).unwrap();
        let mut globals = 0;
        for r in 0..d.routers() {
            for p in 0..d.ports() {
                if let Peer::Router { router, port } = d.peer(r, p) {
                    assert_eq!(d.kind(p), d.kind(port));
                    assert_eq!(d.peer(router, port), Peer::Router { router: r, port: p });
                    if d.kind(p) == LinkKind::Global {
                        assert_ne!(d.group_of(r), d.group_of(router));
                        globals += 1;
                    }
                }
            }
        }
        // 5 groups, 16 ports each, 4 links per pair: every port used
        assert_eq!(globals, 5 * 16);
    }

    #[test]
    fn minimal_paths_reach_every_node_in_few_hops() {
        let d = Dragonfly::new(small(), 5 * 16).unwrap();
        for s in 0..d.nodes {
            for t in 0..d.nodes {
                let mut r = d.router_of(s);
                let mut hops = 0;
                loop {
                    let p = d.port_to_node(r, t, s + t);
                    match d.peer(r, p) {
                        Peer::Node(n) => {
                            assert_eq!(n, t);
                            break;
                        }
                        Peer::Router { router, .. } => r = router,
                        Peer::None => panic!("dead port {p} at {r}"),
                    }
                    hops += 1;
                    assert!(hops <= 5, "{s}->{t}");
                }
            }
        }
    }
}

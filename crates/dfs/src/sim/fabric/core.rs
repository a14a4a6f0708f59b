//! The fabric's state and events: NICs that cut messages into packets and inject them
//! round-robin, input-queued routers with a FIFO per input port and virtual channel,
//! output links with per-VC credits for the downstream buffer, and an event queue of its
//! own that the caller advances to its time.

use super::knobs::{FabricError, FabricParams, Routing, VCS};
use super::topology::{Dragonfly, LinkKind, Peer};
use crate::sim::rng::Rng;
use crate::sim::slab::alloc;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// A message whose last packet reached its destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// Delivery time of the last packet, ns.
    pub t: i64,
    /// The caller's tag.
    pub tag: (usize, u64),
}

const NONE: u32 = u32::MAX;

/// UGAL-L threshold, packets.
const UGAL_THRESHOLD: u32 = 2;

#[derive(Clone, Copy, Debug)]
struct Packet {
    msg: u32,
    dst: u32,
    bytes: u32,
    /// Intermediate group (Valiant leg), or NONE.
    inter: u32,
    /// Global-link choice.
    m: u32,
    /// Virtual channel it occupies now.
    vc: u8,
    /// Chosen output port and its VC at the current router.
    out: u16,
    ovc: u8,
    /// Routing decision taken (UGAL decides once, at the source router).
    decided: bool,
}

#[derive(Clone, Copy, Debug)]
struct Msg {
    tag: (usize, u64),
    dst: u32,
    unsent: u64,
    left: u32,
}

#[derive(Clone, Debug, Default)]
struct Nic {
    active: VecDeque<u32>,
    busy: bool,
    credits: u32,
}

#[derive(Clone, Debug)]
struct OutPort {
    to: Peer,
    kind: LinkKind,
    rate: f64,
    lat: i64,
    busy: bool,
    credits: [u32; VCS],
    /// Packets routed to this port and not yet sent.
    wait: u32,
}

#[derive(Clone, Debug, Default)]
struct InPort {
    q: [VecDeque<u32>; VCS],
}

#[derive(Clone, Debug)]
struct Router {
    outs: Vec<OutPort>,
    ins: Vec<InPort>,
    rr: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    NicFree(u32),
    NicCredit(u32),
    Head { r: u32, port: u16, vc: u8, pkt: u32 },
    PortFree { r: u32, port: u16 },
    Credit { r: u32, port: u16, vc: u8 },
    Deliver(u32),
}

/// The fabric.
#[derive(Clone, Debug)]
pub struct Fabric {
    topo: Dragonfly,
    routers: Vec<Router>,
    nics: Vec<Nic>,
    inj: Vec<f64>,
    ej: Vec<f64>,
    scale: f64,
    packets: Vec<Packet>,
    free_pkts: Vec<u32>,
    msgs: Vec<Msg>,
    free_msgs: Vec<u32>,
    heap: BinaryHeap<Reverse<(i64, u64, Ev)>>,
    seq: u64,
    now: i64,
    rng: Rng,
    events: u64,
    done: Vec<Completion>,
    delivered_bytes: u64,
}

impl Fabric {
    /// A fabric for `inj.len()` nodes with these NIC injection and ejection bandwidths
    /// (bytes per ns, i.e. GB/s).
    pub fn new(
        p: FabricParams,
        inj: Vec<f64>,
        ej: Vec<f64>,
        seed: u64,
    ) -> Result<Fabric, FabricError> {
        let nodes = inj.len();
        if ej.len() != nodes || inj.iter().chain(&ej).any(|b| !(*b > 0.0 && b.is_finite())) {
            return Err(FabricError::Invalid(
                "node bandwidths must be positive and finite".into(),
            ));
        }
        let topo = Dragonfly::new(p, nodes)?;
        let np = topo.ports();
        let routers = (0..topo.routers())
            .map(|r| Router {
                outs: (0..np)
                    .map(|port| {
                        let kind = topo.kind(port);
                        let (rate, lat) = topo.link(kind);
                        OutPort {
                            to: topo.peer(r, port),
                            kind,
                            rate,
                            lat,
                            busy: false,
                            credits: [p.buffer_packets; VCS],
                            wait: 0,
                        }
                    })
                    .collect(),
                ins: vec![InPort::default(); np],
                rr: 0,
            })
            .collect();
        let nics = (0..nodes)
            .map(|_| Nic {
                credits: p.buffer_packets,
                ..Nic::default()
            })
            .collect();
        Ok(Fabric {
            topo,
            routers,
            nics,
            inj,
            ej,
            scale: 1.0,
            packets: Vec::new(),
            free_pkts: Vec::new(),
            msgs: Vec::new(),
            free_msgs: Vec::new(),
            heap: BinaryHeap::new(),
            seq: 0,
            now: 0,
            rng: Rng::new(seed ^ 0xd1a6_0f1a),
            events: 0,
            done: Vec::new(),
            delivered_bytes: 0,
        })
    }

    /// The topology.
    pub fn topology(&self) -> &Dragonfly {
        &self.topo
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Bytes delivered to nodes so far.
    pub fn delivered_bytes(&self) -> u64 {
        self.delivered_bytes
    }

    /// Messages not yet complete.
    pub fn in_flight(&self) -> usize {
        self.msgs.len() - self.free_msgs.len()
    }

    fn push(&mut self, t: i64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq, ev)));
    }

    /// Time of the next internal event.
    pub fn next_time(&self) -> Option<i64> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }

    /// Starts a message of `bytes` from node `src` to node `dst` at `now` (≥ the last
    /// time advanced to).
    pub fn start(&mut self, src: usize, dst: usize, bytes: u64, tag: (usize, u64), now: i64) {
        self.now = self.now.max(now);
        let pb = self.topo.p.packet_bytes as u64;
        let m = Msg {
            tag,
            dst: dst as u32,
            unsent: bytes.max(1),
            left: bytes.max(1).div_ceil(pb) as u32,
        };
        let id = alloc(&mut self.msgs, &mut self.free_msgs, m);
        self.nics[src].active.push_back(id);
        self.try_nic(src);
    }

    /// Processes every event up to and including `until`; completed messages are
    /// appended to `out` in completion order.
    pub fn advance(&mut self, until: i64, out: &mut Vec<Completion>) {
        while let Some(&Reverse((t, _, ev))) = self.heap.peek() {
            if t > until {
                break;
            }
            self.heap.pop();
            self.now = t;
            self.events += 1;
            self.handle(ev);
        }
        self.now = self.now.max(until);
        out.append(&mut self.done);
    }

    /// Sets a node's injection bandwidth (bytes per ns) from its next packet on.
    pub fn set_inj(&mut self, node: usize, bw: f64) {
        self.inj[node] = bw;
    }

    /// Sets a node's ejection bandwidth from its next packet on.
    pub fn set_ej(&mut self, node: usize, bw: f64) {
        self.ej[node] = bw;
    }

    /// Scales every node's injection and ejection bandwidth (a bandwidth drop).
    pub fn set_scale(&mut self, scale: f64) {
        self.scale = scale;
    }

    fn ser(bytes: u32, rate: f64) -> i64 {
        ((bytes as f64 / rate).ceil() as i64).max(1)
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::NicFree(n) => {
                self.nics[n as usize].busy = false;
                self.try_nic(n as usize);
            }
            Ev::NicCredit(n) => {
                self.nics[n as usize].credits += 1;
                self.try_nic(n as usize);
            }
            Ev::Head { r, port, vc, pkt } => self.head(r as usize, port as usize, vc, pkt),
            Ev::PortFree { r, port } => {
                self.routers[r as usize].outs[port as usize].busy = false;
                self.try_router(r as usize);
            }
            Ev::Credit { r, port, vc } => {
                self.routers[r as usize].outs[port as usize].credits[vc as usize] += 1;
                self.try_router(r as usize);
            }
            Ev::Deliver(pkt) => {
                let p = self.packets[pkt as usize];
                self.free_pkts.push(pkt);
                self.delivered_bytes += p.bytes as u64;
                let m = &mut self.msgs[p.msg as usize];
                m.left -= 1;
                if m.left == 0 {
                    self.done.push(Completion {
                        t: self.now,
                        tag: m.tag,
                    });
                    self.free_msgs.push(p.msg);
                }
            }
        }
    }

    fn try_nic(&mut self, n: usize) {
        let nic = &mut self.nics[n];
        if nic.busy || nic.credits == 0 {
            return;
        }
        let Some(id) = nic.active.pop_front() else {
            return;
        };
        let pb = self.topo.p.packet_bytes as u64;
        let m = &mut self.msgs[id as usize];
        let bytes = m.unsent.min(pb) as u32;
        m.unsent -= bytes as u64;
        let dst = m.dst;
        if m.unsent > 0 {
            nic.active.push_back(id);
        }
        nic.busy = true;
        nic.credits -= 1;
        let pkt = Packet {
            msg: id,
            dst,
            bytes,
            inter: NONE,
            m: (n as u32).wrapping_add(dst),
            vc: 0,
            out: 0,
            ovc: 0,
            decided: false,
        };
        let pid = alloc(&mut self.packets, &mut self.free_pkts, pkt);
        let rate = self.inj[n] * self.scale;
        let now = self.now;
        self.push(now + Self::ser(bytes, rate), Ev::NicFree(n as u32));
        let r = self.topo.router_of(n) as u32;
        let port = (n % self.topo.p.nodes_per_router) as u16;
        let lat = self.topo.p.local_latency_ns;
        self.push(
            now + lat,
            Ev::Head {
                r,
                port,
                vc: 0,
                pkt: pid,
            },
        );
    }

    /// The output port of `r` for packet `p` (clearing its Valiant leg once in the
    /// intermediate group) and the VC it will occupy downstream.
    fn route(&self, r: usize, p: &mut Packet) -> (usize, u8) {
        let g = self.topo.group_of(r) as u32;
        if p.inter == g {
            p.inter = NONE;
        }
        let port = if p.inter == NONE {
            self.topo.port_to_node(r, p.dst as usize, p.m as usize)
        } else {
            let target = p.inter as usize * self.topo.per_group;
            self.topo.next_port(r, target, p.m as usize)
        };
        let ovc = if self.topo.kind(port) == LinkKind::Global {
            p.vc + 1
        } else {
            p.vc
        };
        (port, ovc)
    }

    fn queue(&self, r: usize, port: usize, vc: u8) -> u32 {
        let o = &self.routers[r].outs[port];
        let used = match o.kind {
            LinkKind::Terminal => 0,
            _ => self.topo.p.buffer_packets - o.credits[vc as usize],
        };
        used + o.wait
    }

    fn ugal(&mut self, r: usize, p: &mut Packet) {
        let t = &self.topo;
        let (gs, gd) = (t.group_of(r), t.group_of(t.router_of(p.dst as usize)));
        if t.groups < 3 || gs == gd {
            return;
        }
        let mut gi = self.rng.next_u64() as usize % (t.groups - 2);
        for g in [gs.min(gd), gs.max(gd)] {
            if gi >= g {
                gi += 1;
            }
        }
        let (pm, vm) = self.route(r, &mut p.clone());
        let mut nm = Packet {
            inter: gi as u32,
            ..*p
        };
        let (pn, vn) = self.route(r, &mut nm);
        if self.queue(r, pm, vm) > 2 * self.queue(r, pn, vn) + UGAL_THRESHOLD {
            p.inter = gi as u32;
        }
    }

    fn head(&mut self, r: usize, port: usize, vc: u8, pkt: u32) {
        let mut p = self.packets[pkt as usize];
        p.vc = vc;
        if !p.decided {
            p.decided = true;
            if self.topo.p.routing == Routing::Ugal {
                self.ugal(r, &mut p);
            }
        }
        let (out, ovc) = self.route(r, &mut p);
        p.out = out as u16;
        p.ovc = ovc;
        self.packets[pkt as usize] = p;
        let rt = &mut self.routers[r];
        rt.outs[out].wait += 1;
        rt.ins[port].q[vc as usize].push_back(pkt);
        self.try_router(r);
    }

    /// Switch allocation: from every input VC buffer the first packet (among the first
    /// `alloc_window`) whose output link is idle and has a downstream credit for its VC
    /// goes, input buffers taken round-robin; repeated until nothing more can go.
    fn try_router(&mut self, r: usize) {
        let nq = self.routers[r].ins.len() * VCS;
        let window = self.topo.p.alloc_window as usize;
        loop {
            let mut moved = false;
            let start = self.routers[r].rr;
            for k in 0..nq {
                let qi = (start + k) % nq;
                let (ip, vc) = (qi / VCS, qi % VCS);
                let q = &self.routers[r].ins[ip].q[vc];
                let ready = q.iter().take(window).position(|&pkt| {
                    let p = &self.packets[pkt as usize];
                    let o = &self.routers[r].outs[p.out as usize];
                    !o.busy && (o.kind == LinkKind::Terminal || o.credits[p.ovc as usize] > 0)
                });
                if let Some(j) = ready {
                    let pkt = self.routers[r].ins[ip].q[vc]
                        .remove(j)
                        .expect("in the queue");
                    self.forward(r, ip, vc as u8, pkt);
                    self.routers[r].rr = (qi + 1) % nq;
                    moved = true;
                }
            }
            if !moved {
                return;
            }
        }
    }

    fn forward(&mut self, r: usize, ip: usize, vc: u8, pkt: u32) {
        let now = self.now;
        let p = self.packets[pkt as usize];
        let out = p.out as usize;
        let o = &mut self.routers[r].outs[out];
        o.busy = true;
        o.wait -= 1;
        let rate = match o.to {
            Peer::Node(n) => self.ej[n] * self.scale,
            _ => o.rate,
        };
        let ser = Self::ser(p.bytes, rate);
        let (to, lat) = (o.to, o.lat);
        if o.kind != LinkKind::Terminal {
            o.credits[p.ovc as usize] -= 1;
        }
        self.push(
            now + ser,
            Ev::PortFree {
                r: r as u32,
                port: out as u16,
            },
        );
        // the input slot frees when the tail has left; its credit travels back upstream
        let back = &self.routers[r].outs[ip];
        let t_credit = now + ser + back.lat;
        match back.to {
            Peer::Node(n) => self.push(t_credit, Ev::NicCredit(n as u32)),
            Peer::Router { router, port } => self.push(
                t_credit,
                Ev::Credit {
                    r: router as u32,
                    port: port as u16,
                    vc,
                },
            ),
            Peer::None => unreachable!("a packet came in through an unconnected port"),
        }
        match to {
            Peer::Node(_) => self.push(now + ser + lat, Ev::Deliver(pkt)),
            Peer::Router { router, port } => self.push(
                now + lat,
                Ev::Head {
                    r: router as u32,
                    port: port as u16,
                    vc: p.ovc,
                    pkt,
                },
            ),
            Peer::None => unreachable!("routing chose an unconnected port"),
        }
    }
}

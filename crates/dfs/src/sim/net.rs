//! The fluid network model: every node has an injection port (sending) and an ejection port
//! (receiving). A port divides its bandwidth equally among the transfers through it; a
//! transfer runs at the smaller of its two shares (source injection share, destination
//! ejection share). Capacity a transfer cannot use because it is held back at its other end
//! is not redistributed (no max-min water-filling): a NIC that shares itself round-robin
//! among its queued writes behaves this way, and it keeps each rate change local to the two
//! ports involved, which makes the model cheap enough for 192 × 192 flows.
//!
//! Rates are recomputed whenever a transfer starts or ends at a port, or a port's bandwidth
//! changes; a transfer's completion is an event at `now + remaining / rate`.

use super::slab::alloc_with;

/// A transfer in flight.
#[derive(Clone, Copy, Debug)]
pub struct Flow {
    /// Source port (node index).
    pub src: usize,
    /// Destination port (node index).
    pub dst: usize,
    /// Bytes still to move.
    pub remaining: f64,
    /// Current rate in bytes per ns.
    pub rate: f64,
    /// Time of the last update of `remaining`.
    pub updated: i64,
    /// Bumped on every rate change; stale completion events carry an old version.
    pub version: u32,
    /// Caller's tag (the contribution).
    pub tag: (usize, u64),
    live: bool,
}

/// Ports and flows.
#[derive(Clone, Debug)]
pub struct Network {
    /// Injection bandwidth per node, bytes per ns.
    inj: Vec<f64>,
    /// Ejection bandwidth per node, bytes per ns.
    ej: Vec<f64>,
    inj_flows: Vec<Vec<u32>>,
    ej_flows: Vec<Vec<u32>>,
    /// Every port's current share per transfer (bandwidth × scale / transfers), kept up to
    /// date when a port's transfers or bandwidth change, so a rate update reads two numbers
    /// instead of dividing twice.
    inj_share: Vec<f64>,
    ej_share: Vec<f64>,
    flows: Vec<Flow>,
    free: Vec<u32>,
    scale: f64,
}

/// A (flow, completion time, version) the caller must schedule.
pub type Reschedule = (u32, i64, u32);

impl Network {
    /// `nodes` ports with the given bandwidths (bytes per ns).
    pub fn new(inj: Vec<f64>, ej: Vec<f64>) -> Network {
        let n = inj.len();
        let mut net = Network {
            inj,
            ej,
            inj_flows: vec![Vec::new(); n],
            ej_flows: vec![Vec::new(); n],
            inj_share: vec![0.0; n],
            ej_share: vec![0.0; n],
            flows: Vec::new(),
            free: Vec::new(),
            scale: 1.0,
        };
        for p in 0..n {
            net.reshare(p);
        }
        net
    }

    /// Recomputes port `p`'s shares (both directions).
    fn reshare(&mut self, p: usize) {
        self.inj_share[p] = self.inj[p] * self.scale / self.inj_flows[p].len().max(1) as f64;
        self.ej_share[p] = self.ej[p] * self.scale / self.ej_flows[p].len().max(1) as f64;
    }

    /// The flow with this id.
    /// Distinct senders with a transfer into `dst`'s ejection port now (`scratch` is reused).
    pub fn senders_into(&self, dst: usize, scratch: &mut Vec<usize>) -> usize {
        scratch.clear();
        scratch.extend(
            self.ej_flows[dst]
                .iter()
                .map(|&id| self.flows[id as usize].src),
        );
        scratch.sort_unstable();
        scratch.dedup();
        scratch.len()
    }

    /// The flow `id`.
    pub fn flow(&self, id: u32) -> &Flow {
        &self.flows[id as usize]
    }

    /// Flows currently in flight.
    pub fn in_flight(&self) -> usize {
        self.flows.len() - self.free.len()
    }

    fn share(&self, f: &Flow) -> f64 {
        self.inj_share[f.src].min(self.ej_share[f.dst])
    }

    fn update(&mut self, id: u32, now: i64, out: &mut Vec<Reschedule>) {
        let rate = self.share(&self.flows[id as usize]);
        let f = &mut self.flows[id as usize];
        f.remaining = (f.remaining - f.rate * (now - f.updated) as f64).max(0.0);
        f.updated = now;
        if rate != f.rate {
            f.rate = rate;
            f.version = f.version.wrapping_add(1);
            out.push((id, now + finish_in(f.remaining, rate), f.version));
        }
    }

    fn update_ports(&mut self, src: usize, dst: usize, now: i64, out: &mut Vec<Reschedule>) {
        for k in 0..self.inj_flows[src].len() {
            let id = self.inj_flows[src][k];
            self.update(id, now, out);
        }
        for k in 0..self.ej_flows[dst].len() {
            let id = self.ej_flows[dst][k];
            if self.flows[id as usize].src != src {
                self.update(id, now, out);
            }
        }
    }

    /// Starts a transfer of `bytes` from `src` to `dst`; returns its id. Completion events to
    /// (re)schedule, its own included, are appended to `out`.
    pub fn start(
        &mut self,
        src: usize,
        dst: usize,
        bytes: u64,
        tag: (usize, u64),
        now: i64,
        out: &mut Vec<Reschedule>,
    ) -> u32 {
        let flow = Flow {
            src,
            dst,
            remaining: bytes as f64,
            rate: 0.0,
            updated: now,
            version: 0,
            tag,
            live: true,
        };
        let id = alloc_with(&mut self.flows, &mut self.free, |old| Flow {
            version: old.map_or(0, |o| o.version.wrapping_add(1)),
            ..flow
        });
        self.inj_flows[src].push(id);
        self.ej_flows[dst].push(id);
        self.reshare(src);
        self.reshare(dst);
        self.update_ports(src, dst, now, out);
        id
    }

    /// Whether the event `(id, version)` is current (the flow is live and its rate has not
    /// changed since the event was scheduled).
    pub fn is_current(&self, id: u32, version: u32) -> bool {
        let f = &self.flows[id as usize];
        f.live && f.version == version
    }

    /// Ends a completed transfer; returns its tag.
    pub fn finish(&mut self, id: u32, now: i64, out: &mut Vec<Reschedule>) -> (usize, u64) {
        let f = self.flows[id as usize];
        let remove = |v: &mut Vec<u32>| {
            let k = v.iter().position(|&x| x == id).expect("flow registered");
            v.swap_remove(k);
        };
        remove(&mut self.inj_flows[f.src]);
        remove(&mut self.ej_flows[f.dst]);
        self.flows[id as usize].live = false;
        self.flows[id as usize].version = f.version.wrapping_add(1);
        self.free.push(id);
        self.reshare(f.src);
        self.reshare(f.dst);
        self.update_ports(f.src, f.dst, now, out);
        f.tag
    }

    /// Scales every port's bandwidth by `scale` (a global bandwidth drop) and recomputes
    /// every flow.
    pub fn set_scale(&mut self, scale: f64, now: i64, out: &mut Vec<Reschedule>) {
        self.scale = scale;
        for p in 0..self.inj.len() {
            self.reshare(p);
        }
        for id in 0..self.flows.len() as u32 {
            if self.flows[id as usize].live {
                self.update(id, now, out);
            }
        }
    }

    /// Sets node `node`'s injection bandwidth factor relative to `base` (slow or noisy node)
    /// and recomputes its flows.
    pub fn set_inj(&mut self, node: usize, bw: f64, now: i64, out: &mut Vec<Reschedule>) {
        self.inj[node] = bw;
        self.reshare(node);
        for k in 0..self.inj_flows[node].len() {
            let id = self.inj_flows[node][k];
            self.update(id, now, out);
        }
    }

    /// Sets node `node`'s ejection bandwidth and recomputes its flows.
    pub fn set_ej(&mut self, node: usize, bw: f64, now: i64, out: &mut Vec<Reschedule>) {
        self.ej[node] = bw;
        self.reshare(node);
        for k in 0..self.ej_flows[node].len() {
            let id = self.ej_flows[node][k];
            self.update(id, now, out);
        }
    }
}

/// Nanoseconds to move `remaining` bytes at `rate` bytes/ns (rounded up, at least 1 when
/// anything remains).
fn finish_in(remaining: f64, rate: f64) -> i64 {
    if remaining <= 0.0 {
        0
    } else if rate <= 0.0 {
        i64::MAX / 4
    } else {
        ceil_at_least_1(remaining / rate)
    }
}

/// `q.ceil().max(1.0) as i64` for q > 0 without the libm call `ceil` is on targets
/// without SSE4.1 (it was 5 % of a run): the same value for every q, saturating alike.
fn ceil_at_least_1(q: f64) -> i64 {
    if q >= i64::MAX as f64 {
        return i64::MAX;
    }
    let i = q as i64; // truncates toward zero; q > 0
    let c = if (i as f64) < q { i + 1 } else { i };
    c.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceil_matches_the_float_ceil() {
        let mut r = crate::sim::rng::Rng::new(7);
        let mut qs = vec![
            1e-9,
            0.5,
            1.0,
            1.0 + f64::EPSILON,
            2.0,
            3.5,
            1e15 + 0.5,
            9.3e18,
            1e300,
        ];
        qs.extend((0..10_000).map(|k| r.unit() * 10f64.powi(k % 19)));
        for q in qs.into_iter().filter(|&q| q > 0.0) {
            assert_eq!(ceil_at_least_1(q), q.ceil().max(1.0) as i64, "{q}");
        }
    }

    #[test]
    fn fair_share_at_the_bottleneck_port() {
        // two inputs (ports 0, 1) into one compute node (port 2); 1 byte/ns everywhere
        let mut n = Network::new(vec![1.0; 3], vec![1.0; 3]);
        let mut out = vec![];
        let a = n.start(0, 2, 1000, (0, 0), 0, &mut out);
        assert_eq!(out, vec![(a, 1000, 1)]);
        out.clear();
        // the second flow halves the ejection share: a has 1000 left at t=0 -> done at 2000
        let b = n.start(1, 2, 1000, (1, 0), 0, &mut out);
        assert!(out.contains(&(a, 2000, 2)));
        assert!(out.contains(&(b, 2000, 1)));
        out.clear();
        // a finishes at 2000 (on time), b had 0 left too
        assert!(n.is_current(a, 2));
        assert_eq!(n.finish(a, 2000, &mut out), (0, 0));
        assert!(!n.is_current(a, 2));
        // b's rate goes back to 1, remaining 0 -> completes now
        assert_eq!(out, vec![(b, 2000, 2)]);
    }

    #[test]
    fn a_flow_runs_at_the_smaller_share() {
        // input 0 sends to 1 and 2; node 2 also receives from 3: flow 0->2 gets
        // min(1/2 inj, 1/2 ej) = 0.5; flow 0->1 gets min(0.5, 1) = 0.5 (no redistribution)
        let mut n = Network::new(vec![1.0; 4], vec![1.0; 4]);
        let mut out = vec![];
        let x = n.start(0, 1, 100, (0, 0), 0, &mut out);
        let y = n.start(0, 2, 100, (0, 1), 0, &mut out);
        let z = n.start(3, 2, 100, (3, 0), 0, &mut out);
        assert_eq!(n.flow(x).rate, 0.5);
        assert_eq!(n.flow(y).rate, 0.5);
        assert_eq!(n.flow(z).rate, 0.5);
        out.clear();
        n.set_scale(0.5, 10, &mut out);
        assert_eq!(n.flow(x).rate, 0.25);
        // remaining after 10 ns at 0.5: 95, at 0.25 -> 380 ns more
        assert!(out.contains(&(x, 390, n.flow(x).version)));
        assert_eq!(n.in_flight(), 3);
    }
}

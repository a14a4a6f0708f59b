//! Cancelable timers: at most one pending event per timer slot (a flow's completion, the
//! fabric's wake-up), kept in an indexed 4-ary min-heap ordered by `(time, seq)` like the
//! engine's main queue.
//!
//! The fluid network reschedules every flow at a port whenever a transfer starts or ends
//! there (~16 flows per start and per end at 384 nodes). With lazy deletion each
//! reschedule left a stale event in the main heap that still had to be pushed, sifted and
//! popped — ~20 queued events per contribution, most of the simulator's time. Here a
//! reschedule moves the slot's one entry in place, so stale events are never queued.
//!
//! Ordering is unchanged: a reschedule takes the engine's next sequence number exactly as
//! the push it replaces did, and the engine pops whichever of this heap and the main heap
//! holds the smaller `(time, seq)`, so a run handles the same live events in the same order
//! and gives bit-identical results; only the stale events are gone (counted in
//! [`Timers::superseded`]).

const NONE: u32 = u32::MAX;
const D: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    t: i64,
    seq: u64,
    slot: u32,
    tag: u32,
}

impl Slot {
    fn key(&self) -> (i64, u64) {
        (self.t, self.seq)
    }
}

/// One pending `(time, seq, tag)` per slot; pops in `(time, seq)` order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Timers {
    heap: Vec<Slot>,
    /// Heap position of every slot's entry, `NONE` when it has none.
    pos: Vec<u32>,
    superseded: u64,
}

impl Timers {
    /// Sets slot `slot`'s event to `(t, seq)` with `tag`, replacing its pending one (which is
    /// then counted as superseded).
    pub(crate) fn set(&mut self, slot: u32, t: i64, seq: u64, tag: u32) {
        let s = slot as usize;
        if s >= self.pos.len() {
            self.pos.resize(s + 1, NONE);
        }
        let e = Slot { t, seq, slot, tag };
        match self.pos[s] {
            NONE => {
                self.heap.push(e);
                let k = self.heap.len() - 1;
                self.pos[s] = k as u32;
                self.sift_up(k);
            }
            k => {
                self.superseded += 1;
                let k = k as usize;
                let earlier = e.key() < self.heap[k].key();
                self.heap[k] = e;
                if earlier {
                    self.sift_up(k);
                } else {
                    self.sift_down(k);
                }
            }
        }
    }

    /// The earliest pending event's `(time, seq)`.
    pub(crate) fn peek(&self) -> Option<(i64, u64)> {
        self.heap.first().map(Slot::key)
    }

    /// Removes and returns the earliest pending event: `(time, seq, slot, tag)`.
    pub(crate) fn pop(&mut self) -> Option<(i64, u64, u32, u32)> {
        let top = *self.heap.first()?;
        let last = self.heap.pop().expect("non-empty");
        self.pos[top.slot as usize] = NONE;
        if !self.heap.is_empty() {
            self.heap[0] = last;
            self.pos[last.slot as usize] = 0;
            self.sift_down(0);
        }
        Some((top.t, top.seq, top.slot, top.tag))
    }

    /// Events replaced before they fell due (each was a stale event under lazy deletion).
    pub(crate) fn superseded(&self) -> u64 {
        self.superseded
    }

    /// Pending events.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    fn place(&mut self, k: usize, e: Slot) {
        self.heap[k] = e;
        self.pos[e.slot as usize] = k as u32;
    }

    fn sift_up(&mut self, mut k: usize) {
        let e = self.heap[k];
        while k > 0 {
            let p = (k - 1) / D;
            if self.heap[p].key() <= e.key() {
                break;
            }
            let pe = self.heap[p];
            self.place(k, pe);
            k = p;
        }
        self.place(k, e);
    }

    fn sift_down(&mut self, mut k: usize) {
        let e = self.heap[k];
        let n = self.heap.len();
        loop {
            let first = k * D + 1;
            if first >= n {
                break;
            }
            let mut best = first;
            for c in first + 1..(first + D).min(n) {
                if self.heap[c].key() < self.heap[best].key() {
                    best = c;
                }
            }
            if self.heap[best].key() >= e.key() {
                break;
            }
            let be = self.heap[best];
            self.place(k, be);
            k = best;
        }
        self.place(k, e);
    }
}

#[cfg(test)]
mod tests {
    use super::Timers;
    use crate::sim::rng::Rng;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    #[test]
    fn a_reschedule_replaces_the_pending_event() {
        let mut q = Timers::default();
        q.set(3, 100, 1, 7);
        q.set(5, 50, 2, 0);
        q.set(3, 20, 3, 8); // earlier: moves up
        assert_eq!(q.len(), 2);
        assert_eq!(q.superseded(), 1);
        assert_eq!(q.pop(), Some((20, 3, 3, 8)));
        assert_eq!(q.pop(), Some((50, 2, 5, 0)));
        assert_eq!(q.pop(), None);
        // later: moves down; a popped slot can be set again
        q.set(1, 10, 4, 0);
        q.set(2, 30, 5, 0);
        q.set(1, 40, 6, 1);
        assert_eq!(q.peek(), Some((30, 5)));
        assert_eq!(q.pop(), Some((30, 5, 2, 0)));
        assert_eq!(q.pop(), Some((40, 6, 1, 1)));
        assert_eq!(q.superseded(), 2);
    }

    /// The same random schedule through the timers and through a binary heap with lazy
    /// deletion (what the engine did before): the same live events in the same order, and
    /// the lazy heap's stale pops are exactly the superseded count.
    #[test]
    fn same_order_as_lazy_deletion() {
        let mut rng = Rng::new(42);
        let mut q = Timers::default();
        let mut lazy: BinaryHeap<Reverse<(i64, u64, u32, u32)>> = BinaryHeap::new();
        let mut version = vec![0u32; 64];
        let (mut now, mut seq) = (0i64, 0u64);
        let (mut got, mut want, mut stale) = (vec![], vec![], 0u64);
        for step in 0..20_000 {
            // reschedule a few slots (ties in time on purpose: small range)
            for _ in 0..(rng.unit() * 4.0) as usize {
                let s = (rng.unit() * 64.0) as u32;
                let t = now + (rng.unit() * 20.0) as i64;
                seq += 1;
                version[s as usize] += 1;
                q.set(s, t, seq, version[s as usize]);
                lazy.push(Reverse((t, seq, s, version[s as usize])));
            }
            if step % 3 == 0 {
                if let Some((t, sq, s, v)) = q.pop() {
                    now = t;
                    got.push((t, sq, s, v));
                    // drain the lazy heap up to and including the same event
                    while let Some(Reverse(e)) = lazy.pop() {
                        if version[e.2 as usize] == e.3 {
                            want.push(e);
                            break;
                        }
                        stale += 1;
                    }
                }
            }
        }
        while let Some(e) = q.pop() {
            got.push(e);
        }
        while let Some(Reverse(e)) = lazy.pop() {
            if version[e.2 as usize] == e.3 {
                want.push(e);
            } else {
                stale += 1;
            }
        }
        assert!(got.len() > 1000);
        assert_eq!(got, want);
        assert_eq!(stale, q.superseded());
    }
}

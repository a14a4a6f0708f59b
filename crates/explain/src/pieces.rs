//! A path window cut into pieces, each owned by the causes on its CPUs, by a stall seen
//! outside the kernel, or by nobody (rule steps 1–3 of [`crate::path`]); and
//! [`PieceIndex`], which tallies many overlapping windows on the same CPUs from one cut of
//! their union. Pure.
//!
//! Who owns an instant depends on the instant alone (the CPUs' timelines and the measuring
//! threads' stalls), never on the window around it, so a window's pieces are the maximal
//! runs of one owner inside it. A run whose generator fell behind has windows hundreds of
//! milliseconds long that overlap one another (10,000 of them at 100 kpps held the probe
//! for over 12 minutes, cutting each window anew). The index cuts their union once and
//! sums every key's time over a window's whole pieces from prefix sums; only the two
//! clipped pieces at a window's edges are tallied directly. The tallies are exactly
//! [`sweep`]'s per window (a test compares them on random timelines).

use crate::timeline::{Cause, Class, CpuTimeline, Segment, Timeline};
use std::collections::BTreeMap;

/// A window carried by several CPUs, raw TSC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathWindow {
    /// The CPUs that carried it (the first is reported as the window's CPU).
    pub cpus: Vec<u32>,
    /// Start.
    pub start: u64,
    /// End (`>= start`).
    pub end: u64,
}

/// A stretch in which a measuring thread on `cpu` lost its CPU (a gap of its loop), raw
/// TSC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stall {
    /// The CPU the thread runs on.
    pub cpu: u32,
    /// The reading before the gap.
    pub start: u64,
    /// The reading after it.
    pub end: u64,
}

/// Who owns a piece of a window (the causes sorted, each once).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Owner<'t> {
    Causes(Vec<&'t Cause>),
    Outside,
    Uncovered,
}

/// One CPU's segments under a window, clipped to `[lo, hi)`.
struct Lane<'t> {
    cpu: &'t CpuTimeline,
    segs: &'t [Segment],
    at: usize,
    lo: u64,
    hi: u64,
}

impl<'t> Lane<'t> {
    fn clipped(&self, s: &Segment) -> (u64, u64) {
        (s.start.max(self.lo), s.end.min(self.hi))
    }

    /// At instant `t`: the cause owning it on this CPU, if any, and the next edge after
    /// `t` (`hi` when none).
    fn at(&mut self, t: u64) -> (Option<&'t Cause>, u64) {
        while let Some(s) = self.segs.get(self.at) {
            let (a, b) = self.clipped(s);
            if b > t && b > a {
                return if a <= t {
                    (Some(&self.cpu.intervals[s.interval].cause), b)
                } else {
                    (None, a)
                };
            }
            self.at += 1;
        }
        (None, self.hi)
    }
}

/// Calls `f(a, b, owner)` for the maximal runs of one owner that cut `w` (in order, no
/// gaps, together `[w.start, w.end)`); nothing for an empty window. `lost`: kernel events
/// were lost, so each CPU is known only from its first recorded event on.
pub(crate) fn sweep<'t>(
    w: &PathWindow,
    timeline: &'t Timeline,
    stalls: &[Stall],
    lost: bool,
    mut f: impl FnMut(u64, u64, &Owner<'t>),
) {
    if w.end <= w.start {
        return;
    }
    let mut lanes: Vec<Lane<'t>> = Vec::new();
    let mut outside: Vec<(u64, u64)> = Vec::new();
    for &cpu in &w.cpus {
        let Some(c) = timeline.cpu(cpu) else {
            continue;
        };
        // When events were lost (the ring overwrote the oldest), nothing is known of a CPU
        // before its first recorded event: an interval the timeline opened at the
        // window's start for an exit whose entry was lost is not stretched back over the
        // windows before it.
        let known = if lost {
            c.events.first().copied().unwrap_or(u64::MAX)
        } else {
            0
        };
        lanes.push(Lane {
            cpu: c,
            segs: c.segments_in(w.start, w.end),
            at: 0,
            lo: w.start.max(known),
            hi: w.end,
        });
        for g in stalls
            .iter()
            .filter(|g| g.cpu == cpu && g.end > w.start && g.start < w.end)
        {
            let first = c.first_event_in(g.start, g.end).unwrap_or(g.end);
            let (a, b) = (g.start.max(w.start), first.min(w.end));
            if b > a {
                outside.push((a, b));
            }
        }
    }
    let outside = union(outside);
    let mut oi = 0usize;
    let mut run: Option<(u64, Owner<'t>)> = None;
    let mut causes: Vec<&'t Cause> = Vec::new();
    let mut t = w.start;
    while t < w.end {
        let mut next = w.end;
        causes.clear();
        for lane in &mut lanes {
            let (c, edge) = lane.at(t);
            next = next.min(edge);
            if let Some(c) = c {
                causes.push(c);
            }
        }
        // one cause on two CPUs counts once
        causes.sort();
        causes.dedup();
        while outside.get(oi).is_some_and(|&(_, b)| b <= t) {
            oi += 1;
        }
        let mut out = false;
        if let Some(&(a, b)) = outside.get(oi) {
            out = a <= t;
            next = next.min(if out { b } else { a });
        }
        let same = match &run {
            Some((_, Owner::Causes(cs))) => *cs == causes,
            Some((_, Owner::Outside)) => causes.is_empty() && out,
            Some((_, Owner::Uncovered)) => causes.is_empty() && !out,
            None => false,
        };
        if !same {
            if let Some((a, o)) = run.take() {
                f(a, t, &o);
            }
            let owner = if !causes.is_empty() {
                Owner::Causes(causes.clone())
            } else if out {
                Owner::Outside
            } else {
                Owner::Uncovered
            };
            run = Some((t, owner));
        }
        t = next;
    }
    if let Some((a, o)) = run {
        f(a, w.end, &o);
    }
}

/// Sorted, merged stretches.
fn union(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(l) if a <= l.1 => l.1 = l.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// The pieces of `w` as a list (see [`sweep`]).
pub(crate) fn pieces<'t>(
    w: &PathWindow,
    timeline: &'t Timeline,
    stalls: &[Stall],
    lost: bool,
) -> Vec<(u64, u64, Owner<'t>)> {
    let mut out = Vec::new();
    sweep(w, timeline, stalls, lost, |a, b, o| {
        out.push((a, b, o.clone()))
    });
    out
}

/// A window's time by owner: per cause (outside the kernel included) and uncovered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub(crate) raw: BTreeMap<Cause, u64>,
    pub(crate) uncovered: u64,
}

/// What `owner` gives each of its keys for `len` ticks: a piece owned by several causes
/// is split equally among them, the few ticks left over going to the first.
fn shares(len: u64, owner: &Owner<'_>, mut f: impl FnMut(Key, u64)) {
    match owner {
        Owner::Causes(cs) => {
            let n = cs.len() as u64;
            let (each, mut left) = (len / n, len % n);
            for c in cs {
                let extra = u64::from(left > 0);
                left -= extra;
                f(Key::Cause((*c).clone()), each + extra);
            }
        }
        Owner::Outside => f(Key::Cause(Cause::new(Class::OutsideKernel, "")), len),
        Owner::Uncovered => f(Key::Uncovered, len),
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Cause(Cause),
    Uncovered,
}

impl Tally {
    /// Adds a piece `[a, b)` of `owner`.
    pub(crate) fn add(&mut self, a: u64, b: u64, owner: &Owner<'_>) {
        shares(b - a, owner, |k, t| self.put(k, t));
    }

    fn put(&mut self, k: Key, t: u64) {
        match k {
            Key::Cause(c) => *self.raw.entry(c).or_insert(0) += t,
            Key::Uncovered => self.uncovered += t,
        }
    }
}

/// One cut of the union of many windows on the same CPUs, with every key's running total
/// over the pieces, so a window's whole pieces are summed per key by two binary searches.
pub(crate) struct PieceIndex<'t> {
    /// Start of every piece; piece `k` ends where `k + 1` starts, the last at `end`.
    starts: Vec<u64>,
    end: u64,
    /// Owner of every piece, into `owners`.
    owner: Vec<u32>,
    owners: Vec<Owner<'t>>,
    keys: Vec<Key>,
    /// Per key: (piece, its running total through that piece), for the pieces it owns.
    hits: Vec<Vec<(u32, u64)>>,
}

impl<'t> PieceIndex<'t> {
    /// Cuts `[start, end)` on `cpus` once.
    pub(crate) fn new(
        cpus: &[u32],
        (start, end): (u64, u64),
        timeline: &'t Timeline,
        stalls: &[Stall],
        lost: bool,
    ) -> PieceIndex<'t> {
        let mut ix = PieceIndex {
            starts: Vec::new(),
            end,
            owner: Vec::new(),
            owners: Vec::new(),
            keys: Vec::new(),
            hits: Vec::new(),
        };
        let mut owner_ids: BTreeMap<Owner<'t>, u32> = BTreeMap::new();
        let mut key_ids: BTreeMap<Key, usize> = BTreeMap::new();
        let w = PathWindow {
            cpus: cpus.to_vec(),
            start,
            end,
        };
        sweep(&w, timeline, stalls, lost, |a, b, o| {
            let k = ix.starts.len() as u32;
            ix.starts.push(a);
            // most pieces repeat an owner and keys already seen: look up before cloning
            let id = match owner_ids.get(o) {
                Some(&id) => id,
                None => {
                    let id = ix.owners.len() as u32;
                    owner_ids.insert(o.clone(), id);
                    ix.owners.push(o.clone());
                    id
                }
            };
            ix.owner.push(id);
            shares(b - a, o, |key, t| {
                let j = match key_ids.get(&key) {
                    Some(&j) => j,
                    None => {
                        key_ids.insert(key.clone(), ix.keys.len());
                        ix.keys.push(key);
                        ix.hits.push(Vec::new());
                        ix.keys.len() - 1
                    }
                };
                let h = &mut ix.hits[j];
                let before = h.last().map_or(0, |l| l.1);
                h.push((k, before + t));
            });
        });
        ix
    }

    fn piece(&self, k: usize) -> (u64, u64) {
        (
            self.starts[k],
            self.starts.get(k + 1).copied().unwrap_or(self.end),
        )
    }

    fn add_piece(&self, k: usize, a: u64, b: u64, t: &mut Tally) {
        t.add(a, b, &self.owners[self.owner[k] as usize]);
    }

    /// The tally of `[start, end)`, which must lie inside the cut span.
    pub(crate) fn tally(&self, start: u64, end: u64) -> Tally {
        let mut t = Tally::default();
        if end <= start || self.starts.is_empty() {
            return t;
        }
        let k0 = self.starts.partition_point(|&s| s <= start).max(1) - 1;
        let k1 = self.starts.partition_point(|&s| s < end);
        let clip = |k: usize| {
            let (a, b) = self.piece(k);
            (a.max(start), b.min(end))
        };
        let (a, b) = clip(k0);
        self.add_piece(k0, a, b, &mut t);
        if k1 <= k0 + 1 {
            return t;
        }
        let (a, b) = clip(k1 - 1);
        self.add_piece(k1 - 1, a, b, &mut t);
        let (lo, hi) = (k0 + 1, k1 - 1);
        if hi - lo <= self.keys.len() {
            for k in lo..hi {
                let (a, b) = self.piece(k);
                self.add_piece(k, a, b, &mut t);
            }
            return t;
        }
        for (key, h) in self.keys.iter().zip(&self.hits) {
            let i = h.partition_point(|x| (x.0 as usize) < lo);
            let j = h.partition_point(|x| (x.0 as usize) < hi);
            if j > i {
                let before = if i > 0 { h[i - 1].1 } else { 0 };
                t.put(key.clone(), h[j - 1].1 - before);
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{Event, EventKind, Task};

    /// The cut as it was written before [`sweep`] (every edge collected and sorted per
    /// window), kept as the reference the sweep must equal.
    fn reference<'t>(
        w: &PathWindow,
        timeline: &'t Timeline,
        stalls: &[Stall],
        lost: bool,
    ) -> Vec<(u64, u64, Owner<'t>)> {
        if w.end <= w.start {
            return Vec::new();
        }
        let mut owned: Vec<Vec<(u64, u64, &Cause)>> = Vec::new();
        let mut outside: Vec<(u64, u64)> = Vec::new();
        let mut edges = vec![w.start, w.end];
        for &cpu in &w.cpus {
            let Some(c) = timeline.cpu(cpu) else {
                continue;
            };
            let known = if lost {
                c.events.first().copied().unwrap_or(u64::MAX)
            } else {
                0
            };
            let v: Vec<(u64, u64, &Cause)> = c
                .segments_in(w.start, w.end)
                .iter()
                .map(|s| {
                    (
                        s.start.max(w.start).max(known),
                        s.end.min(w.end),
                        &c.intervals[s.interval].cause,
                    )
                })
                .filter(|(a, b, _)| b > a)
                .collect();
            edges.extend(v.iter().flat_map(|&(a, b, _)| [a, b]));
            owned.push(v);
            for g in stalls
                .iter()
                .filter(|g| g.cpu == cpu && g.end > w.start && g.start < w.end)
            {
                let first = c.first_event_in(g.start, g.end).unwrap_or(g.end);
                let (a, b) = (g.start.max(w.start), first.min(w.end));
                if b > a {
                    outside.push((a, b));
                    edges.extend([a, b]);
                }
            }
        }
        edges.sort_unstable();
        edges.dedup();
        let mut out: Vec<(u64, u64, Owner<'t>)> = Vec::new();
        let mut at = vec![0usize; owned.len()];
        for e in edges.windows(2) {
            let (a, b) = (e[0], e[1]);
            let mut causes: Vec<&Cause> = Vec::new();
            for (v, i) in owned.iter().zip(at.iter_mut()) {
                while *i < v.len() && v[*i].1 <= a {
                    *i += 1;
                }
                if let Some(&(s, _, c)) = v.get(*i) {
                    if s <= a && !causes.contains(&c) {
                        causes.push(c);
                    }
                }
            }
            let owner = if !causes.is_empty() {
                causes.sort();
                Owner::Causes(causes)
            } else if outside.iter().any(|&(s, t)| s <= a && a < t) {
                Owner::Outside
            } else {
                Owner::Uncovered
            };
            match out.last_mut() {
                Some((_, end, o)) if *end == a && *o == owner => *end = b,
                _ => out.push((a, b, owner)),
            }
        }
        out
    }

    /// A small generator (xorshift), so the cases are the same on every run.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n.max(1)
        }
    }

    fn task(c: &str, p: i32) -> Task {
        Task {
            comm: c.into(),
            pid: p,
            prio: 120,
        }
    }

    /// Nested softirqs, timer vectors and preemptions (the same names on both CPUs, so a
    /// piece can hold one cause twice) at random times on CPUs 0 and 1.
    fn random_timeline(r: &mut Rng, span: u64) -> Timeline {
        let mut events = Vec::new();
        for cpu in 0..2u32 {
            let mut t = r.below(50);
            while t < span {
                let len = 1 + r.below(40);
                let kind = r.below(3);
                let (entry, exit) = match kind {
                    0 => (
                        EventKind::SoftirqEntry {
                            vec: 3,
                            action: "NET_RX".into(),
                        },
                        EventKind::SoftirqExit { vec: 3 },
                    ),
                    1 => (
                        EventKind::VectorEntry {
                            vector: "local_timer".into(),
                        },
                        EventKind::VectorExit {
                            vector: "local_timer".into(),
                        },
                    ),
                    _ => {
                        let other = ["cc1", "kworker/0:1"][r.below(2) as usize];
                        (
                            EventKind::Switch {
                                prev: task("latlab-probe", 7),
                                prev_state: "R".into(),
                                next: task(other, 30),
                            },
                            EventKind::Switch {
                                prev: task(other, 30),
                                prev_state: "S".into(),
                                next: task("latlab-probe", 7),
                            },
                        )
                    }
                };
                events.push(Event {
                    cpu,
                    tsc: t,
                    kind: entry,
                });
                // a softirq may nest a timer vector
                if kind == 0 && len > 10 && r.below(2) == 0 {
                    let a = t + 1 + r.below(len - 5);
                    events.push(Event {
                        cpu,
                        tsc: a,
                        kind: EventKind::VectorEntry {
                            vector: "local_timer".into(),
                        },
                    });
                    events.push(Event {
                        cpu,
                        tsc: a + 1 + r.below(3),
                        kind: EventKind::VectorExit {
                            vector: "local_timer".into(),
                        },
                    });
                }
                events.push(Event {
                    cpu,
                    tsc: t + len,
                    kind: exit,
                });
                t += len + r.below(60);
            }
        }
        events.sort_by_key(|e| (e.tsc, e.cpu));
        crate::timeline::watching_latlab(&events, span + 100)
    }

    fn random_stalls(r: &mut Rng, span: u64) -> Vec<Stall> {
        (0..20)
            .map(|_| {
                let start = r.below(span);
                Stall {
                    cpu: r.below(2) as u32,
                    start,
                    end: start + 1 + r.below(200),
                }
            })
            .collect()
    }

    #[test]
    fn the_sweep_cuts_every_window_as_the_edge_list_did() {
        let mut r = Rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..200 {
            let span = 2_000;
            let t = random_timeline(&mut r, span);
            let stalls = random_stalls(&mut r, span);
            let lost = case % 3 == 0;
            for _ in 0..20 {
                let start = r.below(span);
                let w = PathWindow {
                    cpus: [vec![0, 1], vec![1], vec![1, 0], vec![0, 2]][r.below(4) as usize]
                        .clone(),
                    start,
                    end: start + r.below(400),
                };
                let want = reference(&w, &t, &stalls, lost);
                assert_eq!(pieces(&w, &t, &stalls, lost), want, "case {case}, {w:?}");
                // the pieces tile the window
                if let (Some(f), Some(l)) = (want.first(), want.last()) {
                    assert_eq!((f.0, l.1), (w.start, w.end));
                    assert!(want
                        .windows(2)
                        .all(|p| p[0].1 == p[1].0 && p[0].2 != p[1].2));
                }
            }
        }
    }

    #[test]
    fn the_index_tallies_each_window_as_its_own_cut_does() {
        let mut r = Rng(0x2545_f491_4f6c_dd1d);
        let mut via_prefix = 0;
        for case in 0..100 {
            let span = 5_000;
            let t = random_timeline(&mut r, span);
            let stalls = random_stalls(&mut r, span);
            let lost = case % 4 == 0;
            let cpus = vec![0, 1];
            let (lo, hi) = (r.below(1_000), 4_000 + r.below(1_000));
            let ix = PieceIndex::new(&cpus, (lo, hi), &t, &stalls, lost);
            for _ in 0..40 {
                let start = lo + r.below(hi - lo);
                let end = (start + r.below(3_000)).min(hi);
                let w = PathWindow {
                    cpus: cpus.clone(),
                    start,
                    end,
                };
                let mut want = Tally::default();
                sweep(&w, &t, &stalls, lost, |a, b, o| want.add(a, b, o));
                let mut got = ix.tally(start, end);
                // a cause given 0 ticks is the same as one not given any
                want.raw.retain(|_, v| *v > 0);
                got.raw.retain(|_, v| *v > 0);
                assert_eq!(got, want, "case {case}, [{start}, {end})");
                let whole = ix.starts.partition_point(|&s| s < end)
                    - ix.starts.partition_point(|&s| s <= start);
                via_prefix += usize::from(whole > ix.keys.len() + 2);
            }
        }
        assert!(via_prefix > 100, "the prefix sums were used: {via_prefix}");
    }
}

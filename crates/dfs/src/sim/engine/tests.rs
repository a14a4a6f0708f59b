//! The engine with a hand-placed stall: what a stalled compute node may and may not hold
//! up at the inputs.

use super::*;
use crate::sim::data::SimData;
use crate::sim::noise::Stalls;

/// Inputs, compute nodes and the stalled compute node's stall, ns.
const INPUTS: usize = 2;
const COMPUTES: usize = 4;
const STALL: (i64, i64) = (100_000, 3_100_000);

/// Runs `mode` with `slots` ring slots per input and no noise, where compute node 0 stalls
/// once over [`STALL`] and no other node ever stalls: the contributions sent during the
/// stall, and the run's data at its end.
fn compute_zero_stalls(mode: Mode, slots: u32) -> (u64, SimData) {
    let mut cfg = SimConfig::new(INPUTS, COMPUTES, mode);
    cfg.net.noise = 0.0;
    cfg.stalls = None;
    cfg.topology.slots_per_input = slots;
    cfg.params.ts_per_intvl = 400;
    cfg.time_slices = 2_000;
    let mut s = Sim::new(&cfg);
    let never = Stalls::once(i64::MAX, i64::MAX);
    s.stalls = (0..INPUTS + COMPUTES)
        .map(|n| match n {
            INPUTS => Stalls::once(STALL.0, STALL.1),
            _ => never.clone(),
        })
        .collect();
    s.start_events();
    let (mut before, mut after) = (None, None);
    while let Some((t, ev)) = s.next_event() {
        if t >= STALL.0 {
            before.get_or_insert(s.sent);
        }
        if t >= STALL.1 {
            after.get_or_insert(s.sent);
        }
        s.handle(t, ev);
    }
    let during = after.expect("the run outlasts the stall") - before.expect("reached");
    (during, s.finish().data)
}

#[test]
fn a_stalled_compute_node_does_not_hold_the_inputs_nic() {
    // 64 slots: more rounds than 3 ms hold, so the credits never bind; the writes to the
    // stalled node complete at the sender's NIC, so the cap of 8 writes in flight does not
    // stop the inputs either. When the cap waited for the compute node's acknowledgement,
    // an input stopped after 8 writes to it: at most 8 rounds, 8 × 4 contributions.
    let cap_rounds = SimConfig::new(INPUTS, COMPUTES, Mode::BestEffort)
        .net
        .max_inflight as u64;
    let held = INPUTS as u64 * cap_rounds * COMPUTES as u64;
    for mode in [Mode::BestEffort, Mode::Dfs] {
        let (during, d) = compute_zero_stalls(mode, 64);
        assert!(
            during > 3 * held,
            "{mode:?}: {during} contributions sent in 3 ms of stall (the cap allowed {held})"
        );
        assert_eq!(d.limits.as_ref().unwrap().credit_refusals, 0, "{mode:?}");
        assert!(d.complete && d.compute.overruns == 0, "{mode:?}");
    }
}

#[test]
fn a_stalled_compute_node_still_stops_its_ring_credits() {
    // 4 slots: FLESnet's credits are the compute node's consumption, so during the stall
    // each input may write only 4 local indices ahead at the stalled node. Best effort
    // then blocks head-of-line (at most ~4 more rounds); DFS skips the node and keeps
    // sending to the others.
    let slots = 4;
    let (be, d) = compute_zero_stalls(Mode::BestEffort, slots);
    let bound = INPUTS as u64 * (slots as u64 + 1) * COMPUTES as u64;
    assert!(
        be <= bound,
        "best effort sent {be} during the stall (bound {bound})"
    );
    assert!(d.limits.as_ref().unwrap().credit_refusals > 0);
    assert!(d.complete && d.compute.overruns == 0);
    let (dfs, d) = compute_zero_stalls(Mode::Dfs, slots);
    assert!(
        dfs > 3 * bound,
        "DFS sent {dfs} during the stall (best effort {be})"
    );
    assert!(d.limits.as_ref().unwrap().credit_refusals > 0);
    assert!(d.complete && d.compute.overruns == 0);
}

//! A compute rank: reads and verifies contributions from its RMA window, completes and
//! releases time-slices, answers with acknowledgements and credits, and runs a DDE replica.

use super::error::RunError;
use super::transport::Transport;
use super::wire::{
    enc, idle_wait, u64s, warmup, LocalClock, RankStats, TAG_ACK, TAG_CREDIT, TAG_FINISHED,
    TAG_PROPOSAL, TAG_REPORT, TAG_WRITTEN,
};
use crate::compute::{Arrival, ArrivalOutcome, ComputeNode};
use crate::dde::Dde;
use crate::ie::Report;
use crate::model::{self, ContributionHeader, HEADER_BYTES};
use crate::mpidata::RunConfig;
use crate::Time;
use latlab_core::hist::{HistConfig, LatencyHistogram};
use latlab_core::units::Nanos;

pub(super) fn compute_loop(
    t: &mut impl Transport,
    cfg: &RunConfig,
    rank: usize,
    clock: LocalClock,
    begin_local: Time,
) -> Result<RankStats, RunError> {
    let (ni, nc) = (cfg.topology.inputs, cfg.topology.computes);
    let c = rank - ni;
    let slots = cfg.topology.slots_per_input as usize;
    let sb = cfg.slot_bytes();
    let mut node = ComputeNode::new(c, ni, nc, cfg.topology.slots_per_input);
    let mut dde = (c < cfg.replicas()).then(|| Dde::new(ni, cfg.params));
    if let Some(d) = dde.as_mut() {
        for i in 0..ni {
            // all ranks left the same barrier: seed with the injected offsets
            let input_begin = begin_local - (rank as i64 - i as i64) * cfg.clock_skew_ns;
            d.clock_mut().seed(i, input_begin, begin_local);
        }
    }
    let mut killed = false;
    let hc = HistConfig::default();
    let mut completion = LatencyHistogram::new(hc).expect("valid");
    let mut completion_all = LatencyHistogram::new(hc).expect("valid");
    let len = cfg.params.interval_len(nc);
    let warmup_ts = warmup(cfg.total_ts(), len);
    let mut slot = vec![0u8; sb];
    let mut rx = vec![0u8; 4096];
    let mut tx = Vec::with_capacity(64);
    let mut finished = 0usize;
    let mut first_arrival = 0u64;
    let mut last_arrival = 0u64;
    let expected = cfg.total_ts() / nc as u64;
    let mut fill: Vec<(u64, Vec<u32>)> = Vec::with_capacity(4096);
    let mut next_sample = latlab_sys::clocks::monotonic_ns();
    let mut idle = 0u32;
    let mut speedups = Vec::new();
    loop {
        let mut progress = false;
        while let Some((n, from, tag)) = t.recv(&mut rx)? {
            progress = true;
            match tag {
                TAG_WRITTEN => {
                    let ts = u64s(&rx[..n]).next().unwrap_or(u64::MAX);
                    let k = model::local_index(ts, nc) as usize;
                    let off = (from * slots + k % slots) * sb;
                    t.read(off, &mut slot)?;
                    let hdr = ContributionHeader::read(&slot);
                    let computed = model::checksum(&slot[HEADER_BYTES..]);
                    let carried = match hdr {
                        Some(h)
                            if h.input as usize == from
                                && h.ts == ts
                                && h.len as usize == slot.len() - HEADER_BYTES =>
                        {
                            h.checksum
                        }
                        // a wrong or missing header counts as a checksum failure
                        _ => !computed,
                    };
                    let now = clock.now();
                    let mono = latlab_sys::clocks::monotonic_ns();
                    if first_arrival == 0 {
                        first_arrival = mono;
                    }
                    last_arrival = mono;
                    let out = node.on_arrival(
                        Arrival {
                            input: from,
                            ts,
                            carried_checksum: carried,
                            computed_checksum: computed,
                        },
                        now,
                    );
                    enc(&[ts, node.ack_pointer()], &mut tx);
                    t.send(from, TAG_ACK, &tx)?;
                    if let ArrivalOutcome::Completed(comp) = out {
                        let d = Nanos(comp.duration().max(0) as u64);
                        completion_all.record(d);
                        if ts >= warmup_ts {
                            completion.record(d);
                        }
                        if let Some(ack) = node.release(comp.local) {
                            enc(&[ack], &mut tx);
                            for i in 0..ni {
                                t.send(i, TAG_CREDIT, &tx)?;
                            }
                        }
                    }
                }
                TAG_REPORT => {
                    let r: Report = serde_json::from_slice(&rx[..n])
                        .map_err(|e| RunError::Message(from as i32, e.to_string()))?;
                    if let Some((k, at)) = cfg.kill_dde {
                        if k == c && r.actual.index >= at && !killed {
                            killed = true;
                            // tell the inputs this replica is gone (a heartbeat timeout in
                            // FLESnet's later versions); reports to it stop
                            for i in 0..ni {
                                t.send(i, TAG_PROPOSAL, &[])?;
                            }
                        }
                    }
                    if !killed {
                        if let Some(d) = dde.as_mut() {
                            for (i, p) in d.on_report(&r, clock.now()) {
                                let b = serde_json::to_vec(&p).expect("serialisable");
                                t.send(i, TAG_PROPOSAL, &b)?;
                            }
                        }
                    }
                }
                TAG_FINISHED => finished += 1,
                t => {
                    return Err(RunError::Message(
                        from as i32,
                        format!("unexpected tag {t} at a compute node"),
                    ))
                }
            }
        }
        let mono = latlab_sys::clocks::monotonic_ns();
        if mono >= next_sample {
            fill.push((mono, (0..ni).map(|i| node.fill(i)).collect()));
            next_sample = mono + cfg.sample_ns.max(1) as u64;
        }
        if finished == ni && node.counters().released >= expected {
            break;
        }
        if finished == ni && !progress {
            // every input is done: whatever is still incomplete stays incomplete (counted)
            break;
        }
        if progress {
            idle = 0;
        } else {
            idle_wait(&mut idle);
        }
    }
    if let Some(d) = &dde {
        speedups = d
            .proposals()
            .iter()
            .filter(|(_, p)| p.ssu.speedup)
            .map(|(j, _)| *j)
            .collect();
    }
    Ok(RankStats {
        rank,
        compute: node.counters(),
        incomplete: node.incomplete(),
        completion_b64: Some(completion.to_base64()),
        completion_all_b64: Some(completion_all.to_base64()),
        first_arrival_ns: first_arrival,
        last_arrival_ns: last_arrival,
        fill,
        dde: dde.as_ref().map(|d| d.counters()),
        dde_killed: killed,
        speedups,
        clock_offset_ns: clock.offset,
        clock_drift: clock.drift,
        ..RankStats::default()
    })
}

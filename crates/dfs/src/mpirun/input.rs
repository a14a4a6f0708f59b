//! An input rank: sends contributions (best effort, or paced by its Input Engine), takes
//! acknowledgements and credits, reports intervals to the DDE replicas.

use super::error::RunError;
use super::transport::Transport;
use super::wire::{
    enc, idle_wait, u64s, LocalClock, RankStats, TAG_ACK, TAG_CREDIT, TAG_FINISHED, TAG_PROPOSAL,
    TAG_REPORT, TAG_STATS, TAG_WRITTEN,
};
use crate::ie::{InputEngine, Poll, Proposal};
use crate::model::{self, ContributionHeader, HEADER_BYTES};
use crate::mpidata::RunConfig;
use crate::params::Mode;
use crate::sender::{BestEffortSender, Credits};
use crate::Time;

pub(super) fn input_loop(
    t: &mut impl Transport,
    cfg: &RunConfig,
    rank: usize,
    clock: LocalClock,
    early_stats: &mut Vec<Vec<u8>>,
) -> Result<RankStats, RunError> {
    let (ni, nc) = (cfg.topology.inputs, cfg.topology.computes);
    let total = cfg.total_ts();
    let input = rank;
    let slots = cfg.topology.slots_per_input as usize;
    let sb = cfg.slot_bytes();
    let mts = cfg.topology.mts_bytes as usize;
    let mut credits = Credits::new(nc, cfg.topology.slots_per_input);
    let mut be = BestEffortSender::new(input, nc, total);
    let mut ie = InputEngine::new(input, nc, cfg.params, total);
    let mut buf = vec![0u8; sb];
    let mut rx = vec![0u8; 256];
    let mut tx = Vec::with_capacity(64);
    let mut acked = 0u64;
    let mut sent = 0u64;
    let mut reports = Vec::new();
    let mut replicas_alive = vec![true; cfg.replicas()];
    let start_ns = latlab_sys::clocks::monotonic_ns();
    let mut idle = 0u32;
    let mut wait_until: Option<Time> = None;
    loop {
        let mut progress = false;
        // control messages
        while let Some((n, from, tag)) = t.recv(&mut rx)? {
            progress = true;
            let from = from as i32;
            let b = &rx[..n];
            match tag {
                TAG_ACK => {
                    let mut it = u64s(b);
                    let (Some(ts), Some(ack)) = (it.next(), it.next()) else {
                        return Err(RunError::Message(from, "short ACK".into()));
                    };
                    credits.on_ack_pointer(from as usize - ni, ack);
                    acked += 1;
                    if cfg.mode == Mode::Dfs {
                        ie.on_ack(ts, clock.now());
                        while let Some(r) = ie.take_report() {
                            reports.push(r.actual);
                            let b = serde_json::to_vec(&r).expect("serialisable");
                            for (k, alive) in replicas_alive.iter().enumerate() {
                                if *alive {
                                    t.send(ni + k, TAG_REPORT, &b)?;
                                }
                            }
                        }
                    }
                }
                TAG_CREDIT => {
                    let ack = u64s(b).next().unwrap_or(0);
                    credits.on_ack_pointer(from as usize - ni, ack);
                }
                TAG_PROPOSAL => {
                    if b.is_empty() {
                        // the replica announces that it stopped
                        replicas_alive[from as usize - ni] = false;
                    } else {
                        let p: Proposal = serde_json::from_slice(b)
                            .map_err(|e| RunError::Message(from, e.to_string()))?;
                        ie.on_proposal(p);
                        wait_until = None;
                    }
                }
                // rank 0 collects statistics at the end; a rank that finished early sends
                // them while rank 0 is still sending
                TAG_STATS if rank == 0 => early_stats.push(b.to_vec()),
                t => {
                    return Err(RunError::Message(
                        from,
                        format!("unexpected tag {t} at an input"),
                    ))
                }
            }
        }
        // send what is due
        let mut done = false;
        if wait_until.map_or(true, |t| clock.now() >= t) {
            wait_until = None;
            loop {
                let ts = match cfg.mode {
                    Mode::BestEffort => match be.next(&credits) {
                        Some(ts) => {
                            be.sent();
                            ts
                        }
                        None => {
                            done = be.finished() && acked == sent;
                            break;
                        }
                    },
                    Mode::Flesnet => unreachable!("RunConfig::validate refuses flesnet"),
                    Mode::Dfs => {
                        let now = clock.now();
                        match ie.poll(now, &mut |ts| credits.allows(ts)) {
                            Poll::Send(ts) => {
                                ie.sent(ts, now);
                                ts
                            }
                            Poll::WaitUntil(t) => {
                                wait_until = Some(t);
                                break;
                            }
                            Poll::Idle => break,
                            Poll::Done => {
                                done = true;
                                break;
                            }
                        }
                    }
                };
                progress = true;
                let cn = model::compute_of(ts, nc);
                let k = model::local_index(ts, nc) as usize;
                model::fill_payload(input as u32, ts, &mut buf[HEADER_BYTES..]);
                ContributionHeader {
                    input: input as u32,
                    ts,
                    len: mts as u64,
                    checksum: model::checksum(&buf[HEADER_BYTES..]),
                }
                .write(&mut buf[..HEADER_BYTES]);
                let off = (input * slots + k % slots) * sb;
                t.put(ni + cn, off, &buf)?;
                enc(&[ts], &mut tx);
                t.send(ni + cn, TAG_WRITTEN, &tx)?;
                sent += 1;
            }
        }
        if done {
            break;
        }
        if progress {
            idle = 0;
        } else {
            idle_wait(&mut idle);
        }
    }
    let end_ns = latlab_sys::clocks::monotonic_ns();
    for cn in 0..nc {
        t.send(ni + cn, TAG_FINISHED, &[])?;
    }
    Ok(RankStats {
        rank,
        sent,
        start_ns,
        end_ns,
        ie: ie.counters(),
        reports,
        clock_offset_ns: clock.offset,
        clock_drift: clock.drift,
        ..RankStats::default()
    })
}

//! `latlab dfs bench`: the MPI_Put many-to-many micro-benchmark of §V-A (feature `mpi`).
//!
//! The first half of the ranks send, the second half receive. Each receiver exposes a
//! window with one slot per sender. In a *round* every sender writes one message into every
//! receiver's window (`MPI_Put`, receivers visited in offset order starting at the sender's
//! index, completed together with `MPI_Win_flush_all`); senders run independently after a
//! start barrier. Per message size the benchmark records every round's duration; the
//! bandwidth per sender is bytes per round × rounds / time. The *Mix* variant adds, for each
//! big message, one 16-byte and two 64-byte messages to the same receiver (the paper's
//! descriptors and SYNC messages, Fig. 5).
//!
//! With `--transport ofi` the same rounds are `fi_write`s into the receivers' registered
//! regions, completed with delivery semantics per round ([`ofi`]): the paper's
//! libfabric side of Figs. 3–5.

use crate::sim::FiveNum;
use latlab_core::hist::{HistConfig, LatencyHistogram};
use latlab_core::results::{Provenance, ResultFile, StoredHistogram};
use latlab_core::units::Nanos;
use latlab_sys::mpi_rma::Window;
use mpi::traits::*;
use serde::{Deserialize, Serialize};

pub use crate::mpidata::{
    BenchConfig, BenchData, BenchRow, Transport, TransportConfig, BENCH_KIND as RESULT_KIND,
};

#[cfg(feature = "ofi")]
mod ofi;
mod shared;

use shared::{rounds, variants, SenderRun, SMALL};
pub use shared::{BenchError, TransportError};

const TAG_RESULT: i32 = 21;

#[derive(Serialize, Deserialize)]
struct SenderResult {
    /// per (size, mix): rounds, total ns, histogram (base64)
    runs: Vec<SenderRun>,
}

/// Runs the benchmark under MPI (data over `transport`); returns the result file on rank 0.
pub fn run(
    resolve: impl FnOnce(usize) -> Result<BenchConfig, String>,
    transport: TransportConfig,
    argv: Vec<String>,
    provenance: impl FnOnce() -> Provenance,
) -> Result<Option<ResultFile>, BenchError> {
    let universe = mpi::initialize().ok_or(BenchError::Init)?;
    let world = universe.world();
    let rank = world.rank() as usize;
    let size = world.size() as usize;
    let (cfg, tc) = crate::mpirun::broadcast_config(&world, || {
        let c = resolve(size)?;
        c.validate()?;
        Ok((c, crate::mpirun::resolve_transport(transport)?))
    })
    .map_err(|e| TransportError::Config(e.to_string()))?
    .map_err(TransportError::Config)?;
    if size < 2 || size % 2 != 0 {
        return Err(BenchError::Ranks(size));
    }
    let ns = size / 2;
    let nr = size - ns;
    let runs = match tc.transport {
        Transport::Mpi => measure_mpi(&world, &cfg, rank, ns, nr)?,
        #[cfg(feature = "ofi")]
        Transport::Ofi => ofi::measure(
            &world,
            &cfg,
            tc.provider.as_deref().unwrap_or_default(),
            rank,
            ns,
        )?,
        #[cfg(not(feature = "ofi"))]
        Transport::Ofi => unreachable!("resolve_transport refuses ofi without the feature"),
    };
    if rank == 0 {
        let mut all = vec![SenderResult { runs }];
        let mut buf = Vec::new();
        for _ in 1..ns {
            let (m, st) = world.any_process().matched_probe_with_tag(TAG_RESULT);
            buf.resize(st.count(u8::equivalent_datatype()) as usize, 0);
            m.matched_receive_into(&mut buf[..]);
            all.push(
                serde_json::from_slice(&buf).map_err(|e| TransportError::Config(e.to_string()))?,
            );
        }
        world.barrier();
        return Ok(Some(assemble(cfg, &tc, ns, nr, all, argv, provenance())));
    } else if rank < ns {
        let b = serde_json::to_vec(&SenderResult { runs }).expect("json");
        world.process_at_rank(0).send_with_tag(&b[..], TAG_RESULT);
    }
    world.barrier();
    Ok(None)
}

/// The MPI measurement: one window per variant, `MPI_Put`s flushed per round.
fn measure_mpi(
    world: &mpi::topology::SimpleCommunicator,
    cfg: &BenchConfig,
    rank: usize,
    ns: usize,
    nr: usize,
) -> Result<Vec<SenderRun>, TransportError> {
    let max = *cfg.sizes.iter().max().unwrap_or(&1) as usize;
    let small: usize = SMALL.iter().sum();
    let slot = max + small;
    let hc = HistConfig::default();
    let mut runs = Vec::new();
    for (sz, mix) in variants(cfg) {
        let win = Window::allocate(world, if rank >= ns { ns * slot } else { 0 })?;
        let rounds = rounds(cfg, sz, nr);
        let buf = vec![0x5au8; sz as usize];
        let smalls: Vec<Vec<u8>> = SMALL.iter().map(|&n| vec![0xa5u8; n]).collect();
        let mut h = LatencyHistogram::new(hc).expect("valid");
        world.barrier();
        let start = latlab_sys::clocks::monotonic_ns();
        if rank < ns {
            for _ in 0..rounds {
                let t = latlab_sys::clocks::monotonic_ns();
                let mut b = win.batch();
                for m in 0..nr {
                    let r = (rank + m) % nr;
                    let off = rank * slot;
                    b.put((ns + r) as i32, off, &buf)?;
                    if mix {
                        let mut o = off + max;
                        for s in &smalls {
                            b.put((ns + r) as i32, o, s)?;
                            o += s.len();
                        }
                    }
                }
                b.flush_all()?;
                h.record(Nanos(latlab_sys::clocks::monotonic_ns() - t));
            }
        }
        let total = latlab_sys::clocks::monotonic_ns() - start;
        world.barrier();
        drop(win);
        if rank < ns {
            runs.push((sz, mix, rounds, total, h.to_base64()));
        }
    }
    Ok(runs)
}

fn assemble(
    cfg: BenchConfig,
    tc: &TransportConfig,
    ns: usize,
    nr: usize,
    all: Vec<SenderResult>,
    argv: Vec<String>,
    provenance: Provenance,
) -> ResultFile {
    let hc = HistConfig::default();
    let mut r = ResultFile::new(
        RESULT_KIND,
        argv,
        serde_json::to_value(&cfg).expect("json"),
        provenance,
    );
    let mut rows = Vec::new();
    let nruns = all.first().map_or(0, |s| s.runs.len());
    for k in 0..nruns {
        let (sz, mix, rounds, _, _) = all[0].runs[k].clone();
        let mut h = LatencyHistogram::new(hc).expect("valid");
        let mut bws = Vec::new();
        let mut means = Vec::new();
        for s in &all {
            let (_, _, rounds, total, b64) = &s.runs[k];
            if let Ok(x) = LatencyHistogram::from_base64(b64, hc, 0) {
                let _ = h.merge(&x);
            }
            let bytes = sz as f64 * nr as f64 * *rounds as f64;
            bws.push(bytes / (*total).max(1) as f64);
            means.push(*total as f64 / *rounds as f64 / 1e3);
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let minmax = |v: &[f64]| {
            (
                v.iter().copied().fold(f64::INFINITY, f64::min),
                v.iter().copied().fold(0.0, f64::max),
            )
        };
        let (bmin, bmax) = minmax(&bws);
        rows.push(BenchRow {
            size: sz,
            mix,
            rounds,
            round_us_mean: mean(&means),
            round_us: FiveNum::from_hist(&h, 1e3),
            bw_per_sender_gbs: (mean(&bws), bmin, bmax),
            aggregate_gbs: bws.iter().sum(),
        });
        r.histograms.push(
            StoredHistogram::new(format!("round_{sz}{}", if mix { "_mix" } else { "" }), &h)
                .with_label("size", sz.to_string())
                .with_label("mix", mix.to_string())
                .with_label("transport", tc.transport.name()),
        );
    }
    r.counters.insert("senders".into(), ns as u64);
    r.counters.insert("receivers".into(), nr as u64);
    r.data = serde_json::to_value(BenchData {
        config: cfg,
        senders: ns,
        receivers: nr,
        rows,
        transport: tc.transport,
        provider: tc.provider.clone(),
    })
    .expect("json");
    r
}

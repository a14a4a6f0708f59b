//! What a run measured: the TX and whole-run outcomes, their counters, the data a
//! `net.probe` result stores, and the verdict on a generator that fell behind.

use super::checks::CheckData;
use super::config::{Mode, ProbeConfig};
use super::rx::{Receiver, RxCounters};
use super::series;
use super::tx::TxOutcome;
use crate::iface::InterfaceFacts;
use crate::wire::WireError;
use latlab_core::hist::LatencyHistogram;
use latlab_core::parse::Percentile;
use latlab_core::units::Nanos;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where a thread ran: pinned CPU, scheduling policy and priority.
pub(super) type ThreadPlace = (Option<u32>, String, i32);

/// The outcome of a probe run.
#[derive(Clone, Debug)]
pub struct ProbeOutcome {
    /// TX side.
    pub tx: TxOutcome,
    /// RX counters.
    pub rx: RxCounters,
    /// Named histograms (see [`series`]); per-flow ones as `flowN.user.sched` etc.
    pub histograms: Vec<(String, LatencyHistogram)>,
    /// Per interval: (start ns since the first scheduled send, user.sched, user.actual).
    pub intervals: Vec<(Nanos, LatencyHistogram, LatencyHistogram)>,
    /// RX placement.
    pub rx_placement: (Option<u32>, String, i32),
    /// Warnings found while setting up (e.g. hardware timestamps unavailable).
    pub warnings: Vec<String>,
    /// Hardware timestamping state per interface.
    pub interfaces: Vec<InterfaceFacts>,
    /// UDP datagrams dropped for full socket receive buffers in this network namespace
    /// during the run (`/proc/net/snmp` `RcvbufErrors`; other sockets count too).
    pub udp_rcvbuf_drops: u64,
    /// Time from the first scheduled send to the last send, ns.
    pub tx_elapsed_ns: u64,
    /// Packets the kernel dropped for full input backlogs during the run (host-wide,
    /// `/proc/net/softnet_stat`; other traffic counts too).
    pub backlog_drops: u64,
    /// What the self-checks read (see [`super::checks`]).
    pub checks: CheckData,
    /// `--explain`: every measured sample's window (TX stamp, RX stamp), raw clock.
    pub samples: crate::explain::SampleLog,
    /// `--explain`: the RX thread's stalls (busy polling only).
    pub rx_stalls: Vec<latlab_explain::Gap>,
    /// Stalls of the RX thread that did not fit its recorder.
    pub rx_stall_overflow: u64,
    /// `--io xdp`: per AF_XDP port, how it was attached and bound.
    pub xdp: Vec<String>,
}

pub(super) fn finish(
    cfg: &ProbeConfig,
    tx: TxOutcome,
    r: Receiver,
    rx_placement: (Option<u32>, String, i32),
    warnings: Vec<String>,
    interfaces: Vec<InterfaceFacts>,
) -> ProbeOutcome {
    let h = r.hists;
    let mut hs: Vec<(String, LatencyHistogram)> = vec![
        (series::USER_SCHED.into(), h.user_sched),
        (series::USER_ACTUAL.into(), h.user_actual),
    ];
    if cfg.mode == Mode::OpenLoop {
        hs.push((series::LATENESS.into(), tx.lateness.clone()));
    } else {
        // closed loop has no schedule: "scheduled" is the actual send
        hs.remove(0);
    }
    if cfg.sources.kernel {
        hs.push((series::KERNEL.into(), h.kernel));
        for (n, hh) in series::SEGMENTS.iter().zip(h.seg) {
            hs.push(((*n).into(), hh));
        }
    }
    if cfg.sources.hardware && h.hardware.count() > 0 {
        hs.push((series::HARDWARE.into(), h.hardware));
    }
    for (i, (a, b)) in h.flow_sched.into_iter().zip(h.flow_actual).enumerate() {
        if cfg.mode == Mode::OpenLoop {
            hs.push((format!("flow{i}.user.sched"), a));
        }
        hs.push((format!("flow{i}.user.actual"), b));
    }
    let rx_stalls = r.stalls.gaps().to_vec();
    let rx_stall_overflow = r.stalls.overflow();
    let samples = r.samples;
    let raw_iv = r.interval_raw;
    let clock = r.clock;
    let mean_gap_ns = 1e12 / cfg.milli_pps.max(1) as f64;
    let tx_elapsed_ns = clock.delta_nanos(tx.start, tx.end).get();
    let c = &tx.counters;
    let checks = CheckData {
        gaps_ns: tx.sends.gaps_ns(&clock),
        // a run that stopped at its deadline: every send over the time the run took (its
        // measured phase also carried warm-up probes sent late)
        achieved_pps: if c.unsent > 0 {
            (tx_elapsed_ns > 0).then(|| c.sent as f64 * 1e9 / tx_elapsed_ns as f64)
        } else {
            tx.sends.achieved_pps(&clock, mean_gap_ns)
        },
        scheduled: c.sent + c.send_errors + c.unsent,
        unsent: c.unsent,
        latencies: r.latencies.values().to_vec(),
        measured_ns: tx
            .sends
            .stopped_at_ns()
            .map_or(cfg.duration.get(), |s| s.saturating_sub(cfg.warmup.get())),
        stopped_early: tx.sends.stopped_at_ns().is_some(),
        monitor: Default::default(),
    };
    let last_used = h
        .intervals
        .iter()
        .rposition(|(a, b)| a.count() + b.count() > 0)
        .map(|i| i + 1)
        .unwrap_or(0);
    let intervals = h
        .intervals
        .into_iter()
        .take(last_used)
        .enumerate()
        .map(|(i, (a, b))| (clock.raw_to_nanos(raw_iv * i as u64), a, b))
        .collect();
    ProbeOutcome {
        tx,
        rx: r.counters,
        histograms: hs,
        intervals,
        rx_placement,
        warnings,
        interfaces,
        backlog_drops: 0,
        udp_rcvbuf_drops: 0,
        tx_elapsed_ns,
        checks,
        samples,
        rx_stalls,
        rx_stall_overflow,
        xdp: Vec::new(),
    }
}

/// Kind of a probe result.
pub const RESULT_KIND: &str = "net.probe";

/// Kind-specific data stored in a `net.probe` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeData {
    /// `open_loop` or `pingpong`.
    pub mode: String,
    /// Sources that produced data.
    pub sources: Vec<String>,
    /// Probes sent (all / warm-up).
    pub sent: u64,
    /// Warm-up probes sent.
    pub sent_warmup: u64,
    /// Measured probes sent.
    pub sent_measured: u64,
    /// Measured probes received (unique).
    pub received_measured: u64,
    /// Measured probes lost (`sent_measured − received_measured`).
    pub lost_measured: u64,
    /// The achieved send rate during the measured phase, packets/s; for a run that
    /// stopped at its deadline with probes unsent, every send over the run's elapsed time.
    pub achieved_pps: f64,
    /// Probes the schedule held that the generator had not sent when the run reached its
    /// end (`warm-up + duration` + 100 ms): it fell so far behind that it stopped there.
    #[serde(default)]
    pub unsent: u64,
    /// The configured rate, packets/s (open loop).
    pub configured_pps: f64,
    /// Whether the generator fell behind its schedule.
    pub generator_behind: bool,
    /// Medians of the segments (ns), when decomposed.
    pub segment_medians_ns: BTreeMap<String, u64>,
    /// Interfaces that carried probes.
    pub interfaces: Vec<InterfaceFacts>,
    /// `--io xdp`: per AF_XDP port, its interface, queue, attach mode (native) and bind
    /// mode (`copy` or `zerocopy`); empty for socket runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub xdp: Vec<String>,
    /// Network facts of the host (sysctls, IRQ affinity).
    pub network: crate::netinfo::NetworkFacts,
    /// The network function's configuration, when the run's orchestrator knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nf: Option<serde_json::Value>,
    /// The stop rule's course (`--ci-width`), when one was set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_stop: Option<super::checks::CiStop>,
    /// `--explain`: the threshold, baseline and what was recorded (the attribution itself
    /// is the result's `explain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<crate::explain::ExplainData>,
}

/// Whether the lateness distribution says the generator fell behind: its p99 is above
/// half the mean gap, or more than 1 % of probes were sent later than one mean gap.
pub fn fell_behind(lateness: &LatencyHistogram, late_over_gap: u64, mean_gap_ns: f64) -> bool {
    if lateness.count() == 0 {
        return false;
    }
    let p99 = lateness.value_at(Percentile::from_fraction(99, 100).expect("valid")) as f64;
    p99 > mean_gap_ns / 2.0 || late_over_gap * 100 > lateness.count()
}

impl ProbeOutcome {
    /// Counters for the result file.
    pub fn counters(&self) -> BTreeMap<String, u64> {
        let t = &self.tx.counters;
        let r = &self.rx;
        let mut c = BTreeMap::new();
        let sent_measured = t.sent - t.sent_warmup;
        let recv_measured = r.unique - r.unique_warmup;
        for (k, v) in [
            ("sent", t.sent),
            ("sent_warmup", t.sent_warmup),
            ("send_errors", t.send_errors),
            ("received_unique", r.unique),
            ("received_warmup", r.unique_warmup),
            ("lost", t.sent.saturating_sub(r.unique)),
            ("lost_measured", sent_measured.saturating_sub(recv_measured)),
            ("duplicates", r.duplicates),
            ("reordered", r.reordered),
            ("foreign", r.foreign),
            ("beyond_ring", r.beyond_ring),
            ("datagrams_received", r.datagrams),
            ("recv_errors", r.recv_errors),
            ("late_over_mean_gap", t.late_over_gap),
            ("schedule_truncated", t.schedule_truncated),
            ("scheduled", t.sent + t.send_errors + t.unsent),
            ("unsent", t.unsent),
            ("tx_timestamps", t.tx_timestamps),
            ("tx_timestamps_unmatched", t.tx_timestamps_unmatched),
            ("errqueue_errors", t.errqueue_errors),
            ("decomposed", r.decomposed),
            ("decomposition_out_of_order", r.inconsistent_order),
            ("decomposition_residence_too_long", r.inconsistent_residence),
            ("missing_rx_kernel_timestamp", r.missing_rx_kernel),
            ("missing_tx_kernel_timestamp", r.missing_tx_kernel),
            ("missing_rx_hardware_timestamp", r.missing_rx_hardware),
            ("pending_overflow", r.pending_overflow),
            ("kernel_backlog_drops", self.backlog_drops),
            ("udp_rcvbuf_drops", self.udp_rcvbuf_drops),
        ] {
            c.insert(k.to_string(), v);
        }
        for e in WireError::ALL {
            c.insert(e.counter().to_string(), r.malformed[e.index()]);
        }
        c
    }
}

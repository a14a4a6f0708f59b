//! The one result of an `--agents` run: the exact merge of the agents' `net.probe`
//! results (histograms added bucket by bucket, counters summed), with the whole run's
//! configuration, rates and a line per agent (pure).

use super::clock::ClockEstimate;
use super::oneway::OneWayData;
use super::plan::AgentsPlan;
use crate::probe::ProbeData;
use latlab_core::results::merge::{merge_runs, MergeError};
use latlab_core::results::ResultFile;
use latlab_core::selfcheck;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One agent in the merged result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentSummary {
    /// Its MPI rank.
    pub rank: usize,
    /// The namespace it probed from.
    pub namespace: Option<String>,
    /// Its share of the rate, packets/s.
    pub configured_pps: f64,
    /// What it achieved, packets/s.
    pub achieved_pps: f64,
    /// Its flows.
    pub flows: u16,
    /// Its seed.
    pub seed: u64,
    /// Measured probes it sent.
    pub sent_measured: u64,
    /// Measured probes it received.
    pub received_measured: u64,
    /// Samples in its `user.sched` histogram.
    pub samples: u64,
    /// Its own result file (beside the merged one).
    pub result_file: String,
    /// Its clock against rank 0's, from the exchanges before, during and after the run.
    pub clock: Option<ClockEstimate>,
}

/// `data.agents` of the merged result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentsData {
    /// The agents, by rank.
    pub agents: Vec<AgentSummary>,
    /// The whole run's configured rate, packets/s.
    pub configured_pps: f64,
    /// The sum of the agents' achieved rates, packets/s.
    pub achieved_pps: f64,
    /// What the clock estimates are used for, and which figures need them.
    pub clock_note: String,
    /// One-way delays across agents' clocks, corrected onto rank 0's (on the testbed).
    #[serde(default)]
    pub one_way: Option<OneWayData>,
}

/// Why the agents' latencies need no clock correction here.
pub const CLOCK_NOTE: &str = "every latency in the histograms is a round trip timed by the agent that sent and received the probe, on its own clock: none needs a clock correction. The agents' offsets to rank 0 (± uncertainty, in data.agents.agents[].clock) place each agent's start on rank 0's schedule and correct the one-way figures (data.agents.one_way)";

/// Merges the agents' results (`runs`, in rank order with the file name each was written
/// to) into one `net.probe` result; `clocks` in the same order; `one_way` the one-way
/// streams' figures.
///
/// # Errors
/// [`MergeError`] when a histogram cannot be merged.
pub fn assemble(
    plan: &AgentsPlan,
    runs: &[(PathBuf, ResultFile)],
    clocks: &[Option<ClockEstimate>],
    one_way: Option<OneWayData>,
) -> Result<ResultFile, MergeError> {
    let total_config = serde_json::to_value(&plan.total).unwrap_or(serde_json::Value::Null);
    // the agents' configurations differ only by their share: merged as one configuration
    let same: Vec<(PathBuf, ResultFile)> = runs
        .iter()
        .map(|(p, r)| {
            let mut r = r.clone();
            r.config = total_config.clone();
            (p.clone(), r)
        })
        .collect();
    let mut merged = merge_runs(&same)?;
    merged.duration_ns = runs.iter().map(|(_, r)| r.duration_ns).max().unwrap_or(0);
    let datas: Vec<ProbeData> = runs
        .iter()
        .map(|(_, r)| crate::result::probe_data(r).unwrap_or_default())
        .collect();
    let mut summaries = Vec::new();
    for (i, ((path, r), d)) in runs.iter().zip(&datas).enumerate() {
        let spec = plan.agents.get(i);
        summaries.push(AgentSummary {
            rank: spec.map_or(i + 1, |s| s.rank),
            namespace: spec.and_then(|s| s.namespace.clone()),
            configured_pps: d.configured_pps,
            achieved_pps: d.achieved_pps,
            flows: spec.map_or(0, |s| s.job.probe.flows),
            seed: spec.map_or(0, |s| s.job.probe.seed),
            sent_measured: d.sent_measured,
            received_measured: d.received_measured,
            samples: r
                .histograms
                .iter()
                .find(|h| h.name == crate::probe::series::USER_SCHED)
                .map_or(0, |h| h.count),
            result_file: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            clock: clocks.get(i).copied().flatten(),
        });
    }
    let configured = plan.total.milli_pps as f64 / 1000.0;
    let achieved: f64 = datas.iter().map(|d| d.achieved_pps).sum();
    let mut data = datas.first().cloned().unwrap_or_default();
    data.sent = datas.iter().map(|d| d.sent).sum();
    data.sent_warmup = datas.iter().map(|d| d.sent_warmup).sum();
    data.sent_measured = datas.iter().map(|d| d.sent_measured).sum();
    data.received_measured = datas.iter().map(|d| d.received_measured).sum();
    data.lost_measured = datas.iter().map(|d| d.lost_measured).sum();
    data.unsent = datas.iter().map(|d| d.unsent).sum();
    data.achieved_pps = achieved;
    data.configured_pps = configured;
    data.generator_behind = datas.iter().any(|d| d.generator_behind);
    data.interfaces = datas.iter().flat_map(|d| d.interfaces.clone()).collect();
    // a median of medians is no median: the merged histograms hold the segments
    data.segment_medians_ns.clear();
    let mut value = serde_json::to_value(&data).unwrap_or(serde_json::Value::Null);
    if let serde_json::Value::Object(m) = &mut value {
        m.insert(
            "agents".into(),
            serde_json::to_value(AgentsData {
                agents: summaries,
                configured_pps: configured,
                achieved_pps: achieved,
                clock_note: CLOCK_NOTE.into(),
                one_way,
            })
            .unwrap_or(serde_json::Value::Null),
        );
    }
    merged.data = value;
    merged.config = total_config;
    merged
        .self_checks
        .push(selfcheck::throughput(achieved, configured, "pps"));
    // the agents' counters are summed: the whole run's schedule against what went out
    let count = |k: &str| merged.counters.get(k).copied().unwrap_or(0);
    let (scheduled, unsent) = (count("scheduled"), count("unsent"));
    merged
        .self_checks
        .push(selfcheck::schedule_sent(scheduled, unsent, "probes"));
    Ok(merged)
}

/// `data.agents` of a merged result, when it is one.
pub fn agents_data(r: &ResultFile) -> Option<AgentsData> {
    serde_json::from_value(r.data.get("agents")?.clone()).ok()
}

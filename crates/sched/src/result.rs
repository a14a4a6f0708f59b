//! The `sched.run` result file: configuration, provenance, histograms (gaps, dispatch
//! latency, response time, lateness, delivered CPU per thread), counters of anything lost,
//! and [`SchedRunData`] in `data`; the execution map goes to the trace sidecar
//! ([`crate::trace`]). Also the pure functions that turn a loaded result into the tables a
//! report needs ([`thread_rows`], [`deadline_lines`]).

use crate::model::{RunOutcome, ThreadRun};
use crate::recorder::{EndReason, LoopCalibration};
use crate::spec::{RunSpec, Workload};
use crate::trace::Trace;
use latlab_core::hist::{HistConfig, LatencyHistogram};
use latlab_core::results::{Provenance, ResultFile, StoredHistogram};
use latlab_core::units::Nanos;
use serde::{Deserialize, Serialize};

/// The result kind of a run.
pub const KIND: &str = "sched.run";

/// Kind-specific data of a `sched.run` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SchedRunData {
    /// Version of this structure.
    pub version: u32,
    /// The thread set as run.
    pub spec: RunSpec,
    /// Per thread: what it ran under and what it counted.
    pub threads: Vec<ThreadRun>,
    /// Evidence for the gap threshold(s).
    pub calibrations: Vec<LoopCalibration>,
    /// TSC rate used, Hz.
    pub tsc_hz: u64,
    /// TSC reading at the run's start (for `-c` raw output).
    pub t0_tsc: u64,
    /// The trace sidecar, relative to the result file.
    pub trace_file: String,
    /// Online CPUs.
    pub cpus: u32,
    /// The 1-minute load average before and after the run (`/proc/loadavg`): other work
    /// on the machine shows in every trace.
    #[serde(default)]
    pub loadavg: Option<(f64, f64)>,
    /// `--explain`: the windows attributed and the kernel's cause intervals under them
    /// (the attribution itself is the result's `explain`). Absent without `--explain`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<crate::explain::SchedExplain>,
}

/// The histogram names of thread `t`.
pub fn hist_name(series: &str, t: u32) -> String {
    format!("{series}.t{t}")
}

fn hist() -> LatencyHistogram {
    LatencyHistogram::new(HistConfig::default()).expect("default config is valid")
}

/// Per-thread deadline counts: (hits, misses, unfinished at the thread's end). A job still
/// running when the thread's life (`duration_ns` or its `-f`) ended, with its deadline
/// after that end, is unfinished, not missed.
pub fn deadline_counts(t: &ThreadRun, trace: &Trace, duration_ns: u64) -> (u64, u64, u64) {
    let end = t.spec.finish_ns.unwrap_or(duration_ns);
    let cpu_periodic = matches!(t.spec.workload, Workload::CpuPeriodic { .. });
    let (mut hit, mut miss, mut open) = (0, 0, 0);
    for a in trace.activations_of(t.spec.id) {
        if matches!(t.spec.workload, Workload::Lat { .. }) {
            continue;
        }
        if a.hit(cpu_periodic) {
            hit += 1;
        } else if !cpu_periodic && a.finish_ns.is_none() && a.deadline_ns > end {
            open += 1;
        } else {
            miss += 1;
        }
    }
    (hit, miss, open)
}

/// Builds the trace and the result file from a run. `trace_file` is the sidecar's name
/// relative to the result file.
pub fn build(
    out: &RunOutcome,
    command_line: Vec<String>,
    provenance: Provenance,
    trace_file: &str,
) -> (ResultFile, Trace) {
    let mut trace = Trace::default();
    for t in &out.threads {
        trace.blocks.extend(t.blocks.iter().copied());
        trace
            .activations
            .extend(t.activations.iter().map(|a| (t.spec.id, *a)));
    }
    trace.blocks.sort_by_key(|b| (b.start_ns, b.thread));
    let mut r = ResultFile::new(
        KIND,
        command_line,
        serde_json::to_value(&out.spec).unwrap_or_default(),
        provenance,
    );
    r.duration_ns = out.spec.duration_ns;
    let mut dropped_total = 0;
    for t in &out.threads {
        let id = t.spec.id;
        let model = t.spec.workload.name();
        let label = |s: StoredHistogram| {
            s.with_label("thread", id.to_string())
                .with_label("model", model)
        };
        let (mut gaps, mut blocks) = (hist(), hist());
        let mut prev: Option<&crate::model::Block> = None;
        for b in trace.blocks_of(id) {
            blocks.record(Nanos(b.end_ns - b.start_ns));
            if let Some(p) = prev {
                if p.end == EndReason::Gap {
                    gaps.record(Nanos(b.start_ns.saturating_sub(p.end_ns)));
                }
            }
            prev = Some(b);
        }
        if !t.blocks.is_empty() {
            r.histograms
                .push(label(StoredHistogram::new(hist_name("gap", id), &gaps)));
            r.histograms
                .push(label(StoredHistogram::new(hist_name("block", id), &blocks)));
        }
        let acts: Vec<_> = trace.activations_of(id).copied().collect();
        if !acts.is_empty() {
            let (mut disp, mut resp, mut late, mut cpu) = (hist(), hist(), hist(), hist());
            for a in &acts {
                if a.waited {
                    disp.record(Nanos(a.start_ns.saturating_sub(a.release_ns)));
                }
                if let Some(f) = a.finish_ns {
                    if !matches!(t.spec.workload, Workload::Lat { .. }) {
                        resp.record(Nanos(f.saturating_sub(a.release_ns)));
                        if f > a.deadline_ns {
                            late.record(Nanos(f - a.deadline_ns));
                        }
                    }
                }
                if !matches!(t.spec.workload, Workload::Lat { .. }) {
                    cpu.record(Nanos(a.cpu_by_deadline_ns.max(1)));
                }
            }
            r.histograms.push(label(StoredHistogram::new(
                hist_name("dispatch", id),
                &disp,
            )));
            if !matches!(t.spec.workload, Workload::Lat { .. }) {
                if !resp.is_empty() {
                    r.histograms.push(label(StoredHistogram::new(
                        hist_name("response", id),
                        &resp,
                    )));
                }
                r.histograms.push(label(StoredHistogram::new(
                    hist_name("lateness", id),
                    &late,
                )));
                r.histograms.push(label(StoredHistogram::new(
                    hist_name("cpu_per_period", id),
                    &cpu,
                )));
                let (hit, miss, _) = deadline_counts(t, &trace, out.spec.duration_ns);
                r.counters.insert(format!("deadline.hits.t{id}"), hit);
                r.counters.insert(format!("deadline.misses.t{id}"), miss);
            }
        }
        r.counters
            .insert(format!("trace.blocks.t{id}"), t.blocks.len() as u64);
        r.counters.insert(format!("trace.dropped.t{id}"), t.dropped);
        r.counters.insert(format!("migrations.t{id}"), t.migrations);
        if let Some(x) = t.timerfd_expirations {
            r.counters.insert(format!("timerfd.expirations.t{id}"), x);
        }
        if t.activations_dropped > 0 {
            r.counters
                .insert(format!("activations.dropped.t{id}"), t.activations_dropped);
            r.warnings.push(format!(
                "thread {id}: {} activations did not fit in the activation buffer",
                t.activations_dropped
            ));
        }
        dropped_total += t.dropped;
        if t.dropped > 0 {
            r.warnings.push(format!(
                "thread {id}: trace buffer full after {} blocks; {} further blocks were not \
                 recorded (raise -e or --gap)",
                t.blocks.len(),
                t.dropped
            ));
        }
    }
    r.counters.insert("trace.dropped".into(), dropped_total);
    r.warnings.extend(out.warnings.iter().cloned());
    let data = SchedRunData {
        version: 1,
        spec: out.spec.clone(),
        threads: out.threads.clone(),
        calibrations: out.calibrations.clone(),
        tsc_hz: out.anchor.hz,
        t0_tsc: out.t0_tsc,
        trace_file: trace_file.to_owned(),
        cpus: latlab_sys::sched::online_cpus(),
        loadavg: out.loadavg,
        explain: None,
    };
    if let Some((a, b)) = out.loadavg {
        let cpus = f64::from(data.cpus);
        if a.max(b) > 0.5 * cpus {
            r.warnings.push(format!(
                "the machine was busy: load average {a:.1} before and {b:.1} after the run on \
                 {} CPU(s); other work shows in the trace as gaps and misses",
                data.cpus
            ));
        }
    }
    r.data = serde_json::to_value(&data).unwrap_or_default();
    (r, trace)
}

/// Errors turning a result file into sched data.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// Not a `sched.run` result.
    #[error("{path}: a '{found}' result, not a latlab sched run ({KIND})")]
    WrongKind {
        /// The file.
        path: String,
        /// Its kind.
        found: String,
    },
    /// `data` does not deserialize.
    #[error("{path}: its sched data is unreadable: {detail}")]
    Data {
        /// The file.
        path: String,
        /// The serde message.
        detail: String,
    },
    /// The trace sidecar could not be read.
    #[error(transparent)]
    Trace(#[from] crate::trace::TraceError),
}

/// A result's data read as a `T`; the error names the file and `what` the data is not
/// (e.g. "a sched.run record").
pub(crate) fn data_of<T: serde::de::DeserializeOwned>(
    r: &ResultFile,
    path: &std::path::Path,
    what: &str,
) -> Result<T, String> {
    serde_json::from_value(r.data.clone())
        .map_err(|e| format!("{}: data is not {what}: {e}", path.display()))
}

/// The sched data of a loaded result, and its trace read from beside `path`.
pub fn load(r: &ResultFile, path: &std::path::Path) -> Result<(SchedRunData, Trace), DataError> {
    if r.kind != KIND {
        return Err(DataError::WrongKind {
            path: path.display().to_string(),
            found: r.kind.clone(),
        });
    }
    let d: SchedRunData = serde_json::from_value(r.data.clone()).map_err(|e| DataError::Data {
        path: path.display().to_string(),
        detail: e.to_string(),
    })?;
    let tp = path
        .parent()
        .unwrap_or(std::path::Path::new("."))
        .join(&d.trace_file);
    let trace = Trace::load(&tp)?;
    Ok((d, trace))
}

/// One row of the per-thread table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThreadRow {
    /// Thread number.
    pub thread: u32,
    /// Model with parameters.
    pub model: String,
    /// Policy as run.
    pub policy: String,
    /// Timer.
    pub timer: String,
    /// Timer slack in force, ns.
    pub timer_slack_ns: u64,
    /// CPUs it ran on.
    pub cpus: String,
    /// Share of its life it had the CPU.
    pub cpu_share: f64,
    /// Blocks recorded.
    pub blocks: u64,
    /// Blocks dropped (buffer full).
    pub dropped: u64,
    /// Migrations.
    pub migrations: u64,
    /// Deadline hits, misses (periodic models).
    pub deadlines: Option<(u64, u64)>,
}

/// The per-thread table of a run. Pure.
pub fn thread_rows(d: &SchedRunData, trace: &Trace) -> Vec<ThreadRow> {
    d.threads
        .iter()
        .map(|t| {
            let life = t.spec.finish_ns.unwrap_or(d.spec.duration_ns) - t.spec.start_ns;
            let periodic = matches!(
                t.spec.workload,
                Workload::Periodic { .. } | Workload::CpuPeriodic { .. }
            );
            ThreadRow {
                thread: t.spec.id,
                model: t.spec.workload.describe(),
                policy: t.spec.policy_label(),
                timer: t.spec.timer.name().into(),
                timer_slack_ns: t.timer_slack_ns,
                cpus: latlab_sys::sched::format_cpu_list(&t.cpus),
                cpu_share: t.cpu_received_ns as f64 / life.max(1) as f64,
                blocks: t.blocks.len().max(trace.blocks_of(t.spec.id).count()) as u64,
                dropped: t.dropped,
                migrations: t.migrations,
                deadlines: periodic.then(|| {
                    let (h, m, _) = deadline_counts(t, trace, d.spec.duration_ns);
                    (h, m)
                }),
            }
        })
        .collect()
}

/// The paper's `thread N: missed X deadlines, hit Y` lines for periodic threads. Pure.
pub fn deadline_lines(d: &SchedRunData, trace: &Trace) -> String {
    let mut s = String::new();
    for t in &d.threads {
        if matches!(
            t.spec.workload,
            Workload::Periodic { .. } | Workload::CpuPeriodic { .. }
        ) {
            let (h, m, _) = deadline_counts(t, trace, d.spec.duration_ns);
            s.push_str(&format!(
                "thread {}: missed {m} deadlines, hit {h}\n",
                t.spec.id
            ));
        }
    }
    s
}

/// Test support: run data for `threads` with nothing recorded.
#[cfg(test)]
pub(crate) fn test_data(threads: Vec<crate::spec::ThreadSpec>, duration_ns: u64) -> SchedRunData {
    let runs = threads
        .iter()
        .map(|th| {
            serde_json::from_value(serde_json::json!({
                "spec": th, "tid": 1, "policy": "SCHED_OTHER", "priority": 0,
                "timer_slack_ns": 50000, "gap_ns": 40.0, "capacity": 100, "dropped": 0,
                "migrations": 0, "cpus": [0], "activations_dropped": 0,
                "timerfd_expirations": null, "scan_passes": 0, "yields": 0,
                "voluntary_switches": 0, "involuntary_switches": 0, "cpu_received_ns": 0}))
            .expect("valid thread run")
        })
        .collect();
    SchedRunData {
        version: 1,
        spec: RunSpec {
            threads,
            duration_ns,
            records: 100,
            raw_cycles: false,
            gap_ns: None,
            timer_slack_ns: None,
            dma_latency_us: None,
        },
        threads: runs,
        calibrations: vec![],
        tsc_hz: 1_000_000_000,
        t0_tsc: 0,
        trace_file: "t.tsv".into(),
        cpus: 1,
        loadavg: None,
        explain: None,
    }
}

/// Test support: the paper's two periodic tasks (5.5) on CPU 0, 3 ms every 8 ms at RTMED
/// and 17 ms every 33 ms at RTLOW.
#[cfg(test)]
pub(crate) fn two_paper_tasks() -> Vec<crate::spec::ThreadSpec> {
    use crate::spec::{Priority, ThreadSpec, Workload};
    let ms = 1_000_000;
    [(Priority::Rtmed, 3, 8), (Priority::Rtlow, 17, 33)]
        .into_iter()
        .zip(0..)
        .map(|((priority, c, t), id)| {
            let mut th = ThreadSpec::new(id);
            th.priority = priority;
            th.workload = Workload::Periodic {
                amount_ns: c * ms,
                period_ns: t * ms,
            };
            th.cpu = Some(0);
            th
        })
        .collect()
}

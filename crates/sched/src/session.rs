//! One `latlab sched` run from spec to files: locked memory, the run, and the result,
//! trace, text, Perfetto file and timeline beside each other.

use crate::clock::tsc_clock;
use crate::error::Error;
use crate::explain::{self as sexplain, ExplainAsk, Ticks};
use crate::figures::Draw;
use crate::model::RunOutcome;
use crate::result::{self as sresult, SchedRunData};
use crate::run::{self as srun, RunParams};
use crate::spec::RunSpec;
use crate::text::paper_text;
use crate::trace::Trace;
use latlab_core::results::{write_atomically, CpuSteal, ResultFile, ThreadPlacement};
use latlab_explain::{KernelCollected, KernelRequest, KernelSession};
use latlab_sys::{host, sched};
use std::path::{Path, PathBuf};

/// Calibration iterations of the recording loop.
pub const CALIBRATION_ITERATIONS: usize = 200_000;

/// What [`run_and_save`] made: the result as saved, its data and trace as read back, and
/// every file written (result first).
pub struct Saved {
    /// The result file.
    pub result: ResultFile,
    /// Its sched data.
    pub data: SchedRunData,
    /// Its trace.
    pub trace: Trace,
    /// The files written: result, trace, text, Perfetto, timeline.
    pub written: Vec<PathBuf>,
}

/// Worst windows an explained run keeps with their events.
pub const EXPLAIN_WORST: usize = 10;

/// Runs `spec` and writes, beside `out_path`, the result, trace, text trace, Perfetto file
/// (`perfetto`, else `STEM.perfetto.json`) and timeline (`render_path`, else `STEM.svg`,
/// drawn by `draw`). `argv` is recorded as the command line. With `explain`, kernel events
/// are recorded during the run and every gap above the threshold and every missed
/// deadline is attributed; `notice` is told, in one line, when kernel events cannot be
/// had (the run carries on with the gap half).
#[allow(clippy::too_many_arguments)]
pub fn run_and_save(
    spec: &RunSpec,
    argv: Vec<String>,
    out_path: &Path,
    perfetto: Option<PathBuf>,
    render_path: Option<PathBuf>,
    draw: &dyn Draw,
    explain: Option<&ExplainAsk>,
    notice: &mut dyn FnMut(&str),
) -> Result<Saved, Error> {
    let started_utc = host::utc_now_rfc3339();
    let (_clock, timebase, hz) = tsc_clock()?;
    let mut lock_warnings = Vec::new();
    let memory_locked = sched::lock_memory_or_warn(&mut lock_warnings);
    let ks = explain.map(|_| {
        KernelSession::start(
            &KernelRequest {
                cpus: (0..sched::online_cpus()).collect(),
                ..KernelRequest::default()
            },
            notice,
        )
    });
    let steal_before = host::steal_ns();
    let outcome = srun::run(
        spec,
        RunParams {
            tsc_hz: hz,
            calibration_iterations: CALIBRATION_ITERATIONS,
        },
    );
    let got = ks.map(|k| k.finish(notice));
    let steal = CpuSteal::between(&steal_before, &host::steal_ns());
    let outcome = outcome?;
    let placements = outcome
        .threads
        .iter()
        .map(|t| ThreadPlacement {
            // The CPUs the trace saw it on, not just the one it was pinned to.
            observed_cpus: t.cpus.clone(),
            ..ThreadPlacement::pinned(
                format!("thread {} {}", t.spec.id, t.spec.workload.describe()),
                t.spec.cpu,
                t.policy.clone(),
                t.priority,
            )
        })
        .collect();
    let provenance = host::provenance(timebase, placements, memory_locked, started_utc);
    let stem = out_path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "sched".into());
    let trace_name = format!("{stem}.trace.tsv");
    let (mut result, trace) = sresult::build(&outcome, argv, provenance, &trace_name);
    result.warnings.extend(lock_warnings);
    if let (Some(ask), Some(got)) = (explain, got) {
        explain_run(&mut result, &outcome, &trace, ask, &got, steal);
    }
    let dir = out_path.parent().unwrap_or(Path::new("."));
    if !dir.as_os_str().is_empty() {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    }
    // The trace first, then the result that points at it.
    let trace_path = dir.join(&trace_name);
    write_atomically(&trace_path, trace.to_tsv().as_bytes())?;
    result.save(out_path)?;
    let (d, trace) = sresult::load(&result, out_path)?;
    let mut written = vec![out_path.to_path_buf(), trace_path];
    // The paper's text output.
    let txt_path = dir.join(format!("{stem}.txt"));
    write_atomically(&txt_path, paper_text(&d, &trace).as_bytes())?;
    written.push(txt_path);
    let pf = perfetto.unwrap_or_else(|| dir.join(format!("{stem}.perfetto.json")));
    let doc = crate::perfetto::export(&d, &trace);
    write_atomically(&pf, serde_json::to_string(&doc)?.as_bytes())?;
    written.push(pf);
    let rp = render_path.unwrap_or_else(|| dir.join(format!("{stem}.svg")));
    let to = d.spec.duration_ns.min(500_000_000);
    draw.timeline(&d, &trace, &rp, (0, to), d.cpus > 1, 1200)
        .map_err(Error::Draw)?;
    written.push(rp);
    Ok(Saved {
        result,
        data: d,
        trace,
        written,
    })
}

/// Attributes the run's windows and puts the attribution and `data.explain` into `result`.
fn explain_run(
    result: &mut ResultFile,
    outcome: &RunOutcome,
    trace: &Trace,
    ask: &ExplainAsk,
    got: &KernelCollected,
    steal: Vec<CpuSteal>,
) {
    let all = sexplain::gaps(&outcome.threads, trace);
    let threshold = match ask.above_ns {
        Some(t) => (t, "--explain-above"),
        // no gaps at all: nothing above any threshold
        None => (
            sexplain::p99_threshold(&all).unwrap_or(u64::MAX),
            "p99 of the run's gaps",
        ),
    };
    let ws = sexplain::windows(
        &outcome.threads,
        trace,
        outcome.spec.duration_ns,
        threshold.0,
    );
    let ticks = Ticks {
        t0_tsc: outcome.t0_tsc,
        hz: outcome.anchor.hz,
    };
    // one iteration of the recording loop: a gap's baseline
    let base_ns = outcome
        .calibrations
        .first()
        .map_or(0.0, |c| c.p50_ns)
        .max(0.0);
    let base_ticks = (base_ns * outcome.anchor.hz as f64 / 1e9) as u64;
    let (mut a, data) = sexplain::attribute(
        &outcome.threads,
        &ws,
        got,
        ticks,
        outcome.spec.duration_ns,
        base_ticks,
        threshold,
        EXPLAIN_WORST,
    );
    a.steal = steal;
    result
        .warnings
        .extend(latlab_explain::render::lost_warning(&a, ""));
    result
        .warnings
        .extend(latlab_explain::render::unavailable_warning(
            &a,
            "every gap and miss is unexplained",
        ));
    result
        .counters
        .insert("explain.lost_events".into(), a.lost_events);
    result.explain = Some(a);
    if let Some(o) = result.data.as_object_mut() {
        o.insert(
            "explain".into(),
            serde_json::to_value(&data).unwrap_or_default(),
        );
    }
}

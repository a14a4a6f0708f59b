//! The sections of a `sched.run` result: the thread set as run, calibration, drops,
//! deadlines and dispatch latency ([`RunSections`]).

use super::analysis::analysis_section;
use super::cells::{ns, stats_cells, stats_header};
use super::timeline::timeline_section;
use crate::analyze::MERGE_GAP_NS;
use crate::analyze::{analyze, Analysis, Stats};
use crate::result::{data_of, deadline_counts, load, thread_rows, DataError, SchedRunData, KIND};
use crate::spec::Workload;
use crate::trace::{Trace, TraceError};
use latlab_core::doc::Input;
use latlab_core::doc::{
    slug, Block, Cell, CellStyle, KindSections, Section, Severity, Table, Warning,
};
use latlab_core::results::ResultFile;
use latlab_core::units::format_ns;
use std::path::Path;

/// Sections for `sched.run` results.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunSections;

impl KindSections for RunSections {
    const KIND: &'static str = KIND;

    fn kind_sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String> {
        let mut out = Vec::new();
        for (label, path, run) in inputs.iter().flat_map(|i| i.labelled_runs()) {
            out.extend(run_sections(&label, path, run)?);
        }
        Ok(out)
    }
}

/// The run's data and, when its sidecar could be read, its trace; otherwise why not.
fn load_run(path: &Path, r: &ResultFile) -> Result<(SchedRunData, Result<Trace, String>), String> {
    match load(r, path) {
        Ok((d, t)) => Ok((d, Ok(t))),
        Err(DataError::Trace(e)) => {
            let d: SchedRunData = data_of(r, path, "a sched.run record")?;
            let why = match &e {
                TraceError::Io { path, source }
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    format!("the trace sidecar {} is missing", path.display())
                }
                other => format!("the trace sidecar could not be read: {other}"),
            };
            Ok((d, Err(why)))
        }
        Err(e) => Err(format!("data is not a sched.run record: {e}")),
    }
}

/// The sections of one `sched.run` result read from `path`. Pure apart from reading the
/// trace sidecar beside `path`.
///
/// # Errors
/// When `run`'s `data` is not a sched run.
pub fn run_sections(label: &str, path: &Path, run: &ResultFile) -> Result<Vec<Section>, String> {
    let (d, trace) = load_run(path, run)?;
    let key = slug(label);
    let mut s = Section::new(format!("Scheduling run: {label}"));
    s.id = format!("sched-run-{key}");
    s.push(Block::Paragraph(format!(
        "{} thread(s) for {} on {} online CPU(s), TSC {:.3} GHz. Each thread spins on rdtscp; a jump between two reads longer than GAP ends a block of CPU time and is recorded with its CPU.",
        d.threads.len(),
        format_ns(d.spec.duration_ns as f64),
        d.cpus,
        d.tsc_hz as f64 / 1e9
    )));
    if let Some((before, after)) = d.loadavg {
        s.push(Block::KeyValues(vec![(
            "load average (1 min) before / after".into(),
            format!(
                "{before:.2} / {after:.2} on {} CPU(s){}",
                d.cpus,
                if before.max(after) > 0.5 * f64::from(d.cpus) {
                    ": the machine was busy, and other work shows in the map as gaps and misses"
                } else {
                    ""
                }
            ),
        )]));
    }
    let trace = match trace {
        Ok(t) => Some(t),
        Err(why) => {
            s.push(Block::Warnings(vec![Warning {
                severity: Severity::Caution,
                source: label.to_string(),
                text: format!(
                    "{why}: the execution map is not available, so the timeline and the inference from it (context switches, interrupts, quanta, response times) are left out; counts below come from the result file."
                ),
            }]));
            None
        }
    };
    s.push(Block::Table(thread_table(&d, run, trace.as_ref())));
    s.push(Block::Table(calibration_table(&d)));
    s.push(Block::Paragraph(
        "The loop iteration time is the smallest gap the recorder can detect; GAP is twice its median, as in the paper, unless --gap was given. Iterations above GAP during calibration bound the spurious gaps from the loop itself (calibration also sees real interruptions).".into(),
    ));
    let (drops, any_drop) = drop_table(&d, run);
    s.push(Block::Table(drops));
    if any_drop {
        s.push(Block::Warnings(
            d.threads
                .iter()
                .filter(|t| t.dropped > 0 || t.activations_dropped > 0)
                .map(|t| Warning {
                    severity: Severity::Serious,
                    source: label.to_string(),
                    text: format!(
                        "thread {}: {} blocks and {} activations did not fit in its buffers and were not recorded; the map of this thread ends early (raise -e or --gap)",
                        t.spec.id, t.dropped, t.activations_dropped
                    ),
                })
                .collect(),
        ));
    } else {
        s.push(Block::Paragraph(
            "Nothing was dropped: every block and activation fitted in the preallocated buffers."
                .into(),
        ));
    }
    let mut out = vec![s];
    let Some(trace) = trace else {
        if let Some(t) = deadline_counter_table(&d, run) {
            out[0].push(Block::Table(t));
        }
        return Ok(out);
    };
    let a = analyze(&d, &trace, MERGE_GAP_NS, true);
    let bare = analyze(&d, &trace, MERGE_GAP_NS, false);
    if let Some(t) = deadline_table(&d, &trace, &a) {
        out[0].push(Block::Table(t));
        out[0].push(Block::Paragraph(
            "A job misses when it has not received its amount of CPU by the end of its period (CPU_PERIODIC: when no frame completed in the period); a job still running when the thread's life ended is unfinished, not missed. Every activation is counted, overruns included. Lateness is finish − deadline of the missed jobs that finished.".into(),
        ));
    }
    if let Some(t) = dispatch_table(&a) {
        out[0].push(Block::Table(t));
    }
    out.push(timeline_section(label, &key, &d, &trace));
    out.push(analysis_section(label, &key, &a, &bare));
    Ok(out)
}

fn thread_table(d: &SchedRunData, run: &ResultFile, trace: Option<&Trace>) -> Table {
    let empty = Trace::default();
    let rows = thread_rows(d, trace.unwrap_or(&empty));
    let mut t = Table::new(
        "Thread set as run",
        &[
            "thread",
            "model",
            "policy asked",
            "policy in force",
            "timer",
            "timer slack",
            "CPU",
            "ran on",
            "life",
            "GAP",
            "CPU share",
            "blocks",
            "migrations",
        ],
    );
    for (r, th) in rows.iter().zip(&d.threads) {
        let blocks = if trace.is_some() {
            r.blocks
        } else {
            counter(run, "trace.blocks", r.thread).unwrap_or(r.blocks)
        };
        let life_end = th.spec.finish_ns.unwrap_or(d.spec.duration_ns);
        t.rows.push(vec![
            Cell::number(r.thread.to_string()),
            Cell::text(&r.model),
            Cell::text(&r.policy),
            Cell::text(policy_in_force(&th.policy, th.priority)),
            Cell::text(&r.timer),
            ns(r.timer_slack_ns),
            Cell::text(th.spec.cpu.map_or("free".into(), |c| c.to_string())),
            Cell::text(&r.cpus),
            Cell::text(format!(
                "{} – {}",
                format_ns(th.spec.start_ns as f64),
                format_ns(life_end as f64)
            )),
            Cell::number(format_ns(th.gap_ns)),
            Cell::number(format!("{:.1}%", r.cpu_share * 100.0)),
            Cell::number(blocks.to_string()),
            Cell::number(r.migrations.to_string()),
        ]);
    }
    t
}

/// The policy the kernel reported, with the priority in its own terms.
fn policy_in_force(policy: &str, priority: i32) -> String {
    match policy {
        "SCHED_OTHER" | "SCHED_BATCH" => format!("{policy} nice {priority}"),
        "SCHED_FIFO" | "SCHED_RR" => format!("{policy} {priority}"),
        _ => policy.to_string(),
    }
}

fn counter(run: &ResultFile, name: &str, thread: u32) -> Option<u64> {
    run.counters.get(&format!("{name}.t{thread}")).copied()
}

fn calibration_table(d: &SchedRunData) -> Table {
    let mut t = Table::new(
        "Loop iteration time (the smallest detectable gap) and the gap threshold",
        &[
            "loop",
            "iterations",
            "min",
            "median",
            "p99",
            "p99.9",
            "p99.99",
            "GAP",
            "GAP from",
            "above GAP",
        ],
    );
    for c in &d.calibrations {
        t.rows.push(vec![
            Cell::text(&c.loop_kind),
            Cell::number(c.iterations.to_string()),
            Cell::number(format_ns(c.min_ns)),
            Cell::number(format_ns(c.p50_ns)),
            Cell::number(format_ns(c.p99_ns)),
            Cell::number(format_ns(c.p999_ns)),
            Cell::number(format_ns(c.p9999_ns)),
            Cell::number(format_ns(c.gap_ns)),
            Cell::text(if c.gap_given { "--gap" } else { "2 × median" }),
            Cell::number(format!("{:.1} ppm", c.over_gap_ppm)),
        ]);
    }
    t
}

fn drop_table(d: &SchedRunData, run: &ResultFile) -> (Table, bool) {
    let mut t = Table::new(
        "Buffers: what fitted and what was dropped",
        &[
            "thread",
            "trace capacity",
            "blocks recorded",
            "blocks dropped",
            "activations dropped",
            "timerfd expirations",
        ],
    );
    let bad = |v: u64| {
        if v > 0 {
            Cell::styled(v.to_string(), CellStyle::Bad)
        } else {
            Cell::number("0")
        }
    };
    let mut any = false;
    for th in &d.threads {
        let id = th.spec.id;
        any |= th.dropped > 0 || th.activations_dropped > 0;
        t.rows.push(vec![
            Cell::number(id.to_string()),
            Cell::number(th.capacity.to_string()),
            Cell::number(counter(run, "trace.blocks", id).map_or("—".into(), |v| v.to_string())),
            bad(th.dropped),
            bad(th.activations_dropped),
            Cell::number(th.timerfd_expirations.map_or("—".into(), |v| v.to_string())),
        ]);
    }
    (t, any)
}

fn miss_cell(m: u64) -> Cell {
    if m > 0 {
        Cell::styled(m.to_string(), CellStyle::Bad)
    } else {
        Cell::styled("0", CellStyle::Good)
    }
}

/// Deadline counts from the result's counters alone (no trace).
fn deadline_counter_table(d: &SchedRunData, run: &ResultFile) -> Option<Table> {
    let mut t = Table::new(
        "Deadlines (from the result's counters)",
        &["thread", "model", "hits", "misses"],
    );
    for th in &d.threads {
        let id = th.spec.id;
        if let (Some(h), Some(m)) = (
            counter(run, "deadline.hits", id),
            counter(run, "deadline.misses", id),
        ) {
            t.rows.push(vec![
                Cell::number(id.to_string()),
                Cell::text(th.spec.workload.describe()),
                Cell::number(h.to_string()),
                miss_cell(m),
            ]);
        }
    }
    (!t.rows.is_empty()).then_some(t)
}

fn med_max(s: &Stats) -> Cell {
    if s.n == 0 {
        Cell::styled("none", CellStyle::Unsupported)
    } else {
        Cell::number(format_ns(s.median_ns as f64)).with_note(format!(
            "max {} (n {})",
            format_ns(s.max_ns as f64),
            s.n
        ))
    }
}

fn deadline_table(d: &SchedRunData, trace: &Trace, a: &Analysis) -> Option<Table> {
    let mut t = Table::new(
        "Deadlines per periodic thread (median, with max and count below)",
        &[
            "thread",
            "model",
            "activations",
            "hits",
            "misses",
            "unfinished at end",
            "response",
            "lateness of misses",
            "CPU delivered per period",
            "dispatch latency",
        ],
    );
    for dl in &a.deadlines {
        let Some(th) = d.threads.iter().find(|t| t.spec.id == dl.thread) else {
            continue;
        };
        let (_, _, open) = deadline_counts(th, trace, d.spec.duration_ns);
        let amount = match th.spec.workload {
            Workload::Periodic { amount_ns, .. } | Workload::CpuPeriodic { amount_ns, .. } => {
                Some(amount_ns)
            }
            _ => None,
        };
        let cpu = if dl.cpu_by_deadline.n == 0 {
            Cell::styled("none", CellStyle::Unsupported)
        } else {
            let c =
                Cell::number(format_ns(dl.cpu_by_deadline.median_ns as f64)).with_note(format!(
                    "min {}{}",
                    format_ns(dl.cpu_by_deadline.min_ns as f64),
                    amount.map_or(String::new(), |a| format!(
                        ", asked {}",
                        format_ns(a as f64)
                    ))
                ));
            match (&th.spec.workload, amount) {
                (Workload::Periodic { .. }, Some(a)) if dl.cpu_by_deadline.min_ns < a => Cell {
                    style: CellStyle::Bad,
                    ..c
                },
                _ => c,
            }
        };
        t.rows.push(vec![
            Cell::number(dl.thread.to_string()),
            Cell::text(&dl.model),
            Cell::number(trace.activations_of(dl.thread).count().to_string()),
            Cell::number(dl.hits.to_string()),
            miss_cell(dl.misses),
            Cell::number(open.to_string()),
            med_max(&dl.response),
            med_max(&dl.lateness),
            cpu,
            med_max(&dl.dispatch),
        ]);
    }
    (!t.rows.is_empty()).then_some(t)
}

fn dispatch_table(a: &Analysis) -> Option<Table> {
    if a.dispatch.is_empty() {
        return None;
    }
    let mut t = Table {
        caption: "Dispatch latency of LAT threads (wakeup − time asked for: the paper's latlate)"
            .into(),
        header: stats_header(&["thread"]),
        rows: Vec::new(),
    };
    for (id, s) in &a.dispatch {
        let mut row = vec![Cell::number(id.to_string())];
        row.extend(stats_cells(s));
        t.rows.push(row);
    }
    Some(t)
}

//! The report sections of `latlab sched` results, through
//! [`latlab_report::html::SectionProvider`]:
//!
//! - [`RunSections`] for `sched.run`: the thread set as run, the gap calibration evidence,
//!   what was dropped, per-thread deadline accounting and dispatch latency, the inference
//!   of `latlab sched analyze` ([`crate::analyze`], with its defaults) beside the
//!   response-time analysis ([`crate::rta`]), and the execution timeline (the paper's
//!   `render_trace`) over a readable window. The execution map lives in the trace sidecar
//!   next to the result file; when it is missing the sections say so and show what the
//!   result file alone holds.
//! - [`CacheCostSections`] for `sched.cache_cost`: the indirect cost of a context switch
//!   per working-set size with its 95% interval, and every trial.
//! - [`ExperimentSections`] for the summary of `latlab experiment hourglass`: one section
//!   per Section 5 scenario with its commands, findings, figures and where Linux 6.x
//!   differs from the paper.

use crate::analyze::{analyze, Analysis, Stats};
use crate::cache::{CacheCostData, KIND as CACHE_KIND};
use crate::figures::timeline_rows;
use crate::result::{deadline_counts, load, thread_rows, DataError, SchedRunData, KIND};
use crate::spec::Workload;
use crate::trace::{Trace, TraceError};
use latlab_core::results::ResultFile;
use latlab_core::units::format_ns;
use latlab_report::html::{
    slug, Block, Cell, CellStyle, Figure, Section, SectionProvider, Severity, Table, Warning,
};
use latlab_report::input::{stem, Input};
use latlab_report::timeline::{render_timeline_svg_string, TimelineRow, TimelineSpec};
use serde::Deserialize;
use std::path::Path;

/// The result kind of the summary `latlab experiment hourglass` writes.
pub const EXPERIMENT_KIND: &str = "sched.hourglass_experiment";

/// Gap below which a gap is an interruption rather than a deschedule: the default of
/// `latlab sched analyze --merge-gap`, so the report shows what the command prints.
pub const MERGE_GAP_NS: u64 = 50_000;

/// Length of the timeline window drawn in a report.
pub const TIMELINE_WINDOW_NS: u64 = 100_000_000;

/// Most blocks drawn in one report timeline; with more, the window is narrowed.
pub const TIMELINE_MAX_BLOCKS: usize = 20_000;

/// Sections for `sched.run` results.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunSections;

impl SectionProvider for RunSections {
    fn handles(&self, kind: &str) -> bool {
        kind == KIND
    }

    fn sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String> {
        let mut out = Vec::new();
        for input in inputs {
            for (label, path, run) in input.labelled_runs() {
                out.extend(run_sections(&label, path, run)?);
            }
        }
        Ok(out)
    }
}

/// The run's data and, when its sidecar could be read, its trace; otherwise why not.
fn load_run(path: &Path, r: &ResultFile) -> Result<(SchedRunData, Result<Trace, String>), String> {
    match load(r, path) {
        Ok((d, t)) => Ok((d, Ok(t))),
        Err(DataError::Trace(e)) => {
            let d: SchedRunData = serde_json::from_value(r.data.clone())
                .map_err(|e| format!("{}: data is not a sched.run record: {e}", path.display()))?;
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

fn ns(v: u64) -> Cell {
    Cell::number(format_ns(v as f64))
}

fn thread_table(d: &SchedRunData, run: &ResultFile, trace: Option<&Trace>) -> Table {
    let empty = Trace::default();
    let rows = thread_rows(d, trace.unwrap_or(&empty));
    let mut t = Table {
        caption: "Thread set as run".into(),
        header: [
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
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
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
    let mut t = Table {
        caption: "Loop iteration time (the smallest detectable gap) and the gap threshold".into(),
        header: [
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
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
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
    let mut t = Table {
        caption: "Buffers: what fitted and what was dropped".into(),
        header: [
            "thread",
            "trace capacity",
            "blocks recorded",
            "blocks dropped",
            "activations dropped",
            "timerfd expirations",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
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
    let mut t = Table {
        caption: "Deadlines (from the result's counters)".into(),
        header: ["thread", "model", "hits", "misses"]
            .map(String::from)
            .to_vec(),
        rows: Vec::new(),
    };
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
    let mut t = Table {
        caption: "Deadlines per periodic thread (median, with max and count below)".into(),
        header: [
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
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
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

fn stats_header(first: &[&str]) -> Vec<String> {
    first
        .iter()
        .chain(["n", "min", "median", "p90", "p99", "max"].iter())
        .map(|s| s.to_string())
        .collect()
}

fn stats_cells(s: &Stats) -> Vec<Cell> {
    if s.n == 0 {
        let mut v = vec![Cell::number("0")];
        v.extend((0..5).map(|_| Cell::styled("none seen", CellStyle::Unsupported)));
        return v;
    }
    vec![
        Cell::number(s.n.to_string()),
        ns(s.min_ns),
        ns(s.median_ns),
        ns(s.p90_ns),
        ns(s.p99_ns),
        ns(s.max_ns),
    ]
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

/// The window of a report timeline: the first [`TIMELINE_WINDOW_NS`] of the run, or, when
/// a deadline was missed, a window of that length around the first miss; narrowed (keeping
/// its start or the miss in view) while it holds more than [`TIMELINE_MAX_BLOCKS`] blocks.
/// Pure.
pub fn timeline_window(rows: &[TimelineRow], duration_ns: u64) -> (u64, u64) {
    let first_miss = rows
        .iter()
        .flat_map(|r| r.marks.iter().copied())
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.min(x))))
        .map(|m| m as u64);
    let place = |w: u64| -> (u64, u64) {
        let w = w.min(duration_ns.max(1));
        let from = match first_miss {
            Some(m) => m.saturating_sub(w / 2).min(duration_ns.saturating_sub(w)),
            None => 0,
        };
        (from, from + w)
    };
    let count = |(from, to): (u64, u64)| -> usize {
        rows.iter()
            .flat_map(|r| r.blocks.iter())
            .filter(|(s, e)| *e >= from as f64 && *s <= to as f64)
            .count()
    };
    let mut w = TIMELINE_WINDOW_NS;
    let mut win = place(w);
    while count(win) > TIMELINE_MAX_BLOCKS && w > 1_000_000 {
        w /= 2;
        win = place(w);
    }
    win
}

fn timeline_section(label: &str, key: &str, d: &SchedRunData, trace: &Trace) -> Section {
    let mut s = Section::new(format!("Execution timeline: {label}"));
    s.id = format!("sched-timeline-{key}");
    let mut cpus: Vec<u32> = trace.blocks.iter().map(|b| b.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let rows = timeline_rows(d, trace, cpus.len() > 1);
    let (from, to) = timeline_window(&rows, d.spec.duration_ns);
    let missed = rows.iter().any(|r| !r.marks.is_empty());
    s.push(Block::Paragraph(format!(
        "The paper's render_trace: a row per thread{}, a grey block for each interval of CPU time it received, a red tick at each missed deadline. Shown: {} to {} of {}{}. Any other window: latlab sched render RESULT -o out.svg --from … --to … [--cpus].",
        if cpus.len() > 1 { ", then a row per CPU" } else { "" },
        format_ns(from as f64),
        format_ns(to as f64),
        format_ns(d.spec.duration_ns as f64),
        if missed { ", around the first missed deadline" } else { "" }
    )));
    let spec = TimelineSpec {
        title: format!(
            "{label}: {} to {}",
            format_ns(from as f64),
            format_ns(to as f64)
        ),
        width: 1200,
        window: (from as f64, to as f64),
        ..TimelineSpec::default()
    };
    match render_timeline_svg_string(&rows, &spec) {
        Ok(svg) => {
            s.push(Block::Figure(Figure::Svg {
                title: format!("Execution timeline of {label}"),
                svg,
            }));
        }
        Err(e) => {
            s.push(Block::Paragraph(format!(
                "The timeline was not drawn: {e}."
            )));
        }
    }
    s
}

fn analysis_section(label: &str, key: &str, a: &Analysis, bare: &Analysis) -> Section {
    let mut s = Section::new(format!("Scheduling inference: {label}"));
    s.id = format!("sched-analysis-{key}");
    s.push(Block::Paragraph(format!(
        "What latlab sched analyze infers from the execution map (its defaults: gaps under {} are interruptions, not deschedules; response-time analysis also with the measured overheads).",
        format_ns(a.merge_gap_ns as f64)
    )));
    let mut t = Table {
        caption: format!(
            "Direct context-switch cost: gap between a block of one traced thread and the next of another on the same CPU ({:.1} switches/s)",
            a.switches.per_second
        ),
        header: stats_header(&["switch"]),
        rows: Vec::new(),
    };
    for (name, st) in [
        ("voluntary (after yield or sleep)", &a.switches.voluntary),
        ("involuntary (preempted)", &a.switches.involuntary),
    ] {
        let mut row = vec![Cell::text(name)];
        row.extend(stats_cells(st));
        t.rows.push(row);
    }
    s.push(Block::Table(t));
    if let Some(i) = &a.interrupts {
        let mut kv = vec![
            (
                "observed thread".to_string(),
                format!(
                    "{} ({}), the highest-priority thread that never blocks",
                    i.thread, i.policy
                ),
            ),
            (
                "interruptions".into(),
                format!(
                    "{:.0}/s, {:.3}% of its time lost",
                    i.per_second,
                    i.lost_fraction * 100.0
                ),
            ),
            (
                "cost per interruption".into(),
                if i.cost.n == 0 {
                    "none seen".into()
                } else {
                    format!(
                        "min {} median {} p99 {} max {}",
                        format_ns(i.cost.min_ns as f64),
                        format_ns(i.cost.median_ns as f64),
                        format_ns(i.cost.p99_ns as f64),
                        format_ns(i.cost.max_ns as f64)
                    )
                },
            ),
            (
                "of 1 µs or more".into(),
                format!("{:.0}/s", i.long_per_second),
            ),
        ];
        if let Some(p) = i.long_interval_median_ns {
            kv.push((
                "their median interval".into(),
                format!(
                    "{} (~{:.0} Hz: the tick, if they recur)",
                    format_ns(p as f64),
                    1e9 / p as f64
                ),
            ));
        }
        s.push(Block::Heading("Interrupt load".into()));
        s.push(Block::KeyValues(kv));
    }
    if !a.quanta.is_empty() {
        let mut t = Table {
            caption: "Quanta: run lengths of CPU-bound threads (gaps under the merge gap joined; first and last runs left out)".into(),
            header: stats_header(&["thread", "priority"]),
            rows: Vec::new(),
        };
        for q in &a.quanta {
            let mut row = vec![Cell::number(q.thread.to_string()), Cell::text(&q.priority)];
            row.extend(stats_cells(&q.runs));
            t.rows.push(row);
        }
        s.push(Block::Table(t));
    }
    if !a.rta.is_empty() {
        let mut t = Table {
            caption:
                "Response-time analysis (fixed priorities, one CPU) beside the observed worst case"
                    .into(),
            header: [
                "thread",
                "C",
                "T = D",
                "bound",
                "C with overheads",
                "bound with overheads",
                "observed worst",
                "verdict",
            ]
            .map(String::from)
            .to_vec(),
            rows: Vec::new(),
        };
        let bound = |b: Option<u64>, exceeded: bool| match b {
            None => Cell::styled("unbounded", CellStyle::Bad),
            Some(v) if exceeded => Cell::styled(format_ns(v as f64), CellStyle::Bad),
            Some(v) => ns(v),
        };
        for r in &a.rta {
            let b0 = bare.rta.iter().find(|x| x.thread == r.thread);
            t.rows.push(vec![
                Cell::number(r.thread.to_string()),
                b0.map_or(Cell::text("—"), |b| ns(b.task.c)),
                ns(r.task.t),
                b0.map_or(Cell::text("—"), |b| bound(b.bound_ns, b.exceeds_bound)),
                ns(r.task.c),
                bound(r.bound_ns, r.exceeds_bound),
                r.observed_ns
                    .map_or(Cell::styled("no job finished", CellStyle::Unsupported), ns),
                if r.observed_ns.is_none() {
                    Cell::styled("nothing observed", CellStyle::Unsupported)
                } else if b0.is_some_and(|b| b.bound_ns.is_none()) {
                    Cell::styled(
                        "no bound: the task set needs more than the CPU",
                        CellStyle::Bad,
                    )
                } else if r.exceeds_bound {
                    Cell::styled("observed exceeds the bound with overheads", CellStyle::Bad)
                } else if b0.is_some_and(|b| b.exceeds_bound) {
                    Cell::styled(
                        if r.bound_ns.is_none() {
                            "exceeds the bare bound; with overheads there is no bound"
                        } else {
                            "exceeds the bare bound; within it with overheads"
                        },
                        CellStyle::Bad,
                    )
                } else if r.bound_ns.is_none() {
                    Cell::styled(
                        "within the bare bound; with overheads there is no bound",
                        CellStyle::Bad,
                    )
                } else if !r.schedulable {
                    Cell::styled(
                        "within the bound, but the set is not schedulable",
                        CellStyle::Bad,
                    )
                } else {
                    Cell::styled("within the bound", CellStyle::Good)
                },
            ]);
        }
        s.push(Block::Table(t));
        s.push(Block::Paragraph(
            "Bound: Joseph–Pandya / Audsley iteration over the PERIODIC threads in priority order. With overheads, each C is inflated by twice the larger median measured switch gap (voluntary or involuntary; a voluntary gap also holds any idle time before the next thread ran), and the measured interrupt load enters as a highest-priority task when it recurs. An observed response above the bound means the analysis' assumptions (one CPU, fixed priorities, the C given) did not hold in the run.".into(),
        ));
    }
    if !a.rt_stalls.is_empty() {
        let mut header = stats_header(&["thread"]);
        header.push("median interval".into());
        let mut t = Table {
            caption: "Real-time threads kept off the CPU for 10 ms or more (gaps not after a sleep, a yield or the end)".into(),
            header,
            rows: Vec::new(),
        };
        for r in &a.rt_stalls {
            let mut row = vec![Cell::number(r.thread.to_string())];
            row.extend(stats_cells(&r.stalls));
            row.push(r.interval_median_ns.map_or(Cell::text("—"), ns));
            t.rows.push(row);
        }
        s.push(Block::Table(t));
    }
    for n in &a.notes {
        s.push(Block::Paragraph(format!("Note: {n}.")));
    }
    s
}

/// Sections for `sched.cache_cost` results (paper, Figure 5).
#[derive(Clone, Copy, Debug, Default)]
pub struct CacheCostSections;

impl SectionProvider for CacheCostSections {
    fn handles(&self, kind: &str) -> bool {
        kind == CACHE_KIND
    }

    fn sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String> {
        let mut out = Vec::new();
        for input in inputs {
            for (path, run) in &input.runs {
                let d: CacheCostData = serde_json::from_value(run.data.clone()).map_err(|e| {
                    format!(
                        "{}: data is not a sched.cache_cost record: {e}",
                        path.display()
                    )
                })?;
                let label = if input.runs.len() > 1 {
                    format!("{} / {}", input.label, stem(path))
                } else {
                    input.label.clone()
                };
                out.push(cache_section(&label, &d));
            }
        }
        Ok(out)
    }
}

fn cache_section(label: &str, d: &CacheCostData) -> Section {
    let mut s = Section::new(format!("Indirect context-switch cost: {label}"));
    s.id = format!("sched-cache-cost-{}", slug(label));
    s.push(Block::Paragraph(format!(
        "Per working-set size: one CPU_SCAN thread alone, then {} of them, all on CPU {}. Cost per switch C = ((W1 − WN)/W1)·(T/N) with work rated per CPU-second received (on an idle CPU, the paper's formula); mean over trials with its 95% Student-t interval.",
        d.threads, d.cpu
    )));
    let mut t = Table {
        caption: "Cost per context switch versus working set".into(),
        header: [
            "working set",
            "trials with switches",
            "cost per switch",
            "95% CI",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
    for r in &d.rows {
        t.rows.push(vec![
            Cell::number(format!("{} KB", r.size_kb)),
            Cell::number(r.n.to_string()),
            Cell::number(format_ns(r.mean_ns)),
            if r.ci95_ns.is_finite() {
                Cell::number(format!("± {}", format_ns(r.ci95_ns)))
            } else {
                Cell::styled("one trial: no interval", CellStyle::Unsupported)
            },
        ]);
    }
    s.push(Block::Table(t));
    let series = [latlab_report::ErrorSeries {
        label: format!("{} threads on CPU {}", d.threads, d.cpu),
        points: d
            .rows
            .iter()
            .filter(|r| r.n > 1)
            .map(|r| {
                let (m, c) = (r.mean_ns / 1e3, r.ci95_ns / 1e3);
                (r.size_kb as f64, m, m - c, m + c)
            })
            .collect(),
    }];
    let spec = latlab_report::ChartSpec {
        title: "Indirect cost of a context switch (paper, Fig. 5)".into(),
        x_desc: "working set per thread (KB)".into(),
        y_desc: "cost per switch (µs), 95% CI".into(),
        ..latlab_report::ChartSpec::default()
    };
    match latlab_report::charts::render_errorbars_svg_string(&series, &spec) {
        Ok(svg) => {
            s.push(Block::Figure(Figure::Svg {
                title: format!("Cost per context switch versus working set: {label}"),
                svg,
            }));
        }
        Err(e) => {
            s.push(Block::Paragraph(format!(
                "The figure was not drawn: {e} (sizes with at least two trials are drawn)."
            )));
        }
    }
    let mut t = Table {
        caption: "Every trial".into(),
        header: [
            "working set",
            "W1 (lines)",
            "WN (lines)",
            "switches",
            "kernel involuntary",
            "CPU alone",
            "CPU contended",
            "cost (paper, wall time)",
            "cost (CPU received)",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
    let cost = |c: Option<f64>| {
        c.map_or(Cell::styled("no switch", CellStyle::Unsupported), |v| {
            Cell::number(format_ns(v))
        })
    };
    for tr in &d.trials {
        t.rows.push(vec![
            Cell::number(format!("{} KB", tr.size_kb)),
            Cell::number(tr.w1.to_string()),
            Cell::number(tr.wn.to_string()),
            Cell::number(tr.switches.to_string()),
            Cell::number(tr.kernel_involuntary.to_string()),
            Cell::number(format_ns(tr.cpu1_ns as f64)),
            Cell::number(format_ns(tr.cpun_ns as f64)),
            cost(tr.paper_cost_ns),
            cost(tr.cost_ns),
        ]);
    }
    s.push(Block::Table(t));
    s
}

/// One scenario of the `latlab experiment hourglass` summary, as its `data` holds it.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct ScenarioSummary {
    /// Paper section, e.g. `5.1`.
    pub id: String,
    /// Title.
    pub title: String,
    /// The command lines run.
    #[serde(default)]
    pub commands: Vec<String>,
    /// Result files, relative to the experiment directory.
    #[serde(default)]
    pub results: Vec<String>,
    /// Figures, relative to the experiment directory.
    #[serde(default)]
    pub figures: Vec<String>,
    /// What was found, one line each.
    #[serde(default)]
    pub findings: Vec<String>,
    /// Where Linux 6.x differs from the paper, and why.
    #[serde(default)]
    pub linux_note: String,
}

/// The `data` of the experiment's summary.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct ExperimentSummary {
    /// The scenarios run, in order.
    pub scenarios: Vec<ScenarioSummary>,
}

/// Sections for the summary of `latlab experiment hourglass`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExperimentSections;

impl SectionProvider for ExperimentSections {
    fn handles(&self, kind: &str) -> bool {
        kind == EXPERIMENT_KIND
    }

    fn sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String> {
        let mut out = Vec::new();
        for input in inputs {
            for (path, run) in &input.runs {
                let d: ExperimentSummary =
                    serde_json::from_value(run.data.clone()).map_err(|e| {
                        format!(
                            "{}: data is not a latlab experiment hourglass summary: {e}",
                            path.display()
                        )
                    })?;
                let dir = path.parent().unwrap_or(Path::new("."));
                out.extend(experiment_sections(dir, &d));
            }
        }
        Ok(out)
    }
}

/// The sections of an experiment summary whose files lie in `dir`: an overview of the
/// scenarios, then one section per scenario. Figures other than the runs' own timelines
/// (those are in the runs' sections) are read from `dir` and inlined.
pub fn experiment_sections(dir: &Path, d: &ExperimentSummary) -> Vec<Section> {
    let mut s = Section::new("Hourglass experiment");
    s.id = "sched-hourglass-experiment".into();
    s.push(Block::Paragraph(
        "The scenarios of Section 5 of Regehr's Hourglass paper (USENIX 2002), adapted to this machine and Linux 6.x: each scenario's commands, what they found, and where Linux 6.x behaves differently from the paper's 2002 kernels and why. Each run's own sections (thread set, deadlines, timeline, inference) follow the scenarios.".into(),
    ));
    let mut t = Table {
        caption: "Scenarios".into(),
        header: ["section", "scenario", "runs", "first finding"]
            .map(String::from)
            .to_vec(),
        rows: Vec::new(),
    };
    for sc in &d.scenarios {
        t.rows.push(vec![
            Cell::text(&sc.id),
            Cell::text(&sc.title),
            Cell::number(sc.results.len().to_string()),
            Cell::text(sc.findings.first().cloned().unwrap_or_else(|| "—".into())),
        ]);
    }
    s.push(Block::Table(t));
    let mut out = vec![s];
    for sc in &d.scenarios {
        let mut s = Section::new(format!("{} {}", sc.id, sc.title));
        s.id = format!("sched-scenario-{}", slug(&sc.id));
        s.push(Block::Code {
            caption: "Commands".into(),
            text: sc.commands.join("\n"),
        });
        if sc.findings.is_empty() {
            s.push(Block::Paragraph("No findings were recorded.".into()));
        } else {
            s.push(Block::Table(Table {
                caption: "Findings".into(),
                header: vec!["finding".into()],
                rows: sc.findings.iter().map(|f| vec![Cell::text(f)]).collect(),
            }));
        }
        s.push(Block::Heading("Linux 6.x versus the paper".into()));
        s.push(Block::Paragraph(sc.linux_note.clone()));
        let run_stems: Vec<String> = sc.results.iter().map(|r| stem(Path::new(r))).collect();
        for f in &sc.figures {
            if run_stems.contains(&stem(Path::new(f))) {
                continue; // a run's own timeline: drawn in that run's section
            }
            let p = dir.join(f);
            if p.extension().and_then(|e| e.to_str()) != Some("svg") {
                s.push(Block::Paragraph(format!("Figure: {}", p.display())));
                continue;
            }
            match std::fs::read_to_string(&p) {
                Ok(svg) if svg.contains("<svg") => s.push(Block::Figure(Figure::Svg {
                    title: format!("{} {}: {}", sc.id, sc.title, f),
                    svg,
                })),
                Ok(_) => s.push(Block::Paragraph(format!(
                    "The figure {} is not an SVG document.",
                    p.display()
                ))),
                Err(e) => s.push(Block::Paragraph(format!(
                    "The figure {} could not be read: {e}.",
                    p.display()
                ))),
            };
        }
        if !sc.results.is_empty() {
            s.push(Block::Paragraph(format!(
                "Result files (in {}): {}.",
                dir.display(),
                sc.results.join(", ")
            )));
        }
        out.push(s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Activation, Block as RunBlock};
    use crate::recorder::EndReason;
    use crate::result::test_data;
    use crate::spec::{Priority, ThreadSpec};
    use latlab_core::results::Provenance;
    use std::path::PathBuf;

    const MS: u64 = 1_000_000;

    fn result_of(d: &SchedRunData) -> ResultFile {
        let mut r = ResultFile::new(
            KIND,
            vec!["latlab".into(), "sched".into()],
            serde_json::Value::Null,
            Provenance::default(),
        );
        r.duration_ns = d.spec.duration_ns;
        r.data = serde_json::to_value(d).unwrap();
        r
    }

    fn blk(thread: u32, start_ns: u64, end_ns: u64, end: EndReason) -> RunBlock {
        RunBlock {
            thread,
            cpu: 0,
            start_ns,
            end_ns,
            end,
        }
    }

    fn act(index: u64, release_ns: u64, finish: u64, deadline_ns: u64, cpu: u64) -> Activation {
        Activation {
            index,
            release_ns,
            start_ns: release_ns,
            finish_ns: Some(finish),
            deadline_ns,
            cpu_by_deadline_ns: cpu,
            waited: true,
            frames: 0,
        }
    }

    /// The paper's two-task set on one CPU, with thread 1's second job 2 ms late.
    fn two_task_run(dir: &Path) -> (PathBuf, ResultFile) {
        let mut t0 = ThreadSpec::new(0);
        t0.priority = Priority::Rtmed;
        t0.workload = Workload::Periodic {
            amount_ns: 3 * MS,
            period_ns: 8 * MS,
        };
        t0.cpu = Some(0);
        let mut t1 = ThreadSpec::new(1);
        t1.priority = Priority::Rtlow;
        t1.workload = Workload::Periodic {
            amount_ns: 17 * MS,
            period_ns: 33 * MS,
        };
        t1.cpu = Some(0);
        let d = test_data(vec![t0, t1], 66 * MS);
        let mut blocks = Vec::new();
        let mut acts = Vec::new();
        for k in 0..8 {
            let r = k * 8 * MS;
            blocks.push(blk(0, r, r + 3 * MS, EndReason::Sleep));
            acts.push((0, act(k, r, r + 3 * MS, r + 8 * MS, 3 * MS)));
        }
        blocks.push(blk(1, 3 * MS, 8 * MS, EndReason::Gap));
        blocks.push(blk(1, 11 * MS, 16 * MS, EndReason::Gap));
        blocks.push(blk(1, 19 * MS, 26 * MS, EndReason::Sleep));
        acts.push((1, act(0, 0, 26 * MS, 33 * MS, 17 * MS)));
        acts.push((1, act(1, 33 * MS, 68 * MS, 66 * MS, 15 * MS)));
        blocks.sort_by_key(|b| b.start_ns);
        let trace = Trace {
            blocks,
            activations: acts,
        };
        std::fs::write(dir.join(&d.trace_file), trace.to_tsv()).unwrap();
        (dir.join("run.json"), result_of(&d))
    }

    fn table<'a>(s: &'a Section, caption: &str) -> &'a Table {
        s.blocks
            .iter()
            .find_map(|b| match b {
                Block::Table(t) if t.caption.starts_with(caption) => Some(t),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no table '{caption}' in {}", s.title))
    }

    #[test]
    fn a_run_gives_its_thread_set_deadlines_analysis_and_timeline() {
        let dir = tempfile::tempdir().unwrap();
        let (path, r) = two_task_run(dir.path());
        let input = Input::single(path, r);
        let secs = RunSections.sections(&[&input]).unwrap();
        let ids: Vec<&str> = secs.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(
            ids,
            ["sched-run-run", "sched-timeline-run", "sched-analysis-run"]
        );
        let threads = table(&secs[0], "Thread set");
        assert_eq!(threads.rows.len(), 2);
        assert_eq!(threads.rows[0][2].text, "SCHED_FIFO 50");
        let dl = table(&secs[0], "Deadlines");
        // thread 0: 8 jobs, all hit; thread 1: one hit, one miss 2 ms late
        assert_eq!(dl.rows[0][3].text, "8");
        assert_eq!(dl.rows[0][4].style, CellStyle::Good);
        assert_eq!(
            (dl.rows[1][3].text.as_str(), dl.rows[1][4].text.as_str()),
            ("1", "1")
        );
        assert_eq!(dl.rows[1][4].style, CellStyle::Bad);
        assert_eq!(dl.rows[1][7].text, format_ns(2e6));
        assert_eq!(
            dl.rows[1][8].style,
            CellStyle::Bad,
            "15 ms of 17 ms delivered"
        );
        // the RTA bound of the paper's set, 3 ms and 29 ms, beside 35 ms observed
        let rta = table(&secs[2], "Response-time analysis");
        assert_eq!(rta.rows[0][3].text, format_ns(3e6));
        assert_eq!(rta.rows[1][3].text, format_ns(29e6));
        assert_eq!(rta.rows[1][3].style, CellStyle::Bad);
        assert_eq!(rta.rows[1][6].text, format_ns(35e6));
        assert!(rta.rows[1][7].text.contains("exceeds"));
        assert_eq!(rta.rows[0][7].style, CellStyle::Good);
        let sw = table(&secs[2], "Direct context-switch cost");
        assert_eq!(sw.rows.len(), 2);
        // the timeline: a figure, or why not when no font is installed
        match secs[1].blocks.last().unwrap() {
            Block::Figure(Figure::Svg { svg, .. }) => {
                assert!(svg.contains("<svg") && svg.contains("#808080"));
            }
            Block::Paragraph(p) => assert!(p.contains("not drawn"), "{p}"),
            other => panic!("unexpected {other:?}"),
        }
        let Block::Paragraph(p) = &secs[1].blocks[0] else {
            panic!("no caption")
        };
        assert!(p.contains("around the first missed deadline"), "{p}");
    }

    /// A CPU-bound RTHIGH thread kept off its CPU for 50 ms twice, a second apart, on a
    /// busy machine: the run section gives the load average and says the machine was
    /// busy; the analysis gives the stalls with their interval and the fair-server note.
    #[test]
    fn rt_stalls_and_the_load_average_are_in_the_report() {
        let dir = tempfile::tempdir().unwrap();
        let mut t0 = ThreadSpec::new(0);
        t0.priority = Priority::Rthigh;
        t0.cpu = Some(0);
        let mut d = test_data(vec![t0], 2_200 * MS);
        d.loadavg = Some((3.5, 2.25));
        let trace = Trace {
            blocks: vec![
                blk(0, 0, 500 * MS, EndReason::Gap),
                blk(0, 550 * MS, 1_500 * MS, EndReason::Gap),
                blk(0, 1_550 * MS, 2_200 * MS, EndReason::End),
            ],
            activations: vec![],
        };
        std::fs::write(dir.path().join(&d.trace_file), trace.to_tsv()).unwrap();
        let input = Input::single(dir.path().join("run.json"), result_of(&d));
        let secs = RunSections.sections(&[&input]).unwrap();
        let load = secs[0]
            .blocks
            .iter()
            .find_map(|b| match b {
                Block::KeyValues(kv) => kv.iter().find(|(k, _)| k.starts_with("load average")),
                _ => None,
            })
            .expect("load average in the run section");
        assert!(load.1.starts_with("3.50 / 2.25 on "), "{}", load.1);
        assert!(load.1.contains("busy"), "{}", load.1);
        let analysis = secs
            .iter()
            .find(|s| s.id.starts_with("sched-analysis"))
            .unwrap();
        let st = table(analysis, "Real-time threads kept off the CPU");
        assert_eq!(st.rows.len(), 1);
        assert_eq!(st.rows[0][0].text, "0");
        assert_eq!(st.rows[0][1].text, "2", "two stalls");
        assert_eq!(st.rows[0][3].text, format_ns(50e6), "median stall");
        assert_eq!(st.rows[0][7].text, format_ns(1e9), "a second apart");
        assert!(analysis
            .blocks
            .iter()
            .any(|b| matches!(b, Block::Paragraph(p) if p.contains("fair deadline server"))));
    }

    #[test]
    fn an_overloaded_set_has_no_bound_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let periodic = |id| {
            let mut t = ThreadSpec::new(id);
            t.priority = Priority::Rtmed;
            t.workload = Workload::Periodic {
                amount_ns: 3 * MS,
                period_ns: 5 * MS,
            };
            t.cpu = Some(0);
            t
        };
        let d = test_data(vec![periodic(0), periodic(1)], 10 * MS);
        let trace = Trace {
            blocks: vec![blk(0, 0, 3 * MS, EndReason::Sleep)],
            activations: vec![
                (0, act(0, 0, 3 * MS, 5 * MS, 3 * MS)),
                (1, act(0, 0, 6 * MS, 5 * MS, 2 * MS)),
            ],
        };
        std::fs::write(dir.path().join(&d.trace_file), trace.to_tsv()).unwrap();
        let input = Input::single(dir.path().join("over.json"), result_of(&d));
        let secs = RunSections.sections(&[&input]).unwrap();
        let rta = table(&secs[2], "Response-time analysis");
        assert_eq!(rta.rows[0][7].style, CellStyle::Good);
        assert_eq!(rta.rows[1][3].text, "unbounded");
        assert!(
            rta.rows[1][7].text.starts_with("no bound"),
            "{:?}",
            rta.rows[1]
        );
    }

    #[test]
    fn a_missing_sidecar_is_said_not_fatal_and_foreign_data_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let (path, r) = two_task_run(dir.path());
        std::fs::remove_file(dir.path().join("t.tsv")).unwrap();
        let secs = RunSections
            .sections(&[&Input::single(path.clone(), r.clone())])
            .unwrap();
        assert_eq!(secs.len(), 1, "no timeline or inference without a trace");
        let said = secs[0].blocks.iter().any(|b| match b {
            Block::Warnings(w) => w[0].text.contains("t.tsv is missing"),
            _ => false,
        });
        assert!(said, "{:?}", secs[0].blocks);
        let mut r2 = r.clone();
        r2.counters.insert("deadline.hits.t1".into(), 4);
        r2.counters.insert("deadline.misses.t1".into(), 2);
        let secs = RunSections
            .sections(&[&Input::single(path.clone(), r2)])
            .unwrap();
        let dl = table(&secs[0], "Deadlines (from the result's counters)");
        assert_eq!(dl.rows[0][2].text, "4");
        assert_eq!(dl.rows[0][3].text, "2");

        let mut foreign = r;
        foreign.data = serde_json::json!({"probes": 3});
        let e = RunSections
            .sections(&[&Input::single(path, foreign)])
            .unwrap_err();
        assert!(e.contains("run.json") && e.contains("sched.run"), "{e}");
    }

    #[test]
    fn the_window_is_the_start_or_around_the_first_miss_and_narrows_when_dense() {
        let row = |blocks: Vec<(f64, f64)>, marks: Vec<f64>| TimelineRow {
            label: "t".into(),
            blocks,
            marks,
        };
        let r = [row(vec![(0.0, 1e6)], vec![])];
        assert_eq!(timeline_window(&r, 5_000 * MS), (0, 100 * MS));
        assert_eq!(timeline_window(&r, 30 * MS), (0, 30 * MS));
        let r = [row(vec![], vec![900e6, 400e6])];
        assert_eq!(timeline_window(&r, 5_000 * MS), (350 * MS, 450 * MS));
        let r = [row(vec![], vec![4_990e6])];
        assert_eq!(timeline_window(&r, 5_000 * MS), (4_900 * MS, 5_000 * MS));
        // 30,000 blocks of 1 µs every 3 µs over the first 90 ms: halved once
        let dense: Vec<(f64, f64)> = (0..30_000)
            .map(|i| (i as f64 * 3000.0, i as f64 * 3000.0 + 1000.0))
            .collect();
        assert_eq!(
            timeline_window(&[row(dense, vec![])], 5_000 * MS),
            (0, 50 * MS)
        );
    }

    #[test]
    fn experiment_summary_sections_inline_their_own_figures() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("5.1-switch-cdf.svg"),
            "<?xml version=\"1.0\"?><svg xmlns=\"http://www.w3.org/2000/svg\"></svg>",
        )
        .unwrap();
        let data = serde_json::json!({"scenarios": [{
            "id": "5.1", "title": "Direct cost of context switches",
            "commands": ["latlab sched -d 1s -n 10 -w CPU --cpu 1"],
            "results": ["5.1-cpu.json"],
            "figures": ["5.1-cpu.svg", "5.1-switch-cdf.svg", "5.1-gone.svg"],
            "findings": ["involuntary switches (CPU): n 12 min 1.20us"],
            "linux_note": "EEVDF, not 2.4's 60 ms quanta"}]});
        let mut r = ResultFile::new(
            EXPERIMENT_KIND,
            vec![],
            serde_json::Value::Null,
            Provenance::default(),
        );
        r.data = data;
        let path = dir.path().join("experiment.json");
        let secs = ExperimentSections
            .sections(&[&Input::single(path.clone(), r.clone())])
            .unwrap();
        assert_eq!(secs[0].id, "sched-hourglass-experiment");
        assert_eq!(table(&secs[0], "Scenarios").rows[0][0].text, "5.1");
        assert_eq!(secs[1].id, "sched-scenario-5-1");
        let figs: Vec<&str> = secs[1]
            .blocks
            .iter()
            .filter_map(|b| match b {
                Block::Figure(f) => Some(f.title()),
                _ => None,
            })
            .collect();
        assert_eq!(
            figs.len(),
            1,
            "the run's timeline is left to its own section"
        );
        assert!(figs[0].ends_with("5.1-switch-cdf.svg"));
        assert!(secs[1].blocks.iter().any(|b| matches!(b,
            Block::Paragraph(p) if p.contains("5.1-gone.svg could not be read"))));
        assert!(secs[1].blocks.iter().any(|b| matches!(b,
            Block::Paragraph(p) if p.contains("EEVDF"))));
        r.data = serde_json::json!({"rows": []});
        let e = ExperimentSections
            .sections(&[&Input::single(path, r)])
            .unwrap_err();
        assert!(e.contains("experiment.json"), "{e}");
    }

    #[test]
    fn cache_cost_table_has_the_mean_and_interval() {
        let data = serde_json::json!({"cpu": 1, "threads": 10,
            "trials": [{"size_kb": 64, "w1": 1000, "wn": 900, "switches": 50,
                "kernel_involuntary": 52, "t_ns": 100000000, "cpu1_ns": 100000000,
                "cpun_ns": 100000000, "paper_cost_ns": 200000.0, "cost_ns": 200000.0}],
            "rows": [{"size_kb": 64, "n": 3, "mean_ns": 2500.0, "ci95_ns": 400.0}]});
        let mut r = ResultFile::new(
            CACHE_KIND,
            vec![],
            serde_json::Value::Null,
            Provenance::default(),
        );
        r.data = data;
        let path = PathBuf::from("cc.json");
        let secs = CacheCostSections
            .sections(&[&Input::single(path.clone(), r.clone())])
            .unwrap();
        let t = table(&secs[0], "Cost per context switch");
        assert_eq!(t.rows[0][2].text, format_ns(2500.0));
        assert_eq!(t.rows[0][3].text, format!("± {}", format_ns(400.0)));
        assert_eq!(table(&secs[0], "Every trial").rows[0][3].text, "50");
        assert!(secs[0].blocks.iter().any(|b| match b {
            Block::Figure(Figure::Svg { svg, .. }) => svg.contains("<svg"),
            Block::Paragraph(p) => p.contains("not drawn: no"),
            _ => false,
        }));
        r.data = serde_json::json!({"scenarios": []});
        let e = CacheCostSections
            .sections(&[&Input::single(path, r)])
            .unwrap_err();
        assert!(e.contains("cc.json"), "{e}");
    }
}

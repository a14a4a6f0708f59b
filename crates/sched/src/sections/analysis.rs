//! The scheduling inference of a run in a report (what `latlab sched analyze` prints,
//! beside the response-time analysis).

use super::cells::{ns, stats_cells, stats_header};
use crate::analyze::Analysis;
use latlab_core::doc::{Block, Cell, CellStyle, Section, Table};
use latlab_core::units::format_ns;

pub(super) fn analysis_section(label: &str, key: &str, a: &Analysis, bare: &Analysis) -> Section {
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
        let mut t = Table::new(
            "Response-time analysis (fixed priorities, one CPU) beside the observed worst case",
            &[
                "thread",
                "C",
                "T = D",
                "bound",
                "C with overheads",
                "bound with overheads",
                "observed worst",
                "verdict",
            ],
        );
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

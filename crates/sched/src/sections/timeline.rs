//! The execution timeline of a run in a report, over a readable window.

use crate::figures::{rows_at_pixels, timeline_rows};
use crate::result::SchedRunData;
use crate::trace::Trace;
use latlab_core::doc::figure::timeline_drawable;
use latlab_core::doc::{Block, Figure, Section, TimelineRow, TimelineSpec};
use latlab_core::units::format_ns;

/// Length of the timeline window drawn in a report.
pub const TIMELINE_WINDOW_NS: u64 = 100_000_000;

/// Most blocks drawn in one report timeline; with more, the window is narrowed.
pub const TIMELINE_MAX_BLOCKS: usize = 20_000;

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

pub(super) fn timeline_section(label: &str, key: &str, d: &SchedRunData, trace: &Trace) -> Section {
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
    if timeline_drawable(&rows, &spec) {
        s.push(Block::Figure(Figure::Timeline {
            title: format!("Execution timeline of {label}"),
            rows: rows_at_pixels(&rows, (from, to), spec.width),
            spec,
        }));
    } else {
        s.push(Block::Paragraph(
            "The timeline was not drawn: no thread ran in the window.".into(),
        ));
    }
    s
}

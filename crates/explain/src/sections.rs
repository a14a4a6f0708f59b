//! The report's "Why the tail" section, for every result that carries an attribution
//! (`explain`), whatever its kind. Document blocks only; `latlab-report` draws them.
//!
//! Per run: the explained and outside-the-kernel shares, a warning when the split is
//! partial, the causes ranked by time (the rows `latlab explain` prints, from
//! [`crate::render::cause_row`]), a stacked bar per percentile band by cause (share of the
//! band's excess; bands the window count does not support are labelled so and warned
//! about), the bands as a table, and a timeline of the worst windows with the kernel
//! causes under them.

use crate::render::{cause_label, cause_row, completeness, explained_line, share};
use latlab_core::doc::{
    Block, Cell, CellStyle, ChartSpec, Figure, Input, Section, SectionProvider, Severity,
    StackedBar, Table, TimelineRow, TimelineSpec, Warning,
};
use latlab_core::results::{Attribution, CauseTime};
use latlab_core::units::format_ns;

/// Most worst windows drawn in the timeline.
pub const TIMELINE_WINDOWS: usize = 20;

/// The "Why the tail" provider: applies to every kind, and adds a section only for the
/// kinds whose results carry an attribution.
#[derive(Clone, Copy, Debug, Default)]
pub struct WhyTheTail;

impl SectionProvider for WhyTheTail {
    fn handles(&self, _kind: &str) -> bool {
        true
    }

    fn sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String> {
        let mut runs = Vec::new();
        for i in inputs {
            for (label, _, r) in i.labelled_runs() {
                if let Some(a) = &r.explain {
                    runs.push((label, a));
                }
            }
        }
        let Some(kind) = inputs.first().map(|i| i.kind()) else {
            return Ok(Vec::new());
        };
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        let mut s = Section::new(format!("Why the tail ({kind})"));
        s.push(Block::Paragraph(
            "Each window (a gap or slow sample) split over the kernel causes under it, on \
             the TSC timeline (see docs/explain.md). The table and shares are the numbers \
             `latlab explain` prints."
                .into(),
        ));
        for (label, a) in runs {
            s.blocks.extend(run_blocks(&label, a));
        }
        Ok(vec![s])
    }
}

/// The blocks of one run's attribution.
pub fn run_blocks(label: &str, a: &Attribution) -> Vec<Block> {
    let mut out = vec![
        Block::Heading(label.to_string()),
        Block::KeyValues(
            vec![
                ("windows attributed".into(), a.windows.to_string()),
                ("explained".into(), share(a.explained_ns, a.excess_ns)),
                (
                    "outside the kernel".into(),
                    share(a.class_time_ns("outside_kernel"), a.excess_ns),
                ),
                ("summary".into(), explained_line(a)),
            ]
            .into_iter()
            .chain(crate::render::steal_line(a).map(|l| ("steal time".to_string(), l)))
            .collect(),
        ),
    ];
    let mut warnings: Vec<Warning> = completeness(a)
        .into_iter()
        .map(|text| Warning {
            severity: if text.starts_with("incomplete") {
                Severity::Serious
            } else {
                Severity::Caution
            },
            source: label.to_string(),
            text,
        })
        .collect();
    let unsupported: Vec<String> = a
        .bands
        .iter()
        .filter(|b| b.windows > 0 && !b.supported)
        .map(|b| b.label())
        .collect();
    if !unsupported.is_empty() {
        warnings.push(Warning {
            severity: Severity::Info,
            source: label.to_string(),
            text: format!(
                "{} windows do not support the band(s) {}: fewer than 10 windows lie beyond \
                 an edge, so their split is shown marked as unsupported",
                a.windows,
                unsupported.join(", ")
            ),
        });
    }
    if !warnings.is_empty() {
        out.push(Block::Warnings(warnings));
    }
    out.push(Block::Table(causes_table(a)));
    let advice = advice_table(a);
    if !advice.rows.is_empty() {
        out.push(Block::Table(advice));
    }
    if let Some(f) = bands_figure(label, a) {
        out.push(Block::Figure(f));
    }
    if !a.bands.is_empty() {
        out.push(Block::Table(bands_table(a)));
    }
    if let Some(f) = worst_timeline(label, a) {
        out.push(Block::Figure(f));
    }
    if !a.worst.is_empty() {
        out.push(Block::Table(worst_table(a)));
    }
    out
}

/// What removes the top causes: the rows of `latlab explain --advise`.
pub fn advice_table(a: &Attribution) -> Table {
    let mut t = Table::new(
        "What removes the top causes (latlab explain --advise)",
        &[
            "cause",
            "share",
            "remedy",
            "when",
            "knob",
            "kernel documentation",
        ],
    );
    for v in crate::remedy::advise(a, crate::render::ADVISE_TOP) {
        t.rows.push(vec![
            Cell::text(v.cause),
            Cell::number(format!("{:.1}%", v.share * 100.0)),
            Cell::text(v.remedy.change),
            Cell::text(v.remedy.kind.as_str()),
            Cell::text(v.remedy.knob),
            Cell::text(v.remedy.doc),
        ]);
    }
    t
}

/// The causes ranked by time: the rows of `latlab explain`'s table.
pub fn causes_table(a: &Attribution) -> Table {
    let mut t = Table::new(
        "Causes ranked by time (share of the excess)",
        &["cause", "count", "total", "share"],
    );
    for c in &a.causes {
        let [label, count, total, sh] = cause_row(c, a.excess_ns);
        t.rows.push(vec![
            Cell::text(label),
            Cell::number(count),
            Cell::number(total),
            Cell::number(sh),
        ]);
    }
    t
}

fn band_bar_label(b: &latlab_core::results::Band) -> String {
    format!(
        "{} ({} windows{})",
        b.label(),
        b.windows,
        if b.supported { "" } else { ", unsupported" }
    )
}

/// A stacked bar per band with windows, each cause's share of the band's excess in %.
pub fn bands_figure(label: &str, a: &Attribution) -> Option<Figure> {
    let bars: Vec<StackedBar> = a
        .bands
        .iter()
        .filter(|b| b.windows > 0 && b.excess_ns > 0)
        .map(|b| StackedBar {
            label: band_bar_label(b),
            segments: b
                .causes
                .iter()
                .map(|c| {
                    (
                        cause_label(c),
                        c.time_ns as f64 * 100.0 / b.excess_ns as f64,
                    )
                })
                .collect(),
        })
        .collect();
    let f = Figure::Stacked {
        title: format!("{label}: the tail by cause, per percentile band"),
        spec: ChartSpec {
            title: "Causes per percentile band of the windows' lengths".into(),
            x_desc: "share of the band's excess".into(),
            x_percent: true,
            height: 200 + 60 * bars.len() as u32,
            ..ChartSpec::default()
        },
        bars,
    };
    f.drawable().then_some(f)
}

/// The bands: windows, their lengths, excess and top causes.
pub fn bands_table(a: &Attribution) -> Table {
    let mut t = Table::new(
        "Percentile bands of the attributed windows' lengths",
        &["band", "windows", "lengths", "excess", "top causes"],
    );
    for b in &a.bands {
        let top: Vec<String> = b
            .causes
            .iter()
            .take(3)
            .map(|c: &CauseTime| format!("{} {}", cause_label(c), share(c.time_ns, b.excess_ns)))
            .collect();
        let style = if b.supported {
            CellStyle::Number
        } else {
            CellStyle::Unsupported
        };
        t.rows.push(vec![
            Cell::text(band_bar_label(b)),
            Cell::number(b.windows.to_string()),
            Cell::styled(
                if b.windows == 0 {
                    "-".to_string()
                } else {
                    format!(
                        "{} – {}",
                        format_ns(b.min_ns as f64),
                        format_ns(b.max_ns as f64)
                    )
                },
                style,
            ),
            Cell::styled(format_ns(b.excess_ns as f64), style),
            Cell::styled(
                top.join(", "),
                if b.supported { CellStyle::Text } else { style },
            ),
        ]);
    }
    t
}

fn worst_label(i: usize, w: &latlab_core::results::WorstWindow) -> String {
    format!(
        "#{} CPU {}, {}",
        i + 1,
        w.cpu,
        format_ns(w.duration_ns as f64)
    )
}

/// The worst windows as rows, the kernel causes under each as blocks, time relative to the
/// window's start; a red mark at each window's end.
pub fn worst_timeline(label: &str, a: &Attribution) -> Option<Figure> {
    let shown = &a.worst[..a.worst.len().min(TIMELINE_WINDOWS)];
    let longest = shown.iter().map(|w| w.duration_ns).max().unwrap_or(0);
    let rows: Vec<TimelineRow> = shown
        .iter()
        .enumerate()
        .map(|(i, w)| TimelineRow {
            label: worst_label(i, w),
            blocks: w
                .spans
                .iter()
                .map(|s| (s.start_ns as f64, s.end_ns as f64))
                .collect(),
            marks: vec![w.duration_ns as f64],
        })
        .collect();
    let f = Figure::Timeline {
        title: format!("{label}: the slowest windows with the kernel causes under them"),
        spec: TimelineSpec {
            title: "Slowest windows (grey: kernel causes; red: the window's end)".into(),
            row_height: 28,
            window: (0.0, longest as f64 * 1.02),
            x_desc: "time since the window's start".into(),
            ..TimelineSpec::default()
        },
        rows,
    };
    f.drawable().then_some(f)
}

/// The worst windows with their causes and the kernel causes under them in time order.
pub fn worst_table(a: &Attribution) -> Table {
    let mut t = Table::new(
        "Slowest windows",
        &[
            "window",
            "TSC",
            "causes",
            "kernel causes in time order",
            "other CPUs meanwhile",
        ],
    );
    for (i, w) in a.worst.iter().enumerate() {
        let causes: Vec<String> = w
            .causes
            .iter()
            .map(|c| format!("{} {}", cause_label(c), format_ns(c.time_ns as f64)))
            .collect();
        let spans: Vec<String> = w
            .spans
            .iter()
            .map(|s| {
                format!(
                    "+{} {} for {}",
                    format_ns(s.start_ns as f64),
                    cause_label(&CauseTime::new(&s.class, &s.name, 0, 0)),
                    format_ns((s.end_ns - s.start_ns) as f64)
                )
            })
            .collect();
        t.rows.push(vec![
            Cell::text(worst_label(i, w)),
            Cell::number(w.start_tsc.to_string()),
            Cell::text(causes.join(" + ")),
            Cell::text(if spans.is_empty() {
                w.events.join("; ")
            } else if w.spans_omitted > 0 {
                format!(
                    "{}; … and {} shorter spans ({} in all)",
                    spans.join("; "),
                    w.spans_omitted,
                    format_ns(w.spans_omitted_ns as f64)
                )
            } else {
                spans.join("; ")
            }),
            Cell::text(others_meanwhile(w)),
        ]);
    }
    t
}

/// The cross-check lines of a worst window: whether the other CPUs logged kernel events,
/// or their measured threads stalled, while it lasted (`-`: none recorded).
fn others_meanwhile(w: &latlab_core::results::WorstWindow) -> String {
    let lines: Vec<&str> = w
        .events
        .iter()
        .filter(|e| e.starts_with("CPU ") && e.ends_with("meanwhile") || e.contains("meanwhile ("))
        .map(String::as_str)
        .collect();
    if lines.is_empty() {
        "-".into()
    } else {
        lines.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attribute::{bands, WindowSplit};
    use crate::render::causes_table as text_table;
    use crate::timeline::{Cause, Class};
    use crate::Window;
    use latlab_core::results::{CauseSpan, ResultFile, WorstWindow};
    use std::path::PathBuf;

    fn ct(class: &str, name: &str, count: u64, t: u64) -> CauseTime {
        CauseTime::new(class, name, count, t)
    }

    /// 1000 windows of 1..=1000 ns, the 10 longest an IRQ, the rest preemption by a hog;
    /// one lost event; the two worst windows with their spans.
    fn synthetic() -> Attribution {
        let splits: Vec<WindowSplit> = (1..=1_000u64)
            .map(|i| WindowSplit {
                window: Window {
                    cpu: 1,
                    start: i * 10_000,
                    end: i * 10_000 + i,
                },
                parts: vec![if i > 990 {
                    (Cause::new(Class::Irq, "eth0"), i)
                } else {
                    (Cause::new(Class::Preempted, "hog"), i)
                }],
            })
            .collect();
        let irq: u64 = (991..=1_000).sum();
        let hog: u64 = (1..=990).sum();
        Attribution {
            complete: false,
            lost_events: 3,
            windows: 1_000,
            excess_ns: irq + hog + 700,
            explained_ns: irq + hog + 500,
            causes: vec![
                ct("preempted", "hog", 990, hog),
                ct("irq", "eth0", 10, irq),
                ct("outside_kernel", "", 2, 500),
                ct("unexplained", "", 2, 200),
            ],
            worst: vec![
                WorstWindow {
                    cpu: 1,
                    start_tsc: 10_000_000,
                    duration_ns: 1_000,
                    causes: vec![ct("irq", "eth0", 1, 1_000)],
                    events: vec![],
                    spans: vec![CauseSpan {
                        class: "irq".into(),
                        name: "eth0".into(),
                        start_ns: 100,
                        end_ns: 900,
                    }],
                    ..Default::default()
                },
                WorstWindow {
                    cpu: 1,
                    start_tsc: 9_990_000,
                    duration_ns: 999,
                    causes: vec![ct("outside_kernel", "", 1, 999)],
                    events: vec!["no kernel event on CPU 1".into()],
                    spans: vec![],
                    ..Default::default()
                },
            ],
            bands: bands(&splits, 1_000_000_000),
            ..Attribution::default()
        }
    }

    #[test]
    fn the_causes_table_has_the_numbers_latlab_explain_prints() {
        let a = synthetic();
        let t = causes_table(&a);
        let text = text_table(&a);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(t.rows.len(), a.causes.len());
        for (i, row) in t.rows.iter().enumerate() {
            let cells: Vec<&str> = row.iter().map(|c| c.text.as_str()).collect();
            // the text row is the label, then count, total and share right-aligned
            let line = lines[i + 1];
            assert!(line.starts_with(cells[0]), "{line} vs {cells:?}");
            let tail: Vec<&str> = line[cells[0].len()..].split_whitespace().collect();
            assert_eq!(tail, cells[1..], "row {i}");
        }
        assert_eq!(t.rows[0][0].text, "preempted by task (hog)");
        assert_eq!(t.rows[1][3].text, share((991..=1_000).sum(), a.excess_ns));
    }

    #[test]
    fn blocks_warn_on_lost_events_and_unsupported_bands() {
        let a = synthetic();
        let blocks = run_blocks("noise", &a);
        let warnings: Vec<&Warning> = blocks
            .iter()
            .filter_map(|b| match b {
                Block::Warnings(w) => Some(w),
                _ => None,
            })
            .flatten()
            .collect();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert_eq!(warnings[0].severity, Severity::Serious);
        assert!(warnings[0].text.contains("3 kernel events were lost"));
        assert_eq!(warnings[1].severity, Severity::Info);
        assert!(
            warnings[1].text.contains("p99–p99.9, p99.9–p99.99"),
            "{}",
            warnings[1].text
        );
        let kv = blocks
            .iter()
            .find_map(|b| match b {
                Block::KeyValues(kv) => Some(kv),
                _ => None,
            })
            .unwrap();
        assert_eq!(kv[1].1, share(a.explained_ns, a.excess_ns));
        assert_eq!(kv[2].1, share(500, a.excess_ns));
        assert_eq!(kv[3].1, explained_line(&a));
    }

    #[test]
    fn a_bar_per_band_with_windows_in_shares_of_its_excess() {
        let a = synthetic();
        let Some(Figure::Stacked { bars, spec, .. }) = bands_figure("noise", &a) else {
            panic!("no stacked figure");
        };
        assert!(spec.x_percent);
        let labels: Vec<&str> = bars.iter().map(|b| b.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "p90–p99 (90 windows)",
                "p99–p99.9 (9 windows, unsupported)",
                "p99.9–p99.99 (1 windows, unsupported)"
            ]
        );
        assert_eq!(
            bars[0].segments,
            vec![("preempted by task (hog)".to_string(), 100.0)]
        );
        assert_eq!(bars[1].segments[0].0, "irq (eth0)");
        let t = bands_table(&a);
        assert_eq!(t.rows.len(), 4);
        assert_eq!(t.rows[0][2].style, CellStyle::Number);
        assert_eq!(t.rows[1][2].style, CellStyle::Unsupported);
        assert_eq!(t.rows[3][2].text, "-");
        // no windows in any band: nothing to draw
        let empty = Attribution::default();
        assert!(bands_figure("x", &empty).is_none());
    }

    #[test]
    fn the_timeline_has_a_row_per_worst_window_with_its_spans() {
        let a = synthetic();
        let Some(Figure::Timeline { rows, spec, .. }) = worst_timeline("noise", &a) else {
            panic!("no timeline");
        };
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].label, "#1 CPU 1, 1.00us");
        assert_eq!(rows[0].blocks, vec![(100.0, 900.0)]);
        assert_eq!(rows[0].marks, vec![1_000.0]);
        assert!(rows[1].blocks.is_empty());
        assert_eq!(spec.window.0, 0.0);
        assert!(spec.window.1 >= 1_000.0);
        let t = worst_table(&a);
        assert_eq!(t.rows[0][3].text, "+100ns irq (eth0) for 800ns");
        assert_eq!(t.rows[1][3].text, "no kernel event on CPU 1");
        assert_eq!(t.rows[1][4].text, "-");
        let mut a = a;
        a.worst[0].events = vec![
            "+100ns irq (eth0) for 800 ns".into(),
            "CPU 0: no kernel event meanwhile".into(),
            "CPU 2: a measured thread also stalled meanwhile (1 windows)".into(),
        ];
        assert_eq!(
            worst_table(&a).rows[0][4].text,
            "CPU 0: no kernel event meanwhile; CPU 2: a measured thread also stalled meanwhile (1 windows)"
        );
        // spans left out by the cap are said, not dropped silently
        a.worst[0].spans_omitted = 5;
        a.worst[0].spans_omitted_ns = 2_500;
        assert_eq!(
            worst_table(&a).rows[0][3].text,
            "+100ns irq (eth0) for 800ns; … and 5 shorter spans (2.50us in all)"
        );
    }

    #[test]
    fn the_provider_adds_a_section_only_for_results_with_an_attribution() {
        let mut r = ResultFile::new("host.noise", vec![], Default::default(), Default::default());
        let without = Input::single(PathBuf::from("plain.json"), r.clone());
        assert!(WhyTheTail.handles("net.probe"));
        assert!(WhyTheTail.sections(&[&without]).unwrap().is_empty());
        r.explain = Some(synthetic());
        let with = Input::single(PathBuf::from("noise.json"), r);
        let s = WhyTheTail.sections(&[&without, &with]).unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].id, "why-the-tail-host-noise");
        assert!(matches!(&s[0].blocks[1], Block::Heading(h) if h == "noise"));
        assert_eq!(s[0].tables()[0].rows, causes_table(&synthetic()).rows);
    }
}

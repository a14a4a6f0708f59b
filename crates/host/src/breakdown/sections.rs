//! The report sections of `host.breakdown` results (through
//! [`latlab_core::doc::SectionProvider`]): the step table with each step's Good / Bad /
//! Ugly class and the reason the rule gave, the rule itself with the thresholds the run
//! used, the steps that were skipped and why, and the stacked decomposition of a loopback
//! UDP round trip (as a table and as a figure).
//!
//! Everything is computed from the input's histograms (several runs of one configuration
//! are merged exactly before the percentiles are read), never from the numbers the run
//! printed.

use super::classify::{Class, ClassRule};
use super::config::RESULT_KIND;
use super::decompose::{decompose_udp, Decomposition};
use super::stored::{data, table, TableRow};
use latlab_core::doc::figure::stacked_drawable;
use latlab_core::doc::{
    Block, Cell, CellStyle, ChartSpec, Figure, Input, Section, SectionProvider, StackedBar, Table,
};
use latlab_core::units::{format_decimal, format_ns};
use std::collections::BTreeMap;

/// Sections for `host.breakdown` results.
#[derive(Clone, Copy, Debug, Default)]
pub struct BreakdownSections;

impl SectionProvider for BreakdownSections {
    fn handles(&self, kind: &str) -> bool {
        kind == RESULT_KIND
    }

    fn sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String> {
        inputs.iter().map(|i| section(i)).collect()
    }
}

/// The rule in words, with the thresholds `rule` holds.
pub fn rule_text(rule: &ClassRule) -> String {
    format!(
        "Class rule, applied in this order to each step's histogram (percentiles only, never the maximum): \
         Ugly if p99.99 > {tail} × p50 (heavy tail; with fewer than 100,000 samples p99.99 is unsupported and p99 stands in); \
         Bad if p50 > {high} or p99 > {spread} × p50 (high latency or high variability); Good otherwise.",
        tail = format_decimal(rule.tail_ratio, 1),
        high = format_ns(rule.high_latency_ns as f64),
        spread = format_decimal(rule.spread_ratio, 1),
    )
}

fn class_cell(c: Class) -> Cell {
    Cell::styled(
        c.to_string(),
        match c {
            Class::Good => CellStyle::Good,
            Class::Bad | Class::Ugly => CellStyle::Bad,
        },
    )
}

/// The step table of one input.
pub fn step_table(rows: &[TableRow]) -> Table {
    let mut t = Table::new(
        "Steps, cheapest first: one histogram each",
        &[
            "step",
            "what one sample is",
            "p50",
            "p99",
            "p99.99",
            "max",
            "samples",
            "class",
            "why",
        ],
    );
    for r in rows {
        t.rows.push(vec![
            Cell::text(&r.step),
            Cell::text(&r.description),
            Cell::number(format_ns(r.p50_ns as f64)),
            Cell::number(format_ns(r.p99_ns as f64)),
            match r.p9999_ns {
                Some(v) => Cell::number(format_ns(v as f64)),
                None => Cell::styled("unsupported", CellStyle::Unsupported),
            },
            Cell::number(format_ns(r.max_ns as f64)),
            Cell::number(r.samples.to_string()),
            class_cell(r.class),
            Cell::text(&r.reason),
        ]);
    }
    t
}

/// The decomposition of the UDP round trips from the table's medians.
pub fn decomposition(rows: &[TableRow]) -> Vec<Decomposition> {
    let medians: BTreeMap<String, u64> = rows.iter().map(|r| (r.step.clone(), r.p50_ns)).collect();
    decompose_udp(&medians)
}

/// The stacked-bar figure of `d` (one bar per round trip, its steps' medians stacked);
/// `None` when there is nothing to draw. The report and `latlab host breakdown --plot`
/// draw this same figure.
pub fn decomposition_figure(d: &[Decomposition]) -> Option<Figure> {
    let bars: Vec<StackedBar> = d
        .iter()
        .map(|x| StackedBar {
            label: x.step.clone(),
            segments: x.segments.iter().map(|s| (s.label.clone(), s.ns)).collect(),
        })
        .collect();
    let spec = ChartSpec {
        title: "Where a loopback UDP round trip goes (medians)".into(),
        x_desc: "round trip".into(),
        height: 420,
        ..ChartSpec::default()
    };
    stacked_drawable(&bars).then(|| Figure::Stacked {
        title: "Loopback UDP round trip, stacked by step (medians)".into(),
        spec,
        bars,
    })
}

fn section(input: &Input) -> Result<Section, String> {
    let r = &input.merged;
    let d = data(r).map_err(|e| format!("{}: {e}", input.label))?;
    let rows = table(r).map_err(|e| format!("{}: {e}", input.label))?;
    let mut s = Section::new(format!("Host breakdown ({})", input.label));
    s.push(Block::Paragraph(
        "What each step a request crosses inside this host costs, from a clock read up to a round trip across network namespaces. Every sample is TSC, operation, TSC, so each includes one clock read (the clock_read step). Round-trip steps run a client and a server thread pinned to two CPUs.".into(),
    ));
    if input.runs.len() > 1 {
        s.push(Block::Paragraph(format!(
            "{} runs merged exactly: percentiles and classes are read from the merged histograms.",
            input.runs.len()
        )));
    }
    s.push(Block::Paragraph(rule_text(&d.rule)));
    s.push(Block::Table(step_table(&rows)));
    let count = |c: Class| rows.iter().filter(|r| r.class == c).count();
    let mut facts = vec![format!(
        "{} steps measured: {} Good, {} Bad, {} Ugly.",
        rows.len(),
        count(Class::Good),
        count(Class::Bad),
        count(Class::Ugly)
    )];
    let med = |n: &str| rows.iter().find(|r| r.step == n).map(|r| r.p50_ns);
    if let (Some(pp), Some(udp)) = (med("cacheline_pingpong"), med("udp_loopback")) {
        facts.push(format!(
            "The hardware floor for signalling between cores (cache-line ping-pong, {} round trip) is {}× cheaper than a blocking UDP loopback round trip ({}).",
            format_ns(pp as f64),
            format_decimal(udp as f64 / pp.max(1) as f64, 0),
            format_ns(udp as f64)
        ));
    }
    if let (Some(b), Some(busy)) = (med("udp_loopback"), med("udp_loopback_busy")) {
        facts.push(format!(
            "Busy-polling takes a UDP loopback round trip from {} to {} (median).",
            format_ns(b as f64),
            format_ns(busy as f64)
        ));
    }
    if let (Some(v), Some(nf)) = (med("veth_netns"), med("latlab_nf")) {
        facts.push(format!(
            "Through latlab's user-space NF a UDP round trip between namespaces takes {} (median), against {} over a veth pair with kernel forwarding only.",
            format_ns(nf as f64),
            format_ns(v as f64)
        ));
    }
    s.push(Block::Paragraph(facts.join(" ")));
    if !d.skipped.is_empty() {
        s.push(Block::Table(Table {
            rows: d
                .skipped
                .iter()
                .map(|k| vec![Cell::text(&k.name), Cell::text(&k.reason)])
                .collect(),
            ..Table::new("Steps not measured", &["step", "why"])
        }));
    }
    let dec = decomposition(&rows);
    if dec.is_empty() {
        s.push(Block::Paragraph(
            "No UDP decomposition: it needs clock_read, null_syscall and udp_loopback with futex_other_core, or udp_loopback_busy with cacheline_pingpong.".into(),
        ));
    } else {
        s.push(Block::Heading(
            "How a loopback UDP round trip decomposes".into(),
        ));
        s.push(Block::Paragraph(
            "An attribution of the medians, not an identity: time read = clock_read; 4 system calls = 4 × (null_syscall − clock_read); blocking: 2 thread wake-ups = futex_other_core − clock_read − 4 system calls; busy-polling: 2 cross-core hand-offs = cacheline_pingpong − clock_read; the remainder is the UDP/IP stack and socket code. A negative remainder is drawn as 0 and flagged.".into(),
        ));
        let mut t = Table::new(
            "Decomposition of the median round trip",
            &["round trip", "median", "segment", "share", "of the total"],
        );
        for x in &dec {
            for (i, g) in x.segments.iter().enumerate() {
                t.rows.push(vec![
                    Cell::text(if i == 0 { x.step.as_str() } else { "" }),
                    Cell::number(if i == 0 {
                        format_ns(x.total_ns)
                    } else {
                        String::new()
                    }),
                    Cell::text(&g.label),
                    Cell::number(format_ns(g.ns)),
                    Cell::number(format!(
                        "{}%",
                        format_decimal(100.0 * g.ns / x.total_ns.max(1.0), 1)
                    )),
                ]);
            }
            if x.inconsistent {
                t.rows.push(vec![
                    Cell::text(&x.step),
                    Cell::text(""),
                    Cell::styled(
                        "inconsistent: the components' medians exceed the round trip's; remainder clamped to 0",
                        CellStyle::Bad,
                    ),
                    Cell::text(""),
                    Cell::text(""),
                ]);
            }
        }
        s.push(Block::Table(t));
        if let Some(f) = decomposition_figure(&dec) {
            s.push(Block::Figure(f));
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::super::{fill_result, StepOutcome};
    use super::*;
    use crate::breakdown::Step;
    use latlab_core::hist::{HistConfig, LatencyHistogram};
    use latlab_core::results::{Provenance, ResultFile};
    use latlab_core::units::Nanos;
    use std::path::PathBuf;

    fn outcome(step: Step, values: &[(u64, u64)]) -> StepOutcome {
        let mut h = LatencyHistogram::new(HistConfig::default()).unwrap();
        let mut n = 0;
        for &(v, c) in values {
            h.record_n(Nanos(v), c);
            n += c;
        }
        StepOutcome {
            step,
            hist: h,
            samples: n,
            elapsed: Nanos(1_000_000_000),
            client_cpu: Some(1),
            server_cpu: Some(0),
        }
    }

    fn result() -> ResultFile {
        let mut r = ResultFile::new(
            RESULT_KIND,
            vec![],
            serde_json::json!({}),
            Provenance::default(),
        );
        let outcomes = [
            outcome(Step::ClockRead, &[(20, 1000)]),
            outcome(Step::NullSyscall, &[(140, 1000)]),
            outcome(Step::CachelinePingpong, &[(90, 990), (120, 10)]),
            outcome(Step::FutexOtherCore, &[(50_000, 1000)]),
            outcome(Step::UdpLoopback, &[(58_000, 990), (200_000, 10)]),
        ];
        fill_result(
            &mut r,
            &outcomes,
            &[(
                Step::VethNetns,
                "needs root to create network namespaces".into(),
            )],
            &ClassRule::default(),
        );
        r
    }

    fn all_text(s: &Section) -> String {
        let mut out = String::new();
        for b in &s.blocks {
            match b {
                Block::Paragraph(p) | Block::Heading(p) => out.push_str(p),
                Block::Table(t) => {
                    for row in &t.rows {
                        for c in row {
                            out.push_str(&c.text);
                            out.push('|');
                        }
                    }
                }
                _ => {}
            }
            out.push('\n');
        }
        out
    }

    #[test]
    fn sections_hold_the_steps_classes_skips_and_decomposition() {
        let i = Input::single(PathBuf::from("bd.json"), result());
        let s = BreakdownSections.sections(&[&i]).unwrap();
        assert_eq!(s.len(), 1);
        let text = all_text(&s[0]);
        let Block::Table(t) = s[0]
            .blocks
            .iter()
            .find(|b| matches!(b, Block::Table(_)))
            .unwrap()
        else {
            unreachable!()
        };
        assert_eq!(t.rows.len(), 5);
        let udp = t.rows.iter().find(|r| r[0].text == "udp_loopback").unwrap();
        assert_eq!(udp[2].text, format_ns(58_000.0));
        assert_eq!(udp[4].style, CellStyle::Unsupported, "1000 samples");
        // p99 = 58 µs: Bad because p50 > 10 µs.
        assert_eq!(udp[7].text, "Bad");
        let clock = t.rows.iter().find(|r| r[0].text == "clock_read").unwrap();
        assert_eq!(clock[7].text, "Good");
        assert_eq!(clock[7].style, CellStyle::Good);
        assert!(text.contains("Ugly if p99.99 > 20"), "{text}");
        assert!(text.contains("veth_netns|needs root"), "{text}");
        assert!(text.contains("2 thread wake-ups (futex)"), "{text}");
        assert!(
            text.contains("5 steps measured: 3 Good, 2 Bad, 0 Ugly"),
            "{text}"
        );
        let bars = s[0].blocks.iter().find_map(|b| match b {
            Block::Figure(Figure::Stacked { bars, .. }) => Some(bars),
            _ => None,
        });
        assert!(bars.unwrap().iter().any(|b| b.label == "udp_loopback"));
    }

    #[test]
    fn foreign_data_is_an_error_naming_the_input() {
        let mut r = ResultFile::new(
            RESULT_KIND,
            vec![],
            serde_json::json!({}),
            Provenance::default(),
        );
        r.data = serde_json::json!({"something": "else"});
        let i = Input::single(PathBuf::from("odd.json"), r);
        assert!(BreakdownSections.handles("host.breakdown"));
        assert!(!BreakdownSections.handles("host.clocks"));
        let e = BreakdownSections.sections(&[&i]).unwrap_err();
        assert!(e.contains("odd"), "{e}");
    }
}

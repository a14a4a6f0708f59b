//! The report sections of `experiment.where_time` results (through
//! [`latlab_core::doc::SectionProvider`]): the injector's base latency and measured
//! shift (the paper's baseline), the normalised performance of each application at each
//! added delay with its spread, the error-bar figure (the paper's Fig. 1), and the
//! comparison with the paper's numbers.
//!
//! [`error_series`] is also what `latlab experiment where-time --plot` draws, so the
//! report and the standalone figure show the same points.

use super::config::RESULT_KIND;
use super::injector::{delay_label, CHECK_DELAY_NS};
use super::stored::{
    data, normalise, peer_points, peer_summary, problem_totals, NormPoint, WhereTimeData,
    PAPER_DROPS, UNSATURATED_SHARE,
};
use latlab_core::doc::figure::errorbars_drawable;
use latlab_core::doc::{
    Block, Cell, CellStyle, ChartSpec, ErrorSeries, Figure, Input, Section, SectionProvider, Table,
};
use latlab_core::units::{format_decimal, format_ns, format_signed_ns, SignStyle};

/// Sections for `experiment.where_time` results.
#[derive(Clone, Copy, Debug, Default)]
pub struct WhereTimeSections;

impl SectionProvider for WhereTimeSections {
    fn handles(&self, kind: &str) -> bool {
        kind == RESULT_KIND
    }

    fn sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String> {
        let mut out = Vec::new();
        for input in inputs {
            // Raw runs of different experiments are not pooled: each has its own baseline
            // and its own injector check.
            for (label, path, run) in input.labelled_runs() {
                let d = data(run).map_err(|e| format!("{}: {e}", path.display()))?;
                out.push(section(&label, &d)?);
            }
        }
        Ok(out)
    }
}

/// The chart's x value of an added delay: µs.
fn x_us(delay_ns: u64) -> f64 {
    delay_ns as f64 / 1e3
}

/// One error-bar series per application with a baseline: `(delay µs, mean, mean − sd,
/// mean + sd)` of the normalised runs.
pub fn error_series(d: &WhereTimeData) -> Vec<ErrorSeries> {
    d.apps
        .iter()
        .filter_map(|a| {
            let n = normalise(&a.runs)?;
            Some(ErrorSeries {
                label: format!("{} ({})", a.app, a.metric),
                points: n
                    .iter()
                    .map(|p| (x_us(p.delay_ns), p.mean, p.mean - p.sd, p.mean + p.sd))
                    .collect(),
            })
        })
        .collect()
}

/// Normalised performance against added delay, one line per application (± one sd);
/// `None` when no application has a normalised point. The report and `--plot` draw this
/// same figure.
pub fn figure(d: &WhereTimeData) -> Option<Figure> {
    let series = error_series(d);
    errorbars_drawable(&series).then(|| Figure::ErrorBars {
        title: "Normalised performance against added delay (log x axis, ± one sd)".into(),
        spec: chart_spec(d),
        series,
    })
}

/// `; the injector check's median shift: 20.0us (measured 20.4us), ...` for the delays of
/// the figure the check measured; empty when it measured none of them.
fn measured_note(d: &WhereTimeData) -> String {
    let mut delays: Vec<u64> = d
        .apps
        .iter()
        .flat_map(|a| a.runs.iter().map(|r| r.delay_ns))
        .filter(|&x| x != 0 && d.injector.median_shift_at(CHECK_DELAY_NS, x).is_some())
        .collect();
    delays.sort_unstable();
    delays.dedup();
    if delays.is_empty() {
        return String::new();
    }
    let labels: Vec<String> = delays
        .iter()
        .map(|&x| delay_label(x, &d.injector))
        .collect();
    format!(
        "; asked delay with the injector check's median shift: {}",
        labels.join(", ")
    )
}

/// The chart's titles (the x axis names the shifts the check measured, so that the
/// standalone `--plot` shows them too).
pub fn chart_spec(d: &WhereTimeData) -> ChartSpec {
    ChartSpec {
        title: "Delay effect on application performance (mean ± sd)".into(),
        x_desc: format!("added round-trip delay (µs){}", measured_note(d)),
        y_desc: "normalised performance".into(),
        ..ChartSpec::default()
    }
}

/// One row of the comparison with the paper.
#[derive(Clone, Debug, PartialEq)]
pub struct PaperComparison {
    /// The paper's application (and ours in its place).
    pub app: &'static str,
    /// Added delay, µs.
    pub delay_us: u64,
    /// The paper's loss, as a fraction of the baseline.
    pub paper_drop: f64,
    /// Ours at the same delay, when measured.
    pub ours: Option<NormPoint>,
}

/// The paper's reported losses next to this run's normalised points at the same delays.
pub fn paper_comparison(d: &WhereTimeData) -> Vec<PaperComparison> {
    PAPER_DROPS
        .iter()
        .map(|&(app, us, drop)| PaperComparison {
            app,
            delay_us: us,
            paper_drop: drop,
            ours: d
                .apps
                .iter()
                .find(|a| app.contains(a.app.as_str()))
                .and_then(|a| normalise(&a.runs))
                .and_then(|n| n.into_iter().find(|p| p.delay_ns == us * 1_000)),
        })
        .collect()
}

fn pct(v: f64) -> String {
    let s = format_decimal(v * 100.0, 0);
    if v > 0.0 {
        format!("+{s}%")
    } else {
        format!("{s}%").replace('-', "−")
    }
}

fn section(label: &str, d: &WhereTimeData) -> Result<Section, String> {
    let mut s = Section::new(format!(
        "Where has my time gone: performance against added delay ({label})"
    ));
    s.push(Block::Paragraph(
        "Client ⇄ delay ⇄ server network namespaces: real servers (memcached, nginx, PostgreSQL) and real benchmark clients (memcaslap, wrk, pgbench's TPC-B-like transactions); latlab's injector in the middle adds the delay to client → server frames, so every request/response round trip gains it once. Each point is normalised to the mean of the same application's zero-delay runs; the spread is the sample standard deviation of the normalised runs.".into(),
    ));
    if !d.placement.is_empty() {
        s.push(Block::Paragraph(format!("Placement: {}", d.placement)));
    }
    let i = &d.injector;
    s.push(Block::Heading("The injector, measured first".into()));
    s.push(Block::KeyValues(vec![
        (
            "base latency per round trip (through the injector at 0 µs − direct veth link, medians)".into(),
            format_signed_ns(i.base_latency_ns as f64, SignStyle::Minus),
        ),
        (
            "the injector's own user-space part (receive → send done, p50)".into(),
            format_ns(i.engine_excess_p50_ns as f64),
        ),
        (
            "median shift with 20 µs added (target 20 µs ± 2 µs)".into(),
            format_signed_ns(i.median_shift_ns as f64, SignStyle::Minus),
        ),
        (
            "p99 shift with 20 µs added".into(),
            format_signed_ns(i.p99_shift_ns as f64, SignStyle::Minus),
        ),
        (
            "median shift at the other delays".into(),
            if i.shifts.is_empty() {
                "not measured".into()
            } else {
                i.shifts
                    .iter()
                    .map(|x| delay_label(x.delay_ns, i))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        ),
        (
            "idle policy during the check".into(),
            match d.check_idle_held_us {
                Some(us) => format!(
                    "/dev/cpu_dma_latency held at {us} µs for the check alone, as latlab net delay --testbed holds it; the application runs keep the run's idle policy"
                ),
                None => "as the run has it (not held by the check)".into(),
            },
        ),
    ]));
    let missed: Vec<String> = super::injector::shift_verdicts(i)
        .iter()
        .filter(|v| !v.passed())
        .map(|v| v.detail.clone())
        .collect();
    if !missed.is_empty() {
        s.push(Block::Paragraph(format!(
            "The injector check missed: {}.",
            missed.join("; ")
        )));
    }
    let mut t = Table::new(
        "Normalised performance per application and added delay",
        &[
            "application",
            "metric",
            "added delay (measured shift)",
            "runs",
            "mean (raw)",
            "normalised",
            "sd",
            "min – max",
            "client errors",
            "injector drops",
        ],
    );
    let mut no_baseline = Vec::new();
    for a in &d.apps {
        let Some(n) = normalise(&a.runs) else {
            no_baseline.push(a.app.clone());
            continue;
        };
        for p in &n {
            let at: Vec<_> = a.runs.iter().filter(|r| r.delay_ns == p.delay_ns).collect();
            let raw = at.iter().map(|r| r.value).sum::<f64>() / at.len().max(1) as f64;
            let (errors, drops) = problem_totals(at.iter().copied());
            t.rows.push(vec![
                Cell::text(&a.app),
                Cell::text(&a.metric),
                Cell::number(delay_label(p.delay_ns, &d.injector)),
                Cell::number(p.n.to_string()),
                Cell::number(format_decimal(raw, 0)),
                Cell::number(format!("{:.3}", p.mean)),
                if p.n > 1 {
                    Cell::number(format!("{:.3}", p.sd))
                } else {
                    Cell::styled("one run", CellStyle::Unsupported)
                },
                Cell::number(format!("{:.3} – {:.3}", p.min, p.max)),
                Cell::problem_count(errors),
                Cell::problem_count(drops),
            ]);
        }
    }
    s.push(Block::Table(t));
    if !no_baseline.is_empty() {
        s.push(Block::Paragraph(format!(
            "Not normalised (no zero-delay run or a zero baseline): {}.",
            no_baseline.join(", ")
        )));
    }
    if let Some(t) = open_loop_table(d) {
        s.push(Block::Table(t));
        s.push(Block::Paragraph(
            "latlab's open-loop generator offers the same load at every delay and times each request from its scheduled send: its percentiles show what the added delay costs each request at that load (and the queue once the server cannot keep up), which a closed-loop client's throughput hides.".into(),
        ));
    }
    if let Some(t) = peer_table(d) {
        s.push(Block::Table(t));
        let lines: Vec<String> = d.apps.iter().filter_map(peer_summary).collect();
        s.push(Block::Paragraph(format!(
            "Each open-loop run here offered the rate its closed-loop peer had just achieved at the same delay (or the fraction of it asked for with peer:F). A closed-loop client is not saturated where it achieved at most {:.0} % of its own zero-delay throughput: it then waits for answers most of the time, as the open-loop client does, and the two clients' latencies measure the same path. memcaslap keeps no percentiles, so latlab's geometric mean stands beside its geometric mean; wrk's median beside latlab's median. latlab times each request from its scheduled send (its headline, free of coordinated omission) and from its actual send (how a closed-loop client, which has no schedule, times its own); the gap between the two is how late the open loop sent. {}.",
            UNSATURATED_SHARE * 100.0,
            lines.join(". ")
        )));
    }
    match figure(d) {
        Some(f) => s.push(Block::Figure(f)),
        None => s.push(Block::Paragraph(
            "No figure: no application has a normalised point.".into(),
        )),
    };
    let mut c = Table::new(
        "Against the paper (Zilberman et al., PAM 2017, Fig. 1)",
        &[
            "application",
            "added delay",
            "paper",
            "here (mean ± sd)",
            "runs",
        ],
    );
    for p in paper_comparison(d) {
        let (here, runs) = match &p.ours {
            Some(o) => (
                Cell::number(format!(
                    "{} ± {}",
                    pct(o.mean - 1.0),
                    format_decimal(o.sd * 100.0, 0)
                )),
                Cell::number(o.n.to_string()),
            ),
            None => (
                Cell::styled("not measured", CellStyle::Unsupported),
                Cell::text(""),
            ),
        };
        c.rows.push(vec![
            Cell::text(p.app),
            Cell::number(format!("{} µs", p.delay_us)),
            Cell::number(pct(-p.paper_drop)),
            here,
            runs,
        ]);
    }
    s.push(Block::Table(c));
    s.push(Block::Paragraph(
        "A closed-loop client's throughput is roughly connections / (per-request time + added delay): what decides the loss is the added delay relative to the per-request time on this host, which is why hosts with slower request paths (virtual machines, shared CPUs) lose less than the paper's bare-metal testbed at the same added delay.".into(),
    ));
    Ok(s)
}

/// The open-loop runs per application and delay (medians over the repeats), when any.
fn open_loop_table(d: &WhereTimeData) -> Option<Table> {
    if d.apps.iter().all(|a| a.open_loop.is_empty()) {
        return None;
    }
    let mut t = Table::new(
        "latlab open loop at a fixed offered load (latency from the scheduled send)",
        &[
            "application",
            "added delay",
            "runs",
            "offered /s",
            "achieved /s",
            "p50",
            "p99",
            "late",
            "problems",
        ],
    );
    let median = |mut v: Vec<u64>| {
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or(0)
    };
    for a in &d.apps {
        let mut delays: Vec<u64> = a.open_loop.iter().map(|r| r.delay_ns).collect();
        delays.sort_unstable();
        delays.dedup();
        for dl in delays {
            let at: Vec<_> = a.open_loop.iter().filter(|r| r.delay_ns == dl).collect();
            let n = at.len().max(1) as f64;
            t.rows.push(vec![
                Cell::text(&a.app),
                delay_cell(dl),
                Cell::number(at.len().to_string()),
                Cell::number(format_decimal(
                    at.iter().map(|r| r.offered_rps).sum::<f64>() / n,
                    0,
                )),
                Cell::number(format_decimal(
                    at.iter().map(|r| r.achieved_rps).sum::<f64>() / n,
                    0,
                )),
                Cell::number(format_ns(
                    median(at.iter().map(|r| r.p50_ns).collect()) as f64
                )),
                Cell::number(format_ns(
                    median(at.iter().map(|r| r.p99_ns).collect()) as f64
                )),
                Cell::problem_count(at.iter().map(|r| r.late).sum()),
                Cell::problem_count(at.iter().map(|r| r.problems).sum()),
            ]);
        }
    }
    Some(t)
}

/// An added delay as a table cell: "0" for the baseline, else with its unit.
fn delay_cell(delay_ns: u64) -> Cell {
    Cell::number(if delay_ns == 0 {
        "0".into()
    } else {
        format_ns(delay_ns as f64)
    })
}

/// Every open-loop run at its closed-loop peer's own rate, beside the peer's latency.
fn peer_table(d: &WhereTimeData) -> Option<Table> {
    let mut t = Table::new(
        "latlab at the closed-loop client's own rate (latency from the scheduled send)",
        &[
            "application",
            "added delay",
            "repeat",
            "rate /s",
            "peer / its 0-delay throughput",
            "peer's figure",
            "peer",
            "latlab",
            "difference",
            "latlab from the send",
            "difference",
        ],
    );
    for a in &d.apps {
        for p in peer_points(a) {
            let diff = |d: f64| {
                let text = format!("{:+.1} %", d * 100.0);
                if p.unsaturated() && d.abs() > super::stored::PEER_TOLERANCE {
                    Cell::styled(text, CellStyle::Bad)
                } else {
                    Cell::number(text)
                }
            };
            t.rows.push(vec![
                Cell::text(&a.app),
                Cell::number(if p.delay_ns == 0 {
                    "0".into()
                } else {
                    format_ns(p.delay_ns as f64)
                }),
                Cell::number(p.repeat.to_string()),
                Cell::number(format_decimal(p.offered_rps, 0)),
                Cell::number(p.peer_share.map_or_else(
                    || "—".into(),
                    |s| {
                        format!(
                            "{:.2}{}",
                            s,
                            if p.unsaturated() { "" } else { " (saturated)" }
                        )
                    },
                )),
                Cell::text(p.peer.statistic.label()),
                Cell::number(format_ns(p.peer.ns as f64)),
                Cell::number(format_ns(p.latlab_ns as f64)),
                diff(p.difference()),
                p.latlab_actual_ns
                    .map_or_else(|| Cell::text("—"), |v| Cell::number(format_ns(v as f64))),
                p.difference_actual().map_or_else(|| Cell::text("—"), diff),
            ]);
        }
    }
    (!t.rows.is_empty()).then_some(t)
}

#[cfg(test)]
mod tests {
    use super::super::{AppRuns, RawRun};
    use super::*;
    use latlab_core::results::{Provenance, ResultFile};
    use latlab_net::delay::report::CheckSummary;
    use std::path::PathBuf;

    fn raw(delay_us: u64, repeat: u32, value: f64) -> RawRun {
        RawRun {
            delay_ns: delay_us * 1_000,
            repeat,
            value,
            completed: 100,
            errors: 0,
            injector_drops: 0,
        }
    }

    fn result() -> ResultFile {
        let d = WhereTimeData {
            placement: String::new(),
            apps: vec![
                AppRuns {
                    app: "memcached".into(),
                    metric: "ops/s".into(),
                    runs: vec![
                        raw(0, 0, 9_000.0),
                        raw(0, 1, 11_000.0),
                        raw(20, 0, 8_000.0),
                        raw(20, 1, 8_000.0),
                        raw(100, 0, 5_000.0),
                        raw(100, 1, 7_000.0),
                    ],
                    open_loop: vec![super::super::OpenLoopRun {
                        delay_ns: 20_000,
                        repeat: 0,
                        offered_rps: 5_000.0,
                        achieved_rps: 4_990.0,
                        p50_ns: 61_000,
                        p99_ns: 180_000,
                        samples: 20_000,
                        late: 0,
                        problems: 0,
                        geo_mean_ns: Some(60_000),
                        actual_p50_ns: Some(40_000),
                        actual_geo_mean_ns: Some(41_000),
                        lateness_p50_ns: Some(20_000),
                        peer: None,
                    }],
                },
                AppRuns {
                    app: "nginx".into(),
                    metric: "requests/s".into(),
                    runs: vec![raw(0, 0, 4_000.0), raw(100, 0, 2_200.0)],
                    open_loop: Vec::new(),
                },
            ],
            injector: CheckSummary {
                median_shift_ns: 20_260,
                p99_shift_ns: 28_540,
                base_latency_ns: 23_200,
                engine_excess_p50_ns: 11_700,
                netem_median_shift_ns: None,
                netem_p99_shift_ns: None,
                distribution: None,
                shifts: vec![latlab_net::delay::report::ShiftAt {
                    delay_ns: 100_000,
                    median_shift_ns: 104_500,
                    p99_shift_ns: 110_000,
                }],
            },
            check_idle_held_us: Some(0),
        };
        let mut r = ResultFile::new(
            RESULT_KIND,
            vec![],
            serde_json::json!({}),
            Provenance::default(),
        );
        r.data = serde_json::to_value(d).unwrap();
        r
    }

    #[test]
    fn runs_at_the_peers_rate_get_their_own_table_beside_the_peer() {
        let mut r = result();
        let mut d = data(&r).unwrap();
        // memcached at 20 µs (repeat 0) achieved 8000/s of its 9000/s at zero delay: saturated
        // by the 0.5 rule; add a 100 µs run at 4000/s of 9000/s (not saturated) too.
        d.apps[0]
            .runs
            .iter_mut()
            .filter(|r| r.delay_ns == 100_000 && r.repeat == 0)
            .for_each(|r| r.value = 4_000.0);
        let first = d.apps[0].open_loop[0].clone();
        d.apps[0].open_loop[0].peer = Some(super::super::PeerLatency {
            statistic: super::super::PeerStatistic::GeometricMean,
            ns: 50_000,
        });
        let mut at100 = first;
        at100.delay_ns = 100_000;
        at100.geo_mean_ns = Some(130_000);
        at100.actual_geo_mean_ns = Some(104_000);
        at100.peer = Some(super::super::PeerLatency {
            statistic: super::super::PeerStatistic::GeometricMean,
            ns: 100_000,
        });
        d.apps[0].open_loop.push(at100);
        r.data = serde_json::to_value(&d).unwrap();
        let i = Input::single(PathBuf::from("wt.json"), r);
        let s = match WhereTimeSections.sections(&[&i]) {
            Err(e) if e.contains("no TrueType font") => {
                eprintln!("skipped: {e}");
                return;
            }
            r => r.unwrap(),
        };
        let t = s[0].tables();
        let peer = t
            .iter()
            .find(|t| t.caption.contains("own rate"))
            .expect("the peer table");
        assert_eq!(peer.rows.len(), 2);
        let (sat, free) = (&peer.rows[0], &peer.rows[1]);
        assert!(sat[4].text.contains("saturated"), "{}", sat[4].text);
        assert_eq!(sat[6].text, format_ns(50_000.0));
        assert_eq!(sat[7].text, format_ns(60_000.0), "latlab's geometric mean");
        assert_eq!(free[4].text, "0.44");
        assert_eq!(
            (free[8].text.as_str(), free[8].style),
            ("+30.0 %", CellStyle::Bad)
        );
        assert_eq!(
            (free[10].text.as_str(), free[10].style),
            ("+4.0 %", CellStyle::Number)
        );
        let text: String = s[0].paragraphs().concat();
        assert!(
            text.contains("(within 10 % in 0 of 1); from each request's actual send"),
            "{text}"
        );
    }

    #[test]
    fn sections_hold_injector_curve_and_paper_comparison() {
        let i = Input::single(PathBuf::from("wt.json"), result());
        let s = match WhereTimeSections.sections(&[&i]) {
            Err(e) if e.contains("no TrueType font") => {
                eprintln!("skipped: {e}");
                return;
            }
            r => r.unwrap(),
        };
        assert_eq!(s.len(), 1);
        let kv = s[0]
            .blocks
            .iter()
            .find_map(|b| match b {
                Block::KeyValues(kv) => Some(kv),
                _ => None,
            })
            .unwrap();
        assert!(kv
            .iter()
            .any(|(k, v)| k.contains("base latency") && *v == format_ns(23_200.0)));
        assert!(kv
            .iter()
            .any(|(k, v)| k.contains("median shift") && *v == format_ns(20_260.0)));
        let t = s[0].tables();
        let curve = t[0];
        assert_eq!(curve.rows.len(), 5, "3 memcached + 2 nginx delays");
        let mc100 = &curve.rows[2];
        assert_eq!(mc100[0].text, "memcached");
        // The asked delay with the check's measured shift beside it.
        assert_eq!(
            curve.rows[1][2].text,
            format!("{} (measured {})", format_ns(20_000.0), format_ns(20_260.0))
        );
        assert_eq!(
            mc100[2].text,
            format!(
                "{} (measured {})",
                format_ns(100_000.0),
                format_ns(104_500.0)
            )
        );
        // 104.5 µs for 100 µs misses by more than 2 µs: said in the section.
        let text = s[0].paragraphs();
        assert!(
            text.iter()
                .any(|p| p.starts_with("The injector check missed") && p.contains("missed by +")),
            "{text:?}"
        );
        assert!(
            kv.iter()
                .any(|(k, v)| k.contains("idle policy during the check")
                    && v.contains("held at 0 µs"))
        );
        assert_eq!(mc100[5].text, "0.600");
        assert_eq!(mc100[4].text, "6000");
        let ng100 = &curve.rows[4];
        assert_eq!(ng100[5].text, "0.550");
        assert_eq!(ng100[6].style, CellStyle::Unsupported, "one run has no sd");
        let open = t[1];
        assert!(open.caption.contains("open loop"), "{}", open.caption);
        assert_eq!(open.rows.len(), 1, "one memcached open-loop delay");
        assert_eq!(open.rows[0][1].text, format_ns(20_000.0));
        assert_eq!(open.rows[0][5].text, format_ns(61_000.0));
        let paper = t[2];
        assert_eq!(paper.rows.len(), 4);
        assert_eq!(paper.rows[3][2].text, "−3%");
        assert_eq!(
            paper.rows[3][3].style,
            CellStyle::Unsupported,
            "no postgresql runs: not measured"
        );
        assert_eq!(paper.rows[0][2].text, "−25%");
        assert_eq!(paper.rows[0][3].text, "−20% ± 0");
        assert_eq!(paper.rows[2][3].text, "−45% ± 0");
        let series = s[0].blocks.iter().find_map(|b| match b {
            Block::Figure(Figure::ErrorBars { series, .. }) => Some(series),
            _ => None,
        });
        assert!(series
            .unwrap()
            .iter()
            .any(|l| l.label.contains("memcached")));
        let title = s[0]
            .blocks
            .iter()
            .find_map(|b| match b {
                Block::Figure(Figure::ErrorBars { title, spec, .. }) => {
                    Some(format!("{title} | {}", spec.x_desc))
                }
                _ => None,
            })
            .unwrap();
        assert_eq!(
            title
                .matches(&format!("(measured {})", format_ns(104_500.0)))
                .count(),
            1,
            "the figure's x axis: {title}"
        );
    }

    #[test]
    fn foreign_data_is_an_error_naming_the_input() {
        let mut r = ResultFile::new(
            RESULT_KIND,
            vec![],
            serde_json::json!({}),
            Provenance::default(),
        );
        r.data = serde_json::json!([1, 2, 3]);
        let i = Input::single(PathBuf::from("strange.json"), r);
        assert!(WhereTimeSections.handles("experiment.where_time"));
        let e = WhereTimeSections.sections(&[&i]).unwrap_err();
        assert!(e.contains("strange.json"), "{e}");
    }
}

//! The report sections of `net.load` results: latency from the scheduled send against the
//! offered load (percentiles with confidence intervals, one row per run, sorted by offered
//! rate, and a figure once there are two rates), the fate of every request, the server
//! latlab started, and each self-check with its statistic and threshold.

use super::record::series;
use super::result::{load_data, LoadData, RESULT_KIND};
use latlab_core::doc::{
    Block, Cell, CellStyle, ChartSpec, ErrorSeries, Figure, Input, KindSections, Section, Table,
};
use latlab_core::parse::Percentile;
use latlab_core::results::ResultFile;
use latlab_core::selfcheck::Outcome;
use latlab_core::stats::{summarize, PercentileEstimate, DEFAULT_CONFIDENCE};
use latlab_core::units::format_ns;

/// Sections for `net.load` results.
#[derive(Clone, Copy, Debug, Default)]
pub struct LoadSections;

/// The percentiles of the load table: median, p99, p99.9.
const SHOWN: [usize; 3] = [0, 2, 3];

/// One run, read.
struct Run<'a> {
    label: String,
    run: &'a ResultFile,
    data: LoadData,
    /// `request.sched` at [`SHOWN`]; empty when the run has no measured answer.
    estimates: Vec<PercentileEstimate>,
    /// The median of `generator.lateness`, ns (none without sends).
    late_p50: Option<u64>,
}

fn read<'a>(inputs: &[&'a Input]) -> Result<Vec<Run<'a>>, String> {
    let ladder: Vec<Percentile> = SHOWN.iter().map(|&i| Percentile::LADDER[i]).collect();
    let mut runs = Vec::new();
    for input in inputs {
        for (label, path, run) in input.labelled_runs() {
            let data = load_data(run)
                .ok_or_else(|| format!("{}: data is not a net.load record", path.display()))?;
            let estimates = match run.histogram(series::SCHED).transpose() {
                Ok(Some(h)) if h.count() > 0 => {
                    summarize(&h, &ladder, DEFAULT_CONFIDENCE).percentiles
                }
                Ok(_) => Vec::new(),
                Err(e) => return Err(format!("{}: {}: {e}", path.display(), series::SCHED)),
            };
            let late_p50 = match run.histogram(series::LATENESS).transpose() {
                Ok(Some(h)) if h.count() > 0 => Some(h.value_at(Percentile::LADDER[0])),
                Ok(_) => None,
                Err(e) => return Err(format!("{}: {}: {e}", path.display(), series::LATENESS)),
            };
            runs.push(Run {
                label,
                run,
                data,
                estimates,
                late_p50,
            });
        }
    }
    runs.sort_by(|a, b| a.data.configured_rps.total_cmp(&b.data.configured_rps));
    Ok(runs)
}

fn rate(v: f64) -> String {
    format!("{v:.0}/s")
}

/// How the run's client waited (`config.io`; files without it waited adaptively), with the
/// learnt margin when adaptive.
fn waiting(r: &Run<'_>) -> String {
    let io = r
        .run
        .config
        .get("io")
        .and_then(|v| v.as_str())
        .unwrap_or("adaptive");
    match (io, r.data.wake_margin_max_ns) {
        ("adaptive", Some(m)) => format!("adaptive, polls ≤ {} before a send", format_ns(m as f64)),
        ("adaptive", None) => "adaptive, polls 30µs before a send".into(),
        (other, _) => other.into(),
    }
}

fn load_table(runs: &[Run<'_>]) -> Table {
    let mut t = Table::new(
        "Latency from the scheduled send (request.sched) against the offered load, 95 % confidence intervals",
        &[
            "input",
            "target",
            "offered",
            "achieved",
            "p50",
            "p99",
            "p99.9",
            "late / sent",
            "waiting",
            "send late p50",
        ],
    );
    for r in runs {
        let d = &r.data;
        let c = |k: &str| r.run.counters.get(k).copied().unwrap_or(0);
        let mut row = vec![
            Cell::text(&r.label),
            Cell::text(&d.target),
            Cell::number(rate(d.configured_rps)),
            if (d.achieved_rps / d.configured_rps - 1.0).abs() <= 0.02 {
                Cell::number(rate(d.achieved_rps))
            } else {
                Cell::styled(rate(d.achieved_rps), CellStyle::Bad)
            },
        ];
        if r.estimates.is_empty() {
            row.extend((0..SHOWN.len()).map(|_| Cell::styled("—", CellStyle::Unsupported)));
        } else {
            row.extend(r.estimates.iter().map(Cell::estimate));
        }
        row.push(Cell::number(format!("{} / {}", c("late"), c("sent"))));
        row.push(Cell::text(waiting(r)));
        row.push(match r.late_p50 {
            Some(ns) => Cell::number(format_ns(ns as f64)),
            None => Cell::styled("—", CellStyle::Unsupported),
        });
        t.rows.push(row);
    }
    t
}

fn counts_table(runs: &[Run<'_>]) -> Table {
    const COUNTS: [&str; 9] = [
        "scheduled",
        "sent",
        "answered",
        "misses",
        "errors",
        "timed_out",
        "lost",
        "unanswered",
        "unsent",
    ];
    let mut header = vec!["input"];
    header.extend(COUNTS);
    header.push("accounted for");
    let mut t = Table::new(
        "Every request's fate: scheduled = sent + unsent, sent = answered + errors + timed_out + lost + unanswered (warm-up included)",
        &header,
    );
    for r in runs {
        let c = |k: &str| r.run.counters.get(k).copied().unwrap_or(0);
        let mut row = vec![Cell::text(&r.label)];
        for k in COUNTS {
            row.push(match k {
                "errors" | "timed_out" | "lost" | "unanswered" | "unsent" => {
                    Cell::problem_count(c(k))
                }
                _ => Cell::number(c(k).to_string()),
            });
        }
        row.push(if r.data.balanced {
            Cell::styled("yes", CellStyle::Good)
        } else {
            Cell::styled("no", CellStyle::Bad)
        });
        t.rows.push(row);
    }
    t
}

fn checks_table(runs: &[Run<'_>]) -> Table {
    let mut t = Table::new(
        "Self-checks: whether each run counts",
        &[
            "input",
            "check",
            "statistic",
            "value",
            "passes when",
            "outcome",
            "detail",
        ],
    );
    for r in runs {
        for v in &r.run.self_checks {
            t.rows.push(vec![
                Cell::text(&r.label),
                Cell::text(&v.check),
                Cell::text(&v.statistic),
                Cell::number(
                    v.value
                        .map_or_else(|| "not computed".into(), |x| format!("{x:.4}")),
                ),
                Cell::text(format!("{} {:.4}", v.pass_when.symbol(), v.threshold)),
                match v.outcome {
                    Outcome::Pass => Cell::styled("pass", CellStyle::Good),
                    Outcome::Fail => Cell::styled("FAIL", CellStyle::Bad),
                    _ => Cell::styled("inconclusive", CellStyle::Unsupported),
                },
                Cell::text(&v.detail),
            ]);
        }
    }
    t
}

/// p50 and p99 against offered load (µs, with their intervals); `None` with fewer than two
/// offered rates.
fn curve(runs: &[Run<'_>]) -> Option<Figure> {
    let mut rates: Vec<f64> = runs.iter().map(|r| r.data.configured_rps).collect();
    rates.dedup();
    if rates.len() < 2 {
        return None;
    }
    let series: Vec<ErrorSeries> = [(0, "p50"), (1, "p99")]
        .into_iter()
        .map(|(i, name)| ErrorSeries {
            label: format!("{name} from the scheduled send"),
            points: runs
                .iter()
                .filter_map(|r| {
                    let e = r.estimates.get(i).filter(|e| e.supported)?;
                    let us = |v: u64| v as f64 / 1e3;
                    Some((
                        r.data.configured_rps,
                        us(e.value_ns),
                        us(e.ci_low_ns.unwrap_or(e.value_ns)),
                        us(e.ci_high_ns.unwrap_or(e.value_ns)),
                    ))
                })
                .collect(),
        })
        .collect();
    latlab_core::doc::figure::errorbars_drawable(&series).then(|| Figure::ErrorBars {
        title: "Latency against offered load (open loop; 95 % confidence intervals)".into(),
        spec: ChartSpec {
            title: "Latency against offered load".into(),
            x_desc: "offered load (requests/s, log)".into(),
            y_desc: "latency from the scheduled send (µs)".into(),
            ..ChartSpec::default()
        },
        series,
    })
}

impl KindSections for LoadSections {
    const KIND: &'static str = RESULT_KIND;

    fn kind_sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String> {
        let runs = read(inputs)?;
        let mut s = Section::new("Requests against a real server");
        s.push(Block::Paragraph(
            "Open loop: requests go out on an absolute schedule whether or not the server has answered, and each latency is measured from the request's scheduled send time, so a server that falls behind shows its queue (a closed-loop client such as memaslap or wrk would wait instead and hide it). A request that fell due while every connection had its pipeline full was late: sent when a slot freed, still measured from its schedule.".into(),
        ));
        s.push(Block::Table(load_table(&runs)));
        if let Some(f) = curve(&runs) {
            s.push(Block::Figure(f));
        }
        s.push(Block::Table(counts_table(&runs)));
        let served: Vec<(String, String)> = runs
            .iter()
            .filter_map(|r| Some((r.label.clone(), r.data.served.as_ref()?.describe())))
            .collect();
        if !served.is_empty() {
            s.push(Block::Heading("Servers latlab started".into()));
            s.push(Block::KeyValues(served));
        }
        s.push(Block::Table(checks_table(&runs)));
        Ok(vec![s])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::hist::LatencyHistogram;
    use latlab_core::results::{Provenance, StoredHistogram};
    use latlab_core::selfcheck;
    use std::path::PathBuf;

    fn result(rps: f64, base_ns: u64, served: bool) -> ResultFile {
        let mut r = ResultFile::new(
            RESULT_KIND,
            vec![],
            serde_json::Value::Null,
            Provenance::default(),
        );
        let mut h = LatencyHistogram::default();
        for i in 0..2_000 {
            h.record(latlab_core::units::Nanos(base_ns + i * 10));
        }
        r.histograms.push(StoredHistogram::new(series::SCHED, &h));
        for (k, v) in [
            ("scheduled", 2_100),
            ("sent", 2_100),
            ("answered", 2_100),
            ("late", 7),
        ] {
            r.counters.insert(k.into(), v);
        }
        r.self_checks = vec![
            selfcheck::throughput(rps, rps, "requests/s"),
            selfcheck::stationarity(&[]),
        ];
        let d = LoadData {
            target: "memcached://127.0.0.1:21211".into(),
            protocol: super::super::Protocol::MemcachedTcp,
            configured_rps: rps,
            achieved_rps: rps,
            late_fraction: 0.0,
            balanced: true,
            interval_medians_ns: vec![],
            wake_margin_max_ns: None,
            served: served.then(|| super::super::result::Served {
                server: "memcached".into(),
                program: "/usr/bin/memcached".into(),
                pid: 42,
                cpu: Some(0),
                netns: None,
                stop: "stopped".into(),
            }),
        };
        r.data = serde_json::to_value(d).unwrap();
        r
    }

    fn input(label: &str, r: ResultFile) -> Input {
        Input::new(label, vec![(PathBuf::from(format!("{label}.json")), r)]).unwrap()
    }

    #[test]
    fn runs_are_sorted_by_offered_load_with_counts_checks_server_and_curve() {
        // hi waited adaptively with a learnt margin and sent 3 µs late; lo blocked and kept
        // no lateness
        let mut hi = result(20_000.0, 900_000, true);
        let mut late = LatencyHistogram::default();
        late.record(latlab_core::units::Nanos(3_000));
        hi.histograms
            .push(StoredHistogram::new(series::LATENESS, &late));
        hi.data["wake_margin_max_ns"] = 87_000.into();
        let mut lo = result(5_000.0, 60_000, false);
        lo.config = serde_json::json!({"io": "blocking"});
        let (hi, lo) = (input("hi", hi), input("lo", lo));
        let s = LoadSections.kind_sections(&[&hi, &lo]).unwrap();
        let blocks = &s[0].blocks;
        let tables: Vec<&Table> = blocks
            .iter()
            .filter_map(|b| match b {
                Block::Table(t) => Some(t),
                _ => None,
            })
            .collect();
        let load = tables[0];
        assert_eq!(load.rows[0][0].text, "lo", "sorted by offered rate");
        assert_eq!(load.rows[0][2].text, "5000/s");
        assert!(
            load.rows[0][4].note.is_some(),
            "the median has its interval"
        );
        assert_eq!(load.rows[1][7].text, "7 / 2100");
        assert_eq!(load.rows[0][8].text, "blocking");
        assert_eq!(load.rows[0][9].text, "—", "no lateness kept");
        assert!(
            load.rows[1][8].text.starts_with("adaptive, polls ≤ 87"),
            "{}",
            load.rows[1][8].text
        );
        assert!(
            load.rows[1][9].text.starts_with('3'),
            "{}",
            load.rows[1][9].text
        );
        let counts = tables[1];
        assert_eq!(counts.rows[0].last().unwrap().text, "yes");
        let checks = tables[2];
        assert_eq!(checks.rows.len(), 4, "two checks per run");
        assert!(checks.rows.iter().any(|r| r[5].text == "pass"));
        assert!(checks.rows.iter().any(|r| r[5].text == "inconclusive"));
        assert!(blocks
            .iter()
            .any(|b| matches!(b, Block::Figure(Figure::ErrorBars { series, .. }) if series[0].points.len() == 2)));
        assert!(blocks.iter().any(|b| matches!(b,
            Block::KeyValues(kv) if kv.len() == 1 && kv[0].1.contains("memcached") && kv[0].1.contains("stopped"))));
    }

    #[test]
    fn one_rate_draws_no_curve_and_foreign_data_is_an_error() {
        let one = input("one", result(5_000.0, 60_000, false));
        let s = LoadSections.kind_sections(&[&one]).unwrap();
        assert!(!s[0].blocks.iter().any(|b| matches!(b, Block::Figure(_))));
        let mut bad = result(5_000.0, 60_000, false);
        bad.data = serde_json::json!({"x": 1});
        let e = LoadSections
            .kind_sections(&[&input("bad", bad)])
            .unwrap_err();
        assert!(e.contains("not a net.load record"), "{e}");
    }
}

//! The report sections of the latency injector's results (through
//! [`latlab_core::doc::SectionProvider`]):
//!
//! - `net.delay` (an appliance run): the configured delay and queue, what happened to every
//!   frame per direction (forwarded, dropped and why, left in the queue), the delay
//!   actually applied and the element's own base latency, from the histograms;
//! - `net.delay.check` (`--testbed`): round trips over a direct link, through the element
//!   at 0 and at the configured delay, the measured median and p99 shift against the
//!   targets (± 1 µs and ± 3 µs) and the base latency; for a distribution instead its
//!   quantiles measured against expected (the 0 µs round trips convolved with it) and the
//!   Kolmogorov–Smirnov verdict ([`super::dist`]).

use super::engine::EngineConfig;
use super::report::{check_summary, CheckData, RunData, CHECK_KIND, RUN_KIND};
use latlab_core::doc::{stem, Block, Cell, CellStyle, Input, Section, SectionProvider, Table};
use latlab_core::hist::LatencyHistogram;
use latlab_core::parse::Percentile;
use latlab_core::results::ResultFile;
use latlab_core::stats::is_supported;
use latlab_core::units::{format_ns, format_signed_ns, SignStyle};
use std::path::Path;

/// The median shift must be within this of the configured delay (the issue's criterion).
pub const MEDIAN_TOLERANCE_NS: i64 = 1_000;
/// The p99 shift must be within this of the configured delay.
pub const P99_TOLERANCE_NS: i64 = 3_000;

/// Sections for `net.delay` and `net.delay.check` results.
#[derive(Clone, Copy, Debug, Default)]
pub struct DelaySections;

impl SectionProvider for DelaySections {
    fn handles(&self, kind: &str) -> bool {
        kind == RUN_KIND || kind == CHECK_KIND
    }

    fn sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String> {
        let mut out = Vec::new();
        for input in inputs {
            if input.kind() == CHECK_KIND {
                out.push(check_section(input)?);
            } else {
                out.push(run_section(input)?);
            }
        }
        Ok(out)
    }
}

fn hist(r: &ResultFile, name: &str, path: &Path) -> Result<Option<LatencyHistogram>, String> {
    match r.histogram(name) {
        None => Ok(None),
        Some(h) => h
            .map(Some)
            .map_err(|e| format!("{}: histogram '{name}': {e}", path.display())),
    }
}

/// `value_at(p)` formatted, or "unsupported" when the sample count cannot support `p`.
fn pct_cell(h: &LatencyHistogram, p: Percentile) -> Cell {
    if h.is_empty() {
        Cell::styled("no samples", CellStyle::Unsupported)
    } else if is_supported(p, h.count()) {
        Cell::number(format_ns(h.value_at(p) as f64))
    } else {
        Cell::styled("unsupported", CellStyle::Unsupported)
    }
}

fn run_section(input: &Input) -> Result<Section, String> {
    let mut s = Section::new(format!("Latency injector run ({})", input.label));
    s.push(Block::Paragraph(
        "latlab net delay forwards every frame between two interfaces after the added delay, preserving order. 'added' is release − arrival (the delay applied), 'base latency' the element's own latency on top of it (send completed − release). Every frame is forwarded, or dropped and counted.".into(),
    ));
    let p50 = Percentile::LADDER[0];
    let p99 = Percentile::LADDER[2];
    let mut t = Table::new(
        "Frames and latency per direction",
        &[
            "run",
            "direction",
            "enqueued",
            "forwarded",
            "dropped (queue full)",
            "dropped (oversize)",
            "send failures",
            "kernel drops",
            "max depth",
            "added p50",
            "added min – max",
            "base latency p50",
            "base latency p99",
        ],
    );
    let mut verdicts = Vec::new();
    for (path, run) in &input.runs {
        let label = if input.runs.len() > 1 {
            stem(path)
        } else {
            input.label.clone()
        };
        let d: RunData = serde_json::from_value(run.data.clone()).map_err(|e| {
            format!(
                "{}: data is not a net.delay run record: {e}",
                path.display()
            )
        })?;
        let cfg = serde_json::from_value::<EngineConfig>(run.config.clone());
        let capacity = cfg.as_ref().ok().map(|c| c.capacity);
        match cfg {
            Ok(c) => {
                let mut kv = vec![
                    ("interfaces".to_string(), format!("{} ⇄ {}", c.a, c.b)),
                    ("configured delay".to_string(), c.delay.to_string()),
                    (
                        "delayed direction".to_string(),
                        serde_json::to_value(c.direction)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_string))
                            .unwrap_or_else(|| format!("{:?}", c.direction)),
                    ),
                    (
                        "queue".to_string(),
                        format!(
                            "{} frames of at most {} bytes per direction",
                            c.capacity, c.slot_bytes
                        ),
                    ),
                ];
                if let Some(ns) = run.config.get("netns").and_then(|v| v.as_str()) {
                    kv.push(("network namespace".into(), ns.to_string()));
                }
                if input.runs.len() > 1 {
                    kv.insert(0, ("run".into(), label.clone()));
                }
                s.push(Block::KeyValues(kv));
            }
            Err(e) => {
                s.push(Block::Paragraph(format!(
                    "{label}: configuration not readable ({e}); the tables below come from the measured data."
                )));
            }
        }
        for dir in &d.directions {
            let h = |what: &str| hist(run, &format!("{}.{what}", dir.name), path);
            let added = h("added")?;
            let excess = h("excess")?;
            let q = &dir.queue;
            let forwarded = run
                .counters
                .get(&format!("{}.forwarded", dir.name))
                .copied()
                .unwrap_or(q.dequeued.saturating_sub(dir.send_failures));
            let lost =
                q.dropped_full + q.dropped_oversize + dir.send_failures + dir.kernel_rx_drops;
            if q.dropped_full > 0 {
                let slots = capacity.map_or(String::new(), |c| format!(" of {c} slots"));
                verdicts.push(format!(
                    "{label} {}: {} frames dropped because the queue was full (delay × rate exceeded the queue{slots}; the most ever queued was {}).",
                    dir.name, q.dropped_full, q.max_depth
                ));
            } else if lost > 0 {
                verdicts.push(format!("{label} {}: {lost} frames lost.", dir.name));
            }
            t.rows.push(vec![
                Cell::text(&label),
                Cell::text(&dir.name),
                Cell::number(q.enqueued.to_string()),
                Cell::number(forwarded.to_string()),
                Cell::problem_count(q.dropped_full),
                Cell::problem_count(q.dropped_oversize),
                Cell::problem_count(dir.send_failures),
                Cell::problem_count(dir.kernel_rx_drops),
                Cell::number(q.max_depth.to_string()),
                match &added {
                    Some(a) => pct_cell(a, p50),
                    None => Cell::styled("—", CellStyle::Unsupported),
                },
                match &added {
                    Some(a) if !a.is_empty() => Cell::number(format!(
                        "{} – {}",
                        format_ns(a.min() as f64),
                        format_ns(a.max() as f64)
                    )),
                    _ => Cell::styled("—", CellStyle::Unsupported),
                },
                match &excess {
                    Some(x) => pct_cell(x, p50),
                    None => Cell::styled("—", CellStyle::Unsupported),
                },
                match &excess {
                    Some(x) => pct_cell(x, p99),
                    None => Cell::styled("—", CellStyle::Unsupported),
                },
            ]);
        }
        if d.left_in_queue > 0 {
            verdicts.push(format!(
                "{label}: {} frames were still queued when the run ended and were not sent.",
                d.left_in_queue
            ));
        }
    }
    s.push(Block::Table(t));
    s.push(Block::Paragraph(if verdicts.is_empty() {
        "Every frame offered was forwarded: no drops, nothing left in the queue.".to_string()
    } else {
        verdicts.join(" ")
    }));
    Ok(s)
}

fn check_section(input: &Input) -> Result<Section, String> {
    let r = &input.merged;
    let first = input
        .runs
        .first()
        .map(|(p, _)| p.display().to_string())
        .unwrap_or_else(|| input.label.clone());
    let d: CheckData = serde_json::from_value(r.data.clone())
        .map_err(|e| format!("{first}: data is not a net.delay.check record: {e}"))?;
    let sum = check_summary(r).map_err(|e| format!("{first}: {e}"))?;
    let delay = d.delay_ns as i64;
    let spec = d.spec();
    let mut s = Section::new(format!(
        "Latency injector check: {spec} added ({})",
        input.label
    ));
    s.push(Block::Paragraph(
        "UDP round trips (one outstanding) between a client and a server namespace, over a direct veth link and through the delay namespace with latlab net delay adding 0 µs and the configured delay to client → server frames, alternated in rounds. The shift is the delayed round trip minus the 0 µs one; the base latency is the 0 µs round trip minus the direct one.".into(),
    ));
    if input.runs.len() > 1 {
        s.push(Block::Paragraph(format!(
            "{} checks merged exactly; the shifts are read from the merged histograms.",
            input.runs.len()
        )));
    }
    let cfg = &input.runs[0].1.config;
    let mut kv = Vec::new();
    for (k, name) in [
        ("fifo_priority", "injector SCHED_FIFO priority"),
        ("engine_cpu", "injector CPU"),
        ("endpoint_cpu", "client and server CPU"),
        ("busy_client", "busy-polling client"),
        ("rounds", "rounds"),
    ] {
        if let Some(v) = cfg.get(k) {
            kv.push((
                name.to_string(),
                if v.is_null() {
                    "none".into()
                } else {
                    v.to_string()
                },
            ));
        }
    }
    if !kv.is_empty() {
        s.push(Block::KeyValues(kv));
    }
    let p = Percentile::LADDER;
    let mut t = Table::new(
        "Round trips",
        &[
            "path", "p50", "p99", "p99.9", "max", "samples", "sent", "lost",
        ],
    );
    for name in ["direct", "zero", "delayed", "netem"] {
        let Some(h) = hist(r, name, Path::new(&first))? else {
            continue;
        };
        let what = match name {
            "direct" => "direct veth link".to_string(),
            "zero" => "through latlab net delay, 0 µs".to_string(),
            "delayed" => format!("through latlab net delay, {spec}"),
            _ => format!("netem {} on a direct link", format_ns(d.delay_ns as f64)),
        };
        let c = |k: &str| r.counters.get(&format!("{name}.{k}")).copied().unwrap_or(0);
        t.rows.push(vec![
            Cell::text(what),
            pct_cell(&h, p[0]),
            pct_cell(&h, p[2]),
            pct_cell(&h, p[3]),
            Cell::number(format_ns(h.max() as f64)),
            Cell::number(h.count().to_string()),
            Cell::number(c("sent").to_string()),
            Cell::problem_count(c("lost")),
        ]);
    }
    s.push(Block::Table(t));
    let verdict = |shift: i64, tol: i64| {
        let ok = (shift - delay).abs() <= tol;
        Cell::styled(
            if ok {
                format!("within ± {}", format_ns(tol as f64))
            } else {
                format!(
                    "off by {}",
                    format_signed_ns((shift - delay) as f64, SignStyle::Minus)
                )
            },
            if ok { CellStyle::Good } else { CellStyle::Bad },
        )
    };
    if let Some(dc) = &sum.distribution {
        s.push(Block::Table(distribution_table(dc)));
        s.push(Block::Paragraph(format!(
            "A round trip with a drawn delay is a 0 µs round trip plus one draw, so the delayed round trips should follow the 0 µs ones convolved with {spec} (computed exactly from the 0 µs histogram). The Kolmogorov–Smirnov distance between the two, forgiving a shift of up to {} either way (the tolerance where-time holds a median shift to), is {:.4} against the two-sample bound {:.4} at significance {} for {} and {} round trips: {}.",
            format_ns(dc.slack_ns as f64),
            dc.ks_distance,
            dc.bound,
            dc.alpha,
            dc.measured,
            dc.base,
            if dc.passed {
                "the delays follow the asked distribution"
            } else {
                "the delays do NOT follow the asked distribution"
            }
        )));
        return Ok(s);
    }
    let mut v = Table {
        rows: vec![
            vec![
                Cell::text("median shift"),
                Cell::number(format_signed_ns(
                    sum.median_shift_ns as f64,
                    SignStyle::Minus,
                )),
                Cell::number(format!(
                    "{} ± {}",
                    format_ns(delay as f64),
                    format_ns(MEDIAN_TOLERANCE_NS as f64)
                )),
                verdict(sum.median_shift_ns, MEDIAN_TOLERANCE_NS),
            ],
            vec![
                Cell::text("p99 shift"),
                Cell::number(format_signed_ns(sum.p99_shift_ns as f64, SignStyle::Minus)),
                Cell::number(format!(
                    "{} ± {}",
                    format_ns(delay as f64),
                    format_ns(P99_TOLERANCE_NS as f64)
                )),
                verdict(sum.p99_shift_ns, P99_TOLERANCE_NS),
            ],
            vec![
                Cell::text("base latency per round trip (0 µs through the element − direct, p50)"),
                Cell::number(format_signed_ns(
                    sum.base_latency_ns as f64,
                    SignStyle::Minus,
                )),
                Cell::text(""),
                Cell::text(""),
            ],
            vec![
                Cell::text("the element's own part (receive → send done, p50)"),
                Cell::number(format_ns(sum.engine_excess_p50_ns as f64)),
                Cell::text(""),
                Cell::text(""),
            ],
        ],
        ..Table::new(
            "Measured shift against the configured delay",
            &["measure", "measured", "target", "verdict"],
        )
    };
    if let (Some(m), Some(p99)) = (sum.netem_median_shift_ns, sum.netem_p99_shift_ns) {
        v.rows.push(vec![
            Cell::text("netem median shift (vs direct)"),
            Cell::number(format_signed_ns(m as f64, SignStyle::Minus)),
            Cell::number(format_ns(delay as f64)),
            verdict(m, MEDIAN_TOLERANCE_NS),
        ]);
        v.rows.push(vec![
            Cell::text("netem p99 shift (vs direct)"),
            Cell::number(format_signed_ns(p99 as f64, SignStyle::Minus)),
            Cell::number(format_ns(delay as f64)),
            verdict(p99, P99_TOLERANCE_NS),
        ]);
    }
    s.push(Block::Table(v));
    Ok(s)
}

/// The quantiles of the delayed round trips measured against expected, and the verdict.
fn distribution_table(dc: &super::dist::DistributionCheck) -> Table {
    let mut t = Table::new(
        "Delayed round trips: measured against expected (0 µs round trips ⊛ the asked delay)",
        &["quantile", "measured", "expected", "measured − expected"],
    );
    for q in &dc.quantiles {
        t.rows.push(vec![
            Cell::text(&q.name),
            Cell::number(format_ns(q.measured_ns as f64)),
            Cell::number(format_ns(q.expected_ns as f64)),
            Cell::number(format_signed_ns(
                q.measured_ns as f64 - q.expected_ns as f64,
                SignStyle::Minus,
            )),
        ]);
    }
    t.rows.push(vec![
        Cell::text("Kolmogorov–Smirnov distance"),
        Cell::number(format!("{:.4}", dc.ks_distance)),
        Cell::number(format!("≤ {:.4}", dc.bound)),
        if dc.passed {
            Cell::styled("pass", CellStyle::Good)
        } else {
            Cell::styled("FAIL", CellStyle::Bad)
        },
    ]);
    t
}

#[cfg(test)]
mod tests {
    use super::super::engine::{DirectionReport, EngineReport};
    use super::super::report::{fill_run, summarize_check};
    use super::super::QueueStats;
    use super::*;
    use latlab_core::hist::HistConfig;
    use latlab_core::results::{Provenance, StoredHistogram};
    use latlab_core::units::Nanos;
    use latlab_sys::packet::PacketStats;
    use std::path::PathBuf;

    fn h(values: &[(u64, u64)]) -> LatencyHistogram {
        let mut h = LatencyHistogram::new(HistConfig::default()).unwrap();
        for &(v, n) in values {
            h.record_n(Nanos(v), n);
        }
        h
    }

    fn text(s: &Section) -> String {
        let mut out = String::new();
        for b in &s.blocks {
            match b {
                Block::Paragraph(p) => out.push_str(p),
                Block::KeyValues(kv) => {
                    for (k, v) in kv {
                        out.push_str(&format!("{k}={v};"));
                    }
                }
                Block::Table(t) => {
                    for row in &t.rows {
                        for c in row {
                            out.push_str(&c.text);
                            out.push('|');
                        }
                        out.push('\n');
                    }
                }
                _ => {}
            }
            out.push('\n');
        }
        out
    }

    /// Stores a check's four histograms under the names the check writes them.
    fn push_check_histograms(
        r: &mut ResultFile,
        direct: &LatencyHistogram,
        zero: &LatencyHistogram,
        delayed: &LatencyHistogram,
        excess: &LatencyHistogram,
    ) {
        for (n, x) in [
            ("direct", direct),
            ("zero", zero),
            ("delayed", delayed),
            ("engine.excess", excess),
        ] {
            r.histograms.push(StoredHistogram::new(n, x));
        }
    }

    fn check_result() -> ResultFile {
        let mut r = ResultFile::new(
            CHECK_KIND,
            vec![],
            serde_json::json!({"fifo_priority": 50, "rounds": 6}),
            Provenance::default(),
        );
        let direct = h(&[(30_000, 2_000)]);
        let zero = h(&[(50_000, 1_970), (60_000, 30)]);
        let delayed = h(&[(70_000, 1_970), (90_000, 30)]);
        let excess = h(&[(11_000, 100)]);
        push_check_histograms(&mut r, &direct, &zero, &delayed, &excess);
        r.counters.insert("delayed.sent".into(), 2_003);
        r.counters.insert("delayed.lost".into(), 3);
        r.data = serde_json::to_value(CheckData {
            delay_ns: 20_000,
            delay: None,
            sent_lost: vec![("delayed".into(), 2_003, 3)],
            summary: summarize_check(
                &direct,
                &zero,
                &delayed,
                None,
                &excess,
                &crate::delay::DelaySpec::Constant { ns: 20_000 },
                &[],
            ),
        })
        .unwrap();
        r
    }

    #[test]
    fn check_section_has_the_shift_verdicts_and_base_latency() {
        let i = Input::single(PathBuf::from("chk.json"), check_result());
        let s = DelaySections.sections(&[&i]).unwrap();
        assert_eq!(s.len(), 1);
        let t = text(&s[0]);
        // Median 70 µs − 50 µs = 20 µs: within ± 1 µs; p99 90 − 60 = 30 µs: off by 10 µs.
        let f = |ns: u64| format_ns(ns as f64);
        assert!(
            t.contains(&format!(
                "median shift|{}|{} ± {}|within ± {}|",
                f(20_000),
                f(20_000),
                f(1_000),
                f(1_000)
            )),
            "{t}"
        );
        assert!(
            t.contains(&format!(
                "p99 shift|{}|{} ± {}|off by {}|",
                f(30_000),
                f(20_000),
                f(3_000),
                f(10_000)
            )),
            "{t}"
        );
        assert!(t.contains(&format!("|{}|", f(20_000))), "{t}");
        assert!(
            t.contains(&format!("through latlab net delay, {}", f(20_000))),
            "{t}"
        );
        assert!(t.contains("injector SCHED_FIFO priority=50"), "{t}");
        // 3 lost round trips are shown as such.
        assert!(t.contains("2003|3|"), "{t}");
    }

    /// A check of `uniform:10us,50us` whose delayed round trips are the 0 µs ones (30 µs ±
    /// 2 µs) plus `drawn` draws.
    fn drawn_check(drawn: crate::delay::DelaySpec) -> ResultFile {
        use crate::delay::{report::distribution_verdict, DelaySpec, Sampler};
        let spec = DelaySpec::Uniform {
            lo_ns: 10_000,
            hi_ns: 50_000,
        };
        let base = DelaySpec::Normal {
            mean_ns: 30_000,
            sd_ns: 2_000,
        };
        let (mut b0, mut b1, mut d) = (
            Sampler::new(base, 3),
            Sampler::new(base, 5),
            Sampler::new(drawn, 7),
        );
        let mut zero = h(&[]);
        let mut delayed = h(&[]);
        for _ in 0..20_000 {
            zero.record(Nanos(b0.sample()));
            delayed.record(Nanos(b1.sample() + d.sample()));
        }
        let (direct, excess) = (h(&[(20_000, 100)]), h(&[(9_000, 100)]));
        let mut r = ResultFile::new(
            CHECK_KIND,
            vec![],
            serde_json::json!({}),
            Provenance::default(),
        );
        push_check_histograms(&mut r, &direct, &zero, &delayed, &excess);
        let summary = summarize_check(&direct, &zero, &delayed, None, &excess, &spec, &[]);
        r.self_checks
            .push(distribution_verdict(summary.distribution.as_ref().unwrap()));
        r.data = serde_json::to_value(CheckData {
            delay_ns: spec.mean_ns(),
            delay: Some(spec),
            sent_lost: vec![],
            summary,
        })
        .unwrap();
        r
    }

    #[test]
    fn a_drawn_delay_is_shown_as_quantiles_against_expected_with_the_ks_verdict() {
        use crate::delay::DelaySpec;
        let right = drawn_check(DelaySpec::Uniform {
            lo_ns: 10_000,
            hi_ns: 50_000,
        });
        assert!(right.self_checks[0].passed(), "{:?}", right.self_checks);
        let i = Input::single(PathBuf::from("u.json"), right);
        let t = text(&DelaySections.sections(&[&i]).unwrap()[0]);
        assert!(t.contains("through latlab net delay, uniform:"), "{t}");
        for q in ["p10|", "p50|", "p90|", "p99|"] {
            assert!(t.contains(q), "{q}: {t}");
        }
        assert!(
            t.contains("Kolmogorov–Smirnov distance|") && t.contains("|pass|"),
            "{t}"
        );
        assert!(
            !t.contains("median shift|"),
            "no constant's shift verdicts: {t}"
        );
        // Delays drawn from 10–30 µs where 10–50 µs was asked: a failure, also as the
        // self-check the trust box reads.
        let wrong = drawn_check(DelaySpec::Uniform {
            lo_ns: 10_000,
            hi_ns: 30_000,
        });
        assert_eq!(
            wrong.self_checks[0].outcome,
            latlab_core::selfcheck::Outcome::Fail
        );
        assert!(wrong.self_checks[0].detail.contains("do not follow"));
        let i = Input::single(PathBuf::from("w.json"), wrong);
        let t = text(&DelaySections.sections(&[&i]).unwrap()[0]);
        assert!(t.contains("|FAIL|") && t.contains("do NOT follow"), "{t}");
    }

    #[test]
    fn checks_of_older_files_read_as_a_constant_without_a_distribution() {
        let old = r#"{"delay_ns":20000,"sent_lost":[],"summary":{"median_shift_ns":20100,"p99_shift_ns":23000,"base_latency_ns":10000,"engine_excess_p50_ns":900,"netem_median_shift_ns":null,"netem_p99_shift_ns":null}}"#;
        let d: CheckData = serde_json::from_str(old).unwrap();
        assert_eq!(d.spec(), crate::delay::DelaySpec::Constant { ns: 20_000 });
        assert_eq!(d.summary.distribution, None);
        assert!(d.summary.shifts.is_empty());
    }

    #[test]
    fn run_section_counts_drops() {
        let mut r = ResultFile::new(
            RUN_KIND,
            vec![],
            serde_json::to_value(EngineConfig::new(
                "latlab-dc",
                "latlab-ds",
                crate::delay::DelaySpec::Constant { ns: 2_000_000 },
            ))
            .unwrap(),
            Provenance::default(),
        );
        let dir = |name: &'static str, full: u64| DirectionReport {
            name,
            queue: QueueStats {
                enqueued: 112,
                dequeued: 112,
                dropped_full: full,
                dropped_oversize: 0,
                max_depth: 16,
            },
            send_failures: 0,
            kernel_rx: PacketStats::default(),
            excess: h(&[(700, 112)]),
            lateness: h(&[(600, 112)]),
            added: h(&[(2_000_000, 112)]),
        };
        let rep = EngineReport {
            directions: [dir("a_to_b", 4_882), dir("b_to_a", 0)],
            elapsed: Nanos(2_000_000_000),
            polls: 1_000,
            left_in_queue: 0,
            stalls: Vec::new(),
            stall_overflow: 0,
            loop_cost: 0,
        };
        fill_run(&mut r, &rep);
        let i = Input::single(PathBuf::from("run.json"), r);
        let s = DelaySections.sections(&[&i]).unwrap();
        let t = text(&s[0]);
        assert!(
            t.contains(&format!("configured delay={}", format_ns(2e6))),
            "{t}"
        );
        assert!(t.contains("a_to_b|112|112|4882|"), "{t}");
        assert!(
            t.contains(
                "4882 frames dropped because the queue was full (delay × rate exceeded the queue of 4096 slots"
            ),
            "{t}"
        );
        assert!(t.contains("delayed direction=both;"), "{t}");
        assert!(t.contains(&format!("|{}|", format_ns(700.0))), "{t}");
    }

    #[test]
    fn foreign_data_is_an_error_naming_the_input() {
        for kind in [RUN_KIND, CHECK_KIND] {
            let mut r = ResultFile::new(kind, vec![], serde_json::json!({}), Provenance::default());
            r.data = serde_json::json!({"nope": true});
            let i = Input::single(PathBuf::from("alien.json"), r);
            assert!(DelaySections.handles(kind));
            let e = DelaySections.sections(&[&i]).unwrap_err();
            assert!(e.contains("alien.json"), "{kind}: {e}");
        }
        assert!(!DelaySections.handles("net.probe"));
    }
}

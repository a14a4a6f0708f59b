//! The answer of a `net.killer_us` result in a few sentences and one table: what was
//! measured, the tail (p99.99, or the highest percentile every run supports) per method and
//! NF configuration with confidence intervals, which configuration wins and by how much,
//! whether the ladder is monotone as the paper's is, and which configurations could not be
//! measured here and why. Pure: from the result file alone; the report's first section
//! and the summary's first lines.

use super::data::{BehindRun, KillerUsData, TailShare, LADDER, METHODS};
use latlab_core::hist::LatencyHistogram;
use latlab_core::parse::Percentile;
use latlab_core::results::ResultFile;
use latlab_core::stats::{is_supported, summarize, PercentileEstimate};
use latlab_core::units::format_ns;

/// Confidence level of the headline's intervals.
pub const CONFIDENCE: f64 = 0.95;

/// The rungs of the ladder that the paper's Fig. 3 orders (each one should lower the tail);
/// `hog` is the counter-example and stands apart.
pub const MONOTONE_RUNGS: [&str; 4] = ["default", "pinned", "pinned+busy", "pinned+busy+fifo"];

/// Methods in the order of preference for the verdict: the one that leaves out the most
/// of what is not the NF first.
const REFERENCE_ORDER: [&str; 5] = [
    "hardware",
    "kernel",
    "user-xdp",
    "user-busy",
    "user-blocking",
];

/// One NF configuration's line of the headline table.
#[derive(Clone, Debug, PartialEq)]
pub struct HeadlineRow {
    /// NF configuration.
    pub config: String,
    /// One estimate per method of [`Headline::methods`] (`None`: no histogram).
    pub cells: Vec<Option<PercentileEstimate>>,
    /// Why this configuration was not measured (then `cells` are all `None`).
    pub not_measured: Option<String>,
    /// Why this configuration was measured but cannot be ranked on this host: its tail
    /// lies above the less tuned rung's beyond the intervals, and most of it was outside
    /// the system under test (then `cells` still hold what was measured).
    pub unrankable: Option<String>,
    /// Whether a kept run of this configuration had its generator behind schedule (its
    /// latencies then include the generator's own delay).
    pub generator_behind: bool,
}

impl HeadlineRow {
    /// The configuration's name, marked when this host could not rank it or the generator
    /// fell behind in one of its runs.
    pub fn label(&self) -> String {
        match (&self.unrankable, self.generator_behind) {
            (Some(_), _) => format!("{} (not measurable on this host, see above)", self.config),
            (None, true) => format!("{} (generator behind, see above)", self.config),
            (None, false) => self.config.clone(),
        }
    }
}

/// A rung whose tail is above the less tuned one's, beyond the intervals, is put down to
/// the host rather than to the NF when at least this share of its tail's excess was
/// outside the system under test.
pub const UNRANKABLE_SHARE: f64 = 0.5;

/// See the module documentation.
#[derive(Clone, Debug, PartialEq)]
pub struct Headline {
    /// The percentile of the table.
    pub percentile: Percentile,
    /// The methods present, in [`METHODS`] order.
    pub methods: Vec<String>,
    /// One row per NF configuration, in [`LADDER`] order.
    pub rows: Vec<HeadlineRow>,
    /// What was measured, what won, by how much; each a sentence a reader can act on.
    pub sentences: Vec<String>,
}

/// The headline of a `net.killer_us` result (`None` when its data is not a killer-us
/// summary or it holds no histogram).
pub fn headline(r: &ResultFile) -> Option<Headline> {
    let d: KillerUsData = serde_json::from_value(r.data.clone()).ok()?;
    let mut hists: Vec<(&str, &str, LatencyHistogram)> = Vec::new();
    for (m, _, _, _) in METHODS {
        for conf in LADDER {
            if let Some(Ok(h)) = r.histogram(&format!("{m}/{conf}")) {
                if h.count() > 0 {
                    hists.push((m, conf, h));
                }
            }
        }
    }
    if hists.is_empty() {
        return None;
    }
    let percentile = common_percentile(hists.iter().map(|(_, _, h)| h.count()));
    let methods: Vec<String> = METHODS
        .iter()
        .map(|m| m.0)
        .filter(|m| hists.iter().any(|h| h.0 == *m))
        .map(String::from)
        .collect();
    let estimate = |m: &str, conf: &str| {
        hists
            .iter()
            .find(|(hm, hc, _)| *hm == m && *hc == conf)
            .map(|(_, _, h)| summarize(h, &[percentile], CONFIDENCE).percentiles[0].clone())
    };
    let mut rows = Vec::new();
    for conf in LADDER {
        let not_measured = d
            .not_measured
            .iter()
            .find(|(c, _)| c == conf)
            .map(|(_, why)| why.clone());
        let cells: Vec<Option<PercentileEstimate>> =
            methods.iter().map(|m| estimate(m, conf)).collect();
        if not_measured.is_some() || cells.iter().any(Option::is_some) {
            rows.push(HeadlineRow {
                config: conf.to_string(),
                cells,
                not_measured,
                unrankable: None,
                generator_behind: d.behind.iter().any(|b| b.config == conf),
            });
        }
    }
    let mut sentences = vec![measured(r, &d, methods.len())];
    let reference = REFERENCE_ORDER
        .iter()
        .find(|m| methods.iter().any(|x| x == *m))
        .copied();
    if let Some(m) = reference {
        let of = |conf: &str| estimate(m, conf).filter(|e| e.supported);
        let (said, unrankable) = verdict(m, percentile, &of, &d.tail_shares);
        sentences.extend(said);
        for (conf, why) in unrankable {
            if let Some(row) = rows.iter_mut().find(|r| r.config == conf) {
                row.unrankable = Some(why);
            }
        }
    }
    for row in &rows {
        if let Some(why) = &row.not_measured {
            sentences.push(format!("{} was not run: {why}.", row.config));
        }
    }
    if let Some(said) = behind_sentence(&d.behind) {
        sentences.push(said);
    }
    for (conf, note) in &d.rt_throttle {
        sentences.push(format!("{conf} {note}."));
    }
    Some(Headline {
        percentile,
        methods,
        rows,
        sentences,
    })
}

/// p99.99 when every count supports it, otherwise the highest percentile of the ladder
/// that every count supports (p50 at the least).
fn common_percentile(counts: impl Iterator<Item = u64>) -> Percentile {
    let counts: Vec<u64> = counts.collect();
    let ladder = &Percentile::LADDER[..5];
    ladder
        .iter()
        .rev()
        .find(|p| counts.iter().all(|&n| is_supported(**p, n)))
        .copied()
        .unwrap_or(ladder[0])
}

/// "Measured: …": the object, the methods, the runs.
fn measured(r: &ResultFile, d: &KillerUsData, methods: usize) -> String {
    let object = if d.placement == "loopback" {
        "a UDP reflector on loopback (round trips through the host's own stack)"
    } else {
        "a UDP forwarder (the NF) in its own network namespace, between veth pairs from the generator's namespace"
    };
    let runs = match &d.host_fit {
        Some(f) => format!(
            ", runs of {} at {} pps, the generator on CPU {} and the NF on CPU {}",
            format_ns(f.duration.get() as f64),
            f.milli_pps / 1000,
            f.gen_cpu,
            f.nf_cpu
        ),
        None => {
            let pps = r
                .config
                .get("milli_pps")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0);
            format!(", at {} pps", pps / 1000)
        }
    };
    format!(
        "Measured: the latency of {object}, by {methods} methods under {} NF configurations{runs}.",
        // the rungs this file holds (a file from before a rung was added has fewer)
        LADDER
            .iter()
            .filter(|c| {
                d.rows.iter().any(|r| r.config == **c)
                    || d.not_measured.iter().any(|(x, _)| x == *c)
            })
            .count()
    )
}

/// `v (95 % CI lo–hi)`.
fn with_ci(e: &PercentileEstimate) -> String {
    let b = |v: Option<u64>| {
        v.map(|v| format_ns(v as f64))
            .unwrap_or_else(|| "open".into())
    };
    format!(
        "{} (95 % CI {}–{})",
        format_ns(e.value_ns as f64),
        b(e.ci_low_ns),
        b(e.ci_high_ns)
    )
}

/// Whether `lo` is below `hi` beyond their intervals (its upper bound below the other's
/// lower bound).
fn clearly_below(lo: &PercentileEstimate, hi: &PercentileEstimate) -> bool {
    match (lo.ci_high_ns, hi.ci_low_ns) {
        (Some(a), Some(b)) => a < b,
        _ => false,
    }
}

/// `apart` when `lo` lies [`clearly_below`] `hi`, `close` otherwise.
fn apart_or_not(
    lo: &PercentileEstimate,
    hi: &PercentileEstimate,
    apart: &'static str,
    close: &'static str,
) -> &'static str {
    if clearly_below(lo, hi) {
        apart
    } else {
        close
    }
}

/// Which configuration wins by method `m`, by how much, whether the ladder is monotone,
/// and what the hog does; and the rungs this host cannot rank, with the reason.
fn verdict(
    m: &str,
    p: Percentile,
    of: &dyn Fn(&str) -> Option<PercentileEstimate>,
    shares: &[TailShare],
) -> (Vec<String>, Vec<(String, String)>) {
    let mut out = Vec::new();
    let mut unrankable = Vec::new();
    let rungs: Vec<(&str, PercentileEstimate)> = MONOTONE_RUNGS
        .iter()
        .filter_map(|c| of(c).map(|e| (*c, e)))
        .collect();
    let Some((best, be)) = rungs.iter().min_by_key(|(_, e)| e.value_ns) else {
        return (out, unrankable);
    };
    let default = rungs.iter().find(|(c, _)| *c == "default");
    match default {
        Some((_, de)) if *best != "default" => {
            let ratio = de.value_ns as f64 / be.value_ns.max(1) as f64;
            let sure = apart_or_not(
                be,
                de,
                "the intervals do not overlap",
                "but the intervals overlap, so this run cannot tell them apart",
            );
            out.push(format!(
                "Winner by {m} timestamps: {best}, with {p} {}, {ratio:.1}× lower than the default configuration's {} — {sure}.",
                with_ci(be),
                with_ci(de)
            ));
        }
        Some((_, de)) => out.push(format!(
            "By {m} timestamps the default configuration has the lowest {p}, {}: no tuning step lowered the tail on this host, which usually means something else on the host dominates it (see the trust box).",
            with_ci(de)
        )),
        None => out.push(format!("Lowest {p} by {m} timestamps: {best}, {}.", with_ci(be))),
    }
    // Walk the ladder against the last rung kept: a rung above it beyond the intervals
    // whose tail was mostly outside the system under test is put down to the host and
    // left out of the ordering.
    let mut inversions = Vec::new();
    let mut last: Option<&(&str, PercentileEstimate)> = None;
    let mut kept = 0;
    for rung in &rungs {
        let (b, bx) = rung;
        if let Some((a, ae)) = last {
            if bx.value_ns > ae.value_ns {
                let share = shares.iter().find(|s| s.config == *b);
                match share
                    .filter(|s| clearly_below(ae, bx) && s.outside_share() >= UNRANKABLE_SHARE)
                {
                    Some(s) => {
                        unrankable.push((b.to_string(), unrankable_reason(a, s)));
                        continue;
                    }
                    None => {
                        let how =
                            apart_or_not(ae, bx, "beyond the intervals", "within the intervals");
                        inversions.push(format!(
                            "{b} ({}) is above {a} ({}), {how}",
                            format_ns(bx.value_ns as f64),
                            format_ns(ae.value_ns as f64)
                        ));
                    }
                }
            }
        }
        last = Some(rung);
        kept += 1;
    }
    let left_out = if unrankable.is_empty() {
        String::new()
    } else {
        let names: Vec<&str> = unrankable.iter().map(|(c, _)| c.as_str()).collect();
        format!(
            ", once {} is left out (this host could not rank it, see below)",
            names.join(" and ")
        )
    };
    if inversions.is_empty() && kept > 1 {
        out.push(format!(
            "The ladder is monotone, as in the paper{left_out}: each step lowers {p} by {m} timestamps."
        ));
    } else if !inversions.is_empty() {
        out.push(format!(
            "Unlike the paper's ladder this one is not monotone by {m} timestamps{left_out}: {}. Steps inside their intervals are noise; rerun on a quieter host, or for longer, to separate them.",
            inversions.join("; ")
        ));
    }
    for (conf, why) in &unrankable {
        out.push(format!("{conf} could not be ranked: {why}."));
    }
    if let (Some(h), Some((_, pb))) = (of("hog"), rungs.iter().find(|(c, _)| *c == "pinned+busy")) {
        out.push(format!(
            "A CPU hog on the NF's CPU takes {p} to {}, {:.1}× pinned+busy's: a pinned NF needs its CPU to itself.",
            format_ns(h.value_ns as f64),
            h.value_ns as f64 / pb.value_ns.max(1) as f64
        ));
    }
    (out, unrankable)
}

/// Which rungs could not be measured cleanly because the generator fell behind in one of
/// their kept runs (`None` when it kept its schedule in every run).
fn behind_sentence(behind: &[BehindRun]) -> Option<String> {
    if behind.is_empty() {
        return None;
    }
    let rungs: Vec<&str> = LADDER
        .iter()
        .copied()
        .filter(|c| behind.iter().any(|b| b.config == *c))
        .collect();
    let runs: Vec<String> = behind
        .iter()
        .map(|b| {
            format!(
                "{} (lateness p99 {})",
                b.run,
                format_ns(b.lateness_p99_ns as f64)
            )
        })
        .collect();
    Some(format!(
        "Not measured cleanly at this rate: {} — the generator fell behind its schedule in {}, so those latencies include the generator's own delay; rerun on a quieter host or at a lower --rate.",
        rungs.join(", "),
        runs.join(", ")
    ))
}

/// Why a rung above `below`'s tail is put down to the host.
fn unrankable_reason(below: &str, s: &TailShare) -> String {
    let pct = |x: u64| x as f64 * 100.0 / s.excess_ns.max(1) as f64;
    format!(
        "not measurable on this host: its tail is above {below}'s beyond the intervals, and {:.0} % of its tail's excess was outside the system under test ({:.0} % the hypervisor taking the CPU, {:.0} % other tasks on the path's CPUs), which no NF tuning removes — run it on a host whose CPUs are its own",
        s.outside_share() * 100.0,
        pct(s.outside_kernel_ns),
        pct(s.other_tasks_ns)
    )
}

#[cfg(test)]
mod tests {
    use super::super::data::RESULT_KIND;
    use super::*;
    use latlab_core::results::StoredHistogram;
    use latlab_core::units::Nanos;

    fn result(tails: &[(&str, u64)], not_measured: &[(&str, &str)]) -> ResultFile {
        let mut r = ResultFile::new(
            RESULT_KIND,
            vec![],
            serde_json::json!({"milli_pps": 5_000_000}),
            Default::default(),
        );
        for (conf, tail) in tails {
            let mut h = LatencyHistogram::default();
            h.record_n(Nanos(10_000), 99_000);
            h.record_n(Nanos(*tail), 1_000);
            r.histograms
                .push(StoredHistogram::new(format!("kernel/{conf}"), &h));
        }
        let d = KillerUsData {
            placement: "testbed".into(),
            not_measured: not_measured
                .iter()
                .map(|(c, w)| (c.to_string(), w.to_string()))
                .collect(),
            ..Default::default()
        };
        r.data = serde_json::to_value(&d).unwrap();
        r
    }

    #[test]
    fn a_monotone_ladder_names_its_winner_and_factor() {
        let r = result(
            &[
                ("default", 80_000),
                ("pinned", 40_000),
                ("pinned+busy", 20_000),
                ("pinned+busy+fifo", 15_000),
                ("hog", 900_000),
            ],
            &[],
        );
        let h = headline(&r).unwrap();
        assert_eq!(h.percentile.to_string(), "p99.99");
        assert_eq!(h.methods, vec!["kernel".to_string()]);
        assert_eq!(h.rows.len(), 5);
        let text = h.sentences.join(" ");
        assert!(
            text.starts_with("Measured: the latency of a UDP forwarder"),
            "{text}"
        );
        assert!(
            text.contains("Winner by kernel timestamps: pinned+busy+fifo"),
            "{text}"
        );
        assert!(text.contains("5.3× lower than the default"), "{text}");
        assert!(text.contains("the intervals do not overlap"), "{text}");
        assert!(text.contains("The ladder is monotone"), "{text}");
        assert!(
            text.contains("A CPU hog on the NF's CPU takes p99.99 to"),
            "{text}"
        );
    }

    #[test]
    fn an_inverted_rung_and_an_unmeasured_one_are_said() {
        let r = result(
            &[
                ("default", 40_000),
                ("pinned", 60_000),
                ("pinned+busy", 20_000),
            ],
            &[("pinned+busy+fifo", "not measurable on this host: no root")],
        );
        let h = headline(&r).unwrap();
        let text = h.sentences.join(" ");
        assert!(text.contains("not monotone"), "{text}");
        assert!(
            text.contains("pinned (60.0us) is above default (40.0us)"),
            "{text}"
        );
        assert!(
            text.contains("pinned+busy+fifo was not run: not measurable on this host: no root."),
            "{text}"
        );
        let fifo = h
            .rows
            .iter()
            .find(|r| r.config == "pinned+busy+fifo")
            .unwrap();
        assert!(fifo.not_measured.is_some() && fifo.cells.iter().all(Option::is_none));
    }

    #[test]
    fn rungs_whose_generator_fell_behind_are_named_in_the_result() {
        let mut r = result(&[("default", 80_000), ("pinned", 40_000)], &[]);
        let h = headline(&r).unwrap();
        assert!(h
            .rows
            .iter()
            .all(|r| !r.generator_behind && !r.label().contains("behind")));
        assert!(!h.sentences.join(" ").contains("fell behind"));
        let mut d: KillerUsData = serde_json::from_value(r.data.clone()).unwrap();
        d.behind = vec![BehindRun {
            config: "pinned".into(),
            run: "pinned.rx-busy".into(),
            lateness_p99_ns: 1_500_000,
        }];
        r.data = serde_json::to_value(&d).unwrap();
        let h = headline(&r).unwrap();
        let text = h.sentences.join(" ");
        assert!(
            text.contains("Not measured cleanly at this rate: pinned — the generator fell behind its schedule in pinned.rx-busy (lateness p99 1.50ms)"),
            "{text}"
        );
        let row = |c: &str| h.rows.iter().find(|r| r.config == c).unwrap().clone();
        assert_eq!(
            row("pinned").label(),
            "pinned (generator behind, see above)"
        );
        assert_eq!(row("default").label(), "default");
    }

    fn with_shares(mut r: ResultFile, shares: &[(&str, u64, u64, u64)]) -> ResultFile {
        let mut d: KillerUsData = serde_json::from_value(r.data.clone()).unwrap();
        d.tail_shares = shares
            .iter()
            .map(|(c, excess, hyp, other)| TailShare {
                config: c.to_string(),
                excess_ns: *excess,
                outside_kernel_ns: *hyp,
                other_tasks_ns: *other,
            })
            .collect();
        r.data = serde_json::to_value(&d).unwrap();
        r
    }

    const INVERTED_FIFO: [(&str, u64); 4] = [
        ("default", 80_000),
        ("pinned", 40_000),
        ("pinned+busy", 20_000),
        ("pinned+busy+fifo", 300_000),
    ];

    #[test]
    fn a_rung_whose_tail_is_the_hosts_is_marked_not_measurable() {
        let r = with_shares(
            result(&INVERTED_FIFO, &[]),
            &[("pinned+busy+fifo", 1_000_000, 700_000, 100_000)],
        );
        let h = headline(&r).unwrap();
        let text = h.sentences.join(" ");
        assert!(
            text.contains(
                "The ladder is monotone, as in the paper, once pinned+busy+fifo is left out"
            ),
            "{text}"
        );
        assert!(
            text.contains("pinned+busy+fifo could not be ranked: not measurable on this host"),
            "{text}"
        );
        assert!(
            text.contains(
                "80 % of its tail's excess was outside the system under test (70 % the hypervisor"
            ),
            "{text}"
        );
        let fifo = h
            .rows
            .iter()
            .find(|r| r.config == "pinned+busy+fifo")
            .unwrap();
        assert!(fifo.unrankable.is_some() && fifo.cells.iter().all(Option::is_some));
        assert!(h.rows.iter().filter(|r| r.unrankable.is_some()).count() == 1);
    }

    #[test]
    fn an_inversion_the_host_does_not_explain_stays_an_inversion() {
        for shares in [
            vec![("pinned+busy+fifo", 1_000_000, 200_000, 100_000)],
            vec![],
        ] {
            let h = headline(&with_shares(result(&INVERTED_FIFO, &[]), &shares)).unwrap();
            let text = h.sentences.join(" ");
            assert!(text.contains("not monotone"), "{text}");
            assert!(
                text.contains("pinned+busy+fifo (300us) is above pinned+busy (20.0us)"),
                "{text}"
            );
            assert!(h.rows.iter().all(|r| r.unrankable.is_none()));
        }
    }

    #[test]
    fn few_samples_lower_the_headline_percentile() {
        assert_eq!(
            common_percentile([100_000, 200_000].into_iter()).to_string(),
            "p99.99"
        );
        assert_eq!(
            common_percentile([100_000, 20_000].into_iter()).to_string(),
            "p99.9"
        );
        assert_eq!(common_percentile([5].into_iter()).to_string(), "p50");
    }
}

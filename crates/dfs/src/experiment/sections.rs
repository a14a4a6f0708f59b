//! The report sections of `dfs.experiment` results (`experiment.json` of `latlab
//! experiment dfs`): the experiment's findings, best effort against DFS at every node
//! count held against the paper, the bandwidth drop, and the files the experiment wrote.
//! The individual runs' own sections come from their `dfs.sim`/`dfs.run` providers.

use super::data::{findings, ExperimentData, RESULT_KIND};
use crate::paper::{
    FIG8_DROP_FACTOR, FIG8_DROP_FIRST, FIG8_DROP_LAST, FIG8_LONGER_PCT, PAPER_BANDWIDTH_RATIO,
    PAPER_COMPLETION_RATIO,
};
use crate::report::view::{decoded, f, ms};
use latlab_core::doc::Input;
use latlab_core::doc::{Block, Cell, CellStyle, KindSections, Section, Table};

/// Sections for `dfs.experiment` results.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExperimentSections;

impl KindSections for ExperimentSections {
    const KIND: &'static str = RESULT_KIND;

    fn kind_sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String> {
        let datas = decoded(inputs, |r| {
            ExperimentData::from_result(r).map_err(|e| format!("not a dfs.experiment record: {e}"))
        })?;
        let mut out = vec![findings_section(&datas), ratios_section(&datas)];
        // results written before the three policies and the sweep existed have neither
        if datas
            .iter()
            .any(|(_, d)| !d.policies.is_empty() || !d.sweep.is_empty())
        {
            out.push(policies_section(&datas));
        }
        out.push(drop_section(&datas));
        out.push(files_section(&datas));
        Ok(out)
    }
}

fn findings_section(datas: &[(String, ExperimentData)]) -> Section {
    let mut s = Section::new("DFS experiment: findings");
    s.push(Block::Paragraph(format!(
        "The paper reports DFS shortening the time-slice completion duration at least {PAPER_COMPLETION_RATIO:.0}× (§V-B2, Fig. 6) and raising aggregate bandwidth by up to {:.0} % (×{PAPER_BANDWIDTH_RATIO}, Fig. 7); the experiment measures both in the simulator and, where mpirun works, over MPI on this host. Why the model's ratios differ from the paper's is discussed in docs/dfs.md.",
        (PAPER_BANDWIDTH_RATIO - 1.0) * 100.0
    )));
    for (label, d) in datas {
        if datas.len() > 1 {
            s.push(Block::Heading(label.clone()));
        }
        let drop_nodes = d.drop_nodes().unwrap_or(0);
        for line in findings(d, drop_nodes) {
            s.push(Block::Paragraph(line));
        }
    }
    s
}

fn policies_section(datas: &[(String, ExperimentData)]) -> Section {
    let mut s = Section::new("DFS experiment: three policies and the sensitivity sweep");
    s.push(Block::Paragraph(
        "Best effort, DFS and FLESnet's time-slice manager at every node count: completion duration after warm-up (ms), bandwidth in percent of the benchmark reference beside the paper's, FLESnet's discards, the warm-up left out and p90 of the first and second half after it (similar halves: stationary). Then the sweep: best effort against DFS with one mechanism changed at a time.".into(),
    ));
    let mut t = Table::new(
        "Policies",
        &[
            "input",
            "nodes",
            "policy",
            "median",
            "p90",
            "max",
            "variance ms²",
            "BW %",
            "paper BW %",
            "discarded %",
            "warm-up ms",
            "p90 halves",
            "wall s",
        ],
    );
    for (label, d) in datas {
        for r in &d.policies {
            let c = r.completion_ms;
            t.rows.push(vec![
                Cell::text(label.as_str()),
                Cell::number(r.nodes.to_string()),
                Cell::text(r.policy.as_str()),
                Cell::number(ms(c.median)),
                Cell::number(ms(c.p90)),
                Cell::number(ms(c.max)),
                Cell::number(f(r.variance_ms2, 4)),
                Cell::number(f(r.bandwidth_pct, 1)),
                Cell::number(r.paper_pct.map_or("–".into(), |p| f(p, 1))),
                Cell::number(f(r.discarded_pct, 2)),
                Cell::number(f(r.warmup_ms, 1)),
                Cell::text(
                    r.p90_halves_ms
                        .map_or("–".into(), |h| format!("{} / {}", ms(h[0]), ms(h[1]))),
                ),
                Cell::number(f(r.wall_s, 1)),
            ]);
        }
    }
    s.push(Block::Table(t));
    // results written before the starts and the pacing were recorded have none of it
    if datas
        .iter()
        .any(|(_, d)| d.policies.iter().any(|r| r.at_cap_pct.is_some()))
    {
        let mut t = Table::new(
            "Starts, pacing and the writes-in-flight cap",
            &[
                "input",
                "nodes",
                "policy",
                "start",
                "p90",
                "BW %",
                "paced intervals",
                "catch-up %",
                "at the cap %",
                "senders per compute node, mean / p90 / max",
            ],
        );
        for (label, d) in datas {
            for r in &d.policies {
                t.rows.push(vec![
                    Cell::text(label.as_str()),
                    Cell::number(r.nodes.to_string()),
                    Cell::text(r.policy.as_str()),
                    Cell::text(if r.warm { "warm" } else { "cold" }),
                    Cell::number(ms(r.completion_ms.p90)),
                    Cell::number(f(r.bandwidth_pct, 1)),
                    Cell::number(r.paced_intervals.map_or("–".into(), |n| n.to_string())),
                    Cell::number(r.catch_up_pct.map_or("–".into(), |p| f(p, 2))),
                    Cell::number(r.at_cap_pct.map_or("–".into(), |p| f(p, 1))),
                    Cell::text(r.senders.map_or("–".into(), |x| {
                        format!("{} / {:.0} / {:.0}", f(x[0], 2), x[1], x[2])
                    })),
                ]);
            }
        }
        s.push(Block::Table(t));
    }
    let mut t = Table::new(
        "Sensitivity sweep, best effort against DFS",
        &[
            "input",
            "variant",
            "nodes",
            "p90 BE / DFS",
            "variance BE / DFS",
            "BE BW %",
            "DFS BW %",
        ],
    );
    for (label, d) in datas {
        for r in &d.sweep {
            t.rows.push(vec![
                Cell::text(label.as_str()),
                Cell::text(r.variant.as_str()),
                Cell::number(r.nodes.to_string()),
                Cell::number(format!("{}×", f(r.p90_ratio, 2))),
                Cell::number(format!("{}×", f(r.variance_ratio, 1))),
                Cell::number(f(r.bandwidth_pct[0], 1)),
                Cell::number(f(r.bandwidth_pct[1], 1)),
            ]);
        }
    }
    s.push(Block::Table(t));
    let limits = datas
        .iter()
        .flat_map(|(l, d)| d.sweep.iter().map(move |r| (l, r)))
        .filter_map(|(l, r)| Some((l, r, r.at_cap_pct?, r.credit_refusals?)))
        .collect::<Vec<_>>();
    if !limits.is_empty() {
        let mut t = Table::new(
            "Sender limits in the sweep (a variant of a limit that never bound changes nothing)",
            &[
                "input",
                "variant",
                "simulated",
                "BE at the writes-in-flight cap %",
                "DFS at the cap %",
                "BE credit refusals",
                "DFS credit refusals",
            ],
        );
        for (label, r, cap, refused) in limits {
            t.rows.push(vec![
                Cell::text(label.as_str()),
                Cell::text(r.variant.as_str()),
                Cell::text(match (&r.simulated, r.limit_bound) {
                    (Some(v), Some(false)) => format!("{v} (never bound)"),
                    (Some(v), _) => v.clone(),
                    (None, _) => "–".into(),
                }),
                Cell::number(f(cap[0], 1)),
                Cell::number(f(cap[1], 1)),
                Cell::number(refused[0].to_string()),
                Cell::number(refused[1].to_string()),
            ]);
        }
        s.push(Block::Table(t));
    }
    s
}

fn ratios_section(datas: &[(String, ExperimentData)]) -> Section {
    let mut s = Section::new("DFS experiment: best effort against DFS");
    s.push(Block::Paragraph(
        "Per node count: completion duration (last − first arrival, after warm-up) best effort / DFS at the median, at p90 and in variance, and aggregate bandwidth DFS / best effort. A median ratio reaching the paper's is marked good; a bandwidth ratio above 1 is a gain.".into(),
    ));
    let mut t = Table::new(
        "Ratios, best effort / DFS (completion) and DFS / best effort (bandwidth)",
        &[
            "input",
            "runtime",
            "nodes",
            "median completion, BE / DFS",
            "p90 completion, BE / DFS",
            "completion variance, BE / DFS",
            "bandwidth, DFS / BE",
        ],
    );
    for (label, d) in datas {
        let mpi = d.mpi.iter().map(|c| ("mpi", c));
        for (runtime, c) in mpi.chain(d.sim.iter().map(|c| ("sim", c))) {
            t.rows.push(vec![
                Cell::text(label.as_str()),
                Cell::text(runtime),
                Cell::number(c.nodes.to_string()),
                Cell::styled(
                    format!("{}×", f(c.median_ratio, 2)),
                    if c.median_ratio >= PAPER_COMPLETION_RATIO {
                        CellStyle::Good
                    } else {
                        CellStyle::Bad
                    },
                ),
                Cell::number(format!("{}×", f(c.p90_ratio, 2))),
                Cell::number(format!("{}×", f(c.variance_ratio, 1))),
                Cell::styled(
                    format!("{}×", f(c.bandwidth_ratio, 3)),
                    if c.bandwidth_ratio > 1.0 {
                        CellStyle::Good
                    } else {
                        CellStyle::Bad
                    },
                ),
            ]);
        }
    }
    s.push(Block::Table(t));
    s
}

fn drop_section(datas: &[(String, ExperimentData)]) -> Section {
    let mut s = Section::new("DFS experiment: bandwidth drop");
    s.push(Block::Paragraph(format!(
        "Intervals {FIG8_DROP_FIRST}–{FIG8_DROP_LAST} made {FIG8_LONGER_PCT:.0} % longer (every port at {FIG8_DROP_FACTOR} of its bandwidth; the paper's Fig. 8): the proposed interval duration should follow the longer actual durations and come down again through staged speed-ups after the drop."
    )));
    for (label, d) in datas {
        if datas.len() > 1 {
            s.push(Block::Heading(label.clone()));
        }
        let Some(dr) = &d.drop else {
            s.push(Block::Paragraph(
                "No proposals before the drop: the drop run is too short to summarise.".into(),
            ));
            continue;
        };
        s.push(Block::KeyValues(vec![
            (
                "nodes".into(),
                d.drop_nodes()
                    .map(|n| n.to_string())
                    .unwrap_or_else(|| "—".into()),
            ),
            ("proposed before the drop (mean)".into(), ms(dr.before_ms)),
            (
                "actual during the drop (mean)".into(),
                ms(dr.actual_in_drop_ms),
            ),
            ("proposal peak".into(), ms(dr.peak_ms)),
            ("last proposal".into(), ms(dr.last_ms)),
            (
                "intervals with a speed-up after the drop".into(),
                if dr.speedups_after.is_empty() {
                    "none".into()
                } else {
                    dr.speedups_after
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                },
            ),
        ]));
    }
    s
}

fn files_section(datas: &[(String, ExperimentData)]) -> Section {
    let mut s = Section::new("DFS experiment: files");
    s.push(Block::Paragraph(
        "Result files and figures the experiment wrote next to experiment.json; give the result files to `latlab report` for each run's own sections.".into(),
    ));
    for (label, d) in datas {
        let mut kv = vec![("files".to_string(), d.files.join(", "))];
        if let Some(why) = &d.mpi_skipped {
            kv.push(("MPI part".into(), format!("skipped: {why}")));
        }
        if datas.len() > 1 {
            s.push(Block::Heading(label.clone()));
        }
        s.push(Block::KeyValues(kv));
    }
    s
}

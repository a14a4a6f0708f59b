//! The sections of a `sched.cache_cost` result ([`CacheCostSections`]).

use crate::cache::{CacheCostData, KIND as CACHE_KIND};
use crate::result::data_of;
use latlab_core::doc::Input;
use latlab_core::doc::{slug, Block, Cell, CellStyle, Figure, KindSections, Section, Table};
use latlab_core::units::format_ns;

/// Sections for `sched.cache_cost` results (paper, Figure 5).
#[derive(Clone, Copy, Debug, Default)]
pub struct CacheCostSections;

impl KindSections for CacheCostSections {
    const KIND: &'static str = CACHE_KIND;

    fn kind_sections(&self, inputs: &[&Input]) -> Result<Vec<Section>, String> {
        let mut out = Vec::new();
        for (label, path, run) in inputs.iter().flat_map(|i| i.labelled_runs()) {
            let d: CacheCostData = data_of(run, path, "a sched.cache_cost record")?;
            out.push(cache_section(&label, &d));
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
    let mut t = Table::new(
        "Cost per context switch versus working set",
        &[
            "working set",
            "trials with switches",
            "cost per switch",
            "95% CI",
        ],
    );
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
    let series = [latlab_core::doc::ErrorSeries {
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
    let spec = latlab_core::doc::ChartSpec {
        title: "Indirect cost of a context switch (paper, Fig. 5)".into(),
        x_desc: "working set per thread (KB)".into(),
        y_desc: "cost per switch (µs), 95% CI".into(),
        ..latlab_core::doc::ChartSpec::default()
    };
    if latlab_core::doc::figure::errorbars_drawable(&series) {
        s.push(Block::Figure(Figure::ErrorBars {
            title: format!("Cost per context switch versus working set: {label}"),
            spec,
            series: series.to_vec(),
        }));
    } else {
        s.push(Block::Paragraph(
            "The figure was not drawn: no working-set size has two trials (sizes with at least two trials are drawn).".into(),
        ));
    }
    let mut t = Table::new(
        "Every trial",
        &[
            "working set",
            "W1 (lines)",
            "WN (lines)",
            "switches",
            "kernel involuntary",
            "CPU alone",
            "CPU contended",
            "cost (paper, wall time)",
            "cost (CPU received)",
        ],
    );
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

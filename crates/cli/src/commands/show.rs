//! `latlab show`: percentile tables (with support flags and confidence intervals) from
//! result files, optionally merged exactly across runs and exported as CSV.

use crate::args::ShowArgs;
use crate::exit::usage;
use crate::inputs::load_results;
use anyhow::Context as _;
use latlab_core::hist::LatencyHistogram;
use latlab_core::parse::Percentile;
use latlab_core::results::merge::merge_runs;
use latlab_core::results::{csv, write_atomically};
use latlab_core::stats::{summarize, Summary};
use latlab_core::text::summary_block;
use std::io::Write as _;

pub fn run(a: ShowArgs) -> anyhow::Result<()> {
    let results = load_results(&a.results)?;
    let percentiles = if a.percentiles.is_empty() {
        Percentile::LADDER.to_vec()
    } else {
        a.percentiles.clone()
    };
    // (series label, histogram), in file order.
    let mut series: Vec<(String, LatencyHistogram)> = Vec::new();
    if a.merge {
        let merged = merge_runs(&results).map_err(|e| usage(format!("--merge: {e}")))?;
        series = merged.decode_all(&results[0].0)?;
    } else {
        for (path, r) in &results {
            for (name, h) in r.decode_all(path)? {
                let label = if results.len() > 1 {
                    format!("{}: {name}", path.display())
                } else {
                    name
                };
                series.push((label, h));
            }
        }
    }
    let summaries: Vec<(String, Summary)> = series
        .iter()
        .map(|(n, h)| (n.clone(), summarize(h, &percentiles, a.confidence)))
        .collect();
    let csv_to_stdout = a.csv.as_deref().is_some_and(|p| p.as_os_str() == "-");
    if !csv_to_stdout {
        let mut out = std::io::stdout().lock();
        for (path, r) in &results {
            writeln!(
                out,
                "{}: {} (latlab {}, {}, {})",
                path.display(),
                r.kind,
                r.latlab_version,
                r.provenance.host.hostname,
                r.provenance.started_utc
            )?;
            if let Some(idle) = &r.provenance.idle {
                writeln!(out, "  {}", idle.summary())?;
            }
            if let Some(iso) = &r.provenance.isolation {
                writeln!(out, "  {}", iso.summary())?;
            }
            for w in &r.warnings {
                writeln!(out, "  warning: {w}")?;
            }
            for (k, v) in r.counters.iter().filter(|(_, v)| **v > 0) {
                writeln!(out, "  counter {k} = {v}")?;
            }
            for v in &r.self_checks {
                writeln!(out, "  self-check {}", v.line())?;
            }
        }
        if a.merge {
            writeln!(
                out,
                "merged {} files exactly (histograms added bucket by bucket)",
                results.len()
            )?;
        }
        for (name, s) in &summaries {
            writeln!(out)?;
            write!(out, "{}", summary_block(name, s))?;
        }
    }
    if let Some(p) = &a.csv {
        let text = csv::percentile_table(&summaries);
        if csv_to_stdout {
            std::io::stdout().lock().write_all(text.as_bytes())?;
        } else {
            write_atomically(p, text.as_bytes()).context("writing --csv")?;
            println!("csv: {}", p.display());
        }
    }
    Ok(())
}

//! `latlab report`, `latlab compare` and `latlab check`: HTML reports, A/B verdicts and
//! latency budgets, all from result files.

use crate::args::{CheckArgs, CompareArgs, ReportArgs};
use crate::exit::{usage, UsageError};
use crate::inputs::{load_inputs, load_results};
use crate::output::{unique, RESULTS_DIR};
use latlab_core::parse::Percentile;
use latlab_core::text::Table;
use latlab_core::units::{format_ns, format_signed_ns, SignStyle};
use latlab_report::check::{evaluate, parse_budget, parse_budget_file, Outcome};
use latlab_report::compare::{compare, Verdict};
use latlab_report::html::{self, ReportOptions, SectionProvider};
use latlab_report::input::Input;
use std::path::{Path, PathBuf};

/// The section providers of every result kind latlab writes.
fn providers() -> Vec<Box<dyn SectionProvider>> {
    vec![
        Box::new(latlab_host::report::ClocksSections),
        Box::new(latlab_net::sections::ProbeSections),
        Box::new(latlab_net::killer_us::KillerUsSections),
        Box::new(latlab_net::rpc::sections::LoadSections),
        Box::new(latlab_dfs::report::SimSections),
        #[cfg(feature = "mpi")]
        Box::new(latlab_dfs::report::RunSections),
        #[cfg(feature = "mpi")]
        Box::new(latlab_dfs::report::BenchSections),
        Box::new(latlab_dfs::experiment::ExperimentSections),
        Box::new(latlab_host::breakdown::sections::BreakdownSections),
        Box::new(latlab_host::where_time::sections::WhereTimeSections),
        Box::new(latlab_net::delay::sections::DelaySections),
        Box::new(latlab_sched::sections::RunSections),
        Box::new(latlab_sched::sections::CacheCostSections),
        Box::new(latlab_sched::sections::ExperimentSections),
        // any kind: "Why the tail" for the results that carry an attribution
        Box::new(latlab_explain::sections::WhyTheTail),
    ]
}

fn percentiles_or_ladder(p: &[Percentile]) -> Vec<Percentile> {
    if p.is_empty() {
        Percentile::LADDER.to_vec()
    } else {
        p.to_vec()
    }
}

pub fn report(a: ReportArgs) -> anyhow::Result<()> {
    let output = match &a.output {
        Some(p) => {
            if p.extension().and_then(|e| e.to_str()) != Some("html") {
                return Err(usage(format!(
                    "--output: {} must end in .html",
                    p.display()
                )));
            }
            p.clone()
        }
        None => {
            let stamp: String = latlab_sys::host::utc_now_rfc3339()
                .chars()
                .filter(|c| *c != '-' && *c != ':')
                .collect();
            unique(Path::new(RESULTS_DIR).join(format!("report-{stamp}.html")))
        }
    };
    let inputs = load_inputs(&a.results, a.merge)?;
    let opts = ReportOptions {
        title: a.title.clone(),
        percentiles: percentiles_or_ladder(&a.percentiles),
        confidence: a.confidence,
        generated_utc: latlab_sys::host::utc_now_rfc3339(),
    };
    let figures_dir = (!a.no_figures).then(|| {
        a.figures
            .clone()
            .unwrap_or_else(|| html::figures_dir_for(&output))
    });
    let html::Written { report, figures } = write(&inputs, &opts, &output, figures_dir.as_deref())?;
    if !a.quiet {
        let warnings = report
            .sections
            .iter()
            .flat_map(|s| &s.blocks)
            .filter_map(|b| match b {
                html::Block::Warnings(w) => Some(w.len()),
                _ => None,
            })
            .sum::<usize>();
        println!(
            "report: {} ({} inputs, {} trust warnings)",
            output.display(),
            inputs.len(),
            warnings
        );
        if let Some(first) = figures.first() {
            println!(
                "figures: {} files in {}",
                figures.len(),
                first.parent().unwrap_or(Path::new(".")).display()
            );
        }
    }
    Ok(())
}

/// Builds and writes a report with every provider latlab has.
fn write(
    inputs: &[Input],
    opts: &ReportOptions,
    output: &Path,
    figures_dir: Option<&Path>,
) -> anyhow::Result<html::Written> {
    let providers = providers();
    let refs: Vec<&dyn SectionProvider> = providers.iter().map(|p| p.as_ref()).collect();
    Ok(html::build_and_write(
        inputs,
        &refs,
        opts,
        output,
        figures_dir,
    )?)
}

/// Writes the HTML report of an experiment: every result in `results` (one input each, in
/// order) into `dir/report.html`, with standalone figures in `dir/report-figures/`.
/// Experiments call this after writing their result files, so their reports are built the
/// same way as `latlab report`'s, from the files on disk.
pub fn experiment_report(dir: &Path, title: &str, results: &[PathBuf]) -> anyhow::Result<PathBuf> {
    let args: Vec<String> = results.iter().map(|p| p.display().to_string()).collect();
    let inputs = load_inputs(&args, false)?;
    let output = dir.join("report.html");
    let opts = ReportOptions {
        title: title.to_string(),
        generated_utc: latlab_sys::host::utc_now_rfc3339(),
        ..ReportOptions::default()
    };
    write(
        &inputs,
        &opts,
        &output,
        Some(&html::figures_dir_for(&output)),
    )?;
    Ok(output)
}

pub fn compare_cmd(a: CompareArgs) -> anyhow::Result<()> {
    let mut inputs = load_inputs(&[a.a.clone(), a.b.clone()], false)?;
    let b = inputs.pop().expect("two inputs");
    let a_in = inputs.pop().expect("two inputs");
    let c = compare(
        &a_in,
        &b,
        &percentiles_or_ladder(&a.percentiles),
        a.confidence,
        &a.series,
    )
    .map_err(|e| usage(e.to_string()))?;
    println!("A: {}", describe(&a_in));
    println!("B: {}", describe(&b));
    println!(
        "kind {}; B − A per percentile; significant when the {:.0}% intervals do not overlap",
        c.kind,
        c.confidence * 100.0
    );
    let mut current = String::new();
    let mut t = Table::new(["series", "percentile", "A", "B", "B − A", "verdict"]);
    let mut sentences: Vec<(String, String)> = Vec::new();
    for r in &c.rows {
        let cell = |e: &latlab_core::stats::PercentileEstimate| {
            if e.supported {
                format_ns(e.value_ns as f64)
            } else {
                "unsupported".into()
            }
        };
        let (diff, verdict) = match r.verdict {
            Verdict::Unsupported(_) => ("—".to_string(), "no verdict"),
            Verdict::Slower { diff_ns, .. } => {
                (format_signed_ns(diff_ns, SignStyle::Both), "B slower")
            }
            Verdict::Faster { diff_ns, .. } => {
                (format_signed_ns(diff_ns, SignStyle::Both), "B faster")
            }
            Verdict::NotSignificant { diff_ns, .. } => (
                format_signed_ns(diff_ns, SignStyle::Both),
                "not significant",
            ),
        };
        t.row(vec![
            r.series.clone(),
            r.percentile.to_string(),
            cell(&r.a),
            cell(&r.b),
            diff,
            verdict.to_string(),
        ]);
        sentences.push((r.series.clone(), r.sentence()));
    }
    println!();
    print!("{}", t.render());
    for (series, s) in sentences {
        if series != current {
            println!("\n{series}:");
            current = series;
        }
        println!("  {s}");
    }
    for n in &c.only_in_a {
        println!("only in A (not compared): {n}");
    }
    for n in &c.only_in_b {
        println!("only in B (not compared): {n}");
    }
    Ok(())
}

fn describe(i: &Input) -> String {
    let files: Vec<String> = i.paths().map(|p| p.display().to_string()).collect();
    if files.len() == 1 {
        files[0].clone()
    } else {
        format!("{} runs merged exactly: {}", files.len(), files.join(", "))
    }
}

/// A budget that does not hold: exit code 1.
#[derive(Debug, thiserror::Error)]
#[error("{failed} of {total} budgets failed")]
pub struct BudgetsFailed {
    failed: usize,
    total: usize,
}

pub fn check(a: CheckArgs) -> anyhow::Result<()> {
    let mut budgets = Vec::new();
    for b in &a.budget {
        budgets.push(parse_budget(b).map_err(|e| usage(format!("--budget: {e}")))?);
    }
    if let Some(f) = &a.budgets {
        let text = std::fs::read_to_string(f)
            .map_err(|e| usage(format!("--budgets: {}: {e}", f.display())))?;
        budgets.extend(parse_budget_file(&text, f).map_err(|e| usage(format!("--budgets: {e}")))?);
    }
    if budgets.is_empty() {
        return Err(usage(
            "no budget given: use --budget 'p99.99 < 50us' (repeatable) or --budgets FILE",
        ));
    }
    let runs = load_results(&a.results)?;
    let paths: Vec<PathBuf> = runs.iter().map(|(p, _)| p.clone()).collect();
    let input = Input::new(Input::group_label(&paths), runs).map_err(|e| usage(e.to_string()))?;
    // Evaluate everything before printing: a malformed or undecidable budget fails the
    // whole check with exit 2 rather than half a verdict.
    let mut outcomes: Vec<(String, Vec<Outcome>)> = Vec::new();
    for b in &budgets {
        let o = evaluate(b, &input).map_err(|e| anyhow::Error::new(UsageError(e.to_string())))?;
        outcomes.push((b.text.clone(), o));
    }
    println!("{}", describe(&input));
    let mut failed = 0;
    for (text, os) in &outcomes {
        let holds = os.iter().all(|o| o.holds);
        if !holds {
            failed += 1;
        }
        println!("{}  {text}", if holds { "PASS" } else { "FAIL" });
        for o in os {
            let who = if o.series.is_empty() {
                String::new()
            } else {
                format!("{}: ", o.series)
            };
            println!(
                "      {} {who}{}",
                if o.holds { "ok  " } else { "over" },
                o.observed
            );
        }
    }
    if failed > 0 {
        return Err(BudgetsFailed {
            failed,
            total: outcomes.len(),
        }
        .into());
    }
    println!("all {} budgets hold", outcomes.len());
    Ok(())
}

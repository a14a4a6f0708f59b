//! Self-contained HTML reports built from result files only.
//!
//! [`build`] assembles a [`Report`] from [`Input`]s: an overview, the trust warnings
//! ([`crate::trust`]), the sections each kind of result contributes through a
//! [`SectionProvider`], percentile tables with confidence intervals, overlaid CDF and CCDF
//! figures, and each run's provenance. [`render()`] turns the report into one HTML file that
//! works offline: CSS, script and every figure are inline, nothing is fetched. Hovering a
//! distribution figure names the value at the percentile under the pointer; the legend
//! toggles series. [`write_figures`] writes every figure again as standalone SVG and PNG.
//!
//! Experiments add what their kind of result needs by implementing [`SectionProvider`] in
//! their own crate and passing it to [`build`]; they never write HTML.

mod render;

pub use latlab_core::doc::{
    slug, Block, Cell, CellStyle, Figure, Report, Section, SectionProvider, Severity, Table,
    Warning,
};
pub use render::render;

use crate::input::Input;
use crate::{render as render_image, Curve, PlotError, PlotKind, PlotSpec};
use latlab_core::hist::LatencyHistogram;
use latlab_core::parse::Percentile;
use latlab_core::results::write_atomically;
use latlab_core::stats::{ccdf, cdf, summarize, PercentileEstimate};
use latlab_core::units::format_ns;
use std::path::{Path, PathBuf};

/// Errors building or writing a report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// No inputs.
    #[error("no results to report on")]
    Empty,
    /// A histogram in an input could not be decoded.
    #[error("{input}: histogram '{name}': {detail}")]
    Histogram {
        /// Input label.
        input: String,
        /// Histogram name.
        name: String,
        /// What is wrong.
        detail: String,
    },
    /// A section provider failed.
    #[error("{kind} section: {detail}")]
    Provider {
        /// The result kind.
        kind: String,
        /// What went wrong.
        detail: String,
    },
    /// Writing a file failed.
    #[error("writing {}: {detail}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        detail: String,
    },
    /// Drawing a figure failed.
    #[error("figure '{title}': {source}")]
    Figure {
        /// The figure's title.
        title: String,
        /// The drawing error.
        source: PlotError,
    },
}

/// Options of [`build`].
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// Report title.
    pub title: String,
    /// Percentiles in the tables.
    pub percentiles: Vec<Percentile>,
    /// Confidence level of the percentile intervals.
    pub confidence: f64,
    /// Generation time, RFC 3339 (passed in: libraries do not read clocks).
    pub generated_utc: String,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            title: "latlab report".into(),
            percentiles: Percentile::LADDER.to_vec(),
            confidence: 0.95,
            generated_utc: String::new(),
        }
    }
}

/// Most curves overlaid in one distribution figure; with more, one figure per histogram name.
pub const MAX_CURVES_PER_FIGURE: usize = 10;

/// Builds the report for `inputs`.
///
/// # Errors
/// [`ReportError::Empty`] without inputs, [`ReportError::Histogram`] for an undecodable
/// histogram, [`ReportError::Provider`] when a provider fails.
pub fn build(
    inputs: &[Input],
    providers: &[&dyn SectionProvider],
    opts: &ReportOptions,
) -> Result<Report, ReportError> {
    if inputs.is_empty() {
        return Err(ReportError::Empty);
    }
    // Kind-specific sections, one provider call per kind, in first-appearance order.
    let mut kinds: Vec<&str> = Vec::new();
    for i in inputs {
        if !kinds.contains(&i.kind()) {
            kinds.push(i.kind());
        }
    }
    let mut lead = Vec::new();
    let mut specific = Vec::new();
    for kind in &kinds {
        let of_kind: Vec<&Input> = inputs.iter().filter(|i| i.kind() == *kind).collect();
        let failed = |detail| ReportError::Provider {
            kind: (*kind).to_string(),
            detail,
        };
        for p in providers.iter().filter(|p| p.handles(kind)) {
            lead.extend(p.lead(&of_kind).map_err(failed)?);
            specific.extend(p.sections(&of_kind).map_err(failed)?);
        }
    }
    let decoded = decode(inputs)?;
    let drawn_elsewhere = |kind: &str| {
        providers
            .iter()
            .any(|p| p.handles(kind) && !p.generic_distributions())
    };
    let generic: Vec<Input> = inputs
        .iter()
        .filter(|i| !drawn_elsewhere(i.kind()))
        .cloned()
        .collect();
    let distributions = if generic.is_empty() {
        None
    } else {
        Some(distribution_section(&decode(&generic)?))
    };
    // With a headline: the answer, how far to trust it, the figures, then the details.
    // Without one: what the inputs are, how far to trust them, then everything else.
    let leads = !lead.is_empty();
    let mut sections = lead;
    if !leads {
        sections.push(overview(inputs));
    }
    sections.push(trust_section(inputs));
    sections.extend(specific);
    sections.extend(distributions);
    sections.push(percentile_section(&decoded, opts));
    if leads {
        sections.push(overview(inputs));
    }
    sections.push(provenance_section(inputs));
    Ok(Report {
        title: opts.title.clone(),
        generated_utc: opts.generated_utc.clone(),
        latlab_version: env!("CARGO_PKG_VERSION").to_string(),
        sections,
    })
}

/// `(input label, histogram name, histogram)`.
type Item = (String, String, LatencyHistogram);
/// Every histogram of every input.
type Decoded = Vec<Item>;

fn decode(inputs: &[Input]) -> Result<Decoded, ReportError> {
    let mut out = Vec::new();
    for i in inputs {
        for s in &i.merged.histograms {
            let h = s.decode().map_err(|e| ReportError::Histogram {
                input: i.label.clone(),
                name: s.name.clone(),
                detail: e.to_string(),
            })?;
            out.push((i.label.clone(), s.name.clone(), h));
        }
    }
    Ok(out)
}

fn overview(inputs: &[Input]) -> Section {
    let mut s = Section::new("Overview");
    let mut t = Table::new(
        "Inputs",
        &[
            "input",
            "kind",
            "runs",
            "host",
            "started (UTC)",
            "duration",
            "histograms",
            "samples",
        ],
    );
    for i in inputs {
        let r = &i.merged;
        let samples: u64 = r.histograms.iter().map(|h| h.count).sum();
        t.rows.push(vec![
            Cell::text(&i.label),
            Cell::text(&r.kind),
            Cell::number(i.runs.len().to_string()),
            Cell::text(&r.provenance.host.hostname),
            Cell::text(&r.provenance.started_utc),
            Cell::number(format_ns(r.duration_ns as f64)),
            Cell::number(r.histograms.len().to_string()),
            Cell::number(samples.to_string()),
        ]);
    }
    s.push(Block::Table(t));
    let files: Vec<String> = inputs
        .iter()
        .flat_map(|i| i.paths().map(|p| format!("{}: {}", i.label, p.display())))
        .collect();
    s.push(Block::Code {
        caption: "Result files".into(),
        text: files.join("\n"),
    });
    s
}

fn trust_section(inputs: &[Input]) -> Section {
    let mut s = Section::new("Trust");
    let found = crate::trust::findings(inputs);
    if found.is_empty() {
        s.push(Block::Paragraph(
            "No warnings: every percentile shown is supported, nothing was lost, and the timebase and placement are sound.".into(),
        ));
    } else {
        let (serious, caution, info) = crate::trust::counts(&found);
        let verdict = if serious > 0 {
            "Some numbers are incomplete or suspect: read the serious findings before the results."
        } else if caution > 0 {
            "Nothing was lost; the cautions say what may distort the numbers."
        } else {
            "Nothing was lost and nothing distorts the numbers; the notes say what the sample counts support."
        };
        s.push(Block::Paragraph(format!(
            "{serious} serious, {caution} caution, {info} info. {verdict} Each finding appears once, with what it applies to and what to do about it."
        )));
        s.push(Block::Warnings(
            found
                .iter()
                .map(crate::trust::Finding::to_warning)
                .collect(),
        ));
    }
    s
}

fn distribution_section(decoded: &Decoded) -> Section {
    let mut s = Section::new("Distributions");
    let multi_input = decoded
        .iter()
        .map(|d| &d.0)
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        > 1;
    let label = |input: &str, name: &str| {
        if multi_input {
            format!("{input}: {name}")
        } else {
            name.to_string()
        }
    };
    let curves = |kind: PlotKind, items: &[&Item]| -> Vec<Curve> {
        items
            .iter()
            .filter(|(_, _, h)| !h.is_empty())
            .map(|(i, n, h)| Curve {
                label: label(i, n),
                points: match kind {
                    PlotKind::Ccdf => ccdf(h),
                    PlotKind::Cdf => cdf(h),
                },
            })
            .collect()
    };
    let all: Vec<&Item> = decoded.iter().collect();
    let groups: Vec<(String, Vec<&Item>)> = if all.len() <= MAX_CURVES_PER_FIGURE {
        vec![(String::new(), all)]
    } else {
        let mut names: Vec<&str> = Vec::new();
        for d in decoded {
            if !names.contains(&d.1.as_str()) {
                names.push(&d.1);
            }
        }
        names
            .into_iter()
            .map(|n| (n.to_string(), decoded.iter().filter(|d| d.1 == n).collect()))
            .collect()
    };
    let mut any = false;
    for (name, items) in groups {
        let suffix = if name.is_empty() {
            String::new()
        } else {
            format!(" — {name}")
        };
        for (kind, what) in [
            (PlotKind::Ccdf, "CCDF (tail, log scale)"),
            (PlotKind::Cdf, "CDF"),
        ] {
            let c = curves(kind, &items);
            if c.iter().any(|c| !c.points.is_empty()) {
                any = true;
                s.push(Block::Figure(Figure::Distribution {
                    title: format!("{what}{suffix}"),
                    kind,
                    curves: c,
                }));
            }
        }
    }
    if !any {
        s.push(Block::Paragraph("No histogram holds samples.".into()));
    } else {
        s.blocks.insert(
            0,
            Block::Paragraph(
                "CCDF: the fraction of samples above x, down to the smallest tail the sample count supports. Hover a curve for the value at that percentile; click a legend entry to hide or show a series.".into(),
            ),
        );
    }
    s
}

/// A table cell for a percentile estimate: unsupported ones never show a bare number
/// ([`Cell::estimate`]).
pub fn estimate_cell(e: &PercentileEstimate) -> Cell {
    Cell::estimate(e)
}

pub use latlab_core::stats::min_samples;

fn percentile_section(decoded: &Decoded, opts: &ReportOptions) -> Section {
    let mut s = Section::new("Percentiles");
    s.push(Block::Paragraph(format!(
        "Values from the full histograms (merged exactly across runs, never averaged). Under each value: its {:.0}% distribution-free confidence interval from order statistics. A percentile needs at least 10 samples beyond it; otherwise it is shown as unsupported.",
        opts.confidence * 100.0
    )));
    let mut header = vec!["series".to_string(), "samples".into(), "min".into()];
    header.extend(opts.percentiles.iter().map(|p| p.to_string()));
    header.extend(["max".to_string(), "mean".into()]);
    let mut t = Table {
        caption: String::new(),
        header,
        rows: Vec::new(),
    };
    let multi = decoded.iter().any(|d| d.0 != decoded[0].0);
    for (input, name, h) in decoded {
        let sum = summarize(h, &opts.percentiles, opts.confidence);
        let label = if multi {
            format!("{input}: {name}")
        } else {
            name.clone()
        };
        let mut row = vec![Cell::text(label), Cell::number(sum.count.to_string())];
        if sum.count == 0 {
            row.push(Cell::styled("no samples", CellStyle::Unsupported));
        } else {
            row.push(Cell::number(format_ns(sum.min_ns as f64)));
            row.extend(sum.percentiles.iter().map(estimate_cell));
            row.push(Cell::number(format_ns(sum.max_ns as f64)));
            row.push(Cell::number(format_ns(sum.mean_ns)));
        }
        t.rows.push(row);
    }
    s.push(Block::Table(t));
    s
}

fn provenance_section(inputs: &[Input]) -> Section {
    let mut s = Section::new("Provenance");
    for i in inputs {
        let r = &i.merged;
        let p = &r.provenance;
        let h = &p.host;
        let tsc = &p.timebase.tsc;
        s.push(Block::Heading(i.label.clone()));
        let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "—".into());
        let mut kv = vec![
            ("kind".to_string(), r.kind.clone()),
            ("latlab".into(), r.latlab_version.clone()),
            ("started (UTC)".into(), p.started_utc.clone()),
            ("host".into(), h.hostname.clone()),
            ("kernel".into(), format!("{} {}", h.kernel, h.kernel_version)),
            ("CPU".into(), format!("{} ({}, {} online)", h.cpu_model, h.arch, h.cpus_online)),
            (
                "SMT".into(),
                h.smt_active
                    .map(|b| if b { "active" } else { "off" }.to_string())
                    .unwrap_or_else(|| "unknown".into()),
            ),
            ("clocksource".into(), opt(&h.clocksource)),
            ("governors".into(), h.governors.join(", ")),
            ("isolcpus".into(), opt(&h.isolcpus)),
            ("nohz_full".into(), opt(&h.nohz_full)),
            ("virtualization".into(), opt(&h.virtualization)),
            ("kernel command line".into(), h.cmdline.clone()),
            ("timebase".into(), p.timebase.source.clone()),
            (
                "TSC".into(),
                format!(
                    "present {}, invariant {} (constant {}, nonstop {}), rate {} ({}), calibrated {} ± {} ppm",
                    tsc.present,
                    tsc.invariant,
                    tsc.constant_tsc,
                    tsc.nonstop_tsc,
                    tsc.rate_hz.map(|r| format!("{r} Hz")).unwrap_or_else(|| "—".into()),
                    opt(&tsc.rate_source),
                    tsc.calibrated_hz.map(|r| format!("{r} Hz")).unwrap_or_else(|| "—".into()),
                    tsc.calibration_error_ppm.map(|e| format!("{e:.2}")).unwrap_or_else(|| "—".into()),
                ),
            ),
            ("memory locked".into(), p.memory_locked.to_string()),
        ];
        if let Some(reason) = &p.timebase.fallback_reason {
            kv.push(("timebase fallback".into(), reason.clone()));
        }
        if let Some(idle) = &p.idle {
            kv.push(("idle states".into(), idle.summary()));
        }
        if let Some(iso) = &p.isolation {
            kv.push(("isolation".into(), iso.summary()));
            // the knobs one by one; moved tasks are counted in the summary (all are in the file)
            let knobs: Vec<&str> = iso
                .changes
                .iter()
                .filter(|c| matches!(c.kind.as_str(), "irq" | "workqueue" | "sysctl"))
                .map(|c| c.what.as_str())
                .collect();
            if !knobs.is_empty() {
                kv.push(("isolation: knobs".into(), knobs.join("; ")));
            }
            for r in &iso.refused {
                kv.push(("isolation: refused".into(), r.clone()));
            }
        }
        for t in &p.threads {
            kv.push((
                format!("thread '{}'", t.role),
                format!(
                    "pinned to {}, seen on {:?}, policy {} priority {}",
                    t.pinned_cpu
                        .map(|c| format!("CPU {c}"))
                        .unwrap_or_else(|| "no CPU".into()),
                    t.observed_cpus,
                    t.policy,
                    t.priority
                ),
            ));
        }
        for (k, v) in &r.counters {
            kv.push((format!("counter {k}"), v.to_string()));
        }
        s.push(Block::KeyValues(kv));
        for (path, run) in &i.runs {
            s.push(Block::Code {
                caption: format!("Command line ({})", path.display()),
                text: shell_words(&run.command_line),
            });
        }
        s.push(Block::Code {
            caption: "Configuration".into(),
            text: serde_json::to_string_pretty(&r.config).unwrap_or_default(),
        });
    }
    s
}

/// Joins arguments as a shell would need them quoted.
fn shell_words(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Writes the report to `path` atomically (nothing partial is ever left behind).
///
/// # Errors
/// [`ReportError::Write`].
pub fn write_report(report: &Report, path: &Path) -> Result<(), ReportError> {
    write_atomically(path, render(report).as_bytes()).map_err(|e| ReportError::Write {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })
}

/// What [`build_and_write`] wrote.
#[derive(Debug)]
pub struct Written {
    /// The report as built.
    pub report: Report,
    /// The standalone figure files.
    pub figures: Vec<PathBuf>,
}

/// Builds the report of `inputs` and writes it to `output`, with its figures as standalone
/// files in `figures_dir` when given. Figures are written first: if one cannot be drawn,
/// no report is left behind either. `latlab report` and every experiment write their
/// reports through this one function.
///
/// # Errors
/// As [`build`], [`write_figures`] and [`write_report`].
pub fn build_and_write(
    inputs: &[Input],
    providers: &[&dyn SectionProvider],
    opts: &ReportOptions,
    output: &Path,
    figures_dir: Option<&Path>,
) -> Result<Written, ReportError> {
    let report = build(inputs, providers, opts)?;
    let figures = match figures_dir {
        Some(dir) => write_figures(&report, dir)?,
        None => Vec::new(),
    };
    write_report(&report, output)?;
    Ok(Written { report, figures })
}

/// The figures directory that goes with a report written to `output`: `<stem>-figures`
/// beside it.
pub fn figures_dir_for(output: &Path) -> PathBuf {
    let stem = output
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    output.with_file_name(format!("{stem}-figures"))
}

/// Writes every figure of `report` into `dir` as standalone files for papers: distribution
/// figures as `NN-<title>.svg` and `.png` (with a legend), other figures as `.svg`.
/// Returns the files written.
///
/// # Errors
/// [`ReportError::Figure`] or [`ReportError::Write`].
pub fn write_figures(report: &Report, dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let mut written = Vec::new();
    let mut n = 0;
    for section in &report.sections {
        for b in &section.blocks {
            let Block::Figure(f) = b else { continue };
            n += 1;
            let base = format!("{n:02}-{}-{}", section.id, slug(f.title()));
            match f {
                Figure::Distribution {
                    title,
                    kind,
                    curves,
                } => {
                    let spec = PlotSpec {
                        kind: *kind,
                        title: title.clone(),
                        ..PlotSpec::default()
                    };
                    for ext in ["svg", "png"] {
                        let p = dir.join(format!("{base}.{ext}"));
                        render_image(curves, &spec, &p).map_err(|source| ReportError::Figure {
                            title: title.clone(),
                            source,
                        })?;
                        written.push(p);
                    }
                }
                other => {
                    let svg =
                        crate::spec::figure_svg(other).map_err(|source| ReportError::Figure {
                            title: other.title().to_string(),
                            source,
                        })?;
                    let p = dir.join(format!("{base}.svg"));
                    write_atomically(&p, svg.as_bytes()).map_err(|e| ReportError::Write {
                        path: p.clone(),
                        detail: e.to_string(),
                    })?;
                    written.push(p);
                }
            }
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::parse::parse_percentile;

    #[test]
    fn min_samples_matches_the_support_rule() {
        for (p, n) in [
            ("p50", 20),
            ("p99", 1_000),
            ("p99.9", 10_000),
            ("p99.9999", 10_000_000),
        ] {
            let p = parse_percentile(p).unwrap();
            assert_eq!(min_samples(p), n);
            assert!(latlab_core::stats::is_supported(p, n));
            assert!(!latlab_core::stats::is_supported(p, n - 1));
        }
    }

    #[test]
    fn shell_words_quotes_what_needs_it() {
        let a = ["latlab", "check", "r.json", "--budget", "p99 < 5us", "it's"].map(String::from);
        assert_eq!(
            shell_words(&a),
            r"latlab check r.json --budget 'p99 < 5us' 'it'\''s'"
        );
    }
}

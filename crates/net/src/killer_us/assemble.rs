//! The killer-us summary result from the ladder's runs: one histogram per method × NF
//! configuration, the table's rows, where the methods disagree, the CCDF figures (drawn
//! through the caller's [`FigureSink`] once the result is saved), and the files written
//! from the saved result.

use super::config::KillerUsConfig;
use super::data::{KillerUsData, LADDER, METHODS, RESULT_KIND};
use super::ladder::Ladder;
use super::outcome::{ExperimentError, Summary};
use super::pace::HostFit;
use super::tables::{disagreement, render_csv, render_table, summary_row};
use latlab_core::doc::{Curve, Figure, FigureSink, PlotKind};
use latlab_core::hist::LatencyHistogram;
use latlab_core::results::{ResultFile, StoredHistogram};
use latlab_core::stats::ccdf;
use std::path::{Path, PathBuf};

/// One method's histograms, one per NF configuration.
type MethodCurves<'a> = (&'a str, &'a str, Vec<(String, LatencyHistogram)>);

/// Writes the summary result (`killer-us.json`), `summary.md` and `summary.csv` under
/// `dir` from the ladder's runs (with its findings across runs), then draws the CCDFs through `sink`; returns what the CLI
/// prints.
pub(super) fn summary(
    cfg: &KillerUsConfig,
    dir: &Path,
    argv: Vec<String>,
    fit: &HostFit,
    mut ladder: Ladder,
    mut files: Vec<PathBuf>,
    sink: &dyn FigureSink,
) -> Result<Summary, ExperimentError> {
    let notes = ladder.finish(cfg, fit.milli_pps);
    let Ladder {
        runs,
        warnings,
        tails,
        tail_shares,
        not_measured,
        rt_throttle,
        behind,
        ..
    } = ladder;
    let mut out = ResultFile::new(
        RESULT_KIND,
        argv,
        serde_json::to_value(cfg).unwrap_or_default(),
        runs.first()
            .map(|(_, _, r)| r.provenance.clone())
            .unwrap_or_default(),
    );
    let mut data = KillerUsData {
        placement: if cfg.loopback { "loopback" } else { "testbed" }.into(),
        notes,
        tails,
        tail_shares,
        host_fit: Some(fit.clone()),
        not_measured,
        rt_throttle,
        behind,
        ..Default::default()
    };
    let per_method = method_histograms(&runs, &mut out);
    for (m, _, curves) in &per_method {
        for (conf, h) in curves {
            data.rows.push(summary_row(m, conf, h));
        }
    }
    disagreements(&per_method, &mut data);
    let figures = figures(dir, &per_method, &mut data, &mut files);
    data.files = files.iter().map(|p| p.display().to_string()).collect();
    out.warnings = warnings.clone();
    out.duration_ns = runs.iter().map(|(_, _, r)| r.duration_ns).sum();
    for (_, _, r) in &runs {
        out.add_counters(&r.counters);
    }
    out.data = serde_json::to_value(&data).unwrap_or_default();
    let summary_path = dir.join("killer-us.json");
    out.save(&summary_path)?;
    let saved = ResultFile::load(&summary_path)?;
    let table_text = render_table(&saved);
    let md = dir.join("summary.md");
    latlab_core::results::write_atomically(&md, table_text.as_bytes())?;
    let csv = dir.join("summary.csv");
    latlab_core::results::write_atomically(&csv, render_csv(&saved).as_bytes())?;
    files.push(summary_path);
    files.push(md);
    files.push(csv);
    for (path, figure) in &figures {
        sink.draw(figure, path)
            .map_err(|error| ExperimentError::Figure {
                path: path.clone(),
                error,
            })?;
    }
    Ok(Summary {
        table_text,
        warnings,
        files,
    })
}

/// Each method's histogram on each NF configuration that measured it, stored in `out` as
/// `METHOD/CONFIG`.
fn method_histograms<'a>(
    runs: &[(String, String, ResultFile)],
    out: &mut ResultFile,
) -> Vec<MethodCurves<'a>> {
    let mut per_method: Vec<MethodCurves<'_>> = Vec::new();
    for (m, desc, rx, series_name) in METHODS {
        let mut curves = Vec::new();
        for conf in LADDER {
            let Some((_, _, r)) = runs.iter().find(|(c, x, _)| c == conf && x == rx) else {
                continue;
            };
            let Some(Ok(h)) = r.histogram(series_name) else {
                continue;
            };
            if h.count() == 0 {
                continue;
            }
            out.histograms.push(
                StoredHistogram::new(format!("{m}/{conf}"), &h)
                    .with_label("method", m)
                    .with_label("config", conf),
            );
            curves.push((conf.to_string(), h));
        }
        if !curves.is_empty() {
            per_method.push((m, desc, curves));
        }
    }
    per_method
}

/// Where the methods start to disagree on each NF configuration: all of them, and the
/// socket generator's two receive modes alone (the same span).
fn disagreements(per_method: &[MethodCurves<'_>], data: &mut KillerUsData) {
    for conf in LADDER {
        let hs: Vec<&LatencyHistogram> = per_method
            .iter()
            .filter_map(|(_, _, c)| c.iter().find(|(k, _)| k == conf).map(|(_, h)| h))
            .collect();
        data.disagreement.push((
            conf.to_string(),
            disagreement(&hs, 1_000).map(|p| p.to_string()),
        ));
        let user: Vec<&LatencyHistogram> = per_method
            .iter()
            // the socket generator's two receive modes; the AF_XDP generator leaves its
            // own stack out, so it times a shorter span
            .filter(|(m, _, _)| *m == "user-blocking" || *m == "user-busy")
            .filter_map(|(_, _, c)| c.iter().find(|(k, _)| k == conf).map(|(_, h)| h))
            .collect();
        data.disagreement_same_span.push((
            conf.to_string(),
            disagreement(&user, 1_000).map(|p| p.to_string()),
        ));
    }
}

/// One CCDF figure per method, a line per NF configuration, with the file each belongs in.
fn figures(
    dir: &Path,
    per_method: &[MethodCurves<'_>],
    data: &mut KillerUsData,
    files: &mut Vec<PathBuf>,
) -> Vec<(PathBuf, Figure)> {
    let mut figures = Vec::new();
    for (m, desc, curves) in per_method {
        let cs: Vec<Curve> = curves
            .iter()
            .map(|(conf, h)| Curve {
                label: conf.clone(),
                points: ccdf(h),
            })
            .collect();
        let path = dir.join(format!("ccdf-{m}.svg"));
        figures.push((
            path.clone(),
            Figure::Distribution {
                title: format!("killer-us: {desc} — one line per NF configuration"),
                kind: PlotKind::Ccdf,
                curves: cs,
            },
        ));
        data.figures.push(path.display().to_string());
        files.push(path);
    }
    figures
}

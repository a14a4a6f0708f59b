//! Figures from result files: the bridge from [`latlab_core::results::ResultFile`] to
//! [`Curve`]s. Plots are only ever drawn from results loaded from disk, never from a
//! measurement's live state.

use crate::{render, render_panels, Curve, PlotError, PlotKind, PlotSpec};
use latlab_core::results::ResultFile;
use latlab_core::stats::{ccdf, cdf};
use std::path::{Path, PathBuf};

/// The curves of `results`: one per histogram (only those named in `series`, when it is not
/// empty). With several files, labels are `file-stem: series`; with one, the series name.
/// CCDFs stop at the smallest supported tail (see `latlab_core::stats::ccdf`).
pub fn curves(
    results: &[(PathBuf, ResultFile)],
    series: &[String],
    kind: PlotKind,
) -> Result<Vec<Curve>, PlotError> {
    let mut out = Vec::new();
    for (path, r) in results {
        for stored in &r.histograms {
            if !series.is_empty() && !series.contains(&stored.name) {
                continue;
            }
            let h = stored.decode().map_err(|e| {
                PlotError::Draw(format!("{}: {}: {e}", path.display(), stored.name))
            })?;
            let points = match kind {
                PlotKind::Ccdf => ccdf(&h),
                PlotKind::Cdf => cdf(&h),
            };
            let label = if results.len() > 1 {
                let stem = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                format!("{stem}: {}", stored.name)
            } else {
                stored.name.clone()
            };
            out.push(Curve { label, points });
        }
    }
    if out.is_empty() {
        return Err(PlotError::NoData);
    }
    Ok(out)
}

/// Draws `kind` for `results` into `path` (SVG or PNG by extension). `kind: None` draws the
/// CDF and the CCDF side by side.
pub fn plot_files(
    results: &[(PathBuf, ResultFile)],
    series: &[String],
    kind: impl Into<Option<PlotKind>>,
    title: &str,
    path: &Path,
) -> Result<(), PlotError> {
    match kind.into() {
        Some(kind) => {
            let spec = PlotSpec {
                kind,
                title: title.to_string(),
                ..PlotSpec::default()
            };
            render(&curves(results, series, kind)?, &spec, path)
        }
        None => {
            let panel =
                |kind: PlotKind, suffix: &str| -> Result<(PlotSpec, Vec<Curve>), PlotError> {
                    let t = if title.is_empty() {
                        suffix.to_string()
                    } else {
                        format!("{title} ({suffix})")
                    };
                    Ok((
                        PlotSpec {
                            kind,
                            title: t,
                            ..PlotSpec::default()
                        },
                        curves(results, series, kind)?,
                    ))
                };
            render_panels(
                &[panel(PlotKind::Cdf, "CDF")?, panel(PlotKind::Ccdf, "CCDF")?],
                path,
            )
        }
    }
}

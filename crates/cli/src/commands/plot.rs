//! `latlab plot`: CDF/CCDF figures from result files.

use crate::args::{PlotArgs, PlotKindArg};
use crate::exit::usage;
use crate::inputs::load_results;
use anyhow::Context as _;
use latlab_report::{figures, ImageFormat, PlotKind};

pub fn run(a: PlotArgs) -> anyhow::Result<()> {
    ImageFormat::from_path(&a.output).map_err(|e| usage(format!("--output: {e}")))?;
    let results = load_results(&a.results)?;
    for s in &a.series {
        if !results
            .iter()
            .any(|(_, r)| r.histograms.iter().any(|h| &h.name == s))
        {
            let names: Vec<&str> = results
                .iter()
                .flat_map(|(_, r)| r.histograms.iter().map(|h| h.name.as_str()))
                .collect();
            return Err(usage(format!(
                "--series: no histogram named '{s}'; the files hold: {}",
                names.join(", ")
            )));
        }
    }
    let kind = match a.kind {
        PlotKindArg::Ccdf => Some(PlotKind::Ccdf),
        PlotKindArg::Cdf => Some(PlotKind::Cdf),
        PlotKindArg::Both => None,
    };
    figures::plot_files(&results, &a.series, kind, &a.title, &a.output)
        .with_context(|| format!("drawing {}", a.output.display()))?;
    println!("plot: {}", a.output.display());
    Ok(())
}

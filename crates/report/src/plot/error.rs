//! The one error type of every figure drawn by this crate.

use std::path::PathBuf;

/// Errors from drawing or writing a figure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlotError {
    /// The output path's extension is neither `.svg` nor `.png`.
    #[error("cannot tell the image format of {}: expected a file name ending in .svg or .png", path.display())]
    UnknownFormat {
        /// The offending path.
        path: PathBuf,
    },
    /// No curves, or no curve has a plottable point.
    #[error("nothing to plot: no curve has a point with a finite latency > 0 and a plottable probability")]
    NoData,
    /// No usable TrueType font was found for text rendering.
    #[error(
        "no TrueType font found (tried {}); install Debian's fonts-dejavu-core or set LATLAB_FONT",
        join_paths(tried)
    )]
    NoFont {
        /// Every path that was tried, in order.
        tried: Vec<PathBuf>,
    },
    /// Writing the output file failed.
    #[error("cannot write {}: {source}", path.display())]
    Io {
        /// The file being written.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The drawing library or image encoder failed, or the requested image
    /// size is unusable (each side must be 160..=16384 pixels).
    #[error("drawing failed: {0}")]
    Draw(String),
}

fn join_paths(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Converts a drawing error (plotters', an encoder's) into ours.
pub(crate) fn draw_err<E: std::fmt::Display>(e: E) -> PlotError {
    PlotError::Draw(e.to_string())
}

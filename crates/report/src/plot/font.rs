//! Run-time TrueType font discovery and registration with plotters.
//!
//! plotters' `ab_glyph` text backend has no built-in fonts: before any text
//! can be measured or drawn, a font must be registered under the family name
//! `"sans-serif"`. This module finds one on disk, leaks its bytes (once per
//! process) and registers it.

use super::error::PlotError;
use plotters::style::{register_font, FontStyle};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Environment variable naming a TrueType/OpenType font file to use.
pub(crate) const FONT_ENV: &str = "LATLAB_FONT";

/// Well-known font locations, tried in order after [`FONT_ENV`].
pub(crate) const DEFAULT_FONT_PATHS: [&str; 3] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

/// Family name under which the font is registered (plotters' default
/// sans-serif family resolves to this name).
pub(crate) const FAMILY: &str = "sans-serif";

/// Path of the font registered so far, if any. A `Mutex` rather than a
/// `OnceLock` so that a failed lookup (no font installed yet) is retried on
/// the next call instead of being cached forever, while a successful one is
/// registered (and its bytes leaked) exactly once.
static REGISTERED: Mutex<Option<PathBuf>> = Mutex::new(None);

/// The candidate font paths in lookup order: `$LATLAB_FONT` (when set and
/// non-empty) followed by [`DEFAULT_FONT_PATHS`].
pub(crate) fn font_candidates() -> Vec<PathBuf> {
    let mut out = Vec::with_capacity(DEFAULT_FONT_PATHS.len() + 1);
    if let Some(p) = std::env::var_os(FONT_ENV) {
        if !p.is_empty() {
            out.push(PathBuf::from(p));
        }
    }
    out.extend(DEFAULT_FONT_PATHS.iter().map(PathBuf::from));
    out
}

/// Whether `bytes` start like a TrueType/OpenType font (or collection).
fn looks_like_font(bytes: &[u8]) -> bool {
    matches!(
        bytes.get(..4),
        Some([0x00, 0x01, 0x00, 0x00]) | Some(b"OTTO") | Some(b"true") | Some(b"ttcf")
    )
}

/// Reads the first candidate that exists and looks like a font file.
///
/// Returns the path and its bytes, or every path tried when none qualifies.
pub(crate) fn find_font(candidates: &[PathBuf]) -> Result<(PathBuf, Vec<u8>), Vec<PathBuf>> {
    for path in candidates {
        if let Some(bytes) = read_font(path) {
            return Ok((path.clone(), bytes));
        }
    }
    Err(candidates.to_vec())
}

fn read_font(path: &Path) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).ok()?;
    looks_like_font(&bytes).then_some(bytes)
}

/// Makes sure a font is registered for `"sans-serif"`, loading it on first
/// use. Cheap after the first successful call.
pub(crate) fn ensure_font() -> Result<(), PlotError> {
    let mut guard = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
    if guard.is_some() {
        return Ok(());
    }
    let mut candidates = font_candidates();
    loop {
        match find_font(&candidates) {
            Ok((path, bytes)) => {
                // plotters keeps `&'static` font data; leaking is bounded
                // because success happens at most once per process.
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if register_font(FAMILY, FontStyle::Normal, bytes).is_ok() {
                    *guard = Some(path);
                    return Ok(());
                }
                // Parsed as garbage despite the magic number: try the rest.
                candidates.retain(|c| c != &path);
                if candidates.is_empty() {
                    return Err(PlotError::NoFont {
                        tried: font_candidates(),
                    });
                }
            }
            Err(_) => {
                return Err(PlotError::NoFont {
                    tried: font_candidates(),
                })
            }
        }
    }
}

/// For tests that draw text: `true` (after printing the test's visible SKIP line) when no
/// font is installed, so the test can return early instead of failing on a machine
/// without fonts.
#[cfg(test)]
pub(crate) fn skip_without_font() -> bool {
    let missing = ensure_font().is_err();
    if missing {
        latlab_testutil::print_skip(
            std::thread::current().name().unwrap_or("report test"),
            "no TrueType font installed (fonts-dejavu-core)",
        );
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_candidates_report_all_tried_paths() {
        let tried = vec![
            PathBuf::from("/nonexistent/latlab/a.ttf"),
            PathBuf::from("/nonexistent/latlab/b.ttf"),
        ];
        assert_eq!(find_font(&tried).unwrap_err(), tried);
    }

    #[test]
    fn non_font_file_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk.ttf");
        std::fs::write(&junk, b"definitely not a font").unwrap();
        assert!(find_font(std::slice::from_ref(&junk)).is_err());
    }

    #[test]
    fn candidates_end_with_defaults() {
        let c = font_candidates();
        assert!(c.ends_with(&DEFAULT_FONT_PATHS.map(PathBuf::from)));
    }

    #[test]
    fn no_font_message_is_actionable() {
        let e = PlotError::NoFont {
            tried: vec![PathBuf::from("/x/a.ttf"), PathBuf::from("/y/b.ttf")],
        };
        let msg = e.to_string();
        assert!(msg.starts_with("no TrueType font found (tried /x/a.ttf, /y/b.ttf)"));
        assert!(msg.contains("fonts-dejavu-core"));
        assert!(msg.contains("LATLAB_FONT"));
    }
}

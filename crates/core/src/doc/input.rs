//! Inputs of reports and comparisons: one configuration's runs, loaded from result files
//! and merged exactly (see [`crate::results::merge`]).

use crate::results::merge::{merge_runs, MergeError};
use crate::results::ResultFile;
use std::path::{Path, PathBuf};

/// One configuration: the runs it was measured in, and their exact merge.
#[derive(Clone, Debug)]
pub struct Input {
    /// Name shown in tables, legends and warnings.
    pub label: String,
    /// The runs as loaded, in order.
    pub runs: Vec<(PathBuf, ResultFile)>,
    /// Histograms merged by name, counters summed; everything else from the first run.
    pub merged: ResultFile,
}

impl Input {
    /// Merges `runs` (all of one kind) into one input labelled `label`.
    ///
    /// # Errors
    /// See [`merge_runs`].
    pub fn new(
        label: impl Into<String>,
        runs: Vec<(PathBuf, ResultFile)>,
    ) -> Result<Input, MergeError> {
        let merged = merge_runs(&runs)?;
        Ok(Input {
            label: label.into(),
            runs,
            merged,
        })
    }

    /// One input from one run, labelled with the file's stem.
    pub fn single(path: PathBuf, result: ResultFile) -> Input {
        Input {
            label: stem(&path),
            merged: result.clone(),
            runs: vec![(path, result)],
        }
    }

    /// The result kind (all runs share it).
    pub fn kind(&self) -> &str {
        &self.merged.kind
    }

    /// The files this input was read from.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.runs.iter().map(|(p, _)| p.as_path())
    }

    /// Each run with a label of its own: the input's label, followed by the file's stem
    /// when the input merges several runs.
    pub fn labelled_runs(&self) -> impl Iterator<Item = (String, &Path, &ResultFile)> {
        let several = self.runs.len() > 1;
        self.runs.iter().map(move |(path, run)| {
            let label = if several {
                format!("{} / {}", self.label, stem(path))
            } else {
                self.label.clone()
            };
            (label, path.as_path(), run)
        })
    }

    /// A label for a group of runs: the first file's stem, with the number of runs merged.
    pub fn group_label(paths: &[PathBuf]) -> String {
        match paths {
            [] => String::new(),
            [one] => stem(one),
            [first, ..] => format!("{} (+{} runs merged)", stem(first), paths.len() - 1),
        }
    }
}

/// The file name without directory and extension.
pub fn stem(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

//! Result files named on the command line, loaded: one by one (`show`, `plot`, `check`),
//! or grouped into the report's inputs (`report`, `compare`, experiment reports).

use crate::exit::usage;
use latlab_core::results::ResultFile;
use latlab_report::input::Input;
use std::path::PathBuf;

/// Loads result files, naming the file in any error.
pub fn load_results(paths: &[PathBuf]) -> anyhow::Result<Runs> {
    paths
        .iter()
        .map(|p| Ok((p.clone(), ResultFile::load(p)?)))
        .collect()
}

/// Runs as loaded: each file with its result.
pub type Runs = Vec<(PathBuf, ResultFile)>;

/// Loads inputs: each argument is one file or a comma-separated group of runs merged
/// exactly; with `merge_all`, all inputs of one kind are merged into one.
pub fn load_inputs(args: &[String], merge_all: bool) -> anyhow::Result<Vec<Input>> {
    let mut groups: Vec<Vec<PathBuf>> = Vec::new();
    for a in args {
        let paths: Vec<PathBuf> = a
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|s| PathBuf::from(s.trim()))
            .collect();
        if paths.is_empty() {
            return Err(usage(format!("'{a}' names no result file")));
        }
        groups.push(paths);
    }
    let mut loaded: Vec<(Vec<PathBuf>, Runs)> = Vec::new();
    for g in groups {
        let runs = load_results(&g)?;
        loaded.push((g, runs));
    }
    if merge_all {
        let mut by_kind: Vec<(String, Vec<PathBuf>, Vec<_>)> = Vec::new();
        for (_, runs) in loaded {
            for (path, result) in runs {
                match by_kind.iter_mut().find(|(k, _, _)| *k == result.kind) {
                    Some((_, ps, rs)) => {
                        ps.push(path.clone());
                        rs.push((path, result));
                    }
                    None => by_kind.push((
                        result.kind.clone(),
                        vec![path.clone()],
                        vec![(path, result)],
                    )),
                }
            }
        }
        loaded = by_kind.into_iter().map(|(_, p, r)| (p, r)).collect();
    }
    loaded
        .into_iter()
        .map(|(paths, runs)| {
            Input::new(Input::group_label(&paths), runs).map_err(|e| usage(e.to_string()))
        })
        .collect()
}

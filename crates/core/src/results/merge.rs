//! Exact merging of repeated runs of one configuration into one result: histograms of the
//! same name are added bucket by bucket (never averaging percentiles), counters are summed,
//! durations added and warnings and self-check verdicts kept, each prefixed with the file it
//! came from.

use super::{ResultError, ResultFile, StoredHistogram};
use crate::hist::LatencyHistogram;
use std::path::{Path, PathBuf};

/// Why runs could not be merged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// Nothing to merge.
    #[error("no result files to merge")]
    Nothing,
    /// The runs are results of different kinds.
    #[error("cannot merge {b} ({b_kind}) with {a} ({a_kind}): results of different kinds")]
    KindMismatch {
        /// The first file.
        a: PathBuf,
        /// Its kind.
        a_kind: String,
        /// The file of another kind.
        b: PathBuf,
        /// Its kind.
        b_kind: String,
    },
    /// A histogram could not be decoded or merged (e.g. different precisions).
    #[error("merging histogram '{name}' of {path}: {detail}")]
    Histogram {
        /// The file.
        path: PathBuf,
        /// The histogram's name.
        name: String,
        /// What went wrong.
        detail: String,
    },
}

impl From<ResultError> for MergeError {
    fn from(e: ResultError) -> Self {
        match e {
            ResultError::Histogram { path, name, source } => MergeError::Histogram {
                path,
                name,
                detail: source.to_string(),
            },
            other => MergeError::Histogram {
                path: PathBuf::new(),
                name: String::new(),
                detail: other.to_string(),
            },
        }
    }
}

/// Merges `runs` (all of one kind) into one result.
///
/// The merged result takes command line, configuration, provenance and `data` from the first
/// run; histograms are merged by name exactly (a name present in only some runs is kept with
/// what those runs have), counters summed, `duration_ns` added, warnings and self-check
/// verdicts kept with the file name in front. When the runs' configurations differ, a warning says so. With one run,
/// the result is that run unchanged.
///
/// # Errors
/// [`MergeError::KindMismatch`] for runs of different kinds; [`MergeError::Histogram`] for a
/// histogram that cannot be decoded or merged (different precision).
pub fn merge_runs(runs: &[(PathBuf, ResultFile)]) -> Result<ResultFile, MergeError> {
    let Some((first_path, first)) = runs.first() else {
        return Err(MergeError::Nothing);
    };
    if runs.len() == 1 {
        return Ok(first.clone());
    }
    let mut merged = first.clone();
    merged.histograms.clear();
    merged.counters.clear();
    merged.warnings.clear();
    merged.self_checks.clear();
    merged.duration_ns = 0;
    merged.interval_log = None;
    let mut hists: Vec<(String, LatencyHistogram, &StoredHistogram)> = Vec::new();
    for (path, r) in runs {
        if r.kind != first.kind {
            return Err(MergeError::KindMismatch {
                a: first_path.clone(),
                a_kind: first.kind.clone(),
                b: path.clone(),
                b_kind: r.kind.clone(),
            });
        }
        if r.config != first.config {
            merged.warnings.push(format!(
                "{}: configuration differs from {} (merged anyway)",
                name_of(path),
                name_of(first_path)
            ));
        }
        for stored in &r.histograms {
            let h = stored.decode().map_err(|e| MergeError::Histogram {
                path: path.clone(),
                name: stored.name.clone(),
                detail: e.to_string(),
            })?;
            match hists.iter_mut().find(|(n, _, _)| *n == stored.name) {
                Some((_, acc, _)) => acc.merge(&h).map_err(|e| MergeError::Histogram {
                    path: path.clone(),
                    name: stored.name.clone(),
                    detail: e.to_string(),
                })?,
                None => hists.push((stored.name.clone(), h, stored)),
            }
        }
        merged.add_counters(&r.counters);
        merged.duration_ns = merged.duration_ns.saturating_add(r.duration_ns);
        merged
            .warnings
            .extend(r.warnings.iter().map(|w| format!("{}: {w}", name_of(path))));
        // a verdict is about one run: each is kept, its detail naming the run
        merged.self_checks.extend(r.self_checks.iter().map(|v| {
            let mut v = v.clone();
            v.detail = format!("{}: {}", name_of(path), v.detail);
            v
        }));
    }
    merged.histograms = hists
        .into_iter()
        .map(|(name, h, first_stored)| {
            let mut s = StoredHistogram::new(name, &h);
            s.unit.clone_from(&first_stored.unit);
            s.labels.clone_from(&first_stored.labels);
            s
        })
        .collect();
    Ok(merged)
}

fn name_of(p: &Path) -> String {
    p.file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hist::HistConfig;
    use crate::results::Provenance;
    use crate::units::Nanos;

    fn run(kind: &str, values: &[u64], lost: u64) -> ResultFile {
        let mut r = ResultFile::new(
            kind,
            vec![],
            serde_json::json!({"a": 1}),
            Provenance::default(),
        );
        let mut h = LatencyHistogram::new(HistConfig::default()).unwrap();
        for v in values {
            h.record(Nanos(*v));
        }
        r.histograms.push(StoredHistogram::new("lat", &h));
        r.counters.insert("lost".into(), lost);
        r.duration_ns = 10;
        r
    }

    #[test]
    fn merge_adds_histograms_and_counters_exactly() {
        let runs = vec![
            (PathBuf::from("a.json"), run("k", &[10, 20, 30], 1)),
            (PathBuf::from("b.json"), run("k", &[40, 50], 2)),
        ];
        let m = merge_runs(&runs).unwrap();
        let h = m.histogram("lat").unwrap().unwrap();
        assert_eq!(h.count(), 5);
        assert_eq!(h.min(), 10);
        assert_eq!(h.value_at_rank(3), 30);
        assert_eq!(m.counters["lost"], 3);
        assert_eq!(m.duration_ns, 20);
        assert!(m.warnings.is_empty());
    }

    #[test]
    fn merge_keeps_every_runs_self_checks_naming_the_run() {
        let mut a = run("k", &[10], 0);
        a.self_checks
            .push(crate::selfcheck::throughput(9_000.0, 10_000.0, "pps"));
        let mut b = run("k", &[10], 0);
        b.self_checks
            .push(crate::selfcheck::throughput(10_000.0, 10_000.0, "pps"));
        let m = merge_runs(&[(PathBuf::from("a.json"), a), (PathBuf::from("b.json"), b)]).unwrap();
        assert_eq!(m.self_checks.len(), 2);
        assert!(m.self_checks[0].detail.starts_with("a.json: achieved 9000"));
        assert!(!m.self_checks[0].passed());
        assert!(m.self_checks[1].detail.starts_with("b.json: "));
    }

    #[test]
    fn merge_refuses_different_kinds_and_notes_different_configs() {
        let runs = vec![
            (PathBuf::from("a.json"), run("k", &[10], 0)),
            (PathBuf::from("b.json"), run("other", &[10], 0)),
        ];
        let e = merge_runs(&runs).unwrap_err().to_string();
        assert!(
            e.contains("b.json (other)") && e.contains("a.json (k)"),
            "{e}"
        );
        let mut b = run("k", &[10], 0);
        b.config = serde_json::json!({"a": 2});
        let m = merge_runs(&[
            (PathBuf::from("a.json"), run("k", &[1], 0)),
            (PathBuf::from("b.json"), b),
        ])
        .unwrap();
        assert!(
            m.warnings[0].contains("configuration differs"),
            "{:?}",
            m.warnings
        );
        assert!(matches!(merge_runs(&[]), Err(MergeError::Nothing)));
    }
}

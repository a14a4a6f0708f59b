//! The versioned result file every latlab measurement writes first, before any table,
//! plot or report is produced from it.
//!
//! A result is one JSON document (schema in `docs/results.md`): schema name and version,
//! latlab version, command line, resolved configuration, host provenance, counters of
//! anything dropped or lost, warnings, and every histogram in full (HdrHistogram V2
//! compressed, base64). Time series go beside it in an HdrHistogram interval log
//! ([`hlog`]). Percentile tables export to CSV ([`csv`]).
//!
//! Files are written atomically (temporary file, then rename): a reader never sees half a
//! result.

pub mod attribution;
pub mod csv;
pub mod hlog;
pub mod merge;
pub mod provenance;

use crate::hist::{HistConfig, HistError, LatencyHistogram};
pub use attribution::{Attribution, Band, CauseSpan, CauseTime, CpuSteal, WorstWindow};
pub use provenance::{
    CpuIdle, CpuIdleEntries, HostInfo, IdleRecord, IdleState, IsolationChange, IsolationRecord,
    Provenance, ThreadPlacement, Timebase, TscFacts,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The value of the `schema` field that identifies a latlab result.
pub const SCHEMA_NAME: &str = "latlab-result";
/// The schema version this latlab writes and the newest it reads. Version 2 added the
/// optional `explain` field, version 3 the optional `self_checks`, version 4 the optional
/// `provenance.idle`; older files read unchanged.
pub const SCHEMA_VERSION: u32 = 4;
/// The histogram encoding used in result files.
pub const HIST_ENCODING: &str = "hdr-v2-deflate-base64";

/// One histogram as stored in a result file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredHistogram {
    /// Series name, unique within the file (e.g. `rdtsc`).
    pub name: String,
    /// Unit of the recorded values; always `ns` in schema 1.
    pub unit: String,
    /// Range and precision.
    pub config: HistConfig,
    /// Number of samples (redundant with the payload; checked on load).
    pub count: u64,
    /// Samples above the range, recorded as its maximum.
    pub saturated: u64,
    /// Encoding of `data`: [`HIST_ENCODING`].
    pub encoding: String,
    /// The histogram.
    pub data: String,
    /// Free-form labels (e.g. `source`, `cpu`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

impl StoredHistogram {
    /// Stores a histogram under `name`.
    pub fn new(name: impl Into<String>, h: &LatencyHistogram) -> StoredHistogram {
        StoredHistogram {
            name: name.into(),
            unit: "ns".to_string(),
            config: h.config(),
            count: h.count(),
            saturated: h.saturated(),
            encoding: HIST_ENCODING.to_string(),
            data: h.to_base64(),
            labels: BTreeMap::new(),
        }
    }

    /// Adds a label.
    pub fn with_label(mut self, k: impl Into<String>, v: impl Into<String>) -> Self {
        self.labels.insert(k.into(), v.into());
        self
    }

    /// Decodes the histogram, checking encoding, unit and count.
    pub fn decode(&self) -> Result<LatencyHistogram, HistError> {
        if self.encoding != HIST_ENCODING {
            return Err(HistError::Decode(format!(
                "unknown encoding '{}'",
                self.encoding
            )));
        }
        if self.unit != "ns" {
            return Err(HistError::Decode(format!("unknown unit '{}'", self.unit)));
        }
        let h = LatencyHistogram::from_base64(&self.data, self.config, self.saturated)?;
        if h.count() != self.count {
            return Err(HistError::Decode(format!(
                "payload holds {} samples, header says {}",
                h.count(),
                self.count
            )));
        }
        Ok(h)
    }
}

/// A complete result file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultFile {
    /// Always [`SCHEMA_NAME`].
    pub schema: String,
    /// The schema version it was written with.
    pub schema_version: u32,
    /// The latlab version that wrote it.
    pub latlab_version: String,
    /// What was measured, dotted: `host.clocks`, `net.probe`, …
    pub kind: String,
    /// The command line, one argument per element.
    pub command_line: Vec<String>,
    /// The fully resolved configuration (defaults filled in).
    pub config: serde_json::Value,
    /// Host and run provenance.
    pub provenance: Provenance,
    /// Wall time the measurement took, ns.
    pub duration_ns: u64,
    /// Every histogram of the run.
    pub histograms: Vec<StoredHistogram>,
    /// Counters of events the reader must know about (drops, losses, overruns…).
    #[serde(default)]
    pub counters: BTreeMap<String, u64>,
    /// Warnings that matter for trust in the numbers.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Path of the interval log written beside this file, relative to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_log: Option<String>,
    /// Kind-specific data (per-series facts that are not distributions).
    #[serde(default)]
    pub data: serde_json::Value,
    /// Where the run's excess time went, by cause (schema 2; absent when not recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<Attribution>,
    /// The verdicts of the run's self-checks (schema 3; absent when the run made none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub self_checks: Vec<crate::selfcheck::Verdict>,
}

/// Errors reading or writing result files; each names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResultError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// An output file could not be written (a run-time failure, not bad input).
    #[error("writing {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is empty.
    #[error("{path}: empty file, not a latlab result")]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// The file is not JSON, or truncated.
    #[error("{path}: not a latlab result (invalid or truncated JSON: {detail})")]
    NotJson {
        /// The file.
        path: PathBuf,
        /// Parser message with line and column.
        detail: String,
    },
    /// JSON, but not a latlab result.
    #[error("{path}: not a latlab result ({detail})")]
    Foreign {
        /// The file.
        path: PathBuf,
        /// What is missing or wrong.
        detail: String,
    },
    /// Written by a newer latlab.
    #[error("{path}: written with result schema version {found}; this latlab reads versions up to {supported} — upgrade latlab")]
    NewerSchema {
        /// The file.
        path: PathBuf,
        /// Version in the file.
        found: u32,
        /// Newest version this build reads.
        supported: u32,
    },
    /// Two histograms have the same name (names identify series and must be unique).
    #[error(
        "{path}: two histograms are named '{name}'; histogram names in a result must be unique"
    )]
    DuplicateHistogram {
        /// The file.
        path: PathBuf,
        /// The repeated name.
        name: String,
    },
    /// A histogram in the file is corrupt.
    #[error("{path}: histogram '{name}': {source}")]
    Histogram {
        /// The file.
        path: PathBuf,
        /// The histogram's name.
        name: String,
        /// What is wrong.
        source: HistError,
    },
}

impl ResultFile {
    /// Adds `other`'s counters to this result's, by name (missing ones start at 0). The
    /// one way runs' counters are summed (merges, experiments over many runs).
    pub fn add_counters(&mut self, other: &std::collections::BTreeMap<String, u64>) {
        for (k, v) in other {
            *self.counters.entry(k.clone()).or_insert(0) += v;
        }
    }

    /// A new result of `kind` with the current schema and latlab version.
    pub fn new(
        kind: impl Into<String>,
        command_line: Vec<String>,
        config: serde_json::Value,
        provenance: Provenance,
    ) -> ResultFile {
        ResultFile {
            schema: SCHEMA_NAME.to_string(),
            schema_version: SCHEMA_VERSION,
            latlab_version: env!("CARGO_PKG_VERSION").to_string(),
            kind: kind.into(),
            command_line,
            config,
            provenance,
            duration_ns: 0,
            histograms: Vec::new(),
            counters: BTreeMap::new(),
            warnings: Vec::new(),
            interval_log: None,
            data: serde_json::Value::Null,
            explain: None,
            self_checks: Vec::new(),
        }
    }

    /// Looks a histogram up by name and decodes it.
    pub fn histogram(&self, name: &str) -> Option<Result<LatencyHistogram, HistError>> {
        self.histograms
            .iter()
            .find(|h| h.name == name)
            .map(StoredHistogram::decode)
    }

    /// Decodes every histogram, in file order, with its name.
    pub fn decode_all(&self, path: &Path) -> Result<Vec<(String, LatencyHistogram)>, ResultError> {
        self.histograms
            .iter()
            .map(|s| {
                s.decode()
                    .map(|h| (s.name.clone(), h))
                    .map_err(|source| ResultError::Histogram {
                        path: path.to_path_buf(),
                        name: s.name.clone(),
                        source,
                    })
            })
            .collect()
    }

    /// Serialises to pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a result always serialises")
    }

    /// Parses and validates a result from text; `path` is only used in errors.
    pub fn from_json(text: &str, path: &Path) -> Result<ResultFile, ResultError> {
        let p = || path.to_path_buf();
        if text.trim().is_empty() {
            return Err(ResultError::Empty { path: p() });
        }
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| ResultError::NotJson {
                path: p(),
                detail: e.to_string(),
            })?;
        match v.get("schema").and_then(|s| s.as_str()) {
            Some(SCHEMA_NAME) => {}
            Some(other) => {
                return Err(ResultError::Foreign {
                    path: p(),
                    detail: format!("schema is '{other}'"),
                })
            }
            None => {
                return Err(ResultError::Foreign {
                    path: p(),
                    detail: "no 'schema' field".into(),
                })
            }
        }
        let version = match v.get("schema_version") {
            None => Err("no 'schema_version' field".to_string()),
            Some(s) => s
                .as_u64()
                .ok_or_else(|| format!("'schema_version' is {s}, not a whole number")),
        }
        .map_err(|detail| ResultError::Foreign { path: p(), detail })?;
        if version > u64::from(SCHEMA_VERSION) {
            return Err(ResultError::NewerSchema {
                path: p(),
                found: u32::try_from(version).unwrap_or(u32::MAX),
                supported: SCHEMA_VERSION,
            });
        }
        let r: ResultFile = serde_json::from_value(v).map_err(|e| ResultError::Foreign {
            path: p(),
            detail: e.to_string(),
        })?;
        let mut seen = std::collections::BTreeSet::new();
        if let Some(dup) = r.histograms.iter().find(|h| !seen.insert(&h.name)) {
            return Err(ResultError::DuplicateHistogram {
                path: p(),
                name: dup.name.clone(),
            });
        }
        r.decode_all(path)?;
        Ok(r)
    }

    /// Reads and validates a result file (every histogram is decoded and checked).
    pub fn load(path: &Path) -> Result<ResultFile, ResultError> {
        let bytes = std::fs::read(path).map_err(|source| ResultError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let text = String::from_utf8(bytes).map_err(|_| ResultError::NotJson {
            path: path.to_path_buf(),
            detail: "not UTF-8 text".into(),
        })?;
        Self::from_json(&text, path)
    }

    /// Writes the result atomically: to a temporary file beside `path`, then renamed.
    pub fn save(&self, path: &Path) -> Result<(), ResultError> {
        write_atomically(path, self.to_json().as_bytes())
    }
}

/// Writes `bytes` to `path` via a temporary file in the same directory and a rename, so
/// that `path` holds either the old content or the complete new one. Creates the parent
/// directory if needed.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), ResultError> {
    let io = |source| ResultError::Write {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(e)
    })?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Nanos;

    fn sample() -> ResultFile {
        let mut h = LatencyHistogram::default();
        for v in [20u64, 21, 22, 40, 5_000] {
            h.record(Nanos(v));
        }
        let mut r = ResultFile::new(
            "host.clocks",
            vec!["latlab".into(), "host".into(), "clocks".into()],
            serde_json::json!({"duration_ns": 1000}),
            Provenance::default(),
        );
        r.histograms
            .push(StoredHistogram::new("rdtsc", &h).with_label("source", "rdtsc"));
        r.counters.insert("lost".into(), 0);
        r
    }

    #[test]
    fn round_trip_through_a_file() {
        let dir = std::env::temp_dir().join(format!("latlab-core-test-{}", std::process::id()));
        let path = dir.join("r.json");
        let r = sample();
        r.save(&path).unwrap();
        let back = ResultFile::load(&path).unwrap();
        assert_eq!(back, r);
        assert_eq!(
            back.histogram("rdtsc").unwrap().unwrap(),
            r.histogram("rdtsc").unwrap().unwrap()
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn malformed_inputs_are_named() {
        let p = Path::new("x.json");
        let e = |t: &str| ResultFile::from_json(t, p).unwrap_err().to_string();
        assert!(e("").contains("empty file"));
        let full = sample().to_json();
        assert!(e(&full[..full.len() / 2]).contains("truncated"));
        assert!(e("{\"a\":1}").contains("no 'schema' field"));
        assert!(e("{\"schema\":\"other\"}").contains("schema is 'other'"));
        let newer = full.replace(
            &format!("\"schema_version\": {SCHEMA_VERSION}"),
            "\"schema_version\": 99",
        );
        assert!(e(&newer).contains("schema version 99"), "{}", e(&newer));
        let corrupt = full.replace("HISTF", "HISTX");
        assert!(e(&corrupt).contains("histogram 'rdtsc'"));
        for msg in [e(""), e("{"), e(&newer)] {
            assert!(msg.starts_with("x.json: "));
            assert!(!msg.contains('\n'));
        }
    }

    #[test]
    fn version_1_files_still_load() {
        let v1 = sample().to_json().replace(
            &format!("\"schema_version\": {SCHEMA_VERSION}"),
            "\"schema_version\": 1",
        );
        assert!(v1.contains("\"schema_version\": 1"));
        let r = ResultFile::from_json(&v1, Path::new("v1.json")).unwrap();
        assert_eq!(r.schema_version, 1);
        assert_eq!(r.explain, None);
        let mut with = sample();
        with.explain = Some(Attribution {
            complete: true,
            excess_ns: 10,
            ..Attribution::default()
        });
        let back = ResultFile::from_json(&with.to_json(), Path::new("v2.json")).unwrap();
        assert_eq!(back.explain, with.explain);
        assert!(!sample().to_json().contains("\"explain\""));
    }

    #[test]
    fn version_2_files_load_without_self_checks_and_version_3_keeps_them() {
        let v2 = sample().to_json().replace(
            &format!("\"schema_version\": {SCHEMA_VERSION}"),
            "\"schema_version\": 2",
        );
        let r = ResultFile::from_json(&v2, Path::new("v2.json")).unwrap();
        assert!(r.self_checks.is_empty());
        assert!(!sample().to_json().contains("\"self_checks\""));
        let mut with = sample();
        with.self_checks
            .push(crate::selfcheck::throughput(9_990.0, 10_000.0, "pps"));
        let back = ResultFile::from_json(&with.to_json(), Path::new("v3.json")).unwrap();
        assert_eq!(back.self_checks, with.self_checks);
    }

    #[test]
    fn count_mismatch_is_detected() {
        let mut r = sample();
        r.histograms[0].count += 1;
        let err = ResultFile::from_json(&r.to_json(), Path::new("y.json")).unwrap_err();
        assert!(err.to_string().contains("header says 6"), "{err}");
    }
}

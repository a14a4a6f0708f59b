//! The one way a latlab process hands work to another latlab process.
//!
//! An orchestrator (the killer-us experiment starting an NF in a namespace, the DFS
//! experiment starting ranks under `mpirun`, Hourglass 5.4 starting testbed traffic) never
//! re-spells command-line flags for its child. It writes a [`ChildJob`]: a versioned JSON
//! envelope naming the job (`"net.probe"`, `"dfs.run"`, …) and carrying the job's resolved,
//! typed configuration. The child is started as `latlab child JOBFILE`; the CLI reads the
//! envelope, checks schema and version, deserialises the configuration into the library's
//! own config type and makes the same library call the user-facing command makes.
//!
//! Renaming a flag therefore cannot break an orchestrator at run time: the configuration
//! types are shared at compile time, and a mismatch in the envelope is a typed error.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The envelope's schema name.
pub const CHILD_SCHEMA: &str = "latlab.child";
/// The envelope's version; bumped when its fields change meaning.
pub const CHILD_VERSION: u32 = 1;

/// Errors reading or writing a child job.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChildError {
    /// The file could not be read or written.
    #[error("job file {}: {detail}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        detail: String,
    },
    /// The file is not a job envelope of a version this latlab reads.
    #[error("job file {}: {detail} (expected a {CHILD_SCHEMA} envelope, version {CHILD_VERSION})", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// The configuration does not fit the job's config type.
    #[error("job '{job}': configuration: {detail}")]
    Config {
        /// The job name.
        job: String,
        /// What is wrong.
        detail: String,
    },
}

/// A job for a child latlab process: which library call to make, with which configuration,
/// and where to write its result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChildJob {
    /// Always [`CHILD_SCHEMA`].
    pub schema: String,
    /// [`CHILD_VERSION`] of the writer.
    pub version: u32,
    /// The job's name, e.g. `"net.probe"`.
    pub job: String,
    /// The job's resolved configuration, as its library type serialises it.
    pub config: serde_json::Value,
    /// Where the child writes its result file, if it writes one.
    pub output: Option<PathBuf>,
    /// Whether the child keeps quiet on standard output.
    pub quiet: bool,
    /// The PM QoS CPU latency target (`--dma-latency`, µs) the parent holds: the child
    /// holds it too for its run, so that its own result records it. Absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dma_latency_us: Option<u32>,
}

impl ChildJob {
    /// A job named `job` with configuration `config`.
    ///
    /// # Errors
    /// [`ChildError::Config`] when `config` does not serialise.
    pub fn new(
        job: &str,
        config: &impl Serialize,
        output: Option<PathBuf>,
    ) -> Result<ChildJob, ChildError> {
        let config = serde_json::to_value(config).map_err(|e| ChildError::Config {
            job: job.to_string(),
            detail: e.to_string(),
        })?;
        Ok(ChildJob {
            schema: CHILD_SCHEMA.to_string(),
            version: CHILD_VERSION,
            job: job.to_string(),
            config,
            output,
            quiet: true,
            dma_latency_us: None,
        })
    }

    /// The configuration as the library type `T`.
    ///
    /// # Errors
    /// [`ChildError::Config`] when it does not deserialise into `T`.
    pub fn config<T: DeserializeOwned>(&self) -> Result<T, ChildError> {
        serde_json::from_value(self.config.clone()).map_err(|e| ChildError::Config {
            job: self.job.clone(),
            detail: e.to_string(),
        })
    }

    /// Writes the job to `path` (atomically).
    ///
    /// # Errors
    /// [`ChildError::Io`] when the file cannot be written.
    pub fn write(&self, path: &Path) -> Result<(), ChildError> {
        let text = serde_json::to_string_pretty(self).map_err(|e| ChildError::Io {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?;
        crate::results::write_atomically(path, text.as_bytes()).map_err(|e| ChildError::Io {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })
    }

    /// Reads and checks a job written by [`ChildJob::write`].
    ///
    /// # Errors
    /// [`ChildError::Io`] when unreadable, [`ChildError::Format`] when it is not an envelope
    /// of this schema and version.
    pub fn read(path: &Path) -> Result<ChildJob, ChildError> {
        let text = std::fs::read_to_string(path).map_err(|e| ChildError::Io {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?;
        let job: ChildJob = serde_json::from_str(&text).map_err(|e| ChildError::Format {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?;
        if job.schema != CHILD_SCHEMA || job.version != CHILD_VERSION {
            return Err(ChildError::Format {
                path: path.to_path_buf(),
                detail: format!("found {} version {}", job.schema, job.version),
            });
        }
        Ok(job)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Cfg {
        rate: u64,
        name: String,
    }

    #[test]
    fn a_job_round_trips_through_its_file_and_keeps_its_typed_config() {
        let dir = std::env::temp_dir().join(format!("latlab-child-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("job.json");
        let cfg = Cfg {
            rate: 5,
            name: "x".into(),
        };
        let job = ChildJob::new("test.job", &cfg, Some(dir.join("out.json"))).unwrap();
        job.write(&path).unwrap();
        let back = ChildJob::read(&path).unwrap();
        assert_eq!(back, job);
        assert_eq!(back.config::<Cfg>().unwrap(), cfg);
        // no hold: the field is left out, so a job reads the same in an older latlab
        assert!(!std::fs::read_to_string(&path)
            .unwrap()
            .contains("dma_latency"));
        let held = ChildJob {
            dma_latency_us: Some(0),
            ..job.clone()
        };
        held.write(&path).unwrap();
        assert_eq!(ChildJob::read(&path).unwrap().dma_latency_us, Some(0));
        // A config of the wrong shape is a typed error naming the job.
        let err = back.config::<Vec<u8>>().unwrap_err().to_string();
        assert!(err.contains("test.job"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn another_schema_or_version_is_refused() {
        let dir = std::env::temp_dir().join(format!("latlab-child-v-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("job.json");
        let mut job = ChildJob::new("t", &1u32, None).unwrap();
        job.version = CHILD_VERSION + 1;
        std::fs::write(&path, serde_json::to_string(&job).unwrap()).unwrap();
        let err = ChildJob::read(&path).unwrap_err().to_string();
        assert!(err.contains("version"), "{err}");
        std::fs::write(&path, "{\"not\": 1}").unwrap();
        assert!(matches!(
            ChildJob::read(&path),
            Err(ChildError::Format { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

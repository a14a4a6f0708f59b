//! The resolved configuration of a `host noise` run and the errors that stop one.

use latlab_core::results::ResultError;
use latlab_core::units::Nanos;
use latlab_sys::sched::SchedError;

/// A resolved `host noise` run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoiseRun {
    /// The CPU to measure.
    pub cpu: u32,
    /// How long to spin.
    pub duration: Nanos,
    /// Shortest step counted as a gap.
    pub threshold: Nanos,
    /// Run the spinning thread under `SCHED_FIFO` at this priority.
    pub fifo: Option<i32>,
    /// Record kernel events (off: the gap half only).
    pub kernel: bool,
    /// Kernel ring-buffer size per CPU, KiB.
    pub buffer_kb: u32,
    /// Gaps the recorder can hold (more are counted as overflow).
    pub capacity: usize,
    /// Worst gaps kept with their events.
    pub worst: usize,
    /// TSC calibration window.
    pub calibration: Nanos,
    /// Lock memory first.
    pub mlock: bool,
    /// Run start (RFC 3339, UTC), for provenance.
    pub started_utc: String,
}

impl Default for NoiseRun {
    fn default() -> Self {
        NoiseRun {
            cpu: 0,
            duration: Nanos::from_secs(5),
            threshold: Nanos::from_micros(5),
            fifo: None,
            kernel: true,
            buffer_kb: 32768,
            capacity: 1 << 20,
            worst: 10,
            calibration: Nanos::from_millis(100),
            mlock: true,
            started_utc: String::new(),
        }
    }
}

/// The longest run `host noise` accepts.
pub const MAX_DURATION: Nanos = Nanos::from_secs(3600);

impl NoiseRun {
    /// Checks the settings, naming the flag of a bad one.
    ///
    /// # Errors
    /// [`NoiseError::Config`].
    pub fn validate(&self) -> Result<(), NoiseError> {
        let bad = |m: String| Err(NoiseError::Config(m));
        if self.duration.get() == 0 || self.duration > MAX_DURATION {
            return bad(format!(
                "--duration must be between 1ns and {MAX_DURATION}, e.g. 5s"
            ));
        }
        if self.threshold.get() == 0 || self.threshold >= self.duration {
            return bad(
                "--threshold must be positive and shorter than --duration, e.g. 5us".into(),
            );
        }
        if let Some(p) = self.fifo {
            if !(1..=99).contains(&p) {
                return bad(format!("--fifo {p} is out of range 1..=99"));
            }
        }
        if !(64..=4 << 20).contains(&self.buffer_kb) {
            return bad(format!(
                "--buffer-kb {} is out of range 64..=4194304",
                self.buffer_kb
            ));
        }
        if self.capacity == 0 {
            return bad("the gap capacity must be positive".into());
        }
        Ok(())
    }
}

/// Errors that stop a run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NoiseError {
    /// A setting is unusable.
    #[error("{0}")]
    Config(String),
    /// Placing the spinning thread failed (`--cpu`, `--fifo`).
    #[error("{flag}: {source}")]
    Placement {
        /// The flag that asked for it.
        flag: &'static str,
        /// What the OS said.
        #[source]
        source: SchedError,
    },
    /// The spinning thread could not be started or died.
    #[error("the spinning thread failed: {0}")]
    Thread(String),
    /// Writing the result failed.
    #[error(transparent)]
    Write(#[from] ResultError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_the_flag() {
        let ok = NoiseRun::default();
        assert!(ok.validate().is_ok());
        let e = |r: NoiseRun| r.validate().unwrap_err().to_string();
        assert!(e(NoiseRun {
            duration: Nanos(0),
            ..ok.clone()
        })
        .contains("--duration"));
        assert!(e(NoiseRun {
            duration: Nanos::from_secs(7200),
            ..ok.clone()
        })
        .contains("--duration"));
        assert!(e(NoiseRun {
            threshold: Nanos::from_secs(9),
            ..ok.clone()
        })
        .contains("--threshold"));
        assert!(e(NoiseRun {
            fifo: Some(100),
            ..ok.clone()
        })
        .contains("--fifo"));
        assert!(e(NoiseRun {
            buffer_kb: 1,
            ..ok.clone()
        })
        .contains("--buffer-kb"));
    }
}

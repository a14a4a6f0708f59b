//! `latlab host noise`: what interrupts a CPU, and why (osnoise/oslat style).
//!
//! A thread pinned to one CPU spins reading the TSC; every step between two reads at or
//! above the threshold is a gap, kept in a preallocated [`GapRecorder`]. Meanwhile the
//! kernel-event recorder (`latlab_sys::ktrace`) records IRQs, softirqs, timers, IPIs, NMIs,
//! work items and context switches on that CPU and the others, on the same TSC timeline.
//! Afterwards every gap's time is split over the causes under it
//! ([`latlab_explain::attribute`]): the result holds the gap histogram, the counters and
//! the `explain` attribution. Without root or tracefs the gap half still runs and every gap
//! is *unexplained*, the attribution saying why.
//!
//! [`GapRecorder`]: latlab_explain::GapRecorder

mod run;
pub use run::{run, NoiseError, Written};

use latlab_core::results::ResultFile;
use latlab_core::units::{format_ns, Nanos};
use serde::{Deserialize, Serialize};

/// The result kind written by `latlab host noise`.
pub const RESULT_KIND: &str = "host.noise";

/// The name of the gap-length histogram.
pub const GAP_HISTOGRAM: &str = "gap";

/// Most gaps kept in the result's gap list (the histogram and the attribution see all
/// recorded gaps).
pub const MAX_LISTED_GAPS: usize = 100_000;

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

/// One recorded gap as the result lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GapRecord {
    /// The read before the gap, raw TSC.
    pub start_tsc: u64,
    /// The read after it, raw TSC.
    pub end_tsc: u64,
    /// Its length, ns.
    pub duration_ns: u64,
    /// The cause with the most of its time (`class` or `class:name`).
    pub cause: String,
}

/// The `data` section of a `host.noise` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NoiseData {
    /// The CPU measured.
    pub cpu: u32,
    /// The spinning thread's id (the `pid` its sched_switch events carry).
    pub tid: i32,
    /// The gap threshold, ns.
    pub threshold_ns: u64,
    /// Time spun, ns.
    pub elapsed_ns: u64,
    /// The first read of the spin, raw TSC (the window the gaps lie in).
    #[serde(default)]
    pub start_tsc: u64,
    /// The last read, raw TSC.
    #[serde(default)]
    pub end_tsc: u64,
    /// Reads of the TSC.
    pub loop_iterations: u64,
    /// The loop's own cost: the smallest read-to-read step, ns.
    pub loop_cost_ns: u64,
    /// Gaps at or above the threshold (stored and overflowed).
    pub gaps: u64,
    /// Time in stored gaps, ns.
    pub noise_ns: u64,
    /// Noise per second of run time, ns/s.
    pub noise_ns_per_s: f64,
    /// Noise as a share of run time, %.
    pub noise_pct: f64,
    /// The longest gap, ns.
    pub longest_ns: u64,
    /// Kernel events decoded.
    pub kernel_events: u64,
    /// Trace lines that did not decode.
    pub malformed_events: u64,
    /// Whether this run mounted tracefs.
    pub mounted_tracefs: bool,
    /// CPUs whose kernel events were recorded.
    pub traced_cpus: Vec<u32>,
    /// The gaps, in order (at most [`MAX_LISTED_GAPS`]).
    pub gap_list: Vec<GapRecord>,
}

/// Errors reading a `host.noise` result.
#[derive(Debug, thiserror::Error)]
#[error("not a host.noise result with readable data: {0}")]
pub struct DataError(String);

impl NoiseData {
    /// The data of a `host.noise` result.
    ///
    /// # Errors
    /// [`DataError`] when the result is of another kind or its data does not parse.
    pub fn from_result(r: &ResultFile) -> Result<NoiseData, DataError> {
        if r.kind != RESULT_KIND {
            return Err(DataError(format!("kind is '{}'", r.kind)));
        }
        serde_json::from_value(r.data.clone()).map_err(|e| DataError(e.to_string()))
    }
}

/// The text summary of a `host.noise` result: gaps, noise per second, the longest gap,
/// the causes ranked by time and the share outside the kernel.
///
/// # Errors
/// [`DataError`].
pub fn summary(r: &ResultFile) -> Result<String, DataError> {
    let d = NoiseData::from_result(r)?;
    let mut out = format!(
        "host noise on CPU {} for {} (threshold {}): {} gaps, noise {}/s ({:.3} %), longest {}\n",
        d.cpu,
        format_ns(d.elapsed_ns as f64),
        format_ns(d.threshold_ns as f64),
        d.gaps,
        format_ns(d.noise_ns_per_s),
        d.noise_pct,
        format_ns(d.longest_ns as f64),
    );
    if let Some(a) = &r.explain {
        out.push_str(&latlab_explain::render::causes_table(a));
    }
    out.push_str(&format!(
        "loop: {} reads, {} per read at the minimum; kernel events: {} decoded, {} lost",
        d.loop_iterations,
        format_ns(d.loop_cost_ns as f64),
        d.kernel_events,
        r.counters.get("lost_events").copied().unwrap_or(0),
    ));
    if d.mounted_tracefs {
        out.push_str("; tracefs was mounted by this run");
    }
    out.push('\n');
    Ok(out)
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

    #[test]
    fn a_gap_only_run_writes_a_result_that_reads_back() {
        let dir = std::env::temp_dir().join(format!("latlab-noise-test-{}", std::process::id()));
        let out = dir.join("n.json");
        let r = NoiseRun {
            duration: Nanos::from_millis(50),
            threshold: Nanos::from_micros(1),
            kernel: false,
            mlock: false,
            capacity: 4096,
            calibration: Nanos::from_millis(10),
            ..NoiseRun::default()
        };
        let mut notices = Vec::new();
        run(&r, vec!["latlab".into()], &out, &mut |n| {
            notices.push(n.to_string())
        })
        .unwrap();
        assert!(
            notices.is_empty(),
            "--no-kernel is asked for, not a failure: {notices:?}"
        );
        let back = ResultFile::load(&out).unwrap();
        let d = NoiseData::from_result(&back).unwrap();
        assert_eq!(d.cpu, 0);
        assert!(d.elapsed_ns >= 50_000_000, "{}", d.elapsed_ns);
        assert!(d.loop_iterations > 1000);
        let h = back.histogram(GAP_HISTOGRAM).unwrap().unwrap();
        assert_eq!(h.count(), d.gap_list.len() as u64);
        assert_eq!(back.counters["gaps"], d.gaps);
        let a = back.explain.as_ref().unwrap();
        assert!(!a.complete);
        assert_eq!(a.unavailable.as_deref(), Some("--no-kernel was given"));
        assert_eq!(a.explained_ns, 0);
        assert_eq!(a.windows, d.gap_list.len() as u64);
        let text = summary(&back).unwrap();
        assert!(text.starts_with("host noise on CPU 0"), "{text}");
        assert!(
            text.contains("kernel events unavailable: --no-kernel was given"),
            "{text}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn data_of_another_kind_is_refused() {
        let r = ResultFile::new(
            "host.clocks",
            vec![],
            serde_json::Value::Null,
            latlab_core::results::Provenance::default(),
        );
        assert!(summary(&r).unwrap_err().to_string().contains("host.clocks"));
    }
}

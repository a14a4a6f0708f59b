//! What a `host.noise` result holds beyond its histogram, and its text summary.

use latlab_core::results::ResultFile;
use latlab_core::units::format_ns;
use serde::{Deserialize, Serialize};

/// The result kind written by `latlab host noise`.
pub const RESULT_KIND: &str = "host.noise";

/// The name of the gap-length histogram.
pub const GAP_HISTOGRAM: &str = "gap";

/// Most gaps kept in the result's gap list (the histogram and the attribution see all
/// recorded gaps).
pub const MAX_LISTED_GAPS: usize = 100_000;

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
    /// Its time by cause, largest first (at most [`MAX_GAP_CAUSES`]): `[cause, ns]`, the
    /// cause written as in `cause`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<(String, u64)>,
}

/// Most causes listed per gap in the gap list (the attribution has them all).
pub const MAX_GAP_CAUSES: usize = 8;

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

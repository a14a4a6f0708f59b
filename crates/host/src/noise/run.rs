//! A whole `host noise` run: place the spinning thread, start the kernel-event recorder,
//! spin, attribute every gap, and write the result — before anything is printed.

use super::config::{NoiseError, NoiseRun};
use super::data::{
    GapRecord, NoiseData, GAP_HISTOGRAM, MAX_GAP_CAUSES, MAX_LISTED_GAPS, RESULT_KIND,
};
use latlab_core::hist::LatencyHistogram;
use latlab_core::results::{ResultFile, StoredHistogram, ThreadPlacement};
use latlab_core::units::Nanos;
use latlab_explain::{ExplainOptions, GapRecorder, KernelRequest, KernelSession, Window};
use latlab_sys::sched;
use latlab_sys::tsc::{Clock, Timesource};
use latlab_sys::{host, rt};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

/// What [`run`] wrote.
#[derive(Clone, Debug)]
pub struct Written {
    /// The result file.
    pub result: PathBuf,
}

/// A cause as the gap list writes it: `class` or `class:name`.
fn cause_key(c: &latlab_explain::Cause) -> String {
    if c.name.is_empty() {
        c.class.as_str().to_string()
    } else {
        format!("{}:{}", c.class.as_str(), c.name)
    }
}

/// What the spinning thread brings back.
struct Spun {
    rec: GapRecorder,
    start: u64,
    end: u64,
    policy: (String, i32),
}

/// Runs the measurement and writes `out`. `notice` is told, in one line each, what the run
/// cannot do (kernel events unavailable and why) before it carries on without it.
///
/// # Errors
/// See [`NoiseError`].
pub fn run(
    r: &NoiseRun,
    argv: Vec<String>,
    out: &Path,
    notice: &mut dyn FnMut(&str),
) -> Result<Written, NoiseError> {
    run_with_progress(r, argv, out, notice, &mut latlab_core::progress::NoProgress)
}

/// [`run`], telling `progress` as each phase starts: measuring, attributing, writing.
///
/// # Errors
/// See [`NoiseError`].
pub fn run_with_progress(
    r: &NoiseRun,
    argv: Vec<String>,
    out: &Path,
    notice: &mut dyn FnMut(&str),
    progress: &mut dyn latlab_core::progress::Progress,
) -> Result<Written, NoiseError> {
    r.validate()?;
    let (clock, timebase) = Clock::establish(r.calibration);
    let tsc_hz = match clock.timesource() {
        Timesource::Tsc(rate) => rate.hz(),
        Timesource::Monotonic => 1_000_000_000,
    };
    let mut warnings = Vec::new();
    let memory_locked = r.mlock && sched::lock_memory_or_warn(&mut warnings);
    let to_ticks = |n: Nanos| (u128::from(n.get()) * u128::from(tsc_hz) / 1_000_000_000) as u64;
    let threshold = to_ticks(r.threshold);
    let duration = to_ticks(r.duration);

    // The spinner: placed, its memory allocated, then it waits for the recorder.
    let (tid_tx, tid_rx) = mpsc::channel::<Result<i32, NoiseError>>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (cpu, fifo, capacity) = (r.cpu, r.fifo, r.capacity);
    let handle = std::thread::Builder::new()
        .name("latlab-noise".into())
        .spawn(move || -> Option<Spun> {
            let placed = sched::pin_current_thread(cpu)
                .map_err(|source| NoiseError::Placement {
                    flag: "--cpu",
                    source,
                })
                .and_then(|()| match fifo {
                    Some(p) => sched::set_fifo(p).map_err(|source| NoiseError::Placement {
                        flag: "--fifo",
                        source,
                    }),
                    None => Ok(()),
                });
            if let Err(e) = placed {
                let _ = tid_tx.send(Err(e));
                return None;
            }
            let mut rec = GapRecorder::new(threshold, capacity);
            let policy = sched::current_policy();
            let _ = tid_tx.send(Ok(rt::gettid()));
            go_rx.recv().ok()?;
            let start = clock.now();
            let end = start.saturating_add(duration);
            let mut prev = start;
            loop {
                let now = clock.now();
                rec.record(prev, now);
                prev = now;
                if now >= end {
                    break;
                }
            }
            Some(Spun {
                rec,
                start,
                end: prev,
                policy,
            })
        })
        .map_err(|e| NoiseError::Thread(e.to_string()))?;
    let tid = tid_rx
        .recv()
        .map_err(|_| NoiseError::Thread("it exited before starting".into()))??;

    // The kernel recorder, on every online CPU (the others cross-check simultaneous stalls).
    let traced: Vec<u32> = (0..sched::online_cpus()).collect();
    let ks = KernelSession::start(
        &KernelRequest {
            enabled: r.kernel,
            disabled_reason: "--no-kernel was given".into(),
            not_tsc: (!clock.is_tsc()).then(|| {
                timebase
                    .fallback_reason
                    .clone()
                    .unwrap_or_else(|| "no reason recorded".into())
            }),
            cpus: traced.clone(),
            buffer_kb: r.buffer_kb,
            ..KernelRequest::default()
        },
        notice,
    );
    progress.step(
        &format!(
            "measuring for {}",
            latlab_core::units::format_ns(r.duration.get() as f64)
        ),
        0,
        3,
    );
    let _ = go_tx.send(());
    let spun = handle
        .join()
        .map_err(|_| NoiseError::Thread("it panicked".into()))?
        .ok_or_else(|| NoiseError::Thread("it did not run".into()))?;
    let got = ks.finish(notice);

    // Attribution.
    progress.step("attributing the gaps", 1, 3);
    let gaps = spun.rec.gaps();
    let windows: Vec<Window> = gaps
        .iter()
        .map(|g| Window {
            cpu: r.cpu,
            start: g.start,
            end: g.end,
        })
        .collect();
    let (attribution, splits, kt) = got.attribute(
        &windows,
        &ExplainOptions {
            window: (spun.start, spun.end),
            tid: Some(tid),
            tsc_hz,
            base_ticks: spun.rec.min_step(),
            worst: r.worst,
        },
    );

    // The result.
    let mut hist = LatencyHistogram::default();
    let mut noise_ns = 0u64;
    let mut gap_list = Vec::with_capacity(gaps.len().min(MAX_LISTED_GAPS));
    for (g, s) in gaps.iter().zip(&splits) {
        let d = clock.delta_nanos(g.start, g.end);
        hist.record(d);
        noise_ns += d.get();
        if gap_list.len() < MAX_LISTED_GAPS {
            gap_list.push(GapRecord {
                start_tsc: g.start,
                end_tsc: g.end,
                duration_ns: d.get(),
                cause: s.top().map_or_else(String::new, cause_key),
                causes: s
                    .parts
                    .iter()
                    .take(MAX_GAP_CAUSES)
                    .map(|(c, t)| (cause_key(c), clock.raw_to_nanos(*t).get()))
                    .collect(),
            });
        }
    }
    let elapsed = clock.delta_nanos(spun.start, spun.end);
    let secs = elapsed.get().max(1) as f64 / 1e9;
    let data = NoiseData {
        cpu: r.cpu,
        tid,
        threshold_ns: r.threshold.get(),
        elapsed_ns: elapsed.get(),
        start_tsc: spun.start,
        end_tsc: spun.end,
        loop_iterations: spun.rec.steps() + 1,
        loop_cost_ns: clock.raw_to_nanos(spun.rec.min_step()).get(),
        gaps: gaps.len() as u64 + spun.rec.overflow(),
        noise_ns,
        noise_ns_per_s: noise_ns as f64 / secs,
        noise_pct: noise_ns as f64 * 100.0 / elapsed.get().max(1) as f64,
        longest_ns: if hist.is_empty() { 0 } else { hist.max() },
        kernel_events: kt.as_ref().map_or(0, |k| k.events),
        malformed_events: kt.as_ref().map_or(0, |k| k.malformed),
        mounted_tracefs: got.mounted_tracefs(),
        traced_cpus: if got.recording.is_some() {
            traced
        } else {
            vec![]
        },
        gap_list,
    };
    let thread = ThreadPlacement {
        role: "noise spinner".into(),
        pinned_cpu: Some(r.cpu),
        observed_cpus: vec![r.cpu],
        policy: spun.policy.0,
        priority: spun.policy.1,
    };
    let provenance = host::provenance(timebase, vec![thread], memory_locked, r.started_utc.clone());
    let config = serde_json::json!({
        "cpu": r.cpu,
        "duration_ns": r.duration.get(),
        "threshold_ns": r.threshold.get(),
        "fifo_priority": r.fifo,
        "kernel_events": r.kernel,
        "buffer_kb": r.buffer_kb,
        "gap_capacity": r.capacity,
        "worst": r.worst,
        "calibration_window_ns": r.calibration.get(),
        "mlock": r.mlock,
    });
    let mut result = ResultFile::new(RESULT_KIND, argv, config, provenance);
    result.duration_ns = elapsed.get();
    result.histograms.push(
        StoredHistogram::new(GAP_HISTOGRAM, &hist)
            .with_label("cpu", r.cpu.to_string())
            .with_label("measures", "read-to-read gap at or above the threshold"),
    );
    result.counters.insert("gaps".into(), data.gaps);
    result
        .counters
        .insert("lost_events".into(), attribution.lost_events);
    result
        .counters
        .insert("recorder_overflow".into(), spun.rec.overflow());
    result
        .counters
        .insert("malformed_events".into(), data.malformed_events);
    if spun.rec.overflow() > 0 {
        warnings.push(format!(
            "{} gaps did not fit the recorder (capacity {}): they are counted, not attributed",
            spun.rec.overflow(),
            r.capacity
        ));
    }
    warnings.extend(latlab_explain::render::lost_warning(
        &attribution,
        " (raise --buffer-kb)",
    ));
    warnings.extend(latlab_explain::render::unavailable_warning(
        &attribution,
        "every gap is unexplained",
    ));
    if let Some(vm) = &result.provenance.host.virtualization {
        warnings.push(format!(
            "running under a hypervisor ({vm}): VM exits appear as gaps outside the kernel"
        ));
    }
    result.warnings.extend(warnings);
    result.data = serde_json::to_value(&data).expect("plain data serialises");
    result.explain = Some(attribution);
    progress.step("writing the result", 2, 3);
    result.save(out)?;
    Ok(Written {
        result: out.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::noise::data::summary;
    use latlab_core::units::Nanos;

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
}

//! `latlab net calibrate`: the ground truth this machine can offer in place of a hardware
//! tester. The NF busy-waits a known added delay per probe (0, 10, 50 µs by default); for
//! each timestamp source and percentile, the latency shift against the 0-delay run should
//! equal the injected delay. The error (shift − injected) is what the instrument adds or
//! loses at that percentile.
//!
//! The NF runs pinned under `SCHED_FIFO` 50 and the generator's threads under
//! `SCHED_FIFO` 40, so that other work on the host does not preempt them; with the
//! default blocking NF, no thread spins long enough to meet real-time throttling.
//!
//! With `--io xdp` the NF forwards over AF_XDP and the generator sends and receives over
//! AF_XDP as well (the kernel-bypass path of `killer-us`), so only the user (TSC) sources
//! are compared; its busy-polling threads need `--no-rt-throttle` for an unthrottled tail.

use crate::nf::{DelaySpec, IoMode};
use crate::orchestrate::{self, Placement, ProbeJob};
use crate::probe::{series, Sources};
use latlab_core::parse::Percentile;
use latlab_core::results::{ResultFile, StoredHistogram};
use latlab_core::stats::is_supported;
use latlab_core::units::{format_ns, format_signed_ns, Nanos, SignStyle};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Result kind.
pub const RESULT_KIND: &str = "net.calibrate";

/// The sources compared.
pub const SOURCES: [(&str, &str); 3] = [
    ("user (scheduled)", series::USER_SCHED),
    ("user (actual send)", series::USER_ACTUAL),
    ("kernel (driver to driver)", series::KERNEL),
];

/// Percentiles compared.
pub fn percentiles() -> Vec<Percentile> {
    vec![
        Percentile::LADDER[0],
        Percentile::from_fraction(90, 100).expect("valid"),
        Percentile::LADDER[2],
        Percentile::LADDER[3],
    ]
}

/// What to run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CalibrateConfig {
    /// Injected delays (the first should be 0, the baseline).
    pub delays: Vec<Nanos>,
    /// Measured duration per delay.
    pub duration: Nanos,
    /// Warm-up per delay.
    pub warmup: Nanos,
    /// Probe rate, milli-pps.
    pub milli_pps: u64,
    /// NF I/O mode.
    pub nf_io: IoMode,
    /// Reflector on loopback instead of the testbed.
    pub loopback: bool,
    /// Rounds: each round runs every delay once, in order; histograms of a delay are
    /// merged over the rounds, so that slow drifts of the host hit every delay alike.
    pub rounds: u32,
    /// No progress output.
    pub quiet: bool,
    /// `--explain`: every probe run attributes its slow samples (absent in older files:
    /// off).
    #[serde(default)]
    pub explain: crate::explain::ExplainSpec,
}

/// Per injected delay, the p99 error of `user.actual` with and without the samples that
/// had time outside the kernel (`--explain`), each the mean over the rounds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CleanRow {
    /// Injected delay, ns.
    pub injected_ns: u64,
    /// p99 shift − injected, all samples, ns.
    pub error_ns: i64,
    /// The same over the samples without time outside the kernel, ns.
    pub clean_error_ns: i64,
    /// Share of the explained samples' excess outside the kernel, at this delay (0..=1).
    pub outside_share: f64,
    /// Rounds with an attribution.
    pub rounds: u64,
}
/// One comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Source label.
    pub source: String,
    /// Injected delay, ns.
    pub injected_ns: u64,
    /// Percentile.
    pub percentile: String,
    /// Latency at this percentile with no added delay, ns.
    pub baseline_ns: u64,
    /// Latency with the delay, ns.
    pub measured_ns: u64,
    /// `measured − baseline`, ns.
    pub shift_ns: i64,
    /// `shift − injected`, ns.
    pub error_ns: i64,
    /// Both percentiles supported by their sample counts.
    pub supported: bool,
}

/// Data of a `net.calibrate` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CalibrateData {
    /// Every comparison.
    pub rows: Vec<Row>,
    /// Probe result files per delay.
    pub runs: Vec<(u64, String)>,
    /// Where it ran: `testbed` or `loopback`.
    pub placement: String,
    /// Which CPUs the generator and the NF ran on, and why (empty in older files).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cpus: String,
    /// With `--explain`: the p99 errors with and without the samples that had time
    /// outside the kernel.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clean: Vec<CleanRow>,
}

/// Errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CalibrateError {
    /// A child run failed.
    #[error(transparent)]
    Orchestrate(#[from] orchestrate::OrchestrateError),
    /// Bad configuration.
    #[error("{0}")]
    Config(String),
}

/// `SCHED_FIFO` priority of the generator's threads (the NF runs at 50).
const GEN_FIFO: i32 = 40;

/// Runs the calibration: one NF + probe run per delay, results under `dir`; `progress`
/// is told as each run starts.
pub fn run(
    cfg: &CalibrateConfig,
    exe: &Path,
    dir: &Path,
    argv: Vec<String>,
    progress: &mut dyn latlab_core::progress::Progress,
) -> Result<ResultFile, CalibrateError> {
    if cfg.delays.is_empty() || cfg.delays[0].get() != 0 {
        return Err(CalibrateError::Config(
            "--delays must start with 0 (the baseline)".into(),
        ));
    }
    let placement = if cfg.loopback {
        Placement::Loopback
    } else {
        Placement::Testbed
    };
    let _testbed = orchestrate::prepare(placement)?;
    let probe_fifo = latlab_sys::netns::is_root().then_some(GEN_FIFO);
    let quiet = crate::fit::probe_cpus(&latlab_sys::sched::allowed_cpus(), probe_fifo);
    let (nf_cpu, gen_cpu) = crate::fit::choose_cpus(&quiet).unwrap_or_else(orchestrate::cpus);
    let cpus = crate::fit::placement_sentence(&quiet, nf_cpu, gen_cpu);
    if !cfg.quiet {
        eprintln!("calibrate: {cpus}");
    }
    let mut runs: Vec<(u64, PathBuf, ResultFile)> = Vec::new();
    for round in 0..cfg.rounds.max(1) {
        for d in &cfg.delays {
            let tag = format_ns(d.get() as f64).replace(' ', "");
            progress.step(
                &format!(
                    "round {}/{}, added delay {tag}",
                    round + 1,
                    cfg.rounds.max(1)
                ),
                runs.len() as u64,
                u64::from(cfg.rounds.max(1)) * cfg.delays.len() as u64,
            );
            let mut nf_cfg = placement.nf_config();
            nf_cfg.io = cfg.nf_io;
            nf_cfg.cpus = vec![nf_cpu];
            nf_cfg.delay = DelaySpec::constant(d.get());
            nf_cfg.fifo = Some(50);
            if cfg.nf_io == IoMode::Xdp {
                // one frame per kick: a batch would hold each delayed probe back until
                // the delays of the probes behind it in the batch were spent too
                nf_cfg.batch = 1;
            }
            let nf_path = dir.join(format!("nf-delay-{tag}-r{round}.json"));
            let nf = orchestrate::start_nf(exe, placement, &nf_cfg, &nf_path)?;
            let probe_path = dir.join(format!("probe-delay-{tag}-r{round}.json"));
            let mut probe = placement.probe_config();
            probe.milli_pps = cfg.milli_pps;
            probe.duration = cfg.duration;
            probe.warmup = cfg.warmup;
            // --io xdp calibrates the kernel-bypass path end to end: the generator sends
            // and receives over AF_XDP too, with user (TSC) stamps, the only ones there
            let xdp = cfg.nf_io == IoMode::Xdp;
            probe.rx_io = if xdp { IoMode::Xdp } else { IoMode::Blocking };
            probe.tx_io = if xdp { IoMode::Xdp } else { IoMode::Blocking };
            let gen = (gen_cpu != nf_cpu).then_some(gen_cpu);
            probe.tx_cpu = gen;
            probe.rx_cpu = gen;
            probe.sources = if xdp {
                Sources::USER
            } else {
                Sources::USER_KERNEL
            };
            probe.fifo = Some(GEN_FIFO);
            probe.explain = cfg.explain;
            let pr = ProbeJob {
                nf: Some(serde_json::json!({
                    "role": if cfg.loopback { "reflect" } else { "forward" },
                    "io": cfg.nf_io.name(), "cpu": nf_cpu, "fifo": 50, "delay_ns": d.get()
                })),
                ..ProbeJob::new(
                    probe
                        .validated()
                        .map_err(|e| CalibrateError::Config(e.to_string()))?,
                )
            };
            let res = orchestrate::run_probe(exe, placement, &pr, &probe_path);
            let nf_res = nf.finish();
            let res = res?;
            nf_res?;
            runs.push((d.get(), probe_path, res));
        }
    }
    let prov = runs
        .first()
        .map(|(_, _, r)| r.provenance.clone())
        .unwrap_or_default();
    let mut out = ResultFile::new(
        RESULT_KIND,
        argv,
        serde_json::to_value(cfg).unwrap_or_default(),
        prov,
    );
    let mut data = CalibrateData {
        placement: if cfg.loopback { "loopback" } else { "testbed" }.into(),
        cpus,
        ..Default::default()
    };
    // histograms per source and delay, merged over the rounds
    let merged = |name: &str, d: u64| -> Option<latlab_core::hist::LatencyHistogram> {
        let mut acc: Option<latlab_core::hist::LatencyHistogram> = None;
        for (_, _, r) in runs.iter().filter(|(x, _, _)| *x == d) {
            let h = r.histogram(name)?.ok()?;
            match acc.as_mut() {
                None => acc = Some(h),
                Some(a) => a.merge(&h).ok()?,
            }
        }
        acc
    };
    for (label, name) in SOURCES {
        let Some(b) = merged(name, 0) else {
            continue;
        };
        for d in cfg.delays.iter().map(|d| d.get()) {
            let Some(h) = merged(name, d) else {
                continue;
            };
            out.histograms.push(
                StoredHistogram::new(format!("{name}@{}", format_ns(d as f64)), &h)
                    .with_label("source", name)
                    .with_label("injected_ns", d.to_string()),
            );
            if d == 0 {
                continue;
            }
            for p in percentiles() {
                let bv = b.value_at(p);
                let mv = h.value_at(p);
                let shift = mv as i64 - bv as i64;
                data.rows.push(Row {
                    source: label.to_string(),
                    injected_ns: d,
                    percentile: p.to_string(),
                    baseline_ns: bv,
                    measured_ns: mv,
                    shift_ns: shift,
                    error_ns: shift - d as i64,
                    supported: is_supported(p, b.count()) && is_supported(p, h.count()),
                });
            }
        }
    }
    data.clean = clean_rows(&runs, &cfg.delays);
    data.runs = runs
        .iter()
        .map(|(d, p, _)| (*d, p.display().to_string()))
        .collect();
    for (d, p, r) in &runs {
        for w in &r.warnings {
            let w = format!("{} (delay {}): {w}", p.display(), format_ns(*d as f64));
            if !out.warnings.contains(&w) {
                out.warnings.push(w);
            }
        }
        out.add_counters(&r.counters);
    }
    out.duration_ns = runs.iter().map(|(_, _, r)| r.duration_ns).sum();
    out.data = serde_json::to_value(&data).unwrap_or_default();
    Ok(out)
}

/// Per delay (mean over rounds): the user.actual p99 and its clean p99 from each run's
/// `data.explain`, the outside-the-kernel share; rows for every delay but 0.
fn clean_rows(runs: &[(u64, PathBuf, ResultFile)], delays: &[Nanos]) -> Vec<CleanRow> {
    let p99 = Percentile::from_fraction(99, 100).expect("a valid percentile");
    let per = |d: u64| -> Option<(f64, f64, f64, u64)> {
        let mut acc = (0.0, 0.0, 0.0, 0u64);
        for (_, _, r) in runs.iter().filter(|(x, _, _)| *x == d) {
            let (Some(a), Some(clean)) = (
                r.explain.as_ref(),
                r.data
                    .get("explain")
                    .and_then(|e| e.get("clean_p99_ns"))
                    .and_then(|v| v.as_u64()),
            ) else {
                continue;
            };
            let Some(Ok(h)) = r.histogram(crate::probe::series::USER_ACTUAL) else {
                continue;
            };
            acc.0 += h.value_at(p99) as f64;
            acc.1 += clean as f64;
            acc.2 += if a.excess_ns == 0 {
                0.0
            } else {
                a.class_time_ns("outside_kernel") as f64 / a.excess_ns as f64
            };
            acc.3 += 1;
        }
        (acc.3 > 0).then(|| {
            let n = acc.3 as f64;
            (acc.0 / n, acc.1 / n, acc.2 / n, acc.3)
        })
    };
    let Some(base) = per(0) else {
        return Vec::new();
    };
    delays
        .iter()
        .map(|d| d.get())
        .filter(|&d| d != 0)
        .filter_map(|d| {
            let m = per(d)?;
            Some(CleanRow {
                injected_ns: d,
                error_ns: (m.0 - base.0) as i64 - d as i64,
                clean_error_ns: (m.1 - base.1) as i64 - d as i64,
                outside_share: m.2,
                rounds: m.3,
            })
        })
        .collect()
}

/// The `--explain` lines of a calibration: per delay, the p99 error of user.actual with
/// every sample and without those that had time outside the kernel (pure).
pub fn render_clean(r: &ResultFile) -> String {
    let Ok(d) = serde_json::from_value::<CalibrateData>(r.data.clone()) else {
        return String::new();
    };
    let mut s = String::new();
    for c in &d.clean {
        s.push_str(&format!(
            "explain: +{} injected: user.actual p99 error {} with every sample, {} without those with time outside the kernel ({:.1}% of the slow samples' excess was outside it; {} rounds)\n",
            format_ns(c.injected_ns as f64),
            format_signed_ns(c.error_ns as f64, SignStyle::AsciiBoth),
            format_signed_ns(c.clean_error_ns as f64, SignStyle::AsciiBoth),
            c.outside_share * 100.0,
            c.rounds
        ));
    }
    s
}

/// The calibration table (pure): per source, delay and percentile.
pub fn render_table(r: &ResultFile) -> Result<String, serde_json::Error> {
    let d: CalibrateData = serde_json::from_value(r.data.clone())?;
    let mut s = String::new();
    if !d.cpus.is_empty() {
        s.push_str(&format!("{}\n\n", d.cpus));
    }
    s.push_str(
        "source                      injected  percentile  baseline   measured   shift      error\n",
    );
    for row in &d.rows {
        s.push_str(&format!(
            "{:<27} {:>8}  {:>10}  {:>9}  {:>9}  {:>9}  {:>9}{}\n",
            row.source,
            format_ns(row.injected_ns as f64),
            row.percentile,
            format_ns(row.baseline_ns as f64),
            format_ns(row.measured_ns as f64),
            format_signed_ns(row.shift_ns as f64, SignStyle::AsciiBoth),
            format_signed_ns(row.error_ns as f64, SignStyle::AsciiBoth),
            if row.supported { "" } else { "  (unsupported)" }
        ));
    }
    Ok(s)
}

/// The rows of a result (pure).
pub fn rows(r: &ResultFile) -> Vec<Row> {
    serde_json::from_value::<CalibrateData>(r.data.clone())
        .map(|d| d.rows)
        .unwrap_or_default()
}

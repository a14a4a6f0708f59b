//! `latlab experiment killer-us`: the analogue of the paper's Fig. 3 on one host. Every
//! measurement method against an OS-configuration ladder of the network function.
//!
//! Methods (each a histogram of a probe run):
//! - `user-blocking`: user TSC, blocking receive (netperf-like), `user.actual`;
//! - `user-busy`: user TSC, busy-polling receive (TRex-like), `user.actual`;
//! - `kernel`: software timestamps driver to driver, from the blocking run;
//! - `hardware`: NIC timestamps, where the interfaces have them.
//!
//! Ladder: `default` (blocking, unpinned) → `pinned` → `pinned+busy` →
//! `pinned+busy+fifo`, plus `hog` (pinned+busy with a CPU hog on the NF's core).

use crate::nf::IoMode;
use crate::orchestrate::{self, Placement, ProbeJob};
use crate::probe::{series, Sources};
use latlab_core::doc::{Curve, Figure, PlotKind};
use latlab_core::hist::LatencyHistogram;
use latlab_core::parse::Percentile;
use latlab_core::results::{ResultFile, StoredHistogram};
use latlab_core::stats::{ccdf, is_supported};
use latlab_core::units::{format_ns, Nanos};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Result kind of the experiment's summary.
pub const RESULT_KIND: &str = "net.killer_us";

/// The NF configurations of the ladder.
pub const LADDER: [&str; 5] = [
    "default",
    "pinned",
    "pinned+busy",
    "pinned+busy+fifo",
    "hog",
];

/// One NF configuration of the ladder: what it changes from the default NF.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Its name in [`LADDER`].
    pub name: &'static str,
    /// NF threads pinned to the NF's CPU.
    pub pinned: bool,
    /// Busy-polling I/O instead of blocking receives.
    pub busy: bool,
    /// `SCHED_FIFO` priority of the NF threads.
    pub fifo: Option<i32>,
    /// A CPU hog spins on the NF's CPU.
    pub hog: bool,
}

/// The ladder's steps, in [`LADDER`] order.
pub const STEPS: [Step; 5] = [
    Step {
        name: "default",
        pinned: false,
        busy: false,
        fifo: None,
        hog: false,
    },
    Step {
        name: "pinned",
        pinned: true,
        busy: false,
        fifo: None,
        hog: false,
    },
    Step {
        name: "pinned+busy",
        pinned: true,
        busy: true,
        fifo: None,
        hog: false,
    },
    Step {
        name: "pinned+busy+fifo",
        pinned: true,
        busy: true,
        fifo: Some(50),
        hog: false,
    },
    Step {
        name: "hog",
        pinned: true,
        busy: true,
        fifo: None,
        hog: true,
    },
];

impl Step {
    /// The NF of this step at `placement`, its threads on `nf_cpu` when pinned.
    pub fn nf_config(&self, placement: Placement, nf_cpu: u32) -> crate::nf::NfConfig {
        let mut nf = placement.nf_config();
        if self.pinned {
            nf.cpus = vec![nf_cpu];
        }
        if self.busy {
            nf.io = IoMode::Busy;
        }
        nf.fifo = self.fifo;
        nf
    }

    /// The NF description the probe results record.
    fn describe(&self, loopback: bool, nf_cpu: u32) -> serde_json::Value {
        serde_json::json!({
            "config": self.name,
            "role": if loopback { "reflect" } else { "forward" },
            "io": if self.busy { "busy" } else { "blocking" },
            "cpu": self.pinned.then_some(nf_cpu),
            "fifo": self.fifo,
            "cpu_hog": self.hog,
        })
    }
}

/// The methods: (name, description, which run, histogram).
pub const METHODS: [(&str, &str, &str, &str); 4] = [
    (
        "user-blocking",
        "user TSC, blocking receive (netperf-like)",
        "blocking",
        series::USER_ACTUAL,
    ),
    (
        "user-busy",
        "user TSC, busy-polling receive (TRex-like)",
        "busy",
        series::USER_ACTUAL,
    ),
    (
        "kernel",
        "kernel software timestamps, driver to driver",
        "blocking",
        series::KERNEL,
    ),
    (
        "hardware",
        "NIC hardware timestamps",
        "blocking",
        series::HARDWARE,
    ),
];

/// Experiment settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KillerUsConfig {
    /// Measured duration per run.
    pub duration: Nanos,
    /// Warm-up per run.
    pub warmup: Nanos,
    /// Probe rate, milli-pps.
    pub milli_pps: u64,
    /// Reflector on loopback instead of the testbed.
    pub loopback: bool,
    /// No progress output.
    pub quiet: bool,
    /// Notes to record (e.g. why loopback was used).
    pub notes: Vec<String>,
    /// Each rung's probe attributes its samples above p99 (`--explain`; on by default as
    /// root, absent in older files: off).
    #[serde(default)]
    pub explain: crate::explain::ExplainSpec,
}

/// One line of the summary table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SummaryRow {
    /// Method name.
    pub method: String,
    /// NF configuration.
    pub config: String,
    /// Samples.
    pub count: u64,
    /// p50, p99, p99.9, p99.99 in ns, each with whether it is supported.
    pub percentiles: Vec<(String, u64, bool)>,
    /// Maximum, ns.
    pub max_ns: u64,
}

/// Data of a `net.killer_us` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KillerUsData {
    /// `testbed` or `loopback`.
    pub placement: String,
    /// The summary table.
    pub rows: Vec<SummaryRow>,
    /// Per NF configuration: the lowest percentile from which the methods disagree by
    /// more than 1 µs (`None` when they agree up to the highest supported percentile).
    pub disagreement: Vec<(String, Option<String>)>,
    /// The same among the methods that time the same span (user send → user receive:
    /// `user-blocking` and `user-busy`); the kernel and hardware methods leave the host
    /// stacks out, so they differ from the user methods from the median on by design.
    #[serde(default)]
    pub disagreement_same_span: Vec<(String, Option<String>)>,
    /// Every probe and NF result file.
    pub files: Vec<String>,
    /// The CCDF figures, one per method.
    pub figures: Vec<String>,
    /// Notes.
    pub notes: Vec<String>,
    /// With `--explain`: per run, how much of its tail (the samples above its p99) lay
    /// outside the system under test (outside the kernel: the hypervisor), one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tails: Vec<String>,
}

/// What the CLI prints.
#[derive(Clone, Debug)]
pub struct Summary {
    /// The table as text.
    pub table_text: String,
    /// Warnings.
    pub warnings: Vec<String>,
    /// Files written, and the figure files the caller draws (see `figures`).
    pub files: Vec<PathBuf>,
    /// The CCDF figures, one per method, with the file each belongs in. The library does
    /// not draw (measuring crates carry no plotting code): the caller renders each with
    /// `latlab_report::write_figure`.
    pub figures: Vec<(PathBuf, Figure)>,
}

/// Errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExperimentError {
    /// A child run failed.
    #[error(transparent)]
    Orchestrate(#[from] orchestrate::OrchestrateError),
    /// A file could not be written.
    #[error(transparent)]
    Result(#[from] latlab_core::results::ResultError),
}

/// One method's histograms, one per NF configuration.
type MethodCurves<'a> = (&'a str, &'a str, Vec<(String, LatencyHistogram)>);

/// A CPU hog: a thread spinning on `cpu` until dropped.
struct Hog {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Hog {
    fn start(cpu: u32) -> Hog {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::spawn(move || {
            let _ = latlab_sys::sched::pin_current_thread(cpu);
            let mut x = 0u64;
            while !s.load(Ordering::Relaxed) {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                std::hint::black_box(x);
            }
        });
        Hog {
            stop,
            handle: Some(handle),
        }
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The percentiles of the table.
fn table_percentiles() -> [Percentile; 4] {
    [
        Percentile::LADDER[0],
        Percentile::LADDER[2],
        Percentile::LADDER[3],
        Percentile::LADDER[4],
    ]
}

/// Runs the experiment, writing everything under `dir`; `progress` is told as each run
/// (configuration × receive mode) starts.
pub fn run(
    cfg: &KillerUsConfig,
    exe: &Path,
    dir: &Path,
    argv: Vec<String>,
    progress: &mut dyn latlab_core::progress::Progress,
) -> Result<Summary, ExperimentError> {
    let placement = if cfg.loopback {
        Placement::Loopback
    } else {
        Placement::Testbed
    };
    let _testbed = orchestrate::prepare(placement)?;
    std::fs::create_dir_all(dir).map_err(|source| latlab_core::results::ResultError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let (nf_cpu, gen_cpu) = orchestrate::cpus();
    let gen = (gen_cpu != nf_cpu).then_some(gen_cpu);
    let mut files = Vec::new();
    // (config, rx mode) -> result
    let mut runs: Vec<(String, String, ResultFile)> = Vec::new();
    let mut warnings = cfg.notes.clone();
    let mut tails = Vec::new();
    for step in STEPS {
        let conf = step.name;
        let nf_cfg = step.nf_config(placement, nf_cpu);
        let nf_json = step.describe(cfg.loopback, nf_cpu);
        for (rx, rx_io) in [("blocking", IoMode::Blocking), ("busy", IoMode::Busy)] {
            progress.step(
                &format!("NF {conf}, generator receive {rx}"),
                runs.len() as u64,
                STEPS.len() as u64 * 2,
            );
            let name = format!("{}.rx-{rx}", conf.replace('+', "-"));
            let nf_path = dir.join(format!("nf-{name}.json"));
            let probe_path = dir.join(format!("probe-{name}.json"));
            let hog = step.hog.then(|| Hog::start(nf_cpu));
            let nf = orchestrate::start_nf(exe, placement, &nf_cfg, &nf_path)?;
            let mut probe = placement.probe_config();
            probe.milli_pps = cfg.milli_pps;
            probe.duration = cfg.duration;
            probe.warmup = cfg.warmup;
            probe.rx_io = rx_io;
            probe.tx_cpu = gen;
            probe.rx_cpu = gen;
            // every source this host can give: hardware where the interfaces have it
            probe.sources = Sources::ALL;
            probe.hardware_optional = true;
            probe.explain = cfg.explain;
            let pr = ProbeJob {
                nf: Some(nf_json.clone()),
                ..ProbeJob::new(probe)
            };
            let res = orchestrate::run_probe(exe, placement, &pr, &probe_path);
            let nf_res = nf.finish();
            drop(hog);
            let res = res?;
            nf_res?;
            for w in &res.warnings {
                if w.contains("GENERATOR FELL BEHIND") || w.contains("lost") {
                    warnings.push(format!("{name}: {w}"));
                }
            }
            files.push(nf_path);
            files.push(probe_path);
            tails.extend(crate::explain::tail_line(&name, &res));
            runs.push((conf.to_string(), rx.to_string(), res));
        }
    }
    // summary histograms: method × config
    let mut out = ResultFile::new(
        RESULT_KIND,
        argv,
        serde_json::to_value(cfg).unwrap_or_default(),
        runs.first()
            .map(|(_, _, r)| r.provenance.clone())
            .unwrap_or_default(),
    );
    let mut data = KillerUsData {
        placement: if cfg.loopback { "loopback" } else { "testbed" }.into(),
        notes: cfg.notes.clone(),
        tails,
        ..Default::default()
    };
    let mut per_method: Vec<MethodCurves<'_>> = Vec::new();
    for (m, desc, rx, series_name) in METHODS {
        let mut curves = Vec::new();
        for conf in LADDER {
            let Some((_, _, r)) = runs.iter().find(|(c, x, _)| c == conf && x == rx) else {
                continue;
            };
            let Some(Ok(h)) = r.histogram(series_name) else {
                continue;
            };
            if h.count() == 0 {
                continue;
            }
            out.histograms.push(
                StoredHistogram::new(format!("{m}/{conf}"), &h)
                    .with_label("method", m)
                    .with_label("config", conf),
            );
            curves.push((conf.to_string(), h));
        }
        if !curves.is_empty() {
            per_method.push((m, desc, curves));
        }
    }
    for (m, _, curves) in &per_method {
        for (conf, h) in curves {
            data.rows.push(summary_row(m, conf, h));
        }
    }
    for conf in LADDER {
        let hs: Vec<&LatencyHistogram> = per_method
            .iter()
            .filter_map(|(_, _, c)| c.iter().find(|(k, _)| k == conf).map(|(_, h)| h))
            .collect();
        data.disagreement.push((
            conf.to_string(),
            disagreement(&hs, 1_000).map(|p| p.to_string()),
        ));
        let user: Vec<&LatencyHistogram> = per_method
            .iter()
            .filter(|(m, _, _)| m.starts_with("user-"))
            .filter_map(|(_, _, c)| c.iter().find(|(k, _)| k == conf).map(|(_, h)| h))
            .collect();
        data.disagreement_same_span.push((
            conf.to_string(),
            disagreement(&user, 1_000).map(|p| p.to_string()),
        ));
    }
    // figures (specifications; the caller draws them)
    let mut figures = Vec::new();
    for (m, desc, curves) in &per_method {
        let cs: Vec<Curve> = curves
            .iter()
            .map(|(conf, h)| Curve {
                label: conf.clone(),
                points: ccdf(h),
            })
            .collect();
        let path = dir.join(format!("ccdf-{m}.svg"));
        figures.push((
            path.clone(),
            Figure::Distribution {
                title: format!("killer-us: {desc} — one line per NF configuration"),
                kind: PlotKind::Ccdf,
                curves: cs,
            },
        ));
        data.figures.push(path.display().to_string());
        files.push(path);
    }
    data.files = files.iter().map(|p| p.display().to_string()).collect();
    out.warnings = warnings.clone();
    out.duration_ns = runs.iter().map(|(_, _, r)| r.duration_ns).sum();
    for (_, _, r) in &runs {
        out.add_counters(&r.counters);
    }
    out.data = serde_json::to_value(&data).unwrap_or_default();
    let summary_path = dir.join("killer-us.json");
    out.save(&summary_path)?;
    let saved = ResultFile::load(&summary_path)?;
    let table_text = render_table(&saved);
    let md = dir.join("summary.md");
    latlab_core::results::write_atomically(&md, table_text.as_bytes())?;
    let csv = dir.join("summary.csv");
    latlab_core::results::write_atomically(&csv, render_csv(&saved).as_bytes())?;
    files.push(summary_path);
    files.push(md);
    files.push(csv);
    Ok(Summary {
        table_text,
        warnings,
        files,
        figures,
    })
}

fn summary_row(method: &str, conf: &str, h: &LatencyHistogram) -> SummaryRow {
    SummaryRow {
        method: method.to_string(),
        config: conf.to_string(),
        count: h.count(),
        percentiles: table_percentiles()
            .iter()
            .map(|&p| (p.to_string(), h.value_at(p), is_supported(p, h.count())))
            .collect(),
        max_ns: h.max(),
    }
}

/// The lowest percentile of the ladder (p50 … p99.9999), supported by every histogram,
/// at which the largest and smallest values differ by more than `threshold_ns`. Pure.
pub fn disagreement(hs: &[&LatencyHistogram], threshold_ns: u64) -> Option<Percentile> {
    if hs.len() < 2 {
        return None;
    }
    let mut ladder = vec![Percentile::LADDER[0]];
    ladder.push(Percentile::from_fraction(90, 100).expect("valid"));
    ladder.extend_from_slice(&Percentile::LADDER[2..]);
    for p in ladder {
        if !hs.iter().all(|h| is_supported(p, h.count())) {
            return None;
        }
        let vals: Vec<u64> = hs.iter().map(|h| h.value_at(p)).collect();
        let (lo, hi) = (
            *vals.iter().min().unwrap_or(&0),
            *vals.iter().max().unwrap_or(&0),
        );
        if hi - lo > threshold_ns {
            return Some(p);
        }
    }
    None
}

/// The summary table as Markdown (pure).
pub fn render_table(r: &ResultFile) -> String {
    let Ok(d) = serde_json::from_value::<KillerUsData>(r.data.clone()) else {
        return String::new();
    };
    let mut s = format!(
        "# killer-us ({})\n\n| method | NF config | samples | p50 | p99 | p99.9 | p99.99 | max |\n|---|---|---:|---:|---:|---:|---:|---:|\n",
        d.placement
    );
    for row in &d.rows {
        let cells: Vec<String> = row
            .percentiles
            .iter()
            .map(|(_, v, ok)| {
                if *ok {
                    format_ns(*v as f64)
                } else {
                    format!("({}, unsupported)", format_ns(*v as f64))
                }
            })
            .collect();
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            row.method,
            row.config,
            row.count,
            cells.join(" | "),
            format_ns(row.max_ns as f64)
        ));
    }
    for (heading, list) in [
        ("\nAll methods disagree by more than 1 µs from (kernel and hardware leave the host stacks out):\n\n", &d.disagreement),
        ("\nThe user-space methods (same span, user send to user receive) disagree by more than 1 µs from:\n\n", &d.disagreement_same_span),
    ] {
        s.push_str(heading);
        for (conf, p) in list {
            s.push_str(&format!(
                "- {conf}: {}\n",
                p.as_deref()
                    .map(str::to_string)
                    .unwrap_or_else(|| "never (up to the highest supported percentile)".into())
            ));
        }
    }
    if !d.tails.is_empty() {
        s.push_str("\nOutside the system under test (time outside the kernel, the hypervisor's, in each run's samples above its p99):\n\n");
        for t in &d.tails {
            s.push_str(&format!("- {t}\n"));
        }
    }
    for n in &d.notes {
        s.push_str(&format!("\nNote: {n}\n"));
    }
    s
}

/// The CCDF curves of a `net.killer_us` result, grouped by method: for each method (in
/// [`METHODS`] order) its description and one `(NF configuration, points)` per ladder
/// step, points `(latency_ns, P(X > x))`. What the figures draw, for a report. Pure.
pub type MethodCcdf = (String, String, Vec<(String, Vec<(f64, f64)>)>);

/// See [`MethodCcdf`].
pub fn method_curves(r: &ResultFile) -> Vec<MethodCcdf> {
    let mut out = Vec::new();
    for (m, desc, _, _) in METHODS {
        let mut curves = Vec::new();
        for conf in LADDER {
            if let Some(Ok(h)) = r.histogram(&format!("{m}/{conf}")) {
                if h.count() > 0 {
                    curves.push((conf.to_string(), ccdf(&h)));
                }
            }
        }
        if !curves.is_empty() {
            out.push((m.to_string(), desc.to_string(), curves));
        }
    }
    out
}

/// The summary table as CSV (pure).
pub fn render_csv(r: &ResultFile) -> String {
    let Ok(d) = serde_json::from_value::<KillerUsData>(r.data.clone()) else {
        return String::new();
    };
    let mut s =
        String::from("method,config,samples,p50_ns,p99_ns,p99.9_ns,p99.99_ns,max_ns,unsupported\n");
    for row in &d.rows {
        let v: Vec<String> = row
            .percentiles
            .iter()
            .map(|(_, v, _)| v.to_string())
            .collect();
        let unsup: Vec<String> = row
            .percentiles
            .iter()
            .filter(|(_, _, ok)| !ok)
            .map(|(p, _, _)| p.clone())
            .collect();
        s.push_str(&format!(
            "{},{},{},{},{},{}\n",
            row.method,
            row.config,
            row.count,
            v.join(","),
            row.max_ns,
            unsup.join(" ")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_steps_are_the_ladder() {
        let names: Vec<&str> = STEPS.iter().map(|s| s.name).collect();
        assert_eq!(names, LADDER);
    }

    #[test]
    fn curves_and_tables_come_from_the_file_alone() {
        let mut h = LatencyHistogram::default();
        for i in 0..1000u64 {
            h.record(Nanos(1_000 + i));
        }
        let mut r = ResultFile::new(
            RESULT_KIND,
            vec![],
            serde_json::Value::Null,
            Default::default(),
        );
        r.histograms
            .push(StoredHistogram::new("kernel/default", &h));
        r.histograms.push(StoredHistogram::new("kernel/hog", &h));
        r.histograms
            .push(StoredHistogram::new("user-busy/pinned", &h));
        let mut d = KillerUsData::default();
        d.rows.push(summary_row("kernel", "default", &h));
        d.disagreement.push(("default".into(), None));
        r.data = serde_json::to_value(&d).unwrap();
        let c = method_curves(&r);
        let names: Vec<&str> = c.iter().map(|(m, _, _)| m.as_str()).collect();
        assert_eq!(names, vec!["user-busy", "kernel"]);
        assert_eq!(c[1].2.len(), 2);
        assert_eq!(c[1].2[0].0, "default");
        let t = render_table(&r);
        assert!(t.contains("| kernel | default | 1000 |"), "{t}");
        assert!(
            t.contains("unsupported"),
            "p99.99 of 1000 samples is unsupported: {t}"
        );
        let csv = render_csv(&r);
        assert_eq!(csv.lines().count(), 2);
    }

    #[test]
    fn disagreement_finds_the_first_percentile() {
        let mut a = LatencyHistogram::default();
        let mut b = LatencyHistogram::default();
        for i in 0..100_000u64 {
            a.record(Nanos(10_000 + i % 100));
            // same body, a tail 5 µs longer from p99.9 up
            b.record(Nanos(if i % 500 == 0 {
                30_000
            } else {
                10_000 + i % 100
            }));
        }
        assert_eq!(disagreement(&[&a, &a], 1_000), None);
        let p = disagreement(&[&a, &b], 1_000).unwrap();
        assert_eq!(p.to_string(), "p99.9");
    }
}

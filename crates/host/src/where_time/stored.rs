//! What a where-time run produced, how it is stored in the result file and read back, and
//! its normalisation to the zero-delay baseline.

use super::config::RESULT_KIND;
use latlab_net::delay::testbed;
use serde::{Deserialize, Serialize};

/// One benchmark run's raw figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RawRun {
    /// Added delay, ns.
    pub delay_ns: u64,
    /// Repeat index (0-based).
    pub repeat: u32,
    /// The metric (ops/s or requests/s).
    pub value: f64,
    /// Operations/requests completed.
    pub completed: u64,
    /// Errors the client reported (wrk socket errors + non-2xx; memcaslap get misses).
    pub errors: u64,
    /// Frames the injector dropped during the run (should be 0).
    pub injector_drops: u64,
}

/// All runs of one application.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppRuns {
    /// Application name.
    pub app: String,
    /// What `value` measures.
    pub metric: String,
    /// Every run, in execution order.
    pub runs: Vec<RawRun>,
    /// latlab's open-loop runs at a fixed offered load (`--open-loop-rate`), in execution
    /// order; absent when not asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open_loop: Vec<OpenLoopRun>,
}

/// One run of latlab's open-loop generator (`latlab net load`) at a fixed offered load.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpenLoopRun {
    /// Added delay, ns.
    pub delay_ns: u64,
    /// Repeat index (0-based).
    pub repeat: u32,
    /// Offered load, requests/s.
    pub offered_rps: f64,
    /// Measured requests sent per second.
    pub achieved_rps: f64,
    /// Median latency from the scheduled send, ns.
    pub p50_ns: u64,
    /// 99th percentile from the scheduled send, ns.
    pub p99_ns: u64,
    /// Measured answers.
    pub samples: u64,
    /// Requests sent late (every connection busy when they fell due).
    pub late: u64,
    /// Requests never sent, lost, timed out, unanswered or answered with an error.
    pub problems: u64,
    /// Geometric mean of the latency from the scheduled send, ns (what memcaslap prints in
    /// place of a median); absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geo_mean_ns: Option<u64>,
    /// Median latency from each request's actual send, ns: what a closed-loop client, which
    /// has no schedule, measures; absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual_p50_ns: Option<u64>,
    /// Geometric mean of the latency from the actual send, ns; absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual_geo_mean_ns: Option<u64>,
    /// Median of how late the generator sent (actual − scheduled send), ns; absent in
    /// older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lateness_p50_ns: Option<u64>,
    /// The closed-loop client's latency in the run just before, whose achieved rate this run
    /// offered (`--open-loop-rate peer`); absent at a fixed rate and in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<PeerLatency>,
}

/// Which figure a closed-loop client printed for its latency.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeerStatistic {
    /// The median (wrk `--latency`).
    Median,
    /// The geometric mean (memcaslap `-S`: it keeps no percentiles).
    GeometricMean,
}

impl PeerStatistic {
    /// In words, for tables.
    pub fn label(self) -> &'static str {
        match self {
            PeerStatistic::Median => "median",
            PeerStatistic::GeometricMean => "geometric mean",
        }
    }
}

/// A closed-loop client's own latency figure for one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerLatency {
    /// Which figure.
    pub statistic: PeerStatistic,
    /// Its value, ns.
    pub ns: u64,
}

impl OpenLoopRun {
    /// latlab's figure of the same kind as the peer's (its median beside wrk's, its
    /// geometric mean beside memcaslap's), when the run has a peer.
    pub fn like_peer_ns(&self) -> Option<u64> {
        match self.peer?.statistic {
            PeerStatistic::Median => Some(self.p50_ns),
            PeerStatistic::GeometricMean => self.geo_mean_ns,
        }
    }

    /// The same figure from each request's actual send, as the peer times its requests.
    pub fn like_peer_actual_ns(&self) -> Option<u64> {
        match self.peer?.statistic {
            PeerStatistic::Median => self.actual_p50_ns,
            PeerStatistic::GeometricMean => self.actual_geo_mean_ns,
        }
    }
}

/// The errors and injector drops of `runs`, summed.
pub fn problem_totals<'a>(runs: impl IntoIterator<Item = &'a RawRun>) -> (u64, u64) {
    runs.into_iter()
        .fold((0, 0), |(e, d), r| (e + r.errors, d + r.injector_drops))
}

/// One point of the normalised curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NormPoint {
    /// Added delay, ns.
    pub delay_ns: u64,
    /// Runs at this delay.
    pub n: usize,
    /// Mean of the runs / mean of the zero-delay runs.
    pub mean: f64,
    /// Sample standard deviation of the normalised runs (0 with one run).
    pub sd: f64,
    /// Smallest normalised run.
    pub min: f64,
    /// Largest normalised run.
    pub max: f64,
}

/// The `data` of a where-time result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WhereTimeData {
    /// Raw runs per application.
    pub apps: Vec<AppRuns>,
    /// The injector check before the experiment.
    pub injector: latlab_net::delay::report::CheckSummary,
    /// Which CPUs the injector and the endpoints ran on, and why (empty in older files).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub placement: String,
    /// The `/dev/cpu_dma_latency` target held during the injector check alone, µs
    /// (absent: not held by the check; older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_idle_held_us: Option<u32>,
}

/// Normalises an application's runs to its zero-delay mean; points in increasing delay.
/// `None` without zero-delay runs or with a zero baseline.
pub fn normalise(runs: &[RawRun]) -> Option<Vec<NormPoint>> {
    let base: Vec<f64> = runs
        .iter()
        .filter(|r| r.delay_ns == 0)
        .map(|r| r.value)
        .collect();
    if base.is_empty() {
        return None;
    }
    let b = base.iter().sum::<f64>() / base.len() as f64;
    if b <= 0.0 || !b.is_finite() {
        return None;
    }
    let mut delays: Vec<u64> = runs.iter().map(|r| r.delay_ns).collect();
    delays.sort_unstable();
    delays.dedup();
    Some(
        delays
            .into_iter()
            .map(|d| {
                let v: Vec<f64> = runs
                    .iter()
                    .filter(|r| r.delay_ns == d)
                    .map(|r| r.value / b)
                    .collect();
                let n = v.len();
                let mean = v.iter().sum::<f64>() / n as f64;
                let sd = if n > 1 {
                    (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
                } else {
                    0.0
                };
                NormPoint {
                    delay_ns: d,
                    n,
                    mean,
                    sd,
                    min: v.iter().copied().fold(f64::INFINITY, f64::min),
                    max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                }
            })
            .collect(),
    )
}

/// A closed-loop client counts as not saturated at a delay where it achieved at most this
/// share of its own zero-delay throughput (same repeat). Its CPU work per request does not
/// depend on the delay, so at half its zero-delay throughput it spends at least half of its
/// time waiting for answers, as an open-loop client at the same rate does.
pub const UNSATURATED_SHARE: f64 = 0.5;

/// The comparison's tolerance: latlab's figure within this fraction of the peer's.
pub const PEER_TOLERANCE: f64 = 0.10;

/// One open-loop run at a closed-loop client's own rate, beside that client's latency.
#[derive(Clone, Debug, PartialEq)]
pub struct PeerPoint {
    /// Added delay, ns.
    pub delay_ns: u64,
    /// Repeat index.
    pub repeat: u32,
    /// The peer's throughput over its zero-delay throughput in the same repeat (`None`
    /// without a zero-delay run in that repeat).
    pub peer_share: Option<f64>,
    /// latlab's offered rate, requests/s.
    pub offered_rps: f64,
    /// latlab's offered rate over the peer's achieved rate at this delay and repeat (1 at
    /// the same offered load; `None` without the peer's run).
    pub load_ratio: Option<f64>,
    /// The peer's figure.
    pub peer: PeerLatency,
    /// latlab's figure of the same kind from each request's scheduled send, ns.
    pub latlab_ns: u64,
    /// The same from each request's actual send (how the peer times), ns; `None` in
    /// older files.
    pub latlab_actual_ns: Option<u64>,
}

impl PeerPoint {
    /// latlab's figure (from the schedule) over the peer's, minus one.
    pub fn difference(&self) -> f64 {
        self.over_peer(self.latlab_ns)
    }

    /// latlab's figure from the actual send over the peer's, minus one.
    pub fn difference_actual(&self) -> Option<f64> {
        self.latlab_actual_ns.map(|v| self.over_peer(v))
    }

    fn over_peer(&self, ns: u64) -> f64 {
        ns as f64 / self.peer.ns.max(1) as f64 - 1.0
    }

    /// Whether the peer ran at most at [`UNSATURATED_SHARE`] of its zero-delay throughput.
    pub fn unsaturated(&self) -> bool {
        self.peer_share.is_some_and(|s| s <= UNSATURATED_SHARE)
    }
}

/// Every open-loop run of `a` that has a peer figure, in execution order.
pub fn peer_points(a: &AppRuns) -> Vec<PeerPoint> {
    let value = |d: u64, rep: u32| {
        a.runs
            .iter()
            .find(|r| r.delay_ns == d && r.repeat == rep)
            .map(|r| r.value)
    };
    a.open_loop
        .iter()
        .filter_map(|o| {
            Some(PeerPoint {
                delay_ns: o.delay_ns,
                repeat: o.repeat,
                peer_share: value(o.delay_ns, o.repeat)
                    .zip(value(0, o.repeat))
                    .filter(|(_, b)| *b > 0.0)
                    .map(|(v, b)| v / b),
                offered_rps: o.offered_rps,
                load_ratio: value(o.delay_ns, o.repeat)
                    .filter(|v| *v > 0.0)
                    .map(|v| o.offered_rps / v),
                peer: o.peer?,
                latlab_ns: o.like_peer_ns()?,
                latlab_actual_ns: o.like_peer_actual_ns(),
            })
        })
        .collect()
}

/// One sentence on `a`'s comparison where its peer was not saturated, when it has peer
/// points: how many, the range of differences, and how many within [`PEER_TOLERANCE`].
pub fn peer_summary(a: &AppRuns) -> Option<String> {
    let all = peer_points(a);
    let first = all.first()?;
    let what = first.peer.statistic.label();
    let ok: Vec<&PeerPoint> = all.iter().filter(|p| p.unsaturated()).collect();
    if ok.is_empty() {
        return Some(format!(
            "{}: at the peer's own rate, no point where the peer ran at or below {:.0} % of its zero-delay throughput (add larger delays)",
            a.app,
            UNSATURATED_SHARE * 100.0
        ));
    }
    let range = |d: &[f64]| {
        let lo = d.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = d.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let within = d.iter().filter(|x| x.abs() <= PEER_TOLERANCE).count();
        format!(
            "{:+.1} % to {:+.1} % (within {:.0} % in {within} of {})",
            lo * 100.0,
            hi * 100.0,
            PEER_TOLERANCE * 100.0,
            d.len()
        )
    };
    let sched: Vec<f64> = ok.iter().map(|p| p.difference()).collect();
    let actual: Vec<f64> = ok.iter().filter_map(|p| p.difference_actual()).collect();
    let from_send = if actual.is_empty() {
        String::new()
    } else {
        format!(
            "; from each request's actual send, as the peer times its own: {}",
            range(&actual)
        )
    };
    // At the same offered load unless latlab offered a fraction of the peer's rate.
    let at = match ok[0].load_ratio {
        Some(r) if (r - 1.0).abs() > 0.01 => format!("at {r:.2} × the peer's own rate"),
        _ => "at the peer's own rate".to_string(),
    };
    Some(format!(
        "{}: {at} where the peer ran at or below {:.0} % of its zero-delay throughput ({} runs), latlab's {what} from the scheduled send differs from the peer's by {}{from_send}",
        a.app,
        UNSATURATED_SHARE * 100.0,
        ok.len(),
        range(&sched),
    ))
}

/// The paper's reported drops (fraction of the baseline lost) for comparison:
/// `(application, delay µs, drop)`.
/// The paper's text gives TPC-C's loss at 100 µs only.
pub const PAPER_DROPS: [(&str, u64, f64); 4] = [
    ("memcached", 20, 0.25),
    ("memcached", 100, 0.75),
    ("apache (here: nginx)", 100, 0.46),
    ("tpc-c on mysql (here: postgresql)", 100, 0.03),
];

/// Everything an experiment produced.
#[derive(Debug)]
pub struct WhereTimeOutcome {
    /// Raw runs per application.
    pub apps: Vec<AppRuns>,
    /// The injector check.
    pub check: testbed::CheckOutcome,
    /// Which CPUs the injector and the endpoints ran on, and why.
    pub placement: String,
    /// The target held during the check alone, µs.
    pub check_idle_held_us: Option<u32>,
    /// With explain (the default as root): the injector's stalls during its check,
    /// attributed to their causes.
    pub explained: Option<(
        latlab_core::results::Attribution,
        latlab_net::explain::ExplainData,
    )>,
    /// What the kernel-event recorder had to say (e.g. why it could not run).
    pub notices: Vec<String>,
}

/// Fills the result: the injector check's histograms, a self-check of its median shift at
/// every delay it measured ([`super::injector::shift_verdicts`]), every raw run in `data`,
/// counters of runs, errors and injector drops, and warnings.
///
/// # Errors
/// When the check's histograms cannot be merged.
pub fn fill_result(
    r: &mut latlab_core::results::ResultFile,
    o: &WhereTimeOutcome,
) -> Result<(), latlab_core::hist::HistError> {
    latlab_net::delay::report::fill_check(
        r,
        &o.check,
        &latlab_net::delay::DelaySpec::Constant {
            ns: super::injector::CHECK_DELAY_NS,
        },
    )?;
    let check: latlab_net::delay::report::CheckData =
        serde_json::from_value(r.data.clone()).expect("fill_check wrote CheckData");
    r.self_checks
        .extend(super::injector::shift_verdicts(&check.summary));
    for a in &o.apps {
        let (errors, drops) = problem_totals(&a.runs);
        r.counters
            .insert(format!("{}.runs", a.app), a.runs.len() as u64);
        r.counters.insert(format!("{}.errors", a.app), errors);
        r.counters
            .insert(format!("{}.injector_drops", a.app), drops);
        if errors > 0 {
            r.warnings.push(format!(
                "{}: the benchmark client reported {errors} errors",
                a.app
            ));
        }
        if drops > 0 {
            r.warnings.push(format!(
                "{}: the injector dropped {drops} frames during its runs",
                a.app
            ));
        }
    }
    r.data = serde_json::to_value(WhereTimeData {
        apps: o.apps.clone(),
        injector: check.summary,
        placement: o.placement.clone(),
        check_idle_held_us: o.check_idle_held_us,
    })
    .expect("plain data serialises");
    if let Some((attr, data)) = &o.explained {
        latlab_net::explain::record(r, attr.clone(), data.clone());
    }
    r.warnings
        .extend(o.notices.iter().map(|n| format!("explain: {n}")));
    Ok(())
}

/// Reads the data of a where-time result.
///
/// # Errors
/// A message for another kind or malformed data.
pub fn data(r: &latlab_core::results::ResultFile) -> Result<WhereTimeData, String> {
    if r.kind != RESULT_KIND {
        return Err(format!(
            "result kind is '{}', expected '{RESULT_KIND}'",
            r.kind
        ));
    }
    serde_json::from_value(r.data.clone()).map_err(|e| e.to_string())
}

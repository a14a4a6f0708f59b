//! The breakdown's result file: what a run stores in it, and the table read back from it.

use super::classify::{self, ClassRule, Classification};
use super::config::{Step, StepOutcome, RESULT_KIND};
use super::decompose::{self, Decomposition};
use latlab_core::parse::Percentile;
use latlab_core::results::{ResultFile, StoredHistogram};
use latlab_core::stats::is_supported;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Facts about one measured step, kept in the result's `data`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepFacts {
    /// Step name (= histogram name).
    pub name: String,
    /// What one sample is.
    pub description: String,
    /// Samples recorded.
    pub samples: u64,
    /// Measured wall time, ns.
    pub elapsed_ns: u64,
    /// Client / single-thread CPU.
    pub client_cpu: Option<u32>,
    /// Server CPU.
    pub server_cpu: Option<u32>,
    /// Good / Bad / Ugly with its reason.
    pub classification: Classification,
}

/// A step that was not measured, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SkippedStep {
    /// Step name.
    pub name: String,
    /// Why.
    pub reason: String,
}

/// The kind-specific `data` of a `host.breakdown` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BreakdownData {
    /// Measured steps, in run order.
    pub steps: Vec<StepFacts>,
    /// Steps not measured.
    pub skipped: Vec<SkippedStep>,
    /// The class rule applied.
    pub rule: ClassRule,
    /// The UDP loopback round trips decomposed (see [`decompose`]).
    pub decomposition: Vec<Decomposition>,
}

/// Stores every outcome's histogram (named after the step), the class of each, skipped
/// steps as warnings, and the decomposition into `result`.
pub fn fill_result(
    result: &mut ResultFile,
    outcomes: &[StepOutcome],
    skipped: &[(Step, String)],
    rule: &ClassRule,
) {
    let mut steps = Vec::new();
    let mut medians = BTreeMap::new();
    for o in outcomes {
        let name = o.step.name();
        result.histograms.push(
            StoredHistogram::new(name, &o.hist)
                .with_label("step", name)
                .with_label("measures", o.step.description()),
        );
        result
            .counters
            .insert(format!("{name}.saturated"), o.hist.saturated());
        let Some(classification) = classify::classify(&o.hist, rule) else {
            result
                .warnings
                .push(format!("{name}: no samples were recorded"));
            continue;
        };
        medians.insert(name.to_string(), classification.p50_ns);
        steps.push(StepFacts {
            name: name.to_string(),
            description: o.step.description().to_string(),
            samples: o.samples,
            elapsed_ns: o.elapsed.get(),
            client_cpu: o.client_cpu,
            server_cpu: o.server_cpu,
            classification,
        });
    }
    for (s, why) in skipped {
        result
            .warnings
            .push(format!("{}: not measured: {why}", s.name()));
    }
    let data = BreakdownData {
        steps,
        skipped: skipped
            .iter()
            .map(|(s, r)| SkippedStep {
                name: s.name().to_string(),
                reason: r.clone(),
            })
            .collect(),
        rule: *rule,
        decomposition: decompose::decompose_udp(&medians),
    };
    result.data = serde_json::to_value(data).expect("plain data serialises");
}

/// One row of the breakdown table, from a loaded result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableRow {
    /// Step name.
    pub step: String,
    /// What one sample is.
    pub description: String,
    /// Median, ns.
    pub p50_ns: u64,
    /// p99, ns.
    pub p99_ns: u64,
    /// p99.99, ns; `None` when fewer samples than needed to support it.
    pub p9999_ns: Option<u64>,
    /// Maximum, ns.
    pub max_ns: u64,
    /// Samples.
    pub samples: u64,
    /// Good, Bad or Ugly.
    pub class: classify::Class,
    /// The rule's reason.
    pub reason: String,
}

/// Errors reading a breakdown result back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// Not a `host.breakdown` result.
    #[error("result kind is '{0}', expected '{RESULT_KIND}'")]
    WrongKind(String),
    /// `data` does not parse.
    #[error("the result's data is not a breakdown: {0}")]
    Data(#[from] serde_json::Error),
    /// A histogram is missing or does not decode.
    #[error("histogram '{0}': {1}")]
    Histogram(String, String),
}

/// Reads the kind-specific data of a breakdown result.
///
/// # Errors
/// [`ReadError`] for another kind or malformed data.
pub fn data(r: &ResultFile) -> Result<BreakdownData, ReadError> {
    if r.kind != RESULT_KIND {
        return Err(ReadError::WrongKind(r.kind.clone()));
    }
    Ok(serde_json::from_value(r.data.clone())?)
}

/// The breakdown table (one row per measured step, in run order), computed from the
/// result's histograms.
///
/// # Errors
/// [`ReadError`] for another kind, malformed data or a missing histogram.
pub fn table(r: &ResultFile) -> Result<Vec<TableRow>, ReadError> {
    let d = data(r)?;
    let p9999 = Percentile::LADDER[4];
    let mut rows = Vec::new();
    for s in &d.steps {
        let h = r
            .histogram(&s.name)
            .ok_or_else(|| ReadError::Histogram(s.name.clone(), "missing".into()))?
            .map_err(|e| ReadError::Histogram(s.name.clone(), e.to_string()))?;
        let c = classify::classify(&h, &d.rule)
            .ok_or_else(|| ReadError::Histogram(s.name.clone(), "empty".into()))?;
        rows.push(TableRow {
            step: s.name.clone(),
            description: s.description.clone(),
            p50_ns: c.p50_ns,
            p99_ns: c.p99_ns,
            p9999_ns: is_supported(p9999, h.count()).then(|| h.value_at(p9999)),
            max_ns: h.max(),
            samples: h.count(),
            class: c.class,
            reason: c.reason,
        });
    }
    Ok(rows)
}

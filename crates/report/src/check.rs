//! Latency budgets for CI: `p99.99 < 50us`, `max < 1ms`, `lost == 0`.
//!
//! A budget is `[SERIES:]METRIC OP VALUE`:
//! - METRIC is a percentile (`p50`, `p99.99`, …), `min`, `max`, `mean` (compared with a
//!   duration such as `250ns`, `50us`, `1.5ms`), `count` (samples, an integer),
//!   `self_checks_failed` (how many of the run's self-checks failed, an integer: `latlab
//!   check run.json 'self_checks_failed == 0'` gates CI on them), or the name of one of the
//!   result's counters (`lost`, `malformed`, …; an integer);
//! - OP is one of `<`, `<=`, `>`, `>=`, `==`, `!=`;
//! - SERIES (a histogram name) restricts a latency metric to that histogram; without it the
//!   budget must hold for every histogram of the result.
//!
//! A percentile the sample count cannot support is an error, not a pass or a failure: the
//! data cannot say. Budgets can also be read from a TOML file: `budgets = ["p99 < 20us", …]`.

use crate::input::Input;
use latlab_core::parse::{parse_duration, parse_percentile, Percentile};
use latlab_core::stats::summarize;
use latlab_core::units::format_ns;
use serde::Deserialize;
use std::fmt;
use std::path::Path;

/// The accepted form, quoted in every parse error.
pub const BUDGET_FORM: &str = "expected [SERIES:]METRIC OP VALUE, e.g. 'p99.99 < 50us', 'max < 1ms', 'lost == 0', 'rdtsc:p50 <= 30ns', 'self_checks_failed == 0' (METRIC: pNN, min, max, mean, count, self_checks_failed or a counter name; OP: < <= > >= == !=)";

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl Op {
    fn holds(self, observed: f64, limit: f64) -> bool {
        match self {
            Op::Lt => observed < limit,
            Op::Le => observed <= limit,
            Op::Gt => observed > limit,
            Op::Ge => observed >= limit,
            Op::Eq => observed == limit,
            Op::Ne => observed != limit,
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Eq => "==",
            Op::Ne => "!=",
        })
    }
}

/// What a budget constrains.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Metric {
    /// A latency percentile.
    Percentile(Percentile),
    /// Smallest latency.
    Min,
    /// Largest latency.
    Max,
    /// Mean latency.
    Mean,
    /// Number of samples.
    Count,
    /// A counter of the result (lost, dropped, …).
    Counter(String),
    /// How many of the result's self-checks failed.
    SelfChecksFailed,
}

impl Metric {
    fn is_latency(&self) -> bool {
        matches!(
            self,
            Metric::Percentile(_) | Metric::Min | Metric::Max | Metric::Mean
        )
    }
}

/// One parsed budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budget {
    /// The text as given.
    pub text: String,
    /// Histogram the budget applies to; `None`: every histogram.
    pub series: Option<String>,
    /// What is constrained.
    pub metric: Metric,
    /// How.
    pub op: Op,
    /// The limit: nanoseconds for latency metrics, a plain number otherwise.
    pub limit: u64,
}

/// Errors parsing or evaluating budgets; all are bad input (exit 2 at the CLI).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    /// The budget text is malformed.
    #[error("budget '{text}': {reason}; {BUDGET_FORM}")]
    Malformed {
        /// The budget as given.
        text: String,
        /// What is wrong.
        reason: String,
    },
    /// The budget file is unreadable or malformed.
    #[error("{path}: {detail}")]
    File {
        /// The file.
        path: String,
        /// What is wrong.
        detail: String,
    },
    /// The sample count does not support the percentile.
    #[error("budget '{text}': {percentile} of '{series}' is not supported by its {count} samples (needs {needed}): the data cannot decide this budget")]
    Unsupported {
        /// The budget as given.
        text: String,
        /// The percentile.
        percentile: Percentile,
        /// The histogram.
        series: String,
        /// Its sample count.
        count: u64,
        /// The count that would support it.
        needed: u64,
    },
    /// The budget names a histogram or counter the result does not have.
    #[error("budget '{text}': {input} has no {what} (it has: {available})")]
    Missing {
        /// The budget as given.
        text: String,
        /// The input's label.
        input: String,
        /// What is missing.
        what: String,
        /// What the input has.
        available: String,
    },
}

/// Parses one budget.
///
/// # Errors
/// [`CheckError::Malformed`], naming the budget and the accepted form.
pub fn parse_budget(text: &str) -> Result<Budget, CheckError> {
    let bad = |reason: &str| CheckError::Malformed {
        text: text.to_string(),
        reason: reason.to_string(),
    };
    let t = text.trim();
    let ops = ["<=", ">=", "==", "!=", "<", ">"];
    let (pos, op_str) = ops
        .iter()
        .filter_map(|o| t.find(o).map(|i| (i, *o)))
        .min_by_key(|(i, o)| (*i, std::cmp::Reverse(o.len())))
        .ok_or_else(|| bad("no comparison operator"))?;
    let op = match op_str {
        "<=" => Op::Le,
        ">=" => Op::Ge,
        "==" => Op::Eq,
        "!=" => Op::Ne,
        "<" => Op::Lt,
        _ => Op::Gt,
    };
    let lhs = t[..pos].trim();
    let rhs = t[pos + op_str.len()..].trim();
    if lhs.is_empty() {
        return Err(bad("nothing before the operator"));
    }
    if rhs.is_empty() {
        return Err(bad("no value after the operator"));
    }
    let (series, metric_text) = match lhs.rsplit_once(':') {
        Some((s, m)) if !s.trim().is_empty() => (Some(s.trim().to_string()), m.trim()),
        Some(_) => return Err(bad("empty series name before ':'")),
        None => (None, lhs),
    };
    let metric = match metric_text {
        "min" => Metric::Min,
        "max" => Metric::Max,
        "mean" => Metric::Mean,
        "count" | "samples" => Metric::Count,
        "self_checks_failed" => Metric::SelfChecksFailed,
        m if m.starts_with('p') && m[1..].starts_with(|c: char| c.is_ascii_digit()) => {
            Metric::Percentile(parse_percentile(m).map_err(|e| bad(&e.to_string()))?)
        }
        m if !m.is_empty()
            && m.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)) =>
        {
            Metric::Counter(m.to_string())
        }
        _ => return Err(bad(&format!("'{metric_text}' is not a metric"))),
    };
    if series.is_some() && !metric.is_latency() && metric != Metric::Count {
        return Err(bad(
            "a series can only be given for latency metrics and count",
        ));
    }
    let limit = if metric.is_latency() {
        parse_duration(rhs).map_err(|e| bad(&e.to_string()))?.get()
    } else {
        rhs.replace('_', "")
            .parse::<u64>()
            .map_err(|_| bad(&format!("'{rhs}' is not a whole number")))?
    };
    Ok(Budget {
        text: t.to_string(),
        series,
        metric,
        op,
        limit,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BudgetFile {
    budgets: Vec<String>,
}

/// Parses a TOML budget file: `budgets = ["p99.99 < 50us", "lost == 0"]`.
///
/// # Errors
/// [`CheckError::File`] for bad TOML, [`CheckError::Malformed`] for a bad budget.
pub fn parse_budget_file(text: &str, path: &Path) -> Result<Vec<Budget>, CheckError> {
    let f: BudgetFile = toml::from_str(text).map_err(|e| CheckError::File {
        path: path.display().to_string(),
        detail: format!(
            "not a budget file ({}); expected budgets = [\"p99.99 < 50us\", ...]",
            e.message()
        ),
    })?;
    f.budgets.iter().map(|b| parse_budget(b)).collect()
}

/// One budget applied to one histogram (or to the result's counters).
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The budget.
    pub budget: String,
    /// The histogram it was applied to (empty for counters).
    pub series: String,
    /// What was observed, formatted.
    pub observed: String,
    /// Whether the budget holds.
    pub holds: bool,
}

/// Evaluates `budget` against `input`.
///
/// # Errors
/// [`CheckError::Unsupported`] when a percentile is not supported by the sample count,
/// [`CheckError::Missing`] for an unknown histogram or counter.
pub fn evaluate(budget: &Budget, input: &Input) -> Result<Vec<Outcome>, CheckError> {
    let r = &input.merged;
    if budget.metric == Metric::SelfChecksFailed {
        if r.self_checks.is_empty() {
            return Err(CheckError::Missing {
                text: budget.text.clone(),
                input: input.label.clone(),
                what: "self-checks".into(),
                available: format!("a {} result that records none", r.kind),
            });
        }
        let failed: Vec<&str> = r
            .self_checks
            .iter()
            .filter(|v| v.outcome == latlab_core::selfcheck::Outcome::Fail)
            .map(|v| v.check.as_str())
            .collect();
        let n = failed.len();
        return Ok(vec![Outcome {
            budget: budget.text.clone(),
            series: String::new(),
            observed: if failed.is_empty() {
                format!("self_checks_failed = 0 of {}", r.self_checks.len())
            } else {
                format!(
                    "self_checks_failed = {n} of {} ({})",
                    r.self_checks.len(),
                    failed.join(", ")
                )
            },
            holds: budget.op.holds(n as f64, budget.limit as f64),
        }]);
    }
    if let Metric::Counter(name) = &budget.metric {
        let Some(v) = r.counters.get(name) else {
            let mut names: Vec<&str> = r.counters.keys().map(String::as_str).collect();
            if names.is_empty() {
                names.push("no counters");
            }
            return Err(CheckError::Missing {
                text: budget.text.clone(),
                input: input.label.clone(),
                what: format!("counter '{name}'"),
                available: names.join(", "),
            });
        };
        return Ok(vec![Outcome {
            budget: budget.text.clone(),
            series: String::new(),
            observed: format!("{name} = {v}"),
            holds: budget.op.holds(*v as f64, budget.limit as f64),
        }]);
    }
    let names: Vec<&str> = r.histograms.iter().map(|h| h.name.as_str()).collect();
    let selected: Vec<&str> = match &budget.series {
        Some(s) => {
            if !names.contains(&s.as_str()) {
                return Err(CheckError::Missing {
                    text: budget.text.clone(),
                    input: input.label.clone(),
                    what: format!("histogram '{s}'"),
                    available: names.join(", "),
                });
            }
            vec![s.as_str()]
        }
        None => names.clone(),
    };
    if selected.is_empty() {
        return Err(CheckError::Missing {
            text: budget.text.clone(),
            input: input.label.clone(),
            what: "histogram".into(),
            available: "none".into(),
        });
    }
    let mut out = Vec::new();
    for name in selected {
        let h = r
            .histogram(name)
            .expect("name from this result")
            .map_err(|e| CheckError::File {
                path: input.label.clone(),
                detail: format!("histogram '{name}': {e}"),
            })?;
        let (value, shown): (f64, String) = match &budget.metric {
            Metric::Count => (h.count() as f64, format!("{} samples", h.count())),
            Metric::Min => (h.min() as f64, format!("min {}", format_ns(h.min() as f64))),
            Metric::Max => (h.max() as f64, format!("max {}", format_ns(h.max() as f64))),
            Metric::Mean => (h.mean(), format!("mean {}", format_ns(h.mean()))),
            Metric::Percentile(p) => {
                let s = summarize(&h, &[*p], 0.95);
                let e = &s.percentiles[0];
                if !e.supported {
                    return Err(CheckError::Unsupported {
                        text: budget.text.clone(),
                        percentile: *p,
                        series: name.to_string(),
                        count: s.count,
                        needed: crate::html::min_samples(*p),
                    });
                }
                let ci = match (e.ci_low_ns, e.ci_high_ns) {
                    (Some(lo), Some(hi)) => format!(
                        " (95% CI {} – {})",
                        format_ns(lo as f64),
                        format_ns(hi as f64)
                    ),
                    _ => String::new(),
                };
                (
                    e.value_ns as f64,
                    format!("{p} {}{ci}", format_ns(e.value_ns as f64)),
                )
            }
            Metric::Counter(_) | Metric::SelfChecksFailed => unreachable!("handled above"),
        };
        out.push(Outcome {
            budget: budget.text.clone(),
            series: name.to_string(),
            observed: shown,
            holds: budget.op.holds(value, budget.limit as f64),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::hist::{HistConfig, LatencyHistogram};
    use latlab_core::results::{Provenance, ResultFile, StoredHistogram};
    use latlab_core::units::Nanos;
    use std::path::PathBuf;

    #[test]
    fn budgets_parse_in_the_documented_forms() {
        let b = parse_budget("p99.99 < 50us").unwrap();
        assert_eq!(b.op, Op::Lt);
        assert_eq!(b.limit, 50_000);
        assert!(matches!(b.metric, Metric::Percentile(p) if p.to_string() == "p99.99"));
        assert_eq!(parse_budget("max<1ms").unwrap().limit, 1_000_000);
        let b = parse_budget("lost == 0").unwrap();
        assert_eq!(
            (b.metric, b.op, b.limit),
            (Metric::Counter("lost".into()), Op::Eq, 0)
        );
        let b = parse_budget(" rdtsc:p50 <= 30ns ").unwrap();
        assert_eq!(b.series.as_deref(), Some("rdtsc"));
        assert_eq!(b.op, Op::Le);
        assert_eq!(parse_budget("count >= 1_000").unwrap().limit, 1000);
        assert_eq!(parse_budget("x:min != 5ns").unwrap().op, Op::Ne);
    }

    #[test]
    fn malformed_budgets_name_the_budget_and_the_form() {
        for bad in [
            "p99.99 50us",
            "p99.99 <",
            "< 5us",
            "p99.99 < 5xs",
            "p200 < 1us",
            "lost == 1.5",
            "!! < 3",
            ":p50 < 1us",
            "lost:rdtsc == 0",
        ] {
            let e = parse_budget(bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("budget '{}'", bad.trim())), "{e}");
            assert!(e.contains("expected [SERIES:]METRIC OP VALUE"), "{e}");
        }
    }

    fn input() -> Input {
        let mut r = ResultFile::new("k", vec![], serde_json::Value::Null, Provenance::default());
        for (name, base) in [("fast", 100), ("slow", 1000)] {
            let mut h = LatencyHistogram::new(HistConfig::default()).unwrap();
            for i in 0..10_000u64 {
                h.record(Nanos(base + i % 100));
            }
            r.histograms.push(StoredHistogram::new(name, &h));
        }
        r.counters.insert("lost".into(), 2);
        Input::single(PathBuf::from("r.json"), r)
    }

    #[test]
    fn budgets_hold_or_fail_per_histogram() {
        let i = input();
        let o = evaluate(&parse_budget("p99 < 500ns").unwrap(), &i).unwrap();
        assert_eq!(o.iter().map(|o| o.holds).collect::<Vec<_>>(), [true, false]);
        let o = evaluate(&parse_budget("fast:max < 200ns").unwrap(), &i).unwrap();
        assert_eq!(o.len(), 1);
        assert!(o[0].holds, "{o:?}");
        let o = evaluate(&parse_budget("lost == 0").unwrap(), &i).unwrap();
        assert!(!o[0].holds && o[0].observed == "lost = 2");
        assert!(evaluate(&parse_budget("lost <= 2").unwrap(), &i).unwrap()[0].holds);
    }

    #[test]
    fn failed_self_checks_gate_like_a_counter() {
        let b = parse_budget("self_checks_failed == 0").unwrap();
        assert_eq!(b.metric, Metric::SelfChecksFailed);
        // a result without self-checks cannot decide this budget
        let e = evaluate(&b, &input()).unwrap_err().to_string();
        assert!(e.contains("has no self-checks"), "{e}");
        let mut i = input();
        i.merged.self_checks = vec![
            latlab_core::selfcheck::throughput(9_000.0, 10_000.0, "pps"),
            latlab_core::selfcheck::throughput(10_000.0, 10_000.0, "pps"),
        ];
        let o = evaluate(&b, &i).unwrap();
        assert!(!o[0].holds);
        assert_eq!(o[0].observed, "self_checks_failed = 1 of 2 (throughput)");
        i.merged.self_checks.remove(0);
        let o = evaluate(&b, &i).unwrap();
        assert!(o[0].holds, "{o:?}");
        assert!(parse_budget("x:self_checks_failed == 0").is_err());
    }

    #[test]
    fn unsupported_percentiles_and_unknown_names_are_errors() {
        let i = input();
        let e = evaluate(&parse_budget("p99.99 < 1ms").unwrap(), &i).unwrap_err();
        assert!(
            matches!(
                e,
                CheckError::Unsupported {
                    count: 10_000,
                    needed: 100_000,
                    ..
                }
            ),
            "{e}"
        );
        let e = evaluate(&parse_budget("dropped == 0").unwrap(), &i)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no counter 'dropped'") && e.contains("lost"),
            "{e}"
        );
        let e = evaluate(&parse_budget("nope:p50 < 1ms").unwrap(), &i)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no histogram 'nope'") && e.contains("fast, slow"),
            "{e}"
        );
    }

    #[test]
    fn budget_files_are_toml() {
        let b = parse_budget_file(
            "budgets = [\"p99 < 5us\", \"lost == 0\"]\n",
            Path::new("b.toml"),
        )
        .unwrap();
        assert_eq!(b.len(), 2);
        let e = parse_budget_file("budget = 3", Path::new("b.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("b.toml: not a budget file"), "{e}");
        let e = parse_budget_file("budgets = [\"p99 <\"]", Path::new("b.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("budget 'p99 <'"), "{e}");
    }
}

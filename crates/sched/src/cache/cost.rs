//! The cost model: the paper's formula and ours, the trials and rows of a sweep, and
//! the Figure 5 series.

use serde::{Deserialize, Serialize};

/// The result kind of a cache-cost sweep.
pub const KIND: &str = "sched.cache_cost";

/// The paper's formula: cost per switch in ns, from the work done alone (`w1`), the work
/// done by N threads together (`wn`), the run length `t_ns` and the number of switches
/// `n_switches` in the N-thread run. `None` without switches or work. Pure.
pub fn cost_per_switch(w1: u64, wn: u64, t_ns: u64, n_switches: u64) -> Option<f64> {
    if w1 == 0 || n_switches == 0 {
        return None;
    }
    let lost = (w1 as f64 - wn as f64) / w1 as f64;
    Some(lost * t_ns as f64 / n_switches as f64)
}

/// The same cost with work rates per CPU-second actually received (from the trace), so
/// that other load on the machine cancels out: f = 1 − (wn/cpu_n)/(w1/cpu_1) is the
/// fraction of work lost, and f·cpu_n/N the cost per switch. On an otherwise idle CPU,
/// cpu_1 = cpu_n = T and this is the paper's formula. Pure.
pub fn cost_per_switch_cpu(
    w1: u64,
    cpu1_ns: u64,
    wn: u64,
    cpun_ns: u64,
    n_switches: u64,
) -> Option<f64> {
    if w1 == 0 || cpu1_ns == 0 || cpun_ns == 0 || n_switches == 0 {
        return None;
    }
    let r1 = w1 as f64 / cpu1_ns as f64;
    let rn = wn as f64 / cpun_ns as f64;
    Some((1.0 - rn / r1) * cpun_ns as f64 / n_switches as f64)
}

/// Two-sided 95% Student-t quantile for `df` degrees of freedom. Pure.
pub fn t95(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => T[df - 1],
        31..=60 => 2.000,
        61..=120 => 1.980,
        _ => 1.960,
    }
}

/// Mean and 95% confidence interval half-width of `x` (t-test, as the paper). Pure.
pub fn mean_ci95(x: &[f64]) -> Option<(f64, f64)> {
    if x.is_empty() {
        return None;
    }
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    if x.len() == 1 {
        return Some((mean, f64::INFINITY));
    }
    let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some((mean, t95(x.len() - 1) * (var / n).sqrt()))
}

/// One trial at one size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    /// Working set per thread, KiB.
    pub size_kb: u64,
    /// Cache lines scanned by the lone thread (the unit of work).
    pub w1: u64,
    /// Cache lines scanned by all threads of the contended run.
    pub wn: u64,
    /// Switches between traced threads on the CPU in the contended run (from the trace).
    pub switches: u64,
    /// Involuntary context switches the kernel counted for those threads (`getrusage`).
    pub kernel_involuntary: u64,
    /// Run length, ns.
    pub t_ns: u64,
    /// CPU received by the lone thread, ns.
    pub cpu1_ns: u64,
    /// CPU received by the N threads together, ns.
    pub cpun_ns: u64,
    /// Cost per switch with the paper's formula on wall time T, ns.
    pub paper_cost_ns: Option<f64>,
    /// Cost per switch on CPU received ([`cost_per_switch_cpu`]), ns (`None`: no switch
    /// seen); the one summarised.
    pub cost_ns: Option<f64>,
}

/// The summary at one size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SizeRow {
    /// Working set per thread, KiB.
    pub size_kb: u64,
    /// Trials with a cost.
    pub n: usize,
    /// Mean cost per switch, ns.
    pub mean_ns: f64,
    /// 95% CI half-width, ns.
    pub ci95_ns: f64,
}

/// Data of a `sched.cache_cost` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CacheCostData {
    /// CPU all threads were pinned to.
    pub cpu: u32,
    /// Threads in the contended run.
    pub threads: u32,
    /// Every trial.
    pub trials: Vec<Trial>,
    /// Per size.
    pub rows: Vec<SizeRow>,
}

/// Summarises trials per size, in size order. Pure.
pub fn summarize(trials: &[Trial]) -> Vec<SizeRow> {
    let mut sizes: Vec<u64> = trials.iter().map(|t| t.size_kb).collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
        .into_iter()
        .filter_map(|s| {
            let c: Vec<f64> = trials
                .iter()
                .filter(|t| t.size_kb == s)
                .filter_map(|t| t.cost_ns)
                .collect();
            mean_ci95(&c).map(|(mean_ns, ci95_ns)| SizeRow {
                size_kb: s,
                n: c.len(),
                mean_ns,
                ci95_ns,
            })
        })
        .collect()
}

/// Switches between different traced threads on one CPU, from a trace. Pure.
pub fn switches_on(trace: &crate::trace::Trace, cpu: u32) -> u64 {
    let mut b: Vec<_> = trace.blocks.iter().filter(|b| b.cpu == cpu).collect();
    b.sort_by_key(|b| b.start_ns);
    b.windows(2).filter(|w| w[0].thread != w[1].thread).count() as u64
}

/// The Figure 5 series: mean cost per switch (µs) versus working set (KB), with 95%
/// intervals. Pure.
pub fn figure_series(rows: &[SizeRow]) -> latlab_core::doc::XySeries {
    latlab_core::doc::XySeries {
        label: "cost per context switch (95% CI)".into(),
        points: rows
            .iter()
            .map(|r| (r.size_kb as f64, r.mean_ns / 1e3, r.ci95_ns / 1e3))
            .collect(),
    }
}

/// The Figure 5 axes. Pure.
pub fn figure_spec(threads: u32) -> latlab_core::doc::XySpec {
    latlab_core::doc::XySpec {
        title: format!(
            "Working set vs. performance lost per context switch ({threads} threads, one CPU)"
        ),
        x_desc: "working set per thread (KB)".into(),
        y_desc: "cost per switch (µs)".into(),
        x_log: true,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_papers_formula() {
        // 1% of the work lost over 45 s with 4500 switches: 100 µs per switch
        let c = cost_per_switch(1_000_000, 990_000, 45_000_000_000, 4500).unwrap();
        assert!((c - 100_000.0).abs() < 1e-6, "{c}");
        assert_eq!(cost_per_switch(0, 1, 1, 1), None);
        assert_eq!(cost_per_switch(1, 1, 1, 0), None);
        // more work with company (noise) gives a negative cost, reported as such
        assert!(cost_per_switch(100, 101, 1000, 10).unwrap() < 0.0);
        // with the whole CPU both times, the CPU-based cost equals the paper's
        let p = cost_per_switch(1000, 900, 1_000_000, 10).unwrap();
        let c = cost_per_switch_cpu(1000, 1_000_000, 900, 1_000_000, 10).unwrap();
        assert!((p - c).abs() < 1e-6);
        // half the CPU taken by others in the contended run: same rate, no cost
        assert!(
            cost_per_switch_cpu(1000, 1_000_000, 500, 500_000, 10)
                .unwrap()
                .abs()
                < 1e-6
        );
    }

    #[test]
    fn confidence_intervals() {
        let (m, h) = mean_ci95(&[10.0, 12.0, 14.0]).unwrap();
        assert_eq!(m, 12.0);
        // s = 2, n = 3: 4.303 * 2 / sqrt(3)
        assert!((h - 4.303 * 2.0 / 3f64.sqrt()).abs() < 1e-9);
        assert_eq!(t95(1), 12.706);
        assert_eq!(t95(1000), 1.96);
        assert!(mean_ci95(&[]).is_none());
        let trials: Vec<Trial> = [(64, Some(1.0)), (4, Some(3.0)), (64, Some(3.0)), (64, None)]
            .into_iter()
            .map(|(size_kb, cost_ns)| Trial {
                size_kb,
                w1: 0,
                wn: 0,
                switches: 0,
                kernel_involuntary: 0,
                t_ns: 1,
                cpu1_ns: 1,
                cpun_ns: 1,
                paper_cost_ns: None,
                cost_ns,
            })
            .collect();
        let rows = summarize(&trials);
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].size_kb, rows[0].n), (4, 1));
        assert_eq!((rows[1].size_kb, rows[1].n, rows[1].mean_ns), (64, 2, 2.0));
    }
}

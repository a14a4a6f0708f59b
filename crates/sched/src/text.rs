//! The text a run and its analysis print: the run summary, the paper's text output, the
//! analysis, and the plain-text tables and stats lines they share. Pure functions.

use crate::analyze::{Analysis, RtaRow, Stats};
use crate::result::{self as sresult, SchedRunData};
use crate::spec::Workload;
use crate::trace::{latlate_lines, text_trace, Trace};
use latlab_core::parse::Percentile;
use latlab_core::results::ResultFile;
use latlab_core::text::Table;
use latlab_core::units::format_ns;

/// Which statistics a [`stats_line`] shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatsLine {
    /// n, min, median, p90, p99, max; "none seen" when empty (`latlab sched analyze`).
    Full,
    /// n, min, median, p99, max; "none" when empty (the experiment's findings).
    Short,
}

/// One line of statistics, e.g. `n 12 min 1.20us median 1.50us p99 3.00us max 4.00us`.
/// Pure.
pub fn stats_line(s: &Stats, which: StatsLine) -> String {
    if s.n == 0 {
        return match which {
            StatsLine::Full => "none seen",
            StatsLine::Short => "none",
        }
        .into();
    }
    let p90 = match which {
        StatsLine::Full => format!(" p90 {}", format_ns(s.p90_ns as f64)),
        StatsLine::Short => String::new(),
    };
    format!(
        "n {} min {} median {}{p90} p99 {} max {}",
        s.n,
        format_ns(s.min_ns as f64),
        format_ns(s.median_ns as f64),
        format_ns(s.p99_ns as f64),
        format_ns(s.max_ns as f64)
    )
}

/// The human summary of a run: calibration evidence, thread table, deadline and latency
/// lines, warnings.
pub fn run_summary(result: &ResultFile, d: &SchedRunData, trace: &Trace) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "latlab sched: {} thread(s) for {} on {} CPU(s), TSC {} MHz\n",
        d.threads.len(),
        format_ns(d.spec.duration_ns as f64),
        d.cpus,
        d.tsc_hz / 1_000_000
    ));
    for c in &d.calibrations {
        s.push_str(&format!(
            "loop iteration ({}, smallest detectable gap): min {} median {} p99 {} p99.9 {} p99.99 {} over {} iterations\n  gap threshold {} ({}), {:.1} ppm of calibration iterations above it\n",
            c.loop_kind,
            format_ns(c.min_ns),
            format_ns(c.p50_ns),
            format_ns(c.p99_ns),
            format_ns(c.p999_ns),
            format_ns(c.p9999_ns),
            c.iterations,
            format_ns(c.gap_ns),
            if c.gap_given { "--gap" } else { "2 x median, as in the paper" },
            c.over_gap_ppm
        ));
    }
    let mut t = Table::new([
        "thread",
        "model",
        "policy",
        "timer",
        "slack",
        "cpus",
        "cpu share",
        "blocks",
        "dropped",
        "migr",
        "deadlines hit/missed",
    ]);
    for r in sresult::thread_rows(d, trace) {
        t.row(vec![
            r.thread.to_string(),
            r.model,
            r.policy,
            r.timer,
            format_ns(r.timer_slack_ns as f64),
            r.cpus,
            format!("{:.1}%", r.cpu_share * 100.0),
            r.blocks.to_string(),
            r.dropped.to_string(),
            r.migrations.to_string(),
            r.deadlines
                .map(|(h, m)| format!("{h}/{m}"))
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    s.push_str(&t.render());
    s.push_str(&sresult::deadline_lines(d, trace));
    s.push_str(&explain_lines(result, d));
    let p = |v: u64| Percentile::from_fraction(v, 1000).expect("valid");
    for th in &d.threads {
        let id = th.spec.id;
        let name = if matches!(th.spec.workload, Workload::Lat { .. }) {
            "dispatch"
        } else {
            "lateness"
        };
        if let Some(Ok(h)) = result.histogram(&sresult::hist_name(name, id)) {
            if !h.is_empty() {
                s.push_str(&format!(
                    "thread {id} {}: n {} min {} median {} p99 {} max {}\n",
                    if name == "dispatch" {
                        "wakeup lateness (latlate)"
                    } else {
                        "lateness of missed deadlines"
                    },
                    h.count(),
                    format_ns(h.min() as f64),
                    format_ns(h.value_at(p(500)) as f64),
                    format_ns(h.value_at(p(990)) as f64),
                    format_ns(h.max() as f64)
                ));
            }
        }
        if let Some(x) = th.timerfd_expirations {
            s.push_str(&format!("thread {id}: {x} timerfd expirations read\n"));
        }
    }
    for w in &result.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    s
}

/// An RTA row's bound, or `unbounded`. Pure.
pub fn rta_bound(r: &RtaRow) -> String {
    r.bound_ns
        .map(|b| format_ns(b as f64))
        .unwrap_or_else(|| "unbounded".into())
}

/// An RTA row's verdict: `ok` only when a bound exists and the observed worst response
/// stayed within it; a task set that needs more than the CPU has no bound, and no
/// observation can be `ok` against it. Pure.
pub fn rta_verdict(r: &RtaRow) -> &'static str {
    match (r.bound_ns, r.observed_ns) {
        (None, _) => "UNBOUNDED: the task set needs more than the CPU",
        (Some(_), None) => "nothing observed",
        (Some(_), Some(_)) if r.exceeds_bound => "OBSERVED > BOUND",
        (Some(_), Some(_)) => "ok",
    }
}

/// An RTA row's observed worst response, or `-`. Pure.
pub fn rta_observed(r: &RtaRow) -> String {
    r.observed_ns
        .map(|b| format_ns(b as f64))
        .unwrap_or_else(|| "-".into())
}

/// The analysis as text. Pure.
pub fn analysis_text(a: &Analysis) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "context switches between traced threads ({:.1}/s; {} with a gap of {} or more, other work in between, left out):\n  voluntary (after yield/sleep): {}\n  involuntary (preempted):       {}\n",
        a.switches.per_second,
        a.switches.longer,
        format_ns(a.merge_gap_ns as f64),
        stats_line(&a.switches.voluntary, StatsLine::Full),
        stats_line(&a.switches.involuntary, StatsLine::Full)
    ));
    if let Some(i) = &a.interrupts {
        s.push_str(&format!(
            "interruptions of thread {} ({}), gaps < {}: {:.0}/s, {:.3}% of its time\n  cost: {}\n  {:.0}/s of 1 us or more{}\n",
            i.thread,
            i.policy,
            format_ns(a.merge_gap_ns as f64),
            i.per_second,
            i.lost_fraction * 100.0,
            stats_line(&i.cost, StatsLine::Full),
            i.long_per_second,
            i.long_interval_median_ns
                .map(|p| format!(", median interval {}", format_ns(p as f64)))
                .unwrap_or_default()
        ));
        match &i.tick {
            Some(t) => s.push_str(&format!(
                "  kernel tick: {} Hz (period {:.3} ms; {:.0}% of them in one 20 us phase window, {:.1}% by chance)\n",
                t.hz,
                t.period_ns / 1e6,
                t.aligned_fraction * 100.0,
                t.chance_fraction * 100.0
            )),
            None => s.push_str("  kernel tick: no 100/250/300/1000 Hz period lines up with them (tickless CPU, or drowned in other interruptions)\n"),
        }
    }
    for q in &a.quanta {
        s.push_str(&format!(
            "quantum of thread {} ({}): {}\n",
            q.thread,
            q.priority,
            stats_line(&q.runs, StatsLine::Full)
        ));
    }
    for (t, d) in &a.dispatch {
        s.push_str(&format!(
            "dispatch latency of thread {t}: {}\n",
            stats_line(d, StatsLine::Full)
        ));
    }
    for d in &a.deadlines {
        s.push_str(&format!(
            "thread {} {}: missed {} deadlines, hit {}\n  response {}\n  lateness of misses {}\n  CPU by deadline {}\n  dispatch {}\n  interruptions while running ({:.0} per CPU-second): {}\n",
            d.thread, d.model, d.misses, d.hits, stats_line(&d.response, StatsLine::Full), stats_line(&d.lateness, StatsLine::Full), stats_line(&d.cpu_by_deadline, StatsLine::Full), stats_line(&d.dispatch, StatsLine::Full),
            d.interruptions_per_cpu_second, stats_line(&d.interruptions, StatsLine::Full)
        ));
    }
    if !a.rta.is_empty() {
        let mut t = Table::new([
            "thread",
            "C",
            "T",
            "RTA bound",
            "schedulable",
            "observed worst",
            "verdict",
        ]);
        for r in &a.rta {
            t.row(vec![
                r.thread.to_string(),
                format_ns(r.task.c as f64),
                format_ns(r.task.t as f64),
                rta_bound(r),
                if r.schedulable { "yes" } else { "no" }.into(),
                rta_observed(r),
                rta_verdict(r).into(),
            ]);
        }
        s.push_str("response-time analysis (fixed priority, one CPU):\n");
        s.push_str(&t.render());
    }
    for r in &a.rt_stalls {
        s.push_str(&format!(
            "real-time thread {} lost the CPU for 10 ms or more: {}{}\n",
            r.thread,
            stats_line(&r.stalls, StatsLine::Full),
            r.interval_median_ns
                .map(|i| format!(", median interval {}", format_ns(i as f64)))
                .unwrap_or_default()
        ));
    }
    for n in &a.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s
}

/// The paper's text output of a run: the trace, the deadline lines and, for LAT threads,
/// their lateness lines. Pure.
pub fn paper_text(d: &SchedRunData, trace: &Trace) -> String {
    let mut s = trace_text(d, trace);
    s.push_str(&sresult::deadline_lines(d, trace));
    s.push_str(&lat_lines(d, trace));
    s
}

/// What `--print-trace` prints, as Hourglass did: the trace, then the lateness lines of
/// the LAT threads. Pure.
pub fn printed_trace(d: &SchedRunData, trace: &Trace) -> String {
    trace_text(d, trace) + &lat_lines(d, trace)
}

/// The text trace, in TSC cycles too when the run asked for them (`-c`).
fn trace_text(d: &SchedRunData, trace: &Trace) -> String {
    text_trace(trace, d.spec.raw_cycles.then_some((d.t0_tsc, d.tsc_hz)))
}

/// The `latlate` lines of every LAT thread.
fn lat_lines(d: &SchedRunData, trace: &Trace) -> String {
    d.threads
        .iter()
        .filter(|t| matches!(t.spec.workload, Workload::Lat { .. }))
        .map(|t| latlate_lines(trace, t.spec.id))
        .collect()
}

/// The table `latlab sched cache-cost` prints: per working-set size, the trials and the
/// cost per switch with its 95% interval. Pure.
pub fn cache_cost_table(rows: &[crate::cache::SizeRow]) -> String {
    let mut t = Table::new(["working set", "trials", "cost per switch", "95% CI"]);
    for row in rows {
        t.row(vec![
            format!("{} KB", row.size_kb),
            row.n.to_string(),
            format!("{:.2} us", row.mean_ns / 1e3),
            format!("+/- {:.2} us", row.ci95_ns / 1e3),
        ]);
    }
    t.render()
}

/// The `--explain` lines of a run: what was attributed, the explained share and the
/// share outside the kernel, the top causes, steal time. Empty without `--explain`.
pub fn explain_lines(result: &ResultFile, d: &SchedRunData) -> String {
    use latlab_explain::render;
    let (Some(a), Some(x)) = (&result.explain, &d.explain) else {
        return String::new();
    };
    let gaps = x
        .windows
        .iter()
        .filter(|w| w.kind == crate::explain::WindowKind::Gap)
        .count();
    let mut s = format!(
        "explain: {} windows ({gaps} gaps at or above {} ({}), {} missed deadlines)\n  {}\n",
        a.windows,
        format_ns(x.threshold_ns as f64),
        x.threshold_from,
        x.windows.len() - gaps,
        render::explained_line(a)
    );
    for line in render::completeness(a) {
        s.push_str(&format!("  {line}\n"));
    }
    let top: Vec<String> = a
        .causes
        .iter()
        .take(5)
        .map(|c| {
            let r = render::cause_row(c, a.excess_ns);
            format!("{} {} ({})", r[0], r[2], r[3])
        })
        .collect();
    if !top.is_empty() {
        s.push_str(&format!("  top causes: {}\n", top.join(", ")));
    }
    if let Some(line) = render::steal_line(a) {
        s.push_str(&format!("  {line}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::stats;

    #[test]
    fn rta_verdict_is_ok_only_within_a_bound() {
        let row = |bound_ns, observed_ns, exceeds_bound| RtaRow {
            thread: 0,
            task: crate::rta::Task::new("t", 6_000_000, 10_000_000),
            bound_ns,
            schedulable: bound_ns.is_some(),
            observed_ns,
            exceeds_bound,
        };
        // an overloaded task set: no bound, whatever was observed
        assert_eq!(
            rta_verdict(&row(None, Some(9_000_000), false)),
            "UNBOUNDED: the task set needs more than the CPU"
        );
        assert_eq!(
            rta_verdict(&row(None, None, false)),
            "UNBOUNDED: the task set needs more than the CPU"
        );
        assert_eq!(
            rta_verdict(&row(Some(6_000_000), None, false)),
            "nothing observed"
        );
        assert_eq!(
            rta_verdict(&row(Some(6_000_000), Some(7_000_000), true)),
            "OBSERVED > BOUND"
        );
        assert_eq!(
            rta_verdict(&row(Some(6_000_000), Some(5_000_000), false)),
            "ok"
        );
    }

    #[test]
    fn one_stats_formatter_in_two_lengths() {
        let s = stats(&mut [1_000, 2_000, 3_000]);
        let full = stats_line(&s, StatsLine::Full);
        let short = stats_line(&s, StatsLine::Short);
        assert!(
            full.starts_with("n 3 min ") && full.contains(" p90 "),
            "{full}"
        );
        assert!(
            !short.contains(" p90 ") && short.contains(" p99 "),
            "{short}"
        );
        assert_eq!(
            full.replace(&format!(" p90 {}", format_ns(3_000.0)), ""),
            short
        );
        let none = Stats::default();
        assert_eq!(stats_line(&none, StatsLine::Full), "none seen");
        assert_eq!(stats_line(&none, StatsLine::Short), "none");
    }

    #[test]
    fn tables_align_the_first_column_left_and_the_rest_right() {
        let mut t = Table::new(["a", "bb"]);
        t.row(vec!["xyz".into(), "1".into()]);
        assert_eq!(t.render(), "a    bb\nxyz   1\n");
    }
}

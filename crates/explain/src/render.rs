//! An attribution as terminal text: causes ranked by time with count, total and share of
//! the excess, then the worst windows with what lay under them. Pure.

use latlab_core::results::{Attribution, CauseTime};
use latlab_core::units::format_ns;

/// The warning a result records when kernel events were lost (`hint` follows the count,
/// e.g. `" (raise --buffer-kb)"`); none when nothing was lost.
pub fn lost_warning(a: &Attribution, hint: &str) -> Option<String> {
    (a.lost_events > 0).then(|| {
        format!(
            "{} kernel events were lost{hint}: the attribution is incomplete",
            a.lost_events
        )
    })
}

/// The warning a result records when there were no kernel events at all, saying what
/// that leaves unexplained (`consequence`, e.g. `"every gap is unexplained"`).
pub fn unavailable_warning(a: &Attribution, consequence: &str) -> Option<String> {
    a.unavailable
        .as_ref()
        .map(|why| format!("kernel events unavailable ({why}): {consequence}"))
}

/// A cause as a person reads it: `irq (virtio1-req.0)`, `preempted by task (hog)`,
/// `outside the kernel`.
pub fn cause_label(c: &CauseTime) -> String {
    crate::timeline::label(&c.class, &c.name)
}

/// How many causes `latlab explain --advise` and the report advise on.
pub const ADVISE_TOP: usize = 5;

/// `latlab explain --advise`: for each of the top causes, its share of the excess, whether
/// its remedy is a run-time change or boot-only, the remedy, and the knob with its kernel
/// documentation.
pub fn advice_text(a: &Attribution) -> String {
    let mut out = String::new();
    for v in crate::remedy::advise(a, ADVISE_TOP) {
        out.push_str(&format!(
            "{:>6.1}%  {}  [{}]  {}\n",
            v.share * 100.0,
            v.cause,
            v.remedy.kind.as_str(),
            v.remedy.change
        ));
        if !v.remedy.knob.is_empty() || !v.remedy.doc.is_empty() {
            let sep = if v.remedy.knob.is_empty() || v.remedy.doc.is_empty() {
                ""
            } else {
                " — "
            };
            out.push_str(&format!(
                "         {}{sep}{}\n",
                v.remedy.knob, v.remedy.doc
            ));
        }
    }
    if out.is_empty() {
        out.push_str("no cause with time: nothing to advise\n");
    }
    out
}

/// `part` as a share of `whole`, `75.0%`; `-` when `whole` is 0.
pub fn share(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".to_string()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

/// One cause as a row of the causes table: its label, count, total and share of
/// `excess_ns`. The terminal table and the report's table are both made of these.
pub fn cause_row(c: &CauseTime, excess_ns: u64) -> [String; 4] {
    [
        cause_label(c),
        c.count.to_string(),
        format_ns(c.time_ns as f64),
        share(c.time_ns, excess_ns),
    ]
}

/// `explained: 19.0us of 20.0us excess (95.0%); outside the kernel: 75.0%`.
pub fn explained_line(a: &Attribution) -> String {
    format!(
        "explained: {} of {} excess ({}); outside the kernel: {}",
        format_ns(a.explained_ns as f64),
        format_ns(a.excess_ns as f64),
        share(a.explained_ns, a.excess_ns),
        share(a.class_time_ns("outside_kernel"), a.excess_ns),
    )
}

/// What makes the attribution partial, one sentence each: kernel events unavailable or
/// lost, events this kernel does not have. Empty when nothing is missing.
pub fn completeness(a: &Attribution) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(why) = &a.unavailable {
        out.push(format!(
            "incomplete: kernel events unavailable: {why}; all time is unexplained"
        ));
    } else if a.lost_events > 0 {
        out.push(format!(
            "incomplete: {} kernel events were lost; the split is partial",
            a.lost_events
        ));
    }
    if !a.missing_events.is_empty() {
        out.push(format!(
            "not recorded (absent on this kernel): {}",
            a.missing_events.join(", ")
        ));
    }
    out
}

/// Steal time over the run, the hypervisor's own account:
/// `steal time during the run (/proc/stat): CPU 0 10.0ms, CPU 1 0ns`; None when not read.
pub fn steal_line(a: &Attribution) -> Option<String> {
    if a.steal.is_empty() {
        return None;
    }
    let cpus: Vec<String> = a
        .steal
        .iter()
        .map(|s| format!("CPU {} {}", s.cpu, format_ns(s.ns as f64)))
        .collect();
    let mut line = format!(
        "steal time during the run (/proc/stat, 10 ms resolution): {}",
        cpus.join(", ")
    );
    if a.steal.iter().any(|s| s.silent_ns > 0) {
        let silent: Vec<String> = a
            .steal
            .iter()
            .map(|s| format!("CPU {} {}", s.cpu, format_ns(s.silent_ns as f64)))
            .collect();
        line.push_str(&format!(
            "; silent past the tick with a task to run (vCPU not running): {}",
            silent.join(", ")
        ));
    }
    Some(line)
}

/// The ranked causes as an aligned table, a line on completeness first when it is partial.
pub fn causes_table(a: &Attribution) -> String {
    let mut rows: Vec<[String; 4]> = vec![[
        "cause".into(),
        "count".into(),
        "total".into(),
        "share".into(),
    ]];
    rows.extend(a.causes.iter().map(|c| cause_row(c, a.excess_ns)));
    let w0 = rows.iter().map(|r| r[0].chars().count()).max().unwrap_or(0);
    let w: Vec<usize> = (1..4)
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in &rows {
        let pad = w0 - r[0].chars().count();
        out.push_str(&format!(
            "{}{}  {:>w1$}  {:>w2$}  {:>w3$}\n",
            r[0],
            " ".repeat(pad),
            r[1],
            r[2],
            r[3],
            w1 = w[0],
            w2 = w[1],
            w3 = w[2]
        ));
    }
    out.push_str(&explained_line(a));
    out.push('\n');
    for line in completeness(a) {
        out.push_str(&line);
        out.push('\n');
    }
    if let Some(line) = steal_line(a) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The percentile bands (`p90–p99`, `p99–p99.9`, `p99.9–p99.99`, above), one block
/// each: its windows, their lengths and excess, then its causes ranked as the whole run's
/// are; a band the window count does not support says so. Empty for files written
/// before bands were recorded.
pub fn bands_text(a: &Attribution) -> String {
    let mut out = String::new();
    for b in &a.bands {
        out.push_str(&format!(
            "{} of the windows: {} windows{}",
            b.label(),
            b.windows,
            if b.windows > 0 {
                format!(
                    ", {}..{}, excess {}",
                    format_ns(b.min_ns as f64),
                    format_ns(b.max_ns as f64),
                    format_ns(b.excess_ns as f64)
                )
            } else {
                String::new()
            }
        ));
        if !b.supported {
            out.push_str(&format!(
                " — unsupported: {} windows are too few to place its edges (10 beyond each needed)",
                a.windows
            ));
        }
        out.push('\n');
        for c in &b.causes {
            let r = cause_row(c, b.excess_ns);
            out.push_str(&format!("    {}  {}  {}  {}\n", r[0], r[1], r[2], r[3]));
        }
    }
    out
}

/// The worst windows, one block each.
pub fn worst_text(a: &Attribution) -> String {
    let mut out = String::new();
    for (i, w) in a.worst.iter().enumerate() {
        let parts: Vec<String> = w
            .causes
            .iter()
            .map(|c| format!("{} {}", cause_label(c), format_ns(c.time_ns as f64)))
            .collect();
        out.push_str(&format!(
            "#{} CPU {} at TSC {}: {} = {}\n",
            i + 1,
            w.cpu,
            w.start_tsc,
            format_ns(w.duration_ns as f64),
            if parts.is_empty() {
                "(no excess)".to_string()
            } else {
                parts.join(" + ")
            }
        ));
        for e in &w.events {
            out.push_str(&format!("    {e}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_core::results::WorstWindow;

    fn ct(class: &str, name: &str, count: u64, t: u64) -> CauseTime {
        CauseTime::new(class, name, count, t)
    }

    #[test]
    fn table_ranks_and_shares() {
        let a = Attribution {
            complete: false,
            lost_events: 2,
            excess_ns: 20_000,
            explained_ns: 19_000,
            causes: vec![
                ct("outside_kernel", "", 3, 15_000),
                ct("preempted", "hog", 1, 4_000),
                ct("unexplained", "", 2, 1_000),
            ],
            ..Attribution::default()
        };
        let t = causes_table(&a);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("cause"), "{t}");
        assert!(lines[1].starts_with("outside the kernel"), "{t}");
        assert!(lines[1].ends_with("15.0us  75.0%"), "{t}");
        assert!(lines[2].starts_with("preempted by task (hog)"), "{t}");
        assert!(
            t.contains("explained: 19.0us of 20.0us excess (95.0%)"),
            "{t}"
        );
        assert!(t.contains("2 kernel events were lost"), "{t}");
    }

    #[test]
    fn worst_windows_list_their_events() {
        let a = Attribution {
            worst: vec![WorstWindow {
                cpu: 1,
                start_tsc: 99,
                duration_ns: 2_500,
                causes: vec![ct("irq", "eth0", 1, 2_000)],
                events: vec!["+100ns irq (eth0) for 2000 ns".into()],
                spans: vec![],
                ..Default::default()
            }],
            ..Attribution::default()
        };
        assert_eq!(
            worst_text(&a),
            "#1 CPU 1 at TSC 99: 2.50us = irq (eth0) 2.00us\n    +100ns irq (eth0) for 2000 ns\n"
        );
        assert_eq!(
            cause_label(&ct("softirq", "NET_RX", 1, 1)),
            "softirq (NET_RX)"
        );
    }

    #[test]
    fn bands_list_their_causes_and_flag_unsupported_ones() {
        use latlab_core::results::Band;
        let a = Attribution {
            windows: 50,
            bands: vec![
                Band {
                    from: "p90".into(),
                    to: "p99".into(),
                    supported: true,
                    windows: 4,
                    min_ns: 1_000,
                    max_ns: 2_000,
                    excess_ns: 6_000,
                    causes: vec![CauseTime::new("irq", "virtio1-req.0", 4, 3_000)],
                },
                Band {
                    from: "p99.99".into(),
                    supported: false,
                    ..Band::default()
                },
            ],
            ..Attribution::default()
        };
        let t = bands_text(&a);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3, "{t}");
        assert_eq!(
            lines[0],
            "p90–p99 of the windows: 4 windows, 1.00us..2.00us, excess 6.00us"
        );
        assert_eq!(lines[1], "    irq (virtio1-req.0)  4  3.00us  50.0%");
        assert!(
            lines[2]
                .starts_with("above p99.99 of the windows: 0 windows — unsupported: 50 windows"),
            "{t}"
        );
        assert_eq!(bands_text(&Attribution::default()), "");
    }
}

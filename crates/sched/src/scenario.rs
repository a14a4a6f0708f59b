//! Scenario files: the thread set of a run in TOML, as an alternative to the Hourglass
//! command line. Values use the same words as the command line.
//!
//! ```toml
//! duration = "20s"          # -d (default 10s)
//! records = 300000          # -e
//! gap = "100ns"             # --gap (default: calibrated)
//! timer_slack = "1us"       # --timer-slack
//! dma_latency = 0           # --dma-latency (µs)
//!
//! [[thread]]
//! count = 1                 # this many identical threads (default 1)
//! priority = "RTHIGH"       # -p
//! workload = "PERIODIC 4ms 5ms"  # -w
//! timer = "HR"              # -i
//! start = "0s"              # -s
//! finish = "20s"            # -f
//! cpu = 1                   # --cpu
//! reservation = { amount = "4.1ms", period = "5ms", soft = false }  # -rh / -rs
//! ```

use crate::cmdline::{parse_model, validate, CmdError};
use crate::spec::{Priority, Reservation, RunSpec, ThreadSpec, Timer};
use latlab_core::parse::parse_duration;
use serde::Deserialize;

/// A scenario file's contents.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    duration: Option<String>,
    records: Option<u64>,
    gap: Option<String>,
    timer_slack: Option<String>,
    dma_latency: Option<u32>,
    #[serde(default)]
    thread: Vec<ThreadEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThreadEntry {
    count: Option<u32>,
    priority: Option<String>,
    workload: Option<String>,
    timer: Option<String>,
    start: Option<String>,
    finish: Option<String>,
    cpu: Option<u32>,
    reservation: Option<ResEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResEntry {
    amount: String,
    period: String,
    #[serde(default)]
    soft: bool,
}

fn dur(key: &str, v: &str) -> Result<u64, CmdError> {
    parse_duration(v).map(|n| n.get()).map_err(|e| CmdError {
        flag: key.to_owned(),
        message: e.to_string(),
    })
}

/// Parses scenario text into a run (command-line globals such as `-d` given beside
/// `--scenario` are overridden by the file when it sets them). Errors name the key, as
/// `scenario <key>`.
pub fn parse(text: &str, defaults: &RunSpec) -> Result<RunSpec, CmdError> {
    let f: File = toml::from_str(text).map_err(|e| CmdError {
        flag: "--scenario".into(),
        message: e.to_string().replace('\n', " "),
    })?;
    let mut spec = RunSpec {
        threads: Vec::new(),
        ..defaults.clone()
    };
    if let Some(d) = &f.duration {
        spec.duration_ns = dur("scenario duration", d)?;
    }
    if let Some(r) = f.records {
        spec.records = r.max(1);
    }
    if let Some(g) = &f.gap {
        spec.gap_ns = Some(dur("scenario gap", g)?);
    }
    if let Some(s) = &f.timer_slack {
        spec.timer_slack_ns = Some(dur("scenario timer_slack", s)?);
    }
    if let Some(us) = f.dma_latency {
        spec.dma_latency_us = Some(us);
    }
    for e in &f.thread {
        let mut th = ThreadSpec::new(0);
        if let Some(p) = &e.priority {
            th.priority = Priority::from_name(p).ok_or_else(|| CmdError {
                flag: "scenario priority".into(),
                message: format!("unknown priority '{p}'"),
            })?;
        }
        if let Some(w) = &e.workload {
            th.workload = parse_model(w).map_err(|c| CmdError {
                flag: "scenario workload".into(),
                message: c.message,
            })?;
        }
        if let Some(t) = &e.timer {
            th.timer = Timer::from_name(t).map_err(|m| CmdError {
                flag: "scenario timer".into(),
                message: m,
            })?;
        }
        if let Some(s) = &e.start {
            th.start_ns = dur("scenario start", s)?;
        }
        if let Some(s) = &e.finish {
            th.finish_ns = Some(dur("scenario finish", s)?);
        }
        th.cpu = e.cpu;
        if let Some(r) = &e.reservation {
            th.reservation = Some(Reservation {
                amount_ns: dur("scenario reservation.amount", &r.amount)?,
                period_ns: dur("scenario reservation.period", &r.period)?,
                soft: r.soft,
            });
        }
        for _ in 0..e.count.unwrap_or(1) {
            let mut t = th.clone();
            t.id = spec.threads.len() as u32;
            spec.threads.push(t);
        }
    }
    validate(&spec)?;
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Workload;

    fn defaults() -> RunSpec {
        RunSpec {
            threads: vec![],
            duration_ns: 10_000_000_000,
            records: 300_000,
            raw_cycles: false,
            gap_ns: None,
            timer_slack_ns: None,
            dma_latency_us: None,
        }
    }

    #[test]
    fn the_paper_section_5_4_as_a_scenario() {
        let s = parse(
            r#"
duration = "20s"
dma_latency = 0
[[thread]]
priority = "RTHIGH"
workload = "PERIODIC 4ms 5ms"
timer = "HR"
[[thread]]
count = 2
workload = "CPU_SCAN 64KB"
reservation = { amount = "1ms", period = "10ms", soft = true }
"#,
            &defaults(),
        )
        .unwrap();
        assert_eq!(s.duration_ns, 20_000_000_000);
        assert_eq!(s.dma_latency_us, Some(0));
        assert_eq!(s.threads.len(), 3);
        assert_eq!(
            s.threads[0].workload,
            Workload::Periodic {
                amount_ns: 4_000_000,
                period_ns: 5_000_000
            }
        );
        assert_eq!(s.threads[2].id, 2);
        assert!(s.threads[2].reservation.unwrap().soft);
    }

    #[test]
    fn errors_name_the_key() {
        let e = parse("[[thread]]\nworkload = \"JOG\"\n", &defaults()).unwrap_err();
        assert_eq!(e.flag, "scenario workload");
        let e = parse("[[thread]]\ntimer = \"RTC\"\n", &defaults()).unwrap_err();
        assert!(e.message.contains("HR"), "{e}");
        let e = parse("duration = 5\n", &defaults()).unwrap_err();
        assert_eq!(e.flag, "--scenario");
        let e = parse("colour = \"red\"\n[[thread]]\n", &defaults()).unwrap_err();
        assert!(e.message.contains("colour"), "{e}");
        assert!(parse("", &defaults()).is_err(), "no threads");
    }
}

//! The Hourglass 0.5 command line (paper, Appendix A), parsed by hand because its
//! per-thread options are positional: `-t N` (or `-a`) selects the threads that the
//! following `-p -w -i -s -f -rh -rs --cpu` apply to, until the next `-t`/`-a`.
//!
//! ```text
//! -n <threads> -d <duration> -c -e <records> -t <n> | -a
//! per thread: -p <priority> -w <model> [args] -i <timer> -s <time> -f <time>
//!             -rh <amount> <period> -rs <amount> <period> --cpu <n>
//! latlab:     --gap <time> --timer-slack <time> --dma-latency <us> --scenario <file>
//!             -o <file> -q
//!             --perfetto <file> --render <file> --print-trace
//!             --explain --explain-above <time>
//! ```
//!
//! Pure: the result is a [`RunSpec`] plus [`OutputOptions`]; every error is a
//! [`CmdError`] naming the flag and the accepted form.

use crate::spec::{Priority, Reservation, RunSpec, ThreadSpec, Timer, Workload};
use latlab_core::parse::parse_duration;
use std::path::PathBuf;

/// A bad command line; `Display` is one line naming the flag.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{flag}: {message}")]
pub struct CmdError {
    /// The flag at fault, e.g. `-w`.
    pub flag: String,
    /// What is wrong and what is accepted.
    pub message: String,
}

fn err(flag: &str, message: impl Into<String>) -> CmdError {
    CmdError {
        flag: flag.to_owned(),
        message: message.into(),
    }
}

/// Where the outputs go (latlab's additions to the Hourglass syntax).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutputOptions {
    /// Result file (`-o`).
    pub output: Option<PathBuf>,
    /// Print nothing but errors (`-q`).
    pub quiet: bool,
    /// Perfetto JSON path (`--perfetto`; default beside the result).
    pub perfetto: Option<PathBuf>,
    /// Timeline rendering path (`--render`; default beside the result, SVG).
    pub render: Option<PathBuf>,
    /// Print the text trace to stdout as Hourglass did (`--print-trace`).
    pub print_trace: bool,
    /// Scenario file (`--scenario`) to take the thread set from.
    pub scenario: Option<PathBuf>,
    /// `--explain` / `--explain-above`: attribute gaps and misses to kernel events.
    pub explain: Option<crate::explain::ExplainAsk>,
}

/// One per-thread setting, applied once the thread count is known.
#[derive(Clone, Debug)]
enum Setting {
    Priority(Priority),
    Workload(Workload),
    Timer(Timer),
    Start(u64),
    Finish(u64),
    Reservation(Reservation),
    Cpu(u32),
}

#[derive(Clone, Copy, Debug)]
enum Target {
    One(u32),
    All,
}

fn duration(flag: &str, v: &str) -> Result<u64, CmdError> {
    parse_duration(v)
        .map(|n| n.get())
        .map_err(|e| err(flag, e.to_string()))
}

fn positive_duration(flag: &str, v: &str) -> Result<u64, CmdError> {
    let d = duration(flag, v)?;
    if d == 0 {
        return Err(err(flag, format!("'{v}' must be longer than zero")));
    }
    Ok(d)
}

/// Parses a working-set size in KiB: `32`, `32KB`, `32K`, `1MB`, `1M`.
fn size_kb(flag: &str, v: &str) -> Result<u64, CmdError> {
    let t = v.trim();
    let upper = t.to_ascii_uppercase();
    let (num, mul) = if let Some(n) = upper.strip_suffix("MB").or_else(|| upper.strip_suffix('M')) {
        (n.to_owned(), 1024)
    } else if let Some(n) = upper.strip_suffix("KB").or_else(|| upper.strip_suffix('K')) {
        (n.to_owned(), 1)
    } else {
        (upper.clone(), 1)
    };
    match num.trim().parse::<u64>() {
        Ok(n) if n > 0 && n <= 16 * 1024 * 1024 => Ok(n * mul),
        _ => Err(err(
            flag,
            format!("'{v}' is not a working-set size; expected KiB such as 32, 32KB or 1MB"),
        )),
    }
}

/// Takes the next argument as the value of `flag`.
fn value<'a>(
    args: &'a [String],
    i: &mut usize,
    flag: &str,
    what: &str,
) -> Result<&'a str, CmdError> {
    *i += 1;
    match args.get(*i) {
        Some(v) => Ok(v.as_str()),
        None => Err(err(flag, format!("missing {what}"))),
    }
}

/// Parses a model with its arguments as written after `-w`, e.g. `PERIODIC 4ms 5ms`.
pub fn parse_model(words: &str) -> Result<Workload, CmdError> {
    let mut v: Vec<String> = vec!["-w".to_owned()];
    v.extend(words.split_whitespace().map(str::to_owned));
    let mut i = 0;
    let w = parse_workload(&v, &mut i)?;
    if i + 1 != v.len() {
        return Err(err(
            "-w",
            format!("unexpected words after the model in '{words}'"),
        ));
    }
    Ok(w)
}

fn parse_workload(args: &[String], i: &mut usize) -> Result<Workload, CmdError> {
    const FORMS: &str = "CPU, CPU_SCAN <KB>, CPU_YIELD <amount>, CPU_SCAN_YIELD <KB> <amount>, \
                         PERIODIC <amount> <period>, CPU_PERIODIC <amount> <period>, LAT <period>";
    let model = value(args, i, "-w", &format!("model; accepted: {FORMS}"))?;
    let mut arg = |what: &str| value(args, i, "-w", what).map(str::to_owned);
    let w = match model.to_ascii_uppercase().as_str() {
        "CPU" => Workload::Cpu,
        "CPU_SCAN" => Workload::CpuScan {
            kb: size_kb("-w CPU_SCAN", &arg("CPU_SCAN <KB>")?)?,
        },
        "CPU_YIELD" => Workload::CpuYield {
            amount_ns: positive_duration("-w CPU_YIELD", &arg("CPU_YIELD <amount>")?)?,
        },
        "CPU_SCAN_YIELD" => {
            let kb = size_kb("-w CPU_SCAN_YIELD", &arg("CPU_SCAN_YIELD <KB> <amount>")?)?;
            let amount_ns =
                positive_duration("-w CPU_SCAN_YIELD", &arg("CPU_SCAN_YIELD <KB> <amount>")?)?;
            Workload::CpuScanYield { kb, amount_ns }
        }
        m @ ("PERIODIC" | "CPU_PERIODIC") => {
            let flag = format!("-w {m}");
            let a = positive_duration(&flag, &arg(&format!("{m} <amount> <period>"))?)?;
            let p = positive_duration(&flag, &arg(&format!("{m} <amount> <period>"))?)?;
            if a > p {
                return Err(err(
                    &flag,
                    "the amount of CPU per period exceeds the period (it could never be met)",
                ));
            }
            if m == "PERIODIC" {
                Workload::Periodic {
                    amount_ns: a,
                    period_ns: p,
                }
            } else {
                Workload::CpuPeriodic {
                    amount_ns: a,
                    period_ns: p,
                }
            }
        }
        "LAT" => Workload::Lat {
            period_ns: positive_duration("-w LAT", &arg("LAT <period>")?)?,
        },
        _ => {
            return Err(err(
                "-w",
                format!("unknown model '{model}'; accepted: {FORMS}"),
            ))
        }
    };
    Ok(w)
}

/// Parses an Hourglass command line (without the program name).
///
/// `-n` is required unless `--scenario` is given (the scenario then supplies the threads,
/// and Hourglass options given too are an error, to avoid two sources of truth).
pub fn parse(args: &[String]) -> Result<(RunSpec, OutputOptions), CmdError> {
    let mut n: Option<u32> = None;
    let mut duration_ns = RunSpec::DEFAULT_DURATION.get();
    let mut records = RunSpec::DEFAULT_RECORDS;
    let mut raw_cycles = false;
    let mut gap_ns = None;
    let mut timer_slack_ns = None;
    let mut dma_latency_us = None;
    let mut out = OutputOptions::default();
    let mut target: Option<Target> = None;
    let mut settings: Vec<(Target, Setting)> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        let per_thread = |target: Option<Target>| {
            target.ok_or_else(|| {
                err(
                    flag,
                    "per-thread option before any -t <thread> or -a; e.g. -t 0 -p RTHIGH",
                )
            })
        };
        match flag {
            "-n" => {
                let v = value(args, &mut i, "-n", "number of threads")?;
                match v.parse::<u32>() {
                    Ok(k) if (1..=1024).contains(&k) => n = Some(k),
                    _ => {
                        return Err(err(
                            "-n",
                            format!("'{v}' is not a thread count; expected 1..1024"),
                        ))
                    }
                }
            }
            "-d" => {
                duration_ns = positive_duration("-d", value(args, &mut i, "-d", "duration")?)?;
            }
            "-c" => raw_cycles = true,
            "-e" => {
                let v = value(args, &mut i, "-e", "number of trace records")?;
                records = match v.parse::<u64>() {
                    Ok(k) if (1..=1_000_000_000).contains(&k) => k,
                    _ => {
                        return Err(err(
                            "-e",
                            format!("'{v}' is not a record count; expected 1..1000000000"),
                        ))
                    }
                };
            }
            "-t" => {
                let v = value(args, &mut i, "-t", "thread number")?;
                let k = v.parse::<u32>().map_err(|_| {
                    err(
                        "-t",
                        format!("'{v}' is not a thread number; expected 0..n-1"),
                    )
                })?;
                target = Some(Target::One(k));
            }
            "-a" => target = Some(Target::All),
            "-p" => {
                let t = per_thread(target)?;
                let v = value(args, &mut i, "-p", "priority")?;
                let p = Priority::from_name(v).ok_or_else(|| {
                    err(
                        "-p",
                        format!(
                            "unknown priority '{v}'; accepted: IDLE, LOW, NORMAL, HIGH, \
                             HIGHEST, RTLOW, RTMED, RTHIGH"
                        ),
                    )
                })?;
                settings.push((t, Setting::Priority(p)));
            }
            "-w" => {
                let t = per_thread(target)?;
                let w = parse_workload(args, &mut i)?;
                settings.push((t, Setting::Workload(w)));
            }
            "-i" => {
                let t = per_thread(target)?;
                let v = value(args, &mut i, "-i", "timer")?;
                let timer = Timer::from_name(v).map_err(|m| err("-i", m))?;
                settings.push((t, Setting::Timer(timer)));
            }
            "-s" => {
                let t = per_thread(target)?;
                let d = duration("-s", value(args, &mut i, "-s", "start time")?)?;
                settings.push((t, Setting::Start(d)));
            }
            "-f" => {
                let t = per_thread(target)?;
                let d = positive_duration("-f", value(args, &mut i, "-f", "finish time")?)?;
                settings.push((t, Setting::Finish(d)));
            }
            "-rh" | "-rs" => {
                let t = per_thread(target)?;
                let a = positive_duration(flag, value(args, &mut i, flag, "<amount> <period>")?)?;
                let p = positive_duration(flag, value(args, &mut i, flag, "<amount> <period>")?)?;
                let r = Reservation {
                    amount_ns: a,
                    period_ns: p,
                    soft: flag == "-rs",
                };
                let dl = latlab_sys::rt::Deadline {
                    runtime_ns: a,
                    deadline_ns: p,
                    period_ns: p,
                    reclaim: r.soft,
                };
                dl.check().map_err(|m| err(flag, m))?;
                settings.push((t, Setting::Reservation(r)));
            }
            "--cpu" => {
                let t = per_thread(target)?;
                let v = value(args, &mut i, "--cpu", "CPU number")?;
                let c = v
                    .parse::<u32>()
                    .map_err(|_| err("--cpu", format!("'{v}' is not a CPU number")))?;
                settings.push((t, Setting::Cpu(c)));
            }
            "--gap" => {
                gap_ns = Some(positive_duration(
                    "--gap",
                    value(args, &mut i, "--gap", "gap threshold")?,
                )?)
            }
            "--timer-slack" => {
                timer_slack_ns = Some(duration(
                    "--timer-slack",
                    value(args, &mut i, "--timer-slack", "slack")?,
                )?)
            }
            "--dma-latency" => {
                let v = value(args, &mut i, "--dma-latency", "latency in us")?;
                dma_latency_us = Some(v.parse::<u32>().map_err(|_| {
                    err(
                        "--dma-latency",
                        format!("'{v}' is not a latency in whole microseconds, e.g. 0"),
                    )
                })?);
            }
            "-o" | "--output" => {
                out.output = Some(value(args, &mut i, flag, "result file")?.into())
            }
            "--perfetto" => out.perfetto = Some(value(args, &mut i, flag, "file")?.into()),
            "--render" => out.render = Some(value(args, &mut i, flag, "file")?.into()),
            "--scenario" => out.scenario = Some(value(args, &mut i, flag, "TOML file")?.into()),
            "--explain" => {
                out.explain.get_or_insert_with(Default::default);
            }
            "--explain-above" => {
                let d = positive_duration(
                    "--explain-above",
                    value(args, &mut i, "--explain-above", "gap threshold, e.g. 50us")?,
                )?;
                out.explain.get_or_insert_with(Default::default).above_ns = Some(d);
            }
            "-q" | "--quiet" => out.quiet = true,
            "--print-trace" => out.print_trace = true,
            other => {
                return Err(err(
                    other,
                    "unknown option; Hourglass options are -n -d -c -e -t -a -p -w -i -s -f \
                     -rh -rs, latlab adds --cpu --gap --timer-slack --dma-latency --scenario -o -q \
                     --perfetto --render --print-trace --explain --explain-above (see latlab \
                     sched --help)",
                ))
            }
        }
        i += 1;
    }
    // the run-wide settings, with the threads given
    let spec_of = |threads: Vec<ThreadSpec>| RunSpec {
        threads,
        duration_ns,
        records,
        raw_cycles,
        gap_ns,
        timer_slack_ns,
        dma_latency_us,
    };
    if out.scenario.is_some() {
        if n.is_some() || !settings.is_empty() {
            return Err(err(
                "--scenario",
                "the scenario file describes the threads; do not also give -n or per-thread \
                 options",
            ));
        }
        return Ok((spec_of(Vec::new()), out));
    }
    let n = n.ok_or_else(|| err("-n", "the number of threads is required, e.g. -n 3"))?;
    let mut threads: Vec<ThreadSpec> = (0..n).map(ThreadSpec::new).collect();
    for (t, s) in settings {
        let ids: Vec<u32> = match t {
            Target::All => (0..n).collect(),
            Target::One(k) if k < n => vec![k],
            Target::One(k) => {
                return Err(err(
                    "-t",
                    format!(
                        "thread {k} does not exist; with -n {n} threads are 0..{}",
                        n - 1
                    ),
                ))
            }
        };
        for id in ids {
            let th = &mut threads[id as usize];
            match s {
                Setting::Priority(p) => th.priority = p,
                Setting::Workload(w) => th.workload = w,
                Setting::Timer(x) => th.timer = x,
                Setting::Start(d) => th.start_ns = d,
                Setting::Finish(d) => th.finish_ns = Some(d),
                Setting::Reservation(r) => th.reservation = Some(r),
                Setting::Cpu(c) => th.cpu = Some(c),
            }
        }
    }
    let spec = spec_of(threads);
    validate(&spec)?;
    Ok((spec, out))
}

/// Checks a thread set for contradictions (also used on scenario files). Pure.
pub fn validate(spec: &RunSpec) -> Result<(), CmdError> {
    if spec.threads.is_empty() {
        return Err(err("-n", "at least one thread is needed"));
    }
    for th in &spec.threads {
        let fin = th.finish_ns.unwrap_or(spec.duration_ns);
        if th.start_ns >= fin {
            return Err(err(
                if th.finish_ns.is_some() { "-f" } else { "-s" },
                format!(
                    "thread {} would start at {} and finish at {}: nothing to run",
                    th.id,
                    latlab_core::units::format_ns(th.start_ns as f64),
                    latlab_core::units::format_ns(fin as f64)
                ),
            ));
        }
        if fin > spec.duration_ns {
            return Err(err(
                "-f",
                format!("thread {} finishes after the run's end (-d)", th.id),
            ));
        }
        if th.reservation.is_some() && th.cpu.is_some() {
            return Err(err(
                "--cpu",
                format!(
                    "thread {} has a reservation (-rh/-rs): the kernel admits SCHED_DEADLINE \
                     only for threads free to run on every CPU of their root domain; drop --cpu",
                    th.id
                ),
            ));
        }
    }
    Ok(())
}

/// Spells `ns` as a duration that [`parse_duration`] reads back exactly: in the largest
/// unit that leaves a whole part, with decimals only where needed (`900us`, `5.3ms`, `2s`).
pub fn format_duration(ns: u64) -> String {
    let (unit, scale) = [("s", 1_000_000_000u64), ("ms", 1_000_000), ("us", 1_000)]
        .into_iter()
        .find(|&(_, s)| ns >= s)
        .unwrap_or(("ns", 1));
    let (whole, frac) = (ns / scale, ns % scale);
    if frac == 0 {
        return format!("{whole}{unit}");
    }
    let width = scale.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    format!("{whole}.{}{unit}", digits.trim_end_matches('0'))
}

/// The words after `-w` for `w`, e.g. `PERIODIC 4ms 5ms` (as [`parse_model`] reads them).
fn model_words(w: &Workload) -> Vec<String> {
    let d = |ns: u64| format_duration(ns);
    let mut v = vec![w.name().to_owned()];
    match *w {
        Workload::Cpu => {}
        Workload::CpuScan { kb } => v.push(format!("{kb}KB")),
        Workload::CpuYield { amount_ns } => v.push(d(amount_ns)),
        Workload::CpuScanYield { kb, amount_ns } => v.extend([format!("{kb}KB"), d(amount_ns)]),
        Workload::Periodic {
            amount_ns,
            period_ns,
        }
        | Workload::CpuPeriodic {
            amount_ns,
            period_ns,
        } => v.extend([d(amount_ns), d(period_ns)]),
        Workload::Lat { period_ns } => v.push(d(period_ns)),
    }
    v
}

/// The per-thread options of `t`: `-p` (left out for a reservation at the default
/// priority), `-w` always, and the rest where they differ from the defaults.
fn thread_words(t: &ThreadSpec) -> Vec<String> {
    let mut v = Vec::new();
    if t.reservation.is_none() || t.priority != Priority::Normal {
        v.extend(["-p".to_owned(), t.priority.name().to_owned()]);
    }
    v.push("-w".to_owned());
    v.extend(model_words(&t.workload));
    if t.timer != Timer::Native {
        v.extend(["-i".to_owned(), t.timer.name().to_owned()]);
    }
    if t.start_ns != 0 {
        v.extend(["-s".to_owned(), format_duration(t.start_ns)]);
    }
    if let Some(f) = t.finish_ns {
        v.extend(["-f".to_owned(), format_duration(f)]);
    }
    if let Some(r) = t.reservation {
        let flag = if r.soft { "-rs" } else { "-rh" };
        v.extend([
            flag.to_owned(),
            format_duration(r.amount_ns),
            format_duration(r.period_ns),
        ]);
    }
    if let Some(c) = t.cpu {
        v.extend(["--cpu".to_owned(), c.to_string()]);
    }
    v
}

/// Spells `spec` (threads numbered 0..n, at least one) as the Hourglass command line that
/// [`parse`] reads back into it: the run-wide options, then `-a` and the settings when
/// every thread has the same ones, else `-t <n>` and its settings for each thread. Output
/// options are not part of a [`RunSpec`] and are not spelled.
pub fn render(spec: &RunSpec) -> Vec<String> {
    let mut v = vec![
        "-d".to_owned(),
        format_duration(spec.duration_ns),
        "-n".to_owned(),
        spec.threads.len().to_string(),
    ];
    if spec.records != RunSpec::DEFAULT_RECORDS {
        v.extend(["-e".to_owned(), spec.records.to_string()]);
    }
    if spec.raw_cycles {
        v.push("-c".to_owned());
    }
    for (flag, ns) in [
        ("--gap", spec.gap_ns),
        ("--timer-slack", spec.timer_slack_ns),
    ] {
        if let Some(ns) = ns {
            v.extend([flag.to_owned(), format_duration(ns)]);
        }
    }
    if let Some(us) = spec.dma_latency_us {
        v.extend(["--dma-latency".to_owned(), us.to_string()]);
    }
    let unnumbered = |t: &ThreadSpec| ThreadSpec { id: 0, ..t.clone() };
    match spec.threads.split_first() {
        Some((first, rest))
            if !rest.is_empty() && rest.iter().all(|t| unnumbered(t) == unnumbered(first)) =>
        {
            v.push("-a".to_owned());
            v.extend(thread_words(first));
        }
        _ => {
            for t in &spec.threads {
                v.extend(["-t".to_owned(), t.id.to_string()]);
                v.extend(thread_words(t));
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<(RunSpec, OutputOptions), CmdError> {
        let v: Vec<String> = s.split_whitespace().map(str::to_owned).collect();
        parse(&v)
    }

    #[test]
    fn paper_figure_3_command() {
        let (s, _) = p("-n 3 -d 5s -t 0 -p LOW -t 1 -p NORMAL -t 2 -p HIGH").unwrap();
        assert_eq!(s.duration_ns, 5_000_000_000);
        let prios: Vec<Priority> = s.threads.iter().map(|t| t.priority).collect();
        assert_eq!(prios, [Priority::Low, Priority::Normal, Priority::High]);
        assert!(s.threads.iter().all(|t| t.workload == Workload::Cpu));
        assert_eq!(s.records, 300_000);
    }

    #[test]
    fn all_threads_then_models_with_arguments() {
        let (s, _) = p("-d 60s -n 10 -a -p NORMAL -w CPU_YIELD 0.9ms").unwrap();
        assert_eq!(s.threads.len(), 10);
        assert!(s
            .threads
            .iter()
            .all(|t| t.workload == Workload::CpuYield { amount_ns: 900_000 }));
        let (s, _) =
            p("-n 2 -t 0 -p RTMED -w PERIODIC 3ms 8ms -i HR -t 1 -p RTLOW -w PERIODIC 17ms 33ms -i NATIVE")
                .unwrap();
        assert_eq!(
            s.threads[1].workload,
            Workload::Periodic {
                amount_ns: 17_000_000,
                period_ns: 33_000_000
            }
        );
        assert_eq!(s.threads[0].timer, Timer::Hr);
        assert_eq!(s.threads[1].priority, Priority::Rtlow);
        let (s, _) = p("-d 6m -n 1 -t 0 -p RTHIGH -w LAT 5.3ms -i HR").unwrap();
        assert_eq!(s.duration_ns, 360_000_000_000);
        assert_eq!(
            s.threads[0].workload,
            Workload::Lat {
                period_ns: 5_300_000
            }
        );
        let (s, _) = p("-n 1 -t 0 -w CPU_SCAN_YIELD 64KB 1020ms -w CPU_SCAN 1MB").unwrap();
        assert_eq!(s.threads[0].workload, Workload::CpuScan { kb: 1024 });
    }

    #[test]
    fn reservations_offsets_and_placement() {
        let (s, _) = p(
            "-n 2 -t 0 -w PERIODIC 3ms 8ms -rh 3.1ms 8ms -t 1 -w PERIODIC 17ms 33ms -rs 17.1ms 33ms -s 1s -f 2s",
        )
        .unwrap();
        assert_eq!(
            s.threads[0].reservation,
            Some(Reservation {
                amount_ns: 3_100_000,
                period_ns: 8_000_000,
                soft: false
            })
        );
        assert!(s.threads[1].reservation.unwrap().soft);
        assert_eq!(
            (s.threads[1].start_ns, s.threads[1].finish_ns),
            (1_000_000_000, Some(2_000_000_000))
        );
        let (s, o) =
            p("-n 2 -a --cpu 1 -t 0 --cpu 0 --gap 100ns -o r.json -q -c -e 1000 --dma-latency 0")
                .unwrap();
        assert_eq!(s.dma_latency_us, Some(0));
        assert_eq!((s.threads[0].cpu, s.threads[1].cpu), (Some(0), Some(1)));
        assert_eq!(s.gap_ns, Some(100));
        assert_eq!(o.output, Some(PathBuf::from("r.json")));
        assert!(o.quiet && s.raw_cycles);
        assert_eq!(s.records, 1000);
    }

    #[test]
    fn errors_name_the_flag() {
        let cases = [
            ("-d 5s", "-n"),
            ("-n 0", "-n"),
            ("-n 2 -p LOW", "-p"),
            ("-n 2 -t 5 -p LOW", "-t"),
            ("-n 1 -t 0 -p SUPER", "-p"),
            ("-n 1 -t 0 -w WALK", "-w"),
            ("-n 1 -t 0 -w PERIODIC 3ms", "-w"),
            ("-n 1 -t 0 -w PERIODIC 9ms 8ms", "-w PERIODIC"),
            ("-n 1 -t 0 -w CPU_SCAN lots", "-w CPU_SCAN"),
            ("-n 1 -d 5", "-d"),
            ("-n 1 -t 0 -i RTC", "-i"),
            ("-n 1 -t 0 -i MM", "-i"),
            ("-n 1 -t 0 -rh 9ms 8ms", "-rh"),
            ("-n 1 -t 0 -rs 100ns 8ms", "-rs"),
            ("-n 1 -t 0 -rh 1ms 8ms --cpu 0", "--cpu"),
            ("-n 1 -t 0 -s 2s -d 1s", "-s"),
            ("-n 1 -x", "-x"),
            ("-n 1 -e many", "-e"),
            ("-n 1 --dma-latency -1", "--dma-latency"),
        ];
        for (line, flag) in cases {
            let e = p(line).unwrap_err();
            assert_eq!(e.flag, flag, "{line}: {e}");
            assert!(!e.to_string().contains('\n'));
        }
        let e = p("-n 1 -t 0 -i RTC").unwrap_err();
        assert!(
            e.message.contains("HR") && e.message.contains("TIMERFD"),
            "{e}"
        );
        let e = p("-n 1 -d 5").unwrap_err();
        assert!(e.message.contains("1.5s"), "{e}");
    }

    #[test]
    fn scenario_excludes_thread_options() {
        let (s, o) = p("--scenario s.toml -d 2s").unwrap();
        assert!(s.threads.is_empty());
        assert_eq!(o.scenario, Some(PathBuf::from("s.toml")));
        assert_eq!(p("--scenario s.toml -n 2").unwrap_err().flag, "--scenario");
    }

    #[test]
    fn durations_are_spelled_so_they_read_back_exactly() {
        for (ns, word) in [
            (0, "0ns"),
            (999, "999ns"),
            (1_000, "1us"),
            (900_000, "900us"),
            (5_300_000, "5.3ms"),
            (3_100_000, "3.1ms"),
            (2_000_000_000, "2s"),
            (1_000_000_001, "1.000000001s"),
            (360_000_000_000, "360s"),
        ] {
            assert_eq!(format_duration(ns), word);
        }
        let mut x: u64 = 1;
        for _ in 0..2000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let ns = x >> (x % 40 + 4);
            assert_eq!(parse_duration(&format_duration(ns)).unwrap().get(), ns);
        }
    }

    fn round_trip(line: &str) -> RunSpec {
        let (s, _) = p(line).unwrap();
        let words = render(&s);
        let (back, out) = parse(&words).unwrap();
        assert_eq!(back, s, "{line} -> {}", words.join(" "));
        assert_eq!(out, OutputOptions::default());
        s
    }

    #[test]
    fn a_rendered_spec_parses_back_to_itself() {
        round_trip("-n 3 -d 5s -t 0 -p LOW -t 1 -p NORMAL -t 2 -p HIGH");
        round_trip("-n 1 -t 0 -p IDLE -w CPU_SCAN_YIELD 1MB 1020ms -i TIMERFD -s 1s -f 2s");
        round_trip(
            "-n 3 -d 3s -e 1000 -c --gap 100ns --timer-slack 0ns --dma-latency 0 \
             -a -w CPU_PERIODIC 1.5ms 10ms -i BUSY -t 2 -w CPU_SCAN 64KB -p HIGHEST",
        );
        round_trip("-n 2 -t 0 -w PERIODIC 3ms 8ms -rh 3.1ms 8ms -t 1 -p RTLOW -rs 17ms 33ms");
        // the same settings on every thread are spelled once, with -a
        let s = round_trip("-d 2s -n 10 -e 1000000 -a -p NORMAL -w CPU_YIELD 0.9ms --cpu 3");
        assert_eq!(
            render(&s).join(" "),
            "-d 2s -n 10 -e 1000000 -a -p NORMAL -w CPU_YIELD 900us --cpu 3"
        );
        // one thread is numbered, and priority is left out for a reservation
        let s = round_trip("-n 1 -t 0 -w LAT 5.3ms -rh 1ms 8ms");
        assert_eq!(
            render(&s).join(" "),
            "-d 10s -n 1 -t 0 -w LAT 5.3ms -rh 1ms 8ms"
        );
    }
}

//! The `latlab sched` runs of each scenario, as typed values: what the scenarios run, and
//! (spelled by [`crate::cmdline::render`]) what their summaries say to run again.

use crate::cache::CacheCostConfig;
use crate::spec::{Priority, Reservation, RunSpec, ThreadSpec, Timer, Workload};

/// Trace records of the 5.1 runs (ten threads switching every few ms).
const RECORDS_51: u64 = 1_000_000;

/// Threads of the 5.1 runs and of the contended 5.2 runs, as in the paper.
pub(super) const THREADS: u32 = 10;

/// A thread with these settings, the rest at their defaults.
fn thread(id: u32, priority: Priority, workload: Workload, timer: Timer, cpu: u32) -> ThreadSpec {
    ThreadSpec {
        priority,
        workload,
        timer,
        cpu: Some(cpu),
        ..ThreadSpec::new(id)
    }
}

/// A run of `duration_ns` with these threads, the rest at Hourglass's defaults.
fn run(duration_ns: u64, threads: Vec<ThreadSpec>) -> RunSpec {
    RunSpec {
        threads,
        duration_ns,
        records: RunSpec::DEFAULT_RECORDS,
        raw_cycles: false,
        gap_ns: None,
        timer_slack_ns: None,
        dma_latency_us: None,
    }
}

fn ms(n: u64) -> u64 {
    n * 1_000_000
}

fn periodic(amount_ns: u64, period_ns: u64) -> Workload {
    Workload::Periodic {
        amount_ns,
        period_ns,
    }
}

/// 5.1: ten CPU-bound threads on one CPU, then ten that yield after 0.9 ms of CPU.
pub(super) fn s51(d: u64, cpu: u32) -> [(&'static str, RunSpec); 2] {
    let all = |w: Workload| RunSpec {
        records: RECORDS_51,
        ..run(
            d,
            (0..THREADS)
                .map(|i| thread(i, Priority::Normal, w, Timer::Native, cpu))
                .collect(),
        )
    };
    [
        ("5.1-cpu", all(Workload::Cpu)),
        ("5.1-yield", all(Workload::CpuYield { amount_ns: 900_000 })),
    ]
}

/// 5.2: the cache-cost sweep, each of its runs a fifth of the scenario's run length `d`
/// (at least 100 ms), every thread on `cpu`; `quick` measures fewer sizes and trials.
pub fn s52(quick: bool, d: u64, cpu: u32) -> CacheCostConfig {
    CacheCostConfig {
        sizes_kb: if quick {
            vec![4, 256, 4096]
        } else {
            vec![4, 16, 64, 256, 1024, 4096]
        },
        trials: if quick { 2 } else { 3 },
        duration_ns: (d / 5).max(100_000_000),
        threads: THREADS,
        cpu,
    }
}

/// 5.3: one RTHIGH thread waking every 5.3 ms on an hrtimer (run idle, then under load).
pub(super) fn s53(d: u64, cpu: u32) -> RunSpec {
    let lat = Workload::Lat {
        period_ns: 5_300_000,
    };
    run(d, vec![thread(0, Priority::Rthigh, lat, Timer::Hr, cpu)])
}

/// 5.4: one RTHIGH thread needing 4 ms in every 5 ms (run alone, then with traffic).
pub(super) fn s54(d: u64, cpu: u32) -> RunSpec {
    let w = periodic(ms(4), ms(5));
    run(d, vec![thread(0, Priority::Rthigh, w, Timer::Hr, cpu)])
}

/// 5.5: two periodic threads on one CPU, the second with three timers and amounts.
pub(super) fn s55(d: u64, cpu: u32) -> [(&'static str, RunSpec); 3] {
    let pair = |amount_ms: u64, timer: Timer| {
        run(
            d,
            vec![
                thread(0, Priority::Rtmed, periodic(ms(3), ms(8)), Timer::Hr, cpu),
                thread(
                    1,
                    Priority::Rtlow,
                    periodic(ms(amount_ms), ms(33)),
                    timer,
                    cpu,
                ),
            ],
        )
    };
    [
        ("5.5-native", pair(17, Timer::Native)),
        ("5.5-hr", pair(17, Timer::Hr)),
        ("5.5-12ms", pair(12, Timer::Native)),
    ]
}

/// 5.6: the two 5.5 tasks under SCHED_DEADLINE, with a budget of exactly the work and
/// with 0.1 ms of slack.
pub(super) fn s56(d: u64) -> [(&'static str, RunSpec); 2] {
    let reserved = |id: u32, amount_ns: u64, period_ns: u64, budget_ns: u64| ThreadSpec {
        workload: periodic(amount_ns, period_ns),
        reservation: Some(Reservation {
            amount_ns: budget_ns,
            period_ns,
            soft: false,
        }),
        ..ThreadSpec::new(id)
    };
    let pair = |slack_ns: u64| {
        run(
            d,
            vec![
                reserved(0, ms(3), ms(8), ms(3) + slack_ns),
                reserved(1, ms(17), ms(33), ms(17) + slack_ns),
            ],
        )
    };
    [("5.6-exact", pair(0)), ("5.6-slack", pair(100_000))]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmdline::{parse, render, validate};

    /// Every run of every scenario, for a run length and CPU.
    fn all(d: u64, cpu: u32) -> Vec<(&'static str, RunSpec)> {
        let mut v = Vec::new();
        v.extend(s51(d, cpu));
        v.push(("5.3", s53(d, cpu)));
        v.push(("5.4", s54(d, cpu)));
        v.extend(s55(d, cpu));
        v.extend(s56(d));
        v
    }

    fn parsed(line: &str) -> RunSpec {
        let words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        parse(&words).unwrap_or_else(|e| panic!("{line}: {e}")).0
    }

    #[test]
    fn each_run_is_what_its_hourglass_command_line_says() {
        let cpu = "--cpu 3";
        let lines = [
            format!("-d 2s -n 10 -e 1000000 -a -p NORMAL -w CPU {cpu}"),
            format!("-d 2s -n 10 -e 1000000 -a -p NORMAL -w CPU_YIELD 0.9ms {cpu}"),
            format!("-d 2s -n 1 -t 0 -p RTHIGH -w LAT 5.3ms -i HR {cpu}"),
            format!("-d 2s -n 1 -t 0 -p RTHIGH -w PERIODIC 4ms 5ms -i HR {cpu}"),
            format!("-d 2s -n 2 -t 0 -p RTMED -w PERIODIC 3ms 8ms -i HR {cpu} -t 1 -p RTLOW -w PERIODIC 17ms 33ms -i NATIVE {cpu}"),
            format!("-d 2s -n 2 -t 0 -p RTMED -w PERIODIC 3ms 8ms -i HR {cpu} -t 1 -p RTLOW -w PERIODIC 17ms 33ms -i HR {cpu}"),
            format!("-d 2s -n 2 -t 0 -p RTMED -w PERIODIC 3ms 8ms -i HR {cpu} -t 1 -p RTLOW -w PERIODIC 12ms 33ms -i NATIVE {cpu}"),
            "-d 2s -n 2 -t 0 -w PERIODIC 3ms 8ms -rh 3ms 8ms -t 1 -w PERIODIC 17ms 33ms -rh 17ms 33ms".to_owned(),
            "-d 2s -n 2 -t 0 -w PERIODIC 3ms 8ms -rh 3.1ms 8ms -t 1 -w PERIODIC 17ms 33ms -rh 17.1ms 33ms".to_owned(),
        ];
        let runs = all(2_000_000_000, 3);
        assert_eq!(runs.len(), lines.len());
        for ((name, spec), line) in runs.iter().zip(&lines) {
            assert_eq!(&parsed(line), spec, "{name}: {line}");
        }
    }

    #[test]
    fn each_run_renders_to_a_line_that_parses_back_to_it() {
        for d in [100_000_000, 1_500_000_000, 60_000_000_000] {
            for (name, spec) in all(d, 1) {
                validate(&spec).unwrap_or_else(|e| panic!("{name}: {e}"));
                let line = render(&spec).join(" ");
                assert_eq!(parsed(&line), spec, "{name}: {line}");
            }
        }
    }

    #[test]
    fn the_cache_cost_step_is_a_valid_sweep_shorter_than_the_scenario() {
        let cpu = *latlab_sys::sched::allowed_cpus().first().unwrap();
        for quick in [true, false] {
            let c = s52(quick, 2_000_000_000, cpu);
            c.validate().unwrap();
            assert_eq!(c.duration_ns, 400_000_000);
            assert_eq!(c.threads, THREADS);
        }
        assert_eq!(s52(true, 100_000_000, cpu).duration_ns, 100_000_000);
    }
}

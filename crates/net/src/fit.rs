//! What this host can sustain, checked before an experiment: which CPUs are quiet, where
//! the threads that must not be disturbed go, and real-time throttling lifted for a
//! `SCHED_FIFO` thread. `latlab experiment killer-us`, where-time and the Hourglass
//! experiment place their threads by it; killer-us's rate trials and budget are its own
//! ([`crate::killer_us`]).
//!
//! The decision ([`choose_cpus`]) is pure; the
//! quiet-CPU probe ([`quiet_cpu`]) spins on one CPU and records the gaps in which it did
//! not run, into a fixed-size summary ([`GapStats`]).

use latlab_core::units::{format_ns, Nanos};
use serde::{Deserialize, Serialize};

/// What to do about real-time throttling before running `who` (a thread that spins under
/// `SCHED_FIFO`): `Ok(guard)` to run it, with throttling off while the guard lives when it
/// was on, and the sentence saying so; `Err(reason)` when it cannot be run meaningfully
/// here. Throttled, the kernel stops such a thread for 50 ms of every second (the default
/// `kernel.sched_rt_runtime_us` 950000 of 1000000), even with nothing else to run.
pub fn unthrottle_for_fifo(
    who: &str,
) -> Result<(Option<latlab_sys::rt_throttle::Unthrottled>, String), String> {
    use latlab_sys::rt_throttle::{Unthrottled, RT_RUNTIME_PATH};
    match latlab_sys::netstat::rt_runtime_us() {
        Some(-1) => Ok((
            None,
            "real-time throttling was already off (kernel.sched_rt_runtime_us -1)".into(),
        )),
        limit => {
            let limit = limit
                .map(|l| l.to_string())
                .unwrap_or_else(|| "unreadable".into());
            if !latlab_sys::netns::is_root() {
                return Err(format!("not measurable on this host: real-time throttling is on (kernel.sched_rt_runtime_us {limit}), which stops a spinning SCHED_FIFO {who} for 50 ms of every second, and switching it off needs root"));
            }
            match Unthrottled::engage() {
                Ok(g) => Ok((Some(g), format!("ran with real-time throttling off, so that the spinning SCHED_FIFO {who} keeps its CPU (kernel.sched_rt_runtime_us -1 while it ran; {limit} before and after)"))),
                Err(e) => Err(format!("not measurable on this host: real-time throttling is on (kernel.sched_rt_runtime_us {limit}) and could not be switched off ({RT_RUNTIME_PATH}: {e}); it would stop the spinning SCHED_FIFO {who} for 50 ms of every second")),
            }
        }
    }
}

/// A gap longer than this, between two clock reads of a spinning thread, means the
/// thread did not run (an interrupt, another task, the hypervisor).
pub const GAP_THRESHOLD_NS: u64 = 10_000;

/// How long the quiet-CPU probe spins on each CPU.
pub const QUIET_PROBE: Nanos = Nanos(200_000_000);

/// Gaps seen by a thread spinning on a clock: a fixed-size summary, updated without
/// allocating.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GapStats {
    /// Time observed, ns.
    pub observed_ns: u64,
    /// Gaps above [`GAP_THRESHOLD_NS`].
    pub gaps: u64,
    /// Their total, ns.
    pub gap_total_ns: u64,
    /// The longest gap, ns.
    pub longest_ns: u64,
}

impl GapStats {
    /// Accounts one step of `delta_ns` between two clock reads.
    pub fn observe(&mut self, delta_ns: u64) {
        self.observed_ns += delta_ns;
        if delta_ns > GAP_THRESHOLD_NS {
            self.gaps += 1;
            self.gap_total_ns += delta_ns;
            self.longest_ns = self.longest_ns.max(delta_ns);
        }
    }

    /// The share of the observed time spent in gaps (0 when nothing was observed).
    pub fn lost_share(&self) -> f64 {
        if self.observed_ns == 0 {
            0.0
        } else {
            self.gap_total_ns as f64 / self.observed_ns as f64
        }
    }
}

/// One CPU's quiet-probe result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuQuiet {
    /// The CPU.
    pub cpu: u32,
    /// What the spinning thread saw (`None`: it could not be pinned there).
    pub stats: Option<GapStats>,
}

impl CpuQuiet {
    /// One line for a reader: "CPU 1: lost 0.4 % in 12 gaps > 10 µs, longest 1.2 ms".
    pub fn describe(&self) -> String {
        match &self.stats {
            Some(s) => format!(
                "CPU {}: lost {:.2} % of {} in {} gaps over {}, longest {}",
                self.cpu,
                s.lost_share() * 100.0,
                format_ns(s.observed_ns as f64),
                s.gaps,
                format_ns(GAP_THRESHOLD_NS as f64),
                format_ns(s.longest_ns as f64)
            ),
            None => format!("CPU {}: could not be probed", self.cpu),
        }
    }
}

/// Spins on `cpu` (at `SCHED_FIFO` `fifo` when given, so that only interrupts and the
/// hypervisor can take the CPU away, as from the generator) for `spin` and returns the
/// gaps it saw. `None` when the thread cannot be placed there.
pub fn quiet_cpu(cpu: u32, fifo: Option<i32>, spin: Nanos) -> Option<GapStats> {
    std::thread::spawn(move || {
        latlab_sys::sched::place_current_thread(Some(cpu), fifo).ok()?;
        let mut stats = GapStats::default();
        let start = latlab_sys::clocks::monotonic_ns();
        let mut last = start;
        while last - start < spin.get() {
            let now = latlab_sys::clocks::monotonic_ns();
            stats.observe(now - last);
            last = now;
        }
        Some(stats)
    })
    .join()
    .ok()
    .flatten()
}

/// Spins on every CPU in `cpus` for [`QUIET_PROBE`] (at `SCHED_FIFO` `fifo` when given)
/// and returns what each saw, in CPU order.
pub fn probe_cpus(cpus: &[u32], fifo: Option<i32>) -> Vec<CpuQuiet> {
    cpus.iter()
        .map(|&cpu| CpuQuiet {
            cpu,
            stats: quiet_cpu(cpu, fifo, QUIET_PROBE),
        })
        .collect()
}

/// One sentence for a reader on where the generator and the NF were placed from the
/// quiet-CPU probe `quiet` (`gen_cpu`, `nf_cpu` as [`choose_cpus`] chose them).
pub fn placement_sentence(quiet: &[CpuQuiet], nf_cpu: u32, gen_cpu: u32) -> String {
    let choice = if nf_cpu == gen_cpu {
        format!("the generator and the NF share CPU {gen_cpu} (one CPU only, so the generator's own work is in every latency)")
    } else {
        format!("the generator runs on CPU {gen_cpu}, the quietest, since its lateness decides whether a run can be trusted, and the NF on CPU {nf_cpu}")
    };
    format!("Placement: {choice}; {}.", probe_clause(quiet))
}

/// The part of every placement sentence that says what the choice rests on: "a thread
/// spun 200 ms on each CPU first (CPU 0: …; CPU 1: …)", from the quiet-CPU probe `quiet`.
/// The experiments that place their threads by [`choose_cpus`] (killer-us' calibration,
/// Hourglass, where-time) say their choice and then this.
pub fn probe_clause(quiet: &[CpuQuiet]) -> String {
    let seen: Vec<String> = quiet.iter().map(CpuQuiet::describe).collect();
    format!(
        "a thread spun {} on each CPU first ({})",
        format_ns(QUIET_PROBE.get() as f64),
        seen.join("; ")
    )
}

/// The CPUs for the generator and the NF: the generator gets the quietest CPU (its
/// lateness is what the trust checks judge), the NF the quietest of the others; on a
/// one-CPU host both share it. Ties keep the CPU order. Returns `(nf_cpu, gen_cpu)`.
pub fn choose_cpus(quiet: &[CpuQuiet]) -> Option<(u32, u32)> {
    let mut ranked: Vec<&CpuQuiet> = quiet.iter().filter(|q| q.stats.is_some()).collect();
    ranked.sort_by(|a, b| {
        let share = |q: &CpuQuiet| q.stats.map(|s| s.lost_share()).unwrap_or(1.0);
        share(a).total_cmp(&share(b))
    });
    let gen = ranked.first()?.cpu;
    let nf = ranked.get(1).map(|q| q.cpu).unwrap_or(gen);
    Some((nf, gen))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_above_the_threshold_are_counted() {
        let mut g = GapStats::default();
        for d in [100, 200, 50_000, 300, 2_000_000] {
            g.observe(d);
        }
        assert_eq!(g.gaps, 2);
        assert_eq!(g.gap_total_ns, 2_050_000);
        assert_eq!(g.longest_ns, 2_000_000);
        assert_eq!(g.observed_ns, 2_050_600);
        assert!(g.lost_share() > 0.99);
        assert_eq!(GapStats::default().lost_share(), 0.0);
    }

    #[test]
    fn the_generator_gets_the_quietest_cpu() {
        let q = |cpu, lost| CpuQuiet {
            cpu,
            stats: Some(GapStats {
                observed_ns: 1_000,
                gaps: 1,
                gap_total_ns: lost,
                longest_ns: lost,
            }),
        };
        assert_eq!(choose_cpus(&[q(0, 300), q(1, 10), q(2, 100)]), Some((2, 1)));
        assert_eq!(choose_cpus(&[q(3, 5)]), Some((3, 3)));
        let unplaced = CpuQuiet {
            cpu: 0,
            stats: None,
        };
        assert_eq!(choose_cpus(&[unplaced.clone(), q(1, 50)]), Some((1, 1)));
        assert_eq!(choose_cpus(&[unplaced]), None);
    }

    #[test]
    fn the_placement_sentence_ends_with_the_probe_clause() {
        let quiet = [
            CpuQuiet {
                cpu: 0,
                stats: None,
            },
            CpuQuiet {
                cpu: 1,
                stats: Some(GapStats::default()),
            },
        ];
        let clause = probe_clause(&quiet);
        assert!(
            clause.starts_with("a thread spun 200")
                && clause.contains("CPU 0: could not be probed; CPU 1: lost 0.00 %"),
            "{clause}"
        );
        let s = placement_sentence(&quiet, 0, 1);
        assert!(
            s.starts_with("Placement: the generator runs on CPU 1"),
            "{s}"
        );
        assert!(s.ends_with(&format!("; {clause}.")), "{s}");
    }
}

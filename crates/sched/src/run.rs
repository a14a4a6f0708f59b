//! Running a thread set: setting each thread up (placement, timer slack, policy or
//! reservation, locked buffers), releasing them together, running each execution model
//! until its finish time, and collecting what they recorded.
//!
//! Setup happens before the run starts; the first refusal aborts the whole run with an
//! error naming the thread and the reason. During the run, threads touch only their own
//! preallocated memory; the main thread sleeps.

use crate::model::{Activation, Anchor, Block, RunOutcome, ThreadRun};
use crate::recorder::{calibrate_loop, EndReason, LoopCalibration, RawRecord, Recorder};
use crate::spec::{Policy, RunSpec, ThreadSpec, Timer, Workload};
use latlab_sys::clocks::monotonic_ns;
use latlab_sys::rt::{self, Deadline, RtError};
use latlab_sys::sched::{self, SchedError};
use latlab_sys::timer::{self, TimerFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};

/// Why a run could not be set up or completed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The kernel refused a thread's priority or reservation.
    #[error("thread {thread}: {source}")]
    Policy {
        /// The thread.
        thread: u32,
        /// The refusal, with reason and remedy.
        #[source]
        source: RtError,
    },
    /// A thread could not be pinned or put under SCHED_FIFO.
    #[error("thread {thread}: {source}")]
    Placement {
        /// The thread.
        thread: u32,
        /// The refusal.
        #[source]
        source: SchedError,
    },
    /// A system call failed during setup or the run.
    #[error("thread {thread}: {what}: {source}")]
    Os {
        /// The thread.
        thread: u32,
        /// What was being done.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A thread panicked.
    #[error("thread {0} panicked")]
    Panicked(u32),
    /// `/dev/cpu_dma_latency` could not be opened or written.
    #[error("--dma-latency: /dev/cpu_dma_latency: {0}")]
    DmaLatency(#[source] std::io::Error),
}

/// Run-wide parameters the caller establishes (the TSC rate) and how long setup may take.
#[derive(Clone, Copy, Debug)]
pub struct RunParams {
    /// TSC rate, Hz.
    pub tsc_hz: u64,
    /// Calibration iterations per loop kind.
    pub calibration_iterations: usize,
}

struct Shared {
    barrier: Barrier,
    go: Barrier,
    abort: AtomicBool,
    t0_mono: AtomicU64,
    anchor: Mutex<Option<Anchor>>,
    errors: Mutex<Vec<RunError>>,
}

/// Per-thread state built during setup.
struct Prepared {
    rec: Recorder,
    acts: Vec<Activation>,
    lat: bool,
    scan: Option<Vec<u64>>,
    tfd: Option<TimerFd>,
}

fn setup_thread(
    th: &ThreadSpec,
    spec: &RunSpec,
    cap: usize,
    gap_ticks: u64,
) -> Result<(Prepared, Option<String>), RunError> {
    let id = th.id;
    if let Some(cpu) = th.cpu {
        sched::pin_current_thread(cpu)
            .map_err(|source| RunError::Placement { thread: id, source })?;
    }
    if let Some(slack) = spec.timer_slack_ns {
        rt::set_timer_slack_ns(slack).map_err(|source| RunError::Policy { thread: id, source })?;
    }
    let life = th.finish_ns.unwrap_or(spec.duration_ns) - th.start_ns;
    let acts_cap = match th.workload {
        Workload::Periodic { period_ns, .. } | Workload::CpuPeriodic { period_ns, .. } => {
            (life / period_ns + 2) as usize
        }
        Workload::Lat { period_ns } => (life / period_ns + 2) as usize,
        _ => 0,
    };
    let lat = matches!(th.workload, Workload::Lat { .. });
    let (rec, warn) = Recorder::new(if lat { 1 } else { cap }, gap_ticks);
    let mut acts = vec![
        Activation {
            index: 0,
            release_ns: 0,
            start_ns: 0,
            finish_ns: None,
            deadline_ns: 0,
            cpu_by_deadline_ns: 0,
            waited: false,
            frames: 0,
        };
        acts_cap
    ];
    let _ = rt::lock_slice(&mut acts);
    acts.clear();
    let scan = th
        .workload
        .scan_kb()
        .map(|kb| vec![1u64; (kb as usize * 1024 / 8).max(8)]);
    let tfd = if th.timer == Timer::Timerfd {
        Some(TimerFd::new().map_err(|source| RunError::Os {
            thread: id,
            what: "timerfd_create".into(),
            source,
        })?)
    } else {
        None
    };
    // Policy last: a real-time thread must not spin before the run starts.
    if let Some(r) = th.reservation {
        rt::set_deadline(&Deadline {
            runtime_ns: r.amount_ns,
            deadline_ns: r.period_ns,
            period_ns: r.period_ns,
            reclaim: r.soft,
        })
        .map_err(|source| RunError::Policy { thread: id, source })?;
    } else {
        match th.priority.policy() {
            Policy::Idle => {
                rt::set_idle().map_err(|source| RunError::Policy { thread: id, source })?
            }
            Policy::Nice(n) => {
                rt::set_nice(n).map_err(|source| RunError::Policy { thread: id, source })?
            }
            Policy::Fifo(p) => sched::set_fifo(p as i32)
                .map_err(|source| RunError::Placement { thread: id, source })?,
        }
    }
    Ok((
        Prepared {
            rec,
            acts,
            lat,
            scan,
            tfd,
        },
        warn,
    ))
}

/// Waits until monotonic time `target` with `timer`, keeping the recorder's account
/// (the block before the wait ends as a sleep; BUSY keeps polling so its spinning shows).
fn wait_until(
    timer: Timer,
    target: u64,
    rec: &mut Recorder,
    tfd: Option<&TimerFd>,
    tfd_periodic: bool,
    expirations: &mut u64,
) {
    match timer {
        Timer::Busy => {
            while monotonic_ns() < target {
                rec.poll();
            }
        }
        _ => {
            rec.pause(EndReason::Sleep);
            match (timer, tfd) {
                (Timer::Timerfd, Some(fd)) => {
                    if !tfd_periodic {
                        let _ = fd.arm(target, 0);
                    }
                    // A periodic timerfd may hold an expiration of a release already
                    // passed (a late job): read until the target is reached.
                    while let Ok(n) = fd.wait() {
                        *expirations += n;
                        if monotonic_ns() >= target {
                            break;
                        }
                    }
                }
                (Timer::Native, _) => {
                    let now = monotonic_ns();
                    if target > now {
                        timer::sleep_relative(target - now);
                    }
                }
                _ => timer::sleep_until(target),
            }
            rec.resume();
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn run_model(
    th: &ThreadSpec,
    p: &mut Prepared,
    anchor: Anchor,
    t0_mono: u64,
    end_mono: u64,
    expirations: &mut u64,
    passes: &mut u64,
    lines: &mut u64,
    yields: &mut u64,
    acts_dropped: &mut u64,
) {
    let start_mono = t0_mono + th.start_ns;
    let finish_tsc = anchor.tsc_of(end_mono);
    let rec = &mut p.rec;
    rec.set_end(finish_tsc);
    let mut push = |acts: &mut Vec<Activation>, a: Activation| {
        if acts.len() < acts.capacity() {
            acts.push(a);
        } else {
            *acts_dropped += 1;
        }
    };
    // the thread's own start
    if th.timer != Timer::Busy {
        timer::sleep_until(start_mono);
    } else {
        while monotonic_ns() < start_mono {
            std::hint::spin_loop();
        }
    }
    rec.resume();
    let rel = |t: u64| anchor.mono_of(t).saturating_sub(t0_mono);
    match th.workload {
        Workload::Cpu => while rec.poll() < finish_tsc {},
        Workload::CpuScan { .. } | Workload::CpuYield { .. } | Workload::CpuScanYield { .. } => {
            let amount = match th.workload {
                Workload::CpuYield { amount_ns } | Workload::CpuScanYield { amount_ns, .. } => {
                    anchor.ticks(amount_ns)
                }
                _ => u64::MAX,
            };
            let mut arr = p.scan.take();
            let mut idx = 0usize;
            let mut acc = 0u64;
            let mut next_yield = rec.received().saturating_add(amount);
            loop {
                let t = rec.poll();
                if t >= finish_tsc {
                    break;
                }
                if let Some(a) = arr.as_mut() {
                    acc = acc.wrapping_add(a[idx]);
                    idx += 8;
                    if idx >= a.len() {
                        idx = 0;
                        *passes += 1;
                    }
                }
                if rec.received() >= next_yield {
                    rec.pause(EndReason::Yield);
                    rt::yield_now();
                    *yields += 1;
                    rec.resume();
                    next_yield = rec.received().saturating_add(amount);
                }
            }
            std::hint::black_box(acc);
            if let Some(a) = arr.as_ref() {
                *lines = *passes * (a.len() as u64 / 8) + idx as u64 / 8;
            }
        }
        Workload::Periodic {
            amount_ns,
            period_ns,
        } => {
            let amount = anchor.ticks(amount_ns);
            let periodic_fd = p.tfd.is_some();
            if let Some(fd) = p.tfd.as_ref() {
                let _ = fd.arm(start_mono, period_ns);
            }
            let mut k = 0u64;
            loop {
                let release = start_mono + k * period_ns;
                if release >= end_mono {
                    break;
                }
                let deadline = release + period_ns;
                let deadline_tsc = anchor.tsc_of(deadline);
                let mut waited = false;
                if rec.last() < anchor.tsc_of(release) {
                    wait_until(
                        th.timer,
                        release,
                        rec,
                        p.tfd.as_ref(),
                        periodic_fd,
                        expirations,
                    );
                    waited = true;
                }
                let s = rec.poll();
                let base = rec.received();
                let mut by_deadline = None;
                let mut finished = None;
                loop {
                    let t = rec.poll();
                    let got = rec.received() - base;
                    if got >= amount {
                        finished = Some(t);
                        break;
                    }
                    if t >= deadline_tsc && by_deadline.is_none() {
                        by_deadline = Some(got);
                    }
                    if t >= finish_tsc {
                        break;
                    }
                }
                let cpu = by_deadline.unwrap_or(rec.received() - base);
                push(
                    &mut p.acts,
                    Activation {
                        index: k,
                        release_ns: release - t0_mono,
                        start_ns: rel(s),
                        finish_ns: finished.map(rel),
                        deadline_ns: deadline - t0_mono,
                        cpu_by_deadline_ns: (u128::from(cpu) * 1_000_000_000
                            / u128::from(anchor.hz))
                            as u64,
                        waited,
                        frames: 0,
                    },
                );
                if finished.is_none() {
                    break;
                }
                k += 1;
            }
        }
        Workload::CpuPeriodic {
            amount_ns,
            period_ns,
        } => {
            let amount = anchor.ticks(amount_ns);
            let period = anchor.ticks(period_ns);
            let mut win_start = anchor.tsc_of(start_mono);
            let mut win_end = win_start + period;
            let mut frame_base = rec.received();
            let mut win_base = rec.received();
            let mut frames = 0u32;
            let mut k = 0u64;
            loop {
                let t = rec.poll();
                if rec.received() - frame_base >= amount {
                    frames += 1;
                    frame_base = rec.received();
                }
                while t >= win_end && win_end <= finish_tsc {
                    let got = rec.received() - win_base;
                    push(
                        &mut p.acts,
                        Activation {
                            index: k,
                            release_ns: rel(win_start),
                            start_ns: rel(win_start),
                            finish_ns: None,
                            deadline_ns: rel(win_end),
                            cpu_by_deadline_ns: (u128::from(got) * 1_000_000_000
                                / u128::from(anchor.hz))
                                as u64,
                            waited: false,
                            frames,
                        },
                    );
                    frames = 0;
                    win_base = rec.received();
                    win_start = win_end;
                    win_end += period;
                    k += 1;
                }
                if t >= finish_tsc {
                    break;
                }
            }
        }
        Workload::Lat { period_ns } => {
            let mut k = 0u64;
            loop {
                let now = monotonic_ns();
                let target = now + period_ns;
                if target >= end_mono {
                    break;
                }
                wait_until(th.timer, target, rec, p.tfd.as_ref(), false, expirations);
                let woke = monotonic_ns();
                push(
                    &mut p.acts,
                    Activation {
                        index: k,
                        release_ns: target - t0_mono,
                        start_ns: woke - t0_mono,
                        finish_ns: Some(woke - t0_mono),
                        deadline_ns: target - t0_mono,
                        cpu_by_deadline_ns: 0,
                        waited: true,
                        frames: 0,
                    },
                );
                k += 1;
            }
        }
    }
    rec.finish();
}

/// Runs `spec`: calibrates the gap threshold, sets every thread up, runs them, and returns
/// what they recorded. Blocks for the run's duration.
pub fn run(spec: &RunSpec, params: RunParams) -> Result<RunOutcome, RunError> {
    let hz = params.tsc_hz;
    // Held open for the whole run: the kernel keeps the request while the file is open.
    let _dma = match spec.dma_latency_us {
        Some(us) => Some(latlab_sys::idle::DmaLatencyHold::new(us).map_err(RunError::DmaLatency)?),
        None => None,
    };
    let load_before = latlab_sys::host::loadavg();
    let ticks_per_ns = hz as f64 / 1e9;
    // Calibrate each loop kind in use.
    let mut calibrations: Vec<LoopCalibration> = Vec::new();
    let mut kinds: Vec<Option<u64>> = vec![None];
    for th in &spec.threads {
        if let Some(kb) = th.workload.scan_kb() {
            if !kinds.contains(&Some(kb)) {
                kinds.push(Some(kb));
            }
        }
    }
    for k in &kinds {
        calibrations.push(calibrate_loop(
            params.calibration_iterations,
            *k,
            ticks_per_ns,
            spec.gap_ns,
        ));
    }
    let gap_for = |th: &ThreadSpec| -> f64 {
        let k = th.workload.scan_kb();
        let i = kinds.iter().position(|x| *x == k).unwrap_or(0);
        calibrations[i].gap_ns
    };
    let recording = spec
        .threads
        .iter()
        .filter(|t| !matches!(t.workload, Workload::Lat { .. }))
        .count()
        .max(1) as u64;
    let cap = (spec.records / recording).max(1) as usize;
    let n = spec.threads.len();
    let shared = Arc::new(Shared {
        barrier: Barrier::new(n + 1),
        go: Barrier::new(n + 1),
        abort: AtomicBool::new(false),
        t0_mono: AtomicU64::new(0),
        anchor: Mutex::new(None),
        errors: Mutex::new(Vec::new()),
    });
    let mut handles = Vec::new();
    for th in spec.threads.clone() {
        let sh = Arc::clone(&shared);
        let spec = spec.clone();
        let gap_ns = gap_for(&th);
        let gap_ticks = (gap_ns * ticks_per_ns).ceil() as u64;
        handles.push(
            std::thread::Builder::new()
                .name(format!("hourglass-{}", th.id))
                .spawn(move || -> Option<(ThreadRun, Option<String>)> {
                    let prepared = setup_thread(&th, &spec, cap, gap_ticks);
                    let mut prepared = match prepared {
                        Ok(p) => Some(p),
                        Err(e) => {
                            sh.errors.lock().unwrap_or_else(|e| e.into_inner()).push(e);
                            None
                        }
                    };
                    sh.barrier.wait();
                    sh.go.wait();
                    if sh.abort.load(Ordering::SeqCst) {
                        return None;
                    }
                    let (mut p, warn) = prepared.take()?;
                    let t0 = sh.t0_mono.load(Ordering::SeqCst);
                    let anchor = sh
                        .anchor
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .unwrap_or_else(|| Anchor::now(hz));
                    let end_mono = t0 + th.finish_ns.unwrap_or(spec.duration_ns);
                    let (v0, i0) = rt::thread_context_switches();
                    let mut expirations = 0u64;
                    let (mut passes, mut lines, mut yields, mut acts_dropped) =
                        (0u64, 0u64, 0u64, 0u64);
                    run_model(
                        &th,
                        &mut p,
                        anchor,
                        t0,
                        end_mono,
                        &mut expirations,
                        &mut passes,
                        &mut lines,
                        &mut yields,
                        &mut acts_dropped,
                    );
                    let (v1, i1) = rt::thread_context_switches();
                    let (policy, priority) = sched::current_policy();
                    let slack = rt::timer_slack_ns();
                    // LAT threads record no execution map by design (as in the paper): nothing dropped
                    let dropped = if p.lat { 0 } else { p.rec.dropped() };
                    let migrations = p.rec.migrations();
                    let capacity = if p.lat { 0 } else { p.rec.capacity() as u64 };
                    let received = p.rec.received();
                    let raw: Vec<RawRecord> = if p.lat {
                        Vec::new()
                    } else {
                        p.rec.into_records()
                    };
                    let rel = |t: u64| anchor.mono_of(t).saturating_sub(t0);
                    let blocks: Vec<Block> = raw
                        .iter()
                        .map(|r| Block {
                            thread: th.id,
                            cpu: r.cpu,
                            start_ns: rel(r.start),
                            end_ns: rel(r.end),
                            end: r.reason,
                        })
                        .collect();
                    let mut cpus: Vec<u32> = blocks.iter().map(|b| b.cpu).collect();
                    cpus.sort_unstable();
                    cpus.dedup();
                    let tid = rt::gettid();
                    Some((
                        ThreadRun {
                            tid,
                            policy,
                            priority,
                            timer_slack_ns: slack,
                            gap_ns,
                            blocks,
                            capacity,
                            dropped,
                            migrations,
                            cpus,
                            activations: p.acts,
                            activations_dropped: acts_dropped,
                            timerfd_expirations: (th.timer == Timer::Timerfd)
                                .then_some(expirations),
                            scan_passes: passes,
                            scan_lines: lines,
                            yields,
                            voluntary_switches: v1.saturating_sub(v0),
                            involuntary_switches: i1.saturating_sub(i0),
                            cpu_received_ns: (u128::from(received) * 1_000_000_000 / u128::from(hz))
                                as u64,
                            spec: th,
                        },
                        warn,
                    ))
                })
                .map_err(|source| RunError::Os {
                    thread: 0,
                    what: "spawning a thread".into(),
                    source,
                })?,
        );
    }
    shared.barrier.wait();
    let failed = {
        let mut errs = shared.errors.lock().unwrap_or_else(|e| e.into_inner());
        if errs.is_empty() {
            None
        } else {
            errs.sort_by_key(|e| match e {
                RunError::Policy { thread, .. }
                | RunError::Placement { thread, .. }
                | RunError::Os { thread, .. } => *thread,
                RunError::Panicked(t) => *t,
                RunError::DmaLatency(_) => 0,
            });
            Some(errs.remove(0))
        }
    };
    // t0: far enough ahead for every thread to reach its sleep.
    let t0 = monotonic_ns() + 20_000_000;
    let anchor = Anchor::now(hz);
    shared.t0_mono.store(t0, Ordering::SeqCst);
    *shared.anchor.lock().unwrap_or_else(|e| e.into_inner()) = Some(anchor);
    shared.abort.store(failed.is_some(), Ordering::SeqCst);
    shared.go.wait();
    let mut threads = Vec::new();
    let mut warnings = Vec::new();
    for (i, h) in handles.into_iter().enumerate() {
        match h.join() {
            Ok(Some((t, w))) => {
                if let Some(w) = w {
                    if !warnings.contains(&w) {
                        warnings.push(w);
                    }
                }
                threads.push(t);
            }
            Ok(None) => {}
            Err(_) => return Err(RunError::Panicked(i as u32)),
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(RunOutcome {
        spec: spec.clone(),
        threads,
        calibrations,
        anchor,
        t0_tsc: anchor.tsc_of(t0),
        warnings,
        loadavg: load_before.zip(latlab_sys::host::loadavg()),
    })
}

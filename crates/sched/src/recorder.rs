//! The gap recorder (paper, Figure 2) for SMP: a thread spins on `rdtscp`; when two
//! consecutive reads are more than GAP apart, or the CPU number in `TSC_AUX` changed, the
//! block of CPU time it just had is appended to its preallocated, locked trace buffer.
//!
//! The hot path ([`Recorder::poll`]) reads the counter, compares, and stores two words;
//! closing a block is a `push` into a `Vec` whose capacity was reserved, faulted in and
//! locked beforehand, so it never allocates. A full buffer stops recording for this thread:
//! further blocks are counted in [`Recorder::dropped`], never silently lost. All output
//! happens after the run.

use latlab_sys::tsc;
use serde::{Deserialize, Serialize};

/// Why a block of CPU time ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// The thread stopped running without asking (preemption, interrupt): a gap was seen.
    #[default]
    Gap,
    /// The thread called `sched_yield`.
    Yield,
    /// The thread went to sleep on its timer.
    Sleep,
    /// The thread's run ended.
    End,
}

impl EndReason {
    /// One-letter code used in the trace sidecar.
    pub fn code(self) -> char {
        match self {
            EndReason::Gap => 'g',
            EndReason::Yield => 'y',
            EndReason::Sleep => 's',
            EndReason::End => 'e',
        }
    }

    /// Parses [`EndReason::code`].
    pub fn from_code(c: char) -> Option<EndReason> {
        Some(match c {
            'g' => EndReason::Gap,
            'y' => EndReason::Yield,
            's' => EndReason::Sleep,
            'e' => EndReason::End,
            _ => return None,
        })
    }

    /// Whether the thread gave up the CPU itself.
    pub fn voluntary(self) -> bool {
        matches!(self, EndReason::Yield | EndReason::Sleep)
    }
}

/// One block of continuous CPU time, in TSC ticks, on one CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawRecord {
    /// First read of the block.
    pub start: u64,
    /// Last read of the block.
    pub end: u64,
    /// CPU (from `TSC_AUX`).
    pub cpu: u32,
    /// Why it ended.
    pub reason: EndReason,
}

/// A thread's gap recorder. See the module documentation.
#[derive(Debug)]
pub struct Recorder {
    buf: Vec<RawRecord>,
    gap_ticks: u64,
    block_start: u64,
    last: u64,
    cpu: u32,
    closed_ticks: u64,
    dropped: u64,
    migrations: u64,
    started: bool,
    end_tsc: u64,
}

impl Recorder {
    /// A recorder with room for `capacity` blocks and threshold `gap_ticks`. The buffer is
    /// allocated and written through here (so its pages exist), then locked with `mlock`;
    /// a refused lock is returned as a warning string, the recorder still works.
    pub fn new(capacity: usize, gap_ticks: u64) -> (Recorder, Option<String>) {
        let mut buf = vec![RawRecord::default(); capacity.max(1)];
        let warn = latlab_sys::rt::lock_slice(&mut buf)
            .err()
            .map(|e| format!("trace buffer not locked ({e}); page faults may show as gaps"));
        buf.clear();
        (
            Recorder {
                buf,
                gap_ticks,
                block_start: 0,
                last: 0,
                cpu: 0,
                closed_ticks: 0,
                dropped: 0,
                migrations: 0,
                started: false,
                end_tsc: u64::MAX,
            },
            warn,
        )
    }

    /// Starts the first block (or a new one after [`Recorder::pause`]) at the current read.
    #[inline]
    pub fn resume(&mut self) -> u64 {
        let (t, cpu) = tsc::read_cpu();
        if self.started && cpu != self.cpu {
            self.migrations += 1;
        }
        self.started = true;
        self.block_start = t.0;
        self.last = t.0;
        self.cpu = cpu;
        t.0
    }

    /// One iteration of the gap-detection loop: reads `rdtscp`, closes the current block if
    /// the thread was away longer than GAP or changed CPU, and returns the TSC read.
    #[inline(always)]
    pub fn poll(&mut self) -> u64 {
        let (t, cpu) = tsc::read_cpu();
        let t = t.0;
        if t.wrapping_sub(self.last) > self.gap_ticks || cpu != self.cpu {
            self.split(t, cpu);
        }
        self.last = t;
        t
    }

    #[cold]
    #[inline(never)]
    fn split(&mut self, t: u64, cpu: u32) {
        self.close(EndReason::Gap);
        if cpu != self.cpu {
            self.migrations += 1;
        }
        self.block_start = t;
        self.cpu = cpu;
    }

    fn close(&mut self, reason: EndReason) {
        if self.block_start >= self.end_tsc {
            // the thread got the CPU back only after its end: nothing of its life to record
            return;
        }
        self.closed_ticks += self.last.wrapping_sub(self.block_start);
        if self.buf.len() < self.buf.capacity() {
            self.buf.push(RawRecord {
                start: self.block_start,
                end: self.last,
                cpu: self.cpu,
                reason,
            });
        } else {
            self.dropped += 1;
        }
    }

    /// Ends the current block because the thread is about to yield, sleep or stop.
    #[inline]
    pub fn pause(&mut self, reason: EndReason) {
        self.close(reason);
    }

    /// Sets the thread's finish time: blocks that begin at or after it are not recorded
    /// (a thread that gets the CPU back only after its end has nothing of its life left to
    /// record; the gap shows as the previous block's end).
    pub fn set_end(&mut self, end_tsc: u64) {
        self.end_tsc = end_tsc;
    }

    /// Ends the recording: records the open block with [`EndReason::End`] (unless it began
    /// after the end set with [`Recorder::set_end`]).
    pub fn finish(&mut self) {
        self.close(EndReason::End);
    }

    /// CPU time received so far (closed blocks plus the open one), in ticks.
    #[inline(always)]
    pub fn received(&self) -> u64 {
        self.closed_ticks + self.last.wrapping_sub(self.block_start)
    }

    /// The last TSC read.
    #[inline(always)]
    pub fn last(&self) -> u64 {
        self.last
    }

    /// Blocks that did not fit in the buffer.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// CPU changes seen across gaps, yields and sleeps.
    pub fn migrations(&self) -> u64 {
        self.migrations
    }

    /// The buffer's capacity in blocks.
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// The recorded blocks.
    pub fn into_records(self) -> Vec<RawRecord> {
        self.buf
    }
}

/// Evidence for the gap threshold: the distribution of the recording loop's iteration
/// time, measured with the same loop on this machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoopCalibration {
    /// What was measured, e.g. `rdtscp loop` or `rdtscp loop + scan 64 KB`.
    pub loop_kind: String,
    /// Iterations measured.
    pub iterations: u64,
    /// Minimum iteration time, ns.
    pub min_ns: f64,
    /// Median ("typical") iteration time, ns.
    pub p50_ns: f64,
    /// 99th percentile, ns.
    pub p99_ns: f64,
    /// 99.9th percentile, ns.
    pub p999_ns: f64,
    /// 99.99th percentile, ns.
    pub p9999_ns: f64,
    /// The threshold chosen (twice the median, as in the paper) or given.
    pub gap_ns: f64,
    /// Whether `gap_ns` came from `--gap`.
    pub gap_given: bool,
    /// Iterations longer than the threshold during calibration, per million: an upper
    /// bound on spurious gaps (the calibration also sees real interruptions).
    pub over_gap_ppm: f64,
}

/// Measures the recording loop's iteration time for `iterations` iterations (with a scan
/// of `scan_kb` KiB, one cache line per iteration, when given) and derives GAP = 2 × the
/// median unless `given_gap_ns` is set. `ticks_per_ns` converts.
pub fn calibrate_loop(
    iterations: usize,
    scan_kb: Option<u64>,
    ticks_per_ns: f64,
    given_gap_ns: Option<u64>,
) -> LoopCalibration {
    let mut deltas = vec![0u32; iterations.max(1000)];
    let mut arr = scan_kb.map(|kb| vec![1u64; (kb as usize * 1024 / 8).max(8)]);
    let mut idx = 0usize;
    let mut acc = 0u64;
    let (t0, _) = tsc::read_cpu();
    let mut last = t0.0;
    for d in deltas.iter_mut() {
        let (t, cpu) = tsc::read_cpu();
        if let Some(a) = arr.as_mut() {
            acc = acc.wrapping_add(a[idx]) ^ u64::from(cpu);
            idx += 8;
            if idx >= a.len() {
                idx = 0;
            }
        }
        *d = u32::try_from(t.0.wrapping_sub(last)).unwrap_or(u32::MAX);
        last = t.0;
    }
    std::hint::black_box(acc);
    let mut sorted = deltas;
    sorted.sort_unstable();
    let n = sorted.len();
    let q = |p: f64| {
        let i = ((p * n as f64).ceil() as usize).clamp(1, n) - 1;
        f64::from(sorted[i]) / ticks_per_ns
    };
    let p50 = q(0.5);
    let gap_ns = given_gap_ns.map_or(2.0 * p50, |g| g as f64);
    let gap_ticks = gap_ns * ticks_per_ns;
    let over = sorted.iter().filter(|&&d| f64::from(d) > gap_ticks).count();
    LoopCalibration {
        loop_kind: match scan_kb {
            Some(kb) => format!("rdtscp loop + scan {kb} KB"),
            None => "rdtscp loop".into(),
        },
        iterations: n as u64,
        min_ns: f64::from(sorted[0]) / ticks_per_ns,
        p50_ns: p50,
        p99_ns: q(0.99),
        p999_ns: q(0.999),
        p9999_ns: q(0.9999),
        gap_ns,
        gap_given: given_gap_ns.is_some(),
        over_gap_ppm: over as f64 * 1e6 / n as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleep_is_a_gap_and_a_full_buffer_counts_drops() {
        // GAP of 50 M ticks: 10-50 ms at any TSC rate from 1 to 5 GHz, far above the
        // vCPU losses this guest has during a few thousand polls (tens of µs, now and then
        // a few ms, which a 100 k-tick GAP turned into extra blocks), and well below the
        // 200 ms sleep, which must split.
        let (mut r, _) = Recorder::new(2, 50_000_000);
        r.resume();
        for _ in 0..1000 {
            r.poll();
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        r.poll();
        for _ in 0..1000 {
            r.poll();
        }
        r.pause(EndReason::Sleep);
        r.resume();
        r.pause(EndReason::End);
        assert_eq!(r.capacity(), 2);
        assert_eq!(r.dropped(), 1, "the third block must be counted as dropped");
        let recs = r.into_records();
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0].reason, EndReason::Gap);
        assert_eq!(recs[1].reason, EndReason::Sleep);
        assert!(recs[1].start > recs[0].end);
        assert!(recs[0].end >= recs[0].start);
    }

    #[test]
    fn received_adds_closed_and_open_blocks() {
        let (mut r, _) = Recorder::new(16, u64::MAX);
        let t0 = r.resume();
        for _ in 0..100 {
            r.poll();
        }
        let before = r.received();
        assert_eq!(before, r.last() - t0);
        r.pause(EndReason::Yield);
        r.resume();
        r.poll();
        assert!(r.received() >= before);
    }

    #[test]
    fn calibration_reports_a_threshold_from_the_median() {
        let c = calibrate_loop(10_000, None, 1.0, None);
        assert_eq!(c.iterations, 10_000);
        assert!(c.min_ns <= c.p50_ns && c.p50_ns <= c.p99_ns && c.p99_ns <= c.p9999_ns);
        assert_eq!(c.gap_ns, 2.0 * c.p50_ns);
        let g = calibrate_loop(1000, Some(4), 1.0, Some(500));
        assert!(g.gap_given && g.gap_ns == 500.0);
        assert!(g.loop_kind.contains("scan 4 KB"));
        for r in [
            EndReason::Gap,
            EndReason::Yield,
            EndReason::Sleep,
            EndReason::End,
        ] {
            assert_eq!(EndReason::from_code(r.code()), Some(r));
        }
    }
}

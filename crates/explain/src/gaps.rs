//! A preallocated gap recorder for spinning loops (Hourglass style).
//!
//! A loop that reads the TSC back to back calls [`GapRecorder::record`] with the previous
//! and the current reading; a difference at or above the threshold is stored in a buffer
//! whose capacity is fixed when the recorder is made. When it is full, further gaps are
//! counted in [`GapRecorder::overflow`], never stored: the hot path does no allocation,
//! takes no lock and does no I/O.

/// One gap: the two consecutive readings around it, raw TSC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gap {
    /// The reading before the gap.
    pub start: u64,
    /// The reading after it.
    pub end: u64,
}

impl Gap {
    /// Its length, ticks.
    pub fn ticks(&self) -> u64 {
        self.end - self.start
    }
}

/// See the module docs.
#[derive(Debug)]
pub struct GapRecorder {
    threshold: u64,
    gaps: Vec<Gap>,
    overflow: u64,
    steps: u64,
    min_step: u64,
}

impl GapRecorder {
    /// A recorder keeping up to `capacity` gaps of at least `threshold_ticks`. All its
    /// memory is allocated (and touched) here.
    pub fn new(threshold_ticks: u64, capacity: usize) -> GapRecorder {
        let mut gaps = vec![Gap::default(); capacity];
        gaps.clear();
        GapRecorder {
            threshold: threshold_ticks.max(1),
            gaps,
            overflow: 0,
            steps: 0,
            min_step: u64::MAX,
        }
    }

    /// Records the step from reading `prev` to reading `now`. Backward steps are ignored.
    #[inline(always)]
    pub fn record(&mut self, prev: u64, now: u64) {
        let d = now.wrapping_sub(prev);
        if now < prev {
            return;
        }
        self.steps += 1;
        if d < self.min_step {
            self.min_step = d;
        }
        if d >= self.threshold {
            if self.gaps.len() < self.gaps.capacity() {
                // within capacity: `push` does not allocate
                self.gaps.push(Gap {
                    start: prev,
                    end: now,
                });
            } else {
                self.overflow += 1;
            }
        }
    }

    /// The gaps stored, in order.
    pub fn gaps(&self) -> &[Gap] {
        &self.gaps
    }

    /// Gaps at or above the threshold that did not fit.
    pub fn overflow(&self) -> u64 {
        self.overflow
    }

    /// Steps recorded (forward ones).
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The smallest step seen, ticks (the loop's own cost); 0 before any step.
    pub fn min_step(&self) -> u64 {
        if self.steps == 0 {
            0
        } else {
            self.min_step
        }
    }

    /// The threshold, ticks.
    pub fn threshold(&self) -> u64 {
        self.threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_at_or_above_the_threshold_are_kept() {
        let mut r = GapRecorder::new(100, 2);
        let reads = [0u64, 10, 20, 120, 130, 400, 410, 1000, 990, 995];
        for w in reads.windows(2) {
            r.record(w[0], w[1]);
        }
        assert_eq!(
            r.gaps(),
            &[
                Gap {
                    start: 20,
                    end: 120
                },
                Gap {
                    start: 130,
                    end: 400
                }
            ]
        );
        assert_eq!(r.overflow(), 1, "the third gap (410..1000) did not fit");
        assert_eq!(r.steps(), 8, "the backward step is not a step");
        assert_eq!(r.min_step(), 5);
        assert_eq!(r.gaps()[1].ticks(), 270);
    }

    #[test]
    fn the_buffer_never_grows() {
        let mut r = GapRecorder::new(1, 16);
        let cap = r.gaps.capacity();
        let ptr = r.gaps.as_ptr();
        for i in 0..1000u64 {
            r.record(i * 10, i * 10 + 5);
        }
        assert_eq!(r.gaps.capacity(), cap);
        assert_eq!(r.gaps.as_ptr(), ptr);
        assert_eq!(r.gaps().len() as u64 + r.overflow(), 1000);
        assert_eq!(GapRecorder::new(0, 1).threshold(), 1);
        assert_eq!(GapRecorder::new(5, 1).min_step(), 0);
    }
}

//! Mapping one clock's readings onto another's from paired readings. Pure.
//!
//! BPF programs can stamp events only with the kernel's `CLOCK_MONOTONIC`
//! (`bpf_ktime_get_ns`), while latlab's timeline is the TSC. A reader that reads both
//! clocks back to back now and then (the pair with the narrowest TSC bracket of a few
//! tries) gets points of the line between them; [`ClockMap::map`] interpolates between
//! the two points around a reading, and extrapolates with the nearest segment's slope
//! outside them. With the TSC as the kernel's clocksource the monotonic clock is the TSC
//! scaled, so the line is straight between points up to the kernel's NTP adjustments,
//! which the pairs follow.

/// A monotone piecewise-linear map from clock A (`from`) to clock B (`to`).
#[derive(Clone, Debug, PartialEq)]
pub struct ClockMap {
    /// (from, to) points, strictly increasing in both.
    points: Vec<(u64, u64)>,
}

/// Why pairs do not make a map.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ClockMapError {
    /// Fewer than two distinct points.
    #[error("need two clock pairs at different times, got {0}")]
    TooFew(usize),
}

impl ClockMap {
    /// A map through `pairs` (in any order). Pairs that would make the map go backwards
    /// (a reading out of order on either clock) are dropped.
    ///
    /// # Errors
    /// [`ClockMapError::TooFew`] with fewer than two usable pairs.
    pub fn new(mut pairs: Vec<(u64, u64)>) -> Result<ClockMap, ClockMapError> {
        pairs.sort_unstable();
        let mut points: Vec<(u64, u64)> = Vec::with_capacity(pairs.len());
        for p in pairs {
            match points.last() {
                Some(&(a, b)) if p.0 <= a || p.1 <= b => {}
                _ => points.push(p),
            }
        }
        if points.len() < 2 {
            return Err(ClockMapError::TooFew(points.len()));
        }
        Ok(ClockMap { points })
    }

    /// The points kept.
    pub fn points(&self) -> &[(u64, u64)] {
        &self.points
    }

    /// `from` on clock B.
    pub fn map(&self, from: u64) -> u64 {
        let p = &self.points;
        // the segment whose end is the first point at or after `from` (the first or last
        // segment outside the points)
        let i = p.partition_point(|&(a, _)| a < from).clamp(1, p.len() - 1);
        let ((a0, b0), (a1, b1)) = (p[i - 1], p[i]);
        let (da, db) = (i128::from(a1 - a0), i128::from(b1 - b0));
        let v = i128::from(b0) + (i128::from(from) - i128::from(a0)) * db / da;
        v.clamp(0, i128::from(u64::MAX)) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn interpolates_between_and_extrapolates_beyond_the_points() {
        // ns -> ticks at 2.5 GHz, with an offset
        let m = ClockMap::new(vec![(1_000, 10_000), (3_000, 15_000), (2_000, 12_500)]).unwrap();
        assert_eq!(m.map(1_000), 10_000);
        assert_eq!(m.map(1_500), 11_250);
        assert_eq!(m.map(2_600), 14_000);
        assert_eq!(
            m.map(4_000),
            17_500,
            "beyond the last point: the last slope"
        );
        assert_eq!(m.map(600), 9_000, "before the first: the first slope");
    }

    #[test]
    fn follows_a_change_of_rate_between_segments() {
        let m = ClockMap::new(vec![(0, 0), (100, 200), (200, 300)]).unwrap();
        assert_eq!((m.map(50), m.map(150), m.map(300)), (100, 250, 400));
    }

    #[test]
    fn out_of_order_pairs_are_dropped_and_one_point_is_not_a_map() {
        let m = ClockMap::new(vec![(0, 0), (100, 50), (50, 60), (200, 100)]).unwrap();
        assert_eq!(m.points(), &[(0, 0), (50, 60), (200, 100)]);
        assert_eq!(
            ClockMap::new(vec![(5, 5), (5, 6)]),
            Err(ClockMapError::TooFew(1))
        );
        assert_eq!(ClockMap::new(vec![]), Err(ClockMapError::TooFew(0)));
    }

    proptest! {
        /// Through pairs of a line (each rounded down to a whole tick), every reading
        /// between the points maps onto the line within two ticks, one beyond them within
        /// the rounding scaled by how far beyond (the end segment's slope is off by up to
        /// a tick over its length), and the map never goes backwards.
        #[test]
        fn a_line_is_reproduced_and_the_map_is_monotone(
            offset in 0u64..1u64 << 40,
            rate_milli in 500u64..5_000,
            mut at in proptest::collection::vec(0u64..1u64 << 36, 2..20),
            probe in proptest::collection::vec(0u64..1u64 << 37, 1..50),
        ) {
            at.sort_unstable();
            at.dedup();
            prop_assume!(at.len() >= 2);
            let line = |x: u64| offset + (u128::from(x) * u128::from(rate_milli) / 1000) as u64;
            let m = ClockMap::new(at.iter().map(|&x| (x, line(x))).collect()).unwrap();
            let mut sorted = probe.clone();
            sorted.sort_unstable();
            let mut prev = 0;
            let (first, last) = (at[0], at[at.len() - 1]);
            let (seg0, seg1) = (at[1] - at[0], last - at[at.len() - 2]);
            for x in sorted {
                let y = m.map(x);
                let beyond = if x < first {
                    (first - x) as f64 / seg0 as f64
                } else if x > last {
                    (x - last) as f64 / seg1 as f64
                } else {
                    0.0
                };
                let tol = 2 + (2.0 * beyond).ceil() as u64;
                prop_assert!(y.abs_diff(line(x)) <= tol, "{x}: {y} vs {} (tolerance {tol})", line(x));
                prop_assert!(y >= prev);
                prev = y;
            }
        }
    }
}

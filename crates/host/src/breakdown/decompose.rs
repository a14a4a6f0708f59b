//! How a loopback UDP round trip decomposes into the cheaper steps the breakdown measures.
//!
//! Every timed sample of the breakdown includes one clock read (the interval between the
//! two reads that bracket it), so the read's median cost is counted once and taken out of
//! the other steps. From the medians:
//!
//! - **time read** = `clock_read`;
//! - **system calls** = 4 × (`null_syscall` − `clock_read`): a round trip issues two sends
//!   and two receives (the busy-polling variant issues more receives, which end up in the
//!   remainder as waiting);
//! - *blocking*: **2 thread wake-ups** = `futex_other_core` − `clock_read` − 4 × syscall:
//!   a futex round trip is two wake-ups across cores plus four futex calls;
//! - *busy-polling*: **2 cross-core hand-offs** = `cacheline_pingpong` − `clock_read`;
//! - **UDP/IP stack and socket (remainder)** = the round trip less all of the above.
//!
//! Medians do not add exactly, so this is an attribution, not an identity: a negative
//! remainder is shown as 0 and flagged.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One segment of a stacked bar.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    /// What it is.
    pub label: String,
    /// Its share in ns (≥ 0).
    pub ns: f64,
}

/// One decomposed round trip.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decomposition {
    /// Which round trip (the step name).
    pub step: String,
    /// Its median, ns.
    pub total_ns: f64,
    /// Segments in stacking order; they sum to `total_ns` unless `inconsistent`.
    pub segments: Vec<Segment>,
    /// The components' medians exceed the round trip's: the remainder was clamped to 0.
    pub inconsistent: bool,
}

fn seg(label: &str, ns: f64) -> Segment {
    Segment {
        label: label.to_string(),
        ns: ns.max(0.0),
    }
}

/// Decomposes the UDP loopback round trips (blocking and busy-polling) from step medians
/// keyed by step name. A round trip is left out when it or a component it needs is missing.
pub fn decompose_udp(medians: &BTreeMap<String, u64>) -> Vec<Decomposition> {
    let get = |k: &str| medians.get(k).map(|&v| v as f64);
    let mut out = Vec::new();
    let (Some(read), Some(sys)) = (get("clock_read"), get("null_syscall")) else {
        return out;
    };
    let syscalls = 4.0 * (sys - read).max(0.0);
    let variants: [(&str, &str, &str); 2] = [
        (
            "udp_loopback",
            "futex_other_core",
            "2 thread wake-ups (futex)",
        ),
        (
            "udp_loopback_busy",
            "cacheline_pingpong",
            "2 cross-core hand-offs (cache line)",
        ),
    ];
    for (step, comp, comp_label) in variants {
        let (Some(total), Some(c)) = (get(step), get(comp)) else {
            continue;
        };
        let comp_ns = if comp == "futex_other_core" {
            c - read - syscalls
        } else {
            c - read
        };
        let mut segments = vec![
            seg("time read", read),
            seg("4 system calls (entry/exit)", syscalls),
            seg(comp_label, comp_ns),
        ];
        let used: f64 = segments.iter().map(|s| s.ns).sum();
        let rest = total - used;
        segments.push(seg("UDP/IP stack and socket (remainder)", rest));
        out.push(Decomposition {
            step: step.to_string(),
            total_ns: total,
            segments,
            inconsistent: rest < 0.0,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn medians(v: &[(&str, u64)]) -> BTreeMap<String, u64> {
        v.iter().map(|(k, n)| (k.to_string(), *n)).collect()
    }

    #[test]
    fn segments_add_up_to_the_round_trip() {
        let m = medians(&[
            ("clock_read", 20),
            ("null_syscall", 120),
            ("futex_other_core", 5_020),
            ("cacheline_pingpong", 220),
            ("udp_loopback", 12_000),
            ("udp_loopback_busy", 6_000),
        ]);
        let d = decompose_udp(&m);
        assert_eq!(d.len(), 2);
        for x in &d {
            let sum: f64 = x.segments.iter().map(|s| s.ns).sum();
            assert!((sum - x.total_ns).abs() < 1e-9, "{x:?}");
            assert!(!x.inconsistent);
        }
        let blocking = &d[0];
        assert_eq!(blocking.segments[1].ns, 400.0);
        assert_eq!(blocking.segments[2].ns, 5_020.0 - 20.0 - 400.0);
        assert_eq!(d[1].segments[2].ns, 200.0);
    }

    #[test]
    fn negative_remainder_is_clamped_and_flagged() {
        let m = medians(&[
            ("clock_read", 20),
            ("null_syscall", 120),
            ("cacheline_pingpong", 9_000),
            ("udp_loopback_busy", 6_000),
        ]);
        let d = decompose_udp(&m);
        assert_eq!(d.len(), 1);
        assert!(d[0].inconsistent);
        assert_eq!(d[0].segments.last().unwrap().ns, 0.0);
    }

    #[test]
    fn missing_components_leave_variants_out() {
        assert!(decompose_udp(&medians(&[("udp_loopback", 5)])).is_empty());
        let m = medians(&[
            ("clock_read", 20),
            ("null_syscall", 100),
            ("udp_loopback", 9),
        ]);
        assert!(decompose_udp(&m).is_empty());
    }
}

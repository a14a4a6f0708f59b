//! The paper's numbers that latlab holds its results against, defined once (the DFS
//! parameters of Table I are the defaults in [`crate::params`]).

/// The paper's smallest reduction of the time-slice completion duration by DFS (§V-B2).
pub const PAPER_COMPLETION_RATIO: f64 = 30.0;
/// The paper's largest gain in aggregate bandwidth by DFS (abstract: "up to 50 %").
pub const PAPER_BANDWIDTH_RATIO: f64 = 1.5;

/// Fig. 8: the bandwidth drop starts with this interval…
pub const FIG8_DROP_FIRST: u64 = 15;
/// … and ends with this one…
pub const FIG8_DROP_LAST: u64 = 25;
/// … making every interval this much longer, percent (§V-B3: "increasing the actual
/// duration of an interval by 25%")…
pub const FIG8_LONGER_PCT: f64 = 25.0;
/// … which the simulator does with this fraction of the bandwidth: 1 / 1.25 = 0.8 (not
/// 0.75, which lengthens a bandwidth-bound interval by a third).
pub const FIG8_DROP_FACTOR: f64 = 100.0 / (100.0 + FIG8_LONGER_PCT);
/// Fig. 9 shows the buffer fill at this node count (the experiment takes the closest).
pub const FIG9_NODES: usize = 128;
/// The node counts whose ratios the paper's text quotes (§V-B).
pub const QUOTED_NODES: [usize; 2] = [128, 384];
/// Aggregate bandwidth in percent of the libfabric benchmark (§V-B, Fig. 7): (nodes, best
/// effort, DFS).
pub const PAPER_BANDWIDTH_PCT: [(usize, f64, f64); 3] =
    [(128, 53.0, 80.0), (192, 45.0, 62.5), (384, 44.0, 67.0)];

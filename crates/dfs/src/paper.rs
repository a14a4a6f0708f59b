//! The paper's numbers that latlab holds its results against, defined once (the DFS
//! parameters of Table I are the defaults in [`crate::params`]).

/// The paper's smallest reduction of the time-slice completion duration by DFS (§V-B2).
pub const PAPER_COMPLETION_RATIO: f64 = 30.0;
/// The paper's largest gain in aggregate bandwidth by DFS (abstract: "up to 50 %").
pub const PAPER_BANDWIDTH_RATIO: f64 = 1.5;

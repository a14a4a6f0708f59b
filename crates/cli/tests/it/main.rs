//! latlab's end-to-end tests, one test binary (one link for all of them, in the style of
//! ripgrep's `tests/`): each module is one area, `util` what they share.
//!
//! Tests that need root start with `require_root!`, which prints `SKIP <test>: needs root
//! (<reason>)` when not root; run as root (as CI does) to run them all. Tests that use
//! something system-wide (the namespace testbed, SCHED_DEADLINE bandwidth, RT throttling)
//! hold `util::system_turn()`; `system_test!` does both, `require_mpi!` skips where MPI is
//! missing.

mod util;

mod architecture;
mod bad_input;
mod browser;
mod cli;
mod clocks_explain;
mod dfs;
mod dfs_report;
mod figure_size;
mod golden_report;
mod host_breakdown;
mod host_isolate;
mod host_noise;
mod kernel_truth;
mod net;
mod net_agents;
mod net_delay;
mod net_explain;
mod net_kill;
mod net_load;
mod net_testpmd;
mod net_xdp;
mod progress;
mod report;
mod sched;
mod sched_explain;
mod sched_report;

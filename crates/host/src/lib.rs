//! # latlab-host
//!
//! In-host latency measurements from the TSC up (*Where Has My Time Gone?*, §2.2).
//!
//! - [`clocks`]: the timestamp baseline — back-to-back reads of each clock source and the
//!   histogram of the gaps between them (`latlab host clocks`).
//! - [`breakdown`]: what each step inside a host costs, from a clock read to a round trip
//!   across namespaces, classified Good / Bad / Ugly (`latlab host breakdown`).
//! - [`noise`]: what interrupts a pinned spinning thread, and why, from kernel events on
//!   the TSC timeline (`latlab host noise`).
//! - [`where_time`]: how much added network latency real applications bear (`latlab
//!   experiment where-time`, the paper's Fig. 1).
#![deny(unsafe_code)]

pub mod breakdown;
pub mod clocks;
pub mod noise;
pub mod report;
pub mod where_time;

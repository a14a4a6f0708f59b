//! # latlab-host
//!
//! In-host latency measurements from the TSC up (*Where Has My Time Gone?*, §2.2).
//!
//! - [`clocks`]: the timestamp baseline — back-to-back reads of each clock source and the
//!   histogram of the gaps between them (`latlab host clocks`).
#![deny(unsafe_code)]

pub mod clocks;
pub mod report;

//! # latlab-net
//!
//! Network latency tools.
//!
//! - [`delay`]: the latency injector behind `latlab net delay` — a software bump in the
//!   wire between two interfaces that forwards every frame after an added latency
//!   (*Where Has My Time Gone?* §1, the paper's NetFPGA latency gadget, in software).
#![deny(unsafe_code)]

pub mod delay;

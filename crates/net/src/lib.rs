//! # latlab-net
//!
//! Measuring the killer microsecond on Linux networks (Primorac, Bugnion, Argyraki,
//! *How to Measure the Killer Microsecond*): an open-loop probe generator and receiver
//! with user, kernel and hardware timestamps, network functions that write their residence
//! time into the probes, a namespace testbed (the paper's Fig. 1 on one host) and the
//! experiment that compares measurement methods against an OS configuration ladder.
//!
//! - [`wire`]: the probe header, a checked zero-copy view;
//! - [`rpc`]: `latlab net load`, open-loop requests against memcached and HTTP servers;
//! - [`nf`]: the reflector and the forwarder behind the [`nf::PacketIo`] trait;
//! - [`probe`]: the open-loop and ping-pong generator/receiver;
//! - [`delay`]: the latency injector behind `latlab net delay`, a software bump in the wire
//!   that forwards every frame after an added latency (*Where Has My Time Gone?*);
//! - [`explain`]: `--explain`: which samples are attributed, their windows and stalls;
//! - [`decompose`]: splitting a probe's latency into stack, wire and NF segments;
//! - [`iface`]: interface facts (driver, timestamping) and the egress interface;
//! - [`netinfo`]: network provenance (sysctls, IRQ affinity, interfaces);
//! - [`result`]: result files and the pure functions a report calls;
//! - [`run`]: the NF and probe runs behind the commands and their child jobs;
//! - [`testbed`]: namespaces and veth pairs (`latlab net testbed`);
//! - [`testpmd`]: DPDK's testpmd as the testbed's network function (`--engine testpmd`);
//! - [`orchestrate`]: NF and probe child processes for [`calibrate`] and [`killer_us`];
//! - [`rng`]: seeded draws for arrivals and delays;
//! - [`fit`]: what the host can sustain (quiet CPUs, a rate the generator keeps), checked
//!   before an experiment;
//! - [`killer_us`]: `latlab experiment killer-us`, the methods against the OS ladder: its
//!   configuration, runs, fit, data, headline and report sections;
//! - [`sections`]: what the HTML report shows for net probe results.
#![deny(unsafe_code)]

pub mod agents;
pub mod calibrate;
pub mod decompose;
pub mod delay;
pub mod explain;
pub mod fit;
pub mod iface;
pub mod killer_us;
pub mod netinfo;
pub mod nf;
pub mod orchestrate;
pub mod probe;
pub mod result;
pub mod rng;
pub mod rpc;
pub mod run;
pub mod sections;
pub mod serve;
pub mod testbed;
pub mod testpmd;
pub mod wire;

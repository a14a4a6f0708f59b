//! `latlab net load`: open-loop, coordinated-omission-free requests against real servers —
//! memcached's ASCII protocol over TCP and UDP (get/set mix, key and value sizes) and
//! HTTP/1.1 keep-alive GET.
//!
//! Requests follow the probe's absolute schedule ([`crate::probe::Schedule`]: constant or
//! seeded Poisson); every latency is measured from the request's *scheduled* send time, so
//! a server that falls behind shows its queue instead of slowing the generator down (the
//! coordinated omission of closed-loop clients such as memaslap and wrk). A request that
//! falls due while every connection has its pipeline full is sent as soon as one frees,
//! counted as `late`, and still measured from its schedule; requests still waiting when
//! the schedule ends are counted as `unsent`. Every request is accounted for
//! ([`record::Counters::balanced`]).
//!
//! - [`config`]: target, rate, connections, pipelining, request mix;
//! - [`memcached`], [`http`]: request encoding and pure response parsers;
//! - [`record`]: the open-loop cursor and the bookkeeping, pure (tested with made-up times);
//! - [`engine`]: the event loop of one generator thread;
//! - [`result`]: the `net.load` result, its self-checks and report rows;
//! - [`sections`]: its report section (latency against offered load, counts, self-checks).

pub mod config;
pub mod engine;
mod error;
pub mod http;
pub mod memcached;
pub mod record;
pub mod reply;
pub mod result;
pub mod sections;

pub use config::{LoadConfig, LoadIo, Protocol, SizeRange, Target, TARGET_FORMS};
pub use error::LoadError;
pub use result::{load_result, LoadData, LoadOutcome, RESULT_KIND};

use latlab_core::units::Nanos;
use latlab_sys::tsc::Clock;

/// Runs the load described by `cfg` on `clock`: validates it, checks the target answers a
/// connection, preloads the keys, then runs [`LoadConfig::threads`] generator threads on
/// one common start and merges their histograms and counters exactly.
///
/// # Errors
/// [`LoadError`]; nothing is left running on any path.
pub fn run(cfg: &LoadConfig, clock: &Clock) -> Result<LoadOutcome, LoadError> {
    cfg.validate().map_err(LoadError::Config)?;
    engine::connect(&cfg.target)?;
    engine::preload_keys(cfg)?;
    let shares: Vec<LoadConfig> = (0..cfg.threads).map(|i| cfg.share(i)).collect();
    // every thread starts on the same clock reading, 20 ms ahead (connections opened)
    let start =
        clock.now() + clock_ticks(clock, Nanos::from_millis(20 + 5 * u64::from(cfg.threads)));
    let wall = std::time::Instant::now();
    let outs = std::thread::scope(|s| {
        let hs: Vec<_> = shares
            .iter()
            .map(|c| s.spawn(move || engine::run_thread(c, clock, start)))
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("generator thread panicked"))
            .collect::<Result<Vec<_>, _>>()
    })?;
    Ok(LoadOutcome::merge(cfg, outs, clock, wall.elapsed()))
}

fn clock_ticks(clock: &Clock, d: Nanos) -> u64 {
    crate::probe::ns_to_raw(clock, d.get())
}

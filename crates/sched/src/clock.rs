//! The TSC clock every sched run needs.

use crate::error::Error;
use latlab_core::results::Timebase;
use latlab_core::units::Nanos;
use latlab_sys::tsc::Clock;

/// The TSC clock every sched run needs (clock, timebase, rate in Hz), or why there is none.
pub fn tsc_clock() -> Result<(Clock, Timebase, u64), Error> {
    let (clock, timebase) = Clock::establish(Nanos::from_millis(50));
    match (clock.is_tsc(), timebase.tsc.rate_hz) {
        (true, Some(hz)) => Ok((clock, timebase, hz)),
        _ => Err(Error::NoTsc(
            timebase
                .fallback_reason
                .clone()
                .unwrap_or_else(|| "no TSC rate".into()),
        )),
    }
}

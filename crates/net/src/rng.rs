//! The seeded generator of arrival schedules and delay draws: `latlab_core::rng::Rng`
//! (it lives in core, where the self-checks' tests draw from it too).

pub use latlab_core::rng::Rng;

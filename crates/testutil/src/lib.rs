//! What the integration tests of several latlab crates share: the one root check and the
//! visible SKIP line of a test that cannot run here.
//!
//! A crate of its own because integration tests of different packages (`crates/cli/tests`,
//! `crates/net/tests`, `crates/sched/tests`, ...) cannot share a module; it is only ever a
//! dev-dependency, so no shipped crate depends on it.
//!
//! A test that needs root starts with [`require_root!`]: as root it goes on, otherwise it
//! prints `SKIP <test>: needs root (<reason>)` to stderr and returns. The line is not
//! captured by the test harness, so it shows in every `cargo test` run and CI log and a
//! skip is never mistaken for a pass (CI runs as root and so runs every test).

/// Whether this process runs as root (effective uid 0); the one root check of the tests.
pub fn is_root() -> bool {
    latlab_sys::netns::is_root()
}

/// Prints the SKIP line of `test` (a path such as `net::testbed_up`) with `why`.
///
/// Written to the process's stderr directly, not with `eprintln!`, which the test harness
/// captures (and shows only for failing tests): a skip must be visible in every run.
pub fn print_skip(test: &str, why: &str) {
    use std::io::Write as _;
    // One write, so that the line is not split by the harness's own output.
    let _ = std::io::stderr().write_all(format!("SKIP {test}: {why}\n").as_bytes());
}

/// The path of the function it is used in, without the crate name (`module::test_name`).
#[macro_export]
macro_rules! test_name {
    () => {{
        fn f() {}
        fn name_of<T>(_: T) -> &'static str {
            ::std::any::type_name::<T>()
        }
        let full = name_of(f);
        let full = full.strip_suffix("::f").unwrap_or(full);
        full.split_once("::").map_or(full, |(_, rest)| rest)
    }};
}

/// Skips the calling test with a reason: prints `SKIP <test>: <reason>` and returns.
/// Arguments as for `format!`.
#[macro_export]
macro_rules! skip {
    ($($why:tt)+) => {{
        $crate::print_skip($crate::test_name!(), &format!($($why)+));
        return;
    }};
}

/// Returns from the calling test unless it runs as root, printing
/// `SKIP <test>: needs root (<reason>)`. Arguments as for `format!`.
#[macro_export]
macro_rules! require_root {
    ($($why:tt)+) => {
        if !$crate::is_root() {
            $crate::skip!("needs root ({})", format!($($why)+));
        }
    };
}

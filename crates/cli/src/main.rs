//! The `latlab` binary: parses arguments, resolves them into library configurations, calls
//! the libraries and maps failures to documented exit codes.
//!
//! Exit codes (also in `latlab --help` and `docs/cli.md`):
//! - 0: success;
//! - 1: the measurement or rendering failed at run time;
//! - 2: bad usage or bad input: an invalid flag value, or an unreadable, corrupt or foreign
//!   input file;
//! - 3: not permitted: the run needs privileges it does not have (e.g. `--fifo` without
//!   root or CAP_SYS_NICE).
#![deny(unsafe_code)]

mod args;
mod commands;
mod exit;
mod idle;
mod inputs;
mod interrupt;
mod output;

use std::process::ExitCode;

fn main() -> ExitCode {
    latlab_sys::process::default_sigpipe();
    let argv: Vec<String> = std::env::args().collect();
    if std::env::var_os("LATLAB_LIST_NUMERIC_FLAGS").is_some() {
        print!("{}", args::numeric_flags());
        return ExitCode::SUCCESS;
    }
    let parsed = args::command()
        .try_get_matches_from(&argv)
        .and_then(|m| <args::Cli as clap::FromArgMatches>::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => return exit::clap_error(e),
    };
    // changes to the system left by latlab processes that were killed before undoing them
    for r in latlab_sys::journal::replay_dead(&latlab_sys::journal::dir()) {
        eprintln!("{}", r.line());
    }
    // the idle states at the start, for every result's provenance (entries counted from here)
    latlab_sys::idle::mark_start();
    let done = commands::run(cli, argv);
    // a signal's undo steps may be under way (and may be why the run failed): they end
    // the process, not this
    interrupt::settle();
    // anything a command left open (one that ended through `std::process::exit` does so
    // itself)
    for r in latlab_sys::journal::Journal::process().restore_all() {
        if let Err(e) = r {
            eprintln!("latlab: {e}");
        }
    }
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => exit::report(&e),
    }
}

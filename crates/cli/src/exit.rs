//! Failure reporting: one line on stderr and the documented exit code.

use latlab_core::results::ResultError;
use latlab_sys::sched::SchedError;
use std::process::ExitCode;

/// Exit code for run-time failures.
pub const RUNTIME: u8 = 1;
/// Exit code for bad usage or bad input.
pub const USAGE: u8 = 2;
/// Exit code for missing privileges.
pub const NOT_PERMITTED: u8 = 3;

/// A usage error found after parsing (e.g. a combination of flags, or a bad value in a list).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Builds a usage error naming the flag.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError(msg.into()).into()
}

/// Prints `e` as one line and returns its exit code.
pub fn report(e: &anyhow::Error) -> ExitCode {
    let code = classify(e);
    // `{:#}` joins the context chain on one line: "reading x.json: x.json: empty file ..."
    let msg = format!("{e:#}").replace('\n', " ");
    eprintln!("latlab: error: {msg}");
    ExitCode::from(code)
}

fn classify(e: &anyhow::Error) -> u8 {
    for cause in e.chain() {
        if cause.is::<UsageError>() {
            return USAGE;
        }
        if let Some(r) = cause.downcast_ref::<latlab_report::html::ReportError>() {
            use latlab_report::html::ReportError as R;
            return match r {
                R::Write { .. } | R::Figure { .. } => RUNTIME,
                _ => USAGE,
            };
        }
        if let Some(r) = cause.downcast_ref::<ResultError>() {
            // reading a bad input file is bad input; failing to write one is a run-time failure
            return if matches!(r, ResultError::Write { .. }) {
                RUNTIME
            } else {
                USAGE
            };
        }
        if let Some(s) = cause.downcast_ref::<SchedError>() {
            return match s {
                SchedError::NotPermitted { .. } => NOT_PERMITTED,
                SchedError::InvalidPriority { .. } | SchedError::NoSuchCpu { .. } => USAGE,
                _ => RUNTIME,
            };
        }
    }
    RUNTIME
}

/// Handles a clap parse failure: help and version go to stdout with exit 0; every other
/// error becomes a single line naming the flag, with exit code 2.
pub fn clap_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                ExitCode::from(USAGE)
            } else {
                ExitCode::SUCCESS
            }
        }
        _ => {
            eprintln!(
                "latlab: error: {} (see --help)",
                one_line(&e.render().to_string())
            );
            ExitCode::from(USAGE)
        }
    }
}

/// The first paragraph of clap's rendered error as one line. clap puts what an error is
/// about on indented lines under its first line (e.g. "the following required arguments
/// were not provided:" then "  --ifaces <A,B>"); those are joined onto it, separated by
/// commas, so the line names the flag. The usage and tips after the blank line are left
/// out.
pub fn one_line(rendered: &str) -> String {
    let mut lines = rendered
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty());
    let first = lines.next().unwrap_or("invalid arguments").trim();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let rest: Vec<&str> = lines.map(str::trim).collect();
    if rest.is_empty() {
        first.to_string()
    } else {
        format!("{first} {}", rest.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn indented_lines_are_joined_and_usage_dropped() {
        let r = "error: the following required arguments were not provided:\n  --ifaces <A,B>\n  --delay <DELAY>\n\nUsage: latlab net delay --ifaces <A,B> --delay <DELAY>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(r),
            "the following required arguments were not provided: --ifaces <A,B>, --delay <DELAY>"
        );
        let r = "error: unexpected argument '--warp' found\n\n  tip: to pass '--warp' as a value, use '-- --warp'\n\nUsage: latlab [OPTIONS]\n";
        assert_eq!(one_line(r), "unexpected argument '--warp' found");
        assert_eq!(one_line(""), "invalid arguments");
    }
}

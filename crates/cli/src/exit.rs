//! Failure reporting: one line on stderr and the documented exit code, and the mapping of
//! library errors to the error whose class gives that code.

use latlab_core::results::ResultError;
use latlab_net::probe::ProbeError;
use latlab_sched::run::RunError;
use latlab_sched::Error;
use latlab_sys::rt::RtError;
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

/// A refusal for lack of privilege found outside the scheduler (exit 3).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// An `--io xdp` failure as the CLI reports it: no privilege exits 3; an interface that
/// is missing, lacks native XDP or is taken, or a kernel without AF_XDP, is bad input
/// (exit 2); any other step failing is a run-time failure (exit 1).
pub fn xdp_err(e: latlab_sys::xdp::XdpError) -> anyhow::Error {
    use latlab_sys::xdp::XdpError as X;
    match e {
        X::NotPermitted(_) => Refused(e.to_string()).into(),
        X::Os { .. } => anyhow::Error::from(e),
        _ => usage(e.to_string()),
    }
}

/// A testbed error as the CLI reports it (not root → exit 3).
pub fn testbed_err(e: latlab_net::testbed::TestbedError) -> anyhow::Error {
    match e {
        latlab_net::testbed::TestbedError::NotRoot => SchedError::NotPermitted {
            what: "building the namespace testbed".into(),
            remedy: "run as root (sudo): creating namespaces and veth pairs needs CAP_NET_ADMIN and CAP_SYS_ADMIN",
        }
        .into(),
        other => other.into(),
    }
}

/// A `latlab net` run error as the CLI reports it: a refused placement keeps its exit code, a bad
/// configuration is a usage error.
pub fn net_run_err(e: latlab_net::run::RunError) -> anyhow::Error {
    match e {
        latlab_net::run::RunError::Probe(ProbeError::Sched(s)) => anyhow::Error::from(s),
        latlab_net::run::RunError::Probe(ProbeError::Config(m)) => usage(m),
        latlab_net::run::RunError::Probe(ProbeError::Xdp(x)) => xdp_err(x),
        latlab_net::run::RunError::Nf(latlab_net::nf::NfError::Xdp(x)) => xdp_err(x),
        latlab_net::run::RunError::Nf(latlab_net::nf::NfError::XdpPath(m)) => {
            usage(format!("--io xdp: {m}"))
        }
        latlab_net::run::RunError::Nf(e) => anyhow::Error::from(e).context("starting the NF"),
        other => anyhow::Error::from(other),
    }
}

/// Maps a library failure to the error whose class gives the exit code: bad input exits 2,
/// refusals 3 (see [`sched_run_error`]), the rest 1, with the error the library kept.
pub fn sched_error(e: Error) -> anyhow::Error {
    match e {
        Error::Config(m) => usage(m),
        Error::Cmd(c) => usage(c.to_string()),
        Error::Run(r) => sched_run_error(r),
        Error::Result(r) => anyhow::Error::new(r),
        Error::Data(d) => anyhow::Error::new(d),
        Error::Io { what, source } => anyhow::Error::new(source).context(what),
        Error::Net(n) => anyhow::Error::new(n),
        Error::Draw(d) => anyhow::anyhow!(d),
        Error::Json(j) => anyhow::Error::new(j),
        other => anyhow::Error::new(other),
    }
}

/// Maps a run failure to the error whose class gives the exit code: refusals (privilege,
/// placement rule, admission control) exit 3, invalid parameters 2, the rest 1.
fn sched_run_error(e: RunError) -> anyhow::Error {
    match e {
        RunError::Policy { thread, source } => match source {
            RtError::Refused { what, reason } => anyhow::Error::new(SchedError::NotPermitted {
                what: format!("thread {thread}: {what}"),
                remedy: Box::leak(reason.into_boxed_str()),
            }),
            RtError::Rejected { what, reason } => anyhow::Error::new(SchedError::NotPermitted {
                what: format!("thread {thread}: {what}"),
                remedy: Box::leak(
                    format!("rejected by admission control: {reason}").into_boxed_str(),
                ),
            }),
            RtError::Invalid { what, reason } => {
                usage(format!("thread {thread}: {what}: {reason}"))
            }
            other => anyhow::Error::new(other).context(format!("thread {thread}")),
        },
        RunError::DmaLatency(e) => dma_latency(e),
        RunError::Placement { thread, source } => {
            anyhow::Error::new(source).context(format!("thread {thread}"))
        }
        other => anyhow::Error::new(other),
    }
}

/// A `--dma-latency` hold that could not be taken: not permitted (exit 3) without
/// write access to `/dev/cpu_dma_latency`, else a run-time failure naming the flag.
pub fn dma_latency(e: std::io::Error) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::PermissionDenied {
        anyhow::Error::new(SchedError::NotPermitted {
            what: "--dma-latency (writing /dev/cpu_dma_latency)".into(),
            remedy: "run as root",
        })
    } else {
        anyhow::anyhow!("--dma-latency: /dev/cpu_dma_latency: {e}")
    }
}

/// Prints `e` as one line and returns its exit code.
pub fn report(e: &anyhow::Error) -> ExitCode {
    let code = classify(e);
    let msg = chain_line(e);
    eprintln!("latlab: error: {msg}");
    ExitCode::from(code)
}

/// The context chain on one line, outermost first, like anyhow's `{:#}` ("reading x.json:
/// x.json: empty file ..."), except that a cause whose text the line already holds is left
/// out: an error that prints its source (`"{path}: {source}"`) would otherwise show the OS
/// reason twice.
fn chain_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string().replace('\n', " ");
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

fn classify(e: &anyhow::Error) -> u8 {
    for cause in e.chain() {
        if cause.is::<UsageError>() {
            return USAGE;
        }
        if cause.is::<Refused>() {
            return NOT_PERMITTED;
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
        if let Some(latlab_net::testpmd::TestpmdError::NotInstalled { .. }) = cause.downcast_ref() {
            // a tool this host lacks: the run cannot happen here, as without a privilege
            return NOT_PERMITTED;
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

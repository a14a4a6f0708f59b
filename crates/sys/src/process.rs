//! Process-wide settings for command-line use.

/// Restores the default action for `SIGPIPE` (terminate quietly).
///
/// Rust programs start with `SIGPIPE` ignored, so writing to a closed pipe
/// (`latlab show run.json | head`) turns into an error or a `println!` panic. A command-line
/// tool wants the Unix behaviour instead: end silently when the reader goes away.
pub fn default_sigpipe() {
    // SAFETY: `signal` with SIG_DFL installs no handler code; it is called once at start-up,
    // before any thread is spawned, so no other thread observes the change mid-flight.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Asks process `pid` to stop (`SIGTERM`), e.g. a server this process started, so that it
/// can stop its own children (nginx's master stops its workers; `SIGKILL` would orphan
/// them).
///
/// # Errors
/// The OS error (`ESRCH` when it is already gone, `EPERM` when it is not ours to signal).
pub fn terminate(pid: u32) -> std::io::Result<()> {
    let pid =
        libc::pid_t::try_from(pid).map_err(|_| std::io::Error::from_raw_os_error(libc::ESRCH))?;
    // SAFETY: `kill` takes plain integers and touches no memory of ours.
    let rc = unsafe { libc::kill(pid, libc::SIGTERM) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn terminate_stops_a_child_and_reports_a_missing_one() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        super::terminate(child.id()).unwrap();
        let status = child.wait().unwrap();
        assert!(!status.success(), "sleep ended by SIGTERM, not by itself");
        // The pid is reaped now: nothing left to signal.
        assert!(super::terminate(child.id()).is_err());
    }
}

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

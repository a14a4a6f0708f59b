//! A stop flag raised by SIGINT or SIGTERM, for long-running loops (`latlab net delay`)
//! that must end cleanly and write their results when interrupted. The handler only
//! stores into an atomic (async-signal-safe); the loop polls [`stop_requested`].

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Installs the handler for SIGINT and SIGTERM (idempotent).
///
/// # Errors
/// The OS error of `sigaction`.
pub fn install_stop_handler() -> std::io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: sigaction is plain old data (all-zero is valid); the handler only touches
        // an atomic, which is async-signal-safe; the mask is initialised by sigemptyset.
        let r = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut())
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether SIGINT or SIGTERM arrived since the handler was installed.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// The flag itself, for loops that take a `&AtomicBool`.
pub fn stop_flag() -> &'static AtomicBool {
    &STOP
}

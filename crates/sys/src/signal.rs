//! A stop flag raised by SIGINT or SIGTERM, for long-running loops (`latlab net delay`)
//! that must end cleanly and write their results when interrupted. The handler only
//! stores into an atomic (async-signal-safe); the loop polls [`stop_requested`].
//!
//! A thread that must act on the signal without polling blocks in [`wait_for_stop`]: the
//! handler also writes one byte into a pipe (`write` is async-signal-safe), which wakes it.
//!
//! And [`interrupt`]: waking one thread out of a blocking system call, so that blocking
//! receives can wait without a timeout and still be stopped.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// The pipe's ends (`-1` until [`install_stop_handler`] made it).
static PIPE_R: AtomicI32 = AtomicI32::new(-1);
static PIPE_W: AtomicI32 = AtomicI32::new(-1);
static PIPE: std::sync::OnceLock<Result<(), i32>> = std::sync::OnceLock::new();

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::SeqCst);
    STOP.store(true, Ordering::SeqCst);
    let w = PIPE_W.load(Ordering::SeqCst);
    if w >= 0 {
        let b = 1u8;
        // SAFETY: `write` is async-signal-safe; one byte from a local; the pipe is
        // non-blocking, so a full pipe (a signal storm) drops the byte instead of hanging.
        unsafe {
            libc::write(w, std::ptr::addr_of!(b).cast(), 1);
        }
    }
}

/// Installs the handler for SIGINT and SIGTERM (idempotent).
///
/// # Errors
/// The OS error of `pipe2` or `sigaction`.
pub fn install_stop_handler() -> std::io::Result<()> {
    let piped = PIPE.get_or_init(|| {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `pipe2` writes two descriptors into the array it is given.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
        }
        PIPE_R.store(fds[0], Ordering::SeqCst);
        PIPE_W.store(fds[1], Ordering::SeqCst);
        Ok(())
    });
    if let Err(e) = piped {
        return Err(std::io::Error::from_raw_os_error(*e));
    }
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

/// Blocks until SIGINT or SIGTERM arrives (at once if one already did) and returns it.
/// Sleeps in `poll` on the handler's pipe: no timer, no wake-up until then.
///
/// # Panics
/// Before [`install_stop_handler`] succeeded (nothing could wake it).
pub fn wait_for_stop() -> libc::c_int {
    let r = PIPE_R.load(Ordering::SeqCst);
    assert!(r >= 0, "wait_for_stop before install_stop_handler");
    while !stop_requested() {
        let mut p = libc::pollfd {
            fd: r,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; an interrupted poll returns -1 (EINTR) and loops.
        unsafe {
            libc::poll(&mut p, 1, -1);
        }
    }
    SIGNAL.load(Ordering::SeqCst)
}

/// The signal that raised the flag (the last one when several came), if any did.
pub fn stop_signal() -> Option<libc::c_int> {
    stop_requested().then(|| SIGNAL.load(Ordering::SeqCst))
}

/// A signal's name for a message: `SIGINT`, `SIGTERM`, else `signal N`.
pub fn name(sig: libc::c_int) -> String {
    match sig {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        n => format!("signal {n}"),
    }
}

/// The flag itself, for loops that take a `&AtomicBool`.
pub fn stop_flag() -> &'static AtomicBool {
    &STOP
}

/// The signal [`interrupt`] sends. Its handler does nothing and is installed without
/// `SA_RESTART`, so the only effect is that a blocking system call of the target thread
/// returns `EINTR`.
pub const WAKE_SIGNAL: libc::c_int = libc::SIGUSR2;

extern "C" fn on_wake(_: libc::c_int) {}

static WAKE_HANDLER: std::sync::OnceLock<Result<(), i32>> = std::sync::OnceLock::new();

/// Installs the do-nothing handler of [`WAKE_SIGNAL`] (once per process).
///
/// # Errors
/// The OS error of `sigaction`.
pub fn install_wake_handler() -> std::io::Result<()> {
    let r = WAKE_HANDLER.get_or_init(|| {
        // SAFETY: sigaction is plain old data (all-zero is valid); the handler does
        // nothing, which is async-signal-safe; the mask is initialised by sigemptyset; no
        // SA_RESTART, so an interrupted blocking call returns EINTR.
        let r = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_wake as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(WAKE_SIGNAL, &sa, std::ptr::null_mut())
        };
        if r == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
        }
    });
    r.map_err(std::io::Error::from_raw_os_error)
}

/// Interrupts the thread of `handle`: a blocking system call it is in returns `EINTR`;
/// a thread between calls is not affected, so callers that want it to notice a flag
/// repeat until it has finished. This lets a blocking receive wait without a timeout (a
/// timed wait arms and cancels a kernel timer on every call, on the measured path) and
/// still be stopped.
///
/// # Errors
/// The handler cannot be installed, or `pthread_kill` fails.
pub fn interrupt<T>(handle: &std::thread::JoinHandle<T>) -> std::io::Result<()> {
    use std::os::unix::thread::JoinHandleExt;
    install_wake_handler()?;
    // SAFETY: the thread id comes from a JoinHandle the caller still holds, so the thread
    // has not been joined and its id is valid (an exited, unjoined thread's id stays
    // valid); WAKE_SIGNAL has a handler installed above, so delivery cannot terminate
    // the process.
    let r = unsafe { libc::pthread_kill(handle.as_pthread_t(), WAKE_SIGNAL) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::from_raw_os_error(r))
    }
}

#[cfg(test)]
mod tests {
    /// A thread asleep in `wait_for_stop` wakes with the signal that came, and the flag is
    /// up. (This sets the process's stop flag: no other test of this crate reads it.)
    #[test]
    fn wait_for_stop_sleeps_until_the_signal_and_names_it() {
        super::install_stop_handler().unwrap();
        let waiter = std::thread::spawn(super::wait_for_stop);
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!waiter.is_finished(), "woke before any signal");
        crate::process::terminate(std::process::id()).unwrap();
        assert_eq!(waiter.join().unwrap(), libc::SIGTERM);
        assert!(super::stop_requested());
        assert_eq!(super::stop_signal(), Some(libc::SIGTERM));
        assert_eq!(super::name(libc::SIGTERM), "SIGTERM");
    }
}

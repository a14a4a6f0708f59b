//! Kernel IPC endpoints as owned file descriptors: `eventfd(2)` counters and `pipe2(2)`
//! pipes, plus the cheapest system call (`getppid`) used as the null-syscall baseline.
//! UNIX sockets come from `std::os::unix::net`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// An `eventfd` counter (blocking unless created non-blocking).
#[derive(Debug)]
pub struct EventFd {
    fd: OwnedFd,
}

impl EventFd {
    /// Creates an eventfd with counter 0, close-on-exec, blocking.
    ///
    /// # Errors
    /// The OS error of `eventfd(2)`.
    pub fn new() -> io::Result<EventFd> {
        // SAFETY: eventfd takes no pointers; a non-negative return is a fresh descriptor
        // that we own.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a valid, owned, open descriptor (checked above).
        Ok(EventFd {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Adds `v` to the counter (wakes a blocked reader).
    ///
    /// # Errors
    /// The OS error of `write(2)`.
    pub fn signal(&self, v: u64) -> io::Result<()> {
        let buf = v.to_ne_bytes();
        // SAFETY: `buf` is 8 readable bytes, the size eventfd requires.
        let n = unsafe { libc::write(self.fd.as_raw_fd(), buf.as_ptr().cast(), 8) };
        if n == 8 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Blocks until the counter is non-zero, returns it and resets it to 0.
    ///
    /// # Errors
    /// The OS error of `read(2)`.
    pub fn wait(&self) -> io::Result<u64> {
        let mut buf = [0u8; 8];
        // SAFETY: `buf` is 8 writable bytes, the size eventfd requires.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
        if n == 8 {
            Ok(u64::from_ne_bytes(buf))
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

/// Creates a pipe (close-on-exec, blocking): `(read end, write end)`. Use with
/// `std::fs::File::from` for `Read`/`Write`.
///
/// # Errors
/// The OS error of `pipe2(2)`.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a writable array of two ints, as pipe2 requires.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created by pipe2 and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The null system call: `getppid` issued as a raw `syscall` (never answered from a libc
/// cache), so its cost is one kernel entry and exit.
#[inline]
pub fn null_syscall() -> i64 {
    // SAFETY: getppid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_getppid) as i64 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn eventfd_counts() {
        let e = EventFd::new().unwrap();
        e.signal(2).unwrap();
        e.signal(3).unwrap();
        assert_eq!(e.wait().unwrap(), 5);
    }

    #[test]
    fn pipe_carries_bytes() {
        let (r, w) = pipe().unwrap();
        let (mut r, mut w) = (std::fs::File::from(r), std::fs::File::from(w));
        w.write_all(b"x").unwrap();
        let mut b = [0u8; 1];
        r.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"x");
    }

    #[test]
    fn null_syscall_returns_parent_pid() {
        assert_eq!(
            null_syscall(),
            i64::from(std::os::unix::process::parent_id())
        );
    }
}

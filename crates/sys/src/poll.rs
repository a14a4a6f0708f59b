//! Waiting for several sockets at once: a preallocated `ppoll(2)` set with a
//! nanosecond timeout, for event loops that must not allocate per wait (the request
//! generator of `latlab net load`).

use std::io;
use std::os::fd::{AsRawFd, RawFd};

/// A fixed set of descriptors and the events wanted on each; [`PollSet::wait`] fills in
/// what happened. Slots are addressed by the index [`PollSet::add`] returned.
#[derive(Debug, Default)]
pub struct PollSet {
    fds: Vec<libc::pollfd>,
}

impl PollSet {
    /// An empty set with room for `n` descriptors (the only allocation).
    pub fn with_capacity(n: usize) -> PollSet {
        PollSet {
            fds: Vec::with_capacity(n),
        }
    }

    /// Adds `fd`, waiting for input; returns its slot. The caller keeps `fd` open while
    /// it is in the set.
    pub fn add<F: AsRawFd>(&mut self, fd: &F) -> usize {
        self.add_raw(fd.as_raw_fd())
    }

    fn add_raw(&mut self, fd: RawFd) -> usize {
        self.fds.push(libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        });
        self.fds.len() - 1
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        self.fds.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.fds.is_empty()
    }

    /// Whether slot `i` also waits until it can be written to.
    pub fn want_write(&mut self, i: usize, on: bool) {
        let e = &mut self.fds[i].events;
        if on {
            *e |= libc::POLLOUT;
        } else {
            *e &= !libc::POLLOUT;
        }
    }

    /// Watches `fd` in slot `i` instead of what it watched (a reconnected socket), waiting
    /// for input only.
    pub fn replace<F: AsRawFd>(&mut self, i: usize, fd: &F) {
        self.fds[i] = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
    }

    /// Stops watching slot `i` (a closed connection); it reports nothing afterwards.
    pub fn disable(&mut self, i: usize) {
        self.fds[i].fd = -1;
        self.fds[i].revents = 0;
    }

    /// Waits at most `timeout_ns` (0: just look) for any slot to be ready; returns how
    /// many are. A signal ends the wait early with 0.
    pub fn wait(&mut self, timeout_ns: u64) -> io::Result<usize> {
        let ts = libc::timespec {
            tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: `fds` is a valid array of `len` pollfds owned by self; `ts` lives for the
        // call; a null signal mask keeps the thread's own.
        let rc = unsafe {
            libc::ppoll(
                self.fds.as_mut_ptr(),
                self.fds.len() as libc::nfds_t,
                &ts,
                std::ptr::null(),
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                return Ok(0);
            }
            return Err(e);
        }
        Ok(rc as usize)
    }

    /// Whether slot `i` has input (or an error or hang-up, which a read then reports).
    pub fn readable(&self, i: usize) -> bool {
        self.fds[i].revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0
    }

    /// Whether slot `i` can be written to.
    pub fn writable(&self, i: usize) -> bool {
        self.fds[i].revents & libc::POLLOUT != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_written_socket_is_readable_and_an_idle_one_is_not() {
        let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut set = PollSet::with_capacity(1);
        let i = set.add(&a);
        assert_eq!(set.wait(0).unwrap(), 0);
        assert!(!set.readable(i));
        b.write_all(b"x").unwrap();
        assert_eq!(set.wait(1_000_000_000).unwrap(), 1);
        assert!(set.readable(i));
        set.want_write(i, true);
        set.wait(0).unwrap();
        assert!(set.writable(i));
        set.disable(i);
        assert_eq!(set.wait(0).unwrap(), 0);
    }
}

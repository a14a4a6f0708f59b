//! Raw Ethernet frames through `AF_PACKET` sockets: one non-blocking socket bound to one
//! interface in promiscuous mode, receiving every frame that *arrives* on it (frames this
//! host sends are filtered out) and sending whole frames out of it. This is the I/O of
//! latlab's software bump in the wire (`latlab net delay`), which busy-polls such sockets.
//!
//! Plain `recvfrom`/`send` are used (one system call per frame), not `PACKET_MMAP` rings:
//! at the rates of a latency experiment the per-frame syscall costs about a microsecond,
//! which the injector measures and reports as part of its base latency.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `PACKET_IGNORE_OUTGOING` (Linux 4.20+), not in every libc version.
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

/// Errors opening a packet socket.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PacketError {
    /// No interface of that name (in this network namespace).
    #[error("no network interface named '{0}' in this network namespace")]
    NoSuchInterface(String),
    /// Opening raw sockets needs CAP_NET_RAW.
    #[error("cannot open an AF_PACKET socket: {0} (needs root or CAP_NET_RAW)")]
    NotPermitted(#[source] io::Error),
    /// Any other OS error, with the step that failed.
    #[error("AF_PACKET socket on '{interface}': {what}: {source}")]
    Os {
        /// The interface.
        interface: String,
        /// The failing step.
        what: &'static str,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

/// Kernel counters of a packet socket (`PACKET_STATISTICS`; reading them resets them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PacketStats {
    /// Frames the kernel queued to the socket.
    pub packets: u64,
    /// Frames the kernel dropped because the socket's receive buffer was full.
    pub drops: u64,
}

/// A non-blocking `AF_PACKET`/`SOCK_RAW` socket bound to one interface.
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
    interface: String,
    ifindex: u32,
}

/// The index of a network interface, if it exists in this namespace.
pub fn interface_index(name: &str) -> Option<u32> {
    let c = CString::new(name).ok()?;
    // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (i != 0).then_some(i)
}

impl PacketSocket {
    /// Opens a socket for every protocol on `interface`, puts the interface in promiscuous
    /// mode for the socket's lifetime, ignores outgoing frames and drains anything queued
    /// before the bind.
    ///
    /// # Errors
    /// [`PacketError`] naming the interface and the failing step.
    pub fn open(interface: &str, rcvbuf_bytes: usize) -> Result<PacketSocket, PacketError> {
        let ifindex = interface_index(interface)
            .ok_or_else(|| PacketError::NoSuchInterface(interface.to_string()))?;
        let proto = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: plain socket(2) call; a non-negative result is a new descriptor we own.
        let fd = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                libc::c_int::from(proto),
            )
        };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return Err(if e.raw_os_error() == Some(libc::EPERM) {
                PacketError::NotPermitted(e)
            } else {
                PacketError::Os {
                    interface: interface.to_string(),
                    what: "socket",
                    source: e,
                }
            });
        }
        // SAFETY: `fd` was just created and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let s = PacketSocket {
            fd,
            interface: interface.to_string(),
            ifindex,
        };
        let os = |what: &'static str| {
            let source = io::Error::last_os_error();
            PacketError::Os {
                interface: interface.to_string(),
                what,
                source,
            }
        };
        // SAFETY: sockaddr_ll is plain old data; all-zero is a valid starting value.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: `sll` is a valid sockaddr_ll and the length passed is its size.
        let r = unsafe {
            libc::bind(
                s.fd.as_raw_fd(),
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(os("bind"));
        }
        // SAFETY: packet_mreq is plain old data; all-zero is valid.
        let mut mreq: libc::packet_mreq = unsafe { std::mem::zeroed() };
        mreq.mr_ifindex = ifindex as i32;
        mreq.mr_type = libc::PACKET_MR_PROMISC as u16;
        s.setsockopt(libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq)
            .map_err(|_| os("PACKET_ADD_MEMBERSHIP promiscuous"))?;
        // Best effort: older kernels lack it, and recv() filters outgoing frames anyway.
        let _ = s.setsockopt(libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, &1 as &libc::c_int);
        if rcvbuf_bytes > 0 {
            let v = rcvbuf_bytes.min(i32::MAX as usize) as libc::c_int;
            if s.setsockopt(libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &v)
                .is_err()
            {
                let _ = s.setsockopt(libc::SOL_SOCKET, libc::SO_RCVBUF, &v);
            }
        }
        let mut scratch = [0u8; 64];
        while let Ok(Some(_)) = s.recv(&mut scratch) {}
        let _ = s.stats();
        Ok(s)
    }

    fn setsockopt<T>(&self, level: libc::c_int, name: libc::c_int, v: &T) -> io::Result<()> {
        crate::sockopt::set(self.fd.as_raw_fd(), level, name, v)
    }

    /// The interface this socket is bound to.
    pub fn interface(&self) -> &str {
        &self.interface
    }

    /// The interface's index.
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// Receives one arriving frame into `buf`. `Ok(None)` when none is waiting. The length
    /// returned is the frame's full length, which exceeds `buf.len()` when it was
    /// truncated (the caller counts that). Frames sent by this host are skipped.
    ///
    /// # Errors
    /// Any OS error other than "would block".
    #[inline]
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        loop {
            // SAFETY: sockaddr_ll is plain old data; all-zero is valid.
            let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            // SAFETY: `buf` is writable for its length; `from`/`len` describe a writable
            // sockaddr_ll.
            let n = unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_TRUNC,
                    (&mut from as *mut libc::sockaddr_ll).cast(),
                    &mut len,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                return match e.kind() {
                    io::ErrorKind::WouldBlock => Ok(None),
                    io::ErrorKind::Interrupted => continue,
                    _ => Err(e),
                };
            }
            if from.sll_pkttype == libc::PACKET_OUTGOING {
                continue;
            }
            return Ok(Some(n as usize));
        }
    }

    /// Sends one whole Ethernet frame out of the interface. `Ok(false)` when the kernel
    /// had no room (`EAGAIN`/`ENOBUFS`): the frame was not sent and the caller counts it.
    ///
    /// # Errors
    /// Any other OS error (e.g. `EMSGSIZE` for a frame larger than the MTU).
    #[inline]
    pub fn send(&self, frame: &[u8]) -> io::Result<bool> {
        loop {
            // SAFETY: `frame` is readable for its length.
            let n =
                unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
            if n >= 0 {
                return Ok(true);
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN) | Some(libc::ENOBUFS) => return Ok(false),
                _ => return Err(e),
            }
        }
    }

    /// Reads and resets the kernel's counters for this socket.
    ///
    /// # Errors
    /// The OS error of `getsockopt(PACKET_STATISTICS)`.
    pub fn stats(&self) -> io::Result<PacketStats> {
        // SAFETY: tpacket_stats is plain old data; all-zero is valid.
        let mut st: libc::tpacket_stats = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: `st`/`len` describe a writable tpacket_stats.
        let r = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&mut st as *mut libc::tpacket_stats).cast(),
                &mut len,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(PacketStats {
            packets: u64::from(st.tp_packets),
            drops: u64::from(st.tp_drops),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_interface_is_named() {
        let e = PacketSocket::open("latlab-nope0", 0).unwrap_err();
        assert!(e.to_string().contains("latlab-nope0"), "{e}");
    }

    #[test]
    fn loopback_index_exists() {
        assert!(interface_index("lo").is_some());
        assert!(interface_index("no such if").is_none());
    }
}

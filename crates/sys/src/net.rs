//! Socket system calls for `latlab net`: `SO_TIMESTAMPING` (software and hardware, RX
//! control messages and TX timestamps from the error queue matched by `OPT_ID`),
//! batched I/O with `recvmmsg`/`sendmmsg`, `SO_BUSY_POLL`, and (module `nic`, re-exported
//! here) the NIC's timestamping capabilities (`ETHTOOL_GET_TS_INFO`, `SIOCSHWTSTAMP`), all
//! behind safe functions that take a socket by [`AsFd`]. Socket options are set through
//! `crate::sockopt`, the crate's one typed `setsockopt`.
//!
//! Kernel timestamps are `CLOCK_REALTIME` (software) or the NIC's PTP clock (hardware),
//! returned as nanoseconds since the epoch of that clock.
//!
//! Parsing of control messages is done on byte slices in pure functions
//! ([`parse_timestamping_cmsg`], [`parse_extended_err`]) so that it is tested without
//! sockets.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsFd, AsRawFd};

mod nic;
pub use nic::{driver_name, enable_hw_timestamping, ts_info, TsInfo};

/// `SO_TIMESTAMPING` (the "old" 64-bit-timespec variant on 64-bit Linux).
pub const SO_TIMESTAMPING: libc::c_int = 37;
/// The control message type carrying three timespecs (software, legacy, hardware).
pub const SCM_TIMESTAMPING: libc::c_int = 37;
/// `SO_BUSY_POLL`: microseconds to busy-poll the device queue in blocking receives.
pub const SO_BUSY_POLL: libc::c_int = 46;
/// `SO_PREFER_BUSY_POLL`.
pub const SO_PREFER_BUSY_POLL: libc::c_int = 69;
/// `IP_RECVERR` (control message type of a `sock_extended_err` on `SOL_IP`).
const IP_RECVERR: libc::c_int = 11;
/// `IPV6_RECVERR`.
const IPV6_RECVERR: libc::c_int = 25;
/// `SO_EE_ORIGIN_TIMESTAMPING`.
const SO_EE_ORIGIN_TIMESTAMPING: u8 = 4;

/// `SOF_TIMESTAMPING_*` flags (see `Documentation/networking/timestamping.rst`).
pub mod sof {
    /// Hardware TX timestamps.
    pub const TX_HARDWARE: u32 = 1 << 0;
    /// Software TX timestamps (when the driver hands the packet to the device).
    pub const TX_SOFTWARE: u32 = 1 << 1;
    /// Hardware RX timestamps.
    pub const RX_HARDWARE: u32 = 1 << 2;
    /// Software RX timestamps (when the packet enters the kernel stack).
    pub const RX_SOFTWARE: u32 = 1 << 3;
    /// Report software timestamps.
    pub const SOFTWARE: u32 = 1 << 4;
    /// Report hardware timestamps in the NIC's clock.
    pub const RAW_HARDWARE: u32 = 1 << 6;
    /// Tag TX timestamps with a per-socket counter (`ee_data`).
    pub const OPT_ID: u32 = 1 << 7;
    /// TX timestamp when the packet enters the packet scheduler (qdisc).
    pub const TX_SCHED: u32 = 1 << 8;
    /// Return only the timestamp on the error queue, not the packet.
    pub const OPT_TSONLY: u32 = 1 << 11;
}

/// Which kind of TX timestamp an error-queue entry is (`SCM_TSTAMP_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxStamp {
    /// `SCM_TSTAMP_SND`: the driver handed the packet to the device (software), or the
    /// NIC sent it (hardware).
    Send,
    /// `SCM_TSTAMP_SCHED`: the packet entered the packet scheduler.
    Sched,
    /// `SCM_TSTAMP_ACK` (TCP only).
    Ack,
}

/// One TX timestamp read from the error queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxTimestamp {
    /// The `OPT_ID` counter: the index of the send call on this socket since timestamping
    /// was enabled (0 for the first datagram).
    pub id: u32,
    /// Which point of the TX path.
    pub kind: TxStamp,
    /// Software timestamp (`CLOCK_REALTIME` ns), if present.
    pub software_ns: Option<u64>,
    /// Hardware timestamp (NIC clock ns), if present.
    pub hardware_ns: Option<u64>,
}

/// Timestamps attached to a received datagram.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxTimestamps {
    /// Software RX timestamp (`CLOCK_REALTIME` ns).
    pub software_ns: Option<u64>,
    /// Hardware RX timestamp (NIC clock ns).
    pub hardware_ns: Option<u64>,
}

fn setsockopt_int<F: AsFd>(
    fd: &F,
    level: libc::c_int,
    name: libc::c_int,
    v: libc::c_int,
) -> io::Result<()> {
    crate::sockopt::set(fd.as_fd().as_raw_fd(), level, name, &v)
}

fn getsockopt_int<F: AsFd>(fd: &F, level: libc::c_int, name: libc::c_int) -> io::Result<i32> {
    let mut v: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` are valid writable locations of the sizes the call expects.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_fd().as_raw_fd(),
            level,
            name,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(v)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Enables `SO_TIMESTAMPING` with `flags` (a combination of [`sof`] constants) on a socket.
///
/// The kernel switches RX software timestamping on globally through a deferred static
/// key: datagrams received in the first milliseconds after the first socket enables it
/// may carry no timestamp (callers warm up, and count datagrams without one).
pub fn set_timestamping<F: AsFd>(fd: &F, flags: u32) -> io::Result<()> {
    setsockopt_int(fd, libc::SOL_SOCKET, SO_TIMESTAMPING, flags as libc::c_int)
}

/// Sets `SO_BUSY_POLL` (µs of busy polling of the device queue on blocking receives and
/// poll). Needs `CAP_NET_ADMIN` to raise it above the `net.core.busy_read` sysctl.
pub fn set_busy_poll<F: AsFd>(fd: &F, usec: u32) -> io::Result<()> {
    setsockopt_int(
        fd,
        libc::SOL_SOCKET,
        SO_BUSY_POLL,
        usec.min(i32::MAX as u32) as i32,
    )
}

/// Binds a socket to the interface named `iface` (`SO_BINDTODEVICE`; root or
/// `CAP_NET_RAW`): the kernel routes what it sends only out of that interface, so a
/// datagram to an address of another local interface leaves on the wire instead of taking
/// the loopback path, whatever the routing rules say.
///
/// # Errors
/// `InvalidInput` for an empty name, one of `IFNAMSIZ` bytes or more, or one with a NUL;
/// the OS error otherwise (`ENODEV`: no such interface in this namespace).
pub fn bind_to_device<F: AsFd>(fd: &F, iface: &str) -> io::Result<()> {
    if !interface_name_ok(iface) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{iface:?} is not an interface name"),
        ));
    }
    crate::sockopt::set_bytes(
        fd.as_fd().as_raw_fd(),
        libc::SOL_SOCKET,
        libc::SO_BINDTODEVICE,
        iface.as_bytes(),
    )
}

/// Whether `name` can name a network interface: 1 to 15 bytes (`IFNAMSIZ` - 1), without
/// NUL, `/` or white space.
pub fn interface_name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() < libc::IFNAMSIZ
        && !name
            .bytes()
            .any(|b| b == 0 || b == b'/' || b.is_ascii_whitespace())
}

/// Sets `SO_PREFER_BUSY_POLL` (kernel ≥ 5.11).
pub fn set_prefer_busy_poll<F: AsFd>(fd: &F, on: bool) -> io::Result<()> {
    setsockopt_int(fd, libc::SOL_SOCKET, SO_PREFER_BUSY_POLL, i32::from(on))
}

/// Sets the receive buffer size, with `SO_RCVBUFFORCE` when permitted (root), else
/// `SO_RCVBUF` (capped by `net.core.rmem_max`). Returns the size the kernel reports.
pub fn set_recv_buffer<F: AsFd>(fd: &F, bytes: u32) -> io::Result<u32> {
    let v = bytes.min(i32::MAX as u32) as i32;
    if setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, v).is_err() {
        setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, v)?;
    }
    Ok(getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF)? as u32)
}

/// Sets the send buffer size (`SO_SNDBUFFORCE`, falling back to `SO_SNDBUF`).
pub fn set_send_buffer<F: AsFd>(fd: &F, bytes: u32) -> io::Result<u32> {
    let v = bytes.min(i32::MAX as u32) as i32;
    if setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, v).is_err() {
        setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, v)?;
    }
    Ok(getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF)? as u32)
}

/// Nanoseconds of a `timespec` laid out as two native `i64`s at `b`, `None` for zero
/// (the kernel leaves absent timestamps zero).
fn timespec_ns(b: &[u8]) -> Option<u64> {
    if b.len() < 16 {
        return None;
    }
    let sec = i64::from_ne_bytes(b[0..8].try_into().ok()?);
    let nsec = i64::from_ne_bytes(b[8..16].try_into().ok()?);
    if sec == 0 && nsec == 0 {
        return None;
    }
    let ns = (sec as i128) * 1_000_000_000 + nsec as i128;
    u64::try_from(ns).ok()
}

/// Parses the payload of an `SCM_TIMESTAMPING` control message (three `timespec`s:
/// software, legacy, hardware). Pure.
pub fn parse_timestamping_cmsg(data: &[u8]) -> RxTimestamps {
    RxTimestamps {
        software_ns: data.get(0..16).and_then(timespec_ns),
        hardware_ns: data.get(32..48).and_then(timespec_ns),
    }
}

/// Parses a `sock_extended_err` payload; returns `(kind, id)` when it is a timestamping
/// report. Pure.
pub fn parse_extended_err(data: &[u8]) -> Option<(TxStamp, u32)> {
    // struct sock_extended_err { u32 ee_errno; u8 ee_origin, ee_type, ee_code, ee_pad;
    //                            u32 ee_info; u32 ee_data; }
    if data.len() < 16 {
        return None;
    }
    let errno = u32::from_ne_bytes(data[0..4].try_into().ok()?);
    let origin = data[4];
    let info = u32::from_ne_bytes(data[8..12].try_into().ok()?);
    let id = u32::from_ne_bytes(data[12..16].try_into().ok()?);
    if origin != SO_EE_ORIGIN_TIMESTAMPING || errno != libc::ENOMSG as u32 {
        return None;
    }
    let kind = match info {
        0 => TxStamp::Send,
        1 => TxStamp::Sched,
        2 => TxStamp::Ack,
        _ => return None,
    };
    Some((kind, id))
}

/// Walks the control messages of a received `msghdr`'s buffer: `f(level, type, data)`.
fn for_each_cmsg(control: &[u8], used: usize, mut f: impl FnMut(i32, i32, &[u8])) {
    let used = used.min(control.len());
    let hdr = size_of::<libc::cmsghdr>();
    let align = size_of::<usize>();
    let mut off = 0usize;
    while off + hdr <= used {
        let b = &control[off..];
        let len = usize::from_ne_bytes(b[0..8].try_into().unwrap_or([0; 8]));
        let level = i32::from_ne_bytes(b[8..12].try_into().unwrap_or([0; 4]));
        let ty = i32::from_ne_bytes(b[12..16].try_into().unwrap_or([0; 4]));
        if len < hdr || off + len > used {
            break;
        }
        f(level, ty, &b[hdr..len]);
        off += (len + align - 1) & !(align - 1);
    }
}

/// Space for the control messages of one datagram (timestamps and an extended error).
pub const CONTROL_BYTES: usize = 256;

fn sockaddr_to_std(ss: &libc::sockaddr_storage, len: libc::socklen_t) -> Option<SocketAddr> {
    match ss.ss_family as libc::c_int {
        libc::AF_INET if len as usize >= size_of::<libc::sockaddr_in>() => {
            // SAFETY: the family says the storage holds a `sockaddr_in`, which fits in it.
            let a: &libc::sockaddr_in = unsafe { &*(ss as *const _ as *const libc::sockaddr_in) };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 if len as usize >= size_of::<libc::sockaddr_in6>() => {
            // SAFETY: the family says the storage holds a `sockaddr_in6`, which fits in it.
            let a: &libc::sockaddr_in6 = unsafe { &*(ss as *const _ as *const libc::sockaddr_in6) };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(a.sin6_addr.s6_addr),
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

fn std_to_sockaddr(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: an all-zero `sockaddr_storage` is a valid value.
    let mut ss: libc::sockaddr_storage = unsafe { zeroed() };
    match addr {
        SocketAddr::V4(a) => {
            // SAFETY: `sockaddr_storage` is larger than and suitably aligned for `sockaddr_in`.
            let sin = unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in) };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = a.port().to_be();
            sin.sin_addr.s_addr = u32::from(*a.ip()).to_be();
            (ss, size_of::<libc::sockaddr_in>() as libc::socklen_t)
        }
        SocketAddr::V6(a) => {
            // SAFETY: `sockaddr_storage` is larger than and suitably aligned for `sockaddr_in6`.
            let sin6 = unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in6) };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = a.port().to_be();
            sin6.sin6_addr.s6_addr = a.ip().octets();
            sin6.sin6_flowinfo = a.flowinfo();
            sin6.sin6_scope_id = a.scope_id();
            (ss, size_of::<libc::sockaddr_in6>() as libc::socklen_t)
        }
    }
}

/// Preallocated buffers for receiving (and re-sending) up to `slots` datagrams per system
/// call with `recvmmsg`/`sendmmsg`. Nothing is allocated after [`MmsgBatch::new`].
pub struct MmsgBatch {
    slot_size: usize,
    data: Vec<u8>,
    control: Vec<u8>,
    addrs: Vec<libc::sockaddr_storage>,
    iovs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    send_iovs: Vec<libc::iovec>,
    send_hdrs: Vec<libc::mmsghdr>,
    lens: Vec<usize>,
    addr_lens: Vec<libc::socklen_t>,
    control_lens: Vec<usize>,
    flags: Vec<libc::c_int>,
    filled: usize,
}

// SAFETY: the raw pointers inside `iovs`/`hdrs` only ever point into the batch's own heap
// buffers (re-pointed before every call), so moving the batch to another thread is sound.
unsafe impl Send for MmsgBatch {}

impl std::fmt::Debug for MmsgBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MmsgBatch")
            .field("slots", &self.lens.len())
            .field("slot_size", &self.slot_size)
            .field("filled", &self.filled)
            .finish()
    }
}

/// How a receive call waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Block until at least one datagram arrives (or the socket's receive timeout).
    Block,
    /// Return at once (`MSG_DONTWAIT`); no datagram gives `Ok(0)`.
    NonBlocking,
}

impl MmsgBatch {
    /// A batch of `slots` datagrams of at most `slot_size` bytes each (a longer datagram is
    /// truncated and flagged, see [`MmsgBatch::truncated`]). With `control`, space for
    /// timestamp control messages is reserved.
    pub fn new(slots: usize, slot_size: usize, control: bool) -> MmsgBatch {
        let slots = slots.max(1);
        let cbytes = if control { CONTROL_BYTES } else { 0 };
        MmsgBatch {
            slot_size,
            data: vec![0; slots * slot_size],
            control: vec![0; slots * cbytes],
            // SAFETY: all-zero `sockaddr_storage`, `iovec` and `mmsghdr` are valid values
            // (null pointers, zero lengths).
            addrs: vec![unsafe { zeroed() }; slots],
            iovs: vec![unsafe { zeroed() }; slots],
            hdrs: vec![unsafe { zeroed() }; slots],
            send_iovs: vec![unsafe { zeroed() }; slots],
            send_hdrs: vec![unsafe { zeroed() }; slots],
            lens: vec![0; slots],
            addr_lens: vec![0; slots],
            control_lens: vec![0; slots],
            flags: vec![0; slots],
            filled: 0,
        }
    }

    /// Number of slots.
    pub fn slots(&self) -> usize {
        self.lens.len()
    }

    /// Bytes per slot.
    pub fn slot_size(&self) -> usize {
        self.slot_size
    }

    /// Datagrams held after the last receive.
    pub fn filled(&self) -> usize {
        self.filled
    }

    fn cbytes(&self) -> usize {
        self.control.len() / self.lens.len()
    }

    /// Points every header at its slot, for receiving `n` datagrams.
    fn prepare_recv(&mut self, n: usize) {
        let cb = self.cbytes();
        for i in 0..n {
            self.iovs[i] = libc::iovec {
                iov_base: self.data[i * self.slot_size..].as_mut_ptr().cast(),
                iov_len: self.slot_size,
            };
            let h = &mut self.hdrs[i].msg_hdr;
            h.msg_name = (&mut self.addrs[i] as *mut libc::sockaddr_storage).cast();
            h.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            h.msg_iov = &mut self.iovs[i];
            h.msg_iovlen = 1;
            if cb > 0 {
                h.msg_control = self.control[i * cb..].as_mut_ptr().cast();
                h.msg_controllen = cb;
            } else {
                h.msg_control = std::ptr::null_mut();
                h.msg_controllen = 0;
            }
            h.msg_flags = 0;
            self.hdrs[i].msg_len = 0;
        }
    }

    /// Receives up to `max` (at most [`MmsgBatch::slots`]) datagrams with one
    /// `recvmmsg` (`recvfrom` or `recvmsg` when `max` is 1). Returns how many; `Ok(0)` for
    /// [`Wait::NonBlocking`] with nothing queued, and for a blocking receive that timed
    /// out or was interrupted by a signal.
    pub fn recv<F: AsFd>(&mut self, fd: &F, max: usize, wait: Wait) -> io::Result<usize> {
        let n = max.clamp(1, self.slots());
        let one = match wait {
            Wait::Block => 0,
            Wait::NonBlocking => libc::MSG_DONTWAIT,
        };
        let rc = if n == 1 && self.cbytes() == 0 {
            // One datagram and no control messages (a closed loop, a blocking NF without
            // kernel timestamps): `recvfrom`, the thinnest receive, because this call is
            // on the measured path of a round trip. MSG_TRUNC makes it return the real
            // length, so truncation is still seen.
            self.addr_lens[0] = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            // SAFETY: slot 0 of `data` and `addrs[0]` are owned by `self` and valid for
            // the lengths given; `addr_lens[0]` is written by the kernel.
            let r = unsafe {
                libc::recvfrom(
                    fd.as_fd().as_raw_fd(),
                    self.data.as_mut_ptr().cast(),
                    self.slot_size,
                    one | libc::MSG_TRUNC,
                    (&mut self.addrs[0] as *mut libc::sockaddr_storage).cast(),
                    &mut self.addr_lens[0],
                )
            };
            if r >= 0 {
                self.lens[0] = r as usize;
                self.control_lens[0] = 0;
                self.flags[0] = 0;
                self.filled = 1;
                return Ok(1);
            }
            -1
        } else if n == 1 {
            self.prepare_recv(1);
            // One datagram with control messages: plain `recvmsg` skips recvmmsg's
            // per-call bookkeeping.
            // SAFETY: `hdrs[0].msg_hdr` points to valid buffers owned by `self` (set just
            // above) that stay alive and unaliased during the call.
            let r =
                unsafe { libc::recvmsg(fd.as_fd().as_raw_fd(), &mut self.hdrs[0].msg_hdr, one) };
            if r >= 0 {
                self.hdrs[0].msg_len = r as libc::c_uint;
                1
            } else {
                -1
            }
        } else {
            self.prepare_recv(n);
            // with MSG_WAITFORONE the kernel blocks for the first datagram only
            let flags = match wait {
                Wait::Block => libc::MSG_WAITFORONE,
                Wait::NonBlocking => libc::MSG_DONTWAIT,
            };
            // SAFETY: `hdrs[..n]` point to valid buffers owned by `self` (set just above)
            // that stay alive and unaliased during the call; a null timeout means no
            // timeout.
            unsafe {
                libc::recvmmsg(
                    fd.as_fd().as_raw_fd(),
                    self.hdrs.as_mut_ptr(),
                    n as libc::c_uint,
                    flags,
                    std::ptr::null_mut(),
                )
            }
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            self.filled = 0;
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
                _ => Err(e),
            };
        }
        let got = rc as usize;
        for i in 0..got {
            let h = &self.hdrs[i];
            self.lens[i] = h.msg_len as usize;
            self.addr_lens[i] = h.msg_hdr.msg_namelen;
            self.control_lens[i] = h.msg_hdr.msg_controllen;
            self.flags[i] = h.msg_hdr.msg_flags;
        }
        self.filled = got;
        Ok(got)
    }

    /// The bytes of received datagram `i` (truncated to the slot size).
    pub fn packet(&self, i: usize) -> &[u8] {
        let len = self.lens[i].min(self.slot_size);
        &self.data[i * self.slot_size..i * self.slot_size + len]
    }

    /// The bytes of datagram `i`, writable (e.g. to stamp a residence time before
    /// re-sending it).
    pub fn packet_mut(&mut self, i: usize) -> &mut [u8] {
        let len = self.lens[i].min(self.slot_size);
        &mut self.data[i * self.slot_size..i * self.slot_size + len]
    }

    /// The whole slot `i`, for composing a datagram to send with [`MmsgBatch::set_len`].
    pub fn slot_mut(&mut self, i: usize) -> &mut [u8] {
        &mut self.data[i * self.slot_size..(i + 1) * self.slot_size]
    }

    /// Sets the length of datagram `i` (capped at the slot size) for sending.
    pub fn set_len(&mut self, i: usize, len: usize) {
        self.lens[i] = len.min(self.slot_size);
    }

    /// The length the datagram `i` had on the wire (may exceed the slot when truncated).
    pub fn wire_len(&self, i: usize) -> usize {
        self.lens[i]
    }

    /// Whether datagram `i` was longer than the slot (`MSG_TRUNC`).
    pub fn truncated(&self, i: usize) -> bool {
        self.flags[i] & libc::MSG_TRUNC != 0 || self.lens[i] > self.slot_size
    }

    /// The sender of datagram `i`.
    pub fn source(&self, i: usize) -> Option<SocketAddr> {
        sockaddr_to_std(&self.addrs[i], self.addr_lens[i])
    }

    /// The kernel timestamps of datagram `i` (when timestamping is enabled on the socket
    /// and the batch was created with control space).
    pub fn timestamps(&self, i: usize) -> RxTimestamps {
        let cb = self.cbytes();
        if cb == 0 {
            return RxTimestamps::default();
        }
        let mut ts = RxTimestamps::default();
        for_each_cmsg(
            &self.control[i * cb..(i + 1) * cb],
            self.control_lens[i],
            |level, ty, data| {
                if level == libc::SOL_SOCKET && ty == SCM_TIMESTAMPING {
                    ts = parse_timestamping_cmsg(data);
                }
            },
        );
        ts
    }

    /// Sends the datagrams at `indices` (their current lengths) with `sendmmsg`: each back
    /// to its source when `to` is `None`, else all to `to`. Returns how many were sent.
    /// Never sends more bytes than a datagram's recorded length, which is at most the slot.
    pub fn send<F: AsFd>(
        &mut self,
        fd: &F,
        indices: &[usize],
        to: Option<&SocketAddr>,
    ) -> io::Result<usize> {
        let fixed = to.map(std_to_sockaddr);
        let mut k = 0usize;
        let slots = self.slots();
        for &i in indices.iter().filter(|&&i| i < slots) {
            if k >= self.send_hdrs.len() {
                break;
            }
            let len = self.lens[i].min(self.slot_size);
            self.send_iovs[k] = libc::iovec {
                iov_base: self.data[i * self.slot_size..].as_mut_ptr().cast(),
                iov_len: len,
            };
            if let Some((ss, l)) = &fixed {
                self.addrs[i] = *ss;
                self.addr_lens[i] = *l;
            }
            let h = &mut self.send_hdrs[k].msg_hdr;
            h.msg_name = (&mut self.addrs[i] as *mut libc::sockaddr_storage).cast();
            h.msg_namelen = self.addr_lens[i];
            h.msg_iov = &mut self.send_iovs[k];
            h.msg_iovlen = 1;
            h.msg_control = std::ptr::null_mut();
            h.msg_controllen = 0;
            h.msg_flags = 0;
            k += 1;
        }
        let mut sent = 0usize;
        while sent < k {
            let rc = if k - sent == 1 {
                // One datagram: `sendto`, the thinnest send (on a round trip's path).
                let h = &self.send_hdrs[sent].msg_hdr;
                // SAFETY: `h` was set up above: its one iovec and its address point into
                // buffers owned by `self` that are alive for the call.
                let r = unsafe {
                    let iov = &*h.msg_iov;
                    libc::sendto(
                        fd.as_fd().as_raw_fd(),
                        iov.iov_base,
                        iov.iov_len,
                        0,
                        h.msg_name.cast(),
                        h.msg_namelen,
                    )
                };
                if r >= 0 {
                    1
                } else {
                    -1
                }
            } else {
                // SAFETY: `send_hdrs[sent..k]` point to valid buffers owned by `self`, set
                // up above and alive for the call.
                unsafe {
                    libc::sendmmsg(
                        fd.as_fd().as_raw_fd(),
                        self.send_hdrs[sent..].as_mut_ptr(),
                        (k - sent) as libc::c_uint,
                        0,
                    )
                }
            };
            if rc < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                if sent > 0 {
                    return Ok(sent);
                }
                return Err(e);
            }
            if rc == 0 {
                break;
            }
            sent += rc as usize;
        }
        Ok(sent)
    }
}

/// Reads pending TX timestamps from a socket's error queue (`MSG_ERRQUEUE`, never blocks)
/// into `out`; returns how many were read. Entries that are not timestamping reports are
/// skipped. Up to 16 entries are read per `recvmmsg` call; nothing is allocated.
pub fn read_tx_timestamps<F: AsFd>(fd: &F, out: &mut [TxTimestamp]) -> io::Result<usize> {
    const B: usize = 16;
    let mut data = [[0u8; 64]; B];
    let mut control = [[0u8; CONTROL_BYTES]; B];
    // SAFETY: all-zero `iovec` and `mmsghdr` are valid values (null pointers, zero lengths).
    let mut iovs: [libc::iovec; B] = unsafe { zeroed() };
    // SAFETY: as above.
    let mut hdrs: [libc::mmsghdr; B] = unsafe { zeroed() };
    let mut n = 0;
    while n < out.len() {
        let want = (out.len() - n).min(B);
        for i in 0..want {
            iovs[i] = libc::iovec {
                iov_base: data[i].as_mut_ptr().cast(),
                iov_len: data[i].len(),
            };
            let h = &mut hdrs[i].msg_hdr;
            h.msg_name = std::ptr::null_mut();
            h.msg_namelen = 0;
            h.msg_iov = &mut iovs[i];
            h.msg_iovlen = 1;
            h.msg_control = control[i].as_mut_ptr().cast();
            h.msg_controllen = CONTROL_BYTES;
            h.msg_flags = 0;
            hdrs[i].msg_len = 0;
        }
        // SAFETY: `hdrs[..want]` point to `iovs`, `data` and `control`, all alive and
        // writable for the duration of the call; a null timeout means none.
        let rc = unsafe {
            libc::recvmmsg(
                fd.as_fd().as_raw_fd(),
                hdrs.as_mut_ptr(),
                want as libc::c_uint,
                libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock => Ok(n),
                io::ErrorKind::Interrupted => continue,
                _ if n > 0 => Ok(n),
                _ => Err(e),
            };
        }
        let got = rc as usize;
        for i in 0..got {
            let mut ts = RxTimestamps::default();
            let mut err = None;
            for_each_cmsg(
                &control[i],
                hdrs[i].msg_hdr.msg_controllen,
                |level, ty, d| {
                    if level == libc::SOL_SOCKET && ty == SCM_TIMESTAMPING {
                        ts = parse_timestamping_cmsg(d);
                    } else if (level == libc::SOL_IP && ty == IP_RECVERR)
                        || (level == libc::SOL_IPV6 && ty == IPV6_RECVERR)
                    {
                        err = parse_extended_err(d);
                    }
                },
            );
            if let Some((kind, id)) = err {
                out[n] = TxTimestamp {
                    id,
                    kind,
                    software_ns: ts.software_ns,
                    hardware_ns: ts.hardware_ns,
                };
                n += 1;
            }
        }
        if got < want {
            break;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    #[test]
    fn interface_names_are_checked_before_the_kernel_sees_them() {
        assert!(interface_name_ok("latlab-ga") && interface_name_ok("a"));
        assert!(!interface_name_ok("") && !interface_name_ok("a b") && !interface_name_ok("a/b"));
        assert!(
            !interface_name_ok("sixteen-bytes-ab"),
            "IFNAMSIZ counts the NUL"
        );
        assert!(interface_name_ok("fifteen-bytes-a"));
    }

    use super::*;
    use std::net::UdpSocket;

    /// The name goes to the kernel as its bytes: `lo` binds, an unknown name is ENODEV.
    #[test]
    fn a_socket_binds_to_a_device_by_name() {
        latlab_testutil::require_root!("SO_BINDTODEVICE needs CAP_NET_RAW");
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        bind_to_device(&s, "lo").unwrap();
        let e = bind_to_device(&s, "no-such-if0").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENODEV), "{e}");
    }

    #[test]
    fn extended_err_parsing() {
        let mut d = [0u8; 16];
        d[0..4].copy_from_slice(&(libc::ENOMSG as u32).to_ne_bytes());
        d[4] = SO_EE_ORIGIN_TIMESTAMPING;
        d[8..12].copy_from_slice(&1u32.to_ne_bytes());
        d[12..16].copy_from_slice(&42u32.to_ne_bytes());
        assert_eq!(parse_extended_err(&d), Some((TxStamp::Sched, 42)));
        d[4] = 2; // ICMP origin: not a timestamp
        assert_eq!(parse_extended_err(&d), None);
        assert_eq!(parse_extended_err(&d[..10]), None);
    }

    #[test]
    fn timestamping_cmsg_parsing() {
        let mut d = [0u8; 48];
        d[0..8].copy_from_slice(&5i64.to_ne_bytes());
        d[8..16].copy_from_slice(&7i64.to_ne_bytes());
        let ts = parse_timestamping_cmsg(&d);
        assert_eq!(ts.software_ns, Some(5_000_000_007));
        assert_eq!(ts.hardware_ns, None);
    }

    #[test]
    fn loopback_batch_with_kernel_timestamps() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        set_timestamping(&rx, sof::RX_SOFTWARE | sof::SOFTWARE).unwrap();
        set_timestamping(
            &tx,
            sof::TX_SOFTWARE | sof::TX_SCHED | sof::SOFTWARE | sof::OPT_ID | sof::OPT_TSONLY,
        )
        .unwrap();
        // RX timestamping is switched on globally through a deferred static key: datagrams
        // sent right after the first enable may carry none.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let to = rx.local_addr().unwrap();
        for i in 0..3u8 {
            tx.send_to(&[i; 20], to).unwrap();
        }
        let mut b = MmsgBatch::new(8, 64, true);
        let mut got = 0;
        while got < 3 {
            got += b.recv(&rx, 8 - got, Wait::Block).unwrap();
            for i in 0..b.filled() {
                assert_eq!(b.packet(i).len(), 20);
                assert!(b.timestamps(i).software_ns.is_some());
                assert_eq!(b.source(i), Some(tx.local_addr().unwrap()));
            }
        }
        let mut out = [TxTimestamp {
            id: 0,
            kind: TxStamp::Send,
            software_ns: None,
            hardware_ns: None,
        }; 16];
        let n = read_tx_timestamps(&tx, &mut out).unwrap();
        // loopback: one SCHED and one SND report per datagram, ids 0..3
        let snd: Vec<u32> = out[..n]
            .iter()
            .filter(|t| t.kind == TxStamp::Send)
            .map(|t| t.id)
            .collect();
        assert_eq!(snd, vec![0, 1, 2], "{:?}", &out[..n]);
        assert!(out[..n].iter().all(|t| t.software_ns.is_some()));
        // reflect them back to where they came from
        let mut b2 = MmsgBatch::new(4, 32, false);
        tx.send_to(&[9; 40], to).unwrap();
        assert_eq!(b2.recv(&rx, 4, Wait::Block).unwrap(), 1);
        assert!(b2.truncated(0));
        assert_eq!(b2.packet(0).len(), 32);
        assert_eq!(b2.send(&rx, &[0], None).unwrap(), 1);
        let mut back = [0u8; 64];
        let (n, _) = tx.recv_from(&mut back).unwrap();
        assert_eq!(n, 32);
    }
}

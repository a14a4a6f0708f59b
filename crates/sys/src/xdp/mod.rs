//! Kernel-bypass I/O through `AF_XDP`: an XDP program that steers latlab's UDP frames to
//! an `AF_XDP` socket, and the socket with its UMEM and rings.
//!
//! No C library is involved: the program is assembled here ([`prog`]), loaded and
//! attached with the `bpf(2)` system call ([`bpf`]), and the socket is set up with the
//! `libc` crate's `if_xdp.h` definitions ([`xsk`]). So the crate builds on a fresh machine
//! from crates.io alone (no libbpf/libxdp headers, no clang), and the program's lifetime is
//! the process's: it is attached through a BPF *link* that the kernel removes when the
//! last descriptor to it closes — when latlab exits, is killed, or crashes.
//!
//! [`XdpPort::open`] insists on native (driver) XDP: generic XDP runs after the kernel
//! built an skb, which is the cost AF_XDP exists to avoid, so an interface without native
//! support is an error that names it ([`XdpError::NoNativeXdp`]). The bind tries
//! zero-copy first and falls back to copy mode (veth offers only copy); [`XdpInfo`] records
//! both for the result's provenance.

pub mod bpf;
pub mod prog;
pub mod xsk;

pub use xsk::{XskStats, FRAME_SIZE};

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

/// Errors opening an XDP port.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum XdpError {
    /// Not allowed to load BPF programs or open AF_XDP sockets.
    #[error("--io xdp needs root (CAP_NET_ADMIN, CAP_BPF and CAP_NET_RAW to load an XDP program and open an AF_XDP socket): {0}")]
    NotPermitted(#[source] io::Error),
    /// No such interface in this namespace.
    #[error("--io xdp: no network interface named '{0}' in this network namespace")]
    NoSuchInterface(String),
    /// The kernel has no AF_XDP sockets.
    #[error("--io xdp: this kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS): {0}")]
    NoAfXdp(#[source] io::Error),
    /// The interface's driver has no native XDP.
    #[error("--io xdp: interface '{interface}' has no native (driver) XDP support ({source}); use a veth or a NIC whose driver has XDP, or --io busy")]
    NoNativeXdp {
        /// The interface.
        interface: String,
        /// The OS error of the attach.
        #[source]
        source: io::Error,
    },
    /// Another XDP program is attached to the interface.
    #[error("--io xdp: interface '{0}' already has an XDP program attached (another latlab run, or `ip link set dev {0} xdp off` to remove a stale one)")]
    Busy(String),
    /// Any other step failed.
    #[error("--io xdp on '{interface}': {what}: {source}")]
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

/// How the port ended up set up (for provenance).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XdpInfo {
    /// Interface name.
    pub interface: String,
    /// Interface index.
    pub ifindex: u32,
    /// Queue bound.
    pub queue: u32,
    /// `native` (driver XDP).
    pub attach: &'static str,
    /// `zerocopy` or `copy`.
    pub bind: &'static str,
}

/// What keeps the program attached: the link (closing it detaches the program), the
/// program and its map. Shared by both halves of a port.
struct Attachment {
    _link: OwnedFd,
    _prog: OwnedFd,
    _map: OwnedFd,
}

/// An XDP program steering `ports` on one interface queue to an `AF_XDP` socket. Dropping
/// it (both halves, after [`XdpPort::split`]) detaches the program and closes the socket.
pub struct XdpPort {
    /// Receiving half.
    pub rx: XdpRx,
    /// Sending half.
    pub tx: XdpTx,
    info: XdpInfo,
}

/// The receiving half of an [`XdpPort`] (may live on another thread than the sending one).
pub struct XdpRx {
    xsk: xsk::XskRx,
    _keep: Arc<Attachment>,
}

/// The sending half of an [`XdpPort`].
pub struct XdpTx {
    xsk: xsk::XskTx,
    _keep: Arc<Attachment>,
}

impl XdpPort {
    /// Opens `interface` queue `queue` for UDP destination ports `ports` with `frames`
    /// receive and `frames` send frames (rounded up to a power of two, at least 64).
    ///
    /// # Errors
    /// [`XdpError`] naming what is missing (root, the interface, native XDP).
    pub fn open(
        interface: &str,
        queue: u32,
        ports: &[u16],
        frames: u32,
    ) -> Result<XdpPort, XdpError> {
        let ifindex = crate::packet::interface_index(interface)
            .ok_or_else(|| XdpError::NoSuchInterface(interface.to_string()))?;
        let os = |what: &'static str| {
            let interface = interface.to_string();
            move |source: io::Error| match source.raw_os_error() {
                Some(libc::EPERM) | Some(libc::EACCES) => XdpError::NotPermitted(source),
                _ => XdpError::Os {
                    interface,
                    what,
                    source,
                },
            }
        };
        let map = bpf::create_xskmap(queue + 1).map_err(os("creating the XSKMAP"))?;
        let prog = bpf::load_xdp(&prog::steer_program(map.as_raw_fd(), ports)).map_err(|e| {
            if e.raw_os_error() == Some(libc::EPERM) {
                XdpError::NotPermitted(e)
            } else {
                XdpError::Os {
                    interface: interface.to_string(),
                    what: "loading the XDP program",
                    source: e,
                }
            }
        })?;
        let frames = frames.next_power_of_two().max(64);
        let x = xsk::Xsk::open(ifindex, queue, frames, frames).map_err(|e| {
            match e.source.raw_os_error() {
                Some(libc::EAFNOSUPPORT) => XdpError::NoAfXdp(e.source),
                Some(libc::EPERM) => XdpError::NotPermitted(e.source),
                _ => XdpError::Os {
                    interface: interface.to_string(),
                    what: e.what,
                    source: e.source,
                },
            }
        })?;
        bpf::set_xskmap(&map, queue, x.raw_fd()).map_err(os("adding the socket to the XSKMAP"))?;
        let link = bpf::link_xdp(&prog, ifindex, bpf::XDP_FLAGS_DRV_MODE).map_err(|e| {
            match e.raw_os_error() {
                Some(libc::EBUSY) | Some(libc::EEXIST) => XdpError::Busy(interface.to_string()),
                Some(libc::EPERM) => XdpError::NotPermitted(e),
                _ => XdpError::NoNativeXdp {
                    interface: interface.to_string(),
                    source: e,
                },
            }
        })?;
        let info = XdpInfo {
            interface: interface.to_string(),
            ifindex,
            queue,
            attach: "native",
            bind: if x.zerocopy { "zerocopy" } else { "copy" },
        };
        let keep = Arc::new(Attachment {
            _link: link,
            _prog: prog,
            _map: map,
        });
        Ok(XdpPort {
            rx: XdpRx {
                xsk: x.rx,
                _keep: keep.clone(),
            },
            tx: XdpTx {
                xsk: x.tx,
                _keep: keep,
            },
            info,
        })
    }

    /// How it was set up.
    pub fn info(&self) -> &XdpInfo {
        &self.info
    }

    /// The two halves and the set-up facts.
    pub fn split(self) -> (XdpRx, XdpTx, XdpInfo) {
        (self.rx, self.tx, self.info)
    }
}

impl XdpRx {
    /// Receives up to `max` frames, calling `f(frame)` for each; returns how many. No
    /// system call on this path (the fill ring is refilled in place).
    #[inline]
    pub fn recv(&mut self, max: u32, f: impl FnMut(&mut [u8])) -> u32 {
        self.xsk.recv(max, f)
    }

    /// The kernel's counters for the socket.
    pub fn stats(&self) -> io::Result<XskStats> {
        self.xsk.stats()
    }
}

impl XdpTx {
    /// Queues up to `n` frames written by `f(i, buf) -> len` (0 skips) and kicks the
    /// kernel with one `sendto`; returns how many were queued.
    #[inline]
    pub fn send(&mut self, n: u32, f: impl FnMut(u32, &mut [u8]) -> usize) -> u32 {
        self.xsk.send(n, f)
    }

    /// Queues one frame written by `f(buf) -> len` without kicking (see [`XdpTx::kick`]);
    /// `false` when the ring or the frames are exhausted.
    #[inline]
    pub fn queue(&mut self, f: impl FnOnce(&mut [u8]) -> usize) -> bool {
        self.xsk.queue(f)
    }

    /// Kicks frames still waiting on the TX ring (one `sendto`; none when the ring is
    /// drained).
    #[inline]
    pub fn kick(&mut self) {
        self.xsk.kick()
    }

    /// TX frames not yet completed by the kernel.
    pub fn in_flight(&mut self) -> u32 {
        self.xsk.in_flight()
    }
}

/// The layer-2/3 facts needed to send to `dst` from this namespace: the outgoing
/// interface, its address and MAC, and the next hop's MAC (from the neighbour table; the
/// testbed's entries are static).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct L2Path {
    /// Outgoing interface.
    pub interface: String,
    /// Source address the route picks.
    pub src: Ipv4Addr,
    /// The interface's MAC.
    pub src_mac: [u8; 6],
    /// The next hop's MAC.
    pub dst_mac: [u8; 6],
}

/// Resolves [`L2Path`] for `dst` with `ip route get` and `ip neigh`; with `from`, for a
/// packet from that local address (so that a policy rule keyed on the source applies, as
/// the testpmd rung's steering is).
///
/// # Errors
/// A line saying which lookup failed.
pub fn l2_path(dst: Ipv4Addr, from: Option<Ipv4Addr>) -> Result<L2Path, String> {
    let d = dst.to_string();
    let f = from.map(|a| a.to_string());
    let mut words = vec!["-o", "route", "get", d.as_str()];
    if let Some(f) = f.as_deref() {
        words.extend(["from", f]);
    }
    let route = crate::netns::ip(&words).map_err(|e| e.to_string())?;
    let (interface, src, via) =
        parse_route_get(&route).ok_or_else(|| format!("no route to {dst}: {}", route.trim()))?;
    let hop = via.unwrap_or(dst).to_string();
    let link =
        crate::netns::ip(&["-o", "link", "show", "dev", &interface]).map_err(|e| e.to_string())?;
    let src_mac = parse_mac_after(&link, "link/ether")
        .ok_or_else(|| format!("interface {interface} has no Ethernet address"))?;
    let lookup = || {
        crate::netns::ip(&["neigh", "show", "to", &hop, "dev", &interface])
            .ok()
            .and_then(|n| parse_mac_after(&n, "lladdr"))
    };
    let mut dst_mac = lookup();
    if dst_mac.is_none() {
        // No entry (the testbed's are static; elsewhere the cache may be cold): one UDP
        // datagram to the discard port makes the kernel resolve it; wait up to a second.
        if let Ok(s) = std::net::UdpSocket::bind((src, 0)) {
            let _ = s.send_to(&[], (via.unwrap_or(dst), 9));
        }
        for _ in 0..100 {
            std::thread::sleep(std::time::Duration::from_millis(10));
            dst_mac = lookup();
            if dst_mac.is_some() {
                break;
            }
        }
    }
    let dst_mac = dst_mac.ok_or_else(|| {
        format!("the next hop {hop} on {interface} does not answer ARP (no neighbour entry)")
    })?;
    Ok(L2Path {
        interface,
        src,
        src_mac,
        dst_mac,
    })
}

/// The interface that holds local address `ip` (`ip -o addr show to`).
///
/// # Errors
/// A line naming the address when no interface holds it.
pub fn interface_of(ip: Ipv4Addr) -> Result<String, String> {
    let out = crate::netns::ip(&["-o", "-4", "addr", "show", "to", &ip.to_string()])
        .map_err(|e| e.to_string())?;
    parse_addr_show(&out).ok_or_else(|| format!("no interface in this namespace has address {ip}"))
}

/// The interface name of the first line of `ip -o addr show` output.
pub fn parse_addr_show(s: &str) -> Option<String> {
    let name = s.lines().next()?.split_whitespace().nth(1)?;
    Some(name.split('@').next()?.to_string())
}

/// Parses `ip -o route get` output: (device, source, gateway).
pub fn parse_route_get(s: &str) -> Option<(String, Ipv4Addr, Option<Ipv4Addr>)> {
    let w: Vec<&str> = s.split_whitespace().collect();
    let after = |k: &str| {
        w.iter()
            .position(|x| *x == k)
            .and_then(|i| w.get(i + 1))
            .copied()
    };
    let dev = after("dev")?.to_string();
    // asked with `from`, the answer names the source there instead of as `src`
    let src = after("src").or_else(|| after("from"))?.parse().ok()?;
    let via = after("via").and_then(|v| v.parse().ok());
    Some((dev, src, via))
}

/// The MAC address following the word `key` (e.g. `link/ether`, `lladdr`).
pub fn parse_mac_after(s: &str, key: &str) -> Option<[u8; 6]> {
    let mut it = s.split_whitespace();
    while let Some(w) = it.next() {
        if w == key {
            return parse_mac(it.next()?);
        }
    }
    None
}

/// Parses `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut m = [0u8; 6];
    let mut parts = s.split(':');
    for b in &mut m {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_route_and_neighbour_lines() {
        let r = "10.201.2.1 dev latlab-nb src 10.201.2.2 uid 0 \\    cache ";
        assert_eq!(
            parse_route_get(r),
            Some(("latlab-nb".into(), Ipv4Addr::new(10, 201, 2, 2), None))
        );
        let r = "8.8.8.8 via 10.0.0.1 dev eth0 src 10.0.0.5 uid 0";
        assert_eq!(
            parse_route_get(r).unwrap().2,
            Some(Ipv4Addr::new(10, 0, 0, 1))
        );
        assert_eq!(parse_route_get("unreachable"), None);
        // asked `from` an address: no `src`, the source is the `from`
        let r = "10.201.2.1 from 10.201.1.1 dev latlab-ga table 100 uid 0 \\    cache ";
        assert_eq!(
            parse_route_get(r),
            Some(("latlab-ga".into(), Ipv4Addr::new(10, 201, 1, 1), None))
        );
        let n = "10.201.2.1 lladdr 6e:1f:00:aa:0b:ff PERMANENT";
        assert_eq!(
            parse_mac_after(n, "lladdr"),
            Some([0x6e, 0x1f, 0, 0xaa, 0x0b, 0xff])
        );
        let l = "5: latlab-nb@if4: <BROADCAST,UP> mtu 1500 link/ether 02:00:00:00:00:01 brd ff:ff:ff:ff:ff:ff";
        assert_eq!(parse_mac_after(l, "link/ether"), Some([2, 0, 0, 0, 0, 1]));
        let a =
            "3: latlab-na    inet 10.201.1.2/24 scope global latlab-na\\       valid_lft forever";
        assert_eq!(parse_addr_show(a), Some("latlab-na".into()));
        assert_eq!(parse_addr_show(""), None);
        assert_eq!(parse_mac("02:00:00:00:00"), None);
        assert_eq!(parse_mac("02:00:00:00:00:01:02"), None);
        assert_eq!(parse_mac("zz:00:00:00:00:01"), None);
    }

    #[test]
    fn unknown_interface_is_named() {
        let e = XdpPort::open("latlab-nope0", 0, &[7000], 64).err().unwrap();
        assert!(e.to_string().contains("latlab-nope0"), "{e}");
    }
}

#[cfg(test)]
mod system_tests {
    use super::*;
    use crate::netns::{enter, unique_name, Namespaces};
    use std::net::UdpSocket;
    use std::time::{Duration, Instant};

    fn csum(b: &[u8]) -> u16 {
        let mut s = 0u32;
        for c in b.chunks(2) {
            s += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
        }
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        !(s as u16)
    }

    /// A frame in, a frame out, over a private veth pair: the program steers the UDP port
    /// to the socket, the socket's TX reaches a plain UDP socket, and dropping the port
    /// leaves no XDP program on the interface.
    #[test]
    fn xdp_port_receives_and_sends_on_veth() {
        latlab_testutil::require_root!("creates namespaces and attaches XDP");
        let (na, nb) = (unique_name("xa"), unique_name("xb"));
        let ns = Namespaces::create(&[na.clone(), nb.clone()]).unwrap();
        let (ia, ib) = (
            format!("lx{}a", std::process::id()),
            format!("lx{}b", std::process::id()),
        );
        ns.veth(&na, &ia, &nb, &ib).unwrap();
        ns.addr(&na, &ia, "10.209.0.1/24").unwrap();
        ns.addr(&nb, &ib, "10.209.0.2/24").unwrap();
        let link_a = crate::netns::ip(&["-n", &na, "-o", "link", "show", "dev", &ia]).unwrap();
        let mac_a = parse_mac_after(&link_a, "link/ether").unwrap();
        let mac_s = mac_a.map(|b| format!("{b:02x}")).join(":");
        crate::netns::ip(&[
            "-n",
            &nb,
            "neigh",
            "replace",
            "10.209.0.1",
            "lladdr",
            &mac_s,
            "dev",
            &ib,
            "nud",
            "permanent",
        ])
        .unwrap();
        let nb2 = nb.clone();
        let ib2 = ib.clone();
        let (tx_ready, rx_ready) = std::sync::mpsc::channel();
        let xdp = std::thread::spawn(move || {
            enter(&nb2).unwrap();
            let mut port = XdpPort::open(&ib2, 0, &[7000], 256).unwrap();
            let info = port.info().clone();
            let path = l2_path(Ipv4Addr::new(10, 209, 0, 1), None);
            tx_ready.send(()).unwrap();
            let mut got = Vec::new();
            let t0 = Instant::now();
            while got.is_empty() && t0.elapsed() < Duration::from_secs(5) {
                port.rx.recv(16, |f| got.push(f.to_vec()));
            }
            // Answer with the received frame, MACs/IPs/ports swapped, checksums redone.
            if let Some(f) = got.first().cloned() {
                port.tx.send(1, |_, buf| {
                    let mut o = f.clone();
                    o[0..6].copy_from_slice(&f[6..12]);
                    o[6..12].copy_from_slice(&f[0..6]);
                    o[26..30].copy_from_slice(&f[30..34]);
                    o[30..34].copy_from_slice(&f[26..30]);
                    o[34..36].copy_from_slice(&f[36..38]);
                    o[36..38].copy_from_slice(&f[34..36]);
                    o[40..42].fill(0); // UDP checksum: none (allowed on IPv4)
                    o[24..26].fill(0);
                    let c = csum(&o[14..34]);
                    o[24..26].copy_from_slice(&c.to_be_bytes());
                    buf[..o.len()].copy_from_slice(&o);
                    o.len()
                });
                let t0 = Instant::now();
                while port.tx.in_flight() > 0 && t0.elapsed() < Duration::from_secs(2) {
                    port.tx.kick();
                }
            }
            let attached = crate::netns::ip(&["-d", "link", "show", "dev", &ib2]).unwrap();
            drop(port);
            let after = crate::netns::ip(&["-d", "link", "show", "dev", &ib2]).unwrap();
            (got, info, path, attached, after)
        });
        rx_ready.recv().unwrap();
        let na2 = na.clone();
        let reply = std::thread::spawn(move || {
            enter(&na2).unwrap();
            let s = UdpSocket::bind("10.209.0.1:7001").unwrap();
            s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
            s.send_to(b"latlab-xdp-hello", "10.209.0.2:7000").unwrap();
            // other ports are not steered: the stack answers with ICMP, not the socket
            s.send_to(b"not-steered", "10.209.0.2:7999").unwrap();
            let mut b = [0u8; 64];
            s.recv_from(&mut b).map(|(n, from)| (b[..n].to_vec(), from))
        })
        .join()
        .unwrap();
        let (got, info, path, attached, after) = xdp.join().unwrap();
        assert_eq!(got.len(), 1, "exactly the steered datagram: {got:?}");
        assert_eq!(&got[0][42..], b"latlab-xdp-hello");
        assert_eq!(info.attach, "native");
        assert_eq!(info.bind, "copy", "veth has no zero-copy");
        let path = path.unwrap();
        assert_eq!(path.interface, ib);
        assert_eq!(path.src, Ipv4Addr::new(10, 209, 0, 2));
        assert_eq!(path.dst_mac, mac_a);
        assert_eq!(
            &got[0][..6],
            &path.src_mac[..],
            "addressed to the XDP side's MAC"
        );
        assert!(attached.contains("xdp"), "{attached}");
        assert!(!after.contains("xdp"), "{after}");
        let (payload, from) = reply.expect("the socket peer reads the AF_XDP frame");
        assert_eq!(payload, b"latlab-xdp-hello");
        assert_eq!(from.to_string(), "10.209.0.2:7000");
        drop(ns);
    }
}

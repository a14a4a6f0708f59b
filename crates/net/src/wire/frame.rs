//! Ethernet II + IPv4 + UDP headers around a probe, for the I/O paths that see whole
//! frames (`--io xdp`). latlab fills every field itself, with both checksums computed,
//! so a plain UDP socket at the other end reads the datagram as if a socket had sent it.
//!
//! ```text
//!  0 dst MAC (6) | 6 src MAC (6) | 12 type 0x0800
//! 14 IPv4: 0x45, tos 0, total length, id, flags DF, ttl 64, proto 17, checksum, src, dst
//! 34 UDP: src port, dst port, length, checksum
//! 42 payload (the probe)
//! ```

use std::net::{Ipv4Addr, SocketAddrV4};
use std::ops::Range;

/// Bytes of headers in front of the payload.
pub const HEADERS: usize = 42;

/// Who a frame goes from and to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoints {
    /// Source MAC.
    pub src_mac: [u8; 6],
    /// Destination MAC (the next hop's).
    pub dst_mac: [u8; 6],
    /// Source address and port.
    pub src: SocketAddrV4,
    /// Destination address and port.
    pub dst: SocketAddrV4,
}

impl Endpoints {
    /// The endpoints of the answer to a frame with these endpoints.
    pub fn reversed(&self) -> Endpoints {
        Endpoints {
            src_mac: self.dst_mac,
            dst_mac: self.src_mac,
            src: self.dst,
            dst: self.src,
        }
    }
}

/// A parsed IPv4/UDP frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UdpFrame {
    /// Its endpoints.
    pub endpoints: Endpoints,
    /// Where the UDP payload lies in the frame.
    pub payload: Range<usize>,
}

fn sum16(mut acc: u32, b: &[u8]) -> u32 {
    let mut it = b.chunks_exact(2);
    for c in &mut it {
        acc += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = it.remainder() {
        acc += u32::from(*last) << 8;
    }
    acc
}

fn fold(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// The Internet checksum of `b` (RFC 1071).
pub fn checksum(b: &[u8]) -> u16 {
    fold(sum16(0, b))
}

/// Writes the headers for the `payload` bytes already at `buf[HEADERS..]` and returns the
/// frame length, or `None` when `buf` is too short. `id` is the IPv4 identification.
pub fn write_headers(buf: &mut [u8], ep: &Endpoints, payload: usize, id: u16) -> Option<usize> {
    let len = HEADERS + payload;
    if buf.len() < len || payload > usize::from(u16::MAX) - 28 {
        return None;
    }
    buf[0..6].copy_from_slice(&ep.dst_mac);
    buf[6..12].copy_from_slice(&ep.src_mac);
    buf[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip_len = (20 + 8 + payload) as u16;
    let ip = &mut buf[14..34];
    ip[0] = 0x45;
    ip[1] = 0;
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    ip[4..6].copy_from_slice(&id.to_be_bytes());
    ip[6..8].copy_from_slice(&0x4000u16.to_be_bytes()); // DF
    ip[8] = 64;
    ip[9] = 17;
    ip[10..12].fill(0);
    ip[12..16].copy_from_slice(&ep.src.ip().octets());
    ip[16..20].copy_from_slice(&ep.dst.ip().octets());
    let c = checksum(ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let udp_len = (8 + payload) as u16;
    buf[34..36].copy_from_slice(&ep.src.port().to_be_bytes());
    buf[36..38].copy_from_slice(&ep.dst.port().to_be_bytes());
    buf[38..40].copy_from_slice(&udp_len.to_be_bytes());
    buf[40..42].fill(0);
    // pseudo-header: src, dst, zero+proto, UDP length; then header and payload
    let mut acc = sum16(0, &buf[26..34]);
    acc += 17 + u32::from(udp_len);
    acc = sum16(acc, &buf[34..len]);
    let mut c = fold(acc);
    if c == 0 {
        c = 0xffff; // 0 means "no checksum" in UDP over IPv4
    }
    buf[40..42].copy_from_slice(&c.to_be_bytes());
    Some(len)
}

/// Writes a whole frame into `buf`: `payload` after the headers, then the headers for it.
/// Returns its length, or 0 when `buf` is too small (the AF_XDP queue closures' "skip").
pub fn write_frame(buf: &mut [u8], ep: &Endpoints, payload: &[u8], id: u16) -> usize {
    let len = payload.len();
    if buf.len() < HEADERS + len {
        return 0;
    }
    buf[HEADERS..HEADERS + len].copy_from_slice(payload);
    write_headers(buf, ep, len, id).unwrap_or(0)
}

/// A prebuilt frame for one flow and payload length: the headers with everything but the
/// IPv4 identification and the two checksums filled in, and the partial sums those
/// checksums start from. [`FrameTemplate::write`] then costs a copy of the template, the
/// payload's varying bytes and two folds (RFC 1071 sums are order-free, so the constant
/// words are summed once) — the same bytes [`write_frame`] writes, for a sender that
/// writes one frame per probe at Mpps.
#[derive(Clone, Debug)]
pub struct FrameTemplate {
    /// Where the frames go.
    ep: Endpoints,
    /// Headers and a zero payload.
    frame: Vec<u8>,
    /// Sum of the IPv4 header's words with identification and checksum zero.
    ip_sum: u32,
    /// Sum of the UDP pseudo-header and header with the checksum zero.
    udp_sum: u32,
}

impl FrameTemplate {
    /// The template of frames to `ep` carrying `payload` bytes; `None` when the payload
    /// does not fit an IPv4 datagram.
    pub fn new(ep: &Endpoints, payload: usize) -> Option<FrameTemplate> {
        let mut t = FrameTemplate {
            ep: *ep,
            frame: Vec::with_capacity(HEADERS + payload.max(1472)),
            ip_sum: 0,
            udp_sum: 0,
        };
        t.set_payload_len(payload).then_some(t)
    }

    /// Rebuilds the template for payloads of `payload` bytes (no allocation up to a
    /// 1500-byte MTU's 1472); `false` (template unchanged) when it does not fit IPv4.
    pub fn set_payload_len(&mut self, payload: usize) -> bool {
        if payload > usize::from(u16::MAX) - 28 {
            return false;
        }
        self.frame.clear();
        self.frame.resize(HEADERS + payload, 0);
        let frame = &mut self.frame;
        if write_headers(frame, &self.ep, payload, 0).is_none() {
            return false;
        }
        frame[24..26].fill(0);
        frame[40..42].fill(0);
        self.ip_sum = sum16(0, &frame[14..34]);
        let udp_len = (8 + payload) as u32;
        self.udp_sum = sum16(sum16(0, &frame[26..34]) + 17 + udp_len, &frame[34..42]);
        true
    }

    /// Length of the payloads it takes.
    pub fn payload_len(&self) -> usize {
        self.frame.len() - HEADERS
    }

    /// Length of the frames it writes.
    pub fn len(&self) -> usize {
        self.frame.len()
    }

    /// Whether the frames are empty (never: they have headers).
    pub fn is_empty(&self) -> bool {
        self.frame.is_empty()
    }

    /// Writes the frame with `payload` into `buf` and returns its length, or 0 when `buf`
    /// is too short (the AF_XDP queue closures' "skip"). Only the first `varying` bytes of
    /// `payload` are summed: the caller promises the rest are zero (a probe's padding).
    #[inline]
    pub fn write(&self, buf: &mut [u8], payload: &[u8], varying: usize, id: u16) -> usize {
        let len = self.frame.len();
        if buf.len() < len || payload.len() != len - HEADERS {
            return 0;
        }
        let varying = varying.min(payload.len());
        buf[..HEADERS].copy_from_slice(&self.frame[..HEADERS]);
        buf[HEADERS..len].copy_from_slice(payload);
        buf[18..20].copy_from_slice(&id.to_be_bytes());
        let ip = fold(self.ip_sum + u32::from(id));
        buf[24..26].copy_from_slice(&ip.to_be_bytes());
        let mut udp = fold(sum16(self.udp_sum, &payload[..varying]));
        if udp == 0 {
            udp = 0xffff; // 0 means "no checksum" in UDP over IPv4
        }
        buf[40..42].copy_from_slice(&udp.to_be_bytes());
        len
    }
}

/// Parses an Ethernet II / IPv4 (no options, not a fragment) / UDP frame. Returns `None`
/// for anything else or when the lengths in the headers do not fit the frame. Checksums
/// are not verified (a local sender's UDP checksum may be left to offload on a veth).
pub fn parse_udp(f: &[u8]) -> Option<UdpFrame> {
    if f.len() < HEADERS {
        return None;
    }
    let be16 = |o: usize| u16::from_be_bytes([f[o], f[o + 1]]);
    if be16(12) != 0x0800 || f[14] != 0x45 || f[23] != 17 || be16(20) & 0x3fff != 0 {
        return None;
    }
    let ip_len = usize::from(be16(16));
    let udp_len = usize::from(be16(38));
    if ip_len < 28 || 14 + ip_len > f.len() || udp_len < 8 || udp_len > ip_len - 20 {
        return None;
    }
    let mac = |o: usize| {
        let mut m = [0u8; 6];
        m.copy_from_slice(&f[o..o + 6]);
        m
    };
    let ip = |o: usize| Ipv4Addr::new(f[o], f[o + 1], f[o + 2], f[o + 3]);
    Some(UdpFrame {
        endpoints: Endpoints {
            dst_mac: mac(0),
            src_mac: mac(6),
            src: SocketAddrV4::new(ip(26), be16(34)),
            dst: SocketAddrV4::new(ip(30), be16(36)),
        },
        payload: HEADERS..HEADERS + udp_len - 8,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ep() -> Endpoints {
        Endpoints {
            src_mac: [2, 0, 0, 0, 0, 1],
            dst_mac: [2, 0, 0, 0, 0, 2],
            src: "10.201.1.1:40000".parse().unwrap(),
            dst: "10.201.1.2:7000".parse().unwrap(),
        }
    }

    #[test]
    fn a_known_frame_has_the_known_checksums() {
        // 64-byte frame: 22 payload bytes of 0xab
        let mut b = [0u8; 64];
        b[HEADERS..].fill(0xab);
        assert_eq!(write_headers(&mut b, &ep(), 22, 1), Some(64));
        // the IPv4 header sums to 0xffff with its checksum in place
        assert_eq!(checksum(&b[14..34]), 0);
        // the UDP checksum verifies over the pseudo-header
        let mut acc = sum16(0, &b[26..34]) + 17 + 30;
        acc = sum16(acc, &b[34..64]);
        assert_eq!(fold(acc), 0);
        assert_eq!(&b[12..14], &[0x08, 0x00]);
        assert_eq!(u16::from_be_bytes([b[16], b[17]]), 50);
        assert_eq!(u16::from_be_bytes([b[38], b[39]]), 30);
        assert_eq!(write_headers(&mut b[..63], &ep(), 22, 1), None);
        let mut c = [0u8; 64];
        assert_eq!(write_frame(&mut c, &ep(), &[0xab; 22], 1), 64);
        assert_eq!(c, b);
        assert_eq!(write_frame(&mut c[..63], &ep(), &[0xab; 22], 1), 0);
    }

    #[test]
    fn rejects_what_is_not_ipv4_udp() {
        let mut b = [0u8; 64];
        write_headers(&mut b, &ep(), 22, 1).unwrap();
        assert!(parse_udp(&b).is_some());
        assert!(parse_udp(&b[..41]).is_none());
        for (i, v) in [(12, 0x86), (14, 0x46), (23, 6), (20, 0x20), (16, 0xff)] {
            let mut c = b;
            c[i] = v;
            assert!(parse_udp(&c).is_none(), "byte {i} = {v:#x}");
        }
        let mut c = b;
        c[38..40].copy_from_slice(&4u16.to_be_bytes()); // UDP length below its header
        assert!(parse_udp(&c).is_none());
    }

    proptest! {
        #[test]
        fn write_then_parse_round_trips(payload in 0usize..1472, id: u16, sp: u16, dp: u16,
                                        a: u32, d: u32, pad in 0usize..16) {
            let e = Endpoints {
                src: SocketAddrV4::new(Ipv4Addr::from(a), sp),
                dst: SocketAddrV4::new(Ipv4Addr::from(d), dp),
                ..ep()
            };
            let mut b = vec![0x5au8; HEADERS + payload + pad];
            let n = write_headers(&mut b, &e, payload, id).unwrap();
            prop_assert_eq!(n, HEADERS + payload);
            // Ethernet padding after the datagram is not payload
            let f = parse_udp(&b).unwrap();
            prop_assert_eq!(f.endpoints, e);
            prop_assert_eq!(f.payload, HEADERS..HEADERS + payload);
            prop_assert_eq!(f.endpoints.reversed().reversed(), e);
        }

        #[test]
        fn the_template_writes_what_write_frame_writes(payload in 0usize..1472, id: u16,
                                                       sp: u16, dp: u16, a: u32, d: u32,
                                                       head in proptest::collection::vec(any::<u8>(), 0..40)) {
            let e = Endpoints {
                src: SocketAddrV4::new(Ipv4Addr::from(a), sp),
                dst: SocketAddrV4::new(Ipv4Addr::from(d), dp),
                ..ep()
            };
            // a probe: varying bytes in front, zero padding after
            let mut p = vec![0u8; payload];
            let varying = head.len().min(payload);
            p[..varying].copy_from_slice(&head[..varying]);
            let t = FrameTemplate::new(&e, payload).unwrap();
            prop_assert_eq!(t.len(), HEADERS + payload);
            let mut want = vec![0x5au8; HEADERS + payload + 8];
            let mut got = vec![0xa5u8; HEADERS + payload + 8];
            prop_assert_eq!(write_frame(&mut want, &e, &p, id), HEADERS + payload);
            prop_assert_eq!(t.write(&mut got, &p, varying, id), HEADERS + payload);
            prop_assert_eq!(&got[..HEADERS + payload], &want[..HEADERS + payload]);
            // too short a buffer, or another payload length: nothing written
            prop_assert_eq!(t.write(&mut got[..HEADERS + payload - 1], &p, varying, id), 0);
            prop_assert_eq!(t.write(&mut got, &p[..payload.saturating_sub(1)], 0, id),
                            if payload == 0 { HEADERS } else { 0 });
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            if let Some(f) = parse_udp(&bytes) {
                prop_assert!(f.payload.end <= bytes.len());
            }
        }
    }
}

//! The probe wire format: a 22-byte header at the start of a UDP payload, padded with
//! zeros to the requested frame size.
//!
//! ```text
//! offset size field
//!      0    2 magic      0x4C4E ("LN")
//!      2    1 version    1
//!      3    1 flags      bit 0 warm-up, bit 1 reflected, bit 2 forwarded, bits 3-7 zero
//!      4    2 flow id
//!      6    4 sequence   per run, shared by all flows
//!     10    8 sender timestamp (TSC ticks of the sender's clock at send)
//!     18    4 NF residence (ns from receive to send in a latlab NF; 0 = none)
//! ```
//! All fields are big-endian. [`Probe`] is a zero-copy view over any byte buffer whose
//! accessors cannot panic once [`Probe::new_checked`] accepted it; [`ProbeRepr`] is the
//! parsed form that [`ProbeRepr::emit`] writes.
//!
//! Frame sizes count the Ethernet frame without its 4-byte FCS, as Linux does (veth,
//! tcpdump): Ethernet 14 + IPv4 20 + UDP 8 bytes of headers, so a 64-byte frame carries
//! exactly the 22-byte probe header.

pub mod frame;

use std::fmt;

/// The magic number at offset 0.
pub const MAGIC: u16 = 0x4C4E;
/// The wire format version this latlab speaks.
pub const VERSION: u8 = 1;
/// Length of the probe header.
pub const HEADER_LEN: usize = 22;
/// Ethernet + IPv4 + UDP header bytes in front of the probe.
pub const FRAME_OVERHEAD: usize = 14 + 20 + 8;
/// The smallest frame (without FCS) that holds a probe: 64 bytes.
pub const MIN_FRAME: usize = FRAME_OVERHEAD + HEADER_LEN;
/// The largest frame on a 1500-byte MTU.
pub const MAX_FRAME: usize = 1514;
/// The default frame size (64 bytes, as in the paper).
pub const DEFAULT_FRAME: usize = 64;

/// Flag: sent during warm-up (measured but discarded).
pub const FLAG_WARMUP: u8 = 1 << 0;
/// Flag: returned by a latlab reflector.
pub const FLAG_REFLECTED: u8 = 1 << 1;
/// Flag: passed through a latlab forwarder.
pub const FLAG_FORWARDED: u8 = 1 << 2;
const KNOWN_FLAGS: u8 = FLAG_WARMUP | FLAG_REFLECTED | FLAG_FORWARDED;

mod field {
    use std::ops::Range;
    pub const MAGIC: Range<usize> = 0..2;
    pub const VERSION: usize = 2;
    pub const FLAGS: usize = 3;
    pub const FLOW: Range<usize> = 4..6;
    pub const SEQ: Range<usize> = 6..10;
    pub const SENT: Range<usize> = 10..18;
    pub const RESIDENCE: Range<usize> = 18..22;
}

/// Why a datagram is not a probe. Each reason is counted separately.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WireError {
    /// Shorter than the header.
    TooShort,
    /// Wrong magic number.
    BadMagic,
    /// Right magic, unknown version.
    BadVersion,
    /// Reserved flag bits set.
    ReservedFlags,
    /// Longer than the receive buffer (truncated by the kernel).
    Oversized,
}

impl WireError {
    /// Every reason, in counter order.
    pub const ALL: [WireError; 5] = [
        WireError::TooShort,
        WireError::BadMagic,
        WireError::BadVersion,
        WireError::ReservedFlags,
        WireError::Oversized,
    ];

    /// Counter name, e.g. `malformed_bad_magic`.
    pub fn counter(self) -> &'static str {
        match self {
            WireError::TooShort => "malformed_too_short",
            WireError::BadMagic => "malformed_bad_magic",
            WireError::BadVersion => "malformed_bad_version",
            WireError::ReservedFlags => "malformed_reserved_flags",
            WireError::Oversized => "malformed_oversized",
        }
    }

    /// Index into a per-reason counter array.
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WireError::TooShort => "shorter than the probe header",
            WireError::BadMagic => "wrong magic number",
            WireError::BadVersion => "unknown probe version",
            WireError::ReservedFlags => "reserved flag bits set",
            WireError::Oversized => "longer than the receive buffer",
        })
    }
}

impl std::error::Error for WireError {}

/// A zero-copy view of a probe at the start of `buffer`.
#[derive(Clone, Copy, Debug)]
pub struct Probe<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Probe<T> {
    /// Wraps `buffer` after checking length, magic, version and reserved flags.
    pub fn new_checked(buffer: T) -> Result<Probe<T>, WireError> {
        let b = buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::TooShort);
        }
        if u16::from_be_bytes([b[0], b[1]]) != MAGIC {
            return Err(WireError::BadMagic);
        }
        if b[field::VERSION] != VERSION {
            return Err(WireError::BadVersion);
        }
        if b[field::FLAGS] & !KNOWN_FLAGS != 0 {
            return Err(WireError::ReservedFlags);
        }
        Ok(Probe { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    fn u32_at(&self, r: std::ops::Range<usize>) -> u32 {
        let b = &self.b()[r];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// Flag bits.
    pub fn flags(&self) -> u8 {
        self.b()[field::FLAGS]
    }

    /// Flow id.
    pub fn flow(&self) -> u16 {
        let b = &self.b()[field::FLOW];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// Sequence number.
    pub fn seq(&self) -> u32 {
        self.u32_at(field::SEQ)
    }

    /// Sender timestamp (sender's TSC ticks).
    pub fn sent(&self) -> u64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&self.b()[field::SENT]);
        u64::from_be_bytes(a)
    }

    /// NF residence time in ns (0 when no latlab NF wrote one).
    pub fn residence_ns(&self) -> u32 {
        self.u32_at(field::RESIDENCE)
    }

    /// Whole datagram length (header plus padding).
    pub fn len(&self) -> usize {
        self.b().len()
    }

    /// Never true for a checked probe (kept for the `len` convention).
    pub fn is_empty(&self) -> bool {
        self.b().is_empty()
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Probe<T> {
    /// Sets flag bits (ORed in; only known flags).
    pub fn set_flags(&mut self, flags: u8) {
        self.buffer.as_mut()[field::FLAGS] |= flags & KNOWN_FLAGS;
    }

    /// Writes the NF residence time, saturating at `u32::MAX` ns.
    pub fn set_residence_ns(&mut self, ns: u64) {
        let v = u32::try_from(ns).unwrap_or(u32::MAX);
        self.buffer.as_mut()[field::RESIDENCE].copy_from_slice(&v.to_be_bytes());
    }
}

/// A probe's fields, parsed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProbeRepr {
    /// Flag bits.
    pub flags: u8,
    /// Flow id.
    pub flow: u16,
    /// Sequence number.
    pub seq: u32,
    /// Sender timestamp.
    pub sent: u64,
    /// NF residence in ns.
    pub residence_ns: u32,
}

impl ProbeRepr {
    /// Parses a checked view.
    pub fn parse<T: AsRef<[u8]>>(p: &Probe<T>) -> ProbeRepr {
        ProbeRepr {
            flags: p.flags(),
            flow: p.flow(),
            seq: p.seq(),
            sent: p.sent(),
            residence_ns: p.residence_ns(),
        }
    }

    /// Writes the header into `buf[..HEADER_LEN]` and zeros the rest of `buf` (the
    /// padding). Returns `buf.len()`, or `None` when `buf` is shorter than the header.
    pub fn emit(&self, buf: &mut [u8]) -> Option<usize> {
        if buf.len() < HEADER_LEN {
            return None;
        }
        buf[field::MAGIC].copy_from_slice(&MAGIC.to_be_bytes());
        buf[field::VERSION] = VERSION;
        buf[field::FLAGS] = self.flags & KNOWN_FLAGS;
        buf[field::FLOW].copy_from_slice(&self.flow.to_be_bytes());
        buf[field::SEQ].copy_from_slice(&self.seq.to_be_bytes());
        buf[field::SENT].copy_from_slice(&self.sent.to_be_bytes());
        buf[field::RESIDENCE].copy_from_slice(&self.residence_ns.to_be_bytes());
        buf[HEADER_LEN..].fill(0);
        Some(buf.len())
    }

    /// Rewrites only the sender timestamp of an emitted probe (the last thing done before
    /// the send call).
    pub fn stamp_sent(buf: &mut [u8], sent: u64) {
        if buf.len() >= HEADER_LEN {
            buf[field::SENT].copy_from_slice(&sent.to_be_bytes());
        }
    }
}

/// The UDP payload length for an Ethernet frame of `frame` bytes (without FCS), or an
/// explanation naming the accepted range.
pub fn payload_len(frame: usize) -> Result<usize, String> {
    if !(MIN_FRAME..=MAX_FRAME).contains(&frame) {
        return Err(format!(
            "frame size {frame} is out of range; accepted: {MIN_FRAME}..={MAX_FRAME} bytes \
             (Ethernet frame without FCS; {MIN_FRAME} holds the {HEADER_LEN}-byte probe header)"
        ));
    }
    Ok(frame - FRAME_OVERHEAD)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_64_byte_frame_holds_exactly_the_header() {
        assert_eq!(payload_len(64).unwrap(), HEADER_LEN);
        assert!(payload_len(63).unwrap_err().contains("64..=1514"));
        assert!(payload_len(1515).is_err());
        assert_eq!(payload_len(1514).unwrap(), 1472);
    }

    #[test]
    fn each_malformation_has_its_reason() {
        let mut buf = [0u8; 30];
        let r = ProbeRepr {
            flags: FLAG_WARMUP,
            flow: 3,
            seq: 7,
            sent: 99,
            residence_ns: 0,
        };
        r.emit(&mut buf).unwrap();
        assert!(Probe::new_checked(&buf[..]).is_ok());
        assert_eq!(
            Probe::new_checked(&buf[..21]).unwrap_err(),
            WireError::TooShort
        );
        let mut b = buf;
        b[0] ^= 1;
        assert_eq!(Probe::new_checked(&b[..]).unwrap_err(), WireError::BadMagic);
        let mut b = buf;
        b[2] = 2;
        assert_eq!(
            Probe::new_checked(&b[..]).unwrap_err(),
            WireError::BadVersion
        );
        let mut b = buf;
        b[3] |= 0x80;
        assert_eq!(
            Probe::new_checked(&b[..]).unwrap_err(),
            WireError::ReservedFlags
        );
    }

    #[test]
    fn residence_saturates_and_flags_only_add_known_bits() {
        let mut buf = [0u8; 22];
        ProbeRepr::default().emit(&mut buf).unwrap();
        let mut p = Probe::new_checked(&mut buf[..]).unwrap();
        p.set_residence_ns(5_000_000_000);
        p.set_flags(0xff);
        assert_eq!(p.residence_ns(), u32::MAX);
        assert_eq!(p.flags(), KNOWN_FLAGS);
        assert!(Probe::new_checked(&buf[..]).is_ok());
    }

    proptest! {
        #[test]
        fn emit_then_parse_round_trips(flags in 0u8..8, flow: u16, seq: u32, sent: u64,
                                       res: u32, pad in 0usize..200, junk: u8) {
            let r = ProbeRepr { flags, flow, seq, sent, residence_ns: res };
            let mut buf = vec![junk; HEADER_LEN + pad];
            prop_assert_eq!(r.emit(&mut buf), Some(HEADER_LEN + pad));
            prop_assert!(buf[HEADER_LEN..].iter().all(|&b| b == 0));
            let p = Probe::new_checked(&buf[..]).unwrap();
            prop_assert_eq!(ProbeRepr::parse(&p), r);
            prop_assert_eq!(p.len(), HEADER_LEN + pad);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(p) = Probe::new_checked(&bytes[..]) {
                // accepted: then every accessor is in bounds and the header is well formed
                let r = ProbeRepr::parse(&p);
                prop_assert!(bytes.len() >= HEADER_LEN);
                prop_assert_eq!(r.flags & !KNOWN_FLAGS, 0);
                prop_assert_eq!(&bytes[0..2], &MAGIC.to_be_bytes()[..]);
            }
        }
    }
}

//! `--io xdp` for the probe: the TX thread writes whole frames (latlab's Ethernet/IPv4/UDP
//! headers around the probe) into an `AF_XDP` socket's TX ring and kicks the kernel once
//! per batch; the RX thread spins on another (or the same) socket's RX ring. Kernel and
//! hardware timestamps do not exist on this path: the probe keeps its user (TSC) stamps.
//!
//! Batching in the open loop: a probe that is due is queued on the TX ring at once, with
//! its own schedule slot and TSC send stamp; the kick (one `sendto`, in which copy mode
//! transmits) happens when the next probe is not due yet or [`TX_BATCH`] probes are
//! queued. A generator that keeps up sends one probe per kick; one that fell behind sends
//! everything due in one kick, each probe still stamped when it was written.
//!
//! [`TX_BATCH`] is 32 because copy mode's `sendto` transmits at most 32 frames per call
//! (the kernel's `TX_BATCH_SIZE`): a larger batch would leave frames on the ring for a
//! later kick, so the ring would fill and each probe's stamp would precede its
//! transmission by up to a ring's worth of frames. With 32, a probe waits for at most
//! the 31 written after it.
//!
//! Frames come from a [`FrameTemplate`] built once per run: each probe costs a 64-byte
//! copy, its 22-byte header and two checksum folds, not a header rebuilt from scratch.

use super::config::{ProbeConfig, ProbeError};
use super::rx::Receiver;
use crate::nf::IoMode;
use crate::wire::frame::{parse_udp, Endpoints, FrameTemplate};
use crate::wire::HEADER_LEN;
use latlab_sys::net::RxTimestamps;
use latlab_sys::xdp::{interface_of, l2_path, XdpInfo, XdpPort, XdpRx, XdpTx};
use std::net::{SocketAddr, SocketAddrV4};

/// Most probes queued before a kick.
pub(super) const TX_BATCH: u32 = 32;
/// Frames per ring of each port.
const FRAMES: u32 = 4096;
/// Source port of probes sent over AF_XDP when `--bind` leaves it to the kernel (no
/// kernel picks one on this path).
pub const XDP_SOURCE_PORT: u16 = 7002;

/// The TX path: the socket half and the probe's headers.
pub(super) struct XdpTxPath {
    pub(super) tx: XdpTx,
    /// The probe's frame, headers prebuilt.
    pub(super) template: FrameTemplate,
    pub(super) ip_id: u16,
    /// Probes queued since the last kick.
    pub(super) unkicked: u32,
}

impl XdpTxPath {
    /// Queues one probe (payload `probe`); when the ring is full, kicks and retries a
    /// bounded number of times. `false`: not sent.
    #[inline]
    pub(super) fn queue(&mut self, probe: &[u8]) -> bool {
        self.ip_id = self.ip_id.wrapping_add(1);
        let id = self.ip_id;
        for _ in 0..10_000 {
            // only the probe header varies: the padding after it is zero
            let t = &self.template;
            let ok = self.tx.queue(|buf| t.write(buf, probe, HEADER_LEN, id));
            if ok {
                self.unkicked += 1;
                if self.unkicked >= TX_BATCH {
                    self.kick();
                }
                return true;
            }
            self.kick();
        }
        false
    }

    /// Hands queued probes to the kernel.
    #[inline]
    pub(super) fn kick(&mut self) {
        self.unkicked = 0;
        self.tx.kick();
    }
}

/// What `--io xdp` opened.
pub(super) struct XdpPaths {
    pub(super) tx: Option<XdpTxPath>,
    pub(super) rx: Option<XdpRx>,
    /// Per port: how it was attached and bound.
    pub(super) provenance: Vec<String>,
}

fn v4(a: SocketAddr, flag: &str) -> Result<SocketAddrV4, ProbeError> {
    match a {
        SocketAddr::V4(v) => Ok(v),
        SocketAddr::V6(_) => Err(ProbeError::Config(format!(
            "--io xdp speaks IPv4 only; {flag} {a} is IPv6"
        ))),
    }
}

fn describe(i: &XdpInfo) -> String {
    format!(
        "{} queue {}: {} XDP, {} mode",
        i.interface, i.queue, i.attach, i.bind
    )
}

fn open(ifname: &str, ports: &[u16]) -> Result<XdpPort, ProbeError> {
    Ok(XdpPort::open(ifname, 0, ports, FRAMES)?)
}

/// Opens the AF_XDP ports `cfg` asks for: TX on the interface the route to the target
/// leaves by, RX on the interface of `--rx-bind` (or the TX one when answers come back to
/// the sender), one port where both are the same interface.
pub(super) fn open_paths(cfg: &ProbeConfig) -> Result<XdpPaths, ProbeError> {
    let tx_xdp = cfg.tx_io == IoMode::Xdp;
    let rx_xdp = cfg.rx_io == IoMode::Xdp;
    let mut out = XdpPaths {
        tx: None,
        rx: None,
        provenance: Vec::new(),
    };
    if !tx_xdp && !rx_xdp {
        return Ok(out);
    }
    let target = v4(cfg.target, "the target")?;
    // from the bound source, where one is given: the testpmd rung steers by it
    let from = match cfg.tx_bind.ip() {
        std::net::IpAddr::V4(a) if !a.is_unspecified() => Some(a),
        _ => None,
    };
    let path =
        l2_path(*target.ip(), from).map_err(|e| ProbeError::Config(format!("--io xdp: {e}")))?;
    let src_port = match cfg.tx_bind.port() {
        0 => XDP_SOURCE_PORT,
        p => p,
    };
    let (rx_if, rx_port) = match cfg.rx_bind {
        Some(a) => {
            let a = v4(a, "--rx-bind")?;
            let i =
                interface_of(*a.ip()).map_err(|e| ProbeError::Config(format!("--io xdp: {e}")))?;
            (i, a.port())
        }
        None => (path.interface.clone(), src_port),
    };
    let to = Endpoints {
        src_mac: path.src_mac,
        dst_mac: path.dst_mac,
        src: SocketAddrV4::new(path.src, src_port),
        dst: target,
    };
    let payload = crate::wire::payload_len(cfg.frame).map_err(ProbeError::Config)?;
    let template = FrameTemplate::new(&to, payload)
        .ok_or_else(|| ProbeError::Config(format!("--io xdp: no frame of {payload} bytes")))?;
    let tx_path = |tx: XdpTx| XdpTxPath {
        tx,
        template: template.clone(),
        ip_id: 0,
        unkicked: 0,
    };
    if tx_xdp && rx_xdp && rx_if == path.interface {
        let (rx, tx, info) = open(&path.interface, &[rx_port])?.split();
        out.tx = Some(tx_path(tx));
        out.rx = Some(rx);
        out.provenance.push(describe(&info));
        return Ok(out);
    }
    if tx_xdp {
        // steers nothing: this port only sends
        let (_, tx, info) = open(&path.interface, &[])?.split();
        out.tx = Some(tx_path(tx));
        out.provenance.push(describe(&info));
    }
    if rx_xdp {
        let (rx, _, info) = open(&rx_if, &[rx_port])?.split();
        out.rx = Some(rx);
        out.provenance.push(describe(&info));
    }
    Ok(out)
}

/// Frames taken from the RX ring per poll.
const RX_BATCH: u32 = 64;

/// One poll of the RX ring: every frame handed to the receiver, stamped with one clock
/// reading taken when the poll found the first; returns how many.
#[inline]
fn poll_once(receiver: &mut Receiver, rx: &mut XdpRx) -> u32 {
    let clock = receiver.clock;
    let mut rx_tsc = 0u64;
    rx.recv(RX_BATCH, |frame| {
        if rx_tsc == 0 {
            rx_tsc = clock.now();
        }
        match parse_udp(frame) {
            Some(p) => {
                receiver.handle(&frame[p.payload], false, RxTimestamps::default(), rx_tsc, 0)
            }
            // the program steers only IPv4/UDP: counted as too short for a probe
            None => receiver.handle(&[], false, RxTimestamps::default(), rx_tsc, 0),
        }
    })
}

/// The RX loop over an AF_XDP socket on a thread of its own (spins; yields when a poll
/// finds nothing, as the busy socket loop does).
pub(super) fn rx_loop(receiver: &mut Receiver, rx: &mut XdpRx) {
    let clock = receiver.clock;
    let mut prev = clock.now();
    loop {
        let n = poll_once(receiver, rx);
        if n == 0 {
            std::thread::yield_now();
        }
        let now = clock.now();
        if n == 0 {
            receiver.stalls.record(prev, now);
        }
        prev = now;
        receiver.poll_pending(now, false);
        if receiver.finished(now) {
            break;
        }
    }
    receiver.poll_pending(clock.now(), true);
}

/// The receiver and its RX ring when TX and RX share one CPU: the TX thread polls the ring
/// itself between sends ([`super::tx::open_loop`]), so there is no second thread to wake
/// or switch to.
///
/// Why: with two threads on one CPU the answer to a probe sent with no slack was stamped
/// only once the TX thread had finished its kick (copy mode's `sendto` runs the veth
/// transmit and the forwarder's XDP redirect in softirq on this CPU), gone to sleep and
/// switched to the RX thread — about 5 µs after it had arrived, for an answer that comes
/// back within that time (`net calibrate --io xdp`'s zero-delay baseline), and not for one
/// that comes back later (an injected delay), so the medians' shifts came out short by
/// that much. At Mpps the same switches cost the generator its rate.
pub(super) struct RxInline {
    pub(super) receiver: Receiver,
    pub(super) rx: XdpRx,
}

impl RxInline {
    /// One poll of the ring and of the probes waiting for TX timestamps; returns how many
    /// frames it took.
    #[inline]
    pub(super) fn poll(&mut self) -> u32 {
        let n = poll_once(&mut self.receiver, &mut self.rx);
        if !self.receiver.pending.is_empty() {
            let now = self.receiver.clock.now();
            self.receiver.poll_pending(now, false);
        }
        n
    }

    /// After the last send: polls until every answer is in or the drain deadline passed.
    pub(super) fn drain(&mut self, tx: Option<&mut XdpTxPath>) {
        let clock = self.receiver.clock;
        let mut tx = tx;
        loop {
            if let Some(t) = tx.as_deref_mut() {
                // frames a full ring held back, until the kernel has taken them all
                t.tx.kick();
            }
            self.poll();
            let now = clock.now();
            self.receiver.poll_pending(now, false);
            if self.receiver.finished(now) {
                break;
            }
        }
        self.receiver.poll_pending(clock.now(), true);
    }
}

//! Network functions: the reflector (`latlab net reflect`) and the port forwarder
//! (`latlab net forward`, both directions on separate threads).
//!
//! ## Model
//! A network function receives a batch of datagrams through a [`PacketIo`], checks each
//! against the probe format ([`crate::wire`]), optionally busy-waits an added processing
//! time on the TSC ([`DelaySpec`], the ground truth of `latlab net calibrate`), writes its
//! residence time (TSC read after the receive call returned → TSC read before the send
//! call) into the probe, and sends it on. Anything that is not a probe is dropped and
//! counted by reason ([`WireError`]).
//!
//! ## Safety properties
//! - **No amplification:** [`PacketIo::process`] hands the function each received
//!   datagram as a fixed-length `&mut [u8]`; the function can rewrite bytes but not grow
//!   it, and at most one datagram leaves per datagram received.
//! - **Bounded memory:** every buffer is allocated before the first receive; a datagram
//!   larger than a slot is truncated by the kernel, detected (`MSG_TRUNC`) and dropped.
//! - **Only probes are answered:** wrong magic, version or reserved flags → dropped.
//!
//! ## I/O modes
//! [`IoMode::Blocking`] receives one datagram per blocking `recvmmsg` call (as netperf's
//! blocking receive); [`IoMode::Busy`] spins on non-blocking `recvmmsg` of up to
//! [`NfConfig::batch`] datagrams and sends with one `sendmmsg` per batch, with
//! `SO_BUSY_POLL` set on the sockets (as kernel-bypass tools spin). It never yields: give
//! each busy thread a core of its own (`--cpu 0,1`, or `--direction` to run one). An
//! AF_XDP mode would be
//! another [`PacketIo`] implementation: the function only sees frames.

mod counters;
mod delay;
mod io;
mod xdp_io;

pub use self::counters::NfCounters;
pub use self::delay::{DelaySpec, DELAY_FORMS};
pub use self::io::{BatchStats, IoMode, PacketIo, UdpIo, Verdict, NF_SLOT_BYTES};
pub use self::xdp_io::{XdpIo, XdpOut};

use crate::wire::{Probe, WireError, FLAG_FORWARDED, FLAG_REFLECTED};
use latlab_core::hist::LatencyHistogram;
use latlab_sys::sched;
use latlab_sys::tsc::Clock;
use serde::{Deserialize, Serialize};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Which network function.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Role {
    /// Return each probe to its sender.
    Reflect {
        /// Address to listen on.
        bind: SocketAddr,
    },
    /// Forward probes from port A to next hop B and from port B to next hop A.
    Forward {
        /// Port A's address.
        a: SocketAddr,
        /// Where probes received on A go (sent from B).
        a_to: SocketAddr,
        /// Port B's address.
        b: SocketAddr,
        /// Where probes received on B go (sent from A).
        b_to: SocketAddr,
        /// Which directions run.
        directions: Directions,
    },
}

/// Which directions of the forwarder run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Directions {
    /// A→B and B→A, each on its own thread.
    Both,
    /// Only A→B.
    AToB,
    /// Only B→A.
    BToA,
}

/// A network function's configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NfConfig {
    /// Reflect or forward.
    pub role: Role,
    /// I/O mode.
    pub io: IoMode,
    /// CPUs for the threads, in thread order (A→B, then B→A); one CPU pins all; empty
    /// leaves them unpinned.
    pub cpus: Vec<u32>,
    /// `SCHED_FIFO` priority for the threads.
    pub fifo: Option<i32>,
    /// Added processing time.
    pub delay: DelaySpec,
    /// Batch size in busy mode.
    pub batch: usize,
    /// `SO_BUSY_POLL` µs in busy mode (0 = leave unset).
    pub busy_poll_us: u32,
}

impl NfConfig {
    /// A reflector on `bind` with default settings (blocking, unpinned, no delay).
    pub fn reflect(bind: SocketAddr) -> NfConfig {
        NfConfig {
            role: Role::Reflect { bind },
            io: IoMode::Blocking,
            cpus: Vec::new(),
            fifo: None,
            delay: DelaySpec::None,
            batch: 32,
            busy_poll_us: 50,
        }
    }
}

/// Errors starting a network function.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NfError {
    /// A socket could not be set up.
    #[error("{what}: {source}")]
    Socket {
        /// Which socket and address.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// Pinning or the scheduling policy was refused.
    #[error(transparent)]
    Sched(#[from] sched::SchedError),
    /// `--io xdp` could not open a port.
    #[error(transparent)]
    Xdp(#[from] latlab_sys::xdp::XdpError),
    /// `--io xdp` could not resolve an address to an interface or next hop.
    #[error("--io xdp: {0}")]
    XdpPath(String),
}

/// What one NF thread did.
#[derive(Clone, Debug)]
pub struct ThreadOutcome {
    /// `reflect`, `a_to_b` or `b_to_a`.
    pub name: String,
    /// Residence time of every probe sent (ns).
    pub residence: LatencyHistogram,
    /// CPU it was pinned to.
    pub cpu: Option<u32>,
    /// Policy and priority it ran under.
    pub policy: (String, i32),
    /// `--explain` in busy mode: the thread's stalls (empty polls of at least
    /// [`crate::explain::STALL_THRESHOLD`]).
    pub stalls: Vec<latlab_explain::Gap>,
    /// Stalls that did not fit the recorder.
    pub stall_overflow: u64,
    /// The cheapest empty poll, ticks (0 when none was recorded).
    pub loop_cost: u64,
}

/// A running network function.
pub struct NfHandle {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<ThreadOutcome>>,
    /// Live counters (all threads).
    pub counters: Arc<NfCounters>,
    /// The local addresses the NF listens on.
    pub local: Vec<SocketAddr>,
    /// `--io xdp`: per port, how it was attached and bound (for provenance), e.g.
    /// `latlab-na queue 0: native XDP, copy mode`.
    pub xdp: Vec<String>,
}

impl NfHandle {
    /// Stops the threads and returns their outcomes. Blocked receives (blocking mode
    /// waits without a timeout) are interrupted with a signal, again every 2 ms until each
    /// thread has seen the flag (a signal that lands between two calls is not enough).
    pub fn stop(self) -> Vec<ThreadOutcome> {
        self.stop.store(true, Ordering::Relaxed);
        while self.threads.iter().any(|t| !t.is_finished()) {
            for t in self.threads.iter().filter(|t| !t.is_finished()) {
                let _ = latlab_sys::signal::interrupt(t);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        self.threads
            .into_iter()
            .filter_map(|t| t.join().ok())
            .collect()
    }
}

fn bind(addr: SocketAddr, what: &str) -> Result<UdpSocket, NfError> {
    UdpSocket::bind(addr).map_err(|source| NfError::Socket {
        what: format!("binding {what} to {addr}"),
        source,
    })
}

fn clone(s: &UdpSocket, what: &str) -> Result<UdpSocket, NfError> {
    s.try_clone().map_err(|source| NfError::Socket {
        what: format!("duplicating the {what} socket"),
        source,
    })
}

/// Starts the network function of `cfg`; returns once every thread is placed and
/// listening (or with the first error).
pub fn start(cfg: &NfConfig, clock: Clock) -> Result<NfHandle, NfError> {
    start_recording(cfg, clock, false)
}

/// As [`start`]; with `stalls` each busy-polling thread also records its own stalls
/// (empty polls of at least [`crate::explain::STALL_THRESHOLD`]: the thread lost its
/// CPU) into a preallocated recorder, for `--explain`.
pub fn start_recording(cfg: &NfConfig, clock: Clock, stalls: bool) -> Result<NfHandle, NfError> {
    let counters = Arc::new(NfCounters::default());
    let stop = Arc::new(AtomicBool::new(false));
    let (plans, local, xdp) = if cfg.io == IoMode::Xdp {
        xdp_plans(cfg, clock)?
    } else {
        udp_plans(cfg, clock)?
    };
    let mut threads = Vec::new();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), NfError>>();
    for (k, (name, io, flag)) in plans.into_iter().enumerate() {
        let cpu = match cfg.cpus.len() {
            0 => None,
            1 => Some(cfg.cpus[0]),
            _ => cfg.cpus.get(k).copied(),
        };
        let delay = cfg.delay.ticks_table(&clock, 4096, 0x5eed + k as u64);
        let fifo = cfg.fifo;
        let stop = stop.clone();
        let counters = counters.clone();
        let ready = ready_tx.clone();
        let h = std::thread::Builder::new()
            .name(format!("latlab-nf-{name}"))
            .spawn(move || {
                let placed = sched::place_current_thread(cpu, fifo).map_err(NfError::from);
                let ok = placed.is_ok();
                let _ = ready.send(placed);
                let mut rec = crate::explain::stall_recorder(&clock, stalls);
                let mut out = ThreadOutcome {
                    name,
                    residence: LatencyHistogram::default(),
                    cpu,
                    policy: sched::current_policy(),
                    stalls: Vec::new(),
                    stall_overflow: 0,
                    loop_cost: 0,
                };
                if ok {
                    run_loop(
                        io,
                        flag,
                        &delay,
                        &clock,
                        &stop,
                        &counters,
                        &mut out.residence,
                        &mut rec,
                    );
                }
                out.stalls = rec.gaps().to_vec();
                out.stall_overflow = rec.overflow();
                out.loop_cost = rec.min_step();
                out
            })
            .map_err(|source| NfError::Socket {
                what: "spawning an NF thread".into(),
                source,
            })?;
        threads.push(h);
    }
    drop(ready_tx);
    let handle = NfHandle {
        stop,
        threads,
        counters,
        local,
        xdp,
    };
    for _ in 0..handle.threads.len() {
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                handle.stop();
                return Err(e);
            }
            Err(_) => break,
        }
    }
    Ok(handle)
}

/// One NF thread's plan: its name, its I/O and the flag it sets on probes.
type Plan = (String, Box<dyn PacketIo>, u8);

/// The threads' plans, the local addresses, and per XDP port its provenance line.
type Plans = (Vec<Plan>, Vec<SocketAddr>, Vec<String>);

/// Plans over UDP sockets: (plans, local addresses, no XDP ports).
fn udp_plans(cfg: &NfConfig, clock: Clock) -> Result<Plans, NfError> {
    // (name, rx socket, tx socket, fixed destination, flag to set)
    let mut socks: Vec<(String, UdpSocket, UdpSocket, Option<SocketAddr>, u8)> = Vec::new();
    let mut local = Vec::new();
    match &cfg.role {
        Role::Reflect { bind: addr } => {
            let s = bind(*addr, "the reflector")?;
            local.push(s.local_addr().unwrap_or(*addr));
            let t = clone(&s, "reflector")?;
            socks.push(("reflect".into(), s, t, None, FLAG_REFLECTED));
        }
        Role::Forward {
            a,
            a_to,
            b,
            b_to,
            directions,
        } => {
            let sa = bind(*a, "port A")?;
            let sb = bind(*b, "port B")?;
            local.push(sa.local_addr().unwrap_or(*a));
            local.push(sb.local_addr().unwrap_or(*b));
            if *directions != Directions::BToA {
                socks.push((
                    "a_to_b".into(),
                    clone(&sa, "port A")?,
                    clone(&sb, "port B")?,
                    Some(*a_to),
                    FLAG_FORWARDED,
                ));
            }
            if *directions != Directions::AToB {
                socks.push((
                    "b_to_a".into(),
                    clone(&sb, "port B")?,
                    clone(&sa, "port A")?,
                    Some(*b_to),
                    FLAG_FORWARDED,
                ));
            }
        }
    }
    let mut plans: Vec<Plan> = Vec::new();
    for (name, rx, tx, to, flag) in socks {
        let io = UdpIo::new(rx, tx, to, cfg.io, cfg.batch, cfg.busy_poll_us, clock).map_err(
            |source| NfError::Socket {
                what: format!("setting up the {name} socket"),
                source,
            },
        )?;
        plans.push((name, Box::new(io), flag));
    }
    Ok((plans, local, Vec::new()))
}

fn v4(a: SocketAddr) -> Result<std::net::SocketAddrV4, NfError> {
    match a {
        SocketAddr::V4(v) if !v.ip().is_unspecified() && v.port() != 0 => Ok(v),
        _ => Err(NfError::XdpPath(format!(
            "{a} is not an IPv4 address and port of an interface (AF_XDP binds to one \
             interface; give its address, e.g. 10.201.1.2:7000)"
        ))),
    }
}

/// Frames per direction of an XDP port (RX and TX each).
const XDP_FRAMES: u32 = 4096;

/// Opens the XDP port holding local address `at` (steering its UDP port).
fn xdp_port(at: std::net::SocketAddrV4) -> Result<latlab_sys::xdp::XdpPort, NfError> {
    let ifname = latlab_sys::xdp::interface_of(*at.ip()).map_err(NfError::XdpPath)?;
    Ok(latlab_sys::xdp::XdpPort::open(
        &ifname,
        0,
        &[at.port()],
        XDP_FRAMES,
    )?)
}

/// Endpoints for sending from local `from` to `to` (MACs from the route and the static
/// neighbour table).
fn xdp_endpoints(
    from: std::net::SocketAddrV4,
    to: std::net::SocketAddrV4,
) -> Result<crate::wire::frame::Endpoints, NfError> {
    let path = latlab_sys::xdp::l2_path(*to.ip(), None).map_err(NfError::XdpPath)?;
    Ok(crate::wire::frame::Endpoints {
        src_mac: path.src_mac,
        dst_mac: path.dst_mac,
        src: from,
        dst: to,
    })
}

fn describe(i: &latlab_sys::xdp::XdpInfo) -> String {
    format!(
        "{} queue {}: {} XDP, {} mode",
        i.interface, i.queue, i.attach, i.bind
    )
}

/// Plans over AF_XDP ports: one port per NF address, split into RX and TX halves.
fn xdp_plans(cfg: &NfConfig, clock: Clock) -> Result<Plans, NfError> {
    let mut plans: Vec<Plan> = Vec::new();
    match &cfg.role {
        Role::Reflect { bind } => {
            let at = v4(*bind)?;
            let (rx, tx, info) = xdp_port(at)?.split();
            let io = XdpIo::new(rx, tx, XdpOut::Reflect, cfg.batch, clock);
            plans.push(("reflect".into(), Box::new(io), FLAG_REFLECTED));
            Ok((plans, vec![*bind], vec![describe(&info)]))
        }
        Role::Forward {
            a,
            a_to,
            b,
            b_to,
            directions,
        } => {
            let (a4, b4) = (v4(*a)?, v4(*b)?);
            let to_b = xdp_endpoints(b4, v4(*a_to)?)?;
            let to_a = xdp_endpoints(a4, v4(*b_to)?)?;
            let (rx_a, tx_a, ia) = xdp_port(a4)?.split();
            let (rx_b, tx_b, ib) = xdp_port(b4)?.split();
            let mut ab = Some((rx_a, tx_b));
            let mut ba = Some((rx_b, tx_a));
            if *directions != Directions::BToA {
                let (rx, tx) = ab.take().expect("first use");
                let io = XdpIo::new(rx, tx, XdpOut::Forward(to_b), cfg.batch, clock);
                plans.push(("a_to_b".into(), Box::new(io), FLAG_FORWARDED));
            }
            if *directions != Directions::AToB {
                let (rx, tx) = ba.take().expect("first use");
                let io = XdpIo::new(rx, tx, XdpOut::Forward(to_a), cfg.batch, clock);
                plans.push(("b_to_a".into(), Box::new(io), FLAG_FORWARDED));
            }
            // Halves of a direction that does not run stay alive with the NF (their
            // program keeps steering, their socket counts what it drops).
            drop((ab, ba));
            Ok((plans, vec![*a, *b], vec![describe(&ia), describe(&ib)]))
        }
    }
}

/// The per-thread loop: receive, check, delay, stamp residence, send. In busy mode an
/// empty poll's length goes to `stalls` (one clock read and compare per poll).
#[allow(clippy::too_many_arguments)]
fn run_loop(
    mut io: Box<dyn PacketIo>,
    flag: u8,
    delay: &[u64],
    clock: &Clock,
    stop: &AtomicBool,
    counters: &NfCounters,
    residence: &mut LatencyHistogram,
    stalls: &mut latlab_explain::GapRecorder,
) {
    let mut di = 0usize;
    let mut f = |frame: &mut [u8], rx_time: u64| -> Verdict {
        match Probe::new_checked(&mut *frame) {
            Err(e) => {
                counters.malformed[e.index()].fetch_add(1, Ordering::Relaxed);
                Verdict::Drop
            }
            Ok(mut p) => {
                if !delay.is_empty() {
                    let d = delay[di % delay.len()];
                    di = di.wrapping_add(1);
                    let start = clock.now();
                    while clock.now().wrapping_sub(start) < d {
                        std::hint::spin_loop();
                    }
                }
                p.set_flags(flag);
                let res = clock.delta_nanos(rx_time, clock.now());
                p.set_residence_ns(res.get());
                residence.record(res);
                Verdict::Send
            }
        }
    };
    let busy = io.mode().spins();
    let mut prev = clock.now();
    while !stop.load(Ordering::Relaxed) {
        let r = io.process(&mut f);
        if busy {
            let now = clock.now();
            if matches!(r, Ok(ref st) if st.received == 0) {
                stalls.record(prev, now);
            }
            prev = now;
        }
        match r {
            Ok(st) if st.received == 0 && busy => std::hint::spin_loop(),
            Ok(st) => {
                if st.received > 0 {
                    counters.received.fetch_add(st.received, Ordering::Relaxed);
                    counters.sent.fetch_add(st.sent, Ordering::Relaxed);
                    if st.send_failed > 0 {
                        counters
                            .send_failed
                            .fetch_add(st.send_failed, Ordering::Relaxed);
                    }
                    if st.oversized > 0 {
                        counters.malformed[WireError::Oversized.index()]
                            .fetch_add(st.oversized, Ordering::Relaxed);
                    }
                }
            }
            Err(_) => {
                counters.recv_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Stored data of a `net.nf` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NfData {
    /// The configuration.
    pub role: String,
    /// Local addresses.
    pub local: Vec<String>,
    /// Per-thread CPU and policy.
    pub threads: Vec<(String, Option<u32>, String, i32)>,
    /// `--io xdp`: per AF_XDP port, its interface, queue, attach mode (native) and bind
    /// mode (`copy` or `zerocopy`); empty for socket runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub xdp: Vec<String>,
}

/// Result kind of a network function run.
pub const NF_RESULT_KIND: &str = "net.nf";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{ProbeRepr, HEADER_LEN};

    #[test]
    fn delay_forms() {
        assert_eq!(DelaySpec::parse("0").unwrap(), DelaySpec::None);
        assert_eq!(
            DelaySpec::parse("10us").unwrap(),
            DelaySpec::Constant { ns: 10_000 }
        );
        assert_eq!(
            DelaySpec::parse("exp:5us").unwrap(),
            DelaySpec::Exponential { mean_ns: 5_000 }
        );
        assert_eq!(
            DelaySpec::parse("uniform:1us-3us").unwrap(),
            DelaySpec::Uniform {
                low_ns: 1_000,
                high_ns: 3_000
            }
        );
        let e = DelaySpec::parse("uniform:3us-1us").unwrap_err();
        assert!(e.contains("accepted"), "{e}");
        assert!(DelaySpec::parse("10 parsecs").is_err());
        let clock = Clock::monotonic();
        let t = DelaySpec::Uniform {
            low_ns: 1_000,
            high_ns: 3_000,
        }
        .ticks_table(&clock, 1000, 1);
        assert!(t.iter().all(|&d| (1_000..=3_000).contains(&d)));
    }

    #[test]
    fn reflector_stamps_residence_and_keeps_length() {
        let clock = Clock::monotonic();
        let mut cfg = NfConfig::reflect("127.0.0.1:0".parse().unwrap());
        cfg.delay = DelaySpec::Constant { ns: 20_000 };
        let nf = start(&cfg, clock).unwrap();
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut buf = vec![0u8; 100];
        ProbeRepr {
            seq: 5,
            ..Default::default()
        }
        .emit(&mut buf)
        .unwrap();
        s.send_to(&buf, nf.local[0]).unwrap();
        let mut back = [0u8; 200];
        let (n, _) = s.recv_from(&mut back).unwrap();
        assert_eq!(n, 100);
        let p = Probe::new_checked(&back[..n]).unwrap();
        assert_eq!(p.seq(), 5);
        assert_eq!(p.flags() & FLAG_REFLECTED, FLAG_REFLECTED);
        assert!(p.residence_ns() >= 20_000, "{}", p.residence_ns());
        // not a probe: no answer
        s.send_to(&buf[..HEADER_LEN - 1], nf.local[0]).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        assert!(s.recv_from(&mut back).is_err());
        let c = nf.counters.clone();
        let out = nf.stop();
        assert_eq!(
            c.malformed[WireError::TooShort.index()].load(Ordering::Relaxed),
            1
        );
        assert_eq!(c.sent.load(Ordering::Relaxed), 1);
        assert_eq!(out[0].residence.count(), 1);
    }
}

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

use crate::rng::Rng;
use crate::wire::{Probe, WireError, FLAG_FORWARDED, FLAG_REFLECTED};
use latlab_core::hist::LatencyHistogram;
use latlab_sys::net::{self as sysnet, MmsgBatch, Wait};
use latlab_sys::sched;
use latlab_sys::tsc::Clock;
use serde::{Deserialize, Serialize};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How the NF waits for packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoMode {
    /// Blocking receive, one datagram per call.
    Blocking,
    /// Non-blocking spin with `recvmmsg`/`sendmmsg` batches and `SO_BUSY_POLL`.
    Busy,
}

impl IoMode {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            IoMode::Blocking => "blocking",
            IoMode::Busy => "busy",
        }
    }
}

/// An added processing time per packet, busy-waited on the TSC.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DelaySpec {
    /// No added delay.
    None,
    /// Always this long.
    Constant {
        /// The delay in ns.
        ns: u64,
    },
    /// Exponentially distributed with this mean.
    Exponential {
        /// Mean in ns.
        mean_ns: u64,
    },
    /// Uniform between two bounds.
    Uniform {
        /// Lower bound in ns.
        low_ns: u64,
        /// Upper bound in ns.
        high_ns: u64,
    },
}

/// The accepted forms of `--delay`.
pub const DELAY_FORMS: &str =
    "0, a duration (10us), exp:MEAN (exp:10us) or uniform:LOW-HIGH (uniform:5us-15us)";

impl DelaySpec {
    /// Parses `--delay` values (see [`DELAY_FORMS`]).
    pub fn parse(s: &str) -> Result<DelaySpec, String> {
        let bad =
            |detail: String| format!("'{s}' is not a delay ({detail}); accepted: {DELAY_FORMS}");
        let d = |x: &str| {
            latlab_core::parse::parse_duration(x.trim())
                .map(|n| n.get())
                .map_err(|e| bad(e.to_string()))
        };
        let s_t = s.trim();
        if s_t == "0" || s_t.is_empty() {
            return Ok(DelaySpec::None);
        }
        if let Some(m) = s_t.strip_prefix("exp:") {
            return Ok(DelaySpec::Exponential { mean_ns: d(m)? });
        }
        if let Some(r) = s_t.strip_prefix("uniform:") {
            let (lo, hi) = r
                .split_once('-')
                .ok_or_else(|| bad("uniform needs LOW-HIGH".into()))?;
            let (low_ns, high_ns) = (d(lo)?, d(hi)?);
            if low_ns > high_ns {
                return Err(bad("LOW is above HIGH".into()));
            }
            return Ok(DelaySpec::Uniform { low_ns, high_ns });
        }
        Ok(DelaySpec::constant(d(s_t)?))
    }

    /// A constant delay of `ns` ([`DelaySpec::None`] for 0).
    pub fn constant(ns: u64) -> DelaySpec {
        if ns == 0 {
            DelaySpec::None
        } else {
            DelaySpec::Constant { ns }
        }
    }

    /// Human form, as accepted by [`DelaySpec::parse`].
    pub fn describe(&self) -> String {
        let f = |n: u64| latlab_core::units::format_ns(n as f64);
        match *self {
            DelaySpec::None => "0".into(),
            DelaySpec::Constant { ns } => f(ns),
            DelaySpec::Exponential { mean_ns } => format!("exp:{}", f(mean_ns)),
            DelaySpec::Uniform { low_ns, high_ns } => {
                format!("uniform:{}-{}", f(low_ns), f(high_ns))
            }
        }
    }

    /// The mean added delay in ns.
    pub fn mean_ns(&self) -> f64 {
        match *self {
            DelaySpec::None => 0.0,
            DelaySpec::Constant { ns } => ns as f64,
            DelaySpec::Exponential { mean_ns } => mean_ns as f64,
            DelaySpec::Uniform { low_ns, high_ns } => (low_ns + high_ns) as f64 / 2.0,
        }
    }

    /// A table of `n` draws converted to clock ticks, precomputed so that the hot path
    /// only indexes it. Empty for [`DelaySpec::None`].
    pub fn ticks_table(&self, clock: &Clock, n: usize, seed: u64) -> Vec<u64> {
        let to_ticks = |ns: f64| -> u64 {
            match clock.timesource() {
                latlab_sys::tsc::Timesource::Tsc(rate) => {
                    (ns * rate.hz() as f64 / 1e9).round() as u64
                }
                latlab_sys::tsc::Timesource::Monotonic => ns.round() as u64,
            }
        };
        let mut r = Rng::new(seed);
        match *self {
            DelaySpec::None => Vec::new(),
            DelaySpec::Constant { ns } => vec![to_ticks(ns as f64)],
            DelaySpec::Exponential { mean_ns } => (0..n)
                .map(|_| to_ticks(r.exponential(mean_ns as f64)))
                .collect(),
            DelaySpec::Uniform { low_ns, high_ns } => (0..n)
                .map(|_| {
                    let u = r.unit_open0();
                    to_ticks(low_ns as f64 + u * (high_ns - low_ns) as f64)
                })
                .collect(),
        }
    }
}

/// What to do with a received datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Send it on (same length).
    Send,
    /// Drop it.
    Drop,
}

/// Counts of one batch handled by [`PacketIo::process`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchStats {
    /// Datagrams received.
    pub received: u64,
    /// Datagrams sent on.
    pub sent: u64,
    /// Datagrams the function accepted but the send call did not take.
    pub send_failed: u64,
    /// Datagrams dropped because they were larger than a buffer slot.
    pub oversized: u64,
}

/// The packet I/O under a network function. Implementations own their buffers; the
/// function sees each received frame as a fixed-length mutable slice.
pub trait PacketIo: Send {
    /// Receives one batch (waiting as the mode says), calls `f(frame, rx_time)` for each
    /// frame with the clock reading taken when the receive returned, and sends the frames
    /// for which `f` said [`Verdict::Send`]. Frames larger than the buffer never reach `f`.
    fn process(&mut self, f: &mut dyn FnMut(&mut [u8], u64) -> Verdict) -> io::Result<BatchStats>;

    /// The mode, for provenance.
    fn mode(&self) -> IoMode;
}

/// [`PacketIo`] over UDP sockets: receive on one socket, send from another (or the same)
/// either back to each datagram's source (reflect) or to a fixed next hop (forward).
pub struct UdpIo {
    rx: UdpSocket,
    tx: UdpSocket,
    to: Option<SocketAddr>,
    batch: MmsgBatch,
    keep: Vec<usize>,
    mode: IoMode,
    clock: Clock,
}

/// Largest datagram an NF accepts (bigger ones are truncated, detected and dropped).
pub const NF_SLOT_BYTES: usize = 2048;

impl UdpIo {
    /// Sets the sockets up for `mode` (read timeout for blocking; non-blocking and
    /// `SO_BUSY_POLL` for busy) and preallocates `batch` slots.
    pub fn new(
        rx: UdpSocket,
        tx: UdpSocket,
        to: Option<SocketAddr>,
        mode: IoMode,
        batch: usize,
        busy_poll_us: u32,
        clock: Clock,
    ) -> io::Result<UdpIo> {
        let slots = match mode {
            IoMode::Blocking => 1,
            IoMode::Busy => batch.max(1),
        };
        match mode {
            // No receive timeout: a timed wait arms and cancels a kernel timer on every
            // receive, on the path a round trip measures; `NfHandle::stop` interrupts the
            // blocked receive instead.
            IoMode::Blocking => rx.set_read_timeout(None)?,
            IoMode::Busy => {
                rx.set_nonblocking(true)?;
                if busy_poll_us > 0 {
                    // Best effort: without CAP_NET_ADMIN the kernel caps it at
                    // net.core.busy_read; the spin works either way.
                    let _ = sysnet::set_busy_poll(&rx, busy_poll_us);
                    let _ = sysnet::set_prefer_busy_poll(&rx, true);
                }
            }
        }
        // Room for a 50 ms stall at 100 kpps (real-time throttling of a spinning FIFO
        // thread): ~5000 datagrams of up to ~2.3 KiB of kernel memory each. The kernel
        // doubles the value; memory stays bounded by it.
        let _ = sysnet::set_recv_buffer(&rx, 16 << 20);
        Ok(UdpIo {
            rx,
            tx,
            to,
            batch: MmsgBatch::new(slots, NF_SLOT_BYTES, false),
            keep: Vec::with_capacity(slots),
            mode,
            clock,
        })
    }
}

impl PacketIo for UdpIo {
    fn process(&mut self, f: &mut dyn FnMut(&mut [u8], u64) -> Verdict) -> io::Result<BatchStats> {
        let wait = match self.mode {
            IoMode::Blocking => Wait::Block,
            IoMode::Busy => Wait::NonBlocking,
        };
        let n = self.batch.recv(&self.rx, self.batch.slots(), wait)?;
        let mut st = BatchStats::default();
        if n == 0 {
            return Ok(st);
        }
        let rx_time = self.clock.now();
        st.received = n as u64;
        self.keep.clear();
        for i in 0..n {
            if self.batch.truncated(i) {
                st.oversized += 1;
                continue;
            }
            if f(self.batch.packet_mut(i), rx_time) == Verdict::Send {
                self.keep.push(i);
            }
        }
        if !self.keep.is_empty() {
            let sent = self
                .batch
                .send(&self.tx, &self.keep, self.to.as_ref())
                .unwrap_or(0);
            st.sent = sent as u64;
            st.send_failed = (self.keep.len() - sent) as u64;
        }
        Ok(st)
    }

    fn mode(&self) -> IoMode {
        self.mode
    }
}

/// Live counters of a network function, shared with the thread that started it.
#[derive(Debug, Default)]
pub struct NfCounters {
    /// Datagrams received.
    pub received: AtomicU64,
    /// Probes sent on.
    pub sent: AtomicU64,
    /// Probes accepted whose send failed.
    pub send_failed: AtomicU64,
    /// Receive errors (other than timeouts).
    pub recv_errors: AtomicU64,
    /// Malformed datagrams by [`WireError`] reason.
    pub malformed: [AtomicU64; 5],
}

impl NfCounters {
    /// All malformed datagrams.
    pub fn malformed_total(&self) -> u64 {
        self.malformed
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum()
    }

    /// A snapshot as named counters.
    pub fn snapshot(&self) -> Vec<(String, u64)> {
        let mut v = vec![
            (
                "received".to_string(),
                self.received.load(Ordering::Relaxed),
            ),
            ("sent".to_string(), self.sent.load(Ordering::Relaxed)),
            (
                "send_failed".to_string(),
                self.send_failed.load(Ordering::Relaxed),
            ),
            (
                "recv_errors".to_string(),
                self.recv_errors.load(Ordering::Relaxed),
            ),
            ("malformed".to_string(), self.malformed_total()),
        ];
        for e in WireError::ALL {
            v.push((
                e.counter().to_string(),
                self.malformed[e.index()].load(Ordering::Relaxed),
            ));
        }
        v
    }
}

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
        source: io::Error,
    },
    /// Pinning or the scheduling policy was refused.
    #[error(transparent)]
    Sched(#[from] sched::SchedError),
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
}

/// A running network function.
pub struct NfHandle {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<ThreadOutcome>>,
    /// Live counters (all threads).
    pub counters: Arc<NfCounters>,
    /// The local addresses the NF listens on.
    pub local: Vec<SocketAddr>,
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
    let counters = Arc::new(NfCounters::default());
    let stop = Arc::new(AtomicBool::new(false));
    // (name, rx socket, tx socket, fixed destination, flag to set)
    let mut plans: Vec<(String, UdpSocket, UdpSocket, Option<SocketAddr>, u8)> = Vec::new();
    let mut local = Vec::new();
    match &cfg.role {
        Role::Reflect { bind: addr } => {
            let s = bind(*addr, "the reflector")?;
            local.push(s.local_addr().unwrap_or(*addr));
            let t = clone(&s, "reflector")?;
            plans.push(("reflect".into(), s, t, None, FLAG_REFLECTED));
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
                plans.push((
                    "a_to_b".into(),
                    clone(&sa, "port A")?,
                    clone(&sb, "port B")?,
                    Some(*a_to),
                    FLAG_FORWARDED,
                ));
            }
            if *directions != Directions::AToB {
                plans.push((
                    "b_to_a".into(),
                    clone(&sb, "port B")?,
                    clone(&sa, "port A")?,
                    Some(*b_to),
                    FLAG_FORWARDED,
                ));
            }
        }
    }
    let mut threads = Vec::new();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), NfError>>();
    for (k, (name, rx, tx, to, flag)) in plans.into_iter().enumerate() {
        let cpu = match cfg.cpus.len() {
            0 => None,
            1 => Some(cfg.cpus[0]),
            _ => cfg.cpus.get(k).copied(),
        };
        let io = UdpIo::new(rx, tx, to, cfg.io, cfg.batch, cfg.busy_poll_us, clock).map_err(
            |source| NfError::Socket {
                what: format!("setting up the {name} socket"),
                source,
            },
        )?;
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
                let mut out = ThreadOutcome {
                    name,
                    residence: LatencyHistogram::default(),
                    cpu,
                    policy: sched::current_policy(),
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
                    );
                }
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

/// The per-thread loop: receive, check, delay, stamp residence, send.
fn run_loop<I: PacketIo>(
    mut io: I,
    flag: u8,
    delay: &[u64],
    clock: &Clock,
    stop: &AtomicBool,
    counters: &NfCounters,
    residence: &mut LatencyHistogram,
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
    let busy = io.mode() == IoMode::Busy;
    while !stop.load(Ordering::Relaxed) {
        match io.process(&mut f) {
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

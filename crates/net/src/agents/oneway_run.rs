//! The one-way stamp streams of `--agents` at run time (feature `mpi`; what they mean is
//! in [`super::oneway`]).
//!
//! Each end runs on a thread of its own that enters the stream's namespace (a network
//! namespace is per thread), so a rank can send its own stream and receive another
//! agent's. Both ends tell the main thread once their sockets are bound (the start
//! agreement waits for it); the sender then waits for the start on its clock, the
//! receiver records into a buffer preallocated for the whole run until its deadline.

use super::clock::SkewedClock;
use super::oneway::{send_time, Stamps, StreamSpec, ONE_WAY_FLOW};
use crate::probe::SEND_GRACE;
use crate::wire::{Probe, ProbeRepr, FLAG_WARMUP, HEADER_LEN};
use std::net::UdpSocket;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

fn mono() -> i64 {
    latlab_sys::clocks::monotonic_ns() as i64
}

/// The running sender of one stream.
pub(super) struct SendEnd {
    pub(super) thread: JoinHandle<Result<u64, String>>,
    /// The start on the sender's clock, ns (dropping it unsent stops the thread).
    pub(super) go: mpsc::Sender<i64>,
}

/// The running receiver of one stream.
pub(super) struct RecvEnd {
    pub(super) thread: JoinHandle<Stamps>,
    /// `CLOCK_MONOTONIC` time to stop receiving at (`i64::MAX` until set).
    pub(super) deadline: Arc<AtomicI64>,
}

fn bind_in(spec: &StreamSpec, addr: std::net::SocketAddr) -> Result<UdpSocket, String> {
    if let Some(ns) = &spec.namespace {
        latlab_sys::netns::enter(ns).map_err(|e| e.to_string())?;
    }
    UdpSocket::bind(addr).map_err(|e| format!("cannot bind {addr}: {e}"))
}

/// Starts the sender of `spec` on a thread; `ready` gets its sockets' state. It sends
/// `warmup_ns + duration_ns` of probes from the start it is given, each stamped with
/// `skew`'s clock, and returns how many measured probes it sent.
pub(super) fn start_sender(
    spec: StreamSpec,
    skew: SkewedClock,
    warmup_ns: i64,
    duration_ns: i64,
    ready: mpsc::Sender<Result<(), String>>,
) -> std::io::Result<SendEnd> {
    let (go, go_rx) = mpsc::channel::<i64>();
    let thread = std::thread::Builder::new()
        .name("latlab-1way-tx".into())
        .spawn(move || {
            let sock = bind_in(&spec, spec.send_bind).and_then(|s| {
                s.connect(spec.to)
                    .map_err(|e| format!("cannot reach {}: {e}", spec.to))?;
                Ok(s)
            });
            let failed = sock.is_err();
            let _ = ready.send(sock.as_ref().map(|_| ()).map_err(Clone::clone));
            let (Ok(sock), false) = (sock, failed) else {
                return Err(String::new());
            };
            let Ok(start) = go_rx.recv() else {
                return Err(String::new());
            };
            let mut buf = [0u8; HEADER_LEN];
            let mut measured = 0u64;
            let mut k = 0u64;
            // the stream ends with the run: a sender held up past the end sends no more
            let deadline = start + warmup_ns + duration_ns + SEND_GRACE.get() as i64;
            while let Some(at) = send_time(start, spec.pps, warmup_ns + duration_ns, k) {
                let now = skew.local(mono());
                if now >= deadline {
                    break;
                }
                let wait = at - now;
                if wait > 0 {
                    std::thread::sleep(Duration::from_nanos(wait as u64));
                }
                let warm = at - start < warmup_ns;
                let stamp = skew.local(mono());
                ProbeRepr {
                    flags: if warm { FLAG_WARMUP } else { 0 },
                    flow: ONE_WAY_FLOW,
                    seq: k as u32,
                    sent: stamp as u64,
                    residence_ns: 0,
                }
                .emit(&mut buf);
                // a send that fails (a full queue) is a probe that never arrives
                if sock.send(&buf).is_ok() && !warm {
                    measured += 1;
                }
                k += 1;
            }
            Ok(measured)
        })?;
    Ok(SendEnd { thread, go })
}

/// Starts the receiver of `spec` on a thread; `ready` gets its socket's state. It keeps
/// up to `capacity` measured probes' (send, receive) stamps, the receive stamp on
/// `skew`'s clock, until its deadline.
pub(super) fn start_receiver(
    spec: StreamSpec,
    skew: SkewedClock,
    capacity: usize,
    ready: mpsc::Sender<Result<(), String>>,
) -> std::io::Result<RecvEnd> {
    let deadline = Arc::new(AtomicI64::new(i64::MAX));
    let until = Arc::clone(&deadline);
    let thread = std::thread::Builder::new()
        .name("latlab-1way-rx".into())
        .spawn(move || {
            let mut st = Stamps {
                sender_rank: spec.sender_rank,
                receiver_rank: spec.receiver_rank,
                pairs: Vec::with_capacity(capacity),
                ..Stamps::default()
            };
            let sock = bind_in(&spec, spec.recv_bind).and_then(|s| {
                s.set_read_timeout(Some(Duration::from_millis(20)))
                    .map_err(|e| e.to_string())?;
                Ok(s)
            });
            let failed = sock.is_err();
            let _ = ready.send(sock.as_ref().map(|_| ()).map_err(Clone::clone));
            let (Ok(sock), false) = (sock, failed) else {
                return st;
            };
            let mut buf = [0u8; 2048];
            while mono() < until.load(Ordering::Acquire) {
                let Ok(n) = sock.recv(&mut buf) else {
                    continue;
                };
                let rx = skew.local(mono());
                let Ok(p) = Probe::new_checked(&buf[..n]) else {
                    continue;
                };
                let r = ProbeRepr::parse(&p);
                if r.flow != ONE_WAY_FLOW {
                    continue;
                }
                if r.flags & FLAG_WARMUP != 0 {
                    st.warmup += 1;
                } else if st.pairs.len() < capacity {
                    st.pairs.push((r.sent as i64, rx));
                } else {
                    st.overflow += 1;
                }
            }
            st
        })?;
    Ok(RecvEnd { thread, deadline })
}

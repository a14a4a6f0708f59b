//! The measuring loops. Each timed sample is `t0 = now(); operation; t1 = now()`, so it
//! contains the operation plus the cost of one clock read (measured by the `clock_read`
//! step). Round-trip steps run a client and a server thread, each pinned, created and
//! connected before the clock starts; the hot loop only records into a preallocated
//! histogram.

use super::config::{BreakdownConfig, BreakdownError, StepOutcome};
use latlab_core::hist::LatencyHistogram;
use latlab_core::units::Nanos;
use latlab_sys::tsc::Clock;
use latlab_sys::{futex, ipc, sched};
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a blocked receive waits before the step is declared failed.
const IO_TIMEOUT: Duration = Duration::from_secs(2);

/// One end of a round-trip channel.
pub(crate) trait Side: Send {
    /// Sends one message to the other end.
    fn send(&mut self) -> io::Result<()>;
    /// Waits for one message from the other end.
    fn recv(&mut self) -> io::Result<()>;
}

fn pin(cpu: Option<u32>) -> io::Result<()> {
    if let Some(c) = cpu {
        sched::pin_current_thread(c).map_err(|e| io::Error::other(e.to_string()))?;
    }
    Ok(())
}

/// Runs `op` back to back on one pinned thread, timing each call.
pub(crate) fn single<F: FnMut() + Send>(
    cfg: &BreakdownConfig,
    clock: &Clock,
    cpu: Option<u32>,
    op: F,
) -> Result<StepOutcome, BreakdownError> {
    std::thread::scope(|s| {
        s.spawn(|| -> Result<StepOutcome, BreakdownError> {
            pin(cpu).map_err(|e| BreakdownError::Io("pinning".into(), e))?;
            let mut op = op;
            let mut h = LatencyHistogram::new(cfg.hist)
                .map_err(|e| BreakdownError::Config(e.to_string()))?;
            let warm_end = clock.now() + ticks(clock, cfg.warmup);
            while clock.now() < warm_end {
                op();
            }
            let start = clock.now();
            let end = start + ticks(clock, cfg.duration);
            let mut n = 0u64;
            loop {
                let t0 = clock.now();
                op();
                let t1 = clock.now();
                h.record(clock.delta_nanos(t0, t1));
                n += 1;
                if t1 >= end || n >= cfg.max_samples {
                    let elapsed = clock.delta_nanos(start, t1);
                    return Ok(StepOutcome::new(h, n, elapsed, cpu, None));
                }
            }
        })
        .join()
        .expect("measuring thread panicked")
    })
}

/// Back-to-back clock reads: each gap is the cost of one read.
pub(crate) fn clock_read(
    cfg: &BreakdownConfig,
    clock: &Clock,
    cpu: Option<u32>,
) -> Result<StepOutcome, BreakdownError> {
    single(cfg, clock, cpu, || {})
}

/// Converts a duration to the clock's raw units (ticks or ns).
fn ticks(clock: &Clock, d: Nanos) -> u64 {
    // raw_to_nanos is linear: scale by the conversion of a large round number.
    let per_sec = clock.raw_to_nanos(1_000_000_000).get().max(1) as u128;
    ((d.get() as u128 * 1_000_000_000u128) / per_sec) as u64
}

/// Runs a client/server round trip: the server is built (in its thread, after pinning)
/// first, then the client; the client times `send; recv` until the duration is spent.
pub(crate) fn round_trip<C, S, MC, MS>(
    cfg: &BreakdownConfig,
    clock: &Clock,
    client_cpu: Option<u32>,
    server_cpu: Option<u32>,
    make_client: MC,
    make_server: MS,
) -> Result<StepOutcome, BreakdownError>
where
    C: Side,
    S: Side,
    MC: FnOnce() -> io::Result<C> + Send,
    MS: FnOnce() -> io::Result<S> + Send,
{
    let stop = AtomicBool::new(false);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<io::Result<()>>();
    std::thread::scope(|s| {
        let stop = &stop;
        let server = s.spawn(move || -> io::Result<()> {
            let made = pin(server_cpu).and_then(|_| make_server());
            let mut srv = match made {
                Ok(v) => {
                    let _ = ready_tx.send(Ok(()));
                    v
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(io::Error::new(e.kind(), e.to_string())));
                    return Err(e);
                }
            };
            loop {
                srv.recv()?;
                let last = stop.load(Ordering::Acquire);
                srv.send()?;
                if last {
                    return Ok(());
                }
            }
        });
        let client = s.spawn(move || -> Result<StepOutcome, BreakdownError> {
            let io_err = |what: &str, e: io::Error| BreakdownError::Io(what.to_string(), e);
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(io_err("setting up the server side", e)),
                Err(_) => return Err(BreakdownError::Config("server thread ended early".into())),
            }
            pin(client_cpu).map_err(|e| io_err("pinning the client", e))?;
            let mut c = make_client().map_err(|e| io_err("setting up the client side", e))?;
            let mut h = LatencyHistogram::new(cfg.hist)
                .map_err(|e| BreakdownError::Config(e.to_string()))?;
            let warm_end = clock.now() + ticks(clock, cfg.warmup);
            let outcome = timed_loop(cfg, clock, warm_end, &mut c, &mut h);
            // Tell the server to finish: the flag is set before the last message, which
            // the server reads after receiving it.
            stop.store(true, Ordering::Release);
            let fin = c.send().and_then(|_| c.recv());
            let (n, elapsed) = outcome.map_err(|e| io_err("round trip", e))?;
            fin.map_err(|e| io_err("stopping the server", e))?;
            Ok(StepOutcome::new(h, n, elapsed, client_cpu, server_cpu))
        });
        let out = client.join().expect("client thread panicked");
        let srv = server.join().expect("server thread panicked");
        match (out, srv) {
            (Ok(o), Ok(())) => Ok(o),
            (Err(e), _) => Err(e),
            (Ok(_), Err(e)) => Err(BreakdownError::Io("server side".into(), e)),
        }
    })
}

/// The client's loop: unrecorded round trips until `warm_end`, then timed `send; recv`
/// until the duration is spent. Returns the samples taken and the measured time.
fn timed_loop<C: Side>(
    cfg: &BreakdownConfig,
    clock: &Clock,
    warm_end: u64,
    c: &mut C,
    h: &mut LatencyHistogram,
) -> io::Result<(u64, Nanos)> {
    while clock.now() < warm_end {
        c.send()?;
        c.recv()?;
    }
    let start = clock.now();
    let end = start + ticks(clock, cfg.duration);
    let mut n = 0u64;
    loop {
        let t0 = clock.now();
        c.send()?;
        c.recv()?;
        let t1 = clock.now();
        h.record(clock.delta_nanos(t0, t1));
        n += 1;
        if t1 >= end || n >= cfg.max_samples {
            return Ok((n, clock.delta_nanos(start, t1)));
        }
    }
}

/// A round trip whose other end is not one of ours (latlab's NF, which runs its own
/// threads): only the client runs here, pinned, and times `send; recv` as
/// [`round_trip`]'s client does. `server_cpu` is recorded as where that end was placed.
pub(crate) fn client_only<C, MC>(
    cfg: &BreakdownConfig,
    clock: &Clock,
    client_cpu: Option<u32>,
    server_cpu: Option<u32>,
    make_client: MC,
) -> Result<StepOutcome, BreakdownError>
where
    C: Side,
    MC: FnOnce() -> io::Result<C> + Send,
{
    std::thread::scope(|s| {
        s.spawn(move || -> Result<StepOutcome, BreakdownError> {
            let io_err = |what: &str, e: io::Error| BreakdownError::Io(what.to_string(), e);
            pin(client_cpu).map_err(|e| io_err("pinning the client", e))?;
            let mut c = make_client().map_err(|e| io_err("setting up the client side", e))?;
            let mut h = LatencyHistogram::new(cfg.hist)
                .map_err(|e| BreakdownError::Config(e.to_string()))?;
            let warm_end = clock.now() + ticks(clock, cfg.warmup);
            let (n, elapsed) = timed_loop(cfg, clock, warm_end, &mut c, &mut h)
                .map_err(|e| io_err("round trip", e))?;
            Ok(StepOutcome::new(h, n, elapsed, client_cpu, server_cpu))
        })
        .join()
        .expect("client thread panicked")
    })
}

/// A cache line two cores pass a counter through.
#[repr(align(128))]
#[derive(Debug, Default)]
pub(crate) struct Line(AtomicU64);

/// Cache-line ping-pong: the client writes an odd value, the server answers with the next
/// even one; both spin.
pub(crate) struct LineSide {
    line: Arc<Line>,
    next: u64,
    client: bool,
}

impl LineSide {
    pub(crate) fn pair() -> (LineSide, LineSide) {
        let line = Arc::new(Line::default());
        (
            LineSide {
                line: line.clone(),
                next: 1,
                client: true,
            },
            LineSide {
                line,
                next: 1,
                client: false,
            },
        )
    }
}

fn spin_until(mut done: impl FnMut() -> bool) -> io::Result<()> {
    let mut spins = 0u32;
    let mut started: Option<Instant> = None;
    while !done() {
        std::hint::spin_loop();
        spins = spins.wrapping_add(1);
        if spins % (1 << 16) == 0 {
            let s = *started.get_or_insert_with(Instant::now);
            if s.elapsed() > IO_TIMEOUT {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no answer within 2 s",
                ));
            }
        }
    }
    Ok(())
}

/// Busy-polls a non-blocking operation until `op` reports it done (`Ok(true)`): a
/// would-block error retries, any other error ends the wait with that error; gives up, as
/// [`spin_until`], after [`IO_TIMEOUT`].
fn spin_io(mut op: impl FnMut() -> io::Result<bool>) -> io::Result<()> {
    let mut res = Ok(());
    spin_until(|| match op() {
        Ok(done) => done,
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => false,
        Err(e) => {
            res = Err(e);
            true
        }
    })?;
    res
}

impl Side for LineSide {
    fn send(&mut self) -> io::Result<()> {
        if self.client {
            self.line.0.store(self.next, Ordering::Release);
        } else {
            self.line.0.store(self.next + 1, Ordering::Release);
            self.next += 2;
        }
        Ok(())
    }
    fn recv(&mut self) -> io::Result<()> {
        let want = if self.client {
            self.next + 1
        } else {
            self.next
        };
        spin_until(|| self.line.0.load(Ordering::Acquire) == want)?;
        if self.client {
            self.next += 2;
        }
        Ok(())
    }
}

/// Futex hand-off: each side bumps its outgoing word and wakes the other, then sleeps on
/// its incoming word until it changes.
pub(crate) struct FutexSide {
    out: Arc<AtomicU32>,
    inc: Arc<AtomicU32>,
    seen: u32,
}

impl FutexSide {
    pub(crate) fn pair() -> (FutexSide, FutexSide) {
        let a = Arc::new(AtomicU32::new(0));
        let b = Arc::new(AtomicU32::new(0));
        (
            FutexSide {
                out: a.clone(),
                inc: b.clone(),
                seen: 0,
            },
            FutexSide {
                out: b,
                inc: a,
                seen: 0,
            },
        )
    }
}

impl Side for FutexSide {
    fn send(&mut self) -> io::Result<()> {
        self.out.fetch_add(1, Ordering::Release);
        futex::wake(&self.out, 1);
        Ok(())
    }
    fn recv(&mut self) -> io::Result<()> {
        loop {
            let v = self.inc.load(Ordering::Acquire);
            if v != self.seen {
                self.seen = v;
                return Ok(());
            }
            futex::wait(&self.inc, v);
        }
    }
}

/// A byte-stream side (pipe ends or a stream socket): `payload` bytes each way.
pub(crate) struct StreamSide<R: Read + Send, W: Write + Send> {
    rx: R,
    tx: W,
    buf: Vec<u8>,
}

impl<R: Read + Send, W: Write + Send> StreamSide<R, W> {
    pub(crate) fn new(rx: R, tx: W, payload: usize) -> Self {
        StreamSide {
            rx,
            tx,
            buf: vec![1u8; payload.max(1)],
        }
    }
}

impl<R: Read + Send, W: Write + Send> Side for StreamSide<R, W> {
    fn send(&mut self) -> io::Result<()> {
        self.tx.write_all(&self.buf)
    }
    fn recv(&mut self) -> io::Result<()> {
        self.rx.read_exact(&mut self.buf)
    }
}

/// Two pipes, one per direction: `(client, server)`.
pub(crate) type PipeSide = StreamSide<std::fs::File, std::fs::File>;

pub(crate) fn pipe_pair(payload: usize) -> io::Result<(PipeSide, PipeSide)> {
    let (r1, w1) = ipc::pipe()?;
    let (r2, w2) = ipc::pipe()?;
    Ok((
        StreamSide::new(r2.into(), w1.into(), payload),
        StreamSide::new(r1.into(), w2.into(), payload),
    ))
}

/// A UNIX stream socket pair.
pub(crate) fn unix_pair(payload: usize) -> io::Result<(impl Side, impl Side)> {
    let (a, b) = UnixStream::pair()?;
    for s in [&a, &b] {
        s.set_read_timeout(Some(IO_TIMEOUT))?;
    }
    let (a2, b2) = (a.try_clone()?, b.try_clone()?);
    Ok((
        StreamSide::new(a, a2, payload),
        StreamSide::new(b, b2, payload),
    ))
}

/// eventfd hand-off: one counter per direction.
pub(crate) struct EventSide {
    out: Arc<ipc::EventFd>,
    inc: Arc<ipc::EventFd>,
}

pub(crate) fn eventfd_pair() -> io::Result<(EventSide, EventSide)> {
    let a = Arc::new(ipc::EventFd::new()?);
    let b = Arc::new(ipc::EventFd::new()?);
    Ok((
        EventSide {
            out: a.clone(),
            inc: b.clone(),
        },
        EventSide { out: b, inc: a },
    ))
}

impl Side for EventSide {
    fn send(&mut self) -> io::Result<()> {
        self.out.signal(1)
    }
    fn recv(&mut self) -> io::Result<()> {
        self.inc.wait().map(|_| ())
    }
}

/// A connected UDP socket sending `payload`-byte datagrams, blocking or busy-polling.
pub(crate) struct UdpSide {
    sock: UdpSocket,
    buf: Vec<u8>,
    busy: bool,
}

impl UdpSide {
    /// Binds `local` (port 0 for any) and, when `peer` is given, connects to it.
    pub(crate) fn bind(local: &str, payload: usize, busy: bool) -> io::Result<UdpSide> {
        let sock = UdpSocket::bind(local)?;
        sock.set_read_timeout(Some(IO_TIMEOUT))?;
        sock.set_nonblocking(busy)?;
        Ok(UdpSide {
            sock,
            buf: vec![1u8; payload.max(1)],
            busy,
        })
    }

    pub(crate) fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.sock.local_addr()
    }

    /// Fills the message sent with `fill` (e.g. a probe header the NF accepts); the
    /// length stays the payload size.
    pub(crate) fn with_message(mut self, fill: impl FnOnce(&mut [u8])) -> UdpSide {
        fill(&mut self.buf);
        self
    }

    pub(crate) fn connect(&self, peer: std::net::SocketAddr) -> io::Result<()> {
        self.sock.connect(peer)
    }
}

impl Side for UdpSide {
    fn send(&mut self) -> io::Result<()> {
        loop {
            match self.sock.send(&self.buf) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::hint::spin_loop(),
                Err(e) => return Err(e),
            }
        }
    }
    fn recv(&mut self) -> io::Result<()> {
        if !self.busy {
            return self.sock.recv(&mut self.buf).map(|_| ());
        }
        let (sock, buf) = (&self.sock, &mut self.buf);
        spin_io(|| sock.recv(buf).map(|_| true))
    }
}

/// A UDP server that answers whoever sent the last datagram (for the veth step, where the
/// client's address is known only after it sends).
pub(crate) fn udp_loopback_pair(payload: usize, busy: bool) -> io::Result<(UdpSide, UdpSide)> {
    let c = UdpSide::bind("127.0.0.1:0", payload, busy)?;
    let s = UdpSide::bind("127.0.0.1:0", payload, busy)?;
    c.connect(s.local_addr()?)?;
    s.connect(c.local_addr()?)?;
    Ok((c, s))
}

/// A TCP connection over loopback (Nagle off), blocking or busy-polling.
pub(crate) struct TcpSide {
    s: TcpStream,
    buf: Vec<u8>,
    busy: bool,
}

impl Side for TcpSide {
    fn send(&mut self) -> io::Result<()> {
        let mut off = 0;
        while off < self.buf.len() {
            match self.s.write(&self.buf[off..]) {
                Ok(n) => off += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::hint::spin_loop(),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
    fn recv(&mut self) -> io::Result<()> {
        if !self.busy {
            return self.s.read_exact(&mut self.buf);
        }
        let mut off = 0;
        let len = self.buf.len();
        let (s, buf) = (&mut self.s, &mut self.buf);
        spin_io(|| match s.read(&mut buf[off..])? {
            0 => Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
            n => {
                off += n;
                Ok(off == len)
            }
        })
    }
}

pub(crate) fn tcp_loopback_pair(payload: usize, busy: bool) -> io::Result<(TcpSide, TcpSide)> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let c = TcpStream::connect(l.local_addr()?)?;
    let (s, _) = l.accept()?;
    let mk = |s: TcpStream| -> io::Result<TcpSide> {
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(IO_TIMEOUT))?;
        s.set_nonblocking(busy)?;
        Ok(TcpSide {
            s,
            buf: vec![1u8; payload.max(1)],
            busy,
        })
    };
    Ok((mk(c)?, mk(s)?))
}

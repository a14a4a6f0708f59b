//! The generator thread: one event loop over its connections (non-blocking sockets, a
//! `ppoll` set from `latlab_sys::poll`). Requests go out on the open-loop schedule to the
//! next connection with room in its pipeline; answers are parsed where they land in the
//! connection's receive buffer. Buffers are allocated before the run; a request is written
//! into its connection's send buffer and timed with the run's clock.

use super::config::{LoadConfig, LoadIo, Protocol, Target};
use super::error::LoadError;
use super::http;
use super::memcached::{self, UDP_HEADER};
use super::record::{Kind, Pacer, Recorder, Req};
use super::reply::{Answer, Parse};
use crate::probe::Schedule;
use crate::rng::Rng;
use latlab_sys::poll::PollSet;
use latlab_sys::tsc::Clock;
use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::time::Duration;

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// The least and the most time before a send at which the adaptive loop stops sleeping
/// in `ppoll` and polls without waiting ([`WakeMargin`]).
const MARGIN_MIN_NS: u64 = 30_000;
/// See [`MARGIN_MIN_NS`].
const MARGIN_MAX_NS: u64 = 250_000;
/// Timed wake-ups [`WakeMargin`] remembers.
const WAKES: usize = 64;
/// Receive buffer of a connection beyond the largest value.
const RX_SLACK: usize = 64 * 1024;

enum Sock {
    Tcp(TcpStream),
    Udp(UdpSocket),
}

struct Conn {
    sock: Sock,
    out: Vec<u8>,
    out_pos: usize,
    inb: Vec<u8>,
    in_len: usize,
    inflight: VecDeque<Req>,
    next_id: u16,
    /// The server said it closes after an answer: no new requests.
    closing: bool,
    alive: bool,
}

/// Opens one connection (TCP) or connected socket (UDP) to `t`, non-blocking.
///
/// # Errors
/// [`LoadError::Connect`] naming the address.
pub fn connect(t: &Target) -> Result<(), LoadError> {
    open(t).map(|_| ())
}

fn open(t: &Target) -> Result<Sock, LoadError> {
    let err = |e: std::io::Error| LoadError::Connect {
        addr: t.addr,
        source: e,
    };
    match t.protocol {
        Protocol::MemcachedUdp => {
            let bind = if t.addr.is_ipv4() {
                "0.0.0.0:0"
            } else {
                "[::]:0"
            };
            let s = UdpSocket::bind(bind).map_err(err)?;
            s.connect(t.addr).map_err(err)?;
            s.set_nonblocking(true).map_err(err)?;
            Ok(Sock::Udp(s))
        }
        _ => {
            let s = TcpStream::connect_timeout(&t.addr, CONNECT_TIMEOUT).map_err(err)?;
            s.set_nodelay(true).map_err(err)?;
            s.set_nonblocking(true).map_err(err)?;
            Ok(Sock::Tcp(s))
        }
    }
}

/// Largest request in bytes.
fn max_request(cfg: &LoadConfig, http_req: &[u8]) -> usize {
    match cfg.target.protocol {
        Protocol::Http => http_req.len(),
        _ => UDP_HEADER + 32 + cfg.key_size.max + cfg.value_size.max,
    }
}

impl Conn {
    fn new(sock: Sock, cfg: &LoadConfig, max_req: usize) -> Conn {
        let p = cfg.pipeline as usize;
        Conn {
            sock,
            out: Vec::with_capacity(max_req * (p + 1)),
            out_pos: 0,
            inb: vec![0; cfg.value_size.max + RX_SLACK],
            in_len: 0,
            inflight: VecDeque::with_capacity(p),
            next_id: 0,
            closing: false,
            alive: true,
        }
    }

    fn has_room(&self, pipeline: usize) -> bool {
        self.alive && !self.closing && self.inflight.len() < pipeline
    }

    /// Writes what is pending; true when something is still left.
    fn flush(&mut self) -> std::io::Result<bool> {
        let Sock::Tcp(s) = &mut self.sock else {
            return Ok(false);
        };
        while self.out_pos < self.out.len() {
            match s.write(&self.out[self.out_pos..]) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(n) => self.out_pos += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(true),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.out.clear();
        self.out_pos = 0;
        Ok(false)
    }
}

/// How long before a send the adaptive loop stops sleeping and polls instead, learnt from
/// how late its own timed wake-ups came back: a wake-up from a halted vCPU is tens of µs
/// late on a guest, a few µs on bare metal. The margin is the p90 of the last [`WAKES`]
/// overshoots plus 5 µs, within [`MARGIN_MIN_NS`]..=[`MARGIN_MAX_NS`] (a stall of
/// milliseconds is not worth spinning for). Fixed memory: it lives in the hot loop.
#[derive(Clone, Debug)]
pub struct WakeMargin {
    late: [u32; WAKES],
    seen: usize,
    margin: u64,
    /// The largest margin used, ns.
    pub max: u64,
}

impl Default for WakeMargin {
    /// [`MARGIN_MIN_NS`] until a wake-up has been seen.
    fn default() -> WakeMargin {
        WakeMargin {
            late: [0; WAKES],
            seen: 0,
            margin: MARGIN_MIN_NS,
            max: MARGIN_MIN_NS,
        }
    }
}

impl WakeMargin {
    /// The margin now, ns.
    pub fn get(&self) -> u64 {
        self.margin
    }

    /// A timed wait meant to end at `due` ended at `woke` (ns on one clock).
    pub fn observe(&mut self, due: u64, woke: u64) {
        let over = u32::try_from(woke.saturating_sub(due)).unwrap_or(u32::MAX);
        self.late[self.seen % WAKES] = over;
        self.seen += 1;
        let k = self.seen.min(WAKES);
        let mut sorted = self.late;
        sorted[..k].sort_unstable();
        let p90 = u64::from(sorted[(k * 9).div_ceil(10) - 1]);
        self.margin = (p90 + 5_000).clamp(MARGIN_MIN_NS, MARGIN_MAX_NS);
        self.max = self.max.max(self.margin);
    }
}

/// How long the loop may sleep in `ppoll` (0: poll without sleeping) at `now`, with the next
/// send due at `next` (`None`: the schedule is done; the drain ends at `drain_end`).
/// Adaptive waits for an answer, or until `margin` before the next send and then polls the
/// sockets without sleeping up to it (a timed wake-up can be tens of µs late: [`WakeMargin`]);
/// blocking sleeps up to the send itself; busy never sleeps.
fn wait_ns(io: LoadIo, next: Option<u64>, now: u64, drain_end: u64, margin: u64) -> u64 {
    if io == LoadIo::Busy {
        return 0;
    }
    match next {
        Some(t) if t > now => match io {
            LoadIo::Blocking => t - now,
            _ => (t - now).saturating_sub(margin),
        },
        Some(_) => 1_000_000, // blocked: an answer frees a slot
        None => drain_end.saturating_sub(now).max(1),
    }
}

/// What one generator thread returns.
pub struct ThreadOutcome {
    /// Its recorder.
    pub rec: Recorder,
    /// Problems worth a warning (first of each kind).
    pub warnings: Vec<String>,
    /// `--io adaptive`: the largest margin before a send at which it stopped sleeping, ns
    /// ([`WakeMargin`]).
    pub wake_margin_max_ns: Option<u64>,
}

/// The request mix: which operation, which key, how big a value.
struct Mix {
    rng: Rng,
    filler: Vec<u8>,
    http: Vec<u8>,
}

impl Mix {
    /// Writes the next request into `out` (after the UDP header for `id`), returns its kind.
    fn write(&mut self, cfg: &LoadConfig, out: &mut Vec<u8>, id: u16) -> Kind {
        match cfg.target.protocol {
            Protocol::Http => {
                out.extend_from_slice(&self.http);
                Kind::Http
            }
            p => {
                if p == Protocol::MemcachedUdp {
                    memcached::encode_udp_header(out, id);
                }
                let get = self.rng.unit_open0() <= cfg.get_ratio;
                let key = ((self.rng.unit_open0() * cfg.keys as f64) as u64).min(cfg.keys - 1);
                let klen = cfg.key_size.pick(self.rng.unit_open0());
                if get {
                    memcached::encode_get(out, key, klen);
                    Kind::Get
                } else {
                    let vlen = cfg.value_size.pick(self.rng.unit_open0());
                    memcached::encode_set(out, key, klen, vlen, &self.filler);
                    Kind::Set
                }
            }
        }
    }
}

/// Sets every key once over one blocking connection, so gets find values.
fn preload(cfg: &LoadConfig, filler: &[u8]) -> Result<(), LoadError> {
    let t = &cfg.target;
    let err = |e: std::io::Error| LoadError::Preload(e.to_string());
    let mut out = Vec::with_capacity(256 + cfg.value_size.max);
    let mut buf = vec![0u8; 4096];
    let mut rng = Rng::new(cfg.seed ^ 0x5eed);
    let klen = |rng: &mut Rng| cfg.key_size.pick(rng.unit_open0());
    match open(t)? {
        Sock::Tcp(s) => {
            s.set_nonblocking(false).map_err(err)?;
            s.set_read_timeout(Some(Duration::from_secs(5)))
                .map_err(err)?;
            let mut s = s;
            // batches of 64 sets, then their 64 answers
            let mut key = 0;
            while key < cfg.keys {
                let batch = (cfg.keys - key).min(64);
                out.clear();
                for k in key..key + batch {
                    let v = cfg.value_size.pick(rng.unit_open0());
                    memcached::encode_set(&mut out, k, klen(&mut rng), v, filler);
                    s.write_all(&out).map_err(err)?;
                    out.clear();
                }
                let (mut have, mut got) = (0, 0);
                while got < batch {
                    let n = s.read(&mut buf[have..]).map_err(err)?;
                    if n == 0 {
                        return Err(LoadError::Preload(
                            "the server closed the connection".into(),
                        ));
                    }
                    have += n;
                    let mut pos = 0;
                    while let Parse::Done(r, used) = memcached::parse(&buf[pos..have]) {
                        if r != memcached::Reply::Stored {
                            return Err(LoadError::Preload(format!("a set was answered {r:?}")));
                        }
                        pos += used;
                        got += 1;
                    }
                    buf.copy_within(pos..have, 0);
                    have -= pos;
                }
                key += batch;
            }
        }
        Sock::Udp(s) => {
            s.set_nonblocking(false).map_err(err)?;
            s.set_read_timeout(Some(Duration::from_millis(500)))
                .map_err(err)?;
            for k in 0..cfg.keys {
                out.clear();
                memcached::encode_udp_header(&mut out, k as u16);
                let v = cfg.value_size.pick(rng.unit_open0());
                memcached::encode_set(&mut out, k, klen(&mut rng), v, filler);
                s.send(&out).map_err(err)?;
                let n = s.recv(&mut buf).map_err(err)?;
                if n < UDP_HEADER
                    || !matches!(
                        memcached::parse(&buf[UDP_HEADER..n]),
                        Parse::Done(memcached::Reply::Stored, _)
                    )
                {
                    return Err(LoadError::Preload("a set over UDP was not STORED".into()));
                }
            }
        }
    }
    Ok(())
}

/// Runs one generator thread with `cfg` (one share of the load) on `clock`, started at the
/// clock reading `start` (shared by every thread, so their schedules line up).
///
/// # Errors
/// [`LoadError`] when a connection cannot be opened.
pub fn run_thread(cfg: &LoadConfig, clock: &Clock, start: u64) -> Result<ThreadOutcome, LoadError> {
    let pipeline = cfg.pipeline as usize;
    let http_req = http::request(&cfg.target.addr.to_string(), &cfg.target.path);
    let max_req = max_request(cfg, &http_req);
    let mut conns: Vec<Conn> = (0..cfg.connections)
        .map(|_| open(&cfg.target).map(|s| Conn::new(s, cfg, max_req)))
        .collect::<Result<_, _>>()?;
    let mut set = PollSet::with_capacity(conns.len());
    for c in &conns {
        match &c.sock {
            Sock::Tcp(s) => set.add(s),
            Sock::Udp(s) => set.add(s),
        };
    }
    let mut mix = Mix {
        rng: Rng::new(cfg.seed ^ 0x00c0_ffee),
        filler: vec![b'x'; cfg.value_size.max],
        http: http_req,
    };
    let end_ns = cfg.warmup.get() + cfg.duration.get();
    let expected = (cfg.duration.get() as u128 * cfg.milli_rps as u128 / 1_000_000_000_000) as u64;
    let mut rec = Recorder::new(cfg.hist, cfg.warmup, cfg.interval, expected.max(1));
    let mut pacer = Pacer::new(Schedule::of(cfg.arrivals, cfg.milli_rps, cfg.seed), end_ns);
    let mut warnings: Vec<String> = Vec::new();
    let udp = cfg.target.protocol == Protocol::MemcachedUdp;
    let memc = cfg.target.protocol.is_memcached();
    let mut rr = 0usize;
    let mut dgram = vec![0u8; 65_536];
    let mut next_timeout_scan = 0u64;
    let ns = |raw: u64| clock.delta_nanos(start, raw).get();
    let mut margin = WakeMargin::default();
    // timed waits end within a µs or so of their time instead of the default 50 µs slack
    if latlab_sys::rt::set_timer_slack_ns(1).is_err() {
        warn(
            "the timer slack could not be lowered: sends may be up to 50 µs late".into(),
            &mut warnings,
        );
    }
    // wait for the common start
    while clock.now() < start {
        std::hint::spin_loop();
    }
    loop {
        let mut now = ns(clock.now());
        // send what is due
        while let Some(sched) = pacer.due(now) {
            let n = conns.len();
            let pick = (0..n)
                .map(|k| (rr + k) % n)
                .find(|&i| conns[i].has_room(pipeline));
            let Some(ci) = pick else {
                pacer.block();
                break;
            };
            rr = ci + 1;
            let c = &mut conns[ci];
            let id = c.next_id;
            c.next_id = c.next_id.wrapping_add(1);
            now = ns(clock.now());
            let late = pacer.sent(now);
            rec.sent(sched, now, late);
            if udp {
                c.out.clear();
                let kind = mix.write(cfg, &mut c.out, id);
                let Sock::Udp(s) = &c.sock else {
                    unreachable!()
                };
                match s.send(&c.out) {
                    Ok(_) => c.inflight.push_back(Req {
                        sched_ns: sched,
                        sent_ns: now,
                        kind,
                        id,
                    }),
                    Err(e) => {
                        rec.counters.lost += 1;
                        warn(format!("a UDP send failed: {e}"), &mut warnings);
                    }
                }
                c.out.clear();
            } else {
                if c.out_pos > 0 {
                    c.out.drain(..c.out_pos);
                    c.out_pos = 0;
                }
                let kind = mix.write(cfg, &mut c.out, id);
                c.inflight.push_back(Req {
                    sched_ns: sched,
                    sent_ns: now,
                    kind,
                    id,
                });
                match c.flush() {
                    Ok(left) => set.want_write(ci, left),
                    Err(e) => {
                        warn(format!("a connection failed: {e}"), &mut warnings);
                        drop_conn(c, &mut rec, &mut set, ci);
                    }
                }
            }
        }
        if conns.iter().all(|c| !c.alive) {
            warn(
                "every connection was closed; the rest of the schedule was not sent".into(),
                &mut warnings,
            );
            break;
        }
        let outstanding: usize = conns.iter().map(|c| c.inflight.len()).sum();
        let schedule_done = pacer.next_ns().is_none();
        if schedule_done && (outstanding == 0 || now >= end_ns + cfg.drain.get()) {
            break;
        }
        let wake = wait_ns(
            cfg.io,
            pacer.next_ns(),
            now,
            end_ns + cfg.drain.get(),
            margin.get(),
        );
        let wake = if udp {
            wake.min(cfg.timeout.get())
        } else {
            wake
        };
        // a sleep up to the margin before a send: how late it ends teaches the margin
        let timed =
            cfg.io == LoadIo::Adaptive && wake > 0 && pacer.next_ns().is_some_and(|t| t > now);
        if set
            .wait(wake)
            .map_err(|e| LoadError::Io("waiting for the sockets".into(), e))?
            == 0
        {
            if timed {
                margin.observe(now + wake, ns(clock.now()));
            }
            if udp && now >= next_timeout_scan {
                expire(&mut conns, &mut rec, ns(clock.now()), cfg.timeout.get());
                next_timeout_scan = now + cfg.timeout.get() / 4;
            }
            continue;
        }
        for (ci, c) in conns.iter_mut().enumerate() {
            if !c.alive {
                continue;
            }
            if set.writable(ci) {
                match c.flush() {
                    Ok(left) => set.want_write(ci, left),
                    Err(e) => {
                        warn(format!("a connection failed: {e}"), &mut warnings);
                        drop_conn(c, &mut rec, &mut set, ci);
                        continue;
                    }
                }
            }
            if !set.readable(ci) {
                continue;
            }
            if udp {
                read_udp(c, &mut dgram, &mut rec, clock, start, &mut warnings);
            } else if let Err(why) = read_tcp(c, memc, &mut rec, clock, start) {
                warn(why, &mut warnings);
                drop_conn(c, &mut rec, &mut set, ci);
                // reconnect: the server closed after its keep-alive limit, say
                if pacer.next_ns().is_some() {
                    if let Ok(s) = open(&cfg.target) {
                        let Sock::Tcp(t) = &s else { unreachable!() };
                        set.replace(ci, t);
                        *c = Conn::new(s, cfg, max_req);
                        rec.counters.reconnects += 1;
                    }
                }
            }
        }
        if udp {
            let now = ns(clock.now());
            if now >= next_timeout_scan {
                expire(&mut conns, &mut rec, now, cfg.timeout.get());
                next_timeout_scan = now + cfg.timeout.get() / 4;
            }
        }
    }
    let unanswered: usize = conns.iter().map(|c| c.inflight.len()).sum();
    rec.finish(pacer.unsent(), unanswered as u64);
    Ok(ThreadOutcome {
        rec,
        warnings,
        wake_margin_max_ns: (cfg.io == LoadIo::Adaptive).then_some(margin.max),
    })
}

/// Keeps the first few distinct warnings.
fn warn(w: String, warnings: &mut Vec<String>) {
    if warnings.len() < 8 && !warnings.contains(&w) {
        warnings.push(w);
    }
}

/// A connection is gone: its requests in flight are lost.
fn drop_conn(c: &mut Conn, rec: &mut Recorder, set: &mut PollSet, ci: usize) {
    rec.counters.lost += c.inflight.len() as u64;
    c.inflight.clear();
    c.alive = false;
    set.disable(ci);
}

/// UDP requests older than `timeout` are timed out and their slots freed.
fn expire(conns: &mut [Conn], rec: &mut Recorder, now: u64, timeout: u64) {
    for c in conns {
        while c
            .inflight
            .front()
            .is_some_and(|r| now.saturating_sub(r.sent_ns) > timeout)
        {
            c.inflight.pop_front();
            rec.counters.timed_out += 1;
        }
    }
}

/// Reads what the socket has and matches every whole response to the oldest request in
/// flight. An error when the connection closed or sent something unreadable.
fn read_tcp(
    c: &mut Conn,
    memc: bool,
    rec: &mut Recorder,
    clock: &Clock,
    start: u64,
) -> Result<(), String> {
    let Sock::Tcp(s) = &mut c.sock else {
        return Ok(());
    };
    loop {
        if c.in_len == c.inb.len() {
            return Err("a response larger than the receive buffer".into());
        }
        let n = match s.read(&mut c.inb[c.in_len..]) {
            Ok(0) => return Err("the server closed a connection".into()),
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("a connection failed: {e}")),
        };
        let now = clock.delta_nanos(start, clock.now()).get();
        c.in_len += n;
        let mut pos = 0;
        loop {
            let parsed = if memc {
                match memcached::parse(&c.inb[pos..c.in_len]) {
                    Parse::Done(r, u) => Parse::Done(r.answer(), u),
                    Parse::Incomplete => Parse::Incomplete,
                    Parse::Invalid(w) => Parse::Invalid(w),
                }
            } else {
                match http::parse(&c.inb[pos..c.in_len]) {
                    Parse::Done(r, u) => Parse::Done(r.answer(), u),
                    Parse::Incomplete => Parse::Incomplete,
                    Parse::Invalid(w) => Parse::Invalid(w),
                }
            };
            match parsed {
                Parse::Done(a, used) => {
                    pos += used;
                    let Some(r) = c.inflight.pop_front() else {
                        return Err("an answer to no request".into());
                    };
                    rec.answered(&r, now, a);
                    if a.close {
                        c.closing = true;
                    }
                }
                Parse::Incomplete => break,
                Parse::Invalid(why) => return Err(format!("unreadable response: {why}")),
            }
        }
        c.inb.copy_within(pos..c.in_len, 0);
        c.in_len -= pos;
    }
}

/// Reads every datagram waiting and matches each to its request by id.
fn read_udp(
    c: &mut Conn,
    dgram: &mut [u8],
    rec: &mut Recorder,
    clock: &Clock,
    start: u64,
    warnings: &mut Vec<String>,
) {
    let Sock::Udp(s) = &c.sock else { return };
    loop {
        let n = match s.recv(dgram) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => {
                // ICMP port unreachable and the like: reported on the next read
                warn(format!("a UDP receive failed: {e}"), warnings);
                return;
            }
        };
        let now = clock.delta_nanos(start, clock.now()).get();
        let Some(h) = memcached::parse_udp_header(&dgram[..n]) else {
            rec.counters.stray += 1;
            continue;
        };
        let Some(i) = c.inflight.iter().position(|r| r.id == h.request_id) else {
            rec.counters.stray += 1;
            continue;
        };
        let r = c.inflight.remove(i).expect("found");
        let a = if h.total != 1 {
            // a response over several datagrams: counted as an error (values are kept to one)
            Answer {
                error: true,
                ..Answer::OK
            }
        } else {
            match memcached::parse(&dgram[UDP_HEADER..n]) {
                Parse::Done(reply, _) => reply.answer(),
                _ => Answer {
                    error: true,
                    ..Answer::OK
                },
            }
        };
        rec.answered(&r, now, a);
    }
}

/// Sets every key once when the configuration asks for it (memcached only).
///
/// # Errors
/// [`LoadError::Preload`] or [`LoadError::Connect`].
pub fn preload_keys(cfg: &LoadConfig) -> Result<(), LoadError> {
    if cfg.preload && cfg.target.protocol.is_memcached() && cfg.get_ratio > 0.0 {
        preload(cfg, &vec![b'x'; cfg.value_size.max])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The margin follows the p90 of the recent overshoots, plus 5 µs, within 30–250 µs: a
    /// rare long stall does not move it, a steady one does, and it forgets.
    #[test]
    fn the_wake_margin_learns_the_p90_of_recent_overshoots() {
        let mut m = WakeMargin::default();
        assert_eq!(m.get(), MARGIN_MIN_NS);
        let mut t = 0;
        let mut wake = |m: &mut WakeMargin, over: u64| {
            t += 1_000_000;
            m.observe(t, t + over);
        };
        for _ in 0..WAKES {
            wake(&mut m, 50_000);
        }
        assert_eq!(m.get(), 55_000);
        // one stall of 10 ms in 64: above the p90, ignored
        wake(&mut m, 10_000_000);
        assert_eq!(m.get(), 55_000);
        // small overshoots: the floor
        for _ in 0..WAKES {
            wake(&mut m, 2_000);
        }
        assert_eq!(m.get(), MARGIN_MIN_NS);
        // a quarter of the wake-ups a millisecond late: the ceiling, and remembered as the max
        for i in 0..WAKES {
            wake(&mut m, if i % 4 == 0 { 1_000_000 } else { 2_000 });
        }
        assert_eq!(m.get(), MARGIN_MAX_NS);
        assert_eq!(m.max, MARGIN_MAX_NS);
        // a wake-up before its time counts as on time
        for _ in 0..WAKES {
            m.observe(5_000, 1_000);
        }
        assert_eq!(m.get(), MARGIN_MIN_NS);
    }

    #[test]
    fn each_io_mode_waits_as_documented() {
        let (now, drain_end) = (1_000_000, 9_000_000);
        let far = Some(now + 100_000);
        let near = Some(now + 10_000);
        // adaptive: sleeps up to the margin before a far send, not at all before a near one
        assert_eq!(
            wait_ns(LoadIo::Adaptive, far, now, drain_end, MARGIN_MIN_NS),
            100_000 - MARGIN_MIN_NS
        );
        assert_eq!(
            wait_ns(LoadIo::Adaptive, far, now, drain_end, 60_000),
            40_000
        );
        assert_eq!(
            wait_ns(LoadIo::Adaptive, near, now, drain_end, MARGIN_MIN_NS),
            0
        );
        // blocking: sleeps up to the send itself, however near
        assert_eq!(
            wait_ns(LoadIo::Blocking, far, now, drain_end, MARGIN_MIN_NS),
            100_000
        );
        assert_eq!(
            wait_ns(LoadIo::Blocking, near, now, drain_end, MARGIN_MIN_NS),
            10_000
        );
        // busy: never sleeps, not even while blocked or draining
        for next in [far, near, Some(now), None] {
            assert_eq!(
                wait_ns(LoadIo::Busy, next, now, drain_end, MARGIN_MIN_NS),
                0
            );
        }
        // a send already due but blocked (every connection full) waits for an answer
        for io in [LoadIo::Adaptive, LoadIo::Blocking] {
            let m = MARGIN_MIN_NS;
            assert_eq!(wait_ns(io, Some(now), now, drain_end, m), 1_000_000);
            assert_eq!(wait_ns(io, None, now, drain_end, m), drain_end - now);
            assert_eq!(wait_ns(io, None, drain_end + 5, drain_end, m), 1);
        }
    }
}

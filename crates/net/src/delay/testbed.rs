//! A three-namespace testbed for the injector: client ⇄ delay ⇄ server, joined by two veth
//! pairs, with the client and server in one IPv4 subnet bridged by whatever forwards
//! frames in the delay namespace (`latlab net delay`, or nothing: then they cannot talk).
//! Offloads are turned off on every veth so that each frame is a complete, checksummed
//! frame that a user-space forwarder can pass on. Also: a UDP ping-pong to measure round
//! trips through it, and a direct client ⇄ server link for the no-element baseline.

use latlab_core::hist::{HistConfig, LatencyHistogram};
use latlab_core::units::Nanos;
use latlab_sys::netns::{self, ip, Namespaces, TopologyError};
use latlab_sys::sched;
use latlab_sys::tsc::Clock;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Client address.
pub const CLIENT_IP: &str = "10.198.0.1";
/// Server address.
pub const SERVER_IP: &str = "10.198.0.2";
/// The delay namespace's interface towards the client.
pub const DELAY_IF_CLIENT: &str = "latlab-dc";
/// The delay namespace's interface towards the server.
pub const DELAY_IF_SERVER: &str = "latlab-ds";
/// Client interface.
pub const CLIENT_IF: &str = "latlab-c";
/// Server interface.
pub const SERVER_IF: &str = "latlab-s";

/// The namespaces and links; removed when dropped.
#[derive(Debug)]
pub struct Testbed {
    ns: Namespaces,
    /// Client namespace.
    pub client: String,
    /// Delay namespace (run the forwarder here).
    pub delay: String,
    /// Server namespace.
    pub server: String,
    /// Whether client and server are linked directly (no delay namespace in the path).
    pub direct: bool,
}

fn mac_of(ns: &str, ifname: &str) -> Result<String, TopologyError> {
    let out = ip(&["-n", ns, "-br", "link", "show", "dev", ifname])?;
    out.split_whitespace()
        .nth(2)
        .map(str::to_string)
        .ok_or_else(|| TopologyError::Failed {
            cmd: format!("ip -n {ns} -br link show dev {ifname}"),
            stderr: format!("no MAC address in '{}'", out.trim()),
        })
}

impl Testbed {
    /// Builds client ⇄ delay ⇄ server (`direct == false`) or client ⇄ server. `tag` makes
    /// the namespace names unique to a use (`latlab-<tag>-c-<pid>` ...).
    ///
    /// # Errors
    /// [`TopologyError`] (not root, `ip`/`ethtool` missing or failing).
    pub fn build(tag: &str, direct: bool) -> Result<Testbed, TopologyError> {
        let client = netns::unique_name(&format!("{tag}-c"));
        let delay = netns::unique_name(&format!("{tag}-d"));
        let server = netns::unique_name(&format!("{tag}-s"));
        let names = if direct {
            vec![client.clone(), server.clone()]
        } else {
            vec![client.clone(), delay.clone(), server.clone()]
        };
        let ns = Namespaces::create(&names)?;
        if direct {
            ns.veth(&client, CLIENT_IF, &server, SERVER_IF)?;
        } else {
            ns.veth(&client, CLIENT_IF, &delay, DELAY_IF_CLIENT)?;
            ns.veth(&delay, DELAY_IF_SERVER, &server, SERVER_IF)?;
        }
        for n in &names {
            netns::run_cmd(
                "ip",
                &[
                    "netns",
                    "exec",
                    n,
                    "sysctl",
                    "-qw",
                    "net.ipv6.conf.all.disable_ipv6=1",
                ],
            )?;
        }
        ns.offloads_off(&client, CLIENT_IF)?;
        ns.offloads_off(&server, SERVER_IF)?;
        if !direct {
            ns.offloads_off(&delay, DELAY_IF_CLIENT)?;
            ns.offloads_off(&delay, DELAY_IF_SERVER)?;
        }
        ns.addr(&client, CLIENT_IF, &format!("{CLIENT_IP}/24"))?;
        ns.addr(&server, SERVER_IF, &format!("{SERVER_IP}/24"))?;
        // Static neighbours: no ARP exchange through the element during a measurement.
        let cmac = mac_of(&client, CLIENT_IF)?;
        let smac = mac_of(&server, SERVER_IF)?;
        ip(&[
            "-n", &client, "neigh", "replace", SERVER_IP, "lladdr", &smac, "dev", CLIENT_IF,
        ])?;
        ip(&[
            "-n", &server, "neigh", "replace", CLIENT_IP, "lladdr", &cmac, "dev", SERVER_IF,
        ])?;
        Ok(Testbed {
            ns,
            client,
            delay,
            server,
            direct,
        })
    }

    /// The namespaces (for running programs inside with `ip netns exec`).
    pub fn namespaces(&self) -> &Namespaces {
        &self.ns
    }
}

/// Options of [`udp_ping`].
#[derive(Clone, Debug, PartialEq)]
pub struct PingConfig {
    /// Measured time.
    pub duration: Nanos,
    /// Unrecorded warm-up.
    pub warmup: Nanos,
    /// Datagram size, bytes (at least 8: a sequence number).
    pub payload: usize,
    /// Client CPU.
    pub client_cpu: Option<u32>,
    /// Server CPU.
    pub server_cpu: Option<u32>,
    /// A reply later than this counts as lost.
    pub timeout: Duration,
    /// Pause between round trips (0: back to back).
    pub gap: Duration,
    /// Run client and server under SCHED_FIFO at this priority (with `busy_client`, the
    /// server one above, so that it preempts the spinning client on a shared CPU).
    pub fifo: Option<i32>,
    /// The client busy-polls for the reply instead of sleeping, so that its CPU never
    /// idles (idle exits and wake-ups are a large, variable part of a round trip in VMs).
    pub busy_client: bool,
    /// Histogram range and precision.
    pub hist: HistConfig,
}

impl Default for PingConfig {
    fn default() -> Self {
        PingConfig {
            duration: Nanos::from_secs(2),
            warmup: Nanos(200_000_000),
            payload: 64,
            client_cpu: None,
            server_cpu: None,
            timeout: Duration::from_millis(200),
            gap: Duration::ZERO,
            fifo: None,
            busy_client: false,
            hist: HistConfig::default(),
        }
    }
}

/// Round trips measured by [`udp_ping`].
#[derive(Clone, Debug)]
pub struct PingOutcome {
    /// Round-trip times, ns.
    pub rtt: LatencyHistogram,
    /// Requests sent in the measured period.
    pub sent: u64,
    /// Of those, without a reply within the timeout.
    pub lost: u64,
}

const PORT: u16 = 7_900;

/// Measures UDP round trips from the client namespace to an echo server in the server
/// namespace (blocking sockets, one request outstanding, sequence-numbered so that a late
/// reply is never matched to a later request).
///
/// # Errors
/// Entering a namespace, binding, or an unexpected socket error.
pub fn udp_ping(tb: &Testbed, cfg: &PingConfig, clock: &Clock) -> io::Result<PingOutcome> {
    let stop = AtomicBool::new(false);
    let server_addr: SocketAddr = format!("{SERVER_IP}:{PORT}").parse().expect("literal");
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<io::Result<()>>();
    let payload = cfg.payload.max(8);
    std::thread::scope(|s| {
        let stop = &stop;
        let srv = s.spawn(move || -> io::Result<()> {
            let setup = || -> io::Result<UdpSocket> {
                netns::enter(&tb.server).map_err(io::Error::other)?;
                if let Some(c) = cfg.server_cpu {
                    sched::pin_current_thread(c).map_err(io::Error::other)?;
                }
                if let Some(p) = cfg.fifo {
                    let p = if cfg.busy_client { (p + 1).min(99) } else { p };
                    sched::set_fifo(p).map_err(io::Error::other)?;
                }
                let sock = UdpSocket::bind(server_addr)?;
                sock.set_read_timeout(Some(Duration::from_millis(50)))?;
                Ok(sock)
            };
            let sock = match setup() {
                Ok(s) => {
                    let _ = ready_tx.send(Ok(()));
                    s
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(io::Error::new(e.kind(), e.to_string())));
                    return Err(e);
                }
            };
            let mut buf = vec![0u8; 65_536];
            while !stop.load(Ordering::Relaxed) {
                match sock.recv_from(&mut buf) {
                    Ok((n, from)) => {
                        sock.send_to(&buf[..n], from)?;
                    }
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                        ) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        });
        let cli = s.spawn(move || -> io::Result<PingOutcome> {
            ready_rx
                .recv()
                .map_err(|_| io::Error::other("server thread ended"))??;
            netns::enter(&tb.client).map_err(io::Error::other)?;
            if let Some(c) = cfg.client_cpu {
                sched::pin_current_thread(c).map_err(io::Error::other)?;
            }
            if let Some(p) = cfg.fifo {
                sched::set_fifo(p).map_err(io::Error::other)?;
            }
            let sock = UdpSocket::bind(format!("{CLIENT_IP}:0"))?;
            sock.connect(server_addr)?;
            sock.set_read_timeout(Some(cfg.timeout))?;
            sock.set_nonblocking(cfg.busy_client)?;
            let timeout_raw = {
                let per_sec = clock.raw_to_nanos(1_000_000_000).get().max(1) as u128;
                ((cfg.timeout.as_nanos() * 1_000_000_000) / per_sec) as u64
            };
            let mut rtt = LatencyHistogram::new(cfg.hist).map_err(io::Error::other)?;
            let mut out = vec![0u8; payload];
            let mut inb = vec![0u8; payload + 64];
            let per_sec = clock.raw_to_nanos(1_000_000_000).get().max(1) as u128;
            let raw = |d: Nanos| ((d.get() as u128 * 1_000_000_000) / per_sec) as u64;
            let t_start = clock.now();
            let warm_end = t_start + raw(cfg.warmup);
            let end = warm_end + raw(cfg.duration);
            let (mut sent, mut lost) = (0u64, 0u64);
            let mut seq = 0u64;
            loop {
                let now = clock.now();
                if now >= end {
                    break;
                }
                let measured = now >= warm_end;
                seq += 1;
                out[..8].copy_from_slice(&seq.to_be_bytes());
                let t0 = clock.now();
                sock.send(&out)?;
                let got = loop {
                    match sock.recv(&mut inb) {
                        Ok(n) if n >= 8 && inb[..8] == seq.to_be_bytes() => break true,
                        Ok(_) => continue, // a late reply to an earlier request
                        Err(e) if cfg.busy_client && e.kind() == io::ErrorKind::WouldBlock => {
                            if clock.now().saturating_sub(t0) > timeout_raw {
                                break false;
                            }
                            std::hint::spin_loop();
                        }
                        Err(e)
                            if matches!(
                                e.kind(),
                                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                            ) =>
                        {
                            break false
                        }
                        Err(e) => return Err(e),
                    }
                };
                let t1 = clock.now();
                if measured {
                    sent += 1;
                    if got {
                        rtt.record(clock.delta_nanos(t0, t1));
                    } else {
                        lost += 1;
                    }
                }
                if !cfg.gap.is_zero() {
                    std::thread::sleep(cfg.gap);
                }
            }
            Ok(PingOutcome { rtt, sent, lost })
        });
        let out = cli.join().expect("client thread panicked");
        stop.store(true, Ordering::Relaxed);
        let srv = srv.join().expect("server thread panicked");
        let out = out?;
        srv?;
        Ok(out)
    })
}

/// Whether `sch_netem` can be used on this kernel: tries to attach it to `lo` in a scratch
/// namespace. `Err` says why not, in one line.
pub fn netem_available() -> Result<(), String> {
    let name = netns::unique_name("netem-probe");
    let ns = Namespaces::create(std::slice::from_ref(&name)).map_err(|e| e.to_string())?;
    let r = netns::run_cmd(
        "ip",
        &[
            "netns", "exec", &name, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay",
            "1ms",
        ],
    );
    drop(ns);
    match r {
        Ok(_) => Ok(()),
        Err(TopologyError::Failed { stderr, .. }) => Err(format!(
            "sch_netem is not available on this kernel ({}): tc says \"{stderr}\"",
            latlab_sys::host::host_info().kernel
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// What [`check`] measures.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckConfig {
    /// The delay to verify (applied client → server only, so a round trip gains it once):
    /// a constant, or a distribution whose draws the round trips should show.
    pub delay: super::DelaySpec,
    /// Seed of a distribution's draws (each round adds its index).
    pub seed: u64,
    /// More constant delays whose shift is measured in the same rounds (after
    /// [`CheckConfig::delay`]), e.g. every delay an experiment is about to apply.
    pub also_ns: Vec<u64>,
    /// Measured time per configuration, split over `rounds` alternating rounds.
    pub duration: Nanos,
    /// Alternating rounds (0 µs, D, 0 µs, D, ...), which spreads slow drifts of the host's
    /// load evenly over both.
    pub rounds: u32,
    /// Also measure `sch_netem` with the same delay on a direct link (constant delays).
    pub compare_netem: bool,
    /// CPU of the forwarding engine.
    pub engine_cpu: Option<u32>,
    /// CPU of client and server.
    pub endpoint_cpu: Option<u32>,
    /// The client busy-polls (see [`PingConfig::busy_client`]).
    pub busy_client: bool,
    /// Run the engine, client and server under SCHED_FIFO at this priority (the engine
    /// then owns its CPU; the kernel's RT throttling still leaves others 5 %).
    pub fifo: Option<i32>,
    /// Record the engine's stalls (for `--explain`: [`CheckOutcome::engine_stalls`]).
    pub stalls: bool,
    /// Hold `/dev/cpu_dma_latency` at this many µs for the check alone
    /// ([`latlab_sys::idle::DmaLatencyHold::for_part`]; the caller records it), for a
    /// check inside a run that otherwise leaves the idle policy alone. `None`: the check
    /// runs under whatever the process holds.
    pub idle_hold_us: Option<u32>,
}

impl CheckConfig {
    /// A check of `delay` with the defaults of `latlab net delay --testbed`: 8 s in 4
    /// rounds, no netem, nothing pinned, no extra delays, no hold of its own.
    pub fn new(delay: super::DelaySpec) -> CheckConfig {
        CheckConfig {
            delay,
            seed: 1,
            also_ns: Vec::new(),
            duration: Nanos::from_secs(8),
            rounds: 4,
            compare_netem: false,
            engine_cpu: None,
            endpoint_cpu: None,
            busy_client: false,
            fifo: None,
            stalls: false,
            idle_hold_us: None,
        }
    }
}

/// What [`check`] found (histograms of round trips, ns).
#[derive(Clone, Debug)]
pub struct CheckOutcome {
    /// Client ⇄ server over one veth pair, no element.
    pub direct: PingOutcome,
    /// Through the element at 0 added delay.
    pub zero: PingOutcome,
    /// Through the element at the checked delay.
    pub delayed: PingOutcome,
    /// Through the element at each of [`CheckConfig::also_ns`], in its order.
    pub also: Vec<(u64, PingOutcome)>,
    /// Through netem on a direct link, when compared.
    pub netem: Option<PingOutcome>,
    /// The engine's reports, 0-delay runs merged, then delayed runs merged.
    pub engine_zero: Vec<super::engine::EngineReport>,
    /// The engine's reports of the delayed runs.
    pub engine_delayed: Vec<super::engine::EngineReport>,
}

impl CheckOutcome {
    /// The engine's stalls over every engine run of the check, as
    /// [`crate::explain::attribute_stalls`] takes them (the engine pinned on `engine_cpu`).
    pub fn engine_stalls(&self, engine_cpu: Option<u32>) -> Vec<crate::explain::ThreadStalls<'_>> {
        self.engine_zero
            .iter()
            .chain(&self.engine_delayed)
            .map(|r| crate::explain::ThreadStalls {
                cpu: engine_cpu,
                gaps: &r.stalls,
                overflow: r.stall_overflow,
                loop_cost: r.loop_cost,
            })
            .collect()
    }
}

fn merge_into(acc: &mut Option<PingOutcome>, o: PingOutcome) -> io::Result<()> {
    match acc {
        None => *acc = Some(o),
        Some(a) => {
            a.rtt.merge(&o.rtt).map_err(io::Error::other)?;
            a.sent += o.sent;
            a.lost += o.lost;
        }
    }
    Ok(())
}

/// Errors of [`check`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    /// Building the testbed.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// The engine.
    #[error(transparent)]
    Engine(#[from] super::engine::EngineError),
    /// Measuring.
    #[error("measuring round trips: {0}")]
    Io(#[from] io::Error),
    /// netem asked for but missing.
    #[error("--compare-netem: {0}")]
    NetemMissing(String),
    /// The check's own idle hold could not be taken.
    #[error("holding /dev/cpu_dma_latency for the check: {0}")]
    Idle(#[source] io::Error),
}

/// Verifies the injector on this host: round trips over a direct link, through the element
/// at 0 µs and at the configured delay (and at each extra delay; alternating rounds), and
/// optionally through netem. The shift of the median between 0 µs and the delay is the
/// delay as the application sees it; the 0 µs median less the direct one is the element's
/// base latency; with a distribution, the delayed round trips are the 0 µs ones plus its
/// draws ([`super::dist`]).
///
/// # Errors
/// [`CheckError`]; [`CheckError::NetemMissing`] before anything is measured when netem is
/// asked for and missing.
pub fn check(cfg: &CheckConfig, clock: &Clock) -> Result<CheckOutcome, CheckError> {
    use super::DelaySpec;
    if cfg.compare_netem {
        netem_available().map_err(CheckError::NetemMissing)?;
    }
    let _hold = cfg
        .idle_hold_us
        .map(latlab_sys::idle::DmaLatencyHold::for_part)
        .transpose()
        .map_err(CheckError::Idle)?;
    let rounds = cfg.rounds.max(1);
    let per = Nanos(cfg.duration.get() / u64::from(rounds));
    let ping_cfg = PingConfig {
        duration: per,
        warmup: Nanos(100_000_000),
        client_cpu: cfg.endpoint_cpu,
        server_cpu: cfg.endpoint_cpu,
        fifo: cfg.fifo,
        busy_client: cfg.busy_client,
        ..PingConfig::default()
    };
    let mut direct = None;
    {
        let tb = Testbed::build("chk-direct", true)?;
        for _ in 0..rounds {
            merge_into(&mut direct, udp_ping(&tb, &ping_cfg, clock)?)?;
        }
    }
    let mut netem = None;
    if cfg.compare_netem {
        let tb = Testbed::build("chk-netem", true)?;
        let d = format!("{}us", cfg.delay.mean_ns() as f64 / 1000.0);
        netns::run_cmd(
            "ip",
            &[
                "netns", "exec", &tb.client, "tc", "qdisc", "add", "dev", CLIENT_IF, "root",
                "netem", "delay", &d,
            ],
        )?;
        for _ in 0..rounds {
            merge_into(&mut netem, udp_ping(&tb, &ping_cfg, clock)?)?;
        }
    }
    let tb = Testbed::build("chk", false)?;
    let (mut zero, mut delayed) = (None, None);
    let mut also: Vec<Option<PingOutcome>> = vec![None; cfg.also_ns.len()];
    let (mut ez, mut ed) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let specs = [DelaySpec::Constant { ns: 0 }, cfg.delay]
            .into_iter()
            .chain(cfg.also_ns.iter().map(|&ns| DelaySpec::Constant { ns }));
        for (k, spec) in specs.enumerate() {
            let seed = cfg.seed.wrapping_add(u64::from(round));
            let (ping, rep) = through_element(&tb, cfg, spec, seed, &ping_cfg, clock)?;
            match k {
                0 => {
                    merge_into(&mut zero, ping)?;
                    ez.push(rep);
                }
                1 => {
                    merge_into(&mut delayed, ping)?;
                    ed.push(rep);
                }
                _ => {
                    merge_into(&mut also[k - 2], ping)?;
                    ed.push(rep);
                }
            }
        }
    }
    Ok(CheckOutcome {
        direct: direct.expect("at least one round"),
        zero: zero.expect("at least one round"),
        delayed: delayed.expect("at least one round"),
        also: cfg
            .also_ns
            .iter()
            .copied()
            .zip(also.into_iter().map(|o| o.expect("at least one round")))
            .collect(),
        netem,
        engine_zero: ez,
        engine_delayed: ed,
    })
}

/// One measurement through the element: the engine in the delay namespace adding `spec`
/// to client → server frames while [`udp_ping`] measures round trips.
fn through_element(
    tb: &Testbed,
    cfg: &CheckConfig,
    spec: super::DelaySpec,
    seed: u64,
    ping_cfg: &PingConfig,
    clock: &Clock,
) -> Result<(PingOutcome, super::engine::EngineReport), CheckError> {
    use super::engine::{self, Direction, EngineConfig};
    let mut ecfg = EngineConfig::new(DELAY_IF_CLIENT, DELAY_IF_SERVER, spec);
    ecfg.direction = Direction::AToB;
    ecfg.stalls = cfg.stalls;
    ecfg.seed = seed;
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| -> Result<_, CheckError> {
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop, ecfg) = (&stop, &ecfg);
        let h = s.spawn(move || -> Result<_, CheckError> {
            netns::enter(&tb.delay).map_err(io::Error::other)?;
            if let Some(c) = cfg.engine_cpu {
                sched::pin_current_thread(c).map_err(io::Error::other)?;
            }
            if let Some(p) = cfg.fifo {
                sched::set_fifo(p).map_err(io::Error::other)?;
            }
            Ok(engine::run(ecfg, clock, stop, || {
                let _ = tx.send(());
            })?)
        });
        if rx.recv().is_err() {
            return Err(h
                .join()
                .expect("engine thread panicked")
                .err()
                .unwrap_or_else(|| CheckError::Io(io::Error::other("engine ended early"))));
        }
        let ping = udp_ping(tb, ping_cfg, clock);
        stop.store(true, Ordering::Relaxed);
        let rep = h.join().expect("engine thread panicked")?;
        Ok((ping?, rep))
    })
}

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
                &["netns", "exec", n, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"],
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
        ip(&["-n", &client, "neigh", "replace", SERVER_IP, "lladdr", &smac, "dev", CLIENT_IF])?;
        ip(&["-n", &server, "neigh", "replace", CLIENT_IP, "lladdr", &cmac, "dev", SERVER_IF])?;
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
            let sock = UdpSocket::bind(format!("{CLIENT_IP}:0"))?;
            sock.connect(server_addr)?;
            sock.set_read_timeout(Some(cfg.timeout))?;
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

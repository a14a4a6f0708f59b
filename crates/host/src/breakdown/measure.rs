//! Measuring one step: whether it can run here, on which CPUs, and the namespaces the
//! network steps need.

use super::config::{BreakdownConfig, BreakdownError, Step, StepOutcome};
use super::steps;
use latlab_core::hist::LatencyHistogram;
use latlab_sys::netns::Namespaces;
use latlab_sys::tsc::Clock;

/// Why a step cannot run here, or `None` when it can. `cpus` are the CPUs this process
/// may use.
pub fn unavailable(step: Step, cfg: &BreakdownConfig, root: bool, cpus: &[u32]) -> Option<String> {
    if step.needs_root() && !root {
        return Some("needs root to create network namespaces".into());
    }
    if step.needs_two_cpus() {
        let distinct = match (cfg.client_cpu, cfg.server_cpu) {
            (Some(a), Some(b)) => a != b,
            _ => cpus.len() >= 2,
        };
        if !distinct {
            return Some("needs two distinct CPUs (--cpus A,B)".into());
        }
    }
    None
}

/// The (client, server) CPUs used: the configured ones, else the last two allowed CPUs
/// (CPU 0 usually takes more interrupts).
pub fn placement(cfg: &BreakdownConfig, cpus: &[u32]) -> (Option<u32>, Option<u32>) {
    match (cfg.client_cpu, cfg.server_cpu) {
        (Some(a), Some(b)) => (Some(a), Some(b)),
        _ => match cpus {
            [.., a, b] => (Some(*b), Some(*a)),
            [a] => (Some(*a), Some(*a)),
            [] => (None, None),
        },
    }
}

/// Measures one step on this host. Namespaces needed by a step are created and removed
/// here.
///
/// # Errors
/// [`BreakdownError`] naming what failed.
pub fn measure(
    step: Step,
    cfg: &BreakdownConfig,
    clock: &Clock,
    cpus: &[u32],
) -> Result<StepOutcome, BreakdownError> {
    if cfg.duration.get() == 0 {
        return Err(BreakdownError::Config("duration must be positive".into()));
    }
    LatencyHistogram::new(cfg.hist).map_err(|e| BreakdownError::Config(e.to_string()))?;
    let (c, s) = placement(cfg, cpus);
    let p = cfg.payload;
    let io = |what: &str| {
        let what = what.to_string();
        move |e| BreakdownError::Io(what, e)
    };
    let mut o = match step {
        Step::ClockRead => steps::clock_read(cfg, clock, c)?,
        Step::NullSyscall => steps::single(cfg, clock, c, || {
            std::hint::black_box(latlab_sys::ipc::null_syscall());
        })?,
        Step::CachelinePingpong => {
            let (a, b) = steps::LineSide::pair();
            steps::round_trip(cfg, clock, c, s, || Ok(a), || Ok(b))?
        }
        Step::FutexSameCore => {
            let (a, b) = steps::FutexSide::pair();
            steps::round_trip(cfg, clock, c, c, || Ok(a), || Ok(b))?
        }
        Step::FutexOtherCore => {
            let (a, b) = steps::FutexSide::pair();
            steps::round_trip(cfg, clock, c, s, || Ok(a), || Ok(b))?
        }
        Step::Pipe => {
            let (a, b) = steps::pipe_pair(p).map_err(io("creating pipes"))?;
            steps::round_trip(cfg, clock, c, s, || Ok(a), || Ok(b))?
        }
        Step::Eventfd => {
            let (a, b) = steps::eventfd_pair().map_err(io("creating eventfds"))?;
            steps::round_trip(cfg, clock, c, s, || Ok(a), || Ok(b))?
        }
        Step::UnixSocket => {
            let (a, b) = steps::unix_pair(p).map_err(io("creating a UNIX socket pair"))?;
            steps::round_trip(cfg, clock, c, s, || Ok(a), || Ok(b))?
        }
        Step::UdpLoopback | Step::UdpLoopbackBusy => {
            let busy = step == Step::UdpLoopbackBusy;
            let (a, b) = steps::udp_loopback_pair(p, busy).map_err(io("creating UDP sockets"))?;
            steps::round_trip(cfg, clock, c, s, || Ok(a), || Ok(b))?
        }
        Step::TcpLoopback | Step::TcpLoopbackBusy => {
            let busy = step == Step::TcpLoopbackBusy;
            let (a, b) = steps::tcp_loopback_pair(p, busy).map_err(io("connecting over TCP"))?;
            steps::round_trip(cfg, clock, c, s, || Ok(a), || Ok(b))?
        }
        Step::VethNetns => veth_round_trip(cfg, clock, c, s)?,
        Step::LatlabNf => nf_round_trip(cfg, clock, c, s)?,
    };
    o.step = step;
    Ok(o)
}

/// A veth pair between two private namespaces, as a step uses it.
struct VethLink {
    /// Tags of the two namespaces' names (made unique per run).
    tags: [&'static str; 2],
    /// Interface names of the two ends.
    ifs: [&'static str; 2],
    /// Address of the client (first) end; a /30 unlikely to clash.
    client: &'static str,
    /// Address of the server (second) end.
    server: &'static str,
    /// UDP port used at both ends.
    port: u16,
}

/// The link of the veth step.
const VETH: VethLink = VethLink {
    tags: ["bd-a", "bd-b"],
    ifs: ["latlab-bd0", "latlab-bd1"],
    client: "10.199.77.1",
    server: "10.199.77.2",
    port: 7_777,
};

/// The link of the NF step (another private /30).
const NF: VethLink = VethLink {
    tags: ["bd-nfa", "bd-nfb"],
    ifs: ["latlab-bn0", "latlab-bn1"],
    client: "10.199.78.1",
    server: "10.199.78.2",
    port: 7_778,
};

/// A built [`VethLink`]: the namespaces (removed on drop), their names, and the two ends'
/// socket addresses.
struct BuiltLink {
    ns: Namespaces,
    client_ns: String,
    server_ns: String,
    client: std::net::SocketAddr,
    server: std::net::SocketAddr,
}

impl VethLink {
    /// Creates both namespaces, the veth pair and the /30 addresses.
    fn build(&self) -> Result<BuiltLink, BreakdownError> {
        let a = latlab_sys::netns::unique_name(self.tags[0]);
        let b = latlab_sys::netns::unique_name(self.tags[1]);
        let ns = Namespaces::create(&[a.clone(), b.clone()])?;
        ns.veth(&a, self.ifs[0], &b, self.ifs[1])?;
        ns.addr(&a, self.ifs[0], &format!("{}/30", self.client))?;
        ns.addr(&b, self.ifs[1], &format!("{}/30", self.server))?;
        let at = |ip: &str| -> std::net::SocketAddr {
            format!("{ip}:{}", self.port)
                .parse()
                .expect("valid literal address")
        };
        Ok(BuiltLink {
            ns,
            client_ns: a,
            server_ns: b,
            client: at(self.client),
            server: at(self.server),
        })
    }
}

fn veth_round_trip(
    cfg: &BreakdownConfig,
    clock: &Clock,
    c: Option<u32>,
    s: Option<u32>,
) -> Result<StepOutcome, BreakdownError> {
    let link = VETH.build()?;
    let p = cfg.payload;
    let (server_addr, client_addr) = (link.server, link.client);
    let (na, nb) = (link.client_ns.clone(), link.server_ns.clone());
    let out = steps::round_trip(
        cfg,
        clock,
        c,
        s,
        move || {
            latlab_sys::netns::enter(&na).map_err(std::io::Error::other)?;
            let x = steps::UdpSide::bind(&client_addr.to_string(), p, false)?;
            x.connect(server_addr)?;
            Ok(x)
        },
        move || {
            latlab_sys::netns::enter(&nb).map_err(std::io::Error::other)?;
            let x = steps::UdpSide::bind(&server_addr.to_string(), p, false)?;
            x.connect(client_addr)?;
            Ok(x)
        },
    );
    drop(link.ns);
    out
}

/// A UDP round trip from a client namespace to latlab's reflector (`latlab_net::nf`, the
/// NF behind `latlab net reflect`) in a second namespace, across a veth pair: the
/// `veth_netns` round trip with latlab's user-space NF in place of a plain echo server.
/// The reflector runs blocking, pinned to the server CPU, on its own thread; the client
/// sends a valid probe (the NF drops anything else) and waits for it to come back.
fn nf_round_trip(
    cfg: &BreakdownConfig,
    clock: &Clock,
    c: Option<u32>,
    s: Option<u32>,
) -> Result<StepOutcome, BreakdownError> {
    use latlab_net::nf;
    let link = NF.build()?;
    let server_addr = link.server;
    let client_addr = link.client.to_string();
    let nf_cfg = nf::NfConfig {
        cpus: s.into_iter().collect(),
        ..nf::NfConfig::reflect(server_addr)
    };
    // The reflector's socket is bound, and its thread spawned, from a thread inside the
    // server namespace; the NF thread inherits that namespace.
    let nclock = *clock;
    let nb = link.server_ns.clone();
    let handle = std::thread::spawn(move || -> Result<nf::NfHandle, BreakdownError> {
        latlab_sys::netns::enter(&nb)?;
        nf::start(&nf_cfg, nclock).map_err(|e| {
            BreakdownError::Io(
                "starting latlab's reflector".into(),
                std::io::Error::other(e.to_string()),
            )
        })
    })
    .join()
    .expect("NF start thread panicked")?;
    let payload = cfg.payload.max(latlab_net::wire::HEADER_LEN);
    let na = link.client_ns.clone();
    let out = steps::client_only(cfg, clock, c, s, move || {
        latlab_sys::netns::enter(&na).map_err(std::io::Error::other)?;
        let x = steps::UdpSide::bind(&client_addr, payload, false)?.with_message(|buf| {
            latlab_net::wire::ProbeRepr::default().emit(buf);
        });
        x.connect(server_addr)?;
        Ok(x)
    });
    let counters = handle.counters.clone();
    drop(handle.stop());
    drop(link.ns);
    let malformed = counters.malformed_total();
    if out.is_ok() && malformed > 0 {
        return Err(BreakdownError::Config(format!(
            "latlab's reflector dropped {malformed} datagrams as malformed"
        )));
    }
    out
}

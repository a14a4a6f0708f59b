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

/// Two fresh namespaces (names from `tags`) joined by a veth pair (`ifs`), the first end
/// at `client_ip`, the second at `server_ip`, both /30. Returns the namespaces (removed on
/// drop) and their names.
fn veth_namespaces(
    tags: [&str; 2],
    ifs: [&str; 2],
    client_ip: &str,
    server_ip: &str,
) -> Result<(Namespaces, String, String), BreakdownError> {
    let a = latlab_sys::netns::unique_name(tags[0]);
    let b = latlab_sys::netns::unique_name(tags[1]);
    let ns = Namespaces::create(&[a.clone(), b.clone()])?;
    ns.veth(&a, ifs[0], &b, ifs[1])?;
    ns.addr(&a, ifs[0], &format!("{client_ip}/30"))?;
    ns.addr(&b, ifs[1], &format!("{server_ip}/30"))?;
    Ok((ns, a, b))
}

/// Addresses of the veth step (a /30 unlikely to clash; the namespaces are private).
const VETH_CLIENT: &str = "10.199.77.1";
const VETH_SERVER: &str = "10.199.77.2";
const VETH_PORT: u16 = 7_777;

fn veth_round_trip(
    cfg: &BreakdownConfig,
    clock: &Clock,
    c: Option<u32>,
    s: Option<u32>,
) -> Result<StepOutcome, BreakdownError> {
    let (ns, a, b) = veth_namespaces(
        ["bd-a", "bd-b"],
        ["latlab-bd0", "latlab-bd1"],
        VETH_CLIENT,
        VETH_SERVER,
    )?;
    let p = cfg.payload;
    let server_addr: std::net::SocketAddr = format!("{VETH_SERVER}:{VETH_PORT}")
        .parse()
        .expect("valid literal address");
    let client_addr: std::net::SocketAddr = format!("{VETH_CLIENT}:{VETH_PORT}")
        .parse()
        .expect("valid literal address");
    let (na, nb) = (a.clone(), b.clone());
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
    drop(ns);
    out
}

/// Addresses of the NF step (another private /30).
const NF_CLIENT: &str = "10.199.78.1";
const NF_SERVER: &str = "10.199.78.2";
const NF_PORT: u16 = 7_778;

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
    let (ns, a, b) = veth_namespaces(
        ["bd-nfa", "bd-nfb"],
        ["latlab-bn0", "latlab-bn1"],
        NF_CLIENT,
        NF_SERVER,
    )?;
    let server_addr: std::net::SocketAddr = format!("{NF_SERVER}:{NF_PORT}")
        .parse()
        .expect("valid literal address");
    let client_addr = format!("{NF_CLIENT}:{NF_PORT}");
    let nf_cfg = nf::NfConfig {
        cpus: s.into_iter().collect(),
        ..nf::NfConfig::reflect(server_addr)
    };
    // The reflector's socket is bound, and its thread spawned, from a thread inside the
    // server namespace; the NF thread inherits that namespace.
    let nclock = *clock;
    let nb = b.clone();
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
    let na = a.clone();
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
    drop(ns);
    let malformed = counters.malformed_total();
    if out.is_ok() && malformed > 0 {
        return Err(BreakdownError::Config(format!(
            "latlab's reflector dropped {malformed} datagrams as malformed"
        )));
    }
    out
}

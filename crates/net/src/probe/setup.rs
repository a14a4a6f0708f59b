//! What a run sets up before it sends: the egress interfaces and their hardware
//! timestamping, and the sockets.

use super::config::{sock_err, Mode, ProbeConfig, ProbeError, Sources};
use crate::iface::{egress_interface, interface_facts, InterfaceFacts};
use crate::nf::IoMode;
use latlab_sys::net::{self as sysnet, sof};
use std::net::UdpSocket;
use std::time::Duration;

/// Checks and enables hardware timestamping on `name`.
fn enable_hardware(name: &str) -> Result<(), ProbeError> {
    let info = sysnet::ts_info(name).unwrap_or_default();
    let facts = interface_facts(name);
    let caps = if facts.timestamping.is_empty() {
        "none".to_string()
    } else {
        facts.timestamping.join(", ")
    };
    let err = |reason: String| ProbeError::NoHardwareTimestamps {
        interface: name.to_string(),
        driver: facts.driver.clone(),
        reason,
        capabilities: caps.clone(),
    };
    if !info.hardware_capable() {
        return Err(err(
            "the driver offers no hardware transmit/receive timestamping".into(),
        ));
    }
    sysnet::enable_hw_timestamping(name).map_err(|e| err(format!("SIOCSHWTSTAMP failed: {e}")))?;
    Ok(())
}

/// The interfaces that carry probes and what they allowed.
pub(super) struct Interfaces {
    /// The sources that can actually run (hardware dropped where it is optional and
    /// unavailable).
    pub(super) sources: Sources,
    /// Why a source was dropped.
    pub(super) warnings: Vec<String>,
    /// Facts of each egress interface.
    pub(super) interfaces: Vec<InterfaceFacts>,
}

/// Finds the egress interface of the target, records its facts and enables hardware
/// timestamping on it when asked; an unavailable hardware source is an error unless
/// [`ProbeConfig::hardware_optional`].
pub(super) fn interfaces(cfg: &ProbeConfig) -> Result<Interfaces, ProbeError> {
    let mut sources = cfg.sources;
    let mut warnings = Vec::new();
    let mut interfaces = Vec::new();
    if (cfg.rx_io == IoMode::Xdp || cfg.tx_io == IoMode::Xdp)
        && (sources.kernel || sources.hardware)
    {
        sources.kernel = false;
        sources.hardware = false;
        warnings.push(
            "--io xdp: kernel and hardware timestamps do not exist on an AF_XDP path; \
             user (TSC) timestamps only"
                .into(),
        );
    }
    // a TX socket bound to an interface leaves by it, whatever the route to the target
    let ifaces: Vec<String> = match &cfg.tx_device {
        Some(d) => vec![d.clone()],
        None => [Some(cfg.target)]
            .into_iter()
            .flatten()
            .filter_map(|a| egress_interface(&a))
            .collect(),
    };
    for i in &ifaces {
        interfaces.push(interface_facts(i));
    }
    if sources.hardware {
        let mut ok = !ifaces.is_empty();
        for (i, f) in ifaces.iter().zip(interfaces.iter_mut()) {
            match enable_hardware(i) {
                Ok(()) => f.hardware_enabled = true,
                Err(e) => {
                    if !cfg.hardware_optional {
                        return Err(e);
                    }
                    warnings.push(format!("{e}; continuing with the other sources"));
                    ok = false;
                }
            }
        }
        if ifaces.is_empty() {
            let e = ProbeError::NoHardwareTimestamps {
                interface: "(unknown)".into(),
                driver: "unknown".into(),
                reason: format!("no route to {} was found", cfg.target),
                capabilities: "unknown".into(),
            };
            if !cfg.hardware_optional {
                return Err(e);
            }
            warnings.push(format!("{e}; continuing with the other sources"));
        }
        sources.hardware = ok;
    }
    Ok(Interfaces {
        sources,
        warnings,
        interfaces,
    })
}

/// The TX socket (bound, connected to the target) and the RX socket (its own, or a clone
/// of the TX socket when answers come back to the sender), with buffers, timestamping
/// and the receive mode of `cfg` (whose sources are the resolved ones).
pub(super) fn sockets(
    cfg: &ProbeConfig,
    kernel_any: bool,
) -> Result<(UdpSocket, UdpSocket), ProbeError> {
    let sources = cfg.sources;
    let tx = UdpSocket::bind(cfg.tx_bind).map_err(sock_err(format!("binding {}", cfg.tx_bind)))?;
    if let Some(dev) = &cfg.tx_device {
        // before connect: the route the socket caches is then the one out of `dev`
        sysnet::bind_to_device(&tx, dev).map_err(sock_err(format!(
            "binding the TX socket to interface {dev}"
        )))?;
    }
    tx.connect(cfg.target)
        .map_err(sock_err(format!("connecting to {}", cfg.target)))?;
    let rx = match cfg.rx_bind {
        Some(a) => UdpSocket::bind(a).map_err(sock_err(format!("binding the RX socket to {a}")))?,
        None => tx.try_clone().map_err(sock_err("duplicating the socket"))?,
    };
    // room for a 50 ms stall of the RX thread at 100 kpps (see the NF's buffer)
    let _ = sysnet::set_recv_buffer(&rx, 16 << 20);
    // TX timestamps queue on the TX socket's error queue, charged to its receive buffer:
    // too small a buffer drops timestamps whenever the TX thread is held up
    let _ = sysnet::set_recv_buffer(&tx, 8 << 20);
    let _ = sysnet::set_send_buffer(&tx, 4 << 20);
    let mut tx_flags = 0;
    let mut rx_flags = 0;
    if sources.kernel {
        tx_flags |= sof::TX_SOFTWARE | sof::TX_SCHED | sof::SOFTWARE;
        rx_flags |= sof::RX_SOFTWARE | sof::SOFTWARE;
    }
    if sources.hardware {
        tx_flags |= sof::TX_HARDWARE | sof::RAW_HARDWARE;
        rx_flags |= sof::RX_HARDWARE | sof::RAW_HARDWARE;
    }
    if kernel_any {
        tx_flags |= sof::OPT_ID | sof::OPT_TSONLY;
        if cfg.rx_bind.is_none() {
            sysnet::set_timestamping(&tx, tx_flags | rx_flags)
                .map_err(sock_err("enabling SO_TIMESTAMPING"))?;
        } else {
            sysnet::set_timestamping(&tx, tx_flags)
                .map_err(sock_err("enabling SO_TIMESTAMPING on the TX socket"))?;
            sysnet::set_timestamping(&rx, rx_flags)
                .map_err(sock_err("enabling SO_TIMESTAMPING on the RX socket"))?;
        }
    }
    match cfg.rx_io {
        // The closed loop blocks without a timeout: a timed wait arms and cancels a kernel
        // timer on every receive, inside the round trip it measures; a watchdog wakes it
        // when an answer is overdue (see `run`).
        IoMode::Blocking if cfg.mode == Mode::Pingpong => rx
            .set_read_timeout(None)
            .map_err(sock_err("setting the receive timeout"))?,
        IoMode::Blocking => rx
            .set_read_timeout(Some(Duration::from_millis(20)))
            .map_err(sock_err("setting the receive timeout"))?,
        // with --io xdp the socket only holds the port: frames go to the AF_XDP socket
        IoMode::Busy | IoMode::Xdp => {
            rx.set_nonblocking(true)
                .map_err(sock_err("making the RX socket non-blocking"))?;
            let _ = sysnet::set_busy_poll(&rx, 50);
        }
    }
    Ok((tx, rx))
}

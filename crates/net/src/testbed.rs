//! `latlab net testbed`: the paper's Fig. 1 on one host, from network namespaces and veth
//! pairs, driven with `ip` (iproute2).
//!
//! ```text
//!  namespace latlab-gen                         namespace latlab-nf
//!  ┌──────────────────────┐  veth   ┌───────────────────────────────┐
//!  │ latlab-ga 10.201.1.1 ├─────────┤ latlab-na 10.201.1.2 :7000 (A) │
//!  │                      │         │      latlab net forward        │
//!  │ latlab-gb 10.201.2.1 ├─────────┤ latlab-nb 10.201.2.2 :7000 (B) │
//!  └──────────────────────┘  veth   └───────────────────────────────┘
//! ```
//! The generator sends out of port A to the forwarder's port A, which sends out of its
//! port B to the generator's port B (UDP 7001): one-way latency on a single clock.
//! Neighbour entries are static, so no ARP resolution ever delays a probe. Everything is
//! named `latlab-*`, lives only inside the two namespaces, `up` is idempotent and `down`
//! removes all of it.

use latlab_sys::netns::TopologyError;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// The generator's namespace.
pub const GEN_NS: &str = "latlab-gen";
/// The network function's namespace.
pub const NF_NS: &str = "latlab-nf";

/// One veth end: (namespace, name, address/prefix).
const ENDS: [(&str, &str, &str); 4] = [
    (GEN_NS, "latlab-ga", "10.201.1.1/24"),
    (NF_NS, "latlab-na", "10.201.1.2/24"),
    (NF_NS, "latlab-nb", "10.201.2.2/24"),
    (GEN_NS, "latlab-gb", "10.201.2.1/24"),
];

/// UDP port of the forwarder on both of its ports.
pub const NF_PORT: u16 = 7000;
/// UDP port of the generator's receiver.
pub const GEN_PORT: u16 = 7001;

/// The addresses of the testbed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Addresses {
    /// Generator port A (TX).
    pub gen_a: SocketAddr,
    /// Generator port B (RX).
    pub gen_b: SocketAddr,
    /// Forwarder port A.
    pub nf_a: SocketAddr,
    /// Forwarder port B.
    pub nf_b: SocketAddr,
}

/// The testbed's addresses.
pub fn addresses() -> Addresses {
    let a = |s: &str| s.parse().expect("literal address");
    Addresses {
        gen_a: a("10.201.1.1:0"),
        gen_b: a("10.201.2.1:7001"),
        nf_a: a("10.201.1.2:7000"),
        nf_b: a("10.201.2.2:7000"),
    }
}

/// The forwarder's role on the testbed: port A to the generator's port B, port B back to
/// the generator's port A (its receiver port).
pub fn forward_role(directions: crate::nf::Directions) -> crate::nf::Role {
    let t = addresses();
    crate::nf::Role::Forward {
        a: t.nf_a,
        a_to: t.gen_b,
        b: t.nf_b,
        b_to: SocketAddr::new(t.gen_a.ip(), GEN_PORT),
        directions,
    }
}

/// A default probe through the testbed: sent from the generator's port A to the
/// forwarder's port A, received on the generator's port B.
pub fn probe_config() -> crate::probe::ProbeConfig {
    let t = addresses();
    let mut c = crate::probe::ProbeConfig::new(t.nf_a);
    c.tx_bind = t.gen_a;
    c.rx_bind = Some(t.gen_b);
    c
}

/// Errors of the testbed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TestbedError {
    /// Not root.
    #[error("the testbed needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN to create network namespaces and veth pairs); run it with sudo")]
    NotRoot,
    /// `ip` is missing.
    #[error("the `ip` command (iproute2) was not found: install iproute2")]
    NoIp,
    /// A command failed.
    #[error("`{command}` failed: {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// What it printed.
        stderr: String,
    },
}

/// Whether this process runs as root (effective uid 0).
pub use latlab_sys::netns::is_root;

/// Runs `ip args…` (the runner in [`latlab_sys::netns`]), with its failures as testbed
/// errors: `ip` missing is [`TestbedError::NoIp`].
fn ip(args: &[&str]) -> Result<String, TestbedError> {
    latlab_sys::netns::ip(args).map_err(|e| match e {
        TopologyError::Spawn { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            TestbedError::NoIp
        }
        TopologyError::Spawn { cmd, source } => TestbedError::Command {
            command: cmd,
            stderr: source.to_string(),
        },
        TopologyError::Failed { cmd, stderr } => TestbedError::Command {
            command: cmd,
            stderr,
        },
        other => TestbedError::Command {
            command: format!("ip {}", args.join(" ")),
            stderr: other.to_string(),
        },
    })
}

fn in_ns(ns: &str, args: &[&str]) -> Result<String, TestbedError> {
    let mut v = vec!["-n", ns];
    v.extend_from_slice(args);
    ip(&v)
}

/// The state of the testbed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// The testbed's namespaces that exist.
    pub namespaces: Vec<String>,
    /// Interfaces that are up with their address: `ns/name addr`.
    pub interfaces: Vec<String>,
    /// Whether every piece is in place.
    pub complete: bool,
    /// What is missing.
    pub missing: Vec<String>,
}

/// Names of existing namespaces (`ip netns list`).
pub fn namespaces() -> Result<Vec<String>, TestbedError> {
    Ok(ip(&["netns", "list"])?
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect())
}

/// Inspects the testbed (needs no root to read namespaces, but interface details
/// inside namespaces do).
pub fn status() -> Result<Status, TestbedError> {
    let all = namespaces()?;
    let mut st = Status {
        namespaces: all
            .iter()
            .filter(|n| *n == GEN_NS || *n == NF_NS)
            .cloned()
            .collect(),
        ..Status::default()
    };
    for (ns, name, addr) in ENDS {
        if !all.iter().any(|n| n == ns) {
            st.missing.push(format!("namespace {ns}"));
            continue;
        }
        match in_ns(ns, &["-o", "addr", "show", "dev", name]) {
            Ok(out) if out.contains(addr.split('/').next().unwrap_or(addr)) => {
                let up = in_ns(ns, &["-o", "link", "show", "dev", name])
                    .map(|l| l.contains("state UP") || l.contains(",UP"))
                    .unwrap_or(false);
                if up {
                    st.interfaces.push(format!("{ns}/{name} {addr}"));
                } else {
                    st.missing.push(format!("{ns}/{name} is down"));
                }
            }
            _ => st.missing.push(format!("{ns}/{name} {addr}")),
        }
    }
    st.missing.sort();
    st.missing.dedup();
    st.complete = st.missing.is_empty();
    Ok(st)
}

/// Builds the testbed; does nothing when it is complete, rebuilds it when partial.
/// Returns whether anything was created.
pub fn up() -> Result<bool, TestbedError> {
    if !is_root() {
        return Err(TestbedError::NotRoot);
    }
    if status()?.complete {
        return Ok(false);
    }
    down()?;
    for ns in [GEN_NS, NF_NS] {
        ip(&["netns", "add", ns])?;
        in_ns(ns, &["link", "set", "lo", "up"])?;
        // no IPv6: no router solicitations or DAD traffic beside the probes
        let _ = ip(&[
            "netns",
            "exec",
            ns,
            "sh",
            "-c",
            "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6; echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6",
        ]);
    }
    // pairs: ga<->na and nb<->gb, created in the generator's namespace and one end moved
    for (a, b) in [(0usize, 1usize), (3, 2)] {
        let (ns_a, name_a, _) = ENDS[a];
        let (ns_b, name_b, _) = ENDS[b];
        in_ns(
            ns_a,
            &[
                "link", "add", name_a, "type", "veth", "peer", "name", name_b,
            ],
        )?;
        in_ns(ns_a, &["link", "set", name_b, "netns", ns_b])?;
    }
    for (ns, name, addr) in ENDS {
        in_ns(ns, &["addr", "add", addr, "dev", name])?;
        in_ns(ns, &["link", "set", name, "up"])?;
    }
    // static neighbours: no ARP on the path of a probe
    for (a, b) in [(0usize, 1usize), (1, 0), (2, 3), (3, 2)] {
        let (ns_a, name_a, _) = ENDS[a];
        let (ns_b, name_b, addr_b) = ENDS[b];
        let mac = mac_of(ns_b, name_b)?;
        let ip_b = addr_b.split('/').next().unwrap_or(addr_b);
        in_ns(
            ns_a,
            &[
                "neigh",
                "replace",
                ip_b,
                "lladdr",
                &mac,
                "dev",
                name_a,
                "nud",
                "permanent",
            ],
        )?;
    }
    Ok(true)
}

/// The MAC address of interface `dev` in namespace `ns`.
///
/// # Errors
/// The failing `ip` command, or no address in its answer.
pub fn mac(ns: &str, dev: &str) -> Result<String, TestbedError> {
    mac_of(ns, dev)
}

fn mac_of(ns: &str, dev: &str) -> Result<String, TestbedError> {
    let out = in_ns(ns, &["-o", "link", "show", "dev", dev])?;
    let mut it = out.split_whitespace();
    while let Some(w) = it.next() {
        if w == "link/ether" {
            if let Some(m) = it.next() {
                return Ok(m.to_string());
            }
        }
    }
    Err(TestbedError::Command {
        command: format!("ip -n {ns} link show dev {dev}"),
        stderr: "no MAC address found".into(),
    })
}

/// Removes everything the testbed made (both namespaces, which takes their veths with
/// them). Returns whether anything was removed.
pub fn down() -> Result<bool, TestbedError> {
    if !is_root() {
        return Err(TestbedError::NotRoot);
    }
    let mut removed = false;
    for ns in namespaces()? {
        if ns == GEN_NS || ns == NF_NS {
            ip(&["netns", "del", &ns])?;
            removed = true;
        }
    }
    Ok(removed)
}

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
//!
//! With `--generators N` (for `latlab net probe --agents`), generator `j ≥ 1` has a
//! namespace of its own, `latlab-gen{j}`, joined to the same NF namespace by its own two
//! veth pairs `latlab-ga{j}`/`latlab-na{j}` (10.201.{2j+1}.0/24) and
//! `latlab-gb{j}`/`latlab-nb{j}` (10.201.{2j+2}.0/24); generator 0 is the layout above,
//! unchanged. One forwarder per generator serves it (`latlab net forward --testbed
//! --generator j`).

use latlab_sys::netns::TopologyError;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// The generator's namespace.
pub const GEN_NS: &str = "latlab-gen";
/// The network function's namespace.
pub const NF_NS: &str = "latlab-nf";

/// The most generators `up` builds.
pub const MAX_GENERATORS: usize = 64;

/// The namespace of generator `j` (`latlab-gen`, then `latlab-gen1`, …).
pub fn gen_ns(j: usize) -> String {
    if j == 0 {
        GEN_NS.to_string()
    } else {
        format!("{GEN_NS}{j}")
    }
}

/// Whether `name` is the namespace of a generator.
fn is_gen_ns(name: &str) -> bool {
    name.strip_prefix(GEN_NS).is_some_and(|r| {
        r.is_empty() || (r.bytes().all(|b| b.is_ascii_digit()) && !r.starts_with('0'))
    })
}

/// The veth ends of generator `j`: (namespace, name, address/prefix), in the order
/// ga, na, nb, gb.
fn ends(j: usize) -> [(String, String, String); 4] {
    let sfx = if j == 0 { String::new() } else { j.to_string() };
    let (a, b) = (2 * j + 1, 2 * j + 2);
    let g = gen_ns(j);
    [
        (
            g.clone(),
            format!("latlab-ga{sfx}"),
            format!("10.201.{a}.1/24"),
        ),
        (
            NF_NS.into(),
            format!("latlab-na{sfx}"),
            format!("10.201.{a}.2/24"),
        ),
        (
            NF_NS.into(),
            format!("latlab-nb{sfx}"),
            format!("10.201.{b}.2/24"),
        ),
        (g, format!("latlab-gb{sfx}"), format!("10.201.{b}.1/24")),
    ]
}

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

/// The testbed's addresses (generator 0).
pub fn addresses() -> Addresses {
    addresses_of(0)
}

/// The addresses of generator `j` and its forwarder ports.
pub fn addresses_of(j: usize) -> Addresses {
    let (a, b) = (2 * j + 1, 2 * j + 2);
    let at = |s: String| s.parse().expect("well-formed address");
    Addresses {
        gen_a: at(format!("10.201.{a}.1:0")),
        gen_b: at(format!("10.201.{b}.1:{GEN_PORT}")),
        nf_a: at(format!("10.201.{a}.2:{NF_PORT}")),
        nf_b: at(format!("10.201.{b}.2:{NF_PORT}")),
    }
}

/// The forwarder's role on the testbed: port A to the generator's port B, port B back to
/// the generator's port A (its receiver port).
pub fn forward_role(directions: crate::nf::Directions) -> crate::nf::Role {
    forward_role_of(0, directions)
}

/// The role of generator `j`'s forwarder.
pub fn forward_role_of(j: usize, directions: crate::nf::Directions) -> crate::nf::Role {
    let t = addresses_of(j);
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
    probe_config_of(0)
}

/// A default probe from generator `j` through its forwarder.
pub fn probe_config_of(j: usize) -> crate::probe::ProbeConfig {
    let t = addresses_of(j);
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
    /// A generator count out of range.
    #[error("--generators {0}: give 1 to 64")]
    Generators(usize),
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
    /// Generator namespaces found (`latlab-gen`, `latlab-gen1`, …, counted while they
    /// follow each other).
    #[serde(default)]
    pub generators: usize,
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
    let generators = (0..MAX_GENERATORS)
        .take_while(|j| all.contains(&gen_ns(*j)))
        .count();
    let mut st = Status {
        namespaces: all
            .iter()
            .filter(|n| is_gen_ns(n) || *n == NF_NS)
            .cloned()
            .collect(),
        generators,
        ..Status::default()
    };
    for (ns, name, addr) in (0..generators.max(1)).flat_map(ends) {
        let (ns, name, addr) = (ns.as_str(), name.as_str(), addr.as_str());
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

/// Builds the testbed with one generator; does nothing when it is complete, rebuilds it
/// when partial. Returns whether anything was created.
pub fn up() -> Result<bool, TestbedError> {
    up_with(1)
}

/// Builds the testbed with `generators` generator namespaces (1 to
/// [`MAX_GENERATORS`]); does nothing when exactly that testbed is complete, rebuilds it
/// otherwise. Returns whether anything was created.
pub fn up_with(generators: usize) -> Result<bool, TestbedError> {
    if !is_root() {
        return Err(TestbedError::NotRoot);
    }
    if generators == 0 || generators > MAX_GENERATORS {
        return Err(TestbedError::Generators(generators));
    }
    let st = status()?;
    if st.complete && st.generators == generators {
        return Ok(false);
    }
    down()?;
    let names: Vec<String> = (0..generators)
        .map(gen_ns)
        .chain([NF_NS.to_string()])
        .collect();
    for ns in &names {
        let ns = ns.as_str();
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
    for j in 0..generators {
        link_generator(&ends(j))?;
    }
    Ok(true)
}

/// Creates, addresses and raises one generator's two veth pairs and their static
/// neighbours.
fn link_generator(ends: &[(String, String, String); 4]) -> Result<(), TestbedError> {
    // pairs: ga<->na and nb<->gb, created in the generator's namespace and one end moved
    for (a, b) in [(0usize, 1usize), (3, 2)] {
        let ((ns_a, name_a, _), (ns_b, name_b, _)) = (end(ends, a), end(ends, b));
        in_ns(
            ns_a,
            &[
                "link", "add", name_a, "type", "veth", "peer", "name", name_b,
            ],
        )?;
        in_ns(ns_a, &["link", "set", name_b, "netns", ns_b])?;
    }
    for i in 0..ends.len() {
        let (ns, name, addr) = end(ends, i);
        in_ns(ns, &["addr", "add", addr, "dev", name])?;
        in_ns(ns, &["link", "set", name, "up"])?;
    }
    // static neighbours: no ARP on the path of a probe
    for (a, b) in [(0usize, 1usize), (1, 0), (2, 3), (3, 2)] {
        let ((ns_a, name_a, _), (ns_b, name_b, addr_b)) = (end(ends, a), end(ends, b));
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
    Ok(())
}

/// End `i` of `ends` as string slices.
fn end(ends: &[(String, String, String); 4], i: usize) -> (&str, &str, &str) {
    let (ns, name, addr) = &ends[i];
    (ns, name, addr)
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

/// Removes everything the testbed made (the NF's and every generator's namespace, which
/// takes their veths with them). Returns whether anything was removed.
pub fn down() -> Result<bool, TestbedError> {
    if !is_root() {
        return Err(TestbedError::NotRoot);
    }
    let mut removed = false;
    for ns in namespaces()? {
        if is_gen_ns(&ns) || ns == NF_NS {
            ip(&["netns", "del", &ns])?;
            removed = true;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_zero_keeps_the_one_generator_layout() {
        let e = ends(0);
        assert_eq!(
            e[0],
            (GEN_NS.into(), "latlab-ga".into(), "10.201.1.1/24".into())
        );
        assert_eq!(
            e[2],
            (NF_NS.into(), "latlab-nb".into(), "10.201.2.2/24".into())
        );
        assert_eq!(addresses().nf_a, "10.201.1.2:7000".parse().unwrap());
        assert_eq!(addresses().gen_b, "10.201.2.1:7001".parse().unwrap());
    }

    #[test]
    fn generators_get_distinct_names_and_subnets() {
        let all: Vec<_> = (0..MAX_GENERATORS).flat_map(ends).collect();
        for (i, (_, name, addr)) in all.iter().enumerate() {
            assert!(name.len() <= 15, "{name} is too long for an interface name");
            assert!(all[i + 1..].iter().all(|(_, n, a)| n != name && a != addr));
        }
        assert_eq!(gen_ns(2), "latlab-gen2");
        assert_eq!(addresses_of(1).nf_a, "10.201.3.2:7000".parse().unwrap());
        assert!(is_gen_ns("latlab-gen") && is_gen_ns("latlab-gen12"));
        assert!(!is_gen_ns("latlab-gens") && !is_gen_ns("latlab-nf") && !is_gen_ns("latlab-gen01"));
    }
}

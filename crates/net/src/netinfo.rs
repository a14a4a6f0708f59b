//! Network provenance of a run: busy-poll sysctls, IRQ affinity of network interrupts,
//! and the interfaces of the current namespace with their drivers and timestamping
//! capabilities. Parsing is in pure functions over `/proc` text.

use crate::iface::{interface_facts, InterfaceFacts};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Network facts recorded in every `net.*` result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkFacts {
    /// `net.core.busy_read` (µs), if readable.
    pub busy_read_us: Option<u64>,
    /// `net.core.busy_poll` (µs), if readable.
    pub busy_poll_us: Option<u64>,
    /// `/proc/irq/default_smp_affinity`.
    pub default_irq_affinity: Option<String>,
    /// Interrupts whose name mentions a network device, with their CPU affinity list.
    pub net_irqs: BTreeMap<String, String>,
    /// Interfaces of this namespace.
    pub interfaces: Vec<InterfaceFacts>,
    /// `kernel.sched_rt_runtime_us`: how long per `sched_rt_period_us` real-time threads
    /// may run (-1: unthrottled). A spinning SCHED_FIFO thread is stopped for the rest.
    #[serde(default)]
    pub rt_runtime_us: Option<i64>,
}

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// `(irq number, name)` of interrupts in `/proc/interrupts` text whose name looks like a
/// network device (`eth`, `ens`, `enp`, `mlx`, `virtio…input/output`, `-rx`, `-tx`). Pure.
pub fn parse_net_irqs(interrupts: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for line in interrupts.lines().skip(1) {
        let mut parts = line.split_whitespace();
        let Some(first) = parts.next() else { continue };
        let Ok(n) = first.trim_end_matches(':').parse::<u32>() else {
            continue;
        };
        let name = line.split_whitespace().last().unwrap_or("").to_string();
        let l = name.to_ascii_lowercase();
        let netlike = [
            "eth", "ens", "enp", "eno", "mlx", "ice", "i40e", "ixgbe", "-rx", "-tx",
        ]
        .iter()
        .any(|k| l.contains(k))
            || (l.starts_with("virtio") && (l.contains("input") || l.contains("output")));
        if netlike {
            out.push((n, name));
        }
    }
    out
}

/// Sum of the `dropped` column (the second, hex) of `/proc/net/softnet_stat` text: packets
/// the kernel dropped because a CPU's input backlog was full. Pure.
pub fn parse_softnet_dropped(text: &str) -> u64 {
    text.lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter_map(|h| u64::from_str_radix(h, 16).ok())
        .sum()
}

/// Backlog drops so far on this host (see [`parse_softnet_dropped`]).
pub fn softnet_dropped() -> u64 {
    std::fs::read_to_string("/proc/net/softnet_stat")
        .map(|s| parse_softnet_dropped(&s))
        .unwrap_or(0)
}

/// The `Udp:` `RcvbufErrors` counter of `/proc/net/snmp` text: datagrams dropped because
/// a UDP socket's receive buffer was full (in the reading process's network namespace).
/// Pure.
pub fn parse_udp_rcvbuf_errors(snmp: &str) -> Option<u64> {
    let mut lines = snmp.lines().filter(|l| l.starts_with("Udp:"));
    let header = lines.next()?;
    let values = lines.next()?;
    let idx = header
        .split_whitespace()
        .position(|h| h == "RcvbufErrors")?;
    values.split_whitespace().nth(idx)?.parse().ok()
}

/// UDP receive-buffer drops so far in this network namespace.
pub fn udp_rcvbuf_errors() -> u64 {
    std::fs::read_to_string("/proc/net/snmp")
        .ok()
        .and_then(|s| parse_udp_rcvbuf_errors(&s))
        .unwrap_or(0)
}

/// Collects the facts from the running system (current network namespace).
pub fn collect() -> NetworkFacts {
    let mut net_irqs = BTreeMap::new();
    if let Ok(s) = std::fs::read_to_string("/proc/interrupts") {
        for (n, name) in parse_net_irqs(&s) {
            let aff = read_trim(&format!("/proc/irq/{n}/smp_affinity_list"))
                .unwrap_or_else(|| "?".into());
            net_irqs.insert(format!("{n} {name}"), aff);
        }
    }
    let mut interfaces = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/sys/class/net") {
        let mut names: Vec<String> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        interfaces = names.iter().map(|n| interface_facts(n)).collect();
    }
    NetworkFacts {
        busy_read_us: read_trim("/proc/sys/net/core/busy_read").and_then(|s| s.parse().ok()),
        busy_poll_us: read_trim("/proc/sys/net/core/busy_poll").and_then(|s| s.parse().ok()),
        default_irq_affinity: read_trim("/proc/irq/default_smp_affinity"),
        net_irqs,
        interfaces,
        rt_runtime_us: read_trim("/proc/sys/kernel/sched_rt_runtime_us")
            .and_then(|s| s.parse().ok()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_network_interrupts() {
        let t = "           CPU0       CPU1\n  0:         36          0   IO-APIC    2-edge      timer\n 25:       100        200   PCI-MSI 49152-edge      virtio0-input.0\n 26:  1 2 PCI-MSI 49153-edge      virtio0-output.0\n 27:  1 2 PCI-MSI 1-edge  virtio1-requests\n 30: 5 5 PCI-MSI 2-edge  mlx5_comp0@pci:0000:01:00.0\nNMI: 0 0 Non-maskable interrupts\n";
        let v = parse_net_irqs(t);
        let ns: Vec<u32> = v.iter().map(|(n, _)| *n).collect();
        assert_eq!(ns, vec![25, 26, 30]);
    }

    #[test]
    fn softnet_drops() {
        let t = "0000a000 00000002 00000000\n0000b000 0000000f 00000001\n";
        assert_eq!(parse_softnet_dropped(t), 17);
    }

    #[test]
    fn udp_rcvbuf_errors_column() {
        let t = "Ip: Forwarding\nIp: 1\nUdp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors\nUdp: 10 2 5 9 4 0\nUdpLite: InDatagrams RcvbufErrors\nUdpLite: 0 0\n";
        assert_eq!(parse_udp_rcvbuf_errors(t), Some(4));
        assert_eq!(parse_udp_rcvbuf_errors("Ip: 1\n"), None);
    }

    #[test]
    fn collects_loopback() {
        let f = collect();
        assert!(f.interfaces.iter().any(|i| i.name == "lo"));
    }
}

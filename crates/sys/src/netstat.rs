//! What the kernel says about the network in `/proc`, `/sys` and `ip route`: drop
//! counters, network interrupts and their affinity, busy-poll and real-time sysctls, the
//! interfaces of this namespace and the egress interface of a destination. Each reader is
//! a small function over a pure parser that takes the text, unit-tested on samples.
//!
//! Counters under `/proc/net` are those of the reading thread's network namespace.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::process::Command;

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

/// Interrupts of network devices on this host with their CPU affinity list
/// (`/proc/interrupts`, `/proc/irq/N/smp_affinity_list`), keyed `"N name"`; `?` where the
/// affinity cannot be read.
pub fn net_irq_affinities() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Ok(s) = std::fs::read_to_string("/proc/interrupts") {
        for (n, name) in parse_net_irqs(&s) {
            let aff = read_trim(&format!("/proc/irq/{n}/smp_affinity_list"))
                .unwrap_or_else(|| "?".into());
            out.insert(format!("{n} {name}"), aff);
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

/// The names of the interfaces of this network namespace (`/sys/class/net`), sorted.
pub fn interface_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir("/sys/class/net")
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// `net.core.busy_read` (µs), if readable.
pub fn busy_read_us() -> Option<u64> {
    read_trim("/proc/sys/net/core/busy_read").and_then(|s| s.parse().ok())
}

/// `net.core.busy_poll` (µs), if readable.
pub fn busy_poll_us() -> Option<u64> {
    read_trim("/proc/sys/net/core/busy_poll").and_then(|s| s.parse().ok())
}

/// `/proc/irq/default_smp_affinity`, if readable.
pub fn default_irq_affinity() -> Option<String> {
    read_trim("/proc/irq/default_smp_affinity")
}

/// `kernel.sched_rt_runtime_us` (-1: real-time threads unthrottled), if readable.
pub fn rt_runtime_us() -> Option<i64> {
    read_trim("/proc/sys/kernel/sched_rt_runtime_us").and_then(|s| s.parse().ok())
}

/// The device in `ip route get` output: the word after `dev`. Pure.
pub fn parse_route_dev(route: &str) -> Option<String> {
    let mut it = route.split_whitespace();
    while let Some(w) = it.next() {
        if w == "dev" {
            return it.next().map(str::to_string);
        }
    }
    None
}

/// The interface the kernel routes `to` through (`ip route get`), if it can tell.
pub fn route_dev(to: IpAddr) -> Option<String> {
    let out = Command::new("ip")
        .args(["route", "get", &to.to_string()])
        .output()
        .ok()?;
    parse_route_dev(&String::from_utf8_lossy(&out.stdout))
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
    fn route_device_is_the_word_after_dev() {
        let t = "10.201.1.2 dev latlab-ga src 10.201.1.1 uid 0 \n    cache \n";
        assert_eq!(parse_route_dev(t), Some("latlab-ga".into()));
        let lo = "local 127.0.0.1 dev lo table local src 127.0.0.1 uid 0 \n    cache <local> \n";
        assert_eq!(parse_route_dev(lo), Some("lo".into()));
        assert_eq!(
            parse_route_dev("RTNETLINK answers: Network is unreachable"),
            None
        );
        assert_eq!(parse_route_dev("x dev"), None);
    }

    #[test]
    fn loopback_routes_through_lo_and_is_listed() {
        assert_eq!(
            route_dev("127.0.0.1".parse().unwrap()).as_deref(),
            Some("lo")
        );
        assert!(interface_names().iter().any(|n| n == "lo"));
    }
}

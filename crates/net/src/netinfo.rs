//! Network provenance of a run: busy-poll sysctls, IRQ affinity of network interrupts,
//! and the interfaces of the current namespace with their drivers and timestamping
//! capabilities. The reading and parsing of `/proc` and `/sys` is in
//! [`latlab_sys::netstat`].

use crate::iface::{interface_facts, InterfaceFacts};
use latlab_sys::netstat;
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

/// Collects the facts from the running system (current network namespace).
pub fn collect() -> NetworkFacts {
    NetworkFacts {
        busy_read_us: netstat::busy_read_us(),
        busy_poll_us: netstat::busy_poll_us(),
        default_irq_affinity: netstat::default_irq_affinity(),
        net_irqs: netstat::net_irq_affinities(),
        interfaces: netstat::interface_names()
            .iter()
            .map(|n| interface_facts(n))
            .collect(),
        rt_runtime_us: netstat::rt_runtime_us(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_loopback() {
        let f = collect();
        assert!(f.interfaces.iter().any(|i| i.name == "lo"));
    }
}

//! Facts about network interfaces (driver, timestamping capabilities, PTP clock) and the
//! egress interface of a destination. The one home of interface facts: the probe and the
//! network provenance ([`crate::netinfo`]) import it; it imports neither.

use latlab_sys::net as sysnet;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// Facts about one interface that carried probes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterfaceFacts {
    /// Name.
    pub name: String,
    /// Driver.
    pub driver: String,
    /// `SO_TIMESTAMPING` capabilities by name.
    pub timestamping: Vec<String>,
    /// PTP hardware clock index.
    pub phc_index: Option<u32>,
    /// Whether hardware timestamping was enabled on it for this run.
    pub hardware_enabled: bool,
}

/// The interface the kernel routes `to` through (`ip route get`), if it can tell.
pub fn egress_interface(to: &SocketAddr) -> Option<String> {
    latlab_sys::netstat::route_dev(to.ip())
}

/// Facts of interface `name`.
pub fn interface_facts(name: &str) -> InterfaceFacts {
    let info = sysnet::ts_info(name).unwrap_or_default();
    InterfaceFacts {
        name: name.to_string(),
        driver: sysnet::driver_name(name).unwrap_or_else(|e| format!("unknown ({e})")),
        timestamping: info
            .capability_names()
            .into_iter()
            .map(str::to_string)
            .collect(),
        phc_index: info.phc_index,
        hardware_enabled: false,
    }
}

//! Steering the generator's probes through testpmd (see the [module](super) text): the
//! `ip` commands, sysctls and offload switches, as pure lists, and their application.

use crate::testbed::{self, TestbedError, GEN_NS, NF_NS};
use latlab_sys::netns;

/// Routing table of the steered route.
pub const TABLE: &str = "7001";
/// Priority of the steering rule (the `local` table's rule moves from 0 to [`LOCAL_PREF`]).
pub const PREF: &str = "10";
/// Where the `local` table's rule goes while steering is on.
pub const LOCAL_PREF: &str = "100";

/// The `ip` commands (in namespace [`GEN_NS`]) that send datagrams from the generator's
/// port A to its own port-B address out of `latlab-ga`, to MAC `nf_a_mac`.
pub fn up_commands(nf_a_mac: &str) -> Vec<Vec<String>> {
    let t = testbed::addresses();
    let (from, to) = (t.gen_a.ip().to_string(), t.gen_b.ip().to_string());
    let w = |s: &[&str]| -> Vec<String> {
        let mut v = vec!["-n".to_string(), GEN_NS.to_string()];
        v.extend(s.iter().map(|x| x.to_string()));
        v
    };
    vec![
        w(&["rule", "add", "pref", LOCAL_PREF, "lookup", "local"]),
        w(&["rule", "del", "pref", "0", "lookup", "local"]),
        w(&[
            "rule", "add", "pref", PREF, "from", &from, "to", &to, "iif", "lo", "lookup", TABLE,
        ]),
        w(&[
            "route",
            "replace",
            &format!("{to}/32"),
            "dev",
            "latlab-ga",
            "src",
            &from,
            "table",
            TABLE,
        ]),
        w(&[
            "neigh",
            "replace",
            &to,
            "lladdr",
            nf_a_mac,
            "dev",
            "latlab-ga",
            "nud",
            "permanent",
        ]),
    ]
}

/// The `ip` commands that undo [`up_commands`], each on its own (one that fails, because
/// its part was never made, does not stop the others).
pub fn down_commands() -> Vec<Vec<String>> {
    let to = testbed::addresses().gen_b.ip().to_string();
    let w = |s: &[&str]| -> Vec<String> {
        let mut v = vec!["-n".to_string(), GEN_NS.to_string()];
        v.extend(s.iter().map(|x| x.to_string()));
        v
    };
    vec![
        w(&["rule", "del", "pref", PREF]),
        w(&["rule", "add", "pref", "0", "lookup", "local"]),
        w(&["rule", "del", "pref", LOCAL_PREF, "lookup", "local"]),
        w(&["route", "flush", "table", TABLE]),
        w(&["neigh", "del", &to, "dev", "latlab-ga"]),
    ]
}

/// The sysctls steering sets: (namespace, key, value while steering).
pub const SYSCTLS: [(&str, &str, &str); 4] = [
    (GEN_NS, "net.ipv4.conf.latlab-gb.accept_local", "1"),
    (GEN_NS, "net.ipv4.conf.latlab-gb.rp_filter", "0"),
    (GEN_NS, "net.ipv4.conf.all.rp_filter", "0"),
    (NF_NS, "net.ipv4.conf.latlab-na.forwarding", "0"),
];

fn run_ip(args: &[String]) -> Result<String, TestbedError> {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    netns::ip(&a).map_err(|e| TestbedError::Command {
        command: format!("ip {}", args.join(" ")),
        stderr: e.to_string(),
    })
}

fn in_ns(ns: &str, words: &[&str]) -> Result<String, TestbedError> {
    let mut a = vec!["netns", "exec", ns];
    a.extend_from_slice(words);
    netns::ip(&a).map_err(|e| TestbedError::Command {
        command: format!("ip {}", a.join(" ")),
        stderr: e.to_string(),
    })
}

/// Steering in force; [`Steered::undo`] restores what it found.
#[derive(Debug)]
pub struct Steered {
    /// (namespace, key, value before).
    sysctls: Vec<(&'static str, &'static str, String)>,
}

impl Steered {
    /// Applies the steering; on a failure undoes what it did.
    ///
    /// # Errors
    /// The failing command.
    pub fn apply(nf_a_mac: &str) -> Result<Steered, TestbedError> {
        let mut me = Steered {
            sysctls: Vec::new(),
        };
        match me.apply_all(nf_a_mac) {
            Ok(()) => Ok(me),
            Err(e) => {
                me.undo();
                Err(e)
            }
        }
    }

    fn apply_all(&mut self, nf_a_mac: &str) -> Result<(), TestbedError> {
        // a previous run that was killed may have left its rules: start clean
        for c in down_commands() {
            let _ = run_ip(&c);
        }
        for (ns, key, value) in SYSCTLS {
            let before = in_ns(ns, &["sysctl", "-n", key])?.trim().to_string();
            in_ns(ns, &["sysctl", "-q", "-w", &format!("{key}={value}")])?;
            self.sysctls.push((ns, key, before));
        }
        in_ns(GEN_NS, &["ethtool", "-K", "latlab-ga", "tx", "off"])?;
        for c in up_commands(nf_a_mac) {
            run_ip(&c)?;
        }
        Ok(())
    }

    /// Removes the steering and restores the sysctls and the checksum offload.
    pub fn undo(self) {
        for c in down_commands() {
            let _ = run_ip(&c);
        }
        let _ = in_ns(GEN_NS, &["ethtool", "-K", "latlab-ga", "tx", "on"]);
        for (ns, key, before) in self.sysctls.iter().rev() {
            let _ = in_ns(ns, &["sysctl", "-q", "-w", &format!("{key}={before}")]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steering_routes_the_receivers_address_out_of_port_a() {
        let up: Vec<String> = up_commands("aa:bb:cc:dd:ee:ff")
            .iter()
            .map(|c| c.join(" "))
            .collect();
        assert_eq!(
            up,
            [
                "-n latlab-gen rule add pref 100 lookup local",
                "-n latlab-gen rule del pref 0 lookup local",
                "-n latlab-gen rule add pref 10 from 10.201.1.1 to 10.201.2.1 iif lo lookup 7001",
                "-n latlab-gen route replace 10.201.2.1/32 dev latlab-ga src 10.201.1.1 table 7001",
                "-n latlab-gen neigh replace 10.201.2.1 lladdr aa:bb:cc:dd:ee:ff dev latlab-ga nud permanent",
            ]
        );
        let down: Vec<String> = down_commands().iter().map(|c| c.join(" ")).collect();
        assert!(down[0].ends_with("rule del pref 10"));
        assert!(
            down.iter()
                .position(|c| c.ends_with("rule add pref 0 lookup local"))
                < down
                    .iter()
                    .position(|c| c.ends_with("rule del pref 100 lookup local")),
            "the local table is back before its moved rule goes: {down:?}"
        );
    }
}

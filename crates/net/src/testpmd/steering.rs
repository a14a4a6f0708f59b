//! Steering the generator's probes through testpmd (see the [module](super) text): the
//! `ip` commands, sysctls and offload switches, as pure lists, and their application.

use crate::testbed::{self, TestbedError, GEN_NS, NF_NS};
use latlab_sys::journal::{Change, Journal};
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
    let w = gen;
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
    let w = gen;
    vec![
        w(&["rule", "del", "pref", PREF]),
        // `protocol kernel`: the rule a new namespace starts with, so that restoring it
        // where it still is fails (EEXIST) instead of adding a second one (the kernel
        // tells rules apart by their protocol too)
        w(&[
            "rule", "add", "pref", "0", "lookup", "local", "protocol", "kernel",
        ]),
        w(&["rule", "del", "pref", LOCAL_PREF, "lookup", "local"]),
        w(&["route", "flush", "table", TABLE]),
        w(&["neigh", "del", &to, "dev", "latlab-ga"]),
    ]
}

/// The preferences of the rules in `ip rule show`'s output (`0:\tfrom all lookup local`)
/// that look up the `local` table ahead of the steering rule ([`PREF`]): each would
/// deliver the probes over loopback before the steering rule is consulted.
pub fn local_rules_ahead(rules: &str) -> Vec<u32> {
    let limit: u32 = PREF.parse().expect("literal");
    rules
        .lines()
        .filter_map(|l| {
            let (pref, rest) = l.split_once(':')?;
            let pref: u32 = pref.trim().parse().ok()?;
            let words: Vec<&str> = rest.split_whitespace().collect();
            let local = words.windows(2).any(|w| w == ["lookup", "local"]);
            (local && pref < limit).then_some(pref)
        })
        .collect()
}

/// The interface in `ip route get`'s answer (`10.201.2.1 from 10.201.1.1 dev latlab-ga
/// table 7001 …`, or `local 10.201.2.1 … dev lo table local …`), and whether it is a
/// `local` (loopback) delivery.
pub fn route_device(route_get: &str) -> Option<(String, bool)> {
    let first = route_get.lines().next()?;
    let words: Vec<&str> = first.split_whitespace().collect();
    let dev = words.windows(2).find(|w| w[0] == "dev").map(|w| w[1])?;
    Some((dev.to_string(), words.first() == Some(&"local")))
}

/// The sysctls steering sets: (namespace, key, value while steering).
pub const SYSCTLS: [(&str, &str, &str); 4] = [
    (GEN_NS, "net.ipv4.conf.latlab-gb.accept_local", "1"),
    (GEN_NS, "net.ipv4.conf.latlab-gb.rp_filter", "0"),
    (GEN_NS, "net.ipv4.conf.all.rp_filter", "0"),
    (NF_NS, "net.ipv4.conf.latlab-na.forwarding", "0"),
];

/// `ip -n latlab-gen words…`.
fn gen(words: &[&str]) -> Vec<String> {
    let mut v = vec!["-n".to_string(), GEN_NS.to_string()];
    v.extend(words.iter().map(|x| x.to_string()));
    v
}

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

/// Steering in force; [`Steered::undo`] restores what it found. Each part is in this
/// process's undo journal before it is made, so a run killed by SIGKILL is undone by the
/// next latlab command.
#[derive(Debug)]
pub struct Steered {
    /// The journaled parts, oldest first.
    changes: Vec<Change>,
}

/// `ip netns exec NS words…` as a program and its arguments.
fn ns_argv(ns: &str, words: &[&str]) -> Vec<String> {
    ["ip", "netns", "exec", ns]
        .iter()
        .chain(words)
        .map(|w| w.to_string())
        .collect()
}

impl Steered {
    /// Applies the steering; on a failure undoes what it did.
    ///
    /// # Errors
    /// The failing command.
    pub fn apply(nf_a_mac: &str) -> Result<Steered, TestbedError> {
        let mut me = Steered {
            changes: Vec::new(),
        };
        match me.apply_all(nf_a_mac) {
            Ok(()) => Ok(me),
            Err(e) => {
                me.undo();
                Err(e)
            }
        }
    }

    /// Journals the undo of a change about to be made.
    fn journal(&mut self, what: String, undo: Vec<String>) -> Result<(), TestbedError> {
        let c = Journal::process()
            .command(&what, undo)
            .map_err(|e| TestbedError::Command {
                command: format!("journaling \"{what}\""),
                stderr: e.to_string(),
            })?;
        self.changes.push(c);
        Ok(())
    }

    fn apply_all(&mut self, nf_a_mac: &str) -> Result<(), TestbedError> {
        // a previous run that was killed may have left its rules: start clean
        for c in down_commands() {
            let _ = run_ip(&c);
        }
        for (ns, key, value) in SYSCTLS {
            let before = in_ns(ns, &["sysctl", "-n", key])?.trim().to_string();
            let undo = format!("{key}={before}");
            self.journal(
                format!("{key} in {ns} back to {before}"),
                ns_argv(ns, &["sysctl", "-q", "-w", &undo]),
            )?;
            in_ns(ns, &["sysctl", "-q", "-w", &format!("{key}={value}")])?;
        }
        self.journal(
            "checksum offload of latlab-ga back on".into(),
            ns_argv(GEN_NS, &["ethtool", "-K", "latlab-ga", "tx", "on"]),
        )?;
        in_ns(GEN_NS, &["ethtool", "-K", "latlab-ga", "tx", "off"])?;
        // undone newest first: journaled in reverse so that they run in their order
        for c in down_commands().into_iter().rev() {
            let mut argv = vec!["ip".to_string()];
            argv.extend(c.iter().cloned());
            self.journal(format!("steering step undone (ip {})", c.join(" ")), argv)?;
        }
        for c in up_commands(nf_a_mac) {
            run_ip(&c)?;
        }
        // a namespace can hold more than one `local` rule at pref 0 (one the kernel made,
        // one an earlier restore added): `rule del` removes one per call, and any one left
        // sends every probe over loopback past testpmd (issue 14's "0 frames forwarded")
        for _ in 0..16 {
            let ahead = local_rules_ahead(&run_ip(&gen(&["rule", "show"]))?);
            if ahead.is_empty() {
                break;
            }
            for p in ahead {
                run_ip(&gen(&[
                    "rule",
                    "del",
                    "pref",
                    &p.to_string(),
                    "lookup",
                    "local",
                ]))?;
            }
        }
        self.check_route()
    }

    /// Asks the kernel how it routes a probe (from the generator's port A to its port-B
    /// address): it must leave by `latlab-ga`, not be delivered locally.
    fn check_route(&self) -> Result<(), TestbedError> {
        let t = testbed::addresses();
        let (from, to) = (t.gen_a.ip().to_string(), t.gen_b.ip().to_string());
        let words = gen(&["route", "get", &to, "from", &from]);
        let answer = run_ip(&words)?;
        match route_device(&answer) {
            Some((dev, false)) if dev == "latlab-ga" => Ok(()),
            _ => Err(TestbedError::Command {
                command: format!("ip {}", words.join(" ")),
                stderr: format!(
                    "the probes would not leave by latlab-ga towards testpmd: {}",
                    answer.lines().next().unwrap_or("").trim()
                ),
            }),
        }
    }

    /// Removes the steering and restores the sysctls and the checksum offload (each
    /// step on its own: one that fails, because its part was never made, does not stop
    /// the others).
    pub fn undo(self) {
        for c in self.changes.into_iter().rev() {
            let _ = c.restore();
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
                .any(|c| c.ends_with("rule add pref 0 lookup local protocol kernel")),
            "the restored rule is the kernel's own, so restoring it twice fails: {down:?}"
        );
        assert!(
            down.iter()
                .position(|c| c.ends_with("rule add pref 0 lookup local protocol kernel"))
                < down
                    .iter()
                    .position(|c| c.ends_with("rule del pref 100 lookup local")),
            "the local table is back before its moved rule goes: {down:?}"
        );
    }

    #[test]
    fn a_local_rule_ahead_of_the_steering_rule_is_found() {
        // what a fresh namespace showed in the failing runs: the kernel's pref-0 rule
        // beside the one latlab's start-clean step had added
        let fresh = "0:\tfrom all lookup local\n10:\tfrom 10.201.1.1 to 10.201.2.1 iif lo lookup 7001\n100:\tfrom all lookup local\n32766:\tfrom all lookup main\n";
        assert_eq!(local_rules_ahead(fresh), vec![0]);
        let two = "0:\tfrom all lookup local proto kernel\n0:\tfrom all lookup local\n";
        assert_eq!(local_rules_ahead(two), vec![0, 0]);
        let steered =
            "10:\tfrom 10.201.1.1 to 10.201.2.1 iif lo lookup 7001\n100:\tfrom all lookup local\n";
        assert!(local_rules_ahead(steered).is_empty());
        assert!(local_rules_ahead("5:\tfrom all lookup localnet\n").is_empty());
    }

    #[test]
    fn the_route_answer_names_the_device_and_a_local_delivery() {
        assert_eq!(
            route_device(
                "local 10.201.2.1 from 10.201.1.1 dev lo table local uid 0 \n    cache <local> \n"
            ),
            Some(("lo".into(), true))
        );
        assert_eq!(
            route_device(
                "10.201.2.1 from 10.201.1.1 dev latlab-ga table 7001 uid 0 \n    cache \n"
            ),
            Some(("latlab-ga".into(), false))
        );
        assert_eq!(route_device(""), None);
    }
}

//! Network namespaces: move the calling *thread* into a named namespace (`setns(2)` on
//! `/run/netns/<name>`, as created by `ip netns add`). The network namespace is a
//! per-thread attribute, so a measuring program can run one thread per namespace.
//!
//! Also builds namespaces and veth links with iproute2's `ip` ([`Namespaces`], removed
//! again when dropped) for the steps, tests and experiments that need them. Every name
//! latlab creates starts with `latlab-`.

use std::io;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::Command;

/// Errors entering a namespace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NetnsError {
    /// The namespace file cannot be opened (no such namespace, or no permission).
    #[error("cannot open network namespace {}: {source}", path.display())]
    Open {
        /// `/run/netns/<name>`.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// `setns` failed (needs CAP_SYS_ADMIN).
    #[error("cannot enter network namespace {name}: {source} (needs root or CAP_SYS_ADMIN)")]
    Enter {
        /// The namespace name.
        name: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

/// Moves the calling thread into the named network namespace.
///
/// # Errors
/// [`NetnsError`] when the namespace does not exist or cannot be entered.
pub fn enter(name: &str) -> Result<(), NetnsError> {
    let path = PathBuf::from("/run/netns").join(name);
    let f = std::fs::File::open(&path).map_err(|source| NetnsError::Open {
        path: path.clone(),
        source,
    })?;
    // SAFETY: `f` is an open namespace file descriptor for the duration of the call;
    // setns takes no pointers.
    let r = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if r != 0 {
        return Err(NetnsError::Enter {
            name: name.to_string(),
            source: io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// Whether the process runs with effective user id 0.
pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail and takes no arguments.
    unsafe { libc::geteuid() == 0 }
}

/// Errors building a topology.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TopologyError {
    /// Namespaces need root.
    #[error("network namespaces need root (CAP_SYS_ADMIN); run as root")]
    NotRoot,
    /// A command could not be started (not installed).
    #[error("cannot run '{cmd}': {source} (install iproute2/ethtool)")]
    Spawn {
        /// The command line.
        cmd: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A command failed.
    #[error("'{cmd}' failed: {stderr}")]
    Failed {
        /// The command line.
        cmd: String,
        /// What it printed on stderr.
        stderr: String,
    },
}

/// Runs a command, returning its stdout; the error quotes the command and its stderr.
pub fn run_cmd(program: &str, args: &[&str]) -> Result<String, TopologyError> {
    let cmd = format!("{program} {}", args.join(" "));
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|source| TopologyError::Spawn {
            cmd: cmd.clone(),
            source,
        })?;
    if !out.status.success() {
        return Err(TopologyError::Failed {
            cmd,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `ip` with `args`.
pub fn ip(args: &[&str]) -> Result<String, TopologyError> {
    run_cmd("ip", args)
}

/// A command that runs `exe` inside namespace `ns` (`ip netns exec NS EXE`); add its
/// arguments and run it as any [`Command`].
pub fn exec_command(ns: &str, exe: &std::path::Path) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns]).arg(exe);
    c
}

/// A set of network namespaces that exist while this value lives (deleted on drop, which
/// also deletes the veth devices inside them).
#[derive(Debug)]
pub struct Namespaces {
    names: Vec<String>,
    /// Deletes the namespaces should this process die before it drops them.
    _janitor: Option<crate::janitor::Janitor>,
}

impl Namespaces {
    /// Creates the namespaces (deleting stale ones of the same name first) and brings up
    /// `lo` in each.
    ///
    /// # Errors
    /// [`TopologyError::NotRoot`] without root; the failing command otherwise.
    pub fn create(names: &[String]) -> Result<Namespaces, TopologyError> {
        if !is_root() {
            return Err(TopologyError::NotRoot);
        }
        let mut ns = Namespaces {
            names: Vec::new(),
            _janitor: crate::janitor::Janitor::watch(names).ok(),
        };
        for n in names {
            let _ = ip(&["netns", "del", n]);
            ip(&["netns", "add", n])?;
            ns.names.push(n.clone());
            ip(&["-n", n, "link", "set", "lo", "up"])?;
        }
        Ok(ns)
    }

    /// The namespaces' names, in creation order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Creates a veth pair `if_a` (in `ns_a`) ⇄ `if_b` (in `ns_b`), both up.
    ///
    /// # Errors
    /// The failing `ip` command.
    pub fn veth(
        &self,
        ns_a: &str,
        if_a: &str,
        ns_b: &str,
        if_b: &str,
    ) -> Result<(), TopologyError> {
        ip(&[
            "link", "add", "name", if_a, "netns", ns_a, "type", "veth", "peer", "name", if_b,
            "netns", ns_b,
        ])?;
        ip(&["-n", ns_a, "link", "set", if_a, "up"])?;
        ip(&["-n", ns_b, "link", "set", if_b, "up"])?;
        Ok(())
    }

    /// Adds an address (`10.0.0.1/24`) to an interface.
    ///
    /// # Errors
    /// The failing `ip` command.
    pub fn addr(&self, ns: &str, ifname: &str, cidr: &str) -> Result<(), TopologyError> {
        ip(&["-n", ns, "addr", "add", cidr, "dev", ifname]).map(|_| ())
    }

    /// Turns off segmentation, receive coalescing and checksum offloads on an interface, so
    /// that every frame on the wire is a real, complete frame (needed when a user-space
    /// element such as `latlab net delay` forwards frames between veths).
    ///
    /// # Errors
    /// The failing `ethtool` command (needs the `ethtool` package).
    pub fn offloads_off(&self, ns: &str, ifname: &str) -> Result<(), TopologyError> {
        run_cmd(
            "ip",
            &[
                "netns", "exec", ns, "ethtool", "-K", ifname, "tso", "off", "gso", "off", "gro",
                "off", "tx", "off", "rx", "off",
            ],
        )
        .map(|_| ())
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for n in self.names.iter().rev() {
            let _ = ip(&["netns", "del", n]);
        }
    }
}

/// A namespace name unique to this process: `latlab-<tag>-<pid>`.
pub fn unique_name(tag: &str) -> String {
    format!("latlab-{tag}-{}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_command_runs_the_program_through_ip_netns_exec() {
        let c = exec_command("latlab-x", std::path::Path::new("/bin/true"));
        assert_eq!(c.get_program(), "ip");
        let args: Vec<_> = c.get_args().collect();
        assert_eq!(args, ["netns", "exec", "latlab-x", "/bin/true"]);
    }

    #[test]
    fn names_are_prefixed() {
        assert!(unique_name("bd-a").starts_with("latlab-bd-a-"));
    }

    #[test]
    fn failing_command_quotes_itself() {
        let e = run_cmd("sh", &["-c", "echo oops >&2; exit 3"]).unwrap_err();
        let s = e.to_string();
        assert!(s.contains("sh -c") && s.contains("oops"), "{s}");
        let e = run_cmd("latlab-no-such-program", &[]).unwrap_err();
        assert!(matches!(e, TopologyError::Spawn { .. }));
    }

    #[test]
    fn namespaces_are_created_and_removed() {
        latlab_testutil::require_root!("creates network namespaces");
        let a = unique_name("t-ns");
        {
            let ns = Namespaces::create(std::slice::from_ref(&a)).unwrap();
            assert!(ip(&["netns", "list"]).unwrap().contains(&a));
            assert_eq!(ns.names(), std::slice::from_ref(&a));
        }
        assert!(!ip(&["netns", "list"]).unwrap().contains(&a));
    }

    #[test]
    fn missing_namespace_is_an_open_error() {
        let e = enter("latlab-does-not-exist-xyz").unwrap_err();
        assert!(matches!(e, NetnsError::Open { .. }), "{e}");
        assert!(e
            .to_string()
            .contains("/run/netns/latlab-does-not-exist-xyz"));
    }
}

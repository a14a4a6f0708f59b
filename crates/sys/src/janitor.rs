//! A janitor for network namespaces: a small child process that deletes the namespaces
//! this process created if this process ends without deleting them itself — `SIGKILL`
//! included, which no signal handler sees.
//!
//! The janitor is `sh`, blocked reading a pipe whose only writer is this process (the
//! pipe is close-on-exec, so no other child inherits it). However this process ends, the
//! kernel closes its end: the janitor reads end-of-file and deletes the namespaces with
//! `ip netns del`. When this process cleaned up itself it writes `done` first, and the
//! janitor exits without touching anything. The janitor ignores `SIGINT`, `SIGTERM` and
//! `SIGHUP`, so a Ctrl-C to the terminal's process group does not take it down with its
//! owner before it has done its work.

use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};

/// The janitor's program: `$@` are the namespaces.
const SCRIPT: &str = "trap '' INT TERM HUP; read -r line; [ \"$line\" = done ] && exit 0; \
                      for n in \"$@\"; do ip netns del \"$n\" 2>/dev/null; done; exit 0";

/// A running janitor; dismissed (told `done`) when dropped.
#[derive(Debug)]
pub struct Janitor {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Janitor {
    /// Starts a janitor for `namespaces`.
    ///
    /// # Errors
    /// `sh` cannot be started.
    pub fn watch(namespaces: &[String]) -> std::io::Result<Janitor> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(SCRIPT)
            .arg("latlab-janitor")
            .args(namespaces)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let stdin = child.stdin.take();
        Ok(Janitor { child, stdin })
    }

    /// The janitor's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Janitor {
    fn drop(&mut self) {
        if let Some(mut w) = self.stdin.take() {
            let _ = w.write_all(b"done\n");
        }
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exists(ns: &str) -> bool {
        std::path::Path::new("/run/netns").join(ns).exists()
    }

    #[test]
    fn a_dismissed_janitor_leaves_the_namespaces_alone() {
        if !crate::netns::is_root() {
            eprintln!(
                "SKIP a_dismissed_janitor_leaves_the_namespaces_alone: needs root (ip netns)"
            );
            return;
        }
        let ns = crate::netns::unique_name("jan-keep");
        crate::netns::ip(&["netns", "add", &ns]).unwrap();
        drop(Janitor::watch(std::slice::from_ref(&ns)).unwrap());
        assert!(exists(&ns), "a dismissed janitor deleted {ns}");
        crate::netns::ip(&["netns", "del", &ns]).unwrap();
    }

    #[test]
    fn a_janitor_whose_owner_vanished_deletes_the_namespaces() {
        if !crate::netns::is_root() {
            eprintln!(
                "SKIP a_janitor_whose_owner_vanished_deletes_the_namespaces: needs root (ip netns)"
            );
            return;
        }
        let ns = crate::netns::unique_name("jan-del");
        crate::netns::ip(&["netns", "add", &ns]).unwrap();
        let mut j = Janitor::watch(std::slice::from_ref(&ns)).unwrap();
        // what the kernel does when the owner dies: its end of the pipe closes
        drop(j.stdin.take());
        let _ = j.child.wait();
        assert!(!exists(&ns), "the janitor left {ns} behind");
    }
}

//! Network namespaces: move the calling *thread* into a named namespace (`setns(2)` on
//! `/run/netns/<name>`, as created by `ip netns add`). The network namespace is a
//! per-thread attribute, so a measuring program can run one thread per namespace.

use std::io;
use std::os::fd::AsRawFd;
use std::path::PathBuf;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_namespace_is_an_open_error() {
        let e = enter("latlab-does-not-exist-xyz").unwrap_err();
        assert!(matches!(e, NetnsError::Open { .. }), "{e}");
        assert!(e
            .to_string()
            .contains("/run/netns/latlab-does-not-exist-xyz"));
    }
}

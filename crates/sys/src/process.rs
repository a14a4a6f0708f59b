//! Process-wide settings for command-line use.

/// Restores the default action for `SIGPIPE` (terminate quietly).
///
/// Rust programs start with `SIGPIPE` ignored, so writing to a closed pipe
/// (`latlab show run.json | head`) turns into an error or a `println!` panic. A command-line
/// tool wants the Unix behaviour instead: end silently when the reader goes away.
pub fn default_sigpipe() {
    // SAFETY: `signal` with SIG_DFL installs no handler code; it is called once at start-up,
    // before any thread is spawned, so no other thread observes the change mid-flight.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Asks process `pid` to stop (`SIGTERM`), e.g. a server this process started, so that it
/// can stop its own children (nginx's master stops its workers; `SIGKILL` would orphan
/// them).
///
/// # Errors
/// The OS error (`ESRCH` when it is already gone, `EPERM` when it is not ours to signal).
pub fn terminate(pid: u32) -> std::io::Result<()> {
    send(pid, libc::SIGTERM)
}

/// Interrupts process `pid` (`SIGINT`), e.g. a PostgreSQL server this process started: its
/// "fast" shutdown, which ends open sessions instead of waiting for them as `SIGTERM` does.
///
/// # Errors
/// As [`terminate`].
pub fn interrupt(pid: u32) -> std::io::Result<()> {
    send(pid, libc::SIGINT)
}

/// Makes the process `cmd` starts die (SIGKILL) when the thread that starts it ends:
/// `PR_SET_PDEATHSIG`, so a helper load cannot outlive latlab however latlab ends, SIGKILL
/// included. The kernel ties it to the spawning *thread*, so spawn from a thread that
/// lives as long as the child should. A parent gone before the child could ask is
/// `ESRCH` from `spawn`.
pub fn die_with_spawning_thread(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id();
    // SAFETY: between fork and exec the closure calls only `prctl` and `getppid`, both
    // async-signal-safe, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() as u32 != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

fn send(pid: u32, signal: libc::c_int) -> std::io::Result<()> {
    let pid =
        libc::pid_t::try_from(pid).map_err(|_| std::io::Error::from_raw_os_error(libc::ESRCH))?;
    // SAFETY: `kill` takes plain integers and touches no memory of ours.
    let rc = unsafe { libc::kill(pid, signal) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// An unprivileged account to run a server under (PostgreSQL refuses to run as root).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    /// Login name.
    pub name: String,
    /// User id.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
}

/// Finds `name` in `/etc/passwd`-format text (`name:x:uid:gid:...`).
pub fn parse_passwd(text: &str, name: &str) -> Option<Account> {
    text.lines().find_map(|line| {
        let mut f = line.split(':');
        if f.next()? != name {
            return None;
        }
        let _password = f.next()?;
        Some(Account {
            name: name.to_string(),
            uid: f.next()?.trim().parse().ok()?,
            gid: f.next()?.trim().parse().ok()?,
        })
    })
}

impl Account {
    /// The account `name` from `/etc/passwd`, when it exists.
    pub fn lookup(name: &str) -> Option<Account> {
        parse_passwd(&std::fs::read_to_string("/etc/passwd").ok()?, name)
    }

    /// The words that run the program after them as this account: util-linux's `setpriv`
    /// with its user and group and no supplementary groups. `setpriv` execs the program, so
    /// the process keeps the pid the caller spawned.
    pub fn run_as_words(&self) -> Vec<String> {
        vec![
            "setpriv".into(),
            format!("--reuid={}", self.uid),
            format!("--regid={}", self.gid),
            "--clear-groups".into(),
            "--".into(),
        ]
    }

    /// Makes this account the owner of `path` and of everything under it.
    ///
    /// # Errors
    /// The first OS error, naming the path.
    pub fn own_tree(&self, path: &std::path::Path) -> std::io::Result<()> {
        let with_path =
            |e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", path.display()));
        std::os::unix::fs::lchown(path, Some(self.uid), Some(self.gid)).map_err(with_path)?;
        if std::fs::symlink_metadata(path).map_err(with_path)?.is_dir() {
            for entry in std::fs::read_dir(path).map_err(with_path)? {
                self.own_tree(&entry.map_err(with_path)?.path())?;
            }
        }
        Ok(())
    }
}

/// Whether a process with working directory `cwd` and command line `cmdline` (its
/// NUL-separated words) belongs under `dir`: it works there or names it in its arguments.
pub fn is_under(cwd: &std::path::Path, cmdline: &[u8], dir: &std::path::Path) -> bool {
    if cwd.starts_with(dir) {
        return true;
    }
    let needle = dir.as_os_str().as_encoded_bytes();
    !needle.is_empty()
        && cmdline
            .split(|b| *b == 0)
            .any(|word| word.windows(needle.len()).any(|w| w == needle))
}

/// The processes of this host that work in `dir` (or below) or name it on their command
/// line: what a server started there leaves behind when it has not stopped (a
/// PostgreSQL server's children all work in its data directory).
pub fn pids_under(dir: &std::path::Path) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = entries
        .filter_map(|e| {
            let e = e.ok()?;
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let cwd = std::fs::read_link(e.path().join("cwd")).unwrap_or_default();
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            is_under(&cwd, &cmdline, dir).then_some(pid)
        })
        .collect();
    pids.sort_unstable();
    pids
}

#[cfg(test)]
mod tests {
    #[test]
    fn terminate_stops_a_child_and_reports_a_missing_one() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        super::terminate(child.id()).unwrap();
        let status = child.wait().unwrap();
        assert!(!status.success(), "sleep ended by SIGTERM, not by itself");
        // The pid is reaped now: nothing left to signal.
        assert!(super::terminate(child.id()).is_err());
    }

    #[test]
    fn interrupt_stops_a_child() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        super::interrupt(child.id()).unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGINT));
    }

    #[test]
    fn a_child_dies_with_the_thread_that_started_it() {
        let mut child = std::thread::spawn(|| {
            let mut c = std::process::Command::new("sleep");
            c.arg("30");
            super::die_with_spawning_thread(&mut c);
            c.spawn().unwrap()
        })
        .join()
        .unwrap();
        let t0 = std::time::Instant::now();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
        assert!(
            t0.elapsed().as_secs() < 25,
            "killed when its thread ended, not at 30 s"
        );
    }

    #[test]
    fn passwd_entries_are_found_by_name() {
        let text = "root:x:0:0:root:/root:/bin/bash\npostgres:x:101:104:PostgreSQL administrator,,,:/var/lib/postgresql:/bin/bash\nbad:x:zz:1::/:/bin/sh\n";
        let a = super::parse_passwd(text, "postgres").unwrap();
        assert_eq!((a.uid, a.gid, a.name.as_str()), (101, 104, "postgres"));
        assert_eq!(super::parse_passwd(text, "post"), None, "whole names only");
        assert_eq!(
            super::parse_passwd(text, "bad"),
            None,
            "a malformed uid is no account"
        );
        assert_eq!(
            a.run_as_words(),
            [
                "setpriv",
                "--reuid=101",
                "--regid=104",
                "--clear-groups",
                "--"
            ]
        );
    }

    #[test]
    fn processes_are_under_a_directory_by_cwd_or_arguments() {
        use std::path::Path;
        let dir = Path::new("/tmp/latlab-where-time-7");
        let args = b"postgres\0-D\0/tmp/latlab-where-time-7/pg/data\0";
        assert!(super::is_under(Path::new("/"), args, dir));
        assert!(super::is_under(
            Path::new("/tmp/latlab-where-time-7/pg/data"),
            b"postgres: checkpointer ",
            dir
        ));
        assert!(!super::is_under(
            Path::new("/tmp"),
            b"postgres\0-D\0/var/lib/pg\0",
            dir
        ));
        assert!(
            !super::is_under(Path::new("/tmp/latlab-where-time-70"), b"", dir),
            "a sibling with a longer name is not under it"
        );
    }

    #[test]
    fn this_process_is_under_its_working_directory() {
        let cwd = std::env::current_dir().unwrap();
        assert!(super::pids_under(&cwd).contains(&std::process::id()));
        assert!(super::pids_under(std::path::Path::new("/latlab-no-such-dir")).is_empty());
    }
}

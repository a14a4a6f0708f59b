//! A foreign program that latlab starts, watches and stops (DPDK's `dpdk-testpmd` as the
//! testbed's network function): found on `PATH`, started inside a network namespace with
//! its standard input held open, its standard output and error collected in memory, and
//! stopped by closing its standard input (what testpmd's non-interactive mode waits for),
//! then `SIGKILL` if it does not end in time.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The first executable file named `program` in the colon-separated directory list
/// `path_var` (the value of `PATH`); a `program` with a slash is checked as it is.
pub fn find_program(program: &str, path_var: &str) -> Option<PathBuf> {
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return executable(&p).then_some(p);
    }
    path_var
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(program))
        .find(|p| executable(p))
}

/// [`find_program`] on this process's `PATH`.
pub fn find_on_path(program: &str) -> Option<PathBuf> {
    find_program(program, &std::env::var("PATH").unwrap_or_default())
}

/// A started program whose output is collected.
pub struct Supervised {
    child: Child,
    stdin: Option<ChildStdin>,
    output: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
}

impl Supervised {
    /// Starts `program args…`, inside network namespace `ns` when given (through
    /// `ip netns exec`), its standard input a pipe held open until [`Supervised::finish`].
    ///
    /// # Errors
    /// The OS error of the spawn.
    pub fn spawn(ns: Option<&str>, program: &Path, args: &[String]) -> std::io::Result<Self> {
        let mut c = match ns {
            Some(ns) => crate::netns::exec_command(ns, program),
            None => Command::new(program),
        };
        c.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn()?;
        let output = Arc::new(Mutex::new(String::new()));
        let mut readers = Vec::new();
        let pipes: Vec<Box<dyn Read + Send>> = [
            child
                .stdout
                .take()
                .map(|o| Box::new(o) as Box<dyn Read + Send>),
            child
                .stderr
                .take()
                .map(|e| Box::new(e) as Box<dyn Read + Send>),
        ]
        .into_iter()
        .flatten()
        .collect();
        for mut pipe in pipes {
            let out = output.clone();
            readers.push(std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut o) = out.lock() {
                        o.push_str(&String::from_utf8_lossy(&buf[..n]));
                    }
                }
            }));
        }
        Ok(Supervised {
            stdin: child.stdin.take(),
            child,
            output,
            readers,
        })
    }

    /// Its process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// What it printed so far (standard output and error, interleaved as read).
    pub fn output(&self) -> String {
        self.output.lock().map(|o| o.clone()).unwrap_or_default()
    }

    /// Its exit status when it has ended.
    ///
    /// # Errors
    /// The OS error of `waitpid`.
    pub fn exited(&mut self) -> std::io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// Stops it: closes its standard input, waits up to `grace` for it to end, kills it
    /// after that. Returns how it ended (`None`: it had to be killed) and all it printed.
    ///
    /// # Errors
    /// The OS error of `waitpid` or `kill`.
    pub fn finish(mut self, grace: Duration) -> std::io::Result<(Option<ExitStatus>, String)> {
        drop(self.stdin.take());
        let deadline = Instant::now() + grace;
        let status = loop {
            if let Some(s) = self.child.try_wait()? {
                break Some(s);
            }
            if Instant::now() >= deadline {
                self.child.kill()?;
                self.child.wait()?;
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        Ok((status, self.output()))
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        // never leave the program running behind a dropped handle
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_on_the_path_or_not_at_all() {
        let sh = find_program("sh", "/nonexistent:/bin:/usr/bin").unwrap();
        assert!(sh.ends_with("sh"));
        assert_eq!(find_program("sh", "/nonexistent"), None);
        assert_eq!(find_program("sh", ""), None);
        assert_eq!(
            find_program("latlab-no-such-program", "/bin:/usr/bin"),
            None
        );
        assert_eq!(
            find_program(sh.to_str().unwrap(), "").as_deref(),
            Some(sh.as_path())
        );
    }

    #[test]
    fn a_program_ends_when_its_input_closes_and_its_output_is_kept() {
        let sh = find_on_path("sh").unwrap();
        let args = [
            "-c".to_string(),
            "echo up; cat >/dev/null; echo bye >&2".into(),
        ];
        let mut s = Supervised::spawn(None, &sh, &args).unwrap();
        let t0 = Instant::now();
        while !s.output().contains("up") && t0.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(s.exited().unwrap(), None, "it waits on its input");
        let (status, out) = s.finish(Duration::from_secs(20)).unwrap();
        assert!(status.unwrap().success());
        assert!(out.contains("up") && out.contains("bye"), "{out}");
    }

    #[test]
    fn a_program_that_ignores_its_input_is_killed() {
        let sh = find_on_path("sh").unwrap();
        let args = ["-c".to_string(), "exec sleep 30".into()];
        let s = Supervised::spawn(None, &sh, &args).unwrap();
        let (status, _) = s.finish(Duration::from_millis(50)).unwrap();
        assert_eq!(status, None);
    }
}

//! Real servers latlab starts and stops itself: memcached and nginx for `latlab net load
//! --serve` and for the where-time experiment (which also runs PostgreSQL under the same
//! [`Server`] guard, with [`command_in`] and [`wait_port`]).
//!
//! A server runs inside a network namespace when one is given (through sys's `ip netns
//! exec`), pinned with `taskset -c` when a CPU is given, with its standard input closed,
//! and is stopped by its own pid: SIGTERM (SIGINT when asked), SIGKILL after a grace
//! period. A [`Server`] that is dropped without [`Server::stop`] (an error path) is
//! stopped too, so no path leaves it running.

use latlab_sys::netns;
use latlab_sys::process::Account;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A server latlab can start for a load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ServerKind {
    /// memcached (Debian `memcached`), one worker thread.
    Memcached,
    /// nginx (Debian `nginx-light`), one worker process serving [`PAGE`].
    Nginx,
}

/// The page nginx serves at `/`: small (704 bytes), as the where-time paper's Apache
/// benchmark served.
pub const PAGE: &str = "<html><body>latlab where-time</body></html>\n";
/// How many times [`PAGE`]'s line is repeated in the served file.
const PAGE_REPEAT: usize = 16;

impl ServerKind {
    /// Every kind, as `--serve` accepts them.
    pub const ALL: [ServerKind; 2] = [ServerKind::Memcached, ServerKind::Nginx];

    /// Name on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Memcached => "memcached",
            ServerKind::Nginx => "nginx",
        }
    }

    /// Parses a name.
    pub fn from_name(s: &str) -> Option<ServerKind> {
        ServerKind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// The program started and the Debian package that provides it.
    pub fn program(self) -> (&'static str, &'static str) {
        match self {
            ServerKind::Memcached => ("memcached", "memcached"),
            ServerKind::Nginx => ("nginx", "nginx-light"),
        }
    }

    /// The target a load uses when none is given: loopback, on a port away from the
    /// standard one (a system's own memcached or web server may hold that).
    pub fn default_target(self) -> &'static str {
        match self {
            ServerKind::Memcached => "memcached://127.0.0.1:21211",
            ServerKind::Nginx => "http://127.0.0.1:28080/",
        }
    }
}

/// Why a server could not be started or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Its program is not installed.
    #[error(
        "'{program}' is not installed (Debian package {package}; `make deps-demo` installs it)"
    )]
    Missing {
        /// The program.
        program: &'static str,
        /// Its package.
        package: &'static str,
    },
    /// An OS error while doing something (named).
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    /// It started but does not accept connections.
    #[error("{name} did not come up: {why}")]
    NotUp {
        /// The server.
        name: &'static str,
        /// What the wait saw (and the server's last words when it exited).
        why: String,
    },
    /// It did not stop cleanly.
    #[error("{0}")]
    Stop(String),
}

/// An OS error while doing `what`.
pub fn io(what: &str) -> impl FnOnce(std::io::Error) -> ServeError {
    let w = what.to_string();
    move |e| ServeError::Io(w, e)
}

/// A server process, stopped (by its pid) by [`Server::stop`] or, on an error path, when
/// dropped.
pub struct Server {
    child: Child,
    name: &'static str,
    /// The server's private directory, when its processes work there: after it stops,
    /// nothing may be left running in it.
    home: Option<PathBuf>,
    /// Ask with SIGINT instead of SIGTERM (PostgreSQL's "fast" shutdown: it ends open
    /// sessions instead of waiting for them).
    pub interrupt: bool,
    stopped: bool,
}

/// How long a server has to stop after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

impl Server {
    /// Guards `child`, named `name` in errors; `home` as in [`Server::stop`].
    pub fn new(child: Child, name: &'static str, home: Option<PathBuf>) -> Server {
        Server {
            child,
            name,
            home,
            interrupt: false,
            stopped: false,
        }
    }

    /// The server's pid (with a namespace: the pid of `ip netns exec`, which execs the
    /// server in place, so the same process).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// SIGTERM, or SIGINT when `interrupt` (nginx's master then stops its workers,
    /// PostgreSQL ends its sessions and shuts down after a checkpoint; SIGKILL would orphan
    /// them), SIGKILL after [`STOP_GRACE`]. True when it stopped by itself.
    fn terminate(&mut self) -> bool {
        self.stopped = true;
        let pid = self.child.id();
        let _ = if self.interrupt {
            latlab_sys::process::interrupt(pid)
        } else {
            latlab_sys::process::terminate(pid)
        };
        let start = Instant::now();
        while start.elapsed() < STOP_GRACE {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        false
    }

    /// Stops the server and checks that none of its processes is left (none running in
    /// its `home`, when it has one).
    ///
    /// # Errors
    /// [`ServeError::Stop`] when it had to be killed or left processes behind.
    pub fn stop(mut self) -> Result<(), ServeError> {
        let clean = self.terminate();
        if let Some(home) = &self.home {
            // Children notice a killed parent within a moment; give them that moment.
            let start = Instant::now();
            let mut left = latlab_sys::process::pids_under(home);
            while !left.is_empty() && start.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(50));
                left = latlab_sys::process::pids_under(home);
            }
            if !left.is_empty() {
                return Err(ServeError::Stop(format!(
                    "{}: processes {left:?} still run in {} after it stopped",
                    self.name,
                    home.display()
                )));
            }
        }
        if !clean {
            return Err(ServeError::Stop(format!(
                "{} did not stop within {} s of SIGTERM and was killed",
                self.name,
                STOP_GRACE.as_secs()
            )));
        }
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if !self.stopped {
            self.terminate();
        }
    }
}

/// `argv` to run inside namespace `ns` when given (through sys's `ip netns exec`), under
/// `chrt -f fifo`, `taskset -c cpu` and as `account` when asked; stdin is closed.
///
/// # Errors
/// An empty `argv`.
pub fn command_in(
    ns: Option<&str>,
    cpu: Option<u32>,
    fifo: Option<i32>,
    account: Option<&Account>,
    argv: &[&str],
) -> std::io::Result<Command> {
    let (fifo, cpu) = (fifo.map(|p| p.to_string()), cpu.map(|c| c.to_string()));
    let run_as = account.map(Account::run_as_words).unwrap_or_default();
    let mut words: Vec<&str> = Vec::with_capacity(argv.len() + 6 + run_as.len());
    if let Some(p) = &fifo {
        words.extend(["chrt", "-f", p]);
    }
    if let Some(c) = &cpu {
        words.extend(["taskset", "-c", c]);
    }
    words.extend(run_as.iter().map(String::as_str));
    words.extend(argv);
    let Some((exe, args)) = words.split_first() else {
        return Err(std::io::Error::other("nothing to run"));
    };
    let mut c = match ns {
        Some(ns) => netns::exec_command(ns, Path::new(exe)),
        None => Command::new(exe),
    };
    c.args(args).stdin(Stdio::null());
    Ok(c)
}

/// Waits until something in namespace `ns` (this one when `None`) accepts a TCP connection
/// on `addr`, for at most `timeout`.
///
/// # Errors
/// What the wait saw, as a sentence.
pub fn wait_port(ns: Option<&str>, addr: SocketAddr, timeout: Duration) -> Result<(), String> {
    let ns = ns.map(str::to_string);
    std::thread::spawn(move || -> Result<(), String> {
        if let Some(ns) = &ns {
            netns::enter(ns).map_err(|e| e.to_string())?;
        }
        let start = Instant::now();
        loop {
            if std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
                return Ok(());
            }
            if start.elapsed() > timeout {
                return Err(format!("nothing listens on {addr} after {timeout:?}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    })
    .join()
    .expect("port waiter panicked")
}

/// Where and how to start a server.
#[derive(Clone, Debug, PartialEq)]
pub struct ServeSpec {
    /// Which server.
    pub kind: ServerKind,
    /// Its network namespace (this one when `None`).
    pub netns: Option<String>,
    /// The CPU it is pinned to (any when `None`).
    pub cpu: Option<u32>,
    /// The address it listens on (TCP; memcached also on UDP when [`ServeSpec::udp`]).
    pub addr: SocketAddr,
    /// memcached: listen on UDP too, on the same port.
    pub udp: bool,
    /// A private directory for its configuration, page and logs (nginx).
    pub dir: PathBuf,
    /// memcached: memory for items, MB.
    pub memory_mb: u32,
    /// How long it may take to accept connections.
    pub up_timeout: Duration,
}

impl ServeSpec {
    /// A server of `kind` on `addr`, in this namespace, unpinned, working in `dir`.
    pub fn new(kind: ServerKind, addr: SocketAddr, dir: &Path) -> ServeSpec {
        ServeSpec {
            kind,
            netns: None,
            cpu: None,
            addr,
            udp: false,
            dir: dir.to_path_buf(),
            memory_mb: 256,
            up_timeout: Duration::from_secs(5),
        }
    }
}

/// nginx's configuration: one worker, no access log, every temporary path in `dir`, the
/// page in `dir/www`, keep-alive connections that are never closed for their request
/// count (a load sends millions on one connection).
pub fn nginx_conf(dir: &Path, ip: IpAddr, port: u16, as_root: bool) -> String {
    format!(
        "{user}worker_processes 1;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d};\n  proxy_temp_path {d};\n  fastcgi_temp_path {d};\n  uwsgi_temp_path {d};\n  scgi_temp_path {d};\n\
         keepalive_requests 1000000;\n  server {{ listen {addr}; location / {{ root {d}/www; }} }}\n}}\n",
        user = if as_root { "user root;\n" } else { "" },
        d = dir.display(),
        addr = SocketAddr::new(ip, port),
    )
}

/// memcached's arguments for `spec` (one worker thread, UDP off unless asked).
pub fn memcached_args(spec: &ServeSpec, as_root: bool) -> Vec<String> {
    let port = spec.addr.port().to_string();
    let mut a: Vec<String> = Vec::new();
    if as_root {
        a.extend(["-u".into(), "root".into()]);
    }
    a.extend([
        "-l".into(),
        spec.addr.ip().to_string(),
        "-p".into(),
        port.clone(),
        "-U".into(),
        if spec.udp { port } else { "0".into() },
        "-t".into(),
        "1".into(),
        "-m".into(),
        spec.memory_mb.to_string(),
    ]);
    a
}

/// The executable of `kind`'s program on `PATH`.
///
/// # Errors
/// [`ServeError::Missing`], naming the program and its Debian package.
pub fn find(kind: ServerKind) -> Result<PathBuf, ServeError> {
    let (program, package) = kind.program();
    latlab_sys::supervise::find_on_path(program).ok_or(ServeError::Missing { program, package })
}

/// Starts the server `spec` describes and waits until it accepts connections.
///
/// # Errors
/// [`ServeError`]; a server that started but did not come up is stopped again.
pub fn start(spec: &ServeSpec) -> Result<Server, ServeError> {
    let exe = find(spec.kind)?;
    let exe_s = exe.to_string_lossy().into_owned();
    let as_root = netns::is_root();
    let name = spec.kind.name();
    let argv: Vec<String> = match spec.kind {
        ServerKind::Memcached => std::iter::once(exe_s)
            .chain(memcached_args(spec, as_root))
            .collect(),
        ServerKind::Nginx => {
            let d = &spec.dir;
            std::fs::create_dir_all(d.join("www")).map_err(io("creating nginx's directory"))?;
            std::fs::write(d.join("www/index.html"), PAGE.repeat(PAGE_REPEAT))
                .map_err(io("writing nginx's page"))?;
            let conf = d.join("nginx.conf");
            std::fs::write(
                &conf,
                nginx_conf(d, spec.addr.ip(), spec.addr.port(), as_root),
            )
            .map_err(io("writing nginx.conf"))?;
            vec![
                exe_s,
                "-c".into(),
                conf.to_string_lossy().into_owned(),
                "-p".into(),
                d.to_string_lossy().into_owned(),
            ]
        }
    };
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let child = command_in(spec.netns.as_deref(), spec.cpu, None, None, &argv)
        .and_then(|mut c| c.stdout(Stdio::null()).stderr(Stdio::piped()).spawn())
        .map_err(io(&format!("starting {name}")))?;
    let mut server = Server::new(child, name, None);
    if let Err(why) = wait_port(spec.netns.as_deref(), spec.addr, spec.up_timeout) {
        // its own words, when it has exited (a taken port, a bad address)
        let said = match server.child.try_wait() {
            Ok(Some(status)) => {
                let mut text = String::new();
                if let Some(mut e) = server.child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut text);
                }
                let last = text.lines().rev().find(|l| !l.trim().is_empty());
                format!(
                    "it exited ({status}){}",
                    last.map(|l| format!(": {}", l.trim())).unwrap_or_default()
                )
            }
            _ => why,
        };
        server.terminate();
        return Err(ServeError::NotUp { name, why: said });
    }
    Ok(server)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_are_refused() {
        for k in ServerKind::ALL {
            assert_eq!(ServerKind::from_name(k.name()), Some(k));
            assert!(k.default_target().contains("127.0.0.1"));
        }
        assert_eq!(ServerKind::from_name("apache"), None);
        assert_eq!(ServerKind::Nginx.program(), ("nginx", "nginx-light"));
    }

    #[test]
    fn memcached_listens_where_asked_and_on_udp_only_when_asked() {
        let addr: SocketAddr = "10.0.0.2:21211".parse().unwrap();
        let mut spec = ServeSpec::new(ServerKind::Memcached, addr, Path::new("/tmp/x"));
        let a = memcached_args(&spec, true);
        assert_eq!(&a[..2], ["-u", "root"]);
        let after =
            |flag: &str, a: &[String]| a[a.iter().position(|x| x == flag).unwrap() + 1].clone();
        assert_eq!(after("-l", &a), "10.0.0.2");
        assert_eq!(after("-p", &a), "21211");
        assert_eq!(after("-U", &a), "0");
        spec.udp = true;
        let a = memcached_args(&spec, false);
        assert!(!a.contains(&"-u".to_string()));
        assert_eq!(after("-U", &a), "21211");
    }

    #[test]
    fn nginx_conf_keeps_everything_in_its_directory() {
        let c = nginx_conf(Path::new("/s"), "127.0.0.1".parse().unwrap(), 28080, false);
        assert!(c.contains("listen 127.0.0.1:28080;"), "{c}");
        assert!(c.contains("pid /s/nginx.pid;"), "{c}");
        assert!(c.contains("root /s/www;"), "{c}");
        assert!(!c.contains("user root"), "{c}");
        assert!(
            nginx_conf(Path::new("/s"), "10.0.0.2".parse().unwrap(), 8080, true)
                .starts_with("user root;\n")
        );
    }

    #[test]
    fn a_missing_program_names_its_package() {
        let e = ServeError::Missing {
            program: "nginx",
            package: "nginx-light",
        };
        assert!(e.to_string().contains("Debian package nginx-light"), "{e}");
    }

    #[test]
    fn an_empty_command_is_an_error() {
        assert!(command_in(None, None, None, None, &[]).is_err());
        let c = command_in(None, Some(1), None, None, &["true"]).unwrap();
        assert_eq!(c.get_program(), "taskset");
    }
}

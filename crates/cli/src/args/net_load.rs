//! Options of `latlab net load`, the open-loop request generator against memcached and HTTP
//! servers, and their resolution into [`LoadConfig`].

use super::common::{duration_arg, number_in, positive_duration_arg, ArrivalsArg, OutputArgs};
use crate::exit::usage;
use clap::Args;
use latlab_core::parse::{parse_rate, Rate};
use latlab_core::units::Nanos;
use latlab_net::rpc::{LoadConfig, LoadIo, Protocol, SizeRange, Target};
use latlab_net::serve::ServerKind;

/// `--rate`: requests per second, `rps`, `krps`, `Mrps` (or the probe's `pps` units).
pub(crate) fn request_rate_arg(s: &str) -> Result<Rate, String> {
    let t = s.trim();
    let as_pps = t
        .strip_suffix("rps")
        .map(|n| format!("{n}pps"))
        .unwrap_or_else(|| t.to_string());
    match parse_rate(&as_pps) {
        Ok(r @ Rate::MilliPps(_)) => Ok(r),
        _ => Err(format!(
            "'{s}' is not valid; expected a positive request rate such as 500rps, 20krps, 1.5Mrps"
        )),
    }
}

/// `--serve`: the servers latlab can start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ServeArg {
    /// memcached, one worker thread (`-t 1`), UDP on the same port for memcached+udp.
    Memcached,
    /// nginx, one worker process, keep-alive, a 704-byte page at `/`.
    Nginx,
}

impl From<ServeArg> for ServerKind {
    fn from(a: ServeArg) -> ServerKind {
        match a {
            ServeArg::Memcached => ServerKind::Memcached,
            ServeArg::Nginx => ServerKind::Nginx,
        }
    }
}

/// `--io`: how the generator waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LoadIoArg {
    /// Sleep in ppoll until an answer or a margin before the next send, then poll without
    /// sleeping up to it (sends on time; the margin, 30–250 µs, is learnt from how late the
    /// thread's own timed wake-ups come back).
    Adaptive,
    /// Sleep in ppoll until an answer or the next send, never spin (as memaslap and wrk do:
    /// compare with them in this mode).
    Blocking,
    /// Never sleep: poll the sockets without waiting (the client CPU spins).
    Busy,
}

impl From<LoadIoArg> for LoadIo {
    fn from(a: LoadIoArg) -> LoadIo {
        match a {
            LoadIoArg::Adaptive => LoadIo::Adaptive,
            LoadIoArg::Blocking => LoadIo::Blocking,
            LoadIoArg::Busy => LoadIo::Busy,
        }
    }
}

fn get_ratio_arg(s: &str) -> Result<f64, String> {
    number_in(s, 0.0, 1.0)
}

/// Options of `latlab net load`.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// The server: memcached://IP:PORT, memcached+udp://IP:PORT or http://IP:PORT/PATH
    /// (with --serve: where the started server listens; a loopback default otherwise).
    #[arg(long, value_name = "URL", required_unless_present = "serve")]
    pub target: Option<String>,
    /// Start this server for the run and stop it afterwards (Debian memcached or nginx).
    #[arg(long, value_enum, value_name = "SERVER")]
    pub serve: Option<ServeArg>,
    /// Pin the server started by --serve to this CPU.
    #[arg(long, value_name = "CPU", requires = "serve")]
    pub serve_cpu: Option<u32>,
    /// Start the server of --serve inside this network namespace.
    #[arg(long, value_name = "NAME", requires = "serve")]
    pub serve_netns: Option<String>,
    /// Offered load (open loop), e.g. 500rps, 20krps.
    #[arg(long, default_value = "10krps", value_parser = request_rate_arg)]
    pub rate: Rate,
    /// Arrival process of the requests.
    #[arg(long, value_enum, default_value_t = ArrivalsArg::Constant)]
    pub arrivals: ArrivalsArg,
    /// Measured duration, after the warm-up.
    #[arg(long, short = 'd', default_value = "5s", value_parser = positive_duration_arg)]
    pub duration: Nanos,
    /// Warm-up: requests sent and answered, not recorded.
    #[arg(long, default_value = "1s", value_parser = duration_arg)]
    pub warmup: Nanos,
    /// How long to wait for outstanding answers after the last scheduled request.
    #[arg(long, default_value = "500ms", value_parser = duration_arg)]
    pub drain: Nanos,
    /// Connections (UDP: sockets) the requests are spread over.
    #[arg(long, short = 'c', default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub connections: u32,
    /// Most requests outstanding on one connection; a request that falls due while every
    /// connection has this many is late (sent when one frees, measured from its schedule).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub pipeline: u32,
    /// How the generator thread waits for answers and for its next send.
    #[arg(long, value_enum, default_value_t = LoadIoArg::Adaptive)]
    pub io: LoadIoArg,
    /// Generator threads (connections and rate split evenly, histograms merged exactly).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub threads: u32,
    /// memcached: fraction of gets (the rest are sets).
    #[arg(long, default_value = "0.9", value_parser = get_ratio_arg)]
    pub get_ratio: f64,
    /// memcached: keys in the key space, drawn uniformly.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub keys: u64,
    /// memcached: key size in bytes, or a uniform range MIN-MAX.
    #[arg(long, default_value = "32")]
    pub key_size: String,
    /// memcached: value size of sets in bytes, or a uniform range MIN-MAX.
    #[arg(long, default_value = "100")]
    pub value_size: String,
    /// memcached: do not set every key before the run (gets then miss until set).
    #[arg(long)]
    pub no_preload: bool,
    /// UDP: a request unanswered this long counts as timed out.
    #[arg(long, default_value = "1s", value_parser = positive_duration_arg)]
    pub timeout: Nanos,
    /// Interval of the stationarity check's medians.
    #[arg(long, default_value = "1s", value_parser = positive_duration_arg)]
    pub interval: Nanos,
    /// Seed of the arrivals and the request mix.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Generate from inside this network namespace (as created by `ip netns add`).
    #[arg(long, value_name = "NAME")]
    pub netns: Option<String>,
    #[command(flatten)]
    pub out: OutputArgs,
    #[command(flatten)]
    pub idle: super::common::IdleArgs,
}

impl LoadArgs {
    /// The target as given, or the started server's default.
    pub fn target_text(&self) -> String {
        match (&self.target, self.serve) {
            (Some(t), _) => t.clone(),
            (None, Some(k)) => ServerKind::from(k).default_target().to_string(),
            (None, None) => String::new(),
        }
    }

    /// The resolved configuration; a usage error naming the flag otherwise.
    pub fn config(&self) -> anyhow::Result<LoadConfig> {
        let target =
            Target::parse(&self.target_text()).map_err(|e| usage(format!("--target: {e}")))?;
        if let Some(kind) = self.serve.map(ServerKind::from) {
            let fits = match kind {
                ServerKind::Memcached => target.protocol.is_memcached(),
                ServerKind::Nginx => target.protocol == Protocol::Http,
            };
            if !fits {
                return Err(usage(format!(
                    "--target: {} does not speak to --serve {}; expected {}",
                    self.target_text(),
                    kind.name(),
                    match kind {
                        ServerKind::Memcached => "memcached://IP:PORT or memcached+udp://IP:PORT",
                        ServerKind::Nginx => "http://IP:PORT/PATH",
                    }
                )));
            }
            // the server is placed by `taskset`, which may use any online CPU (this process
            // itself may run under a narrower mask, the client's)
            if let Some(c) = self.serve_cpu {
                let online = latlab_sys::sched::online_cpus();
                if c >= online {
                    return Err(usage(format!(
                        "--serve-cpu: CPU {c} does not exist; expected 0 to {}",
                        online - 1
                    )));
                }
            }
        }
        let mut cfg = LoadConfig::new(target);
        cfg.milli_rps = match self.rate {
            Rate::MilliPps(m) => m,
            Rate::Bps(_) => return Err(usage("--rate: expected requests per second, e.g. 20krps")),
        };
        cfg.arrivals = self.arrivals.into();
        cfg.duration = self.duration;
        cfg.warmup = self.warmup;
        cfg.drain = self.drain;
        cfg.connections = self.connections;
        cfg.pipeline = self.pipeline;
        cfg.io = self.io.into();
        cfg.threads = self.threads;
        cfg.get_ratio = self.get_ratio;
        cfg.keys = self.keys;
        cfg.key_size =
            SizeRange::parse(&self.key_size).map_err(|e| usage(format!("--key-size: {e}")))?;
        cfg.value_size =
            SizeRange::parse(&self.value_size).map_err(|e| usage(format!("--value-size: {e}")))?;
        cfg.preload = !self.no_preload;
        cfg.timeout = self.timeout;
        cfg.interval = self.interval;
        cfg.seed = self.seed;
        cfg.validate().map_err(usage)?;
        Ok(cfg)
    }
}

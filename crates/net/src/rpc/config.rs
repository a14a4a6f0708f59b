//! What `latlab net load` is told: the target (protocol and address), the offered load and
//! its arrival process, connections and pipelining, the memcached request mix, resolved
//! and validated once.

use super::memcached::{digits, MAX_KEY};
use crate::probe::Arrivals;
use latlab_core::hist::HistConfig;
use latlab_core::units::Nanos;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// The protocol spoken to the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// memcached's ASCII protocol over TCP (`memcached://`).
    MemcachedTcp,
    /// memcached's ASCII protocol over UDP, one datagram per request (`memcached+udp://`).
    MemcachedUdp,
    /// HTTP/1.1 keep-alive GET (`http://`).
    Http,
}

impl Protocol {
    /// Whether it speaks memcached.
    pub fn is_memcached(self) -> bool {
        matches!(self, Protocol::MemcachedTcp | Protocol::MemcachedUdp)
    }
}

/// Where requests go.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    /// The protocol.
    pub protocol: Protocol,
    /// The server's address.
    pub addr: SocketAddr,
    /// HTTP: the path requested (`/` by default).
    pub path: String,
}

/// The accepted forms of a target, quoted in errors.
pub const TARGET_FORMS: &str =
    "memcached://IP:PORT, memcached+udp://IP:PORT or http://IP:PORT/PATH";

impl Target {
    /// Parses `memcached://IP:PORT`, `memcached+udp://IP:PORT` or `http://IP:PORT/PATH`
    /// (an IP address, not a name: nothing is looked up).
    pub fn parse(s: &str) -> Result<Target, String> {
        let bad = |why: &str| {
            Err(format!(
                "'{s}' is not valid ({why}); expected {TARGET_FORMS}"
            ))
        };
        let Some((scheme, rest)) = s.trim().split_once("://") else {
            return bad("no scheme");
        };
        let protocol = match scheme {
            "memcached" => Protocol::MemcachedTcp,
            "memcached+udp" => Protocol::MemcachedUdp,
            "http" => Protocol::Http,
            _ => return bad(&format!("unknown scheme '{scheme}'")),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if protocol.is_memcached() && path != "/" {
            return bad("a memcached target has no path");
        }
        let Ok(addr) = authority.parse::<SocketAddr>() else {
            return bad("the host must be an IP address with a port");
        };
        if addr.port() == 0 {
            return bad("port 0");
        }
        Ok(Target {
            protocol,
            addr,
            path: path.to_string(),
        })
    }
}

/// A size drawn uniformly from `min..=max` bytes (fixed when equal).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeRange {
    /// Smallest size.
    pub min: usize,
    /// Largest size.
    pub max: usize,
}

impl SizeRange {
    /// The accepted form, quoted in errors.
    pub const FORMS: &'static str = "a size in bytes or a range MIN-MAX, e.g. 32 or 16-64";

    /// Parses `N` or `MIN-MAX`.
    pub fn parse(s: &str) -> Result<SizeRange, String> {
        let num = |t: &str| {
            t.trim()
                .parse::<usize>()
                .map_err(|_| format!("'{s}' is not valid; expected {}", SizeRange::FORMS))
        };
        let r = match s.split_once('-') {
            Some((a, b)) => SizeRange {
                min: num(a)?,
                max: num(b)?,
            },
            None => {
                let n = num(s)?;
                SizeRange { min: n, max: n }
            }
        };
        if r.min > r.max {
            return Err(format!("'{s}' is not valid; MIN is above MAX"));
        }
        Ok(r)
    }

    /// The size for a uniform draw `u` in (0, 1].
    pub fn pick(self, u: f64) -> usize {
        let span = (self.max - self.min + 1) as f64;
        (self.min + (u * span) as usize).min(self.max)
    }
}

/// How the generator thread waits for answers and for its next send.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadIo {
    /// Sleep in `ppoll` until an answer arrives or a margin before the next send, then poll
    /// the sockets without sleeping up to it: sends leave on time, and an answer that lands
    /// near a send is seen at once (at high rates the thread never sleeps). The margin is
    /// learnt from how late the thread's timed wake-ups come back (`engine::WakeMargin`).
    #[default]
    Adaptive,
    /// Sleep in `ppoll` until an answer arrives or the next send falls due, never spinning:
    /// what an epoll client such as memaslap or wrk does. Each answer and each send then
    /// waits for a wake-up, which the latencies include (like the peers').
    Blocking,
    /// Never sleep: poll the sockets without waiting (the client CPU spins).
    Busy,
}

impl LoadIo {
    /// Its name as written in results and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            LoadIo::Adaptive => "adaptive",
            LoadIo::Blocking => "blocking",
            LoadIo::Busy => "busy",
        }
    }
}

/// Everything a load run needs, resolved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadConfig {
    /// Where requests go.
    pub target: Target,
    /// Offered load, thousandths of requests per second.
    pub milli_rps: u64,
    /// Arrival process of the requests.
    pub arrivals: Arrivals,
    /// Measured duration (after warm-up).
    pub duration: Nanos,
    /// Warm-up: requests sent and answered, not recorded.
    pub warmup: Nanos,
    /// How long to wait for outstanding answers after the last scheduled request.
    pub drain: Nanos,
    /// Connections (UDP: sockets) the generator spreads requests over.
    pub connections: u32,
    /// Most requests outstanding on one connection.
    pub pipeline: u32,
    /// How the generator waits (results written before it existed read as adaptive, the
    /// only behaviour then).
    #[serde(default)]
    pub io: LoadIo,
    /// Generator threads; connections and rate are split evenly, each thread with its own
    /// seeded stream, their histograms merged exactly.
    pub threads: u32,
    /// memcached: fraction of requests that are gets (the rest are sets).
    pub get_ratio: f64,
    /// memcached: keys in the key space (drawn uniformly).
    pub keys: u64,
    /// memcached: key sizes.
    pub key_size: SizeRange,
    /// memcached: value sizes of sets.
    pub value_size: SizeRange,
    /// memcached: set every key once before the run, so gets hit.
    pub preload: bool,
    /// UDP: a request unanswered this long is counted as timed out and its slot freed.
    pub timeout: Nanos,
    /// Interval of the stationarity check's medians.
    pub interval: Nanos,
    /// Histogram range and precision.
    pub hist: HistConfig,
    /// Seed of the arrivals and the request mix.
    pub seed: u64,
}

/// Largest value a UDP request may carry (one datagram, no fragmentation on a 1500-byte MTU).
pub const UDP_MAX_VALUE: usize = 1_200;
/// Largest memcached value sent.
pub const MAX_VALUE: usize = 1 << 20;

impl LoadConfig {
    /// Defaults towards `target`: 10 krps constant, 5 s after 1 s warm-up, 8 connections
    /// with at most 4 requests outstanding each, 90 % gets over 10,000 keys of 32 bytes,
    /// 100-byte values.
    pub fn new(target: Target) -> LoadConfig {
        LoadConfig {
            target,
            milli_rps: 10_000_000,
            arrivals: Arrivals::Constant,
            duration: Nanos::from_secs(5),
            warmup: Nanos::from_secs(1),
            drain: Nanos::from_millis(500),
            connections: 8,
            pipeline: 4,
            io: LoadIo::Adaptive,
            threads: 1,
            get_ratio: 0.9,
            keys: 10_000,
            key_size: SizeRange { min: 32, max: 32 },
            value_size: SizeRange { min: 100, max: 100 },
            preload: true,
            timeout: Nanos::from_secs(1),
            interval: Nanos::SECOND,
            hist: crate::probe::LATENCY_HIST,
            seed: 1,
        }
    }

    /// Checks the combination; the message names the flag.
    pub fn validate(&self) -> Result<(), String> {
        if self.milli_rps == 0 {
            return Err("--rate: must be positive".into());
        }
        if !(1..=4096).contains(&self.connections) {
            return Err("--connections: expected 1 to 4096".into());
        }
        if !(1..=1024).contains(&self.pipeline) {
            return Err("--pipeline: expected 1 to 1024".into());
        }
        if self.threads == 0 || self.threads > self.connections {
            return Err("--threads: expected 1 to the number of --connections".into());
        }
        if !(0.0..=1.0).contains(&self.get_ratio) {
            return Err("--get-ratio: expected a number from 0 to 1".into());
        }
        if self.target.protocol.is_memcached() {
            if self.keys == 0 {
                return Err("--keys: must be positive".into());
            }
            let need = digits(self.keys - 1) + 1;
            if self.key_size.min < need || self.key_size.max > MAX_KEY {
                return Err(format!(
                    "--key-size: {} keys need keys of {need} to {MAX_KEY} bytes",
                    self.keys
                ));
            }
            let max_value = if self.target.protocol == Protocol::MemcachedUdp {
                UDP_MAX_VALUE
            } else {
                MAX_VALUE
            };
            if self.value_size.max > max_value {
                return Err(format!(
                    "--value-size: at most {max_value} bytes over {}",
                    if max_value == UDP_MAX_VALUE {
                        "UDP (one datagram)"
                    } else {
                        "TCP"
                    }
                ));
            }
        }
        Ok(())
    }

    /// Offered load in requests per second.
    pub fn rps(&self) -> f64 {
        self.milli_rps as f64 / 1000.0
    }

    /// The configuration of thread `i` of [`LoadConfig::threads`]: its share of the
    /// connections and of the rate, its own seed.
    pub fn share(&self, i: u32) -> LoadConfig {
        let t = self.threads.max(1);
        let conns = self.connections / t + u32::from(i < self.connections % t);
        let rate =
            self.milli_rps / u64::from(t) + u64::from(u64::from(i) < self.milli_rps % u64::from(t));
        LoadConfig {
            connections: conns,
            milli_rps: rate.max(1),
            threads: 1,
            seed: self
                .seed
                .wrapping_add(0x9e37_79b9_7f4a_7c15u64.wrapping_mul(u64::from(i))),
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        let t = Target::parse("memcached://10.0.0.2:11211").unwrap();
        assert_eq!((t.protocol, t.addr.port()), (Protocol::MemcachedTcp, 11211));
        let t = Target::parse("memcached+udp://127.0.0.1:11211").unwrap();
        assert_eq!(t.protocol, Protocol::MemcachedUdp);
        let t = Target::parse("http://[::1]:8080/a/b?c").unwrap();
        assert_eq!((t.protocol, t.path.as_str()), (Protocol::Http, "/a/b?c"));
        assert_eq!(Target::parse("http://127.0.0.1:80").unwrap().path, "/");
        for bad in [
            "127.0.0.1:80",
            "ftp://1.2.3.4:21",
            "http://localhost:80/",
            "http://1.2.3.4/",
            "memcached://1.2.3.4:11211/x",
            "http://1.2.3.4:0/",
        ] {
            let e = Target::parse(bad).unwrap_err();
            assert!(e.contains("expected memcached://"), "{e}");
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(
            SizeRange::parse("32").unwrap(),
            SizeRange { min: 32, max: 32 }
        );
        let r = SizeRange::parse("16-64").unwrap();
        assert_eq!((r.pick(1e-12), r.pick(0.5), r.pick(1.0)), (16, 40, 64));
        assert!(SizeRange::parse("64-16").is_err());
        assert!(SizeRange::parse("x").is_err());
    }

    #[test]
    fn validation_names_the_flag() {
        let t = Target::parse("memcached+udp://127.0.0.1:11211").unwrap();
        let mut c = LoadConfig::new(t);
        assert_eq!(c.validate(), Ok(()));
        c.key_size = SizeRange { min: 4, max: 4 };
        assert!(c.validate().unwrap_err().starts_with("--key-size"));
        c.key_size = SizeRange { min: 8, max: 8 };
        c.value_size = SizeRange { min: 10, max: 5000 };
        assert!(c.validate().unwrap_err().starts_with("--value-size"));
        c.value_size = SizeRange { min: 10, max: 10 };
        c.threads = 9;
        assert!(c.validate().unwrap_err().starts_with("--threads"));
    }

    #[test]
    fn shares_add_up() {
        let mut c = LoadConfig::new(Target::parse("http://127.0.0.1:80/").unwrap());
        c.threads = 3;
        c.connections = 8;
        c.milli_rps = 10_000_001;
        let shares: Vec<_> = (0..3).map(|i| c.share(i)).collect();
        assert_eq!(shares.iter().map(|s| s.connections).sum::<u32>(), 8);
        assert_eq!(shares.iter().map(|s| s.milli_rps).sum::<u64>(), 10_000_001);
        assert_ne!(shares[0].seed, shares[1].seed);
    }
}

//! Reading what `dpdk-testpmd` prints (pure): whether both ports came up and forwarding
//! started, and the forward statistics it prints when it stops.
//!
//! ```text
//! Port 0 Link up at 10 Gbps FDX Fixed
//! ...
//! Start automatic packet forwarding            (or: start packet forwarding)
//!   ---------------------- Forward statistics for port 0  ----------------------
//!   RX-packets: 20000          RX-dropped: 0             RX-total: 20000
//!   TX-packets: 0              TX-dropped: 0             TX-total: 0
//! ```

use serde::{Deserialize, Serialize};

/// One port's forward statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortStats {
    /// Frames received by the port and handed to forwarding.
    pub rx: u64,
    /// Frames the port dropped on receive (no mbuf, ring full).
    pub rx_dropped: u64,
    /// Frames sent by the port.
    pub tx: u64,
    /// Frames forwarding gave the port that it could not send.
    pub tx_dropped: u64,
}

/// What testpmd said when it stopped: per port, in port order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForwardStats {
    /// Port 0, port 1.
    pub ports: Vec<PortStats>,
}

impl ForwardStats {
    /// Frames forwarded from port 0 to port 1: received on 0 (port 1's sends also count
    /// what arrived on port 1 and went back out of 0's peer, which the testbed does not
    /// send).
    pub fn a_to_b(&self) -> (u64, u64) {
        let rx = self.ports.first().map_or(0, |p| p.rx);
        let tx = self.ports.get(1).map_or(0, |p| p.tx);
        (rx, tx)
    }

    /// Frames dropped on any port, receive or send.
    pub fn dropped(&self) -> u64 {
        self.ports.iter().map(|p| p.rx_dropped + p.tx_dropped).sum()
    }
}

/// The number after `key` on `line` (`RX-packets: 20000`).
fn field(line: &str, key: &str) -> Option<u64> {
    let rest = &line[line.find(key)? + key.len()..];
    rest.split_whitespace().next()?.parse().ok()
}

/// The forward statistics of every port, from testpmd's output; `None` when it printed
/// none (it did not stop cleanly).
pub fn parse_forward_stats(text: &str) -> Option<ForwardStats> {
    let mut ports: Vec<(usize, PortStats)> = Vec::new();
    let mut current: Option<usize> = None;
    for line in text.lines() {
        if let Some(i) = line.find("Forward statistics for port") {
            let n = line[i + "Forward statistics for port".len()..]
                .split_whitespace()
                .next()
                .and_then(|w| w.parse().ok());
            current = n;
            if let Some(n) = n {
                ports.retain(|(p, _)| *p != n);
                ports.push((n, PortStats::default()));
            }
            continue;
        }
        if line.contains("Accumulated forward statistics") {
            current = None;
            continue;
        }
        let Some(n) = current else { continue };
        let Some((_, st)) = ports.iter_mut().find(|(p, _)| *p == n) else {
            continue;
        };
        if line.contains("RX-packets:") {
            st.rx = field(line, "RX-packets:").unwrap_or(0);
            st.rx_dropped = field(line, "RX-dropped:").unwrap_or(0);
        } else if line.contains("TX-packets:") {
            st.tx = field(line, "TX-packets:").unwrap_or(0);
            st.tx_dropped = field(line, "TX-dropped:").unwrap_or(0);
        } else if line.trim_start().starts_with("----") {
            current = None;
        }
    }
    if ports.is_empty() {
        return None;
    }
    ports.sort_by_key(|(p, _)| *p);
    Some(ForwardStats {
        ports: ports.into_iter().map(|(_, s)| s).collect(),
    })
}

/// How far testpmd got in starting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Health {
    /// Still starting.
    Starting,
    /// Both ports' links are up and forwarding has started.
    Forwarding,
    /// It gave up: EAL printed the cause of its exit.
    Failed,
}

/// Reads the start-up output: `ports` links up (`Port N Link up`) and forwarding started.
pub fn health(text: &str, ports: usize) -> Health {
    if text.contains("EAL: Error") || text.contains("Cause:") {
        return Health::Failed;
    }
    let up = (0..ports)
        .filter(|n| {
            let key = format!("Port {n} Link up");
            text.lines().any(|l| l.trim_start().starts_with(&key))
        })
        .count();
    let started = text.contains("start packet forwarding")
        || text.contains("Start automatic packet forwarding");
    if up == ports && started {
        Health::Forwarding
    } else {
        Health::Starting
    }
}

/// The line that says why testpmd gave up (`Cause: …`, or the last EAL/PMD complaint).
pub fn failure_reason(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if let Some(c) = lines.iter().find(|l| l.starts_with("Cause:")) {
        let before = lines
            .iter()
            .take_while(|l| !l.starts_with("Cause:"))
            .filter(|l| l.contains("Fail") || l.contains("fail") || l.contains("rror"))
            .filter(|l| !l.starts_with("EAL: Error - exiting"))
            .last();
        return match before {
            Some(b) => format!("{} ({b})", c.trim_start_matches("Cause:").trim()),
            None => c.trim_start_matches("Cause:").trim().to_string(),
        };
    }
    lines
        .last()
        .map_or_else(|| "it printed nothing".into(), |l| l.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const STOPPED: &str = "Telling cores to stop...
Waiting for lcores to finish...

  ---------------------- Forward statistics for port 0  ----------------------
  RX-packets: 20000          RX-dropped: 3             RX-total: 20003
  TX-packets: 7              TX-dropped: 0             TX-total: 7
  ----------------------------------------------------------------------------

  ---------------------- Forward statistics for port 1  ----------------------
  RX-packets: 7              RX-dropped: 0             RX-total: 7
  TX-packets: 19990          TX-dropped: 10            TX-total: 20000
  ----------------------------------------------------------------------------

  +++++++++++++++ Accumulated forward statistics for all ports+++++++++++++++
  RX-packets: 20007          RX-dropped: 3             RX-total: 20010
  TX-packets: 19997          TX-dropped: 10            TX-total: 20007
  ++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++

Done.
";

    #[test]
    fn forward_statistics_are_read_per_port() {
        let s = parse_forward_stats(STOPPED).unwrap();
        assert_eq!(
            s.ports,
            [
                PortStats {
                    rx: 20000,
                    rx_dropped: 3,
                    tx: 7,
                    tx_dropped: 0
                },
                PortStats {
                    rx: 7,
                    rx_dropped: 0,
                    tx: 19990,
                    tx_dropped: 10
                }
            ]
        );
        assert_eq!(s.a_to_b(), (20000, 19990));
        assert_eq!(s.dropped(), 13);
        assert_eq!(parse_forward_stats("Port 0 is closed\nBye...\n"), None);
    }

    #[test]
    fn the_last_statistics_of_a_port_count() {
        // `stop` then exit prints them twice: the second block is the one that stays
        let twice = format!("{STOPPED}{}", STOPPED.replace("20000 ", "20100 "));
        assert_eq!(parse_forward_stats(&twice).unwrap().ports[0].rx, 20100);
    }

    #[test]
    fn health_waits_for_both_links_and_the_start() {
        let mut t = String::from("Configuring Port 0 (socket 0)\nPort 0: 7E:E1:3F:CB:4E:70\n");
        assert_eq!(health(&t, 2), Health::Starting);
        t.push_str("Checking link statuses...\nPort 0 Link up at 10 Gbps FDX Fixed\nPort 1 Link up at 10 Gbps FDX Fixed\nDone\n");
        assert_eq!(
            health(&t, 2),
            Health::Starting,
            "links up, not forwarding yet"
        );
        t.push_str("No commandline core given, start packet forwarding\n");
        assert_eq!(health(&t, 2), Health::Forwarding);
        assert_eq!(
            health("Port 0 Link down\nstart packet forwarding\n", 1),
            Health::Starting
        );
    }

    #[test]
    fn a_failed_start_says_why() {
        let t = "testpmd: create a new mbuf pool <mb_pool_0>: n=2048, size=2176, socket=0
eth_rx_queue_setup(): Failed to configure xdp socket
Fail to configure port 1 rx queues
EAL: Error - exiting with code: 1
  Cause: Start ports failed
";
        assert_eq!(health(t, 2), Health::Failed);
        assert_eq!(
            failure_reason(t),
            "Start ports failed (Fail to configure port 1 rx queues)"
        );
        assert_eq!(failure_reason(""), "it printed nothing");
    }
}

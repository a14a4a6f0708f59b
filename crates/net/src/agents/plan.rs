//! The plan rank 0 broadcasts: the load split among the agents, their namespaces and
//! addresses, and the versions and test hooks every rank reads (pure).

use super::clock::ClockHook;
use super::oneway::{testbed_streams, StreamSpec};
use crate::probe::{Arrivals, ProbeConfig};
use crate::run::ProbeJob;
use serde::{Deserialize, Serialize};

/// Environment variable of the test hook that injects an offset and drift into one
/// agent's clock: `RANK:OFFSET_NS:DRIFT_PPM`.
pub const CLOCK_HOOK: &str = "LATLAB_TEST_AGENT_CLOCK";
/// Environment variable of the test hook that makes one rank claim another latlab
/// version: `RANK:VERSION`.
pub const VERSION_HOOK: &str = "LATLAB_TEST_AGENT_VERSION";

/// What one agent runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentSpec {
    /// Its MPI rank.
    pub rank: usize,
    /// The network namespace it probes from (`None`: the rank's own).
    pub namespace: Option<String>,
    /// Its probe: its share of the rate and flows, its own seed, its addresses.
    pub job: ProbeJob,
}

/// The plan rank 0 broadcasts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentsPlan {
    /// The latlab version of rank 0.
    pub version: String,
    /// The whole probe as configured (total rate and flows).
    pub total: ProbeConfig,
    /// One per agent, rank 1 first.
    pub agents: Vec<AgentSpec>,
    /// Ping-pong exchanges per clock round.
    pub exchanges_per_round: u32,
    /// Time between clock rounds during the run, ns.
    pub round_period_ns: u64,
    /// Time from the broadcast of the start to the start, ns.
    pub start_lead_ns: u64,
    /// The one-way stamp streams across agents (on the testbed; none otherwise).
    #[serde(default)]
    pub one_way: Vec<StreamSpec>,
    /// The clock test hook ([`CLOCK_HOOK`]), resolved on rank 0.
    #[serde(default)]
    pub clock_hook: Option<ClockHook>,
}

/// Why a load cannot be split.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum SplitError {
    /// No agent.
    #[error("--agents needs at least 2 MPI ranks (rank 0 coordinates, ranks 1.. generate); run it under mpirun -n K with K >= 2")]
    NoAgents,
    /// Fewer flows than agents.
    #[error("--flows {flows} is fewer than the {agents} agents: every agent needs a flow of its own (give --flows {agents} or more)")]
    Flows {
        /// Flows configured.
        flows: u16,
        /// Agents.
        agents: usize,
    },
    /// Less than one probe per second for an agent.
    #[error("--rate is too low to split among {agents} agents (each needs at least 1 pps)")]
    Rate {
        /// Agents.
        agents: usize,
    },
    /// A mode the agents do not run.
    #[error("--agents runs the open loop only (no --mode pingpong, no --ci-width: agents stop together at --duration)")]
    Mode,
    /// An agent's share fails the probe's checks ([`ProbeConfig::validate`]).
    #[error("{0}")]
    Probe(String),
}

/// An agent's seed: the run's seed and the agent's index through splitmix64, so the
/// agents' Poisson streams are independent (and the same run gives the same streams).
pub fn agent_seed(seed: u64, index: usize) -> u64 {
    let mut z = seed ^ (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Splits `total` among `agents` agents: the rate and the flows as evenly as whole units
/// allow (the first agents take the remainders), the arrival process unchanged (the
/// superposition of independent Poisson streams is Poisson at the summed rate; constant
/// streams are phase-shifted by a fraction of the gap so they do not send in lockstep),
/// and an independent seed each.
///
/// # Errors
/// [`SplitError`] when there is no agent, fewer flows than agents, or less than 1 pps each.
pub fn split(total: &ProbeConfig, agents: usize) -> Result<Vec<ProbeConfig>, SplitError> {
    if agents == 0 {
        return Err(SplitError::NoAgents);
    }
    if total.mode != crate::probe::Mode::OpenLoop || total.ci_width.is_some() {
        return Err(SplitError::Mode);
    }
    if usize::from(total.flows) < agents {
        return Err(SplitError::Flows {
            flows: total.flows,
            agents,
        });
    }
    if total.milli_pps / (agents as u64) < 1_000 {
        return Err(SplitError::Rate { agents });
    }
    let n = agents as u64;
    Ok((0..agents)
        .map(|i| {
            let mut c = total.clone();
            c.milli_pps = total.milli_pps / n + u64::from((i as u64) < total.milli_pps % n);
            let f = usize::from(total.flows);
            c.flows = (f / agents + usize::from(i < f % agents)) as u16;
            c.seed = agent_seed(total.seed, i);
            c
        })
        .collect())
}

/// The plan for `agents` agents (ranks `1..=agents`) of `total`: the load split, and with
/// `testbed` agent `i` in generator namespace `i` with that generator's addresses
/// (otherwise every agent probes from the addresses of `total`, on its own host).
///
/// # Errors
/// [`SplitError`] when the load cannot be split, or an agent's share fails the probe's
/// checks.
pub fn plan(total: &ProbeJob, agents: usize, testbed: bool) -> Result<AgentsPlan, SplitError> {
    let parts = split(&total.probe, agents)?;
    let n = parts.len();
    let agents = parts
        .into_iter()
        .enumerate()
        .map(|(i, mut c)| {
            let namespace = testbed.then(|| crate::testbed::gen_ns(i));
            if testbed {
                let t = crate::testbed::probe_config_of(i);
                c.target = t.target;
                c.tx_bind = t.tx_bind;
                c.rx_bind = t.rx_bind;
            }
            Ok(AgentSpec {
                rank: i + 1,
                namespace,
                job: ProbeJob {
                    probe: c
                        .validated()
                        .map_err(|e| SplitError::Probe(e.to_string()))?,
                    ..total.clone()
                },
            })
        })
        .collect::<Result<_, SplitError>>()?;
    Ok(AgentsPlan {
        version: env!("CARGO_PKG_VERSION").to_string(),
        total: ProbeConfig::clone(&total.probe),
        agents,
        exchanges_per_round: 16,
        round_period_ns: 1_000_000_000,
        start_lead_ns: 500_000_000,
        one_way: if testbed {
            testbed_streams(n)
        } else {
            Vec::new()
        },
        clock_hook: None,
    })
}

/// Delay of agent `i`'s constant schedule against agent 0's, ns: `i/n` of its gap (so
/// constant streams interleave instead of sending together); none for Poisson.
pub fn phase_ns(cfg: &ProbeConfig, index: usize, agents: usize) -> u64 {
    match cfg.arrivals {
        Arrivals::Poisson => 0,
        Arrivals::Constant => {
            let gap = 1e12 / cfg.milli_pps.max(1) as f64;
            (gap * index as f64 / agents.max(1) as f64) as u64
        }
    }
}

/// This rank's version, or the one the version hook makes it claim.
pub fn own_version(rank: usize) -> String {
    let real = env!("CARGO_PKG_VERSION").to_string();
    std::env::var(VERSION_HOOK)
        .ok()
        .and_then(|v| {
            let (r, ver) = v.split_once(':')?;
            (r.trim().parse::<usize>().ok()? == rank).then(|| ver.to_string())
        })
        .unwrap_or(real)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn total(mpps: u64, flows: u16) -> ProbeConfig {
        let mut c = ProbeConfig::new("10.0.0.1:7000".parse().unwrap());
        c.milli_pps = mpps;
        c.flows = flows;
        c.arrivals = Arrivals::Poisson;
        c
    }

    #[test]
    fn the_split_adds_up_to_the_total() {
        let t = total(10_000_001, 5);
        let parts = split(&t, 2).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts.iter().map(|p| p.milli_pps).sum::<u64>(), t.milli_pps);
        assert_eq!(parts.iter().map(|p| u64::from(p.flows)).sum::<u64>(), 5);
        assert_eq!((parts[0].flows, parts[1].flows), (3, 2));
        assert_eq!(parts[0].milli_pps, 5_000_001);
        assert_ne!(parts[0].seed, parts[1].seed);
        assert!(parts.iter().all(|p| p.arrivals == Arrivals::Poisson));
        // the same run splits the same way
        assert_eq!(split(&t, 2).unwrap(), parts);
    }

    #[test]
    fn a_split_that_cannot_work_is_refused() {
        assert_eq!(split(&total(10_000, 1), 0), Err(SplitError::NoAgents));
        assert_eq!(
            split(&total(10_000_000, 1), 2),
            Err(SplitError::Flows {
                flows: 1,
                agents: 2
            })
        );
        assert_eq!(
            split(&total(1_500, 2), 2),
            Err(SplitError::Rate { agents: 2 })
        );
        let mut pp = total(10_000_000, 2);
        pp.mode = crate::probe::Mode::Pingpong;
        assert_eq!(split(&pp, 2), Err(SplitError::Mode));
    }

    #[test]
    fn agent_seeds_differ_from_each_other_and_from_the_run_seed() {
        let s: Vec<u64> = (0..8).map(|i| agent_seed(1, i)).collect();
        for (i, a) in s.iter().enumerate() {
            assert_ne!(*a, 1);
            assert!(s[i + 1..].iter().all(|b| b != a));
        }
    }

    #[test]
    fn constant_streams_interleave() {
        let mut c = total(10_000_000, 2); // 10 kpps: 100 µs gaps
        c.arrivals = Arrivals::Constant;
        assert_eq!(phase_ns(&c, 0, 2), 0);
        assert_eq!(phase_ns(&c, 1, 2), 50_000);
        c.arrivals = Arrivals::Poisson;
        assert_eq!(phase_ns(&c, 1, 2), 0);
    }
}

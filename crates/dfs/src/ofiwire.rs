//! What the libfabric transport of `dfs run` and `dfs bench` shares (feature `ofi`): the
//! provider rank 0 resolves, the endpoints every rank opens and connects (addresses and
//! memory keys exchanged over MPI, which launched the ranks), tagged messages, and the
//! quiescent end of a phase.
//!
//! libfabric progress is manual with the providers here (tcp;ofi_rxm, shm): a rank's
//! writes and messages only complete while their targets poll. So a rank that is done
//! cannot simply leave for an MPI barrier while peers still wait on it. [`OfiWorld::finish`]
//! ends a phase: complete one's own operations, send `FIN` to every rank, and keep polling
//! until every rank's `FIN` has arrived; after that nothing is in flight anywhere.

use latlab_sys::ofi::{self, Endpoint, OfiError, Peer, RegionId, RemoteRegion};
use mpi::traits::*;

/// Bytes reserved per rank for an endpoint address in the exchange.
const ADDR_MAX: usize = 256;
/// Bytes of the header every message carries: tag and sending rank.
const HEADER: usize = 8;
/// Tag of the end-of-phase message (not a tag the runtime uses).
const TAG_FIN: u32 = 0xffff;

/// Rank 0's choice of provider: the one asked for if it is available, else libfabric's
/// first (which honours `FI_PROVIDER`). `Err` is one line naming the flag and the
/// providers available.
pub fn resolve_provider(wanted: Option<&str>) -> Result<String, String> {
    let list = ofi::providers().map_err(|e| format!("--transport ofi: {e}"))?;
    let names = || {
        if list.is_empty() {
            "none".to_string()
        } else {
            list.join(", ")
        }
    };
    match wanted {
        Some(w) if list.iter().any(|p| p == w) => Ok(w.to_string()),
        Some(w) => Err(format!(
            "--ofi-provider '{w}': no such libfabric provider with RDM endpoints, RMA and messages here (available: {})",
            names()
        )),
        None => list.first().cloned().ok_or_else(|| {
            format!(
                "--transport ofi: no libfabric provider with RDM endpoints, RMA and messages here{}",
                std::env::var("FI_PROVIDER")
                    .map(|p| format!(" (FI_PROVIDER={p})"))
                    .unwrap_or_default()
            )
        }),
    }
}

/// One rank's endpoint, connected to every rank of the MPI world.
pub(crate) struct OfiWorld {
    pub(crate) ep: Endpoint,
    peers: Vec<Peer>,
    rank: usize,
    tx: Vec<u8>,
    fins: usize,
}

impl OfiWorld {
    /// Opens an endpoint of `provider` on every rank (collective) and exchanges the
    /// addresses over MPI.
    pub(crate) fn connect(world: &impl Communicator, provider: &str) -> Result<Self, OfiError> {
        let mut ep = Endpoint::open(Some(provider))?;
        let me = ep.address()?;
        if me.len() >= ADDR_MAX {
            return Err(OfiError::Invalid("endpoint address longer than 255 bytes"));
        }
        let mut mine = vec![0u8; ADDR_MAX];
        mine[0] = me.len() as u8;
        mine[1..=me.len()].copy_from_slice(&me);
        let n = world.size() as usize;
        let mut all = vec![0u8; n * ADDR_MAX];
        world.all_gather_into(&mine[..], &mut all[..]);
        let peers = all
            .chunks_exact(ADDR_MAX)
            .map(|c| ep.insert_peer(&c[1..=c[0] as usize]))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(OfiWorld {
            ep,
            peers,
            rank: world.rank() as usize,
            tx: Vec::with_capacity(ofi::MSG_MAX),
            fins: 0,
        })
    }

    /// Every rank's view of its `region` (collective; `None`: a rank that exposes
    /// nothing, seen as an empty region).
    pub(crate) fn exchange(
        &self,
        world: &impl Communicator,
        region: Option<RegionId>,
    ) -> Result<Vec<RemoteRegion>, OfiError> {
        let mine = match region {
            Some(r) => self.ep.remote(r)?.to_words(),
            None => [0; 3],
        };
        let mut all = vec![0u64; 3 * world.size() as usize];
        world.all_gather_into(&mine[..], &mut all[..]);
        Ok(all
            .chunks_exact(3)
            .map(|w| RemoteRegion::from_words([w[0], w[1], w[2]]))
            .collect())
    }

    /// The peer handle of `rank`.
    pub(crate) fn peer(&self, rank: usize) -> Peer {
        self.peers[rank]
    }

    /// Sends `body` with `tag` to `to`.
    pub(crate) fn send(&mut self, to: usize, tag: u32, body: &[u8]) -> Result<(), OfiError> {
        self.tx.clear();
        self.tx.extend_from_slice(&tag.to_le_bytes());
        self.tx.extend_from_slice(&(self.rank as u32).to_le_bytes());
        self.tx.extend_from_slice(body);
        self.ep.send(self.peers[to], &self.tx)
    }

    /// The next message, its body moved to the front of `rx`: (length, sender, tag).
    /// End-of-phase messages are counted, not returned.
    pub(crate) fn recv(
        &mut self,
        rx: &mut Vec<u8>,
    ) -> Result<Option<(usize, usize, u32)>, OfiError> {
        while let Some(n) = self.ep.recv(rx)? {
            let Some((tag, from)) = parse_header(&rx[..n]) else {
                return Err(OfiError::Invalid("message shorter than its header"));
            };
            if tag == TAG_FIN {
                self.fins += 1;
                continue;
            }
            rx.copy_within(HEADER..n, 0);
            return Ok(Some((n - HEADER, from, tag)));
        }
        Ok(None)
    }

    /// Ends a phase (see the module documentation); messages that arrive meanwhile are
    /// dropped: this rank is done. Returns how many were dropped.
    pub(crate) fn finish(&mut self) -> Result<u64, OfiError> {
        self.ep.drain()?;
        for r in 0..self.peers.len() {
            if r != self.rank {
                self.send(r, TAG_FIN, &[])?;
            }
        }
        let mut rx = Vec::new();
        let mut dropped = 0;
        while self.fins < self.peers.len() - 1 {
            match self.recv(&mut rx)? {
                Some(_) => dropped += 1,
                None => std::thread::yield_now(),
            }
        }
        self.fins = 0;
        self.ep.drain()?;
        Ok(dropped)
    }
}

/// (tag, sender) of a message, if it is long enough.
fn parse_header(b: &[u8]) -> Option<(u32, usize)> {
    let tag = u32::from_le_bytes(b.get(0..4)?.try_into().ok()?);
    let from = u32::from_le_bytes(b.get(4..8)?.try_into().ok()?);
    Some((tag, from as usize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_parses_tag_and_sender() {
        let mut b = 7u32.to_le_bytes().to_vec();
        b.extend_from_slice(&3u32.to_le_bytes());
        b.push(9);
        assert_eq!(parse_header(&b), Some((7, 3)));
        assert_eq!(parse_header(&b[..7]), None);
    }

    #[test]
    fn an_unknown_provider_is_one_line_naming_the_flag() {
        let e = resolve_provider(Some("no-such-provider")).unwrap_err();
        assert!(e.starts_with("--ofi-provider 'no-such-provider'"), "{e}");
        assert!(!e.contains('\n'));
    }
}

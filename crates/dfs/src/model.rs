//! The data model: which compute node builds which time-slice, in which order an input
//! visits the compute nodes, and the checksum every contribution carries.
//!
//! Time-slice `t` is built on compute node `t mod C`, where it occupies local index `t / C`
//! of every input's ring. A *round* is C consecutive time-slices (one contribution from each
//! input to each compute node). Offset-based round-robin (§II-A): within a round, input `i`
//! visits compute nodes `i mod C, i+1 mod C, …`, so the inputs start each round at different
//! compute nodes instead of all hitting the same one.

/// The compute node that builds time-slice `ts`.
pub fn compute_of(ts: u64, computes: usize) -> usize {
    (ts % computes as u64) as usize
}

/// The local index of time-slice `ts` at its compute node (its position in every input's
/// ring there, before wrapping).
pub fn local_index(ts: u64, computes: usize) -> u64 {
    ts / computes as u64
}

/// The time-slice with local index `k` on compute node `cn`.
pub fn ts_of(k: u64, cn: usize, computes: usize) -> u64 {
    k * computes as u64 + cn as u64
}

/// Where compute node `cn` comes in input `input`'s visiting order within a round
/// (0 = first): `(cn − input) mod C`.
pub fn position_in_round(input: usize, cn: usize, computes: usize) -> usize {
    (cn + computes - input % computes) % computes
}

/// The compute node input `input` visits at position `m` of a round: `(input + m) mod C`.
pub fn compute_at_position(input: usize, m: usize, computes: usize) -> usize {
    (input + m) % computes
}

/// The `n`-th contribution input `input` sends in offset round-robin order, counting from
/// time-slice `first_ts` (a multiple of C): round `n / C`, position `n mod C`.
pub fn nth_in_offset_order(input: usize, first_ts: u64, n: u64, computes: usize) -> u64 {
    let c = computes as u64;
    let round = n / c;
    let m = (n % c) as usize;
    first_ts + round * c + compute_at_position(input, m, computes) as u64
}

/// Bytes of the header that precedes every contribution's payload in a ring slot.
pub const HEADER_BYTES: usize = 32;
/// Marks a slot that holds a contribution header ("DFSC").
pub const HEADER_MAGIC: u32 = 0x4446_5343;

/// The header written in front of every contribution: who sent it, for which time-slice,
/// how long it is and the checksum of its payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContributionHeader {
    /// Sending input.
    pub input: u32,
    /// Time-slice number.
    pub ts: u64,
    /// Payload length in bytes.
    pub len: u64,
    /// [`checksum`] of the payload.
    pub checksum: u64,
}

impl ContributionHeader {
    /// Encodes into the first [`HEADER_BYTES`] of `out` (little endian).
    pub fn write(&self, out: &mut [u8]) {
        out[0..4].copy_from_slice(&HEADER_MAGIC.to_le_bytes());
        out[4..8].copy_from_slice(&self.input.to_le_bytes());
        out[8..16].copy_from_slice(&self.ts.to_le_bytes());
        out[16..24].copy_from_slice(&self.len.to_le_bytes());
        out[24..32].copy_from_slice(&self.checksum.to_le_bytes());
    }

    /// Decodes a header; `None` when the magic is missing or `b` is too short.
    pub fn read(b: &[u8]) -> Option<ContributionHeader> {
        if b.len() < HEADER_BYTES {
            return None;
        }
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        if u32_at(0) != HEADER_MAGIC {
            return None;
        }
        Some(ContributionHeader {
            input: u32_at(4),
            ts: u64_at(8),
            len: u64_at(16),
            checksum: u64_at(24),
        })
    }
}

/// One step of SplitMix64.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Fills `out` with the deterministic payload of input `input`'s contribution to
/// time-slice `ts` (the pattern generator FLESnet uses when no detector is attached).
pub fn fill_payload(input: u32, ts: u64, out: &mut [u8]) {
    let mut state = splitmix(((input as u64) << 48) ^ ts);
    for chunk in out.chunks_mut(8) {
        state = splitmix(state);
        let bytes = state.to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
}

/// 64-bit checksum of a payload: FNV-1a over 8-byte little-endian words (the tail
/// zero-padded), then the length mixed in. Detects any changed, lost or reordered word.
pub fn checksum(payload: &[u8]) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01B3;
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    let mut words = payload.chunks_exact(8);
    for w in &mut words {
        h = (h ^ u64::from_le_bytes(w.try_into().unwrap())).wrapping_mul(PRIME);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        h = (h ^ u64::from_le_bytes(last)).wrapping_mul(PRIME);
    }
    splitmix(h ^ payload.len() as u64)
}

/// The checksum a simulated contribution carries: the simulator moves no bytes, so it
/// checksums the contribution's identity (input, time-slice, length) instead.
pub fn descriptor_checksum(input: u32, ts: u64, len: u64) -> u64 {
    let mut b = [0u8; 24];
    b[0..4].copy_from_slice(&input.to_le_bytes());
    b[8..16].copy_from_slice(&ts.to_le_bytes());
    b[16..24].copy_from_slice(&len.to_le_bytes());
    checksum(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_assignment() {
        // 4 compute nodes: ts 0..8 -> nodes 0,1,2,3,0,1,2,3; ts 6 is local index 1 on node 2
        assert_eq!(compute_of(6, 4), 2);
        assert_eq!(local_index(6, 4), 1);
        assert_eq!(ts_of(1, 2, 4), 6);
    }

    #[test]
    fn offset_order_starts_at_own_index() {
        // input 1 of 3 compute nodes visits 1, 2, 0 in each round
        let order: Vec<u64> = (0..6).map(|n| nth_in_offset_order(1, 0, n, 3)).collect();
        assert_eq!(order, vec![1, 2, 0, 4, 5, 3]);
        // input 5 with 4 computes starts at node 1
        assert_eq!(compute_at_position(5, 0, 4), 1);
        assert_eq!(position_in_round(5, 1, 4), 0);
        assert_eq!(position_in_round(5, 0, 4), 3);
        // every input visits every compute node exactly once per round
        for i in 0..7 {
            let mut seen: Vec<usize> = (0..5).map(|m| compute_at_position(i, m, 5)).collect();
            seen.sort();
            assert_eq!(seen, vec![0, 1, 2, 3, 4]);
        }
    }

    #[test]
    fn header_round_trip_and_magic() {
        let h = ContributionHeader {
            input: 3,
            ts: 123_456_789,
            len: 4096,
            checksum: 0xdead_beef,
        };
        let mut b = [0u8; HEADER_BYTES];
        h.write(&mut b);
        assert_eq!(ContributionHeader::read(&b), Some(h));
        b[0] ^= 1;
        assert_eq!(ContributionHeader::read(&b), None);
    }

    #[test]
    fn checksum_detects_single_bit_and_differs_per_contribution() {
        let mut a = vec![0u8; 1000];
        fill_payload(1, 7, &mut a);
        let c = checksum(&a);
        let mut b = a.clone();
        b[999] ^= 0x10;
        assert_ne!(checksum(&b), c);
        let mut other = vec![0u8; 1000];
        fill_payload(1, 8, &mut other);
        assert_ne!(checksum(&other), c);
        fill_payload(1, 7, &mut b);
        assert_eq!(checksum(&b), c);
        // same bytes, different length: the length is mixed in
        assert_ne!(checksum(&[0u8; 8]), checksum(&[0u8; 9]));
        assert_ne!(descriptor_checksum(1, 2, 3), descriptor_checksum(2, 1, 3));
    }
}

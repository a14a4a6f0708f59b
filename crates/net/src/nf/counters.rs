//! The live counters of a network function, shared by its threads.

use crate::wire::WireError;
use std::sync::atomic::{AtomicU64, Ordering};

/// Live counters of a network function, shared with the thread that started it.
#[derive(Debug, Default)]
pub struct NfCounters {
    /// Datagrams received.
    pub received: AtomicU64,
    /// Probes sent on.
    pub sent: AtomicU64,
    /// Probes accepted whose send failed.
    pub send_failed: AtomicU64,
    /// Receive errors (other than timeouts).
    pub recv_errors: AtomicU64,
    /// Malformed datagrams by [`WireError`] reason.
    pub malformed: [AtomicU64; 5],
}

impl NfCounters {
    /// All malformed datagrams.
    pub fn malformed_total(&self) -> u64 {
        self.malformed
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum()
    }

    /// A snapshot as named counters.
    pub fn snapshot(&self) -> Vec<(String, u64)> {
        let mut v = vec![
            (
                "received".to_string(),
                self.received.load(Ordering::Relaxed),
            ),
            ("sent".to_string(), self.sent.load(Ordering::Relaxed)),
            (
                "send_failed".to_string(),
                self.send_failed.load(Ordering::Relaxed),
            ),
            (
                "recv_errors".to_string(),
                self.recv_errors.load(Ordering::Relaxed),
            ),
            ("malformed".to_string(), self.malformed_total()),
        ];
        for e in WireError::ALL {
            v.push((
                e.counter().to_string(),
                self.malformed[e.index()].load(Ordering::Relaxed),
            ));
        }
        v
    }
}

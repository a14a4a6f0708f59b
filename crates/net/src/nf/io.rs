//! The packet I/O under a network function: the [`PacketIo`] trait, its UDP socket
//! implementation [`UdpIo`] and the blocking and busy-polling [`IoMode`]s.

use latlab_sys::net::{self as sysnet, MmsgBatch, Wait};
use latlab_sys::tsc::Clock;
use serde::{Deserialize, Serialize};
use std::io;
use std::net::{SocketAddr, UdpSocket};

/// How the NF waits for packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoMode {
    /// Blocking receive, one datagram per call.
    Blocking,
    /// Non-blocking spin with `recvmmsg`/`sendmmsg` batches and `SO_BUSY_POLL`.
    Busy,
    /// Kernel bypass: spin on an `AF_XDP` socket's rings (whole frames, latlab's own
    /// Ethernet/IPv4/UDP headers, one `sendto` kick per TX batch).
    Xdp,
}

impl IoMode {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            IoMode::Blocking => "blocking",
            IoMode::Busy => "busy",
            IoMode::Xdp => "xdp",
        }
    }

    /// Whether the mode spins (never blocks in the kernel).
    pub fn spins(self) -> bool {
        self != IoMode::Blocking
    }
}

/// What to do with a received datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Send it on (same length).
    Send,
    /// Drop it.
    Drop,
}

/// Counts of one batch handled by [`PacketIo::process`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchStats {
    /// Datagrams received.
    pub received: u64,
    /// Datagrams sent on.
    pub sent: u64,
    /// Datagrams the function accepted but the send call did not take.
    pub send_failed: u64,
    /// Datagrams dropped because they were larger than a buffer slot.
    pub oversized: u64,
}

/// The packet I/O under a network function. Implementations own their buffers; the
/// function sees each received frame as a fixed-length mutable slice.
pub trait PacketIo: Send {
    /// Receives one batch (waiting as the mode says), calls `f(frame, rx_time)` for each
    /// frame with the clock reading taken when the receive returned, and sends the frames
    /// for which `f` said [`Verdict::Send`]. Frames larger than the buffer never reach `f`.
    fn process(&mut self, f: &mut dyn FnMut(&mut [u8], u64) -> Verdict) -> io::Result<BatchStats>;

    /// The mode, for provenance.
    fn mode(&self) -> IoMode;
}

/// [`PacketIo`] over UDP sockets: receive on one socket, send from another (or the same)
/// either back to each datagram's source (reflect) or to a fixed next hop (forward).
pub struct UdpIo {
    rx: UdpSocket,
    tx: UdpSocket,
    to: Option<SocketAddr>,
    batch: MmsgBatch,
    keep: Vec<usize>,
    mode: IoMode,
    clock: Clock,
}

/// Largest datagram an NF accepts (bigger ones are truncated, detected and dropped).
pub const NF_SLOT_BYTES: usize = 2048;

impl UdpIo {
    /// Sets the sockets up for `mode` (read timeout for blocking; non-blocking and
    /// `SO_BUSY_POLL` for busy) and preallocates `batch` slots.
    pub fn new(
        rx: UdpSocket,
        tx: UdpSocket,
        to: Option<SocketAddr>,
        mode: IoMode,
        batch: usize,
        busy_poll_us: u32,
        clock: Clock,
    ) -> io::Result<UdpIo> {
        let slots = match mode {
            IoMode::Blocking => 1,
            IoMode::Busy | IoMode::Xdp => batch.max(1),
        };
        match mode {
            // No receive timeout: a timed wait arms and cancels a kernel timer on every
            // receive, on the path a round trip measures; `NfHandle::stop` interrupts the
            // blocked receive instead.
            IoMode::Blocking => rx.set_read_timeout(None)?,
            IoMode::Busy | IoMode::Xdp => {
                rx.set_nonblocking(true)?;
                if busy_poll_us > 0 {
                    // Best effort: without CAP_NET_ADMIN the kernel caps it at
                    // net.core.busy_read; the spin works either way.
                    let _ = sysnet::set_busy_poll(&rx, busy_poll_us);
                    let _ = sysnet::set_prefer_busy_poll(&rx, true);
                }
            }
        }
        // Room for a 50 ms stall at 100 kpps (real-time throttling of a spinning FIFO
        // thread): ~5000 datagrams of up to ~2.3 KiB of kernel memory each. The kernel
        // doubles the value; memory stays bounded by it.
        let _ = sysnet::set_recv_buffer(&rx, 16 << 20);
        Ok(UdpIo {
            rx,
            tx,
            to,
            batch: MmsgBatch::new(slots, NF_SLOT_BYTES, false),
            keep: Vec::with_capacity(slots),
            mode,
            clock,
        })
    }
}

impl PacketIo for UdpIo {
    fn process(&mut self, f: &mut dyn FnMut(&mut [u8], u64) -> Verdict) -> io::Result<BatchStats> {
        let wait = match self.mode {
            IoMode::Blocking => Wait::Block,
            IoMode::Busy | IoMode::Xdp => Wait::NonBlocking,
        };
        let n = self.batch.recv(&self.rx, self.batch.slots(), wait)?;
        let mut st = BatchStats::default();
        if n == 0 {
            return Ok(st);
        }
        let rx_time = self.clock.now();
        st.received = n as u64;
        self.keep.clear();
        for i in 0..n {
            if self.batch.truncated(i) {
                st.oversized += 1;
                continue;
            }
            if f(self.batch.packet_mut(i), rx_time) == Verdict::Send {
                self.keep.push(i);
            }
        }
        if !self.keep.is_empty() {
            let sent = self
                .batch
                .send(&self.tx, &self.keep, self.to.as_ref())
                .unwrap_or(0);
            st.sent = sent as u64;
            st.send_failed = (self.keep.len() - sent) as u64;
        }
        Ok(st)
    }

    fn mode(&self) -> IoMode {
        self.mode
    }
}

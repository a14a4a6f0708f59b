//! [`PacketIo`] over `AF_XDP` ([`IoMode::Xdp`]): whole Ethernet frames from an XDP port's
//! RX ring; the function sees the UDP payload (the probe), and each frame it keeps is
//! written with fresh Ethernet/IPv4/UDP headers (checksums computed) into a TX frame and
//! queued, with one kick per batch. A forwarder's frames all go to one next hop: their
//! headers come from a [`FrameTemplate`] (rebuilt in place when the payload length
//! changes). Nothing is allocated after set-up.

use super::io::{BatchStats, IoMode, PacketIo, Verdict};
use crate::wire::frame::{parse_udp, write_frame, Endpoints, FrameTemplate};
use latlab_sys::tsc::Clock;
use latlab_sys::xdp::{XdpRx, XdpTx};
use std::io;

/// Where a kept frame goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XdpOut {
    /// Back to its sender (MACs, addresses and ports swapped).
    Reflect,
    /// Always to these endpoints (a forwarder's next hop, from its other port).
    Forward(Endpoints),
}

/// [`PacketIo`] over the RX half of one XDP port and the TX half of the same or another.
pub struct XdpIo {
    rx: XdpRx,
    tx: XdpTx,
    out: XdpOut,
    batch: u32,
    clock: Clock,
    ip_id: u16,
    /// [`XdpOut::Forward`]: the next hop's frame.
    template: Option<FrameTemplate>,
}

impl XdpIo {
    /// Receives on `rx`, sends on `tx` as `out` says, up to `batch` frames per call.
    pub fn new(rx: XdpRx, tx: XdpTx, out: XdpOut, batch: usize, clock: Clock) -> XdpIo {
        XdpIo {
            rx,
            tx,
            out,
            batch: batch.clamp(1, 256) as u32,
            clock,
            ip_id: 0,
            template: match out {
                XdpOut::Forward(e) => FrameTemplate::new(&e, crate::wire::HEADER_LEN),
                XdpOut::Reflect => None,
            },
        }
    }
}

impl PacketIo for XdpIo {
    fn process(&mut self, f: &mut dyn FnMut(&mut [u8], u64) -> Verdict) -> io::Result<BatchStats> {
        let XdpIo {
            rx,
            tx,
            out,
            batch,
            clock,
            ip_id,
            template,
        } = self;
        let mut st = BatchStats::default();
        let mut rx_time = 0u64;
        let n = rx.recv(*batch, |frame| {
            if rx_time == 0 {
                rx_time = clock.now();
            }
            let Some(p) = parse_udp(frame) else {
                // Not IPv4/UDP (the program steers only such frames): the function counts
                // it as too short for a probe.
                let _ = f(&mut [], rx_time);
                return;
            };
            let range = p.payload.clone();
            if f(&mut frame[range.clone()], rx_time) != Verdict::Send {
                return;
            }
            *ip_id = ip_id.wrapping_add(1);
            let id = *ip_id;
            let payload = &frame[range];
            let fits = match template.as_mut() {
                Some(t) => t.payload_len() == payload.len() || t.set_payload_len(payload.len()),
                None => false,
            };
            let queued = match (template.as_ref(), *out) {
                (Some(t), _) if fits => tx.queue(|buf| t.write(buf, payload, payload.len(), id)),
                (_, XdpOut::Forward(to)) => tx.queue(|buf| write_frame(buf, &to, payload, id)),
                (_, XdpOut::Reflect) => {
                    let to = p.endpoints.reversed();
                    tx.queue(|buf| write_frame(buf, &to, payload, id))
                }
            };
            if queued {
                st.sent += 1;
            } else {
                st.send_failed += 1;
            }
        });
        st.received = u64::from(n);
        // One kick per batch; also when nothing arrived, for frames a full ring left behind.
        tx.kick();
        Ok(st)
    }

    fn mode(&self) -> IoMode {
        IoMode::Xdp
    }
}

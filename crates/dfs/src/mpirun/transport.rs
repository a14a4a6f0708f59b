//! How a rank of `dfs run` moves data and control messages: over MPI (a window and
//! two-sided messages) or over libfabric (`fi_write` into a registered region and `fi_send`
//! messages). The input and compute loops are written once against [`Transport`].

use super::error::TransportError;
use super::wire::{receive_pending, send};
use latlab_sys::mpi_rma::Window;

/// The operations the input and compute loops need.
pub(super) trait Transport {
    /// The next control message, its body in `rx[..len]`: (len, sender rank, tag).
    fn recv(&mut self, rx: &mut Vec<u8>) -> Result<Option<(usize, usize, i32)>, TransportError>;
    /// Sends a control message.
    fn send(&mut self, to: usize, tag: i32, body: &[u8]) -> Result<(), TransportError>;
    /// Writes `data` at `offset` of compute rank `target`'s buffer; complete (visible at
    /// the target) on return, like `MPI_Put` + `MPI_Win_flush`.
    fn put(&mut self, target: usize, offset: usize, data: &[u8]) -> Result<(), TransportError>;
    /// Copies `out.len()` bytes at `offset` of this rank's buffer into `out` (after the
    /// writer's message).
    fn read(&mut self, offset: usize, out: &mut [u8]) -> Result<(), TransportError>;
}

/// MPI: the window and the world communicator.
pub(super) struct Mpi<'a, 'c> {
    pub(super) world: &'a mpi::topology::SimpleCommunicator,
    pub(super) win: &'a Window<'c>,
}

impl Transport for Mpi<'_, '_> {
    fn recv(&mut self, rx: &mut Vec<u8>) -> Result<Option<(usize, usize, i32)>, TransportError> {
        Ok(receive_pending(self.world, rx).map(|(n, st)| (n, st.source_rank() as usize, st.tag())))
    }
    fn send(&mut self, to: usize, tag: i32, body: &[u8]) -> Result<(), TransportError> {
        send(self.world, to, tag, body);
        Ok(())
    }
    fn put(&mut self, target: usize, offset: usize, data: &[u8]) -> Result<(), TransportError> {
        Ok(self.win.put_flush(target as i32, offset, data)?)
    }
    fn read(&mut self, offset: usize, out: &mut [u8]) -> Result<(), TransportError> {
        self.win.sync()?;
        Ok(self.win.read_local(offset, out)?)
    }
}

/// libfabric: this rank's endpoint, its buffer (compute) or staging slot (input), and
/// every rank's buffer as a remote region.
#[cfg(feature = "ofi")]
pub(super) struct Ofi {
    pub(super) w: crate::ofiwire::OfiWorld,
    /// compute: the ring buffers peers write into; input: the contribution being written
    pub(super) region: latlab_sys::ofi::RegionId,
    pub(super) remotes: Vec<latlab_sys::ofi::RemoteRegion>,
}

#[cfg(feature = "ofi")]
impl Transport for Ofi {
    fn recv(&mut self, rx: &mut Vec<u8>) -> Result<Option<(usize, usize, i32)>, TransportError> {
        Ok(self.w.recv(rx)?.map(|(n, from, tag)| (n, from, tag as i32)))
    }
    fn send(&mut self, to: usize, tag: i32, body: &[u8]) -> Result<(), TransportError> {
        Ok(self.w.send(to, tag as u32, body)?)
    }
    fn put(&mut self, target: usize, offset: usize, data: &[u8]) -> Result<(), TransportError> {
        let peer = self.w.peer(target);
        self.w.ep.fill(self.region, 0, data)?;
        self.w.ep.write(
            peer,
            self.region,
            0,
            data.len(),
            &self.remotes[target],
            offset,
        )?;
        Ok(self.w.ep.wait_writes()?)
    }
    fn read(&mut self, offset: usize, out: &mut [u8]) -> Result<(), TransportError> {
        Ok(self.w.ep.read(self.region, offset, out)?)
    }
}

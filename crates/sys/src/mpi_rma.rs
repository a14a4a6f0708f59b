//! MPI one-sided communication (RMA) behind a safe API.
//!
//! rsmpi (crate `mpi`) has no safe wrapper for RMA windows, so this module wraps the few
//! calls latlab needs from `mpi::ffi`: `MPI_Win_allocate` (collective), a passive-target
//! access epoch on every rank for the window's whole life (`MPI_Win_lock_all`), `MPI_Put`
//! followed by `MPI_Win_flush` (remote completion, the analogue of an RDMA write
//! completion), `MPI_Win_sync` on the target before it reads, and `MPI_Win_unlock_all` +
//! `MPI_Win_free` on drop (collective: every rank must drop its window).
//!
//! The window's local memory is never handed out as a Rust reference, because other ranks
//! write into it concurrently: it is only copied in or out through raw pointers at offsets
//! checked against its size. Which regions are safe to read is the application's protocol
//! (latlab's compute nodes read a ring slot only after the writer's notification).

use mpi::collective::CommunicatorCollectives;
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::Communicator;
use std::marker::PhantomData;

/// Errors from RMA calls.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RmaError {
    /// An MPI call returned an error code.
    #[error("{call} failed with MPI error code {code}")]
    Mpi {
        /// The MPI function.
        call: &'static str,
        /// Its return code.
        code: i32,
    },
    /// A put or local copy would fall outside the window.
    #[error(
        "access of {len} bytes at offset {offset} is outside the {size}-byte window of rank {rank}"
    )]
    OutOfBounds {
        /// Target rank.
        rank: i32,
        /// Offset in bytes.
        offset: usize,
        /// Length in bytes.
        len: usize,
        /// Window size of that rank.
        size: usize,
    },
    /// No such rank in the window's communicator.
    #[error("rank {0} is not in the window's communicator")]
    NoSuchRank(i32),
}

fn check(call: &'static str, code: i32) -> Result<(), RmaError> {
    if code == ffi::MPI_SUCCESS as i32 {
        Ok(())
    } else {
        Err(RmaError::Mpi { call, code })
    }
}

/// An RMA window allocated by `MPI_Win_allocate` over a communicator, with a passive-target
/// epoch open to every rank. Dropping it is collective.
pub struct Window<'c> {
    win: ffi::MPI_Win,
    base: *mut u8,
    sizes: Vec<usize>,
    rank: i32,
    _comm: PhantomData<&'c ()>,
}

impl std::fmt::Debug for Window<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Window")
            .field("rank", &self.rank)
            .field("sizes", &self.sizes)
            .finish()
    }
}

impl<'c> Window<'c> {
    /// Collectively allocates a window of `bytes` on this rank (ranks may differ; 0 is
    /// allowed), zero-filled, and opens the access epoch.
    pub fn allocate<C: Communicator + AsRaw<Raw = ffi::MPI_Comm>>(
        comm: &'c C,
        bytes: usize,
    ) -> Result<Window<'c>, RmaError> {
        let n = comm.size() as usize;
        let mut sizes = vec![0u64; n];
        comm.all_gather_into(&(bytes as u64), &mut sizes[..]);
        let mut base: *mut u8 = std::ptr::null_mut();
        // SAFETY: reads an immutable handle constant the rsmpi C shim defines (MPI_WIN_NULL).
        let mut win: ffi::MPI_Win = unsafe { ffi::RSMPI_WIN_NULL };
        // SAFETY: MPI_Win_allocate writes the base address into `base` (passed as a pointer
        // to a pointer, as the standard specifies for baseptr) and the handle into `win`; the
        // communicator handle is live for 'c; size and disp_unit are valid (disp_unit 1 =
        // byte displacements).
        let code = unsafe {
            ffi::MPI_Win_allocate(
                bytes as ffi::MPI_Aint,
                1,
                ffi::RSMPI_INFO_NULL,
                comm.as_raw(),
                (&mut base as *mut *mut u8).cast(),
                &mut win,
            )
        };
        check("MPI_Win_allocate", code)?;
        if bytes > 0 {
            // SAFETY: `base` points to `bytes` bytes this rank owns; no epoch is open yet, so
            // no other rank can access them.
            unsafe { std::ptr::write_bytes(base, 0, bytes) };
        }
        // SAFETY: `win` is the live window just allocated; assert 0 makes no promises.
        let code = unsafe { ffi::MPI_Win_lock_all(0, win) };
        check("MPI_Win_lock_all", code)?;
        Ok(Window {
            win,
            base,
            sizes: sizes.into_iter().map(|s| s as usize).collect(),
            rank: comm.rank(),
            _comm: PhantomData,
        })
    }

    /// This rank's window size.
    pub fn local_size(&self) -> usize {
        self.sizes[self.rank as usize]
    }

    /// Window size of `rank`.
    pub fn size_of(&self, rank: i32) -> Result<usize, RmaError> {
        self.sizes
            .get(rank as usize)
            .copied()
            .ok_or(RmaError::NoSuchRank(rank))
    }

    fn bounds(&self, rank: i32, offset: usize, len: usize) -> Result<(), RmaError> {
        let size = self.size_of(rank)?;
        if offset.checked_add(len).map_or(true, |end| end > size) {
            return Err(RmaError::OutOfBounds {
                rank,
                offset,
                len,
                size,
            });
        }
        Ok(())
    }

    /// Writes `data` at byte `offset` of `target`'s window and waits until the write is
    /// complete at the target (`MPI_Put` + `MPI_Win_flush`).
    pub fn put_flush(&self, target: i32, offset: usize, data: &[u8]) -> Result<(), RmaError> {
        // SAFETY: `data` stays borrowed until the flush below has completed the put.
        let started = unsafe { self.start_put(target, offset, data)? };
        if !started {
            return Ok(());
        }
        // SAFETY: completes the put above at origin and target before `data` is released.
        let code = unsafe { ffi::MPI_Win_flush(target, self.win) };
        check("MPI_Win_flush", code)
    }

    /// Bounds-checks and starts `MPI_Put` of `data` at `offset` of `target`'s window.
    /// Returns whether a put was started (an empty `data` starts none).
    ///
    /// # Safety
    /// `data` must stay live and unmodified until the put is completed by a flush
    /// (`MPI_Win_flush` or `MPI_Win_flush_all`) on this window.
    unsafe fn start_put(&self, target: i32, offset: usize, data: &[u8]) -> Result<bool, RmaError> {
        self.bounds(target, offset, data.len())?;
        if data.is_empty() {
            return Ok(false);
        }
        let count = i32::try_from(data.len()).map_err(|_| RmaError::OutOfBounds {
            rank: target,
            offset,
            len: data.len(),
            size: i32::MAX as usize,
        })?;
        // SAFETY: the caller keeps `data` (a live slice of `count` bytes) unmodified until
        // the put is flushed; the target range was bounds-checked against the target's
        // window size; `win` is live with an open lock_all epoch.
        let code = unsafe {
            ffi::MPI_Put(
                data.as_ptr().cast(),
                count,
                ffi::RSMPI_UINT8_T,
                target,
                offset as ffi::MPI_Aint,
                count,
                ffi::RSMPI_UINT8_T,
                self.win,
            )
        };
        check("MPI_Put", code)?;
        Ok(true)
    }

    /// Starts a batch of puts completed together by [`PutBatch::flush_all`] (or on drop).
    /// The batch borrows every buffer it puts until then.
    pub fn batch<'d>(&self) -> PutBatch<'_, 'c, 'd> {
        PutBatch {
            win: self,
            pending: false,
            _data: PhantomData,
        }
    }

    /// Synchronises the public and private copies of this rank's window
    /// (`MPI_Win_sync`): call before reading data other ranks have put.
    pub fn sync(&self) -> Result<(), RmaError> {
        // SAFETY: `win` is live and this rank holds the lock_all epoch MPI_Win_sync needs.
        let code = unsafe { ffi::MPI_Win_sync(self.win) };
        check("MPI_Win_sync", code)
    }

    /// Copies `out.len()` bytes at `offset` of this rank's window into `out`.
    pub fn read_local(&self, offset: usize, out: &mut [u8]) -> Result<(), RmaError> {
        self.bounds(self.rank, offset, out.len())?;
        if out.is_empty() {
            return Ok(());
        }
        // SAFETY: the source range lies inside this rank's window memory (bounds-checked);
        // `out` is a distinct Rust buffer, so the ranges do not overlap. Remote writers
        // touch the window outside the Rust abstract machine; whether the bytes are the
        // ones intended is the caller's protocol (read after the writer's notification).
        unsafe {
            std::ptr::copy_nonoverlapping(self.base.add(offset), out.as_mut_ptr(), out.len())
        };
        Ok(())
    }

    /// Copies `data` into this rank's window at `offset` (e.g. to clear a slot).
    pub fn write_local(&self, offset: usize, data: &[u8]) -> Result<(), RmaError> {
        self.bounds(self.rank, offset, data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: the destination range lies inside this rank's window (bounds-checked) and
        // does not overlap `data`, a distinct Rust slice.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.base.add(offset), data.len()) };
        Ok(())
    }
}

/// Puts in flight on a [`Window`]; the buffers they read stay borrowed (`'d`) until the
/// batch is flushed or dropped, which completes them at every target (`MPI_Win_flush_all`).
pub struct PutBatch<'w, 'c, 'd> {
    win: &'w Window<'c>,
    pending: bool,
    _data: PhantomData<&'d [u8]>,
}

impl<'d> PutBatch<'_, '_, 'd> {
    /// Starts writing `data` at `offset` of `target`'s window (`MPI_Put`, not yet complete).
    pub fn put(&mut self, target: i32, offset: usize, data: &'d [u8]) -> Result<(), RmaError> {
        // SAFETY: `data` stays borrowed for 'd, i.e. until this batch is flushed (flush_all
        // or drop), so MPI reads live, unmodified memory.
        if unsafe { self.win.start_put(target, offset, data)? } {
            self.pending = true;
        }
        Ok(())
    }

    /// Completes every put of the batch at origin and targets (`MPI_Win_flush_all`).
    pub fn flush_all(mut self) -> Result<(), RmaError> {
        self.flush()
    }

    fn flush(&mut self) -> Result<(), RmaError> {
        if !self.pending {
            return Ok(());
        }
        self.pending = false;
        // SAFETY: the window is live with an open epoch; completes the batch's puts.
        let code = unsafe { ffi::MPI_Win_flush_all(self.win.win) };
        check("MPI_Win_flush_all", code)
    }
}

impl Drop for PutBatch<'_, '_, '_> {
    fn drop(&mut self) {
        // the borrowed buffers must not be released with puts in flight
        let _ = self.flush();
    }
}

impl Drop for Window<'_> {
    fn drop(&mut self) {
        // SAFETY: `win` is live; the epoch opened in `allocate` is closed exactly once here,
        // then the window is freed (collectively, as every rank drops its window) and never
        // used again.
        unsafe {
            ffi::MPI_Win_unlock_all(self.win);
            ffi::MPI_Win_free(&mut self.win);
        }
    }
}

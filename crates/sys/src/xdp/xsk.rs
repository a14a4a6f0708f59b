//! An `AF_XDP` socket with its own UMEM: preallocated frames shared with the kernel, and
//! the four single-producer/single-consumer rings (fill, RX, TX, completion) mapped into
//! this process. Receiving reads the RX ring and gives the frames straight back on the fill
//! ring (no system call); sending writes the TX ring and kicks the kernel with one
//! `sendto` per batch (the copy mode transmits inside that call).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// Bytes per UMEM frame (a 1514-byte frame plus the kernel's headroom fits).
pub const FRAME_SIZE: usize = 2048;

/// One mapped ring: producer/consumer indices and a descriptor array of `size` entries.
struct Ring {
    map: NonNull<u8>,
    map_len: usize,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    flags: *const AtomicU32,
    desc: *mut u8,
    mask: u32,
    size: u32,
    /// Local copies: the index this side owns and the last seen value of the other side.
    cached_prod: u32,
    cached_cons: u32,
}

// SAFETY: the ring's memory is owned by the socket that owns the Ring; it is only used
// from the thread that holds the socket (`&mut self` on every access).
unsafe impl Send for Ring {}

impl Ring {
    /// Maps a ring of `size` entries of `entry` bytes at page offset `pgoff`.
    fn map(
        fd: RawFd,
        off: &libc::xdp_ring_offset,
        size: u32,
        entry: usize,
        pgoff: libc::off_t,
        producer_side: bool,
    ) -> io::Result<Ring> {
        let map_len = off.desc as usize + size as usize * entry;
        // SAFETY: mapping the socket's ring at the offset the kernel documents; the
        // result is checked against MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                pgoff,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = p.cast::<u8>();
        // SAFETY: the offsets come from XDP_MMAP_OFFSETS and lie inside the mapping.
        let (producer, consumer, flags, desc) = unsafe {
            (
                base.add(off.producer as usize).cast::<AtomicU32>(),
                base.add(off.consumer as usize).cast::<AtomicU32>(),
                base.add(off.flags as usize).cast::<AtomicU32>(),
                base.add(off.desc as usize),
            )
        };
        let mut r = Ring {
            map: NonNull::new(base).ok_or_else(|| io::Error::other("mmap returned null"))?,
            map_len,
            producer,
            consumer,
            flags,
            desc,
            mask: size - 1,
            size,
            cached_prod: 0,
            cached_cons: 0,
        };
        // SAFETY: producer/consumer point to live u32 indices in the mapping.
        unsafe {
            r.cached_prod = (*r.producer).load(Ordering::Relaxed);
            r.cached_cons = (*r.consumer).load(Ordering::Relaxed);
        }
        if producer_side {
            // A producer may fill `size` entries beyond what the consumer has taken.
            r.cached_cons = r.cached_cons.wrapping_add(size);
        }
        Ok(r)
    }

    /// Free entries a producer can write, refreshing the consumer index if needed.
    fn prod_free(&mut self, want: u32) -> u32 {
        let free = self.cached_cons.wrapping_sub(self.cached_prod);
        if free >= want {
            return free;
        }
        // SAFETY: `consumer` points into the live mapping.
        let cons = unsafe { (*self.consumer).load(Ordering::Acquire) };
        self.cached_cons = cons.wrapping_add(self.size);
        self.cached_cons.wrapping_sub(self.cached_prod)
    }

    /// Entries a consumer can read, refreshing the producer index if needed.
    fn cons_avail(&mut self, want: u32) -> u32 {
        let avail = self.cached_prod.wrapping_sub(self.cached_cons);
        if avail >= want && avail > 0 {
            return avail.min(want);
        }
        // SAFETY: `producer` points into the live mapping.
        self.cached_prod = unsafe { (*self.producer).load(Ordering::Acquire) };
        self.cached_prod.wrapping_sub(self.cached_cons).min(want)
    }

    fn publish_prod(&mut self, n: u32) {
        self.cached_prod = self.cached_prod.wrapping_add(n);
        // SAFETY: `producer` points into the live mapping; Release orders the
        // descriptor writes before the index.
        unsafe { (*self.producer).store(self.cached_prod, Ordering::Release) };
    }

    fn release_cons(&mut self, n: u32) {
        self.cached_cons = self.cached_cons.wrapping_add(n);
        // SAFETY: as above.
        unsafe { (*self.consumer).store(self.cached_cons, Ordering::Release) };
    }

    fn needs_wakeup(&self) -> bool {
        // SAFETY: `flags` points into the live mapping.
        unsafe { (*self.flags).load(Ordering::Relaxed) & libc::XDP_RING_NEED_WAKEUP != 0 }
    }

    /// Whether the consumer has taken everything produced.
    fn drained(&self) -> bool {
        // SAFETY: `consumer` points into the live mapping.
        unsafe { (*self.consumer).load(Ordering::Acquire) == self.cached_prod }
    }

    fn u64_at(&self, idx: u32) -> *mut u64 {
        // SAFETY: idx & mask < size; entries are 8 bytes.
        unsafe { self.desc.cast::<u64>().add((idx & self.mask) as usize) }
    }

    fn desc_at(&self, idx: u32) -> *mut libc::xdp_desc {
        // SAFETY: idx & mask < size; entries are xdp_desc.
        unsafe {
            self.desc
                .cast::<libc::xdp_desc>()
                .add((idx & self.mask) as usize)
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what `map` mapped.
        unsafe { libc::munmap(self.map.as_ptr().cast(), self.map_len) };
    }
}

/// Counters the kernel keeps for an `AF_XDP` socket (`XDP_STATISTICS`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XskStats {
    /// Frames dropped for reasons other than invalid descriptors (e.g. no fill frame).
    pub rx_dropped: u64,
    /// Invalid RX descriptors.
    pub rx_invalid_descs: u64,
    /// Invalid TX descriptors.
    pub tx_invalid_descs: u64,
    /// Frames dropped because the RX ring was full.
    pub rx_ring_full: u64,
    /// Times the fill ring was empty when a frame arrived.
    pub rx_fill_ring_empty: u64,
    /// Times the TX ring was empty when the kernel looked.
    pub tx_ring_empty: u64,
}

/// What both halves share: the socket and the UMEM.
struct Core {
    // Field order is drop order: the socket closes, then the UMEM is unmapped.
    fd: OwnedFd,
    umem: NonNull<u8>,
    umem_len: usize,
    _umem_guard: UmemGuard,
}

// SAFETY: the halves never touch the same UMEM frame at once: RX frames belong to the RX
// half (or the kernel), TX frames to the TX half (or the kernel).
unsafe impl Send for Core {}
// SAFETY: as above; the descriptor itself is thread-safe.
unsafe impl Sync for Core {}

impl Core {
    /// The UMEM bytes `[addr, addr + len)`, clamped to the UMEM.
    ///
    /// Callers pass only frames their half owns at that moment (an RX descriptor just
    /// read, or a free TX frame), so no two live slices alias.
    #[allow(clippy::mut_from_ref)]
    fn frame_mut(&self, addr: u64, len: usize) -> &mut [u8] {
        let a = (addr as usize).min(self.umem_len);
        let len = len.min(self.umem_len - a);
        // SAFETY: [a, a+len) lies inside the UMEM; ownership of the frame is exclusive as
        // documented above.
        unsafe { std::slice::from_raw_parts_mut(self.umem.as_ptr().add(a), len) }
    }
}

/// The receiving half: RX and fill rings and the RX frames.
pub struct XskRx {
    rx: Ring,
    fill: Ring,
    core: Arc<Core>,
}

/// The sending half: TX and completion rings and the TX frames.
pub struct XskTx {
    tx: Ring,
    comp: Ring,
    /// TX frames not in flight (UMEM offsets).
    tx_free: Vec<u64>,
    core: Arc<Core>,
}

/// An `AF_XDP` socket bound to one queue of one interface, with its UMEM, as two halves
/// that may live on different threads.
pub struct Xsk {
    /// Receiving half.
    pub rx: XskRx,
    /// Sending half.
    pub tx: XskTx,
    /// Whether the bind got zero-copy.
    pub zerocopy: bool,
}

fn getsockopt<T>(fd: RawFd, name: libc::c_int) -> io::Result<T> {
    // SAFETY: T is plain old data (the XDP option structs); all-zero is valid.
    let mut v: T = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: `v`/`len` describe a writable T.
    let r =
        unsafe { libc::getsockopt(fd, libc::SOL_XDP, name, (&mut v as *mut T).cast(), &mut len) };
    if r == 0 {
        Ok(v)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Which step of opening the socket failed, and how.
#[derive(Debug)]
pub struct XskError {
    /// The step.
    pub what: &'static str,
    /// The OS error.
    pub source: io::Error,
}

impl Xsk {
    /// Opens a socket on queue `queue` of interface `ifindex` with `rx_frames` receive
    /// frames (all given to the kernel on the fill ring) and `tx_frames` send frames; both
    /// powers of two. Tries zero-copy first and falls back to copy mode.
    pub fn open(ifindex: u32, queue: u32, rx_frames: u32, tx_frames: u32) -> Result<Xsk, XskError> {
        let err = |what: &'static str| XskError {
            what,
            source: io::Error::last_os_error(),
        };
        // SAFETY: plain socket(2); a non-negative result is a descriptor we own.
        let raw = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(err("socket(AF_XDP)"));
        }
        // SAFETY: fresh descriptor owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let umem_len = (rx_frames + tx_frames) as usize * FRAME_SIZE;
        // SAFETY: anonymous private mapping, checked against MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                umem_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(err("mmap of the UMEM"));
        }
        let umem = NonNull::new(p.cast::<u8>()).expect("mmap result is not null");
        let guard = UmemGuard(umem, umem_len);
        let reg = libc::xdp_umem_reg {
            addr: p as u64,
            len: umem_len as u64,
            chunk_size: FRAME_SIZE as u32,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        let fdr = fd.as_raw_fd();
        crate::sockopt::set(fdr, libc::SOL_XDP, libc::XDP_UMEM_REG, &reg).map_err(|source| {
            XskError {
                what: "XDP_UMEM_REG",
                source,
            }
        })?;
        let ring_opt = |name, n: u32, what| {
            crate::sockopt::set(fdr, libc::SOL_XDP, name, &n)
                .map_err(|source| XskError { what, source })
        };
        ring_opt(libc::XDP_UMEM_FILL_RING, rx_frames, "XDP_UMEM_FILL_RING")?;
        ring_opt(
            libc::XDP_UMEM_COMPLETION_RING,
            tx_frames,
            "XDP_UMEM_COMPLETION_RING",
        )?;
        ring_opt(libc::XDP_RX_RING, rx_frames, "XDP_RX_RING")?;
        ring_opt(libc::XDP_TX_RING, tx_frames, "XDP_TX_RING")?;
        let off: libc::xdp_mmap_offsets =
            getsockopt(fdr, libc::XDP_MMAP_OFFSETS).map_err(|source| XskError {
                what: "XDP_MMAP_OFFSETS",
                source,
            })?;
        let m = |r: io::Result<Ring>, what| r.map_err(|source| XskError { what, source });
        let desc = std::mem::size_of::<libc::xdp_desc>();
        let rx = m(
            Ring::map(
                fdr,
                &off.rx,
                rx_frames,
                desc,
                libc::XDP_PGOFF_RX_RING,
                false,
            ),
            "mmap RX ring",
        )?;
        let tx = m(
            Ring::map(fdr, &off.tx, tx_frames, desc, libc::XDP_PGOFF_TX_RING, true),
            "mmap TX ring",
        )?;
        let fill = m(
            Ring::map(
                fdr,
                &off.fr,
                rx_frames,
                8,
                libc::XDP_UMEM_PGOFF_FILL_RING as libc::off_t,
                true,
            ),
            "mmap fill ring",
        )?;
        let comp = m(
            Ring::map(
                fdr,
                &off.cr,
                tx_frames,
                8,
                libc::XDP_UMEM_PGOFF_COMPLETION_RING as libc::off_t,
                false,
            ),
            "mmap completion ring",
        )?;
        let core = Arc::new(Core {
            fd,
            umem,
            umem_len,
            _umem_guard: guard,
        });
        let mut x = Xsk {
            rx: XskRx {
                rx,
                fill,
                core: core.clone(),
            },
            tx: XskTx {
                tx,
                comp,
                tx_free: (0..tx_frames)
                    .map(|i| u64::from(rx_frames + i) * FRAME_SIZE as u64)
                    .collect(),
                core,
            },
            zerocopy: false,
        };
        // Every RX frame goes to the kernel before the bind.
        let n = x.rx.fill.prod_free(rx_frames);
        debug_assert!(n >= rx_frames);
        for i in 0..rx_frames {
            // SAFETY: in-bounds fill ring entry.
            unsafe {
                *x.rx.fill.u64_at(x.rx.fill.cached_prod.wrapping_add(i)) =
                    u64::from(i) * FRAME_SIZE as u64
            };
        }
        x.rx.fill.publish_prod(rx_frames);
        for flags in [libc::XDP_ZEROCOPY, libc::XDP_COPY] {
            let sa = libc::sockaddr_xdp {
                sxdp_family: libc::AF_XDP as u16,
                sxdp_flags: flags | libc::XDP_USE_NEED_WAKEUP,
                sxdp_ifindex: ifindex,
                sxdp_queue_id: queue,
                sxdp_shared_umem_fd: 0,
            };
            // SAFETY: `sa` is a valid sockaddr_xdp and its size is passed.
            let r = unsafe {
                libc::bind(
                    fdr,
                    (&sa as *const libc::sockaddr_xdp).cast(),
                    std::mem::size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
                )
            };
            if r == 0 {
                x.zerocopy = flags == libc::XDP_ZEROCOPY;
                return Ok(x);
            }
            if flags == libc::XDP_COPY {
                return Err(err("bind"));
            }
        }
        Err(err("bind"))
    }

    /// The socket's descriptor (for the XSKMAP).
    pub fn raw_fd(&self) -> RawFd {
        self.rx.core.fd.as_raw_fd()
    }
}

/// Reads the kernel's counters of socket `fd`.
fn stats_of(fd: RawFd) -> io::Result<XskStats> {
    let s: libc::xdp_statistics = getsockopt(fd, libc::XDP_STATISTICS)?;
    Ok(XskStats {
        rx_dropped: s.rx_dropped,
        rx_invalid_descs: s.rx_invalid_descs,
        tx_invalid_descs: s.tx_invalid_descs,
        rx_ring_full: s.rx_ring_full,
        rx_fill_ring_empty: s.rx_fill_ring_empty_descs,
        tx_ring_empty: s.tx_ring_empty_descs,
    })
}

impl XskRx {
    /// Receives up to `max` frames: calls `f(frame)` for each and returns them to the
    /// kernel on the fill ring. No system call unless the fill ring asks for a wakeup.
    #[inline]
    pub fn recv(&mut self, max: u32, mut f: impl FnMut(&mut [u8])) -> u32 {
        let n = self.rx.cons_avail(max);
        if n == 0 {
            if self.fill.needs_wakeup() {
                self.wake();
            }
            return 0;
        }
        let start = self.rx.cached_cons;
        let free = self.fill.prod_free(n);
        for i in 0..n {
            let idx = start.wrapping_add(i);
            // SAFETY: in-bounds RX descriptor published by the kernel.
            let d = unsafe { std::ptr::read(self.rx.desc_at(idx)) };
            f(self.core.frame_mut(d.addr, d.len as usize));
            if i < free {
                let base = d.addr - d.addr % FRAME_SIZE as u64;
                // SAFETY: in-bounds fill ring entry owned by this producer.
                unsafe { *self.fill.u64_at(self.fill.cached_prod.wrapping_add(i)) = base };
            }
        }
        self.rx.release_cons(n);
        self.fill.publish_prod(n.min(free));
        n
    }

    fn wake(&self) {
        // SAFETY: a zero-length non-blocking recvfrom only wakes the kernel's RX path.
        unsafe {
            libc::recvfrom(
                self.core.fd.as_raw_fd(),
                std::ptr::null_mut(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
    }

    /// The kernel's counters for the socket.
    pub fn stats(&self) -> io::Result<XskStats> {
        stats_of(self.core.fd.as_raw_fd())
    }
}

impl XskTx {
    /// Takes back the TX frames the kernel has finished with.
    fn reclaim(&mut self) {
        let n = self.comp.cons_avail(self.comp.size);
        for i in 0..n {
            // SAFETY: in-bounds completion entry published by the kernel.
            let a = unsafe { *self.comp.u64_at(self.comp.cached_cons.wrapping_add(i)) };
            self.tx_free.push(a - a % FRAME_SIZE as u64);
        }
        if n > 0 {
            self.comp.release_cons(n);
        }
    }

    /// Sends up to `n` frames: `f(i, buf)` writes frame `i` into a UMEM frame and returns
    /// its length (0 skips it). Returns how many were queued on the TX ring (fewer than `n`
    /// when frames or ring entries ran out), then kicks the kernel once.
    #[inline]
    pub fn send(&mut self, n: u32, mut f: impl FnMut(u32, &mut [u8]) -> usize) -> u32 {
        self.reclaim();
        let room = self.tx.prod_free(n).min(n).min(self.tx_free.len() as u32);
        let mut queued = 0u32;
        for i in 0..room {
            let Some(addr) = self.tx_free.pop() else {
                break;
            };
            let len = f(i, self.core.frame_mut(addr, FRAME_SIZE)).min(FRAME_SIZE);
            if len == 0 {
                self.tx_free.push(addr);
                continue;
            }
            let d = libc::xdp_desc {
                addr,
                len: len as u32,
                options: 0,
            };
            // SAFETY: in-bounds TX entry owned by this producer.
            unsafe {
                std::ptr::write(self.tx.desc_at(self.tx.cached_prod.wrapping_add(queued)), d)
            };
            queued += 1;
        }
        if queued > 0 {
            self.tx.publish_prod(queued);
        }
        self.kick();
        queued
    }

    /// Queues one frame written by `f(buf) -> len` without kicking; `false` (nothing
    /// queued) when no TX frame or ring entry is free or `f` returned 0.
    #[inline]
    pub fn queue(&mut self, f: impl FnOnce(&mut [u8]) -> usize) -> bool {
        if self.tx_free.is_empty() || self.tx.prod_free(1) == 0 {
            self.reclaim();
            if self.tx_free.is_empty() || self.tx.prod_free(1) == 0 {
                return false;
            }
        }
        let Some(addr) = self.tx_free.pop() else {
            return false;
        };
        let len = f(self.core.frame_mut(addr, FRAME_SIZE)).min(FRAME_SIZE);
        if len == 0 {
            self.tx_free.push(addr);
            return false;
        }
        let d = libc::xdp_desc {
            addr,
            len: len as u32,
            options: 0,
        };
        // SAFETY: in-bounds TX entry owned by this producer.
        unsafe { std::ptr::write(self.tx.desc_at(self.tx.cached_prod), d) };
        self.tx.publish_prod(1);
        true
    }

    /// Kicks TX when the ring holds frames the kernel has not taken (copy mode transmits
    /// inside this `sendto`, up to its budget per call).
    #[inline]
    pub fn kick(&mut self) {
        if self.tx.drained() {
            return;
        }
        // SAFETY: a zero-length non-blocking sendto only wakes the kernel's TX path.
        unsafe {
            libc::sendto(
                self.core.fd.as_raw_fd(),
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        };
    }

    /// TX frames queued or in transmission that the kernel has not completed yet.
    pub fn in_flight(&mut self) -> u32 {
        self.reclaim();
        self.tx.size - self.tx_free.len() as u32
    }

    /// The kernel's counters for the socket.
    pub fn stats(&self) -> io::Result<XskStats> {
        stats_of(self.core.fd.as_raw_fd())
    }
}

/// Unmaps the UMEM when dropped.
struct UmemGuard(NonNull<u8>, usize);

impl Drop for UmemGuard {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the UMEM mapping.
        unsafe { libc::munmap(self.0.as_ptr().cast(), self.1) };
    }
}

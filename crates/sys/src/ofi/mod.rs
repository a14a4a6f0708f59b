//! libfabric (OFI) endpoints behind a safe API (feature `ofi`).
//!
//! The DFS paper's FLESnet moved from MPI to libfabric because MPI lost bandwidth on small
//! messages; `latlab dfs run/bench --transport ofi` use this module. One [`Endpoint`] is a
//! reliable-datagram endpoint (`FI_EP_RDM`) with one-sided writes and two-sided messages
//! (`FI_RMA | FI_MSG`), an address vector and one completion queue, opened with
//! `FI_DELIVERY_COMPLETE`: a write's completion means the data is visible at the target
//! (the analogue of `MPI_Win_flush`). Progress is manual: every call that waits polls the
//! completion queue, which also drives the provider's protocol (tcp;ofi_rxm, shm, ...).
//!
//! Memory is owned by the endpoint: [`Endpoint::register`] allocates and registers a
//! zeroed region; writes read from a local region at a bounds-checked offset and land in a
//! peer's region described by its [`RemoteRegion`] (address and key, exchanged by the
//! caller, e.g. over MPI). A region with writes in flight cannot be refilled
//! ([`OfiError::Busy`]), so the provider never reads memory Rust is changing. A region
//! that peers write into is only ever copied out through raw pointers
//! ([`Endpoint::read`]); which bytes are complete is the application's protocol (latlab's
//! compute nodes read a slot after the writer's message), as in `mpi_rma`.
//!
//! Messages are copied into a registered pool of [`MSG_MAX`]-byte send buffers; received
//! messages land in a pool of pre-posted receive buffers and are copied out by
//! [`Endpoint::recv`], which then posts the buffer again.
//!
//! The C side (csrc/ofi_shim.c) wraps libfabric's `static inline` calls in real functions
//! and keeps `struct fi_info` in C; [`ffi`] declares those functions.

mod ffi;

use ffi::{Comp, RawEp, RawMr};
use std::alloc::Layout;
use std::collections::VecDeque;
use std::ffi::{c_void, CStr, CString};

/// Largest message [`Endpoint::send`] carries (bytes).
pub const MSG_MAX: usize = 4096;
/// Send buffers in the pool (messages in flight at once).
const SEND_SLOTS: usize = 64;
/// Receive buffers posted at once.
const RECV_SLOTS: usize = 128;
const KIND_WRITE: u64 = 1;
const KIND_SEND: u64 = 2;
const KIND_RECV: u64 = 3;
const FI_ENODATA: i32 = 61;
const FI_EAGAIN: isize = 11;

/// Errors from libfabric calls and from misuse the API catches.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OfiError {
    /// A libfabric call returned an error code.
    #[error("{call} failed: {msg} (libfabric error {code})")]
    Call {
        /// The libfabric function.
        call: &'static str,
        /// Its (positive) error code.
        code: i32,
        /// `fi_strerror` of it.
        msg: String,
    },
    /// No provider with RDM endpoints, RMA and messages matches the name (or none at all).
    #[error("libfabric provider '{wanted}' is not available here with RDM endpoints, RMA and messages (available: {available})")]
    NoProvider {
        /// The provider asked for (`any` when none was named).
        wanted: String,
        /// The providers that are available, comma separated (or `none`).
        available: String,
    },
    /// An operation failed at completion.
    #[error("libfabric {op} failed at completion: {msg} (libfabric error {code}, provider errno {prov_errno})")]
    Completion {
        /// `write`, `send` or `recv`.
        op: &'static str,
        /// Its libfabric error code.
        code: i32,
        /// `fi_strerror` of it.
        msg: String,
        /// The provider's own error number.
        prov_errno: i32,
    },
    /// An access outside a region (local or remote).
    #[error("access of {len} bytes at offset {offset} is outside a {size}-byte region")]
    OutOfBounds {
        /// Offset in bytes.
        offset: usize,
        /// Length in bytes.
        len: usize,
        /// The region's size.
        size: usize,
    },
    /// The region still has writes in flight.
    #[error("region {0} has writes in flight")]
    Busy(usize),
    /// A message longer than [`MSG_MAX`].
    #[error("message of {0} bytes is longer than the {MSG_MAX}-byte maximum")]
    TooLong(usize),
    /// A region or peer handle from another endpoint, or a bad argument.
    #[error("{0}")]
    Invalid(&'static str),
    /// libfabric's shared library could not be loaded (it is loaded on first use).
    #[error("libfabric could not be loaded: {0} (Debian: apt-get install libfabric1, or make deps-demo)")]
    Unavailable(String),
}

/// Loads libfabric (`libfabric.so.1`) if it is not loaded yet. It is not linked into
/// latlab: Debian's build links the PSM providers' libraries, one of whose constructors
/// pins the process to CPU 0 and sleeps about 0.1 s, so every latlab process would pay
/// that at its start. Loaded here, only the commands that use libfabric do.
pub fn load() -> Result<(), OfiError> {
    // SAFETY: latofi_load takes no arguments and returns NULL or a static NUL-terminated
    // string; it is safe to call from any thread (pthread_once).
    let p = unsafe { ffi::latofi_load() };
    if p.is_null() {
        return Ok(());
    }
    // SAFETY: non-null, NUL-terminated, static.
    let why = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    Err(OfiError::Unavailable(why))
}

fn strerror(code: i32) -> String {
    // SAFETY: fi_strerror returns a pointer to a static NUL-terminated string for any code.
    let p = unsafe { ffi::latofi_strerror(code) };
    if p.is_null() {
        return format!("error {code}");
    }
    // SAFETY: non-null, NUL-terminated, static.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn check(call: &'static str, r: i64) -> Result<(), OfiError> {
    if r >= 0 {
        return Ok(());
    }
    let code = (-r) as i32;
    Err(OfiError::Call {
        call,
        code,
        msg: strerror(code),
    })
}

/// The providers that offer what latlab needs (RDM endpoints, RMA and messages, delivery
/// completion), in libfabric's order of preference; libfabric's `FI_PROVIDER`
/// environment variable restricts them.
pub fn providers() -> Result<Vec<String>, OfiError> {
    load()?;
    let mut buf = vec![0u8; 4096];
    // SAFETY: the shim writes at most buf.len() bytes, NUL-terminated, into buf.
    let n = unsafe { ffi::latofi_providers(buf.as_mut_ptr().cast(), buf.len()) };
    check("fi_getinfo", n as i64)?;
    let text = CStr::from_bytes_until_nul(&buf)
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(parse_providers(&text))
}

/// Splits the shim's `'\n'`-separated provider list.
fn parse_providers(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

/// A handle of a region registered on one [`Endpoint`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionId(usize);

/// What a peer needs to write into a region: its address (0 where the provider addresses
/// regions by offset), key and length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemoteRegion {
    /// Base address (virtual-address providers) or 0.
    pub addr: u64,
    /// Remote key.
    pub key: u64,
    /// Length in bytes.
    pub len: u64,
}

impl RemoteRegion {
    /// As three words, for an exchange between processes.
    pub fn to_words(self) -> [u64; 3] {
        [self.addr, self.key, self.len]
    }
    /// From [`RemoteRegion::to_words`].
    pub fn from_words(w: [u64; 3]) -> RemoteRegion {
        RemoteRegion {
            addr: w[0],
            key: w[1],
            len: w[2],
        }
    }
}

/// A peer in the endpoint's address vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peer(u64);

struct Region {
    ptr: *mut u8,
    layout: Layout,
    mr: *mut RawMr,
    desc: *mut c_void,
    key: u64,
    /// writes in flight that read from this region
    in_flight: u64,
}

impl Region {
    fn len(&self) -> usize {
        self.layout.size()
    }
    fn bounds(&self, offset: usize, len: usize) -> Result<(), OfiError> {
        if offset.checked_add(len).map_or(true, |e| e > self.len()) {
            return Err(OfiError::OutOfBounds {
                offset,
                len,
                size: self.len(),
            });
        }
        Ok(())
    }
}

/// An open RDM endpoint with its fabric, domain, address vector, completion queue,
/// registered regions and message pools. Dropping it closes the endpoint first, then the
/// registrations, then frees the memory.
pub struct Endpoint {
    raw: *mut RawEp,
    provider: String,
    fabric: String,
    mr_flags: i32,
    regions: Vec<Region>,
    send_pool: RegionId,
    recv_pool: RegionId,
    free_sends: Vec<usize>,
    /// received messages not yet taken: (receive slot, length)
    inbox: VecDeque<(usize, usize)>,
    writes_in_flight: u64,
    comps: [Comp; 16],
}

// SAFETY: the endpoint's handles and memory are owned by it alone; the domain is opened
// with FI_THREAD_DOMAIN, which only asks that calls on it be serialised, and every call goes
// through `&mut self` or (for copies out of a region) `&self` of a value that is not `Sync`,
// so moving the whole endpoint to another thread keeps all calls on one thread at a time.
unsafe impl Send for Endpoint {}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("provider", &self.provider)
            .field("fabric", &self.fabric)
            .field("regions", &self.regions.len())
            .finish()
    }
}

impl Endpoint {
    /// Opens an endpoint of `provider` (a name from [`providers`], or `None` for
    /// libfabric's first choice), registers the message pools and posts the receives.
    pub fn open(provider: Option<&str>) -> Result<Endpoint, OfiError> {
        let want = provider
            .map(CString::new)
            .transpose()
            .map_err(|_| OfiError::Invalid("provider name contains a NUL byte"))?;
        load()?;
        let mut raw: *mut RawEp = std::ptr::null_mut();
        // SAFETY: `want` is NUL-terminated (or null); the shim writes the handle into `raw`.
        let r = unsafe {
            ffi::latofi_open(
                want.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
                &mut raw,
            )
        };
        if r == -FI_ENODATA {
            let available = providers().unwrap_or_default();
            return Err(OfiError::NoProvider {
                wanted: provider.unwrap_or("any").to_string(),
                available: if available.is_empty() {
                    "none".into()
                } else {
                    available.join(", ")
                },
            });
        }
        check("opening the libfabric endpoint", r as i64)?;
        // SAFETY: `raw` is the live handle just opened; the names are NUL-terminated
        // strings owned by its fi_info, copied before anything can free them.
        let (provider, fabric, mr_flags) = unsafe {
            (
                CStr::from_ptr(ffi::latofi_provider(raw))
                    .to_string_lossy()
                    .into_owned(),
                CStr::from_ptr(ffi::latofi_fabric(raw))
                    .to_string_lossy()
                    .into_owned(),
                ffi::latofi_mr_flags(raw),
            )
        };
        let mut ep = Endpoint {
            raw,
            provider,
            fabric,
            mr_flags,
            regions: Vec::new(),
            send_pool: RegionId(0),
            recv_pool: RegionId(1),
            free_sends: (0..SEND_SLOTS).rev().collect(),
            inbox: VecDeque::with_capacity(RECV_SLOTS),
            writes_in_flight: 0,
            comps: [Comp::default(); 16],
        };
        // SAFETY: the handle is live.
        let max = unsafe { ffi::latofi_max_msg(raw) };
        if max < MSG_MAX {
            return Err(OfiError::Invalid(
                "the provider's largest message is below 4 KiB",
            ));
        }
        ep.send_pool = ep.register(SEND_SLOTS * MSG_MAX)?;
        ep.recv_pool = ep.register(RECV_SLOTS * MSG_MAX)?;
        for slot in 0..RECV_SLOTS {
            ep.post_recv(slot)?;
        }
        Ok(ep)
    }

    /// The provider's name (e.g. `tcp;ofi_rxm`, `shm`).
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// The fabric's name (e.g. a subnet, or `shm`).
    pub fn fabric(&self) -> &str {
        &self.fabric
    }

    /// This endpoint's address, for peers' [`Endpoint::insert_peer`].
    pub fn address(&self) -> Result<Vec<u8>, OfiError> {
        let mut buf = vec![0u8; 512];
        let mut len = buf.len();
        // SAFETY: the shim writes at most `len` bytes into buf and the real length to len.
        let r = unsafe { ffi::latofi_getname(self.raw, buf.as_mut_ptr().cast(), &mut len) };
        check("fi_getname", r as i64)?;
        buf.truncate(len);
        Ok(buf)
    }

    /// Adds a peer's address (from its [`Endpoint::address`]) to the address vector.
    pub fn insert_peer(&mut self, addr: &[u8]) -> Result<Peer, OfiError> {
        if addr.is_empty() {
            return Err(OfiError::Invalid("empty peer address"));
        }
        let mut a = 0u64;
        // SAFETY: `addr` is a live buffer holding one address of the endpoint's format (as
        // fi_getname wrote it on the peer); the shim writes one fi_addr_t into `a`.
        let r = unsafe { ffi::latofi_av_insert(self.raw, addr.as_ptr().cast(), &mut a) };
        check("fi_av_insert", r as i64)?;
        Ok(Peer(a))
    }

    /// Allocates `len` zeroed, page-aligned bytes and registers them for local and remote
    /// access.
    pub fn register(&mut self, len: usize) -> Result<RegionId, OfiError> {
        let layout = Layout::from_size_align(len.max(1), 4096)
            .map_err(|_| OfiError::Invalid("region too large"))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        let id = self.regions.len();
        let mut mr: *mut RawMr = std::ptr::null_mut();
        let mut desc: *mut c_void = std::ptr::null_mut();
        let mut key = 0u64;
        // SAFETY: `ptr` points to `layout.size()` bytes owned by this endpoint until it
        // drops (after the registration is closed); the shim writes the handles.
        let r = unsafe {
            ffi::latofi_mr_reg(
                self.raw,
                ptr.cast(),
                layout.size(),
                id as u64 + 1,
                &mut mr,
                &mut desc,
                &mut key,
            )
        };
        if let Err(e) = check("fi_mr_reg", r as i64) {
            // SAFETY: allocated above with this layout, never registered.
            unsafe { std::alloc::dealloc(ptr, layout) };
            return Err(e);
        }
        self.regions.push(Region {
            ptr,
            layout,
            mr,
            desc,
            key,
            in_flight: 0,
        });
        Ok(RegionId(id))
    }

    fn region(&self, id: RegionId) -> Result<&Region, OfiError> {
        self.regions
            .get(id.0)
            .ok_or(OfiError::Invalid("no such region on this endpoint"))
    }

    /// What a peer needs to write into region `id`.
    pub fn remote(&self, id: RegionId) -> Result<RemoteRegion, OfiError> {
        let r = self.region(id)?;
        Ok(RemoteRegion {
            addr: if self.mr_flags & 2 != 0 {
                r.ptr as u64
            } else {
                0
            },
            key: r.key,
            len: r.len() as u64,
        })
    }

    /// Copies `data` into region `id` at `offset`; refused while writes from the region
    /// are in flight.
    pub fn fill(&mut self, id: RegionId, offset: usize, data: &[u8]) -> Result<(), OfiError> {
        let r = self.region(id)?;
        r.bounds(offset, data.len())?;
        if r.in_flight > 0 {
            return Err(OfiError::Busy(id.0));
        }
        // SAFETY: the destination lies inside the region (bounds-checked), no local write
        // reads it (in_flight == 0), and `data` is a distinct Rust slice.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), r.ptr.add(offset), data.len()) };
        Ok(())
    }

    /// Copies `out.len()` bytes at `offset` of region `id` into `out`.
    pub fn read(&self, id: RegionId, offset: usize, out: &mut [u8]) -> Result<(), OfiError> {
        let r = self.region(id)?;
        r.bounds(offset, out.len())?;
        // SAFETY: the source lies inside the region (bounds-checked) and `out` is a distinct
        // Rust buffer. Peers' writes land outside the Rust abstract machine; whether these
        // bytes are the intended ones is the caller's protocol (read after the message).
        unsafe { std::ptr::copy_nonoverlapping(r.ptr.add(offset), out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// Starts writing `len` bytes at `offset` of local region `local` to `roffset` of the
    /// peer's `remote` region (`fi_write`); complete it with [`Endpoint::wait_writes`].
    pub fn write(
        &mut self,
        peer: Peer,
        local: RegionId,
        offset: usize,
        len: usize,
        remote: &RemoteRegion,
        roffset: usize,
    ) -> Result<(), OfiError> {
        let r = self.region(local)?;
        r.bounds(offset, len)?;
        if roffset
            .checked_add(len)
            .map_or(true, |e| e as u64 > remote.len)
        {
            return Err(OfiError::OutOfBounds {
                offset: roffset,
                len,
                size: remote.len as usize,
            });
        }
        // SAFETY: offset + len lies inside the region (checked above).
        let src = unsafe { r.ptr.add(offset) };
        let desc = r.desc;
        let raddr = remote.addr + roffset as u64;
        let ctx = (KIND_WRITE << 56) | local.0 as u64;
        loop {
            // SAFETY: `src..src+len` stays allocated and unmodified until the completion:
            // the region lives as long as the endpoint, `fill` refuses while in_flight > 0,
            // and Drop closes the endpoint before freeing memory. The remote range was
            // checked against the peer's region length.
            let n = unsafe {
                ffi::latofi_write(
                    self.raw,
                    src.cast(),
                    len,
                    desc,
                    peer.0,
                    raddr,
                    remote.key,
                    ctx,
                )
            };
            if n == -FI_EAGAIN {
                self.poll_wait()?;
                continue;
            }
            check("fi_write", n as i64)?;
            break;
        }
        self.regions[local.0].in_flight += 1;
        self.writes_in_flight += 1;
        Ok(())
    }

    /// Polls until every write started so far is complete at its target.
    pub fn wait_writes(&mut self) -> Result<(), OfiError> {
        while self.writes_in_flight > 0 {
            self.poll_wait()?;
        }
        Ok(())
    }

    /// Writes in flight.
    pub fn writes_in_flight(&self) -> u64 {
        self.writes_in_flight
    }

    /// Sends `data` (at most [`MSG_MAX`] bytes) to `peer` (`fi_send`); it is copied, so
    /// `data` is free on return. Waits (polling) only when every send buffer is in flight.
    pub fn send(&mut self, peer: Peer, data: &[u8]) -> Result<(), OfiError> {
        if data.len() > MSG_MAX {
            return Err(OfiError::TooLong(data.len()));
        }
        let slot = loop {
            if let Some(s) = self.free_sends.pop() {
                break s;
            }
            self.poll_wait()?;
        };
        let pool = &self.regions[self.send_pool.0];
        // SAFETY: slot < SEND_SLOTS, so the slot lies inside the send pool; a free slot
        // has no send in flight, so nothing reads it.
        let dst = unsafe { pool.ptr.add(slot * MSG_MAX) };
        // SAFETY: `data` (≤ MSG_MAX bytes) is a distinct Rust slice.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        let desc = pool.desc;
        let ctx = (KIND_SEND << 56) | slot as u64;
        loop {
            // SAFETY: the slot stays allocated and unmodified until its completion returns
            // it to free_sends.
            let n =
                unsafe { ffi::latofi_send(self.raw, dst.cast(), data.len(), desc, peer.0, ctx) };
            if n == -FI_EAGAIN {
                self.poll_wait()?;
                continue;
            }
            if let Err(e) = check("fi_send", n as i64) {
                self.free_sends.push(slot);
                return Err(e);
            }
            return Ok(());
        }
    }

    fn post_recv(&mut self, slot: usize) -> Result<(), OfiError> {
        let pool = &self.regions[self.recv_pool.0];
        // SAFETY: slot < RECV_SLOTS: inside the receive pool.
        let dst = unsafe { pool.ptr.add(slot * MSG_MAX) };
        let desc = pool.desc;
        let ctx = (KIND_RECV << 56) | slot as u64;
        loop {
            // SAFETY: the slot is not read until its completion (it is in neither the
            // inbox nor being copied), and stays allocated while the endpoint lives.
            let n = unsafe { ffi::latofi_recv(self.raw, dst.cast(), MSG_MAX, desc, ctx) };
            if n == -FI_EAGAIN {
                self.poll_wait()?;
                continue;
            }
            return check("fi_recv", n as i64);
        }
    }

    /// Copies the next received message into `out` (resized to it) and returns its length,
    /// or `None` when none has arrived (after one poll of the completion queue).
    pub fn recv(&mut self, out: &mut Vec<u8>) -> Result<Option<usize>, OfiError> {
        if self.inbox.is_empty() {
            self.poll_wait()?;
        }
        let Some((slot, len)) = self.inbox.pop_front() else {
            return Ok(None);
        };
        out.resize(len, 0);
        self.read(self.recv_pool, slot * MSG_MAX, &mut out[..len])?;
        self.post_recv(slot)?;
        Ok(Some(len))
    }

    /// One step of a wait: polls, and gives the CPU away when nothing completed (ranks
    /// are often more than cores; the peer this one waits for may need the CPU).
    fn poll_wait(&mut self) -> Result<(), OfiError> {
        if self.progress()? == 0 {
            std::thread::yield_now();
        }
        Ok(())
    }

    /// Polls the completion queue once (which drives the provider's progress); returns the
    /// completions handled.
    pub fn progress(&mut self) -> Result<usize, OfiError> {
        let mut total = 0;
        loop {
            // SAFETY: `comps` has room for 16 entries, the count passed.
            let n =
                unsafe { ffi::latofi_cq_read(self.raw, self.comps.as_mut_ptr(), self.comps.len()) };
            check("fi_cq_read", n as i64)?;
            let n = n as usize;
            for i in 0..n {
                self.complete(self.comps[i])?;
            }
            total += n;
            if n < self.comps.len() {
                return Ok(total);
            }
        }
    }

    fn complete(&mut self, c: Comp) -> Result<(), OfiError> {
        let (kind, idx) = (c.ctx >> 56, (c.ctx & ((1 << 56) - 1)) as usize);
        let op = match kind {
            KIND_WRITE => "write",
            KIND_SEND => "send",
            _ => "recv",
        };
        match kind {
            KIND_WRITE => {
                if let Some(r) = self.regions.get_mut(idx) {
                    r.in_flight = r.in_flight.saturating_sub(1);
                }
                self.writes_in_flight = self.writes_in_flight.saturating_sub(1);
            }
            KIND_SEND => self.free_sends.push(idx),
            KIND_RECV if c.err == 0 => self.inbox.push_back((idx, c.len as usize)),
            KIND_RECV => {}
            _ => return Err(OfiError::Invalid("completion with an unknown context")),
        }
        if c.err != 0 {
            return Err(OfiError::Completion {
                op,
                code: c.err,
                msg: strerror(c.err),
                prov_errno: c.prov_errno,
            });
        }
        Ok(())
    }

    /// Sends in flight.
    pub fn sends_in_flight(&self) -> usize {
        SEND_SLOTS - self.free_sends.len()
    }

    /// Polls until every write and send started so far has completed.
    pub fn drain(&mut self) -> Result<(), OfiError> {
        while self.writes_in_flight > 0 || self.free_sends.len() < SEND_SLOTS {
            self.poll_wait()?;
        }
        Ok(())
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        // SAFETY: the endpoint is closed first (no operation can touch the regions after
        // it), then each registration, then the rest of the handle, then the memory; each
        // handle is closed exactly once and never used again.
        unsafe {
            ffi::latofi_close_ep(self.raw);
            for r in &self.regions {
                if !r.mr.is_null() {
                    ffi::latofi_mr_close(r.mr);
                }
            }
            ffi::latofi_close(self.raw);
            for r in &self.regions {
                std::alloc::dealloc(r.ptr, r.layout);
            }
        }
    }
}

#[cfg(test)]
mod tests;

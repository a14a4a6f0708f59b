//! The three `bpf(2)` commands latlab needs: an `XSKMAP`, an XDP program, and a
//! `BPF_LINK_CREATE` link attaching it to an interface. Every object is a file descriptor
//! owned by this process: when the process exits — a crash or SIGKILL included — the link
//! closes and the kernel detaches the program. Nothing is pinned.

use super::prog::Insn;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_LINK_CREATE: libc::c_long = 28;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_XDP: u32 = 37;
/// `XDP_FLAGS_SKB_MODE`: generic XDP (any interface, after the stack allocated an skb).
pub const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
/// `XDP_FLAGS_DRV_MODE`: native XDP in the driver.
pub const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;

/// `union bpf_attr`, as bytes (128 is more than any command here uses; the kernel checks
/// that the tail it does not know is zero).
struct Attr([u8; 128]);

impl Attr {
    fn new() -> Attr {
        Attr([0; 128])
    }
    fn u32(&mut self, off: usize, v: u32) -> &mut Attr {
        self.0[off..off + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(&mut self, off: usize, v: u64) -> &mut Attr {
        self.0[off..off + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn call(&mut self, cmd: libc::c_long) -> io::Result<libc::c_long> {
        // SAFETY: `self.0` is a writable bpf_attr-sized buffer for the duration of the
        // call; every pointer stored in it refers to memory the caller keeps alive.
        let r = unsafe {
            libc::syscall(
                libc::SYS_bpf,
                cmd,
                self.0.as_mut_ptr(),
                self.0.len() as libc::c_uint,
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r)
        }
    }
    fn fd(&mut self, cmd: libc::c_long) -> io::Result<OwnedFd> {
        let r = self.call(cmd)?;
        // SAFETY: these commands return a new file descriptor that nobody else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(r as i32) })
    }
}

/// Creates an `XSKMAP` with `entries` slots (one per receive queue).
pub fn create_xskmap(entries: u32) -> io::Result<OwnedFd> {
    let mut a = Attr::new();
    a.u32(0, BPF_MAP_TYPE_XSKMAP)
        .u32(4, 4)
        .u32(8, 4)
        .u32(12, entries);
    a.0[28..34].copy_from_slice(b"latlab");
    a.fd(BPF_MAP_CREATE)
}

/// Stores socket `xsk_fd` at `key` of the map.
pub fn set_xskmap(map: &OwnedFd, key: u32, xsk_fd: i32) -> io::Result<()> {
    let k = key;
    let v = xsk_fd as u32;
    let mut a = Attr::new();
    a.u32(0, map.as_raw_fd() as u32)
        .u64(8, &k as *const u32 as u64)
        .u64(16, &v as *const u32 as u64)
        .u64(24, 0);
    a.call(BPF_MAP_UPDATE_ELEM).map(|_| ())
}

/// Loads an XDP program; on a verifier rejection the error carries the verifier's log.
pub fn load_xdp(insns: &[Insn]) -> io::Result<OwnedFd> {
    let license = b"GPL\0";
    let mut log = vec![0u8; 16 * 1024];
    let mut a = Attr::new();
    a.u32(0, BPF_PROG_TYPE_XDP)
        .u32(4, insns.len() as u32)
        .u64(8, insns.as_ptr() as u64)
        .u64(16, license.as_ptr() as u64)
        .u32(24, 1)
        .u32(28, log.len() as u32)
        .u64(32, log.as_mut_ptr() as u64)
        .u32(68, BPF_XDP);
    a.0[48..58].copy_from_slice(b"latlab_xsk");
    match a.fd(BPF_PROG_LOAD) {
        Ok(fd) => Ok(fd),
        Err(e)
            if e.raw_os_error() == Some(libc::EACCES) || e.raw_os_error() == Some(libc::EINVAL) =>
        {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let text = String::from_utf8_lossy(&log[..end]);
            let last = text.lines().rev().take(3).collect::<Vec<_>>().join(" | ");
            Err(io::Error::new(e.kind(), format!("{e}; verifier: {last}")))
        }
        Err(e) => Err(e),
    }
}

/// Attaches program `prog` to interface `ifindex` through a BPF link with `flags`
/// ([`XDP_FLAGS_DRV_MODE`] or [`XDP_FLAGS_SKB_MODE`]). Closing the returned descriptor
/// (or the process ending) detaches it.
pub fn link_xdp(prog: &OwnedFd, ifindex: u32, flags: u32) -> io::Result<OwnedFd> {
    let mut a = Attr::new();
    a.u32(0, prog.as_raw_fd() as u32)
        .u32(4, ifindex)
        .u32(8, BPF_XDP)
        .u32(12, flags);
    a.fd(BPF_LINK_CREATE)
}

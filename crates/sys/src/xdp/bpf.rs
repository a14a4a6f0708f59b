//! The three `bpf(2)` commands the XDP path needs ([`crate::bpf`] holds the system call): an `XSKMAP`, an XDP program, and a
//! `BPF_LINK_CREATE` link attaching it to an interface. Every object is a file descriptor
//! owned by this process: when the process exits — a crash or SIGKILL included — the link
//! closes and the kernel detaches the program. Nothing is pinned.

use crate::bpf::{Attr, Insn, BPF_LINK_CREATE};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_XDP: u32 = 37;
/// `XDP_FLAGS_SKB_MODE`: generic XDP (any interface, after the stack allocated an skb).
pub const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
/// `XDP_FLAGS_DRV_MODE`: native XDP in the driver.
pub const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;

/// Creates an `XSKMAP` with `entries` slots (one per receive queue).
pub fn create_xskmap(entries: u32) -> io::Result<OwnedFd> {
    crate::bpf::create_map(BPF_MAP_TYPE_XSKMAP, 4, 4, entries)
}

/// Stores socket `xsk_fd` at `key` of the map.
pub fn set_xskmap(map: &OwnedFd, key: u32, xsk_fd: i32) -> io::Result<()> {
    crate::bpf::update_u32(map, key, xsk_fd as u32)
}

/// Loads an XDP program; on a verifier rejection the error carries the verifier's log.
pub fn load_xdp(insns: &[Insn]) -> io::Result<OwnedFd> {
    crate::bpf::load_program(BPF_PROG_TYPE_XDP, BPF_XDP, 0, "latlab_xsk", insns)
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

//! The `bpf(2)` system call, the instruction encoding and the few commands latlab's BPF
//! users share: the XDP steering program ([`crate::xdp`]) and the kernel-event recorder
//! ([`crate::ktrace`]'s BPF reader). Every object is a file descriptor owned by this
//! process: when the process exits — a crash or SIGKILL included — the kernel detaches
//! and frees what it held. Nothing is pinned.

pub mod asm;

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub(crate) const BPF_MAP_CREATE: libc::c_long = 0;
pub(crate) const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
pub(crate) const BPF_PROG_LOAD: libc::c_long = 5;
pub(crate) const BPF_RAW_TRACEPOINT_OPEN: libc::c_long = 17;
pub(crate) const BPF_LINK_CREATE: libc::c_long = 28;
pub(crate) const BPF_OBJ_GET_INFO_BY_FD: libc::c_long = 15;

/// `BPF_MAP_TYPE_ARRAY`.
pub const MAP_ARRAY: u32 = 2;
/// `BPF_MAP_TYPE_RINGBUF`.
pub const MAP_RINGBUF: u32 = 27;
/// `BPF_F_MMAPABLE`: an array map this process can `mmap`.
pub const MAP_F_MMAPABLE: u32 = 1 << 10;
/// `BPF_PROG_TYPE_RAW_TRACEPOINT`.
pub const PROG_RAW_TRACEPOINT: u32 = 17;
/// `BPF_PROG_TYPE_TRACING`.
pub const PROG_TRACING: u32 = 26;
/// `BPF_TRACE_RAW_TP`: a [`PROG_TRACING`] program on a raw tracepoint whose arguments the
/// verifier types from the kernel's BTF (`tp_btf`), so their fields load directly.
pub const ATTACH_TRACE_RAW_TP: u32 = 23;

/// One eBPF instruction (`struct bpf_insn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Insn {
    /// Opcode.
    pub code: u8,
    /// `dst | src << 4`.
    pub regs: u8,
    /// Jump or memory offset.
    pub off: i16,
    /// Immediate.
    pub imm: i32,
}

/// An instruction from its fields.
pub const fn ins(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: dst | (src << 4),
        off,
        imm,
    }
}

/// `union bpf_attr`, as bytes (128 is more than any command here uses; the kernel checks
/// that the tail it does not know is zero).
pub(crate) struct Attr(pub(crate) [u8; 128]);

impl Attr {
    pub(crate) fn new() -> Attr {
        Attr([0; 128])
    }
    pub(crate) fn u32(&mut self, off: usize, v: u32) -> &mut Attr {
        self.0[off..off + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    pub(crate) fn u64(&mut self, off: usize, v: u64) -> &mut Attr {
        self.0[off..off + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
    pub(crate) fn call(&mut self, cmd: libc::c_long) -> io::Result<libc::c_long> {
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
    pub(crate) fn fd(&mut self, cmd: libc::c_long) -> io::Result<OwnedFd> {
        let r = self.call(cmd)?;
        // SAFETY: these commands return a new file descriptor that nobody else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(r as i32) })
    }
}

/// Creates a map of `map_type` with `entries` slots of `key` and `value` bytes, named
/// `latlab`.
pub fn create_map(map_type: u32, key: u32, value: u32, entries: u32) -> io::Result<OwnedFd> {
    create(map_type, key, value, entries, 0)
}

/// Creates an array map of `entries` values of `value` bytes that this process can
/// `mmap` (`BPF_F_MMAPABLE`, Linux 5.5), named `latlab`.
pub fn create_mmapable_array(value: u32, entries: u32) -> io::Result<OwnedFd> {
    create(MAP_ARRAY, 4, value, entries, MAP_F_MMAPABLE)
}

fn create(map_type: u32, key: u32, value: u32, entries: u32, flags: u32) -> io::Result<OwnedFd> {
    let mut a = Attr::new();
    a.u32(0, map_type)
        .u32(4, key)
        .u32(8, value)
        .u32(12, entries)
        .u32(16, flags);
    a.0[28..34].copy_from_slice(b"latlab");
    a.fd(BPF_MAP_CREATE)
}

/// Stores the u32 `value` (for a map of sockets: a file descriptor) at `key`.
pub fn update_u32(map: &OwnedFd, key: u32, value: u32) -> io::Result<()> {
    let (k, v) = (key, value);
    let mut a = Attr::new();
    a.u32(0, map.as_raw_fd() as u32)
        .u64(8, &k as *const u32 as u64)
        .u64(16, &v as *const u32 as u64)
        .u64(24, 0);
    a.call(BPF_MAP_UPDATE_ELEM).map(|_| ())
}

/// Loads a program of `prog_type` named `name` (at most 15 bytes), attach type
/// `attach_type`, attached to the kernel's BTF type `attach_btf_id` (0: none); on a
/// verifier rejection the error carries the verifier's last lines.
pub fn load_program(
    prog_type: u32,
    attach_type: u32,
    attach_btf_id: u32,
    name: &str,
    insns: &[Insn],
) -> io::Result<OwnedFd> {
    let license = b"GPL\0";
    let mut log = vec![0u8; 64 * 1024];
    let mut a = Attr::new();
    a.u32(0, prog_type)
        .u32(4, insns.len() as u32)
        .u64(8, insns.as_ptr() as u64)
        .u64(16, license.as_ptr() as u64)
        .u32(24, 1)
        .u32(28, log.len() as u32)
        .u64(32, log.as_mut_ptr() as u64)
        .u32(68, attach_type)
        .u32(108, attach_btf_id);
    let n = name.len().min(15);
    a.0[48..48 + n].copy_from_slice(&name.as_bytes()[..n]);
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

/// Attaches `prog` to the raw tracepoint `name` (`sched_switch`, `irq_handler_entry`, …):
/// a [`PROG_RAW_TRACEPOINT`] program by name, a [`PROG_TRACING`] one (`name` `None`) where
/// its BTF type says. Closing the returned descriptor, or the process ending, detaches
/// it. `ENOENT`: this kernel has no such tracepoint.
pub fn attach_raw_tracepoint(prog: &OwnedFd, name: Option<&str>) -> io::Result<OwnedFd> {
    let c = name
        .map(std::ffi::CString::new)
        .transpose()
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a tracepoint name"))?;
    let mut a = Attr::new();
    a.u64(0, c.as_ref().map_or(0, |c| c.as_ptr() as u64))
        .u32(8, prog.as_raw_fd() as u32);
    a.fd(BPF_RAW_TRACEPOINT_OPEN)
}

/// What the kernel counts of a loaded program (`struct bpf_prog_info`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProgStats {
    /// Runs (counted only while `kernel.bpf_stats_enabled` is 1).
    pub run_cnt: u64,
    /// Time in the program, ns (likewise).
    pub run_time_ns: u64,
    /// Times the kernel did not run the program because it was already running on that
    /// CPU (its recursion guard): an event the program never saw.
    pub recursion_misses: u64,
}

/// The kernel's counters of program `prog`.
pub fn prog_stats(prog: &OwnedFd) -> io::Result<ProgStats> {
    let mut info = [0u8; 256];
    let mut a = Attr::new();
    a.u32(0, prog.as_raw_fd() as u32)
        .u32(4, info.len() as u32)
        .u64(8, info.as_mut_ptr() as u64);
    a.call(BPF_OBJ_GET_INFO_BY_FD)?;
    let at = |o: usize| u64::from_ne_bytes(info[o..o + 8].try_into().expect("8 bytes"));
    Ok(ProgStats {
        run_time_ns: at(192),
        run_cnt: at(200),
        recursion_misses: at(208),
    })
}

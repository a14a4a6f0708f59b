//! Declarations of csrc/ofi_shim.c (compiled by build.rs). Opaque pointers and integers
//! only: `struct fi_info` and the ops tables stay on the C side.

use std::ffi::{c_char, c_int, c_void};

/// `struct latofi` (fabric, domain, address vector, completion queue, endpoint).
#[repr(C)]
pub(super) struct RawEp {
    _private: [u8; 0],
}

/// `struct fid_mr`.
#[repr(C)]
pub(super) struct RawMr {
    _private: [u8; 0],
}

/// `struct latofi_comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Comp {
    pub(super) ctx: u64,
    pub(super) len: u64,
    pub(super) err: i32,
    pub(super) prov_errno: i32,
}

extern "C" {
    pub(super) fn latofi_load() -> *const c_char;
    pub(super) fn latofi_providers(out: *mut c_char, len: usize) -> c_int;
    pub(super) fn latofi_open(prov: *const c_char, out: *mut *mut RawEp) -> c_int;
    pub(super) fn latofi_close(l: *mut RawEp);
    pub(super) fn latofi_close_ep(l: *mut RawEp) -> c_int;
    pub(super) fn latofi_provider(l: *const RawEp) -> *const c_char;
    pub(super) fn latofi_fabric(l: *const RawEp) -> *const c_char;
    pub(super) fn latofi_mr_flags(l: *const RawEp) -> c_int;
    pub(super) fn latofi_max_msg(l: *const RawEp) -> usize;
    pub(super) fn latofi_getname(l: *mut RawEp, addr: *mut c_void, len: *mut usize) -> c_int;
    pub(super) fn latofi_av_insert(l: *mut RawEp, addr: *const c_void, fi_addr: *mut u64) -> c_int;
    pub(super) fn latofi_mr_reg(
        l: *mut RawEp,
        buf: *mut c_void,
        len: usize,
        requested_key: u64,
        mr: *mut *mut RawMr,
        desc: *mut *mut c_void,
        key: *mut u64,
    ) -> c_int;
    pub(super) fn latofi_mr_close(mr: *mut RawMr) -> c_int;
    pub(super) fn latofi_write(
        l: *mut RawEp,
        buf: *const c_void,
        len: usize,
        desc: *mut c_void,
        dest: u64,
        raddr: u64,
        key: u64,
        ctx: u64,
    ) -> isize;
    pub(super) fn latofi_send(
        l: *mut RawEp,
        buf: *const c_void,
        len: usize,
        desc: *mut c_void,
        dest: u64,
        ctx: u64,
    ) -> isize;
    pub(super) fn latofi_recv(
        l: *mut RawEp,
        buf: *mut c_void,
        len: usize,
        desc: *mut c_void,
        ctx: u64,
    ) -> isize;
    pub(super) fn latofi_cq_read(l: *mut RawEp, out: *mut Comp, count: usize) -> isize;
    pub(super) fn latofi_strerror(err: c_int) -> *const c_char;
}

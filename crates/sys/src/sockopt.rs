//! Typed `setsockopt(2)` for option values passed as a C struct or integer (the
//! `AF_PACKET` and `AF_XDP` sockets' options, the UDP sockets' integer options) or as a
//! byte string (`SO_BINDTODEVICE`'s interface name).

use std::io;
use std::os::fd::RawFd;

/// Sets option `name` at `level` on the socket `fd` to `*v`, passing `size_of::<T>()`.
pub(crate) fn set<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, v: &T) -> io::Result<()> {
    // SAFETY: `v` points to a live T and the length passed is its size; `fd` is a socket
    // descriptor the caller holds open for the call.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (v as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    result(r)
}

/// Sets option `name` at `level` on the socket `fd` to the bytes of `value`, passing
/// their length.
pub(crate) fn set_bytes(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: &[u8],
) -> io::Result<()> {
    // SAFETY: `value` is a readable buffer of the length passed for the duration of the
    // call; `fd` is a socket descriptor the caller holds open for the call.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            value.as_ptr().cast(),
            value.len() as libc::socklen_t,
        )
    };
    result(r)
}

fn result(r: libc::c_int) -> io::Result<()> {
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

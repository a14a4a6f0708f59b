//! Typed `setsockopt(2)` for option values passed as a C struct or integer (the
//! `AF_PACKET` and `AF_XDP` sockets' options).

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
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

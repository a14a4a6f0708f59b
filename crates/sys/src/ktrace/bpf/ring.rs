//! The consumer side of a `BPF_MAP_TYPE_RINGBUF`, read through `mmap`.
//!
//! The kernel maps a ring buffer as a consumer page (read-write: `consumer_pos`), then a
//! producer page (read-only: `producer_pos`) followed by the data area mapped twice in a
//! row, so a record that wraps around the end is contiguous. Each record starts with an
//! 8-byte header: its length with the `BUSY` bit (31: reserved, not yet committed) and
//! the `DISCARD` bit (30: committed empty), then the data, padded to 8 bytes. The
//! consumer reads `producer_pos` (acquire), walks the committed records from
//! `consumer_pos`, stops at the first busy one, and publishes its new position
//! (release). [`walk`] is that walk over any memory, unit-tested on a byte array.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

const BUSY: u32 = 1 << 31;
const DISCARD: u32 = 1 << 30;
const HDR: u64 = 8;

/// What [`walk`] reads: the data area (`2 × size` bytes, the second copy mirroring the
/// first), through whatever memory holds it.
pub trait Area {
    /// The header word at `off` (< `size`), read with acquire ordering.
    fn header(&self, off: usize) -> u32;
    /// `len` bytes at `off` (< `size`; `off + len` may pass `size`).
    fn bytes(&self, off: usize, len: usize) -> &[u8];
}

/// Hands every committed, not discarded, record from `cons` up to `prod` to `each`, and
/// returns the new consumer position (before the first record still busy).
pub fn walk(
    area: &dyn Area,
    size: usize,
    mut cons: u64,
    prod: u64,
    each: &mut dyn FnMut(&[u8]),
) -> u64 {
    let mask = size as u64 - 1;
    while cons < prod {
        let off = (cons & mask) as usize;
        let h = area.header(off);
        if h & BUSY != 0 {
            break;
        }
        let len = u64::from(h & !(BUSY | DISCARD));
        if h & DISCARD == 0 {
            each(area.bytes(off + HDR as usize, len as usize));
        }
        cons += (len + HDR).next_multiple_of(8);
    }
    cons
}

/// A ring buffer mapped for reading.
#[derive(Debug)]
pub struct Ring {
    cons: *mut u8,
    prod: *mut u8,
    page: usize,
    size: usize,
}

// SAFETY: the mappings belong to this value alone; the kernel's side is synchronised
// through the atomic positions.
unsafe impl Send for Ring {}

struct Mapped<'a>(&'a Ring);

impl Area for Mapped<'_> {
    fn header(&self, off: usize) -> u32 {
        // SAFETY: `off < size`, inside the data area's first copy; the header word is
        // 8-aligned and written by the kernel with release semantics.
        unsafe { (*(self.0.data().add(off) as *const AtomicU32)).load(Ordering::Acquire) }
    }
    fn bytes(&self, off: usize, len: usize) -> &[u8] {
        let len = len.min(self.0.size);
        // SAFETY: `off < size` and `len <= size`, inside the doubly mapped data area; a
        // committed record is not written again until the consumer position passes it.
        unsafe { std::slice::from_raw_parts(self.0.data().add(off), len) }
    }
}

impl Ring {
    /// Maps the ring buffer map `fd` of `size` data bytes.
    pub fn map(fd: &OwnedFd, size: usize) -> io::Result<Ring> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let map = |len: usize, prot: i32, off: usize| -> io::Result<*mut u8> {
            // SAFETY: a fresh shared mapping of the map's file; the kernel checks sizes.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    prot,
                    libc::MAP_SHARED,
                    fd.as_raw_fd(),
                    off as libc::off_t,
                )
            };
            if p == libc::MAP_FAILED {
                Err(io::Error::last_os_error())
            } else {
                Ok(p.cast())
            }
        };
        let cons = map(page, libc::PROT_READ | libc::PROT_WRITE, 0)?;
        let prod = match map(page + 2 * size, libc::PROT_READ, page) {
            Ok(p) => p,
            Err(e) => {
                // SAFETY: `cons` was mapped above with this length.
                unsafe { libc::munmap(cons.cast(), page) };
                return Err(e);
            }
        };
        Ok(Ring {
            cons,
            prod,
            page,
            size,
        })
    }

    fn data(&self) -> *mut u8 {
        // SAFETY: the data area follows the producer page in the same mapping.
        unsafe { self.prod.add(self.page) }
    }

    fn positions(&self) -> (&AtomicU64, &AtomicU64) {
        // SAFETY: both pages start with an 8-aligned u64 position the kernel updates
        // atomically.
        unsafe {
            (
                &*(self.cons as *const AtomicU64),
                &*(self.prod as *const AtomicU64),
            )
        }
    }

    /// Hands every record committed so far to `each`, then frees their space. Returns
    /// the bytes consumed.
    pub fn drain(&mut self, each: &mut dyn FnMut(&[u8])) -> u64 {
        let (cpos, ppos) = self.positions();
        let cons = cpos.load(Ordering::Acquire);
        let prod = ppos.load(Ordering::Acquire);
        let new = walk(&Mapped(self), self.size, cons, prod, each);
        cpos.store(new, Ordering::Release);
        new - cons
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: both were mapped in `map` with these lengths and are not used after.
        unsafe {
            libc::munmap(self.cons.cast(), self.page);
            libc::munmap(self.prod.cast(), self.page + 2 * self.size);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Bytes(Vec<u8>);
    impl Area for Bytes {
        fn header(&self, off: usize) -> u32 {
            u32::from_le_bytes(self.0[off..off + 4].try_into().unwrap())
        }
        fn bytes(&self, off: usize, len: usize) -> &[u8] {
            &self.0[off..off + len]
        }
    }

    /// A ring of `size` bytes with records written at positions from `start`, mirrored
    /// as the kernel maps it; each record is (flags, data).
    fn ring(size: usize, start: u64, recs: &[(u32, &[u8])]) -> (Bytes, u64) {
        let mut a = vec![0u8; size];
        let mut pos = start;
        for (flags, data) in recs {
            let len = data.len() as u64;
            let mut rec = ((data.len() as u32) | flags).to_le_bytes().to_vec();
            rec.extend([0; 4]);
            rec.extend(*data);
            for (k, b) in rec.iter().enumerate() {
                a[((pos + k as u64) % size as u64) as usize] = *b;
            }
            pos += (len + HDR).next_multiple_of(8);
        }
        let mut doubled = a.clone();
        doubled.extend(&a);
        (Bytes(doubled), pos)
    }

    #[test]
    fn committed_records_come_out_in_order_discarded_ones_are_skipped_and_a_busy_one_stops_the_walk(
    ) {
        let (area, prod) = ring(
            128,
            0,
            &[
                (0, b"abc"),
                (DISCARD, b"zzzz"),
                (0, b"0123456789"),
                (BUSY, b"x"),
                (0, b"late"),
            ],
        );
        let mut got = Vec::new();
        let cons = walk(&area, 128, 0, prod, &mut |r| got.push(r.to_vec()));
        assert_eq!(got, vec![b"abc".to_vec(), b"0123456789".to_vec()]);
        assert_eq!(cons, 16 + 16 + 24, "stopped before the busy record");
    }

    #[test]
    fn a_record_that_wraps_past_the_end_is_read_whole_through_the_mirror() {
        // positions count up forever; 48 % 64 = 48, so a 20-byte record runs to 76 > 64
        let (area, prod) = ring(64, 48, &[(0, b"wrapping-around-end!"), (0, b"next")]);
        let mut got = Vec::new();
        let cons = walk(&area, 64, 48, prod, &mut |r| got.push(r.to_vec()));
        assert_eq!(
            got,
            vec![b"wrapping-around-end!".to_vec(), b"next".to_vec()]
        );
        assert_eq!(cons, prod);
    }
}

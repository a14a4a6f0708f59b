//! The BPF recorder's rings: per traced CPU one element of an `mmap`-able array map,
//! mapped into this process, holding a control block and a ring of variable-length
//! records.
//!
//! The programs ([`super::prog`]) reserve a record's bytes with an atomic fetch-and-add
//! on their CPU's `head`, so that a program interrupting another on the same CPU takes
//! the next bytes; they write the record and its first word, the sequence word, last.
//! The sequence word is the record's position + 1 (bits 0–55) and its length in 8-byte
//! words (bits 56–63): a record is found by its position alone, so the reader needs
//! nothing else. A record that starts near the end of the ring runs on into a slack
//! area past it (at least the largest record's size), and the reader reads it there, so no record
//! is ever split.
//!
//! The reader walks from its `tail` (which it alone writes, and the programs read to see
//! how full the ring is) up to `head`. A word that is not the sequence word of the
//! position it stands at is a reservation still being written by an interrupted program,
//! or one that was never written: past [`super::prog::stop_at`] a program reserves
//! nothing and counts the record lost, and a reservation that still ran past the end (only
//! possible when programs that interrupted it between its check and its reservation took
//! the whole margin) is counted lost and left unwritten. The reader stops at such a word
//! and, if it is still there at its next wake-up (≥ 20 ms later) or after the programs
//! are detached, searches on for the next word that is its position's sequence word
//! ([`walk`]).
//!
//! The reader sleeps until a ring is half full, as the tracefs reader waits for
//! `buffer_percent`: the program whose record takes a ring past half rings a
//! [`Doorbell`], an 8-byte record in a small BPF ring buffer, whose wake-up ends the
//! reader's `poll`. A ring passes half once per half-ring's worth of records, so the
//! doorbell costs nothing per record; the reader waking on its own schedule, from the rate
//! it last saw, slept 5 s on a quiet start and lost half a million events when a probe at
//! 100 kpps began.
//!
//! Ordering: the programs' stores are plain and the reader's loads acquire; x86's stores
//! are seen in program order, which is what the sequence word relies on (latlab reads the
//! TSC, so it is x86-only anyway).
//!
//! A CPU's element ([`element_bytes`]):
//!
//! ```text
//! 0    u64  head   bytes reserved (the programs' atomic fetch-and-add)
//! 8    u64  tail   bytes the reader is done with (the reader's)
//! 16   u64  lost   records not written: the ring was full
//! 24   u64  the running softirq's entry time (0: none), written by `softirq_entry`
//! 32   u32  its vector
//! 64   …    the ring, a power of two bytes, then SLACK bytes
//! ```
//!
//! A record: the sequence word, the time (`bpf_ktime_get_ns`), the payload.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

/// Offset of `head` in a CPU's element.
pub const HEAD: i16 = 0;
/// Offset of `tail`.
pub const TAIL: i16 = 8;
/// Offset of `lost`.
pub const LOST: i16 = 16;
/// Offset of the softirq stash: the time `softirq_entry` read (0: none), which
/// `softirq_exit` writes into its own record ([`super::prog`]).
pub const STASH: i16 = 24;
/// Offset of the stashed entry's vector (a `u32`).
pub const STASH_VEC: i16 = 32;
/// Offset of the ring (the control block is one cache line, so the ring's first record
/// does not share it).
pub const DATA: i16 = 64;
/// Bytes past the ring that a record starting near its end runs on into: at least the
/// largest record's (an assertion in `prog` checks it at compile time).
pub const SLACK: usize = 80;
/// The bits of a sequence word that hold the position + 1.
pub const POS_MASK: u64 = (1 << 56) - 1;
/// Where a sequence word holds the record's length in 8-byte words.
pub const LEN_SHIFT: u32 = 56;

/// A CPU's element for a ring of `ring` bytes.
pub fn element_bytes(ring: usize) -> usize {
    DATA as usize + ring + SLACK
}

/// What [`walk`] reads: one CPU's ring (its bytes from [`DATA`] on, slack included).
pub trait Ring {
    /// The 8-byte word at `off` (8-aligned, below the ring's size), read with acquire
    /// ordering.
    fn word(&self, off: usize) -> u64;
    /// `len` bytes at `off` (`off + len` at most the ring's size + [`SLACK`]).
    fn bytes(&self, off: usize, len: usize) -> &[u8];
}

/// Where a walk of one CPU's ring stands between drains.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cursor {
    /// The next position to read.
    pub tail: u64,
    /// A position found unwritten at the last drain (the walk stopped there).
    pub stalled: Option<u64>,
    /// Unwritten reservations searched past.
    pub skipped: u64,
}

/// Hands every record of one CPU's ring (`mask + 1` bytes) from `c.tail` up to `head` to
/// `each` (its time and payload), in position order. At a word that is not its
/// position's sequence word it stops, unless it stopped at the same position at the
/// previous drain or this is the `last` drain (every program detached): then it searches
/// on, word by word, for the next record (or `head`).
pub fn walk(
    r: &dyn Ring,
    mask: u64,
    head: u64,
    c: &mut Cursor,
    last: bool,
    each: &mut dyn FnMut(&[u8]),
) {
    let is_record = |pos: u64, w: u64| w & POS_MASK == pos + 1 && w >> LEN_SHIFT >= 2;
    while c.tail < head {
        let off = (c.tail & mask) as usize;
        let w = r.word(off);
        if is_record(c.tail, w) {
            let len = (w >> LEN_SHIFT) * 8;
            each(r.bytes(off + 8, len as usize - 8));
            c.tail += len;
        } else if last || c.stalled == Some(c.tail) {
            c.skipped += 1;
            c.tail += 8;
            while c.tail < head && !is_record(c.tail, r.word((c.tail & mask) as usize)) {
                c.tail += 8;
            }
        } else {
            c.stalled = Some(c.tail);
            return;
        }
    }
    c.stalled = None;
}

/// The traced CPUs' rings, mapped for reading.
#[derive(Debug)]
pub struct Rings {
    ptr: *mut u8,
    len: usize,
    ring: usize,
    element: usize,
    cursors: Vec<Cursor>,
}

// SAFETY: the mapping belongs to this value alone; the programs' side is synchronised
// through the sequence words and the atomic positions.
unsafe impl Send for Rings {}

struct Mapped<'a> {
    base: *const u8,
    r: &'a Rings,
}

impl Ring for Mapped<'_> {
    fn word(&self, off: usize) -> u64 {
        debug_assert!(off % 8 == 0 && off < self.r.ring);
        // SAFETY: `off` is an 8-aligned offset inside this CPU's ring (elements and the
        // ring start 8-aligned).
        unsafe { (*(self.base.add(off) as *const AtomicU64)).load(Ordering::Acquire) }
    }
    fn bytes(&self, off: usize, len: usize) -> &[u8] {
        let len = len.min(self.r.ring + SLACK - off);
        // SAFETY: inside this CPU's ring and slack; a written record is not written
        // again until the reader's tail passes it.
        unsafe { std::slice::from_raw_parts(self.base.add(off), len) }
    }
}

impl Rings {
    /// Maps `map`: one element of [`element_bytes`]`(ring)` for each of `cpus` traced
    /// CPUs, in the order of the recorder's CPU list.
    ///
    /// # Errors
    /// The `mmap` failure.
    pub fn map(map: &OwnedFd, ring: usize, cpus: usize) -> io::Result<Rings> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let element = element_bytes(ring).next_multiple_of(8);
        let len = (element * cpus).next_multiple_of(page);
        // SAFETY: a fresh shared mapping of the map's memory; the kernel checks the
        // length against the map's size.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                map.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Rings {
            ptr: p.cast(),
            len,
            ring,
            element,
            cursors: vec![Cursor::default(); cpus],
        })
    }

    fn control(&self, k: usize, off: i16) -> &AtomicU64 {
        // SAFETY: `k` is below the element count; the offsets are 8-aligned fields of
        // its control block.
        unsafe { &*(self.ptr.add(k * self.element + off as usize) as *const AtomicU64) }
    }

    /// Hands every record written so far to `each` (see [`walk`]; `last` once the
    /// programs are detached), then frees its bytes.
    pub fn drain(&mut self, last: bool, each: &mut dyn FnMut(&[u8])) {
        for k in 0..self.cursors.len() {
            let head = self.control(k, HEAD).load(Ordering::Acquire);
            let mut c = self.cursors[k];
            let ring = Mapped {
                // SAFETY: the ring of element `k`, inside the mapping.
                base: unsafe { self.ptr.add(k * self.element + DATA as usize) },
                r: self,
            };
            walk(&ring, self.ring as u64 - 1, head, &mut c, last, each);
            self.control(k, TAIL).store(c.tail, Ordering::Release);
            self.cursors[k] = c;
        }
    }

    /// Records lost on each CPU, in the order of the recorder's CPUs: counted by the
    /// programs.
    pub fn lost(&self) -> Vec<u64> {
        (0..self.cursors.len())
            .map(|k| self.control(k, LOST).load(Ordering::Acquire))
            .collect()
    }
}

/// The BPF ring buffer the programs ring when a ring passes half full; the reader waits
/// on its descriptor and empties it after each drain.
#[derive(Debug)]
pub struct Doorbell {
    file: std::fs::File,
    cons: *mut u8,
    prod: *mut u8,
    page: usize,
}

// SAFETY: the mappings belong to this value alone; the kernel's side is synchronised
// through the atomic positions.
unsafe impl Send for Doorbell {}

/// The doorbell ring buffer's size: one page, the least the kernel takes.
pub const DOORBELL_BYTES: u32 = 4096;

impl Doorbell {
    /// Maps the ring buffer map `fd` ([`DOORBELL_BYTES`]): its consumer page to write and
    /// its producer page to read.
    ///
    /// # Errors
    /// A failed `dup` or `mmap`.
    pub fn map(fd: &OwnedFd) -> io::Result<Doorbell> {
        let file = std::fs::File::from(fd.try_clone()?);
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let map = |prot: i32, off: usize| -> io::Result<*mut u8> {
            // SAFETY: a fresh shared mapping of one page of the map's file; the kernel
            // checks what may be mapped how.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    page,
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
        let cons = map(libc::PROT_READ | libc::PROT_WRITE, 0)?;
        let prod = match map(libc::PROT_READ, page) {
            Ok(p) => p,
            Err(e) => {
                // SAFETY: mapped just above with this length.
                unsafe { libc::munmap(cons.cast(), page) };
                return Err(e);
            }
        };
        Ok(Doorbell {
            file,
            cons,
            prod,
            page,
        })
    }

    /// The descriptor to wait on: readable once a program rang.
    pub fn file(&self) -> &std::fs::File {
        &self.file
    }

    /// Empties the ring buffer (its records say nothing but "a ring passed half"), so the
    /// next ring wakes the reader again.
    pub fn clear(&self) {
        // SAFETY: both pages start with the 8-aligned u64 position the kernel keeps.
        let (cons, prod) = unsafe {
            (
                &*(self.cons as *const AtomicU64),
                &*(self.prod as *const AtomicU64),
            )
        };
        cons.store(prod.load(Ordering::Acquire), Ordering::Release);
    }
}

impl Drop for Doorbell {
    fn drop(&mut self) {
        // SAFETY: both were mapped in `map` with one page each and are not used after.
        unsafe {
            libc::munmap(self.cons.cast(), self.page);
            libc::munmap(self.prod.cast(), self.page);
        }
    }
}

impl Drop for Rings {
    fn drop(&mut self) {
        // SAFETY: mapped in `map` with this length, not used after.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ring of 64 bytes and its slack.
    struct Mem(Vec<u8>);
    impl Ring for Mem {
        fn word(&self, off: usize) -> u64 {
            u64::from_le_bytes(self.0[off..off + 8].try_into().unwrap())
        }
        fn bytes(&self, off: usize, len: usize) -> &[u8] {
            &self.0[off..off + len]
        }
    }

    const MASK: u64 = 63;

    /// Writes a record of `words` words at `pos` as a program does (the body's words
    /// all `fill`).
    fn put(m: &mut Mem, pos: u64, words: u64, fill: u8) {
        let off = (pos & MASK) as usize;
        for b in &mut m.0[off + 8..off + 8 * words as usize] {
            *b = fill;
        }
        m.0[off..off + 8].copy_from_slice(&((pos + 1) | words << LEN_SHIFT).to_le_bytes());
    }

    fn ring() -> Mem {
        Mem(vec![0; 64 + SLACK])
    }

    fn got(m: &Mem, head: u64, c: &mut Cursor, last: bool) -> Vec<(u8, usize)> {
        let mut v = Vec::new();
        walk(m, MASK, head, c, last, &mut |r| v.push((r[0], r.len())));
        v
    }

    #[test]
    fn records_of_any_length_come_out_in_order_and_one_at_the_end_is_read_whole() {
        let mut m = ring();
        // positions 40, 56 (runs past the end into the slack: 56..80), 80 (wraps to 16)
        put(&mut m, 40, 2, 1);
        put(&mut m, 56, 3, 2);
        put(&mut m, 80, 2, 3);
        let mut c = Cursor {
            tail: 40,
            ..Cursor::default()
        };
        assert_eq!(got(&m, 96, &mut c, false), vec![(1, 8), (2, 16), (3, 8)]);
        assert_eq!(
            c,
            Cursor {
                tail: 96,
                stalled: None,
                skipped: 0
            }
        );
    }

    #[test]
    fn a_word_of_an_earlier_lap_is_not_a_record() {
        let mut m = ring();
        put(&mut m, 0, 2, 1);
        put(&mut m, 16, 2, 2);
        // the lap after: position 64 holds the record of position 0
        let mut c = Cursor {
            tail: 64,
            ..Cursor::default()
        };
        assert!(got(&m, 80, &mut c, false).is_empty());
        assert_eq!(c.stalled, Some(64));
    }

    #[test]
    fn an_unwritten_reservation_stops_the_walk_once_then_is_searched_past() {
        let mut m = ring();
        put(&mut m, 0, 2, 1);
        // 16..40 reserved, not written; 40 written
        put(&mut m, 40, 2, 2);
        let mut c = Cursor::default();
        assert_eq!(got(&m, 56, &mut c, false), vec![(1, 8)]);
        assert_eq!((c.tail, c.stalled), (16, Some(16)));
        // written meanwhile: read, nothing skipped
        let mut m2 = ring();
        put(&mut m2, 0, 2, 1);
        put(&mut m2, 16, 3, 9);
        put(&mut m2, 40, 2, 2);
        let mut c2 = c;
        assert_eq!(got(&m2, 56, &mut c2, false), vec![(9, 16), (2, 8)]);
        assert_eq!(
            c2,
            Cursor {
                tail: 56,
                stalled: None,
                skipped: 0
            }
        );
        // still unwritten at the next drain: searched past to the next record
        assert_eq!(got(&m, 56, &mut c, false), vec![(2, 8)]);
        assert_eq!(
            c,
            Cursor {
                tail: 56,
                stalled: None,
                skipped: 1
            }
        );
    }

    #[test]
    fn the_last_drain_searches_past_at_once_up_to_the_head() {
        let mut m = ring();
        put(&mut m, 0, 2, 1);
        // 16..32 unwritten, nothing after it
        let mut c = Cursor::default();
        assert_eq!(got(&m, 32, &mut c, true), vec![(1, 8)]);
        assert_eq!(
            c,
            Cursor {
                tail: 32,
                stalled: None,
                skipped: 1
            }
        );
    }
}

//! The BPF recorder's rings: per CPU, a run of fixed-size slots in one `mmap`-able array
//! map, and a control record in another, both mapped into this process.
//!
//! The programs ([`super::prog`]) reserve a slot with an atomic fetch-and-add on their
//! CPU's `head`, so that a program interrupting another on the same CPU takes the next
//! one; they fill it and write its sequence word, the position + 1, last. The reader
//! walks from its `tail` (which it alone writes, and the programs read to see how full
//! the ring is) up to `head`: a slot whose sequence word is its position + 1 is a record;
//! one that is not is still being written by an interrupted program, or was never
//! written because its reservation found the ring full. The reader cannot tell which at
//! once, so it stops there and skips the slot only if it is still unwritten at its next
//! wake-up (≥ 20 ms later), or after the programs are detached ([`walk`]); a skipped
//! slot is a lost record. The programs count the records they did not reserve a slot
//! for (the ring past [`super::prog::stop_at`]) in `lost`.
//!
//! Ordering: the programs' stores are plain and the reader's loads acquire; x86's stores
//! are seen in program order, which is what the sequence word relies on (latlab reads the
//! TSC, so it is x86-only anyway).
//!
//! A slot ([`super::prog::SLOT`] bytes):
//!
//! ```text
//! 0  u64  sequence: the slot's position + 1 once written
//! 8  …    the record: the time, then the payload ([`super::prog`])
//! ```
//!
//! A CPU's control ([`CTL`] bytes, one cache line, so the CPUs' counters never share one):
//!
//! ```text
//! 0   u64  head   reservations made (the programs' atomic fetch-and-add)
//! 8   u64  tail   positions the reader is done with (the reader's)
//! 16  u32  base   the index of the CPU's first slot in the slot array
//! 20  u32  on     1 for a traced CPU
//! 24  u64  lost   records not reserved a slot: the ring was full
//! ```

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Offset of `head` in a CPU's control.
pub const HEAD: i16 = 0;
/// Offset of `tail`.
pub const TAIL: i16 = 8;
/// Offset of `base`.
pub const BASE: i16 = 16;
/// Offset of `on`.
pub const ON: i16 = 20;
/// Offset of `lost`.
pub const LOST: i16 = 24;
/// Bytes of a CPU's control.
pub const CTL: usize = 64;

/// What [`walk`] reads: the slots, through whatever memory holds them.
pub trait Slots {
    /// Slot `i`'s sequence word, read with acquire ordering.
    fn seq(&self, i: usize) -> u64;
    /// Slot `i`'s record bytes (after the sequence word).
    fn record(&self, i: usize) -> &[u8];
}

/// Where a walk of one CPU's ring stands between drains.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cursor {
    /// The next position to read.
    pub tail: u64,
    /// A position found unwritten at the last drain (the walk stopped there).
    pub stalled: Option<u64>,
    /// Unwritten slots skipped.
    pub skipped: u64,
}

/// Hands every written slot of one CPU's ring (`mask + 1` slots from index `base`) from
/// `c.tail` up to `head` to `each`, in position order. At an unwritten slot it stops,
/// unless that slot was already unwritten at the previous drain or this is the `last`
/// drain (every program detached): then the slot is skipped and counted. Returns the
/// records handed over.
pub fn walk(
    s: &dyn Slots,
    base: usize,
    mask: u64,
    head: u64,
    c: &mut Cursor,
    last: bool,
    each: &mut dyn FnMut(&[u8]),
) -> u64 {
    let mut n = 0;
    while c.tail < head {
        let i = base + (c.tail & mask) as usize;
        if s.seq(i) == c.tail + 1 {
            each(s.record(i));
            n += 1;
        } else if last || c.stalled == Some(c.tail) {
            c.skipped += 1;
        } else {
            c.stalled = Some(c.tail);
            return n;
        }
        c.tail += 1;
    }
    c.stalled = None;
    n
}

/// A shared mapping of an `mmap`-able array map.
#[derive(Debug)]
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

impl Mapping {
    fn new(fd: &OwnedFd, bytes: usize) -> io::Result<Mapping> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let len = bytes.next_multiple_of(page);
        // SAFETY: a fresh shared mapping of the map's memory; the kernel checks the
        // length against the map's size.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping { ptr: p.cast(), len })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: mapped in `new` with this length, not used after.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// The rings of the traced CPUs, mapped for reading.
#[derive(Debug)]
pub struct Rings {
    ctl: Mapping,
    slots: Mapping,
    slot: usize,
    per_cpu: u32,
    cpus: Vec<u32>,
    cursors: Vec<Cursor>,
}

// SAFETY: the mappings belong to this value alone; the programs' side is synchronised
// through the sequence words and the atomic positions.
unsafe impl Send for Rings {}

struct Mapped<'a>(&'a Rings);

impl Slots for Mapped<'_> {
    fn seq(&self, i: usize) -> u64 {
        // SAFETY: `i` is below the slot count (a traced CPU's base + a masked position);
        // the word is 8-aligned (slots are a multiple of 8 bytes).
        unsafe {
            (*(self.0.slots.ptr.add(i * self.0.slot) as *const AtomicU64)).load(Ordering::Acquire)
        }
    }
    fn record(&self, i: usize) -> &[u8] {
        // SAFETY: inside the mapping; a written slot is not written again until the
        // reader's tail passes it.
        unsafe {
            std::slice::from_raw_parts(self.0.slots.ptr.add(i * self.0.slot + 8), self.0.slot - 8)
        }
    }
}

impl Rings {
    /// Maps the control array `ctl` (entries up to the highest of `cpus`) and the slot
    /// array `slots` (`per_cpu` slots of `slot` bytes for each of `cpus`, in that order),
    /// and marks each of `cpus` on with its base.
    ///
    /// # Errors
    /// The `mmap` failure.
    pub fn map(
        ctl: &OwnedFd,
        slots: &OwnedFd,
        slot: usize,
        per_cpu: u32,
        cpus: &[u32],
    ) -> io::Result<Rings> {
        let entries = cpus.iter().copied().max().unwrap_or(0) as usize + 1;
        let r = Rings {
            ctl: Mapping::new(ctl, entries * CTL)?,
            slots: Mapping::new(slots, cpus.len() * per_cpu as usize * slot)?,
            slot,
            per_cpu,
            cpus: cpus.to_vec(),
            cursors: vec![Cursor::default(); cpus.len()],
        };
        for (i, &cpu) in cpus.iter().enumerate() {
            r.u32_at(cpu, BASE)
                .store(i as u32 * per_cpu, Ordering::Relaxed);
            r.u32_at(cpu, ON).store(1, Ordering::Release);
        }
        Ok(r)
    }

    fn u64_at(&self, cpu: u32, off: i16) -> &AtomicU64 {
        // SAFETY: `cpu` is one of the mapped entries; the offsets are 8-aligned fields
        // of its control.
        unsafe { &*(self.ctl.ptr.add(cpu as usize * CTL + off as usize) as *const AtomicU64) }
    }

    fn u32_at(&self, cpu: u32, off: i16) -> &AtomicU32 {
        // SAFETY: as `u64_at`, 4-aligned.
        unsafe { &*(self.ctl.ptr.add(cpu as usize * CTL + off as usize) as *const AtomicU32) }
    }

    /// Hands every record written so far to `each` (see [`walk`]; `last` once the
    /// programs are detached), then frees their slots. Returns the most slots freed on
    /// one CPU.
    pub fn drain(&mut self, last: bool, each: &mut dyn FnMut(&[u8])) -> u64 {
        let mut most = 0;
        for k in 0..self.cpus.len() {
            let cpu = self.cpus[k];
            let head = self.u64_at(cpu, HEAD).load(Ordering::Acquire);
            let mut c = self.cursors[k];
            let from = c.tail;
            walk(
                &Mapped(self),
                k * self.per_cpu as usize,
                u64::from(self.per_cpu) - 1,
                head,
                &mut c,
                last,
                each,
            );
            self.u64_at(cpu, TAIL).store(c.tail, Ordering::Release);
            most = most.max(c.tail - from);
            self.cursors[k] = c;
        }
        most
    }

    /// Records lost on each CPU, in the order of `cpus`: those the programs reserved no
    /// slot for (the ring was full), and the slots the reader skipped unwritten.
    pub fn lost(&self) -> Vec<u64> {
        self.cpus
            .iter()
            .zip(&self.cursors)
            .map(|(&cpu, c)| self.u64_at(cpu, LOST).load(Ordering::Acquire) + c.skipped)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Slots of 16 bytes: the sequence word, then a u64 payload.
    struct Mem(Vec<(u64, [u8; 8])>);
    impl Slots for Mem {
        fn seq(&self, i: usize) -> u64 {
            self.0[i].0
        }
        fn record(&self, i: usize) -> &[u8] {
            &self.0[i].1
        }
    }

    /// A ring of 4 slots at index 4 of 8 (the second CPU's), with the positions in
    /// `written` written.
    fn ring(written: &[u64]) -> Mem {
        let mut m = Mem(vec![(0, [0; 8]); 8]);
        for &p in written {
            m.0[4 + (p & 3) as usize] = (p + 1, p.to_le_bytes());
        }
        m
    }

    fn got(m: &Mem, head: u64, c: &mut Cursor, last: bool) -> Vec<u64> {
        let mut v = Vec::new();
        let n = walk(m, 4, 3, head, c, last, &mut |r| {
            v.push(u64::from_le_bytes(r.try_into().unwrap()))
        });
        assert_eq!(n as usize, v.len());
        v
    }

    #[test]
    fn written_slots_come_out_in_position_order_across_the_wrap() {
        let m = ring(&[4, 5, 6]);
        let mut c = Cursor {
            tail: 4,
            ..Cursor::default()
        };
        assert_eq!(got(&m, 7, &mut c, false), vec![4, 5, 6]);
        assert_eq!(
            c,
            Cursor {
                tail: 7,
                stalled: None,
                skipped: 0
            }
        );
        // a slot still holding the previous lap's record is not yet written
        let m = ring(&[3, 5]);
        let mut c = Cursor {
            tail: 3,
            ..Cursor::default()
        };
        assert_eq!(got(&m, 6, &mut c, false), vec![3]);
        assert_eq!(c.stalled, Some(4));
    }

    #[test]
    fn an_unwritten_slot_stops_the_walk_once_and_is_skipped_when_still_unwritten() {
        // position 1 reserved but not written (interrupted, or its reservation was lost)
        let mut m = ring(&[0, 2]);
        let mut c = Cursor::default();
        assert_eq!(got(&m, 3, &mut c, false), vec![0]);
        assert_eq!((c.tail, c.stalled), (1, Some(1)));
        // written meanwhile: read in order, nothing skipped
        m.0[5] = (2, 1u64.to_le_bytes());
        assert_eq!(got(&m, 3, &mut c, false), vec![1, 2]);
        assert_eq!(
            c,
            Cursor {
                tail: 3,
                stalled: None,
                skipped: 0
            }
        );
        // still unwritten at the next drain: skipped, and the walk goes on
        let m = ring(&[0, 2, 3]);
        let mut c = Cursor::default();
        got(&m, 4, &mut c, false);
        assert_eq!(got(&m, 4, &mut c, false), vec![2, 3]);
        assert_eq!(
            c,
            Cursor {
                tail: 4,
                stalled: None,
                skipped: 1
            }
        );
    }

    #[test]
    fn the_last_drain_skips_every_unwritten_slot_at_once() {
        let m = ring(&[0, 3]);
        let mut c = Cursor::default();
        assert_eq!(got(&m, 4, &mut c, true), vec![0, 3]);
        assert_eq!(
            c,
            Cursor {
                tail: 4,
                stalled: None,
                skipped: 2
            }
        );
    }
}

//! The id bookkeeping of a transfer's start, shared by the fluid [`super::net`] model and
//! the packet [`super::fabric`]: values live in a vector, an id is an index into it, and
//! the indices of ended transfers (pushed on a free list by their owner) are reused, the
//! last freed first.

/// Stores the value `make` builds in a free slot of `slab` (or a new one) and returns its
/// index; `make` sees the slot's previous value when one is reused (e.g. to carry a
/// version on).
pub(crate) fn alloc_with<T>(
    slab: &mut Vec<T>,
    free: &mut Vec<u32>,
    make: impl FnOnce(Option<&T>) -> T,
) -> u32 {
    match free.pop() {
        Some(i) => {
            slab[i as usize] = make(Some(&slab[i as usize]));
            i
        }
        None => {
            slab.push(make(None));
            (slab.len() - 1) as u32
        }
    }
}

/// Stores `v` in a free slot of `slab` (or a new one); returns its index.
pub(crate) fn alloc<T>(slab: &mut Vec<T>, free: &mut Vec<u32>, v: T) -> u32 {
    alloc_with(slab, free, |_| v)
}

#[cfg(test)]
mod tests {
    use super::{alloc, alloc_with};

    #[test]
    fn freed_slots_are_reused_last_freed_first() {
        let (mut slab, mut free) = (Vec::new(), Vec::new());
        assert_eq!(alloc(&mut slab, &mut free, 'a'), 0);
        assert_eq!(alloc(&mut slab, &mut free, 'b'), 1);
        assert_eq!(alloc(&mut slab, &mut free, 'c'), 2);
        free.extend([0, 2]);
        assert_eq!(alloc(&mut slab, &mut free, 'd'), 2);
        assert_eq!(alloc(&mut slab, &mut free, 'e'), 0);
        assert_eq!(alloc(&mut slab, &mut free, 'f'), 3);
        assert_eq!(slab, ['e', 'b', 'd', 'f']);
    }

    #[test]
    fn a_reused_slot_is_built_from_its_previous_value() {
        let (mut slab, mut free) = (vec![7u32], vec![0]);
        let id = alloc_with(&mut slab, &mut free, |old| old.map_or(0, |v| v + 1));
        assert_eq!((id, slab[0]), (0, 8));
        let id = alloc_with(&mut slab, &mut free, |old| old.map_or(0, |v| v + 1));
        assert_eq!((id, slab[1]), (1, 0));
    }
}

//! Linux futexes: wait on and wake a 32-bit word (`futex(2)`, `FUTEX_WAIT_PRIVATE` /
//! `FUTEX_WAKE_PRIVATE`). This is the primitive under every blocking thread hand-off
//! (mutexes, condition variables, channels), measured by `latlab host breakdown`.

use std::sync::atomic::AtomicU32;

/// Blocks the calling thread while `word` holds `expected`, until a [`wake`] on the same
/// word (or a spurious wake-up, or a signal). Returns at once when the word differs.
/// Callers must re-check their condition in a loop.
pub fn wait(word: &AtomicU32, expected: u32) {
    // SAFETY: `word` is a valid, aligned 32-bit atomic for the duration of the call (it is
    // borrowed); FUTEX_WAIT with a null timeout only reads it. Errors (EAGAIN when the value
    // differs, EINTR) are benign: the caller re-checks its condition.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

/// Wakes up to `n` threads blocked in [`wait`] on `word`; returns how many were woken.
pub fn wake(word: &AtomicU32, n: u32) -> u32 {
    // SAFETY: `word` is a valid aligned 32-bit atomic; FUTEX_WAKE does not dereference it
    // beyond using its address as a key.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            n.min(i32::MAX as u32) as libc::c_int,
        )
    };
    r.max(0) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    #[test]
    fn wait_returns_when_value_differs() {
        let w = AtomicU32::new(1);
        wait(&w, 0); // must not block
        assert_eq!(wake(&w, 1), 0, "nobody was waiting");
    }

    #[test]
    fn wake_releases_a_waiter() {
        let w = Arc::new(AtomicU32::new(0));
        let w2 = w.clone();
        let t = std::thread::spawn(move || {
            while w2.load(Ordering::Acquire) == 0 {
                wait(&w2, 0);
            }
            w2.load(Ordering::Acquire)
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        w.store(7, Ordering::Release);
        wake(&w, 1);
        assert_eq!(t.join().unwrap(), 7);
    }
}

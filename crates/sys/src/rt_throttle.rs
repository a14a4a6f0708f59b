//! Real-time throttling switched off for one run: `kernel.sched_rt_runtime_us = -1` while
//! an [`Unthrottled`] guard lives, the previous value written back when it is dropped.
//!
//! With the default limit (950000 of every 1000000 µs) a `SCHED_FIFO` thread that never
//! sleeps — a generator spinning between 10 µs gaps, a busy-polling NF — is stopped for
//! 50 ms of every second, which then dominates every tail it measures. Tools that need a
//! spinning real-time thread (cyclictest users, DPDK-style polling) run with the limit off;
//! latlab does it only when asked (`--no-rt-throttle`), records it, and restores it. With
//! the limit off a spinning FIFO thread can keep its CPU's kernel threads from running, so
//! pin it to a CPU that has nothing else to do. A thread other than the guard's can put the
//! value back with the guard's [`Undo`] (the CLI's answer to SIGINT/SIGTERM). The change
//! goes through the [journal](crate::journal): if latlab is killed with SIGKILL before it
//! restores the value, the next latlab command does.

use crate::journal::{Change, Journal, Undoer};
use std::io;
use std::path::Path;

/// Where the kernel takes the real-time bandwidth limit.
pub const RT_RUNTIME_PATH: &str = "/proc/sys/kernel/sched_rt_runtime_us";

/// Real-time throttling off until this guard is dropped.
#[derive(Debug)]
#[must_use = "throttling comes back when the guard is dropped"]
pub struct Unthrottled {
    previous: i64,
    change: Option<Change>,
}

/// Reads the limit in `path` (µs per period, -1 for none).
///
/// # Errors
/// The read fails or the file does not hold an integer.
pub fn read_limit(path: &Path) -> io::Result<i64> {
    let text = std::fs::read_to_string(path)?;
    text.trim().parse::<i64>().map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: not an integer: {:?}", path.display(), text.trim()),
        )
    })
}

impl Unthrottled {
    /// Switches throttling off in the running kernel ([`RT_RUNTIME_PATH`]), through this
    /// process's journal.
    ///
    /// # Errors
    /// The file cannot be read or written (writing needs root), or the journal cannot be.
    pub fn engage() -> io::Result<Unthrottled> {
        Unthrottled::engage_with(Path::new(RT_RUNTIME_PATH), &Journal::process())
    }

    /// Switches throttling off through the file at `path` (the kernel's, or a test's),
    /// journaled in `journal`. When the limit is already -1 nothing is written and nothing
    /// will be restored, so guards nest: the outermost one that changed the value restores
    /// it.
    ///
    /// # Errors
    /// The file cannot be read or written, or the journal cannot be.
    pub fn engage_with(path: &Path, journal: &Journal) -> io::Result<Unthrottled> {
        Unthrottled::set_with(path, -1, journal)
    }

    /// Sets the running kernel's limit to `limit` µs per period (-1: off) while the guard
    /// lives, through this process's journal: a test that needs throttling on (the
    /// default 950000) whatever an earlier run left.
    ///
    /// # Errors
    /// The file cannot be read or written (writing needs root), or the journal cannot be.
    pub fn set(limit: i64) -> io::Result<Unthrottled> {
        Unthrottled::set_with(Path::new(RT_RUNTIME_PATH), limit, &Journal::process())
    }

    /// Sets the limit in the file at `path` to `limit` while the guard lives, journaled in
    /// `journal`. When it already holds `limit` nothing is written and nothing will be
    /// restored.
    ///
    /// # Errors
    /// The file cannot be read or written, or the journal cannot be.
    pub fn set_with(path: &Path, limit: i64, journal: &Journal) -> io::Result<Unthrottled> {
        let previous = read_limit(path)?;
        let change = if previous == limit {
            None
        } else {
            journal.write_file(path, &limit.to_string())?
        };
        Ok(Unthrottled { previous, change })
    }

    /// The limit before this guard (µs per period, -1 if it was already off).
    pub fn previous(&self) -> i64 {
        self.previous
    }

    /// Whether this guard changed the limit (and will restore it).
    pub fn changed(&self) -> bool {
        self.change.is_some()
    }

    /// Writes the previous limit back now, unless somebody set another value meanwhile
    /// (then theirs stays).
    ///
    /// # Errors
    /// The file cannot be read or written.
    pub fn restore(mut self) -> io::Result<()> {
        match self.change.take() {
            Some(c) => c.restore().map(|_| ()).map_err(io::Error::other),
            None => Ok(()),
        }
    }

    /// What restoring takes, for another thread that must put the limit back when this
    /// guard's own thread cannot (a process ending on a signal). `None` when this guard
    /// changed nothing.
    pub fn undo(&self) -> Option<Undo> {
        self.change.as_ref().map(|c| Undo {
            undoer: c.undoer(),
            previous: self.previous,
        })
    }
}

/// The previous limit and what writes it back ([`Unthrottled::undo`]).
#[derive(Clone, Debug)]
pub struct Undo {
    undoer: Undoer,
    previous: i64,
}

impl Undo {
    /// Writes the previous limit back unless the limit is no longer the one set (restored already,
    /// or set by somebody else): applying it twice writes once.
    ///
    /// # Errors
    /// The file cannot be read or written.
    pub fn apply(&self) -> io::Result<()> {
        self.undoer.apply().map(|_| ()).map_err(io::Error::other)
    }

    /// The limit it writes back (µs per period).
    pub fn previous(&self) -> i64 {
        self.previous
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::path::PathBuf;

    /// One journal for these tests (one per process and directory, as in latlab).
    fn journal() -> Journal {
        static J: std::sync::OnceLock<Journal> = std::sync::OnceLock::new();
        J.get_or_init(|| {
            Journal::in_dir(
                &std::env::temp_dir().join(format!("latlab-rt-journal-{}", std::process::id())),
            )
        })
        .clone()
    }

    fn engage_at(p: &Path) -> io::Result<Unthrottled> {
        Unthrottled::engage_with(p, &journal())
    }

    fn file(content: &str) -> (PathBuf, impl Drop) {
        struct Rm(PathBuf);
        impl Drop for Rm {
            fn drop(&mut self) {
                let _ = std::fs::remove_file(&self.0);
            }
        }
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "latlab-rt-runtime-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&p, content).unwrap();
        (p.clone(), Rm(p))
    }

    #[test]
    fn switches_off_and_restores_on_drop() {
        let (p, _rm) = file("950000\n");
        let g = engage_at(&p).unwrap();
        assert_eq!(read_limit(&p).unwrap(), -1);
        assert_eq!(g.previous(), 950_000);
        assert!(g.changed());
        drop(g);
        assert_eq!(read_limit(&p).unwrap(), 950_000);
    }

    #[test]
    fn a_limit_set_for_a_run_is_put_back_as_it_was() {
        let (p, _rm) = file("-1\n");
        let g = Unthrottled::set_with(&p, 950_000, &journal()).unwrap();
        assert_eq!(read_limit(&p).unwrap(), 950_000);
        assert_eq!((g.previous(), g.changed()), (-1, true));
        drop(g);
        assert_eq!(read_limit(&p).unwrap(), -1);
        // already at the asked value: nothing to put back
        let (q, _rm) = file("950000");
        let g = Unthrottled::set_with(&q, 950_000, &journal()).unwrap();
        assert!(!g.changed() && g.undo().is_none());
        std::fs::write(&q, "-1").unwrap();
        drop(g);
        assert_eq!(read_limit(&q).unwrap(), -1, "not the guard's to restore");
    }

    #[test]
    fn nested_guards_restore_once_by_the_outer_one() {
        let (p, _rm) = file("950000");
        let outer = engage_at(&p).unwrap();
        let inner = engage_at(&p).unwrap();
        assert!(!inner.changed());
        assert_eq!(inner.previous(), -1);
        inner.restore().unwrap();
        assert_eq!(
            read_limit(&p).unwrap(),
            -1,
            "the inner guard must not restore"
        );
        outer.restore().unwrap();
        assert_eq!(read_limit(&p).unwrap(), 950_000);
    }

    #[test]
    fn a_value_set_meanwhile_is_left_alone() {
        let (p, _rm) = file("950000");
        let g = engage_at(&p).unwrap();
        std::fs::write(&p, "800000").unwrap();
        drop(g);
        assert_eq!(read_limit(&p).unwrap(), 800_000);
    }

    #[test]
    fn an_undo_restores_from_elsewhere_and_the_guard_then_writes_nothing() {
        let (p, _rm) = file("950000");
        let g = engage_at(&p).unwrap();
        let undo = g.undo().expect("the guard changed the limit");
        assert_eq!(undo.previous(), 950_000);
        std::thread::spawn(move || undo.apply().unwrap())
            .join()
            .unwrap();
        assert_eq!(read_limit(&p).unwrap(), 950_000);
        std::fs::write(&p, "800000").unwrap();
        drop(g);
        assert_eq!(read_limit(&p).unwrap(), 800_000, "the guard left it alone");
        let (q, _rm) = file("-1");
        assert!(engage_at(&q).unwrap().undo().is_none());
    }

    #[test]
    fn bad_content_and_missing_files_are_errors() {
        let (p, _rm) = file("lots");
        let e = engage_at(&p).unwrap_err();
        assert!(e.to_string().contains("not an integer"), "{e}");
        assert!(engage_at(Path::new("/nonexistent/latlab/rt")).is_err());
    }
}

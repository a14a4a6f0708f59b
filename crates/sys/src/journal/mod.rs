//! One undo journal for every change latlab makes to the system: a sysfs or procfs value
//! (`kernel.sched_rt_runtime_us`, an IRQ's affinity, the workqueue cpumask), a task's CPU
//! affinity, a process moved into a cgroup, a cgroup created, a sysctl or route set inside
//! a network namespace.
//!
//! Before each change a line saying how to undo it is appended to this process's journal
//! file (`/run/latlab/journal/PID.journal`, or under `$LATLAB_JOURNAL_DIR`) and synced to
//! disk; the change is made only then. The process holds an exclusive `flock` on its file
//! for as long as it lives, so the kernel itself says whether a journal's owner is alive.
//! A [`Change`] undoes its entry when it is dropped (a normal end, an error returned, a
//! panic that unwinds); [`Journal::restore_all`] undoes everything still open (a signal's
//! handler, the end of `main`); and [`replay_dead`] — run at the start of every latlab
//! command and by `latlab host isolate --undo` — undoes the journals whose owners ended
//! without undoing (SIGKILL, a crash, a power cut of the namespace). Each undo checks that
//! the value is still the one latlab set: a value somebody else set since stays.
//!
//! The text format, the order of undoing and the descriptions are pure ([`entry`]).

pub mod entry;
pub(crate) mod undo;

pub use entry::Entry;

use std::fs::File;
use std::io::{self, Read as _, Seek as _, Write as _};
use std::os::fd::AsRawFd as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Where journals live unless `$LATLAB_JOURNAL_DIR` says otherwise.
pub const DEFAULT_DIR: &str = "/run/latlab/journal";
/// The environment variable naming another journal directory.
pub const DIR_ENV: &str = "LATLAB_JOURNAL_DIR";

/// The journal directory in use.
pub fn dir() -> PathBuf {
    std::env::var_os(DIR_ENV).map_or_else(|| PathBuf::from(DEFAULT_DIR), PathBuf::from)
}

/// The journal itself could not be written (the change was then not made).
#[derive(Debug)]
pub struct JournalError(String);

impl std::fmt::Display for JournalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for JournalError {}

/// Whether `e` is the journal's own failure (not the kernel refusing a change).
pub fn is_journal_error(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|i| i.is::<JournalError>())
}

/// A process's undo journal (cheap to clone: clones share it).
#[derive(Clone, Debug)]
pub struct Journal {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    /// Open (and locked) while changes are open; created on the first change.
    file: Option<File>,
    next: u64,
    /// Open changes, oldest first.
    open: Vec<(u64, Entry)>,
}

/// One change made through a [`Journal`]; undone when dropped, unless undone already.
#[derive(Debug)]
#[must_use = "the change is undone when this is dropped"]
pub struct Change {
    undoer: Undoer,
    entry: Entry,
}

/// What undoes one [`Change`] from elsewhere (another thread, a signal's handler).
#[derive(Clone, Debug)]
pub struct Undoer {
    journal: Journal,
    seq: u64,
}

impl Undoer {
    /// Undoes the change now, unless it was undone already (then `Ok(None)`).
    ///
    /// # Errors
    /// Why the change could not be undone (it is then no longer in the journal either).
    pub fn apply(&self) -> Result<Option<String>, String> {
        self.journal.undo(self.seq)
    }
}

impl Change {
    /// What the change was.
    pub fn entry(&self) -> &Entry {
        &self.entry
    }

    /// What undoes this change from elsewhere.
    pub fn undoer(&self) -> Undoer {
        self.undoer.clone()
    }

    /// Undoes the change now.
    ///
    /// # Errors
    /// Why it could not be undone.
    pub fn restore(self) -> Result<Option<String>, String> {
        self.undoer.apply()
    }
}

impl Drop for Change {
    fn drop(&mut self) {
        let _ = self.undoer.apply();
    }
}

/// Takes an exclusive `flock` on `file`, without waiting; `false` when another open file
/// holds it.
fn try_lock(file: &File) -> bool {
    // SAFETY: `flock` on a file descriptor this `File` owns and keeps open.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

static PROCESS: OnceLock<Journal> = OnceLock::new();

impl Journal {
    /// This process's journal, in [`dir`] (its file is made on the first change).
    pub fn process() -> Journal {
        PROCESS.get_or_init(|| Journal::in_dir(&dir())).clone()
    }

    /// A journal in directory `dir`, named after this process (`PID.journal`); tests make
    /// one per temporary directory.
    pub fn in_dir(dir: &Path) -> Journal {
        Journal {
            inner: Arc::new(Mutex::new(Inner {
                path: dir.join(format!("{}.journal", std::process::id())),
                file: None,
                next: 1,
                open: Vec::new(),
            })),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The journal file's path.
    pub fn path(&self) -> PathBuf {
        self.lock().path.clone()
    }

    /// The changes still open, oldest first.
    pub fn open_changes(&self) -> Vec<Entry> {
        self.lock().open.iter().map(|(_, e)| e.clone()).collect()
    }

    /// Writes `entry` to the journal (synced) before its change is made.
    fn record(&self, entry: Entry) -> io::Result<Change> {
        let mut g = self.lock();
        let seq = g.next;
        g.append(&entry::Line::Change {
            seq,
            entry: entry.clone(),
        })?;
        g.next += 1;
        g.open.push((seq, entry.clone()));
        Ok(Change {
            undoer: Undoer {
                journal: self.clone(),
                seq,
            },
            entry,
        })
    }

    /// Marks a change that was not made (its write failed) as done, without undoing it.
    fn forget(&self, change: Change) {
        let _ = self.lock().close(change.undoer.seq);
        drop(change);
    }

    /// Records the value a file read back after the write (the kernel's own spelling of
    /// it), which is what its undo then expects to find.
    fn read_back(&self, change: &mut Change, now: String) -> io::Result<()> {
        let seq = change.undoer.seq;
        let mut g = self.lock();
        g.append(&entry::Line::Set {
            seq,
            set: now.clone(),
        })?;
        let entries = g.open.iter_mut().filter(|(n, _)| *n == seq).map(|(_, e)| e);
        for e in entries.chain(std::iter::once(&mut change.entry)) {
            if let Entry::File { set, .. } = e {
                set.clone_from(&now);
            }
        }
        Ok(())
    }

    /// Undoes change `seq` if it is still open.
    fn undo(&self, seq: u64) -> Result<Option<String>, String> {
        let mut g = self.lock();
        let Some(i) = g.open.iter().position(|(n, _)| *n == seq) else {
            return Ok(None);
        };
        let entry = g.open[i].1.clone();
        let done = undo::apply(&entry);
        let _ = g.close(seq);
        done.map(Some)
    }

    /// Undoes every open change, newest first: what each undo did or why it failed.
    pub fn restore_all(&self) -> Vec<Result<String, String>> {
        let mut out = Vec::new();
        loop {
            let last = self.lock().open.last().map(|(n, _)| *n);
            let Some(seq) = last else { break };
            match self.undo(seq) {
                Ok(Some(s)) => out.push(Ok(s)),
                Ok(None) => {}
                Err(e) => out.push(Err(e)),
            }
        }
        out
    }

    /// Writes `value` into the sysfs/procfs file `path`, journaled. `Ok(None)` when it
    /// holds that value already (nothing changed, nothing to undo).
    ///
    /// # Errors
    /// The file cannot be read or written, or the journal cannot be written (then the
    /// file is not touched).
    pub fn write_file(&self, path: &Path, value: &str) -> io::Result<Option<Change>> {
        let old = undo::read_trim(path)?;
        if entry::same_value(&old, value) {
            return Ok(None);
        }
        let mut change = self.record(Entry::File {
            path: path.to_path_buf(),
            old,
            set: value.trim().to_string(),
        })?;
        if let Err(e) = std::fs::write(path, format!("{}\n", value.trim())) {
            self.forget(change);
            return Err(e);
        }
        if let Ok(now) = undo::read_trim(path) {
            if !entry::same_value(&now, value) {
                self.read_back(&mut change, now)?;
            }
        }
        Ok(Some(change))
    }

    /// Sets task `tid`'s CPU affinity to `cpus`, journaled. `Ok(None)` when it has that
    /// affinity already.
    ///
    /// # Errors
    /// The task is gone, the kernel refuses (per-CPU kernel threads, CPUs outside its
    /// cpuset), or the journal cannot be written.
    pub fn set_affinity(&self, tid: i32, cpus: &[u32]) -> io::Result<Option<Change>> {
        let (comm, start, _) = undo::task_stat(tid)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no task {tid}")))?;
        let old = crate::sched::task_affinity(tid)?;
        let mut set = cpus.to_vec();
        set.sort_unstable();
        set.dedup();
        if old == set {
            return Ok(None);
        }
        let change = self.record(Entry::Affinity {
            tid,
            start,
            comm,
            old,
            set: set.clone(),
        })?;
        if let Err(e) = crate::sched::set_task_affinity(tid, &set) {
            self.forget(change);
            return Err(e);
        }
        Ok(Some(change))
    }

    /// Moves process `pid` from cgroup directory `from` into `to` (`cgroup.procs`),
    /// journaled with its threads' affinities (moving back restores them).
    ///
    /// # Errors
    /// The process is gone, the kernel refuses (kernel threads), or the journal cannot be
    /// written.
    pub fn move_to_cgroup(&self, pid: i32, from: &Path, to: &Path) -> io::Result<Change> {
        let (comm, start, _) = undo::task_stat(pid)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no task {pid}")))?;
        let threads = std::fs::read_dir(format!("/proc/{pid}/task"))?
            .filter_map(|d| d.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter_map(|tid| Some((tid, crate::sched::task_affinity(tid).ok()?)))
            .collect();
        let change = self.record(Entry::Cgroup {
            pid,
            start,
            comm,
            from: from.to_path_buf(),
            to: to.to_path_buf(),
            threads,
        })?;
        if let Err(e) = undo::move_pid(pid, to) {
            self.forget(change);
            return Err(e);
        }
        Ok(change)
    }

    /// Creates directory `path` (a cgroup), journaled: undoing moves what is left in it to
    /// its parent and removes it.
    ///
    /// # Errors
    /// It cannot be created, or the journal cannot be written.
    pub fn make_dir(&self, path: &Path) -> io::Result<Change> {
        let change = self.record(Entry::Dir {
            path: path.to_path_buf(),
        })?;
        if let Err(e) = std::fs::create_dir(path) {
            self.forget(change);
            return Err(e);
        }
        Ok(change)
    }

    /// Journals a change the caller makes next, undone by running `undo_argv` (a sysctl
    /// inside a network namespace, an offload switch, a route). If the caller's change
    /// then fails, dropping the [`Change`] runs the undo, which must be harmless then.
    ///
    /// # Errors
    /// The journal cannot be written (the caller must then not make the change).
    pub fn command(&self, what: &str, undo_argv: Vec<String>) -> io::Result<Change> {
        self.record(Entry::Command {
            what: what.to_string(),
            argv: undo_argv,
        })
    }
}

impl Inner {
    fn file(&mut self) -> io::Result<&mut File> {
        if self.file.is_none() {
            if let Some(dir) = self.path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let mut f = std::fs::OpenOptions::new()
                .read(true)
                .append(true)
                .create(true)
                .open(&self.path)?;
            if !try_lock(&f) {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!("{} is locked by another process", self.path.display()),
                ));
            }
            // left by an earlier process with this id that was not undone yet
            let mut stale = String::new();
            f.read_to_string(&mut stale)?;
            for (_, e) in entry::pending(&stale) {
                let _ = undo::apply(&e);
            }
            f.set_len(0)?;
            f.rewind()?;
            self.file = Some(f);
        }
        Ok(self.file.as_mut().expect("opened above"))
    }

    fn append(&mut self, line: &entry::Line) -> io::Result<()> {
        let path = self.path.clone();
        let mut write = || {
            let f = self.file()?;
            f.write_all(line.to_text().as_bytes())?;
            f.sync_data()
        };
        write().map_err(|e| {
            io::Error::new(
                e.kind(),
                JournalError(format!("undo journal {}: {e}", path.display())),
            )
        })
    }

    /// Marks `seq` done; with nothing left open, the journal file goes.
    fn close(&mut self, seq: u64) -> io::Result<()> {
        self.open.retain(|(n, _)| *n != seq);
        if self.open.is_empty() {
            if let Some(f) = self.file.take() {
                // emptied first: a replayer that opened it before it is unlinked finds
                // nothing to undo
                let _ = f.set_len(0);
                let _ = std::fs::remove_file(&self.path);
            }
            return Ok(());
        }
        self.append(&entry::Line::Done { done: seq })
    }
}

/// The journal of a latlab process that ended without undoing its changes, as undone by
/// [`replay_dead`].
#[derive(Debug)]
pub struct Replayed {
    /// The process id in the journal's name.
    pub pid: Option<u32>,
    /// What each undo did (newest change first), or why it failed.
    pub undone: Vec<Result<String, String>>,
}

impl Replayed {
    /// One line for stderr.
    pub fn line(&self) -> String {
        let who = self.pid.map_or_else(
            || "a latlab process".to_string(),
            |p| format!("latlab process {p}"),
        );
        let parts: Vec<String> = self
            .undone
            .iter()
            .map(|r| match r {
                Ok(s) | Err(s) => s.clone(),
            })
            .collect();
        format!(
            "latlab: {who} ended without undoing its changes to the system; undone now: {}",
            parts.join("; ")
        )
    }
}

/// Undoes the journals in `dir` whose owners are gone (their lock is free), newest change
/// first, and removes them. Journals of live processes (this one's included) are left
/// alone. Journals with nothing open are removed silently and not returned.
pub fn replay_dead(dir: &Path) -> Vec<Replayed> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = rd
        .filter_map(|d| Some(d.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "journal"))
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for path in paths {
        let Ok(mut f) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
        else {
            continue;
        };
        if !try_lock(&f) {
            continue;
        }
        let mut text = String::new();
        if f.read_to_string(&mut text).is_err() {
            continue;
        }
        let undone: Vec<Result<String, String>> = entry::pending(&text)
            .iter()
            .map(|(_, e)| undo::apply(e))
            .collect();
        let _ = f.set_len(0);
        // only if the name still is this file (its owner may have made a new one since)
        let same = match (f.metadata(), std::fs::metadata(&path)) {
            (Ok(a), Ok(b)) => {
                use std::os::unix::fs::MetadataExt as _;
                a.ino() == b.ino() && a.dev() == b.dev()
            }
            _ => false,
        };
        if same {
            let _ = std::fs::remove_file(&path);
        }
        if !undone.is_empty() {
            let pid = path
                .file_stem()
                .and_then(|s| s.to_str())
                .and_then(|s| s.parse().ok());
            out.push(Replayed { pid, undone });
        }
    }
    out
}

#[cfg(test)]
mod tests;

//! Advisory whole-file locks (`flock(2)`) that serialise latlab processes around something
//! system-wide: the tracefs option walk, the namespace testbed.

use std::fs::File;
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// An exclusive `flock` on a file, released when dropped (closing the file releases it,
/// and so does the holder's death: a killed holder never leaves it taken).
#[derive(Debug)]
pub struct FileLock {
    _file: File,
}

impl FileLock {
    /// Blocks until the exclusive lock on `path` (created when absent) is held.
    ///
    /// # Errors
    /// Opening or locking the file failed.
    pub fn exclusive(path: &Path) -> std::io::Result<FileLock> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        loop {
            // SAFETY: `f` is an open file for the whole call; `flock` only takes its fd.
            let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
            if rc == 0 {
                return Ok(FileLock { _file: f });
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_waits_for_the_first() {
        let path = std::env::temp_dir().join(format!("latlab-flock-test-{}", std::process::id()));
        let first = FileLock::exclusive(&path).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let p = path.clone();
        let t = std::thread::spawn(move || {
            let _second = FileLock::exclusive(&p).unwrap();
            tx.send(()).unwrap();
        });
        // flock is per open file description: the second open blocks until `first` drops
        assert!(rx
            .recv_timeout(std::time::Duration::from_millis(200))
            .is_err());
        drop(first);
        rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        t.join().unwrap();
        std::fs::remove_file(&path).unwrap();
    }
}

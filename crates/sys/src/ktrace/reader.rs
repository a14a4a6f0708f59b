//! The reader thread both recorders run: a named thread that drains its rings until it
//! is told to stop, then drains once more and returns what it read. Stopping is a flag
//! and a byte on a pipe, so a reader asleep in [`wait`] wakes at once; dropping a reader
//! stops and joins it, so no thread outlives its recorder on an error path.

use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// What the thread's body sees: whether it is told to stop, and the pipe that wakes it.
#[derive(Debug)]
pub(super) struct Stop {
    flag: Arc<AtomicBool>,
    wake: File,
}

impl Stop {
    /// Whether the thread is told to stop (its next drain is its last).
    pub(super) fn stopped(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    /// Waits until one of `files` is readable, the stop byte arrives, or `timeout`
    /// passes.
    ///
    /// # Errors
    /// `poll(2)`'s, other than an interruption.
    pub(super) fn wait<'a>(
        &self,
        files: impl IntoIterator<Item = &'a File>,
        timeout: Duration,
    ) -> io::Result<()> {
        wait(files, &self.wake, timeout)
    }
}

/// A running reader thread returning a `T`.
pub(super) struct Reader<T> {
    flag: Arc<AtomicBool>,
    /// The write end of the pipe the thread waits on: a byte wakes it.
    wake: File,
    handle: Option<JoinHandle<io::Result<T>>>,
}

impl<T: Send + 'static> Reader<T> {
    /// Starts `body` on a thread named `latlab-ktrace`.
    ///
    /// # Errors
    /// The pipe's or the thread's creation.
    pub(super) fn spawn(
        body: impl FnOnce(&Stop) -> io::Result<T> + Send + 'static,
    ) -> io::Result<Reader<T>> {
        let (wake_rx, wake) = pipe()?;
        let flag = Arc::new(AtomicBool::new(false));
        let stop = Stop {
            flag: Arc::clone(&flag),
            wake: wake_rx,
        };
        let handle = std::thread::Builder::new()
            .name("latlab-ktrace".into())
            .spawn(move || body(&stop))?;
        Ok(Reader {
            flag,
            wake,
            handle: Some(handle),
        })
    }

    fn signal_stop(&mut self) {
        use std::io::Write;
        self.flag.store(true, Ordering::Release);
        // a full pipe already wakes it; nothing else can fail on a pipe we hold open
        let _ = self.wake.write(&[1]);
    }

    /// Tells the thread to stop and returns what it read.
    ///
    /// # Errors
    /// The thread's, or a panic of it.
    pub(super) fn finish(mut self) -> io::Result<T> {
        self.signal_stop();
        let h = self.handle.take().expect("joined once");
        h.join()
            .unwrap_or_else(|_| Err(io::Error::other("the kernel-event reader panicked")))
    }
}

impl<T> std::fmt::Debug for Reader<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("running", &self.handle.is_some())
            .finish()
    }
}

impl<T> Drop for Reader<T> {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            self.flag.store(true, Ordering::Release);
            let _ = std::io::Write::write(&mut self.wake, &[1]);
            let _ = h.join();
        }
    }
}

/// A pipe, both ends non-blocking and close-on-exec: (read end, write end).
fn pipe() -> io::Result<(File, File)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints for the kernel to fill.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) })
}

/// Waits until one of `files` is readable (for a `trace_pipe_raw`: its ring has reached
/// the instance's `buffer_percent`), `wake` has a byte, or `timeout` passes.
fn wait<'a>(
    files: impl IntoIterator<Item = &'a File>,
    wake: &File,
    timeout: Duration,
) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let mut fds: Vec<libc::pollfd> = files
        .into_iter()
        .map(AsRawFd::as_raw_fd)
        .chain(std::iter::once(wake.as_raw_fd()))
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs for the call's duration.
    let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn finish_wakes_a_waiting_thread_at_once_and_returns_its_value() {
        let (tx, rx) = std::sync::mpsc::channel();
        let r = Reader::spawn(move |stop| {
            let mut rounds = 0u32;
            loop {
                rounds += 1;
                if stop.stopped() {
                    return Ok(rounds);
                }
                tx.send(()).unwrap();
                stop.wait([], Duration::from_secs(60))?;
            }
        })
        .unwrap();
        rx.recv().unwrap();
        let t = Instant::now();
        let rounds = r.finish().unwrap();
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "woken by the byte, not the timeout"
        );
        assert_eq!(rounds, 2, "one wait, then the last round");
    }

    #[test]
    fn a_panic_of_the_body_is_an_error_and_dropping_a_reader_joins_it() {
        let r: Reader<()> = Reader::spawn(|_| panic!("a reader's bug")).unwrap();
        assert!(r.finish().unwrap_err().to_string().contains("panicked"));
        let (tx, rx) = std::sync::mpsc::channel();
        let r = Reader::spawn(move |stop| {
            while !stop.stopped() {
                stop.wait([], Duration::from_secs(60))?;
            }
            tx.send(()).unwrap();
            Ok(())
        })
        .unwrap();
        drop(r);
        assert!(
            rx.try_recv().is_ok(),
            "the thread ended before drop returned"
        );
    }
}

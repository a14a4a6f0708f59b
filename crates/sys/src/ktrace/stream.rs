//! The streaming reader: one thread that, while the run goes on, drains every traced
//! CPU's `per_cpu/cpuN/trace_pipe_raw` (binary ring-buffer pages) into memory, so the
//! ring never fills however long the run, and nothing has to be formatted as text
//! afterwards.
//!
//! The thread is not pinned (the measured threads are; the scheduler puts it where
//! there is room), opens the files non-blocking, reads each CPU until it has nothing
//! (`EAGAIN`), then sleeps [`POLL`] before the next round; after the stop flag it drains
//! once more (tracing is off by then) and returns the pages. Each read returns one page
//! (partial pages are padded to the page size so the pages stay at fixed offsets).

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How long the reader sleeps between rounds. A 32 MiB ring per CPU holds about a
/// million events; at the ~300 k events/s of a busy ping-pong that is seconds, so 10 ms
/// leaves a wide margin while waking the reader only 100 times a second.
pub const POLL: Duration = Duration::from_millis(10);

/// One CPU's pages, as read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawCpu {
    /// The CPU.
    pub cpu: u32,
    /// Its pages back to back, each [`RawCpu::page_size`] bytes.
    pub pages: Vec<u8>,
    /// The ring's page (sub-buffer) size, bytes.
    pub page_size: usize,
}

/// A running reader.
#[derive(Debug)]
pub(super) struct Streamer {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<std::io::Result<Vec<RawCpu>>>>,
}

/// The ring's page size: the instance's `buffer_subbuf_size_kb` where the kernel has it
/// (6.8+), else 4 KiB.
pub(super) fn page_size(instance: &Path) -> usize {
    std::fs::read_to_string(instance.join("buffer_subbuf_size_kb"))
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|&kb| kb > 0)
        .map_or(4096, |kb| kb * 1024)
}

impl Streamer {
    /// Opens every CPU's `trace_pipe_raw` (all of them, or an error: the caller falls
    /// back to the text path) and starts the thread.
    pub(super) fn start(instance: &Path, cpus: &[u32]) -> Result<Streamer, String> {
        let page = page_size(instance);
        let mut files = Vec::with_capacity(cpus.len());
        for &cpu in cpus {
            let p = instance
                .join("per_cpu")
                .join(format!("cpu{cpu}"))
                .join("trace_pipe_raw");
            let f = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&p)
                .map_err(|e| format!("opening {}: {e}", p.display()))?;
            files.push((cpu, f));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("latlab-ktrace".into())
            .spawn(move || run(files, page, &s))
            .map_err(|e| format!("starting the trace reader: {e}"))?;
        Ok(Streamer {
            stop,
            handle: Some(handle),
        })
    }

    /// Asks the thread to drain what is left and stop, and returns every CPU's pages.
    pub(super) fn finish(mut self) -> std::io::Result<Vec<RawCpu>> {
        self.stop.store(true, Ordering::Release);
        let h = self.handle.take().expect("joined once");
        h.join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the trace reader thread panicked")))
    }
}

impl Drop for Streamer {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            self.stop.store(true, Ordering::Release);
            let _ = h.join();
        }
    }
}

fn run(
    mut files: Vec<(u32, File)>,
    page: usize,
    stop: &AtomicBool,
) -> std::io::Result<Vec<RawCpu>> {
    let mut out: Vec<RawCpu> = files
        .iter()
        .map(|(cpu, _)| RawCpu {
            cpu: *cpu,
            pages: Vec::with_capacity(64 * page),
            page_size: page,
        })
        .collect();
    let mut buf = vec![0u8; page];
    loop {
        let last = stop.load(Ordering::Acquire);
        for ((cpu, f), o) in files.iter_mut().zip(out.iter_mut()) {
            drain(f, &mut buf, o).map_err(|e| {
                std::io::Error::new(e.kind(), format!("reading cpu{cpu}/trace_pipe_raw: {e}"))
            })?;
        }
        if last {
            return Ok(out);
        }
        std::thread::sleep(POLL);
    }
}

/// Reads one CPU until it has nothing more, page by page.
fn drain(f: &mut File, buf: &mut [u8], o: &mut RawCpu) -> std::io::Result<()> {
    loop {
        match f.read(buf) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                let at = o.pages.len();
                o.pages.extend_from_slice(&buf[..n]);
                o.pages
                    .resize(at + n.div_ceil(o.page_size) * o.page_size, 0);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

//! The streaming reader: one thread that, while the run goes on, drains every traced
//! CPU's `per_cpu/cpuN/trace_pipe_raw` (binary ring-buffer pages) and hands each page
//! to a [`CompactDecoder`], so the ring never fills however long the run, nothing has to
//! be formatted as text afterwards, and what is kept is 12 bytes an event (a timestamp
//! and a kind), not the pages.
//!
//! The thread is not pinned (the measured threads are; the scheduler puts it where
//! there is room), opens the files non-blocking, reads each CPU until it has nothing
//! (`EAGAIN`), then sleeps [`POLL`] before the next round; after the stop flag it drains
//! once more (tracing is off by then) and returns the decoded store. Each read returns
//! one page (partial pages are padded to the page size so the pages stay at fixed
//! offsets). Decoding happens here, on the reader's thread, off the measured threads.

use latlab_core::ftrace_compact::{CompactDecoder, CompactTrace};
use latlab_core::ftrace_raw::{EventFormat, PageLayout};
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

/// A running reader.
#[derive(Debug)]
pub(super) struct Streamer {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<std::io::Result<CompactTrace>>>,
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
    /// back to the text path) and starts the thread, which decodes the pages with
    /// `layout` and `formats`.
    pub(super) fn start(
        instance: &Path,
        cpus: &[u32],
        layout: PageLayout,
        formats: &[EventFormat],
    ) -> Result<Streamer, String> {
        let page = page_size(instance);
        let decoder = CompactDecoder::new(layout, page, formats, cpus);
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
            .spawn(move || run(files, decoder, &s))
            .map_err(|e| format!("starting the trace reader: {e}"))?;
        Ok(Streamer {
            stop,
            handle: Some(handle),
        })
    }

    /// Asks the thread to drain what is left and stop, and returns every CPU's events.
    pub(super) fn finish(mut self) -> std::io::Result<CompactTrace> {
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
    mut decoder: CompactDecoder,
    stop: &AtomicBool,
) -> std::io::Result<CompactTrace> {
    let mut buf = vec![0u8; decoder.page_size()];
    loop {
        let last = stop.load(Ordering::Acquire);
        for (cpu, f) in &mut files {
            drain(f, *cpu, &mut buf, &mut decoder).map_err(|e| {
                std::io::Error::new(e.kind(), format!("reading cpu{cpu}/trace_pipe_raw: {e}"))
            })?;
        }
        if last {
            return Ok(decoder.finish());
        }
        std::thread::sleep(POLL);
    }
}

/// Reads one CPU until it has nothing more, page by page, each page padded to the page
/// size (a read can return a partial page) and handed to the decoder.
fn drain(
    f: &mut File,
    cpu: u32,
    buf: &mut [u8],
    decoder: &mut CompactDecoder,
) -> std::io::Result<()> {
    loop {
        match f.read(buf) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                buf[n..].fill(0);
                decoder.push(cpu, buf);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

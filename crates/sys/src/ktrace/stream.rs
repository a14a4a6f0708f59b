//! The streaming reader: one thread that, while the run goes on, drains every traced
//! CPU's `per_cpu/cpuN/trace_pipe_raw` (binary ring-buffer pages) and hands each page
//! to a [`CompactDecoder`], so the ring never fills however long the run, nothing has to
//! be formatted as text afterwards, and what is kept is 12 bytes an event (a timestamp
//! and a kind), not the pages.
//!
//! The thread is not pinned (the measured threads are; the scheduler puts it where
//! there is room), opens the files non-blocking, reads each CPU until it has nothing
//! (`EAGAIN`), then waits in `poll(2)` until a CPU's ring is [`BUFFER_PERCENT`] % full,
//! [`WAKE_AT_LEAST`] has passed, or it is told to stop (a byte on a pipe); after the stop
//! it drains once more (tracing is off by then) and returns the decoded store. Each read
//! returns one page (partial pages are padded to the page size so the pages stay at fixed
//! offsets). Decoding happens here, on the reader's thread, off the measured threads.
//!
//! Why `poll` on the ring's fill level and not a short sleep: the reader shares the
//! measured CPUs (on a small host every CPU carries a measured thread). Each wake-up is a
//! context switch, a timer and a burst of page copies on a CPU whose caches the measured
//! thread uses, and under two spinning SCHED_FIFO threads the reader cannot run at all
//! except in the scheduler's RT-throttling slices. Waking when a ring is half full (32 MiB
//! per CPU holds about a million events: seconds even at a busy ping-pong's rate) instead
//! of every 10 ms cuts those wake-ups from 100 a second to about two.

use super::reader::{Reader, Stop};
use latlab_core::ftrace_compact::{CompactDecoder, CompactTrace};
use latlab_core::ftrace_raw::{EventFormat, PageLayout};
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Duration;

/// The fill level, percent of a CPU's ring, at which the kernel wakes the reader
/// (the instance's `buffer_percent`).
pub const BUFFER_PERCENT: u32 = 50;

/// How long the reader sleeps between rounds on a kernel without `buffer_percent` (older
/// than 5.1), where `poll` would wake it for every event.
pub const POLL: Duration = Duration::from_millis(10);

/// The longest the reader waits between rounds when no ring reaches
/// [`BUFFER_PERCENT`]: a guard against a kernel that does not wake a poller on the fill
/// level (such a kernel would lose, counted, what passes 32 MiB per CPU in 5 s: about
/// 400,000 events a second per CPU). It was 500 ms; but each of those drains runs on a
/// measured CPU of a small host (copying and decoding half a second of events while the
/// measured threads wake into an occupied CPU), and a run of a few seconds at a
/// ping-pong's event rate never fills half a ring, so the guard was the only thing that
/// woke the reader mid-run. The fill-level wake works on this project's kernel: a 256 KiB
/// ring took 341 k events in 3 s without a loss (docs/benchmarks.md).
pub const WAKE_AT_LEAST: Duration = Duration::from_secs(5);

/// A running reader.
#[derive(Debug)]
pub(super) struct Streamer(Reader<CompactTrace>);

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
    /// `layout` and `formats`. `fill_wake`: the instance's `buffer_percent` is set, so the
    /// thread waits in `poll`; otherwise it sleeps [`POLL`].
    pub(super) fn start(
        instance: &Path,
        cpus: &[u32],
        layout: PageLayout,
        formats: &[EventFormat],
        fill_wake: bool,
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
        Reader::spawn(move |stop| run(files, decoder, stop, fill_wake))
            .map(Streamer)
            .map_err(|e| format!("starting the trace reader: {e}"))
    }

    /// Asks the thread to drain what is left and stop, and returns every CPU's events.
    pub(super) fn finish(self) -> std::io::Result<CompactTrace> {
        self.0.finish()
    }
}

fn run(
    mut files: Vec<(u32, File)>,
    mut decoder: CompactDecoder,
    stop: &Stop,
    fill_wake: bool,
) -> std::io::Result<CompactTrace> {
    let mut buf = vec![0u8; decoder.page_size()];
    loop {
        let last = stop.stopped();
        for (cpu, f) in &mut files {
            drain(f, *cpu, &mut buf, &mut decoder).map_err(|e| {
                std::io::Error::new(e.kind(), format!("reading cpu{cpu}/trace_pipe_raw: {e}"))
            })?;
        }
        if last {
            return Ok(decoder.finish());
        }
        if fill_wake {
            stop.wait(files.iter().map(|(_, f)| f), WAKE_AT_LEAST)?;
        } else {
            std::thread::sleep(POLL);
        }
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

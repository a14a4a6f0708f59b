//! SIGINT and SIGTERM for commands whose run cannot end early (`net probe`, `net calibrate`,
//! `net load`): what the command changed on the host — real-time throttling switched off, a
//! server it started — is put back by the undo steps registered here, then the process
//! exits with 128 + the signal and one line, writing no result. Without a registered step
//! the signals keep their default (the process ends; results are written atomically, so
//! nothing half-written is left either way).
//!
//! Commands that can end their run early (`net reflect`/`forward`, `net delay`,
//! `experiment killer-us`/`where-time`) poll [`latlab_sys::signal::stop_requested`] instead
//! and write their result.

use anyhow::Context;
use std::sync::{Mutex, OnceLock};

type Step = Box<dyn FnOnce() -> String + Send>;

/// The undo steps, newest last; the watcher runs them newest first.
static STEPS: Mutex<Vec<Step>> = Mutex::new(Vec::new());
static WATCHER: OnceLock<()> = OnceLock::new();

/// Registers `undo` (it returns what it did, for the exit line) and, the first time, the
/// handler and the thread that watches for the signals.
pub fn on_signal(undo: impl FnOnce() -> String + Send + 'static) -> anyhow::Result<()> {
    STEPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Box::new(undo));
    if WATCHER.get().is_some() {
        return Ok(());
    }
    latlab_sys::signal::install_stop_handler().context("installing the Ctrl-C handler")?;
    std::thread::Builder::new()
        .name("latlab-on-signal".into())
        .spawn(watch)
        .context("starting the signal watcher")?;
    let _ = WATCHER.set(());
    Ok(())
}

/// Waits for the watcher to end the process when a signal came and undo steps are
/// registered; returns at once otherwise. The command's own outcome comes second: undoing
/// (stopping a server) is what makes a run fail after the signal.
pub fn settle() {
    if WATCHER.get().is_some() && latlab_sys::signal::stop_requested() {
        loop {
            std::thread::park();
        }
    }
}

fn watch() {
    // asleep until the signal: no timer wakes a measured CPU meanwhile
    let sig = latlab_sys::signal::wait_for_stop();
    let steps = std::mem::take(&mut *STEPS.lock().unwrap_or_else(|e| e.into_inner()));
    let done: Vec<String> = steps.into_iter().rev().map(|undo| undo()).collect();
    eprintln!(
        "latlab: interrupted by {} (a run cut short writes no result); {}",
        latlab_sys::signal::name(sig),
        done.join("; ")
    );
    std::process::exit(128 + sig);
}

/// Registers putting real-time throttling back, when `g` switched it off.
pub fn restore_throttling(g: &Option<latlab_sys::rt_throttle::Unthrottled>) -> anyhow::Result<()> {
    if g.as_ref()
        .is_some_and(latlab_sys::rt_throttle::Unthrottled::changed)
    {
        undo_journal_on_signal()?;
    }
    Ok(())
}

/// Registers undoing every change in this process's undo journal (real-time throttling,
/// `--isolate`'s changes, …), once.
pub fn undo_journal_on_signal() -> anyhow::Result<()> {
    static ONCE: OnceLock<()> = OnceLock::new();
    if ONCE.set(()).is_err() {
        return Ok(());
    }
    on_signal(|| {
        let done = latlab_sys::journal::Journal::process().restore_all();
        if done.is_empty() {
            return "nothing to undo".into();
        }
        done.into_iter()
            .map(|r| r.unwrap_or_else(|e| e))
            .collect::<Vec<_>>()
            .join("; ")
    })
}

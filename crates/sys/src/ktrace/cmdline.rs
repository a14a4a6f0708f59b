//! Turning off the instance's `record-cmd` option, safely.
//!
//! Why. With `record-cmd` on (every new instance inherits it from the top level), enabling
//! an event registers the kernel's command-name recorder on the `sched_switch` and
//! `sched_wakeup` tracepoints (`tracing_start_cmdline_record`): every switch and every
//! wake-up on the host then calls it, and the first switch after any recorded event on a
//! CPU copies both tasks' comms into `saved_cmdlines` under a lock shared by all CPUs.
//! latlab's decoders never read `saved_cmdlines` (comms come from the `sched_switch`
//! fields), so this is pure cost: measured on this guest, about a fifth of a blocking
//! ping-pong's per-round-trip tracing cost (docs/benchmarks.md, "record-cmd").
//!
//! The catch. Writing `norecord-cmd` to an instance's `trace_options` is accepted per
//! instance, but the kernel (`set_tracer_flag` → `trace_event_enable_cmd_record`) then
//! walks the enabled events of **every** instance and drops one command-recorder
//! reference for each, and clears its flag. For events enabled with `record-cmd` on that
//! is balanced, but those instances stop saving comms (their text shows `<...>`); for
//! events enabled in an instance that already has `norecord-cmd` it drops a reference that
//! was never taken, and the kernel's count goes wrong. So the option is written only (a)
//! under an exclusive `flock` on [`LOCK`], which every latlab recorder holds from this
//! check until its events are enabled, and (b) when no other instance, the top level
//! included, has any event enabled: then the walk finds nothing but this instance's (none
//! yet) and nobody else is touched. Otherwise the recorder keeps `record-cmd` on and says
//! why.

use crate::flock::FileLock;
use std::path::Path;

/// The lock file every latlab recorder holds while it decides and enables its events.
pub const LOCK: &str = "/tmp/latlab-ktrace.lock";

/// An exclusive `flock` on [`LOCK`], released when dropped.
#[derive(Debug)]
pub(super) struct SetupLock {
    _lock: FileLock,
}

impl SetupLock {
    /// Blocks until the lock is held.
    pub(super) fn take() -> std::io::Result<SetupLock> {
        Ok(SetupLock {
            _lock: FileLock::exclusive(Path::new(LOCK))?,
        })
    }
}

/// Whether a `trace_options` text has the option `name` turned off (`no<name>`). Pure.
pub fn option_off(trace_options: &str, name: &str) -> bool {
    trace_options
        .lines()
        .any(|l| l.trim().strip_prefix("no") == Some(name))
}

/// Whether an `events/enable` text says some event is enabled (`1`, or `X` for a mix).
/// Pure.
pub fn any_enabled(enable: &str) -> bool {
    !matches!(enable.trim(), "0" | "")
}

/// Turns `record-cmd` off in the instance `ours` (under tracefs `root`) when no other
/// instance has an event enabled (see the module docs; the caller holds [`SetupLock`] and
/// has enabled nothing yet).
/// `Err` says why it stays on.
pub(super) fn turn_off(root: &Path, ours: &Path) -> Result<(), String> {
    let read = |p: &Path| std::fs::read_to_string(p);
    let mut dirs = vec![root.to_path_buf()];
    let instances = root.join("instances");
    let list = std::fs::read_dir(&instances)
        .map_err(|e| format!("listing {}: {e}", instances.display()))?;
    for entry in list {
        let p = entry
            .map_err(|e| format!("listing {}: {e}", instances.display()))?
            .path();
        if p != ours {
            dirs.push(p);
        }
    }
    for d in dirs {
        // An instance removed meanwhile has nothing enabled.
        let (Ok(opts), Ok(enable)) = (
            read(&d.join("trace_options")),
            read(&d.join("events/enable")),
        ) else {
            continue;
        };
        if any_enabled(&enable) {
            let off = if option_off(&opts, "record-cmd") {
                ", record-cmd off"
            } else {
                ""
            };
            return Err(format!(
                "{} has events enabled{off}: turning it off would touch them",
                d.display()
            ));
        }
    }
    let p = ours.join("trace_options");
    std::fs::write(&p, "norecord-cmd").map_err(|e| format!("writing {}: {e}", p.display()))?;
    let now = read(&p).map_err(|e| format!("reading {}: {e}", p.display()))?;
    if option_off(&now, "record-cmd") {
        Ok(())
    } else {
        Err("the kernel kept record-cmd on".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_options_are_read_per_line() {
        let t = "print-parent\nnosym-offset\nrecord-cmd\nnorecord-tgid\noverwrite\n";
        assert!(!option_off(t, "record-cmd"));
        assert!(option_off(t, "record-tgid"));
        assert!(option_off(t, "sym-offset"));
        assert!(option_off("norecord-cmd\n", "record-cmd"));
        // a longer option's tail is not the option
        assert!(!option_off("nofunc-record-cmd\n", "record-cmd"));
    }

    #[test]
    fn enable_files_say_any_enabled() {
        assert!(!any_enabled("0\n"));
        assert!(!any_enabled(""));
        assert!(any_enabled("1\n"));
        assert!(any_enabled("X\n"));
    }
}

//! Undoing one journal entry on the running system, and reading what a change needs to
//! know first (a task's name and start time, a file's value).

use super::entry::{parse_stat, same_value, Entry};
use std::io;
use std::path::Path;

/// A file's value, trimmed.
pub(crate) fn read_trim(path: &Path) -> io::Result<String> {
    Ok(std::fs::read_to_string(path)?.trim().to_string())
}

/// A task's name, start time and flags from `/proc/TID/stat`; `None` when it is gone.
pub(crate) fn task_stat(tid: i32) -> Option<(String, u64, u64)> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{tid}/stat")).ok()?)
}

/// Whether task `tid` is still the one that started at `start`.
fn same_task(tid: i32, start: u64) -> bool {
    task_stat(tid).is_some_and(|(_, s, _)| s == start)
}

/// The process ids in a cgroup directory (`cgroup.procs`).
pub(crate) fn procs_in(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Moves process `pid` into the cgroup directory `dir`.
pub(crate) fn move_pid(pid: i32, dir: &Path) -> io::Result<()> {
    std::fs::write(dir.join("cgroup.procs"), format!("{pid}\n"))
}

/// Undoes `entry`; `Ok` says what was done (or why nothing was needed), `Err` why it
/// could not be.
pub(crate) fn apply(entry: &Entry) -> Result<String, String> {
    use crate::sched::{format_cpu_list, set_task_affinity, task_affinity};
    match entry {
        Entry::File { path, old, set } => {
            let name = super::entry::knob_name(path);
            let now = read_trim(path).map_err(|e| format!("{name} NOT restored to {old}: {e}"))?;
            if same_value(&now, old) {
                Ok(format!("{name} is {old} already"))
            } else if same_value(&now, set) {
                std::fs::write(path, format!("{old}\n"))
                    .map_err(|e| format!("{name} NOT restored to {old}: {e}"))?;
                Ok(format!("{name} back to {old}"))
            } else {
                Ok(format!("{name} left at {now} (set by someone else since)"))
            }
        }
        Entry::Affinity {
            tid,
            start,
            comm,
            old,
            set,
        } => {
            if !same_task(*tid, *start) {
                return Ok(format!("{comm} ({tid}) has ended"));
            }
            match task_affinity(*tid) {
                Ok(now) if now == *set => set_task_affinity(*tid, old)
                    .map(|()| format!("{comm} ({tid}) back on CPUs {}", format_cpu_list(old)))
                    .map_err(|e| {
                        format!(
                            "{comm} ({tid}) NOT back on CPUs {}: {e}",
                            format_cpu_list(old)
                        )
                    }),
                Ok(now) => Ok(format!(
                    "{comm} ({tid}) left on CPUs {} (set by someone else since)",
                    format_cpu_list(&now)
                )),
                Err(_) => Ok(format!("{comm} ({tid}) has ended")),
            }
        }
        Entry::Cgroup {
            pid,
            start,
            comm,
            from,
            to,
            threads,
        } => {
            if !same_task(*pid, *start) {
                return Ok(format!("{comm} ({pid}) has ended"));
            }
            if !procs_in(to).contains(pid) {
                return Ok(format!(
                    "{comm} ({pid}) left in its cgroup (moved by someone else since)"
                ));
            }
            move_pid(*pid, from)
                .map_err(|e| format!("{comm} ({pid}) NOT moved back to {}: {e}", from.display()))?;
            for (tid, cpus) in threads {
                // a thread that ended meanwhile, or one whose old CPUs the cgroup no
                // longer has, keeps what the cgroup gave it
                let _ = set_task_affinity(*tid, cpus);
            }
            Ok(format!("{comm} ({pid}) back in {}", from.display()))
        }
        Entry::Dir { path } => {
            if !path.exists() {
                return Ok(format!("{} is gone already", path.display()));
            }
            if let Some(parent) = path.parent() {
                for pid in procs_in(path) {
                    let _ = move_pid(pid, parent);
                }
            }
            std::fs::remove_dir(path)
                .map(|()| format!("removed {}", path.display()))
                .map_err(|e| format!("{} NOT removed: {e}", path.display()))
        }
        Entry::Command { what, argv } => {
            let Some((program, args)) = argv.split_first() else {
                return Ok(format!("{what}: nothing to run"));
            };
            let out = std::process::Command::new(program)
                .args(args)
                .stdin(std::process::Stdio::null())
                .output()
                .map_err(|e| format!("{what} NOT undone ({program}: {e})"))?;
            if out.status.success() {
                Ok(format!("{what} undone"))
            } else {
                Err(format!(
                    "{what} NOT undone ({}: {})",
                    argv.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                ))
            }
        }
    }
}

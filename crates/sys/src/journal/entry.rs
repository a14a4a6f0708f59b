//! What a journal holds, as text: one JSON object a line, appended before each change
//! (`{"seq":1,"entry":{…}}`), after a change whose value read back differently from what
//! was written (`{"seq":1,"set":"…"}`), and after a change was undone (`{"done":1}`).
//! Pure: parsing, the order of undoing, and the words that describe a change.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One change to the system and what undoes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    /// A sysfs or procfs value: `old` is written back while the file still reads `set`
    /// (a value somebody else set meanwhile stays).
    File {
        /// The file.
        path: PathBuf,
        /// Its value before (trimmed).
        old: String,
        /// The value latlab set, as the file read back (trimmed).
        set: String,
    },
    /// A task's CPU affinity: `old` is set back while the same task (same start time)
    /// still has affinity `set`.
    Affinity {
        /// The thread id.
        tid: i32,
        /// Its start time (`/proc/TID/stat` field 22), telling it from a later task
        /// with the same id.
        start: u64,
        /// Its name (`comm`), for the reader.
        comm: String,
        /// The CPUs before.
        old: Vec<u32>,
        /// The CPUs latlab set.
        set: Vec<u32>,
    },
    /// A process moved into cgroup `to`: moved back into `from` while it is still in `to`,
    /// then each of its threads gets its affinity before the move back (moving a task
    /// into a cgroup v1 cpuset resets it).
    Cgroup {
        /// The process id.
        pid: i32,
        /// Its start time (as for [`Entry::Affinity`]).
        start: u64,
        /// Its name.
        comm: String,
        /// The cgroup directory it was in.
        from: PathBuf,
        /// The cgroup directory latlab moved it to.
        to: PathBuf,
        /// Each thread's id and CPUs before the move.
        #[serde(default)]
        threads: Vec<(i32, Vec<u32>)>,
    },
    /// A directory latlab created (a cgroup): what is left in it goes to its parent, and
    /// it is removed.
    Dir {
        /// The directory.
        path: PathBuf,
    },
    /// A change undone by running a command (a sysctl inside a network namespace, a route,
    /// an offload switch): `argv` is run; its failure is reported, not retried.
    Command {
        /// What the change was, for the reader.
        what: String,
        /// The program and its arguments that undo it.
        argv: Vec<String>,
    },
}

/// One line of a journal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Line {
    /// A change about to be made.
    Change {
        /// Its number in this journal (from 1).
        seq: u64,
        /// The change.
        entry: Entry,
    },
    /// The value a [`Entry::File`] change read back after writing.
    Set {
        /// The change's number.
        seq: u64,
        /// The value read back.
        set: String,
    },
    /// A change undone (or never made: its write failed).
    Done {
        /// The change's number.
        done: u64,
    },
}

impl Line {
    /// The line as written to the journal, newline included.
    pub fn to_text(&self) -> String {
        let mut s = serde_json::to_string(self).expect("journal lines serialize");
        s.push('\n');
        s
    }
}

/// The changes a journal's text leaves to undo, in the order to undo them (newest first).
/// A line that does not parse — the last one, torn by a crash while it was written — is
/// skipped: its change was not made yet (each line is written and synced before its
/// change).
pub fn pending(text: &str) -> Vec<(u64, Entry)> {
    let mut open: Vec<(u64, Entry)> = Vec::new();
    for line in text.lines() {
        match serde_json::from_str::<Line>(line) {
            Ok(Line::Change { seq, entry }) => open.push((seq, entry)),
            Ok(Line::Set { seq, set }) => {
                if let Some((_, Entry::File { set: s, .. })) =
                    open.iter_mut().find(|(n, _)| *n == seq)
                {
                    *s = set;
                }
            }
            Ok(Line::Done { done }) => open.retain(|(n, _)| *n != done),
            Err(_) => {}
        }
    }
    open.reverse();
    open
}

/// A sysfs/procfs path as a reader knows it: `kernel.sched_rt_runtime_us` for a file
/// under `/proc/sys`, the path otherwise.
pub fn knob_name(path: &Path) -> String {
    match path.strip_prefix("/proc/sys") {
        Ok(rest) => rest.to_string_lossy().replace('/', "."),
        Err(_) => path.display().to_string(),
    }
}

impl Entry {
    /// The change, in a few words: `kernel.sched_rt_runtime_us 950000 → -1`.
    pub fn describe(&self) -> String {
        use crate::sched::format_cpu_list as l;
        match self {
            Entry::File { path, old, set } => format!("{} {old} → {set}", knob_name(path)),
            Entry::Affinity {
                tid,
                comm,
                old,
                set,
                ..
            } => format!("affinity of {comm} ({tid}) {} → {}", l(old), l(set)),
            Entry::Cgroup {
                pid,
                comm,
                from,
                to,
                ..
            } => format!(
                "{comm} ({pid}) moved from cgroup {} to {}",
                from.display(),
                to.display()
            ),
            Entry::Dir { path } => format!("created {}", path.display()),
            Entry::Command { what, .. } => what.clone(),
        }
    }
}

/// Whether two values of one sysfs/procfs file mean the same: equal text, or equal once
/// whitespace runs are collapsed (`1\t0` and `1 0`).
pub fn same_value(a: &str, b: &str) -> bool {
    a.trim() == b.trim()
        || a.split_whitespace().collect::<Vec<_>>() == b.split_whitespace().collect::<Vec<_>>()
}

/// The fields of `/proc/TID/stat` after the name in parentheses (the name may hold spaces
/// and parentheses: the last `)` ends it), from field 3 (`state`) on, and the name.
fn stat_fields(stat: &str) -> Option<(&str, Vec<&str>)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?;
    Some((comm, stat.get(close + 1..)?.split_whitespace().collect()))
}

/// A task's name, start time (field 22) and flags (field 9) from its `/proc/TID/stat`.
pub fn parse_stat(stat: &str) -> Option<(String, u64, u64)> {
    let (comm, f) = stat_fields(stat)?;
    let flags = f.get(9 - 3)?.parse().ok()?;
    let start = f.get(22 - 3)?.parse().ok()?;
    Some((comm.to_string(), start, flags))
}

/// `PF_KTHREAD`: the task is a kernel thread.
pub const PF_KTHREAD: u64 = 0x0020_0000;
/// `PF_NO_SETAFFINITY`: the kernel refuses to change the task's affinity (per-CPU threads).
pub const PF_NO_SETAFFINITY: u64 = 0x0400_0000;

/// Parses a kernel CPU list (`0-3,5,8-9`; empty or blank for none). Pure.
pub fn parse_cpu_list(s: &str) -> Option<Vec<u32>> {
    let s = s.trim();
    let mut out = Vec::new();
    if s.is_empty() {
        return Some(out);
    }
    for part in s.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if a > b || b - a > 65_535 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.trim().parse().ok()?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// CPUs as the hexadecimal mask the workqueue `cpumask` files take (`3` for CPUs 0-1,
/// 32-bit groups separated by commas above CPU 31). Pure.
pub fn format_cpu_mask(cpus: &[u32]) -> String {
    let top = cpus.iter().max().map_or(0, |&c| c / 32);
    let mut words = vec![0u32; top as usize + 1];
    for &c in cpus {
        words[(c / 32) as usize] |= 1 << (c % 32);
    }
    let mut parts: Vec<String> = words.iter().rev().map(|w| format!("{w:08x}")).collect();
    let first = parts[0].trim_start_matches('0');
    parts[0] = if first.is_empty() { "0" } else { first }.to_string();
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(seq: u64, old: &str, set: &str) -> Line {
        Line::Change {
            seq,
            entry: Entry::File {
                path: "/proc/sys/kernel/sched_rt_runtime_us".into(),
                old: old.into(),
                set: set.into(),
            },
        }
    }

    #[test]
    fn lines_round_trip_and_pending_is_newest_first_without_the_done() {
        let cmd = Line::Change {
            seq: 2,
            entry: Entry::Command {
                what: "rp_filter".into(),
                argv: vec!["ip".into(), "netns".into()],
            },
        };
        let aff = Line::Change {
            seq: 3,
            entry: Entry::Affinity {
                tid: 7,
                start: 99,
                comm: "kworker/u4:1".into(),
                old: vec![0, 1],
                set: vec![0],
            },
        };
        let text: String = [
            file(1, "950000", "-1"),
            cmd.clone(),
            aff.clone(),
            Line::Done { done: 2 },
        ]
        .iter()
        .map(Line::to_text)
        .collect();
        for l in text.lines() {
            let back: Line = serde_json::from_str(l).unwrap();
            assert_eq!(back.to_text().trim_end(), l);
        }
        let p = pending(&text);
        assert_eq!(p.iter().map(|(n, _)| *n).collect::<Vec<_>>(), vec![3, 1]);
        assert_eq!(p[1].1.describe(), "kernel.sched_rt_runtime_us 950000 → -1");
        assert_eq!(p[0].1.describe(), "affinity of kworker/u4:1 (7) 0-1 → 0");
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_a_read_back_value_replaces_the_set_one() {
        let mut text = file(1, "3", "1").to_text();
        text.push_str(
            &Line::Set {
                seq: 1,
                set: "00000001".into(),
            }
            .to_text(),
        );
        let torn = file(2, "1", "0").to_text();
        text.push_str(&torn[..torn.len() / 2]);
        let p = pending(&text);
        assert_eq!(p.len(), 1);
        assert!(matches!(&p[0].1, Entry::File { set, .. } if set == "00000001"));
        assert!(pending("").is_empty());
    }

    #[test]
    fn stat_lines_with_odd_names_parse() {
        let stat =
            "1234 (kworker/u4:1-(ev) ts) I 2 0 0 0 -1 69238880 0 0 0 0 0 3 0 0 20 0 1 0 5512 0 0";
        let (comm, start, flags) = parse_stat(stat).unwrap();
        assert_eq!(comm, "kworker/u4:1-(ev) ts");
        assert_eq!(start, 5512);
        assert_eq!(flags, 69_238_880);
        assert!(flags & PF_KTHREAD != 0 && flags & PF_NO_SETAFFINITY != 0);
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn cpu_lists_and_masks() {
        assert_eq!(
            parse_cpu_list("0-3,5,8-9\n"),
            Some(vec![0, 1, 2, 3, 5, 8, 9])
        );
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
        assert_eq!(format_cpu_mask(&[0, 1]), "3");
        assert_eq!(format_cpu_mask(&[0]), "1");
        assert_eq!(format_cpu_mask(&[1, 33]), "2,00000002");
        assert_eq!(format_cpu_mask(&[]), "0");
        assert!(same_value("1\t0\n", "1 0") && !same_value("1", "0"));
    }

    #[test]
    fn knobs_under_proc_sys_get_their_sysctl_names() {
        assert_eq!(
            knob_name(Path::new("/proc/sys/kernel/timer_migration")),
            "kernel.timer_migration"
        );
        assert_eq!(
            knob_name(Path::new("/proc/irq/11/smp_affinity_list")),
            "/proc/irq/11/smp_affinity_list"
        );
    }
}

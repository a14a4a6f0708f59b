//! CPUs isolated at run time for one run (`--isolate`, `latlab host isolate`): device
//! interrupts, unbound workqueues, user processes (into a cgroup v1 cpuset of the
//! housekeeping CPUs, or by affinity where there is none) and the kernel threads that
//! allow it moved to the other CPUs; `kernel.timer_migration` off, `vm.stat_interval` 10 s,
//! real-time throttling off. Every change goes through the [journal](crate::journal), so
//! it is undone when the [`Isolation`] is dropped, on a signal, and — after SIGKILL — by
//! the next latlab command. What only a reboot can do (`isolcpus`, `nohz_full`,
//! `rcu_nocbs`, `irqaffinity`) is advice in the record, never applied.
//!
//! The decisions are pure ([`plan`]); [`snapshot`] reads the system, [`apply`] changes it.

pub mod plan;

pub use plan::{housekeeping, Plan, PlanError, Snapshot, Step};

use crate::journal::entry::{parse_cpu_list, parse_stat};
use crate::journal::{Change, Journal};
use latlab_core::results::{IsolationChange, IsolationRecord};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The cgroup v1 cpuset hierarchy's usual mount point.
pub const CPUSET_V1: &str = "/sys/fs/cgroup/cpuset";
/// The unbound-workqueue directory.
pub const WORKQUEUE_DIR: &str = "/sys/devices/virtual/workqueue";

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// The online CPUs (`/sys/devices/system/cpu/online`).
pub fn online_cpus() -> Vec<u32> {
    read(Path::new("/sys/devices/system/cpu/online"))
        .and_then(|s| parse_cpu_list(&s))
        .unwrap_or_else(|| (0..crate::sched::online_cpus()).collect())
}

fn irqs() -> Vec<plan::Irq> {
    let Ok(rd) = std::fs::read_dir("/proc/irq") else {
        return Vec::new();
    };
    let mut v: Vec<plan::Irq> = rd
        .filter_map(|d| {
            let d = d.ok()?;
            let number: u32 = d.file_name().to_str()?.parse().ok()?;
            let dir = d.path();
            let affinity = parse_cpu_list(&read(&dir.join("smp_affinity_list"))?)?;
            let effective =
                read(&dir.join("effective_affinity_list")).and_then(|s| parse_cpu_list(&s));
            let name = std::fs::read_dir(&dir)
                .ok()?
                .filter_map(|e| {
                    let e = e.ok()?;
                    e.file_type().ok()?.is_dir().then(|| e.file_name())
                })
                .filter_map(|n| n.into_string().ok())
                .collect::<Vec<_>>()
                .join(",");
            Some(plan::Irq {
                number,
                name,
                affinity,
                effective,
            })
        })
        .collect();
    v.sort_by_key(|i| i.number);
    v
}

fn wq_masks() -> Vec<(PathBuf, String)> {
    let root = Path::new(WORKQUEUE_DIR);
    let mut v: Vec<(PathBuf, String)> = Vec::new();
    let global = root.join("cpumask");
    if let Some(m) = read(&global) {
        v.push((global, m));
    }
    if let Ok(rd) = std::fs::read_dir(root) {
        let mut per: Vec<(PathBuf, String)> = rd
            .filter_map(|d| {
                let p = d.ok()?.path().join("cpumask");
                let m = read(&p)?;
                Some((p, m))
            })
            .collect();
        per.sort();
        v.extend(per);
    }
    v
}

fn tasks() -> Vec<plan::Task> {
    let mut v = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return v;
    };
    for d in rd.filter_map(Result::ok) {
        let Some(pid) = d.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(threads) = std::fs::read_dir(d.path().join("task")) else {
            continue;
        };
        for t in threads.filter_map(Result::ok) {
            let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            let Some((comm, _, flags)) = std::fs::read_to_string(t.path().join("stat"))
                .ok()
                .and_then(|s| parse_stat(&s))
            else {
                continue;
            };
            let Ok(affinity) = crate::sched::task_affinity(tid) else {
                continue;
            };
            v.push(plan::Task {
                tid,
                pid,
                comm,
                flags,
                affinity,
            });
        }
    }
    v.sort_by_key(|t| t.tid);
    v
}

fn cpuset_v1() -> Option<plan::CpusetV1> {
    let root = PathBuf::from(CPUSET_V1);
    let mems = read(&root.join("cpuset.mems"))?;
    let procs = crate::journal::undo::procs_in(&root);
    Some(plan::CpusetV1 { root, mems, procs })
}

/// The system as isolating sees it (readable without root, except tasks' affinities
/// that are hidden from others).
pub fn snapshot() -> Snapshot {
    Snapshot {
        online: online_cpus(),
        irqs: irqs(),
        default_irq_mask: read(Path::new("/proc/irq/default_smp_affinity")),
        wq_masks: wq_masks(),
        cpuset: cpuset_v1(),
        tasks: tasks(),
    }
}

/// The current values of [`plan::SYSCTLS`]' files.
pub fn sysctls() -> Vec<Option<String>> {
    plan::SYSCTLS
        .iter()
        .map(|(f, _, _)| read(Path::new(f)))
        .collect()
}

/// The plan for isolating `cpus` on this system, this process left where it is.
///
/// # Errors
/// The CPU list is not acceptable.
pub fn plan_here(cpus: &[u32]) -> Result<Plan, PlanError> {
    plan::plan(cpus, &snapshot(), &sysctls(), std::process::id() as i32)
}

/// Isolation in force; every change is undone when it is dropped.
#[derive(Debug)]
#[must_use = "the isolation is undone when this is dropped"]
pub struct Isolation {
    changes: Vec<Change>,
    record: IsolationRecord,
}

impl Isolation {
    /// An isolation that changed nothing.
    pub fn empty() -> Isolation {
        Isolation {
            changes: Vec::new(),
            record: IsolationRecord::default(),
        }
    }

    /// What was changed and what was refused.
    pub fn record(&self) -> &IsolationRecord {
        &self.record
    }

    /// Undoes every change now, newest first: what each undo did or why it failed.
    pub fn restore(mut self) -> Vec<Result<String, String>> {
        self.changes
            .drain(..)
            .rev()
            .filter_map(|c| c.restore().transpose())
            .collect()
    }
}

impl Drop for Isolation {
    fn drop(&mut self) {
        for c in self.changes.drain(..).rev() {
            drop(c);
        }
    }
}

static RECORD: Mutex<Option<IsolationRecord>> = Mutex::new(None);

/// The isolation of this process's run, for its provenance ([`crate::host::provenance`]).
pub fn record() -> Option<IsolationRecord> {
    RECORD.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Makes the changes of `plan` through `journal`. A change the kernel refuses (a managed
/// interrupt, a kernel thread bound to its CPU, a process that ended) is listed in the
/// record's `refused` and the rest go on.
///
/// # Errors
/// The journal cannot be written (then nothing stays changed: what was made is undone).
pub fn apply(plan: &Plan, journal: &Journal) -> std::io::Result<Isolation> {
    let mut me = Isolation {
        changes: Vec::new(),
        record: IsolationRecord {
            cpus: plan.cpus.clone(),
            housekeeping: plan.housekeeping.clone(),
            boot_advice: plan.boot_advice.clone(),
            ..IsolationRecord::default()
        },
    };
    for step in &plan.steps {
        me.step(step, journal, &plan.cpus)?;
    }
    *RECORD.lock().unwrap_or_else(|e| e.into_inner()) = Some(me.record.clone());
    Ok(me)
}

impl Isolation {
    fn done(&mut self, kind: &str, c: Change) {
        self.record.changes.push(IsolationChange {
            kind: kind.to_string(),
            what: c.entry().describe(),
        });
        self.changes.push(c);
    }

    fn refused(&mut self, what: String, e: &std::io::Error) {
        self.record.refused.push(format!("{what}: {e}"));
    }

    fn step(&mut self, step: &Step, journal: &Journal, cpus: &[u32]) -> std::io::Result<()> {
        match step {
            Step::Write {
                kind, path, value, ..
            } => match journal.write_file(path, value) {
                Ok(Some(c)) => {
                    self.done(kind, c);
                    if let Some(eff) = path
                        .parent()
                        .filter(|_| *kind == "irq")
                        .and_then(|d| read(&d.join("effective_affinity_list")))
                        .and_then(|s| parse_cpu_list(&s))
                        .filter(|eff| eff.iter().any(|c| cpus.contains(c)))
                    {
                        self.record.refused.push(format!(
                            "{}: effective affinity still {} right after the write (x86 moves an interrupt when it next fires)",
                            step.describe(),
                            crate::sched::format_cpu_list(&eff)
                        ));
                    }
                }
                Ok(None) => {}
                Err(e) if crate::journal::is_journal_error(&e) => return Err(e),
                Err(e) => self.refused(step.describe(), &e),
            },
            Step::Cpuset {
                root,
                dir,
                mems,
                procs,
            } => {
                let hk = crate::sched::format_cpu_list(&self.record.housekeeping);
                let c = journal.make_dir(dir)?;
                self.done("cpuset", c);
                for (file, value) in [("cpuset.cpus", hk.as_str()), ("cpuset.mems", mems)] {
                    let path = dir.join(file);
                    std::fs::write(&path, value).map_err(|e| {
                        std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
                    })?;
                }
                for (pid, comm) in procs {
                    match journal.move_to_cgroup(*pid, root, dir) {
                        Ok(c) => self.done("cpuset", c),
                        // ended meanwhile
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                        Err(e) => self.refused(format!("{comm} ({pid}) into the cpuset"), &e),
                    }
                }
            }
            Step::Affinity {
                kind,
                tid,
                cpus: to,
                ..
            } => match journal.set_affinity(*tid, to) {
                Ok(Some(c)) => self.done(kind, c),
                Ok(None) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                Err(e) => self.refused(step.describe(), &e),
            },
        }
        Ok(())
    }
}

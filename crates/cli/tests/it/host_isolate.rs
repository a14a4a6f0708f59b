//! The undo journal and `latlab host isolate` / `--isolate`: every value latlab changes is
//! back after a normal exit, an error, and SIGKILL followed by the next latlab command.

use crate::util::*;
use latlab_sys::journal::entry::parse_cpu_list;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const RT: &str = "/proc/sys/kernel/sched_rt_runtime_us";

/// Every value isolating may touch: IRQ affinities, the workqueue masks, the sysctls,
/// each kernel thread's affinity, and the affinity and cpuset of the `victims`.
fn values(victims: &[u32]) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    let mut put = |k: String| {
        if let Ok(v) = std::fs::read_to_string(&k) {
            m.insert(k, v.trim().to_string());
        }
    };
    for d in std::fs::read_dir("/proc/irq").unwrap().flatten() {
        put(d.path().join("smp_affinity_list").display().to_string());
    }
    put("/proc/irq/default_smp_affinity".into());
    put("/sys/devices/virtual/workqueue/cpumask".into());
    for d in std::fs::read_dir("/sys/devices/virtual/workqueue")
        .unwrap()
        .flatten()
    {
        put(d.path().join("cpumask").display().to_string());
    }
    for s in [
        RT,
        "/proc/sys/kernel/timer_migration",
        "/proc/sys/vm/stat_interval",
    ] {
        put(s.into());
    }
    // kernel threads (children of kthreadd) keep their own affinity
    for d in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = d.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let stat = std::fs::read_to_string(d.path().join("stat")).unwrap_or_default();
        let Some((comm, _, flags)) = latlab_sys::journal::entry::parse_stat(&stat) else {
            continue;
        };
        if flags & latlab_sys::journal::entry::PF_KTHREAD != 0 {
            if let Ok(a) = latlab_sys::sched::task_affinity(pid) {
                m.insert(format!("kthread {comm} {pid}"), format!("{a:?}"));
            }
        }
    }
    for &v in victims {
        let a = latlab_sys::sched::task_affinity(v as i32).unwrap();
        m.insert(format!("victim {v} affinity"), format!("{a:?}"));
        let cg = std::fs::read_to_string(format!("/proc/{v}/cgroup")).unwrap();
        let cpuset = cg.lines().find(|l| l.contains(":cpuset:")).unwrap_or("");
        m.insert(format!("victim {v} cpuset"), cpuset.to_string());
    }
    m
}

/// Kernel threads that ended or started between two looks are not changes.
fn assert_same(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>, when: &str) {
    let mut diffs = Vec::new();
    for (k, v) in before {
        match after.get(k) {
            Some(w) if w != v => diffs.push(format!("{k}: {v} → {w}")),
            None if !k.starts_with("kthread") => diffs.push(format!("{k}: gone")),
            _ => {}
        }
    }
    assert!(diffs.is_empty(), "{when}: not restored: {diffs:?}");
}

/// Two `sleep` processes: one pinned to the last online CPU, one free.
struct Victims(Vec<Child>);
impl Victims {
    fn start(last: u32) -> Victims {
        let mut v = Vec::new();
        for pin in [true, false] {
            let c = std::process::Command::new("sleep")
                .arg("120")
                .spawn()
                .unwrap();
            if pin {
                latlab_sys::sched::set_task_affinity(c.id() as i32, &[last]).unwrap();
            }
            v.push(c);
        }
        Victims(v)
    }
    fn pids(&self) -> Vec<u32> {
        self.0.iter().map(Child::id).collect()
    }
}
impl Drop for Victims {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn online() -> Vec<u32> {
    parse_cpu_list(&std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap()).unwrap()
}

/// Waits until `done` holds (at most 20 s).
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !done() {
        assert!(t0.elapsed() < Duration::from_secs(20), "{what}: timed out");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The next latlab command (a short clock run) undoes what a SIGKILLed one left, and says
/// so on stderr.
fn next_command_undoes(dir: &Path) -> String {
    let out = latlab_line("host clocks --duration 50ms --sources monotonic -q -o")
        .arg(dir.join("clocks.json"))
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("ended without undoing its changes to the system; undone now"),
        "{err}"
    );
    err
}

/// SIGKILL while real-time throttling is off (a reflector run with `--no-rt-throttle`,
/// the guard killer-us's FIFO rungs hold): the next latlab command puts
/// `kernel.sched_rt_runtime_us` back.
#[test]
fn a_sigkill_while_throttling_is_off_is_undone_by_the_next_command() {
    let _turn = system_test!("to write {RT}");
    let before = std::fs::read_to_string(RT).unwrap();
    assert_ne!(before.trim(), "-1", "the test needs throttling on");
    let dir = tempfile::tempdir().unwrap();
    let mut nf = std::process::Command::new(latlab_bin())
        .args("net reflect --bind 127.0.0.1:0 --no-rt-throttle -q -o".split_whitespace())
        .arg(dir.path().join("nf.json"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("throttling off", || {
        std::fs::read_to_string(RT).unwrap().trim() == "-1"
    });
    nf.kill().unwrap();
    nf.wait().unwrap();
    assert_eq!(
        std::fs::read_to_string(RT).unwrap().trim(),
        "-1",
        "SIGKILL left it off"
    );
    let err = next_command_undoes(dir.path());
    assert!(err.contains("kernel.sched_rt_runtime_us back to"), "{err}");
    assert_eq!(std::fs::read_to_string(RT).unwrap(), before);
}

/// `host isolate` moves the victims off the isolated CPU while the command runs, passes
/// the command's exit status on, and restores every value after a normal exit, after an
/// error (a command that cannot start), and after SIGKILL followed by the next command.
#[test]
fn isolate_restores_every_value_after_exit_error_and_sigkill() {
    let _turn = system_test!("to change IRQ, workqueue and task affinities");
    let cpus = online();
    let Some(&last) = cpus.last().filter(|_| cpus.len() > 1) else {
        skip!("needs two online CPUs");
    };
    let victims = Victims::start(last);
    let pids = victims.pids();
    let before = values(&pids);
    let dir = tempfile::tempdir().unwrap();
    let cpu = last.to_string();
    // during the run: the pinned victim was moved off, RT throttling is off
    let probe = format!(
        "grep Cpus_allowed_list /proc/{}/status; cat {RT}; exit 7",
        pids[0]
    );
    let out = latlab()
        .args(["host", "isolate", "--cpus", &cpu, "--", "sh", "-c", &probe])
        .output()
        .unwrap();
    let during = text(&out.stdout);
    assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
    assert!(!during.contains(&format!("\t{last}\n")), "{during}");
    assert!(during.contains("-1"), "{during}");
    assert!(
        text(&out.stderr).contains("isolated: CPU"),
        "{}",
        text(&out.stderr)
    );
    assert_same(&before, &values(&pids), "after a normal exit");

    let out = latlab()
        .args([
            "host",
            "isolate",
            "--cpus",
            &cpu,
            "--",
            "/nonexistent/latlab-cmd",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("/nonexistent/latlab-cmd"));
    assert_same(&before, &values(&pids), "after an error");

    let mut run = std::process::Command::new(latlab_bin())
        .args(["host", "isolate", "--cpus", &cpu, "--", "sleep", "60"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pinned = pids[0] as i32;
    wait_for("the victim moved", || {
        latlab_sys::sched::task_affinity(pinned).unwrap() != [last]
    });
    // let it finish its changes (the kernel threads come last): the command has started
    let children = format!("/proc/{}/task/{}/children", run.id(), run.id());
    let mut child = String::new();
    wait_for("the command started", || {
        child = std::fs::read_to_string(&children).unwrap_or_default();
        !child.trim().is_empty()
    });
    run.kill().unwrap();
    run.wait().unwrap();
    assert_ne!(
        latlab_sys::sched::task_affinity(pinned).unwrap(),
        [last],
        "SIGKILL left the victim moved"
    );
    let err = next_command_undoes(dir.path());
    assert_same(&before, &values(&pids), &format!("after SIGKILL ({err})"));
    // the orphaned `sleep 60` of the killed run
    for pid in child.split_whitespace() {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", pid])
            .status();
    }
}

/// `--dry-run` lists the changes and changes nothing; a bad list is one line, exit 2;
/// without root a run is refused in one line, exit 3.
#[test]
fn dry_run_bad_lists_and_no_root() {
    let cpus = online();
    let all = latlab_sys::sched::format_cpu_list(&cpus);
    assert_usage_error(
        ["host", "isolate", "--cpus", &all, "--dry-run"],
        &["--cpus", "no housekeeping CPU"],
    );
    assert_usage_error(
        ["host", "isolate", "--cpus", "4000", "--dry-run"],
        &["--cpus", "CPU 4000 is not online"],
    );
    assert_usage_error(
        ["host", "noise", "--cpu", "0", "--isolate", "4000"],
        &["--isolate", "CPU 4000 is not online"],
    );
    assert_usage_error(
        ["host", "isolate", "--cpus", "1-x"],
        &["--cpus", "CPU list"],
    );
    if cpus.len() < 2 {
        skip!("needs two online CPUs for a plan");
    }
    let last = cpus.last().unwrap().to_string();
    let rt = std::fs::read_to_string(RT).ok();
    let out = latlab_line("host isolate --dry-run --cpus")
        .arg(&last)
        .output()
        .unwrap();
    let list = ok(&out);
    assert!(list.starts_with(&format!("isolating CPU {last}")), "{list}");
    assert!(
        list.contains("boot-only (advice, never applied): isolcpus="),
        "{list}"
    );
    assert_eq!(
        std::fs::read_to_string(RT).ok(),
        rt,
        "a dry run changed nothing"
    );
    if is_root() {
        // the same as an unprivileged user, where `setpriv` can drop root
        let Ok(out) = std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(latlab_bin())
            .args(["host", "isolate", "--cpus", &last, "--", "true"])
            .output()
        else {
            skip!("setpriv is missing: cannot drop root to see the refusal");
        };
        assert_one_line_error(&out, 3, &["needs root", "--dry-run"]);
    } else {
        let out = latlab_line("host isolate --cpus")
            .arg(&last)
            .args(["--", "true"])
            .output()
            .unwrap();
        assert_one_line_error(&out, 3, &["needs root", "--dry-run"]);
    }
}

/// `host noise --isolate` records what it changed in the result's provenance and prints
/// it; every value is back after the run.
#[test]
fn noise_with_isolate_records_the_changes_and_restores_them() {
    let _turn = system_test!("to isolate a CPU");
    let cpus = online();
    let Some(&last) = cpus.last().filter(|_| cpus.len() > 1) else {
        skip!("needs two online CPUs");
    };
    let before = values(&[]);
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("noise.json");
    let out = latlab()
        .args(["host", "noise", "--cpu", &last.to_string(), "--isolate"])
        .arg(last.to_string())
        .args(["-d", "200ms", "--no-kernel", "-o"])
        .arg(&out_path)
        .output()
        .unwrap();
    let printed = ok(&out);
    assert!(printed.contains("isolated: CPU"), "{printed}");
    let r = latlab_core::results::ResultFile::load(&out_path).unwrap();
    let iso = r.provenance.isolation.expect("isolation recorded");
    assert_eq!(iso.cpus, vec![last]);
    assert!(!iso.housekeeping.contains(&last));
    assert!(
        iso.changes
            .iter()
            .any(|c| c.kind == "sysctl" || c.kind == "irq"),
        "{:?}",
        iso.changes
    );
    assert!(iso.boot_advice.iter().any(|a| a.starts_with("nohz_full=")));
    assert_same(&before, &values(&[]), "after host noise --isolate");
}

/// `latlab explain --advise` on a stored result (`host noise --cpu 1 --fifo 50`, kernel
/// events on): each top cause with its share of the excess as the causes table prints it,
/// runtime or boot-only, and the remedy on the CPU of the tail; the report's "Why the
/// tail" section has the same rows.
#[test]
fn advise_names_the_remedy_of_each_top_cause_and_the_report_shows_it() {
    let f = fixture("host-noise-explained.json");
    let r = latlab_core::results::ResultFile::load(&f).unwrap();
    let a = r.explain.clone().expect("the fixture has an attribution");
    let text = ok(&latlab()
        .args(["explain", "--advise"])
        .arg(&f)
        .output()
        .unwrap());
    let advice = latlab_explain::remedy::advise(&a, latlab_explain::render::ADVISE_TOP);
    assert_eq!(
        advice.len(),
        latlab_explain::render::ADVISE_TOP.min(a.causes.len())
    );
    let (_, after) = text
        .split_once("what removes the top causes")
        .unwrap_or_else(|| panic!("{text}"));
    let lines: Vec<&str> = after
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .filter(|l| l.contains("%  "))
        .collect();
    assert_eq!(lines.len(), advice.len(), "{after}");
    let mut top: Vec<_> = a.causes.iter().filter(|c| c.time_ns > 0).collect();
    top.sort_by_key(|c| std::cmp::Reverse(c.time_ns));
    for ((line, c), v) in lines.iter().zip(&top).zip(&advice) {
        let label = latlab_explain::render::cause_label(c);
        let share = latlab_explain::render::share(c.time_ns, a.excess_ns);
        assert!(
            line.contains(&label) && line.contains(&share),
            "{line} ({label} {share})"
        );
        assert!(
            line.contains(&format!("[{}]", v.remedy.kind.as_str())),
            "{line}"
        );
    }
    // the tail was on CPU 1: its runtime remedies isolate CPU 1, the tick needs a reboot
    assert!(a.worst.iter().all(|w| w.cpu == 1));
    assert!(text.contains("[runtime]  --isolate 1 "), "{text}");
    assert!(
        text.contains("timer (local_timer)  [boot-only]  nohz_full=1"),
        "{text}"
    );
    assert!(text.contains("Documentation/"), "{text}");
    let dir = tempfile::tempdir().unwrap();
    let html = report_html([&f], &dir.path().join("r.html"), &["--no-figures"]);
    let s = section(&html, "why-the-tail-host-noise");
    let rows =
        crate::host_noise::table_rows(s, "What removes the top causes (latlab explain --advise)");
    assert_eq!(rows.len(), advice.len());
    for (row, v) in rows.iter().zip(&advice) {
        assert_eq!(row[0], crate::host_noise::html_escaped(&v.cause));
        assert_eq!(row[3], v.remedy.kind.as_str());
        assert_eq!(row[2], crate::host_noise::html_escaped(&v.remedy.change));
    }
    assert_usage_error(
        ["explain", "--advise", "--json", f.to_str().unwrap()],
        &["--advise", "--json"],
    );
}

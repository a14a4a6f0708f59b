use super::entry::Line;
use super::*;

/// A fresh directory under the temporary directory, removed when dropped.
struct Tmp(PathBuf);
impl Tmp {
    fn new(tag: &str) -> Tmp {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "latlab-journal-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&p).unwrap();
        Tmp(p)
    }
    fn file(&self, name: &str, content: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, content).unwrap();
        p
    }
}
impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap().trim().to_string()
}

#[test]
fn a_file_change_is_journaled_before_and_undone_when_dropped() {
    let t = Tmp::new("drop");
    let knob = t.file("knob", "950000\n");
    let j = Journal::in_dir(&t.0.join("j"));
    let c = j.write_file(&knob, "-1").unwrap().expect("a change");
    assert_eq!(read(&knob), "-1");
    let text = std::fs::read_to_string(j.path()).unwrap();
    assert_eq!(
        entry::pending(&text),
        vec![(1, c.entry().clone())],
        "the journal on disk holds the change"
    );
    drop(c);
    assert_eq!(read(&knob), "950000");
    assert!(!j.path().exists(), "a journal with nothing open is removed");
    assert!(
        j.write_file(&knob, "950000").unwrap().is_none(),
        "no change"
    );
    assert!(!j.path().exists());
}

#[test]
fn restore_all_undoes_newest_first_and_a_value_set_meanwhile_stays() {
    let t = Tmp::new("all");
    let knob = t.file("knob", "a");
    let other = t.file("other", "1");
    let j = Journal::in_dir(&t.0.join("j"));
    let c1 = j.write_file(&knob, "b").unwrap().unwrap();
    let c2 = j.write_file(&knob, "c").unwrap().unwrap();
    let c3 = j.write_file(&other, "0").unwrap().unwrap();
    std::fs::write(&other, "7").unwrap();
    let done = j.restore_all();
    assert_eq!(read(&knob), "a", "{done:?}");
    assert_eq!(read(&other), "7", "somebody else's value stays: {done:?}");
    assert!(done[0].as_ref().unwrap().contains("left at 7"), "{done:?}");
    assert!(j.open_changes().is_empty());
    // the guards find their changes undone and write nothing
    std::fs::write(&knob, "z").unwrap();
    drop((c1, c2, c3));
    assert_eq!(read(&knob), "z");
}

#[test]
fn a_live_journal_is_left_alone_and_a_dead_ones_changes_are_undone() {
    let t = Tmp::new("dead");
    let dir = t.0.join("j");
    let knob = t.file("knob", "950000");
    let j = Journal::in_dir(&dir);
    let c = j.write_file(&knob, "-1").unwrap().unwrap();
    assert!(replay_dead(&dir).is_empty(), "this process holds its lock");
    assert_eq!(read(&knob), "-1");
    // what a SIGKILLed owner leaves: its lines, no lock (another pid's name)
    let text = std::fs::read_to_string(j.path()).unwrap();
    let dead = dir.join("4000000.journal");
    std::fs::write(&dead, &text).unwrap();
    let back = replay_dead(&dir);
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].pid, Some(4_000_000));
    assert_eq!(read(&knob), "950000");
    assert!(!dead.exists());
    assert!(
        back[0].line().contains("latlab process 4000000")
            && back[0].line().contains("back to 950000"),
        "{}",
        back[0].line()
    );
    assert!(replay_dead(&dir).is_empty(), "replayed once");
    drop(c);
}

#[test]
fn a_failed_write_leaves_nothing_open() {
    let t = Tmp::new("fail");
    let j = Journal::in_dir(&t.0.join("j"));
    assert!(j.write_file(Path::new("/proc/version"), "x").is_err());
    assert!(j.open_changes().is_empty());
    assert!(!j.path().exists());
    assert!(j
        .write_file(Path::new("/nonexistent/latlab/knob"), "1")
        .is_err());
}

#[test]
fn a_command_undoes_its_change_and_a_read_back_value_is_expected() {
    let t = Tmp::new("cmd");
    let flag = t.file("flag", "on");
    let j = Journal::in_dir(&t.0.join("j"));
    let c = j
        .command(
            "offload off",
            vec![
                "sh".into(),
                "-c".into(),
                format!("echo on > {}", flag.display()),
            ],
        )
        .unwrap();
    std::fs::write(&flag, "off").unwrap();
    assert_eq!(c.restore().unwrap().unwrap(), "offload off undone");
    assert_eq!(read(&flag), "on");
    // an undo that fails says so
    let bad = j.command("nothing", vec!["false".into()]).unwrap();
    assert!(bad.restore().unwrap_err().contains("NOT undone"));
    // a file that reads back in its own spelling: the undo expects that spelling
    let text = Line::Change {
        seq: 1,
        entry: Entry::File {
            path: flag.clone(),
            old: "3".into(),
            set: "1".into(),
        },
    }
    .to_text()
        + &Line::Set {
            seq: 1,
            set: "off".into(),
        }
        .to_text();
    std::fs::write(t.0.join("j").join("4000001.journal"), text).unwrap();
    std::fs::write(&flag, "off").unwrap();
    replay_dead(&t.0.join("j"));
    assert_eq!(read(&flag), "3");
}

#[test]
fn a_threads_affinity_is_restored() {
    let allowed = crate::sched::allowed_cpus();
    if allowed.len() < 2 {
        eprintln!("SKIP a_threads_affinity_is_restored: needs two CPUs to choose from");
        return;
    }
    let t = Tmp::new("aff");
    let j = Journal::in_dir(&t.0.join("j"));
    let (tx, rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let h = std::thread::spawn(move || {
        // SAFETY: gettid has no arguments and cannot fail.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
        tx.send(tid).unwrap();
        let _ = stop_rx.recv();
    });
    let tid = rx.recv().unwrap();
    let c = j
        .set_affinity(tid, &allowed[..1])
        .unwrap()
        .expect("changed");
    assert_eq!(crate::sched::task_affinity(tid).unwrap(), allowed[..1]);
    assert!(c.entry().describe().starts_with("affinity of "));
    drop(c);
    assert_eq!(crate::sched::task_affinity(tid).unwrap(), allowed);
    stop_tx.send(()).unwrap();
    h.join().unwrap();
}

//! `latlab host isolate` and the `--isolate` flag of measuring commands: plan the
//! changes, list them (`--dry-run`) or make them through the undo journal, and undo them.

use crate::args::IsolateArgs;
use crate::exit::{usage, Refused};
use latlab_sys::isolate::{self, Isolation, Plan};
use latlab_sys::journal::{self, Journal};

/// The plan for `cpus`, or a usage error naming `flag` (offline CPU, no housekeeping).
fn plan(cpus: &[u32], flag: &str) -> anyhow::Result<Plan> {
    isolate::plan_here(cpus).map_err(|e| {
        let line = e.to_string();
        usage(line.replacen("--isolate", flag, 1))
    })
}

/// The lines `--dry-run` prints.
fn plan_lines(p: &Plan) -> Vec<String> {
    let l = latlab_sys::sched::format_cpu_list;
    let mut v = vec![format!(
        "isolating CPU{} {} (housekeeping {}): {} change{}",
        if p.cpus.len() > 1 { "s" } else { "" },
        l(&p.cpus),
        l(&p.housekeeping),
        p.steps.len(),
        if p.steps.len() == 1 { "" } else { "s" }
    )];
    v.extend(p.steps.iter().map(|s| format!("  {}", s.describe())));
    v.push(format!(
        "boot-only (advice, never applied): {}",
        p.boot_advice.join(" ")
    ));
    v
}

/// Isolates `cpus` for a measuring command's run (`--isolate`): the changes stay until
/// the returned guard is dropped (or a signal, or the next latlab command after SIGKILL,
/// undoes them).
pub fn engage(cpus: &[u32], quiet: bool) -> anyhow::Result<Isolation> {
    engage_as(cpus, "--isolate", quiet)
}

fn engage_as(cpus: &[u32], flag: &str, quiet: bool) -> anyhow::Result<Isolation> {
    let p = plan(cpus, flag)?;
    if !latlab_sys::netns::is_root() {
        return Err(Refused(format!(
            "{flag} needs root (it moves IRQs, workqueues and tasks off the CPUs); `latlab host isolate --cpus LIST --dry-run` lists the changes without it"
        ))
        .into());
    }
    crate::interrupt::undo_journal_on_signal()?;
    let iso = isolate::apply(&p, &Journal::process())?;
    if !quiet {
        eprintln!("latlab: {}", summary(&iso));
    }
    Ok(iso)
}

fn summary(iso: &Isolation) -> String {
    let r = iso.record();
    let mut s = r.summary();
    if !r.refused.is_empty() {
        s.push_str(&format!(" (refused: {})", r.refused.join("; ")));
    }
    s
}

/// An isolation undone by [`release`] when dropped.
pub struct Released(pub Isolation);

impl Drop for Released {
    fn drop(&mut self) {
        let iso = std::mem::replace(&mut self.0, Isolation::empty());
        release(iso);
    }
}

/// Undoes an isolation, saying on stderr what could not be undone.
pub fn release(iso: Isolation) {
    for r in iso.restore() {
        if let Err(e) = r {
            eprintln!("latlab: {e}");
        }
    }
}

/// `latlab host isolate`.
pub fn run(a: IsolateArgs) -> anyhow::Result<()> {
    if a.undo {
        if !latlab_sys::netns::is_root() {
            return Err(Refused("host isolate --undo needs root".into()).into());
        }
        let done = journal::replay_dead(&journal::dir());
        if done.is_empty() {
            println!("nothing to undo: no latlab process ended with changes left");
        }
        for r in done {
            println!("{}", r.line());
        }
        return Ok(());
    }
    let cpus = a.cpus.expect("clap requires --cpus without --undo").0;
    let p = plan(&cpus, "--cpus")?;
    if a.dry_run {
        for l in plan_lines(&p) {
            println!("{l}");
        }
        return Ok(());
    }
    let Some((program, args)) = a.command.split_first() else {
        return Err(usage(
            "host isolate: no command; give one after `--` (e.g. `latlab host isolate --cpus 1 -- CMD …`), or --dry-run",
        ));
    };
    let iso = engage_as(&cpus, "host isolate --cpus", false)?;
    let status = std::process::Command::new(program).args(args).status();
    release(iso);
    let status = status.map_err(|e| anyhow::anyhow!("{}: {e}", program.to_string_lossy()))?;
    use std::os::unix::process::ExitStatusExt as _;
    std::process::exit(
        status
            .code()
            .or_else(|| status.signal().map(|s| 128 + s))
            .unwrap_or(1),
    )
}

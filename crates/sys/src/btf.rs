//! The running kernel's BTF (`/sys/kernel/btf/vmlinux`), decoded by
//! [`latlab_core::btf`]: where `task_struct`'s fields lie on this kernel, for BPF programs
//! on raw tracepoints (which receive task pointers, not their fields).

use latlab_core::btf::{Btf, Member};

/// Where the kernel exports its own BTF.
pub const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

/// The running kernel's BTF blob (a few MiB; `CONFIG_DEBUG_INFO_BTF`).
pub fn vmlinux() -> std::io::Result<Vec<u8>> {
    std::fs::read(VMLINUX_BTF)
}

/// The `task_struct` fields a switch record needs, on this kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskFields {
    /// `pid` (the thread id).
    pub pid: Member,
    /// `comm` (the command name, 16 bytes with its NUL).
    pub comm: Member,
    /// `prio` (kernel priority: 0–99 real-time, 100–139 normal).
    pub prio: Member,
    /// `__state` (the state a switch's `prev_state` reports).
    pub state: Member,
}

/// Finds [`TaskFields`] in a BTF blob; the error names the first field missing.
pub fn task_fields(btf: &Btf<'_>) -> Result<TaskFields, &'static str> {
    let f = |name: &'static str| btf.member("task_struct", name).ok_or(name);
    Ok(TaskFields {
        pid: f("pid")?,
        comm: f("comm")?,
        prio: f("prio")?,
        state: f("__state")?,
    })
}

/// Every kernel field the BPF recorder reads ([`crate::ktrace`]), on this kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecorderFields {
    /// The task's.
    pub task: TaskFields,
    /// `task_struct.exit_state` (`EXIT_ZOMBIE`/`EXIT_DEAD` of a task switching out for the
    /// last time).
    pub exit_state: Member,
    /// `irqaction.name` (a `const char *`).
    pub irq_name: Member,
    /// `hrtimer.function`.
    pub hrtimer_function: Member,
    /// `work_struct.func`.
    pub work_func: Member,
}

/// Finds [`RecorderFields`]; the error names the first one missing.
pub fn recorder_fields(btf: &Btf<'_>) -> Result<RecorderFields, &'static str> {
    let f = |s: &'static str, m: &'static str, what: &'static str| btf.member(s, m).ok_or(what);
    Ok(RecorderFields {
        task: task_fields(btf)?,
        exit_state: f("task_struct", "exit_state", "task_struct.exit_state")?,
        irq_name: f("irqaction", "name", "irqaction.name")?,
        hrtimer_function: f("hrtimer", "function", "hrtimer.function")?,
        work_func: f("work_struct", "func", "work_struct.func")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pahole -C task_struct` output: each wanted member's `/* offset size */`.
    fn pahole_offsets(text: &str, names: &[&str]) -> Vec<Option<(u32, u32)>> {
        names
            .iter()
            .map(|n| {
                text.lines().find_map(|l| {
                    let (decl, comment) = l.split_once("/*")?;
                    let decl = decl.trim().trim_end_matches(';');
                    let field = decl
                        .rsplit(|c: char| c.is_whitespace() || c == '*')
                        .next()?;
                    (field.split('[').next()? == *n).then_some(())?;
                    let mut nums = comment.split_whitespace().filter_map(|w| w.parse().ok());
                    Some((nums.next()?, nums.next()?))
                })
            })
            .collect()
    }

    #[test]
    fn pahole_lines_are_read() {
        let text = "struct task_struct {\n\tunsigned int               __state;              /*    24     4 */\n\tchar                       comm[16];             /*  1752    16 */\n\tstruct task_struct *       parent;               /*  1400     8 */\n";
        assert_eq!(
            pahole_offsets(text, &["__state", "comm", "parent", "pid"]),
            vec![Some((24, 4)), Some((1752, 16)), Some((1400, 8)), None]
        );
    }

    /// The running kernel's task_struct as BTF describes it: the sizes the tracepoints'
    /// own format files give for the same fields (pid_t 4, comm 16, prio 4), the state
    /// word 4 bytes; and where pahole (Debian dwarves, in `make test`'s packages) is
    /// installed, exactly the offsets it reads from the same BTF.
    #[test]
    fn the_running_kernels_task_struct_is_found() {
        let Ok(bytes) = vmlinux() else {
            println!("SKIP the_running_kernels_task_struct_is_found: no {VMLINUX_BTF} (kernel without CONFIG_DEBUG_INFO_BTF)");
            return;
        };
        let btf = Btf::parse(&bytes).expect("the kernel's BTF parses");
        assert!(btf.len() > 10_000, "{} types", btf.len());
        let r = recorder_fields(&btf).expect("the recorder's fields");
        assert_eq!(
            (
                r.exit_state.size,
                r.irq_name.size,
                r.hrtimer_function.size,
                r.work_func.size
            ),
            (4, 8, 8, 8),
            "an int and three pointers"
        );
        let t = r.task;
        assert_eq!(
            (t.pid.size, t.comm.size, t.prio.size, t.state.size),
            (4, 16, 4, 4)
        );
        assert!(!t.pid.bitfield && !t.comm.bitfield);
        let Ok(out) = std::process::Command::new("pahole")
            .args(["-C", "task_struct", VMLINUX_BTF])
            .output()
        else {
            println!("SKIP the offsets' cross-check against pahole: pahole not installed (Debian dwarves)");
            return;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let ours: Vec<_> = [t.pid, t.comm, t.prio, t.state]
            .iter()
            .map(|m| Some((m.offset, m.size)))
            .collect();
        assert_eq!(
            pahole_offsets(&text, &["pid", "comm", "prio", "__state"]),
            ours,
            "{text}"
        );
    }
}

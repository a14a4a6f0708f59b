//! The classes of cause, their one spelling as a person reads them, and which threads a
//! measurement watches: shared by the timeline and the rules of [`crate::runnable`]. Pure.

/// The classes of cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// A device IRQ handler (name: the handler's name).
    Irq,
    /// A softirq (name: the vector, `NET_RX`, `TIMER`, …).
    Softirq,
    /// The timer tick or an hrtimer (name: the hrtimer function or `local_timer`).
    Timer,
    /// An inter-processor interrupt (name: `reschedule`, `call_function`, …).
    Ipi,
    /// The thread was switched out for another task (name: its comm).
    Preempted,
    /// A workqueue item (name: the work function).
    Workqueue,
    /// A non-maskable interrupt (name: the handler).
    Nmi,
    /// The thread lost the CPU with no kernel event on it: hypervisor, SMI, firmware.
    OutsideKernel,
    /// Time around kernel events that no interval covers (entry/exit overhead, or a
    /// cause the recorder does not see).
    Unexplained,
    /// A real-time thread was switched out while runnable and the idle task or a
    /// `SCHED_OTHER` task ran until it came back: the kernel's real-time bandwidth limit
    /// (`kernel.sched_rt_runtime_us`) or the fair deadline server (no name).
    RtThrottling,
    /// A watched thread was switched out while runnable for another watched thread of the
    /// measurement on the same CPU (name: the one that ran).
    OwnThread,
    /// Softirq work deferred to `ksoftirqd` waited while another task held its CPU
    /// (name: the task it waited behind).
    SoftirqDeferred,
}

impl Class {
    /// The name stored in results and printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Irq => "irq",
            Class::Softirq => "softirq",
            Class::Timer => "timer",
            Class::Ipi => "ipi",
            Class::Preempted => "preempted",
            Class::Workqueue => "workqueue",
            Class::Nmi => "nmi",
            Class::OutsideKernel => "outside_kernel",
            Class::Unexplained => "unexplained",
            Class::RtThrottling => "rt_throttling",
            Class::OwnThread => "own_thread",
            Class::SoftirqDeferred => "softirq_deferred",
        }
    }
}

/// A cause as a person reads it, from its stored class and name: `irq (virtio1-req.0)`,
/// `preempted by task (hog)`, `outside the kernel`, `outside the kernel (vCPU not
/// running)`, `rt throttling`, `own thread (latlab-probe-tx) on the same CPU`,
/// `softirq deferred to ksoftirqd (behind latlab-nf-a)`. The one spelling of every label
/// (the timeline's causes and the stored ones print the same).
pub fn label(class: &str, name: &str) -> String {
    match (class, name) {
        ("preempted", n) => format!("preempted by task ({n})"),
        ("outside_kernel", "") => "outside the kernel".to_string(),
        ("outside_kernel", n) => format!("outside the kernel ({n})"),
        ("unexplained", _) => "unexplained".to_string(),
        ("rt_throttling", _) => "rt throttling".to_string(),
        ("own_thread", n) => format!("own thread ({n}) on the same CPU"),
        ("softirq_deferred", n) => format!("softirq deferred to ksoftirqd (behind {n})"),
        (class, "") => class.to_string(),
        (class, n) => format!("{class} ({n})"),
    }
}

/// The threads of a measurement that spans several threads and CPUs (a probe's TX and RX
/// threads, a network function in another process): a task is *watched* when its pid is
/// listed or its comm starts with one of the prefixes (`latlab` names every thread of
/// latlab's own). Used by [`crate::timeline::build_watching`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Watch {
    /// Thread ids.
    pub tids: Vec<i32>,
    /// Comm prefixes.
    pub comm_prefixes: Vec<String>,
}

impl Watch {
    /// Whether `t` is one of the measurement's threads.
    pub fn watches(&self, t: &crate::decode::Task) -> bool {
        self.tids.contains(&t.pid) || self.comm_prefixes.iter().any(|p| t.comm.starts_with(p))
    }
}

//! What a recorder records and how: the events, the reader, the filters.

use super::bpf::SwitchDrop;

/// The events the attribution uses, recorded by default, as `group/name`. [`events`]
/// with `all` adds [`EXTRA_EVENTS`].
pub const DEFAULT_EVENTS: &[&str] = &[
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "irq/softirq_entry",
    "irq/softirq_exit",
    "irq_vectors/local_timer_entry",
    "irq_vectors/local_timer_exit",
    "irq_vectors/reschedule_entry",
    "irq_vectors/reschedule_exit",
    "irq_vectors/call_function_entry",
    "irq_vectors/call_function_exit",
    "irq_vectors/call_function_single_entry",
    "irq_vectors/call_function_single_exit",
    "irq_vectors/irq_work_entry",
    "irq_vectors/irq_work_exit",
    "irq_vectors/x86_platform_ipi_entry",
    "irq_vectors/x86_platform_ipi_exit",
    "nmi/nmi_handler",
    "sched/sched_switch",
    "timer/hrtimer_expire_entry",
    "timer/hrtimer_expire_exit",
    "workqueue/workqueue_execute_start",
    "workqueue/workqueue_execute_end",
];

/// The events recorded only when asked (`--explain-events all`): the attribution does
/// not use them, and they are two more tracepoint hits per wake-up and per NAPI poll,
/// the busiest events of a ping-pong.
pub const EXTRA_EVENTS: &[&str] = &["sched/sched_wakeup", "napi/napi_poll"];

/// The events to record: [`DEFAULT_EVENTS`], plus [`EXTRA_EVENTS`] when `all`.
pub fn events(all: bool) -> Vec<String> {
    let extra = if all { EXTRA_EVENTS } else { &[] };
    DEFAULT_EVENTS
        .iter()
        .chain(extra)
        .map(|e| (*e).to_string())
        .collect()
}

/// How the recorder reads the ring.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReaderKind {
    /// BPF programs on the raw tracepoints writing into a ring per CPU ([`super::bpf`]);
    /// falls back to [`ReaderKind::Stream`] (saying why in [`super::Recording::reader`]) when
    /// BPF cannot be had or an event has no BPF program.
    #[default]
    Bpf,
    /// Stream `trace_pipe_raw` during the run (falls back to [`ReaderKind::Text`]).
    Stream,
    /// Read each CPU's `trace` text after the run.
    Text,
}

/// What to record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KtraceConfig {
    /// CPUs to trace (`tracing_cpumask`).
    pub cpus: Vec<u32>,
    /// Ring-buffer size per CPU, KiB (`buffer_size_kb`).
    pub buffer_kb: u32,
    /// Events as `group/name`.
    pub events: Vec<String>,
    /// How to read the ring.
    pub reader: ReaderKind,
    /// Kernel-side filters, as (`group/name`, the event's `filter` text): the kernel drops
    /// an event its filter rejects before it reaches the ring. Applied to enabled events
    /// only.
    pub filters: Vec<(String, String)>,
    /// The BPF recorder's form of `filters`: the `sched_switch`es between the idle task
    /// and these threads are dropped. With [`ReaderKind::Bpf`], `filters` other than this
    /// rule's tracefs text cannot be said in BPF, so the recorder falls back to tracefs
    /// when `filters` is not empty and this is `None`.
    pub drop_idle_switches: Option<SwitchDrop>,
}

impl Default for KtraceConfig {
    fn default() -> Self {
        KtraceConfig {
            cpus: Vec::new(),
            buffer_kb: 32768,
            events: events(false),
            reader: ReaderKind::Bpf,
            filters: Vec::new(),
            drop_idle_switches: None,
        }
    }
}

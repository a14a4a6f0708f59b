//! # latlab-explain
//!
//! Every gap and tail sample gets its cause, from kernel events on the same TSC timeline
//! (issue 13).
//!
//! - [`decode`]: the text of a tracefs `trace` file as typed events;
//! - [`timeline`]: per-CPU cause intervals (IRQ, softirq, timer, IPI, NMI, workqueue,
//!   preemption of a watched thread), nested, innermost wins;
//! - [`gaps`]: a preallocated gap recorder for spinning loops;
//! - [`render`]: an attribution as terminal text;
//! - [`sections`]: the report's "Why the tail" section, for any result with an attribution;
//! - [`session`]: the kernel half of `--explain` as every command uses it (start, finish,
//!   attribute; a missing kernel half is a notice, never an error);
//! - [`threads`]: windows of several watched threads attributed as one;
//! - [`attribute`]: each window's time split over the causes under it, aggregated into the
//!   result file's [`latlab_core::results::Attribution`].
//!
//! Recording is `latlab_sys::ktrace`; [`kernel_timeline`] turns its recording into a
//! timeline.
#![deny(unsafe_code)]

pub mod attribute;
pub mod decode;
pub mod gaps;
pub mod kernel;
pub mod render;
pub mod sections;
pub mod session;
pub mod threads;
pub mod timeline;

pub use attribute::{attribute, AttributeOptions, Window, WindowSplit};
pub use gaps::{Gap, GapRecorder};
pub use session::{ExplainOptions, KernelCollected, KernelRequest, KernelSession};
pub use threads::{intervals_under, CauseInterval, ThreadWindow, ThreadsAttributed};
pub use timeline::{Cause, Class, Timeline, TimelineOptions};

pub use kernel::{kernel_timeline, KernelTimeline};

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_sys::ktrace::CpuTrace;
    use latlab_sys::ktrace::Recording;

    #[test]
    fn a_recording_becomes_a_timeline() {
        let rec = Recording {
            cpus: vec![
                CpuTrace {
                    cpu: 1,
                    text: "# tracer: nop\n\
                        a-1 [001] d.h1. 100: irq_handler_entry: irq=36 name=virtio1-req.0\n\
                        a-1 [001] d.h1. 140: irq_handler_exit: irq=36 ret=handled\n\
                        broken line\n"
                        .into(),
                    lost: 0,
                },
                CpuTrace {
                    cpu: 0,
                    text: "CPU:0 [LOST 4 EVENTS]\n".into(),
                    lost: 0,
                },
            ],
            enabled: vec![],
            missing: vec![],
            mounted_tracefs: false,
        };
        let kt = kernel_timeline(
            &rec,
            &TimelineOptions {
                window: (0, 1000),
                tid: None,
                tsc_hz: 1_000_000_000,
                cpus: vec![],
            },
        );
        assert_eq!((kt.events, kt.malformed, kt.lost), (2, 1, 4));
        assert_eq!(kt.timeline.cpus.len(), 2);
        let c1 = kt.timeline.cpu(1).unwrap();
        assert_eq!(
            c1.intervals[0].cause,
            Cause::new(Class::Irq, "virtio1-req.0")
        );
    }
}

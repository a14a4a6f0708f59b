//! A recording decoded into a timeline (the glue between `latlab_sys::ktrace` and
//! [`crate::timeline`]).

use crate::decode;
use crate::timeline::{self, Timeline, TimelineOptions};
use latlab_sys::ktrace::Recording;

/// A recording decoded into a timeline.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelTimeline {
    /// The causes per CPU.
    pub timeline: Timeline,
    /// Events decoded.
    pub events: u64,
    /// Lines that did not decode.
    pub malformed: u64,
    /// Events lost (the kernel's counters and the trace's own markers).
    pub lost: u64,
}

/// Decodes every CPU's text of `rec` and builds the timeline.
pub fn kernel_timeline(rec: &Recording, opts: &TimelineOptions) -> KernelTimeline {
    let mut events = Vec::new();
    let (mut malformed, mut marked) = (0, 0);
    for c in &rec.cpus {
        let d = decode::decode(&c.text);
        events.extend(d.events);
        malformed += d.malformed;
        marked += d.lost;
    }
    let mut o = opts.clone();
    o.cpus.extend(rec.cpus.iter().map(|c| c.cpu));
    KernelTimeline {
        timeline: timeline::build(&events, &o),
        events: events.len() as u64,
        malformed,
        lost: rec.lost().max(marked),
    }
}

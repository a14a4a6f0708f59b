//! The kernel half of `--explain` as one object every measuring command uses the same way:
//! start the recorder before the measured loop, stop it after, attribute the windows.
//!
//! ```text
//! let ks = KernelSession::start(&KernelRequest { .. }, &mut notice);   // before the run
//! … the measured loop, recording its own gaps / slow samples as raw-TSC windows …
//! let got = ks.finish(&mut notice);                                     // after the run
//! let (attribution, splits) = got.attribute(&windows, &opts);
//! ```
//!
//! When kernel events cannot be had (not root, no tracefs, no `x86-tsc`, a timebase that
//! is not the TSC, or the user said no) the session says why once through `notice`, the
//! run carries on, and the attribution is the gap half alone with `unavailable` set: every
//! window's excess is *unexplained* and the output says which causes cannot be told apart.

use crate::attribute::{attribute, AttributeOptions, Window, WindowSplit};
use crate::path::{attribute_paths, PathWindow, Stall};
use crate::recording::{kernel_timeline, kernel_timeline_watching, KernelTimeline};
use crate::timeline::{Class, Timeline, TimelineOptions, Watch};
use latlab_core::results::{Attribution, CpuSteal};
use latlab_sys::ktrace::{KtraceConfig, ReaderKind, Recorder, Recording, SwitchDrop};

/// What a command asks of the kernel half.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelRequest {
    /// Record kernel events at all (`false`: the user asked for the gap half only; the
    /// reason below is recorded as is, and nothing is printed).
    pub enabled: bool,
    /// Why not, when `enabled` is false (e.g. "--no-kernel was given").
    pub disabled_reason: String,
    /// `Some(reason)` when the command's clock is not the TSC: kernel events carry TSC
    /// stamps, so they cannot be placed on another timebase.
    pub not_tsc: Option<String>,
    /// CPUs to trace: those carrying the measured work, plus any others worth a
    /// cross-check (a simultaneous stall on every CPU points at the hypervisor).
    pub cpus: Vec<u32>,
    /// Ring buffer per CPU, KiB.
    pub buffer_kb: u32,
    /// Record every event the recorder knows (`sched_wakeup` and `napi_poll` too, which
    /// the attribution does not use), not only the attribution's; `--explain-events all`.
    pub all_events: bool,
    /// Drop in the kernel the `sched_switch`es between the idle task and these threads
    /// (see [`crate::filter`]); `None` records every switch.
    pub drop_idle_switches: Option<Watch>,
    /// Record through a tracefs instance even where the BPF recorder could be used
    /// (`--explain-recorder tracefs`, for comparing the two).
    pub tracefs: bool,
}

impl Default for KernelRequest {
    fn default() -> Self {
        KernelRequest {
            enabled: true,
            disabled_reason: String::new(),
            not_tsc: None,
            cpus: Vec::new(),
            buffer_kb: KtraceConfig::default().buffer_kb,
            all_events: false,
            drop_idle_switches: None,
            tracefs: false,
        }
    }
}

/// A running kernel half: the recorder, or why there is none.
#[derive(Debug)]
pub struct KernelSession {
    recorder: Option<Recorder>,
    unavailable: Option<String>,
    cpus: Vec<u32>,
    idle_switches_dropped: bool,
    steal_before: Vec<(u32, u64)>,
}

/// The line a command prints when kernel events cannot be had and it carries on.
pub fn unavailable_notice(why: &str) -> String {
    format!(
        "kernel events unavailable: {why}; measuring gaps only (every gap's cause is unexplained)"
    )
}

impl KernelSession {
    /// Starts recording (or records why not). Never fails: a missing kernel half is a
    /// notice and an `unavailable` reason, not an error.
    pub fn start(req: &KernelRequest, notice: &mut dyn FnMut(&str)) -> KernelSession {
        let mut s = KernelSession {
            recorder: None,
            unavailable: None,
            cpus: req.cpus.clone(),
            idle_switches_dropped: req.drop_idle_switches.is_some(),
            steal_before: latlab_sys::host::steal_ns(),
        };
        if !req.enabled {
            s.unavailable = Some(req.disabled_reason.clone());
        } else if let Some(why) = &req.not_tsc {
            let why = format!("the timebase is not the TSC ({why})");
            notice(&unavailable_notice(&why));
            s.unavailable = Some(why);
        } else {
            let cfg = KtraceConfig {
                cpus: req.cpus.clone(),
                buffer_kb: req.buffer_kb,
                events: latlab_sys::ktrace::events(req.all_events),
                filters: req
                    .drop_idle_switches
                    .as_ref()
                    .and_then(crate::filter::idle_switch_filter)
                    .map(|f| ("sched/sched_switch".to_string(), f))
                    .into_iter()
                    .collect(),
                drop_idle_switches: req.drop_idle_switches.as_ref().map(|w| SwitchDrop {
                    tids: w.tids.clone(),
                    comm_prefixes: w.comm_prefixes.clone(),
                }),
                reader: if req.tracefs {
                    ReaderKind::Stream
                } else {
                    ReaderKind::Bpf
                },
            };
            match Recorder::start(&cfg) {
                Ok(r) => s.recorder = Some(r),
                Err(e) => {
                    notice(&unavailable_notice(&e.to_string()));
                    s.unavailable = Some(e.to_string());
                }
            }
        }
        s
    }

    /// Whether kernel events are being recorded.
    pub fn recording(&self) -> bool {
        self.recorder.is_some()
    }

    /// Stops recording and reads what was recorded (removing the tracefs instance).
    pub fn finish(self, notice: &mut dyn FnMut(&str)) -> KernelCollected {
        let mut unavailable = self.unavailable;
        let recording = match self.recorder.map(Recorder::stop) {
            Some(Ok(r)) => Some(r),
            Some(Err(e)) => {
                notice(&unavailable_notice(&e.to_string()));
                unavailable = Some(e.to_string());
                None
            }
            None => None,
        };
        KernelCollected {
            recording,
            unavailable,
            cpus: self.cpus,
            idle_switches_dropped: self.idle_switches_dropped,
            steal: CpuSteal::between(&self.steal_before, &latlab_sys::host::steal_ns()),
        }
    }
}

/// What a finished session holds.
#[derive(Clone, Debug, Default)]
pub struct KernelCollected {
    /// The raw recording, when there is one.
    pub recording: Option<Recording>,
    /// Why there is none.
    pub unavailable: Option<String>,
    /// The CPUs that were asked for.
    pub cpus: Vec<u32>,
    /// The switches between the idle task and the watched threads were dropped in the
    /// kernel: who ran is then not known from the switches alone.
    pub idle_switches_dropped: bool,
    /// Steal time per CPU over the session (`/proc/stat` at its finish less at its
    /// start).
    pub steal: Vec<CpuSteal>,
}

/// How to attribute windows with [`KernelCollected::attribute`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExplainOptions {
    /// The run's span, raw TSC (events outside it are ignored).
    pub window: (u64, u64),
    /// The measuring thread whose switch-outs are *preempted by task* (None: no thread).
    pub tid: Option<i32>,
    /// TSC rate, Hz.
    pub tsc_hz: u64,
    /// Baseline of a window, ticks.
    pub base_ticks: u64,
    /// How many worst windows to keep.
    pub worst: usize,
}

impl KernelCollected {
    /// Whether the tracefs mount was made by this run.
    pub fn mounted_tracefs(&self) -> bool {
        self.recording.as_ref().is_some_and(|r| r.mounted_tracefs)
    }

    /// The recording instance's `record-cmd` option (`off`, or `on (why)`); empty without
    /// a recording.
    pub fn record_cmd(&self) -> String {
        self.recording
            .as_ref()
            .map_or_else(String::new, |r| r.record_cmd.clone())
    }

    /// The recording as a timeline, when there is one.
    pub fn timeline(&self, o: &ExplainOptions) -> Option<KernelTimeline> {
        let topts = TimelineOptions {
            window: o.window,
            tid: o.tid,
            tsc_hz: o.tsc_hz,
            cpus: self.cpus.clone(),
            complete: !self.idle_switches_dropped,
        };
        self.recording
            .as_ref()
            .map(|rec| kernel_timeline(rec, &topts))
    }

    /// The attribution options of `o` with this session's completeness (`lost` events,
    /// the missing ones, why there are none).
    pub(crate) fn attribute_options(&self, o: &ExplainOptions, lost: u64) -> AttributeOptions {
        AttributeOptions {
            tsc_hz: o.tsc_hz,
            base_ticks: o.base_ticks,
            worst: o.worst,
            lost_events: lost,
            missing_events: self
                .recording
                .as_ref()
                .map(|r| r.missing.clone())
                .unwrap_or_default(),
            unavailable: self.unavailable.clone(),
        }
    }

    /// As [`KernelCollected::attribute`] for windows carried by several CPUs and threads
    /// (a probe's trip; the rule of [`crate::path`]): `watch` names the measurement's
    /// threads (`o.tid` is ignored), `stalls` are their loops' own gaps.
    pub fn attribute_paths(
        &self,
        windows: &[PathWindow],
        stalls: &[Stall],
        watch: &Watch,
        o: &ExplainOptions,
    ) -> (Attribution, Vec<WindowSplit>, Option<KernelTimeline>) {
        let topts = TimelineOptions {
            window: o.window,
            tid: None,
            tsc_hz: o.tsc_hz,
            cpus: self.cpus.clone(),
            complete: !self.idle_switches_dropped,
        };
        let kt = self
            .recording
            .as_ref()
            .map(|rec| kernel_timeline_watching(rec, &topts, watch));
        let aopts = self.attribute_options(o, kt.as_ref().map_or(0, |k| k.lost));
        let (mut a, splits) =
            attribute_paths(windows, kt.as_ref().map(|k| &k.timeline), stalls, &aopts);
        a.reader = kt.as_ref().map(|k| k.reader.clone());
        a.steal = self.steal_beside(kt.as_ref().map(|k| &k.timeline), o.tsc_hz);
        (a, splits, kt)
    }

    /// Splits every window over the causes under it and aggregates the result file's
    /// attribution; also returns the timeline used (for event counts) and each split.
    pub fn attribute(
        &self,
        windows: &[Window],
        o: &ExplainOptions,
    ) -> (Attribution, Vec<WindowSplit>, Option<KernelTimeline>) {
        let kt = self.timeline(o);
        let aopts = self.attribute_options(o, kt.as_ref().map_or(0, |k| k.lost));
        let (mut a, splits) = attribute(windows, kt.as_ref().map(|k| &k.timeline), &aopts);
        a.reader = kt.as_ref().map(|k| k.reader.clone());
        a.steal = self.steal_beside(kt.as_ref().map(|k| &k.timeline), o.tsc_hz);
        (a, splits, kt)
    }

    /// The session's steal time per CPU, each with the time `timeline` shows that CPU not
    /// running (*outside the kernel (vCPU not running)*) over the whole run.
    pub fn steal_beside(&self, timeline: Option<&Timeline>, tsc_hz: u64) -> Vec<CpuSteal> {
        self.steal
            .iter()
            .map(|s| {
                let silent: u64 = timeline.and_then(|t| t.cpu(s.cpu)).map_or(0, |c| {
                    c.intervals
                        .iter()
                        .filter(|i| {
                            i.cause.class == Class::OutsideKernel
                                && &*i.cause.name == crate::runnable::VCPU_NOT_RUNNING
                        })
                        .map(|i| i.end - i.start)
                        .sum()
                });
                CpuSteal {
                    silent_ns: crate::attribute::ns(silent, tsc_hz),
                    ..s.clone()
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disabled_session_says_why_without_a_notice_and_leaves_every_gap_unexplained() {
        let mut notices = Vec::new();
        let ks = KernelSession::start(
            &KernelRequest {
                enabled: false,
                disabled_reason: "--no-kernel was given".into(),
                ..KernelRequest::default()
            },
            &mut |n| notices.push(n.to_string()),
        );
        assert!(!ks.recording());
        let got = ks.finish(&mut |n| notices.push(n.to_string()));
        assert!(notices.is_empty(), "{notices:?}");
        let w = [Window {
            cpu: 0,
            start: 100,
            end: 1_100,
        }];
        let (a, splits, kt) = got.attribute(
            &w,
            &ExplainOptions {
                window: (0, 2_000),
                tid: None,
                tsc_hz: 1_000_000_000,
                base_ticks: 100,
                worst: 4,
            },
        );
        assert!(kt.is_none());
        assert!(!a.complete);
        assert_eq!(a.unavailable.as_deref(), Some("--no-kernel was given"));
        assert_eq!(a.windows, 1);
        assert_eq!(a.explained_ns, 0);
        assert_eq!(a.excess_ns, 900);
        assert_eq!(splits[0].excess(), 900);
    }

    #[test]
    fn a_clock_other_than_the_tsc_is_named_once() {
        let mut notices = Vec::new();
        let ks = KernelSession::start(
            &KernelRequest {
                not_tsc: Some("TSC not invariant".into()),
                ..KernelRequest::default()
            },
            &mut |n| notices.push(n.to_string()),
        );
        let got = ks.finish(&mut |n| notices.push(n.to_string()));
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(notices[0].contains("the timebase is not the TSC (TSC not invariant)"));
        assert!(notices[0].contains("measuring gaps only"));
        assert_eq!(
            got.unavailable.as_deref(),
            Some("the timebase is not the TSC (TSC not invariant)")
        );
    }
}

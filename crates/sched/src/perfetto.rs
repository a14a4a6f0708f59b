//! Chrome trace-event JSON for the Perfetto UI (<https://ui.perfetto.dev>): one track per
//! thread and one per CPU, each block of CPU time an `X` slice, deadline misses instant
//! events with their lateness, LAT wakeups a lateness counter. Times are rebased to the
//! run's start and given in microseconds (fractional, so nanoseconds survive), as the
//! format requires whatever `displayTimeUnit` says. A run with `--explain` adds the
//! kernel's view: a track per CPU (process "kernel (latlab explain)") with each cause
//! interval under an attributed window as a slice named by its cause, and each window as
//! a slice on its thread's `explained windows` track, from the result's `data.explain`.

use crate::result::SchedRunData;
use crate::spec::Workload;
use crate::trace::Trace;
use serde_json::{json, Value};

/// Process id of the thread tracks.
const PID_THREADS: u32 = 1;
/// Process id of the CPU tracks.
const PID_CPUS: u32 = 2;
/// Process id of the kernel's tracks (`--explain`): a track per CPU with the cause
/// intervals under the attributed windows.
pub const PID_KERNEL: u32 = 3;

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// The trace-event document of a run. Pure.
pub fn export(d: &SchedRunData, trace: &Trace) -> Value {
    let mut ev: Vec<Value> = Vec::with_capacity(trace.blocks.len() * 2 + 16);
    ev.push(
        json!({"ph":"M","name":"process_name","pid":PID_THREADS,"tid":0,
        "args":{"name":"latlab sched threads"}}),
    );
    ev.push(
        json!({"ph":"M","name":"process_name","pid":PID_CPUS,"tid":0,
        "args":{"name":"CPUs (inferred from rdtscp)"}}),
    );
    for t in &d.threads {
        let id = t.spec.id;
        ev.push(
            json!({"ph":"M","name":"thread_name","pid":PID_THREADS,"tid":id,
            "args":{"name":format!("thread {id}: {} {} {}", t.spec.workload.describe(),
                t.spec.policy_label(), t.spec.timer.name())}}),
        );
        ev.push(
            json!({"ph":"M","name":"thread_sort_index","pid":PID_THREADS,"tid":id,
            "args":{"sort_index":id}}),
        );
    }
    let mut cpus: Vec<u32> = trace.blocks.iter().map(|b| b.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    for c in &cpus {
        ev.push(json!({"ph":"M","name":"thread_name","pid":PID_CPUS,"tid":c,
            "args":{"name":format!("CPU {c}")}}));
    }
    // Every block twice (its thread's track and its CPU's), without the optional `cat`
    // (the same on every slice): the file holds the full detail, at about 100 bytes per
    // slice, written without whitespace.
    for b in &trace.blocks {
        let dur = us(b.end_ns - b.start_ns);
        ev.push(
            json!({"ph":"X","name":"running","pid":PID_THREADS,"tid":b.thread,
            "ts":us(b.start_ns),"dur":dur,"args":{"cpu":b.cpu,"ended_by":format!("{:?}", b.end)}}),
        );
        ev.push(
            json!({"ph":"X","name":format!("thread {}", b.thread),"pid":PID_CPUS,
            "tid":b.cpu,"ts":us(b.start_ns),"dur":dur}),
        );
    }
    for t in &d.threads {
        let id = t.spec.id;
        let cpu_periodic = matches!(t.spec.workload, Workload::CpuPeriodic { .. });
        for a in trace.activations_of(id) {
            match t.spec.workload {
                Workload::Lat { .. } => {
                    ev.push(
                        json!({"ph":"C","name":format!("thread {id} wakeup lateness (us)"),
                        "pid":PID_THREADS,"tid":id,"ts":us(a.start_ns),
                        "args":{"late_us":us(a.start_ns.saturating_sub(a.release_ns))}}),
                    );
                }
                _ if !a.hit(cpu_periodic) && a.deadline_ns <= d.spec.duration_ns => {
                    let late = a.finish_ns.map(|f| us(f.saturating_sub(a.deadline_ns)));
                    ev.push(
                        json!({"ph":"i","s":"t","name":"deadline miss","cat":"deadline",
                        "pid":PID_THREADS,"tid":id,"ts":us(a.deadline_ns),
                        "args":{"activation":a.index,"late_us":late,
                                "cpu_by_deadline_us":us(a.cpu_by_deadline_ns)}}),
                    );
                }
                _ => {}
            }
        }
    }
    if let Some(x) = &d.explain {
        kernel_tracks(x, &mut ev);
    }
    json!({"traceEvents": ev, "displayTimeUnit": "ns",
           "otherData": {"tool":"latlab sched","tsc_hz":d.tsc_hz}})
}

/// The kernel's tracks of an explained run.
fn kernel_tracks(x: &crate::explain::SchedExplain, ev: &mut Vec<Value>) {
    ev.push(
        json!({"ph":"M","name":"process_name","pid":PID_KERNEL,"tid":0,
        "args":{"name":"kernel (latlab explain)"}}),
    );
    let mut cpus: Vec<u32> = x.kernel.iter().map(|k| k.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    for c in &cpus {
        ev.push(
            json!({"ph":"M","name":"thread_name","pid":PID_KERNEL,"tid":c,
            "args":{"name":format!("CPU {c} kernel causes")}}),
        );
    }
    for k in &x.kernel {
        let label = latlab_explain::render::cause_label(&latlab_core::results::CauseTime::new(
            k.class.clone(),
            k.name.clone(),
            1,
            0,
        ));
        ev.push(
            json!({"ph":"X","name":label,"cat":k.class,"pid":PID_KERNEL,"tid":k.cpu,
            "ts":us(k.start_ns),"dur":us(k.end_ns.saturating_sub(k.start_ns))}),
        );
    }
    // the windows themselves, on a track per thread beside the kernel's
    for w in &x.windows {
        let tid = 1000 + w.thread;
        ev.push(
            json!({"ph":"X","name":format!("{:?} window", w.kind).to_lowercase(),
            "cat":"explain","pid":PID_KERNEL,"tid":tid,"ts":us(w.start_ns),
            "dur":us(w.end_ns.saturating_sub(w.start_ns)),
            "args":{"cpu":w.cpu,"top_cause":w.cause,"job":w.job}}),
        );
    }
    let mut threads: Vec<u32> = x.windows.iter().map(|w| w.thread).collect();
    threads.sort_unstable();
    threads.dedup();
    for t in threads {
        ev.push(
            json!({"ph":"M","name":"thread_name","pid":PID_KERNEL,"tid":1000 + t,
            "args":{"name":format!("thread {t} explained windows")}}),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Activation, Block, ThreadRun};
    use crate::recorder::EndReason;
    use crate::spec::{RunSpec, ThreadSpec};

    #[test]
    fn tracks_slices_and_misses() {
        let mut th = ThreadSpec::new(0);
        th.workload = Workload::Periodic {
            amount_ns: 4_000_000,
            period_ns: 5_000_000,
        };
        let spec = RunSpec {
            threads: vec![th.clone()],
            duration_ns: 10_000_000,
            records: 10,
            raw_cycles: false,
            gap_ns: None,
            timer_slack_ns: None,
            dma_latency_us: None,
        };
        let run: ThreadRun = serde_json::from_value(serde_json::json!({
            "spec": th, "tid": 1, "policy": "SCHED_FIFO", "priority": 95, "timer_slack_ns": 0,
            "gap_ns": 40.0, "capacity": 10, "dropped": 0, "migrations": 0, "cpus": [1],
            "activations_dropped": 0, "timerfd_expirations": null, "scan_passes": 0,
            "yields": 0, "voluntary_switches": 0, "involuntary_switches": 0,
            "cpu_received_ns": 0}))
        .unwrap();
        let d = SchedRunData {
            version: 1,
            spec,
            threads: vec![run],
            calibrations: vec![],
            tsc_hz: 1_000_000_000,
            t0_tsc: 0,
            trace_file: "x".into(),
            cpus: 2,
            loadavg: None,
            explain: None,
        };
        let act = |index, finish| Activation {
            index,
            release_ns: index * 5_000_000,
            start_ns: index * 5_000_000,
            finish_ns: Some(finish),
            deadline_ns: (index + 1) * 5_000_000,
            cpu_by_deadline_ns: 4_000_000,
            waited: true,
            frames: 0,
        };
        let trace = Trace {
            blocks: vec![Block {
                thread: 0,
                cpu: 1,
                start_ns: 1500,
                end_ns: 4_001_500,
                end: EndReason::Sleep,
            }],
            activations: vec![(0, act(0, 4_001_500)), (0, act(1, 10_250_000))],
        };
        let v = export(&d, &trace);
        let ev = v["traceEvents"].as_array().unwrap();
        let slices: Vec<_> = ev.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(
            slices.len(),
            2,
            "one slice on the thread track, one on the CPU track"
        );
        assert_eq!(slices[0]["ts"], 1.5);
        assert_eq!(slices[0]["dur"], 4000.0);
        assert_eq!(slices[1]["pid"], PID_CPUS);
        assert!(slices.iter().all(|e| e.get("cat").is_none()));
        let misses: Vec<_> = ev.iter().filter(|e| e["ph"] == "i").collect();
        assert_eq!(misses.len(), 1);
        assert_eq!(misses[0]["args"]["late_us"], 250.0);
        assert!(ev
            .iter()
            .any(|e| e["name"] == "thread_name" && e["pid"] == PID_CPUS));
        assert!(!ev.iter().any(|e| e["pid"] == PID_KERNEL), "no --explain");
        // with --explain: a kernel track per CPU and the windows
        let mut d = d;
        d.explain = Some(crate::explain::SchedExplain {
            windows: vec![crate::explain::ExplainWindow {
                thread: 0,
                cpu: 1,
                kind: crate::explain::WindowKind::Miss,
                start_ns: 5_000_000,
                end_ns: 10_000_000,
                job: Some(1),
                cause: "preempted:hog".into(),
            }],
            kernel: vec![crate::explain::KernelSpan {
                cpu: 1,
                class: "preempted".into(),
                name: "hog".into(),
                start_ns: 9_000_000,
                end_ns: 9_200_000,
            }],
            ..Default::default()
        });
        let v = export(&d, &trace);
        let ev = v["traceEvents"].as_array().unwrap();
        let k: Vec<_> = ev
            .iter()
            .filter(|e| e["pid"] == PID_KERNEL && e["ph"] == "X")
            .collect();
        assert_eq!(k.len(), 2);
        assert_eq!(k[0]["name"], "preempted by task (hog)");
        assert_eq!(
            (k[0]["tid"].as_u64(), k[0]["dur"].as_f64()),
            (Some(1), Some(200.0))
        );
        assert_eq!(k[1]["name"], "miss window");
        assert!(ev
            .iter()
            .any(|e| e["pid"] == PID_KERNEL && e["args"]["name"] == "CPU 1 kernel causes"));
    }
}

//! What one `sched_switch` costs the switching task with each kernel-event recorder
//! (issue 13 overhead), in alternating blocks inside one process so a host whose speed
//! drifts hits every configuration alike: nothing recording, the BPF recorder, the tracefs
//! recorder; each also with the blocking ping-pong's idle-switch rule set (every switch
//! here is between two `latlab-…` threads, so the rule keeps them all but is evaluated).
//! Two threads pinned to one CPU pass a token through pipes (2 switches per round trip);
//! a configuration's cost is the median over cycles of (its block − the same cycle's
//! bare block) / 2 per switch. Needs root.
//!
//!   cargo run --release -p latlab-sys --example ktrace-cost -- [CYCLES] [ROUND_TRIPS] [CPU]
use latlab_sys::ktrace::{KtraceConfig, ReaderKind, Recorder, SwitchDrop};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Instant;

fn block(a: &mut UnixStream, n: u32) -> f64 {
    let mut b = [0u8; 1];
    let t = Instant::now();
    for _ in 0..n {
        a.write_all(&b).unwrap();
        a.read_exact(&mut b).unwrap();
    }
    t.elapsed().as_nanos() as f64 / f64::from(n)
}

fn main() {
    let args: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a number"))
        .collect();
    let (cycles, n, cpu) = (
        *args.first().unwrap_or(&15),
        *args.get(1).unwrap_or(&20_000),
        *args.get(2).unwrap_or(&1),
    );
    let (mut a, mut b) = UnixStream::pair().unwrap();
    std::thread::Builder::new()
        .name("latlab-echo".into())
        .spawn(move || {
            latlab_sys::sched::pin_current_thread(cpu).unwrap();
            let mut x = [0u8; 1];
            while b.read_exact(&mut x).is_ok() {
                if b.write_all(&x).is_err() {
                    break;
                }
            }
        })
        .unwrap();
    latlab_sys::sched::pin_current_thread(cpu).unwrap();
    let drop = SwitchDrop {
        tids: vec![],
        comm_prefixes: vec!["latlab".into()],
    };
    let configs: Vec<(&str, Option<KtraceConfig>)> = vec![
        ("none", None),
        (
            "bpf",
            Some(KtraceConfig {
                cpus: vec![cpu],
                buffer_kb: 65536,
                events: vec!["sched/sched_switch".into()],
                ..KtraceConfig::default()
            }),
        ),
        (
            "bpf+rule",
            Some(KtraceConfig {
                cpus: vec![cpu],
                buffer_kb: 65536,
                events: vec!["sched/sched_switch".into()],
                drop_idle_switches: Some(drop.clone()),
                filters: vec![("sched/sched_switch".into(), "prev_pid != 0".into())],
                ..KtraceConfig::default()
            }),
        ),
        (
            "tracefs",
            Some(KtraceConfig {
                cpus: vec![cpu],
                buffer_kb: 65536,
                events: vec!["sched/sched_switch".into()],
                reader: ReaderKind::Stream,
                ..KtraceConfig::default()
            }),
        ),
    ];
    let mut costs: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    block(&mut a, n); // warm
    for c in 0..cycles as usize {
        let mut t = vec![0.0; configs.len()];
        for k in 0..configs.len() {
            let i = (k + c) % configs.len();
            let rec = configs[i]
                .1
                .as_ref()
                .map(|cfg| Recorder::start(cfg).expect("recorder"));
            t[i] = block(&mut a, n);
            if let Some(r) = rec {
                let got = r.stop().unwrap();
                assert!(
                    i == 0
                        || got.reader.starts_with(if configs[i].0.starts_with("bpf") {
                            "bpf"
                        } else {
                            "trace_pipe_raw"
                        }),
                    "{}",
                    got.reader
                );
            }
        }
        for i in 1..configs.len() {
            costs[i].push((t[i] - t[0]) / 2.0);
        }
        costs[0].push(t[0]);
    }
    for (i, (name, _)) in configs.iter().enumerate() {
        let mut v = costs[i].clone();
        v.sort_by(f64::total_cmp);
        let m = v[v.len() / 2];
        if i == 0 {
            println!("{name}: round trip median {m:.0} ns ({cycles} cycles of {n})");
        } else {
            println!(
                "{name}: {m:+.0} ns per switch (quartiles {:+.0} … {:+.0})",
                v[v.len() / 4],
                v[3 * v.len() / 4]
            );
        }
    }
}

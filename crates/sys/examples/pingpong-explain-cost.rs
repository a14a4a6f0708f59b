//! What `--explain`'s kernel recorder costs a blocking UDP ping-pong (issue 13: median
//! round-trip shift ≤ 0.5 µs, p99.9 within 5 %), and how much of it is the tracepoints'
//! own machinery, in rotating blocks inside one process, so that a guest whose speed
//! drifts within minutes (this one moves a ping-pong's median by 2–5 µs between runs
//! seconds apart) hits every configuration alike.
//!
//! The ping-pong is the paired-run script's (`scripts/explain-pingpong-overhead.sh`): a
//! reflector thread on CPU 0 under SCHED_FIFO 50, a probe thread on CPU 1 under FIFO 40,
//! blocking UDP over loopback, `/dev/cpu_dma_latency` held at 0 for the whole run. Each
//! cycle times one block of round trips (one by one, into preallocated memory) under each
//! of three configurations, in rotated order:
//! - **off**: nothing attached;
//! - **empty hooks**: a BPF program that returns at once, BTF-typed as the recorder's, on
//!   each of the recorder's tracepoints: the floor under any recorder that hooks them;
//! - **recorder**: the one `latlab net probe --explain` starts — the BPF reader, the
//!   attribution's events on every online CPU, a 32 MiB ring per CPU, and the ping-pong's
//!   rule dropping the switches between the idle task and `latlab…` threads (both threads
//!   here are named so).
//!
//! Attached configurations settle for 20 ms before timing. What a block does not include:
//! loading and attaching, and the recorder's stop and drain (between blocks); within a
//! block the reader sleeps (its ring is far from half full).
//!
//! Prints per cycle the three medians and p99.9s, then for each comparison the median of
//! the cycles' shifts with a sign-test interval (the narrowest pair of order statistics
//! covering the median with at least 90 %), the median per-cycle p99.9 change, and the
//! p99.9 of all of one configuration's round trips against all of the other's. Needs root
//! and two CPUs. `EVENTS=group/name,…` hooks and records those events instead of the
//! attribution's (to price them one by one).
//!
//!   cargo run --release -p latlab-sys --example pingpong-explain-cost -- [CYCLES] [ROUND_TRIPS]
use latlab_sys::ktrace::{KtraceConfig, Recorder, SwitchDrop};
use std::net::UdpSocket;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A block's round trips, ns, sorted.
fn block(s: &UdpSocket, out: &mut [u32]) {
    let mut buf = [0u8; 64];
    let msg = [7u8; 32];
    for x in out.iter_mut() {
        let t = Instant::now();
        s.send(&msg).expect("send");
        s.recv(&mut buf).expect("recv");
        *x = u32::try_from(t.elapsed().as_nanos()).unwrap_or(u32::MAX);
    }
    out.sort_unstable();
}

/// The `q` quantile of sorted `v` (nearest rank).
fn quantile(v: &[u32], q: f64) -> f64 {
    let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    f64::from(v[i])
}

/// The narrowest (low, high, coverage) pair of order statistics of `xs` covering its
/// median with at least 90 % (the sign test's interval).
fn sign_interval(xs: &[f64]) -> (f64, f64, f64) {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    // P(Bin(n, 1/2) = i), built up from i = 0
    let mut p = 0.5f64.powi(n as i32);
    let mut below = 0.0; // P(X < k)
    let mut best = (v[0], v[n - 1], 1.0 - 2.0 * p);
    for k in 1..=n / 2 {
        below += p;
        p *= (n - (k - 1)) as f64 / k as f64;
        let cover = 1.0 - 2.0 * below;
        if cover >= 0.9 {
            best = (v[k - 1], v[n - k], cover);
        }
    }
    best
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A program that returns at once, loaded and attached (BTF-typed) to each of `events`'
/// tracepoints that this kernel has; detached when the result is dropped.
fn empty_hooks(events: &[String]) -> Vec<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use latlab_sys::bpf::{self, asm::Alu, asm::Asm};
    let blob = latlab_sys::btf::vmlinux().expect("the kernel's BTF");
    let btf = latlab_core::btf::Btf::parse(&blob).expect("BTF parses");
    let mut a = Asm::new();
    a.alu_imm(Alu::Mov, 0, 0).exit();
    let insns = a.finish().expect("assembles");
    events
        .iter()
        .filter_map(|ev| {
            let tp = ev.split_once('/').map_or(ev.as_str(), |(_, n)| n);
            let id = btf.typedef(&format!("btf_trace_{tp}"))?;
            let p = bpf::load_program(
                bpf::PROG_TRACING,
                bpf::ATTACH_TRACE_RAW_TP,
                id,
                "latlab_empty",
                &insns,
            )
            .expect("an empty program loads");
            let l = bpf::attach_raw_tracepoint(&p, None).expect("attaches");
            Some((l, p))
        })
        .collect()
}

/// The configurations, in [`main`]'s numbering.
const NAMES: [&str; 3] = ["off", "empty hooks", "recorder"];

/// One block's round trips (sorted, ns) and, for the recorder, what it recorded.
#[derive(Default)]
struct Block {
    rtt: Vec<u32>,
    events: u64,
    lost: u64,
}

fn main() {
    let fail = |why: &str| -> ! {
        eprintln!("pingpong-explain-cost: {why}");
        std::process::exit(2)
    };
    let usage = "usage: pingpong-explain-cost [CYCLES ≥ 2] [ROUND_TRIPS ≥ 1000]";
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().unwrap_or_else(|_| fail(usage)))
        .collect();
    let (cycles, n) = (
        *args.first().unwrap_or(&60),
        *args.get(1).unwrap_or(&20_000),
    );
    if cycles < 2 || n < 1000 || args.len() > 2 {
        fail(usage);
    }
    if latlab_sys::sched::online_cpus() < 2 {
        fail("needs two CPUs (the reflector on CPU 0, the probe on CPU 1)");
    }
    if !latlab_sys::netns::is_root() {
        fail("needs root (BPF, SCHED_FIFO, /dev/cpu_dma_latency)");
    }
    let _hold = latlab_sys::idle::DmaLatencyHold::new(0).expect("hold /dev/cpu_dma_latency (root)");
    let refl = UdpSocket::bind("127.0.0.1:0").unwrap();
    let to = refl.local_addr().unwrap();
    std::thread::Builder::new()
        .name("latlab-reflect".into())
        .spawn(move || {
            latlab_sys::sched::place_current_thread(Some(0), Some(50)).expect("CPU 0, FIFO 50");
            let mut buf = [0u8; 64];
            loop {
                let (k, from) = refl.recv_from(&mut buf).unwrap();
                refl.send_to(&buf[..k], from).unwrap();
            }
        })
        .unwrap();
    let (go_tx, go_rx) = mpsc::channel::<Vec<u32>>();
    let (done_tx, done_rx) = mpsc::channel::<Vec<u32>>();
    std::thread::Builder::new()
        .name("latlab-probe".into())
        .spawn(move || {
            latlab_sys::sched::place_current_thread(Some(1), Some(40)).expect("CPU 1, FIFO 40");
            let s = UdpSocket::bind("127.0.0.1:0").unwrap();
            s.connect(to).unwrap();
            while let Ok(mut v) = go_rx.recv() {
                block(&s, &mut v);
                done_tx.send(v).unwrap();
            }
        })
        .unwrap();
    let cfg = KtraceConfig {
        cpus: (0..latlab_sys::sched::online_cpus()).collect(),
        drop_idle_switches: Some(SwitchDrop {
            tids: vec![],
            comm_prefixes: vec!["latlab".into()],
        }),
        events: match std::env::var("EVENTS") {
            Ok(e) => e.split(',').map(str::to_string).collect(),
            Err(_) => KtraceConfig::default().events,
        },
        ..KtraceConfig::default()
    };
    // 0: nothing attached, 1: empty programs, 2: the recorder
    let run = |config: usize| -> Block {
        let hooks = (config == 1).then(|| empty_hooks(&cfg.events));
        let rec = (config == 2).then(|| Recorder::start(&cfg).expect("the recorder starts"));
        if config > 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
        go_tx.send(vec![0; n]).unwrap();
        let rtt = done_rx.recv().unwrap();
        drop(hooks);
        let (mut events, mut lost) = (0, 0);
        if let Some(r) = rec {
            let got = r.stop().expect("the recorder stops");
            assert!(got.reader.starts_with("bpf"), "reader {}", got.reader);
            lost = got.cpus.iter().map(|c| c.lost).sum();
            events = got.raw.as_ref().map_or(0, |t| {
                t.events.cpus.iter().map(|c| c.tsc.len() as u64).sum()
            });
        }
        Block { rtt, events, lost }
    };
    run(0); // warm
    println!(
        "{cycles} cycles of {n} round trips per configuration, order rotated; {} events on {} CPUs",
        cfg.events.len(),
        cfg.cpus.len()
    );
    println!();
    println!("| cycle | order | median off / empty hooks / recorder | p99.9 off / empty hooks / recorder | events per round trip | lost |");
    println!("|---|---|---|---|---|---|");
    let mut blocks: [Vec<Block>; 3] = Default::default();
    let t0 = Instant::now();
    for c in 0..cycles {
        let order: Vec<usize> = (0..3).map(|k| (k + c) % 3).collect();
        let mut got: [Option<Block>; 3] = Default::default();
        for &k in &order {
            got[k] = Some(run(k));
        }
        let got = got.map(|b| b.expect("ran"));
        let m = |k: usize| quantile(&got[k].rtt, 0.5) / 1e3;
        let t = |k: usize| quantile(&got[k].rtt, 0.999) / 1e3;
        println!(
            "| {} | {} | {:.2} / {:.2} / {:.2} µs | {:.1} / {:.1} / {:.1} µs | {:.2} | {} |",
            c + 1,
            order
                .iter()
                .map(|k| NAMES[*k])
                .collect::<Vec<_>>()
                .join(", "),
            m(0),
            m(1),
            m(2),
            t(0),
            t(1),
            t(2),
            got[2].events as f64 / n as f64,
            got[2].lost
        );
        for (k, b) in got.into_iter().enumerate() {
            blocks[k].push(b);
        }
    }
    println!();
    println!(
        "{cycles} cycles in {:.0} s; recorder: {:.2} kernel events per round trip, {} lost",
        t0.elapsed().as_secs_f64(),
        blocks[2].iter().map(|b| b.events).sum::<u64>() as f64 / (cycles * n) as f64,
        blocks[2].iter().map(|b| b.lost).sum::<u64>()
    );
    println!();
    println!("| comparison | median shift [sign-test interval] | per-cycle p99.9 change, median | p99.9 of all blocks |");
    println!("|---|---|---|---|");
    for (a, b) in [(0, 2), (0, 1), (1, 2)] {
        let shift: Vec<f64> = (0..cycles)
            .map(|c| quantile(&blocks[b][c].rtt, 0.5) - quantile(&blocks[a][c].rtt, 0.5))
            .collect();
        let change: Vec<f64> = (0..cycles)
            .map(|c| quantile(&blocks[b][c].rtt, 0.999) / quantile(&blocks[a][c].rtt, 0.999) - 1.0)
            .collect();
        let pooled = |k: usize| {
            let mut v: Vec<u32> = blocks[k]
                .iter()
                .flat_map(|b| b.rtt.iter().copied())
                .collect();
            v.sort_unstable();
            quantile(&v, 0.999)
        };
        let (lo, hi, cover) = sign_interval(&shift);
        println!(
            "| {} − {} | **{:+.3} µs** [{:+.3}, {:+.3}] ({:.1} %) | {:+.1} % | {:.1} → {:.1} µs ({:+.1} %) |",
            NAMES[b],
            NAMES[a],
            median(&shift) / 1e3,
            lo / 1e3,
            hi / 1e3,
            cover * 100.0,
            median(&change) * 100.0,
            pooled(a) / 1e3,
            pooled(b) / 1e3,
            (pooled(b) / pooled(a) - 1.0) * 100.0
        );
    }
    println!();
    println!("Targets (issue 13): recorder − off ≤ 0.5 µs median shift, p99.9 within ±5 %.");
}
